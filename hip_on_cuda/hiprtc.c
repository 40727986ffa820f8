/* libhiprtc.so on NVIDIA: hipRTC forwarded to NVRTC, which is opened at run time (libnvrtc.so.13/.12).
 *
 * - The source is compiled with the HIP prelude (include/hip/hip_runtime.h, hip_fp16.h, embedded at build
 *   time as hoc_prelude.h) given as in-memory headers and included first; `#line 1` keeps the user's
 *   line numbers in the log.
 * - Options: --offload-arch=sm_XY (the device's gcnArchName under this layer) becomes -arch=sm_XY; an AMD
 *   target (gfx...) is refused with HIPRTC_ERROR_INVALID_OPTION and a note in the log; -O<n> is dropped
 *   (NVRTC always optimizes); -ffast-math becomes --use_fast_math; AMD codegen flags (-m...) are dropped.
 *   With no arch given, the current device's compute capability is used. CUDA's include directory
 *   ($CUDA_HOME/include or /usr/local/cuda/include) is added for cuda_fp16.h.
 * - The code returned by hiprtcGetCode is a CUBIN for that arch (what hipModuleLoadData loads).
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "hip_abi.h"
#include "hoc_common.h"
#include "hoc_prelude.h" /* generated: HOC_PRELUDE_RUNTIME, HOC_PRELUDE_FP16 */

/* NVRTC, as documented: status 0 is success and its codes 0..11 have hipRTC's meanings. */
typedef int nvrtcResult;
typedef struct _nvrtcProgram* nvrtcProgram;

