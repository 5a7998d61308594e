/* One lock and a queue of waiters on it: what a handoff costs with many
 * waiting, and what a waiter costs while it waits.
 *
 *   herd   one holder and `clients` waiters (default 100), each its own
 *          session and thread, queue on one lock; the holder releases and
 *          the lock passes through every waiter. ceil(ops/clients) rounds;
 *          "ops" is the number of handoffs. Latency = from the previous
 *          owner calling release to the next one holding. Adds
 *          wakeups_per_handoff: the waiters' watch_events summed, divided
 *          by the handoffs.
 *   queue  --waiters N contenders (threads with small stacks) queue on one
 *          lock behind a holder, spread over `clients` (<= 16, default 4)
 *          sessions; then the lock passes through all of them. ops = N
 *          handoffs; ops_per_sec = handoffs/s once every waiter joined.
 *          Adds join_seconds, join_us_per_waiter, join_listings_per_waiter,
 *          bytes_per_waiter (heap in use per waiting contender, its mutex
 *          object included, stacks not: what the waiters after each
 *          session's first one add, so that what a lock path costs a
 *          session once is not counted as the waiters'),
 *          bytes_per_waiter_all (the same over every waiter, those costs
 *          included), listing_bytes (one listing of the full queue as the
 *          server sends it) and wakeups_per_handoff. With --async the
 *          waiters are asynchronous requests (zkl_mutex_acquire_async, one
 *          mutex object per session, released from their callbacks)
 *          instead of threads: no thread per waiter, and bytes_per_waiter
 *          is the library's alone (the request and its node). */
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct herd_shared {
    _Atomic int64_t last_release; /* when the previous owner called release */
    _Atomic int64_t last_done;
    atomic_int slot;
    int64_t *lat;
};

struct waiter {
    zkl_mutex *m;
    struct herd_shared *sh;
    int err;
};

/* A waiter holds: its wait since the previous release is one handoff. */
static void handoff_seen(struct herd_shared *sh)
{
    sh->lat[atomic_fetch_add(&sh->slot, 1)] = now_ns() - atomic_load(&sh->last_release);
    atomic_store(&sh->last_release, now_ns());
}

/* A waiter is done: the latest such moment ends the timed part. */
static void waiter_done(struct herd_shared *sh)
{
    int64_t done = now_ns();
    int64_t prev = atomic_load(&sh->last_done);
    while (done > prev && !atomic_compare_exchange_weak(&sh->last_done, &prev, done))
        ;
}

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    int rc = zkl_mutex_acquire(w->m, LOCK_TIMEOUT_MS);
    if (rc != 0) {
        w->err = rc;
        return NULL;
    }
    handoff_seen(w->sh);
    rc = zkl_mutex_release(w->m);
    if (rc != 0)
        w->err = rc;
    waiter_done(w->sh);
    return NULL;
}

/* The children of `path`, listed through c's session (its handle lent for
 * the call: the holder on it acquires again between rounds). */
static int count_children(zkl_client *c, const char *path)
{
    zhandle_t *zh = borrow_or_die(c);
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &kids);
    zkl_client_handle_return(c, zh);
    if (rc != ZOK)
        return -1;
    int n = kids.count;
    deallocate_String_vector(&kids);
    return n;
}

/* ops here is the number of handoffs wanted; the result's ops is a whole
 * number of rounds. */
void herd_run(struct run *r, const char *path, int ops, struct result *res)
{
    int n = r->ncs - 1;
    int rounds = (ops + n - 1) / n;
    zkl_mutex *holder = new_mutex(r->cs[0], path, r->o->prefetch);
    struct waiter *ws = xcalloc((size_t)n, sizeof *ws);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct herd_shared sh = {.lat = res->lat};
    for (int i = 0; i < n; i++)
        ws[i] = (struct waiter){.m = new_mutex(r->cs[i + 1], path, r->o->prefetch), .sh = &sh};
    int64_t busy = 0;
    zkl_client_stats before;
    run_begin(r, &before);
    for (int round = 0; round < rounds; round++) {
        int rc = zkl_mutex_acquire(holder, LOCK_TIMEOUT_MS);
        if (rc != 0)
            die("herd holder acquire", rc);
        for (int i = 0; i < n; i++)
            start_thread(&ts[i], waiter_main, &ws[i], 256 * 1024);
        /* Wait until every waiter's node is in the queue, then a moment
         * more so that every watch is set. */
        int64_t deadline = now_ns() + (int64_t)120 * 1000000000;
        while (count_children(r->cs[0], path) < n + 1) {
            if (now_ns() > deadline)
                die("herd waiters did not queue up", 0);
            sleep_ms(5);
        }
        sleep_ms(HERD_SETTLE_MS);
        int64_t t0 = now_ns();
        atomic_store(&sh.last_release, t0);
        if ((rc = zkl_mutex_release(holder)) != 0)
            die("herd holder release", rc);
        for (int i = 0; i < n; i++) {
            pthread_join(ts[i], NULL);
            if (ws[i].err != 0)
                die("herd waiter", ws[i].err);
        }
        busy += atomic_load(&sh.last_done) - t0;
    }
    run_end(r, &before, res);
    res->ops = rounds * n;
    res->elapsed_ns = busy;
    /* The holder's session counts no watch event: it never waits. */
    res->wakeups_per_handoff = (double)res->delta.watch_events / res->ops;
    for (int i = 0; i < n; i++)
        zkl_mutex_free(ws[i].m);
    zkl_mutex_free(holder);
    free(ws);
    free(ts);
}

