/* Internal interfaces shared by lib/ and recipes/. Not installed. */
#ifndef ZKL_INTERNAL_H
#define ZKL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zkl.h"

#define ZKL__HIDDEN __attribute__((visibility("hidden")))

/* ---- time (lib/client.c) --------------------------------------------- */

#define ZKL__NO_DEADLINE INT64_MAX
/* CLOCK_MONOTONIC in nanoseconds. */
ZKL__HIDDEN int64_t zkl__now_ns(void);
/* One absolute deadline for a call: forever for timeout < 0, now for 0. */
ZKL__HIDDEN int64_t zkl__deadline(long timeout_ms);
/* Wait on cv (created by zkl__cond_init) until signalled or the deadline;
 * returns 0, or ETIMEDOUT once the deadline has passed. */
ZKL__HIDDEN int zkl__cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline);
ZKL__HIDDEN int zkl__cond_init(pthread_cond_t *cv);

/* ---- paths and node names (lib/path.c) -------------------------------- */

#define ZKL__MAX_PATH 1024
/* 0 if `path` is an absolute, normalised ZooKeeper path that zkl accepts. */
ZKL__HIDDEN int zkl__path_check(const char *path);
/* New string "dir/name" (malloc), or NULL. */
ZKL__HIDDEN char *zkl__path_join(const char *dir, const char *name);
/* A fresh random lowercase uuid, 36 chars + NUL. */
ZKL__HIDDEN void zkl__uuid(char out[37]);

/* One child of a lock path, parsed. */
typedef struct zkl__entry {
    const char *name; /* borrowed from the listing */
    const char *kind; /* points into name: start of the kind, or NULL */
    int64_t seq;      /* the trailing 10 digits, or -1 if none */
} zkl__entry;
/* Parse `name`; the known kinds are tried in order. Returns 0 and fills e
 * if the name ends in a 10-digit sequence, else -1. */
ZKL__HIDDEN int zkl__entry_parse(const char *name, zkl__entry *e);
/* 1 if the child `name` carries `uuid` in its protection prefix. */
ZKL__HIDDEN int zkl__name_has_uuid(const char *name, const char *uuid);
/* 1 if entry e is of kind `kind` (e.g. "lock-"). */
ZKL__HIDDEN int zkl__entry_is(const zkl__entry *e, const char *kind);

/* What the server refuses in any path it is sent (not only lock paths):
 * 0, or ZKL_EINVAL with the reason in why (if not NULL). */
ZKL__HIDDEN int zkl__path_check_server(const char *path, char *why, size_t whylen);

/* ---- details of the calling thread's failure (lib/detail.c) ------------ */

/* Set the text zkl_last_error_text() returns. */
ZKL__HIDDEN void zkl__detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Record `rc` as the ZooKeeper code behind a ZKL_EZK the thread returns. */
ZKL__HIDDEN void zkl__detail_zk(int rc);
/* zkl__err_from_zk notes every code it maps, in the thread that maps it:
 * the engine keeps the one behind a failure for its caller's thread. */
ZKL__HIDDEN void zkl__note_mapped(int rc);
ZKL__HIDDEN int zkl__last_mapped(void);

/* ---- refusing what the server would refuse (lib/validate.c) ------------ */

/* The default of zkl_client_opts_set_max_request: jute.maxbuffer's. */
#define ZKL__MAX_REQUEST_DEFAULT 0xfffff
#define ZKL__MAX_REQUEST_MIN 8192
/* Check a guarded multi-op (`count` ops behind a check of `guard`) before
 * it is sent: every path as the server checks it, and the request's size
 * against c->max_request. 0 or ZKL_EINVAL (with a detail). */
ZKL__HIDDEN int zkl__ops_check(zkl_client *c, const char *guard, int count, const zoo_op_t *ops);

/* ---- lock objects' lifetimes (lib/guard.c) ----------------------------- */

/* A lock object came to be (zkl_*_new): it keeps its client's memory (not
 * its session) alive until zkl__obj_close. `c` may be NULL. 0 or
 * ZKL_ENOMEM. */
ZKL__HIDDEN int zkl__obj_open(zkl_client *c, const void *obj);
/* A call through the object starts / ends (`fn` names it in a message). A
 * call through an object that is not open aborts the process. */
