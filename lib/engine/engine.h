/* The lock-queue engine's own declarations, shared by its files and by no
 * one else (recipes use lib/kit/internal.h):
 *
 *   lib/engine/engine.c   the engine's state for a client, its session listener,
 *                  the watch routing index and the owners' hooks
 *   lib/engine/node.c     a node's life on the server: create, delete, fail, requeue
 *   lib/engine/decide.c   listing, recovery by uuid, the policy's decision, handoff
 *   lib/engine/listing.c  listings shared by a session's waiters on one lock path
 *   lib/engine/watch.c    watches and the routing of their events
 *   lib/engine/alone.c    the fast path for a lock path acquired alone
 *   lib/front/wait.c     the blocking calls, with their deadlines
 *   lib/engine/guarded.c  guarded writes
 *
 * A caller enqueues (a protected create with the listing sent right behind
 * it), then sleeps on its own condition variable. Everything after that runs
 * in libzookeeper_mt's completion thread as a small state machine: decide
 * with the recipe's policy, arm a watch, and on the watch event list again
 * (or take the lock at once, PROTOCOL §4) — it only records, sends the next
 * request and signals; it never blocks.
 *
 * Every field of a node is guarded by its client's mutex c->mu, and every
 * function declared here is called with it held. Sending needs n->zh valid:
 * a caller holds c->hlock, or it runs on that handle's own completion
 * thread. */
#ifndef ZKL_ENGINE_H
#define ZKL_ENGINE_H

#include "internal.h"
#include "metrics.h"

/* A node's state. Only zkl__node_set_state changes it, and it checks the
 * move against a table of legal ones (lib/engine/node.c). */
enum node_state {
    N_CREATING,  /* create (+ listing) sent; name unknown until it answers */
    N_RECOVER,   /* a create's answer was lost: find the node by its uuid */
    N_QUEUED,    /* our node exists; waiting for the policy to say "held" */
    N_HELD,      /* the policy said so: the lock is ours */
    N_RELEASING, /* the delete in flight releases the hold: if the server
                    refuses it, the node and the hold stay (N_HELD again) */
    N_DELETING,  /* delete sent (or to be re-sent on reconnect) */
    N_BACKOFF,   /* nobody holds it, the server refused its delete: the
                    keeper sends it again at retry_at */
    N_LOST,      /* held, then deleted by someone else or taken by the
                    session's end: holds nothing; its owner is told once */
    N_GONE       /* no node of this attempt exists any more */
};

/* The engine's state for one client, reached through the listener's
 * context (zkl__client_listen): the session knows nothing of it. Guarded
 * by c->mu, as every node. */
struct zkl__engine {
    zkl_client *c;
    /* contenders of this client, alive or being cleaned up */
    zkl__node *live;
    /* those of them that armed a watch: the ones a watch event may be for */
    zkl__node *watching;
    /* held nodes whose only watch is on themselves, by path: a client
     * holding thousands of locks routes an event in O(1) */
    zkl__node **held_index;
    size_t held_buckets, held_count;
    /* lock paths this client acquired alone lately, and a count of the
     * events that may make what it knows of them stale */
    struct zkl__dirtrack *dirs;
    uint64_t dir_epoch;
    /* nodes whose owner's hook the keeper has to call, and the one whose
     * hook is running */
    zkl__node *notify_head, *notify_tail;
    /* the nodes in N_BACKOFF: all the keeper's tick looks at, however many
     * locks are held */
    zkl__node *backoff;
    const zkl__node *notifying;
    int inside; /* caller threads inside a blocking engine call */
    struct zkl__async *async; /* asynchronous requests (lib/front/async.c), or NULL */
    /* In a long queue, whether walking back lately paid: the node ahead of
     * a vanished one still existed (a waiter gave up), rather than all of
     * them being gone (the queue handed off in order, where one listing
     * answers at once what walking asks node by node). */
    bool walk_pays;
    uint16_t holds; /* nodes of this client that came to hold, wrapping */
    uint32_t queued; /* nodes of this client in N_QUEUED */
    /* listings in flight that nodes share, by session and lock path
     * (lib/engine/listing.c) */
    struct zkl__joint **joints;
    size_t joint_buckets, joint_count;
};

/* One watched member of a watch group (zkl__policy.watch_group). */
struct gwatch {
    char *path;
    bool armed; /* its watch is set or being set */
};

/* One contender. Beside its state, its flags are plain facts, each on
 * its own line; none of them is a state of its own. */
