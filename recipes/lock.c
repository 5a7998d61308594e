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

/* ---- adapters: each recipe's, in its own file, made here ---------------- */

int zkl__lock_adapt(void *obj, const zkl__owner *own, const zkl_lock_ops *ops,
                    const zkl__policy *pol, zkl__acquire_fn with, const char *with_name,
                    zkl_lock **out)
{
    int rc = zkl_lock_new(ops, obj, out);
    if (rc == 0) {
        zkl_lock *l = *out;
        l->c = own->c;
        l->dir = own->path;
        l->pol = pol;
        l->prefetch = own->prefetch;
        l->ident = own->ident;
        l->with = with;
        l->with_name = with_name;
    }
    return rc;
}
