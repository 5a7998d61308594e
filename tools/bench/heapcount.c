/*
 * zkl-bench's heap meter, a module of its own (zkl-bench-heap.so) that
 * zkl-bench preloads only into the workloads that read the heap
 * (meter.c): malloc and its family, replaced (glibc allows it, "Replacing
 * malloc" in its manual) by thin wrappers around glibc's own allocator
 * that keep a count of the bytes live in the process. Built into the
 * program itself, the wrappers stood between every malloc and free of
 * every workload and glibc, counting or not: about 2,100 instructions an
 * acquisition of the contended workload, 2% of its process.
 *
 * Why not mallinfo2: glibc keeps up to 7 freed chunks per size in a cache
 * per thread, and mallinfo2 counts those as in use. A client has two
 * threads per session, so between two readings the caches alone can move
 * by tens of KB: with 100 waiters on 16 sessions that was 500 B per waiter
 * of noise, none of it the waiters'. Counting at malloc and free sees a
 * chunk freed the moment it is freed.
 *
 * A chunk counts as malloc_usable_size plus its 8-byte header: what
 * mallinfo2 would show with no cache. Under a sanitizer or valgrind, whose
 * allocators replace these functions themselves, the count stays unused and
 * zkl__heapcount_live() reports that it does not know.
 */
#include "heapcount.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAPCOUNT_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define HEAPCOUNT_OFF 1
#endif
#endif
#if !defined(__GLIBC__)
#define HEAPCOUNT_OFF 1
#endif

#ifdef HEAPCOUNT_OFF

size_t zkl__heapcount_live(void)
{
    return 0;
}

#else

#include <malloc.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* Stays 0 when these wrappers never run (valgrind's allocator answers
 * instead): a running process always has some heap live. */
static atomic_size_t live;
/* Set by the module's constructor, which the loader runs before the
 * program's main and any thread; then only read. */
static bool counting;

__attribute__((constructor)) static void start(void)
{
    counting = true;
}

static size_t chunk(void *p)
{
    return p == NULL ? 0 : malloc_usable_size(p) + sizeof(size_t);
}

static void *took(void *p)
{
    if (counting && p != NULL)
        atomic_fetch_add_explicit(&live, chunk(p), memory_order_relaxed);
    return p;
}

size_t zkl__heapcount_live(void)
{
    return atomic_load_explicit(&live, memory_order_relaxed);
}

void *malloc(size_t n)
{
    return took(__libc_malloc(n));
}

void *calloc(size_t k, size_t n)
{
    return took(__libc_calloc(k, n));
}

void free(void *p)
{
    if (p == NULL)
        return;
    if (counting)
        atomic_fetch_sub_explicit(&live, chunk(p), memory_order_relaxed);
    __libc_free(p);
}

void *realloc(void *p, size_t n)
{
    if (!counting)
        return __libc_realloc(p, n);
    size_t old = chunk(p);
    void *q = __libc_realloc(p, n);
    if (q != NULL) {
        atomic_fetch_sub_explicit(&live, old, memory_order_relaxed);
        return took(q);
    }
    if (p != NULL && n == 0) /* glibc freed it */
        atomic_fetch_sub_explicit(&live, old, memory_order_relaxed);
    return NULL;
}

void *reallocarray(void *p, size_t k, size_t n)
{
    if (n != 0 && k > SIZE_MAX / n) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, k * n);
}

void *memalign(size_t align, size_t n)
{
    return took(__libc_memalign(align, n));
}

void *aligned_alloc(size_t align, size_t n)
{
    return took(__libc_memalign(align, n));
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    void *p = took(__libc_memalign(align, n));
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    return took(__libc_valloc(n));
}

void *pvalloc(size_t n)
{
    return took(__libc_pvalloc(n));
}

#endif
