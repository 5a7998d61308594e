/* A contender node's life on the server: create it (and the lock path's
 * parents), delete it (a release, a given-up attempt, a refused delete
 * retried with backoff), end an attempt that failed, and queue again with
 * a fresh node when ours was taken away. Runs with c->mu held, in a caller
 * thread (holding c->hlock) or on the completion thread of the node's
 * handle; it only records, sends and signals, never blocks. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static void backoff_link(zkl__node *n, bool in);

void zkl__node_ahead_clear(zkl__node *n)
{
    free(n->ahead); /* one block, names included (ahead_set) */
    n->ahead = NULL;
    n->nahead = 0;
    n->ahead_front = false;
}

static void skip_clear(zkl__node *n)
{
    for (size_t i = 0; i < n->nskip; i++)
        free(n->skip[i]);
    free(n->skip);
    n->skip = NULL;
    n->nskip = 0;
}

void zkl__node_free(zkl__node *n)
{
    zkl__engine_unnotify(n);
    skip_clear(n);
    zkl__node_ahead_clear(n);
    zkl__alone_deleted(n, false);
    zkl__engine_watching_remove(n);
    zkl__engine_held_remove(n);
    zkl__engine_unlink(n->e, n);
    if (n->st == N_BACKOFF)
        backoff_link(n, false);
    zkl__watch_group_clear(n);
    free(n->watch[0]);
    free(n->watch[1]);
    free(n->gone[0]);
    free(n->gone[1]);
    free(n->kind_copy);
    free(n->dir); /* n->path with it */
    free(n);
}

/* Free the node once nobody needs it: no caller, no pending completion, and
 * nothing left to delete on the server (or the session is gone). */
void zkl__node_maybe_free(zkl__node *n)
{
    if (n->owned || n->refs > 0)
        return;
    if (!node_gone(n) && n->gen == n->c->gen && !n->c->closing)
        return;
    zkl_client *c = n->c;
    zkl__node_free(n);
    /* Only a closing client waits for nodes to go; otherwise this would
     * wake the keeper thread on every release, for nothing. */
    if (c->closing)
        pthread_cond_broadcast(&c->cv);
}

/* The moves a node may make, by state: bit `to` of legal[from]. */
#define TO(s) (1u << (s))
static const unsigned legal[] = {
    [N_CREATING] = TO(N_CREATING) | TO(N_RECOVER) | TO(N_QUEUED) | TO(N_DELETING) | TO(N_GONE),
    [N_RECOVER] = TO(N_RECOVER) | TO(N_CREATING) | TO(N_QUEUED) | TO(N_DELETING) | TO(N_GONE),
    [N_QUEUED] = TO(N_QUEUED) | TO(N_CREATING) | TO(N_HELD) | TO(N_DELETING) | TO(N_GONE),
    /* back to N_QUEUED: lost before its acquire returned it (requeued) */
    [N_HELD] = TO(N_QUEUED) | TO(N_RELEASING) | TO(N_DELETING) | TO(N_LOST) | TO(N_GONE),
    /* to N_DELETING: a connection error, after which the delete is no
     * release any more (a refusal is retried, a missing node no loss) */
    [N_RELEASING] = TO(N_RELEASING) | TO(N_HELD) | TO(N_DELETING) | TO(N_GONE),
    [N_DELETING] = TO(N_DELETING) | TO(N_BACKOFF) | TO(N_GONE),
    [N_BACKOFF] = TO(N_DELETING) | TO(N_GONE),
    [N_LOST] = TO(N_GONE),
    [N_GONE] = TO(N_GONE),
};
#undef TO

/* A node's lock path and, once known, the full path of its node share one
 * allocation: n->path lies right behind n->dir. */
int zkl__node_set_path(zkl__node *n, const char *full)
{
    size_t dl = strlen(n->dir), pl = strlen(full);
    char *b = realloc(n->dir, dl + 1 + pl + 1);
    if (b == NULL) {
        n->path = NULL;
        return ZKL_ENOMEM;
    }
    n->dir = b;
    n->path = b + dl + 1;
    memcpy(n->path, full, pl + 1);
    return 0;
}

