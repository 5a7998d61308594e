/* Watches: on the node ahead (and the one before it, prefetch), on a
 * policy's watch group, on the lock path's children for a node we may not
 * read, and on our own node (someone else deleting it, a revocation request
 * written into it); and routing each watch event to the nodes it is for.
 * c->mu held. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static void own_changed(zkl__node *n);
static void send_dirwatch(zkl__node *n);

/* A watch request of n's is about to go out: its watch counts as set
 * (*armed), n is among the watching nodes, and the request's answer is
 * counted on. */
static void watch_sending(zkl__node *n, bool *armed)
{
    *armed = true;
    zkl__engine_watching_add(n);
    n->refs++;
    zkl__metrics_sent(n);
}

/* The watch request's send returned rc: unless it went out, the watch is
 * not set (*armed) and n learns why. */
static void watch_sent(zkl__node *n, int rc, bool *armed)
{
    if (rc != ZOK) {
        *armed = false;
        zkl__node_send_failed(n, rc);
    }
}

/* The watcher context of node watches: the client's id. */
static void *watch_ctx(const zkl__node *n)
{
    return (void *)(uintptr_t)n->c->id;
}

void zkl__watch_group_clear(zkl__node *n)
{
    for (size_t i = 0; i < n->ngroup; i++)
        free(n->group[i].path);
    free(n->group);
    n->group = NULL;
    n->ngroup = 0;
}

/* Our own node is gone and we did not delete it. */
static void own_gone(zkl__node *n)
{
    n->own_armed = n->own_ok = false;
    if (n->st == N_QUEUED || (n->st == N_HELD && !n->taken)) {
        /* Waiting, or held a moment ago but not yet returned to the
         * caller, who never learns of that hold: queue again. */
        zkl__node_set_state(n, N_QUEUED);
        zkl__node_requeue(n);
    } else if (n->st == N_HELD) {
        /* The lock is no longer ours: from now on is_held says so, release
         * says ZKL_ELOST and guarded writes are refused. */
        zkl__alone_invalidate(n->e, n->dir);
        zkl__engine_mark_lost(n);
        wake(n);
    }
}

/* The answer rc to a request that watches our own node (a read if
 * `reading`): true if it is about the node's current path and a success.
 * Otherwise, for such an answer, the node is gone, or the watch is not
 * set: a lost connection stalls n, and a read refused watches on without
 * reading. */
static bool own_answer(zkl__node *n, int rc, bool reading)
{
    /* Answers to one session's requests come in order: while the node is
     * queued or held, this answer is about its current path. */
    if (!current(n) || !n->own_armed || (n->st != N_QUEUED && n->st != N_HELD))
        return false;
    if (rc == ZOK) {
        n->own_ok = true;
        return true;
    }
    if (rc == ZNONODE) {
        own_gone(n);
        return false;
    }
    n->own_armed = false;
    if (zkl__zk_conn_error(rc))
        zkl__node_stall(n);
    else if (reading)
        zkl__watch_own(n); /* not allowed to read it: watch on without */
    return false;
}

static void own_exists_done(int rc, const struct Stat *st, const void *data)
{
    zkl__node *n = answer_in(data);
    /* Written to before this watch was set (another client's request can
     * overtake it): read it as if the watch had fired. */
    if (own_answer(n, rc, false) && st != NULL && st->version > n->own_version)
        own_changed(n);
    answer_done(n);
}

/* An existence watch: it needs no READ permission, fires on deletion and on
 * a change of the node's data. */
void zkl__watch_own(zkl__node *n)
{
    if (n->own_armed || n->path == NULL)
        return;
    watch_sending(n, &n->own_armed);
    int rc =
        zoo_awexists(n->zh, n->path, zkl__client_watcher_fn(), watch_ctx(n), own_exists_done, n);
    watch_sent(n, rc, &n->own_armed);
}

static void own_get_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    zkl__node *n = answer_in(data);
    if (own_answer(n, rc, true)) {
        bool fresh = st == NULL || st->version > n->own_version;
        if (st != NULL && st->version > n->own_version)
            n->own_version = st->version;
        if (fresh && n->st == N_HELD && len == REVOKE_LEN &&
            memcmp(v, REVOKE_DATA, REVOKE_LEN) == 0)
            zkl__engine_notify(n, NOTIFY_REVOKE);
    }
    answer_done(n);
}

