/* Asynchronous acquires in the simulation, as lib/front/async.c carries
 * out the core's request machine (lib/engine/core/areq.c): a request waits
 * on its node instead of a thread; its node's wake-ups and its timer make
 * the keeper judge it (ZKL__RE_LOOK), and a result is delivered to its
 * callback (ZKL__RE_DELIVER). The steps of the counting semaphore (its
 * gate, the limit, its lease: recipes/semaphore_async.c) and of the
 * multi-lock (a member after the other: recipes/multilock.c) are the
 * recipes' own, reproduced here. The callback holds a random while, then
 * releases (zkl_request_release) and frees the request; a cancel may come
 * at any time (zkl_request_cancel). */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

static int64_t now_of(const struct dreq *r)
{
    return zsim_now(r->cl->d->w);
}

static void aq_timer_at(struct dreq *r, int64_t at)
{
    if (at == ZKL__NO_DEADLINE || at <= 0)
        return;
    if (r->due != 0 && r->due <= at && r->due > now_of(r))
        return;
    r->due = at;
    zsim_timer(r->cl->d->w, NULL, at, DRV_TIMER(r->cl, TM_REQ, r->id, ++r->tgen));
}

static bool is_held(const zkl__cnode *n)
{
    return n != NULL && n->st == ZKL__N_HELD && zkl__cnode_current(n);
}

/* Make and start a node for request r (zkl__async_enqueue, node.c). */
static int enqueue(struct dreq *r, int path, const zkl__policy *pol, const void *arg,
                   const char *kind, const zkl__cnode *within, bool try_once, dnode **out)
{
    struct dcl *c = r->cl;
    int err = c->closing                                    ? ZKL_ECLOSED
              : c->state == ZKL_STATE_LOST || c->s == NULL ? ZKL_ELOST
              : c->cancelled                                ? ZKL_ECANCELED
                                                            : 0;
    if (err == 0 && within != NULL && !is_held(within))
        err = ZKL_ELOST;
    if (err != 0)
        return err;
    dnode *n = drv_node_new(c, path);
    zkl__cnode_opts co = {.pol = pol, .arg = arg, .dir = drv_paths[path], .kind = kind,
                          .prefetch = r->kind == AQ_BURST && (r->id & 1),
                          .try_once = try_once};
    if ((err = zkl__cnode_init(c->core, &n->cn, &co)) != 0) {
        free(n);
        return err;
    }
    n->waiter = &r->wt;
    drv_trace(c->d, "client %d request %d: node %u on %s (%s)", c->ix, r->id, n->uid,
              drv_paths[path], zkl__cnode_kind(&n->cn));
    zkl__cnode_start(&n->cn, now_of(r));
    *out = n;
    return 0;
}

/* ---- the recipes' steps --------------------------------------------------------------- */

static void fill_ask(struct dreq *r)
{
    struct dcl *c = r->cl;
    if (c->s == NULL) {
        r->lim_rc = ZKL_ELOST;
        return;
    }
    uint32_t i = drv_slot_new(c, SL_ASYNC_FILL);
    c->slots[i].id = r->id;
    c->slots[i].seq = r->fill_seq = ++c->call_seq;
    drv_count_request(c);
    int rc = zsim_aget(c->s, drv_paths[P_SEM], 0, drv_tag(c, i));
    if (rc != ZOK) {
        drv_slot_free(c, i);
        r->lim_rc = zkl__zk_class(rc);
    }
}

