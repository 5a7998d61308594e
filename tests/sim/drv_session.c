/* A client's session in the simulation, as lib/session/ keeps it: the
 * states its watcher records (client.c's session_watcher), the keeper's
 * keepalive and loss rule (keeper.c, with the library's own
 * zkl__loss_at), giving a session up, closing the old handle and opening
 * the next one, and the client's cancel and close. What the session tells
 * the engine goes to the core as lib/engine/engine.c's listener passes it. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

bool drv_connected(const struct dcl *c)
{
    return c->state == ZKL_STATE_CONNECTED || c->state == ZKL_STATE_RECONNECTED;
}

static int64_t now_of(const struct dcl *c)
{
    return zsim_now(c->d->w);
}

/* Wake every waiter of the client: the listener's wake_all (engine.c), and
 * the threads that wait on the client's condition variable. */
void drv_wake_all(struct dcl *c)
{
    if (c->cancelled)
        zkl__core_cancel(c->core);
    zkl__core_connection(c->core, drv_connected(c), now_of(c));
    for (int i = 0; i < c->nwk; i++)
        drv_wake(c, &c->wk[i].wt);
    for (struct dreq *r = c->reqs; r; r = r->next)
        drv_wake(c, &r->wt);
}

/* The session ended, or the client closes: the listener's on_session_end. */
static void session_end(struct dcl *c)
{
    int64_t now = now_of(c);
    zkl__core_session(c->core, c->gen, c->sid, c->closing, now);
    zkl__core_connection(c->core, drv_connected(c), now);
    drv_wake_all(c);
}

/* The time faults on the client's handles, as they stand now. */
void drv_hold(struct dcl *c)
{
    int64_t now = now_of(c);
    bool paused = now < c->paused_until, held = paused || now < c->blocked_until;
    zsim_session *s[2] = {c->s, c->old};
    for (int i = 0; i < 2; i++)
        if (s[i] != NULL)
            zsim_hold(s[i], held, paused);
}

void drv_keeper_kick(struct dcl *c, int64_t at)
{
    if (at > 0 && now_of(c) < c->late_until)
        at += c->late_ns; /* the keeper's thread is late */
    if (at <= 0 || (c->keeper_at != 0 && c->keeper_at <= at && c->keeper_at > now_of(c)))
        return;
    c->keeper_at = at;
    zsim_timer(c->d->w, NULL, at, DRV_TIMER(c, TM_KEEPER, 0, ++c->kgen));
}

/* zkl__client_start_handle: a new handle that starts connecting now. */
void drv_session_start(struct dcl *c)
{
    c->handle_started = now_of(c);
    c->s = zsim_session_new(c->d->w, c->timeout_ms, DRV_SESSION_WATCHER(c));
    struct sinfo *si = drv_sinfo(c->d, zsim_session_index(c->s));
    si->owner = c;
    si->s = c->s;
    drv_hold(c);
    drv_trace(c->d, "client %d: new handle, session %d", c->ix, zsim_session_index(c->s));
}

