/* The blocking calls over the engine. An acquire is an asynchronous
 * request (lib/front/async.c) and a wait for it: the caller sleeps on its
 * own condition variable and judges the request when its node wakes it;
 * the request's machine (lib/engine/core/areq.c) applies the deadline, the
 * try-once bound and the grace of a failure, which leaves no node of the
 * attempt on the server. Release and leave wait for the server's answer. */
#include <stdio.h>
#include <stdlib.h>

#include "async.h"

/* A caller thread is done with the client (c->mu held): a closing client
 * waits for the last one before it frees anything they touch. */
static void leave_engine(struct zkl__engine *e)
{
    zkl_client *c = e->c;
    if (--e->inside == 0 && c->closing)
        pthread_cond_broadcast(&c->cv);
}

/* Between a lost session and the next one (the client re-opens by itself)
 * an acquire waits for the new session within its deadline rather than
 * failing at once: it has held nothing on the old one. Not on the keeper
 * thread (a callback's call): the keeper opens that session once the
 * callback returns, so the wait could only end at the deadline. */
static bool wait_reopened(zkl_client *c, int64_t deadline)
{
    bool waited = false;
    pthread_mutex_lock(&c->mu);
    bool keeper = zkl__keeper_is_self(c);
    while (!keeper && !c->closing && !c->cancelled && c->state == ZKL_STATE_LOST && c->reopen &&
           c->owns_zh && !c->auth_failed) {
        waited = true;
        if (zkl__cond_wait(&c->cv, &c->mu, deadline) != 0)
            break;
    }
    pthread_mutex_unlock(&c->mu);
    return waited;
}

/* A lock parent of a refused attempt that stays, named in the detail text. */
static void say_unmade(const struct zkl__unmake *u)
{
    int rc = 0;
    const char *bad = u != NULL ? zkl__unmake_refused(u, &rc) : NULL;
    if (bad != NULL || (u != NULL && zkl__unmake_pending(u))) {
        char was[256];
        snprintf(was, sizeof was, "%s", zkl_last_error_text());
        if (bad == NULL)
            zkl__detail("%.150s; the parents it created may stay (no answer to their delete)",
                        was);
        else
            zkl__detail("%.150s; the parent \"%.50s\" it created stays (delete refused: "
                        "ZooKeeper error %d)", was, bad, rc);
    }
}

/* What a failed acquire on `dir` tells zkl_last_zk_error() and
 * zkl_last_error_text(), from the failed node's ZooKeeper code and listing;
 * the error it returns. */
static int say_failed(zkl_client *c, const char *dir, int err, int zk_rc, long qlen)
{
    if (err == ZKL_EZK || (zk_rc != 0 && (err == ZKL_EINVAL || err == ZKL_ENOAUTH)))
        zkl__detail_failed(zk_rc, dir); /* for zkl_last_zk_error(), with what it means */
    if (err == ZKL_EQUEUE)
        zkl__detail_queue(dir, qlen, (long)c->max_request);
    return err;
}

/* No parent could be made: a chroot deleted since the open fails every
 * create so, and is worth naming. */
static int chroot_named(zkl_client *c, int err, int zk_rc)
{
    return err == ZKL_EZK && zk_rc == ZNONODE && zkl__client_chroot_gone(c) ? ZKL_ENOCHROOT : err;
}

/* A one-node acquire's request: what its start needs. */
struct one {
    zkl_client *c;
    const char *dir;
    const zkl__policy *pol;
    const zkl__qopts *o;
};

static int start_one(void *ctx, long timeout_ms, pthread_cond_t *cv, zkl_request **out)
{
    const struct one *x = ctx;
    return zkl__async_start_steps(x->c, x->dir, x->pol, x->o, timeout_ms, NULL, NULL, 1, NULL,
                                  cv, out);
}

int zkl__wait_acquire(zkl_client *c, const char *dir, const zkl__policy *pol, const zkl__qopts *o,
                      long timeout_ms, zkl__node **out)
{
    struct one x = {c, dir, pol, o};
    return zkl__wait_request(c, dir, timeout_ms, o != NULL ? o->cancel : NULL, start_one, &x, out);
}

