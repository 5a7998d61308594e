/* The counting semaphore: at most `max` leases held at once, served in
 * arrival order, one wake-up per release (docs/protocol.md, "Counting
 * semaphore").
 *
 * Under the semaphore path live two kinds of nodes of the lock-queue
 * engine: waiters ("zkl-wait-", a FIFO gate) and leases ("zkl-lease-" for
 * one lease, "zkl-lease-x<n>-" for n taken at once). Only the first waiter,
 * the gate holder, looks at the leases: it holds the gate once the leases
 * leave room for what it asks, creates its one lease node, and leaves the
 * gate, which wakes the next waiter only. While there is no room it watches
 * every lease, so a release wakes that one process and no other. Nobody but
 * the gate holder creates leases, so its count cannot be overtaken, and a
 * many-lease is one node: all or none, without any chance of two callers
 * each holding part of what they need. The limit is recorded as the data of
 * the semaphore node ("max_leases=<n>"), and every participant checks it. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "zkl/zookeeper.h"

#define WAIT_KIND "zkl-wait-"
#define LEASE_KIND "zkl-lease-"
#define LIMIT_KEY "max_leases="

struct zkl_semaphore {
    int max;
    zkl__owner own;     /* the client, the lost callback; own.mu guards the rest */
    int out;            /* leases not yet released */
    zkl_lease *leases;  /* those leases, newest first */
    bool freed;         /* zkl_semaphore_free was called: the last lease
                           out frees the semaphore */
};

struct zkl_lease {
    zkl_semaphore *s;
    zkl__node *node;
    int count;
    zkl_lease *prev, *next; /* in s->leases (s->own.mu) */
};

/* ---- node kinds ---------------------------------------------------------- */

/* How many leases a node stands for: 1 for "zkl-lease-", n for
 * "zkl-lease-x<n>-", 0 for any other node. */
int zkl__lease_count(const zkl__entry *e)
{
    const size_t lk = sizeof LEASE_KIND - 1;
    size_t klen = strlen(e->name) - 10 - (size_t)(e->kind - e->name);
    if (klen < lk || memcmp(e->kind, LEASE_KIND, lk) != 0)
        return 0;
    const char *p = e->kind + lk;
    size_t rest = klen - lk;
    if (rest == 0)
        return 1;
    if (rest < 3 || p[0] != 'x' || p[rest - 1] != '-')
        return 0;
    long v = 0;
    for (size_t i = 1; i + 1 < rest; i++) {
        if (p[i] < '0' || p[i] > '9' || v > INT_MAX / 10)
            return 0;
        v = v * 10 + (p[i] - '0');
    }
    return v >= 1 && v <= INT_MAX ? (int)v : 0;
}

void zkl__lease_kind(char *buf, size_t size, int n)
{
    if (n == 1)
        snprintf(buf, size, "%s", LEASE_KIND);
    else
        snprintf(buf, size, "%sx%d-", LEASE_KIND, n);
}

/* A waiter holds the gate when no waiter is ahead of it and the leases
 * leave room for `need` more. Behind another waiter it watches the nearest
 * one ahead (a FIFO queue, one wake-up per handoff); as the head without
 * room, it watches every lease (the watch group): the first to go lists
 * again. */
static bool gate_holds(const zkl__entry *cs, size_t n, size_t self, size_t *watch,
                       const void *arg)
{
    const struct zkl__gate_arg *g = arg;
    for (size_t i = self; i-- > 0;) {
        if (zkl__entry_is(&cs[i], WAIT_KIND)) {
            *watch = i;
            return false;
        }
    }
    long used = 0;
    size_t first = n;
    for (size_t i = 0; i < n; i++) {
        int k = zkl__lease_count(&cs[i]);
        if (k > 0) {
            used += k;
            if (first == n)
                first = i;
        }
    }
    if (first == n || used + g->need <= g->max)
        return true;
    *watch = first;
    return false;
}

static bool gate_watch_group(const zkl__entry *e, const void *arg)
{
    (void)arg;
    return zkl__lease_count(e) > 0;
}

const zkl__policy zkl__gate_policy = {WAIT_KIND, gate_holds, false, gate_watch_group, ZKL__POL_GATE};

