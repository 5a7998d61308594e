/* A contender node's machine. zkl__cnode_on() is its one entry: it hands
 * an event to the file that understands it (an answer to a listing goes to
 * decide.c, a watch's to watch.c, ...), which returns what to do; this file
 * does it. move() is the one function that changes a node's state: it
 * checks the move against the table of legal ones and runs what entering
 * the state means, written once. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"

#define TO(s) (1u << (s))
#define N(s) ZKL__N_##s
/* The moves a node may make, by state: bit `to` of legal[from]. Every one
 * of them is taken by the tests (tests/check_core_node.c). */
static const unsigned legal[ZKL__N_COUNT] = {
    [N(NEW)] = TO(N(CREATING)),
    /* to RECOVER: the create's answer was lost; to QUEUED: it came */
    [N(CREATING)] = TO(N(RECOVER)) | TO(N(QUEUED)) | TO(N(DELETING)) | TO(N(GONE)),
    [N(RECOVER)] = TO(N(CREATING)) | TO(N(QUEUED)) | TO(N(DELETING)) | TO(N(GONE)),
    /* to CREATING: our node was taken away, queue again */
    [N(QUEUED)] = TO(N(CREATING)) | TO(N(HELD)) | TO(N(DELETING)) | TO(N(GONE)),
    /* to CREATING: lost before the caller took it; to GONE: a downgrade
     * node lost so, or a release after the session ended */
    [N(HELD)] = TO(N(CREATING)) | TO(N(RELEASING)) | TO(N(DELETING)) | TO(N(LOST)) | TO(N(GONE)),
    /* to HELD: the server refused the delete; to DELETING: its answer was
     * lost, after which the delete is no release any more */
    [N(RELEASING)] = TO(N(HELD)) | TO(N(DELETING)) | TO(N(GONE)),
    /* to RECOVER: its name could not be kept (no memory): find it by uuid */
    [N(DELETING)] = TO(N(BACKOFF)) | TO(N(GONE)) | TO(N(RECOVER)),
    [N(BACKOFF)] = TO(N(DELETING)) | TO(N(GONE)),
    [N(LOST)] = 0, /* freed once its caller is done with it */
    [N(GONE)] = 0,
};

bool zkl__cnode_legal(int from, int to)
{
    return from >= 0 && from < ZKL__N_COUNT && to >= 0 && to < ZKL__N_COUNT &&
           (legal[from] & TO(to)) != 0;
}

static void wake(zkl__cnode *n)
{
    zkl__tell(n, ZKL__A_WAKE);
}

/* The one place a node's state changes. */
static void move(zkl__cnode *n, enum zkl__nstate to)
{
    enum zkl__nstate from = (enum zkl__nstate)n->st;
    if (from == to)
        return;
    assert(zkl__cnode_legal((int)from, (int)to));
    struct zkl__core *k = n->core;
    k->moves[from][to]++;
    if (from == N(QUEUED))
        k->queued--;
    if (from == N(BACKOFF))
        zkl__route(n, ZKL__RT_NONE);
    n->st = (uint8_t)to;
    switch (to) {
    case N(QUEUED):
        k->queued++;
        break;
    case N(HELD):
        if (from != N(RELEASING)) {
            /* It came to hold: nothing ahead matters any more. */
            k->holds++;
            zkl__ahead_clear(n);
            n->walk = ZKL__W_NONE;
            zkl__watch_off(n);
            zkl__gone_clear(n);
        }
        wake(n);
        break;
    case N(LOST):
        zkl__tell(n, ZKL__A_LOST); /* told once: LOST is never entered twice */
        wake(n);
        break;
    case N(BACKOFF): {
        wake(n); /* nothing left to wait for: the keeper retries */
        zkl__route(n, ZKL__RT_BACKOFF);
        zkl__act a = {.type = ZKL__A_KICK, .n = n, .at = n->retry_at};
        (void)k->sink(k->ctx, &a);
        break;
    }
    case N(GONE):
        wake(n);
        break;
    default:
        break;
    }
}

