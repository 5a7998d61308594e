/* Leader election, Curator's LeaderLatch protocol: policy "latch-" on the
 * lock-queue engine. A candidate's node is `PATH/_c_<uuid>-latch-<seq>`
 * with its id as data, never written after it is made (Curator's followers
 * watch their predecessor with a data watch that a data change would use
 * up). The first node leads; a follower watches the node just before its
 * own. The latch takes part through asynchronous requests (lib/front/):
 * one at a time, started again on the next session, or at once when its
 * node was deleted by someone else, until it is closed. Its listener is
 * told from the requests' callbacks, so an event-loop program runs it with
 * the client's event descriptor and zkl_client_dispatch. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

/* Curator's order of an election's children (5.4's LeaderLatch sorts by
 * StandardLockInternalsDriver's key): the text after the last "latch-",
 * or the whole name without one, compared as strings. Latch nodes come in
 * the order of their sequences; a foreign child goes by its whole name,
 * behind them if it starts with a letter, "_" or a digit other than 0, so
 * that it cannot stop a latch from leading while Curator's would. */
static const char *curator_key(const char *name)
{
    const char *k = name;
    for (const char *p = strstr(name, "latch-"); p != NULL; p = strstr(p + 1, "latch-"))
        k = p + 6;
    return k;
}

/* The first child in that order leads; a follower watches the child just
 * before its own. Ties (never between latch nodes) go by sequence. */
static bool latch_holds(const zkl__entry *cs, size_t n, size_t self, size_t *watch,
                        const void *arg)
{
    (void)arg;
    const char *mine = curator_key(cs[self].name), *pk = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *k = curator_key(cs[i].name);
        int c = strcmp(k, mine);
        if (i == self || c > 0 || (c == 0 && i > self))
            continue; /* behind ours */
        if (pk == NULL || strcmp(k, pk) >= 0) {
            pk = k;
            *watch = i;
        }
    }
    return pk == NULL;
}

/* No handoff without a listing: Curator's latch lists again whenever its
 * predecessor goes, and so does this one. */
const zkl__policy zkl__latch_policy = {"latch-", latch_holds, false};

enum latch_state { L_NEW, L_STARTED, L_CLOSED };

/* One request of the latch: the callback's argument, alive until the
 * request is freed. */
struct join {
    zkl_latch *l;
    zkl_request *r;
    int64_t sid;   /* the session it was started in */
    bool starting; /* its request is being started (own.mu not held) */
    struct join *next;
};

struct zkl_latch {
    zkl__owner own;        /* the client, the lock path, the id (own.ident);
                              own.mu guards the fields below */
    pthread_mutex_t tell_mu; /* one listener call at a time, in order; taken
                                before own.mu */
    pthread_cond_t cv;     /* leadership, a failure, the close, a start done */
    enum latch_state st;
    struct join *joins;    /* every request not yet freed, and one being started */
    struct join *cur;      /* the one taking part now; NULL: none (no session) */
    struct join *lead;     /* the one it leads on, or NULL */
    int starting;          /* joins being started: the close waits for them */
    int err;               /* what ended taking part for good, or 0 */
    int told;              /* the last value the listener was told */
    zkl_latch_fn fn;
    void *fn_arg;
};

static void request_done(zkl_request *r, int result, void *arg);

/* Take part with a new node if the latch has none (own.mu held): the
 * join is linked now, and returned for start_join to start once own.mu
 * is released (starting a request takes the object table's lock, which
 * the fork hooks take before every object's mutex); NULL if there is
 * nothing to start. */
static struct join *take_part(zkl_latch *l)
{
    if (l->st != L_STARTED || l->cur != NULL || l->err != 0)
        return NULL;
    struct join *j = calloc(1, sizeof *j);
    if (j == NULL) {
        l->err = ZKL_ENOMEM;
        pthread_cond_broadcast(&l->cv);
        return NULL;
    }
    j->l = l;
    if (zkl_client_session_id(l->own.c, &j->sid) != 0)
        j->sid = 0;
    j->starting = true;
    l->starting++;
    j->next = l->joins;
    l->joins = j;
    l->cur = j;
    return j;
}

static void unlink_join(zkl_latch *l, struct join *j);

/* Start j's request (NULL does nothing; no latch lock held). Until it is
 * started the close waits, and so does its callback, which may run on
 * another thread before zkl__async_start returns. A client without a
 * session right now is no failure: the next session's listener call
 * starts it. Returns the start's own refusal (0 if it was sent), never
 * the result the callback may have had meanwhile. */
