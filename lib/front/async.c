/* Asynchronous acquires: a request waits on its node instead of a thread.
 * The engine's wake-ups of the node (any thread, c->mu held) only put the
 * request on a list and wake the keeper; on the keeper thread the request's
 * machine (lib/engine/core/areq.c) judges it, and this file carries out
 * what it says: the recipe's steps, the node calls, the timer, and the
 * delivery of the result: the callback is called here, with no zkl lock
 * held, or, once the client delivers by file descriptor, the descriptor
 * is made readable for zkl_client_dispatch. Everything here is guarded by
 * c->mu. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "async.h"

/* ---- the client's lists ------------------------------------------------------ */

static void look_push(struct zkl__async *a, zkl_request *r)
{
    if (r->in_look || r->m.st == ZKL__R_READY || r->m.st >= ZKL__R_LOSING)
        return;
    r->in_look = true;
    r->lnext = a->look;
    a->look = r;
}

static void look_remove(struct zkl__async *a, zkl_request *r)
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
    if (r->in_ready)
        return;
    look_remove(a, r); /* one link for both lists: never in both at once */
    r->in_ready = true;
    r->lnext = NULL;
    bool was_empty = a->ready == NULL;
    if (a->ready_tail)
        a->ready_tail->lnext = r;
    else
        a->ready = r;
    a->ready_tail = r;
    if (was_empty && a->fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(a->fd, &one, sizeof one);
        (void)w; /* a full counter is readable already */
    }
    pthread_cond_broadcast(&r->a->c->cv); /* the keeper delivers */
}

static void ready_remove(struct zkl__async *a, zkl_request *r)
{
    if (!r->in_ready)
        return;
    ZKL__SLIST_REMOVE(zkl_request, a->ready, a->ready_tail, r, lnext);
    r->in_ready = false;
}

static void timed_add(struct zkl__async *a, zkl_request *r, int64_t at)
{
    if (!r->in_timed) {
        ZKL__DLIST_PUSH(a->timed, r, aprev, anext);
        r->in_timed = true;
    }
    if (r->wcv != NULL)
        return; /* listed for the close: its blocking caller keeps its times */
    if (at != ZKL__NO_DEADLINE && (a->due == 0 || at < a->due))
        a->due = at;
}

static void timed_remove(struct zkl__async *a, zkl_request *r)
{
    if (!r->in_timed)
        return;
    ZKL__DLIST_UNLINK(a->timed, r, aprev, anext);
    r->in_timed = false;
}

void zkl__async_unlist(zkl_request *r)
{
    look_remove(r->a, r);
    ready_remove(r->a, r);
    timed_remove(r->a, r);
}

/* ---- the machine's actions --------------------------------------------------- */

static void detach_node(zkl__node *n, int64_t now)
{
    zkl__engine_hooks_off(n);
    zkl__node_detach(n, now);
}

/* An answer to the deletes of the lock parents a refused request made
 * (c->mu held): the machine, cleaning, looks again. */
static void unmade(void *arg)
{
    zkl_request *r = arg;
    r->m.unmaking = zkl__unmake_pending(r->unmake);
    zkl__async_poke(r);
}

static int act(void *ctx, const zkl__ract *x)
{
    zkl_request *r = ctx;
    zkl__node *n = (zkl__node *)x->n;
    switch (x->type) {
    case ZKL__RA_STEP:
        return r->step->held(r->step_ctx, r, n, (zkl__node **)x->next, &r->m.counted);
    case ZKL__RA_TAKE:
        return zkl__node_taken(n, x->now);
    case ZKL__RA_COUNT:
        zkl__node_count_end(n, x->rc, x->now);
        break;
    case ZKL__RA_RELEASED:
        zkl__node_count_released(n, x->now);
        break;
    case ZKL__RA_LEAVE:
        zkl__node_leave(n, x->now);
        /* The failed node (not a member given back): the parents its
         * refused creates made go after it, and the cleaning waits. */
        if (r->m.st == ZKL__R_CLEANING && x->n == r->m.n && r->unmake == NULL) {
            r->unmake = zkl__node_unmake(n, r->m.result, unmade, r);
            r->m.unmaking = zkl__unmake_pending(r->unmake);
        }
        break;
    case ZKL__RA_DETACH:
        detach_node(n, x->now);
        break;
    case ZKL__RA_READY:
        if (r->wcv != NULL)
            pthread_cond_broadcast(r->wcv); /* its caller takes it (ZKL__RE_TAKE) */
        else
            ready_push(r->a, r);
        break;
    case ZKL__RA_UNREADY:
        ready_remove(r->a, r);
        break;
    case ZKL__RA_TIMER:
        timed_add(r->a, r, x->at);
        break;
    case ZKL__RA_UNTIMED:
        timed_remove(r->a, r);
        break;
    case ZKL__RA_LOOK:
        zkl__async_poke(r);
        break;
    case ZKL__RA_HAND:
        r->handed = n;
        break;
    }
    return 0;
}