zkl__decision zkl__do_err(enum zkl__step s, int zk_rc)
{
    return (zkl__decision){s, zkl__zk_class(zk_rc), zk_rc, NULL};
}

zkl__decision zkl__do_code(enum zkl__step s, int err)
{
    return (zkl__decision){s, err, 0, NULL};
}

static void set_err(zkl__cnode *n, int err, int zk_rc)
{
    if (n->err == 0) {
        n->err = (int16_t)err;
        n->zk_rc = (int16_t)zk_rc;
    }
}

static void fail(zkl__cnode *n, int err, int zk_rc)
{
    set_err(n, err, zk_rc);
    move(n, N(GONE));
}

/* ---- sending ------------------------------------------------------------ */

/* A request of a waiting node could not be sent: a connection error is
 * redone on reconnect; anything else ends the attempt, and our node, if
 * there is one, is deleted first (PROTOCOL §5). */
static void unsent(zkl__cnode *n, int rc)
{
    if (zkl__zk_conn_error(rc))
        n->stalled = true;
    else
        zkl__node_apply(n, zkl__do_err(n->name && n->st == N(QUEUED) ? ZKL__S_ABORT : ZKL__S_FAIL, rc),
                        n->core->now);
}

bool zkl__node_send_failed(zkl__cnode *n, int rc)
{
    if (rc == ZOK)
        return false;
    unsent(n, rc);
    return true;
}

/* Backoff for a refused delete of a node nobody holds any more: from 100 ms
 * doubling to 10 s, until the session ends or the client closes. */
static void schedule_retry(zkl__cnode *n, int64_t now)
{
    int shift = n->retries < 7 ? n->retries : 7;
    if (n->retries < 100)
        n->retries++;
    int64_t wait = (int64_t)100000000 << shift;
    n->retry_at = now + (wait > (int64_t)10000000000 ? (int64_t)10000000000 : wait);
    move(n, N(BACKOFF));
}

static void recover(zkl__cnode *n);

/* Send the delete of our node by `name` (ours, or the one a create just
 * answered with when there was no memory to keep it). */
static void delete_named(zkl__cnode *n, const char *name, int64_t now)
{
    char buf[ZKL__MAX_PATH + 96];
    move(n, n->st == N(RELEASING) ? N(RELEASING) : N(DELETING));
    zkl__act a = {.type = ZKL__A_DELETE, .path = zkl__full(n, name, buf)};
    int rc = zkl__send(n, &a);
    if (rc == ZOK)
        return;
    if (zkl__zk_conn_error(rc)) {
        n->stalled = true; /* sent again on reconnect */
    } else if (zkl__zk_session_error(rc)) {
        move(n, N(GONE));
    } else {
        if (n->st == N(RELEASING))
            move(n, N(DELETING));
        set_err(n, zkl__zk_class(rc), rc);
        schedule_retry(n, now);
    }
}

static void delete_node(zkl__cnode *n, int64_t now)
{
    if (n->name != NULL) {
        delete_named(n, n->name, now);
    } else {
        /* Its name could not be kept: find it by its uuid, as after a
         * create whose answer was lost, and delete what is found. */
        move(n, N(RECOVER));
        recover(n);
    }
}

void zkl__node_list(zkl__cnode *n)
{
    if (n->listing != ZKL__L_IDLE) {
        n->listing = ZKL__L_OUT_AGAIN; /* coalesce: one listing in flight at a time */
        return;
    }
    int rc = zkl__joint_send(n);
    if (rc != ZOK)
        unsent(n, rc);
}

/* Create the lock path, or it and its ancestors; the contender create sent
 * right after them finds them (one session's requests are served in order).
 * Most often only the lock path itself is missing: the first retry creates
 * just it, later ones every ancestor too. */