struct zkl__node {
    zkl_client *c;
    struct zkl__engine *e;  /* c's engine */
    zkl__node *prev, *next; /* e->live */
    zkl__node *wprev, *wnext; /* e->watching, while in_watching */
    zkl__node *hnext;         /* e->held_index, while in_held_index */
    bool in_watching;         /* listed in e->watching */
    bool in_held_index;       /* in e->held_index (and not in e->watching) */
    bool taken;      /* the acquire returned it held to its caller */
    bool in_notify;  /* queued at e->notify_head */
    unsigned notify; /* what the owner's hooks are still to be told */
    zhandle_t *zh;          /* the handle of the session the node belongs to */
    uint64_t gen;           /* ... and that session's generation */
    const zkl__policy *pol;
    const void *arg;
    char *dir;
    unsigned char uuid[16]; /* its protection prefix's uuid (uuid_text) */
    char fixed_seq[11];
    bool prefetch;          /* also watch the node two ahead (zkl__qopts) */
    int32_t own_version; /* the data version of our node we last read: a
                            revocation request is told once */
    char *path; /* full path once the create answered, else NULL; it lies
                   in dir's allocation (zkl__node_set_path) */
    int64_t token;
    enum node_state st; /* zkl__node_set_state alone writes it */
    int16_t err;   /* why the attempt failed, for the caller */
    int16_t zk_rc; /* ... and the ZooKeeper code behind a ZKL_EZK */
    int refs;      /* completions still to come */
    bool owned;    /* a caller still refers to the node */
    bool abandon;  /* the caller gave up: delete as soon as the name is known */
    bool stalled;  /* a request failed for a connection reason: redo it on
                      reconnect */
    bool listing;  /* a listing is in flight ... */
    bool relist;   /* ... and another one is wanted after it */
    bool decided;    /* the policy answered at least once */
    bool try_once;   /* the caller waits only for that first answer */
    bool pred_first; /* the latest listing showed the watched node first */
    bool pred_same;  /* ... and of our own kind */
    bool metered;    /* metrics: counted (they were on at the start) ... */
    bool waited;     /* ... and the policy said "wait" at least once */
    bool armed[2];   /* a watch on watch[i] is set or being set */
    int64_t fast_expect; /* >= 0: created without a listing; the sequence
                            that proves the lock path held nothing else */
    uint64_t fast_epoch; /* e->dir_epoch when that create was sent */
    char *watch[2];  /* watched paths: the policy's choice, and the one ahead
                        of it (prefetch) */
    char *gone[2];   /* watched nodes whose deletion was seen while a listing
                        was in flight: that listing may still show them */
    /* For a kind that hands off: the nodes ahead of ours in the latest
     * listing, nearest last, when all were of our kind: all of them in a
     * short queue, the nearest AHEAD_LONG in a long one (memory per waiter
     * stays flat as the queue grows). Nodes ahead of ours only ever go
     * (every later node sorts after ours), so when the one we watch goes,
     * the next one ahead that still exists is the new one to watch: no
     * listing needed (walk_back). */
    char **ahead; /* one block: the pointers, then the names */
    uint8_t nahead; /* at most AHEAD_SHORT */
    bool ahead_front; /* ahead[0] was first in that listing: none before it */
    bool probing;     /* a walk-back's watch went out to a node ahead that
                         may be gone as well (a long queue) */
    bool gone_list;   /* listing instead of walking back (a long queue) */
    bool mates;       /* at that listing, other nodes of this client were
                         waiting too (so e->holds can show the queue move) */
    uint32_t qlen;    /* entries of the latest listing */
    uint16_t rank;    /* ... and the nodes ahead of ours in it (at most
                         UINT16_MAX) */
    uint16_t holds0;  /* e->holds at that listing */
    uint16_t wsent[2], wdone[2]; /* data watches sent / answered per slot:
                                    an answer is about the slot's current
                                    node only if it is the latest */
    int retries;      /* refused deletes so far: the backoff grows with it */
    struct gwatch *group; /* watched nodes of the policy's watch group */
    size_t ngroup;
    const char *kind; /* the kind the node is created with: the policy's,
                         or kind_copy */
    char *kind_copy;
    int16_t creates;   /* attempts so far, to bound a container race */
    int16_t parent_rc; /* a lock parent the server refused to create */
    bool noread;     /* the server refused us a watched node (another
                        identity's, or an ACL without READ): the lock path's
                        children are watched instead (dirwatch) */
    bool dirwatch;   /* a child watch on the lock path is set or being set */
    /* Our own node, watched from the create's answer on (PITFALLS: a
     * handoff trusted without one's own node): anyone else deleting it is
     * seen before any later event, in the server's order. */
    bool own_armed;  /* a watch on our own node is set, or being set ... */
    bool own_ok;     /* ... and the server said the node existed then */
    char **skip;     /* recovery: nodes with our uuid that another session
                        owns (planted): neither ours nor ours to delete */
    size_t nskip;
    int64_t retry_at; /* N_BACKOFF: when the keeper sends the delete again */
    zkl__node *bprev, *bnext; /* e->backoff, while in N_BACKOFF */
    /* The owner's hooks (zkl__qopts), called on the client's keeper thread
     * with no zkl lock held; `notify` holds what is still to be told. */
    zkl__node_fn on_lost, on_revoke;
    void *hook_arg;
    zkl__node *nnext; /* e->notify_head queue */
    /* The condition variable of the caller waiting for the node (on its
     * stack, lib/front/wait.c), NULL while none waits: a held lock carries none. */
    pthread_cond_t *cv;
    /* An asynchronous request waits on the node instead of a thread: its
     * wake-ups go to lib/front/async.c, which judges them on the keeper thread. */
    struct zkl_request *waiter;
    /* Metrics (lib/metrics/metrics.c): the lock path's counters, and when the
     * attempt began, then (once held) when the hold began. */
    struct zkl__lockm *pm;
    int64_t m_at;
};

