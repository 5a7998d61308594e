/* zkl-bench's heap meter, loaded only where the heap is read: a workload
 * that reports it runs again with the module zkl-bench-heap.so
 * (heapcount.c) preloaded, whose malloc and free count; every other
 * workload runs on glibc's allocator with nothing in between. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "heapcount.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define METER_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define METER_OFF 1
#endif
#endif

#define METER_SO "zkl-bench-heap.so"
/* In the process run again: that the preload was tried (it is tried
 * once), and LD_PRELOAD as it was before ("" unset, "=VALUE" set). */
#define METER_ENV "ZKL_BENCH_METER"

static size_t (*live)(void);

size_t heap_in_use(void)
{
    return live != NULL ? live() : 0;
}

#ifndef METER_OFF
/* The module beside the program's file (in the build tree libtool keeps
 * both in tools/.libs), else where it is installed; 0, or -1 if neither. */
static int find_module(const char *self, char *out, size_t size)
{
    const char *slash = strrchr(self, '/');
    int n = snprintf(out, size, "%.*s/%s", slash ? (int)(slash - self) : 1, slash ? self : ".",
                     METER_SO);
    if (n > 0 && (size_t)n < size && access(out, R_OK) == 0)
        return 0;
#ifdef ZKL_BENCH_PKGLIBDIR
    n = snprintf(out, size, "%s/%s", ZKL_BENCH_PKGLIBDIR, METER_SO);
    if (n > 0 && (size_t)n < size && access(out, R_OK) == 0)
        return 0;
#endif
    return -1;
}

/* LD_PRELOAD back as it was before the preload, for what this process
 * starts. */
static void restore_env(const char *was)
{
    if (was[0] == '=')
        setenv("LD_PRELOAD", was + 1, 1);
    else
        unsetenv("LD_PRELOAD");
    unsetenv(METER_ENV);
}
#endif

void heap_meter_load(char **argv)
{
#ifdef METER_OFF
    (void)argv; /* the sanitizer's allocator answers: the heap reads 0 */
    fprintf(stderr, "%s: heap figures are null under a sanitizer's allocator\n", zkl_bench_prog);
#else
    live = (size_t (*)(void))dlsym(RTLD_DEFAULT, ZKL_HEAPCOUNT_LIVE);
    const char *tried = getenv(METER_ENV);
    if (tried != NULL) {
        char *was = strdup(tried); /* restore_env changes what tried points into */
        if (was == NULL)
            die("out of memory", 0);
        restore_env(was);
        free(was);
    }
    if (live != NULL || tried != NULL) {
        if (live == NULL)
            fprintf(stderr, "%s: the heap meter did not load: heap figures are null\n",
                    zkl_bench_prog);
        return;
    }
    char self[PATH_MAX], so[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || find_module((self[n] = '\0', self), so, sizeof so) != 0) {
        fprintf(stderr, "%s: no heap meter (%s) beside the program or in its library folder: "
                        "heap figures are null\n", zkl_bench_prog, METER_SO);
        return;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(so) + (old ? strlen(old) + 2 : 1);
    char *pre = malloc(len), *was = malloc(len + 1);
    if (pre == NULL || was == NULL)
        die("out of memory", 0);
    snprintf(pre, len, "%s%s%s", so, old && *old ? ":" : "", old ? old : "");
    snprintf(was, len + 1, "%s%s", old ? "=" : "", old ? old : "");
    if (setenv(METER_ENV, was, 1) == 0 && setenv("LD_PRELOAD", pre, 1) == 0)
        execv(self, argv);
    /* Not run again: on without the meter, the environment as it was. */
    restore_env(was);
    free(pre);
    free(was);
    fprintf(stderr, "%s: could not run again with the heap meter: heap figures are null\n",
            zkl_bench_prog);
#endif
}