static void send_parents(zkl__cnode *n)
{
    char p[ZKL__MAX_PATH + 1];
    size_t len = n->dir->len < ZKL__MAX_PATH ? n->dir->len : ZKL__MAX_PATH;
    memcpy(p, n->dir->path, len);
    p[len] = '\0';
    for (size_t i = 1; i <= len; i++) {
        if (i < len && (p[i] != '/' || n->creates <= 1))
            continue;
        char was = p[i];
        p[i] = '\0';
        zkl__act a = {.type = ZKL__A_PARENT, .path = p};
        (void)zkl__send(n, &a); /* a parent refused: the create's answer tells */
        p[i] = was;
    }
}

static void create(zkl__cnode *n)
{
    char uuid[37], path[ZKL__MAX_PATH + 96];
    zkl__uuid_text(n->uuid, uuid);
    if (n->creates > 0)
        send_parents(n);
    int mode = ZKL__MODE_EPHEMERAL_SEQUENTIAL;
    if (n->side && n->side->fixed_seq[0]) {
        /* A plain ephemeral node that sorts with a given sequence (read-lock
         * downgrade, PROTOCOL §4). */
        snprintf(path, sizeof path, "%s/_c_%s-%s%s", n->dir->path, uuid, n->kind,
                 n->side->fixed_seq);
        mode = ZKL__MODE_EPHEMERAL;
    } else {
        snprintf(path, sizeof path, "%s/_c_%s-%s", n->dir->path, uuid, n->kind);
    }
    move(n, N(CREATING));
    zkl__act a = {.type = ZKL__A_CREATE, .path = path, .mode = mode};
    int rc = zkl__send(n, &a);
    if (rc != ZOK) {
        if (zkl__zk_conn_error(rc))
            n->stalled = true; /* recovery on reconnect: did it happen? */
        else
            fail(n, zkl__zk_class(rc), rc);
        return;
    }
    if (n->fast_expect >= 0)
        return; /* its number may answer for the listing (alone.c) */
    /* The listing rides right behind the create: one round trip for an
     * uncontended acquire. Its answer is ignored if the create failed; one
     * still out from an earlier create is no answer to this one. */
    (void)zkl__joint_send(n); /* if it fails, the create's answer tells */
}

/* Recovery's listing must see the lost create if the quorum applied it. The
 * server we reconnected to may lag behind the leader, which may still commit
 * a create sent on the old connection: a sync first makes the listing (same
 * session, served in order) see every write the leader had proposed. */
static void recover(zkl__cnode *n)
{
    zkl__act a = {.type = ZKL__A_SYNC, .path = n->dir->path};
    (void)zkl__send(n, &a); /* the listing behind it tells */
    zkl__node_list(n);
}

/* A waiting node that someone else deleted (or whose lock path went) has no
 * place in the queue any more: queue again with a fresh node under a new
 * uuid, within the same deadline, as Curator does. It never holds on the
 * strength of the old one. A downgrade node cannot be made anew: that
 * attempt is lost. */
static void requeue(zkl__cnode *n)
{
    zkl__alone_invalidate(n->core, n->dir);
    if (n->side && n->side->fixed_seq[0]) {
        fail(n, ZKL_ELOST, 0);
        return;
    }
    free(n->name);
    n->name = NULL;
    zkl__watch_off(n);
    n->reading = ZKL__R_NODES;
    zkl__ahead_clear(n);
    zkl__gone_clear(n);
    n->own = ZKL__OWN_OFF;
    n->pred = ZKL__PRED_NONE;
    n->walk = ZKL__W_NONE;
    if (n->listing == ZKL__L_OUT_AGAIN)
        n->listing = ZKL__L_OUT;
    zkl__new_uuid(n);
    create(n);
}

/* An error that retrying cannot cure (an ACL that refuses, ...) ended the
 * attempt: the caller hears it at once, and a node we made is deleted
 * first (PROTOCOL §5: no orphan may outlive a failed acquire). */
