/* The bare ZooKeeper C client, without zkl: the floors every lock is
 * measured against.
 *
 *   floor  an asynchronous create of an ephemeral sequential node, then its
 *          delete, each waited for: the two writes every acquire+release
 *          cycle needs at least.
 *   chain  the ideal contended lock, the physical limit of a handoff chain:
 *          a contender creates lock-<seq>, waits with a data watch (no
 *          listing) until lock-<seq-1> is gone, and deletes its node: 3
 *          requests, 2 writes per acquisition. Correct only without failures
 *          (a node's predecessor being gone then means every earlier node is
 *          gone), which is all a benchmark needs: the rate at which a
 *          handoff chain can run on this server. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void bare_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

zhandle_t *bare_connect(const struct opts *o)
{
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = zookeeper_init(o->servers, bare_watcher, o->session_timeout_ms, NULL, NULL, 0);
    if (zh == NULL)
        die("zookeeper_init failed", 0);
    zoo_set_servers_resolution_delay(zh, 60000);
    int64_t deadline = now_ns() + (int64_t)o->session_timeout_ms * 1000000;
    while (zoo_state(zh) != ZOO_CONNECTED_STATE) {
        if (now_ns() > deadline)
            die("bare client: no connection", 0);
        sleep_ms(2);
    }
    return zh;
}

/* ---- floor ------------------------------------------------------------------ */

struct floor_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
    char name[1100];
};

static void floor_answered(struct floor_wait *w, int rc, const char *name)
{
    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    if (rc == ZOK && name != NULL)
        snprintf(w->name, sizeof w->name, "%s", name);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void floor_created(int rc, const char *name, const void *data)
{
    floor_answered((struct floor_wait *)data, rc, name);
}

static void floor_deleted(int rc, const void *data)
{
    floor_answered((struct floor_wait *)data, rc, NULL);
}

static int floor_await(struct floor_wait *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    w->done = false;
    int rc = w->rc;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void floor_run(struct run *r, const char *dir, int ops, struct result *res)
{
    zhandle_t *zh = r->zhs[0];
    ensure_path(zh, dir);
    char prefix[1100];
    snprintf(prefix, sizeof prefix, "%s/n-", dir);
    static const char data[] = "zkl-bench floor";
    struct floor_wait w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    for (int i = 0; i < ops; i++) {
        int64_t a = now_ns();
        int rc = zoo_acreate(zh, prefix, data, (int)sizeof data - 1, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL_SEQUENTIAL, floor_created, &w);
        if (rc == ZOK)
            rc = floor_await(&w);
        if (rc == ZOK) {
            rc = zoo_adelete(zh, w.name, -1, floor_deleted, &w);
            if (rc == ZOK)
                rc = floor_await(&w);
        }
        if (rc != ZOK) {
            fprintf(stderr, "%s: floor: %s\n", zkl_bench_prog, zerror(rc));
            exit(1);
        }
        res->lat[i] = now_ns() - a;
    }
    res->elapsed_ns = now_ns() - t0;
    run_end(r, &before, res);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
}

/* ---- chain -------------------------------------------------------------------- */

struct chainer {
    zhandle_t *zh;
    const char *dir;
    char name[1100]; /* our node while held */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool gone;
};

static void chain_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)state, (void)path;
    struct chainer *k = ctx;
    if (type != ZOO_DELETED_EVENT)
        return;
    pthread_mutex_lock(&k->mu);
    k->gone = true;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static int chain_failed(int rc)
{
    fprintf(stderr, "%s: chain: %s\n", zkl_bench_prog, zerror(rc));
    return ZKL_EZK;
}

static int chain_acquire(void *self, long timeout_ms)
{
    (void)timeout_ms;
    struct chainer *k = self;
    char prefix[1100], pred[1200], buf[64];
    snprintf(prefix, sizeof prefix, "%s/lock-", k->dir);
    int rc = zoo_create(k->zh, prefix, "c", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                        k->name, (int)sizeof k->name);
    if (rc != ZOK)
        return chain_failed(rc);
    long seq = strtol(k->name + strlen(k->name) - 10, NULL, 10);
    if (seq == 0)
        return 0;
    snprintf(pred, sizeof pred, "%s%010ld", prefix, seq - 1);
    pthread_mutex_lock(&k->mu);
    k->gone = false;
    pthread_mutex_unlock(&k->mu);
    int len = (int)sizeof buf;
    rc = zoo_wget(k->zh, pred, chain_watcher, k, buf, &len, NULL);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK)
        return chain_failed(rc);
    pthread_mutex_lock(&k->mu);
    while (!k->gone)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    return 0;
}

static int chain_release(void *self)
{
    struct chainer *k = self;
    int rc = zoo_delete(k->zh, k->name, -1);
    k->name[0] = '\0';
    return rc == ZOK ? 0 : chain_failed(rc);
}

static int chain_is_held(void *self)
{
    return ((struct chainer *)self)->name[0] != '\0';
}

static const char *chain_path(void *self)
{
    return ((struct chainer *)self)->dir;
}

static void chain_free(void *self)
{
    struct chainer *k = self;
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

BENCH_LOCK_OPS(chain);

static void lock_open_chain(struct run *r, int i, const char *dir, struct bench_lock *out)
{
    struct chainer *k = xcalloc(1, sizeof *k);
    k->zh = r->zhs[i];
    k->dir = dir;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    out->l[0] = lock_new_or_die(&chain_ops, k);
}

void chain_run(struct run *r, const char *dir, int ops, struct result *res)
{
    ensure_path(r->zhs[0], dir);
    run_contenders(r, lock_open_chain, dir, ops, res, false);
}
