/* The client's keeper thread: it re-opens the session after expiry,
 * delivers state changes to listeners and runs the session listener's
 * periodic work, so that none of it happens on a ZooKeeper thread; and it
 * applies the loss rule, with a keepalive request of its own. */
#include <stdlib.h>

#include "session.h"

/* The loss rule (lib/util/loss.c), for a handle of our own: we close it,
 * which keeps the session from coming back. Returns 0 when nothing is
 * pending. */
int64_t zkl__keeper_loss_at(const zkl_client *c)
{
    return zkl__loss_at(c->last_ok_ns, c->negotiated_ms);
}

bool zkl__keeper_is_self(const zkl_client *c)
{
    return c->keeper_started && pthread_equal(pthread_self(), c->keeper);
}

void zkl__keeper_quiesce(zkl_client *c)
{
    if (zkl__keeper_is_self(c) || !c->keeper_started)
        return;
    uint64_t seen = c->delivery;
    while (c->delivering && c->delivery == seen)
        pthread_cond_wait(&c->cv, &c->mu);
}

static int64_t give_up_at(zkl_client *c)
{
    if (!c->owns_zh || (c->state != ZKL_STATE_SUSPENDED && c->state != ZKL_STATE_CONNECTED &&
                        c->state != ZKL_STATE_RECONNECTED))
        return 0;
    return zkl__keeper_loss_at(c);
}

/* Declare the session lost (c->mu held): every hold is lost now, and the
 * keeper closes the handle (then re-opens, if configured). A client that
 * still counted as connected passes through SUSPENDED, so listeners see
 * the uncertainty before the loss, as for a dropped connection. */
static void give_up_session(zkl_client *c)
{
    if (c->state != ZKL_STATE_SUSPENDED)
        zkl__sess_move(c, ZKL_STATE_SUSPENDED, "no answer in time");
    zkl__sess_end(c, ZKL_STATE_LOST, "given up by the loss rule");
    c->need_reopen = 1;
}

bool zkl__keeper_give_up_due(zkl_client *c, int64_t now)
{
    int64_t at = give_up_at(c);
    if (at == 0 || now < at || c->closing || c->need_reopen)
        return false;
    give_up_session(c);
    return true;
}

/* ---- keepalive -----------------------------------------------------------
 * libzookeeper_mt's pings are invisible to us, so the keeper sends a cheap
 * request of its own every T/10 while connected; its answer moves
 * c->last_ok_ns to its send time. A sync of "/", not a read: a follower
 * answers a read by itself, and one cut off from the leader goes on doing
 * so for up to syncLimit ticks (more than T, often) while the leader hears
 * none of its touches and expires the session. A follower answers a sync
 * only once the leader has, over the link that carries its touches. */

/* The completion's data: the client's id and the keepalive's number. */
#define KA_SEQ_BITS 24
#define KA_SEQ_MASK ((UINT64_C(1) << KA_SEQ_BITS) - 1)