static struct {
    nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
    nvrtcResult (*compile)(nvrtcProgram, int, const char* const*);
    nvrtcResult (*destroy)(nvrtcProgram*);
    nvrtcResult (*logSize)(nvrtcProgram, size_t*);
    nvrtcResult (*log)(nvrtcProgram, char*);
    nvrtcResult (*cubinSize)(nvrtcProgram, size_t*);
    nvrtcResult (*cubin)(nvrtcProgram, char*);
    nvrtcResult (*version)(int*, int*);
    nvrtcResult (*addName)(nvrtcProgram, const char*);
    nvrtcResult (*lowered)(nvrtcProgram, const char*, const char**);
    int ok;
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void nv_load(void) {
    static const char* const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
    void* h = hoc_open_first("HIP_ON_CUDA_NVRTC", names);
    if (!h) {
        fprintf(stderr, "hip_on_cuda: cannot load NVRTC (libnvrtc.so.13/.12); put it on LD_LIBRARY_PATH "
                        "or set HIP_ON_CUDA_NVRTC\n");
        return;
    }
    int ok = 1;
#define SYM(field, name)                      \
    do {                                      \
        *(void**)&nv.field = dlsym(h, name);  \
        if (!nv.field) {                      \
            HOC_TRACE("NVRTC has no %s", name); \
            ok = 0;                           \
        }                                     \
    } while (0)
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(logSize, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(cubinSize, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(version, "nvrtcVersion");
    SYM(addName, "nvrtcAddNameExpression");
    SYM(lowered, "nvrtcGetLoweredName");
#undef SYM
    nv.ok = ok;
}

static int nv_ready(void) {
    pthread_once(&nv_once, nv_load);
    return nv.ok;
}

static hiprtcResult rtc(nvrtcResult r) { return (r >= 0 && r <= 11) ? (hiprtcResult)r : HIPRTC_ERROR_INTERNAL_ERROR; }

/* hiprtcProgram is our own handle: the NVRTC program plus a note of what this layer changed or refused. */
typedef struct {
    nvrtcProgram prog;
    char note[512];
} hoc_program;

HOC_EXPORT const char* hiprtcGetErrorString(hiprtcResult r) { return hoc_hiprtc_result_name((int)r); }

HOC_EXPORT hiprtcResult hiprtcVersion(int* major, int* minor) {
    if (!nv_ready()) return HIPRTC_ERROR_INTERNAL_ERROR;
    return rtc(nv.version(major, minor));
}

HOC_EXPORT hiprtcResult hiprtcCreateProgram(hoc_program** out, const char* src, const char* name, int num_headers,
                                            const char** headers, const char** include_names) {
    if (!out || !src || num_headers < 0) return HIPRTC_ERROR_INVALID_INPUT;
    if (!nv_ready()) return HIPRTC_ERROR_INTERNAL_ERROR;
    const char* fname = name ? name : "default_program";
    size_t n = strlen(src) + strlen(fname) + 96;
    char* full = malloc(n);
    const char** hdr = malloc(sizeof(char*) * (size_t)(num_headers + 2));
    const char** inc = malloc(sizeof(char*) * (size_t)(num_headers + 2));
    hoc_program* p = calloc(1, sizeof(hoc_program));
    if (!full || !hdr || !inc || !p) {
        free(full), free(hdr), free(inc), free(p);
        return HIPRTC_ERROR_OUT_OF_MEMORY;
    }
    snprintf(full, n, "#include <hip/hip_runtime.h>\n#line 1 \"%s\"\n%s", fname, src);
    int k = 0;
    for (int i = 0; i < num_headers; ++i) {
        hdr[k] = headers[i];
        inc[k++] = include_names[i];
    }
    hdr[k] = HOC_PRELUDE_RUNTIME;
    inc[k++] = "hip/hip_runtime.h";
    hdr[k] = HOC_PRELUDE_FP16;
    inc[k++] = "hip/hip_fp16.h";
    hiprtcResult r = rtc(nv.create(&p->prog, full, fname, k, hdr, inc));
    free(full), free(hdr), free(inc);
    if (r != HIPRTC_SUCCESS) {
        free(p);
        return r;
    }
    *out = p;
    return HIPRTC_SUCCESS;
}

HOC_EXPORT hiprtcResult hiprtcDestroyProgram(hoc_program** p) {
    if (!p || !*p) return HIPRTC_ERROR_INVALID_PROGRAM;
    nvrtcResult r = nv.destroy(&(*p)->prog);
    free(*p);
    *p = NULL;
    return rtc(r);
}

static const char* cuda_include_dir(void) {
    static char dir[512];
    const char* roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    struct stat st;
    for (int i = 0; i < 3; ++i) {
        if (!roots[i] || !*roots[i]) continue;
        snprintf(dir, sizeof dir, "%s/include/cuda_fp16.h", roots[i]);
        if (stat(dir, &st) == 0) {
            snprintf(dir, sizeof dir, "--include-path=%s/include", roots[i]);
            return dir;
        }
    }
    return NULL;
}

HOC_EXPORT hiprtcResult hiprtcCompileProgram(hoc_program* p, int num_options, const char** options) {
    if (!p) return HIPRTC_ERROR_INVALID_PROGRAM;
    if (num_options < 0) return HIPRTC_ERROR_INVALID_INPUT;
    const char** opts = malloc(sizeof(char*) * (size_t)(num_options + 3));
    char arch[32];
    if (!opts) return HIPRTC_ERROR_OUT_OF_MEMORY;
    int k = 0, have_arch = 0;
    hiprtcResult r = HIPRTC_SUCCESS;
    p->note[0] = '\0';
    for (int i = 0; i < num_options; ++i) {
        const char* o = options[i];
        const char* target = NULL;
        if (!strncmp(o, "--offload-arch=", 15)) target = o + 15;
        else if (!strncmp(o, "--gpu-architecture=", 19)) target = o + 19;
        if (target) {
            if (strncmp(target, "sm_", 3) && strncmp(target, "compute_", 8)) {
                snprintf(p->note, sizeof p->note,
                         "hip_on_cuda: %s names a non-NVIDIA target; this layer compiles for sm_XY only\n", o);
                r = HIPRTC_ERROR_INVALID_OPTION;
                break;
            }
            snprintf(arch, sizeof arch, "-arch=%s", target);
            opts[k++] = arch;
            have_arch = 1;
        } else if (!strncmp(o, "-O", 2) || !strncmp(o, "-m", 2)) {
            HOC_TRACE("hiprtcCompileProgram: dropping option %s", o);
        } else if (!strcmp(o, "-ffast-math")) {
            opts[k++] = "--use_fast_math";
        } else {
            opts[k++] = o;
        }
    }
    if (r == HIPRTC_SUCCESS && !have_arch) {
        int dev = 0, major = 0, minor = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
            snprintf(p->note, sizeof p->note, "hip_on_cuda: no --offload-arch given and no device to ask\n");
            r = HIPRTC_ERROR_INVALID_OPTION;
        } else {
            snprintf(arch, sizeof arch, "-arch=sm_%d%d", major, minor);
            opts[k++] = arch;
        }
    }
    if (r == HIPRTC_SUCCESS) {
        const char* inc = cuda_include_dir();
        if (inc) opts[k++] = inc;
        r = rtc(nv.compile(p->prog, k, opts));
    }
    free(opts);
    return r;
}

HOC_EXPORT hiprtcResult hiprtcGetProgramLogSize(hoc_program* p, size_t* size) {
    if (!p || !size) return HIPRTC_ERROR_INVALID_INPUT;
    size_t n = 0;
    nvrtcResult r = nv.logSize(p->prog, &n); /* includes the terminating NUL */
    if (r != 0) return rtc(r);
    *size = n + strlen(p->note);
    return HIPRTC_SUCCESS;
}

HOC_EXPORT hiprtcResult hiprtcGetProgramLog(hoc_program* p, char* log) {
    if (!p || !log) return HIPRTC_ERROR_INVALID_INPUT;
    size_t note = strlen(p->note);
    memcpy(log, p->note, note);
    return rtc(nv.log(p->prog, log + note));
}

HOC_EXPORT hiprtcResult hiprtcGetCodeSize(hoc_program* p, size_t* size) {
    if (!p || !size) return HIPRTC_ERROR_INVALID_INPUT;
    return rtc(nv.cubinSize(p->prog, size));
}

HOC_EXPORT hiprtcResult hiprtcGetCode(hoc_program* p, char* code) {
    if (!p || !code) return HIPRTC_ERROR_INVALID_INPUT;
    return rtc(nv.cubin(p->prog, code));
}

HOC_EXPORT hiprtcResult hiprtcAddNameExpression(hoc_program* p, const char* expr) {
    if (!p) return HIPRTC_ERROR_INVALID_PROGRAM;
    return rtc(nv.addName(p->prog, expr));
}

HOC_EXPORT hiprtcResult hiprtcGetLoweredName(hoc_program* p, const char* expr, const char** lowered) {
    if (!p) return HIPRTC_ERROR_INVALID_PROGRAM;
    return rtc(nv.lowered(p->prog, expr, lowered));
}
