/* Blocking calls in the simulation, as a thread with a condition variable
 * would make them: a worker waits on its node's verdict (the core's
 * zkl__verdict, the rule lib/front/wait.c's requests are judged by too)
 * until it holds, fails, or its one deadline passes; a failed attempt leaves and waits, briefly and while connected,
 * for its node's delete; a release waits for the server's answer. Where
 * the library sleeps on a condition variable, the worker's state says
 * what it waits for and the driver resumes it when that may have
 * happened (the core's ZKL__A_WAKE, the client's wake-ups, a timer): it
 * then judges again, as the woken thread would. Also a thread's holds
 * (lib/kit/holds.c: per worker, as per thread) and the requests a recipe
 * sends beside its queue (lib/kit/calls.c, znode.c). */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

/* How long a failed acquire waits for its node's delete: the library's. */
#define GRACE ZKL__GRACE_NS

enum { PR_NONE, PR_EW, PR_HOLDS_ACQ, PR_HOLDS_REL, PR_REL, PR_LEAVE, PR_SLEEP, PR_CALL };

static int64_t now_of(const struct dwk *w)
{
    return zsim_now(w->cl->d->w);
}

void wk_timer(struct dwk *w, int64_t at)
{
    if (at == ZKL__NO_DEADLINE)
        return;
    if (w->timer_at == at)
        return;
    w->timer_at = at;
    zsim_timer(w->cl->d->w, NULL, at, DRV_TIMER(w->cl, TM_WORKER, w->id, ++w->tgen));
}

/* A primitive is done: the recipe goes on (at once, unless the flow that
 * started it is still on the stack: it looks at w->phase). */
static void prim_done(struct dwk *w, int rc)
{
    w->rc = rc;
    w->phase = W_NONE;
    w->prim = PR_NONE;
    w->timer_at = 0;
    wk_flow(w);
}

bool node_held(const dnode *n)
{
    return n != NULL && n->cn.st == ZKL__N_HELD && zkl__cnode_current(&n->cn) &&
           n->cl->state != ZKL_STATE_LOST;
}

static bool is_held(const dnode *n)
{
    return n->cn.st == ZKL__N_HELD && zkl__cnode_current(&n->cn);
}

static void event(dnode *n, enum zkl__ev_type type)
{
    zkl__cnode_on(&n->cn, &(zkl__event){.type = type, .now = zsim_now(n->cl->d->w)});
}

/* zkl__node_detach: the caller is done with n (which may go now). */
static void detach(dnode *n)
{
    n->waiter = NULL;
    n->hooks = false; /* zkl__engine_hooks_off */
    event(n, ZKL__E_DETACH);
}

/* ---- the engine wait: zkl__wait_acquire ------------------------------------------ */

static void ew_done(struct dwk *w, int rc);

static void ew_settle(struct dwk *w)
{
    dnode *n = w->ew.n;
    struct dcl *c = w->cl;
    if (zkl__cnode_current(&n->cn) && !zkl__cnode_settled(&n->cn) && drv_connected(c) &&
        now_of(w) < w->ew.grace) {
        w->phase = W_SETTLE;
        wk_timer(w, w->ew.grace);
        return;
    }
    w->ew.n = NULL;
    detach(n); /* n may be gone from here on */
    ew_done(w, w->ew.grace_rc);
}

static void ew_judge(struct dwk *w)
{
    dnode *n = w->ew.n;
    struct dcl *c = w->cl;
    int64_t now = now_of(w);
    zkl__wait_view v = {.cancelled = w->cancel_fired,
                        .client_cancel = c->cancelled,
                        .deadline_past = now >= w->ew.wait_until};
    int err = zkl__verdict(&n->cn, &v);
    if (err == 1) {
        w->phase = W_ACQ;
        wk_timer(w, w->ew.wait_until);
        return;
    }
    check_prompt(c->d, c, &n->cn, w->call_started);
    if (err == 0) {
        /* zkl__node_taken: the caller takes the hold. */
        event(n, ZKL__E_TAKEN);
        n->waiter = NULL;
        w->node = n;
        w->ew.n = NULL;
        ew_done(w, 0);
        return;
    }
    /* Failed: make sure nothing of this attempt stays on the server. */
    drv_trace(c->d, "client %d worker %d: attempt on node %u fails: %s", c->ix, w->id, n->uid,
              zkl_err_name(err));
    w->ew.grace_rc = err;
    event(n, ZKL__E_LEAVE);
    w->ew.grace = now + GRACE;
    ew_settle(w);
}

