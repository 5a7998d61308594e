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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zkl/zookeeper.h"

#define WAIT_KIND "zkl-wait-"
#define LEASE_KIND "zkl-lease-"
#define LIMIT_KEY "max_leases="

struct zkl_semaphore {
    zkl_client *c;
    char *path;
    int max;
    pthread_mutex_t mu;
    int out;            /* leases not yet released (guarded by mu) */
    zkl_lease *leases;  /* those leases, newest first (mu) */
    zkl__lost lost;     /* (mu) */
};

struct zkl_lease {
    zkl_semaphore *s;
    zkl__node *node;
    int count;
    zkl_lease *prev, *next; /* in s->leases (s->mu) */
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

static void lease_kind(char *buf, size_t size, int n)
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

const zkl__policy zkl__gate_policy = {WAIT_KIND, gate_holds, false, gate_watch_group};

/* A lease node is created only by the gate holder once there is room: it
 * holds as soon as it exists. */
static bool lease_holds(const zkl__entry *cs, size_t n, size_t self, size_t *watch,
                        const void *arg)
{
    (void)cs, (void)n, (void)self, (void)watch, (void)arg;
    return true;
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

/* Create the missing ancestors of `path` (not `path` itself), as the client
 * creates lock parents; answers ignored: the create that follows tells. */
static int create_ancestors(zkl_client *c, const char *path, int64_t deadline)
{
    size_t depth = 0;
    for (const char *p = path + 1; *p; p++)
        depth += *p == '/';
    if (depth == 0)
        return 0;
    struct zkl__batch *b = zkl__batch_new(depth);
    char *copy = strdup(path);
    if (b == NULL || copy == NULL) {
        free(copy);
        if (b)
            zkl__batch_destroy(b);
        return ZKL_ENOMEM;
    }
    zhandle_t *zh;
    int err = zkl__send_begin(c, &zh);
    if (err != 0) {
        free(copy);
        zkl__batch_destroy(b);
        return err;
    }
    int mode = c->container_parents ? ZOO_CONTAINER : ZOO_PERSISTENT;
    size_t k = 0;
    for (char *s = strchr(copy + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        zkl__sent(&b->s[k], zoo_acreate(zh, copy, "", 0, zkl__client_acl(c), mode, zkl__string_done,
                                   &b->s[k]));
        k++;
        *s = '/';
    }
    zkl__send_end(c, (int)k);
    free(copy);
    err = zkl__batch_wait(b, deadline);
    zkl__batch_drop(b);
    return err;
}

/* Make sure the semaphore node records our limit: read it; create it
 * (persistent, so the limit stays with the semaphore) if missing; fill it
 * in, by version, if it exists without data. ZKL_EMISMATCH if it records
 * another limit or something that is no limit. */
static int ensure_limit(zkl_semaphore *s, int64_t deadline)
{
    char want[32];
    snprintf(want, sizeof want, LIMIT_KEY "%d", s->max);
    for (int tries = 0; tries < 20; tries++) {
        struct zkl__batch *b;
        int err = zkl__call(s->c, ZKL__OP_GET, s->path, NULL, 0, 0, deadline, &b);
        if (err != 0)
            return err;
        int rc = b->s[0].rc;
        int limit = rc == ZOK ? zkl__semaphore_parse_limit(b->s[0].data, b->s[0].len) : 0;
        int version = b->s[0].st.version;
        zkl__batch_drop(b);
        if (rc == ZOK && limit != 0)
            return limit == s->max ? 0 : ZKL_EMISMATCH;
        if (rc == ZOK) {
            err = zkl__call(s->c, ZKL__OP_SET, s->path, want, 0, version, deadline, &b);
            if (err != 0)
                return err;
            rc = b->s[0].rc;
            zkl__batch_drop(b);
            if (rc == ZOK)
                return 0;
            if (rc != ZBADVERSION && rc != ZNONODE)
                return zkl__err_from_zk(rc);
            continue; /* someone else wrote first: read what */
        }
        if (rc != ZNONODE)
            return zkl__err_from_zk(rc);
        err = zkl__call(s->c, ZKL__OP_CREATE, s->path, want, ZOO_PERSISTENT, 0, deadline, &b);
        if (err != 0)
            return err;
        rc = b->s[0].rc;
        zkl__batch_drop(b);
        if (rc == ZOK)
            return 0;
        if (rc == ZNONODE) {
            if ((err = create_ancestors(s->c, s->path, deadline)) != 0)
                return err;
        } else if (rc != ZNODEEXISTS) {
            return zkl__err_from_zk(rc);
        }
    }
    return ZKL_EZK;
}

/* ---- the semaphore ---------------------------------------------------------- */

int zkl_semaphore_new(zkl_client *c, const char *path, int max_leases, zkl_semaphore **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0 || max_leases < 1)
        return ZKL_EINVAL;
    zkl_semaphore *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ZKL_ENOMEM;
    if ((s->path = strdup(path)) == NULL) {
        free(s);
        return ZKL_ENOMEM;
    }
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s->path);
        free(s);
        return ZKL_ESYS;
    }
    if (zkl__obj_open(c, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        free(s->path);
        free(s);
        return ZKL_ENOMEM;
    }
    s->c = c;
    s->max = max_leases;
    /* Disagreement shows at once, not at the first acquire. */
    int rc = ensure_limit(s, zkl__now_ns() + (int64_t)c->timeout_ms * 1000000);
    if (rc != 0) {
        zkl__obj_close(s, "zkl_semaphore_new");
        pthread_mutex_destroy(&s->mu);
        free(s->path);
        free(s);
        zkl__obj_done(c);
        return rc;
    }
    *out = s;
    return 0;
}

static void lease_node_lost(zkl__node *n, int64_t token, void *arg);

static int zkl_semaphore_acquire_many_unguarded(zkl_semaphore *s, int n, long timeout_ms,
                                                zkl_lease **out)
{
    if (s == NULL || out == NULL || n < 1 || n > s->max)
        return ZKL_EINVAL;
    int64_t deadline = zkl__deadline(timeout_ms);
    zkl_lease *l = calloc(1, sizeof *l);
    if (l == NULL)
        return ZKL_ENOMEM;

    /* Check the recorded limit on every acquire (it may have been recreated
     * since zkl_semaphore_new). The read goes out before our waiter node,
     * so its answer is in by the time the gate is ours: no extra wait. */
    struct zkl__batch *chk = zkl__batch_new(1);
    if (chk != NULL) {
        zhandle_t *zh;
        if (zkl__send_begin(s->c, &zh) == 0) {
            zkl__sent(&chk->s[0], zoo_aget(zh, s->path, 0, zkl__get_done, &chk->s[0]));
            zkl__send_end(s->c, 1);
        } else {
            chk->s[0].done = true;
            chk->s[0].rc = ZSESSIONEXPIRED;
        }
    }

    struct zkl__gate_arg ga = {s->max, n};
    zkl__qopts go = {.arg = &ga};
    zkl__node *gate;
    int rc = zkl__queue_acquire(s->c, s->path, &zkl__gate_policy, &go, deadline, &gate);
    if (rc != 0) {
        zkl__batch_drop(chk);
        free(l);
        return rc;
    }

    int limit = 0;
    if (chk != NULL) {
        pthread_mutex_lock(&chk->mu);
        if (chk->s[0].done && chk->s[0].rc == ZOK)
            limit = zkl__semaphore_parse_limit(chk->s[0].data, chk->s[0].len);
        pthread_mutex_unlock(&chk->mu);
        zkl__batch_drop(chk);
    }
    if (limit > 0 && limit != s->max)
        rc = ZKL_EMISMATCH;
    else if (limit <= 0) {
        /* Not read, or not there: the slow way. Past the deadline (a try
         * once), it still gets its answers, bounded as the engine bounds a
         * try-once acquire: by the session timeout. */
        int64_t now = zkl__now_ns();
        rc = ensure_limit(s, deadline > now ? deadline
                                            : now + (int64_t)s->c->timeout_ms * 1000000);
    }

    if (rc == 0) {
        /* Only the gate holder creates leases, and only within the gate's
         * session: after an expiry the gate is someone else's. */
        char kind[32];
        lease_kind(kind, sizeof kind, n);
        zkl__qopts lo = {.kind = kind, .within = gate, .on_lost = lease_node_lost, .hook_arg = s};
        rc = zkl__queue_acquire(s->c, s->path, &zkl__lease_policy, &lo, deadline, &l->node);
    }
    /* Leaving the gate wakes the next waiter. After success nothing waits
     * for the server's confirmation; after a failure the call returns with
     * no node of it left, as far as the connection allows. */
    zkl__queue_leave(gate, rc != 0);
    if (rc != 0) {
        free(l);
        return rc;
    }
    l->s = s;
    l->count = n;
    pthread_mutex_lock(&s->mu);
    s->out++;
    l->next = s->leases;
    if (s->leases != NULL)
        s->leases->prev = l;
    s->leases = l;
    pthread_mutex_unlock(&s->mu);
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

/* The engine's word that a lease's node is lost: tell the user's callback.
 * Runs on the client's keeper thread, once per node. */
static void lease_node_lost(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    zkl_semaphore *s = arg;
    void *fn_arg;
    zkl_semaphore_lost_fn fn = (zkl_semaphore_lost_fn)zkl__lost_get(&s->lost, &s->mu, &fn_arg);
    if (fn != NULL)
        fn(s, token, fn_arg);
}

int zkl_semaphore_set_lost_fn(zkl_semaphore *s, zkl_semaphore_lost_fn fn, void *arg)
{
    if (s == NULL)
        return ZKL_EINVAL;
    return zkl__lost_set(&s->lost, &s->mu, s->c, (zkl__any_fn)fn, arg);
}

int zkl_semaphore_free(zkl_semaphore *s)
{
    if (s == NULL)
        return 0;
    pthread_mutex_lock(&s->mu);
    int out = s->out;
    pthread_mutex_unlock(&s->mu);
    if (out > 0 || zkl__obj_close_idle(s, "zkl_semaphore_free") != 0)
        return ZKL_EBUSY; /* leases out, or an acquire in progress */
    /* After this no callback can be running or start. */
    zkl__lost_stop(&s->lost, &s->mu, s->c);
    pthread_mutex_destroy(&s->mu);
    zkl_client *c = s->c;
    free(s->path);
    free(s);
    zkl__obj_done(c);
    return 0;
}

/* ---- leases ------------------------------------------------------------------ */

int zkl_lease_release(zkl_lease *l)
{
    if (l == NULL)
        return ZKL_EINVAL;
    /* Out of the list first: the lost callback's listener must not meet
     * a node that the release frees. */
    zkl_semaphore *s = l->s;
    pthread_mutex_lock(&s->mu);
    if (l->prev != NULL)
        l->prev->next = l->next;
    else
        s->leases = l->next;
    if (l->next != NULL)
        l->next->prev = l->prev;
    s->out--;
    pthread_mutex_unlock(&s->mu);
    int rc = zkl__queue_release(l->node);
    if (zkl__release_kept(rc)) {
        /* The server refused the delete: the lease stays, for the caller
         * to release again. */
        pthread_mutex_lock(&s->mu);
        s->out++;
        l->prev = NULL;
        l->next = s->leases;
        if (s->leases != NULL)
            s->leases->prev = l;
        s->leases = l;
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    free(l);
    return rc;
}

int zkl_lease_is_held(zkl_lease *l)
{
    /* Not while suspended: the session may have expired on the server. */
    return l != NULL && zkl__node_held(l->node);
}

int64_t zkl_lease_token(zkl_lease *l)
{
    if (l == NULL)
        return ZKL_EINVAL;
    return zkl__node_held(l->node) ? zkl__node_token(l->node) : ZKL_ELOST;
}

int zkl_lease_count(zkl_lease *l)
{
    return l == NULL ? ZKL_EINVAL : l->count;
}

const char *zkl_lease_node(zkl_lease *l)
{
    return l == NULL ? NULL : zkl__node_path(l->node);
}

int zkl_lease_guarded_multi(zkl_lease *l, int count, const zoo_op_t *ops,
                            zoo_op_result_t *results)
{
    if (l == NULL || ops == NULL || count < 1)
        return ZKL_EINVAL;
    return zkl__node_guarded_multi(l->node, count, ops, results);
}

int zkl_lease_guarded_set(zkl_lease *l, const char *path, const void *data, int len)
{
    if (l == NULL || zkl__path_check(path) != 0 || len < 0 || (data == NULL && len > 0))
        return ZKL_EINVAL;
    zoo_op_t op;
    zoo_set_op_init(&op, path, data, len, -1, NULL);
    zoo_op_result_t res;
    return zkl_lease_guarded_multi(l, 1, &op, &res);
}

/* ---- who holds ---------------------------------------------------------------- */

static int info_cmp(const void *a, const void *b)
{
    const zkl_lease_info *x = a, *y = b;
    return x->token < y->token ? -1 : x->token > y->token;
}

int zkl_semaphore_holders(zkl_semaphore *s, long timeout_ms, zkl_lease_info **out,
                          int *count)
{
    if (s == NULL || out == NULL || count == NULL)
        return ZKL_EINVAL;
    int64_t deadline = zkl__deadline(timeout_ms);
    struct zkl__batch *lb;
    int err = zkl__call(s->c, ZKL__OP_KIDS, s->path, NULL, 0, 0, deadline, &lb);
    if (err != 0)
        return err;
    int rc = lb->s[0].rc;
    if (rc != ZOK && rc != ZNONODE) {
        zkl__batch_drop(lb);
        return zkl__err_from_zk(rc);
    }
    /* The leases of the listing, read in one pipelined batch. */
    const struct String_vector *kids = &lb->s[0].kids;
    size_t nl = 0;
    for (int i = 0; i < kids->count; i++) {
        zkl__entry e;
        if (zkl__entry_parse(kids->data[i], &e) == 0 && zkl__lease_count(&e) > 0)
            nl++;
    }
    struct zkl__batch *gb = zkl__batch_new(nl ? nl : 1);
    char **paths = calloc(nl ? nl : 1, sizeof *paths);
    int *counts = calloc(nl ? nl : 1, sizeof *counts);
    if (gb == NULL || paths == NULL || counts == NULL) {
        err = ZKL_ENOMEM;
        goto out;
    }
    size_t k = 0;
    for (int i = 0; i < kids->count; i++) {
        zkl__entry e;
        if (zkl__entry_parse(kids->data[i], &e) == 0 && zkl__lease_count(&e) > 0) {
            counts[k] = zkl__lease_count(&e);
            if ((paths[k++] = zkl__path_join(s->path, kids->data[i])) == NULL) {
                err = ZKL_ENOMEM;
                goto out;
            }
        }
    }
    if (nl > 0) {
        zhandle_t *zh;
        if ((err = zkl__send_begin(s->c, &zh)) != 0)
            goto out;
        for (size_t i = 0; i < nl; i++)
            zkl__sent(&gb->s[i], zoo_aget(zh, paths[i], 0, zkl__get_done, &gb->s[i]));
        zkl__send_end(s->c, (int)nl);
        if ((err = zkl__batch_wait(gb, deadline)) != 0)
            goto out;
    }
    /* One block: the array, then its strings. A lease released meanwhile
     * (no node) is left out. */
    size_t have = 0, bytes = 0;
    for (size_t i = 0; i < nl; i++) {
        if (gb->s[i].rc == ZOK) {
            have++;
            bytes += strlen(paths[i]) + 1 + (size_t)gb->s[i].len + 1;
        } else if (gb->s[i].rc != ZNONODE) {
            err = zkl__err_from_zk(gb->s[i].rc);
            goto out;
        }
    }
    zkl_lease_info *info = malloc(have * sizeof *info + bytes + 1);
    if (info == NULL) {
        err = ZKL_ENOMEM;
        goto out;
    }
    char *str = (char *)(info + have);
    size_t j = 0;
    for (size_t i = 0; i < nl; i++) {
        if (gb->s[i].rc != ZOK)
            continue;
        info[j].node = strcpy(str, paths[i]);
        str += strlen(paths[i]) + 1;
        info[j].owner = memcpy(str, gb->s[i].data, (size_t)gb->s[i].len + 1);
        str += gb->s[i].len + 1;
        info[j].token = gb->s[i].st.czxid;
        info[j].session = gb->s[i].st.ephemeralOwner;
        info[j].count = counts[i];
        j++;
    }
    qsort(info, have, sizeof *info, info_cmp);
    *out = info;
    *count = (int)have;
out:
    if (paths)
        for (size_t i = 0; i < nl; i++)
            free(paths[i]);
    free(paths);
    free(counts);
    zkl__batch_drop(gb);
    zkl__batch_drop(lb);
    return err;
}

void zkl_lease_info_free(zkl_lease_info *info)
{
    free(info);
}

/* ---- misuse checks (lib/guard.c) ----------------------------------------- */

int zkl_semaphore_acquire_many(zkl_semaphore *s, int n, long timeout_ms, zkl_lease **out)
{
    if (s == NULL)
        return ZKL_EINVAL;
    zkl__obj_enter(s, "zkl_semaphore_acquire_many"); /* a free meanwhile aborts, naming it */
    int rc = zkl_semaphore_acquire_many_unguarded(s, n, timeout_ms, out);
    zkl__obj_leave(s);
    return rc;
}
