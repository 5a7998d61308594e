/* A client's leader latch in the simulation. Its policy ("latch-",
 * zkl__latch_policy) is the library's own, on the real core, through the
 * asynchronous request machine (drv_async.c); what recipes/latch.c does
 * above the engine is reproduced here step for step: take part with a new
 * node when it has none (at its start, on a new session, when its node's
 * request ended), lead only on a held node of the current session (the
 * CURATOR-696 rule), tell the listener once per change, leave on close.
 * A leadership, from the listener's 1 to its 0, is a hold of P_LATCH, so
 * drv_check.c's holders, told, expired and token invariants apply: at most
 * one latch believes it leads outside the loss window. And here:
 *
 *   pred    a latch's node watches the node just before its own: when the
 *           watch is sent, none of the leader's children sorts between
 *           the two (nodes only go, and later ones sort after its own);
 *   absent  once everything settled, every started latch of a connected
 *           client takes part with a node of its current session on the
 *           leader, and the latch of the first node leads;
 *   session when its listener hears 1, the latch's node is of the client's
 *           current session (its ephemeral owner, as the server said), and
 *           the client is not between sessions (the CURATOR-696 rule).
 *
 * The library runs a request's callback after the core delivered its
 * result, on another thread than the one that hears the session's
 * events: a held result's callback runs here up to 30 ms after its
 * delivery, while the world goes on, and before any later result. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

static int64_t now_of(const struct dcl *c)
{
    return zsim_now(c->d->w);
}

static void latch_timer_at(struct dcl *c, int64_t at)
{
    zsim_timer(c->d->w, NULL, at, DRV_TIMER(c, TM_LATCH, 0, ++c->latch.tgen));
}

/* Three clients in four run a latch: it joins a while after it opens,
 * leaves a while later, joins again, and so on. */
void latch_begin(struct dcl *c)
{
    if (zsim_below(c->d->w, 4) != 0)
        latch_timer_at(c, now_of(c) + 1 + (int64_t)zsim_below(c->d->w, 2 * SEC));
}

/* The listener hears `leader` if that is news: a leadership is a hold of
 * the node it leads on. */
static void tell(struct dcl *c, int leader)
{
    struct dlatch *l = &c->latch;
    if (l->told == leader)
        return;
    l->told = leader;
    drv_trace(c->d, "client %d latch: the listener hears %d", c->ix, leader);
    if (leader && l->lead != NULL) {
        dnode *n = (dnode *)l->lead->m.n;
        if (c->state == ZKL_STATE_LOST || c->sid == 0 || n->owner != c->sid ||
            n->cn.gen != c->gen)
            drv_violation(c->d, V_SESSION,
                          "client %d's latch leads on node %u, of session 0x%llx, while its "
                          "session is 0x%llx (state %d)",
                          c->ix, n->uid, (unsigned long long)n->owner,
                          (unsigned long long)c->sid, c->state);
        check_grant(c->d, n, 1000 + l->lead->id, HK_EXCL, 0);
        l->lead->hold[0] = n->hold;
        return;
    }
    for (struct dhold *h = c->d->holds; h; h = h->next)
        if (h->cl == c && h->path == P_LATCH) {
            check_end(c->d, h, "its listener hears 0");
            break;
        }
}

/* take_part: a new node if the latch has none. Refused between sessions
 * (ZKL_ELOST): the next session's listener call starts it. */
static void take_part(struct dcl *c)
{
    struct dlatch *l = &c->latch;
    if (!l->started || l->cur != NULL || l->err != 0)
        return;
    int rc = c->closing                                    ? ZKL_ECLOSED
             : c->state == ZKL_STATE_LOST || c->s == NULL ? ZKL_ELOST
             : c->cancelled                                ? ZKL_ECANCELED
                                                           : 0;
    struct dreq *r = rc == 0 ? aq_start_latch(c) : NULL;
    if (r == NULL) {
        if (rc != ZKL_ELOST)
            l->err = rc != 0 ? rc : ZKL_ENOMEM;
        return;
    }
    l->cur = r;
    l->cur_sid = c->sid;
    l->joins++;
    drv_trace(c->d, "client %d latch: takes part with request %d", c->ix, r->id);
}

/* zkl__request_on_session: held, its node held, on the current session by
 * the node's ephemeral owner. */
static bool on_session(const struct dreq *r)
{
    const struct dcl *c = r->cl;
    const dnode *n = (const dnode *)r->m.n;
    return r->m.st == ZKL__R_HELD && n != NULL && c->state != ZKL_STATE_LOST && c->sid != 0 &&
           n->owner == c->sid && n->cn.st == ZKL__N_HELD && zkl__cnode_current(&n->cn);
}