/* A node keeps its uuid as 16 bytes, not as its 36 characters of text. */
void zkl__node_new_uuid(zkl__node *n)
{
    char t[37];
    zkl__uuid(t);
    size_t k = 0;
    for (const char *p = t; *p && k < 32; p++) {
        if (*p == '-')
            continue;
        unsigned v = *p <= '9' ? (unsigned)(*p - '0') : (unsigned)(*p - 'a' + 10);
        n->uuid[k / 2] = (unsigned char)(k % 2 ? (n->uuid[k / 2] | v) : (v << 4));
        k++;
    }
}

void zkl__node_uuid_text(const zkl__node *n, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[n->uuid[i] >> 4];
        out[o++] = hex[n->uuid[i] & 15];
    }
    out[o] = '\0';
}

/* e->backoff holds exactly the nodes in N_BACKOFF. */
static void backoff_link(zkl__node *n, bool in)
{
    struct zkl__engine *e = n->e;
    if (in)
        ZKL__DLIST_PUSH(e->backoff, n, bprev, bnext);
    else
        ZKL__DLIST_UNLINK(e->backoff, n, bprev, bnext);
}

void zkl__node_set_state(zkl__node *n, enum node_state to)
{
    assert((unsigned)n->st < sizeof legal / sizeof legal[0] && (legal[n->st] & (1u << to)));
    if ((n->st == N_BACKOFF) != (to == N_BACKOFF))
        backoff_link(n, to == N_BACKOFF);
    if ((n->st == N_QUEUED) != (to == N_QUEUED))
        n->e->queued += to == N_QUEUED ? 1u : (uint32_t)-1;
    n->st = to;
}

void zkl__node_fail(zkl__node *n, int err)
{
    if (n->err == 0 && err == ZKL_EZK)
        n->zk_rc = zkl__last_mapped(); /* err came from zkl__err_from_zk */
    if (n->err == 0)
        n->err = err;
    zkl__node_set_state(n, N_GONE);
    wake(n);
}

/* A request failed for a connection reason: redo what it was for once
 * connected again; at once if the client is connected already (the answer
 * came from the connection before). */
void zkl__node_stall(zkl__node *n)
{
    n->stalled = true;
    if (connected(n->c))
        zkl__engine_connected(n->e, n->zh);
}

/* A request could not even be queued: treat it as its answer. */
void zkl__node_send_failed(zkl__node *n, int rc)
{
    n->refs--;
    if (zkl__zk_conn_error(rc))
        n->stalled = true;
    else
        zkl__node_fail(n, zkl__err_from_zk(rc));
}

/* Backoff for a refused delete of a node nobody holds any more: from 100 ms
 * doubling to 10 s, until the session ends or the client closes. */
static void schedule_retry(zkl__node *n)
{
    int shift = n->retries < 7 ? n->retries : 7;
    n->retries++;
    n->retry_at = zkl__now_ns() + ((int64_t)100000000 << shift);
    if (n->retry_at - zkl__now_ns() > (int64_t)10000000000)
        n->retry_at = zkl__now_ns() + (int64_t)10000000000;
    zkl__node_set_state(n, N_BACKOFF);
    pthread_cond_broadcast(&n->c->cv); /* the keeper sends it */
}

