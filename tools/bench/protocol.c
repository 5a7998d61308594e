/* protocol: zkl's own node protocol for the mutex (docs/protocol.md),
 * written directly on the bare ZooKeeper C client, as lean as it can be:
 * what the library would cost if it were only its protocol. Beside chain
 * (the ideal lock, no listing) it splits what a handoff costs into what the
 * protocol costs over the chain and what the library costs over the
 * protocol.
 *
 * A contender creates `_c_<uuid>-lock-` EPHEMERAL_SEQUENTIAL with a listing
 * right behind it (one round trip), watches its own node from the create's
 * answer on (an existence watch, sent before any watch on another node),
 * holds if the listing shows its node first, else sets a data watch on the
 * node just before it. When that node goes it holds at once if the latest
 * listing showed that node first (nodes created later sort after its own),
 * else it lists again. Release deletes the node. Requests per acquisition:
 * 6 contended (create, listing, own watch, predecessor's watch, listing,
 * delete), 5 when the predecessor was first.
 *
 * A lock path it held alone: once a listing showed its node alone and that
 * node's delete was answered, a create that comes back with the next number
 * proves nothing else is there, as a listing would (a data watch on the
 * lock path, set the second time, reports it removed meanwhile). An
 * uncontended acquisition is then 3 requests: create, own watch, delete. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct proto {
    zhandle_t *zh;
    const char *dir;
    char ident[300]; /* the node's data: "<host> <pid>", as zkl writes */
    uint64_t rng;
    pthread_mutex_t mu; /* the rest; the completion thread and the caller's */
    pthread_cond_t cv;
    bool waiting, held;
    int err;           /* the ZooKeeper code that ended the attempt */
    char own[1200];    /* our node, once created */
    int64_t seq, czxid;
    char pred[1200];   /* the node watched, while waiting on it */
    bool pred_first;   /* it was first in the latest listing */
    bool own_ok;       /* our node's watch is set, and it existed */
    bool fast;         /* the create was sent without a listing */
    unsigned fast_epoch;
    /* the lock path held alone */
    bool alone_known, alone_watched, alone_ready, alone_basis;
    int64_t expect;
    unsigned epoch; /* events on the lock path */
};

static void proto_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);

