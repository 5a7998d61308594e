/* An asynchronous request's machine (areq.h). zkl__areq_on() is its one
 * entry; move() the one function that changes its state, against the table
 * below. The request judges its node as a blocking caller would
 * (verdict.c), then asks its front end to deliver the result; a failed
 * attempt first waits, briefly and while connected, for its nodes'
 * deletes (and those of the lock parents a refused one made), so that its
 * callback hears of it with nothing left behind. */

#include "areq.h"
#include "loss.h" /* ZKL__GRACE_NS: a failed request waits for its nodes' deletes */
#include "machine.h"

#define TO(s) (1u << (s))
#define R(s) ZKL__R_##s
/* The moves a request may make: bit `to` of legal[from]. Every one of them
 * is taken by the tests (tests/check_core_request.c). */
static const unsigned legal[ZKL__R_COUNT] = {
    [R(PENDING)] = TO(R(CLEANING)) | TO(R(READY)) | TO(R(DONE)),
    [R(CLEANING)] = TO(R(READY)) | TO(R(DONE)),
    /* back to PENDING: granted, then cancelled or a member lost before it
     * was told: its nodes go first */
    [R(READY)] = TO(R(PENDING)) | TO(R(HELD)) | TO(R(DONE)),
    [R(HELD)] = TO(R(LOSING)) | TO(R(DONE)),
    [R(LOSING)] = TO(R(LOST)) | TO(R(DONE)),
    [R(LOST)] = TO(R(DONE)),
    [R(DONE)] = 0,
};

bool zkl__areq_legal(int from, int to)
{
    return from >= 0 && from < ZKL__R_COUNT && to >= 0 && to < ZKL__R_COUNT &&
           (legal[from] & TO(to)) != 0;
}

struct run {
    zkl__areq *r;
    zkl__rsink_fn sink;
    void *ctx;
    int64_t now;
};

static int act(struct run *x, enum zkl__ract_type type, zkl__cnode *n, int rc, int64_t at)
{
    zkl__ract a = {.type = type, .r = x->r, .n = n, .rc = rc, .at = at, .now = x->now};
    return x->sink(x->ctx, &a);
}

static void move(struct run *x, enum zkl__rstate to)
{
    zkl__areq *r = x->r;
    if (r->st == to)
        return;
    if (!zkl__areq_legal(r->st, (int)to)) /* a bug: said, never an abort */
        zkl__core_broken(r->core, r->n, "an asynchronous request", r->st, (int)to);
    r->core->rmoves[r->st][to]++;
    r->st = (uint8_t)to;
    if (to == R(READY) || to == R(LOSING)) {
        act(x, ZKL__RA_UNTIMED, NULL, 0, 0);
        act(x, ZKL__RA_READY, NULL, 0, 0);
    }
}

static bool node_holds(const zkl__cnode *n)
{
    return n != NULL && n->st == ZKL__N_HELD && zkl__cnode_current(n);
}

/* The kept nodes that are part of the hold all hold. */
static bool kept_hold(const zkl__areq *r)
{
    for (size_t i = 0; r->keep_held && i < r->nkept; i++)
        if (!node_holds(r->kept[i]))
            return false;
    return true;
}

bool zkl__areq_holds(const zkl__areq *r)
{
    return (r->st == R(HELD)) && node_holds(r->n) && kept_hold(r);
}

static int gone_code(const zkl__cnode *n)
{
    return n != NULL && n->core->closing ? ZKL_ECLOSED : ZKL_ELOST;
}

static void leave_kept(struct run *x)
{
    for (size_t i = 0; i < x->r->nkept; i++)
        act(x, ZKL__RA_LEAVE, x->r->kept[i], 0, 0);
}

static void detach_all(struct run *x)
{
    zkl__areq *r = x->r;
    if (r->n != NULL)
        act(x, ZKL__RA_DETACH, r->n, 0, 0);
    r->n = NULL;
    for (size_t i = 0; i < r->nkept; i++)
        act(x, ZKL__RA_DETACH, r->kept[i], 0, 0);
    r->nkept = 0;
}

/* What the blocking wait would return now: 1 to go on waiting. */
static int verdict(const zkl__areq *r, int64_t now)
{
    if (r->end == ZKL__END_CANCEL)
        return ZKL_ECANCELED;
    if (r->end == ZKL__END_LOST || !kept_hold(r))
        return gone_code(r->n);
    zkl__wait_view w = {.client_cancel = false, .deadline_past = now >= r->deadline};
    return zkl__verdict(r->n, &w);
}

