/* The reentrant mutex: policy "lock-" on the lock-queue engine.
 * A node holds when it is first; otherwise it watches the node just before
 * it. Each thread's hold is its own node; re-acquiring only counts. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "zkl/zookeeper.h"

struct zkl_mutex {
    zkl__owner own; /* the client, the callbacks, the prefetch choice */
    zkl__holds holds;
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

/* The user's callbacks, lost and revoke alike (the two types are one). */
static void tell(zkl__any_fn fn, void *fn_arg, void *obj, int side, int64_t token)
{
    (void)side;
    ((zkl_mutex_lost_fn)fn)(obj, token, fn_arg);
}

int zkl_mutex_new_opts(zkl_client *c, const char *path, const zkl_lock_opts *opts,
                       zkl_mutex **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0)
        return ZKL_EINVAL;
    int rc;
    zkl_mutex *m = zkl__owner_new(sizeof *m, offsetof(zkl_mutex, own), c, path, tell, true, &rc);
    if (m == NULL)
        return rc;
    zkl__holds_init(&m->holds, &m->own, 0);
    if ((rc = zkl__owner_opts(&m->own, opts)) != 0) {
        zkl__owner_done(&m->own);
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int zkl_mutex_new(zkl_client *c, const char *path, zkl_mutex **out)
{
    return zkl_mutex_new_opts(c, path, NULL, out);
}

static int acquire_with(void *self, long timeout_ms, zkl_cancel *h)
{
    zkl_mutex *m = self;
    zkl__qopts o = {.prefetch = m->own.prefetch, .cancel = h};
    return zkl__holds_acquire(&m->holds, m->own.path, &zkl__lock_policy, &o, timeout_ms);
}

int zkl_mutex_release(zkl_mutex *m)
{
    return m == NULL ? ZKL_EINVAL : zkl__holds_release(&m->holds);
}

int zkl_mutex_is_held(zkl_mutex *m)
{
    return m == NULL ? 0 : zkl__holds_is_held(&m->holds);
}

int zkl_mutex_token(zkl_mutex *m, int64_t *out)
{
    return m == NULL ? ZKL_EINVAL : zkl__token_out(zkl__holds_token(&m->holds), out);
}

const char *zkl_mutex_node(zkl_mutex *m)
{
    return m == NULL ? NULL : zkl__holds_path(&m->holds);
}

/* Only the calling thread can release its own hold, so its node stays
 * valid for the guarded writes. */
int zkl_mutex_guarded_multi(zkl_mutex *m, int count, const zoo_op_t *ops,
                            zoo_op_result_t *results)
{
    return m == NULL ? ZKL_EINVAL
                     : zkl__znode_guarded_ops(zkl__holds_node(&m->holds), count, ops, results);
}

int zkl_mutex_guarded_set(zkl_mutex *m, const char *path, const void *data, int len)
{
    return m == NULL ? ZKL_EINVAL
                     : zkl__znode_guarded_set(zkl__holds_node(&m->holds), path, data, len);
}

int zkl_mutex_set_lost_fn(zkl_mutex *m, zkl_mutex_lost_fn fn, void *arg)
{
    return m == NULL ? ZKL_EINVAL : zkl__owner_set(&m->own, false, (zkl__any_fn)fn, arg);
}

int zkl_mutex_set_revoke_fn(zkl_mutex *m, zkl_mutex_revoke_fn fn, void *arg)
{
    return m == NULL ? ZKL_EINVAL : zkl__owner_set(&m->own, true, (zkl__any_fn)fn, arg);
}

void zkl_mutex_free(zkl_mutex *m)
{
    if (m == NULL)
        return;
    zkl__kit_obj_close(m, "zkl_mutex_free");
    zkl__owner_stop(&m->own); /* no callback runs from here on */
    zkl__holds_drop_all(&m->holds);
    zkl__owner_done(&m->own);
    free(m);
}

/* ---- the generic lock interface: a handle borrowing the object ---------- */

static const char *mutex_path(void *self)
{
    return ((zkl_mutex *)self)->own.path;
}

ZKL__LOCK_OPS(mutex, zkl_mutex_acquire, zkl_mutex_release, zkl_mutex_is_held, mutex_path);

int zkl_mutex_as_lock(zkl_mutex *m, zkl_lock **out)
{
    return m == NULL ? ZKL_EINVAL
                     : zkl__lock_adapt(m, &m->own, &mutex_ops, &zkl__lock_policy, acquire_with,
                                       "zkl_mutex_acquire_cancellable", out);
}

/* ---- misuse checks (lib/front/objects.c) ------------------------------------- */

int zkl_mutex_acquire(zkl_mutex *m, long timeout_ms)
{
    return zkl__kit_obj_acquire(m, "zkl_mutex_acquire", acquire_with, timeout_ms);
}

int zkl_mutex_acquire_async(zkl_mutex *m, long timeout_ms, zkl_request_fn fn, void *arg,
                            zkl_request **out)
{
    return m == NULL ? ZKL_EINVAL
                     : zkl__owner_acquire_async(m, &m->own, "zkl_mutex_acquire_async",
                                                &zkl__lock_policy, timeout_ms, fn, arg, out);
}

int zkl_mutex_acquire_cancellable(zkl_mutex *m, long timeout_ms, zkl_cancel *h)
{
    return zkl__kit_obj_acquire_cancellable(m, "zkl_mutex_acquire_cancellable", acquire_with,
                                        timeout_ms, h);
}
