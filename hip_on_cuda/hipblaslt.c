/* libhipblaslt.so on NVIDIA: the hipBLASLt matmul API forwarded to cuBLASLt (opened at run time).
 *
 * Handles and descriptors pass through as cuBLASLt's own pointers. Enum values are translated both ways:
 * attribute ids, hipblasOperation_t (111/112/113 -> 0/1/2), hipDataType, hipblasComputeType_t, statuses.
 * An algorithm is 64 bytes in cuBLASLt but hipblasLtMatmulAlgo_t has 16 bytes + max_workspace_bytes:
 * each algorithm the heuristic returns is kept in a table inside this library, and its index (with a tag)
 * is what the HIP-side algo holds. hipblasLtMatmul looks it up again; an unknown tag is INVALID_VALUE.
 */
#include <library_types.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "hip_abi.h"
#include "hoc_common.h"

/* ---------------------------------------------------------------- cuBLASLt subset, as documented */

typedef int cublasStatus_t;  /* 0 success, 1 not initialized, 3 alloc failed, 7 invalid value, 8 arch mismatch,
                                11 mapping error, 13 execution failed, 14 internal error, 15 not supported */
typedef void* cublasLtHandle_t;
typedef void* cublasLtMatmulDesc_t;
typedef void* cublasLtMatrixLayout_t;
typedef void* cublasLtMatmulPreference_t;
typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

enum { /* cublasComputeType_t */
       CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_16F_PEDANTIC = 65, CUBLAS_COMPUTE_32F = 68,
       CUBLAS_COMPUTE_32F_PEDANTIC = 69, CUBLAS_COMPUTE_32F_FAST_16F = 74, CUBLAS_COMPUTE_32F_FAST_16BF = 75,
       CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_COMPUTE_64F = 70, CUBLAS_COMPUTE_64F_PEDANTIC = 71,
       CUBLAS_COMPUTE_32I = 72, CUBLAS_COMPUTE_32I_PEDANTIC = 73 };
enum { /* cublasLtMatmulDescAttributes_t */
       CUBLASLT_MATMUL_DESC_POINTER_MODE = 2, CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4,
       CUBLASLT_MATMUL_DESC_EPILOGUE = 7, CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
       CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,
       CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13,
       CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = 15, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17,
       CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18, CUBLASLT_MATMUL_DESC_C_SCALE_POINTER = 19,
       CUBLASLT_MATMUL_DESC_D_SCALE_POINTER = 20, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER = 21,
       CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE = 22, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26 };
enum { /* cublasLtMatrixLayoutAttribute_t */
       CUBLASLT_MATRIX_LAYOUT_TYPE = 0, CUBLASLT_MATRIX_LAYOUT_ORDER = 1, CUBLASLT_MATRIX_LAYOUT_ROWS = 2,
       CUBLASLT_MATRIX_LAYOUT_COLS = 3, CUBLASLT_MATRIX_LAYOUT_LD = 4, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
       CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6 };
enum { /* cublasLtMatmulPreferenceAttributes_t */
       CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
       CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
       CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8 };

static struct {
    cublasStatus_t (*create)(cublasLtHandle_t*);
    cublasStatus_t (*destroy)(cublasLtHandle_t);
    size_t (*version)(void);
    cublasStatus_t (*descCreate)(cublasLtMatmulDesc_t*, int, int);
    cublasStatus_t (*descDestroy)(cublasLtMatmulDesc_t);
    cublasStatus_t (*descSet)(cublasLtMatmulDesc_t, int, const void*, size_t);
    cublasStatus_t (*layoutCreate)(cublasLtMatrixLayout_t*, int, uint64_t, uint64_t, int64_t);
    cublasStatus_t (*layoutDestroy)(cublasLtMatrixLayout_t);
    cublasStatus_t (*layoutSet)(cublasLtMatrixLayout_t, int, const void*, size_t);
    cublasStatus_t (*prefCreate)(cublasLtMatmulPreference_t*);
    cublasStatus_t (*prefDestroy)(cublasLtMatmulPreference_t);
    cublasStatus_t (*prefSet)(cublasLtMatmulPreference_t, int, const void*, size_t);
    cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                cublasLtMatmulHeuristicResult_t*, int*);
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t,
                             const void*, cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t,
                             void*, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t, void*);
    int ok;
} lt;
static pthread_once_t lt_once = PTHREAD_ONCE_INIT;