/* ---- queue: one lock, a long queue of waiters ---------------------------- */

/* --waiters N threads (small stacks) queue on one lock behind a holder,
 * spread over the sessions round-robin; once all N nodes are on the server
 * the holder releases and the lock passes through every waiter. ops = N
 * handoffs; throughput = handoffs / (last waiter done - holder's release). */
struct queuer {
    zkl_mutex *m;
    struct herd_shared *sh;
    int err;
};

static void *queuer_main(void *arg)
{
    struct queuer *w = arg;
    int rc = zkl_mutex_acquire(w->m, LOCK_TIMEOUT_MS * 10);
    if (rc == 0) {
        handoff_seen(w->sh);
        rc = zkl_mutex_release(w->m);
    }
    w->err = rc;
    waiter_done(w->sh);
    return NULL;
}

/* The number of children from the path's stat: no listing of a long queue. */
static int count_children_stat(zkl_client *c, const char *path)
{
    zhandle_t *zh = borrow_or_die(c);
    struct Stat st;
    int rc = zoo_exists(zh, path, 0, &st);
    zkl_client_handle_return(c, zh);
    return rc == ZOK ? st.numChildren : -1;
}

/* The bytes of one listing of `path` as the server sends it: a count, then
 * each name with its length. */
static long listing_bytes(zkl_client *c, const char *path)
{
    zhandle_t *zh = borrow_or_die(c);
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &kids);
    zkl_client_handle_return(c, zh);
    if (rc != ZOK)
        return -1;
    long b = 4;
    for (int i = 0; i < kids.count; i++)
        b += 4 + (long)strlen(kids.data[i]);
    deallocate_String_vector(&kids);
    return b;
}

/* --async: a waiter is a request; its callback (on the client's keeper
 * thread) records the handoff and releases at once. */
struct aqueuer {
    zkl_request *req;
    struct herd_shared *sh;
    _Atomic int *done;
    int err;
};

static void aqueuer_cb(zkl_request *req, int result, void *arg)
{
    struct aqueuer *w = arg;
    if (result == 0) {
        handoff_seen(w->sh);
        result = zkl_request_release(req);
    }
    w->err = result;
    waiter_done(w->sh);
    atomic_fetch_add(w->done, 1);
}

/* Wait until the queue's clients are quiet: no request sent and the heap
 * steady (within 1%) over three samples 100 ms apart, at most 60 s. Every
 * node being on the server is not enough: the last waiters' listings may
 * still be on their way (16 sessions, 590 KB each at 10,000 waiters), and
 * the heap they take for a moment is not the waiters'. Returns the heap in
 * use then. */
static size_t wait_quiet(zkl_client **cs, int ncs)
{
    int64_t deadline = now_ns() + (int64_t)60 * 1000000000;
    zkl_client_stats a, b;
    stats_sum(cs, ncs, &a);
    size_t h0 = heap_in_use();
    for (int calm = 0; calm < 3 && now_ns() < deadline;) {
        sleep_ms(100);
        stats_sum(cs, ncs, &b);
        size_t h1 = heap_in_use();
        double d = (double)h1 - (double)h0;
        calm = b.requests == a.requests && (d < 0 ? -d : d) <= 0.01 * (double)h0 ? calm + 1 : 0;
        a = b;
        h0 = h1;
    }
    return h0;
}

/* Wait until the clients' deletes answered since `before` reach `want`
 * (zkl_client_stats counts a delete at its answer). */
static void wait_deletes(struct run *r, const zkl_client_stats *before, uint64_t want)
{
    int64_t deadline = now_ns() + (int64_t)60 * 1000000000;
    zkl_client_stats now;
    for (stats_sum(r->cs, r->ncs, &now); now.deletes - before->deletes < want;
         stats_sum(r->cs, r->ncs, &now)) {
        if (now_ns() > deadline)
            die("queue deletes were not answered", 0);
        sleep_ms(1);
    }
}

/* Wait until `path` has `want` children (the queue's nodes, from the path's
 * stat: no listing of a long queue). */