/* The answers of zkl__znode_fill_start's read and conditional write. */
void aq_fill_answer(struct dreq *r, const struct dslot *sl, const struct zsim_item *it)
{
    if (sl->seq == 0) {
        aq_call_answer(r, sl, it); /* the limit read sent ahead of the gate */
        return;
    }
    if (sl->seq != r->fill_seq)
        return; /* dropped: the answer only frees */
    struct dcl *c = r->cl;
    if (it->req == ZSIM_REQ_GET) {
        if (it->rc == ZOK && it->datalen > 0) {
            r->lim = zkl__semaphore_parse_limit(it->data, it->datalen) == SEM_MAX ? 2 : 1;
            if (r->lim != 2)
                r->lim_rc = ZKL_EMISMATCH;
        } else if (it->rc == ZOK && c->s != NULL) {
            uint32_t i = drv_slot_new(c, SL_ASYNC_FILL);
            c->slots[i].id = r->id;
            c->slots[i].seq = r->fill_seq;
            drv_count_request(c);
            int rc = zsim_aset(c->s, drv_paths[P_SEM], SEM_DATA, (int)strlen(SEM_DATA),
                               it->stat ? it->stat->version : -1, drv_tag(c, i));
            if (rc != ZOK) {
                drv_slot_free(c, i);
                r->lim_rc = zkl__zk_class(rc);
            } else {
                return;
            }
        } else {
            r->lim_rc = it->rc == ZOK ? ZKL_ELOST : zkl__zk_class(it->rc);
        }
    } else if (it->rc == ZOK) {
        r->lim = 2;
    } else if ((it->rc == ZBADVERSION || it->rc == ZNONODE) && ++r->fill_tries < 20) {
        fill_ask(r); /* someone wrote first: read theirs */
        if (r->lim_rc == 0)
            return;
    } else {
        r->lim_rc = zkl__zk_class(it->rc);
    }
    drv_wake(c, &r->wt); /* zkl__async_poke */
}

void aq_call_answer(struct dreq *r, const struct dslot *sl, const struct zsim_item *it)
{
    (void)sl;
    if (!r->chk.done)
        dcall_answer(&r->chk, it);
}

/* What the recipe does once the request's node holds (zkl__async_step's
 * held): 0 (with *next, or deliver), 1 (an answer is awaited), a code. */
static int step_held(struct dreq *r, zkl__cnode *n, zkl__cnode **next)
{
    if (r->kind == AQ_MULTI) {
        if (++r->step == 2)
            return 0; /* the last member holds: all do */
        dnode *b;
        int rc = enqueue(r, P_B, &zkl__lock_policy, NULL, NULL, NULL,
                         r->m.n->patience != ZKL__P_DEADLINE, &b);
        if (rc == 0)
            *next = &b->cn;
        return rc;
    }
    /* the semaphore: the gate holds */
    if (r->lease != NULL && &r->lease->cn == n)
        return 0;
    if (r->lim_rc != 0)
        return r->lim_rc;
    if (r->lim == 0) {
        int limit = r->chk.done && r->chk.rc == ZOK
                        ? zkl__semaphore_parse_limit(r->chk.data, r->chk.len) : 0;
        r->chk.done = true; /* dropped */
        if (limit != 0 && limit != SEM_MAX)
            return ZKL_EMISMATCH;
        if (limit == SEM_MAX) {
            r->lim = 2;
        } else {
            r->lim = 1;
            fill_ask(r); /* sent now: the gate holds in the live session */
            return r->lim_rc != 0 ? r->lim_rc : 1;
        }
    }
    if (r->lim != 2)
        return 1;
    dnode *lease;
    int rc = enqueue(r, P_SEM, &zkl__lease_policy, &r->ga, r->kind_s, n,
                     r->m.n->patience != ZKL__P_DEADLINE, &lease);
    if (rc != 0)
        return rc;
    r->lease = lease;
    *next = &lease->cn;
    return 0;
}

/* ---- the machine's actions: lib/front/async.c's act ----------------------------------- */

static void event(zkl__cnode *n, enum zkl__ev_type type, int64_t now)
{
    zkl__cnode_on(n, &(zkl__event){.type = type, .now = now});
}