static void lt_load(void) {
    static const char* const names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", NULL};
    void* h = hoc_open_first("HIP_ON_CUDA_CUBLASLT", names);
    if (!h) {
        fprintf(stderr, "hip_on_cuda: cannot load cuBLASLt (libcublasLt.so.13/.12); put it on LD_LIBRARY_PATH "
                        "or set HIP_ON_CUDA_CUBLASLT\n");
        return;
    }
    int ok = 1;
#define SYM(field, name)                         \
    do {                                         \
        *(void**)&lt.field = dlsym(h, name);     \
        if (!lt.field) {                         \
            HOC_TRACE("cuBLASLt has no %s", name); \
            ok = 0;                              \
        }                                        \
    } while (0)
    SYM(create, "cublasLtCreate");
    SYM(destroy, "cublasLtDestroy");
    SYM(version, "cublasLtGetVersion");
    SYM(descCreate, "cublasLtMatmulDescCreate");
    SYM(descDestroy, "cublasLtMatmulDescDestroy");
    SYM(descSet, "cublasLtMatmulDescSetAttribute");
    SYM(layoutCreate, "cublasLtMatrixLayoutCreate");
    SYM(layoutDestroy, "cublasLtMatrixLayoutDestroy");
    SYM(layoutSet, "cublasLtMatrixLayoutSetAttribute");
    SYM(prefCreate, "cublasLtMatmulPreferenceCreate");
    SYM(prefDestroy, "cublasLtMatmulPreferenceDestroy");
    SYM(prefSet, "cublasLtMatmulPreferenceSetAttribute");
    SYM(heuristic, "cublasLtMatmulAlgoGetHeuristic");
    SYM(matmul, "cublasLtMatmul");
#undef SYM
    lt.ok = ok;
}

#define LT_READY()                                      \
    do {                                                \
        pthread_once(&lt_once, lt_load);               \
        if (!lt.ok) return HIPBLAS_STATUS_NOT_INITIALIZED; \
    } while (0)

/* ---------------------------------------------------------------- translations */

static hipblasStatus_t st(cublasStatus_t s, const char* what) {
    hipblasStatus_t h;
    switch (s) {
    case 0: return HIPBLAS_STATUS_SUCCESS;
    case 1: h = HIPBLAS_STATUS_NOT_INITIALIZED; break;
    case 3: h = HIPBLAS_STATUS_ALLOC_FAILED; break;
    case 7: h = HIPBLAS_STATUS_INVALID_VALUE; break;
    case 8: h = HIPBLAS_STATUS_ARCH_MISMATCH; break;
    case 11: h = HIPBLAS_STATUS_MAPPING_ERROR; break;
    case 13: h = HIPBLAS_STATUS_EXECUTION_FAILED; break;
    case 14: h = HIPBLAS_STATUS_INTERNAL_ERROR; break;
    case 15: h = HIPBLAS_STATUS_NOT_SUPPORTED; break;
    default: h = HIPBLAS_STATUS_UNKNOWN; break;
    }
    HOC_TRACE("%s: cuBLAS status %d -> hipblasStatus %d", what, s, (int)h);
    return h;
}