int zkl__async_on(zkl_request *r, enum zkl__rev_type ev)
{
    return zkl__areq_on(&r->m, ev, zkl__now_ns(), act, r);
}

int zkl__async_on_at(zkl_request *r, enum zkl__rev_type ev, int64_t now)
{
    return zkl__areq_on(&r->m, ev, now, act, r);
}

/* The engine's wake-up of a request's node (any thread, c->mu held): the
 * keeper judges it. */
static void wake(zkl__node *n, void *arg)
{
    (void)n;
    zkl__async_poke(arg); /* a held one is looked at for a loss */
}

void zkl__async_poke(zkl_request *r)
{
    if (r->wcv != NULL) {
        pthread_cond_broadcast(r->wcv); /* its blocking caller judges it */
        return;
    }
    look_push(r->a, r);
    pthread_cond_broadcast(&r->a->c->cv);
}

/* Judge every woken request, and those whose time came. */
static void judge_all(struct zkl__async *a)
{
    int64_t now = zkl__now_ns();
    if (a->due != 0 && now >= a->due) {
        a->due = 0;
        for (zkl_request *r = a->timed, *next; r; r = next) {
            next = r->anext;
            (void)zkl__areq_on(&r->m, ZKL__RE_LOOK, now, act, r);
            if (r->in_timed && r->wcv == NULL) {
                int64_t at = r->m.deadline;
                if (at != ZKL__NO_DEADLINE && (a->due == 0 || at < a->due))
                    a->due = at;
            }
        }
    }
    while (a->look) {
        zkl_request *r = a->look;
        a->look = r->lnext;
        r->in_look = false;
        (void)zkl__areq_on(&r->m, ZKL__RE_LOOK, now, act, r);
    }
}

void zkl__async_free_now(zkl_request *r)
{
    if (zkl__async_registered(r))
        zkl__obj_close(r, "zkl_request_free"); /* its registration goes with it */
    free(r->m.kept);
    free(r);
}

int zkl__async_deliver(struct zkl__async *a, zkl_client *c, bool closing)
{
    /* Callbacks run one at a time: the closing thread waits for a
     * dispatch (or the keeper) that is running one, with c->mu released
     * meanwhile. A callback's own thread never waits for itself. */
    bool mine = a->delivering && pthread_equal(a->runner, pthread_self());
    while (a->delivering && !mine)
        pthread_cond_wait(&c->cv, &c->mu);
    bool outer = !a->delivering;
    a->delivering = true;
    a->runner = pthread_self();
    int ran = 0;
    zkl_request *r;
    /* Once the client closes, what is left is the closing thread's. */
    while ((closing || !c->closing) && (r = a->ready) != NULL) {
        ready_remove(a, r);
        if (zkl__async_on(r, ZKL__RE_DELIVER) == 0)
            continue; /* not to be told (yet): the machine said why */
        int result = r->m.result;
        r->cb = ZKL__CB_RUNNING;
        pthread_mutex_unlock(&c->mu);
        r->fn(r, result, r->arg);
        pthread_mutex_lock(&c->mu);
        bool freed = r->cb == ZKL__CB_FREED;
        r->cb = ZKL__CB_IDLE;
        ran++;
        if (freed) {
            zkl__async_free_now(r);
            pthread_mutex_unlock(&c->mu);
            zkl__obj_done(c); /* the client's memory stays while others live */
            pthread_mutex_lock(&c->mu);
        }
        pthread_cond_broadcast(&c->cv); /* a zkl_request_free waiting */
    }
    if (outer) {
        a->delivering = false;
        pthread_cond_broadcast(&c->cv); /* a closing thread waiting */
    }
    return ran;
}

/* ---- the front end, as the engine sees it ---------------------------------------- */

/* The keeper's tick. */
static int64_t tick(void *ctx)
{
    struct zkl__async *a = ctx;
    /* Until nothing is left: what the engine woke while a callback ran
     * (c->mu released) found no keeper waiting to hear it. */
    do {
        judge_all(a);
    } while (a->fd < 0 && !a->c->closing && zkl__async_deliver(a, a->c, false) > 0);
    return a->due;
}

static void on_close(void *ctx)
{
    struct zkl__async *a = ctx;
    /* Every pending request is told ZKL_ECLOSED here, on the closing
     * thread: no keeper and no dispatch will run for it any more. */
    for (zkl_request *r = a->timed; r; r = r->anext)
        look_push(a, r);
    judge_all(a);
    zkl__async_deliver(a, a->c, true);
}

