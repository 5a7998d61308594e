/* Asynchronous acquires: a request waits on its node instead of a thread.
 * The engine's wake-ups of the node (any thread, c->mu held) only put the
 * request on a list and wake the keeper; the keeper thread judges it as
 * the blocking wait would (lib/front/wait.c), enforces its deadline, deletes the
 * node of a failed attempt and delivers the result: it calls the callback
 * itself, with no zkl lock held, or, once the client delivers by file
 * descriptor, makes the descriptor readable for zkl_client_dispatch.
 *
 * A request's life: PENDING (its node is queued) -> CLEANING (it failed;
 * its node is being deleted) -> READY (a result to deliver) -> HELD or
 * DONE (delivered). Everything here is guarded by c->mu. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "async.h"

/* As a blocking failure waits for its node's delete (lib/front/wait.c). */
#define GRACE_NS (500 * (int64_t)1000000)

void zkl__areq_look_push(struct zkl__async *a, zkl_request *r)
{
    if (r->in_look || r->st >= R_READY)
        return;
    r->in_look = true;
    r->lnext = a->look;
    a->look = r;
}

void zkl__areq_look_remove(struct zkl__async *a, zkl_request *r)
{
    if (!r->in_look)
        return;
    for (zkl_request **p = &a->look; *p; p = &(*p)->lnext)
        if (*p == r) {
            *p = r->lnext;
            break;
        }
    r->in_look = false;
}

static void ready_push(struct zkl__async *a, zkl_request *r)
{
    r->st = R_READY;
    r->in_ready = true;
    r->rnext = NULL;
    bool was_empty = a->ready == NULL;
    if (a->ready_tail)
        a->ready_tail->rnext = r;
    else
        a->ready = r;
    a->ready_tail = r;
    if (was_empty && a->fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(a->fd, &one, sizeof one);
        (void)w; /* a full counter is readable already */
    }
    pthread_cond_broadcast(&r->c->cv); /* the keeper delivers */
}

void zkl__areq_ready_remove(struct zkl__async *a, zkl_request *r)
{
    if (!r->in_ready)
        return;
    ZKL__SLIST_REMOVE(zkl_request, a->ready, a->ready_tail, r, rnext);
    r->in_ready = false;
}

void zkl__areq_timed_add(struct zkl__async *a, zkl_request *r, int64_t at)
{
    if (!r->in_timed) {
        ZKL__DLIST_PUSH(a->timed, r, aprev, anext);
        r->in_timed = true;
    }
    if (at != ZKL__NO_DEADLINE && (a->due == 0 || at < a->due))
        a->due = at;
}

void zkl__areq_timed_remove(struct zkl__async *a, zkl_request *r)
{
    if (!r->in_timed)
        return;
    ZKL__DLIST_UNLINK(a->timed, r, aprev, anext);
    r->in_timed = false;
}

void zkl__async_poke(zkl_request *r)
{
    zkl__areq_look_push(r->a, r);
    pthread_cond_broadcast(&r->c->cv);
}

/* The engine's wake-up of a request's node (any thread, c->mu held): the
 * keeper judges it. */
static void wake(zkl__node *n, void *arg)
{
    zkl_request *r = arg;
    zkl__areq_look_push(r->a, r);
    pthread_cond_broadcast(&n->c->cv);
}

/* Give the node back to the engine, which finishes its delete (if any)
 * and frees it. */
static void detach_node(zkl__node *n)
{
    if (n == NULL)
        return;
    zkl__engine_hooks_off(n);
    zkl__node_detach(n);
}

static void detach_kept(zkl_request *r)
{
    for (size_t i = 0; i < r->nkept; i++)
        detach_node(r->kept[i]);
    r->nkept = 0;
}

void zkl__areq_detach(zkl_request *r)
{
    zkl__node *n = r->n;
    r->n = NULL;
    detach_node(n);
    detach_kept(r);
}

/* Send the delete of a node of the request (sending allowed). */
static void leave_node(zkl_request *r, zkl__node *n)
{
    (void)r;
    if (n != NULL)
        zkl__node_leave(n);
}

static void leave_kept(zkl_request *r)
{
    for (size_t i = 0; i < r->nkept; i++)
        leave_node(r, r->kept[i]);
}

/* A delete of the request's is still to be confirmed. */
static bool unsettled(const zkl_request *r)
{
    bool any = r->n != NULL && zkl__node_current(r->n) && !zkl__node_settled(r->n);
    for (size_t i = 0; i < r->nkept && !any; i++)
        any = zkl__node_current(r->kept[i]) && !zkl__node_settled(r->kept[i]);
    return any;
}

bool zkl__areq_node_holds(const zkl__node *n)
{
    return n != NULL && zkl__node_is_held(n);
}

/* The kept nodes that are part of the hold (a multi-lock's members) all
 * hold. */
bool zkl__areq_kept_hold(const zkl_request *r)
{
    for (size_t i = 0; r->step != NULL && r->step->keep_held && i < r->nkept; i++)
        if (!zkl__areq_node_holds(r->kept[i]))
            return false;
    return true;
}

