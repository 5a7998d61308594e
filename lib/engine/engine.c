/* The lock-queue engine's state for one client: the session listener it
 * registers (lib/session/client.c tells it of connections, session ends, watch
 * events and the keeper's ticks), the list of its nodes, the index that
 * routes a watch event to the nodes it may be for, and the queue of owner
 * hooks the keeper thread calls.
 *
 * The hooks run on the client's keeper thread (engine_tick), never on a
 * ZooKeeper thread and never under c->mu: they call user code. Everything
 * here runs with c->mu held. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* e->watching: the nodes that armed a watch, so that routing an event
 * does not walk every node the client holds. A node joins when it arms a
 * watch and leaves once it is no longer queued (see zkl__watch_event)
 * or is freed. */

void zkl__engine_watching_add(zkl__node *n)
{
    struct zkl__engine *e = n->e;
    zkl__engine_held_remove(n); /* it watches more than itself again */
    if (n->in_watching)
        return;
    ZKL__DLIST_PUSH(e->watching, n, wprev, wnext);
    n->in_watching = true;
}

void zkl__engine_watching_remove(zkl__node *n)
{
    struct zkl__engine *e = n->e;
    if (!n->in_watching)
        return;
    ZKL__DLIST_UNLINK(e->watching, n, wprev, wnext);
    n->in_watching = false;
}

/* e->held_index: held nodes whose only watch is the one on themselves, by
 * path. They zkl__node_leave e->watching, which then holds the waiters alone, so
 * that routing an event costs the same with ten thousand locks held as
 * with one. A hash table with chaining, doubled as it fills. */
static size_t path_hash(const char *p)
{
    size_t h = 1469598103934665603u;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    return h;
}

zkl__node **zkl__engine_held_find(struct zkl__engine *e, const char *path)
{
    zkl__node **p = &e->held_index[path_hash(path) & (e->held_buckets - 1)];
    while (*p && strcmp((*p)->path, path) != 0)
        p = &(*p)->hnext;
    return p;
}

static void held_index_grow(struct zkl__engine *e)
{
    size_t nb = e->held_buckets ? e->held_buckets * 2 : 64;
    zkl__node **t = calloc(nb, sizeof *t);
    if (t == NULL)
        return; /* keep the smaller table: only slower */
    for (size_t i = 0; i < e->held_buckets; i++) {
        for (zkl__node *n = e->held_index[i], *next; n; n = next) {
            next = n->hnext;
            zkl__node **b = &t[path_hash(n->path) & (nb - 1)];
            n->hnext = *b;
            *b = n;
        }
    }
    free(e->held_index);
    e->held_index = t;
    e->held_buckets = nb;
}

/* Move a held node that watches only itself from e->watching to the
 * index. Returns false (and leaves it where it is) if the index has no
 * room. */
bool zkl__engine_held_add(zkl__node *n)
{
    struct zkl__engine *e = n->e;
    if (n->in_held_index)
        return true;
    if (e->held_count >= e->held_buckets)
        held_index_grow(e);
    if (e->held_buckets == 0)
        return false;
    zkl__engine_watching_remove(n);
    zkl__node **b = &e->held_index[path_hash(n->path) & (e->held_buckets - 1)];
    n->hnext = *b;
    *b = n;
    n->in_held_index = true;
    e->held_count++;
    return true;
}

void zkl__engine_held_remove(zkl__node *n)
{
    if (!n->in_held_index)
        return;
    struct zkl__engine *e = n->e;
    zkl__node **p = &e->held_index[path_hash(n->path) & (e->held_buckets - 1)];
    while (*p != n)
        p = &(*p)->hnext;
    *p = n->hnext;
    n->hnext = NULL;
    n->in_held_index = false;
    e->held_count--;
}

void zkl__engine_notify(zkl__node *n, unsigned what)
{
    zkl_client *c = n->c;
    struct zkl__engine *e = n->e;
    if ((what == NOTIFY_LOST && n->on_lost == NULL) ||
        (what == NOTIFY_REVOKE && n->on_revoke == NULL))
        return;
    n->notify |= what;
    if (!n->in_notify) {
        n->in_notify = true;
        n->nnext = NULL;
        if (e->notify_tail)
            e->notify_tail->nnext = n;
        else
            e->notify_head = n;
        e->notify_tail = n;
    }
    pthread_cond_broadcast(&c->cv); /* the keeper */
}