/* The attempt failed with v: nothing of it may stay on the server. */
static void fail(struct run *x, int v)
{
    zkl__areq *r = x->r;
    r->result = v;
    r->zk_rc = r->n != NULL ? r->n->zk_rc : 0;
    r->qlen = r->n != NULL ? r->n->qlen : 0;
    move(x, R(CLEANING));
    r->deadline = x->now + ZKL__GRACE_NS;
    act(x, ZKL__RA_TIMER, NULL, 0, r->deadline);
    act(x, ZKL__RA_LEAVE, r->n, 0, 0);
    for (size_t i = 0; i < r->nkept; i++)
        act(x, ZKL__RA_RELEASED, r->kept[i], 0, 0); /* members taken: released */
    leave_kept(x);
}

static void judge_pending(struct run *x)
{
    zkl__areq *r = x->r;
    int v = verdict(r, x->now);
    if (v == 1)
        return;
    if (v == 0 && r->stepped) {
        zkl__cnode *next = NULL;
        zkl__ract a = {.type = ZKL__RA_STEP, .r = r, .n = r->n, .next = &next, .now = x->now};
        int s = x->sink(x->ctx, &a);
        if (s == 0 && next != NULL) {
            r->kept[r->nkept++] = r->n; /* held while the next one waits */
            if (r->keep_held) { /* a member: its hold counts now */
                act(x, ZKL__RA_COUNT, r->n, 0, 0);
                if (act(x, ZKL__RA_TAKE, r->n, 0, 0) != 0)
                    r->end = ZKL__END_LOST; /* no memory: the attempt fails */
            }
            r->n = next;
            act(x, ZKL__RA_LOOK, NULL, 0, 0);
            return;
        }
        /* The step waits for an answer (a semaphore's limit read), but
         * not past the deadline: an answer that never comes (a silent
         * link) must not hold the result back until the session ends. */
        if (s == 1 && x->now < r->deadline)
            return;
        v = s == 1 ? ZKL_ETIMEDOUT : s;
    }
    if (v == 0 && act(x, ZKL__RA_TAKE, r->n, 0, 0) != 0)
        v = ZKL_ENOMEM;
    if (!r->counted) { /* the first verdict is the attempt's */
        r->counted = true;
        act(x, ZKL__RA_COUNT, r->n, v, 0);
    }
    if (v != 0) {
        fail(x, v);
        return;
    }
    r->result = 0;
    if (!r->keep_held) {
        /* A gate's job is done: the next contender may go. */
        leave_kept(x);
        for (size_t i = 0; i < r->nkept; i++)
            act(x, ZKL__RA_DETACH, r->kept[i], 0, 0);
        r->nkept = 0;
    }
    move(x, R(READY));
}

static void judge_cleaning(struct run *x)
{
    zkl__areq *r = x->r;
    bool unsettled = r->unmaking ||
                     (r->n != NULL && zkl__cnode_current(r->n) && !zkl__cnode_settled(r->n));
    for (size_t i = 0; i < r->nkept && !unsettled; i++)
        unsettled = zkl__cnode_current(r->kept[i]) && !zkl__cnode_settled(r->kept[i]);
    const struct zkl__core *k = r->n ? r->n->core : r->nkept ? r->kept[0]->core : NULL;
    if (unsettled && k != NULL && zkl__core_connected(k) && x->now < r->deadline)
        return;
    detach_all(x);
    move(x, R(READY));
}

/* The result is about to be delivered: still held? */
static int deliver(struct run *x)
{
    zkl__areq *r = x->r;
    if (r->st == R(LOSING)) {
        move(x, R(LOST));
        return 1;
    }
    if (r->st != R(READY))
        return 0;
    if (r->result == 0 && !(node_holds(r->n) && kept_hold(r))) {
        const zkl__cnode *n = r->n;
        if (r->nkept > 0 && n != NULL && !n->core->closing) {
            /* Members still held: they go first, as after a cancel of a
             * granted request. */
            r->end = ZKL__END_LOST;
            move(x, R(PENDING));
            act(x, ZKL__RA_UNREADY, NULL, 0, 0);
            act(x, ZKL__RA_TIMER, NULL, 0, x->now);
            act(x, ZKL__RA_LOOK, NULL, 0, 0);
            return 0;
        }
        r->result = gone_code(n); /* lost between the grant and now */
        detach_all(x);
    }
    move(x, r->result == 0 ? R(HELD) : R(DONE));
    return 1;
}

/* A blocking caller takes the result in place of a callback: a hold's
 * nodes are its own from here on, neither left nor detached. */
static int take(struct run *x)
{
    zkl__areq *r = x->r;
    if (r->st != R(READY) || deliver(x) == 0)
        return 1; /* not yet (or granted, then lost: its members go first) */
    if (r->st == R(HELD)) {
        for (size_t i = 0; i < r->nkept; i++)
            act(x, ZKL__RA_HAND, r->kept[i], 0, 0);
        act(x, ZKL__RA_HAND, r->n, 0, 0);
        r->nkept = 0;
        r->n = NULL;
        move(x, R(DONE));
    }
    return r->result;
}

