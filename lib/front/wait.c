/* The blocking layer over the asynchronous engine: a caller enqueues, then
 * sleeps on its node's condition variable until the engine says it holds,
 * the call's deadline passes or the session goes; on failure it makes sure
 * no node of the attempt stays on the server. Release and leave likewise
 * wait for the server's answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* Take the handle for sending from a caller thread: c->hlock (read) keeps
 * the keeper from swapping it; lock order is hlock, then c->mu. */
static void caller_lock(zkl_client *c)
{
    pthread_rwlock_rdlock(&c->hlock);
    pthread_mutex_lock(&c->mu);
}

static void caller_unlock_hlock(zkl_client *c)
{
    pthread_rwlock_unlock(&c->hlock);
}

/* A caller thread is done with the client (c->mu held): a closing client
 * waits for the last one before it frees anything they touch. */
static void leave_engine(struct zkl__engine *e)
{
    zkl_client *c = e->c;
    if (--e->inside == 0 && c->closing)
        pthread_cond_broadcast(&c->cv);
}

/* How long a failed acquire waits for its node's delete to be confirmed. */
#define CLEANUP_GRACE_NS (500 * (int64_t)1000000)

static int wait_state_err(zkl_client *c)
{
    if (c->closing)
        return ZKL_ECLOSED;
    if (c->state == ZKL_STATE_LOST || c->zh == NULL)
        return ZKL_ELOST;
    if (c->cancelled)
        return ZKL_ECANCELED;
    return 0;
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

/* The node's memory and its caller's choices: nothing sent yet. */
static zkl__node *node_make(zkl_client *c, const char *dir, const zkl__policy *pol,
                            const zkl__qopts *o)
{
    zkl__node *n = calloc(1, sizeof *n);
    if (n == NULL || (n->dir = strdup(dir)) == NULL) {
        free(n);
        return NULL;
    }
    n->c = c;
    n->pol = pol;
    n->arg = o ? o->arg : NULL;
    n->prefetch = o && o->prefetch;
    if (o && o->fixed_seq)
        snprintf(n->fixed_seq, sizeof n->fixed_seq, "%s", o->fixed_seq);
    n->kind = pol->kind;
    if (o && o->kind && (n->kind = n->kind_copy = strdup(o->kind)) == NULL) {
        free(n->dir);
        free(n);
        return NULL;
    }
    zkl__node_new_uuid(n);
    n->owned = true;
    n->fast_expect = -1;
    if (!c->metrics_off)
        n->m_at = zkl__now_ns();
    if (o) {
        n->on_lost = o->on_lost;
        n->on_revoke = o->on_revoke;
        n->hook_arg = o->hook_arg;
        n->waiter = o->waiter;
    }
    return n;
}

/* Link the node and send its create (c->mu held, sending allowed); on a
 * failure the node is counted and freed. */
static int node_start(zkl_client *c, zkl__node *n, const zkl__qopts *o, bool inside,
                      pthread_cond_t *cv)
{
    /* A semaphore's lease continues the attempt its gate began. */
    if (o && o->within) {
        n->m_at = o->within->m_at;
        n->waited = o->within->waited;
    }
    int err = wait_state_err(c);
    struct zkl__engine *e = err == 0 ? zkl__engine_of(c) : NULL;
    if (err == 0 && e == NULL)
        err = ZKL_ENOMEM;
    /* Work done under a node (a semaphore's gate) must not spill over into
     * a later session, where that node no longer protects it. */
    if (err == 0 && o && o->within && (o->within->gen != c->gen || o->within->st != N_HELD))
        err = ZKL_ELOST;
    if (err != 0) {
        zkl__metrics_acquire_begin(n);
        zkl__metrics_acquire_end(n, err);
        free(n->kind_copy);
        free(n->dir);
        free(n);
        return err;
    }
    n->cv = cv;
    n->e = e;
    zkl__metrics_acquire_begin(n);
    zkl__engine_link(e, n);
    n->zh = c->zh;
    n->gen = c->gen;
    if (inside)
        e->inside++;
    zkl__alone_take(e, n);
    zkl__node_create(n);
    return 0;
}

int zkl__queue_enqueue(zkl_client *c, const char *dir, const zkl__policy *pol,
                       const zkl__qopts *o, bool inside, pthread_cond_t *cv, zkl__node **out)
{
    if (zkl__forked(c))
        return ZKL_EFORK;
    zkl__node *n = node_make(c, dir, pol, o);
    if (n == NULL)
        return ZKL_ENOMEM;
    caller_lock(c);
    int err = node_start(c, n, o, inside, cv);
    pthread_mutex_unlock(&c->mu);
    caller_unlock_hlock(c);
    if (err == 0)
        *out = n;
    return err;
}

int zkl__queue_enqueue_locked(zkl_client *c, const char *dir, const zkl__policy *pol,
                              const zkl__qopts *o, zkl__node **out)
{
    zkl__node *n = node_make(c, dir, pol, o);
    if (n == NULL)
        return ZKL_ENOMEM;
    int err = node_start(c, n, o, false, NULL);
    if (err == 0)
        *out = n;
    return err;
}

/* Fired cancel handle (zkl_cancel_fire) of the call, checked under c->mu. */
static bool fired(const zkl__qopts *o)
{
    return o != NULL && o->cancel != NULL && zkl__cancel_fired(o->cancel);
}

int zkl__queue_acquire(zkl_client *c, const char *dir, const zkl__policy *pol,
                       const zkl__qopts *o, int64_t deadline, zkl__node **out)
{
    if (zkl__forked(c))
        return ZKL_EFORK;
    if (fired(o))
        return ZKL_ECANCELED;
    wait_reopened(c, deadline);
    pthread_cond_t cv; /* ours to wait on: n->cv while we wait for n */
    if (zkl__cond_init(&cv) != 0)
        return ZKL_ENOMEM;
    zkl__node *n;
    int err = zkl__queue_enqueue(c, dir, pol, o, true, &cv, &n);
    if (err != 0) {
        pthread_cond_destroy(&cv);
        return err;
    }
    struct zkl__engine *e = n->e;
    struct zkl__cancel_reg reg;
    if (o != NULL && o->cancel != NULL)
        zkl__cancel_watch(o->cancel, &reg, c, &cv);

    /* Try-once (timeout 0) still waits for the policy's first answer,
     * bounded by the session timeout. */
    bool try_once = deadline <= zkl__now_ns();
    int64_t wait_until = try_once ? zkl__now_ns() + (int64_t)c->timeout_ms * 1000000 : deadline;
    pthread_mutex_lock(&c->mu);
    n->try_once = try_once; /* checked with `decided` below, under c->mu */
    for (;;) {
        if (fired(o)) {
            err = ZKL_ECANCELED;
            break;
        }
        if (n->st == N_HELD && current(n)) {
            n->taken = true;
            zkl__metrics_acquire_end(n, 0);
            n->cv = NULL;
            leave_engine(e);
            pthread_mutex_unlock(&c->mu);
            if (o != NULL && o->cancel != NULL)
                zkl__cancel_unwatch(o->cancel, &reg);
            pthread_cond_destroy(&cv);
            *out = n;
            return 0;
        }
        if (n->err != 0) {
            if ((err = n->err) == ZKL_EZK)
                zkl__detail_zk(n->zk_rc); /* for zkl_last_zk_error() */
            break;
        }
        if (n->st == N_LOST) {
            err = ZKL_ELOST; /* held, and deleted before we could return */
            break;
        }
        if (!current(n)) {
            err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
            break;
        }
        if (c->cancelled) {
            err = ZKL_ECANCELED;
            break;
        }
        /* A try once does not wait for a reconnect (the session timeout,
         * perhaps): the client wakes waiters when it loses the connection. */
        if (try_once && !connected(c)) {
            err = ZKL_ECONNLOSS;
            break;
        }
        if (try_once && n->decided) {
            err = ZKL_ETIMEDOUT;
            break;
        }
        if (zkl__cond_wait(&cv, &c->mu, wait_until) != 0 && n->st != N_HELD) {
            err = ZKL_ETIMEDOUT;
            break;
        }
    }
    /* Failed: make sure nothing of this attempt stays on the server. */
    pthread_mutex_unlock(&c->mu);
    if (o != NULL && o->cancel != NULL)
        zkl__cancel_unwatch(o->cancel, &reg);
    caller_lock(c);
    if (current(n))
        zkl__node_leave(n);
    pthread_mutex_unlock(&c->mu);
    caller_unlock_hlock(c);
    pthread_mutex_lock(&c->mu);
    /* While connected that takes one round trip: wait for it, so a failed
     * acquire returns with its node gone. If the connection is down, the
     * engine finishes the job on reconnect (or the session end does). The
     * wait is short and bounded: a server that stalls requests (ZOOKEEPER-
     * 4537) must not hold the caller past its deadline for long; the engine
     * deletes the node when the answer comes. */
    int64_t grace = zkl__now_ns() + CLEANUP_GRACE_NS;
    while (current(n) && !node_settled(n) && connected(c) &&
           zkl__cond_wait(&cv, &c->mu, grace) == 0)
        ;
    zkl__metrics_acquire_end(n, err);
    n->cv = NULL;
    zkl__engine_hooks_off(n); /* the caller never held it: nothing to tell */
    n->owned = false;
    zkl__node_maybe_free(n);
    leave_engine(e);
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&cv);
    return err;
}

