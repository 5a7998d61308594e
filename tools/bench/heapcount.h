/* zkl-bench's heap meter (tools/bench/heapcount.c), the module
 * zkl-bench-heap.so; the program loads it and finds this function by name
 * (tools/bench/meter.c), and never links it. */
#ifndef ZKL_TOOLS_HEAPCOUNT_H
#define ZKL_TOOLS_HEAPCOUNT_H

#include <stddef.h>

/* The name the program looks the function up by. */
#define ZKL_HEAPCOUNT_LIVE "zkl__heapcount_live"

/* Bytes of heap live in the process, counted at malloc and free since the
 * module was loaded (chunk headers included, glibc's per-thread caches
 * not); chunks taken before that are not counted, so read the heap only as
 * a difference of two readings. 0 when the process's allocator is not
 * glibc's (a sanitizer's, valgrind's). Any thread. */
size_t zkl__heapcount_live(void);

#endif
