/* A contender node's machine. zkl__cnode_on() is its one entry: it hands
 * an event to the file that understands it (an answer to a listing goes to
 * act.c, which carries out what decide.c makes of it; a watch's to
 * watch.c, ...), which returns what to do; zkl__cnode_apply() does it, by
 * the steps of steps.c. zkl__cnode_move() is
 * the one function that changes a node's state: it checks the move against
 * the table of legal ones and runs what entering the state means, written
 * once. */
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
    /* to RECOVER: its name could not be kept (no memory): find it by uuid;
     * to HELD: a release whose answer was lost, sent again and refused */
    [N(DELETING)] = TO(N(HELD)) | TO(N(BACKOFF)) | TO(N(GONE)) | TO(N(RECOVER)),
    /* to RECOVER: a lost create's node, not found for want of READ, is
     * looked for again */
    [N(BACKOFF)] = TO(N(DELETING)) | TO(N(GONE)) | TO(N(RECOVER)),
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
    zkl__core_tell(n, ZKL__A_WAKE);
}

/* The one place a node's state changes. */
void zkl__cnode_move(zkl__cnode *n, enum zkl__nstate to)
{
    enum zkl__nstate from = (enum zkl__nstate)n->st;
    if (from == to)
        return;
    struct zkl__core *k = n->core;
    /* DELETING -> HELD is a refused release sent again: only a taken
     * hold may come back so, never a node whose caller left. */
    if (!zkl__cnode_legal((int)from, (int)to))
        zkl__cnode_broken(n, "a lock node", (int)from, (int)to);
    else if (from == N(DELETING) && to == N(HELD) && n->caller != ZKL__C_TAKEN)
        zkl__cnode_broken(n, "a lock node whose caller left", (int)from, (int)to);
    k->moves[from][to]++;
    if (from == N(QUEUED))
        k->queued--;
    if (from == N(BACKOFF))
        zkl__core_route(n, ZKL__RT_NONE);
    n->st = (uint8_t)to;
    switch (to) {
    case N(QUEUED):
        k->queued++;
        break;
    case N(HELD):
        if (from != N(RELEASING) && from != N(DELETING)) { /* not a refused release */
            /* It came to hold: nothing ahead matters any more. */
            k->holds++;
            zkl__walk_clear(n);
            n->walk = ZKL__W_NONE;
            zkl__watch_off(n);
            zkl__decide_gone_clear(n);
        }
        wake(n);
        break;
    case N(LOST):
        zkl__cnode_tell_lost(n); /* unless a forbidden move told it already */
        wake(n);
        break;
    case N(BACKOFF): {
        wake(n); /* nothing left to wait for: the keeper retries */
        zkl__core_route(n, ZKL__RT_BACKOFF);
        zkl__act a = {.type = ZKL__A_KICK, .n = n, .at = n->side->retry_at};
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

void zkl__cnode_apply(zkl__cnode *n, zkl__decision d, int64_t now)
{
    switch (d.step) {
    case ZKL__S_NONE:
        break;
    case ZKL__S_HOLD:
        zkl__cnode_move(n, N(HELD));
        break;
    case ZKL__S_LIST:
        zkl__step_list(n);
        break;
    case ZKL__S_REQUEUE:
        zkl__step_requeue(n);
        break;
    case ZKL__S_CREATE:
        zkl__step_create(n);
        break;
    case ZKL__S_ADOPT:
        zkl__cnode_move(n, N(QUEUED));
        zkl__step_list(n);
        break;
    case ZKL__S_DELETE:
        if (d.name != NULL) {
            zkl__step_delete_named(n, d.name, now);
            wake(n); /* the attempt failed: its caller hears it now */
        } else {
            zkl__step_delete(n, now);
        }
        break;
    case ZKL__S_GONE:
        zkl__cnode_move(n, N(GONE));
        break;
    case ZKL__S_FAIL:
        zkl__step_fail(n, d.err, d.zk_rc);
        break;
    case ZKL__S_ABORT:
        zkl__step_abort(n, d.err, d.zk_rc, now);
        break;
    case ZKL__S_STALL:
        n->stalled = true;
        if (n->core->connected && !n->core->closing)
            zkl__step_reconnect(n); /* the answer came from the connection before */
        break;
    case ZKL__S_OWN_GONE:
        zkl__step_own_gone(n);
        break;
    case ZKL__S_WALK:
        if (!zkl__watch_ahead(n))
            zkl__cnode_apply(n, zkl__cnode_do_code(ZKL__S_ABORT, ZKL_ENOMEM), now);
        break;
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
    n->prefetch = o->prefetch;
    n->patience = o->try_once ? ZKL__P_ONCE : ZKL__P_DEADLINE;
    n->fast_expect = -1;
    n->seq = -1;
    n->name = NULL;
    n->wpeer.seq = -1;
    n->gen = k->gen;
    if ((o->kind || o->fixed_seq) && zkl__core_side(n) == NULL)
        return ZKL_ENOMEM;
    if (o->kind && (n->side->kind_copy = zkl__core_strdup(k, o->kind)) == NULL) {
        free(n->side);
        return ZKL_ENOMEM;
    }
    if (o->fixed_seq)
        snprintf(n->side->fixed_seq, sizeof n->side->fixed_seq, "%s", o->fixed_seq);
    if ((n->dir = zkl__core_dir_get(k, o->dir)) == NULL) {
        if (n->side)
            free(n->side->kind_copy);
        free(n->side);
        return ZKL_ENOMEM;
    }
    zkl__core_new_uuid(n);
    ZKL__DLIST_PUSH(k->live, n, prev, next);
    return 0;
}

void zkl__cnode_start(zkl__cnode *n, int64_t now)
{
    n->core->now = now;
    zkl__alone_take(n);
    zkl__step_create(n);
    zkl__cnode_maybe_free(n);
}

/* Free the node once nobody needs it: no caller, no answer to come, and
 * nothing left to delete on the server (or the session is gone). */
void zkl__cnode_maybe_free(zkl__cnode *n)
{
    if (n->caller != ZKL__C_GONE || n->refs > 0)
        return;
    if (zkl__cnode_exists(n) && current(n))
        return;
    struct zkl__core *k = n->core;
    zkl__alone_deleted(n, false);
    zkl__core_route(n, ZKL__RT_NONE);
    if (n->st == N(QUEUED))
        k->queued--;
    ZKL__DLIST_UNLINK(k->live, n, prev, next);
    zkl__decide_skip_clear(n);
    zkl__walk_clear(n);
    zkl__watch_off(n);
    zkl__decide_gone_clear(n);
    if (n->side) {
        free(n->side->kind_copy);
        free(n->side);
        n->side = NULL;
    }
    zkl__core_unname(n);
    zkl__core_dir_put(k, n->dir);
    n->dir = NULL;
    zkl__core_tell(n, ZKL__A_FREE); /* the last thing done with n */
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
        zkl__core_route(n, ZKL__RT_HELD); /* without room it stays listed: only slower */
    else
        zkl__core_route(n, ZKL__RT_NONE);
}

void zkl__cnode_on(zkl__cnode *n, const zkl__event *ev)
{
    zkl__decision d = zkl__do(ZKL__S_NONE);
    n->core->now = ev->now;
    if (zkl__ev_is_answer(ev->type))
        n->refs--; /* an answer, which the node waited for */
    switch (ev->type) {
    case ZKL__E_CREATED:
        d = zkl__step_created(n, ev);
        break;
    case ZKL__E_PARENT:
        if (ev->rc == ZNOAUTH || ev->rc == ZINVALIDACL || ev->rc == ZNOCHILDRENFOREPHEMERALS)
            n->parent_rc = (int8_t)ev->rc; /* the create that fails for want of it says why */
        break;
    case ZKL__E_LISTED:
        d = zkl__act_listed(n, ev->rc, ev->kids);
        break;
    case ZKL__E_SYNCED: /* the listing sent right behind it tells what happened */
        /* Unless the sync was lost with its connection: a listing of the
         * recovery still out may leave on the next connection without a
         * sync ahead of it, and a lagging server answer it without the node
         * the lost create made. Recover again there, behind a new sync. */
        if (zkl__zk_conn_error(ev->rc) && current(n) && n->st == N(RECOVER))
            d = zkl__do(ZKL__S_STALL);
        break;
    case ZKL__E_FOUND:
        d = zkl__act_found(n, ev);
        break;
    case ZKL__E_DIR:
        d = zkl__alone_dir_answer(n, ev->rc);
        break;
    case ZKL__E_AHEAD:
    case ZKL__E_MEMBER:
    case ZKL__E_KIDS:
    case ZKL__E_OWN:
    case ZKL__E_OWN_DATA:
        d = zkl__watch_answer(n, ev);
        break;
    case ZKL__E_DELETED:
        zkl__step_deleted(n, ev);
        break;
    case ZKL__E_WATCH:
        zkl__cnode_apply(n, zkl__watch_event(n, ev), ev->now);
        tidy_route(n);
        break;
    case ZKL__E_CONNECTED:
        zkl__step_reconnect(n);
        break;
    case ZKL__E_SESSION_END:
        zkl__step_session_end(n);
        return; /* n may be freed */
    case ZKL__E_LEAVE:
        zkl__step_leave(n, ev->now);
        break;
    case ZKL__E_RELEASE:
        zkl__step_release(n, ev->now);
        break;
    case ZKL__E_TAKEN:
        if (n->caller == ZKL__C_WAITING)
            n->caller = ZKL__C_TAKEN;
        break;
    case ZKL__E_DETACH:
        if (n->caller != ZKL__C_LEFT && n->caller != ZKL__C_GONE)
            zkl__step_leave(n, ev->now); /* a caller that goes takes its attempt with it */
        n->caller = ZKL__C_GONE;
        break;
    case ZKL__E_RETRY:
        zkl__step_retry(n, ev->now);
        break;
    case ZKL__E_UNSHARED:
        /* As a listing of its own would, if it still wants one. One that
         * holds by now (a handoff), or lost its hold since, or whose
         * session ended, has no use for it (as a listing's answer then
         * changes nothing). */
        n->refs--;
        zkl__cnode_listing(n, ZKL__L_IDLE);
        if (current(n) && (n->st == N(QUEUED) || n->st == N(RECOVER)))
            (void)zkl__step_unsent(n, ev->rc);
        break;
    case ZKL__E_OUTRUN:
        n->refs--; /* it listed anew since: that listing tells (joint.c) */
        break;
    case ZKL__E_DROP:
        /* No answer will come, no caller is left, and the node is of no
         * session: nothing of it is left to delete. Freed below. */
        n->refs = 0;
        n->caller = ZKL__C_GONE;
        n->gen = 0;
        break;
    default:
        break;
    }
    zkl__cnode_apply(n, d, ev->now);
    zkl__cnode_maybe_free(n);
}

