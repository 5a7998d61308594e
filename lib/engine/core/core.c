/* The core of one client: the session as its nodes see it, the lists that
 * route a watch event to the nodes it may be for, the interned lock paths,
 * and the one way out to the shell (the sink). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"

/* ---- random uuids: xoshiro256**, seeded by the shell ---------------------- */

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t next_random(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

void zkl__core_new_uuid(zkl__cnode *n)
{
    zkl__core_unname(n);
    uint64_t a = next_random(n->core->rng), b = next_random(n->core->rng);
    for (int i = 0; i < 8; i++) {
        n->uuid[i] = (uint8_t)(a >> (8 * i));
        n->uuid[8 + i] = (uint8_t)(b >> (8 * i));
    }
    n->uuid[6] = (uint8_t)((n->uuid[6] & 0x0f) | 0x40); /* version 4 */
    n->uuid[8] = (uint8_t)((n->uuid[8] & 0x3f) | 0x80); /* variant */
}

/* ---- memory: every allocation of the core's goes through these, so that a
 * test can make any one of them fail ------------------------------------- */

void zkl__core_set_fail(struct zkl__core *k, bool (*fail)(void *ctx), void *ctx)
{
    k->fail = fail;
    k->fail_ctx = ctx;
}

static bool refused(struct zkl__core *k)
{
    return k->fail != NULL && k->fail(k->fail_ctx);
}

void *zkl__core_malloc(struct zkl__core *k, size_t size)
{
    return refused(k) ? NULL : malloc(size);
}

void *zkl__core_calloc(struct zkl__core *k, size_t n, size_t size)
{
    return refused(k) ? NULL : calloc(n, size);
}

void *zkl__core_realloc(struct zkl__core *k, void *p, size_t size)
{
    return refused(k) ? NULL : realloc(p, size);
}

char *zkl__core_strdup(struct zkl__core *k, const char *s)
{
    return refused(k) ? NULL : strdup(s);
}

/* ---- the core ---------------------------------------------------------------- */

struct zkl__core *zkl__core_new(zkl__sink_fn sink, void *ctx, const uint64_t seed[4])
{
    struct zkl__core *k = calloc(1, sizeof *k);
    if (k == NULL)
        return NULL;
    k->sink = sink;
    k->ctx = ctx;
    memcpy(k->rng, seed, sizeof k->rng);
    if ((k->rng[0] | k->rng[1] | k->rng[2] | k->rng[3]) == 0)
        k->rng[0] = 1; /* the generator's one forbidden state */
    k->gen = 1;
    k->max_request = 0xfffff;
    k->ident = "";
    return k;
}

void *zkl__core_ctx(const struct zkl__core *k)
{
    return k->ctx;
}

void zkl__core_release(struct zkl__core *k)
{
    for (size_t i = 0; i < k->dir_buckets; i++)
        for (struct zkl__dir *d = k->dirs[i], *next; d; d = next) {
            next = d->hnext;
            free(d);
        }
    free(k->dirs);
    free(k->held);
    free(k);
}

void zkl__core_set_max_request(struct zkl__core *k, int bytes)
{
    k->max_request = bytes;
}

void zkl__core_set_ident(struct zkl__core *k, const char *ident)
{
    k->ident = ident;
}

const zkl__core_stats *zkl__core_stats_of(const struct zkl__core *k)
{
    return &k->stats;
}

uint64_t zkl__core_gen(const struct zkl__core *k)
{
    return k->gen;
}

bool zkl__core_connected(const struct zkl__core *k)
{
    return k->connected && !k->closing;
}

uint32_t zkl__core_queued(const struct zkl__core *k)
{
    return k->queued;
}

uint32_t zkl__core_moves(const struct zkl__core *k, int from, int to)
{
    return k->moves[from][to];
}

uint32_t zkl__core_rmoves(const struct zkl__core *k, int from, int to)
{
    return k->rmoves[from][to];
}

uint32_t zkl__core_omoves(const struct zkl__core *k, int from, int to)
{
    return k->omoves[from * ZKL__OWN_COUNT + to];
}

uint32_t zkl__core_lmoves(const struct zkl__core *k, int from, int to)
{
    return k->lmoves[from * ZKL__L_COUNT + to];
}

uint32_t zkl__core_rdmoves(const struct zkl__core *k, int from, int to)
{
    return k->rdmoves[from * ZKL__READING_COUNT + to];
}

uint32_t zkl__core_amoves(const struct zkl__core *k, int from, int to)
{
    return k->amoves[from * ZKL__ARM_COUNT + to];
}

void zkl__core_cancel(struct zkl__core *k)
{
    k->cancelled = true;
}

bool zkl__core_pending(const struct zkl__core *k)
{
    for (const zkl__cnode *n = k->live; n; n = n->next)
        if (n->refs > 0)
            return true;
    return false;
}

void zkl__core_each(struct zkl__core *k, void (*fn)(zkl__cnode *n, void *arg), void *arg)
{
    for (zkl__cnode *n = k->live, *next; n; n = next) {
        next = n->next;
        fn(n, arg);
    }
}

/* ---- sending ------------------------------------------------------------- */

int zkl__core_send(zkl__cnode *n, zkl__act *a)
{
    a->n = n;
    int rc = n->core->sink(n->core->ctx, a);
    if (rc == ZOK)
        n->refs++;
    return rc;
}

void zkl__core_tell(zkl__cnode *n, enum zkl__act_type type)
{
    zkl__act a = {.type = type, .n = n};
    (void)n->core->sink(n->core->ctx, &a);
}

void zkl__core_broken(struct zkl__core *k, zkl__cnode *n, const char *what, int from, int to)
{
    char text[160];
    snprintf(text, sizeof text, "internal error: %s moved from state %d to %d, a move the engine "
             "forbids", what, from, to);
    k->stats.broken++;
    zkl__act a = {.type = ZKL__A_BROKEN, .n = n, .text = text};
    (void)k->sink(k->ctx, &a);
}

/* ---- interned lock paths ------------------------------------------------ */

#define FNV 1469598103934665603u
#define FNV_PRIME 1099511628211u

static size_t hash_str(size_t h, const char *p)
{
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * FNV_PRIME;
    return h;
}

/* The interned lock path of path[0..len), hashed h, or NULL. */
static const struct zkl__dir *dir_at(const struct zkl__core *k, size_t h, const char *path,
                                     size_t len)
{
    if (k->dir_buckets == 0)
        return NULL;
    for (struct zkl__dir *d = k->dirs[h & (k->dir_buckets - 1)]; d; d = d->hnext)
        if (d->len == len && memcmp(d->path, path, len) == 0)
            return d;
    return NULL;
}

void zkl__core_dirs_of(const struct zkl__core *k, const char *path, const struct zkl__dir **parent,
                       const struct zkl__dir **self, const char **name)
{
    /* The hash of the path carries on from its parent's: each byte is
     * hashed once at most (every watch event looks up both). */
    const char *slash = strrchr(path, '/');
    size_t cut = slash != NULL ? (size_t)(slash - path) : 0, h = FNV, i = 0;
    for (; i < cut; i++)
        h = (h ^ (unsigned char)path[i]) * FNV_PRIME;
    *parent = slash != NULL ? dir_at(k, h, path, cut) : NULL;
    *name = slash != NULL ? slash + 1 : path;
    /* A contender node's path is longer than any lock path: no need to
     * hash it to know it is none. */
    size_t len = cut + strlen(path + cut);
    if (len > k->dir_longest) {
        *self = NULL;
        return;
    }
    for (; i < len; i++)
        h = (h ^ (unsigned char)path[i]) * FNV_PRIME;
    *self = dir_at(k, h, path, len);
}

struct zkl__dir *zkl__core_dir_get(struct zkl__core *k, const char *path)
{
    if (k->dir_count >= k->dir_buckets) {
        size_t nb = k->dir_buckets ? 2 * k->dir_buckets : 16;
        struct zkl__dir **t = zkl__core_calloc(k, nb, sizeof *t);
        if (t != NULL) {
            for (size_t i = 0; i < k->dir_buckets; i++)
                for (struct zkl__dir *d = k->dirs[i], *next; d; d = next) {
                    next = d->hnext;
                    struct zkl__dir **b = &t[hash_str(FNV, d->path) & (nb - 1)];
                    d->hnext = *b;
                    *b = d;
                }
            free(k->dirs);
            k->dirs = t;
            k->dir_buckets = nb;
        } else if (k->dir_buckets == 0) {
            return NULL;
        }
    }
    struct zkl__dir **b = &k->dirs[hash_str(FNV, path) & (k->dir_buckets - 1)];
    for (struct zkl__dir *d = *b; d; d = d->hnext)
        if (strcmp(d->path, path) == 0) {
            d->refs++;
            return d;
        }
    size_t len = strlen(path);
    struct zkl__dir *d = zkl__core_malloc(k, sizeof *d + len + 1);
    if (d == NULL)
        return NULL;
    memcpy(d->path, path, len + 1);
    d->len = (uint32_t)len;
    d->refs = 1;
    d->hnext = *b;
    *b = d;
    k->dir_count++;
    if (len > k->dir_longest)
        k->dir_longest = len;
    return d;
}

void zkl__core_dir_put(struct zkl__core *k, struct zkl__dir *d)
{
    if (d == NULL || --d->refs > 0)
        return;
    struct zkl__dir **p = &k->dirs[hash_str(FNV, d->path) & (k->dir_buckets - 1)];
    while (*p != d)
        p = &(*p)->hnext;
    *p = d->hnext;
    k->dir_count--;
    free(d);
}

struct zkl__cside *zkl__core_side(zkl__cnode *n)
{
    if (n->side == NULL)
        n->side = zkl__core_calloc(n->core, 1, sizeof *n->side);
    return n->side;
}

/* ---- routing: which nodes a watch event may be for ---------------------- */

/* A held node's full path, hashed as the event's path is. */
static size_t node_hash(const zkl__cnode *n)
{
    size_t h = hash_str(FNV, n->dir->path);
    h = (h ^ (unsigned char)'/') * FNV_PRIME;
    char own[ZKL__NAME_BUF];
    return hash_str(h, zkl__core_own(n, own));
}

static void held_grow(struct zkl__core *k)
{
    size_t nb = k->held_buckets ? k->held_buckets * 2 : 64;
    zkl__cnode **t = zkl__core_calloc(k, nb, sizeof *t);
    if (t == NULL)
        return; /* keep the smaller table: only slower */
    for (size_t i = 0; i < k->held_buckets; i++)
        for (zkl__cnode *n = k->held[i], *next; n; n = next) {
            next = n->rnext;
            zkl__cnode **b = &t[node_hash(n) & (nb - 1)];
            n->rnext = *b;
            *b = n;
        }
    free(k->held);
    k->held = t;
    k->held_buckets = nb;
}

/* The head of a route that is a plain list: watching or backoff. */
static zkl__cnode **route_list(struct zkl__core *k, enum zkl__core_route r)
{
    return r == ZKL__RT_WATCHING ? &k->watching : &k->backoff;
}

static void unroute(zkl__cnode *n)
{
    struct zkl__core *k = n->core;
    switch (n->route) {
    case ZKL__RT_WATCHING:
    case ZKL__RT_BACKOFF:
        ZKL__DLIST_UNLINK(*route_list(k, n->route), n, rprev, rnext);
        break;
    case ZKL__RT_HELD: {
        assert(n->seq >= 0 && n->dir != NULL); /* zkl__core_unname before a name changes */
        zkl__cnode **p = &k->held[node_hash(n) & (k->held_buckets - 1)];
        while (*p != n)
            p = &(*p)->rnext;
        *p = n->rnext;
        n->rnext = NULL;
        k->held_count--;
        break;
    }
    default:
        break;
    }
    n->route = ZKL__RT_NONE;
}

/* The held index finds a node by its name: a node leaves it before its
 * name changes (a new node or a new uuid), or it could not be found again. */
void zkl__core_unname(zkl__cnode *n)
{
    if (n->route == ZKL__RT_HELD)
        unroute(n);
    n->seq = -1;
    free(n->name);
    n->name = NULL;
}

void zkl__core_name(zkl__cnode *n, int32_t seq)
{
    zkl__core_unname(n);
    if (seq < 0)
        return;
    n->seq = seq;
    /* Written once and kept: a contended acquisition needs it half a dozen
     * times (listings, its watch, the held index, its delete). */
    char buf[ZKL__NAME_BUF];
    zkl__name_write(buf, sizeof buf, n->uuid, zkl__cnode_kind(n), seq);
    n->name = zkl__core_strdup(n->core, buf);
}

/* Put n on the routing list `to`. The held index needs room: without it
 * the node stays on the watching list, which only routes slower. */
void zkl__core_route(zkl__cnode *n, enum zkl__core_route to)
{
    struct zkl__core *k = n->core;
    if (n->route == to)
        return;
    if (to == ZKL__RT_HELD) {
        if (k->held_count >= k->held_buckets)
            held_grow(k);
        if (k->held_buckets == 0 || n->seq < 0)
            return;
    }
    unroute(n);
    switch (to) {
    case ZKL__RT_WATCHING:
    case ZKL__RT_BACKOFF:
        ZKL__DLIST_PUSH(*route_list(k, to), n, rprev, rnext);
        break;
    case ZKL__RT_HELD: {
        zkl__cnode **b = &k->held[node_hash(n) & (k->held_buckets - 1)];
        n->rnext = *b;
        *b = n;
        k->held_count++;
        break;
    }
    default:
        break;
    }
    n->route = (uint8_t)to;
}

/* The held node whose own node is the target's path, if any. */
zkl__cnode *zkl__core_held_find(const struct zkl__core *k, const char *path,
                                const struct zkl__target *t)
{
    if (k->held_count == 0)
        return NULL;
    zkl__cnode *n = k->held[hash_str(FNV, path) & (k->held_buckets - 1)];
    while (n != NULL && !zkl__core_is_own(n, t))
        n = n->rnext;
    return n;
}