static void abort_attempt(zkl__cnode *n, int err, int zk_rc, int64_t now)
{
    set_err(n, err, zk_rc);
    if (n->name != NULL && n->st == N(QUEUED)) {
        zkl__watch_off(n);
        delete_node(n, now);
    } else if (n->st != N(DELETING) && n->st != N(RELEASING) && n->st != N(BACKOFF)) {
        move(n, N(GONE));
    }
    wake(n);
}

/* Our own node is gone and we did not delete it. */
static void own_gone(zkl__cnode *n)
{
    if (n->st == N(QUEUED) || (n->st == N(HELD) && n->caller != ZKL__C_TAKEN)) {
        /* Waiting, or held a moment ago but not yet taken by the caller,
         * who never learns of that hold: queue again (unless it left). */
        if (abandoned(n))
            move(n, N(GONE));
        else
            requeue(n);
    } else if (n->st == N(HELD)) {
        /* The lock is no longer ours: from now on is_held says so, release
         * says ZKL_ELOST and guarded writes are refused. */
        zkl__alone_invalidate(n->core, n->dir);
        move(n, N(LOST));
    }
}

void zkl__node_apply(zkl__cnode *n, zkl__decision d, int64_t now)
{
    switch (d.step) {
    case ZKL__S_NONE:
        break;
    case ZKL__S_HOLD:
        move(n, N(HELD));
        break;
    case ZKL__S_LIST:
        zkl__node_list(n);
        break;
    case ZKL__S_REQUEUE:
        requeue(n);
        break;
    case ZKL__S_CREATE:
        create(n);
        break;
    case ZKL__S_ADOPT:
        move(n, N(QUEUED));
        zkl__node_list(n);
        break;
    case ZKL__S_DELETE:
        if (d.name != NULL) {
            delete_named(n, d.name, now);
            wake(n); /* the attempt failed: its caller hears it now */
        } else {
            delete_node(n, now);
        }
        break;
    case ZKL__S_GONE:
        move(n, N(GONE));
        break;
    case ZKL__S_FAIL:
        fail(n, d.err, d.zk_rc);
        break;
    case ZKL__S_ABORT:
        abort_attempt(n, d.err, d.zk_rc, now);
        break;
    case ZKL__S_STALL:
        n->stalled = true;
        if (n->core->connected && !n->core->closing)
            zkl__node_reconnect(n); /* the answer came from the connection before */
        break;
    case ZKL__S_OWN_GONE:
        own_gone(n);
        break;
    }
}

/* ---- answers to the node's own requests -------------------------------- */

static zkl__decision created(zkl__cnode *n, const zkl__event *ev)
{
    int64_t fast = n->fast_expect;
    n->fast_expect = -1; /* a retry lists as usual */
    if (!current(n) || n->st != N(CREATING))
        return zkl__do(ZKL__S_NONE); /* session gone: the node, if any, went with it */
    if (ev->rc == ZOK) {
        n->core->stats.creates++;
        n->token = ev->czxid;
        if ((n->name = zkl__core_strdup(n->core, ev->name)) == NULL) {
            /* No memory to keep its name; the name is at hand: delete by
             * it now, rather than leave it to the session's end. */
            set_err(n, ZKL_ENOMEM, 0);
            return (zkl__decision){ZKL__S_DELETE, 0, 0, ev->name};
        }
        if (abandoned(n))
            return zkl__do(ZKL__S_DELETE);
        move(n, N(QUEUED));
        /* Watch our own node at once: this goes out ahead of every watch
         * on another node, so its deletion by someone else is known before
         * any event that could hand us the lock. The acquire does not wait
         * for its answer. */
        zkl__watch_own(n);
        if (fast >= 0 && n->st == N(QUEUED))
            return zkl__alone_answer(n, fast);
        return zkl__do(ZKL__S_NONE); /* the pipelined listing answers next */
    }
    if (ev->rc == ZNONODE) {
        /* A missing parent, or a container removed under us (PROTOCOL §1):
         * create the parents and try again, within the same deadline. */
        if (abandoned(n))
            return zkl__do(ZKL__S_GONE);
        if (n->parent_rc != 0) /* e.g. a protected parent: ZKL_ENOAUTH */
            return zkl__do_err(ZKL__S_FAIL, n->parent_rc);
        if (++n->creates > 50)
            return zkl__do_err(ZKL__S_FAIL, ZNONODE);
        return zkl__do(ZKL__S_CREATE);
    }
    if (zkl__zk_conn_error(ev->rc)) {
        move(n, N(RECOVER));
        return zkl__do(ZKL__S_STALL);
    }
    return zkl__do_err(ZKL__S_FAIL, ev->rc);
}