/* Our node's data changed: read it, watching on. Someone wrote the
 * revocation request into it: the owner's revoke hook hears of it (the
 * public revocation API builds on this hook). */
static void own_changed(zkl__node *n)
{
    n->own_ok = false; /* not watched until this answers: no handoff on trust */
    watch_sending(n, &n->own_armed);
    int rc = zoo_awget(n->zh, n->path, zkl__client_watcher_fn(), watch_ctx(n), own_get_done, n);
    watch_sent(n, rc, &n->own_armed);
}

static void wget_done(int rc, const char *v, int len, const struct Stat *st, const void *data,
                      int slot)
{
    (void)v, (void)len, (void)st;
    zkl__node *n = answer_in(data);
    bool latest = ++n->wdone[slot] == n->wsent[slot];
    /* A walk-back's watch in a long queue: did the next node ahead still
     * exist? (list_instead learns from it) */
    bool probe = latest && slot == 0 && n->probing;
    if (probe) {
        n->probing = false;
        if (rc == ZOK || rc == ZNONODE)
            n->e->walk_pays = rc == ZOK;
    }
    if (current(n) && n->st == N_QUEUED) {
        if (rc == ZNONODE) {
            /* Already gone before the watch was set: the next one ahead,
             * or list again, nothing more (PITFALLS: ZNONODE on the
             * predecessor is no failure). In a long queue, list: a walk
             * back that found the next one gone too, or a listing that was
             * stale on arrival, says that more may have gone. */
            n->armed[slot] = false;
            if (probe || (slot == 0 && n->qlen > AHEAD_SHORT) ||
                !(latest && zkl__node_walk_back(n, slot)))
                zkl__node_list(n);
        } else if (zkl__zk_conn_error(rc)) {
            n->armed[slot] = false;
            zkl__node_stall(n);
        } else if (rc == ZNOAUTH) {
            /* Not allowed to read it (another identity's node): no watch on
             * it is allowed either, not even an existence watch (the
             * server does not report a node the watcher may not read). Wait
             * on the lock path's children instead, quietly, rather than
             * listing in a loop until the deadline. */
            n->noread = true;
            send_dirwatch(n);
        } else if (rc != ZOK) {
            n->armed[slot] = false;
            zkl__node_abort(n, zkl__err_from_zk(rc)); /* retrying cannot cure it */
        }
    }
    answer_done(n);
}

/* The answer to a listing that also set a child watch on the lock path:
 * zkl__node_decide on it as on any listing (the watched node may be gone already). */
static void dirwatch_list_done(int rc, const struct String_vector *kids, const void *data)
{
    zkl__node *n = answer_in(data);
    n->c->stats.listings++;
    if (!current(n) || n->st != N_QUEUED) {
    } else if (rc == ZOK && zkl__listing_too_big(n, kids)) {
        n->dirwatch = false;
        zkl__node_abort(n, ZKL_EQUEUE);
    } else if (rc == ZOK) {
        zkl__node_decide(n, kids);
    } else {
        n->dirwatch = false;
        if (zkl__zk_conn_error(rc)) {
            zkl__node_stall(n);
        } else if (rc == ZNONODE) {
            zkl__node_requeue(n);
        } else {
            zkl__node_abort(n, zkl__err_from_zk(rc));
        }
    }
    answer_done(n);
}

static void send_dirwatch(zkl__node *n)
{
    if (n->dirwatch)
        return; /* one is set: its event lists again */
    watch_sending(n, &n->dirwatch);
    int rc = zoo_awget_children(n->zh, n->dir, zkl__client_watcher_fn(), watch_ctx(n),
                                dirwatch_list_done, n);
    watch_sent(n, rc, &n->dirwatch);
}

static void wget0_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    wget_done(rc, v, len, st, data, 0);
}

static void wget1_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    wget_done(rc, v, len, st, data, 1);
}