void drv_session_event(struct dcl *c, zsim_session *s, int state)
{
    /* The registry finds the client by its live handle only. */
    if (s != c->s || c->closing)
        return;
    int64_t now = now_of(c);
    if (state == ZSIM_CONNECTED_STATE) {
        int64_t sid = zsim_session_id(s);
        c->negotiated_ms = zsim_recv_timeout(s);
        if (sid != c->sid) {
            /* A new session: nodes of any earlier one are not ours. */
            if (c->sid != 0)
                c->gen++;
            c->sid = sid;
            c->last_ok = c->handle_started; /* created after the handle started */
            c->state = ZKL_STATE_CONNECTED;
        } else {
            c->state = c->state == ZKL_STATE_SUSPENDED ? ZKL_STATE_RECONNECTED
                                                        : ZKL_STATE_CONNECTED;
        }
        c->ka_next = 0; /* a keepalive at once */
        check_rate_up(c);
        drv_trace(c->d, "client %d: %s, session %d (gen %llu)", c->ix,
                  c->state == ZKL_STATE_CONNECTED ? "connected" : "reconnected",
                  zsim_session_index(s), (unsigned long long)c->gen);
        zkl__core_session(c->core, c->gen, c->sid, c->closing, now);
        zkl__core_connection(c->core, true, now);
        drv_wake_all(c); /* wait_reopened's waiters, and stalled ones */
        drv_keeper_kick(c, now);
        latch_session(c); /* the client's state listeners */
        if (!c->started) {
            /* zkl_client_open returned: the program's threads begin */
            c->started = true;
            for (int i = 0; i < c->nwk; i++) {
                c->wk[i].timer_at = 0;
                wk_timer(&c->wk[i], now + 1 + (int64_t)zsim_below(c->d->w, 100 * MS));
            }
        }
    } else if (state == ZSIM_CONNECTING_STATE) {
        if (c->state != ZKL_STATE_SUSPENDED && c->state != ZKL_STATE_CONNECTING &&
            c->state != ZKL_STATE_LOST) {
            c->state = ZKL_STATE_SUSPENDED;
            drv_trace(c->d, "client %d: suspended", c->ix);
            drv_wake_all(c); /* a try once stops waiting */
        }
    } else if (state == ZSIM_EXPIRED_SESSION_STATE) {
        /* Every node of the session is gone on the server. */
        c->gen++;
        c->sid = 0;
        c->last_ok = 0;
        c->state = ZKL_STATE_LOST;
        drv_trace(c->d, "client %d: session expired (gen %llu)", c->ix,
                  (unsigned long long)c->gen);
        session_end(c);
        c->need_reopen = true;
        drv_keeper_kick(c, now);
    }
}

/* ---- the keeper: keepalive and the loss rule (lib/session/keeper.c) ------------- */

void drv_keepalive_done(struct dcl *c, const struct dslot *sl, const struct zsim_item *it)
{
    unsigned k = (unsigned)(sl->seq % 16);
    if (c->ka_ring[k].seq != sl->seq || c->ka_ring[k].sent == 0)
        return;
    int64_t sent = c->ka_ring[k].sent;
    uint64_t gen = c->ka_ring[k].gen;
    c->ka_ring[k].sent = 0;
    if (c->ka_sent == sent)
        c->ka_sent = 0;
    /* Any answer of the server's is a touch; a system error is none. */
    if (gen == c->gen && c->sid != 0 && (it->rc == ZOK || it->rc == ZNONODE) && sent > c->last_ok)
        c->last_ok = sent;
}

static void keepalive_maybe_send(struct dcl *c)
{
    int64_t now = now_of(c);
    if (c->closing || c->need_reopen || c->negotiated_ms <= 0 || now < c->ka_next ||
        !drv_connected(c))
        return;
    int64_t every = zkl__keepalive_ns(c->negotiated_ms);
    c->ka_next = now + every;
    /* One in flight at a time; one never answered within a period is
     * forgotten (its answer, if any, still counts). */
    if (c->ka_sent != 0 && now - c->ka_sent < every)
        return;
    uint64_t seq = ++c->ka_seq;
    unsigned k = (unsigned)(seq % 16);
    c->ka_ring[k].seq = seq;
    c->ka_ring[k].gen = c->gen;
    c->ka_ring[k].sent = now;
    c->ka_sent = now;
    uint32_t i = drv_slot_new(c, SL_KEEP);
    c->slots[i].seq = seq;
    int rc = c->s ? zsim_async(c->s, "/", drv_tag(c, i)) : ZINVALIDSTATE;
    if (rc != ZOK) {
        drv_slot_free(c, i); /* never answered */
        if (c->ka_sent == now)
            c->ka_sent = 0;
        c->ka_ring[k].sent = 0;
    } else if (c->unheard > 0 || c->unheard_left > 0) {
        drv_unheard_sent(c);
    }
}

