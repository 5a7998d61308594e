/* The lock-queue engine: one contender = one znode in one lock directory.
 *
 * A caller enqueues (a protected create with the listing sent right behind
 * it), then sleeps on its own condition variable. Everything after that runs
 * in libzookeeper_mt's completion thread as a small state machine: decide
 * with the recipe's policy, arm a watch, and on the watch event list again
 * (or take the lock at once, PROTOCOL §4) — it only records, sends the next
 * request and signals; it never blocks.
 *
 * Every field of a node is guarded by its client's mutex c->mu. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum nstate {
    N_CREATING, /* create (+ listing) sent; name unknown until it answers */
    N_RECOVER,  /* a create's answer was lost: find the node by its uuid */
    N_QUEUED,   /* our node exists; waiting for the policy to say "held" */
    N_HELD,
    N_DELETING, /* delete sent (or to be re-sent on reconnect) */
    N_GONE      /* no node of this attempt exists any more */
};

/* One watched member of a watch group (zkl__policy.watch_group). */
struct gwatch {
    char *path;
    bool armed;
};

struct zkl__node {
    zkl_client *c;
    zkl__node *prev, *next; /* c->live */
    zkl__node *wprev, *wnext; /* c->watching, while in_watching */
    bool in_watching;
    zkl__node *hnext;         /* c->held_index, while in_held_index */
    bool in_held_index;
    zhandle_t *zh;          /* the handle of the session the node belongs to */
    uint64_t gen;           /* ... and that session's generation */
    const zkl__policy *pol;
    const void *arg;
    bool prefetch;
    char fixed_seq[11];
    char *dir;
    char uuid[37];
    char *path; /* full path once the create answered, else NULL */
    int64_t token;
    int st;
    int err;       /* why the attempt failed, for the caller */
    int zk_rc;     /* ... and the ZooKeeper code behind a ZKL_EZK */
    int refs;      /* completions still to come */
    bool owned;    /* a caller still refers to the node */
    bool abandon;  /* the caller gave up: delete as soon as the name is known */
    bool stalled;  /* a request failed for a connection reason */
    bool listing;  /* a listing is in flight ... */
    bool relist;   /* ... and another one is wanted after it */
    bool decided;    /* the policy answered at least once */
    int64_t fast_expect; /* >= 0: created without a listing; the sequence
                            that proves the lock path held nothing else */
    uint64_t fast_epoch; /* c->dir_epoch when that create was sent */
    bool try_once;   /* the caller waits only for that first answer */
    bool pred_first; /* the latest listing showed the watched node first */
    bool pred_same;  /* ... and of our own kind */
    char *watch[2];  /* watched paths: the policy's choice, and the one ahead
                        of it (prefetch) */
    bool armed[2];
    char *gone[2];   /* watched nodes whose deletion was seen while a listing
                        was in flight: that listing may still show them */
    /* For a kind that hands off: the nodes ahead of ours in the latest
     * listing, nearest last, when all were of our kind. Nodes ahead of ours
     * only ever go (every later node sorts after ours), so when the one we
     * watch goes, the next one ahead that still exists is the new one to
     * watch: no listing needed (walk_back). */
    char **ahead;
    size_t nahead;
    unsigned wsent[2], wdone[2]; /* data watches sent / answered per slot:
                                    an answer is about the slot's current
                                    node only if it is the latest */
    struct gwatch *group; /* watched nodes of the policy's watch group */
    size_t ngroup;
    char kind[48];   /* the kind the node is created with */
    int creates;     /* attempts so far, to bound a container race */
    int parent_rc;   /* a lock parent the server refused to create */
    bool noread;     /* the server refused us a watched node (another
                        identity's, or an ACL without READ): the lock path's
                        children are watched instead (dirwatch) */
    bool dirwatch;   /* a child watch on the lock path is set or being set */
    /* Our own node, watched from the create's answer on (PITFALLS: a
     * handoff trusted without one's own node): anyone else deleting it is
     * seen before any later event, in the server's order. */
    bool own_armed;
    int32_t own_version; /* the data version of our node we last read: a
                            revocation request is told once */  /* a watch on our own node is set, or being set */
    bool own_ok;     /* ... and the server said the node existed then */
    bool lost;       /* held, then deleted by someone else or taken by the
                        session's end: reported once through on_lost */
    bool taken;      /* the acquire returned it held to its caller */
    bool releasing;  /* the delete in flight is the release of a hold: if the
                        server refuses it, the hold stays */
    char **skip;     /* recovery: nodes with our uuid that another session
                        owns (planted): neither ours nor ours to delete */
    size_t nskip;
    int64_t retry_at; /* a refused delete of an abandoned node: when the
                         keeper sends it again (0: not scheduled) */
    int retries;
    /* The owner's hooks (zkl__qopts), called on the client's keeper thread
     * with no zkl lock held; `notify` holds what is still to be told. */
    zkl__node_fn on_lost, on_revoke;
    void *hook_arg;
    unsigned notify;
    bool in_notify;
    zkl__node *nnext; /* c->notify_head queue */
    pthread_cond_t cv;
};

#define NOTIFY_LOST 1u
#define NOTIFY_REVOKE 2u
/* What a holder's node holds when someone asks it to give the lock up
 * (Curator's cooperative revocation, PROTOCOL §6). */
#define REVOKE_DATA "__REVOKE__"
#define REVOKE_LEN 10

/* ---- bookkeeping -------------------------------------------------------- */

static void group_clear(zkl__node *n)
{
    for (size_t i = 0; i < n->ngroup; i++)
        free(n->group[i].path);
    free(n->group);
    n->group = NULL;
    n->ngroup = 0;
}

/* c->watching: the nodes that armed a watch, so that routing an event
 * does not walk every node the client holds. A node joins when it arms a
 * watch and leaves once it is no longer queued (see zkl__queue_watch_event)
 * or is freed. */
static void held_index_remove(zkl__node *n);

static void watching_add(zkl__node *n)
{
    zkl_client *c = n->c;
    held_index_remove(n); /* it watches more than itself again */
    if (n->in_watching)
        return;
    n->wprev = NULL;
    n->wnext = c->watching;
    if (c->watching)
        c->watching->wprev = n;
    c->watching = n;
    n->in_watching = true;
}

static void watching_remove(zkl__node *n)
{
    zkl_client *c = n->c;
    if (!n->in_watching)
        return;
    if (n->wprev)
        n->wprev->wnext = n->wnext;
    else
        c->watching = n->wnext;
    if (n->wnext)
        n->wnext->wprev = n->wprev;
    n->wprev = n->wnext = NULL;
    n->in_watching = false;
}

/* c->held_index: held nodes whose only watch is the one on themselves, by
 * path. They leave c->watching, which then holds the waiters alone, so
 * that routing an event costs the same with ten thousand locks held as
 * with one. A hash table with chaining, doubled as it fills. */
static size_t path_hash(const char *p)
{
    size_t h = 1469598103934665603u;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    return h;
}

static zkl__node **held_slot(zkl_client *c, const char *path)
{
    zkl__node **p = &c->held_index[path_hash(path) & (c->held_buckets - 1)];
    while (*p && strcmp((*p)->path, path) != 0)
        p = &(*p)->hnext;
    return p;
}

static void held_index_grow(zkl_client *c)
{
    size_t nb = c->held_buckets ? c->held_buckets * 2 : 64;
    zkl__node **t = calloc(nb, sizeof *t);
    if (t == NULL)
        return; /* keep the smaller table: only slower */
    for (size_t i = 0; i < c->held_buckets; i++) {
        for (zkl__node *n = c->held_index[i], *next; n; n = next) {
            next = n->hnext;
            zkl__node **b = &t[path_hash(n->path) & (nb - 1)];
            n->hnext = *b;
            *b = n;
        }
    }
    free(c->held_index);
    c->held_index = t;
    c->held_buckets = nb;
}

/* Move a held node that watches only itself from c->watching to the
 * index. Returns false (and leaves it where it is) if the index has no
 * room. */
static bool held_index_add(zkl__node *n)
{
    zkl_client *c = n->c;
    if (n->in_held_index)
        return true;
    if (c->held_count >= c->held_buckets)
        held_index_grow(c);
    if (c->held_buckets == 0)
        return false;
    watching_remove(n);
    zkl__node **b = &c->held_index[path_hash(n->path) & (c->held_buckets - 1)];
    n->hnext = *b;
    *b = n;
    n->in_held_index = true;
    c->held_count++;
    return true;
}