/* request_done: a latch request's result. */
static void latch_done(struct dreq *r, int result)
{
    struct dcl *c = r->cl;
    struct dlatch *l = &c->latch;
    drv_trace(c->d, "client %d latch request %d: callback %s", c->ix, r->id,
              result ? zkl_err_name(result) : "held");
    int say = -1;
    bool ended = false, drop = false;
    if (result == 0 && r == l->cur && on_session(r)) {
        ended = l->lead != NULL;
        l->lead = r;
        say = 1;
    } else {
        if (r == l->lead)
            say = 0;
        drop = true;
        /* A node the handle refused for its session (expired, not yet
         * heard of): the library takes part again on the next session
         * (on_state), not on this one, where a node would be refused at
         * once too, and again. */
        bool parked = result == ZKL_ELOST && zkl__zk_session_error(r->m.zk_rc) && c->sid != 0 &&
                      l->cur == r && l->cur_sid == c->sid;
        if (l->cur == r)
            l->cur = NULL;
        if (l->lead == r)
            l->lead = NULL;
        if (result == ZKL_ECLOSED || result == ZKL_ENOAUTH || result == ZKL_ENOMEM ||
            result == ZKL_EZK || result == ZKL_ECANCELED || result == ZKL_EQUEUE)
            l->err = result;
        /* Its node is gone: take part again, from the keeper's next turn
         * (the library does so at once, on the thread that runs callbacks;
         * here the world takes its steps between). */
        if (!parked)
            zsim_timer(c->d->w, NULL, now_of(c) + MS, DRV_TIMER(c, TM_LATCH, 1, 0));
    }
    if (ended)
        tell(c, 0); /* an earlier leadership ends before this one begins */
    if (say >= 0)
        tell(c, say);
    if (drop)
        aq_free(r);
}

/* The held results waiting for their callbacks, in order. */
static void run_held(struct dcl *c)
{
    struct dlatch *l = &c->latch;
    while (l->nheld > 0) {
        struct dreq *r = l->held[0];
        memmove(l->held, l->held + 1, (size_t)--l->nheld * sizeof l->held[0]);
        latch_done(r, 0);
    }
}

/* A result the core delivered: a held one's callback runs a while later
 * (or before the next result), any other's now. */
void latch_result(struct dreq *r, int result)
{
    struct dcl *c = r->cl;
    struct dlatch *l = &c->latch;
    if (result == 0 && l->nheld < (int)(sizeof l->held / sizeof l->held[0])) {
        l->held[l->nheld++] = r;
        zsim_timer(c->d->w, NULL, now_of(c) + 1 + (int64_t)zsim_below(c->d->w, 30 * MS),
                   DRV_TIMER(c, TM_LATCH, 2, 0));
        return;
    }
    int id = r->id;
    run_held(c);
    if (aq_by_id(c, id) == r) /* its own held callback may have let it go */
        latch_done(r, result);
}

/* on_state: a new session is the cue to take part again with a node of
 * that session; a request of an earlier one can no longer lead. */
void latch_session(struct dcl *c)
{
    struct dlatch *l = &c->latch;
    if (!l->started || c->state != ZKL_STATE_CONNECTED)
        return;
    if (l->cur != NULL && l->cur_sid != c->sid)
        l->cur = NULL;
    take_part(c);
}

/* zkl_latch_close: the listener hears 0; a held node is released, a
 * pending one given up (the engine deletes both). */
void latch_close(struct dcl *c)
{
    struct dlatch *l = &c->latch;
    drv_trace(c->d, "client %d latch: close", c->ix);
    l->started = false;
    l->cur = l->lead = NULL;
    l->nheld = 0; /* their requests go now */
    tell(c, 0);
    l->err = 0;
    for (struct dreq *r = c->reqs; r;) {
        if (r->kind != AQ_LATCH) {
            r = r->next;
            continue;
        }
        aq_free(r);
        r = c->reqs;
    }
    drv_run_woken(c);
}

void latch_timer(struct dcl *c, int who, uint32_t gen)
{
    struct dlatch *l = &c->latch;
    if (who == 1) {
        take_part(c);
        return;
    }
    if (who == 2) {
        run_held(c);
        return;
    }
    if (gen != (l->tgen & 0xffffff) || c->d->settling || c->closing || c->retiring)
        return;
    if (l->started) {
        latch_close(c);
        latch_timer_at(c, now_of(c) + 1 + (int64_t)zsim_below(c->d->w, 3 * SEC));
        return;
    }
    if (!c->started) {
        /* zkl_client_open has not returned: the program has no client yet */
        latch_timer_at(c, now_of(c) + 100 * MS);
        return;
    }
    drv_trace(c->d, "client %d latch: start", c->ix);
    l->started = true;
    l->err = 0;
    take_part(c);
    latch_timer_at(c, now_of(c) + SEC / 2 + (int64_t)zsim_below(c->d->w, 8 * SEC));
}

