/* The semaphore-mutex: the mutex protocol ("lock-" nodes, first holds,
 * watch the node before), but the hold belongs to the object, not to a
 * thread. It is not reentrant: a second acquire while the object holds, or
 * while another of its threads is acquiring, could only wait for itself, so
 * it is refused at once. Any thread may release. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "zkl/zookeeper.h"

struct zkl_semmutex {
    zkl__owner own;  /* the client, the callbacks, the prefetch choice;
                        own.mu guards the fields below */
    pthread_cond_t idle; /* users went down to 0 */
    zkl__node *node; /* the hold, or NULL */
    bool acquiring;  /* a thread is in zkl_semmutex_acquire */
    int users;       /* guarded writes running on `node` */
};

/* The user's callbacks, lost and revoke alike (the two types are one). */
static void tell(zkl__any_fn fn, void *fn_arg, void *obj, int side, int64_t token)
{
    (void)side;
    ((zkl_semmutex_lost_fn)fn)(obj, token, fn_arg);
}

int zkl_semmutex_new_opts(zkl_client *c, const char *path, const zkl_lock_opts *opts,
                          zkl_semmutex **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0)
        return ZKL_EINVAL;
    int rc;
    zkl_semmutex *s =
        zkl__owner_new(sizeof *s, offsetof(zkl_semmutex, own), c, path, tell, true, &rc);
    if (s == NULL)
        return rc;
    if (zkl__cond_init(&s->idle) != 0) {
        zkl__owner_done(&s->own);
        free(s);
        return ZKL_ESYS;
    }
    if ((rc = zkl__owner_opts(&s->own, opts)) != 0) {
        pthread_cond_destroy(&s->idle);
        zkl__owner_done(&s->own);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int zkl_semmutex_new(zkl_client *c, const char *path, zkl_semmutex **out)
{
    return zkl_semmutex_new_opts(c, path, NULL, out);
}

static int acquire_with(void *self, long timeout_ms, zkl_cancel *h)
{
    zkl_semmutex *s = self;
    pthread_mutex_lock(&s->own.mu);
    int rc = 0;
    if (s->acquiring)
        rc = ZKL_EDEADLK;
    else if (s->node != NULL)
        /* Still held: waiting could only deadlock. Lost: the old hold must
         * be released (and so acknowledged) first, as for the mutex. */
        rc = zkl__kit_node_held(s->node) ? ZKL_EDEADLK : ZKL_ELOST;
    else
        s->acquiring = true;
    pthread_mutex_unlock(&s->own.mu);
    if (rc != 0)
        return rc;

    zkl__node *n = NULL;
    zkl__qopts o = {.prefetch = s->own.prefetch, .ident = s->own.ident, .cancel = h};
    zkl__owner_arm(&s->own, &o);
    rc = zkl__kit_wait_acquire(s->own.c, s->own.path, &zkl__lock_policy, &o, timeout_ms, &n);
    pthread_mutex_lock(&s->own.mu);
    s->acquiring = false;
    if (rc == 0) {
        s->node = n;
    }
    pthread_mutex_unlock(&s->own.mu);
    return rc;
}

int zkl_semmutex_release(zkl_semmutex *s)
{
    if (s == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&s->own.mu);
    zkl__node *n = s->node;
    s->node = NULL; /* a concurrent release now finds nothing */
    /* A guarded write still running refers to the node: let it finish
     * before the node can go. */
    while (n != NULL && s->users > 0)
        pthread_cond_wait(&s->idle, &s->own.mu);
    pthread_mutex_unlock(&s->own.mu);
    if (n == NULL)
        return ZKL_ENOTHELD;
    int rc = zkl__kit_wait_release(n);
    if (zkl__release_kept(rc)) {
        /* The server refused the delete: the node stays, and so does the
         * hold, for the caller to try again. */
        pthread_mutex_lock(&s->own.mu);
        s->node = n;
        pthread_mutex_unlock(&s->own.mu);
    }
    return rc;
}

int zkl_semmutex_is_held(zkl_semmutex *s)
{
    if (s == NULL)
        return 0;
    pthread_mutex_lock(&s->own.mu);
    /* Like every zkl lock: uncertain while suspended is not lost; the
     * client gives the session up after 4/3 of its timeout. */
    int held = s->node != NULL && zkl__kit_node_held(s->node);
    pthread_mutex_unlock(&s->own.mu);
    return held;
}

int zkl_semmutex_token(zkl_semmutex *s, int64_t *out)
{
    if (s == NULL || out == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&s->own.mu);
    int64_t t = s->node == NULL           ? ZKL_ENOTHELD
                : zkl__kit_forked(s->own.c)   ? ZKL_EFORK
                : zkl__kit_node_held(s->node) ? zkl__kit_node_token(s->node)
                                          : ZKL_ELOST;
    pthread_mutex_unlock(&s->own.mu);
    return zkl__token_out(t, out);
}

/* The node for a guarded write, counted as in use (NULL: no hold): a
 * release waits until its writes are done with it. */
static zkl__node *use_node(zkl_semmutex *s)
{
    pthread_mutex_lock(&s->own.mu);
    zkl__node *n = s->node;
    if (n != NULL)
        s->users++;
    pthread_mutex_unlock(&s->own.mu);
    return n;
}

static int done_with(zkl_semmutex *s, zkl__node *n, int rc)
{
    if (n == NULL)
        return rc;
    pthread_mutex_lock(&s->own.mu);
    if (--s->users == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->own.mu);
    return rc;
}

int zkl_semmutex_guarded_multi(zkl_semmutex *s, int count, const zoo_op_t *ops,
                               zoo_op_result_t *results)
{
    if (s == NULL)
        return ZKL_EINVAL;
    zkl__node *n = use_node(s);
    return done_with(s, n, zkl__znode_guarded_ops(n, count, ops, results));
}

int zkl_semmutex_guarded_set(zkl_semmutex *s, const char *path, const void *data, int len)
{
    if (s == NULL)
        return ZKL_EINVAL;
    zkl__node *n = use_node(s);
    return done_with(s, n, zkl__znode_guarded_set(n, path, data, len));
}

/* ---- the generic lock interface: a handle borrowing the object ---------- */

static const char *sm_path(void *self)
{
    return ((zkl_semmutex *)self)->own.path;
}

ZKL__LOCK_OPS(semmutex, zkl_semmutex_acquire, zkl_semmutex_release, zkl_semmutex_is_held,
              sm_path);

int zkl_semmutex_as_lock(zkl_semmutex *s, zkl_lock **out)
{
    return s == NULL ? ZKL_EINVAL
                     : zkl__lock_adapt(s, &s->own, &semmutex_ops, &zkl__lock_policy, acquire_with,
                                       "zkl_semmutex_acquire_cancellable", out);
}

int zkl_semmutex_set_revoke_fn(zkl_semmutex *s, zkl_semmutex_revoke_fn fn, void *arg)
{
    return s == NULL ? ZKL_EINVAL : zkl__owner_set(&s->own, true, (zkl__any_fn)fn, arg);
}

int zkl_semmutex_set_lost_fn(zkl_semmutex *s, zkl_semmutex_lost_fn fn, void *arg)
{
    return s == NULL ? ZKL_EINVAL : zkl__owner_set(&s->own, false, (zkl__any_fn)fn, arg);
}

void zkl_semmutex_free(zkl_semmutex *s)
{
    if (s == NULL)
        return;
    zkl__kit_obj_close(s, "zkl_semmutex_free");
    zkl__owner_stop(&s->own); /* no callback runs from here on */
    /* Best effort: the node goes now rather than with the session; a
     * delete the server refuses is the engine's to retry. */
    if (s->node != NULL && zkl__release_kept(zkl__kit_wait_release(s->node)))
        zkl__kit_wait_leave(s->node);
    if (!zkl__kit_forked(s->own.c)) /* a parent's thread may still wait on it */
        pthread_cond_destroy(&s->idle);
    zkl__owner_done(&s->own);
    free(s);
}

/* ---- misuse checks (lib/front/objects.c) ------------------------------------- */

int zkl_semmutex_acquire(zkl_semmutex *s, long timeout_ms)
{
    return zkl__kit_obj_acquire(s, "zkl_semmutex_acquire", acquire_with, timeout_ms);
}

/* The request's hold is its own, not the object's: the object's hold and
 * its requests' are independent contenders of one lock path. */
int zkl_semmutex_acquire_async(zkl_semmutex *s, long timeout_ms, zkl_request_fn fn, void *arg,
                               zkl_request **out)
{
    return s == NULL ? ZKL_EINVAL
                     : zkl__owner_acquire_async(s, &s->own, "zkl_semmutex_acquire_async",
                                                &zkl__lock_policy, timeout_ms, fn, arg, out);
}

int zkl_semmutex_acquire_cancellable(zkl_semmutex *s, long timeout_ms, zkl_cancel *h)
{
    return zkl__kit_obj_acquire_cancellable(s, "zkl_semmutex_acquire_cancellable", acquire_with,
                                        timeout_ms, h);
}