void zkl__queue_leave(zkl__node *n, bool wait)
{
    if (zkl__forked(n->c))
        return; /* the client's local free takes the node */
    zkl_client *c = n->c;
    struct zkl__engine *e = n->e;
    caller_lock(c);
    e->inside++;
    if (current(n))
        zkl__node_leave(n);
    pthread_mutex_unlock(&c->mu);
    caller_unlock_hlock(c);
    pthread_mutex_lock(&c->mu);
    int64_t grace = zkl__now_ns() + CLEANUP_GRACE_NS; /* as in zkl__queue_acquire */
    pthread_cond_t cv;
    if (wait && zkl__cond_init(&cv) == 0) {
        n->cv = &cv;
        while (current(n) && !node_settled(n) && connected(c) &&
               zkl__cond_wait(&cv, &c->mu, grace) == 0)
            ;
        n->cv = NULL;
        pthread_cond_destroy(&cv);
    }
    zkl__metrics_released(n);
    zkl__engine_hooks_off(n);
    n->owned = false;
    zkl__node_maybe_free(n);
    leave_engine(e);
    pthread_mutex_unlock(&c->mu);
}

void zkl__queue_failed(zkl__node *n, int rc)
{
    pthread_mutex_lock(&n->c->mu);
    zkl__metrics_acquire_end(n, rc);
    pthread_mutex_unlock(&n->c->mu);
}