static int start_join(zkl_latch *l, struct join *j)
{
    if (j == NULL)
        return 0;
    zkl__qopts o = {.ident = l->own.ident, .tell_lost = true};
    int rc = zkl__kit_async_start(l->own.c, l->own.path, &zkl__latch_policy, &o, -1, request_done, j,
                              &j->r);
    pthread_mutex_lock(&l->own.mu);
    j->starting = false;
    l->starting--;
    int refused = 0;
    if (rc != 0) {
        unlink_join(l, j);
        if (rc != ZKL_ELOST && l->st == L_STARTED) /* ZKL_ELOST: the next session starts it */
            l->err = refused = rc;
    }
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->own.mu);
    if (rc != 0)
        free(j);
    return refused;
}

static void unlink_join(zkl_latch *l, struct join *j)
{
    for (struct join **p = &l->joins; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    if (l->cur == j)
        l->cur = NULL;
    if (l->lead == j)
        l->lead = NULL;
}

/* Tell the listener `leader` if that is news (tell_mu held, own.mu not). */
static void tell(zkl_latch *l, int leader)
{
    pthread_mutex_lock(&l->own.mu);
    bool news = l->told != leader;
    l->told = leader;
    zkl_latch_fn fn = l->fn;
    void *arg = l->fn_arg;
    pthread_mutex_unlock(&l->own.mu);
    if (news && fn != NULL)
        fn(l, leader, arg);
}

/* A request's result: on the client's thread, or zkl_client_dispatch's,
 * no zkl lock held. 0: its node leads; anything else: it ended (lost
 * while leading, its session ended while it waited, the client closed). */
static void request_done(zkl_request *r, int result, void *arg)
{
    struct join *j = arg;
    zkl_latch *l = j->l;
    pthread_mutex_lock(&l->tell_mu);
    pthread_mutex_lock(&l->own.mu);
    while (j->starting) /* its starter has yet to hear that it started */
        pthread_cond_wait(&l->cv, &l->own.mu);
    if (l->st == L_CLOSED) { /* the close frees the request */
        pthread_mutex_unlock(&l->own.mu);
        pthread_mutex_unlock(&l->tell_mu);
        return;
    }
    int say = -1;
    struct join *next = NULL;
    bool ended = false; /* an earlier leadership ends before this one begins */
    bool drop = false;
    /* Lead only on a node that the server says is the current session's:
     * a node of an earlier session may still be first for a moment while
     * its session expires (CURATOR-696). */
    if (result == 0 && j == l->cur && zkl__kit_request_on_session(r)) {
        ended = l->lead != NULL;
        l->lead = j;
        say = 1;
        pthread_cond_broadcast(&l->cv);
    } else {
        if (j == l->lead)
            say = 0;
        drop = true;
        unlink_join(l, j);
        if (result == ZKL_ECLOSED || result == ZKL_ENOAUTH || result == ZKL_ENOMEM ||
            result == ZKL_EZK || result == ZKL_ECANCELED || result == ZKL_EQUEUE) {
            l->err = result; /* retrying cannot cure these */
            pthread_cond_broadcast(&l->cv);
        }
        /* Its node is gone: take part again (Curator's latch does), but
         * not on a session the handle refused it for (expired, and not yet
         * heard of: the completion thread busy): a new node would be
         * refused at once too, and again. The next session, or connection,
         * takes part (on_state), unless it has begun already. */
        int64_t sid = 0;
        bool parked = zkl__kit_request_session_refused(r) &&
                      zkl_client_session_id(l->own.c, &sid) == 0 && sid == j->sid;
        next = parked ? NULL : take_part(l);
        pthread_cond_broadcast(&l->cv); /* an await between sessions returns */
    }
    pthread_mutex_unlock(&l->own.mu);
    if (ended)
        tell(l, 0);
    if (say >= 0)
        tell(l, say);
    pthread_mutex_unlock(&l->tell_mu);
    if (drop) {
        zkl_request_free(r); /* from its own callback: freed once this returns */
        free(j);
    }
    (void)start_join(l, next);
}

/* The client's state listener: a new session is the latch's cue to take
 * part again, with a node of that session; a request of an earlier one
 * can no longer lead (its callback comes and frees it). */
static void on_state(zkl_client *c, enum zkl_state state, void *arg)
{
    zkl_latch *l = arg;
    if (state != ZKL_STATE_CONNECTED)
        return;
    int64_t sid = 0;
    if (zkl_client_session_id(c, &sid) != 0)
        return;
    pthread_mutex_lock(&l->own.mu);
    if (l->cur != NULL && l->cur->sid != sid)
        l->cur = NULL;
    struct join *j = take_part(l);
    pthread_mutex_unlock(&l->own.mu);
    (void)start_join(l, j);
}

int zkl_latch_new(zkl_client *c, const char *path, const char *id, zkl_latch **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0 ||
        (id != NULL && strlen(id) > ZKL__ID_MAX))
        return ZKL_EINVAL;
    int rc;
    zkl_latch *l = zkl__owner_new(sizeof *l, offsetof(zkl_latch, own), c, path, NULL, false, &rc);
    if (l == NULL)
        return rc;
    rc = ZKL_ESYS;
    if (pthread_mutex_init(&l->tell_mu, NULL) != 0)
        goto fail;
    if (zkl__cond_init(&l->cv) != 0)
        goto fail_mu;
    rc = ZKL_ENOMEM;
    if (id != NULL && (l->own.ident = strdup(id)) == NULL)
        goto fail_cv;
    *out = l;
    return 0;
fail_cv:
    pthread_cond_destroy(&l->cv);
fail_mu:
    pthread_mutex_destroy(&l->tell_mu);
fail:
    zkl__owner_done(&l->own);
    free(l);
    return rc;
}