/* hipDataType -> cudaDataType; -1 if CUDA has no such type. */
static int dtype(int h) {
    switch (h) {
#define D(x) \
    case HIP_##x: return CUDA_##x;
        D(R_32F) D(R_64F) D(R_16F) D(R_8I) D(C_32F) D(C_64F) D(C_16F) D(C_8I) D(R_8U) D(C_8U) D(R_32I) D(C_32I)
        D(R_32U) D(C_32U) D(R_16BF) D(C_16BF) D(R_4I) D(C_4I) D(R_4U) D(C_4U) D(R_16I) D(C_16I) D(R_16U)
        D(C_16U) D(R_64I) D(C_64I) D(R_64U) D(C_64U) D(R_8F_E4M3) D(R_8F_E5M2)
#undef D
    default: return -1;
    }
}

static int compute_type(int h) {
    switch (h) {
    case HIPBLAS_COMPUTE_16F: return CUBLAS_COMPUTE_16F;
    case HIPBLAS_COMPUTE_16F_PEDANTIC: return CUBLAS_COMPUTE_16F_PEDANTIC;
    case HIPBLAS_COMPUTE_32F: return CUBLAS_COMPUTE_32F; /* true fp32: no TF32 unless _FAST_TF32 is asked */
    case HIPBLAS_COMPUTE_32F_PEDANTIC: return CUBLAS_COMPUTE_32F_PEDANTIC;
    case HIPBLAS_COMPUTE_32F_FAST_16F: return CUBLAS_COMPUTE_32F_FAST_16F;
    case HIPBLAS_COMPUTE_32F_FAST_16BF: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case HIPBLAS_COMPUTE_32F_FAST_TF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case HIPBLAS_COMPUTE_64F: return CUBLAS_COMPUTE_64F;
    case HIPBLAS_COMPUTE_64F_PEDANTIC: return CUBLAS_COMPUTE_64F_PEDANTIC;
    case HIPBLAS_COMPUTE_32I: return CUBLAS_COMPUTE_32I;
    case HIPBLAS_COMPUTE_32I_PEDANTIC: return CUBLAS_COMPUTE_32I_PEDANTIC;
    default: return -1;
    }
}

static int op(int h) {
    switch (h) {
    case HIPBLAS_OP_N: return 0;
    case HIPBLAS_OP_T: return 1;
    case HIPBLAS_OP_C: return 2;
    default: return -1;
    }
}

/* hipblasLtEpilogue_t -> cublasLtEpilogue_t (the values used here agree; listed so others are refused). */
static int epilogue(int h) {
    switch (h) {
    case HIPBLASLT_EPILOGUE_DEFAULT: return 1;
    case HIPBLASLT_EPILOGUE_RELU: return 2;
    case HIPBLASLT_EPILOGUE_BIAS: return 4;
    case HIPBLASLT_EPILOGUE_RELU_BIAS: return 6;
    case HIPBLASLT_EPILOGUE_GELU: return 32;
    case HIPBLASLT_EPILOGUE_GELU_BIAS: return 36;
    case HIPBLASLT_EPILOGUE_RELU_AUX: return 130;
    case HIPBLASLT_EPILOGUE_RELU_AUX_BIAS: return 134;
    case HIPBLASLT_EPILOGUE_GELU_AUX: return 160;
    case HIPBLASLT_EPILOGUE_GELU_AUX_BIAS: return 164;
    default: return -1;
    }
}

/* ---------------------------------------------------------------- handle and descriptors */

HOC_EXPORT hipblasStatus_t hipblasLtCreate(cublasLtHandle_t* h) {
    LT_READY();
    return st(lt.create(h), "cublasLtCreate");
}
HOC_EXPORT hipblasStatus_t hipblasLtDestroy(cublasLtHandle_t h) {
    LT_READY();
    return st(lt.destroy(h), "cublasLtDestroy");
}
HOC_EXPORT hipblasStatus_t hipblasLtGetVersion(cublasLtHandle_t h, int* v) {
    (void)h;
    LT_READY();
    if (!v) return HIPBLAS_STATUS_INVALID_VALUE;
    *v = (int)lt.version();
    return HIPBLAS_STATUS_SUCCESS;
}

