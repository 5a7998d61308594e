/* Who holds what in this process. A lock object's owner: its mutex, its
 * client and the user's lost and revoke callbacks, which the engine's
 * per-node hooks reach through here. And the per-thread holds of the
 * reentrant locks (the mutex, each side of the read-write lock): one node
 * per holding thread, reentries only counted. A short list per lock: a lock
 * has few holding threads. */
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "kit.h"

/* ---- the owner -------------------------------------------------------------- */

int zkl__owner_open(zkl__owner *o, zkl_client *c, void *obj, const char *path,
                    zkl__tell_fn tell, bool revocable)
{
    if (c != NULL && zkl__forked(c))
        return ZKL_EFORK;
    o->c = c;
    o->obj = obj;
    o->tell = tell;
    o->revocable = revocable;
    o->prefetch = false; /* the recipe sets its own */
    o->ident = NULL;
    o->lost = o->revoke = (zkl__lost){NULL, NULL};
    if ((o->path = path ? strdup(path) : NULL) == NULL && path != NULL)
        return ZKL_ENOMEM;
    int rc = ZKL_ESYS;
    if (pthread_mutex_init(&o->mu, NULL) != 0)
        goto fail;
    if ((rc = zkl__obj_open(c, obj)) != 0)
        goto fail_mu;
    zkl__obj_set_mutex(obj, &o->mu);
    return 0;
fail_mu:
    pthread_mutex_destroy(&o->mu);
fail:
    free(o->path);
    return rc;
}

void *zkl__owner_new(size_t size, size_t offset, zkl_client *c, const char *path,
                     zkl__tell_fn tell, bool revocable, int *rc)
{
    char *obj = calloc(1, size);
    if (obj == NULL) {
        *rc = ZKL_ENOMEM;
        return NULL;
    }
    if ((*rc = zkl__owner_open((zkl__owner *)(obj + offset), c, obj, path, tell, revocable)) != 0) {
        free(obj);
        return NULL;
    }
    return obj;
}

int zkl__owner_acquire_async(void *obj, zkl__owner *own, const char *fn_name,
                             const zkl__policy *pol, long timeout_ms, zkl_request_fn fn,
                             void *arg, zkl_request **out)
{
    zkl__obj_enter(obj, fn_name);
    zkl__qopts o = {.prefetch = own->prefetch, .ident = own->ident};
    int rc = zkl__async_start(own->c, own->path, pol, &o, timeout_ms, fn, arg, out);
    zkl__obj_leave(obj);
    return rc;
}

int zkl__owner_opts(zkl__owner *o, const zkl_lock_opts *opts)
{
    char *id = NULL;
    if (opts != NULL && opts->id != NULL && (id = strdup(opts->id)) == NULL)
        return ZKL_ENOMEM;
    o->prefetch = opts != NULL && opts->prefetch;
    free(o->ident);
    o->ident = id;
    return 0;
}

int zkl__owner_set(zkl__owner *o, bool revoke, zkl__any_fn fn, void *arg)
{
    return zkl__lost_set(revoke ? &o->revoke : &o->lost, &o->mu, o->c, fn, arg);
}

void zkl__owner_stop(zkl__owner *o)
{
    zkl__lost_stop(&o->lost, &o->mu, o->c);
    zkl__lost_stop(&o->revoke, &o->mu, o->c);
}

void zkl__owner_done(zkl__owner *o)
{
    zkl_client *c = o->c;
    pthread_mutex_destroy(&o->mu);
    free(o->path);
    free(o->ident);
    zkl__obj_done(c);
}

/* Tell the user's callback of a node's loss or revocation. On the client's
 * keeper thread, with no zkl lock held: the callback is read under o->mu
 * and called without it. */
static void tell(zkl__owner *o, bool revoke, int side, int64_t token)
{
    void *arg;
    zkl__any_fn fn = zkl__lost_get(revoke ? &o->revoke : &o->lost, &o->mu, &arg);
    if (fn != NULL && o->tell != NULL)
        o->tell(fn, arg, o->obj, side, token);
}

static void owner_lost(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    tell(arg, false, 0, token);
}

static void owner_revoke(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    tell(arg, true, 0, token);
}

void zkl__owner_arm(zkl__owner *o, zkl__qopts *q)
{
    q->on_lost = owner_lost;
    q->on_revoke = o->revocable ? owner_revoke : NULL;
    q->hook_arg = o;
}

/* ---- per-thread holds ----------------------------------------------------- */

/* The engine's hooks of a thread's node: the hold's side says which. */
static void hold_lost(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    zkl__holds *h = arg;
    tell(h->own, false, h->side, token);
}

static void hold_revoke(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    zkl__holds *h = arg;
    tell(h->own, true, h->side, token);
}

void zkl__holds_init(zkl__holds *h, zkl__owner *own, int side)
{
    h->own = own;
    h->side = side;
    h->head = NULL;
}

/* In a child of fork(), the holds of an object made in the parent: every
 * call on them fails with ZKL_EFORK (or says "not held"). */
static bool inherited(const zkl__holds *h)
{
    return h->own->c != NULL && zkl__forked(h->own->c);
}

/* The calling thread's record, or NULL. With own->mu held. */
static zkl__hold *mine(zkl__holds *h)
{
    pthread_t me = pthread_self();
    for (zkl__hold *r = h->head; r; r = r->next)
        if (pthread_equal(r->thread, me))
            return r;
    return NULL;
}