ZKL__HIDDEN void zkl__obj_enter(const void *obj, const char *fn);
ZKL__HIDDEN void zkl__obj_leave(const void *obj);
/* The object's free starts: aborts the process, with a message naming
 * `fn`, if a call through it is still in progress or it is not open; from
 * now on, a call through it aborts. */
ZKL__HIDDEN void zkl__obj_close(const void *obj, const char *fn);
/* As zkl__obj_close, but returns ZKL_EBUSY instead (nothing changes) while
 * a call is in progress. */
ZKL__HIDDEN int zkl__obj_close_idle(const void *obj, const char *fn);
/* The object's free is done with its client `c` (NULL: none): the last
 * object of a closed client frees it. */
ZKL__HIDDEN void zkl__obj_done(zkl_client *c);
/* zkl_client_close: 1 if lock objects are still open (the last one to go
 * frees the client, through zkl__client_free), else 0. */
ZKL__HIDDEN int zkl__client_closed(zkl_client *c);
ZKL__HIDDEN void zkl__client_free(zkl_client *c);

/* ---- the client (lib/client.c) ---------------------------------------- */

typedef struct zkl__node zkl__node;

struct zkl_client {
    pthread_mutex_t mu;    /* guards everything below and every node's state */
    pthread_cond_t cv;     /* state changes (open, close, keeper work) */
    pthread_rwlock_t hlock; /* read: using zh from a caller thread; write: swapping it */
    zhandle_t *zh;
    watcher_fn wrapped_prev; /* the user's watcher, for a wrapped handle */
    int owns_zh;
    uint64_t id;           /* process-unique, the context of node watches */
    char *hosts;
    int timeout_ms;
    int state;             /* enum zkl_state */
    int64_t sid;           /* current session id, 0 if none */
    uint64_t gen;          /* session generation: +1 for every new session */
    int auth_failed;
    int need_reopen;
    int closing;
    int cancelled;         /* zkl_client_cancel(): acquires return ZKL_ECANCELED */
    int negotiated_ms;     /* the session timeout the server granted */
    int64_t suspended_ns;  /* when the connection was lost (monotonic), 0 if not */
    /* The loss rule (lib/client.c, zkl.h): the send time of the last request
     * of this session whose answer arrived (monotonic ns), and the keeper's
     * own keepalive request that keeps it fresh. */
    int64_t last_ok_ns;
    int64_t ka_sent_ns;    /* the keepalive in flight was sent then, 0 if none */
    int64_t ka_next_ns;    /* when the next keepalive is due */
    /* the last keepalives sent, by sequence number modulo 16: their answers
     * carry only the client's id and the number (nothing to free, so an
     * answer a closed handle never delivers leaks nothing) */
    uint64_t ka_seq;
    struct {
        uint64_t seq, gen;
        int64_t sent;
    } ka_ring[16];
    int64_t handle_started_ns; /* when the current handle was created */
    int inside;            /* caller threads inside a blocking engine call */
    int delivering;        /* the keeper is calling listeners ... */
    uint64_t delivery;     /* ... and this counts the calls it finished */
    /* options */
    int reopen, container_parents;
    char *digest;          /* "user:password", never logged */
    int acl;
    int max_request;       /* bytes: the server's jute.maxbuffer */
    int objects;           /* lock objects open on it (lib/guard.c) */
    int closed;            /* zkl_client_close ran; the last object frees */
    char ident[96];        /* "host pid", written into contender nodes */
    /* contenders of this client, alive or being cleaned up */
    zkl__node *live;
    /* those of them that armed a watch: the ones a watch event may be for */
    zkl__node *watching;
    /* held nodes whose only watch is on themselves, by path (lib/queue.c):
     * a client holding thousands of locks routes an event in O(1) */
    zkl__node **held_index;
    size_t held_buckets, held_count;
    /* lock paths this client acquired alone lately (lib/queue.c), and a
     * count of the events that may make what it knows of them stale */
    struct zkl__dirtrack *dirs;
    uint64_t dir_epoch;
    /* nodes whose owner's hook the keeper has to call (lib/queue.c), and
     * the one whose hook is running */
    zkl__node *notify_head, *notify_tail;
    const zkl__node *notifying;
    /* listeners and the event queue the keeper thread delivers */
    struct zkl__listener *listeners;
    int events[64];
    unsigned ev_head, ev_tail;
    pthread_t keeper;
    int keeper_started;
    zkl_client_stats stats;
};

