/* The generic lock interface: a handle is a copy of a lock's operations
 * and the object they act on. Adapters turn each recipe into a handle that
 * borrows the recipe's object; the key of a recipe's handle is its lock
 * path, which is what a multi-lock orders its members by. */
#include <stdlib.h>

#include "kit.h"

int zkl_lock_new(const zkl_lock_ops *ops, void *self, zkl_lock **out)
{
    /* Version 1 is every field there is; a later version copies the fields
     * of ops->version and zeroes the rest. */
    if (ops == NULL || out == NULL || ops->version == 0 || ops->version > ZKL_LOCK_OPS_VERSION ||
        ops->acquire == NULL || ops->release == NULL || ops->is_held == NULL || ops->path == NULL)
        return ZKL_EINVAL;
    zkl_lock *l = calloc(1, sizeof *l);
    if (l == NULL)
        return ZKL_ENOMEM;
    l->ops = *ops;
    l->self = self;
    *out = l;
    return 0;
}

int zkl_lock_acquire(zkl_lock *l, long timeout_ms)
{
    return l == NULL ? ZKL_EINVAL : l->ops.acquire(l->self, timeout_ms);
}

int zkl_lock_release(zkl_lock *l)
{
    return l == NULL ? ZKL_EINVAL : l->ops.release(l->self);
}

int zkl_lock_is_held(zkl_lock *l)
{
    return l == NULL ? 0 : l->ops.is_held(l->self) != 0;
}

const char *zkl_lock_path(zkl_lock *l)
{
    return l == NULL ? NULL : l->ops.path(l->self);
}

void zkl_lock_free(zkl_lock *l)
{
    if (l == NULL)
        return;
    if (l->ops.free != NULL)
        l->ops.free(l->self);
    free(l);
}

/* ---- adapters: borrowed objects, no free operation ---------------------- */

static const char *mutex_path(void *self)
{
    return zkl__mutex_path(self);
}

ZKL__LOCK_OPS(mutex, zkl_mutex_acquire, zkl_mutex_release, zkl_mutex_is_held, mutex_path);

void zkl__lock_mark(zkl_lock *l, zkl_client *c, const char *dir, const zkl__policy *pol,
                    bool prefetch, int (*cancellable)(void *self, long timeout_ms, zkl_cancel *h))
{
    l->c = c;
    l->dir = dir;
    l->pol = pol;
    l->prefetch = prefetch;
    l->cancellable = cancellable;
}

static int mutex_cancellable(void *self, long timeout_ms, zkl_cancel *h)
{
    return zkl_mutex_acquire_cancellable(self, timeout_ms, h);
}

int zkl_mutex_as_lock(zkl_mutex *m, zkl_lock **out)
{
    if (m == NULL)
        return ZKL_EINVAL;
    int rc = zkl_lock_new(&mutex_ops, m, out);
    bool prefetch = false;
    if (rc == 0) {
        zkl_client *c = zkl__mutex_client(m, &prefetch);
        zkl__lock_mark(*out, c, zkl__mutex_path(m), &zkl__lock_policy, prefetch,
                       mutex_cancellable);
    }
    return rc;
}
