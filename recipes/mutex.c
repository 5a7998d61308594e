/* The reentrant mutex: policy "lock-" on the lock-queue engine.
 * A node holds when it is first; otherwise it watches the node just before
 * it. Each thread's hold is its own node; re-acquiring only counts. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zkl/zookeeper.h"

struct zkl_mutex {
    zkl_client *c;
    char *path;
    unsigned flags;
    zkl__owners owners;
    zkl__lost lost;   /* guarded by owners.mu */
    zkl__lost revoke; /* guarded by owners.mu */
};

static bool first_holds(const zkl__entry *cs, size_t n, size_t self, size_t *watch,
                        const void *arg)
{
    (void)cs, (void)n, (void)arg;
    if (self == 0)
        return true;
    *watch = self - 1;
    return false;
}

/* Shared with the semaphore-mutex, which speaks the same protocol. */
const zkl__policy zkl__lock_policy = {"lock-", first_holds, true};

int zkl_mutex_new2(zkl_client *c, const char *path, unsigned flags, zkl_mutex **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0 ||
        (flags & ~(unsigned)ZKL_MUTEX_PREFETCH) != 0)
        return ZKL_EINVAL;
    zkl_mutex *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ZKL_ENOMEM;
    if ((m->path = strdup(path)) == NULL) {
        free(m);
        return ZKL_ENOMEM;
    }
    if (zkl__owners_init(&m->owners) != 0) {
        free(m->path);
        free(m);
        return ZKL_ESYS;
    }
    if (zkl__obj_open(c, m) != 0) {
        zkl__owners_destroy(&m->owners);
        free(m->path);
        free(m);
        return ZKL_ENOMEM;
    }
    m->c = c;
    m->flags = flags;
    *out = m;
    return 0;
}

int zkl_mutex_new(zkl_client *c, const char *path, zkl_mutex **out)
{
    return zkl_mutex_new2(c, path, 0, out);
}

/* The engine's word that a hold's node is lost (its session ended, or
 * someone else deleted it): tell the user's callback. Runs on the client's
 * keeper thread, once per node. */
static void mutex_node_lost(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    zkl_mutex *m = arg;
    void *fn_arg;
    zkl_lost_fn fn = (zkl_lost_fn)zkl__lost_get(&m->lost, &m->owners.mu, &fn_arg);
    if (fn != NULL)
        fn(m, token, fn_arg);
}

/* Someone asked a hold to let go ("__REVOKE__" in its node): tell the
 * user's revoke callback. Runs on the client's keeper thread. */
static void mutex_node_revoke(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    zkl_mutex *m = arg;
    void *fn_arg;
    zkl_mutex_revoke_fn fn =
        (zkl_mutex_revoke_fn)zkl__lost_get(&m->revoke, &m->owners.mu, &fn_arg);
    if (fn != NULL)
        fn(m, token, fn_arg);
}

static int zkl_mutex_acquire_unguarded(zkl_mutex *m, long timeout_ms)
{
    if (m == NULL)
        return ZKL_EINVAL;
    int64_t deadline = zkl__deadline(timeout_ms);
    pthread_mutex_lock(&m->owners.mu);
    zkl__hold *h = zkl__owners_mine(&m->owners);
    if (h != NULL) {
        /* Reentry: no server traffic. A lost hold must be released first. */
        int rc = zkl__node_held(h->node) ? 0 : ZKL_ELOST;
        if (rc == 0)
            h->count++;
        pthread_mutex_unlock(&m->owners.mu);
        return rc;
    }
    pthread_mutex_unlock(&m->owners.mu);

    zkl__qopts o = {.prefetch = (m->flags & ZKL_MUTEX_PREFETCH) != 0,
                    .on_lost = mutex_node_lost,
                    .on_revoke = mutex_node_revoke,
                    .hook_arg = m};
    zkl__node *n;
    int rc = zkl__queue_acquire(m->c, m->path, &zkl__lock_policy, &o, deadline, &n);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&m->owners.mu);
    rc = zkl__owners_add(&m->owners, n);
    pthread_mutex_unlock(&m->owners.mu);
    if (rc != 0)
        zkl__queue_release(n);
    return rc;
}

int zkl_mutex_release(zkl_mutex *m)
{
    if (m == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&m->owners.mu);
    zkl__hold *h = zkl__owners_mine(&m->owners);
    if (h == NULL) {
        pthread_mutex_unlock(&m->owners.mu);
        return ZKL_ENOTHELD;
    }
    zkl__node *n = h->node;
    if (--h->count > 0 && zkl__node_held(n)) {
        pthread_mutex_unlock(&m->owners.mu);
        return 0;
    }
    pthread_mutex_unlock(&m->owners.mu);
    /* Last count, or the hold is lost: in both cases the thread's hold
     * ends here (a lost hold is cleared at once, whatever the count) --
     * unless the server refuses the delete: then the node and the hold
     * stay, counted once, for the caller to try again. Only this thread
     * removes its own record, so h stays valid meanwhile. */
    int rc = zkl__queue_release(n);
    pthread_mutex_lock(&m->owners.mu);
    if (zkl__release_kept(rc))
        h->count = 1;
    else
        zkl__owners_remove(&m->owners, h);
    pthread_mutex_unlock(&m->owners.mu);
    return rc;
}