ZKL__HIDDEN const struct ACL_vector *zkl__client_acl(zkl_client *c);
/* When the client presumes its session lost by the loss rule (monotonic
 * ns), 0 if not known yet. With c->mu held. */
ZKL__HIDDEN int64_t zkl__client_loss_at(const zkl_client *c);

/* ---- the lock-queue engine (lib/queue.c) ------------------------------ */

/* A recipe's policy: which node kind it creates, and, given the contenders
 * of the lock path in order, whether node `self` holds; if not, which index
 * to watch (always one before `self`). */
typedef struct zkl__policy {
    const char *kind;
    bool (*holds)(const zkl__entry *cs, size_t n, size_t self, size_t *watch,
                  const void *arg);
    /* Nodes of this kind may take the lock when the first node leaves
     * without listing again (PROTOCOL §4): only for kinds that never see
     * a node appear ahead of them. */
    bool handoff;
    /* Optional. When holds() chose to watch a node for which this is true,
     * every such node of the listing is watched (ahead of `self` or not),
     * and any of them changing lists again: for a node that waits until
     * any one of several others goes (a counting semaphore's head waiter
     * and the leases). */
    bool (*watch_group)(const zkl__entry *e, const void *arg);
} zkl__policy;

/* "lock-": holds when first, watches the node before it (recipes/mutex.c;
 * the semaphore-mutex speaks the same protocol). */
ZKL__HIDDEN extern const zkl__policy zkl__lock_policy;
/* "__READ__" and "__WRIT__" (recipes/rwlock.c). The read policy's arg is
 * NULL or a `const bool *`: true for a downgrade node, which holds at once. */
ZKL__HIDDEN extern const zkl__policy zkl__read_policy;
ZKL__HIDDEN extern const zkl__policy zkl__write_policy;
/* The counting semaphore (recipes/semaphore.c): "zkl-wait-" gate nodes wait
 * (the gate's arg is a `const struct zkl__gate_arg *`: the limit, and the
 * leases the waiter asks for), "zkl-lease-" nodes hold. */
struct zkl__gate_arg {
    int max;
    int need;
};
ZKL__HIDDEN extern const zkl__policy zkl__gate_policy;
ZKL__HIDDEN extern const zkl__policy zkl__lease_policy;
/* Leases a node stands for: 1 for "zkl-lease-", n for "zkl-lease-x<n>-",
 * 0 for any other node. */
ZKL__HIDDEN int zkl__lease_count(const zkl__entry *e);
/* The limit in a semaphore node's data ("max_leases=<n>"), 0 for empty
 * data, -1 for data that is no limit. */
ZKL__HIDDEN int zkl__semaphore_parse_limit(const char *data, int len);

/* A hook of a node's owner: called on the client's keeper thread with no zkl
 * lock held, with the node (valid for the call), its token and the owner's
 * `hook_arg`. */
typedef void (*zkl__node_fn)(zkl__node *n, int64_t token, void *arg);

/* Per-acquire options. */
typedef struct zkl__qopts {
    const void *arg;       /* passed to policy->holds */
    bool prefetch;         /* also watch the node two ahead */
    const char *fixed_seq; /* create a plain ephemeral node with this 10-digit
                              sequence instead of a sequential one (read-lock
                              downgrade) */
    const char *kind;      /* create the node with this kind instead of the
                              policy's (a kind that carries a parameter);
                              copied */
    const zkl__node *within; /* enqueue only while this node, held by the
                                caller, belongs to the live session; else
                                ZKL_ELOST (work done under a gate node) */
    /* Once the node is held: on_lost is called once if it is lost (the
     * session ended, or someone else deleted it); on_revoke when someone
     * writes the revocation request ("__REVOKE__") into it. Both stop when
     * the node is released or given up: once zkl__queue_release or
     * zkl__queue_leave returned, neither is running or will run. */
    zkl__node_fn on_lost, on_revoke;
    void *hook_arg;
} zkl__qopts;

/* Enqueue on lock path `dir` and wait until the policy says the node holds,
 * or the deadline. Returns 0 and the held node in *out, or a ZKL_E... code;
 * on failure no node of this attempt remains on the server (or it is being
 * deleted and goes at the latest with the session). */
ZKL__HIDDEN int zkl__queue_acquire(zkl_client *c, const char *dir,
                                   const zkl__policy *pol, const zkl__qopts *o,
                                   int64_t deadline, zkl__node **out);
