/* Lock metrics of a client: counters and log-scale histograms, in total
 * and per lock path, fed by the engine at node level.
 *
 * Updated with the client's lock held, which the engine holds anyway at
 * each point it counts. A lock path's entry is made on its first acquire
 * and kept for the client's life, for the first paths up to the client's
 * limit: the others count in the totals only, so a program that locks a
 * new path per job does not grow for ever. A node's meter keeps a pointer
 * to its path's entry, so each acquire looks its path up once (one hash of
 * the path) and allocates nothing. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void zkl__metrics_acquire_begin(struct zkl__metrics **m, zkl__meter *mt, const char *dir,
                                size_t max_paths, int64_t now)
{
    mt->pm = NULL;
    if (*m == NULL && (*m = calloc(1, sizeof **m)) == NULL)
        return;
    if (mt->at == 0)
        mt->at = now;
    struct pathm *p = path_get(*m, dir, max_paths);
    mt->pm = p ? &p->k : NULL;
    mt->on = true;
}

static void count_end(struct zkl__lockm *k, const zkl__meter *mt, int rc, int64_t now)
{
    if (rc == 0) {
        k->acquired++;
        if (mt->waited)
            k->handoffs++;
        observe(&k->wait, now - mt->at);
    } else if (rc == ZKL_ETIMEDOUT) {
        k->timeouts++;
    } else if (rc == ZKL_ECANCELED) {
        k->cancels++;
    } else {
        k->failures++;
    }
}

void zkl__metrics_acquire_end(struct zkl__metrics *m, zkl__meter *mt, int rc, int64_t now)
{
    if (!mt->on || m == NULL)
        return;
    /* The gate of a counting semaphore is no hold of its own: its lease,
     * enqueued under it, is the attempt (and inherits its start). */
    if (rc == 0 && mt->gate)
        return;
    count_end(&m->total, mt, rc, now);
    if (mt->pm)
        count_end(mt->pm, mt, rc, now);
    if (rc == 0)
        mt->at = now;
}

void zkl__metrics_released(struct zkl__metrics *m, zkl__meter *mt, int64_t now)
{
    if (!mt->on || !mt->held || mt->gate || m == NULL)
        return;
    mt->on = false; /* once per hold */
    int64_t d = now - mt->at;
    m->total.releases++;
    observe(&m->total.hold, d);
    if (mt->pm) {
        mt->pm->releases++;
        observe(&mt->pm->hold, d);
    }
}

void zkl__metrics_lost(struct zkl__metrics *m, zkl__meter *mt)
{
    if (!mt->on || !mt->held || mt->gate || m == NULL)
        return;
    m->total.losses++;
    if (mt->pm)
        mt->pm->losses++;
}

void zkl__metrics_fault(struct zkl__metrics **m, zkl__meter *mt)
{
    if (mt != NULL && !mt->on)
        return; /* metrics off for its attempt */
    if (*m == NULL && (*m = calloc(1, sizeof **m)) == NULL)
        return;
    (*m)->total.faults++;
    if (mt != NULL && mt->pm)
        mt->pm->faults++;
}

void zkl__metrics_sent(struct zkl__metrics *m, zkl__meter *mt)
{
    if (m == NULL || mt == NULL || !mt->on)
        return;
    m->total.requests++;
    if (mt->pm)
        mt->pm->requests++;
}

void zkl__metrics_free(struct zkl__metrics *m)
{
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
}

/* ---- reading them out ------------------------------------------------- */

bool zkl__metrics_total(const struct zkl__metrics *m, struct zkl__lockm *out)
{
    if (m == NULL)
        return false;
    *out = m->total;
    return true;
}

bool zkl__metrics_path(const struct zkl__metrics *m, const char *path, struct zkl__lockm *out)
{
    struct pathm *p = m ? path_find(m, path, path_hash(path)) : NULL;
    if (p != NULL)
        *out = p->k;
    return p != NULL;
}

static int snap_cmp(const void *a, const void *b)
{
    return strcmp(((const struct zkl__path_snap *)a)->path,
                  ((const struct zkl__path_snap *)b)->path);
}

int zkl__metrics_snapshot(const struct zkl__metrics *m, struct zkl__path_snap **out, size_t *n)
{
    *out = NULL;
    *n = 0;
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
