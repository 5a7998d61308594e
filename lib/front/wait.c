/* The blocking calls over the engine: a caller enqueues, then sleeps on its
 * own condition variable until the node's verdict says held, or failed, or
 * the call's one deadline passes; on failure it makes sure no node of the
 * attempt stays on the server. Release and leave likewise wait for the
 * server's answer. */
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
 * failing at once: it has held nothing on the old one. */
static void wait_reopened(zkl_client *c, int64_t deadline)
{
    pthread_mutex_lock(&c->mu);
    while (!c->closing && !c->cancelled && c->state == ZKL_STATE_LOST && c->reopen &&
           c->owns_zh && !c->auth_failed) {
        if (zkl__cond_wait(&c->cv, &c->mu, deadline) != 0)
            break;
    }
    pthread_mutex_unlock(&c->mu);
}

/* Fired cancel handle (zkl_cancel_fire) of the call, checked under c->mu. */
static bool fired(const zkl__qopts *o)
{
    return o != NULL && o->cancel != NULL && zkl__cancel_fired(o->cancel);
}

/* Wait, up to the grace period and while connected, until nothing of n's
 * attempt is left to delete: a failed acquire returns with its node gone.
 * If the connection is down, the engine finishes the job on reconnect (or
 * the session end does). Short and bounded: a server that stalls requests
 * (ZOOKEEPER-4537) must not hold the caller long past its deadline; the
 * engine deletes the node when the answer comes. */
static void wait_settled(zkl__node *n, pthread_cond_t *cv)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    int64_t grace = zkl__now_ns() + ZKL__GRACE_NS; /* for its delete */
    n->cv = cv;
    while (zkl__node_current(n) && !zkl__node_settled(n) && zkl__engine_connected(c) &&
           zkl__cond_wait(cv, &c->mu, grace) == 0)
        ;
    n->cv = NULL;
}

static void unmade(void *arg)
{
    pthread_cond_broadcast(arg);
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

/* A refused attempt's lock parents go too (lib/engine/unmake.c), waited for
 * as its node was; a parent that stays for another reason than someone
 * else's node under it is named in the detail text. */
static void unmake(zkl__node *n, int err, pthread_cond_t *cv)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    struct zkl__unmake *u = zkl__node_unmake(n, err, unmade, cv);
    if (u == NULL)
        return;
    int64_t grace = zkl__now_ns() + ZKL__GRACE_NS;
    bool late = false;
    while (zkl__unmake_pending(u) && !late)
        late = !zkl__engine_connected(c) || zkl__cond_wait(cv, &c->mu, grace) != 0;
    say_unmade(u);
    zkl__unmake_drop(u);
}