HOC_EXPORT hipblasStatus_t hipblasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, hipblasComputeType_t ct, hipDataType scale) {
    LT_READY();
    int c = compute_type(ct), s = dtype(scale);
    if (c < 0 || s < 0) return HIPBLAS_STATUS_INVALID_ENUM;
    return st(lt.descCreate(d, c, s), "cublasLtMatmulDescCreate");
}
HOC_EXPORT hipblasStatus_t hipblasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    LT_READY();
    return st(lt.descDestroy(d), "cublasLtMatmulDescDestroy");
}

HOC_EXPORT hipblasStatus_t hipblasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, hipblasLtMatmulDescAttributes_t a,
                                                           const void* buf, size_t size) {
    LT_READY();
    if (!buf) return HIPBLAS_STATUS_INVALID_VALUE;
    int32_t v32;
    int ca;
    const void* val = buf;
    switch (a) {
    case HIPBLASLT_MATMUL_DESC_TRANSA:
    case HIPBLASLT_MATMUL_DESC_TRANSB:
        if (size != 4 || (v32 = op(*(const int32_t*)buf)) < 0) return HIPBLAS_STATUS_INVALID_VALUE;
        ca = a == HIPBLASLT_MATMUL_DESC_TRANSA ? CUBLASLT_MATMUL_DESC_TRANSA : CUBLASLT_MATMUL_DESC_TRANSB;
        val = &v32;
        break;
    case HIPBLASLT_MATMUL_DESC_EPILOGUE:
        if (size != 4 || (v32 = epilogue(*(const int32_t*)buf)) < 0) return HIPBLAS_STATUS_NOT_SUPPORTED;
        ca = CUBLASLT_MATMUL_DESC_EPILOGUE;
        val = &v32;
        break;
    case HIPBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    case HIPBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
        if (size != 4 || (v32 = dtype(*(const int32_t*)buf)) < 0) return HIPBLAS_STATUS_INVALID_VALUE;
        ca = a == HIPBLASLT_MATMUL_DESC_BIAS_DATA_TYPE ? CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE
                                                       : CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE;
        val = &v32;
        break;
    case HIPBLASLT_MATMUL_DESC_POINTER_MODE: ca = CUBLASLT_MATMUL_DESC_POINTER_MODE; break; /* 0, 1, 4 agree */
    case HIPBLASLT_MATMUL_DESC_BIAS_POINTER: ca = CUBLASLT_MATMUL_DESC_BIAS_POINTER; break;
    case HIPBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: ca = CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE; break;
    case HIPBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: ca = CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER; break;
    case HIPBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: ca = CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD; break;
    case HIPBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: ca = CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE; break;
    case HIPBLASLT_MATMUL_DESC_A_SCALE_POINTER: ca = CUBLASLT_MATMUL_DESC_A_SCALE_POINTER; break;
    case HIPBLASLT_MATMUL_DESC_B_SCALE_POINTER: ca = CUBLASLT_MATMUL_DESC_B_SCALE_POINTER; break;
    case HIPBLASLT_MATMUL_DESC_C_SCALE_POINTER: ca = CUBLASLT_MATMUL_DESC_C_SCALE_POINTER; break;
    case HIPBLASLT_MATMUL_DESC_D_SCALE_POINTER: ca = CUBLASLT_MATMUL_DESC_D_SCALE_POINTER; break;
    case HIPBLASLT_MATMUL_DESC_AMAX_D_POINTER: ca = CUBLASLT_MATMUL_DESC_AMAX_D_POINTER; break;
    case HIPBLASLT_MATMUL_DESC_SM_COUNT_TARGET: ca = CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET; break;
    default:
        HOC_TRACE("hipblasLtMatmulDescSetAttribute: attribute %d has no cuBLASLt counterpart", (int)a);
        return HIPBLAS_STATUS_NOT_SUPPORTED;
    }
    return st(lt.descSet(d, ca, val, size), "cublasLtMatmulDescSetAttribute");
}

