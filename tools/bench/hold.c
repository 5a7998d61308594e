/* Many locks held at once, and many sessions in one process: what holding
 * more costs in memory and in each acquire.
 *
 *   many      one session acquires `ops` distinct mutexes (PATH/0, ...),
 *             made before the timed part as every implementation does,
 *             holds them all, then releases them all. Latency = one
 *             acquire. Adds bytes_per_lock (heap in use per held lock,
 *             mutex objects included) and rss_bytes_per_lock.
 *   sessions  `clients` sessions (default 500) in this one process, each a
 *             zkl client of its own: they are opened (open_seconds,
 *             bytes_per_session, threads_per_session), then each acquires a
 *             lock path of its own and holds it until all hold, then all
 *             release. ops = the sessions; latency = one acquire.
 *
 * Both add first_tenth_p50_us and last_tenth_p50_us (report.c): the
 * median acquire latency with few and with almost all of them held. */
#include <malloc.h>
#include <math.h>
#include <stdlib.h>

#include "bench.h"

/* BASE/0 ... BASE/ops-1. Every implementation makes the lock paths before
 * the timed part, so that all of them time the same work: the acquires and
 * releases. */
static void make_paths(struct run *r, const char *base, int ops)
{
    char path[1100];
    zhandle_t *zh;
    int rc = zkl_client_handle_borrow(r->cs[0], &zh); /* kept open meanwhile */
    if (rc != 0)
        die("many paths", rc);
    for (int i = 0; i < ops; i++) {
        snprintf(path, sizeof path, "%s/%d", base, i);
        ensure_path(zh, path);
    }
    zkl_client_handle_return(r->cs[0], zh);
}

void many_run(struct run *r, const char *base, int ops, struct result *res)
{
    zkl_mutex **ms = xcalloc((size_t)ops, sizeof *ms);
    char path[1100];
    make_paths(r, base, ops);
    /* Let the allocator settle what the setup left, then measure. */
    malloc_trim(0);
    size_t heap0 = heap_in_use();
    long rss0 = proc_status_kb("VmRSS");
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    for (int i = 0; i < ops; i++) {
        snprintf(path, sizeof path, "%s/%d", base, i);
        ms[i] = new_mutex(r->cs[0], path, r->o->prefetch);
        int64_t a = now_ns();
        int rc = zkl_mutex_acquire(ms[i], LOCK_TIMEOUT_MS);
        if (rc != 0)
            die("acquire", rc);
        res->lat[i] = now_ns() - a;
    }
    int64_t t1 = now_ns();
    size_t heap1 = heap_in_use();
    long rss1 = proc_status_kb("VmRSS");
    int64_t t2 = now_ns();
    for (int i = 0; i < ops; i++) {
        int rc = zkl_mutex_release(ms[i]);
        if (rc != 0)
            die("release", rc);
    }
    int64_t t3 = now_ns();
    res->elapsed_ns = (t1 - t0) + (t3 - t2);
    run_end(r, &before, res);
    for (int i = 0; i < ops; i++)
        zkl_mutex_free(ms[i]);
    free(ms);
    /* The heap reads zero under an allocator of a sanitizer's own: no heap
     * figure then rather than a wrong one. */
    res->bytes_per_lock = heap1 == 0 ? NAN : ((double)heap1 - (double)heap0) / ops;
    res->rss_bytes_per_lock = ((double)rss1 - (double)rss0) * 1024.0 / ops;
}

/* Threads of this process, from /proc/self/status. */
static long thread_count(void)
{
    return proc_status_kb("Threads");
}

void sessions_run(struct run *r, const char *base, int ops, struct result *res)
{
    zkl_client **cs = xcalloc((size_t)ops, sizeof *cs);
    zkl_mutex **ms = xcalloc((size_t)ops, sizeof *ms);
    char path[1100];
    make_paths(r, base, ops);
    malloc_trim(0);
    size_t heap0 = heap_in_use();
    long rss0 = proc_status_kb("VmRSS"), th0 = thread_count();
    int64_t t0 = now_ns();
    for (int i = 0; i < ops; i++)
        cs[i] = open_client(r->o);
    res->open_ns = now_ns() - t0;
    size_t heap1 = heap_in_use();
    long rss1 = proc_status_kb("VmRSS"), th1 = thread_count();
    for (int i = 0; i < ops; i++) {
        snprintf(path, sizeof path, "%s/%d", base, i);
        ms[i] = new_mutex(cs[i], path, r->o->prefetch);
    }
    /* The timed part counts the requests of the sessions made here. */
    zkl_client **keep = r->cs;
    int nkeep = r->ncs;
    r->cs = cs;
    r->ncs = ops;
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t1 = now_ns();
    for (int i = 0; i < ops; i++) {
        int64_t a = now_ns();
        int rc = zkl_mutex_acquire(ms[i], LOCK_TIMEOUT_MS);
        if (rc != 0)
            die("acquire", rc);
        res->lat[i] = now_ns() - a;
    }
    for (int i = 0; i < ops; i++) {
        int rc = zkl_mutex_release(ms[i]);
        if (rc != 0)
            die("release", rc);
    }
    res->elapsed_ns = now_ns() - t1;
    run_end(r, &before, res);
    r->cs = keep;
    r->ncs = nkeep;
    for (int i = 0; i < ops; i++) {
        zkl_mutex_free(ms[i]);
        zkl_client_close(cs[i]);
    }
    free(ms);
    free(cs);
    res->bytes_per_session = heap1 == 0 ? NAN : ((double)heap1 - (double)heap0) / ops;
    res->rss_per_session = ((double)rss1 - (double)rss0) * 1024.0 / ops;
    res->threads_per_session = (double)(th1 - th0) / ops;
}