static int state_err(const struct dcl *c)
{
    if (c->closing)
        return ZKL_ECLOSED;
    if (c->state == ZKL_STATE_LOST || c->s == NULL)
        return ZKL_ELOST;
    if (c->cancelled)
        return ZKL_ECANCELED;
    return 0;
}

static void ew_enqueue(struct dwk *w)
{
    struct dcl *c = w->cl;
    struct ew *e = &w->ew;
    int64_t now = now_of(w);
    /* Try-once (timeout 0) still waits for the policy's first answer,
     * bounded by the session timeout. */
    bool try_once = e->deadline <= now;
    e->wait_until = try_once ? now + (int64_t)c->timeout_ms * MS : e->deadline;
    w->bound = e->wait_until == ZKL__NO_DEADLINE ? ZKL__NO_DEADLINE : e->wait_until + GRACE;
    int err = state_err(c);
    /* Work done under a node (a semaphore's gate) must not spill over into
     * a later session. */
    if (err == 0 && e->within && !is_held(e->within))
        err = ZKL_ELOST;
    dnode *n = NULL;
    if (err == 0) {
        n = drv_node_new(c, e->path);
        zkl__cnode_opts co = {.pol = e->pol,
                              .arg = e->arg,
                              .dir = drv_paths[e->path],
                              .kind = e->kind,
                              .fixed_seq = e->fixed_seq,
                              .prefetch = e->prefetch,
                              .try_once = try_once};
        err = zkl__cnode_init(c->core, &n->cn, &co);
        if (err != 0)
            free(n);
    }
    if (err != 0) {
        ew_done(w, err);
        return;
    }
    n->waiter = &w->wt;
    n->hooks = e->hooks;
    e->n = n;
    drv_trace(c->d, "client %d worker %d: node %u on %s (%s)", c->ix, w->id, n->uid,
              drv_paths[e->path], zkl__cnode_kind(&n->cn));
    zkl__cnode_start(&n->cn, now);
    ew_judge(w);
}

/* wait_reopened: between a lost session and the next one an acquire waits
 * for the new session within its deadline. */
static void ew_reopen(struct dwk *w)
{
    struct dcl *c = w->cl;
    if (!c->closing && !c->cancelled && c->state == ZKL_STATE_LOST &&
        (w->ew.deadline == ZKL__NO_DEADLINE || now_of(w) < w->ew.deadline)) {
        w->phase = W_REOPEN;
        wk_timer(w, w->ew.deadline);
        return;
    }
    ew_enqueue(w);
}

void ew_begin(struct dwk *w)
{
    w->prim = w->prim == PR_NONE ? PR_EW : w->prim;
    w->ew.n = NULL;
    w->call_started = now_of(w);
    if (w->cancel_fired) {
        ew_done(w, ZKL_ECANCELED);
        return;
    }
    ew_reopen(w);
}

/* ---- a thread's holds: lib/kit/holds.c ------------------------------------------- */

static void ew_done(struct dwk *w, int rc)
{
    struct drv *d = w->cl->d;
    if (w->bound != ZKL__NO_DEADLINE && now_of(w) > w->bound && !check_stood(w->cl, w->call_started))
        drv_violation(d, V_DEADLINE,
                      "client %d worker %d: an acquire ended %.3f s after its bound", w->cl->ix,
                      w->id, (double)(now_of(w) - w->bound) / SEC);
    w->bound = ZKL__NO_DEADLINE;
    if (w->prim == PR_HOLDS_ACQ && rc == 0) {
        w->count[w->obj] = 1;
        w->held[w->obj] = w->node;
    }
    prim_done(w, rc);
}

void holds_acquire(struct dwk *w, int obj)
{
    w->obj = obj;
    if (w->count[obj] > 0) {
        /* Reentry: no server traffic. A lost hold must be released first. */
        int rc = node_held(w->held[obj]) ? 0 : ZKL_ELOST;
        if (rc == 0)
            w->count[obj]++;
        prim_done(w, rc);
        return;
    }
    w->prim = PR_HOLDS_ACQ;
    ew_begin(w);
}