static void deleted(zkl__cnode *n, const zkl__event *ev)
{
    int rc = ev->rc;
    bool releasing = n->st == N(RELEASING);
    if (rc == ZOK || rc == ZNONODE) {
        if (rc == ZOK)
            n->core->stats.deletes++;
        else if (releasing)
            set_err(n, ZKL_ELOST, 0); /* someone else deleted the held node first */
        bool sure = current(n) && rc == ZOK; /* by someone else: nothing sure of the path */
        move(n, N(GONE));
        zkl__alone_deleted(n, sure);
    } else if (zkl__zk_conn_error(rc) && current(n)) {
        if (releasing) /* the answer is lost: no release any more */
            move(n, N(DELETING));
        zkl__node_apply(n, zkl__do(ZKL__S_STALL), ev->now); /* sent again on reconnect */
    } else if (!current(n) || zkl__zk_session_error(rc)) {
        move(n, N(GONE)); /* gone with the session */
    } else if (releasing) {
        /* Refused (an ACL without DELETE): the node stays, so does the
         * hold; the caller hears why and may try again (PITFALLS: cleanup
         * that the server refuses). */
        n->err = (int16_t)zkl__zk_class(rc);
        n->zk_rc = (int16_t)rc;
        move(n, N(HELD));
    } else {
        /* Refused, and nobody holds the node: keep trying, with backoff,
         * until the session ends or the client closes. */
        set_err(n, zkl__zk_class(rc), rc);
        schedule_retry(n, ev->now);
    }
}

/* ---- the caller and the session ------------------------------------------- */

static void leave(zkl__cnode *n, int64_t now)
{
    if (n->caller != ZKL__C_GONE)
        n->caller = ZKL__C_LEFT;
    /* While CREATING or RECOVER the pending answer, or the recovery on
     * reconnect, sees that it was left and deletes the node. */
    if (current(n) && n->name != NULL && (n->st == N(QUEUED) || n->st == N(HELD)))
        delete_node(n, now);
}

static void release(zkl__cnode *n, int64_t now)
{
    if (!current(n) || n->st != N(HELD))
        return; /* the shell tells the caller why */
    n->err = 0;
    n->zk_rc = 0;
    move(n, N(RELEASING));
    delete_node(n, now);
}

void zkl__node_reconnect(zkl__cnode *n)
{
    if (!current(n))
        return;
    /* A watch on our own node that could not be set: set it now (one that
     * was set survives the reconnection). */
    if (n->own == ZKL__OWN_OFF && n->name != NULL &&
        (n->st == N(HELD) || (n->st == N(QUEUED) && n->stalled)))
        zkl__watch_own(n);
    if (!n->stalled)
        return;
    n->stalled = false;
    switch (n->st) {
    case N(CREATING):
    case N(RECOVER):
        /* Did the create happen? Only a listing can tell. */
        move(n, N(RECOVER));
        free(n->name);
        n->name = NULL;
        n->listing = ZKL__L_IDLE;
        recover(n);
        break;
    case N(QUEUED):
        n->armed[0] = n->armed[1] = false;
        if (n->side)
            for (size_t i = 0; i < n->side->ngroup; i++)
                n->side->group[i].armed = false;
        zkl__node_list(n);
        break;
    case N(RELEASING):
    case N(DELETING):
    case N(BACKOFF):
        delete_node(n, n->core->now);
        break;
    default:
        break;
    }
}