/* ---- its invariants ---------------------------------------------------------------- */

struct between {
    long long lo, hi;
    char found[DRV_NAME];
};

static void between_one(void *arg, const char *name)
{
    struct between *b = arg;
    long long s = zsim_latch_seq(name);
    if (b->found[0] == '\0' && s > b->lo && s < b->hi)
        snprintf(b->found, sizeof b->found, "%s", name);
}

void latch_check_ahead(struct drv *d, const dnode *n, const char *ahead)
{
    const char *slash = strrchr(ahead, '/');
    struct between b = {zsim_latch_seq(slash ? slash + 1 : ahead), zsim_latch_seq(n->name), ""};
    if (b.lo < 0 || b.hi < 0)
        return;
    zsim_truth_children(d->w, drv_paths[P_LATCH], between_one, &b);
    if (b.found[0] != '\0')
        drv_violation(d, V_PRED,
                      "client %d: latch node %u (%s) watches %s, but %s, between the two, "
                      "exists on the leader",
                      n->cl->ix, n->uid, n->name, ahead, b.found);
}

/* The node of the latch's current request, taking part: nothing for the
 * settled world to wait for. */
bool latch_node_settled(const struct dcl *c, const dnode *n)
{
    const struct dreq *r = c->latch.cur;
    return n->path == P_LATCH && r != NULL && (const dnode *)r->m.n == n &&
           (n->cn.st == ZKL__N_QUEUED || n->cn.st == ZKL__N_HELD);
}

/* The node named `name` is the one the latch takes part with. */
bool latch_takes_part(const struct dcl *c, const char *name)
{
    const struct dreq *r = c->latch.cur;
    return c->latch.started && r != NULL && r->m.n != NULL &&
           strcmp(((const dnode *)r->m.n)->name, name) == 0;
}

struct first {
    long long seq;
    char name[DRV_NAME];
};

static void first_one(void *arg, const char *name)
{
    struct first *f = arg;
    long long s = zsim_latch_seq(name);
    if (s >= 0 && (f->seq < 0 || s < f->seq)) {
        f->seq = s;
        snprintf(f->name, sizeof f->name, "%s", name);
    }
}

/* Settled as far as the latch goes: it takes part with one request, whose
 * node leads (told) if it is first on the leader, or waits; or it has
 * dropped out with nothing under way, which latch_check_quiet reports. */
bool latch_settled(const struct dcl *c, char *why, size_t size)
{
    const struct dlatch *l = &c->latch;
    int others = 0;
    for (const struct dreq *r = c->reqs; r; r = r->next)
        others += r->kind == AQ_LATCH && r != l->cur;
    if (others > 0) {
        snprintf(why, size, "client %d: a latch request of an earlier node still runs", c->ix);
        return false;
    }
    if (!l->started || l->cur == NULL)
        return true;
    const dnode *n = (const dnode *)l->cur->m.n;
    if (n == NULL || n->name[0] == '\0' || !latch_node_settled(c, n)) {
        snprintf(why, size, "client %d: its latch's node is not taking part yet", c->ix);
        return false;
    }
    struct first f = {-1, ""};
    zsim_truth_children(c->d->w, drv_paths[P_LATCH], first_one, &f);
    bool first = strcmp(f.name, n->name) == 0;
    if (first != (l->lead == l->cur && l->told == 1)) {
        snprintf(why, size, "client %d: its latch %s", c->ix,
                 first ? "is first and not told it leads" : "leads and is not first");
        return false;
    }
    return true;
}

void latch_check_quiet(struct drv *d)
{
    for (int i = 0; i < d->nclients && !d->violated; i++) {
        const struct dcl *c = d->cl[i];
        if (c == NULL || !c->latch.started || c->latch.err != 0)
            continue; /* stopped by an error: zkl_latch_await says which */
        const struct dlatch *l = &c->latch;
        const dnode *n = l->cur ? (const dnode *)l->cur->m.n : NULL;
        char path[ZKL__MAX_PATH + 96] = "";
        struct zsim_stat st;
        if (n != NULL)
            snprintf(path, sizeof path, "%s/%s", drv_paths[P_LATCH], n->name);
        if (n == NULL || zsim_truth_stat(d->w, path, &st) != ZOK || st.ephemeralOwner != c->sid)
            drv_violation(d, V_ABSENT,
                          "client %d's latch (started, %d nodes so far%s%s) takes no part in "
                          "the election in its live session",
                          c->ix, l->joins, l->err ? ", stopped by " : "",
                          l->err ? zkl_err_name(l->err) : "");
    }
}