static void held_index_remove(zkl__node *n)
{
    if (!n->in_held_index)
        return;
    zkl_client *c = n->c;
    zkl__node **p = &c->held_index[path_hash(n->path) & (c->held_buckets - 1)];
    while (*p != n)
        p = &(*p)->hnext;
    *p = n->hnext;
    n->hnext = NULL;
    n->in_held_index = false;
    c->held_count--;
}

/* ---- repeated acquisitions of a lock path nobody else uses --------------
 * Sequence numbers count the nodes ever created under a lock path (a path
 * removed and made anew counts from 0 again). When a listing showed a node
 * alone, the next node created under the path gets that node's number plus
 * one, unless another was created in between. So once the alone node is
 * deleted, a create that comes back with exactly that number proves the
 * path held nothing else: nothing was created since, and all that was there
 * before is gone. That is the answer a listing would give, without sending
 * one: an uncontended acquire is then its create alone. A data watch on the
 * lock path reports it removed (and maybe made anew) meanwhile; its event
 * reaches us before the answer to any create sent after. Only for kinds
 * that hand off (PROTOCOL §4) and server-numbered nodes. */
#define DIRTRACK_MAX 8

static void maybe_free(zkl__node *n);

struct zkl__dirtrack {
    struct zkl__dirtrack *next;
    char *dir;
    int64_t expect;   /* the sequence of the next create if nobody else creates */
    zkl__node *basis; /* the alone node `expect` comes from, until its delete
                         is confirmed */
    bool ready;       /* basis deleted: one acquire may rely on `expect` */
    bool watched;     /* a data watch on `dir` is set on this connection */
};

static bool fast_eligible(const zkl__node *n)
{
    return n->pol->handoff && !n->fixed_seq[0];
}

static struct zkl__dirtrack *track_find(zkl_client *c, const char *dir)
{
    for (struct zkl__dirtrack **p = &c->dirs; *p; p = &(*p)->next) {
        struct zkl__dirtrack *t = *p;
        if (strcmp(t->dir, dir) == 0) {
            *p = t->next; /* most recently used first */
            t->next = c->dirs;
            c->dirs = t;
            return t;
        }
    }
    return NULL;
}

static void track_free_from(struct zkl__dirtrack **p)
{
    while (*p) {
        struct zkl__dirtrack *t = *p;
        *p = t->next;
        free(t->dir);
        free(t);
    }
}

/* Forget what any of them said: after an event on a tracked path, a
 * reconnection, or a failed watch. */
static void track_invalidate(zkl_client *c, const char *dir)
{
    c->dir_epoch++;
    for (struct zkl__dirtrack *t = c->dirs; t; t = t->next) {
        if (dir == NULL || strcmp(t->dir, dir) == 0) {
            t->ready = false;
            t->basis = NULL;
            t->watched = false;
        }
    }
}

