/* The steps a node's machine takes: create (with the lock path's parents),
 * delete (a release, a given-up attempt, a refused delete retried with
 * backoff), recover after a lost create's answer, queue again with a fresh
 * node, fail or abort an attempt; and the answers to its create and delete,
 * the caller's leave and release, the session's end and a reconnection.
 * Each changes the node's state only through zkl__cnode_move(). */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

#define N(s) ZKL__N_##s

static void wake(zkl__cnode *n)
{
    zkl__core_tell(n, ZKL__A_WAKE);
}

void zkl__step_set_err(zkl__cnode *n, int err, int zk_rc)
{
    if (n->err == 0) {
        n->err = (int16_t)err;
        n->zk_rc = (int16_t)zk_rc;
    }
}

void zkl__step_fail(zkl__cnode *n, int err, int zk_rc)
{
    zkl__step_set_err(n, err, zk_rc);
    zkl__cnode_move(n, N(GONE));
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
        zkl__cnode_apply(n, zkl__cnode_do_err(n->seq >= 0 && n->st == N(QUEUED) ? ZKL__S_ABORT : ZKL__S_FAIL, rc),
                        n->core->now);
}

bool zkl__step_unsent(zkl__cnode *n, int rc)
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
    struct zkl__cside *s = zkl__core_side(n);
    if (s == NULL) {
        /* No memory for its time: sent again on the next reconnection. */
        zkl__cnode_move(n, N(DELETING));
        n->stalled = true;
        return;
    }
    s->retry_at = now + (wait > (int64_t)10000000000 ? (int64_t)10000000000 : wait);
    zkl__cnode_move(n, N(BACKOFF));
}


/* The delete of a release was refused (by the server, or not sent at
 * all): the node goes back to held, its error the refusal's. */
static void refused_release(zkl__cnode *n, int rc)
{
    n->err = (int16_t)zkl__zk_class(rc);
    n->zk_rc = (int16_t)rc;
    zkl__cnode_move(n, N(HELD));
    /* A watch event while the delete was out took the node off the
     * routing lists (a releasing node waits for nothing): its own node's
     * deletion may have reached no node since, leaving the watch looking
     * set though spent. Watch it again then. */
    bool unrouted = n->route == ZKL__RT_NONE;
    if (unrouted && n->own != ZKL__OWN_OFF)
        zkl__cnode_own(n, ZKL__OWN_OFF);
    /* The server checks the parent's ACL before the node: the node may be
     * gone already (a lost answer's delete done, say), its watch spent on
     * that delete, which looked like ours. Watch it again: if it is gone,
     * its loss is told. */
    zkl__watch_own(n);
    /* A held node must be routed, or its own watch's event never reaches
     * it. */
    if (n->own != ZKL__OWN_OFF && unrouted)
        zkl__core_route(n, ZKL__RT_WATCHING);
}

/* Send the delete of our node by `name` (ours, or the one a create just
 * answered with when there was no memory to keep it). */
void zkl__step_delete_named(zkl__cnode *n, const char *name, int64_t now)
{
    char buf[ZKL__MAX_PATH + 96];
    zkl__cnode_move(n, n->st == N(RELEASING) ? N(RELEASING) : N(DELETING));
    zkl__act a = {.type = ZKL__A_DELETE, .path = zkl__core_full(n, name, buf)};
    int rc = zkl__core_send(n, &a);
    if (rc == ZOK) {
        /* What a lost connection stalled before is redone by this delete:
         * its answer (a connection error too) says whether to send it
         * again. A reconnection that sent it again would find the first
         * one's refusal holding again, and refuse a second time. */
        n->stalled = false;
        return;
    }
    if (zkl__zk_conn_error(rc)) {
        n->stalled = true; /* sent again on reconnect */
    } else if (zkl__zk_session_error(rc)) {
        zkl__cnode_move(n, N(GONE));
    } else if (n->st == N(RELEASING) || (n->st == N(DELETING) && n->caller == ZKL__C_TAKEN)) {
        /* Not sent at all (no memory to marshal it, say): as a refusal of
         * the server's, the hold stays and its caller hears why now. Also
         * a release whose first answer was lost, sent again (as in
         * zkl__step_deleted): its caller still waits for the server's
         * word, and a retry behind its back would delete a node the
         * caller was told it holds. */
        refused_release(n, rc);
    } else {
        zkl__step_set_err(n, zkl__zk_class(rc), rc);
        schedule_retry(n, now);
    }
}

