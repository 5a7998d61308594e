/* A recipe's lost-hold callback: the user's function and its argument. The
 * engine tells the recipe of each lost node through the node's hook, on the
 * client's keeper thread; the hook reads the callback here. */
#include "front.h"
#include "kit.h"

/* Wait until no hook started before this call is running: the keeper runs
 * them one at a time, with c->delivering set. Not from the keeper itself
 * (a callback that changes the callback). */
static void quiesce(zkl_client *c)
{
    pthread_mutex_lock(&c->mu);
    zkl__keeper_quiesce(c);
    pthread_mutex_unlock(&c->mu);
}

int zkl__lost_set(zkl__lost *l, pthread_mutex_t *mu, zkl_client *c, zkl__any_fn fn, void *arg)
{
    if (c != NULL && zkl__forked(c)) {
        /* A child of fork(): the keeper that would call it is the parent's.
         * A free still clears it (nothing to wait for). */
        if (fn == NULL)
            l->fn = NULL;
        return ZKL_EFORK;
    }
    pthread_mutex_lock(mu);
    bool had = l->fn != NULL;
    l->fn = fn;
    l->arg = arg;
    pthread_mutex_unlock(mu);
    /* Only an object with a callback touches the client here: one without
     * may be freed after its client was closed. */
    if (fn == NULL && had)
        quiesce(c);
    return 0;
}

zkl__any_fn zkl__lost_get(zkl__lost *l, pthread_mutex_t *mu, void **arg)
{
    pthread_mutex_lock(mu);
    zkl__any_fn fn = l->fn;
    *arg = l->arg;
    pthread_mutex_unlock(mu);
    return fn;
}

void zkl__lost_stop(zkl__lost *l, pthread_mutex_t *mu, zkl_client *c)
{
    zkl__lost_set(l, mu, c, NULL, NULL);
}