/* give_up_session: every hold is lost now; the handle is closed next. */
static void give_up(struct dcl *c)
{
    drv_trace(c->d, "client %d: the loss rule gives session %d up", c->ix,
              c->s ? zsim_session_index(c->s) : -1);
    if (c->state != ZKL_STATE_SUSPENDED)
        c->state = ZKL_STATE_SUSPENDED;
    c->gen++;
    c->sid = 0;
    c->last_ok = 0;
    c->ka_sent = 0;
    c->state = ZKL_STATE_LOST;
    session_end(c);
    c->need_reopen = true;
}

/* zookeeper_close(old) returns once the handle is finished and every
 * request of it answered (ZCLOSING for the rest): then the next handle. */
void drv_old_handle(struct dcl *c)
{
    zsim_session *old = c->old;
    if (old == NULL)
        return;
    int st = zsim_state(old);
    if (st != ZSIM_CLOSED_STATE && st != ZSIM_EXPIRED_SESSION_STATE)
        return;
    const struct zsim_item *it;
    while ((it = zsim_deliver(old)) != NULL)
        drv_item(c, it);
    c->old = NULL;
    if (c->closing) {
        c->gone = true;
        return;
    }
    drv_session_start(c);
}

static void close_handle(struct dcl *c)
{
    zsim_session *old = c->s;
    c->s = NULL; /* stop routing the old handle's events here */
    if (old == NULL)
        return;
    c->old = old;
    drv_sinfo(c->d, zsim_session_index(old))->closed = true;
    zsim_close(old);
    drv_old_handle(c);
}

static void reopen(struct dcl *c)
{
    c->need_reopen = false;
    if (c->sid != 0) {
        /* The old handle got its session back after we gave up on it:
         * closing the handle ends that session too. */
        c->gen++;
        c->sid = 0;
        c->state = ZKL_STATE_LOST;
        session_end(c);
    }
    close_handle(c);
}

/* zkl__keeper_give_up_due: the loss rule applied as an answer or a watch
 * event arrives, before it is acted on; the keeper's next turn re-opens. */
bool drv_give_up_due(struct dcl *c, int64_t now)
{
    if (c->gone || c->closing || c->need_reopen ||
        !(c->state == ZKL_STATE_SUSPENDED || drv_connected(c)))
        return false;
    int64_t at = zkl__loss_at(c->last_ok, c->negotiated_ms);
    if (at == 0 || now < at)
        return false;
    give_up(c);
    drv_keeper_kick(c, now);
    return true;
}

void drv_keeper(struct dcl *c)
{
    int64_t now = now_of(c);
    if (c->keeper_at != 0 && c->keeper_at <= now)
        c->keeper_at = 0;
    if (c->gone || c->closing)
        return;
    int64_t next = zkl__core_tick(c->core, now);
    keepalive_maybe_send(c);
    int64_t at = 0;
    if (c->state == ZKL_STATE_SUSPENDED || drv_connected(c))
        at = zkl__loss_at(c->last_ok, c->negotiated_ms);
    if (at != 0 && now >= at) {
        give_up(c);
        at = 0;
    }
    if (c->need_reopen && c->old == NULL)
        reopen(c);
    int64_t wake = at;
    if (c->negotiated_ms > 0 && drv_connected(c) && (wake == 0 || c->ka_next < wake))
        wake = c->ka_next;
    if (next != 0 && (wake == 0 || next < wake))
        wake = next;
    drv_keeper_kick(c, wake);
    drv_run_woken(c);
}

/* ---- the client's own calls ---------------------------------------------------- */

void drv_client_cancel(struct dcl *c)
{
    drv_trace(c->d, "client %d: cancel", c->ix);
    c->cancelled = true;
    drv_wake_all(c);
    drv_run_woken(c);
}

/* zkl_client_close: every blocked caller returns ZKL_ECLOSED; the handle is
 * closed; the client's memory goes once it answered everything. */
void drv_client_close(struct dcl *c)
{
    drv_trace(c->d, "client %d: close", c->ix);
    c->closing = true;
    c->state = ZKL_STATE_CLOSED;
    session_end(c);
    aq_close_all(c);
    drv_run_woken(c);
    close_handle(c);
}