/* A lease node is created only by the gate holder once there is room: it
 * holds when the leases up to it, in the order of their sequences, fit the
 * limit (the gate's arg), which they do unless someone else deleted the
 * gate node behind its holder's back and the next gate holder counted
 * without this lease. Then the later lease waits for room; leases only go,
 * so one that holds never stops fitting. Without an arg, at once. */
static bool lease_holds(const zkl__entry *cs, size_t n, size_t self, size_t *watch,
                        const void *arg)
{
    const struct zkl__gate_arg *g = arg;
    if (g == NULL)
        return true;
    long used = 0;
    size_t first = n;
    for (size_t i = 0; i <= self && i < n; i++) {
        int k = zkl__lease_count(&cs[i]);
        used += k > 0 ? k : 0;
        if (k > 0 && first == n && i < self)
            first = i;
    }
    if (used <= g->max || first == n)
        return true;
    *watch = first;
    return false;
}

const zkl__policy zkl__lease_policy = {LEASE_KIND, lease_holds, false, NULL};


/* ---- the limit ------------------------------------------------------------ */

/* The limit recorded in a semaphore node's data, 0 for empty data, -1 for
 * data that is no limit (the path is something else). */
int zkl__semaphore_parse_limit(const char *data, int len)
{
    const size_t kl = sizeof LIMIT_KEY - 1;
    if (len == 0)
        return 0;
    if ((size_t)len <= kl || memcmp(data, LIMIT_KEY, kl) != 0)
        return -1;
    long v = 0;
    size_t i = kl;
    for (; i < (size_t)len && data[i] >= '0' && data[i] <= '9'; i++) {
        v = v * 10 + (data[i] - '0');
        if (v > INT_MAX)
            return -1;
    }
    /* Room for later fields: a space or newline may follow the number. */
    if (i == kl || (i < (size_t)len && data[i] != ' ' && data[i] != '\n') || v < 1)
        return -1;
    return (int)v;
}

/* ---- the semaphore ---------------------------------------------------------- */

/* The user's lost callback, for a lease's node. */
static void tell(zkl__any_fn fn, void *fn_arg, void *obj, int side, int64_t token)
{
    (void)side;
    ((zkl_semaphore_lost_fn)fn)(obj, token, fn_arg);
}

int zkl_semaphore_new(zkl_client *c, const char *path, int max_leases, zkl_semaphore **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0 || max_leases < 1)
        return ZKL_EINVAL;
    int rc;
    zkl_semaphore *s =
        zkl__owner_new(sizeof *s, offsetof(zkl_semaphore, own), c, path, tell, false, &rc);
    if (s == NULL)
        return rc;
    s->max = max_leases; /* checked against the server's at each acquire */
    *out = s;
    return 0;
}

/* Put a lease first in its semaphore's list (s->own.mu held). */
static void list_in(zkl_semaphore *s, zkl_lease *l)
{
    ZKL__DLIST_PUSH(s->leases, l, prev, next);
}

/* Count a lease as out, first in its semaphore's list. */
static void count_in(zkl_lease *l)
{
    zkl_semaphore *s = l->s;
    pthread_mutex_lock(&s->own.mu);
    s->out++;
    list_in(s, l);
    pthread_mutex_unlock(&s->own.mu);
}

/* The blocking acquire is the asynchronous request (semaphore_async.c) and
 * a wait for it: the lease node it holds is handed to the lease. */
struct acquiring {
    zkl_semaphore *s;
    int n;
};

static int start_request(void *ctx, long timeout_ms, pthread_cond_t *cv, zkl_request **out)
{
    struct acquiring *x = ctx;
    zkl_semaphore *s = x->s;
    return zkl__semaphore_start_async(s->own.c, s->own.path, s->max, x->n, timeout_ms, &s->own,
                                      NULL, cv, out);
}