void zkl__node_session_end(zkl__cnode *n)
{
    struct zkl__core *k = n->core;
    if (n->gen == k->gen && !k->closing)
        return;
    /* Every node the session held went with it: tell each owner (not
     * when the user closes the client: that is no loss). */
    if (n->st == N(HELD) && !k->closing)
        move(n, N(LOST));
    if (n->st != N(HELD) && n->st != N(LOST)) {
        set_err(n, k->closing ? ZKL_ECLOSED : ZKL_ELOST, 0);
        move(n, N(GONE));
    }
    wake(n);
    zkl__node_maybe_free(n);
}

void zkl__node_retry(zkl__cnode *n, int64_t now)
{
    struct zkl__core *k = n->core;
    if (!current(n) || n->st != N(BACKOFF) || n->retry_at > now)
        return;
    if (!k->connected) {
        move(n, N(DELETING));
        n->stalled = true; /* sent on reconnect */
    } else if (n->refs > 0) {
        n->retry_at = now + 100000000; /* an answer is still due: later */
        zkl__act a = {.type = ZKL__A_KICK, .n = n, .at = n->retry_at};
        (void)k->sink(k->ctx, &a);
    } else {
        delete_node(n, now);
    }
}

/* ---- the node's life ------------------------------------------------------- */

bool zkl__cnode_current(const zkl__cnode *n)
{
    return current(n);
}

bool zkl__cnode_exists(const zkl__cnode *n)
{
    return n->st != N(GONE) && n->st != N(LOST);
}

bool zkl__cnode_settled(const zkl__cnode *n)
{
    return n->st == N(GONE) || n->st == N(LOST) || n->st == N(BACKOFF);
}

int zkl__cnode_init(struct zkl__core *k, zkl__cnode *n, const zkl__cnode_opts *o)
{
    n->core = k;
    n->pol = o->pol;
    n->arg = o->arg;
    n->kind = o->kind ? o->kind : o->pol->kind;
    n->prefetch = o->prefetch;
    n->patience = o->try_once ? ZKL__P_ONCE : ZKL__P_DEADLINE;
    n->fast_expect = -1;
    n->gen = k->gen;
    if ((o->kind || o->fixed_seq) && zkl__side(n) == NULL)
        return ZKL_ENOMEM;
    if (o->kind && (n->kind = n->side->kind_copy = zkl__core_strdup(k, o->kind)) == NULL) {
        free(n->side);
        return ZKL_ENOMEM;
    }
    if (o->fixed_seq)
        snprintf(n->side->fixed_seq, sizeof n->side->fixed_seq, "%s", o->fixed_seq);
    if ((n->dir = zkl__dir_get(k, o->dir)) == NULL) {
        if (n->side)
            free(n->side->kind_copy);
        free(n->side);
        return ZKL_ENOMEM;
    }
    zkl__new_uuid(n);
    ZKL__DLIST_PUSH(k->live, n, prev, next);
    return 0;
}

void zkl__cnode_start(zkl__cnode *n, int64_t now)
{
    n->core->now = now;
    zkl__alone_take(n);
    create(n);
    zkl__node_maybe_free(n);
}

/* Free the node once nobody needs it: no caller, no answer to come, and
 * nothing left to delete on the server (or the session is gone). */