/* A listing of more than AHEAD_SHORT entries is a long queue: its waiters
 * keep the nearest AHEAD_LONG nodes ahead only, and walk back through them
 * rather than list the whole queue when the node they watch goes. */
#define AHEAD_SHORT 16
#define AHEAD_LONG 4

#define NOTIFY_LOST 1u
#define NOTIFY_REVOKE 2u
/* What a holder's node holds when someone asks it to give the lock up
 * (Curator's cooperative revocation, PROTOCOL §6). */
#define REVOKE_DATA "__REVOKE__"
#define REVOKE_LEN 10

/* ---- lib/front/async.c ---- */
ZKL__HIDDEN void zkl__async_wake(zkl__node *n);
/* On the keeper thread (c->mu held, released meanwhile): judge, time out
 * and deliver requests. Returns when to run again (monotonic ns), or 0. */
ZKL__HIDDEN int64_t zkl__async_tick(struct zkl__engine *e);
/* The client closes (c->mu held, released meanwhile): every pending
 * request is told ZKL_ECLOSED on the calling thread. */
ZKL__HIDDEN void zkl__async_close(struct zkl__engine *e);
ZKL__HIDDEN void zkl__async_drop(struct zkl__engine *e);

static inline void wake(zkl__node *n)
{
    if (n->waiter != NULL)
        zkl__async_wake(n);
    else if (n->cv)
        pthread_cond_signal(n->cv);
}

/* true if the node belongs to the client's live session */
static inline bool current(const zkl__node *n)
{
    return n->gen == n->c->gen && !n->c->closing;
}

/* Nothing of the attempt is left to wait for: the node is gone, or the
 * server refuses to delete it and the keeper goes on trying. */
static inline bool node_settled(const zkl__node *n)
{
    return n->st == N_GONE || n->st == N_LOST || n->st == N_BACKOFF;
}

/* No node of the attempt exists (any more): nothing left to delete. */
static inline bool node_gone(const zkl__node *n)
{
    return n->st == N_GONE || n->st == N_LOST;
}

static inline bool connected(const zkl_client *c)
{
    return c->state == ZKL_STATE_CONNECTED || c->state == ZKL_STATE_RECONNECTED;
}

/* ---- lib/engine/engine.c ---- */
ZKL__HIDDEN void zkl__engine_watching_add(zkl__node *n);
ZKL__HIDDEN void zkl__engine_watching_remove(zkl__node *n);
ZKL__HIDDEN zkl__node **zkl__engine_held_find(struct zkl__engine *e, const char *path);
ZKL__HIDDEN bool zkl__engine_held_add(zkl__node *n);
ZKL__HIDDEN void zkl__engine_held_remove(zkl__node *n);
ZKL__HIDDEN void zkl__engine_notify(zkl__node *n, unsigned what);
ZKL__HIDDEN void zkl__engine_unnotify(zkl__node *n);
ZKL__HIDDEN void zkl__engine_mark_lost(zkl__node *n);
ZKL__HIDDEN void zkl__engine_hooks_off(zkl__node *n);
ZKL__HIDDEN void zkl__engine_connected(struct zkl__engine *e, zhandle_t *zh);
ZKL__HIDDEN struct zkl__engine *zkl__engine_of(zkl_client *c);
ZKL__HIDDEN void zkl__engine_link(struct zkl__engine *e, zkl__node *n);
ZKL__HIDDEN void zkl__engine_unlink(struct zkl__engine *e, zkl__node *n);

/* ---- lib/engine/alone.c ---- */
ZKL__HIDDEN void zkl__alone_event(struct zkl__engine *e, const char *path);
ZKL__HIDDEN void zkl__alone_forget(struct zkl__engine *e);
ZKL__HIDDEN void zkl__alone_invalidate(struct zkl__engine *e, const char *dir);
ZKL__HIDDEN void zkl__alone_seen(zkl__node *n, int64_t seq);
ZKL__HIDDEN void zkl__alone_deleted(zkl__node *n, bool ok);
ZKL__HIDDEN void zkl__alone_answer(zkl__node *n, int64_t want);