void zkl__engine_unnotify(zkl__node *n)
{
    struct zkl__engine *e = n->e;
    n->notify = 0;
    if (!n->in_notify)
        return;
    ZKL__SLIST_REMOVE(zkl__node, e->notify_head, e->notify_tail, n, nnext);
    n->in_notify = false;
    n->nnext = NULL;
}

/* A held node is lost: the session ended, or someone else deleted it. Told
 * once. */
void zkl__engine_mark_lost(zkl__node *n)
{
    if (n->st == N_LOST)
        return;
    zkl__node_set_state(n, N_LOST);
    zkl__metrics_lost(n);
    zkl__engine_notify(n, NOTIFY_LOST);
}

/* The owner is done with the node: no hook may run for it from now on.
 * A caller thread waits for one that is running; the keeper (a hook that
 * releases) does not wait for itself. */
void zkl__engine_hooks_off(zkl__node *n)
{
    zkl_client *c = n->c;
    struct zkl__engine *e = n->e;
    bool keeper = c->keeper_started && pthread_equal(pthread_self(), c->keeper);
    /* A loss already queued for the owner is still told, once: a holder
     * that saw is_held turn 0 and released at once would otherwise never
     * hear it. The keeper delivers it soon; it may not wait for itself. */
    while ((n->notify & NOTIFY_LOST) && n->in_notify && c->keeper_started && !keeper &&
           !c->closing)
        pthread_cond_wait(&c->cv, &c->mu);
    zkl__engine_unnotify(n);
    n->on_lost = n->on_revoke = NULL;
    while (e->notifying == n && !keeper)
        pthread_cond_wait(&c->cv, &c->mu);
}

void zkl__engine_connected(struct zkl__engine *e, zhandle_t *zh)
{
    /* Events may have been missed while disconnected: what the client
     * knew of its lock paths is no proof any more. */
    zkl__alone_invalidate(e, NULL);
    for (zkl__node *n = e->live; n; n = n->next) {
        /* A watch on our own node that could not be set: set it now (one
         * that was set survives the reconnection). */
        if (n->zh == zh && current(n) && !n->own_armed && n->path != NULL &&
            (n->st == N_HELD || (n->st == N_QUEUED && n->stalled)))
            zkl__watch_own(n);
        if (!n->stalled || n->zh != zh || !current(n))
            continue;
        n->stalled = false;
        switch (n->st) {
        case N_CREATING:
        case N_RECOVER:
            /* Did the create happen? Only a listing can tell. */
            zkl__node_set_state(n, N_RECOVER);
            n->path = NULL;
            n->listing = false;
            zkl__node_recover(n);
            break;
        case N_QUEUED:
            n->armed[0] = n->armed[1] = false;
            for (size_t i = 0; i < n->ngroup; i++)
                n->group[i].armed = false;
            zkl__node_list(n);
            break;
        case N_RELEASING:
        case N_DELETING:
        case N_BACKOFF:
            zkl__node_delete(n);
            break;
        default:
            break;
        }
    }
}

static void engine_session_end(void *ctx)
{
    struct zkl__engine *e = ctx;
    zkl_client *c = e->c;
    zkl__alone_forget(e);
    for (zkl__node *n = e->live, *next; n; n = next) {
        next = n->next;
        if (n->gen == c->gen && !c->closing)
            continue;
        /* Every node the session held went with it: tell each owner
         * (not when the user closes the client: that is no loss). */
        if (n->st == N_HELD && !c->closing)
            zkl__engine_mark_lost(n);
        if (n->st != N_HELD && n->st != N_LOST && n->err == 0)
            n->err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
        if (n->st != N_HELD && n->st != N_LOST)
            zkl__node_set_state(n, N_GONE);
        wake(n);
        zkl__node_maybe_free(n);
    }
}