/* ---- release and leave: zkl__wait_release, zkl__wait_leave -------------------------- */

static bool releasing(const dnode *n)
{
    uint8_t st = n->cn.st;
    return zkl__cnode_current(&n->cn) &&
           (st == ZKL__N_RELEASING || st == ZKL__N_DELETING || st == ZKL__N_BACKOFF);
}

static void rel_check(struct dwk *w)
{
    dnode *n = w->node;
    struct dcl *c = w->cl;
    int err = w->ew.grace_rc;
    if (err == 0 && releasing(n)) {
        w->phase = W_REL;
        return;
    }
    n->waiter = NULL;
    if (err == 0 && n->cn.st == ZKL__N_HELD && zkl__cnode_current(&n->cn) && n->cn.err != 0) {
        /* The server refused the delete: the node and the hold stay. */
        err = n->cn.err;
        n->cn.err = 0;
        w->phase = W_NONE;
        if (w->prim == PR_HOLDS_REL)
            w->count[w->obj] = 1;
        prim_done(w, err);
        return;
    }
    if (err == 0)
        err = n->cn.st != ZKL__N_GONE ? (c->closing ? ZKL_ECLOSED : ZKL_ELOST) : n->cn.err;
    drv_trace(c->d, "client %d worker %d: release of node %u: %s", c->ix, w->id, n->uid,
              err ? zkl_err_name(err) : "0");
    if (zkl__release_kept(err))
        drv_violation(c->d, V_KEPT,
                      "client %d worker %d: release of node %u says %s, a code that keeps the "
                      "hold, but the node is gone (state %d): the caller keeps a node the engine "
                      "frees",
                      c->ix, w->id, n->uid, zkl_err_name(err), n->cn.st);
    if (zkl__release_kept(err))
        err = ZKL_ELOST; /* the run stops at this step: on as if lost, with no hold kept */
    if (w->prim == PR_HOLDS_REL) {
        w->count[w->obj] = 0;
        w->held[w->obj] = NULL;
    }
    w->node = NULL;
    detach(n);
    prim_done(w, err);
}

void ew_release(struct dwk *w, dnode *n)
{
    struct dcl *c = w->cl;
    w->prim = w->prim == PR_NONE ? PR_REL : w->prim;
    w->node = n;
    w->ew.grace_rc = 0;
    if (!is_held(n))
        w->ew.grace_rc = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
    else
        event(n, ZKL__E_RELEASE);
    n->waiter = &w->wt;
    rel_check(w);
}

void holds_release(struct dwk *w, int obj)
{
    w->obj = obj;
    if (w->count[obj] == 0) {
        prim_done(w, ZKL_ENOTHELD);
        return;
    }
    dnode *n = w->held[obj];
    if (--w->count[obj] > 0 && node_held(n)) {
        prim_done(w, 0);
        return;
    }
    /* Last count, or the hold is lost: the thread's hold ends here, unless
     * the server refuses the delete. */
    w->prim = PR_HOLDS_REL;
    ew_release(w, n);
}

static void leave_check(struct dwk *w)
{
    dnode *n = w->node;
    if (w->ew.grace != 0 && zkl__cnode_current(&n->cn) && !zkl__cnode_settled(&n->cn) &&
        drv_connected(w->cl) && now_of(w) < w->ew.grace) {
        w->phase = W_SETTLE;
        wk_timer(w, w->ew.grace);
        return;
    }
    w->node = NULL;
    detach(n);
    prim_done(w, 0);
}

void ew_leave(struct dwk *w, dnode *n, bool wait)
{
    w->prim = PR_LEAVE;
    w->node = n;
    n->waiter = &w->wt;
    event(n, ZKL__E_LEAVE);
    w->ew.grace = wait ? now_of(w) + GRACE : 0;
    leave_check(w);
}

void wk_sleep(struct dwk *w, int64_t ns)
{
    w->prim = PR_SLEEP;
    w->phase = W_SLEEP;
    w->timer_at = 0;
    wk_timer(w, now_of(w) + (ns > 0 ? ns : 1));
}