static int zkl_semaphore_acquire_many_unguarded(zkl_semaphore *s, int n, long timeout_ms,
                                                zkl_cancel *h, zkl_lease **out)
{
    if (s == NULL || out == NULL || n < 1 || n > s->max)
        return ZKL_EINVAL;
    zkl_lease *l = calloc(1, sizeof *l);
    if (l == NULL)
        return ZKL_ENOMEM;
    struct acquiring x = {s, n};
    int rc = zkl__kit_wait_request(s->own.c, s->own.path, timeout_ms, h, start_request, &x, &l->node);
    if (rc != 0) {
        free(l);
        return rc;
    }
    l->s = s;
    l->count = n;
    count_in(l);
    *out = l;
    return 0;
}

int zkl_semaphore_acquire(zkl_semaphore *s, long timeout_ms, zkl_lease **out)
{
    return zkl_semaphore_acquire_many(s, 1, timeout_ms, out);
}

int zkl_semaphore_max_leases(zkl_semaphore *s)
{
    return s == NULL ? ZKL_EINVAL : s->max;
}

int zkl_semaphore_set_lost_fn(zkl_semaphore *s, zkl_semaphore_lost_fn fn, void *arg)
{
    return s == NULL ? ZKL_EINVAL : zkl__owner_set(&s->own, false, (zkl__any_fn)fn, arg);
}

void zkl_semaphore_free(zkl_semaphore *s)
{
    if (s == NULL)
        return;
    zkl__kit_obj_close(s, "zkl_semaphore_free"); /* an acquire meanwhile aborts */
    zkl__owner_stop(&s->own); /* no callback runs from here on */
    pthread_mutex_lock(&s->own.mu);
    s->freed = true;
    bool last = s->out == 0;
    pthread_mutex_unlock(&s->own.mu);
    /* Leases still out keep it: the last release frees it. */
    if (last) {
        zkl__owner_done(&s->own);
        free(s);
    }
}

/* ---- leases ------------------------------------------------------------------ */

int zkl_lease_release(zkl_lease *l)
{
    if (l == NULL)
        return ZKL_EINVAL;
    /* Out of the list first: the lost callback's listener must not meet
     * a node that the release frees. */
    zkl_semaphore *s = l->s;
    pthread_mutex_lock(&s->own.mu);
    ZKL__DLIST_UNLINK(s->leases, l, prev, next);
    pthread_mutex_unlock(&s->own.mu);
    int rc = zkl__kit_wait_release(l->node);
    pthread_mutex_lock(&s->own.mu);
    bool kept = zkl__release_kept(rc);
    if (kept) {
        /* The server refused the delete: the lease stays, for the caller
         * to release again. */
        list_in(s, l);
    } else {
        s->out--;
    }
    bool last = !kept && s->freed && s->out == 0;
    pthread_mutex_unlock(&s->own.mu);
    if (!kept)
        free(l);
    if (last) {
        zkl__owner_done(&s->own);
        free(s);
    }
    return rc;
}

int zkl_lease_is_held(zkl_lease *l)
{
    /* Not while suspended: the session may have expired on the server. */
    return l != NULL && zkl__kit_node_held(l->node);
}

int zkl_lease_token(zkl_lease *l, int64_t *out)
{
    if (l == NULL)
        return ZKL_EINVAL;
    return zkl__token_out(zkl__kit_forked(zkl__kit_node_client(l->node)) ? ZKL_EFORK
                          : zkl__kit_node_held(l->node)            ? zkl__kit_node_token(l->node)
                                                               : ZKL_ELOST,
                          out);
}

int zkl_lease_count(zkl_lease *l)
{
    return l == NULL ? ZKL_EINVAL : l->count;
}

const char *zkl_lease_node(zkl_lease *l)
{
    return l == NULL ? NULL : zkl__kit_node_path(l->node);
}

int zkl_lease_guarded_multi(zkl_lease *l, int count, const zoo_op_t *ops,
                            zoo_op_result_t *results)
{
    return l == NULL ? ZKL_EINVAL : zkl__znode_guarded_ops(l->node, count, ops, results);
}

int zkl_lease_guarded_set(zkl_lease *l, const char *path, const void *data, int len)
{
    return l == NULL ? ZKL_EINVAL : zkl__znode_guarded_set(l->node, path, data, len);
}

/* ---- who holds ---------------------------------------------------------------- */