/* What the blocking wait would return now: 1 to go on waiting. */
static int verdict(zkl_request *r, int64_t now)
{
    if (r->cancel)
        return ZKL_ECANCELED;
    if (r->lost_late || !zkl__areq_kept_hold(r))
        return r->c->closing ? ZKL_ECLOSED : ZKL_ELOST;
    return zkl__node_verdict(r->n, false, now >= r->deadline);
}

/* Judge a request the engine woke (c->mu held; sending allowed: on the
 * keeper, which alone swaps c->zh, or while the client closes). */
static void judge(struct zkl__async *a, zkl_request *r, int64_t now)
{
    zkl__node *n = r->n;
    if (n == NULL)
        return; /* not started yet: its start looks again */
    if (r->st == R_PENDING) {
        int v = verdict(r, now);
        if (v == 1)
            return;
        if (v == 0 && r->step != NULL) {
            zkl__node *next = NULL;
            int s = r->step->held(r->step_ctx, r, n, &next, &r->counted);
            if (s == 0 && next != NULL) {
                r->kept[r->nkept++] = n; /* held while the next one waits */
                if (r->step->keep_held) { /* a member: its hold counts now */
                    zkl__node_count_end(n, 0);
                    if (zkl__node_taken(n) != 0)
                        r->lost_late = true; /* no memory: the attempt fails */
                }
                r->n = next;
                zkl__areq_look_push(a, r);
                return;
            }
            if (s == 1)
                return; /* the step waits for an answer: zkl__async_poke */
            v = s;
        }
        if (v == 0 && (zkl__node_taken(n) != 0 || (r->path = strdup(n->path)) == NULL))
            v = ZKL_ENOMEM;
        if (!r->counted) { /* the first verdict is the attempt's */
            r->counted = true;
            zkl__node_count_end(n, v);
        }
        if (v == 0) {
            r->token = zkl__node_token(n);
            r->result = 0;
            if (!r->step || !r->step->keep_held) {
                leave_kept(r); /* a gate's job is done: the next may go */
                detach_kept(r);
            }
            zkl__areq_timed_remove(a, r);
            ready_push(a, r);
            return;
        }
        /* Failed: nothing of the attempt may stay on the server. */
        r->result = v;
        r->st = R_CLEANING;
        r->grace = now + GRACE_NS;
        zkl__areq_timed_add(a, r, r->grace);
        leave_node(r, n);
        for (size_t i = 0; i < r->nkept; i++)
            zkl__node_count_released(r->kept[i]); /* members taken: released */
        leave_kept(r);
    }
    if (r->st == R_CLEANING) {
        if (unsettled(r) && zkl__engine_connected(r->c) && now < r->grace)
            return;
        zkl__areq_timed_remove(a, r);
        zkl__areq_detach(r);
        ready_push(a, r);
    }
}

/* Judge every woken request, and those whose time came. */
static void judge_all(struct zkl__async *a)
{
    int64_t now = zkl__now_ns();
    if (a->due != 0 && now >= a->due) {
        a->due = 0;
        for (zkl_request *r = a->timed, *next; r; r = next) {
            next = r->anext;
            judge(a, r, now);
            if (r->in_timed) {
                int64_t at = r->st == R_CLEANING ? r->grace : r->deadline;
                if (at != ZKL__NO_DEADLINE && (a->due == 0 || at < a->due))
                    a->due = at;
            }
        }
    }
    while (a->look) {
        zkl_request *r = a->look;
        a->look = r->lnext;
        r->in_look = false;
        judge(a, r, now);
    }
}

void zkl__areq_free_now(zkl_request *r)
{
    free(r->kept);
    free(r->path);
    free(r);
}

/* Run the callbacks of the ready requests, c->mu released for each. */
int zkl__areq_deliver(struct zkl__async *a, zkl_client *c)
{
    int ran = 0;
    zkl_request *r;
    while ((r = a->ready) != NULL) {
        zkl__areq_ready_remove(a, r);
        /* Lost between the grant and now: the callback hears so. */
        if (r->result == 0 && !(zkl__areq_node_holds(r->n) && zkl__areq_kept_hold(r))) {
            if (r->nkept > 0 && !c->closing) {
                /* Members still held: the keeper, which may send, deletes
                 * them first (as after a cancel of a granted request). */
                r->lost_late = true;
                r->st = R_PENDING;
                zkl__areq_timed_add(a, r, zkl__now_ns());
                zkl__areq_look_push(a, r);
                pthread_cond_broadcast(&c->cv);
                continue;
            }
            r->result = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
            zkl__areq_detach(r);
        }
        r->st = r->result == 0 ? R_HELD : R_DONE;
        r->running = true;
        r->runner = pthread_self();
        pthread_mutex_unlock(&c->mu);
        r->fn(r, r->result, r->arg);
        pthread_mutex_lock(&c->mu);
        r->running = false;
        ran++;
        if (r->freed) {
            zkl__areq_free_now(r);
            pthread_mutex_unlock(&c->mu);
            zkl__obj_done(c); /* the client's memory stays while others live */
            pthread_mutex_lock(&c->mu);
        }
        pthread_cond_broadcast(&c->cv); /* a zkl_request_free waiting */
    }
    return ran;
}

