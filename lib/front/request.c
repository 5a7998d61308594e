/* The public calls on an asynchronous request (cancel, release, free and
 * what it holds) and delivery by file descriptor; the requests' life is
 * the core's machine (lib/engine/core/areq.c), carried out by
 * lib/front/async.c. */
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "async.h"

/* The request's client, locked as zkl__client_lock does (NULL: ZKL_EINVAL). */
static int lock_client(zkl_request *r)
{
    return r == NULL ? ZKL_EINVAL : zkl__client_lock(r->a->c, true);
}

int zkl_request_cancel(zkl_request *r)
{
    int rc = lock_client(r);
    if (rc != 0)
        return rc;
    zkl_client *c = r->a->c;
    rc = zkl__async_on(r, ZKL__RE_CANCEL);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkl_request_release(zkl_request *r)
{
    int rc = lock_client(r);
    if (rc != 0)
        return rc;
    zkl_client *c = r->a->c;
    /* Why a hold was lost, for zkl_last_error_text: its session ended, or
     * someone else deleted its node while the session lived on. */
    zkl__node *n = (zkl__node *)r->m.n;
    bool session = n == NULL || !zkl__node_current(n);
    rc = zkl__async_on(r, ZKL__RE_RELEASE);
    if (rc == ZKL_ELOST)
        zkl__detail(session ? "the hold was lost: its ZooKeeper session ended"
                            : "the hold was lost: its node was deleted by someone else, the "
                              "session lives on");
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void zkl_request_free(zkl_request *r)
{
    if (r == NULL)
        return;
    zkl_client *c = r->a->c;
    bool registered = zkl__async_registered(r);
    if (zkl__forked(c)) { /* memory only: its node is the client's to free */
        zkl__unmake_drop(r->unmake);
        zkl__async_free_now(r);
        if (registered)
            zkl__obj_done(c);
        return;
    }
    bool self = false;
    pthread_mutex_lock(&c->mu);
    while (r->cb != ZKL__CB_IDLE && !(self = pthread_equal(r->a->runner, pthread_self())))
        pthread_cond_wait(&c->cv, &c->mu);
    zkl__async_on(r, ZKL__RE_FREE);
    zkl__async_unlist(r);
    zkl__unmake_drop(r->unmake); /* its answers no longer look for r */
    r->unmake = NULL;
    if (r->step != NULL)
        r->step->drop(r->step_ctx); /* under c->mu: its answers take it */
    r->step = NULL;
    if (self)
        r->cb = ZKL__CB_FREED; /* its dispatcher frees it once the callback returns */
    pthread_mutex_unlock(&c->mu);
    if (!self) {
        zkl__async_free_now(r);
        if (registered)
            zkl__obj_done(c);
    }
}

int zkl_request_is_held(zkl_request *r)
{
    if (r == NULL || zkl__forked(r->a->c))
        return 0;
    pthread_mutex_lock(&r->a->c->mu);
    int held = zkl__areq_holds(&r->m) && r->a->c->state != ZKL_STATE_LOST;
    pthread_mutex_unlock(&r->a->c->mu);
    return held;
}

int zkl_request_token(zkl_request *r, int64_t *out)
{
    if (r == NULL || out == NULL)
        return ZKL_EINVAL;
    if (zkl__forked(r->a->c))
        return ZKL_EFORK;
    int rc = zkl_request_is_held(r) ? 0 : ZKL_ELOST;
    pthread_mutex_lock(&r->a->c->mu);
    if (r->m.st != ZKL__R_HELD && r->m.st != ZKL__R_LOSING && r->m.st != ZKL__R_LOST)
        rc = ZKL_ENOTHELD;
    else if (rc == 0)
        *out = zkl__node_token((zkl__node *)r->m.n);
    pthread_mutex_unlock(&r->a->c->mu);
    return rc;
}

const char *zkl_request_node(zkl_request *r)
{
    if (r == NULL || zkl__forked(r->a->c))
        return NULL;
    pthread_mutex_lock(&r->a->c->mu);
    const char *p = r->m.st == ZKL__R_HELD && r->m.n ? zkl__node_path((zkl__node *)r->m.n) : NULL;
    pthread_mutex_unlock(&r->a->c->mu);
    return p;
}

int zkl_client_event_fd(zkl_client *c, int *fd)
{
    int rc = zkl__client_lock(c, fd != NULL);
    if (rc != 0)
        return rc;
    struct zkl__async *a = c->closing ? NULL : zkl__async_of(c);
    rc = c->closing ? ZKL_ECLOSED : a == NULL ? ZKL_ENOMEM : 0;
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
    int rc = zkl__client_lock(c, true);
    if (rc != 0)
        return rc;
    struct zkl__engine *e = zkl__engine_of(c);
    struct zkl__async *a = e ? e->front_ctx : NULL;
    if (a == NULL || a->fd < 0 || a->dispatching) {
        pthread_mutex_unlock(&c->mu);
        return a != NULL && a->dispatching ? ZKL_EBUSY : ZKL_EINVAL;
    }
    uint64_t v;
    ssize_t got = read(a->fd, &v, sizeof v); /* empty now: written again on the next result */
    (void)got;
    a->dispatching = true;
    int ran = zkl__async_deliver(a, c, false);
    a->dispatching = false;
    pthread_mutex_unlock(&c->mu);
    return ran;
}

bool zkl__request_on_session(zkl_request *r)
{
    zkl_client *c = r->a->c;
    pthread_mutex_lock(&c->mu);
    zkl__node *n = (zkl__node *)r->m.n;
    bool ok = r->m.st == ZKL__R_HELD && n != NULL && c->state != ZKL_STATE_LOST && c->sid != 0 &&
              n->owner == c->sid && zkl__node_is_held(n);
    pthread_mutex_unlock(&c->mu);
    return ok;
}

bool zkl__request_session_refused(zkl_request *r)
{
    zkl_client *c = r->a->c;
    pthread_mutex_lock(&c->mu);
    bool refused = r->m.result == ZKL_ELOST && zkl__zk_session_error(r->m.zk_rc);
    pthread_mutex_unlock(&c->mu);
    return refused;
}

bool zkl__request_wait_settled(zkl_request *r, int64_t deadline)
{
    zkl_client *c = r->a->c;
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    while ((r->m.st == ZKL__R_PENDING || r->m.st == ZKL__R_CLEANING) && !c->closing && rc == 0)
        rc = zkl__cond_wait(&c->cv, &c->mu, deadline);
    bool done = r->m.st != ZKL__R_PENDING && r->m.st != ZKL__R_CLEANING;
    pthread_mutex_unlock(&c->mu);
    return done || c->closing;
}