/* Delete a held node and free it. Returns 0 once the server confirmed,
 * ZKL_ELOST if the session ended first or someone else had deleted the
 * node (it is gone), ZKL_ECLOSED. Any other code (ZKL_ENOAUTH: the server
 * refused the delete) means the node stays and is still held, not freed:
 * zkl__release_kept() tells. */
ZKL__HIDDEN int zkl__queue_release(zkl__node *n);
static inline bool zkl__release_kept(int rc)
{
    return rc != 0 && rc != ZKL_ELOST && rc != ZKL_ECLOSED;
}
/* Give a node up (held or not) and hand it to the engine, which frees it:
 * its delete is sent, and the call waits for the server's confirmation only
 * if `wait`, and only while connected. Otherwise the engine finishes the
 * delete on reconnect, or the session's end takes the node. */
ZKL__HIDDEN void zkl__queue_leave(zkl__node *n, bool wait);
/* 1 while the node's session is the client's live session: the hold is
 * not lost (it may be uncertain while the client is suspended). */
ZKL__HIDDEN int zkl__node_held(const zkl__node *n);
/* 1 if zkl__node_held and the client is connected right now: the hold is
 * not even uncertain. */
ZKL__HIDDEN int zkl__node_sure(const zkl__node *n);
ZKL__HIDDEN int64_t zkl__node_token(const zkl__node *n);
/* Full path of the node; borrowed until release. */
ZKL__HIDDEN const char *zkl__node_path(const zkl__node *n);
ZKL__HIDDEN zkl_client *zkl__node_client(const zkl__node *n);
/* Run a multi-op whose first op checks that n still exists, then `ops`.
 * 0, ZKL_ELOST (n is gone: nothing applied), ZKL_ECONNLOSS, ZKL_EZK, ... */
ZKL__HIDDEN int zkl__node_guarded_multi(zkl__node *n, int count,
                                        const zoo_op_t *ops, zoo_op_result_t *results);

/* Client hooks the engine uses (lib/client.c). */
ZKL__HIDDEN void zkl__client_link(zkl_client *c, zkl__node *n);
ZKL__HIDDEN void zkl__client_unlink(zkl_client *c, zkl__node *n);
/* Engine entry points the client calls with c->mu held. */
ZKL__HIDDEN void zkl__queue_on_connected(zkl_client *c, zhandle_t *zh);
ZKL__HIDDEN void zkl__queue_on_session_end(zkl_client *c);
/* Wake every caller waiting on one of the client's nodes (c->mu held), so
 * that it looks at the client's state again. */
ZKL__HIDDEN void zkl__queue_wake_all(zkl_client *c);
ZKL__HIDDEN void zkl__queue_watch_event(zkl_client *c, zhandle_t *zh, int type,
                                        const char *path);
/* 1 while any request of the engine is pending. With c->mu held. */
ZKL__HIDDEN int zkl__queue_pending(zkl_client *c);
/* The keeper's share of the engine (c->mu held, released while it calls the
 * owners' hooks): call the hooks due, re-send the refused deletes due.
 * Returns when it wants to run again (monotonic ns), 0 for "on a signal". */
ZKL__HIDDEN int64_t zkl__queue_keeper(zkl_client *c);
/* Free every node left at close. With c->mu held. */
ZKL__HIDDEN void zkl__queue_drop_all(zkl_client *c);
/* The watcher for node watches; its context is (void *)c->id. */
ZKL__HIDDEN watcher_fn zkl__node_watcher_fn(void);
ZKL__HIDDEN void zkl__zk_log_init(void);
/* Map a ZooKeeper return code to a ZKL_E... code. */
ZKL__HIDDEN int zkl__err_from_zk(int rc);

/* ---- a recipe's lost-hold callback (lib/lost.c) ------------------------- */

/* Any function pointer: each recipe stores its own callback type here and
 * converts it back before calling. */
typedef void (*zkl__any_fn)(void);

/* Guarded by a mutex of the recipe's, passed to zkl__lost_set. The engine
 * calls a recipe's node hook (zkl__qopts.on_lost) on the client's keeper
 * thread, which reads fn and arg with zkl__lost_get. */
typedef struct zkl__lost {
    zkl__any_fn fn;
    void *arg;
} zkl__lost;

