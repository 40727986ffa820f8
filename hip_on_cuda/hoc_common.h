/* Shared helpers of the three HIP-on-CUDA libraries: export macro, debug trace, library loading.
 *
 * Every exported function has C linkage and default visibility; everything else is hidden
 * (the build passes -fvisibility=hidden). Set HIP_ON_CUDA_DEBUG=1 to trace translated failures
 * (the CUDA-side name of each error that was mapped to a HIP code) on stderr.
 */
#ifndef HIP_ON_CUDA_COMMON_H
#define HIP_ON_CUDA_COMMON_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define HOC_EXPORT __attribute__((visibility("default")))

static inline int hoc_debug(void) {
    static int cached = -1;
    if (cached < 0) {
        const char* v = getenv("HIP_ON_CUDA_DEBUG");
        cached = (v && *v && *v != '0') ? 1 : 0;
    }
    return cached;
}

#define HOC_TRACE(...)                                   \
    do {                                                 \
        if (hoc_debug()) {                               \
            fprintf(stderr, "[hip_on_cuda] " __VA_ARGS__); \
            fputc('\n', stderr);                         \
        }                                                \
    } while (0)

/* dlopen the first library that loads: $env_var if set, else each name of the NULL-terminated list. */
static inline void* hoc_open_first(const char* env_var, const char* const* names) {
    const char* forced = env_var ? getenv(env_var) : NULL;
    if (forced && *forced) {
        void* h = dlopen(forced, RTLD_NOW | RTLD_GLOBAL);
        if (!h) HOC_TRACE("dlopen(%s) failed: %s", forced, dlerror());
        return h;
    }
    for (const char* const* n = names; *n; ++n) {
        void* h = dlopen(*n, RTLD_NOW | RTLD_GLOBAL);
        if (h) return h;
        HOC_TRACE("dlopen(%s) failed: %s", *n, dlerror());
    }
    return NULL;
}

#endif
