/* Lock metrics of a client: counters and log-scale histograms, in total
 * and per lock path, fed by the engine (lib/front/wait.c, lib/engine/engine.c) at node
 * level, and read out as structs or as Prometheus text.
 *
 * Updated with c->mu held, which the engine holds anyway at each point it
 * counts. A lock path's entry is made on its first acquire and kept for
 * the client's life, for the first c->metric_paths paths: the others count
 * in the totals only, so a program that locks a new path per job does not
 * grow for ever. A node keeps a pointer to its path's entry, so each
 * acquire looks its path up once (one hash of the path) and allocates
 * nothing. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "metrics.h"

struct pathm {
    struct pathm *next;
    size_t hash;
    struct zkl__lockm k;
    char path[]; /* one allocation with the entry */
};

struct zkl__metrics {
    struct zkl__lockm total;
    struct pathm **buckets;
    size_t nbuckets, npaths;
};

static size_t path_hash(const char *p)
{
    size_t h = 1469598103934665603u;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    return h;
}

static struct pathm *path_find(const struct zkl__metrics *m, const char *path, size_t h)
{
    if (m->nbuckets == 0)
        return NULL;
    for (struct pathm *p = m->buckets[h & (m->nbuckets - 1)]; p; p = p->next)
        if (p->hash == h && strcmp(p->path, path) == 0)
            return p;
    return NULL;
}

static void table_grow(struct zkl__metrics *m)
{
    size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
    struct pathm **t = calloc(nb, sizeof *t);
    if (t == NULL)
        return; /* the smaller table only makes chains longer */
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (struct pathm *p = m->buckets[i], *next; p; p = next) {
            next = p->next;
            p->next = t[p->hash & (nb - 1)];
            t[p->hash & (nb - 1)] = p;
        }
    }
    free(m->buckets);
    m->buckets = t;
    m->nbuckets = nb;
}

static struct pathm *path_get(struct zkl__metrics *m, const char *path, size_t max)
{
    size_t h = path_hash(path);
    struct pathm *p = path_find(m, path, h);
    if (p != NULL || m->npaths >= max)
        return p; /* beyond the cap: counted in the client's totals only */
    if (m->npaths >= m->nbuckets)
        table_grow(m);
    if (m->nbuckets == 0)
        return NULL;
    size_t len = strlen(path);
    if ((p = calloc(1, sizeof *p + len + 1)) == NULL)
        return NULL; /* counted in the client's totals only */
    memcpy(p->path, path, len + 1);
    p->hash = h;
    p->next = m->buckets[h & (m->nbuckets - 1)];
    m->buckets[h & (m->nbuckets - 1)] = p;
    m->npaths++;
    return p;
}

static void observe(zkl_histogram *hg, int64_t ns)
{
    uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
    /* The smallest i with us <= 2^i: the bit length of us - 1. */
    unsigned i = us <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(us - 1);
    if (i > ZKL_HISTOGRAM_BUCKETS - 1)
        i = ZKL_HISTOGRAM_BUCKETS - 1;
    hg->count++;
    hg->sum_us += us;
    hg->buckets[i]++;
}

/* The gate of a counting semaphore is no hold of its own: its lease,
 * enqueued under it, is the attempt (and inherits its start). */
static bool is_gate(const zkl__node *n)
{
    return n->pol == &zkl__gate_policy;
}

void zkl__metrics_acquire_begin(zkl__node *n)
{
    zkl_client *c = n->c;
    n->pm = NULL;
    if (c->metrics_off)
        return;
    if (c->metrics == NULL && (c->metrics = calloc(1, sizeof *c->metrics)) == NULL)
        return;
    if (n->m_at == 0)
        n->m_at = zkl__now_ns();
    struct pathm *p = path_get(c->metrics, n->dir, (size_t)c->metric_paths);
    n->pm = p ? &p->k : NULL;
    n->metered = true;
}

static void count_end(struct zkl__lockm *k, const zkl__node *n, int rc, int64_t now)
{
    if (rc == 0) {
        k->acquired++;
        if (n->waited)
            k->handoffs++;
        observe(&k->wait, now - n->m_at);
    } else if (rc == ZKL_ETIMEDOUT) {
        k->timeouts++;
    } else if (rc == ZKL_ECANCELED) {
        k->cancels++;
    } else {
        k->failures++;
    }
}

void zkl__metrics_acquire_end(zkl__node *n, int rc)
{
    zkl_client *c = n->c;
    if (!n->metered || c->metrics == NULL)
        return;
    if (rc == 0 && is_gate(n))
        return;
    int64_t now = zkl__now_ns();
    count_end(&c->metrics->total, n, rc, now);
    if (n->pm)
        count_end(n->pm, n, rc, now);
    if (rc == 0)
        n->m_at = now;
}

void zkl__metrics_released(zkl__node *n)
{
    zkl_client *c = n->c;
    if (!n->metered || !n->taken || is_gate(n) || c->metrics == NULL)
        return;
    n->metered = false; /* once per hold */
    int64_t d = zkl__now_ns() - n->m_at;
    c->metrics->total.releases++;
    observe(&c->metrics->total.hold, d);
    if (n->pm) {
        n->pm->releases++;
        observe(&n->pm->hold, d);
    }
}

void zkl__metrics_lost(zkl__node *n)
{
    zkl_client *c = n->c;
    if (!n->metered || !n->taken || is_gate(n) || c->metrics == NULL)
        return;
    c->metrics->total.losses++;
    if (n->pm)
        n->pm->losses++;
}