static int act(void *ctx, const zkl__ract *x)
{
    struct dreq *r = ctx;
    int64_t now = now_of(r);
    switch (x->type) {
    case ZKL__RA_STEP:
        return step_held(r, x->n, x->next);
    case ZKL__RA_TAKE:
        event(x->n, ZKL__E_TAKEN, now);
        return 0;
    case ZKL__RA_LEAVE:
        event(x->n, ZKL__E_LEAVE, now);
        break;
    case ZKL__RA_DETACH:
        ((dnode *)x->n)->waiter = NULL;
        event(x->n, ZKL__E_DETACH, now);
        break;
    case ZKL__RA_READY:
        r->ready = true;
        drv_wake(r->cl, &r->wt);
        break;
    case ZKL__RA_UNREADY:
        r->ready = false;
        break;
    case ZKL__RA_TIMER:
        aq_timer_at(r, x->at);
        break;
    case ZKL__RA_LOOK:
        drv_wake(r->cl, &r->wt);
        break;
    default:
        break;
    }
    return 0;
}

static void unlist(struct dreq *r)
{
    for (struct dreq **p = &r->cl->reqs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
}

/* zkl_request_free, and the worker hears that its request is done. */
void aq_free(struct dreq *r)
{
    struct drv *d = r->cl->d;
    for (int i = 0; i < 2; i++)
        if (r->hold[i] && r->hold[i]->live)
            check_end(d, r->hold[i], "request freed");
    zkl__areq_on(&r->m, ZKL__RE_FREE, now_of(r), act, r);
    r->freed = true;
    unlist(r);
    drv_unwake(r->cl, &r->wt);
    struct dwk *w = r->wk;
    if (w != NULL) {
        w->nreqs--;
        drv_wake(r->cl, &w->wt);
    }
    free(r);
}

/* The callback: the request's result. */
static void callback(struct dreq *r, int result)
{
    struct drv *d = r->cl->d;
    int64_t now = now_of(r);
    drv_trace(d, "client %d request %d: callback %s", r->cl->ix, r->id,
              result ? zkl_err_name(result) : "held");
    if (!r->delivered_held) {
        check_acquire_end(d, r->cl, r->started, r->bound, result, 0, "asynchronous acquire");
        if (result != 0) {
            d->failures++;
            aq_free(r);
            return;
        }
        d->acquisitions++;
        r->delivered_held = true;
        static const enum hkind kinds[] = {[AQ_MUTEX] = HK_EXCL, [AQ_READ] = HK_READ,
                                           [AQ_WRITE] = HK_WRITE, [AQ_SEM] = HK_LEASE,
                                           [AQ_MULTI] = HK_EXCL, [AQ_BURST] = HK_EXCL};
        dnode *n = (dnode *)r->m.n;
        if (r->kind == AQ_MULTI)
            check_grant(d, (dnode *)r->m.kept[0], 1000 + r->id, HK_EXCL, 0);
        check_grant(d, n, 1000 + r->id, kinds[r->kind], r->kind == AQ_SEM ? r->ga.need : 0);
        r->hold[0] = ((dnode *)r->m.n)->hold;
        r->hold[1] = r->kind == AQ_MULTI ? ((dnode *)r->m.kept[0])->hold : NULL;
        r->due = 0;
        aq_timer_at(r, r->release_at = now + r->release_at);
        return;
    }
    /* delivered held before: its loss is told (ZKL__R_LOSING) */
    d->losses++;
    for (int i = 0; i < 2; i++)
        if (r->hold[i] && r->hold[i]->live)
            check_end(d, r->hold[i], "its loss told");
    r->release_at = now; /* it lets go at once */
    r->due = 0;
    aq_timer_at(r, now);
}

/* The keeper's judge_all and delivery, for one request. */
static void run(struct dwait *wt)
{
    struct dreq *r = (struct dreq *)((char *)wt - offsetof(struct dreq, wt));
    int64_t now = now_of(r);
    if (r->m.st != ZKL__R_READY && r->m.st < ZKL__R_LOSING)
        zkl__areq_on(&r->m, ZKL__RE_LOOK, now, act, r);
    if (r->ready) {
        r->ready = false;
        if (zkl__areq_on(&r->m, ZKL__RE_DELIVER, now, act, r) == 1) {
            if (r->kind == AQ_LATCH)
                latch_result(r, r->m.result); /* recipes/latch.c's request_done */
            else
                callback(r, r->m.result);
        }
    }
}

void aq_timer(struct dreq *r, uint32_t gen)
{
    if (gen != (r->tgen & 0xffffff))
        return;
    int64_t now = now_of(r);
    r->due = 0;
    if (r->cancel_at != 0 && now >= r->cancel_at) {
        r->cancel_at = 0;
        int rc = zkl__areq_on(&r->m, ZKL__RE_CANCEL, now, act, r);
        drv_trace(r->cl->d, "client %d request %d: cancel: %s", r->cl->ix, r->id,
                  rc ? zkl_err_name(rc) : "0");
    }
    if (r->delivered_held && now >= r->release_at) {
        for (int i = 0; i < 2; i++)
            if (r->hold[i] && r->hold[i]->live)
                check_end(r->cl->d, r->hold[i], "release");
        int rc = zkl__areq_on(&r->m, ZKL__RE_RELEASE, now, act, r);
        drv_trace(r->cl->d, "client %d request %d: release: %s", r->cl->ix, r->id,
                  rc ? zkl_err_name(rc) : "0");
        struct dcl *c = r->cl;
        aq_free(r);
        drv_run_woken(c);
        return;
    }
    struct dcl *c = r->cl;
    int id = r->id;
    run(&r->wt);
    if (aq_by_id(c, id) != r)
        return; /* its failure's callback freed it */
    if (r->cancel_at != 0)
        aq_timer_at(r, r->cancel_at);
    if (r->delivered_held)
        aq_timer_at(r, r->release_at);
    else if (r->m.st == ZKL__R_PENDING || r->m.st == ZKL__R_CLEANING) {
        /* Judged at its deadline and still waiting: lib/front/async.c's
         * keeper would take that deadline for its next wake-up and look
         * at it again at once, without end (a step's answer that outwaited
         * the deadline did). Here it is looked at a millisecond later,
         * lest virtual time stand still. */
        if (r->m.deadline <= now)
            drv_violation(c->d, V_SPIN,
                          "client %d request %d: still %s at its deadline: the keeper would "
                          "wake for it again at once, without end",
                          c->ix, id, r->m.st == ZKL__R_PENDING ? "pending" : "cleaning");
        aq_timer_at(r, r->m.deadline > now ? r->m.deadline : now + MS);
    }
}

struct dreq *aq_by_id(struct dcl *c, int id)
{
    for (struct dreq *r = c->reqs; r; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

static struct dreq *start(struct dcl *c, struct dwk *w, int kind, long timeout_ms,
                          int64_t hold_ns, int64_t cancel_ns);

/* zkl__async_start_steps, for one recipe's asynchronous acquire. */
struct dreq *aq_start(struct dwk *w, int kind, long timeout_ms, int64_t hold_ns, int64_t cancel_ns)
{
    return start(w->cl, w, kind, timeout_ms, hold_ns, cancel_ns);
}

/* A latch's request (recipes/latch.c's take_part): no deadline, its loss
 * told through its callback, no worker. */
struct dreq *aq_start_latch(struct dcl *c)
{
    return start(c, NULL, AQ_LATCH, -1, 0, -1);
}

/* One of a swarm's requests (the watches world): no worker, no cancel. */
struct dreq *aq_start_swarm(struct dcl *c, int kind, long timeout_ms, int64_t hold_ns)
{
    return start(c, NULL, kind, timeout_ms, hold_ns, -1);
}

static struct dreq *start(struct dcl *c, struct dwk *w, int kind, long timeout_ms,
                          int64_t hold_ns, int64_t cancel_ns)
{
    struct drv *d = c->d;
    int64_t now = zsim_now(d->w);
    struct dreq *r = calloc(1, sizeof *r);
    if (r == NULL)
        abort();
    r->cl = c;
    r->wk = w;
    r->id = ++d->req_ids & 0xffff;
    r->kind = kind;
    r->wt.run = run;
    r->started = now;
    bool try_once = timeout_ms == 0;
    int64_t deadline = try_once       ? now + (int64_t)c->timeout_ms * MS
                       : timeout_ms < 0 ? ZKL__NO_DEADLINE
                                        : now + (int64_t)timeout_ms * MS;
    r->bound = deadline == ZKL__NO_DEADLINE ? ZKL__NO_DEADLINE : deadline + ZKL__GRACE_NS;
    static const int paths[] = {[AQ_MUTEX] = P_A, [AQ_READ] = P_RW, [AQ_WRITE] = P_RW,
                                [AQ_SEM] = P_SEM, [AQ_MULTI] = P_A, [AQ_BURST] = P_Q,
                                [AQ_LATCH] = P_LATCH};
    const zkl__policy *pol = kind == AQ_READ    ? &zkl__read_policy
                             : kind == AQ_WRITE ? &zkl__write_policy
                             : kind == AQ_SEM   ? &zkl__gate_policy
                             : kind == AQ_LATCH ? &zkl__latch_policy
                                                : &zkl__lock_policy;
    r->path = paths[kind];
    if (kind == AQ_SEM) {
        r->ga = (struct zkl__gate_arg){SEM_MAX, 1 + (r->id % 2)};
        zkl__lease_kind(r->kind_s, sizeof r->kind_s, r->ga.need);
        /* the limit read, sent before the gate */
        if (c->s != NULL && !c->closing && c->state != ZKL_STATE_LOST) {
            uint32_t i = drv_slot_new(c, SL_ASYNC_FILL);
            c->slots[i].id = r->id; /* seq 0: the read ahead (aq_fill_answer) */
            drv_count_request(c);
            r->chk.seq = 1;
            if (zsim_aget(c->s, drv_paths[P_SEM], 0, drv_tag(c, i)) != ZOK) {
                drv_slot_free(c, i);
                r->chk.done = true;
            }
        } else {
            r->chk.done = true;
        }
    }
    dnode *n;
    int rc = c->closing ? ZKL_ECLOSED
                        : enqueue(r, r->path, pol, kind == AQ_SEM ? (const void *)&r->ga : NULL,
                                  NULL, NULL, try_once, &n);
    if (rc != 0) {
        drv_trace(d, "client %d %s %d: asynchronous acquire refused: %s", c->ix,
                  w ? "worker" : "latch", w ? w->id : 0, zkl_err_name(rc));
        d->failures++;
        r->freed = true;
        drv_unwake(c, &r->wt);
        free(r); /* its limit read's answer, if any, finds no request */
        return NULL;
    }
    bool stepped = kind == AQ_SEM || kind == AQ_MULTI;
    zkl__areq_init(&r->m, &n->cn, r->kept, deadline, stepped, kind == AQ_MULTI, true);
    r->release_at = hold_ns;
    r->cancel_at = cancel_ns >= 0 ? now + cancel_ns : 0;
    r->next = c->reqs;
    c->reqs = r;
    if (w != NULL)
        w->nreqs++;
    aq_timer_at(r, deadline);
    if (r->cancel_at)
        aq_timer_at(r, r->cancel_at);
    drv_wake(c, &r->wt); /* what happened before the machine knew its node */
    return r;
}

/* The client closes: every pending request is told ZKL_ECLOSED (on_close). */
void aq_close_all(struct dcl *c)
{
    for (struct dreq *r = c->reqs; r; r = r->next)
        drv_wake(c, &r->wt);
}

/* The client's memory goes: requests still there are freed. */
void aq_free_all(struct dcl *c)
{
    while (c->reqs) {
        struct dreq *r = c->reqs;
        r->wk = NULL;
        aq_free(r);
    }
}