/* Set the callback (fn NULL: none). Once a call with NULL returned, the
 * old callback is not running and will not be called. Returns 0. */
ZKL__HIDDEN int zkl__lost_set(zkl__lost *l, pthread_mutex_t *mu, zkl_client *c, zkl__any_fn fn,
                              void *arg);
/* The callback and its arg, read under mu (for the recipe's node hook). */
ZKL__HIDDEN zkl__any_fn zkl__lost_get(zkl__lost *l, pthread_mutex_t *mu, void **arg);
/* When the recipe's object is freed: no callback runs after this. */
ZKL__HIDDEN void zkl__lost_stop(zkl__lost *l, pthread_mutex_t *mu, zkl_client *c);

/* ---- per-thread holds of reentrant locks (lib/owners.c) ---------------- */

typedef struct zkl__hold {
    pthread_t thread;
    long count;
    zkl__node *node;
    struct zkl__hold *next;
} zkl__hold;

typedef struct zkl__owners {
    pthread_mutex_t mu;
    zkl__hold *head;
} zkl__owners;

ZKL__HIDDEN int zkl__owners_init(zkl__owners *o);
ZKL__HIDDEN void zkl__owners_destroy(zkl__owners *o);
/* The calling thread's hold, or NULL. Call with o->mu held. */
ZKL__HIDDEN zkl__hold *zkl__owners_mine(zkl__owners *o);
/* Record a first hold for the calling thread. With o->mu held. */
ZKL__HIDDEN int zkl__owners_add(zkl__owners *o, zkl__node *n);
/* Drop a hold record. With o->mu held. */
ZKL__HIDDEN void zkl__owners_remove(zkl__owners *o, zkl__hold *h);

/* ---- generic lock handles (recipes/lock.c, recipes/multilock.c) ------- */

/* A handle: a copy of the operations and the object they act on. */
struct zkl_lock {
    zkl_lock_ops ops;
    void *self;
};
/* The lock path of a recipe object, borrowed (the key of its adapter). */
ZKL__HIDDEN const char *zkl__mutex_path(const zkl_mutex *m);

/* ---- requests with a deadline (lib/request.c) -------------------------- */

struct zkl__slot {
    struct zkl__batch *b;
    int rc;
    bool done;
    char *data; /* get: the node's data (NUL-terminated), or NULL */
    int len;
    struct Stat st;
    struct String_vector kids; /* get_children */
};

struct zkl__batch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending;    /* requests sent and not answered */
    bool abandoned; /* the caller left: the last answer frees */
    size_t n;
    struct zkl__slot s[];
};

ZKL__HIDDEN struct zkl__batch *zkl__batch_new(size_t n);
ZKL__HIDDEN void zkl__batch_destroy(struct zkl__batch *b);
/* Completions for zoo_aget / zoo_acreate with a slot as data. */
ZKL__HIDDEN void zkl__get_done(int rc, const char *value, int len, const struct Stat *st,
                               const void *data);
ZKL__HIDDEN void zkl__string_done(int rc, const char *value, const void *data);
/* Take the session's handle for sending (c->hlock held until send_end). */
ZKL__HIDDEN int zkl__send_begin(zkl_client *c, zhandle_t **zh);
ZKL__HIDDEN void zkl__send_end(zkl_client *c, int requests);
/* Count a request as sent (rc ZOK), or record that it could not be. */
ZKL__HIDDEN void zkl__sent(struct zkl__slot *sl, int rc);
/* Wait for every answer, up to the deadline: 0 or ZKL_ETIMEDOUT. */
ZKL__HIDDEN int zkl__batch_wait(struct zkl__batch *b, int64_t deadline);
/* The caller is done with the batch: freed now, or at the last answer. */
ZKL__HIDDEN void zkl__batch_drop(struct zkl__batch *b);
/* One request, waited for: 0 with the answer in *out (a batch to drop), or
 * ZKL_ETIMEDOUT / ZKL_ELOST / ZKL_ECLOSED / ZKL_ENOMEM. */
enum zkl__op { ZKL__OP_GET, ZKL__OP_KIDS, ZKL__OP_CREATE, ZKL__OP_SET };
ZKL__HIDDEN int zkl__call(zkl_client *c, enum zkl__op op, const char *path, const char *data,
                          int mode, int version, int64_t deadline, struct zkl__batch **out);

#endif