/* ---- lib/engine/node.c ---- */
ZKL__HIDDEN void zkl__node_set_state(zkl__node *n, enum node_state to);
ZKL__HIDDEN int zkl__node_set_path(zkl__node *n, const char *full);
ZKL__HIDDEN void zkl__node_new_uuid(zkl__node *n);
ZKL__HIDDEN void zkl__node_uuid_text(const zkl__node *n, char out[37]);
ZKL__HIDDEN void zkl__node_ahead_clear(zkl__node *n);
ZKL__HIDDEN void zkl__node_free(zkl__node *n);
ZKL__HIDDEN void zkl__node_maybe_free(zkl__node *n);
ZKL__HIDDEN void zkl__node_fail(zkl__node *n, int err);
ZKL__HIDDEN void zkl__node_stall(zkl__node *n);
ZKL__HIDDEN void zkl__node_send_failed(zkl__node *n, int rc);
ZKL__HIDDEN void zkl__node_delete(zkl__node *n);
ZKL__HIDDEN void zkl__node_leave(zkl__node *n);
ZKL__HIDDEN void zkl__node_abort(zkl__node *n, int err);
ZKL__HIDDEN void zkl__node_requeue(zkl__node *n);
ZKL__HIDDEN void zkl__node_create(zkl__node *n);

/* ---- lib/engine/decide.c ---- */
/* Of the children in kids that parse and that skip (if given) lets
 * through, the m nearest ahead of *me (sorted by sequence, then name) go to
 * cs in that order, then *me if it is listed: cs has room for m + 1.
 * Returns the entries written; *self is me's index (the count written if
 * me is not listed), *older the nodes ahead that were left out, *total
 * every child counted. One pass: a long queue is never sorted. */
ZKL__HIDDEN size_t zkl__entries_nearest(const struct String_vector *kids, const zkl__entry *me,
                                        size_t m, bool (*skip)(const char *name, const void *arg),
                                        const void *arg, zkl__entry *cs, size_t *self,
                                        size_t *older, size_t *total);
ZKL__HIDDEN bool zkl__listing_too_big(const zkl__node *n, const struct String_vector *kids);
ZKL__HIDDEN void zkl__node_list_done(int rc, const struct String_vector *kids, const void *data);
ZKL__HIDDEN void zkl__node_list(zkl__node *n);
ZKL__HIDDEN void zkl__node_recover(zkl__node *n);
ZKL__HIDDEN void zkl__node_forget_gone(zkl__node *n);
ZKL__HIDDEN void zkl__node_hold_now(zkl__node *n);
ZKL__HIDDEN bool zkl__node_walk_back(zkl__node *n, int slot);
ZKL__HIDDEN void zkl__node_decide(zkl__node *n, const struct String_vector *kids);
/* What a listing's answer means for n (its reference already counted off). */
ZKL__HIDDEN void zkl__node_list_answer(zkl__node *n, int rc, const struct String_vector *kids);

/* ---- lib/engine/listing.c ---- */
/* Send a listing of n's lock path for n, or share the next one of its
 * session's on that path: n->listing set and a reference taken until the
 * answer comes to zkl__node_list_answer. Returns ZOK, or the code of a
 * send that failed (nothing taken then). */
ZKL__HIDDEN int zkl__listing_send(zkl__node *n);
/* Free what is left of shared listings (the engine goes). */
ZKL__HIDDEN void zkl__listing_drop_all(struct zkl__engine *e);

/* ---- lib/engine/watch.c ---- */
ZKL__HIDDEN void zkl__watch_group_clear(zkl__node *n);
ZKL__HIDDEN void zkl__watch_own(zkl__node *n);
ZKL__HIDDEN void zkl__watch_arm(zkl__node *n, int slot, const char *name);
ZKL__HIDDEN void zkl__watch_group(zkl__node *n, const zkl__entry *cs, size_t k, size_t self);
ZKL__HIDDEN void zkl__watch_event(void *ctx, zhandle_t *zh, int type, const char *path);
ZKL__HIDDEN bool zkl__alone_take(struct zkl__engine *e, zkl__node *n);

/* ---- answers to a node's requests ---- */
/* The answer to a request of node `data` comes in, on ZooKeeper's
 * completion thread: c->mu taken, the answer counted off (n->refs). */
static inline zkl__node *answer_in(const void *data)
{
    zkl__node *n = (zkl__node *)data;
    pthread_mutex_lock(&n->c->mu);
    n->refs--;
    return n;
}

/* Done with the answer: n goes if nothing refers to it any more, and c->mu
 * is released. */
static inline void answer_done(zkl__node *n)
{
    zkl_client *c = n->c;
    zkl__node_maybe_free(n);
    pthread_mutex_unlock(&c->mu);
}

#endif
