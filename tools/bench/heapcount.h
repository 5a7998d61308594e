/* zkl-bench's heap meter (tools/bench/heapcount.c). */
#ifndef ZKL_TOOLS_HEAPCOUNT_H
#define ZKL_TOOLS_HEAPCOUNT_H

#include <stddef.h>

/* Bytes of heap live in the process now, counted at malloc and free (chunk
 * headers included, glibc's per-thread caches not); 0 when the process's
 * allocator is not glibc's (a sanitizer's, valgrind's). Any thread. */
size_t zkl__heapcount_live(void);

#endif