void zkl__metrics_sent(zkl__node *n)
{
    zkl_client *c = n->c;
    c->stats.requests++;
    if (n->metered && c->metrics != NULL) {
        c->metrics->total.requests++;
        if (n->pm)
            n->pm->requests++;
    }
}

void zkl__metrics_free(zkl_client *c)
{
    struct zkl__metrics *m = c->metrics;
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (struct pathm *p = m->buckets[i], *next; p; p = next) {
            next = p->next;
            free(p);
        }
    }
    free(m->buckets);
    free(m);
    c->metrics = NULL;
}

/* ---- reading them out ------------------------------------------------- */

static bool version_ok(const zkl_metrics *out)
{
    return out->version >= 1 && out->version <= ZKL_METRICS_VERSION;
}

/* How much of a zkl_metrics each version has: the library writes no byte
 * past the end of the caller's version (a later version's struct is
 * longer). */
static size_t version_size(unsigned v)
{
    (void)v; /* 1 is the only version yet */
    return offsetof(zkl_metrics, recovered) + sizeof(uint64_t);
}

static void fill(zkl_metrics *out, const struct zkl__lockm *k, const zkl_client_stats *st)
{
    zkl_metrics m;
    memset(&m, 0, sizeof m);
    m.version = out->version;
    if (k) {
        m.acquired = k->acquired;
        m.timeouts = k->timeouts;
        m.cancels = k->cancels;
        m.failures = k->failures;
        m.losses = k->losses;
        m.handoffs = k->handoffs;
        m.releases = k->releases;
        m.requests = k->requests;
        m.wait = k->wait;
        m.hold = k->hold;
    }
    if (st) {
        m.requests_all = st->requests;
        m.creates = st->creates;
        m.deletes = st->deletes;
        m.listings = st->listings;
        m.watch_events = st->watch_events;
        m.sessions = st->sessions;
        m.recovered = st->recovered;
    }
    memcpy(out, &m, version_size(out->version));
}

int zkl_client_metrics(zkl_client *c, zkl_metrics *out)
{
    if (c == NULL || out == NULL || !version_ok(out))
        return ZKL_EINVAL;
    if (zkl__forked(c))
        return ZKL_EFORK;
    pthread_mutex_lock(&c->mu);
    fill(out, c->metrics ? &c->metrics->total : NULL, &c->stats);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int zkl_client_path_metrics(zkl_client *c, const char *path, zkl_metrics *out)
{
    if (c == NULL || path == NULL || out == NULL || !version_ok(out))
        return ZKL_EINVAL;
    if (zkl__forked(c))
        return ZKL_EFORK;
    pthread_mutex_lock(&c->mu);
    struct pathm *p = c->metrics ? path_find(c->metrics, path, path_hash(path)) : NULL;
    if (p != NULL)
        fill(out, &p->k, NULL);
    pthread_mutex_unlock(&c->mu);
    return p ? 0 : ZKL_ENOENT;
}

static int snap_cmp(const void *a, const void *b)
{
    return strcmp(((const struct zkl__path_snap *)a)->path,
                  ((const struct zkl__path_snap *)b)->path);
}

int zkl__metrics_snapshot(zkl_client *c, zkl_client_stats *st, struct zkl__lockm *total,
                          struct zkl__path_snap **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (zkl__forked(c))
        return ZKL_EFORK;
    pthread_mutex_lock(&c->mu);
    if (st)
        *st = c->stats;
    struct zkl__metrics *m = c->metrics;
    if (total)
        *total = m ? m->total : (struct zkl__lockm){0};
    size_t cnt = m ? m->npaths : 0;
    struct zkl__path_snap *v = cnt ? calloc(cnt, sizeof *v) : NULL;
    int err = cnt && v == NULL ? ZKL_ENOMEM : 0;
    size_t k = 0;
    for (size_t i = 0; err == 0 && m && i < m->nbuckets; i++) {
        for (struct pathm *p = m->buckets[i]; p && err == 0; p = p->next) {
            v[k].k = p->k;
            if ((v[k].path = strdup(p->path)) == NULL)
                err = ZKL_ENOMEM;
            else
                k++;
        }
    }
    pthread_mutex_unlock(&c->mu);
    if (err != 0) {
        zkl__metrics_snapshot_free(v, k);
        return err;
    }
    if (k > 1)
        qsort(v, k, sizeof *v, snap_cmp);
    *out = v;
    *n = k;
    return 0;
}

void zkl__metrics_snapshot_free(struct zkl__path_snap *v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i].path);
    free(v);
}

int zkl_client_metrics_paths(zkl_client *c, char ***out, size_t *n)
{
    if (c == NULL || out == NULL || n == NULL)
        return ZKL_EINVAL;
    struct zkl__path_snap *v;
    size_t k;
    int err = zkl__metrics_snapshot(c, NULL, NULL, &v, &k);
    if (err != 0)
        return err;
    char **r = k ? calloc(k, sizeof *r) : NULL;
    if (k && r == NULL) {
        zkl__metrics_snapshot_free(v, k);
        return ZKL_ENOMEM;
    }
    for (size_t i = 0; i < k; i++) {
        r[i] = v[i].path; /* moved out of the snapshot */
        v[i].path = NULL;
    }
    zkl__metrics_snapshot_free(v, k);
    *out = r;
    *n = k;
    return 0;
}

void zkl_client_metrics_paths_free(char **paths, size_t n)
{
    for (size_t i = 0; paths != NULL && i < n; i++)
        free(paths[i]);
    free(paths);
}