const char *zkl__mutex_path(const zkl_mutex *m)
{
    return m->path;
}

int zkl_mutex_is_held(zkl_mutex *m)
{
    if (m == NULL)
        return 0;
    pthread_mutex_lock(&m->owners.mu);
    zkl__hold *h = zkl__owners_mine(&m->owners);
    int held = h != NULL && zkl__node_held(h->node);
    pthread_mutex_unlock(&m->owners.mu);
    return held;
}

int64_t zkl_mutex_token(zkl_mutex *m)
{
    if (m == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&m->owners.mu);
    zkl__hold *h = zkl__owners_mine(&m->owners);
    int64_t t = h == NULL ? ZKL_ENOTHELD
                : zkl__node_held(h->node) ? zkl__node_token(h->node)
                                          : ZKL_ELOST;
    pthread_mutex_unlock(&m->owners.mu);
    return t;
}

const char *zkl_mutex_node(zkl_mutex *m)
{
    if (m == NULL)
        return NULL;
    pthread_mutex_lock(&m->owners.mu);
    zkl__hold *h = zkl__owners_mine(&m->owners);
    const char *p = h ? zkl__node_path(h->node) : NULL;
    pthread_mutex_unlock(&m->owners.mu);
    return p;
}

int zkl_mutex_guarded_multi(zkl_mutex *m, int count, const zoo_op_t *ops,
                            zoo_op_result_t *results)
{
    if (m == NULL || ops == NULL || count < 1)
        return ZKL_EINVAL;
    pthread_mutex_lock(&m->owners.mu);
    zkl__hold *h = zkl__owners_mine(&m->owners);
    zkl__node *n = h ? h->node : NULL;
    pthread_mutex_unlock(&m->owners.mu);
    if (n == NULL)
        return ZKL_ENOTHELD;
    /* Only the calling thread can release its own hold, so n stays valid. */
    return zkl__node_guarded_multi(n, count, ops, results);
}

int zkl_mutex_guarded_set(zkl_mutex *m, const char *path, const void *data, int len)
{
    if (m == NULL || zkl__path_check(path) != 0 || len < 0 || (data == NULL && len > 0))
        return ZKL_EINVAL;
    zoo_op_t op;
    zoo_set_op_init(&op, path, data, len, -1, NULL);
    zoo_op_result_t res;
    return zkl_mutex_guarded_multi(m, 1, &op, &res);
}

int zkl_mutex_set_lost_fn(zkl_mutex *m, zkl_lost_fn fn, void *arg)
{
    if (m == NULL)
        return ZKL_EINVAL;
    return zkl__lost_set(&m->lost, &m->owners.mu, m->c, (zkl__any_fn)fn, arg);
}

int zkl_mutex_set_revoke_fn(zkl_mutex *m, zkl_mutex_revoke_fn fn, void *arg)
{
    if (m == NULL)
        return ZKL_EINVAL;
    return zkl__lost_set(&m->revoke, &m->owners.mu, m->c, (zkl__any_fn)fn, arg);
}

void zkl_mutex_free(zkl_mutex *m)
{
    if (m == NULL)
        return;
    zkl__obj_close(m, "zkl_mutex_free");
    /* After this no callback can be running or start. */
    zkl__lost_stop(&m->lost, &m->owners.mu, m->c);
    zkl__lost_stop(&m->revoke, &m->owners.mu, m->c);
    /* Best effort: release holds still open, so their nodes go now rather
     * than with the session; a delete the server refuses is the engine's
     * to retry. */
    while (m->owners.head) {
        zkl__hold *h = m->owners.head;
        m->owners.head = h->next;
        if (zkl__release_kept(zkl__queue_release(h->node)))
            zkl__queue_leave(h->node, false);
        free(h);
    }
    zkl__owners_destroy(&m->owners);
    zkl_client *c = m->c;
    free(m->path);
    free(m);
    zkl__obj_done(c);
}

/* ---- misuse checks (lib/guard.c) ----------------------------------------- */

int zkl_mutex_acquire(zkl_mutex *m, long timeout_ms)
{
    if (m == NULL)
        return ZKL_EINVAL;
    zkl__obj_enter(m, "zkl_mutex_acquire"); /* a free meanwhile aborts, naming it */
    int rc = zkl_mutex_acquire_unguarded(m, timeout_ms);
    zkl__obj_leave(m);
    return rc;
}
