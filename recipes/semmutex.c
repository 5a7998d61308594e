/* The semaphore-mutex: the mutex protocol ("lock-" nodes, first holds,
 * watch the node before), but the hold belongs to the object, not to a
 * thread. It is not reentrant: a second acquire while the object holds, or
 * while another of its threads is acquiring, could only wait for itself, so
 * it is refused at once. Any thread may release. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zkl/zookeeper.h"

struct zkl_semmutex {
    zkl_client *c;
    char *path;
    pthread_mutex_t mu; /* guards the fields below */
    pthread_cond_t cv;  /* users went down to 0 */
    zkl__node *node;    /* the hold, or NULL */
    bool acquiring;     /* a thread is in zkl_semmutex_acquire */
    int users;          /* guarded writes running on `node` */
    zkl__lost lost;
    zkl__lost revoke; /* guarded by mu, as lost */
};

int zkl_semmutex_new(zkl_client *c, const char *path, zkl_semmutex **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0)
        return ZKL_EINVAL;
    zkl_semmutex *s = calloc(1, sizeof *s);
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
    if (zkl__cond_init(&s->cv) != 0) {
        pthread_mutex_destroy(&s->mu);
        free(s->path);
        free(s);
        return ZKL_ESYS;
    }
    if (zkl__obj_open(c, s) != 0) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        free(s->path);
        free(s);
        return ZKL_ENOMEM;
    }
    s->c = c;
    *out = s;
    return 0;
}

/* The engine's word that the object's node is lost: tell the user's
 * callback. Runs on the client's keeper thread, once per node. */
static void semmutex_node_lost(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    zkl_semmutex *s = arg;
    void *fn_arg;
    zkl_semmutex_lost_fn fn = (zkl_semmutex_lost_fn)zkl__lost_get(&s->lost, &s->mu, &fn_arg);
    if (fn != NULL)
        fn(s, token, fn_arg);
}

/* Someone asked the hold to let go: tell the user's revoke callback. Runs
 * on the client's keeper thread. */
static void semmutex_node_revoke(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    zkl_semmutex *s = arg;
    void *fn_arg;
    zkl_semmutex_revoke_fn fn =
        (zkl_semmutex_revoke_fn)zkl__lost_get(&s->revoke, &s->mu, &fn_arg);
    if (fn != NULL)
        fn(s, token, fn_arg);
}