static int64_t engine_tick(void *ctx)
{
    struct zkl__engine *e = ctx;
    zkl_client *c = e->c;
    /* Tell the owners, one hook at a time, with c->mu released. */
    zkl__node *n;
    while ((n = e->notify_head) != NULL && !c->closing) {
        e->notify_head = n->nnext;
        if (e->notify_head == NULL)
            e->notify_tail = NULL;
        n->in_notify = false;
        n->nnext = NULL;
        unsigned what = n->notify;
        n->notify = 0;
        zkl__node_fn fns[2] = {what & NOTIFY_LOST ? n->on_lost : NULL,
                               what & NOTIFY_REVOKE ? n->on_revoke : NULL};
        void *arg = n->hook_arg;
        int64_t token = n->token;
        e->notifying = n; /* zkl__engine_hooks_off waits for this call */
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
    /* Deletes the server refused for nodes nobody holds: send the due ones
     * again. The keeper is the only thread that swaps c->zh. */
    int64_t now = zkl__now_ns(), next = 0;
    zkl__node *after;
    for (n = e->backoff; n; n = after) {
        after = n->bnext; /* n may leave the list (a delete sent) */
        if (!current(n))
            continue;
        if (n->retry_at <= now && !connected(c)) {
            zkl__node_set_state(n, N_DELETING);
            n->stalled = true; /* zkl__engine_connected sends it */
            continue;
        }
        if (n->retry_at <= now && n->refs > 0)
            n->retry_at = now + 100000000; /* an answer is still due: later */
        else if (n->retry_at <= now && n->zh == c->zh)
            zkl__node_delete(n);
        if (n->st == N_BACKOFF && (next == 0 || n->retry_at < next))
            next = n->retry_at;
    }
    int64_t due = zkl__async_tick(e);
    return due != 0 && (next == 0 || due < next) ? due : next;
}

static void engine_wake_all(void *ctx)
{
    struct zkl__engine *e = ctx;
    for (zkl__node *n = e->live; n; n = n->next) {
        if (n->waiter != NULL)
            zkl__async_wake(n);
        else if (n->cv)
            pthread_cond_broadcast(n->cv);
    }
}

static int engine_pending(void *ctx)
{
    struct zkl__engine *e = ctx;
    for (zkl__node *n = e->live; n; n = n->next)
        if (n->refs > 0)
            return 1;
    return 0;
}

static void engine_drop_all(void *ctx)
{
    struct zkl__engine *e = ctx;
    zkl__async_drop(e);
    while (e->live)
        zkl__node_free(e->live);
    zkl__alone_forget(e);
    zkl__listing_drop_all(e);
    free(e->held_index);
    free(e);
}

/* The client closes: every blocked caller was woken (engine_session_end)
 * and returns ZKL_ECLOSED promptly; wait until the last one is out, as
 * they still touch the client and their nodes. */
static void engine_closing(void *ctx)
{
    struct zkl__engine *e = ctx;
    zkl__async_close(e);
    while (e->inside > 0)
        pthread_cond_wait(&e->c->cv, &e->c->mu);
}

static void engine_on_connected(void *ctx, zhandle_t *zh)
{
    zkl__engine_connected(ctx, zh);
}

static const zkl__session_listener engine_listener = {
    .on_connected = engine_on_connected,
    .on_session_end = engine_session_end,
    .on_watch_event = zkl__watch_event,
    .on_tick = engine_tick,
    .wake_all = engine_wake_all,
    .wait_callers = engine_closing,
    .pending = engine_pending,
    .drop_all = engine_drop_all,
};

/* The client's engine, made and registered on first use (c->mu held), or
 * NULL without memory. */
struct zkl__engine *zkl__engine_of(zkl_client *c)
{
    void *ctx = zkl__client_listener(c, &engine_listener);
    if (ctx != NULL)
        return ctx;
    struct zkl__engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->c = c;
    zkl__client_listen(c, &engine_listener, e);
    return e;
}

void zkl__engine_link(struct zkl__engine *e, zkl__node *n)
{
    ZKL__DLIST_PUSH(e->live, n, prev, next);
}

void zkl__engine_unlink(struct zkl__engine *e, zkl__node *n)
{
    ZKL__DLIST_UNLINK(e->live, n, prev, next);
}