void zkl__watch_arm(zkl__node *n, int slot, const char *name)
{
    if (name == NULL) {
        free(n->watch[slot]);
        n->watch[slot] = NULL;
        n->armed[slot] = false;
        return;
    }
    char *full = zkl__path_join(n->dir, name);
    if (full == NULL) {
        zkl__node_fail(n, ZKL_ENOMEM);
        return;
    }
    if (n->armed[slot] && n->watch[slot] && strcmp(n->watch[slot], full) == 0) {
        free(full); /* already watching it */
        return;
    }
    free(n->watch[slot]);
    n->watch[slot] = full;
    n->armed[slot] = true;
    zkl__engine_watching_add(n);
    if (n->noread) {
        send_dirwatch(n); /* the lock path's children tell (wget_done) */
        return;
    }
    n->wsent[slot]++;
    watch_sending(n, &n->armed[slot]);
    /* A data watch, not an existence watch: none is left behind on a node
     * that is already gone (PROTOCOL §4). */
    int rc = zoo_awget(n->zh, full, zkl__client_watcher_fn(), watch_ctx(n),
                       slot == 0 ? wget0_done : wget1_done, n);
    if (rc != ZOK)
        n->wsent[slot]--;
    watch_sent(n, rc, &n->armed[slot]);
}

static void wgetg_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    (void)v, (void)len, (void)st;
    zkl__node *n = answer_in(data);
    if (current(n) && n->st == N_QUEUED && rc != ZOK) {
        if (zkl__zk_conn_error(rc)) {
            zkl__node_stall(n);
        } else if (rc == ZNONODE) {
            zkl__node_list(n); /* gone before the watch was set: list again */
        } else if (rc == ZNOAUTH) {
            /* Not allowed to read a member: watch the children instead. */
            n->noread = true;
            send_dirwatch(n);
        } else {
            zkl__node_abort(n, zkl__err_from_zk(rc));
        }
    }
    answer_done(n);
}

static void arm_group_member(zkl__node *n, struct gwatch *g)
{
    if (n->noread) {
        /* No request for this member: the lock path's children tell
         * (dirwatch), so no answer is counted on. */
        g->armed = true;
        zkl__engine_watching_add(n);
        send_dirwatch(n);
        return;
    }
    watch_sending(n, &g->armed);
    int rc = zoo_awget(n->zh, g->path, zkl__client_watcher_fn(), watch_ctx(n), wgetg_done, n);
    watch_sent(n, rc, &g->armed);
}

/* Watch every member of the policy's watch group in this listing: the
 * watches still armed from an earlier listing stay, new members get one.
 * Any member going lists again, so the node waits for the first of them. */
void zkl__watch_group(zkl__node *n, const zkl__entry *cs, size_t k, size_t self)
{
    struct gwatch *g = calloc(k ? k : 1, sizeof *g);
    if (g == NULL) {
        zkl__node_fail(n, ZKL_ENOMEM);
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (i == self || !n->pol->watch_group(&cs[i], n->arg))
            continue;
        if ((g[m].path = zkl__path_join(n->dir, cs[i].name)) == NULL) {
            while (m > 0)
                free(g[--m].path);
            free(g);
            zkl__node_fail(n, ZKL_ENOMEM);
            return;
        }
        for (size_t j = 0; j < n->ngroup; j++) {
            if (strcmp(n->group[j].path, g[m].path) == 0) {
                g[m].armed = n->group[j].armed;
                break;
            }
        }
        m++;
    }
    zkl__watch_group_clear(n);
    n->group = g;
    n->ngroup = m;
    for (size_t i = 0; i < m && n->st == N_QUEUED; i++)
        if (!g[i].armed)
            arm_group_member(n, &g[i]);
}

/* Whether the watched node at `path` is of the node's own kind. */
static bool same_kind(const zkl__node *n, const char *path)
{
    zkl__entry e;
    return zkl__entry_parse(path + strlen(n->dir) + 1, &e) == 0 && zkl__entry_is(&e, n->kind);
}