HOC_EXPORT hipblasStatus_t hipblasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, hipDataType t, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
    LT_READY();
    int ct = dtype(t);
    if (ct < 0) return HIPBLAS_STATUS_INVALID_ENUM;
    return st(lt.layoutCreate(l, ct, rows, cols, ld), "cublasLtMatrixLayoutCreate");
}
HOC_EXPORT hipblasStatus_t hipblasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    LT_READY();
    return st(lt.layoutDestroy(l), "cublasLtMatrixLayoutDestroy");
}

HOC_EXPORT hipblasStatus_t hipblasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                             hipblasLtMatrixLayoutAttribute_t a, const void* buf,
                                                             size_t size) {
    LT_READY();
    if (!buf) return HIPBLAS_STATUS_INVALID_VALUE;
    int32_t v32;
    const void* val = buf;
    int ca;
    switch (a) {
    case HIPBLASLT_MATRIX_LAYOUT_TYPE:
        if (size != 4 || (v32 = dtype(*(const int32_t*)buf)) < 0) return HIPBLAS_STATUS_INVALID_VALUE;
        ca = CUBLASLT_MATRIX_LAYOUT_TYPE;
        val = &v32;
        break;
    case HIPBLASLT_MATRIX_LAYOUT_ORDER: ca = CUBLASLT_MATRIX_LAYOUT_ORDER; break; /* COL 0, ROW 1 agree */
    case HIPBLASLT_MATRIX_LAYOUT_ROWS: ca = CUBLASLT_MATRIX_LAYOUT_ROWS; break;
    case HIPBLASLT_MATRIX_LAYOUT_COLS: ca = CUBLASLT_MATRIX_LAYOUT_COLS; break;
    case HIPBLASLT_MATRIX_LAYOUT_LD: ca = CUBLASLT_MATRIX_LAYOUT_LD; break;
    case HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT: ca = CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT; break;
    case HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: ca = CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET; break;
    default: return HIPBLAS_STATUS_NOT_SUPPORTED;
    }
    return st(lt.layoutSet(l, ca, val, size), "cublasLtMatrixLayoutSetAttribute");
}

/* cuBLASLt's heuristic assumes 256-byte aligned operands unless told otherwise; hipBLASLt has no such
 * preference, and lc0-rocm promises 16-byte alignment, so every preference starts at 16. */
HOC_EXPORT hipblasStatus_t hipblasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
    LT_READY();
    hipblasStatus_t s = st(lt.prefCreate(p), "cublasLtMatmulPreferenceCreate");
    const uint32_t align = 16;
    for (int a = CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES; s == HIPBLAS_STATUS_SUCCESS && a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES; ++a)
        s = st(lt.prefSet(*p, a, &align, sizeof align), "cublasLtMatmulPreferenceSetAttribute(min alignment)");
    return s;
}
HOC_EXPORT hipblasStatus_t hipblasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    LT_READY();
    return st(lt.prefDestroy(p), "cublasLtMatmulPreferenceDestroy");
}
HOC_EXPORT hipblasStatus_t hipblasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                                 hipblasLtMatmulPreferenceAttributes_t a,
                                                                 const void* buf, size_t size) {
    LT_READY();
    int ca;
    switch (a) {
    case HIPBLASLT_MATMUL_PREF_SEARCH_MODE: ca = CUBLASLT_MATMUL_PREF_SEARCH_MODE; break;
    case HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: ca = CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES; break;
    default: return HIPBLAS_STATUS_NOT_SUPPORTED;
    }
    return st(lt.prefSet(p, ca, buf, size), "cublasLtMatmulPreferenceSetAttribute");
}

/* ---------------------------------------------------------------- algorithms */

typedef struct {
    uint64_t index; /* into algo_table */
    uint64_t tag;   /* ALGO_TAG: marks a HIP algo filled by this library */
    size_t max_workspace_bytes;
} hip_algo;
typedef struct {
    hip_algo algo;
    size_t workspaceSize;
    hipblasStatus_t state;
    float wavesCount;
    int reserved[4];
} hip_heuristic_result;