static void drop(void *ctx)
{
    struct zkl__async *a = ctx;
    if (a->fd >= 0)
        close(a->fd);
    free(a);
}

static const zkl__front_ops async_front = {tick, on_close, drop};

struct zkl__async *zkl__async_of(zkl_client *c)
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

/* ---- starting ------------------------------------------------------------------- */

/* Make and start a node for request r (c->mu held). */
static int enqueue(zkl_request *r, const char *dir, const zkl__policy *pol, const zkl__qopts *o,
                   bool try_once, zkl__node **out)
{
    zkl__qopts q = o ? *o : (zkl__qopts){0};
    q.wake = wake;
    q.wake_arg = r;
    if (r->wcv == NULL) /* a blocking caller's hold keeps its owner's hooks */
        q.on_lost = q.on_revoke = NULL;
    zkl__node *n;
    int err = zkl__node_make(pol, &q, try_once, &n);
    if (err == 0)
        err = zkl__node_start(r->a->c, n, dir, &q);
    if (err == 0)
        *out = n;
    return err;
}

int zkl__async_enqueue(zkl_request *r, const char *dir, const zkl__policy *pol,
                       const zkl__qopts *o, zkl__node **out)
{
    return enqueue(r, dir, pol, o, r->m.n->patience != ZKL__P_DEADLINE, out);
}

int zkl__async_start(zkl_client *c, const char *dir, const zkl__policy *pol, const zkl__qopts *o,
                     long timeout_ms, zkl_request_fn fn, void *arg, zkl_request **out)
{
    if (fn == NULL)
        return ZKL_EINVAL;
    return zkl__async_start_steps(c, dir, pol, o, timeout_ms, NULL, NULL, 1, fn, arg, out);
}

int zkl__async_start_steps(zkl_client *c, const char *dir, const zkl__policy *pol,
                           const zkl__qopts *o, long timeout_ms, const zkl__async_step *step,
                           void *ctx, size_t nodes, zkl_request_fn fn, void *arg,
                           zkl_request **out)
{
    if (out == NULL || (fn == NULL && arg == NULL))
        return ZKL_EINVAL;
    zkl_request *r = calloc(1, sizeof *r);
    zkl__cnode **kept = nodes > 1 ? calloc(nodes - 1, sizeof *kept) : NULL;
    if (r == NULL || (nodes > 1 && kept == NULL)) {
        free(r);
        free(kept);
        return ZKL_ENOMEM;
    }
    r->wcv = fn == NULL ? arg : NULL;
    /* Only a handle the caller gets is registered (lib/front/objects.c):
     * a blocking caller's request never leaves the call that made it, and
     * the lock object it calls through keeps the client. */
    int rc = r->wcv == NULL ? zkl__obj_open(c, r) : 0;
    if (rc != 0) {
        free(kept);
        free(r);
        return rc;
    }
    r->fn = fn;
    r->step = step;
    r->step_ctx = ctx;
    r->arg = arg;
    /* A try once waits for the policy's first answer, bounded by the
     * session timeout, as the blocking call does. */
    bool try_once;
    int64_t now = zkl__now_ns();
    int64_t deadline = zkl__wait_until(zkl__deadline_at(timeout_ms, now), now, c->timeout_ms,
                                       &try_once);
    pthread_mutex_lock(&c->mu);
    struct zkl__async *a = c->closing ? NULL : zkl__async_of(c);
    rc = c->closing ? ZKL_ECLOSED : a == NULL ? ZKL_ENOMEM : 0;
    r->a = a;
    zkl__node *n = NULL;
    if (rc == 0)
        rc = enqueue(r, dir, pol, o, try_once, &n);
    if (rc != 0) {
        pthread_mutex_unlock(&c->mu);
        bool registered = r->wcv == NULL;
        if (registered)
            zkl__obj_close(r, "an asynchronous acquire's request");
        free(kept);
        free(r); /* ctx stays the caller's */
        if (registered)
            zkl__obj_done(c);
        return rc;
    }
    zkl__areq_init(&r->m, &n->cn, kept, deadline, step != NULL, step && step->keep_held,
                   c->lost_requests != 0 || (o != NULL && o->tell_lost));
    timed_add(a, r, deadline); /* without a deadline: listed for the close */
    if (r->wcv != NULL) {
        /* Its caller judges it, from now on: the keeper need not wake. */
        zkl__engine_of(c)->inside++; /* a closing client waits for its caller */
    } else {
        look_push(a, r); /* what happened before the machine knew its node */
        pthread_cond_broadcast(&c->cv);
    }
    *out = r;
    pthread_mutex_unlock(&c->mu);
    return 0;
}