static int info_cmp(const void *a, const void *b)
{
    const zkl_lease_info *x = a, *y = b;
    return x->token < y->token ? -1 : x->token > y->token;
}

/* The leases among a semaphore's nodes: how many each stands for. */
static int lease_tag(const char *name)
{
    zkl__entry e;
    return zkl__entry_parse(name, &e) == 0 ? zkl__lease_count(&e) : 0;
}

int zkl_semaphore_holders(zkl_semaphore *s, long timeout_ms, zkl_lease_info **out,
                          int *count)
{
    if (s == NULL || out == NULL || count == NULL)
        return ZKL_EINVAL;
    zkl__read *r;
    size_t n;
    int err = zkl__read_children(s->own.c, s->own.path, lease_tag, zkl__deadline(timeout_ms), &r, &n);
    if (err != 0)
        return err;
    /* One block: the array, then its strings. */
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(r[i].path) + 1 + (size_t)r[i].len + 1;
    zkl_lease_info *info = malloc(n * sizeof *info + bytes + 1);
    if (info == NULL) {
        zkl__reads_free(r, n);
        return ZKL_ENOMEM;
    }
    char *str = (char *)(info + n);
    for (size_t i = 0; i < n; i++) {
        info[i].node = strcpy(str, r[i].path);
        str += strlen(r[i].path) + 1;
        info[i].owner = memcpy(str, r[i].data, (size_t)r[i].len + 1);
        str += r[i].len + 1;
        info[i].token = r[i].czxid;
        info[i].session = r[i].owner;
        info[i].count = r[i].tag;
    }
    zkl__reads_free(r, n);
    qsort(info, n, sizeof *info, info_cmp);
    *out = info;
    *count = (int)n;
    return 0;
}

void zkl_lease_info_free(zkl_lease_info *info)
{
    free(info);
}

/* ---- misuse checks (lib/front/objects.c) ------------------------------------- */

int zkl_semaphore_acquire_many(zkl_semaphore *s, int n, long timeout_ms, zkl_lease **out)
{
    if (s == NULL)
        return ZKL_EINVAL;
    zkl__kit_obj_enter(s, "zkl_semaphore_acquire_many"); /* a free meanwhile aborts, naming it */
    int rc = zkl_semaphore_acquire_many_unguarded(s, n, timeout_ms, NULL, out);
    zkl__kit_obj_leave(s);
    return rc;
}

int zkl_semaphore_acquire_many_cancellable(zkl_semaphore *s, int n, long timeout_ms,
                                           zkl_cancel *h, zkl_lease **out)
{
    if (s == NULL)
        return ZKL_EINVAL;
    if (h != NULL && zkl_cancel_is_fired(h))
        return ZKL_ECANCELED;
    zkl__kit_obj_enter(s, "zkl_semaphore_acquire_many_cancellable");
    int rc = zkl_semaphore_acquire_many_unguarded(s, n, timeout_ms, h, out);
    zkl__kit_obj_leave(s);
    return rc;
}

static int acquire_async(zkl_semaphore *s, const char *name, int n, long timeout_ms,
                         zkl_request_fn fn, void *arg, zkl_request **out)
{
    if (s == NULL)
        return ZKL_EINVAL;
    zkl__kit_obj_enter(s, name);
    int rc = fn == NULL ? ZKL_EINVAL
                        : zkl__semaphore_start_async(s->own.c, s->own.path, s->max, n, timeout_ms,
                                                     NULL, fn, arg, out);
    zkl__kit_obj_leave(s);
    return rc;
}

int zkl_semaphore_acquire_async(zkl_semaphore *s, long timeout_ms, zkl_request_fn fn, void *arg,
                                zkl_request **out)
{
    return acquire_async(s, "zkl_semaphore_acquire_async", 1, timeout_ms, fn, arg, out);
}

int zkl_semaphore_acquire_many_async(zkl_semaphore *s, int n, long timeout_ms, zkl_request_fn fn,
                                     void *arg, zkl_request **out)
{
    return acquire_async(s, "zkl_semaphore_acquire_many_async", n, timeout_ms, fn, arg, out);
}