#define ALGO_TAG 0x484f43414c474f31ull /* "HOCALGO1" */
#define ALGO_MAX 65536

static cublasLtMatmulAlgo_t* algo_table;
static size_t algo_count, algo_cap;
static pthread_mutex_t algo_lock = PTHREAD_MUTEX_INITIALIZER;

/* Index of `a` in the table, adding it if new; -1 if the table is full. */
static long algo_intern(const cublasLtMatmulAlgo_t* a) {
    long found = -1;
    pthread_mutex_lock(&algo_lock);
    for (size_t i = 0; i < algo_count; ++i)
        if (!memcmp(&algo_table[i], a, sizeof *a)) {
            found = (long)i;
            break;
        }
    if (found < 0 && algo_count < ALGO_MAX) {
        if (algo_count == algo_cap) {
            size_t cap = algo_cap ? algo_cap * 2 : 256;
            cublasLtMatmulAlgo_t* t = realloc(algo_table, cap * sizeof *t);
            if (t) {
                algo_table = t;
                algo_cap = cap;
            }
        }
        if (algo_count < algo_cap) {
            algo_table[algo_count] = *a;
            found = (long)algo_count++;
        }
    }
    pthread_mutex_unlock(&algo_lock);
    return found;
}

HOC_EXPORT hipblasStatus_t hipblasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                                           cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                                           cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                                           cublasLtMatmulPreference_t pref, int requested,
                                                           hip_heuristic_result* out, int* returned) {
    LT_READY();
    if (requested <= 0 || !out || !returned) return HIPBLAS_STATUS_INVALID_VALUE;
    cublasLtMatmulHeuristicResult_t* res = calloc((size_t)requested, sizeof *res);
    if (!res) return HIPBLAS_STATUS_ALLOC_FAILED;
    int n = 0;
    hipblasStatus_t s = st(lt.heuristic(h, d, A, B, C, D, pref, requested, res, &n), "cublasLtMatmulAlgoGetHeuristic");
    if (s == HIPBLAS_STATUS_SUCCESS) {
        for (int i = 0; i < n; ++i) {
            long idx = algo_intern(&res[i].algo);
            memset(&out[i], 0, sizeof out[i]);
            if (idx < 0) {
                s = HIPBLAS_STATUS_ALLOC_FAILED;
                n = i;
                break;
            }
            out[i].algo.index = (uint64_t)idx;
            out[i].algo.tag = ALGO_TAG;
            out[i].algo.max_workspace_bytes = res[i].workspaceSize;
            out[i].workspaceSize = res[i].workspaceSize;
            out[i].state = res[i].state == 0 ? HIPBLAS_STATUS_SUCCESS : st(res[i].state, "heuristic result");
            out[i].wavesCount = res[i].wavesCount;
        }
        *returned = n;
    }
    free(res);
    return s;
}

HOC_EXPORT hipblasStatus_t hipblasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void* alpha, const void* A,
                                           cublasLtMatrixLayout_t Ad, const void* B, cublasLtMatrixLayout_t Bd,
                                           const void* beta, const void* C, cublasLtMatrixLayout_t Cd, void* D,
                                           cublasLtMatrixLayout_t Dd, const hip_algo* algo, void* ws, size_t ws_size,
                                           void* stream) {
    LT_READY();
    cublasLtMatmulAlgo_t a, *ap = NULL;
    if (algo) {
        pthread_mutex_lock(&algo_lock);
        int valid = algo->tag == ALGO_TAG && algo->index < algo_count;
        if (valid) a = algo_table[algo->index];
        pthread_mutex_unlock(&algo_lock);
        if (!valid) return HIPBLAS_STATUS_INVALID_VALUE;
        ap = &a;
    }
    return st(lt.matmul(h, d, alpha, A, Ad, B, Bd, beta, C, Cd, D, Dd, ap, ws, ws_size, stream), "cublasLtMatmul");
}