static void delete_done(int rc, const void *data)
{
    zkl__node *n = answer_in(data);
    zkl_client *c = n->c;
    bool releasing = n->st == N_RELEASING;
    if (rc == ZOK || rc == ZNONODE) {
        if (rc == ZOK)
            c->stats.deletes++;
        else if (releasing && n->err == 0)
            n->err = ZKL_ELOST; /* someone else deleted the held node first */
        zkl__node_set_state(n, N_GONE);
        /* A node deleted by someone else says nothing sure of the path. */
        zkl__alone_deleted(n, current(n) && rc == ZOK);
    } else if (zkl__zk_conn_error(rc) && current(n)) {
        if (releasing) /* the answer is lost: no release any more */
            zkl__node_set_state(n, N_DELETING);
        zkl__node_stall(n); /* re-sent on reconnect */
    } else if (!current(n) || zkl__zk_session_error(rc)) {
        zkl__node_set_state(n, N_GONE); /* gone with the session */
    } else if (releasing) {
        /* Refused (an ACL without DELETE): the node stays, so does the
         * hold; the caller hears why and may try again (PITFALLS: cleanup
         * that the server refuses). */
        n->err = zkl__err_from_zk(rc);
        zkl__node_set_state(n, N_HELD);
    } else {
        /* Refused, and nobody holds the node: keep trying, with backoff,
         * until the session ends or the client closes. */
        if (n->err == 0)
            n->err = zkl__err_from_zk(rc);
        schedule_retry(n);
    }
    wake(n);
    answer_done(n);
}

/* Send the node's delete: a release's (N_RELEASING) stays one. */
void zkl__node_delete(zkl__node *n)
{
    zkl__node_set_state(n, n->st == N_RELEASING ? N_RELEASING : N_DELETING);
    n->refs++;
    zkl__metrics_sent(n);
    int rc = zoo_adelete(n->zh, n->path, -1, delete_done, n);
    if (rc != ZOK)
        zkl__node_send_failed(n, rc);
}

/* The caller gave up, or an error ended the attempt: make sure no node of
 * this attempt stays behind. */
void zkl__node_leave(zkl__node *n)
{
    n->abandon = true;
    /* In N_CREATING or N_RECOVER the pending answer, or the recovery on
     * reconnect, sees `abandon` and deletes the node. */
    if (n->path != NULL && (n->st == N_QUEUED || n->st == N_HELD))
        zkl__node_delete(n);
}

/* An error that retrying cannot cure (an ACL that refuses, ...) ended the
 * attempt: the caller hears `err` at once, and a node we made is deleted
 * first (PROTOCOL §5: no orphan may outlive a failed acquire). */
void zkl__node_abort(zkl__node *n, int err)
{
    if (n->err == 0 && err == ZKL_EZK)
        n->zk_rc = zkl__last_mapped(); /* err came from zkl__err_from_zk */
    if (n->err == 0)
        n->err = err;
    if (n->path != NULL && n->st == N_QUEUED) {
        zkl__watch_arm(n, 0, NULL);
        zkl__watch_arm(n, 1, NULL);
        zkl__watch_group_clear(n);
        zkl__node_delete(n);
    } else if (n->st != N_DELETING && n->st != N_RELEASING && n->st != N_BACKOFF) {
        zkl__node_set_state(n, N_GONE);
    }
    wake(n);
}

/* A waiting node that someone else deleted (or whose lock path went) has no
 * place in the queue any more: queue again with a fresh node under a new
 * uuid, within the same deadline, as Curator does. It never holds on the
 * strength of the old one. A downgrade node cannot be made anew: that
 * attempt is lost. */
void zkl__node_requeue(zkl__node *n)
{
    zkl__alone_invalidate(n->e, n->dir);
    if (n->fixed_seq[0]) {
        zkl__node_fail(n, ZKL_ELOST);
        return;
    }
    n->path = NULL;
    zkl__watch_arm(n, 0, NULL);
    zkl__watch_arm(n, 1, NULL);
    n->noread = false;
    zkl__node_ahead_clear(n);
    zkl__watch_group_clear(n);
    zkl__node_forget_gone(n);
    n->own_armed = n->own_ok = false;
    n->pred_first = n->pred_same = false;
    n->relist = n->probing = n->gone_list = false;
    zkl__node_new_uuid(n);
    zkl__node_create(n);
}