int zkl__wait_request(zkl_client *c, const char *dir, long timeout_ms, zkl_cancel *h,
                      zkl__start_fn start, void *ctx, zkl__node **out)
{
    if (zkl__forked(c))
        return ZKL_EFORK;
    if (h != NULL && zkl__cancel_fired(h))
        return ZKL_ECANCELED;
    int64_t deadline = zkl__deadline(timeout_ms);
    /* What is left of the timeout once a new session came, or all of it. */
    long left = wait_reopened(c, deadline) ? zkl__remaining_ms(timeout_ms, deadline, zkl__now_ns())
                                           : timeout_ms;
    pthread_cond_t cv; /* ours to wait on: the request wakes it */
    if (zkl__cond_init(&cv) != 0)
        return ZKL_ENOMEM;
    zkl_request *r;
    int err = start(ctx, left, &cv, &r);
    if (err != 0) {
        pthread_cond_destroy(&cv);
        return err;
    }
    struct zkl__cancel_reg reg;
    if (h != NULL)
        zkl__cancel_watch(h, &reg, c, &cv);
    pthread_mutex_lock(&c->mu);
    struct zkl__engine *e = zkl__engine_of(c); /* made by the start: counts us inside */
    /* The request's machine decides, here (or on the closing thread): the
     * deadline, the try-once bound, the grace of a failure are its own.
     * Its times are when to look again, never unbounded once the
     * caller's deadline passed; its nodes and the answers it awaits wake
     * us (zkl__async_poke). */
    bool asked = false;
    /* One clock reading a turn: the look and the wait's end are judged at
     * it, so a deadline that passes meanwhile ends the wait at once and is
     * looked at on the next turn. */
    int64_t now = zkl__now_ns();
    while ((err = zkl__async_on_at(r, ZKL__RE_TAKE, now)) == 1) {
        if (!asked && h != NULL && zkl__cancel_fired(h)) {
            asked = true;
            (void)zkl__async_on_at(r, ZKL__RE_CANCEL, now);
        }
        (void)zkl__async_on_at(r, ZKL__RE_LOOK, now);
        if (r->m.st == ZKL__R_READY)
            continue;
        (void)zkl__cond_wait(&cv, &c->mu, zkl__areq_due(&r->m, now));
        now = zkl__now_ns();
    }
    zkl__node *n = r->handed;
    if (err == 0) {
        n->wake = NULL; /* its lock object's now: its release waits on n->cv */
        n->cv = NULL;
    } else {
        say_failed(c, dir, err, r->m.zk_rc, (long)r->m.qlen);
        say_unmade(r->unmake);
    }
    int zk_rc = r->m.zk_rc;
    pthread_mutex_unlock(&c->mu);
    if (h != NULL)
        zkl__cancel_unwatch(h, &reg);
    zkl_request_free(r);
    pthread_mutex_lock(&c->mu);
    leave_engine(e);
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&cv);
    if (err == 0)
        *out = n;
    return chroot_named(c, err, zk_rc);
}

void zkl__wait_leave(zkl__node *n)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    if (zkl__forked(c))
        return; /* the client's local free takes the node */
    pthread_mutex_lock(&c->mu);
    int64_t now = zkl__now_ns();
    zkl__node_leave(n, now);
    zkl__node_count_released(n, now);
    zkl__engine_hooks_off(n);
    zkl__node_detach(n, now);
    pthread_mutex_unlock(&c->mu);
}

int zkl__wait_release(zkl__node *n)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    if (zkl__forked(c))
        return ZKL_EFORK;
    pthread_mutex_lock(&c->mu);
    struct zkl__engine *e = ZKL__NODE_ENGINE(n);
    e->inside++;
    int err = 0;
    if (!zkl__node_is_held(n))
        err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
    else
        zkl__node_release(n, zkl__now_ns());
    /* Local state goes only once the server confirmed, or the session
     * ended (PITFALLS: forgetting a node that still exists). */
    pthread_cond_t cv;
    if (zkl__cond_init(&cv) != 0)
        abort(); /* no memory for a condition variable: nothing else works either */
    n->cv = &cv;
    /* No deadline: the server's answer or the session's end comes. (A
     * virtual clock's wait, in the simulation, runs the world meanwhile.) */
    while (err == 0 && zkl__node_releasing(n))
        (void)zkl__cond_wait(&cv, &c->mu, ZKL__NO_DEADLINE);
    n->cv = NULL;
    pthread_cond_destroy(&cv);
    if (err == 0 && zkl__node_refused(n, &err)) {
        /* The server refused the delete: the node and the hold stay. */
        n->cn.err = 0;
        leave_engine(e);
        pthread_mutex_unlock(&c->mu);
        return err;
    }
    if (err == 0)
        err = zkl__node_released(n);
    int64_t now = zkl__now_ns(); /* the hold ends once its delete is answered */
    zkl__node_count_released(n, now);
    zkl__engine_hooks_off(n);
    zkl__node_detach(n, now);
    leave_engine(e);
    pthread_mutex_unlock(&c->mu);
    return err;
}