void zkl__node_maybe_free(zkl__cnode *n)
{
    if (n->caller != ZKL__C_GONE || n->refs > 0)
        return;
    if (zkl__cnode_exists(n) && current(n))
        return;
    struct zkl__core *k = n->core;
    zkl__alone_deleted(n, false);
    zkl__route(n, ZKL__RT_NONE);
    if (n->st == N(QUEUED))
        k->queued--;
    ZKL__DLIST_UNLINK(k->live, n, prev, next);
    zkl__skip_clear(n);
    zkl__ahead_clear(n);
    zkl__watch_off(n);
    zkl__gone_clear(n);
    if (n->side) {
        free(n->side->kind_copy);
        free(n->side);
        n->side = NULL;
    }
    free(n->name);
    n->name = NULL;
    zkl__dir_put(k, n->dir);
    n->dir = NULL;
    zkl__tell(n, ZKL__A_FREE); /* the last thing done with n */
}

/* After a watch event: a node no longer waiting is no longer among the
 * watching ones; a held one watching only itself goes to the held index,
 * so that routing an event costs the same with ten thousand locks held as
 * with one. */
static void tidy_route(zkl__cnode *n)
{
    if (n->route != ZKL__RT_WATCHING && n->route != ZKL__RT_HELD)
        return;
    if (n->st == N(QUEUED))
        return;
    if (n->st == N(HELD) && n->own != ZKL__OWN_OFF && current(n))
        zkl__route(n, ZKL__RT_HELD); /* without room it stays listed: only slower */
    else
        zkl__route(n, ZKL__RT_NONE);
}

void zkl__cnode_on(zkl__cnode *n, const zkl__event *ev)
{
    zkl__decision d = zkl__do(ZKL__S_NONE);
    n->core->now = ev->now;
    switch (ev->type) {
    case ZKL__E_CREATED:
        n->refs--;
        d = created(n, ev);
        break;
    case ZKL__E_PARENT:
        n->refs--;
        if (ev->rc == ZNOAUTH || ev->rc == ZINVALIDACL)
            n->parent_rc = (int16_t)ev->rc; /* the create that fails for want of it says why */
        break;
    case ZKL__E_LISTED:
        n->refs--;
        d = zkl__listed(n, ev->rc, ev->kids);
        break;
    case ZKL__E_SYNCED:
        n->refs--; /* the listing sent right behind it tells what happened */
        break;
    case ZKL__E_FOUND:
        n->refs--;
        d = zkl__found(n, ev);
        break;
    case ZKL__E_DIR:
        n->refs--;
        d = zkl__alone_dir_answer(n, ev->rc);
        break;
    case ZKL__E_AHEAD:
    case ZKL__E_MEMBER:
    case ZKL__E_KIDS:
    case ZKL__E_OWN:
    case ZKL__E_OWN_DATA:
        n->refs--;
        d = zkl__watch_answer(n, ev);
        break;
    case ZKL__E_DELETED:
        n->refs--;
        deleted(n, ev);
        break;
    case ZKL__E_WATCH:
        zkl__node_apply(n, zkl__watch_event(n, ev), ev->now);
        tidy_route(n);
        break;
    case ZKL__E_CONNECTED:
        zkl__node_reconnect(n);
        break;
    case ZKL__E_SESSION_END:
        zkl__node_session_end(n);
        return; /* n may be freed */
    case ZKL__E_LEAVE:
        leave(n, ev->now);
        break;
    case ZKL__E_RELEASE:
        release(n, ev->now);
        break;
    case ZKL__E_TAKEN:
        if (n->caller == ZKL__C_WAITING)
            n->caller = ZKL__C_TAKEN;
        break;
    case ZKL__E_DETACH:
        if (n->caller != ZKL__C_LEFT && n->caller != ZKL__C_GONE)
            leave(n, ev->now); /* a caller that goes takes its attempt with it */
        n->caller = ZKL__C_GONE;
        break;
    case ZKL__E_RETRY:
        zkl__node_retry(n, ev->now);
        break;
    default:
        break;
    }
    zkl__node_apply(n, d, ev->now);
    zkl__node_maybe_free(n);
}