int zkl__queue_release(zkl__node *n)
{
    if (zkl__forked(n->c))
        return ZKL_EFORK;
    zkl_client *c = n->c;
    struct zkl__engine *e = n->e;
    caller_lock(c);
    e->inside++;
    int err = 0;
    if (!current(n) || n->st != N_HELD) {
        err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
    } else {
        n->err = 0;
        zkl__node_set_state(n, N_RELEASING);
        zkl__node_delete(n);
    }
    pthread_mutex_unlock(&c->mu);
    caller_unlock_hlock(c);
    pthread_mutex_lock(&c->mu);
    /* Local state goes only once the server confirmed, or the session
     * ended (PITFALLS: forgetting a node that still exists). */
    pthread_cond_t cv;
    if (zkl__cond_init(&cv) != 0)
        abort(); /* no memory for a condition variable: nothing else works either */
    n->cv = &cv;
    while (err == 0 && (n->st == N_RELEASING || n->st == N_DELETING || n->st == N_BACKOFF) &&
           current(n))
        pthread_cond_wait(&cv, &c->mu);
    n->cv = NULL;
    pthread_cond_destroy(&cv);
    if (err == 0 && n->st == N_HELD && current(n) && n->err != 0) {
        /* The server refused the delete: the node and the hold stay. */
        err = n->err;
        n->err = 0;
        leave_engine(e);
        pthread_mutex_unlock(&c->mu);
        return err;
    }
    if (err == 0 && n->st != N_GONE)
        err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
    if (err == 0 && n->err != 0)
        err = n->err;
    zkl__metrics_released(n);
    zkl__engine_hooks_off(n);
    n->owned = false;
    if (!current(n))
        zkl__node_set_state(n, N_GONE);
    zkl__node_maybe_free(n);
    leave_engine(e);
    pthread_mutex_unlock(&c->mu);
    return err;
}

int zkl__node_held(const zkl__node *n)
{
    zkl_client *c = n->c;
    if (zkl__forked(c))
        return 0;
    pthread_mutex_lock(&c->mu);
    int held = n->st == N_HELD && n->gen == c->gen && !c->closing &&
               c->state != ZKL_STATE_LOST;
    pthread_mutex_unlock(&c->mu);
    return held;
}

int zkl__node_sure(const zkl__node *n)
{
    zkl_client *c = n->c;
    if (zkl__forked(c))
        return 0;
    pthread_mutex_lock(&c->mu);
    int sure = n->st == N_HELD && current((zkl__node *)n) && connected(c);
    pthread_mutex_unlock(&c->mu);
    return sure;
}

int64_t zkl__node_token(const zkl__node *n)
{
    return n->token;
}

const char *zkl__node_path(const zkl__node *n)
{
    return n->path;
}

zkl_client *zkl__node_client(const zkl__node *n)
{
    return n->c;
}