static void create_done(int rc, const char *name, const struct Stat *stat, const void *data)
{
    zkl__node *n = answer_in(data);
    zkl_client *c = n->c;
    int64_t fast = n->fast_expect;
    n->fast_expect = -1; /* a retry lists as usual */
    if (!current(n) || n->st != N_CREATING) {
        /* session gone: the node, if any, went with it */
    } else if (rc == ZOK) {
        c->stats.creates++;
        n->token = stat->czxid;
        if (zkl__node_set_path(n, name) != 0) {
            zkl__node_fail(n, ZKL_ENOMEM); /* cannot even name it: the session end takes it */
        } else if (n->abandon) {
            zkl__node_delete(n);
        } else {
            /* Watch our own node at once: this goes out ahead of every
             * watch on another node, so its deletion by someone else is
             * known before any event that could hand us the lock. It adds
             * no wait: the acquire does not wait for its answer. */
            zkl__node_set_state(n, N_QUEUED);
            zkl__watch_own(n);
            if (fast >= 0 && n->st == N_QUEUED)
                zkl__alone_answer(n, fast);
            /* else the pipelined listing answers next */
        }
    } else if (rc == ZNONODE) {
        /* A missing parent, or a container removed under us (PROTOCOL §1):
         * create the parents and try again, within the same deadline. */
        if (n->abandon)
            zkl__node_set_state(n, N_GONE), wake(n);
        else if (n->parent_rc != 0)
            zkl__node_fail(n, zkl__err_from_zk(n->parent_rc)); /* e.g. a protected parent: ZKL_ENOAUTH */
        else if (++n->creates > 50)
            zkl__node_fail(n, zkl__err_from_zk(ZNONODE));
        else
            zkl__node_create(n);
    } else if (zkl__zk_conn_error(rc)) {
        zkl__node_set_state(n, N_RECOVER);
        zkl__node_stall(n);
    } else {
        zkl__node_fail(n, zkl__err_from_zk(rc));
    }
    answer_done(n);
}

static void parent_done(int rc, const char *name, const void *data)
{
    (void)name;
    zkl__node *n = answer_in(data); /* the contender create after it tells what happened */
    if (rc == ZNOAUTH || rc == ZINVALIDACL)
        n->parent_rc = rc; /* ... and this says why, if it fails for want of it */
    answer_done(n);
}

static void parent_sent(void *arg, size_t i, int rc)
{
    (void)i;
    zkl__node *n = arg;
    zkl__metrics_sent(n);
    if (rc == ZOK)
        n->refs++; /* parent_done cannot run before: it needs c->mu */
}

/* Create the lock path, or it and its ancestors; the contender create sent
 * right after them finds them. Most often only the lock path itself is
 * missing: the first retry creates just it, later ones every ancestor too. */
static void send_parents(zkl__node *n)
{
    zkl__parents_send(n->c, n->zh, n->dir, n->creates > 1, true, parent_done, n, 0, parent_sent, n);
}

void zkl__node_create(zkl__node *n)
{
    zkl_client *c = n->c;
    char name[ZKL__MAX_PATH + 96], uuid[37];
    zkl__node_uuid_text(n, uuid);
    int mode = ZOO_EPHEMERAL_SEQUENTIAL;
    if (n->creates > 0)
        send_parents(n);
    if (n->fixed_seq[0]) {
        /* A plain ephemeral node that sorts with a given sequence (read-lock
         * downgrade, PROTOCOL §4). */
        snprintf(name, sizeof name, "%s/_c_%s-%s%s", n->dir, uuid, n->kind, n->fixed_seq);
        mode = ZOO_EPHEMERAL;
    } else {
        snprintf(name, sizeof name, "%s/_c_%s-%s", n->dir, uuid, n->kind);
    }
    zkl__node_set_state(n, N_CREATING);
    n->refs++;
    zkl__metrics_sent(n);
    int rc = zoo_acreate2(n->zh, name, c->ident, (int)strlen(c->ident), zkl__client_acl(c), mode,
                          create_done, n);
    if (rc != ZOK) {
        zkl__node_send_failed(n, rc);
        return;
    }
    if (n->fast_expect >= 0)
        return; /* its number may answer for the listing (zkl__alone_seen) */
    /* The listing rides right behind the create: one round trip for an
     * uncontended acquire. zkl__node_list_answer ignores it if the create failed. */
    (void)zkl__listing_send(n); /* if it fails, the create's answer tells */
}
