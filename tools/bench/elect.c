/* Leader election: how fast leadership passes on.
 *
 *   elect  `clients` candidates (one session each) on one path; each
 *          leader resigns at once (zkl_latch_close) and joins again with
 *          a new latch. ops = leaderships; latency = from a leader's
 *          resignation to the next leader's await returning (the first:
 *          from the start). Rate = leadership changes per second. */
#include <stdlib.h>

#include "bench.h"

struct elect_run {
    struct run *r;
    const char *path;
    int ops;
    struct result *res;
    pthread_mutex_t mu;
    int done;         /* leaderships counted */
    int64_t resigned; /* when the last leader resigned */
    int64_t end;      /* when the last counted leader resigned */
};

struct candidate {
    struct elect_run *e;
    zkl_client *c;
    pthread_t t;
};

static void *candidate_main(void *arg)
{
    struct candidate *k = arg;
    struct elect_run *e = k->e;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        bool over = e->done >= e->ops;
        pthread_mutex_unlock(&e->mu);
        if (over)
            return NULL;
        zkl_latch *l;
        int rc = zkl_latch_new(k->c, e->path, NULL, &l);
        if (rc != 0 || (rc = zkl_latch_start(l)) != 0 ||
            (rc = zkl_latch_await(l, LOCK_TIMEOUT_MS)) != 0)
            die("latch", rc);
        int64_t t = now_ns();
        pthread_mutex_lock(&e->mu); /* only the leader is here */
        int i = e->done++;
        if (i < e->ops)
            e->res->lat[i] = t - e->resigned;
        e->resigned = now_ns();
        if (i == e->ops - 1)
            e->end = e->resigned;
        pthread_mutex_unlock(&e->mu);
        if ((rc = zkl_latch_close(l)) != 0)
            die("resign", rc);
        zkl_latch_free(l);
    }
}

void elect_run(struct run *r, const char *path, int ops, struct result *res)
{
    struct elect_run e = {.r = r, .path = path, .ops = ops, .res = res};
    pthread_mutex_init(&e.mu, NULL);
    struct candidate *ks = xcalloc((size_t)r->ncs, sizeof *ks);
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    e.resigned = t0;
    for (int i = 0; i < r->ncs; i++) {
        ks[i] = (struct candidate){.e = &e, .c = r->cs[i]};
        start_thread(&ks[i].t, candidate_main, &ks[i], 256 * 1024);
    }
    for (int i = 0; i < r->ncs; i++)
        pthread_join(ks[i].t, NULL);
    res->elapsed_ns = e.end - t0;
    run_end(r, &before, res);
    free(ks);
    pthread_mutex_destroy(&e.mu);
}
