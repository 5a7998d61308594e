/* The public calls on an asynchronous request (cancel, release, free and
 * what it holds) and delivery by file descriptor; the requests' life is
 * lib/front/async.c's. */
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "async.h"

int zkl_request_cancel(zkl_request *r)
{
    if (r == NULL)
        return ZKL_EINVAL;
    zkl_client *c = r->c;
    if (zkl__forked(c))
        return ZKL_EFORK;
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    if (r->st == R_HELD) {
        rc = ZKL_EBUSY; /* delivered held: release it */
    } else if (r->st == R_DONE) {
        rc = ZKL_EINVAL; /* its callback ran already */
    } else if ((r->st == R_READY && r->result != 0) || r->st == R_CLEANING) {
        r->result = ZKL_ECANCELED; /* failed, node gone: only the code */
    } else {
        r->cancel = true;
        if (r->st == R_READY) {
            /* Granted, not yet told: the node goes, the callback hears
             * ZKL_ECANCELED. */
            zkl__areq_ready_remove(r->e->async, r);
            r->st = R_PENDING;
            zkl__areq_timed_add(r->e->async, r, zkl__now_ns());
        }
        zkl__areq_look_push(r->e->async, r);
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* Take the handle for sending, as a blocking call does (lib/front/wait.c). */
static void send_lock(zkl_client *c)
{
    pthread_rwlock_rdlock(&c->hlock);
    pthread_mutex_lock(&c->mu);
}

static void send_unlock(zkl_client *c)
{
    pthread_mutex_unlock(&c->mu);
    pthread_rwlock_unlock(&c->hlock);
}

/* Delete the kept nodes (c->mu and hlock held); the members' holds end. */
static void leave_kept(zkl_request *r)
{
    for (size_t i = 0; i < r->nkept; i++) {
        zkl__metrics_released(r->kept[i]);
        if (current(r->kept[i]))
            zkl__node_leave(r->kept[i]);
    }
}

/* Delete the node of a held request without waiting (c->mu and hlock
 * held): the engine finishes the delete, on reconnect if need be. */
static int let_go(zkl_request *r)
{
    zkl__node *n = r->n;
    zkl_client *c = r->c;
    int rc = 0;
    if (n != NULL)
        zkl__metrics_released(n); /* the hold ends, lost or not */
    if (n == NULL || !current(n))
        rc = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
    else if (n->st != N_HELD || !zkl__areq_kept_hold(r))
        rc = ZKL_ELOST;
    if (n != NULL && current(n))
        zkl__node_leave(n);
    leave_kept(r);
    zkl__areq_detach(r);
    r->st = R_DONE;
    return rc;
}

int zkl_request_release(zkl_request *r)
{
    if (r == NULL)
        return ZKL_EINVAL;
    zkl_client *c = r->c;
    if (zkl__forked(c))
        return ZKL_EFORK;
    send_lock(c);
    int rc = r->st == R_HELD ? let_go(r) : ZKL_ENOTHELD;
    send_unlock(c);
    return rc;
}

void zkl_request_free(zkl_request *r)
{
    if (r == NULL)
        return;
    zkl_client *c = r->c;
    if (zkl__forked(c)) { /* memory only: its node is the client's to free */
        zkl__areq_free_now(r);
        zkl__obj_done(c);
        return;
    }
    bool self = false;
    send_lock(c);
    while (r->running && !(self = pthread_equal(r->runner, pthread_self())))
        pthread_cond_wait(&c->cv, &c->mu);
    struct zkl__async *a = r->e ? r->e->async : NULL;
    if (a != NULL) {
        zkl__areq_look_remove(a, r);
        zkl__areq_ready_remove(a, r);
        zkl__areq_timed_remove(a, r);
    }
    if (r->st == R_HELD)
        (void)let_go(r);
    else if (r->n != NULL && current(r->n))
        zkl__node_leave(r->n); /* pending: given up, its callback never runs */
    leave_kept(r);
    zkl__areq_detach(r);
    r->st = R_DONE;
    if (r->step != NULL)
        r->step->drop(r->step_ctx); /* under c->mu: its answers take it */
    r->step = NULL;
    if (self)
        r->freed = true; /* its dispatcher frees it once the callback returns */
    send_unlock(c);
    if (!self) {
        zkl__areq_free_now(r);
        zkl__obj_done(c);
    }
}

int zkl_request_is_held(zkl_request *r)
{
    if (r == NULL || zkl__forked(r->c))
        return 0;
    pthread_mutex_lock(&r->c->mu);
    int held = r->st == R_HELD && zkl__areq_node_holds(r->n) && zkl__areq_kept_hold(r) &&
               r->c->state != ZKL_STATE_LOST;
    pthread_mutex_unlock(&r->c->mu);
    return held;
}

int zkl_request_token(zkl_request *r, int64_t *out)
{
    if (r == NULL || out == NULL)
        return ZKL_EINVAL;
    if (zkl__forked(r->c))
        return ZKL_EFORK;
    int rc = zkl_request_is_held(r) ? 0 : ZKL_ELOST;
    pthread_mutex_lock(&r->c->mu);
    if (r->st != R_HELD)
        rc = ZKL_ENOTHELD;
    else if (rc == 0)
        *out = r->token;
    pthread_mutex_unlock(&r->c->mu);
    return rc;
}

const char *zkl_request_node(zkl_request *r)
{
    if (r == NULL || zkl__forked(r->c))
        return NULL;
    pthread_mutex_lock(&r->c->mu);
    const char *p = r->st == R_HELD ? r->path : NULL;
    pthread_mutex_unlock(&r->c->mu);
    return p;
}

int zkl_client_event_fd(zkl_client *c, int *fd)
{
    if (c == NULL || fd == NULL)
        return ZKL_EINVAL;
    if (zkl__forked(c))
        return ZKL_EFORK;
    pthread_mutex_lock(&c->mu);
    struct zkl__async *a = c->closing ? NULL : zkl__areq_async_of(c);
    int rc = c->closing ? ZKL_ECLOSED : a == NULL ? ZKL_ENOMEM : 0;
    if (rc == 0 && a->fd < 0) {
        a->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (a->fd < 0)
            rc = ZKL_ESYS;
        else if (a->ready != NULL) {
            uint64_t one = 1;
            ssize_t w = write(a->fd, &one, sizeof one);
            (void)w;
        }
    }
    if (rc == 0)
        *fd = a->fd;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkl_client_dispatch(zkl_client *c)
{
    if (c == NULL)
        return ZKL_EINVAL;
    if (zkl__forked(c))
        return ZKL_EFORK;
    pthread_mutex_lock(&c->mu);
    struct zkl__engine *e = zkl__engine_of(c);
    struct zkl__async *a = e ? e->async : NULL;
    if (a == NULL || a->fd < 0 || a->dispatching) {
        pthread_mutex_unlock(&c->mu);
        return a != NULL && a->dispatching ? ZKL_EBUSY : ZKL_EINVAL;
    }
    uint64_t v;
    ssize_t got = read(a->fd, &v, sizeof v); /* empty now: written again on the next result */
    (void)got;
    a->dispatching = true;
    int ran = zkl__areq_deliver(a, c);
    a->dispatching = false;
    pthread_mutex_unlock(&c->mu);
    return ran;
}