/* The keeper's tick (lib/engine/engine.c calls it as the front end's). */
static int64_t tick(void *ctx)
{
    struct zkl__async *a = ctx;
    /* Until nothing is left: what the engine woke while a callback ran
     * (c->mu released) found no keeper waiting to hear it. */
    do {
        judge_all(a);
    } while (a->fd < 0 && !a->c->closing && zkl__areq_deliver(a, a->c) > 0);
    return a->due;
}

static void on_close(void *ctx)
{
    struct zkl__async *a = ctx;
    /* Every pending request is told ZKL_ECLOSED here, on the closing
     * thread: no keeper and no dispatch will run for it any more. */
    for (zkl_request *r = a->timed; r; r = r->anext)
        zkl__areq_look_push(a, r);
    judge_all(a);
    zkl__areq_deliver(a, a->c);
}

static void drop(void *ctx)
{
    struct zkl__async *a = ctx;
    if (a->fd >= 0)
        close(a->fd);
    free(a);
}

static const zkl__front_ops async_front = {tick, on_close, drop};

/* The client's async state, made on first use (c->mu held). */
struct zkl__async *zkl__areq_async_of(zkl_client *c)
{
    struct zkl__engine *e = zkl__engine_of(c);
    if (e == NULL)
        return NULL;
    if (e->front_ctx == NULL) {
        struct zkl__async *a = calloc(1, sizeof *a);
        if (a == NULL)
            return NULL;
        a->fd = -1;
        a->c = c;
        zkl__engine_set_front(e, &async_front, a);
    }
    return e->front_ctx;
}

/* Make and start a node for request r (c->mu held). */
static int enqueue(zkl_request *r, const char *dir, const zkl__policy *pol, const zkl__qopts *o,
                   zkl__node **out)
{
    zkl__qopts q = o ? *o : (zkl__qopts){0};
    q.wake = wake;
    q.wake_arg = r;
    q.on_lost = q.on_revoke = NULL;
    zkl__node *n;
    int err = zkl__node_make(r->c, dir, pol, &q, r->try_once, &n);
    if (err == 0)
        err = zkl__node_start(n, dir, &q, false, NULL);
    if (err == 0)
        *out = n;
    return err;
}

int zkl__async_enqueue(zkl_request *r, const char *dir, const zkl__policy *pol,
                       const zkl__qopts *o, zkl__node **out)
{
    return enqueue(r, dir, pol, o, out);
}

int zkl__async_start(zkl_client *c, const char *dir, const zkl__policy *pol, const zkl__qopts *o,
                     long timeout_ms, zkl_request_fn fn, void *arg, zkl_request **out)
{
    return zkl__async_start_steps(c, dir, pol, o, timeout_ms, NULL, NULL, 1, fn, arg, out);
}

int zkl__async_start_steps(zkl_client *c, const char *dir, const zkl__policy *pol,
                           const zkl__qopts *o, long timeout_ms, const zkl__async_step *step,
                           void *ctx, size_t nodes, zkl_request_fn fn, void *arg,
                           zkl_request **out)
{
    if (fn == NULL || out == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&c->mu);
    struct zkl__async *a = c->closing ? NULL : zkl__areq_async_of(c);
    int rc = c->closing ? ZKL_ECLOSED : a == NULL ? ZKL_ENOMEM : 0;
    pthread_mutex_unlock(&c->mu);
    if (rc != 0)
        return rc;
    zkl_request *r = calloc(1, sizeof *r);
    if (r == NULL || (nodes > 1 && (r->kept = calloc(nodes - 1, sizeof *r->kept)) == NULL)) {
        free(r);
        return ZKL_ENOMEM;
    }
    if ((rc = zkl__obj_open(c, r)) != 0) {
        free(r->kept);
        free(r);
        return rc;
    }
    r->c = c;
    r->fn = fn;
    r->step = step;
    r->step_ctx = ctx;
    r->arg = arg;
    r->st = R_PENDING;
    r->try_once = timeout_ms == 0;
    /* A try once waits for the policy's first answer, bounded by the
     * session timeout, as the blocking call does. */
    r->deadline = r->try_once ? zkl__now_ns() + (int64_t)c->timeout_ms * 1000000
                              : zkl__deadline(timeout_ms);
    pthread_mutex_lock(&c->mu);
    r->a = a;
    zkl__node *n;
    if ((rc = enqueue(r, dir, pol, o, &n)) != 0) {
        pthread_mutex_unlock(&c->mu);
        free(r->kept);
        free(r); /* ctx stays the caller's */
        zkl__obj_done(c);
        return rc;
    }
    r->n = n;
    zkl__areq_timed_add(a, r, r->deadline); /* without a deadline: listed for the close */
    zkl__areq_look_push(a, r); /* what happened before r->n was set */
    pthread_cond_broadcast(&c->cv);
    *out = r;
    pthread_mutex_unlock(&c->mu);
    return 0;
}
