/* The engine of one client: it registers as the session's listener (the
 * session tells it of connections, session ends, watch events and the
 * keeper's ticks, and knows no locks), hands all of that to the core, and
 * calls the owners' hooks the core asks for, on the keeper thread, never on
 * a ZooKeeper thread and never under c->mu: they call user code.
 * Everything here runs with c->mu held. */
#include <stdlib.h>

#include "engine.h"

bool zkl__engine_connected(const zkl_client *c)
{
    return c->state == ZKL_STATE_CONNECTED || c->state == ZKL_STATE_RECONNECTED;
}

void zkl__engine_set_front(struct zkl__engine *e, const zkl__front_ops *ops, void *ctx)
{
    e->front = ops;
    e->front_ctx = ctx;
}

void zkl__engine_notify(zkl__node *n, unsigned what)
{
    struct zkl__hooks *h = n->hooks;
    struct zkl__engine *e = ZKL__NODE_ENGINE(n);
    if (h == NULL || (what == ZKL__NOTIFY_LOST && h->on_lost == NULL) ||
        (what == ZKL__NOTIFY_REVOKE && h->on_revoke == NULL))
        return;
    h->notify |= (uint8_t)what;
    if (!h->queued) {
        h->queued = true;
        h->next = NULL;
        if (e->notify_tail)
            e->notify_tail->next = h;
        else
            e->notify_head = h;
        e->notify_tail = h;
    }
    pthread_cond_broadcast(&ZKL__NODE_CLIENT(n)->cv); /* the keeper */
}

static void unnotify(struct zkl__engine *e, struct zkl__hooks *h)
{
    h->notify = 0;
    if (!h->queued)
        return;
    ZKL__SLIST_REMOVE(struct zkl__hooks, e->notify_head, e->notify_tail, h, next);
    h->queued = false;
    h->next = NULL;
}

/* The owner is done with the node: no hook may run for it from now on.
 * A caller thread waits for one that is running; the keeper (a hook that
 * releases) does not wait for itself. */
void zkl__engine_hooks_off(zkl__node *n)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    struct zkl__hooks *h = n->hooks;
    if (h == NULL)
        return;
    struct zkl__engine *e = ZKL__NODE_ENGINE(n);
    bool keeper = zkl__keeper_is_self(c);
    /* A loss already queued for the owner is still told, once: a holder
     * that saw is_held turn 0 and released at once would otherwise never
     * hear it. The keeper delivers it soon; it may not wait for itself. */
    while ((h->notify & ZKL__NOTIFY_LOST) && h->queued && c->keeper_started && !keeper &&
           !c->closing)
        pthread_cond_wait(&c->cv, &c->mu);
    unnotify(e, h);
    h->on_lost = h->on_revoke = NULL;
    while (e->notifying == h && !keeper)
        pthread_cond_wait(&c->cv, &c->mu);
}

/* ---- the session listener -------------------------------------------------- */

static void on_connected(void *ctx, zhandle_t *zh)
{
    struct zkl__engine *e = ctx;
    (void)zh;
    zkl__core_session(e->core, e->c->gen, e->c->sid, e->c->closing != 0, zkl__now_ns());
    zkl__core_connection(e->core, true, zkl__now_ns());
}

static void on_session_end(void *ctx)
{
    struct zkl__engine *e = ctx;
    zkl_client *c = e->c;
    zkl__core_session(e->core, c->gen, c->sid, c->closing != 0, zkl__now_ns());
    zkl__core_connection(e->core, zkl__engine_connected(c), zkl__now_ns());
}

static void on_watch_event(void *ctx, zhandle_t *zh, int type, const char *path, int64_t now)
{
    struct zkl__engine *e = ctx;
    /* Only the live handle's events: an old one's watches are of an ended
     * session, whose nodes are gone. */
    if (zh == e->c->zh)
        zkl__core_watch_event(e->core, type, path, now);
}

static void wake_one(zkl__cnode *cn, void *arg)
{
    (void)arg;
    zkl__node *n = (zkl__node *)cn;
    if (n->wake != NULL)
        n->wake(n, n->wake_arg);
    else if (n->cv)
        pthread_cond_broadcast(n->cv);
}

/* The client's state changed (suspended, cancelled): the core hears of the
 * connection, and every waiter looks again. */
static void wake_all(void *ctx)
{
    struct zkl__engine *e = ctx;
    if (e->c->cancelled)
        zkl__core_cancel(e->core);
    zkl__core_connection(e->core, zkl__engine_connected(e->c), zkl__now_ns());
    zkl__core_each(e->core, wake_one, NULL);
}