static int cancel(struct run *x)
{
    zkl__areq *r = x->r;
    switch (r->st) {
    case R(HELD):
    case R(LOSING):
    case R(LOST):
        return ZKL_EBUSY; /* delivered held: release it */
    case R(DONE):
        return ZKL_EINVAL; /* its callback ran already */
    case R(CLEANING):
        r->result = ZKL_ECANCELED; /* failed, node going: only the code */
        return 0;
    case R(READY):
        if (r->result != 0) {
            r->result = ZKL_ECANCELED;
            return 0;
        }
        /* Granted, not yet told: the node goes, the callback hears
         * ZKL_ECANCELED. */
        move(x, R(PENDING));
        act(x, ZKL__RA_UNREADY, NULL, 0, 0);
        act(x, ZKL__RA_TIMER, NULL, 0, x->now);
        break;
    default:
        break;
    }
    r->end = ZKL__END_CANCEL;
    act(x, ZKL__RA_LOOK, NULL, 0, 0);
    return 0;
}

/* Give the nodes of a held request up, without waiting: the engine
 * finishes the deletes, on reconnect if need be. */
static int let_go(struct run *x)
{
    zkl__areq *r = x->r;
    zkl__cnode *n = r->n;
    int rc = 0;
    if (n != NULL)
        act(x, ZKL__RA_RELEASED, n, 0, 0); /* the hold ends, lost or not */
    if (n == NULL || !zkl__cnode_current(n))
        rc = gone_code(n);
    else if (!node_holds(n) || !kept_hold(r) || r->st != R(HELD))
        rc = ZKL_ELOST;
    if (n != NULL)
        act(x, ZKL__RA_LEAVE, n, 0, 0);
    for (size_t i = 0; i < r->nkept; i++) {
        act(x, ZKL__RA_RELEASED, r->kept[i], 0, 0);
        act(x, ZKL__RA_LEAVE, r->kept[i], 0, 0);
    }
    detach_all(x);
    move(x, R(DONE));
    return rc;
}

static void free_all(struct run *x)
{
    zkl__areq *r = x->r;
    act(x, ZKL__RA_UNREADY, NULL, 0, 0);
    act(x, ZKL__RA_UNTIMED, NULL, 0, 0);
    if (r->st == R(HELD) || r->st == R(LOSING) || r->st == R(LOST)) {
        (void)let_go(x);
        return;
    }
    if (r->n != NULL)
        act(x, ZKL__RA_LEAVE, r->n, 0, 0); /* pending: given up, its callback never runs */
    for (size_t i = 0; i < r->nkept; i++) {
        act(x, ZKL__RA_RELEASED, r->kept[i], 0, 0);
        act(x, ZKL__RA_LEAVE, r->kept[i], 0, 0);
    }
    detach_all(x);
    move(x, R(DONE));
}

int64_t zkl__areq_due(const zkl__areq *r, int64_t now)
{
    if (r->deadline == ZKL__NO_DEADLINE || r->deadline > now)
        return r->deadline;
    return now + ZKL__GRACE_NS;
}

int zkl__areq_on(zkl__areq *r, enum zkl__rev_type ev, int64_t now, zkl__rsink_fn sink, void *ctx)
{
    struct run x = {r, sink, ctx, now};
    switch (ev) {
    case ZKL__RE_LOOK:
        if (r->st == R(PENDING) && r->n != NULL)
            judge_pending(&x);
        if (r->st == R(CLEANING))
            judge_cleaning(&x);
        else if (r->st == R(HELD) && r->tell_loss && r->n != NULL && !r->n->core->closing &&
                 !(node_holds(r->n) && kept_hold(r)))
        {
            r->result = ZKL_ELOST;
            move(&x, R(LOSING)); /* lost while held: told through the same callback */
        }
        return 0;
    case ZKL__RE_DELIVER:
        return deliver(&x);
    case ZKL__RE_CANCEL:
        return cancel(&x);
    case ZKL__RE_RELEASE:
        if (r->st != R(HELD) && r->st != R(LOSING) && r->st != R(LOST))
            return ZKL_ENOTHELD;
        return let_go(&x);
    case ZKL__RE_FREE:
        free_all(&x);
        return 0;
    case ZKL__RE_TAKE:
        return take(&x);
    }
    return 0;
}

void zkl__areq_init(zkl__areq *r, zkl__cnode *n, zkl__cnode **kept, int64_t deadline,
                    bool stepped, bool keep_held, bool tell_loss)
{
    r->core = n->core;
    r->n = n;
    r->kept = kept;
    r->nkept = 0;
    r->deadline = deadline;
    r->st = R(PENDING);
    r->end = ZKL__END_NONE;
    r->stepped = stepped;
    r->keep_held = keep_held;
    r->tell_loss = tell_loss;
}