int zkl__wait_acquire(zkl_client *c, const char *dir, const zkl__policy *pol, const zkl__qopts *o,
                      int64_t deadline, zkl__node **out)
{
    if (zkl__forked(c))
        return ZKL_EFORK;
    if (fired(o))
        return ZKL_ECANCELED;
    wait_reopened(c, deadline);
    pthread_cond_t cv; /* ours to wait on: n->cv while we wait for n */
    if (zkl__cond_init(&cv) != 0)
        return ZKL_ENOMEM;
    /* Try-once (timeout 0) still waits for the policy's first answer,
     * bounded by the session timeout. */
    bool try_once;
    int64_t wait_until = zkl__wait_until(deadline, zkl__now_ns(), c->timeout_ms, &try_once);
    zkl__node *n;
    int err = zkl__node_enqueue(c, dir, pol, o, try_once, true, &cv, &n);
    if (err != 0) {
        pthread_cond_destroy(&cv);
        return err;
    }
    struct zkl__engine *e = ZKL__NODE_ENGINE(n);
    struct zkl__cancel_reg reg;
    if (o != NULL && o->cancel != NULL)
        zkl__cancel_watch(o->cancel, &reg, c, &cv);
    pthread_mutex_lock(&c->mu);
    bool past = false;
    while ((err = zkl__node_verdict(n, fired(o), past)) == 1)
        past = zkl__cond_wait(&cv, &c->mu, wait_until) != 0;
    if (err == 0)
        err = zkl__node_taken(n); /* a path to keep: no memory is a failure too */
    if (err == 0) {
        zkl__node_count_end(n, 0);
        n->cv = NULL;
        leave_engine(e);
        pthread_mutex_unlock(&c->mu);
        if (o != NULL && o->cancel != NULL)
            zkl__cancel_unwatch(o->cancel, &reg);
        pthread_cond_destroy(&cv);
        *out = n;
        return 0;
    }
    int zk_rc = n->cn.zk_rc;
    say_failed(c, dir, err, zk_rc, (long)n->cn.qlen);
    /* Failed: make sure nothing of this attempt stays on the server. */
    pthread_mutex_unlock(&c->mu);
    if (o != NULL && o->cancel != NULL)
        zkl__cancel_unwatch(o->cancel, &reg);
    pthread_mutex_lock(&c->mu);
    zkl__node_leave(n);
    wait_settled(n, &cv);
    unmake(n, err, &cv);
    zkl__node_count_end(n, err);
    zkl__engine_hooks_off(n); /* the caller never held it: nothing to tell */
    zkl__node_detach(n);      /* n may be gone from here on */
    leave_engine(e);
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&cv);
    return chroot_named(c, err, zk_rc);
}

int zkl__wait_request(zkl_client *c, const char *dir, long timeout_ms, zkl_cancel *h,
                      zkl__start_fn start, void *ctx, zkl__node **out)
{
    if (zkl__forked(c))
        return ZKL_EFORK;
    if (h != NULL && zkl__cancel_fired(h))
        return ZKL_ECANCELED;
    int64_t deadline = zkl__deadline(timeout_ms);
    wait_reopened(c, deadline);
    pthread_cond_t cv; /* ours to wait on: the request wakes it */
    if (zkl__cond_init(&cv) != 0)
        return ZKL_ENOMEM;
    zkl_request *r;
    int err = start(ctx, zkl__remaining_ms(timeout_ms, deadline, zkl__now_ns()), &cv, &r);
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
     * Its times are when to look again; its nodes and the answers it
     * awaits wake us (zkl__async_poke). */
    bool asked = false;
    while ((err = zkl__async_on(r, ZKL__RE_TAKE)) == 1) {
        if (!asked && h != NULL && zkl__cancel_fired(h)) {
            asked = true;
            (void)zkl__async_on(r, ZKL__RE_CANCEL);
        }
        (void)zkl__async_on(r, ZKL__RE_LOOK);
        if (r->m.st == ZKL__R_READY)
            continue;
        int64_t at = r->m.deadline > zkl__now_ns() ? r->m.deadline : ZKL__NO_DEADLINE;
        (void)zkl__cond_wait(&cv, &c->mu, at);
    }
    zkl__node *n = r->handed;
    if (err == 0) {
        n->wake = NULL; /* the caller's now, as zkl__wait_acquire leaves its node */
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

void zkl__wait_leave(zkl__node *n, bool wait)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    if (zkl__forked(c))
        return; /* the client's local free takes the node */
    pthread_mutex_lock(&c->mu);
    struct zkl__engine *e = ZKL__NODE_ENGINE(n);
    e->inside++;
    zkl__node_leave(n);
    pthread_cond_t cv;
    if (wait && zkl__cond_init(&cv) == 0) {
        wait_settled(n, &cv);
        pthread_cond_destroy(&cv);
    }
    zkl__node_count_released(n);
    zkl__engine_hooks_off(n);
    zkl__node_detach(n);
    leave_engine(e);
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
        zkl__node_release(n);
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
    zkl__node_count_released(n);
    zkl__engine_hooks_off(n);
    zkl__node_detach(n);
    leave_engine(e);
    pthread_mutex_unlock(&c->mu);
    return err;
}