static int zkl_semmutex_acquire_unguarded(zkl_semmutex *s, long timeout_ms)
{
    if (s == NULL)
        return ZKL_EINVAL;
    int64_t deadline = zkl__deadline(timeout_ms);
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    if (s->acquiring)
        rc = ZKL_EDEADLK;
    else if (s->node != NULL)
        /* Still held: waiting could only deadlock. Lost: the old hold must
         * be released (and so acknowledged) first, as for the mutex. */
        rc = zkl__node_held(s->node) ? ZKL_EDEADLK : ZKL_ELOST;
    else
        s->acquiring = true;
    pthread_mutex_unlock(&s->mu);
    if (rc != 0)
        return rc;

    zkl__node *n = NULL;
    zkl__qopts o = {.on_lost = semmutex_node_lost, .on_revoke = semmutex_node_revoke,
                    .hook_arg = s};
    rc = zkl__queue_acquire(s->c, s->path, &zkl__lock_policy, &o, deadline, &n);
    pthread_mutex_lock(&s->mu);
    s->acquiring = false;
    if (rc == 0) {
        s->node = n;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int zkl_semmutex_release(zkl_semmutex *s)
{
    if (s == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&s->mu);
    zkl__node *n = s->node;
    s->node = NULL; /* a concurrent release now finds nothing */
    /* A guarded write still running refers to the node: let it finish
     * before the node can go. */
    while (n != NULL && s->users > 0)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (n == NULL)
        return ZKL_ENOTHELD;
    int rc = zkl__queue_release(n);
    if (zkl__release_kept(rc)) {
        /* The server refused the delete: the node stays, and so does the
         * hold, for the caller to try again. */
        pthread_mutex_lock(&s->mu);
        s->node = n;
        pthread_mutex_unlock(&s->mu);
    }
    return rc;
}

int zkl_semmutex_is_held(zkl_semmutex *s)
{
    if (s == NULL)
        return 0;
    pthread_mutex_lock(&s->mu);
    /* Like every zkl lock: uncertain while suspended is not lost; the
     * client gives the session up after 4/3 of its timeout. */
    int held = s->node != NULL && zkl__node_held(s->node);
    pthread_mutex_unlock(&s->mu);
    return held;
}

int64_t zkl_semmutex_token(zkl_semmutex *s)
{
    if (s == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&s->mu);
    int64_t t = s->node == NULL           ? ZKL_ENOTHELD
                : zkl__node_held(s->node) ? zkl__node_token(s->node)
                                          : ZKL_ELOST;
    pthread_mutex_unlock(&s->mu);
    return t;
}

int zkl_semmutex_guarded_multi(zkl_semmutex *s, int count, const zoo_op_t *ops,
                               zoo_op_result_t *results)
{
    if (s == NULL || ops == NULL || count < 1)
        return ZKL_EINVAL;
    pthread_mutex_lock(&s->mu);
    zkl__node *n = s->node;
    if (n != NULL)
        s->users++; /* keeps a release from freeing n under us */
    pthread_mutex_unlock(&s->mu);
    if (n == NULL)
        return ZKL_ENOTHELD;
    int rc = zkl__node_guarded_multi(n, count, ops, results);
    pthread_mutex_lock(&s->mu);
    if (--s->users == 0)
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int zkl_semmutex_guarded_set(zkl_semmutex *s, const char *path, const void *data, int len)
{
    if (s == NULL || zkl__path_check(path) != 0 || len < 0 || (data == NULL && len > 0))
        return ZKL_EINVAL;
    zoo_op_t op;
    zoo_set_op_init(&op, path, data, len, -1, NULL);
    zoo_op_result_t res;
    return zkl_semmutex_guarded_multi(s, 1, &op, &res);
}

/* ---- the generic lock interface: a handle borrowing the object ---------- */

static int sm_acquire(void *self, long timeout_ms)
{
    return zkl_semmutex_acquire(self, timeout_ms);
}

static int sm_release(void *self)
{
    return zkl_semmutex_release(self);
}

static int sm_is_held(void *self)
{
    return zkl_semmutex_is_held(self);
}

static const char *sm_path(void *self)
{
    return ((zkl_semmutex *)self)->path;
}

static const zkl_lock_ops semmutex_ops = {
    .version = ZKL_LOCK_OPS_VERSION,
    .acquire = sm_acquire,
    .release = sm_release,
    .is_held = sm_is_held,
    .path = sm_path,
};

int zkl_semmutex_as_lock(zkl_semmutex *s, zkl_lock **out)
{
    if (s == NULL)
        return ZKL_EINVAL;
    return zkl_lock_new(&semmutex_ops, s, out);
}

int zkl_semmutex_set_revoke_fn(zkl_semmutex *s, zkl_semmutex_revoke_fn fn, void *arg)
{
    if (s == NULL)
        return ZKL_EINVAL;
    return zkl__lost_set(&s->revoke, &s->mu, s->c, (zkl__any_fn)fn, arg);
}

int zkl_semmutex_set_lost_fn(zkl_semmutex *s, zkl_semmutex_lost_fn fn, void *arg)
{
    if (s == NULL)
        return ZKL_EINVAL;
    return zkl__lost_set(&s->lost, &s->mu, s->c, (zkl__any_fn)fn, arg);
}

void zkl_semmutex_free(zkl_semmutex *s)
{
    if (s == NULL)
        return;
    zkl__obj_close(s, "zkl_semmutex_free");
    /* After this no callback can be running or start. */
    zkl__lost_stop(&s->lost, &s->mu, s->c);
    zkl__lost_stop(&s->revoke, &s->mu, s->c);
    /* Best effort: the node goes now rather than with the session; a
     * delete the server refuses is the engine's to retry. */
    if (s->node != NULL && zkl__release_kept(zkl__queue_release(s->node)))
        zkl__queue_leave(s->node, false);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    zkl_client *c = s->c;
    free(s->path);
    free(s);
    zkl__obj_done(c);
}

/* ---- misuse checks (lib/guard.c) ----------------------------------------- */

int zkl_semmutex_acquire(zkl_semmutex *s, long timeout_ms)
{
    if (s == NULL)
        return ZKL_EINVAL;
    zkl__obj_enter(s, "zkl_semmutex_acquire"); /* a free meanwhile aborts, naming it */
    int rc = zkl_semmutex_acquire_unguarded(s, timeout_ms);
    zkl__obj_leave(s);
    return rc;
}