static void keepalive_done(int rc, const char *value, const void *data)
{
    (void)value;
    uint64_t word = (uint64_t)(uintptr_t)data;
    uint64_t seq = word & KA_SEQ_MASK;
    zkl_client *c = zkl__client_lock_id(word >> KA_SEQ_BITS);
    if (c == NULL)
        return;
    unsigned slot = (unsigned)(seq % 16);
    if ((c->ka_ring[slot].seq & KA_SEQ_MASK) == seq && c->ka_ring[slot].sent != 0) {
        int64_t sent = c->ka_ring[slot].sent;
        uint64_t gen = c->ka_ring[slot].gen;
        c->ka_ring[slot].sent = 0;
        if (c->ka_sent_ns == sent)
            c->ka_sent_ns = 0;
        /* Any answer of the server's is a touch; a system error (connection
         * loss, closing) is none. */
        if (gen == c->gen && c->sid != 0 && (rc == ZOK || rc == ZNONODE) && sent > c->last_ok_ns)
            c->last_ok_ns = sent;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Send a keepalive if one is due (c->mu held; dropped and taken again:
 * then it returns true). */
static bool keepalive_maybe_send(zkl_client *c)
{
    int64_t now = zkl__now_ns();
    if (c->closing || c->need_reopen || c->negotiated_ms <= 0 || now < c->ka_next_ns ||
        (c->state != ZKL_STATE_CONNECTED && c->state != ZKL_STATE_RECONNECTED))
        return false;
    int64_t every = zkl__keepalive_ns(c->negotiated_ms);
    c->ka_next_ns = now + every;
    /* One in flight at a time; one that was never answered within a whole
     * period is forgotten (its answer, if any, still counts). */
    if (c->ka_sent_ns != 0 && now - c->ka_sent_ns < every)
        return false;
    if (c->id > (UINT64_MAX >> KA_SEQ_BITS))
        return false; /* ids that do not fit: no keepalive (never in practice) */
    uint64_t seq = ++c->ka_seq & KA_SEQ_MASK;
    unsigned slot = (unsigned)(seq % 16);
    c->ka_ring[slot].seq = seq;
    c->ka_ring[slot].gen = c->gen;
    c->ka_ring[slot].sent = now;
    c->ka_sent_ns = now;
    const void *data = (const void *)(uintptr_t)((c->id << KA_SEQ_BITS) | seq);
    pthread_mutex_unlock(&c->mu);
    pthread_rwlock_rdlock(&c->hlock);
    int rc = c->zh != NULL ? c->zapi->async(c->zh, "/", keepalive_done, data) : ZINVALIDSTATE;
    pthread_rwlock_unlock(&c->hlock);
    pthread_mutex_lock(&c->mu);
    /* Not counted in stats.requests: those are the recipes' own. */
    if (rc != ZOK) {
        if (c->ka_sent_ns == now)
            c->ka_sent_ns = 0;
        c->ka_ring[slot].sent = 0;
    }
    return true;
}

/* One round of the keeper's work (c->mu held; dropped and taken again
 * meanwhile): 1 when more is at hand now, 0 when it waits for a signal of
 * c->cv or until *wake (0: no time), -1 once the client closes. */
int zkl__keeper_step(zkl_client *c, int64_t *wake_out)
{
    *wake_out = 0;
    if (!c->closing && !c->need_reopen && c->ev_head == c->ev_tail) {
        /* The listener's hooks and retries (may release c->mu). */
        int64_t work = c->sl ? c->sl->on_tick(c->sl_ctx) : 0;
        if (c->closing || c->need_reopen || c->ev_head != c->ev_tail)
            return 1;
        /* With c->mu dropped, work may have come that woke no one. */
        if (c->owns_zh && keepalive_maybe_send(c))
            return 1;
        /* Its state change and the re-open are at hand then. */
        if (zkl__keeper_give_up_due(c, zkl__now_ns()))
            return 1;
        int64_t wake = give_up_at(c);
        if (c->owns_zh && c->negotiated_ms > 0 &&
            (c->state == ZKL_STATE_CONNECTED || c->state == ZKL_STATE_RECONNECTED) &&
            (wake == 0 || c->ka_next_ns < wake))
            wake = c->ka_next_ns;
        if (work != 0 && (wake == 0 || work < wake))
            wake = work;
        *wake_out = wake;
        return 0;
    }
    while (c->ev_head != c->ev_tail) {
        int st = c->events[c->ev_head++ % (sizeof c->events / sizeof c->events[0])];
        /* Snapshot the listeners, call them unlocked: all of them,
         * however many (a small array on the stack covers most). */
        struct zkl__listener few[16], *snap = few;
        size_t k = 0, total = 0;
        for (struct zkl__listener *l = c->listeners; l; l = l->next)
            total++;
        if (total > 16 && (snap = malloc(total * sizeof *snap)) == NULL) {
            snap = few;
            total = 16; /* out of memory: the first 16 still hear */
        }
        for (struct zkl__listener *l = c->listeners; l && k < total; l = l->next)
            snap[k++] = *l;
        c->delivering = 1;
        pthread_mutex_unlock(&c->mu);
        for (size_t i = 0; i < k; i++)
            snap[i].fn(c, (enum zkl_state)st, snap[i].arg);
        if (snap != few)
            free(snap);
        pthread_mutex_lock(&c->mu);
        c->delivering = 0;
        c->delivery++;
        pthread_cond_broadcast(&c->cv); /* for zkl_client_remove_listener */
    }
    if (c->closing)
        return -1;
    if (c->need_reopen) {
        /* The session's holds are lost: tell their owners now, not
         * after closing its handle, which can take seconds (a close
         * request flushed to a server that does not answer). */
        if (c->sl)
            c->sl->on_tick(c->sl_ctx);
        if (c->closing)
            return -1;
        /* A handle lent out (zkl_client_handle_borrow) is closed only
         * once every loan is back; no new loan of it meanwhile. Its
         * events still come in: their need of a re-open is this one. */
        c->handle_going = 1;
        while (c->borrows > 0 && !c->closing)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->closing)
            return -1; /* zkl_client_close waits for the loans itself */
        c->need_reopen = 0;
        zhandle_t *old = c->zh;
        pthread_mutex_unlock(&c->mu);
        pthread_rwlock_wrlock(&c->hlock);
        zkl__registry_lock();
        pthread_mutex_lock(&c->mu);
        c->zh = NULL; /* stop routing the old handle's events here */
        c->handle_going = 0; /* no handle now: a borrow is ZKL_ELOST */
        if (c->sid != 0) {
            /* The old handle got its session back after we gave up on
             * it: closing the handle ends that session too. */
            zkl__sess_end(c, ZKL_STATE_LOST, "a given-up session came back");
        }
        pthread_mutex_unlock(&c->mu);
        zkl__registry_unlock();
        c->zapi->close(old);
        /* Without re-open the client stays lost, with no handle. */
        int rc = c->reopen ? zkl__client_start_handle(c) : 0;
        pthread_rwlock_unlock(&c->hlock);
        pthread_mutex_lock(&c->mu);
        if (rc != 0)
            c->need_reopen = 1; /* try again on the next wake-up */
    }
    return 1;
}

/* The keeper thread: re-opens after expiry and delivers state changes to
 * listeners, so neither happens on a ZooKeeper thread. */
void *zkl__keeper_main(void *arg)
{
    zkl_client *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        int64_t wake;
        int r = zkl__keeper_step(c, &wake);
        if (r < 0)
            break;
        if (r == 0) {
            if (wake == 0)
                pthread_cond_wait(&c->cv, &c->mu);
            else
                zkl__cond_wait(&c->cv, &c->mu, wake);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- state listeners (zkl_client_add_listener): the keeper calls them --- */

int zkl_client_add_listener(zkl_client *c, zkl_state_fn fn, void *arg)
{
    if (c == NULL || fn == NULL)
        return ZKL_EINVAL;
    if (zkl__forked(c))
        return ZKL_EFORK;
    struct zkl__listener *l = malloc(sizeof *l);
    if (l == NULL)
        return ZKL_ENOMEM;
    l->fn = fn;
    l->arg = arg;
    pthread_mutex_lock(&c->mu);
    l->next = c->listeners;
    c->listeners = l;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int zkl_client_remove_listener(zkl_client *c, zkl_state_fn fn, void *arg)
{
    int rc = zkl__client_lock(c, fn != NULL);
    if (rc != 0)
        return rc;
    for (struct zkl__listener **p = &c->listeners; *p; p = &(*p)->next) {
        if ((*p)->fn == fn && (*p)->arg == arg) {
            struct zkl__listener *l = *p;
            *p = l->next;
            free(l);
            /* The keeper calls a snapshot of the listeners: once this
             * returns, the removed one is not running and never will, so
             * its arg may be freed. (From a listener itself, no wait.) */
            zkl__keeper_quiesce(c);
            pthread_mutex_unlock(&c->mu);
            return 0;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return ZKL_EINVAL;
}