int zkl_latch_start(zkl_latch *l)
{
    if (l == NULL)
        return ZKL_EINVAL;
    if (zkl__kit_forked(l->own.c))
        return ZKL_EFORK;
    pthread_mutex_lock(&l->own.mu);
    int rc = l->st == L_NEW ? 0 : l->st == L_CLOSED ? ZKL_ECLOSED : ZKL_EBUSY;
    pthread_mutex_unlock(&l->own.mu);
    if (rc == 0)
        rc = zkl_client_add_listener(l->own.c, on_state, l);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&l->own.mu);
    l->st = L_STARTED;
    struct join *j = take_part(l);
    rc = j == NULL ? l->err : 0; /* nothing sent yet: its own failure */
    pthread_mutex_unlock(&l->own.mu);
    /* Only the start's own refusal fails the call: a result that came
     * since (the listing refused, say) is await's and the listener's to
     * say, and the latch stays started. */
    if (rc == 0)
        rc = start_join(l, j);
    pthread_mutex_lock(&l->own.mu);
    if (rc != 0 && l->st == L_STARTED)
        l->st = L_NEW;
    pthread_mutex_unlock(&l->own.mu);
    if (rc != 0) {
        (void)zkl_client_remove_listener(l->own.c, on_state, l);
        pthread_mutex_lock(&l->own.mu);
        l->err = 0;
        pthread_mutex_unlock(&l->own.mu);
    }
    return rc;
}

/* Leading right now (own.mu held): the request holds, of a live session. */
static bool leading(zkl_latch *l)
{
    return l->lead != NULL && zkl_client_state(l->own.c) != ZKL_STATE_CLOSED &&
           zkl_request_is_held(l->lead->r);
}

int zkl_latch_await(zkl_latch *l, long timeout_ms)
{
    if (l == NULL)
        return ZKL_EINVAL;
    if (zkl__kit_forked(l->own.c))
        return ZKL_EFORK;
    int64_t deadline = zkl__deadline(timeout_ms);
    pthread_mutex_lock(&l->own.mu);
    int rc = 1;
    while (rc == 1) {
        if (l->st == L_CLOSED)
            rc = ZKL_ECLOSED;
        else if (l->st == L_NEW)
            rc = ZKL_EINVAL;
        else if (leading(l))
            rc = 0;
        else if (l->err != 0)
            rc = l->err;
        else if (zkl_client_state(l->own.c) == ZKL_STATE_CLOSED)
            rc = ZKL_ECLOSED;
        else if (l->cur == NULL && zkl_client_state(l->own.c) == ZKL_STATE_LOST)
            rc = ZKL_ELOST; /* between sessions: it joins the next one by itself */
        else if (zkl__cond_wait(&l->cv, &l->own.mu, deadline) != 0)
            rc = leading(l) ? 0 : ZKL_ETIMEDOUT;
    }
    pthread_mutex_unlock(&l->own.mu);
    return rc;
}

int zkl_latch_is_leader(zkl_latch *l)
{
    if (l == NULL)
        return 0;
    pthread_mutex_lock(&l->own.mu);
    int on = l->st == L_STARTED && leading(l);
    pthread_mutex_unlock(&l->own.mu);
    return on;
}

int zkl_latch_token(zkl_latch *l, int64_t *out)
{
    if (l == NULL || out == NULL)
        return ZKL_EINVAL;
    if (zkl__kit_forked(l->own.c))
        return ZKL_EFORK;
    pthread_mutex_lock(&l->own.mu);
    int rc = l->st != L_STARTED || l->lead == NULL ? ZKL_ENOTHELD
                                                  : zkl_request_token(l->lead->r, out);
    pthread_mutex_unlock(&l->own.mu);
    return rc;
}

