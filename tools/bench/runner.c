/* The one runner of the workloads that contend for one lock (uncontended,
 * contended, semaphore, rw, chain, protocol): a thread per session, each
 * with its contender's zkl_lock handle, all released at once from a start
 * line; they draw tickets until `ops` acquisitions were made, each released
 * at once. What differs between the workloads is only the lock behind the
 * handle: a zkl recipe through its adapter, or a lock of the bare client's
 * (bare.c, protocol.c) through zkl_lock_new, so every lock is timed by the
 * same code.
 *
 * The handoff timeline, means over the timed part: a holder stamps its
 * release before calling it, and the next holder reads the stamp once it
 * holds. A handoff is the gap from one holder calling release to the next
 * one holding: the delete committed, the watch delivered, whatever the next
 * holder's lock does then (a listing, for zkl by default), its thread
 * woken. handoff_us + hold_us is one turn of the lock: ops_per_sec is about
 * 1e6 / (handoff_us + hold_us). */
#include <stdlib.h>

#include "bench.h"

/* A start line for worker threads. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready;
    bool open;
};

static void gate_arrive_and_wait(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->ready++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_wait_ready(struct gate *g, int n)
{
    pthread_mutex_lock(&g->mu);
    while (g->ready < n)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

struct handoff_clock {
    _Atomic int64_t released_at; /* 0: no release yet */
    _Atomic int64_t handoffs, gap_ns, release_ns, hold_ns;
};

static void clock_held(struct handoff_clock *hc, int64_t now)
{
    int64_t r = atomic_load(&hc->released_at);
    if (r != 0 && now > r) {
        atomic_fetch_add(&hc->handoffs, 1);
        atomic_fetch_add(&hc->gap_ns, now - r);
    }
}

/* Stamps the release (returns the stamp); clock_released adds its time. */
static int64_t clock_releasing(struct handoff_clock *hc, int64_t held_at)
{
    int64_t t = now_ns();
    atomic_fetch_add(&hc->hold_ns, t - held_at);
    atomic_store(&hc->released_at, t);
    return t;
}

static void clock_released(struct handoff_clock *hc, int64_t stamp)
{
    atomic_fetch_add(&hc->release_ns, now_ns() - stamp);
}

/* What the contenders share. */
struct field {
    struct gate gate;
    atomic_int tickets;
    atomic_int reads; /* a mix: acquisitions of l[0] */
    int ops;
    bool cycle;
    double fraction; /* a mix: the share of l[0] */
    int64_t *lat;
    struct handoff_clock clock;
};

struct contender {
    struct field *f;
    struct bench_lock b;
    uint64_t rng;
    int err;
};

static double next_unit(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return (double)(*x >> 11) / 9007199254740992.0;
}

/* One acquisition of ticket t, released at once. */
static int take_turn(struct contender *k, int t)
{
    struct field *f = k->f;
    bool first = k->b.l[1] == NULL || next_unit(&k->rng) < f->fraction;
    zkl_lock *l = k->b.l[first ? 0 : 1];
    int64_t a = now_ns();
    int rc = zkl_lock_acquire(l, LOCK_TIMEOUT_MS);
    if (rc != 0)
        return rc;
    int64_t held = now_ns();
    clock_held(&f->clock, held);
    int64_t stamp = clock_releasing(&f->clock, held);
    rc = zkl_lock_release(l);
    clock_released(&f->clock, stamp);
    f->lat[t] = (f->cycle ? now_ns() : held) - a;
    if (rc == 0 && first && k->b.l[1] != NULL)
        atomic_fetch_add(&f->reads, 1);
    return rc;
}

static void *contender_main(void *arg)
{
    struct contender *k = arg;
    struct field *f = k->f;
    gate_arrive_and_wait(&f->gate);
    for (;;) {
        int t = atomic_fetch_add(&f->tickets, 1);
        if (t >= f->ops)
            break;
        int rc = take_turn(k, t);
        if (rc != 0) {
            k->err = rc;
            atomic_store(&f->tickets, f->ops); /* stop the others */
            break;
        }
    }
    return NULL;
}

void run_contenders(struct run *r, lock_open_fn open, const char *path, int ops,
                    struct result *res, bool cycle)
{
    int n = r->cs ? r->ncs : r->nzhs;
    struct contender *ks = xcalloc((size_t)n, sizeof *ks);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct field f = {.gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER},
                      .ops = ops,
                      .cycle = cycle,
                      .fraction = r->o->read_fraction,
                      .lat = res->lat};
    for (int i = 0; i < n; i++) {
        ks[i].f = &f;
        ks[i].rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
        open(r, i, path, &ks[i].b);
        start_thread(&ts[i], contender_main, &ks[i], 256 * 1024);
    }
    /* The timed part: once all n threads wait at the start line, from
     * opening it until the last one is done. */
    gate_wait_ready(&f.gate, n);
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    gate_open(&f.gate);
    for (int i = 0; i < n; i++)
        pthread_join(ts[i], NULL);
    res->elapsed_ns = now_ns() - t0;
    run_end(r, &before, res);
    res->handoffs = atomic_load(&f.clock.handoffs);
    res->gap_ns = atomic_load(&f.clock.gap_ns);
    res->release_ns = atomic_load(&f.clock.release_ns);
    res->hold_ns = atomic_load(&f.clock.hold_ns);
    res->reads = atomic_load(&f.reads);
    for (int i = 0; i < n; i++) {
        if (ks[i].err != 0)
            die("acquire/release", ks[i].err);
        zkl_lock_free(ks[i].b.l[0]);
        zkl_lock_free(ks[i].b.l[1]);
        if (ks[i].b.free_obj)
            ks[i].b.free_obj(ks[i].b.obj);
    }
    pthread_cond_destroy(&f.gate.cv);
    pthread_mutex_destroy(&f.gate.mu);
    free(ks);
    free(ts);
}

zkl_lock *lock_new_or_die(const zkl_lock_ops *ops, void *self)
{
    zkl_lock *l;
    int rc = zkl_lock_new(ops, self, &l);
    if (rc != 0)
        die("zkl_lock_new", rc);
    return l;
}