static void dirwatch_done(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    /* ZNONODE still leaves an existence watch, which also reports the
     * path made anew. */
    if (rc != ZOK && rc != ZNONODE)
        track_invalidate(c, n->dir);
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

/* n holds, and the listing showed it alone. */
static void track_alone(zkl__node *n, int64_t seq)
{
    zkl_client *c = n->c;
    struct zkl__dirtrack *t = track_find(c, n->dir);
    if (t == NULL) {
        /* First time alone here: remember it; a watch only if it repeats
         * (a client taking many different locks once gains nothing). */
        if ((t = calloc(1, sizeof *t)) == NULL || (t->dir = strdup(n->dir)) == NULL) {
            free(t);
            return;
        }
        t->next = c->dirs;
        c->dirs = t;
        size_t k = 0;
        for (struct zkl__dirtrack **p = &c->dirs; *p; p = &(*p)->next) {
            if (++k == DIRTRACK_MAX) {
                /* An event on a path no longer tracked would go unseen by
                 * a create sent on the strength of it: those list. */
                if ((*p)->next != NULL)
                    c->dir_epoch++;
                track_free_from(&(*p)->next);
                break;
            }
        }
    } else if (!t->watched) {
        n->refs++;
        c->stats.requests++;
        if (zoo_awexists(n->zh, n->dir, zkl__node_watcher_fn(), (void *)(uintptr_t)c->id,
                         dirwatch_done, n) == ZOK)
            t->watched = true;
        else
            n->refs--;
    }
    t->expect = seq + 1;
    t->basis = n;
    t->ready = false;
}

/* n's delete was answered (ok) or will not be (!ok). */
static void track_deleted(zkl__node *n, bool ok)
{
    for (struct zkl__dirtrack *t = n->c->dirs; t; t = t->next) {
        if (t->basis == n) {
            t->basis = NULL;
            t->ready = ok;
        }
    }
}

/* ---- telling the owner (c->mu held) --------------------------------------
 * The hooks run on the client's keeper thread (zkl__queue_keeper), never on
 * a ZooKeeper thread and never under c->mu: they call user code. */

static void notify(zkl__node *n, unsigned what)
{
    zkl_client *c = n->c;
    if ((what == NOTIFY_LOST && n->on_lost == NULL) ||
        (what == NOTIFY_REVOKE && n->on_revoke == NULL))
        return;
    n->notify |= what;
    if (!n->in_notify) {
        n->in_notify = true;
        n->nnext = NULL;
        if (c->notify_tail)
            c->notify_tail->nnext = n;
        else
            c->notify_head = n;
        c->notify_tail = n;
    }
    pthread_cond_broadcast(&c->cv); /* the keeper */
}

static void unnotify(zkl__node *n)
{
    zkl_client *c = n->c;
    n->notify = 0;
    if (!n->in_notify)
        return;
    zkl__node *prev = NULL;
    for (zkl__node *x = c->notify_head; x; prev = x, x = x->nnext) {
        if (x == n) {
            if (prev)
                prev->nnext = n->nnext;
            else
                c->notify_head = n->nnext;
            if (c->notify_tail == n)
                c->notify_tail = prev;
            break;
        }
    }
    n->in_notify = false;
    n->nnext = NULL;
}

/* A held node is lost: the session ended, or someone else deleted it. Told
 * once. */
static void mark_lost(zkl__node *n)
{
    if (n->lost)
        return;
    n->lost = true;
    notify(n, NOTIFY_LOST);
}

/* The owner is done with the node: no hook may run for it from now on.
 * A caller thread waits for one that is running; the keeper (a hook that
 * releases) does not wait for itself. */
static void hooks_off(zkl__node *n)
{
    zkl_client *c = n->c;
    bool keeper = c->keeper_started && pthread_equal(pthread_self(), c->keeper);
    /* A loss already queued for the owner is still told, once: a holder
     * that saw is_held turn 0 and released at once would otherwise never
     * hear it. The keeper delivers it soon; it may not wait for itself. */
    while ((n->notify & NOTIFY_LOST) && n->in_notify && c->keeper_started && !keeper &&
           !c->closing)
        pthread_cond_wait(&c->cv, &c->mu);
    unnotify(n);
    n->on_lost = n->on_revoke = NULL;
    while (c->notifying == n && !keeper)
        pthread_cond_wait(&c->cv, &c->mu);
}

static void ahead_clear(zkl__node *n)
{
    for (size_t i = 0; i < n->nahead; i++)
        free(n->ahead[i]);
    free(n->ahead);
    n->ahead = NULL;
    n->nahead = 0;
}

static void skip_clear(zkl__node *n)
{
    for (size_t i = 0; i < n->nskip; i++)
        free(n->skip[i]);
    free(n->skip);
    n->skip = NULL;
    n->nskip = 0;
}

static void node_free(zkl__node *n)
{
    unnotify(n);
    skip_clear(n);
    ahead_clear(n);
    track_deleted(n, false);
    watching_remove(n);
    held_index_remove(n);
    zkl__client_unlink(n->c, n);
    group_clear(n);
    free(n->watch[0]);
    free(n->watch[1]);
    free(n->gone[0]);
    free(n->gone[1]);
    free(n->path);
    free(n->dir);
    pthread_cond_destroy(&n->cv);
    free(n);
}

/* Free the node once nobody needs it: no caller, no pending completion, and
 * nothing left to delete on the server (or the session is gone). */
static void maybe_free(zkl__node *n)
{
    if (n->owned || n->refs > 0)
        return;
    if (n->st != N_GONE && n->gen == n->c->gen && !n->c->closing)
        return;
    zkl_client *c = n->c;
    node_free(n);
    /* Only a closing client waits for nodes to go; otherwise this would
     * wake the keeper thread on every release, for nothing. */
    if (c->closing)
        pthread_cond_broadcast(&c->cv);
}

static void wake(zkl__node *n)
{
    pthread_cond_signal(&n->cv);
}

static void fail(zkl__node *n, int err)
{
    if (n->err == 0 && err == ZKL_EZK)
        n->zk_rc = zkl__last_mapped(); /* err came from zkl__err_from_zk */
    if (n->err == 0)
        n->err = err;
    n->st = N_GONE;
    wake(n);
}

/* true if the node belongs to the client's live session */
static bool current(zkl__node *n)
{
    return n->gen == n->c->gen && !n->c->closing;
}

static bool connected(zkl_client *c)
{
    return c->state == ZKL_STATE_CONNECTED || c->state == ZKL_STATE_RECONNECTED;
}

/* The request's outcome is unknown but the session may live on: find out
 * again after reconnecting. ZOPERATIONTIMEOUT is what libzookeeper_mt answers
 * when the server stalled the request (ZOOKEEPER-4537), and ZSESSIONMOVED a
 * request of an old connection after the session moved to another server:
 * neither ends the session, so neither may drop a node that still exists. */
static bool conn_error(int rc)
{
    return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONMOVED;
}

static bool session_error(int rc)
{
    return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING;
}

/* ---- sending (c->mu held; n->zh valid: a caller holds c->hlock, or we run
 * on that handle's own completion thread) -------------------------------- */

static void send_list(zkl__node *n);
static void send_create(zkl__node *n);
static void arm(zkl__node *n, int slot, const char *name);
static void forget_gone(zkl__node *n);
static void send_dirwatch(zkl__node *n);
static void ahead_set(zkl__node *n, const zkl__entry *cs, size_t w);
static void send_delete(zkl__node *n);
static void decide(zkl__node *n, const struct String_vector *kids);

/* A request could not even be queued: treat it as its answer. */
static void send_failed(zkl__node *n, int rc)
{
    n->refs--;
    if (conn_error(rc))
        n->stalled = true;
    else
        fail(n, zkl__err_from_zk(rc));
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
    n->st = N_DELETING;
    pthread_cond_broadcast(&n->c->cv); /* the keeper sends it */
}

static void delete_done(int rc, const void *data)
{
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    if (rc == ZOK || rc == ZNONODE) {
        if (rc == ZOK)
            c->stats.deletes++;
        else if (n->releasing && n->err == 0)
            n->err = ZKL_ELOST; /* someone else deleted the held node first */
        n->st = N_GONE;
        /* A node deleted by someone else says nothing sure of the path. */
        track_deleted(n, current(n) && rc == ZOK);
    } else if (conn_error(rc) && current(n)) {
        n->stalled = true; /* re-sent on reconnect */
        if (connected(c))
            zkl__queue_on_connected(c, n->zh);
    } else if (!current(n) || session_error(rc)) {
        n->st = N_GONE; /* gone with the session */
    } else if (n->releasing) {
        /* Refused (an ACL without DELETE): the node stays, so does the
         * hold; the caller hears why and may try again (PITFALLS: cleanup
         * that the server refuses). */
        n->err = zkl__err_from_zk(rc);
        n->st = N_HELD;
    } else {
        /* Refused, and nobody holds the node: keep trying, with backoff,
         * until the session ends or the client closes. */
        if (n->err == 0)
            n->err = zkl__err_from_zk(rc);
        schedule_retry(n);
    }
    n->releasing = false;
    wake(n);
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

static void send_delete(zkl__node *n)
{
    n->st = N_DELETING;
    n->retry_at = 0;
    n->refs++;
    n->c->stats.requests++;
    int rc = zoo_adelete(n->zh, n->path, -1, delete_done, n);
    if (rc != ZOK)
        send_failed(n, rc);
}

/* The caller gave up, or an error ended the attempt: make sure no node of
 * this attempt stays behind. */
static void leave(zkl__node *n)
{
    n->abandon = true;
    /* In N_CREATING or N_RECOVER the pending answer, or the recovery on
     * reconnect, sees `abandon` and deletes the node. */
    if (n->path != NULL && (n->st == N_QUEUED || n->st == N_HELD))
        send_delete(n);
}

/* An error that retrying cannot cure (an ACL that refuses, ...) ended the
 * attempt: the caller hears `err` at once, and a node we made is deleted
 * first (PROTOCOL §5: no orphan may outlive a failed acquire). */
static void abort_node(zkl__node *n, int err)
{
    if (n->err == 0 && err == ZKL_EZK)
        n->zk_rc = zkl__last_mapped(); /* err came from zkl__err_from_zk */
    if (n->err == 0)
        n->err = err;
    if (n->path != NULL && n->st == N_QUEUED) {
        arm(n, 0, NULL);
        arm(n, 1, NULL);
        group_clear(n);
        send_delete(n);
    } else if (n->st != N_DELETING) {
        n->st = N_GONE;
    }
    wake(n);
}

/* A waiting node that someone else deleted (or whose lock path went) has no
 * place in the queue any more: queue again with a fresh node under a new
 * uuid, within the same deadline, as Curator does. It never holds on the
 * strength of the old one. A downgrade node cannot be made anew: that
 * attempt is lost. */
static void requeue(zkl__node *n)
{
    track_invalidate(n->c, n->dir);
    if (n->fixed_seq[0]) {
        fail(n, ZKL_ELOST);
        return;
    }
    free(n->path);
    n->path = NULL;
    arm(n, 0, NULL);
    arm(n, 1, NULL);
    n->noread = false;
    ahead_clear(n);
    group_clear(n);
    forget_gone(n);
    n->own_armed = n->own_ok = false;
    n->pred_first = n->pred_same = false;
    n->relist = false;
    zkl__uuid(n->uuid);
    send_create(n);
}

/* ---- our own node's watch ------------------------------------------------ */

/* Our own node is gone and we did not delete it. */
static void own_gone(zkl__node *n)
{
    n->own_armed = n->own_ok = false;
    if (n->st == N_QUEUED || (n->st == N_HELD && !n->taken)) {
        /* Waiting, or held a moment ago but not yet returned to the
         * caller, who never learns of that hold: queue again. */
        n->st = N_QUEUED;
        requeue(n);
    } else if (n->st == N_HELD) {
        /* The lock is no longer ours: from now on is_held says so, release
         * says ZKL_ELOST and guarded writes are refused. */
        track_invalidate(n->c, n->dir);
        n->st = N_GONE;
        mark_lost(n);
        wake(n);
    }
}

static void own_changed(zkl__node *n);

static void own_exists_done(int rc, const struct Stat *st, const void *data)
{
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    /* Answers to one session's requests come in order: while the node is
     * queued or held, this answer is about its current path. */
    if (current(n) && n->own_armed && (n->st == N_QUEUED || n->st == N_HELD)) {
        if (rc == ZOK) {
            n->own_ok = true;
            /* Written to before this watch was set (another client's
             * request can overtake it): read it as if the watch had fired. */
            if (st != NULL && st->version > n->own_version)
                own_changed(n);
        } else if (rc == ZNONODE) {
            own_gone(n);
        } else {
            n->own_armed = false;
            if (conn_error(rc)) {
                n->stalled = true;
                if (connected(c))
                    zkl__queue_on_connected(c, n->zh);
            }
        }
    }
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

/* An existence watch: it needs no READ permission, fires on deletion and on
 * a change of the node's data. */
static void arm_own(zkl__node *n)
{
    zkl_client *c = n->c;
    if (n->own_armed || n->path == NULL)
        return;
    n->own_armed = true;
    watching_add(n);
    n->refs++;
    c->stats.requests++;
    int rc = zoo_awexists(n->zh, n->path, zkl__node_watcher_fn(), (void *)(uintptr_t)c->id,
                          own_exists_done, n);
    if (rc != ZOK) {
        n->own_armed = false;
        send_failed(n, rc);
    }
}

static void own_get_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    if (current(n) && n->own_armed && (n->st == N_QUEUED || n->st == N_HELD)) {
        if (rc == ZOK) {
            n->own_ok = true;
            bool fresh = st == NULL || st->version > n->own_version;
            if (st != NULL && st->version > n->own_version)
                n->own_version = st->version;
            if (fresh && n->st == N_HELD && len == REVOKE_LEN &&
                memcmp(v, REVOKE_DATA, REVOKE_LEN) == 0)
                notify(n, NOTIFY_REVOKE);
        } else if (rc == ZNONODE) {
            own_gone(n);
        } else {
            n->own_armed = false;
            if (conn_error(rc)) {
                n->stalled = true;
                if (connected(c))
                    zkl__queue_on_connected(c, n->zh);
            } else {
                arm_own(n); /* not allowed to read it: watch on without */
            }
        }
    }
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

/* Our node's data changed: read it, watching on. Someone wrote the
 * revocation request into it: the owner's revoke hook hears of it (the
 * public revocation API builds on this hook). */
static void own_changed(zkl__node *n)
{
    zkl_client *c = n->c;
    n->own_armed = true;
    n->own_ok = false; /* not watched until this answers: no handoff on trust */
    watching_add(n);
    n->refs++;
    c->stats.requests++;
    int rc = zoo_awget(n->zh, n->path, zkl__node_watcher_fn(), (void *)(uintptr_t)c->id,
                       own_get_done, n);
    if (rc != ZOK) {
        n->own_armed = false;
        send_failed(n, rc);
    }
}

static void list_done(int rc, const struct String_vector *kids, const void *data)
{
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    n->listing = false;
    if (!current(n) || (n->st != N_QUEUED && n->st != N_RECOVER)) {
        /* a stale answer, or the pipelined listing of a create that failed */
    } else if (rc == ZOK) {
        if (n->relist && n->st == N_QUEUED) {
            n->relist = false;
            send_list(n);
        } else {
            decide(n, kids);
        }
    } else if (conn_error(rc)) {
        n->stalled = true;
        if (connected(c))
            zkl__queue_on_connected(c, n->zh);
    } else if (rc == ZNONODE && n->st == N_RECOVER) {
        /* the lock path itself is gone, so our create never happened */
        if (n->abandon)
            n->st = N_GONE, wake(n);
        else
            send_create(n);
    } else if (rc == ZNONODE) {
        requeue(n); /* the lock path vanished, and our node with it */
    } else if (n->st == N_QUEUED) {
        abort_node(n, zkl__err_from_zk(rc)); /* e.g. READ refused: ZKL_ENOAUTH */
    } else {
        fail(n, zkl__err_from_zk(rc));
    }
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

static void send_list(zkl__node *n)
{
    if (n->listing) {
        n->relist = true; /* coalesce: one listing in flight at a time */
        return;
    }
    n->listing = true;
    n->refs++;
    n->c->stats.requests++;
    n->c->stats.listings++;
    int rc = zoo_aget_children(n->zh, n->dir, 0, list_done, n);
    if (rc != ZOK) {
        n->listing = false;
        send_failed(n, rc);
    }
}

static void stat_done(int rc, const struct Stat *stat, const void *data)
{
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    if (!current(n) || n->st != N_RECOVER) {
    } else if (rc == ZOK) {
        /* A node is ours only if our current session owns it: never adopt a
         * node of an earlier session (PITFALLS: adopting a doomed node). */
        if (stat->ephemeralOwner != c->sid) {
            /* Our uuid, but not our session's: planted by someone else (our
             * attempt lives in one session). Neither adopt it nor delete
             * it; look on for the real one. */
            char **sk = realloc(n->skip, (n->nskip + 1) * sizeof *sk);
            const char *name = n->path + strlen(n->dir) + 1;
            if (sk == NULL || (sk[n->nskip] = strdup(name)) == NULL) {
                if (sk)
                    n->skip = sk;
                free(n->path);
                n->path = NULL;
                fail(n, ZKL_ENOMEM);
            } else {
                n->skip = sk;
                n->nskip++;
                free(n->path);
                n->path = NULL;
                send_list(n);
            }
        } else {
            n->token = stat->czxid;
            c->stats.recovered++;
            /* The exists call left a watch on it: our own node's watch. */
            n->own_armed = n->own_ok = true;
            watching_add(n);
            if (n->abandon) {
                send_delete(n);
            } else {
                n->st = N_QUEUED;
                send_list(n);
            }
        }
    } else if (rc == ZNONODE) {
        free(n->path);
        n->path = NULL;
        if (n->abandon)
            n->st = N_GONE, wake(n);
        else
            send_create(n);
    } else if (conn_error(rc)) {
        n->stalled = true;
        if (connected(c))
            zkl__queue_on_connected(c, n->zh);
    } else {
        fail(n, zkl__err_from_zk(rc));
    }
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

/* Recovery: the answer to a create was lost. List, look for our uuid, and
 * check who owns what we find (the check also watches it, as our own node
 * is watched). */
static void recover_found(zkl__node *n, const char *name)
{
    n->path = zkl__path_join(n->dir, name);
    if (n->path == NULL) {
        fail(n, ZKL_ENOMEM);
        return;
    }
    n->refs++;
    n->c->stats.requests++;
    int rc = zoo_awexists(n->zh, n->path, zkl__node_watcher_fn(), (void *)(uintptr_t)n->c->id,
                          stat_done, n);
    if (rc != ZOK)
        send_failed(n, rc);
}

/* A create sent without a listing was answered: its number says whether
 * the lock path held nothing else (see track_alone); if not, list now. */
static void fast_answer(zkl__node *n, int64_t want)
{
    zkl__entry e;
    const char *name = n->path + strlen(n->dir) + 1;
    if (n->c->dir_epoch == n->fast_epoch && zkl__entry_parse(name, &e) == 0 && e.seq == want) {
        char *one[1] = {(char *)name};
        struct String_vector kids = {1, one};
        decide(n, &kids);
    } else {
        send_list(n);
    }
}

static void create_done(int rc, const char *name, const struct Stat *stat, const void *data)
{
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    int64_t fast = n->fast_expect;
    n->fast_expect = -1; /* a retry lists as usual */
    if (!current(n) || n->st != N_CREATING) {
        /* session gone: the node, if any, went with it */
    } else if (rc == ZOK) {
        c->stats.creates++;
        n->path = strdup(name);
        n->token = stat->czxid;
        if (n->path == NULL) {
            fail(n, ZKL_ENOMEM); /* cannot even name it: the session end takes it */
        } else if (n->abandon) {
            send_delete(n);
        } else {
            /* Watch our own node at once: this goes out ahead of every
             * watch on another node, so its deletion by someone else is
             * known before any event that could hand us the lock. It adds
             * no wait: the acquire does not wait for its answer. */
            n->st = N_QUEUED;
            arm_own(n);
            if (fast >= 0 && n->st == N_QUEUED)
                fast_answer(n, fast);
            /* else the pipelined listing answers next */
        }
    } else if (rc == ZNONODE) {
        /* A missing parent, or a container removed under us (PROTOCOL §1):
         * create the parents and try again, within the same deadline. */
        if (n->abandon)
            n->st = N_GONE, wake(n);
        else if (n->parent_rc != 0)
            fail(n, zkl__err_from_zk(n->parent_rc)); /* e.g. a protected parent: ZKL_ENOAUTH */
        else if (++n->creates > 50)
            fail(n, zkl__err_from_zk(ZNONODE));
        else
            send_create(n);
    } else if (conn_error(rc)) {
        n->stalled = true;
        n->st = N_RECOVER;
        if (connected(c))
            zkl__queue_on_connected(c, n->zh);
    } else {
        fail(n, zkl__err_from_zk(rc));
    }
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

static void parent_done(int rc, const char *name, const void *data)
{
    (void)name;
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--; /* the contender create after it tells what happened */
    if (rc == ZNOAUTH || rc == ZINVALIDACL)
        n->parent_rc = rc; /* ... and this says why, if it fails for want of it */
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

/* Create the lock path, or it and its ancestors; one session's requests are served
 * in order, so the contender create sent right after them finds them. */
static void send_parents(zkl__node *n)
{
    zkl_client *c = n->c;
    int mode = c->container_parents ? ZOO_CONTAINER : ZOO_PERSISTENT;
    char *p = strdup(n->dir);
    if (p == NULL)
        return;
    /* Most often only the lock path itself is missing: the first retry
     * creates just it, later ones every ancestor too. */
    for (char *s = n->creates > 1 ? strchr(p + 1, '/') : NULL;; s = strchr(s + 1, '/')) {
        if (s)
            *s = '\0';
        n->refs++;
        c->stats.requests++;
        int rc = zoo_acreate(n->zh, p, "", 0, zkl__client_acl(c), mode, parent_done, n);
        if (rc != ZOK)
            n->refs--;
        if (!s)
            break;
        *s = '/';
    }
    free(p);
}

static void send_create(zkl__node *n)
{
    zkl_client *c = n->c;
    char name[ZKL__MAX_PATH + 96];
    int mode = ZOO_EPHEMERAL_SEQUENTIAL;
    if (n->creates > 0)
        send_parents(n);
    if (n->fixed_seq[0]) {
        /* A plain ephemeral node that sorts with a given sequence (read-lock
         * downgrade, PROTOCOL §4). */
        snprintf(name, sizeof name, "%s/_c_%s-%s%s", n->dir, n->uuid, n->kind, n->fixed_seq);
        mode = ZOO_EPHEMERAL;
    } else {
        snprintf(name, sizeof name, "%s/_c_%s-%s", n->dir, n->uuid, n->kind);
    }
    n->st = N_CREATING;
    n->refs++;
    c->stats.requests++;
    int rc = zoo_acreate2(n->zh, name, c->ident, (int)strlen(c->ident), zkl__client_acl(c), mode,
                          create_done, n);
    if (rc != ZOK) {
        send_failed(n, rc);
        return;
    }
    if (n->fast_expect >= 0)
        return; /* its number may answer for the listing (track_alone) */
    /* The listing rides right behind the create: one round trip for an
     * uncontended acquire. list_done ignores it if the create failed. */
    n->listing = true;
    n->refs++;
    c->stats.requests++;
    c->stats.listings++;
    rc = zoo_aget_children(n->zh, n->dir, 0, list_done, n);
    if (rc != ZOK) {
        n->listing = false;
        n->refs--;
    }
}

/* ---- deciding and watching -------------------------------------------- */

static int entry_cmp(const void *a, const void *b)
{
    const zkl__entry *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Watch the nearest node ahead, and with prefetch the one before it. */
static void arm_ahead(zkl__node *n)
{
    arm(n, 0, n->ahead[n->nahead - 1]);
    arm(n, 1, n->prefetch && n->nahead >= 2 ? n->ahead[n->nahead - 2] : NULL);
}

/* Hold without listing (PROTOCOL §4): every node that was ahead of ours is
 * gone, none can come back ahead of it, and our own node still exists. */
static void hold_now(zkl__node *n)
{
    n->st = N_HELD;
    ahead_clear(n);
    arm(n, 0, NULL);
    arm(n, 1, NULL);
    forget_gone(n);
    wake(n);
}

/* The node watched in `slot` is gone. If we know every node that was ahead
 * of ours (`ahead`) and our own node is watched, nothing can have come in
 * between: watch the nearest one still ahead instead of listing, or hold if
 * none is left. Returns false if that knowledge is missing: list then. */
static bool walk_back(zkl__node *n, int slot)
{
    if (n->nahead == 0 || !n->own_ok || !n->pol->handoff || n->watch[slot] == NULL)
        return false;
    const char *name = n->watch[slot] + strlen(n->dir) + 1;
    size_t i = n->nahead;
    while (i > 0 && strcmp(n->ahead[i - 1], name) != 0)
        i--;
    /* With more than one node still ahead of the next one to watch, many
     * of them may have gone at once (fast turnover): one listing sees all
     * that, where walking would cost a request per node. The prefetch
     * watch (slot 1) walks on: it only keeps the handoff listing-free. */
    if (i == 0 || (slot == 0 && n->nahead > 2))
        return false;
    free(n->ahead[i - 1]);
    memmove(n->ahead + i - 1, n->ahead + i, (n->nahead - i) * sizeof *n->ahead);
    n->nahead--;
    if (n->nahead == 0) {
        hold_now(n);
        return true;
    }
    n->pred_first = n->nahead == 1;
    n->pred_same = true;
    arm_ahead(n);
    return true;
}

static void wget_done(int rc, const char *v, int len, const struct Stat *st, const void *data,
                      int slot)
{
    (void)v, (void)len, (void)st;
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    bool latest = ++n->wdone[slot] == n->wsent[slot];
    if (current(n) && n->st == N_QUEUED) {
        if (rc == ZNONODE) {
            /* Already gone before the watch was set: the next one ahead,
             * or list again, nothing more (PITFALLS: ZNONODE on the
             * predecessor is no failure). */
            n->armed[slot] = false;
            if (!(latest && walk_back(n, slot)))
                send_list(n);
        } else if (conn_error(rc)) {
            n->armed[slot] = false;
            n->stalled = true;
            if (connected(c))
                zkl__queue_on_connected(c, n->zh);
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
            abort_node(n, zkl__err_from_zk(rc)); /* retrying cannot cure it */
        }
    }
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

/* The answer to a listing that also set a child watch on the lock path:
 * decide on it as on any listing (the watched node may be gone already). */
static void dirwatch_list_done(int rc, const struct String_vector *kids, const void *data)
{
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    c->stats.listings++;
    if (!current(n) || n->st != N_QUEUED) {
    } else if (rc == ZOK) {
        decide(n, kids);
    } else {
        n->dirwatch = false;
        if (conn_error(rc)) {
            n->stalled = true;
            if (connected(c))
                zkl__queue_on_connected(c, n->zh);
        } else if (rc == ZNONODE) {
            requeue(n);
        } else {
            abort_node(n, zkl__err_from_zk(rc));
        }
    }
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

static void send_dirwatch(zkl__node *n)
{
    zkl_client *c = n->c;
    if (n->dirwatch)
        return; /* one is set: its event lists again */
    n->dirwatch = true;
    watching_add(n);
    n->refs++;
    c->stats.requests++;
    int rc = zoo_awget_children(n->zh, n->dir, zkl__node_watcher_fn(), (void *)(uintptr_t)c->id,
                                dirwatch_list_done, n);
    if (rc != ZOK) {
        n->dirwatch = false;
        send_failed(n, rc);
    }
}

static void wget0_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    wget_done(rc, v, len, st, data, 0);
}

static void wget1_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    wget_done(rc, v, len, st, data, 1);
}

static void arm(zkl__node *n, int slot, const char *name)
{
    zkl_client *c = n->c;
    if (name == NULL) {
        free(n->watch[slot]);
        n->watch[slot] = NULL;
        n->armed[slot] = false;
        return;
    }
    char *full = zkl__path_join(n->dir, name);
    if (full == NULL) {
        fail(n, ZKL_ENOMEM);
        return;
    }
    if (n->armed[slot] && n->watch[slot] && strcmp(n->watch[slot], full) == 0) {
        free(full); /* already watching it */
        return;
    }
    free(n->watch[slot]);
    n->watch[slot] = full;
    n->armed[slot] = true;
    watching_add(n);
    if (n->noread) {
        send_dirwatch(n); /* the lock path's children tell (wget_done) */
        return;
    }
    n->wsent[slot]++;
    n->refs++;
    c->stats.requests++;
    /* A data watch, not an existence watch: none is left behind on a node
     * that is already gone (PROTOCOL §4). */
    int rc = zoo_awget(n->zh, full, zkl__node_watcher_fn(), (void *)(uintptr_t)c->id,
                       slot == 0 ? wget0_done : wget1_done, n);
    if (rc != ZOK) {
        n->wsent[slot]--;
        n->armed[slot] = false;
        send_failed(n, rc);
    }
}

static void wgetg_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    (void)v, (void)len, (void)st;
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--;
    if (current(n) && n->st == N_QUEUED && rc != ZOK) {
        if (conn_error(rc)) {
            n->stalled = true;
            if (connected(c))
                zkl__queue_on_connected(c, n->zh);
        } else if (rc == ZNONODE) {
            send_list(n); /* gone before the watch was set: list again */
        } else if (rc == ZNOAUTH) {
            /* Not allowed to read a member: watch the children instead. */
            n->noread = true;
            send_dirwatch(n);
        } else {
            abort_node(n, zkl__err_from_zk(rc));
        }
    }
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

static void arm_group_member(zkl__node *n, struct gwatch *g)
{
    zkl_client *c = n->c;
    g->armed = true;
    watching_add(n);
    n->refs++;
    c->stats.requests++;
    if (n->noread) {
        send_dirwatch(n); /* the lock path's children tell (wgetg_done) */
        return;
    }
    int rc = zoo_awget(n->zh, g->path, zkl__node_watcher_fn(), (void *)(uintptr_t)c->id,
                       wgetg_done, n);
    if (rc != ZOK) {
        g->armed = false;
        send_failed(n, rc);
    }
}

/* Watch every member of the policy's watch group in this listing: the
 * watches still armed from an earlier listing stay, new members get one.
 * Any member going lists again, so the node waits for the first of them. */
static void arm_group(zkl__node *n, const zkl__entry *cs, size_t k, size_t self)
{
    struct gwatch *g = calloc(k ? k : 1, sizeof *g);
    if (g == NULL) {
        fail(n, ZKL_ENOMEM);
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
            fail(n, ZKL_ENOMEM);
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
    group_clear(n);
    n->group = g;
    n->ngroup = m;
    for (size_t i = 0; i < m && n->st == N_QUEUED; i++)
        if (!g[i].armed)
            arm_group_member(n, &g[i]);
}

/* Whether `name` is a node whose deletion was already seen: a listing sent
 * before that deletion may still show it, and it never comes back. */
static bool seen_gone(const zkl__node *n, const char *name)
{
    size_t d = strlen(n->dir) + 1;
    for (int i = 0; i < 2; i++)
        if (n->gone[i] && strcmp(n->gone[i] + d, name) == 0)
            return true;
    return false;
}

static void forget_gone(zkl__node *n)
{
    for (int i = 0; i < 2; i++) {
        free(n->gone[i]);
        n->gone[i] = NULL;
    }
}

/* Whether `name` may be the node of our lost create: our uuid, our kind,
 * a sequence (or our fixed one), and not already found to be someone
 * else's. Only a session check (stat_done) makes it ours. */
static bool recoverable(const zkl__node *n, const char *name)
{
    size_t kl = strlen(n->kind);
    if (!zkl__name_has_uuid(name, n->uuid) || strlen(name) != 40 + kl + 10 ||
        memcmp(name + 40, n->kind, kl) != 0)
        return false;
    for (size_t i = 40 + kl; name[i]; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    if (n->fixed_seq[0] && strcmp(name + 40 + kl, n->fixed_seq) != 0)
        return false;
    for (size_t i = 0; i < n->nskip; i++)
        if (strcmp(n->skip[i], name) == 0)
            return false;
    return true;
}

/* Remember the nodes ahead of ours, cs[0..w], if all are of our kind and
 * our kind hands off (see `ahead`). */
static void ahead_set(zkl__node *n, const zkl__entry *cs, size_t w)
{
    ahead_clear(n);
    if (!n->pol->handoff)
        return;
    for (size_t i = 0; i <= w; i++)
        if (!zkl__entry_is(&cs[i], n->kind))
            return;
    if ((n->ahead = calloc(w + 1, sizeof *n->ahead)) == NULL)
        return;
    for (size_t i = 0; i <= w; i++) {
        if ((n->ahead[i] = strdup(cs[i].name)) == NULL) {
            ahead_clear(n);
            return;
        }
        n->nahead = i + 1;
    }
}

static void decide(zkl__node *n, const struct String_vector *kids)
{
    size_t cnt = kids ? (size_t)kids->count : 0;
    zkl__entry stackbuf[64];
    zkl__entry *cs = cnt <= 64 ? stackbuf : malloc(cnt * sizeof *cs);
    if (cs == NULL) {
        fail(n, ZKL_ENOMEM);
        return;
    }
    size_t k = 0;
    bool gone = n->gone[0] || n->gone[1];
    for (size_t i = 0; i < cnt; i++) {
        if (zkl__entry_parse(kids->data[i], &cs[k]) == 0 &&
            !(gone && seen_gone(n, kids->data[i])))
            k++;
    }
    qsort(cs, k, sizeof *cs, entry_cmp);
    size_t self = k;
    for (size_t i = 0; i < k; i++) {
        if (n->path ? strcmp(cs[i].name, n->path + strlen(n->dir) + 1) == 0
                    : recoverable(n, cs[i].name)) {
            self = i;
            break;
        }
    }
    if (n->st == N_RECOVER) {
        if (self < k) {
            recover_found(n, cs[self].name);
        } else if (n->abandon) {
            n->st = N_GONE;
            wake(n);
        } else {
            send_create(n); /* the lost create never happened */
        }
    } else if (self == k) {
        /* Our node was removed under us (the own watch may not have told
         * yet): it holds nothing; queue again. */
        if (n->abandon) {
            n->st = N_GONE;
            wake(n);
        } else {
            requeue(n);
        }
    } else if (n->abandon) {
        send_delete(n);
    } else {
        size_t w = 0;
        if (!n->decided) {
            n->decided = true;
            /* A try-once caller returns on the first answer; any other
             * caller would only wake up to sleep again. */
            if (n->try_once)
                wake(n);
        }
        if (n->pol->holds(cs, k, self, &w, n->arg)) {
            ahead_clear(n);
            n->st = N_HELD;
            arm(n, 0, NULL);
            arm(n, 1, NULL);
            group_clear(n);
            forget_gone(n);
            if (k == 1 && fast_eligible(n))
                track_alone(n, cs[0].seq);
            wake(n);
        } else if (n->pol->watch_group && n->pol->watch_group(&cs[w], n->arg)) {
            n->pred_first = n->pred_same = false;
            ahead_clear(n);
            arm(n, 0, NULL);
            arm(n, 1, NULL);
            arm_group(n, cs, k, self);
        } else {
            n->pred_first = w == 0;
            n->pred_same = zkl__entry_is(&cs[w], n->kind);
            ahead_set(n, cs, w);
            group_clear(n);
            arm(n, 0, cs[w].name);
            arm(n, 1, n->prefetch && w > 0 ? cs[w - 1].name : NULL);
        }
    }
    if (cs != stackbuf)
        free(cs);
}

/* ---- client entry points (c->mu held) ---------------------------------- */

/* Whether the watched node at `path` is of the node's own kind. */
static bool same_kind(const zkl__node *n, const char *path)
{
    zkl__entry e;
    return zkl__entry_parse(path + strlen(n->dir) + 1, &e) == 0 && zkl__entry_is(&e, n->kind);
}

void zkl__queue_watch_event(zkl_client *c, zhandle_t *zh, int type, const char *path)
{
    for (struct zkl__dirtrack *t = c->dirs; t; t = t->next) {
        if (strcmp(t->dir, path) == 0) {
            track_invalidate(c, path); /* removed, or its data changed */
            break;
        }
    }
    if (c->held_count > 0) {
        zkl__node *n = *held_slot(c, path);
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
                held_index_remove(n);
        }
    }
    for (zkl__node *n = c->watching, *next; n; n = next) {
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
                watching_remove(n);
            continue;
        }
        if (n->st != N_QUEUED) {
            /* Done, or held with nothing watched but its own node: no
             * event but that one is for it any more; a held node's own
             * watch is routed by the index from now on. Should it queue
             * again, it arms its watches, and joins, anew. */
            if (n->st == N_HELD && n->own_armed && n->path != NULL)
                held_index_add(n); /* without room it stays listed: only slower */
            else
                watching_remove(n);
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
                arm(n, slot, path + strlen(n->dir) + 1); /* data changed: watch on */
            } else if (slot == 0 && type == ZOO_DELETED_EVENT && n->pred_first &&
                       n->pred_same && n->pol->handoff && n->own_ok) {
                /* The node we watch was first in our latest listing, and
                 * every node created since sorts after ours: we are first
                 * now, without listing again (PROTOCOL §4). Our own node
                 * still exists: its watch was set before the one on the
                 * node ahead, so its deletion would have been told first. */
                hold_now(n);
            } else if (type == ZOO_DELETED_EVENT && !n->listing && walk_back(n, slot)) {
                /* the next node ahead is watched now (or we hold) */
            } else if (type == ZOO_DELETED_EVENT && n->listing && n->pol->handoff &&
                       same_kind(n, path)) {
                /* A listing is already in flight. Sent before this deletion,
                 * it may still show the node: decide() skips it then, so
                 * that answer serves and no second listing is needed (the
                 * node's name, with its sequence, never comes back). */
                free(n->gone[slot]);
                n->gone[slot] = n->watch[slot];
                n->watch[slot] = NULL;
            } else {
                send_list(n);
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
                send_list(n);
            break;
        }
    }
}

static void sync_done(int rc, const char *value, const void *data)
{
    (void)rc, (void)value;
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    n->refs--; /* the listing sent right behind it tells what happened */
    maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

/* Recovery's listing must see the lost create if the quorum applied it. The
 * server we reconnected to may lag behind the leader, which may still commit
 * a create sent on the old connection: a sync first makes the listing (same
 * session, served in order) see every write the leader had proposed. */
static void send_sync_then_list(zkl__node *n)
{
    n->refs++;
    n->c->stats.requests++;
    if (zoo_async(n->zh, n->dir, sync_done, n) != ZOK)
        n->refs--;
    send_list(n);
}

void zkl__queue_on_connected(zkl_client *c, zhandle_t *zh)
{
    /* Events may have been missed while disconnected: what the client
     * knew of its lock paths is no proof any more. */
    track_invalidate(c, NULL);
    for (zkl__node *n = c->live; n; n = n->next) {
        /* A watch on our own node that could not be set: set it now (one
         * that was set survives the reconnection). */
        if (n->zh == zh && current(n) && !n->own_armed && n->path != NULL &&
            (n->st == N_HELD || (n->st == N_QUEUED && n->stalled)))
            arm_own(n);
        if (!n->stalled || n->zh != zh || !current(n))
            continue;
        n->stalled = false;
        switch (n->st) {
        case N_CREATING:
        case N_RECOVER:
            /* Did the create happen? Only a listing can tell. */
            n->st = N_RECOVER;
            free(n->path);
            n->path = NULL;
            n->listing = false;
            send_sync_then_list(n);
            break;
        case N_QUEUED:
            n->armed[0] = n->armed[1] = false;
            for (size_t i = 0; i < n->ngroup; i++)
                n->group[i].armed = false;
            send_list(n);
            break;
        case N_DELETING:
            send_delete(n);
            break;
        default:
            break;
        }
    }
}

void zkl__queue_on_session_end(zkl_client *c)
{
    track_free_from(&c->dirs);
    c->dir_epoch++;
    for (zkl__node *n = c->live, *next; n; n = next) {
        next = n->next;
        if (n->gen == c->gen && !c->closing)
            continue;
        /* Every node the session held went with it: tell each owner
         * (not when the user closes the client: that is no loss). */
        if (n->st == N_HELD && !c->closing)
            mark_lost(n);
        if (n->st != N_HELD && n->err == 0)
            n->err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
        if (n->st != N_HELD)
            n->st = N_GONE;
        wake(n);
        maybe_free(n);
    }
}

int64_t zkl__queue_keeper(zkl_client *c)
{
    /* Tell the owners, one hook at a time, with c->mu released. */
    zkl__node *n;
    while ((n = c->notify_head) != NULL && !c->closing) {
        c->notify_head = n->nnext;
        if (c->notify_head == NULL)
            c->notify_tail = NULL;
        n->in_notify = false;
        n->nnext = NULL;
        unsigned what = n->notify;
        n->notify = 0;
        zkl__node_fn fns[2] = {what & NOTIFY_LOST ? n->on_lost : NULL,
                               what & NOTIFY_REVOKE ? n->on_revoke : NULL};
        void *arg = n->hook_arg;
        int64_t token = n->token;
        c->notifying = n; /* hooks_off waits for this call */
        c->delivering = 1;
        pthread_mutex_unlock(&c->mu);
        for (int i = 0; i < 2; i++)
            if (fns[i])
                fns[i](n, token, arg);
        pthread_mutex_lock(&c->mu);
        c->notifying = NULL;
        c->delivering = 0;
        c->delivery++;
        pthread_cond_broadcast(&c->cv);
    }
    /* Deletes the server refused for nodes nobody holds: send the due ones
     * again. The keeper is the only thread that swaps c->zh. */
    int64_t now = zkl__now_ns(), next = 0;
    for (n = c->live; n; n = n->next) {
        if (n->retry_at == 0 || n->st != N_DELETING || !current(n))
            continue;
        if (n->retry_at <= now && !connected(c)) {
            n->retry_at = 0;
            n->stalled = true; /* zkl__queue_on_connected sends it */
            continue;
        }
        if (n->retry_at <= now && n->refs > 0)
            n->retry_at = now + 100000000; /* an answer is still due: later */
        else if (n->retry_at <= now && n->zh == c->zh)
            send_delete(n);
        if (n->retry_at != 0 && (next == 0 || n->retry_at < next))
            next = n->retry_at;
    }
    return next;
}

void zkl__queue_wake_all(zkl_client *c)
{
    for (zkl__node *n = c->live; n; n = n->next)
        pthread_cond_broadcast(&n->cv);
}

int zkl__queue_pending(zkl_client *c)
{
    for (zkl__node *n = c->live; n; n = n->next)
        if (n->refs > 0)
            return 1;
    return 0;
}

void zkl__queue_drop_all(zkl_client *c)
{
    while (c->live)
        node_free(c->live);
    track_free_from(&c->dirs);
    free(c->held_index);
    c->held_index = NULL;
    c->held_buckets = c->held_count = 0;
}

/* ---- the caller's side ------------------------------------------------- */

/* Take the handle for sending from a caller thread: c->hlock (read) keeps
 * the keeper from swapping it; lock order is hlock, then c->mu. */
static void caller_lock(zkl_client *c)
{
    pthread_rwlock_rdlock(&c->hlock);
    pthread_mutex_lock(&c->mu);
}

static void caller_unlock_hlock(zkl_client *c)
{
    pthread_rwlock_unlock(&c->hlock);
}

/* A caller thread is done with the client (c->mu held): a closing client
 * waits for the last one before it frees anything they touch. */
static void leave_engine(zkl_client *c)
{
    if (--c->inside == 0 && c->closing)
        pthread_cond_broadcast(&c->cv);
}

/* How long a failed acquire waits for its node's delete to be confirmed. */
#define CLEANUP_GRACE_NS (500 * (int64_t)1000000)

static int wait_state_err(zkl_client *c)
{
    if (c->closing)
        return ZKL_ECLOSED;
    if (c->state == ZKL_STATE_LOST || c->zh == NULL)
        return ZKL_ELOST;
    if (c->cancelled)
        return ZKL_ECANCELED;
    return 0;
}

/* Between a lost session and the next one (the client re-opens by itself)
 * an acquire waits for the new session within its deadline rather than
 * failing at once: it has held nothing on the old one. */
static void wait_reopened(zkl_client *c, int64_t deadline)
{
    pthread_mutex_lock(&c->mu);
    while (!c->closing && !c->cancelled && c->state == ZKL_STATE_LOST && c->reopen &&
           c->owns_zh && !c->auth_failed) {
        if (zkl__cond_wait(&c->cv, &c->mu, deadline) != 0)
            break;
    }
    pthread_mutex_unlock(&c->mu);
}

int zkl__queue_acquire(zkl_client *c, const char *dir, const zkl__policy *pol,
                       const zkl__qopts *o, int64_t deadline, zkl__node **out)
{
    zkl__node *n = calloc(1, sizeof *n);
    if (n == NULL)
        return ZKL_ENOMEM;
    if ((n->dir = strdup(dir)) == NULL || zkl__cond_init(&n->cv) != 0) {
        free(n->dir);
        free(n);
        return ZKL_ENOMEM;
    }
    n->c = c;
    n->pol = pol;
    n->arg = o ? o->arg : NULL;
    n->prefetch = o && o->prefetch;
    if (o && o->fixed_seq)
        snprintf(n->fixed_seq, sizeof n->fixed_seq, "%s", o->fixed_seq);
    snprintf(n->kind, sizeof n->kind, "%s", o && o->kind ? o->kind : pol->kind);
    zkl__uuid(n->uuid);
    n->owned = true;
    n->fast_expect = -1;
    if (o) {
        n->on_lost = o->on_lost;
        n->on_revoke = o->on_revoke;
        n->hook_arg = o->hook_arg;
    }

    wait_reopened(c, deadline);
    caller_lock(c);
    int err = wait_state_err(c);
    /* Work done under a node (a semaphore's gate) must not spill over into
     * a later session, where that node no longer protects it. */
    if (err == 0 && o && o->within && (o->within->gen != c->gen || o->within->st != N_HELD))
        err = ZKL_ELOST;
    if (err != 0) {
        pthread_mutex_unlock(&c->mu);
        caller_unlock_hlock(c);
        pthread_cond_destroy(&n->cv);
        free(n->dir);
        free(n);
        return err;
    }
    zkl__client_link(c, n);
    n->zh = c->zh;
    n->gen = c->gen;
    c->inside++;
    if (fast_eligible(n) && connected(c)) {
        struct zkl__dirtrack *t = track_find(c, n->dir);
        if (t != NULL && t->ready && t->watched) {
            t->ready = false; /* one acquire per confirmed delete */
            n->fast_expect = t->expect;
            n->fast_epoch = c->dir_epoch;
        }
    }
    send_create(n);
    pthread_mutex_unlock(&c->mu);
    caller_unlock_hlock(c);

    /* Try-once (timeout 0) still waits for the policy's first answer,
     * bounded by the session timeout. */
    bool try_once = deadline <= zkl__now_ns();
    int64_t wait_until = try_once ? zkl__now_ns() + (int64_t)c->timeout_ms * 1000000 : deadline;
    pthread_mutex_lock(&c->mu);
    n->try_once = try_once; /* checked with `decided` below, under c->mu */
    for (;;) {
        if (n->st == N_HELD && current(n)) {
            n->taken = true;
            leave_engine(c);
            pthread_mutex_unlock(&c->mu);
            *out = n;
            return 0;
        }
        if (n->err != 0) {
            if ((err = n->err) == ZKL_EZK)
                zkl__detail_zk(n->zk_rc); /* for zkl_last_zk_error() */
            break;
        }
        if (n->lost) {
            err = ZKL_ELOST; /* held, and deleted before we could return */
            break;
        }
        if (!current(n)) {
            err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
            break;
        }
        if (c->cancelled) {
            err = ZKL_ECANCELED;
            break;
        }
        /* A try once does not wait for a reconnect (the session timeout,
         * perhaps): the client wakes waiters when it loses the connection. */
        if (try_once && !connected(c)) {
            err = ZKL_ECONNLOSS;
            break;
        }
        if (try_once && n->decided) {
            err = ZKL_ETIMEDOUT;
            break;
        }
        if (zkl__cond_wait(&n->cv, &c->mu, wait_until) != 0 && n->st != N_HELD) {
            err = ZKL_ETIMEDOUT;
            break;
        }
    }
    /* Failed: make sure nothing of this attempt stays on the server. */
    pthread_mutex_unlock(&c->mu);
    caller_lock(c);
    if (current(n))
        leave(n);
    pthread_mutex_unlock(&c->mu);
    caller_unlock_hlock(c);
    pthread_mutex_lock(&c->mu);
    /* While connected that takes one round trip: wait for it, so a failed
     * acquire returns with its node gone. If the connection is down, the
     * engine finishes the job on reconnect (or the session end does). The
     * wait is short and bounded: a server that stalls requests (ZOOKEEPER-
     * 4537) must not hold the caller past its deadline for long; the engine
     * deletes the node when the answer comes. */
    int64_t grace = zkl__now_ns() + CLEANUP_GRACE_NS;
    while (current(n) && n->st != N_GONE && n->retry_at == 0 && connected(c) &&
           zkl__cond_wait(&n->cv, &c->mu, grace) == 0)
        ;
    hooks_off(n); /* the caller never held it: nothing to tell */
    n->owned = false;
    maybe_free(n);
    leave_engine(c);
    pthread_mutex_unlock(&c->mu);
    return err;
}

void zkl__queue_leave(zkl__node *n, bool wait)
{
    zkl_client *c = n->c;
    caller_lock(c);
    c->inside++;
    if (current(n))
        leave(n);
    pthread_mutex_unlock(&c->mu);
    caller_unlock_hlock(c);
    pthread_mutex_lock(&c->mu);
    int64_t grace = zkl__now_ns() + CLEANUP_GRACE_NS; /* as in zkl__queue_acquire */
    while (wait && current(n) && n->st != N_GONE && n->retry_at == 0 && connected(c) &&
           zkl__cond_wait(&n->cv, &c->mu, grace) == 0)
        ;
    hooks_off(n);
    n->owned = false;
    maybe_free(n);
    leave_engine(c);
    pthread_mutex_unlock(&c->mu);
}

int zkl__queue_release(zkl__node *n)
{
    zkl_client *c = n->c;
    caller_lock(c);
    c->inside++;
    int err = 0;
    if (!current(n) || n->st != N_HELD) {
        err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
    } else {
        n->err = 0;
        n->releasing = true;
        send_delete(n);
    }
    pthread_mutex_unlock(&c->mu);
    caller_unlock_hlock(c);
    pthread_mutex_lock(&c->mu);
    /* Local state goes only once the server confirmed, or the session
     * ended (PITFALLS: forgetting a node that still exists). */
    while (err == 0 && n->st == N_DELETING && current(n))
        pthread_cond_wait(&n->cv, &c->mu);
    if (err == 0 && n->st == N_HELD && current(n) && n->err != 0) {
        /* The server refused the delete: the node and the hold stay. */
        err = n->err;
        n->err = 0;
        leave_engine(c);
        pthread_mutex_unlock(&c->mu);
        return err;
    }
    if (err == 0 && n->st != N_GONE)
        err = c->closing ? ZKL_ECLOSED : ZKL_ELOST;
    if (err == 0 && n->err != 0)
        err = n->err;
    hooks_off(n);
    n->owned = false;
    if (!current(n))
        n->st = N_GONE;
    maybe_free(n);
    leave_engine(c);
    pthread_mutex_unlock(&c->mu);
    return err;
}

int zkl__node_held(const zkl__node *n)
{
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    int held = n->st == N_HELD && !n->lost && n->gen == c->gen && !c->closing &&
               c->state != ZKL_STATE_LOST;
    pthread_mutex_unlock(&c->mu);
    return held;
}

int zkl__node_sure(const zkl__node *n)
{
    zkl_client *c = n->c;
    pthread_mutex_lock(&c->mu);
    int sure = n->st == N_HELD && current((zkl__node *)n) && connected(c);
    pthread_mutex_unlock(&c->mu);
    return sure;
}

int64_t zkl__node_token(const zkl__node *n)
{
    return n->token;
}

const char *zkl__node_path(const zkl__node *n)
{
    return n->path;
}

zkl_client *zkl__node_client(const zkl__node *n)
{
    return n->c;
}

int zkl__node_guarded_multi(zkl__node *n, int count, const zoo_op_t *ops,
                            zoo_op_result_t *results)
{
    zkl_client *c = n->c;
    if (count < 1 || ops == NULL)
        return ZKL_EINVAL;
    int bad = zkl__ops_check(c, n->path, count, ops); /* nothing the server refuses */
    if (bad != 0)
        return bad;
    zoo_op_t *all = calloc((size_t)count + 1, sizeof *all);
    zoo_op_result_t *res = calloc((size_t)count + 1, sizeof *res);
    if (all == NULL || res == NULL) {
        free(all);
        free(res);
        return ZKL_ENOMEM;
    }
    /* The check goes first: the server applies the writes only while our
     * node exists, that is only while the lock is really held. */
    zoo_check_op_init(&all[0], n->path, -1);
    memcpy(all + 1, ops, (size_t)count * sizeof *ops);
    pthread_rwlock_rdlock(&c->hlock);
    pthread_mutex_lock(&c->mu);
    bool ok = current(n) && n->st == N_HELD && c->state != ZKL_STATE_LOST;
    zhandle_t *zh = n->zh;
    if (ok)
        c->stats.requests++;
    pthread_mutex_unlock(&c->mu);
    int err;
    if (!ok) {
        err = ZKL_ELOST;
    } else {
        int rc = zoo_multi(zh, count + 1, all, res);
        if (rc == ZOK)
            err = 0;
        else if (conn_error(rc))
            err = ZKL_ECONNLOSS; /* applied or not: unknown */
        else if (res[0].err == ZNONODE || session_error(rc))
            err = ZKL_ELOST;
        else
            err = zkl__err_from_zk(rc);
    }
    pthread_rwlock_unlock(&c->hlock);
    if (results)
        memcpy(results, res + 1, (size_t)count * sizeof *res);
    free(all);
    free(res);
    return err;
}

/* ---- the client's list of nodes ---------------------------------------- */

void zkl__client_link(zkl_client *c, zkl__node *n)
{
    n->prev = NULL;
    n->next = c->live;
    if (c->live)
        c->live->prev = n;
    c->live = n;
}

void zkl__client_unlink(zkl_client *c, zkl__node *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else if (c->live == n)
        c->live = n->next;
    if (n->next)
        n->next->prev = n->prev;
    n->prev = n->next = NULL;
}
