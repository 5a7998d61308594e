/* A recipe's lost-hold callback: the user's function, and the client state
 * listener that calls it, on when there is a function and off when not. */
#include "internal.h"

int zkl__lost_set(zkl__lost *l, pthread_mutex_t *mu, zkl_client *c, zkl_state_fn listener,
                  void *obj, zkl__any_fn fn, void *arg)
{
    pthread_mutex_lock(mu);
    l->fn = fn;
    l->arg = arg;
    bool listen = fn != NULL && !l->listening, unlisten = fn == NULL && l->listening;
    if (listen || unlisten)
        l->listening = listen;
    pthread_mutex_unlock(mu);
    /* The client calls are made without `mu`: the listener takes it. */
    int rc = 0;
    if (listen && (rc = zkl_client_add_listener(c, listener, obj)) != 0) {
        pthread_mutex_lock(mu);
        l->listening = false;
        l->fn = NULL;
        pthread_mutex_unlock(mu);
    }
    /* Once the listener is removed, the callback is not running and will
     * not be called again (the client waits for a delivery under way). */
    if (unlisten)
        zkl_client_remove_listener(c, listener, obj);
    return rc;
}

void zkl__lost_stop(zkl__lost *l, zkl_client *c, zkl_state_fn listener, void *obj)
{
    if (l->listening)
        zkl_client_remove_listener(c, listener, obj);
    l->listening = false;
}