/* Drop a record. With own->mu held. */
static void unlink_hold(zkl__holds *h, zkl__hold *r)
{
    for (zkl__hold **p = &h->head; *p; p = &(*p)->next) {
        if (*p == r) {
            *p = r->next;
            free(r);
            return;
        }
    }
}

zkl__hold *zkl__holds_find(zkl__holds *h)
{
    pthread_mutex_lock(&h->own->mu);
    zkl__hold *r = mine(h);
    pthread_mutex_unlock(&h->own->mu);
    /* Only the calling thread adds or removes its own record, so r stays
     * valid for it after the lock is dropped. */
    return r;
}

zkl__node *zkl__holds_node(zkl__holds *h)
{
    zkl__hold *r = zkl__holds_find(h);
    return r ? r->node : NULL;
}

zkl__hold *zkl__holds_new(void)
{
    zkl__hold *r = malloc(sizeof *r);
    if (r != NULL) {
        r->thread = pthread_self();
        r->count = 1;
        r->node = NULL;
    }
    return r;
}

void zkl__holds_add(zkl__holds *h, zkl__hold *r, zkl__node *n)
{
    r->node = n;
    pthread_mutex_lock(&h->own->mu);
    r->next = h->head;
    h->head = r;
    pthread_mutex_unlock(&h->own->mu);
}

void zkl__holds_enter(zkl__holds *h, zkl__hold *r)
{
    pthread_mutex_lock(&h->own->mu);
    r->count++;
    pthread_mutex_unlock(&h->own->mu);
}

bool zkl__holds_leave(zkl__holds *h, zkl__hold *r)
{
    pthread_mutex_lock(&h->own->mu);
    bool last = r->count <= 1;
    if (last)
        unlink_hold(h, r);
    else
        r->count--;
    pthread_mutex_unlock(&h->own->mu);
    return last;
}

int zkl__holds_acquire(zkl__holds *h, const char *dir, const zkl__policy *pol,
                       const zkl__qopts *o, long timeout_ms)
{
    zkl__owner *own = h->own;
    if (inherited(h))
        return ZKL_EFORK;
    pthread_mutex_lock(&own->mu);
    zkl__hold *r = mine(h);
    if (r != NULL) {
        /* Reentry: no server traffic. A lost hold must be released first. */
        int rc = zkl__node_held(r->node) ? 0 : ZKL_ELOST;
        if (rc == 0)
            r->count++;
        pthread_mutex_unlock(&own->mu);
        return rc;
    }
    pthread_mutex_unlock(&own->mu);

    zkl__qopts q = *o;
    if (q.ident == NULL)
        q.ident = own->ident;
    q.on_lost = hold_lost;
    q.on_revoke = own->revocable ? hold_revoke : NULL;
    q.hook_arg = h;
    /* The record before the node: once the node holds, nothing may fail.
     * Giving a held node back can be refused (an ACL without DELETE), and
     * would leave it held for nobody until the session ends. */
    if ((r = zkl__holds_new()) == NULL)
        return ZKL_ENOMEM;
    zkl__node *n;
    int rc = zkl__wait_acquire(own->c, dir, pol, &q, timeout_ms, &n);
    if (rc != 0) {
        free(r);
        return rc;
    }
    zkl__holds_add(h, r, n);
    return 0;
}

int zkl__holds_release(zkl__holds *h)
{
    if (inherited(h))
        return ZKL_EFORK; /* the thread's record stays until the object is freed */
    pthread_mutex_t *mu = &h->own->mu;
    pthread_mutex_lock(mu);
    zkl__hold *r = mine(h);
    if (r == NULL) {
        pthread_mutex_unlock(mu);
        return ZKL_ENOTHELD;
    }
    zkl__node *n = r->node;
    if (--r->count > 0 && zkl__node_held(n)) {
        pthread_mutex_unlock(mu);
        return 0;
    }
    pthread_mutex_unlock(mu);
    /* Last count, or the hold is lost: in both cases the thread's hold
     * ends here (a lost hold is cleared at once, whatever the count) --
     * unless the server refuses the delete: then the node and the hold
     * stay, counted once, for the caller to try again. Only this thread
     * removes its own record, so r stays valid meanwhile. */
    int rc = zkl__wait_release(n);
    pthread_mutex_lock(mu);
    if (zkl__release_kept(rc))
        r->count = 1;
    else
        unlink_hold(h, r);
    pthread_mutex_unlock(mu);
    return rc;
}

int zkl__holds_is_held(zkl__holds *h)
{
    zkl__node *n = zkl__holds_node(h);
    return n != NULL && zkl__node_held(n);
}

int64_t zkl__holds_token(zkl__holds *h)
{
    if (inherited(h))
        return ZKL_EFORK;
    zkl__node *n = zkl__holds_node(h);
    if (n == NULL)
        return ZKL_ENOTHELD;
    return zkl__node_held(n) ? zkl__node_token(n) : ZKL_ELOST;
}

const char *zkl__holds_path(zkl__holds *h)
{
    if (inherited(h))
        return NULL;
    zkl__node *n = zkl__holds_node(h);
    return n ? zkl__node_path(n) : NULL;
}

void zkl__holds_drop_all(zkl__holds *h)
{
    while (h->head) {
        zkl__hold *r = h->head;
        h->head = r->next;
        /* Best effort: the node goes now rather than with the session; a
         * delete the server refuses is the engine's to retry. */
        if (r->node != NULL && zkl__release_kept(zkl__wait_release(r->node)))
            zkl__wait_leave(r->node);
        free(r);
    }
}