/* tell_mu, unless in a child of fork(): there the thread that held it at
 * the fork (the client's, calling the listener) does not exist, and would
 * never let it go; no listener runs in a child, so there is nothing to
 * order. Whether it was taken, for tell_unlock. */
static bool tell_lock(zkl_latch *l)
{
    if (zkl__kit_forked(l->own.c))
        return false;
    pthread_mutex_lock(&l->tell_mu);
    return true;
}

static void tell_unlock(zkl_latch *l, bool taken)
{
    if (taken)
        pthread_mutex_unlock(&l->tell_mu);
}

int zkl_latch_set_listener(zkl_latch *l, zkl_latch_fn fn, void *arg)
{
    if (l == NULL)
        return ZKL_EINVAL;
    if (zkl__kit_forked(l->own.c))
        return ZKL_EFORK;
    /* Under tell_mu: once this returns, the old listener is not running. */
    pthread_mutex_lock(&l->tell_mu);
    pthread_mutex_lock(&l->own.mu);
    l->fn = fn;
    l->fn_arg = arg;
    pthread_mutex_unlock(&l->own.mu);
    pthread_mutex_unlock(&l->tell_mu);
    return 0;
}

/* Leave with the node of request r: a held one is released and its delete
 * confirmed by a read of the node sent behind it on the same session
 * (served in order); a pending one is cancelled and waited for until its
 * node is deleted. Then r is freed. */
static int leave(zkl_client *c, zkl_request *r, bool held, int64_t deadline)
{
    int rc = 0;
    /* A grant whose callback is on its way (it waits for the latch's
     * locks) is held for the request, not yet for the latch: cancel says
     * so, and it leaves as a leader does, confirmed. */
    int crc = held ? ZKL_EBUSY : zkl_request_cancel(r);
    if (crc == ZKL_EBUSY) {
        const char *node = zkl_request_node(r);
        char *path = node ? strdup(node) : NULL;
        rc = zkl_request_release(r);
        if (rc == ZKL_ELOST || rc == ZKL_ECLOSED)
            rc = 0; /* gone with its session, or deleted by someone else */
        else if (rc == 0 && path != NULL) {
            struct zkl__batch *b = NULL;
            rc = zkl__call(c, ZKL__OP_GET, path, NULL, 0, 0, deadline, &b);
            if (rc == 0 && b->s[0].rc != ZNONODE)
                rc = b->s[0].rc == ZOK ? ZKL_ECONNLOSS : zkl__err_from_zk(b->s[0].rc);
            if (rc == ZKL_ELOST || rc == ZKL_ECLOSED)
                rc = 0;
            zkl__batch_drop(b);
        } else if (path == NULL && rc == 0) {
            rc = ZKL_ENOMEM;
        }
        free(path);
    } else if (crc == 0 && !zkl__kit_request_wait_settled(r, deadline)) {
        rc = ZKL_ETIMEDOUT;
    }
    zkl_request_free(r);
    return rc;
}

int zkl_latch_close(zkl_latch *l)
{
    if (l == NULL)
        return ZKL_EINVAL;
    bool told = tell_lock(l); /* in a child: memory only, nobody told */
    pthread_mutex_lock(&l->own.mu);
    enum latch_state was = l->st;
    if (was != L_CLOSED)
        l->st = L_CLOSED; /* nothing new starts */
    /* A request being started: its join is to leave too. (In a forked
     * child no thread finishes it: its join has no request there.) */
    while (l->starting > 0 && !zkl__kit_forked(l->own.c))
        pthread_cond_wait(&l->cv, &l->own.mu);
    struct join *joins = l->joins, *lead = l->lead;
    if (was != L_CLOSED) {
        l->joins = l->cur = l->lead = NULL;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->own.mu);
    if (was == L_CLOSED) {
        tell_unlock(l, told);
        return ZKL_ECLOSED;
    }
    if (told)
        tell(l, 0);
    tell_unlock(l, told);
    if (was == L_STARTED)
        (void)zkl_client_remove_listener(l->own.c, on_state, l);
    int rc = 0;
    int64_t deadline = zkl__request_deadline(l->own.c, 0);
    while (joins != NULL) {
        struct join *j = joins;
        joins = j->next;
        int r = leave(l->own.c, j->r, j == lead, deadline);
        if (rc == 0)
            rc = r;
        free(j);
    }
    return rc;
}

void zkl_latch_free(zkl_latch *l)
{
    if (l == NULL)
        return;
    (void)zkl_latch_close(l);
    zkl__kit_obj_close(l, "zkl_latch_free");
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->tell_mu);
    zkl__owner_done(&l->own);
    free(l);
}