static void wait_children(zkl_client *c, const char *path, int want)
{
    int64_t deadline = now_ns() + (int64_t)600 * 1000000000;
    while (count_children_stat(c, path) < want) {
        if (now_ns() > deadline)
            die("queue waiters did not join", 0);
        sleep_ms(5);
    }
}

void queue_run(struct run *r, const char *path, int ops, struct result *res)
{
    int n = ops, s = r->ncs;
    zkl_client *admin = r->cs[0];
    zkl_mutex *holder = new_mutex(r->cs[0], path, r->o->prefetch);
    int rc = zkl_mutex_acquire(holder, LOCK_TIMEOUT_MS);
    if (rc != 0)
        die("queue holder acquire", rc);
    struct queuer *ws = xcalloc((size_t)n, sizeof *ws);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct herd_shared sh = {.lat = res->lat};
    malloc_trim(0);
    size_t heap0 = heap_in_use();
    zkl_client_stats before;
    stats_sum(r->cs, r->ncs, &before);
    bool async = r->o->async;
    zkl_mutex **ams = async ? xcalloc((size_t)s, sizeof *ams) : NULL;
    struct aqueuer *as = async ? xcalloc((size_t)n, sizeof *as) : NULL;
    _Atomic int adone;
    atomic_init(&adone, 0);
    for (int i = 0; async && i < s; i++)
        ams[i] = new_mutex(r->cs[i], path, r->o->prefetch);
    int64_t j0 = now_ns(), first_ns = 0;
    size_t heap_first = 0;
    for (int i = 0; i < n; i++) {
        if (i == s && n > 2 * s) {
            /* One waiter per session has joined: what a lock path costs each
             * session once (its metrics, its shared listing) is allocated
             * now, so what the rest add is the cost of a waiter alone. Not
             * timed as joining. */
            int64_t f0 = now_ns();
            wait_children(admin, path, s + 1);
            heap_first = wait_quiet(r->cs, r->ncs);
            first_ns = now_ns() - f0;
        }
        if (async) {
            as[i] = (struct aqueuer){.sh = &sh, .done = &adone};
            if ((rc = zkl_mutex_acquire_async(ams[i % s], LOCK_TIMEOUT_MS * 10, aqueuer_cb,
                                              &as[i], &as[i].req)) != 0)
                die("queue zkl_mutex_acquire_async", rc);
            continue;
        }
        ws[i] = (struct queuer){.m = new_mutex(r->cs[i % s], path, r->o->prefetch), .sh = &sh};
        start_thread(&ts[i], queuer_main, &ws[i], 64 * 1024);
    }
    wait_children(admin, path, n + 1);
    res->join_ns = now_ns() - j0 - first_ns;
    /* Every node is on the server; let the last listings be answered and
     * the last watches be set. */
    size_t heap1 = wait_quiet(r->cs, r->ncs);
    res->bytes_per_waiter_all = heap1 == 0 ? NAN : ((double)heap1 - (double)heap0) / n;
    res->bytes_per_waiter = heap_first == 0 ? res->bytes_per_waiter_all
                                            : ((double)heap1 - (double)heap_first) / (n - s);
    res->listing_bytes = (double)listing_bytes(admin, path);
    zkl_client_stats joined;
    stats_sum(r->cs, r->ncs, &joined);
    res->join_listings = (double)(joined.listings - before.listings) / n;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    atomic_store(&sh.last_release, t0);
    if ((rc = zkl_mutex_release(holder)) != 0)
        die("queue holder release", rc);
    if (async) {
        int64_t end = now_ns() + (int64_t)LOCK_TIMEOUT_MS * 10 * 1000000;
        while (atomic_load(&adone) < n) {
            if (now_ns() > end)
                die("queue requests did not finish", 0);
            sleep_ms(5);
        }
        for (int i = 0; i < n; i++)
            if (as[i].err != 0)
                die("queue request", as[i].err);
    }
    for (int i = 0; !async && i < n; i++) {
        pthread_join(ts[i], NULL);
        if (ws[i].err != 0)
            die("queue waiter", ws[i].err);
    }
    res->elapsed_ns = atomic_load(&sh.last_done) - t0;
    /* A release returns before its delete is answered: wait for the last
     * ones (the holder's and every waiter's), so that the server's request
     * count of this phase has them all. */
    wait_deletes(r, &before, (uint64_t)n + 1);
    run_end(r, &before, res);
    /* run_begin above re-read `before`: the delta is the handoff phase. */
    res->wakeups_per_handoff = (double)res->delta.watch_events / n;
    for (int i = 0; !async && i < n; i++)
        zkl_mutex_free(ws[i].m);
    for (int i = 0; async && i < n; i++)
        zkl_request_free(as[i].req);
    for (int i = 0; async && i < s; i++)
        zkl_mutex_free(ams[i]);
    free(ams);
    free(as);
    zkl_mutex_free(holder);
    free(ws);
    free(ts);
}