void zkl__watch_event(void *ctx, zhandle_t *zh, int type, const char *path)
{
    struct zkl__engine *e = ctx;
    zkl_client *c = e->c;
    zkl__alone_event(e, path);
    if (e->held_count > 0) {
        zkl__node *n = *zkl__engine_held_find(e, path);
        if (n != NULL && n->own_armed && n->zh == zh && current(n)) {
            /* A held node's own watch: as below, from the index. */
            n->own_armed = false;
            if (n->st == N_HELD) /* our own delete's event is no wake-up */
                c->stats.watch_events++;
            if (type == ZOO_DELETED_EVENT)
                own_gone(n);
            else if (type == ZOO_CHANGED_EVENT && n->st == N_HELD)
                own_changed(n);
            if (!(n->st == N_HELD && n->own_armed))
                zkl__engine_held_remove(n);
        }
    }
    for (zkl__node *n = e->watching, *next; n; n = next) {
        next = n->wnext;
        if (n->own_armed && n->path != NULL && n->zh == zh && current(n) &&
            strcmp(n->path, path) == 0) {
            /* Our own node. Deleted while we did not delete it: someone
             * else did (or the lock path went). */
            n->own_armed = false;
            /* Our own delete's event is no wake-up; anyone else's is. */
            if (n->st == N_QUEUED || n->st == N_HELD)
                c->stats.watch_events++;
            if (type == ZOO_DELETED_EVENT)
                own_gone(n);
            else if (type == ZOO_CHANGED_EVENT && (n->st == N_QUEUED || n->st == N_HELD))
                own_changed(n);
            if (n->st != N_QUEUED && !(n->st == N_HELD && n->own_armed))
                zkl__engine_watching_remove(n);
            continue;
        }
        if (n->st != N_QUEUED) {
            /* Done, or held with nothing watched but its own node: no
             * event but that one is for it any more; a held node's own
             * watch is routed by the index from now on. Should it queue
             * again, it arms its watches, and joins, anew. */
            if (n->st == N_HELD && n->own_armed && n->path != NULL)
                zkl__engine_held_add(n); /* without room it stays listed: only slower */
            else
                zkl__engine_watching_remove(n);
            continue;
        }
        if (n->zh != zh || !current(n))
            continue;
        if (n->dirwatch && type == ZOO_CHILD_EVENT && strcmp(n->dir, path) == 0) {
            /* A waiter that may not read the node ahead: a child came or
             * went; list again, watching on. */
            n->dirwatch = false;
            c->stats.watch_events++;
            send_dirwatch(n);
            continue;
        }
        for (int slot = 0; slot < 2; slot++) {
            if (!n->watch[slot] || strcmp(n->watch[slot], path) != 0)
                continue;
            n->armed[slot] = false;
            c->stats.watch_events++;
            if (type == ZOO_CHANGED_EVENT) {
                zkl__watch_arm(n, slot, path + strlen(n->dir) + 1); /* data changed: watch on */
            } else if (slot == 0 && type == ZOO_DELETED_EVENT && n->pred_first &&
                       n->pred_same && n->pol->handoff && n->own_ok) {
                /* The node we watch was first in our latest listing, and
                 * every node created since sorts after ours: we are first
                 * now, without listing again (PROTOCOL §4). Our own node
                 * still exists: its watch was set before the one on the
                 * node ahead, so its deletion would have been told first. */
                zkl__node_hold_now(n);
            } else if (type == ZOO_DELETED_EVENT && !n->listing && zkl__node_walk_back(n, slot)) {
                /* the next node ahead is watched now (or we hold) */
            } else if (type == ZOO_DELETED_EVENT && n->listing && n->pol->handoff &&
                       same_kind(n, path)) {
                /* A listing is already in flight. Sent before this deletion,
                 * it may still show the node: zkl__node_decide() skips it then, so
                 * that answer serves and no second listing is needed (the
                 * node's name, with its sequence, never comes back). */
                free(n->gone[slot]);
                n->gone[slot] = n->watch[slot];
                n->watch[slot] = NULL;
            } else {
                zkl__node_list(n);
            }
            break;
        }
        for (size_t i = 0; i < n->ngroup; i++) {
            if (strcmp(n->group[i].path, path) != 0)
                continue;
            n->group[i].armed = false;
            c->stats.watch_events++;
            if (type == ZOO_CHANGED_EVENT)
                arm_group_member(n, &n->group[i]); /* data changed: watch on */
            else
                zkl__node_list(n);
            break;
        }
    }
}