static int64_t seq_of(const char *name)
{
    size_t n = strlen(name);
    if (n < 10)
        return -1;
    int64_t v = 0;
    for (size_t i = n - 10; i < n; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

static void fail(struct proto *p, int rc)
{
    p->err = rc;
    pthread_cond_signal(&p->cv);
}

static void listed(int rc, const struct String_vector *kids, const void *data);

static void list(struct proto *p)
{
    int rc = zoo_aget_children(p->zh, p->dir, 0, listed, p);
    if (rc != ZOK)
        fail(p, rc);
}

static void dir_watched(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    struct proto *p = (struct proto *)data;
    pthread_mutex_lock(&p->mu);
    if (rc != ZOK && rc != ZNONODE)
        p->alone_watched = false;
    pthread_mutex_unlock(&p->mu);
}

/* We hold; `alone` if our node was the only one. */
static void hold(struct proto *p, bool alone)
{
    p->held = true;
    if (alone) {
        if (!p->alone_known) {
            p->alone_known = true; /* a watch only if it repeats */
        } else if (!p->alone_watched) {
            p->alone_watched = zoo_awexists(p->zh, p->dir, proto_watcher, p, dir_watched, p) == ZOK;
        }
        p->expect = p->seq + 1;
        p->alone_basis = true;
        p->alone_ready = false;
    }
    pthread_cond_signal(&p->cv);
}

static void pred_got(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    (void)v, (void)len, (void)st;
    struct proto *p = (struct proto *)data;
    pthread_mutex_lock(&p->mu);
    if (p->waiting && !p->held && rc == ZNONODE) {
        /* Gone before the watch was set: as if it went now. */
        p->pred[0] = '\0';
        if (p->pred_first && p->own_ok)
            hold(p, false);
        else
            list(p);
    } else if (p->waiting && !p->held && rc != ZOK) {
        fail(p, rc);
    }
    pthread_mutex_unlock(&p->mu);
}

static void watch_pred(struct proto *p)
{
    int rc = zoo_awget(p->zh, p->pred, proto_watcher, p, pred_got, p);
    if (rc != ZOK)
        fail(p, rc);
}

/* One pass over a listing: our node, the nearest one ahead of it, and
 * whether that one is first. */
static void decide(struct proto *p, const struct String_vector *kids)
{
    const char *me = p->own + strlen(p->dir) + 1;
    int64_t best = -1;
    const char *pred = NULL;
    int ahead = 0, total = 0;
    bool found = false;
    for (int i = 0; i < kids->count; i++) {
        int64_t s = seq_of(kids->data[i]);
        if (s < 0)
            continue;
        total++;
        if (strcmp(kids->data[i], me) == 0) {
            found = true;
        } else if (s < p->seq) {
            ahead++;
            if (s > best)
                best = s, pred = kids->data[i];
        }
    }
    if (!found) {
        fail(p, ZNONODE); /* our node was deleted: no outsiders here */
    } else if (ahead == 0) {
        hold(p, total == 1);
    } else {
        snprintf(p->pred, sizeof p->pred, "%s/%s", p->dir, pred);
        p->pred_first = ahead == 1;
        watch_pred(p);
    }
}

static void listed(int rc, const struct String_vector *kids, const void *data)
{
    struct proto *p = (struct proto *)data;
    pthread_mutex_lock(&p->mu);
    if (p->waiting && !p->held) {
        if (rc == ZOK)
            decide(p, kids);
        else
            fail(p, rc);
    }
    pthread_mutex_unlock(&p->mu);
}

static void own_watched(int rc, const struct Stat *st, const void *data)
{
    struct proto *p = (struct proto *)data;
    pthread_mutex_lock(&p->mu);
    /* An answer for an earlier attempt's node (a release's delete may
     * return before it is processed) is not this one's. */
    if (rc == ZOK && st->czxid == p->czxid)
        p->own_ok = true;
    else if (rc != ZOK && p->waiting && !p->held)
        fail(p, rc);
    pthread_mutex_unlock(&p->mu);
}

static void created(int rc, const char *name, const struct Stat *st, const void *data)
{
    struct proto *p = (struct proto *)data;
    pthread_mutex_lock(&p->mu);
    if (rc != ZOK) {
        fail(p, rc);
    } else {
        snprintf(p->own, sizeof p->own, "%s", name);
        p->seq = seq_of(name);
        p->czxid = st->czxid;
        rc = zoo_awexists(p->zh, p->own, proto_watcher, p, own_watched, p);
        if (rc != ZOK)
            fail(p, rc);
        else if (p->fast && p->seq == p->expect && p->epoch == p->fast_epoch)
            hold(p, true); /* the answer a listing of our node alone would give */
        else if (p->fast)
            list(p);
    }
    pthread_mutex_unlock(&p->mu);
}

static void proto_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)state;
    struct proto *p = ctx;
    if (type == ZOO_SESSION_EVENT || path == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    bool waiting = p->waiting && !p->held;
    if (strcmp(path, p->dir) == 0) {
        p->alone_watched = p->alone_ready = false; /* removed, or made anew */
        p->epoch++;
    } else if (waiting && strcmp(path, p->pred) == 0 && type == ZOO_CHANGED_EVENT) {
        watch_pred(p); /* data changed: watch on */
    } else if (waiting && strcmp(path, p->pred) == 0 && type == ZOO_DELETED_EVENT) {
        p->pred[0] = '\0';
        if (p->pred_first && p->own_ok)
            hold(p, false);
        else
            list(p);
    } else if (waiting && strcmp(path, p->own) == 0 && type == ZOO_DELETED_EVENT) {
        fail(p, ZNONODE);
    }
    pthread_mutex_unlock(&p->mu);
}

static uint32_t next_rand(struct proto *p)
{
    p->rng ^= p->rng << 13, p->rng ^= p->rng >> 7, p->rng ^= p->rng << 17;
    return (uint32_t)(p->rng >> 32);
}

static int proto_failed(int rc)
{
    fprintf(stderr, "%s: protocol: %s\n", zkl_bench_prog, zerror(rc));
    return ZKL_EZK;
}

static int proto_acquire(void *self, long timeout_ms)
{
    struct proto *p = self;
    char name[1300];
    uint32_t u[4] = {next_rand(p), next_rand(p), next_rand(p), next_rand(p)};
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += timeout_ms / 1000;
    pthread_mutex_lock(&p->mu);
    p->waiting = true;
    p->held = p->own_ok = false;
    p->err = 0;
    p->own[0] = p->pred[0] = '\0';
    p->fast = p->alone_ready && p->alone_watched;
    p->alone_ready = false; /* one acquire per confirmed delete */
    p->fast_epoch = p->epoch;
    snprintf(name, sizeof name, "%s/_c_%08x-%04x-4%03x-8%03x-%04x%08x-lock-", p->dir, u[0],
             u[1] >> 16, u[1] & 0xfff, u[2] >> 20, u[2] & 0xffff, u[3]);
    int rc = zoo_acreate2(p->zh, name, p->ident, (int)strlen(p->ident), &ZOO_OPEN_ACL_UNSAFE,
                          ZOO_EPHEMERAL_SEQUENTIAL, created, p);
    if (rc == ZOK && !p->fast)
        rc = zoo_aget_children(p->zh, p->dir, 0, listed, p); /* right behind the create */
    if (rc != ZOK)
        p->err = rc;
    int w = 0;
    while (!p->held && p->err == 0 && w != ETIMEDOUT)
        w = pthread_cond_timedwait(&p->cv, &p->mu, &end);
    int err = p->held ? 0 : p->err ? p->err : ZOPERATIONTIMEOUT;
    p->waiting = p->held;
    pthread_mutex_unlock(&p->mu);
    return err == 0 ? 0 : proto_failed(err);
}

static int proto_release(void *self)
{
    struct proto *p = self;
    char own[1200];
    pthread_mutex_lock(&p->mu);
    snprintf(own, sizeof own, "%s", p->own);
    p->held = p->waiting = false;
    pthread_mutex_unlock(&p->mu);
    int rc = zoo_delete(p->zh, own, -1);
    pthread_mutex_lock(&p->mu);
    if (p->alone_basis) {
        p->alone_basis = false;
        p->alone_ready = rc == ZOK;
    }
    p->own[0] = '\0';
    pthread_mutex_unlock(&p->mu);
    return rc == ZOK ? 0 : proto_failed(rc);
}

static int proto_is_held(void *self)
{
    struct proto *p = self;
    pthread_mutex_lock(&p->mu);
    int held = p->held;
    pthread_mutex_unlock(&p->mu);
    return held;
}

static const char *proto_path(void *self)
{
    return ((struct proto *)self)->dir;
}

struct barrier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

static void barrier_done(int rc, const struct Stat *st, const void *data)
{
    (void)rc, (void)st;
    struct barrier *b = (struct barrier *)data;
    pthread_mutex_lock(&b->mu);
    b->done = true;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* Nothing may call us once freed: the lock path's watch is removed, and
 * an answer sent now comes after every event already on its way (our own
 * node's deletion, told after the last release returned): the handle
 * delivers events and answers in order. */
static void proto_free(void *self)
{
    struct proto *p = self;
    if (p->alone_watched)
        (void)zoo_remove_watches(p->zh, p->dir, ZWATCHTYPE_ANY, proto_watcher, p, 1);
    struct barrier b = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    if (zoo_aexists(p->zh, "/", 0, barrier_done, &b) == ZOK) {
        pthread_mutex_lock(&b.mu);
        while (!b.done)
            pthread_cond_wait(&b.cv, &b.mu);
        pthread_mutex_unlock(&b.mu);
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

BENCH_LOCK_OPS(proto);

static void lock_open_protocol(struct run *r, int i, const char *dir, struct bench_lock *out)
{
    struct proto *p = xcalloc(1, sizeof *p);
    p->zh = r->zhs[i];
    p->dir = dir;
    p->rng = (0x9e3779b97f4a7c15ULL ^ (uint64_t)now_ns()) * (uint64_t)(2 * i + 1) | 1;
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(p->ident, sizeof p->ident, "%s %ld", host, (long)getpid());
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    out->l[0] = lock_new_or_die(&proto_ops, p);
}

void protocol_run(struct run *r, const char *dir, int ops, struct result *res)
{
    ensure_path(r->zhs[0], dir);
    run_contenders(r, lock_open_protocol, dir, ops, res, false);
}
