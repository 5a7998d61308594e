/* Cancel handles of blocking calls: one waiter (or a few) given up without
 * touching the client's other waiters. A handle is a flag, and the list of
 * the waiters that sleep on it: firing sets the flag for good and wakes
 * each of them, which sees it under its client's mutex and leaves. Lock
 * order: the handle's mutex, then a client's c->mu. */
#include <stdatomic.h>
#include <stdlib.h>

#include "front.h"

struct zkl_cancel {
    pthread_mutex_t mu;
    atomic_int fired;
    struct zkl__cancel_reg *regs; /* guarded by mu */
    zkl_cancel *prev, *next;      /* every handle, under all_mu: for fork() */
};

/* Every handle, so that fork() finds each one's mutex unlocked in the
 * child (see below). all_mu is taken alone, except by the fork handler,
 * which takes it before every handle's mutex. */
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl_cancel *all;

int zkl_cancel_new(zkl_cancel **out)
{
    int rc;
    zkl_cancel *h = zkl__new_zeroed(out != NULL, sizeof *h, &rc);
    if (h == NULL)
        return rc;
    if (pthread_mutex_init(&h->mu, NULL) != 0) {
        free(h);
        return ZKL_ESYS;
    }
    atomic_init(&h->fired, 0);
    zkl__front_fork_watch();
    pthread_mutex_lock(&all_mu);
    h->next = all;
    if (all != NULL)
        all->prev = h;
    all = h;
    pthread_mutex_unlock(&all_mu);
    *out = h;
    return 0;
}

int zkl_cancel_fire(zkl_cancel *h)
{
    if (h == NULL)
        return ZKL_EINVAL;
    atomic_store(&h->fired, 1);
    pthread_mutex_lock(&h->mu);
    /* Under c->mu: a waiter checks the flag under it before it sleeps, so
     * the broadcast cannot fall between its check and its wait. */
    for (struct zkl__cancel_reg *r = h->regs; r; r = r->next) {
        if (zkl__forked(r->c))
            continue; /* a waiter of the parent's: not in this process */
        pthread_mutex_lock(&r->c->mu);
        pthread_cond_broadcast(r->cv);
        pthread_mutex_unlock(&r->c->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return 0;
}

int zkl_cancel_is_fired(zkl_cancel *h)
{
    return h != NULL && atomic_load(&h->fired) != 0;
}

void zkl_cancel_free(zkl_cancel *h)
{
    if (h == NULL)
        return;
    pthread_mutex_lock(&all_mu);
    if (h->prev != NULL)
        h->prev->next = h->next;
    else
        all = h->next;
    if (h->next != NULL)
        h->next->prev = h->prev;
    pthread_mutex_unlock(&all_mu);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

bool zkl__cancel_fired(const zkl_cancel *h)
{
    return atomic_load(&((zkl_cancel *)h)->fired) != 0;
}

void zkl__cancel_watch(zkl_cancel *h, struct zkl__cancel_reg *reg, zkl_client *c,
                       pthread_cond_t *cv)
{
    reg->c = c;
    reg->cv = cv;
    pthread_mutex_lock(&h->mu);
    reg->next = h->regs;
    h->regs = reg;
    pthread_mutex_unlock(&h->mu);
}

void zkl__cancel_unwatch(zkl_cancel *h, struct zkl__cancel_reg *reg)
{
    pthread_mutex_lock(&h->mu);
    for (struct zkl__cancel_reg **p = &h->regs; *p; p = &(*p)->next) {
        if (*p == reg) {
            *p = reg->next;
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
}

/* ---- fork() ---------------------------------------------------------------------
 * A thread of the parent may be inside a handle's mutex (a waiter that
 * registers, a fire) at the moment another forks: the child would find it
 * locked for good, and its zkl_cancel_fire on that handle would never
 * return. So the forking thread takes every handle's mutex first (before
 * any client's: the lock order of zkl_cancel_fire), and the child starts
 * them afresh. Called by the lock objects' hooks (lib/front/objects.c). */

void zkl__cancel_fork_prepare(void)
{
    pthread_mutex_lock(&all_mu);
    for (zkl_cancel *h = all; h; h = h->next)
        pthread_mutex_lock(&h->mu);
}

void zkl__cancel_fork_parent(void)
{
    for (zkl_cancel *h = all; h; h = h->next)
        pthread_mutex_unlock(&h->mu);
    pthread_mutex_unlock(&all_mu);
}

void zkl__cancel_fork_child(void)
{
    for (zkl_cancel *h = all; h; h = h->next)
        pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&all_mu, NULL);
}