/* ---- requests with a deadline: zkl__call ------------------------------------------- */

void wk_call(struct dwk *w, struct dcall *call, int what, const char *path, const char *data,
             int version, bool wait)
{
    struct dcl *c = w->cl;
    *call = (struct dcall){0};
    int err = c->closing ? ZKL_ECLOSED : (c->state == ZKL_STATE_LOST || c->s == NULL) ? ZKL_ELOST : 0;
    if (err == 0) {
        uint32_t i = drv_slot_new(c, SL_CALL);
        c->slots[i].p = w;
        c->slots[i].seq = call->seq = ++c->call_seq;
        uint64_t tag = drv_tag(c, i);
        int len = data ? (int)strlen(data) : 0;
        int rc;
        drv_count_request(c);
        switch (what) {
        case CALL_GET:
            rc = zsim_aget(c->s, path, 0, tag);
            break;
        case CALL_SET:
            rc = zsim_aset(c->s, path, data, len, version, tag);
            break;
        case CALL_CREATE:
            rc = zsim_acreate(c->s, path, data, len, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, tag);
            break;
        default: /* an ancestor: a container, as lock parents are */
            rc = zsim_acreate(c->s, path, "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_CONTAINER, tag);
            break;
        }
        if (rc != ZOK) {
            drv_slot_free(c, i);
            call->seq = 0;
            err = zkl__zk_class(rc);
        }
    }
    if (!wait)
        return;
    w->prim = PR_CALL;
    if (err != 0) {
        call->done = true;
        call->rc = 0;
        prim_done(w, err);
        return;
    }
    w->phase = W_CALL;
    wk_timer(w, w->ew.call_deadline);
}

/* A request's answer, as zkl__get_done records it in its slot. */
void dcall_answer(struct dcall *call, const struct zsim_item *it)
{
    call->done = true;
    call->rc = it->rc;
    call->len = it->rc == ZOK && it->datalen > 0 ? it->datalen : 0;
    if (call->len >= (int)sizeof call->data)
        call->len = (int)sizeof call->data - 1;
    if (call->len > 0)
        memcpy(call->data, it->data, (size_t)call->len);
    call->data[call->len] = '\0';
    call->version = it->rc == ZOK && it->stat ? it->stat->version : -1;
}

void wk_call_answer(struct dwk *w, const struct dslot *sl, const struct zsim_item *it)
{
    struct dcall *call = sl->seq == w->call.seq ? &w->call : sl->seq == w->chk.seq ? &w->chk : NULL;
    if (call == NULL || call->done)
        return; /* the caller gave up on it */
    dcall_answer(call, it);
    if (call == &w->call && w->phase == W_CALL)
        drv_wake(w->cl, &w->wt);
}

/* ---- resuming: the woken thread judges again --------------------------------------- */

void wk_resume(struct dwait *wt)
{
    struct dwk *w = (struct dwk *)wt;
    int64_t now = now_of(w);
    if (!w->busy) {
        /* idle between operations: the next one starts when its pause ends */
        if (w->timer_at != 0 && now >= w->timer_at) {
            w->timer_at = 0;
            wk_start(w);
        }
        return;
    }
    switch (w->phase) {
    case W_SLEEP:
        if (now >= w->timer_at)
            prim_done(w, 0);
        break;
    case W_REOPEN:
        ew_reopen(w);
        break;
    case W_ACQ:
        ew_judge(w);
        break;
    case W_SETTLE:
        if (w->prim == PR_LEAVE)
            leave_check(w);
        else
            ew_settle(w);
        break;
    case W_REL:
        rel_check(w);
        break;
    case W_CALL:
        if (w->call.done)
            prim_done(w, 0);
        else if (w->ew.call_deadline != ZKL__NO_DEADLINE && now >= w->ew.call_deadline) {
            w->call.done = true; /* abandoned: a later answer is ignored */
            w->call.seq = 0;
            prim_done(w, ZKL_ETIMEDOUT);
        }
        break;
    case W_ASYNC:
        wk_flow(w);
        break;
    default:
        break;
    }
}

/* Its timer, or its cancel handle, fired. */
void wk_fire(struct dwk *w)
{
    drv_wake(w->cl, &w->wt);
}