static int64_t on_tick(void *ctx)
{
    struct zkl__engine *e = ctx;
    zkl_client *c = e->c;
    /* Tell the owners, one hook at a time, with c->mu released. */
    struct zkl__hooks *h;
    while ((h = e->notify_head) != NULL && !c->closing) {
        e->notify_head = h->next;
        if (e->notify_head == NULL)
            e->notify_tail = NULL;
        h->queued = false;
        h->next = NULL;
        unsigned what = h->notify;
        h->notify = 0;
        zkl__node_fn fns[2] = {what & ZKL__NOTIFY_LOST ? h->on_lost : NULL,
                               what & ZKL__NOTIFY_REVOKE ? h->on_revoke : NULL};
        void *arg = h->arg;
        zkl__node *n = h->n;
        int64_t token = n->cn.token;
        e->notifying = h; /* zkl__engine_hooks_off waits for this call */
        c->delivering = 1;
        pthread_mutex_unlock(&c->mu);
        for (int i = 0; i < 2; i++)
            if (fns[i])
                fns[i](n, token, arg);
        pthread_mutex_lock(&c->mu);
        e->notifying = NULL;
        c->delivering = 0;
        c->delivery++;
        pthread_cond_broadcast(&c->cv);
    }
    /* Deletes the server refused for nodes nobody holds: the due ones
     * again (the keeper is the only thread that swaps c->zh). */
    int64_t next = zkl__core_tick(e->core, zkl__now_ns());
    int64_t due = e->front ? e->front->tick(e->front_ctx) : 0;
    return due != 0 && (next == 0 || due < next) ? due : next;
}

/* The client closes: every blocked caller was woken (the session's end)
 * and returns ZKL_ECLOSED promptly; wait until the last one is out, as
 * they still touch the client and their nodes. */
static void wait_callers(void *ctx)
{
    struct zkl__engine *e = ctx;
    if (e->front)
        e->front->close(e->front_ctx);
    while (e->inside > 0)
        pthread_cond_wait(&e->c->cv, &e->c->mu);
}

static int pending(void *ctx)
{
    struct zkl__engine *e = ctx;
    return zkl__core_pending(e->core);
}

static void drop_all(void *ctx)
{
    struct zkl__engine *e = ctx;
    if (e->front)
        e->front->drop(e->front_ctx);
    zkl__core_drop_nodes(e->core);
    zkl__core_free(e->core);
    zkl__metrics_free(e->metrics);
    free(e);
}

/* A bug of the session's (a move its table forbids): counted with the
 * engine's own (zkl_metrics' faults). */
static void on_fault(void *ctx)
{
    struct zkl__engine *e = ctx;
    zkl__metrics_fault(&e->metrics, NULL);
}

static void add_stats(void *ctx, zkl_client_stats *st)
{
    struct zkl__engine *e = ctx;
    const zkl__core_stats *k = zkl__core_stats_of(e->core);
    st->creates += k->creates;
    st->deletes += k->deletes;
    st->listings += k->listings;
    st->watch_events += k->watch_events;
    st->recovered += k->recovered;
}

static const zkl__session_listener listener = {
    .on_connected = on_connected,
    .on_session_end = on_session_end,
    .on_watch_event = on_watch_event,
    .on_tick = on_tick,
    .wake_all = wake_all,
    .wait_callers = wait_callers,
    .pending = pending,
    .drop_all = drop_all,
    .add_stats = add_stats,
    .on_fault = on_fault,
};

struct zkl__engine *zkl__engine_find(zkl_client *c)
{
    return zkl__client_listener(c, &listener);
}

struct zkl__engine *zkl__engine_of(zkl_client *c)
{
    void *ctx = zkl__client_listener(c, &listener);
    if (ctx != NULL)
        return ctx;
    struct zkl__engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    uint64_t seed[4];
    zkl__random(seed, sizeof seed);
    if ((e->core = zkl__core_new(zkl__shell_act, e, seed)) == NULL) {
        free(e);
        return NULL;
    }
    e->c = c;
    zkl__core_set_max_request(e->core, c->max_request);
    zkl__core_set_ident(e->core, c->ident);
    zkl__core_session(e->core, c->gen, c->sid, c->closing != 0, zkl__now_ns());
    zkl__core_connection(e->core, zkl__engine_connected(c), zkl__now_ns());
    if (c->cancelled)
        zkl__core_cancel(e->core);
    zkl__client_listen(c, &listener, e);
    return e;
}
