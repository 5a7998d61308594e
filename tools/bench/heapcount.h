/* zkl-bench's heap meter (tools/bench/heapcount.c). */
#ifndef ZKL_TOOLS_HEAPCOUNT_H
#define ZKL_TOOLS_HEAPCOUNT_H

#include <stddef.h>

/* Start counting. Until then the wrappers only pass the calls on: the
 * count costs a shared atomic and a malloc_usable_size at every malloc and
 * free, which a workload that never reads it should not pay. Call it from
 * the main thread before any other thread starts; chunks taken before it
 * are not counted, so read the heap only as a difference of two readings
 * taken after it. */
void zkl__heapcount_start(void);

/* Bytes of heap live in the process, counted at malloc and free since
 * zkl__heapcount_start (chunk headers included, glibc's per-thread caches
 * not); 0 when the process's allocator is not glibc's (a sanitizer's,
 * valgrind's) or counting never started. Any thread. */
size_t zkl__heapcount_live(void);

#endif