void zkl__step_delete(zkl__cnode *n, int64_t now)
{
    char own[ZKL__NAME_BUF];
    if (n->seq >= 0) {
        zkl__step_delete_named(n, zkl__core_own(n, own), now);
    } else {
        /* Its name could not be kept: find it by its uuid, as after a
         * create whose answer was lost, and delete what is found. */
        zkl__cnode_move(n, N(RECOVER));
        zkl__step_recover(n);
    }
}

void zkl__step_list(zkl__cnode *n)
{
    if (n->listing != ZKL__L_IDLE) {
        zkl__cnode_listing(n, ZKL__L_OUT_AGAIN); /* coalesce: one listing in flight at a time */
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
        (void)zkl__core_send(n, &a); /* a parent refused: the create's answer tells */
        p[i] = was;
    }
}

void zkl__step_create(zkl__cnode *n)
{
    char path[ZKL__MAX_PATH + 96];
    if (n->creates > 0)
        send_parents(n);
    int mode = ZKL__MODE_EPHEMERAL_SEQUENTIAL;
    if (n->side && n->side->fixed_seq[0]) {
        /* A plain ephemeral node that sorts with a given sequence (read-lock
         * downgrade, PROTOCOL §4). */
        zkl__cnode_create_path(n, n->side->fixed_seq, path, sizeof path);
        mode = ZKL__MODE_EPHEMERAL;
    } else {
        zkl__cnode_create_path(n, "", path, sizeof path);
    }
    zkl__cnode_move(n, N(CREATING));
    zkl__act a = {.type = ZKL__A_CREATE, .path = path, .mode = mode};
    int rc = zkl__core_send(n, &a);
    if (rc != ZOK) {
        if (zkl__zk_conn_error(rc))
            n->stalled = true; /* recovery on reconnect: did it happen? */
        else
            zkl__step_fail(n, zkl__zk_class(rc), rc);
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
void zkl__step_recover(zkl__cnode *n)
{
    zkl__act a = {.type = ZKL__A_SYNC, .path = n->dir->path};
    (void)zkl__core_send(n, &a); /* the listing behind it tells */
    zkl__step_list(n);
}

/* A waiting node that someone else deleted (or whose lock path went) has no
 * place in the queue any more: queue again with a fresh node under a new
 * uuid, within the same deadline, as Curator does. It never holds on the
 * strength of the old one. A downgrade node cannot be made anew: that
 * attempt is lost. */
void zkl__step_requeue(zkl__cnode *n)
{
    zkl__alone_invalidate(n->core, n->dir);
    if (n->side && n->side->fixed_seq[0]) {
        zkl__step_fail(n, ZKL_ELOST, 0);
        return;
    }
    zkl__core_unname(n);
    zkl__watch_off(n);
    zkl__cnode_reading(n, ZKL__R_NODES);
    zkl__walk_clear(n);
    zkl__decide_gone_clear(n);
    zkl__cnode_own(n, ZKL__OWN_OFF);
    n->pred = ZKL__PRED_NONE;
    n->walk = ZKL__W_NONE;
    if (n->listing == ZKL__L_OUT_AGAIN)
        zkl__cnode_listing(n, ZKL__L_OUT);
    zkl__core_new_uuid(n);
    zkl__step_create(n);
}

/* An error that retrying cannot cure (an ACL that refuses, ...) ended the
 * attempt: the caller hears it at once, and a node we made is deleted
 * first (PROTOCOL §5: no orphan may outlive a failed acquire). */
void zkl__step_abort(zkl__cnode *n, int err, int zk_rc, int64_t now)
{
    zkl__step_set_err(n, err, zk_rc);
    if (n->seq >= 0 && n->st == N(QUEUED)) {
        zkl__watch_off(n);
        zkl__step_delete(n, now);
    } else if (n->st == N(RECOVER)) {
        /* A lost create whose recovery may not list the lock path (an ACL
         * without READ): the node it may have made is looked for again
         * later, with backoff, until the session ends, and deleted if
         * found. */
        zkl__cnode_move(n, N(DELETING));
        schedule_retry(n, now);
    } else if (n->st != N(DELETING) && n->st != N(RELEASING) && n->st != N(BACKOFF)) {
        zkl__cnode_move(n, N(GONE));
    }
    wake(n);
}

/* Our own node is gone and we did not delete it. */
void zkl__step_own_gone(zkl__cnode *n)
{
    if (n->st == N(QUEUED) || (n->st == N(HELD) && n->caller != ZKL__C_TAKEN)) {
        /* Waiting, or held a moment ago but not yet taken by the caller,
         * who never learns of that hold: queue again (unless it left). */
        if (abandoned(n))
            zkl__cnode_move(n, N(GONE));
        else
            zkl__step_requeue(n);
    } else if (n->st == N(HELD)) {
        /* The lock is no longer ours: from now on is_held says so, release
         * says ZKL_ELOST and guarded writes are refused. */
        zkl__alone_invalidate(n->core, n->dir);
        zkl__cnode_move(n, N(LOST));
    }
}

/* ---- answers to the node's own requests -------------------------------- */

zkl__decision zkl__step_created(zkl__cnode *n, const zkl__event *ev)
{
    int32_t fast = n->fast_expect;
    n->fast_expect = -1; /* a retry lists as usual */
    if (!current(n) || n->st != N(CREATING))
        return zkl__do(ZKL__S_NONE); /* session gone: the node, if any, went with it */
    if (ev->rc == ZOK) {
        n->core->stats.creates++;
        n->token = ev->czxid;
        char own[ZKL__NAME_BUF];
        const char *base = strrchr(ev->name, '/') ? strrchr(ev->name, '/') + 1 : ev->name;
        zkl__core_name(n, zkl__core_seq(ev->name));
        if (n->seq < 0 || strcmp(zkl__core_own(n, own), base) != 0) {
            /* Not a name of ours: never from a server that keeps the
             * protocol but past the 32-bit wrap of the parent's counter,
             * where the server's %010d gives "-2147483647", whose last ten
             * digits would read as a sequence of ours. Delete it by the
             * name at hand, and fail. */
            zkl__core_unname(n);
            zkl__step_set_err(n, ZKL_EZK, ZAPIERROR);
            return (zkl__decision){ZKL__S_DELETE, 0, 0, ev->name};
        }
        if (abandoned(n))
            return zkl__do(ZKL__S_DELETE);
        zkl__cnode_move(n, N(QUEUED));
        /* Watch our own node at once: this goes out ahead of every watch
         * on another node, so its deletion by someone else is known before
         * any event that could hand us the lock. The acquire does not wait
         * for its answer. */
        zkl__watch_own(n);
        if (fast >= 0 && n->st == N(QUEUED) && !zkl__alone_proved(n, fast))
            return zkl__do(ZKL__S_LIST);
        if (fast >= 0 && n->st == N(QUEUED)) { /* decided as a listing of it alone */
            char *one[1] = {(char *)zkl__core_own(n, own)};
            return zkl__act_listing(n, &(struct String_vector){1, one});
        }
        return zkl__do(ZKL__S_NONE); /* the pipelined listing answers next */
    }
    if (ev->rc == ZNONODE) {
        /* A missing parent, or a container removed under us (PROTOCOL §1):
         * create the parents and try again, within the same deadline. */
        if (abandoned(n))
            return zkl__do(ZKL__S_GONE);
        if (n->parent_rc != 0) /* e.g. a protected parent: ZKL_ENOAUTH */
            return zkl__cnode_do_err(ZKL__S_FAIL, n->parent_rc);
        if (++n->creates > 50)
            return zkl__cnode_do_err(ZKL__S_FAIL, ZNONODE);
        return zkl__do(ZKL__S_CREATE);
    }
    if (zkl__zk_conn_error(ev->rc)) {
        zkl__cnode_move(n, N(RECOVER));
        return zkl__do(ZKL__S_STALL);
    }
    return zkl__cnode_do_err(ZKL__S_FAIL, ev->rc);
}

void zkl__step_deleted(zkl__cnode *n, const zkl__event *ev)
{
    int rc = ev->rc;
    bool releasing = n->st == N(RELEASING);
    if (n->st == N(GONE) || n->st == N(LOST))
        return; /* a second delete's answer: the first one's said it all */
    if (n->st == N(HELD)) {
        /* A second delete's answer after the first was refused and the
         * node held again: refused, it changes nothing; done, the hold
         * went with it. */
        if (rc == ZOK || rc == ZNONODE)
            zkl__step_own_gone(n);
        return;
    }
    if (rc == ZOK || rc == ZNONODE) {
        if (rc == ZOK)
            n->core->stats.deletes++;
        else if (releasing)
            zkl__step_set_err(n, ZKL_ELOST, 0); /* someone else deleted the held node first */
        bool sure = current(n) && rc == ZOK; /* by someone else: nothing sure of the path */
        zkl__cnode_move(n, N(GONE));
        zkl__alone_deleted(n, sure);
    } else if (zkl__zk_conn_error(rc) && current(n)) {
        if (releasing) /* the answer is lost: no release any more */
            zkl__cnode_move(n, N(DELETING));
        zkl__cnode_apply(n, zkl__do(ZKL__S_STALL), ev->now); /* sent again on reconnect */
    } else if (!current(n) || zkl__zk_session_error(rc)) {
        zkl__cnode_move(n, N(GONE)); /* gone with the session */
    } else if (releasing || (n->st == N(DELETING) && n->caller == ZKL__C_TAKEN)) {
        /* Refused (an ACL without DELETE): the node stays, so does the
         * hold; the caller hears why and may try again (PITFALLS: cleanup
         * that the server refuses). Also when this is a release whose
         * first answer was lost, sent again: its caller still waits, and
         * a refusal that lasts (an ACL) would keep it waiting for good. */
        refused_release(n, rc);
    } else {
        /* Refused, and nobody holds the node: keep trying, with backoff,
         * until the session ends or the client closes. */
        if (n->caller != ZKL__C_TAKEN)
            zkl__step_set_err(n, zkl__zk_class(rc), rc);
        schedule_retry(n, ev->now);
    }
}

/* ---- the caller and the session ------------------------------------------- */

void zkl__step_leave(zkl__cnode *n, int64_t now)
{
    if (n->caller != ZKL__C_GONE)
        n->caller = ZKL__C_LEFT;
    /* While CREATING or RECOVER the pending answer, or the recovery on
     * reconnect, sees that it was left and deletes the node. */
    if (current(n) && n->seq >= 0 && (n->st == N(QUEUED) || n->st == N(HELD)))
        zkl__step_delete(n, now);
}

void zkl__step_release(zkl__cnode *n, int64_t now)
{
    if (!current(n) || n->st != N(HELD))
        return; /* the shell tells the caller why */
    n->err = 0;
    n->zk_rc = 0;
    zkl__cnode_move(n, N(RELEASING));
    zkl__step_delete(n, now);
}

void zkl__step_reconnect(zkl__cnode *n)
{
    if (!current(n))
        return;
    /* The watches missed while disconnected fire on reconnection in the
     * server's order, not the order they were set in: the node ahead's
     * deletion may come before our own node's. Until our node is seen
     * again, a waiter's watch on it proves nothing (no handoff). */
    bool unproven = n->own == ZKL__OWN_SET && n->st == N(QUEUED);
    if (unproven)
        zkl__cnode_own(n, ZKL__OWN_OFF);
    /* A watch on our own node that could not be set: set it now (one that
     * was set survives the reconnection). */
    if (n->own == ZKL__OWN_OFF && n->seq >= 0 &&
        (n->st == N(HELD) || (n->st == N(QUEUED) && (n->stalled || unproven))))
        zkl__watch_own(n);
    if (!n->stalled)
        return;
    n->stalled = false;
    switch (n->st) {
    case N(CREATING):
    case N(RECOVER):
        /* Did the create happen? Only a listing can tell. */
        zkl__cnode_move(n, N(RECOVER));
        zkl__core_unname(n);
        zkl__cnode_listing(n, ZKL__L_IDLE);
        zkl__step_recover(n);
        break;
    case N(QUEUED):
        zkl__cnode_armed(n, &n->armed[0], ZKL__ARM_OFF);
        zkl__cnode_armed(n, &n->armed[1], ZKL__ARM_OFF);
        if (n->side)
            for (size_t i = 0; i < n->side->ngroup; i++)
                zkl__cnode_armed(n, &n->side->group[i].armed, ZKL__ARM_OFF);
        zkl__step_list(n);
        break;
    case N(RELEASING):
    case N(DELETING):
    case N(BACKOFF):
        zkl__step_delete(n, n->core->now);
        break;
    default:
        break;
    }
}

void zkl__step_session_end(zkl__cnode *n)
{
    struct zkl__core *k = n->core;
    if (n->gen == k->gen && !k->closing)
        return;
    /* Every node the session held went with it: tell each owner (not
     * when the user closes the client: that is no loss). */
    if (n->st == N(HELD) && !k->closing)
        zkl__cnode_move(n, N(LOST));
    if (n->st != N(HELD) && n->st != N(LOST)) {
        zkl__step_set_err(n, k->closing ? ZKL_ECLOSED : ZKL_ELOST, 0);
        zkl__cnode_move(n, N(GONE));
    }
    wake(n);
    zkl__cnode_maybe_free(n);
}

void zkl__step_retry(zkl__cnode *n, int64_t now)
{
    struct zkl__core *k = n->core;
    if (!current(n) || n->st != N(BACKOFF) || n->side->retry_at > now)
        return;
    if (!k->connected) {
        zkl__cnode_move(n, N(DELETING));
        n->stalled = true; /* sent on reconnect */
    } else if (n->refs > 0) {
        n->side->retry_at = now + 100000000; /* an answer is still due: later */
        zkl__act a = {.type = ZKL__A_KICK, .n = n, .at = n->side->retry_at};
        (void)k->sink(k->ctx, &a);
    } else {
        zkl__step_delete(n, now);
    }
}

