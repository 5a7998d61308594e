/* Internal interfaces shared by lib/ and recipes/. Not installed. */
#ifndef ZKL_INTERNAL_H
#define ZKL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zkl.h"

#define ZKL__HIDDEN __attribute__((visibility("hidden")))

/* ---- time and ZooKeeper codes (lib/util/basics.c) --------------------------------------------- */

#define ZKL__NO_DEADLINE INT64_MAX
/* CLOCK_MONOTONIC in nanoseconds. */
ZKL__HIDDEN int64_t zkl__now_ns(void);
/* One absolute deadline for a call: forever for timeout < 0, now for 0. */
ZKL__HIDDEN int64_t zkl__deadline(long timeout_ms);
/* Wait on cv (created by zkl__cond_init) until signalled or the deadline;
 * returns 0, or ETIMEDOUT once the deadline has passed. */
ZKL__HIDDEN int zkl__cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline);
ZKL__HIDDEN int zkl__cond_init(pthread_cond_t *cv);
/* Map a ZooKeeper return code to a ZKL_E... code: the one mapping, used
 * everywhere (ZKL_EZK notes the code for zkl_last_zk_error()). */
ZKL__HIDDEN int zkl__err_from_zk(int rc);
/* The request's outcome is unknown, but the session may live on: what
 * zkl__err_from_zk maps to ZKL_ECONNLOSS. */
ZKL__HIDDEN bool zkl__zk_conn_error(int rc);
/* The session is gone (or the handle closing): what it maps to ZKL_ELOST. */
ZKL__HIDDEN bool zkl__zk_session_error(int rc);

/* ---- paths and node names (lib/util/path.c) -------------------------------- */

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

/* ---- details of the calling thread's failure (lib/util/detail.c) ------------ */

/* Set the text zkl_last_error_text() returns. */
ZKL__HIDDEN void zkl__detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Record `rc` as the ZooKeeper code behind a ZKL_EZK the thread returns. */
ZKL__HIDDEN void zkl__detail_zk(int rc);
/* zkl__err_from_zk notes every code it maps, in the thread that maps it:
 * the engine keeps the one behind a failure for its caller's thread. */
ZKL__HIDDEN void zkl__note_mapped(int rc);
ZKL__HIDDEN int zkl__last_mapped(void);

/* ---- refusing what the server would refuse (lib/kit/validate.c) ------------ */

/* The default of zkl_client_opts_set_max_metric_paths. */
#define ZKL__METRIC_PATHS_DEFAULT 100
/* The default of zkl_client_opts_set_max_request: jute.maxbuffer's. */
#define ZKL__MAX_REQUEST_DEFAULT 0xfffff
#define ZKL__MAX_REQUEST_MIN 8192
/* Check a guarded multi-op (`count` ops behind a check of `guard`) before
 * it is sent: every path as the server checks it, and the request's size
 * against c->max_request. 0 or ZKL_EINVAL (with a detail). */
ZKL__HIDDEN int zkl__ops_check(zkl_client *c, const char *guard, int count, const zoo_op_t *ops);

/* ---- lock objects' lifetimes (lib/kit/guard.c) ----------------------------- */

/* A lock object came to be (zkl_*_new): it keeps its client's memory (not
 * its session) alive until zkl__obj_close. `c` may be NULL. 0, ZKL_ENOMEM,
 * or ZKL_EFORK (c was inherited across fork()). */
ZKL__HIDDEN int zkl__obj_open(zkl_client *c, const void *obj);
/* The object's own mutex (its zkl__owner's), held across a fork() so that
 * a child finds it unlocked and the fields it guards whole. */
ZKL__HIDDEN void zkl__obj_set_mutex(const void *obj, pthread_mutex_t *mu);
/* Around fork() (lib/session/fork.c): hold the table's mutex and every
 * object's, then let go of them in the parent, or start them afresh in the
 * child. */
ZKL__HIDDEN void zkl__guard_fork_prepare(void);
ZKL__HIDDEN void zkl__guard_fork_parent(void);
ZKL__HIDDEN void zkl__guard_fork_child(void);
/* A call through the object starts / ends (`fn` names it in a message). A
 * call through an object that is not open aborts the process. */
ZKL__HIDDEN void zkl__obj_enter(const void *obj, const char *fn);
ZKL__HIDDEN void zkl__obj_leave(const void *obj);
/* A recipe's acquire, as its public call: ZKL_EINVAL for a NULL obj, else
 * `acquire` between zkl__obj_enter(obj, fn) and zkl__obj_leave. */
ZKL__HIDDEN int zkl__obj_acquire(void *obj, const char *fn,
                                 int (*acquire)(void *obj, long timeout_ms), long timeout_ms);
/* The object's free starts: aborts the process, with a message naming
 * `fn`, if a call through it is still in progress or it is not open; from
 * now on, a call through it aborts. */
ZKL__HIDDEN void zkl__obj_close(const void *obj, const char *fn);
/* The object's free is done with its client `c` (NULL: none): the last
 * object of a closed client frees it. */
ZKL__HIDDEN void zkl__obj_done(zkl_client *c);
/* zkl_client_close: 1 if lock objects are still open (the last one to go
 * frees the client, through zkl__client_free), else 0. */
ZKL__HIDDEN int zkl__client_closed(zkl_client *c);
ZKL__HIDDEN void zkl__client_free(zkl_client *c);

/* ---- the client (lib/session/client.c) ---------------------------------------- */

typedef struct zkl__node zkl__node;

/* How many fork()s this process is from the one that started (counted by
 * a pthread_atfork child handler, lib/session/fork.c): a client made before
 * the last fork belongs to the parent, and every call on it, or on an
 * object of it, returns ZKL_EFORK in the child. Written only in a child
 * that is still single-threaded. */
ZKL__HIDDEN extern unsigned zkl__fork_gen;

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
    /* The loss rule (lib/session/keeper.c, zkl.h): the send time of the last request
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
    int delivering;        /* the keeper is calling listeners ... */
    uint64_t delivery;     /* ... and this counts the calls it finished */
    /* options */
    int reopen, container_parents;
    char *digest;          /* "user:password", never logged */
    int acl;
    int max_request;       /* bytes: the server's jute.maxbuffer */
    int objects;           /* lock objects open on it (lib/kit/guard.c) */
    int closed;            /* zkl_client_close ran; the last object frees */
    char ident[96];        /* "host pid", written into contender nodes */
    /* who hears of the session (the lock-queue engine), and its context */
    const struct zkl__session_listener *sl;
    void *sl_ctx;
    /* listeners and the event queue the keeper thread delivers */
    struct zkl__listener *listeners;
    int events[64];
    unsigned ev_head, ev_tail;
    pthread_t keeper;
    int keeper_started;
    zkl_client_stats stats;
    /* lock metrics (lib/metrics/metrics.c): made on first use; never when off */
    struct zkl__metrics *metrics;
    int metrics_off;
    int metric_paths;      /* lock paths with counters of their own, at most */
    unsigned fork_gen;     /* zkl__fork_gen when the client was made */
};

/* True if c (not NULL) was made in a parent of this process: its session,
 * threads and nodes are the parent's (lib/session/fork.c). */
static inline bool zkl__forked(const zkl_client *c)
{
    return c->fork_gen != zkl__fork_gen;
}
/* The client's end in a child of fork(): its memory only, without a word
 * to the server, a signal to the parent's threads or a wait for them. */
ZKL__HIDDEN void zkl__client_forget(zkl_client *c);

/* What the session tells the one listener that keeps state across it (the
 * lock-queue engine): the client knows no locks, only these calls. Every
 * call is made with c->mu held. */
typedef struct zkl__session_listener {
    /* A connection (new or the same session again) is up on handle zh. */
    void (*on_connected)(void *ctx, zhandle_t *zh);
    /* The session ended (c->gen moved on), or the client is closing
     * (c->closing): what belonged to it is gone. */
    void (*on_session_end)(void *ctx);
    /* A watch set with zkl__client_watcher_fn() fired on handle zh. */
    void (*on_watch_event)(void *ctx, zhandle_t *zh, int type, const char *path);
    /* The keeper's periodic work, on the keeper thread; it may release
     * c->mu meanwhile. Returns when it wants to run again (monotonic ns),
     * 0 for "on a signal of c->cv". */
    int64_t (*on_tick)(void *ctx);
    /* The client's state changed (suspended, cancelled): wake every caller
     * blocked in the listener so that it looks again. */
    void (*wake_all)(void *ctx);
    /* The client closes (after on_session_end): wait until no caller
     * thread is inside the listener any more (c->mu released meanwhile). */
    void (*wait_callers)(void *ctx);
    /* 1 while a request of the listener's is pending, else 0. */
    int (*pending)(void *ctx);
    /* The client's memory goes: free everything, ctx included. */
    void (*drop_all)(void *ctx);
} zkl__session_listener;
/* Register `l` with context `ctx` (c->mu held): one listener per client. */
ZKL__HIDDEN void zkl__client_listen(zkl_client *c, const zkl__session_listener *l, void *ctx);
/* The context `l` was registered with (c->mu held), or NULL. */
ZKL__HIDDEN void *zkl__client_listener(zkl_client *c, const zkl__session_listener *l);

ZKL__HIDDEN const struct ACL_vector *zkl__client_acl(zkl_client *c);
/* Told each create's return code as soon as it is known (lib/engine/parents.c):
 * the i-th create (from 0) was queued if rc is ZOK. */
typedef void (*zkl__parent_sent_fn)(void *arg, size_t i, int rc);
/* Send the creates of the parents a create under `path` needs: every
 * ancestor of `path` if `ancestors`, then `path` itself if `self`,
 * outermost first; each an empty container (a persistent node if the
 * client's option says so) with the client's ACL, answered to `done` with
 * data `(const char *)data + i * stride`, and its return code passed to
 * sent(arg, i, rc) at once (`sent` may be NULL). A create sent after them
 * on the same session finds them (one session's requests are served in
 * order). Returns how many creates were tried, or ZKL_ENOMEM (none was).
 * Needs zh usable by the caller (c->hlock held, or its completion thread). */
ZKL__HIDDEN int zkl__parents_send(zkl_client *c, zhandle_t *zh, const char *path, bool ancestors,
                                  bool self, string_completion_t done, const void *data,
                                  size_t stride, zkl__parent_sent_fn sent, void *arg);
/* When the client presumes its session lost by the loss rule (monotonic
 * ns), 0 if not known yet. With c->mu held. */
ZKL__HIDDEN int64_t zkl__client_loss_at(const zkl_client *c);

/* ---- the lock-queue engine (lib/engine/engine.h lists its files) ------------------------------ */

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
/* The kind of a lease node standing for n leases. */
ZKL__HIDDEN void zkl__lease_kind(char *buf, size_t size, int n);
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
/* What a lock object is made with (zkl_lock_opts_*, lib/session/options.c). */
struct zkl_lock_opts {
    bool prefetch;
};

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
    /* A blocking acquire ends with ZKL_ECANCELED once this fires. */
    zkl_cancel *cancel;
    /* An asynchronous acquire (lib/front/async.c): the request that waits. */
    struct zkl_request *waiter;
} zkl__qopts;

/* Make a node on `dir` and send its create, without waiting: 0 with the
 * node (owned by the caller) in *out, or a ZKL_E... code and nothing made.
 * `inside`: count the caller as blocked in the engine (e->inside). `cv`:
 * the waiting caller's condition variable (on its stack), which the engine
 * signals for the node; NULL for a request that no thread waits for. */
ZKL__HIDDEN int zkl__queue_enqueue(zkl_client *c, const char *dir, const zkl__policy *pol,
                                   const zkl__qopts *o, bool inside, pthread_cond_t *cv,
                                   zkl__node **out);

/* Start an asynchronous acquire on `dir` (lib/front/async.c): 0 with the
 * request in *out, whose callback `fn` runs once; or a ZKL_E... code, no
 * request and no callback. o's hooks are not used. */
ZKL__HIDDEN int zkl__async_start(zkl_client *c, const char *dir, const zkl__policy *pol,
                                 const zkl__qopts *o, long timeout_ms, zkl_request_fn fn,
                                 void *arg, zkl_request **out);

/* zkl__queue_enqueue for the keeper thread: c->mu held, sending allowed
 * (lib/front/async.c's steps); nothing counted as blocked in the engine. */
ZKL__HIDDEN int zkl__queue_enqueue_locked(zkl_client *c, const char *dir,
                                          const zkl__policy *pol, const zkl__qopts *o,
                                          zkl__node **out);

/* An asynchronous acquire in steps (a semaphore: its gate node, then its
 * lease node). `held` runs when the request's node holds, c->mu held and
 * sending allowed (the keeper thread, or the closing one): it returns 0 to
 * deliver the request held; 0 with *next set to a node it enqueued
 * (zkl__queue_enqueue_locked, .waiter = r) for the request to wait on
 * instead, the held one kept until the request is delivered (then left)
 * or fails (then deleted with it); or a ZKL_E... code to fail, setting
 * *counted if the metrics have the attempt's outcome already. `drop`
 * frees ctx once the request is freed. */
typedef struct zkl__async_step {
    int (*held)(void *ctx, zkl_request *r, zkl__node *n, zkl__node **next, bool *counted);
    void (*drop)(void *ctx);
    /* The kept nodes are part of the hold (a multi-lock's members): they
     * stay until the request is released, and each counts as a hold. */
    bool keep_held;
} zkl__async_step;
/* Judge the request again (c->mu held): a step's answer came in. */
ZKL__HIDDEN void zkl__async_poke(zkl_request *r);
/* The counting semaphore's asynchronous acquire (recipes/semaphore_async.c). */
ZKL__HIDDEN int zkl__semaphore_start_async(zkl_client *c, const char *path, int max, int n,
                                           long timeout_ms, zkl_request_fn fn, void *arg,
                                           zkl_request **out);
/* zkl__async_start with steps, `nodes` nodes in all at most: ctx is the
 * request's once this returns 0 (else still the caller's). */
ZKL__HIDDEN int zkl__async_start_steps(zkl_client *c, const char *dir, const zkl__policy *pol,
                                       const zkl__qopts *o, long timeout_ms,
                                       const zkl__async_step *step, void *ctx, size_t nodes,
                                       zkl_request_fn fn, void *arg, zkl_request **out);

/* ---- cancel handles of blocking calls (lib/front/cancel.c) ------------------- */

/* A waiter registered with a handle: firing it broadcasts cv under c->mu. */
struct zkl__cancel_reg {
    zkl_client *c;
    pthread_cond_t *cv;
    struct zkl__cancel_reg *next;
};
/* Register / unregister (no zkl lock held). */
ZKL__HIDDEN void zkl__cancel_watch(zkl_cancel *h, struct zkl__cancel_reg *reg, zkl_client *c,
                                   pthread_cond_t *cv);
ZKL__HIDDEN void zkl__cancel_unwatch(zkl_cancel *h, struct zkl__cancel_reg *reg);
ZKL__HIDDEN bool zkl__cancel_fired(const zkl_cancel *h);

/* Enqueue on lock path `dir` and wait until the policy says the node holds,
 * or the deadline. Returns 0 and the held node in *out, or a ZKL_E... code;
 * on failure no node of this attempt remains on the server (or it is being
 * deleted and goes at the latest with the session). */
ZKL__HIDDEN int zkl__queue_acquire(zkl_client *c, const char *dir,
                                   const zkl__policy *pol, const zkl__qopts *o,
                                   int64_t deadline, zkl__node **out);
/* Delete a held node and free it. Returns 0 once the server confirmed,
 * ZKL_ELOST if the session ended first or someone else had deleted the
 * node (it is gone), ZKL_ECLOSED, ZKL_EFORK (in a child of fork(): nothing
 * sent, the node left to the client's local free). Any other code
 * (ZKL_ENOAUTH: the server refused the delete) means the node stays and is
 * still held, not freed: zkl__release_kept() tells. */
ZKL__HIDDEN int zkl__queue_release(zkl__node *n);
static inline bool zkl__release_kept(int rc)
{
    return rc != 0 && rc != ZKL_ELOST && rc != ZKL_ECLOSED && rc != ZKL_EFORK;
}
/* Give a node up (held or not) and hand it to the engine, which frees it:
 * its delete is sent, and the call waits for the server's confirmation only
 * if `wait`, and only while connected. Otherwise the engine finishes the
 * delete on reconnect, or the session's end takes the node. */
ZKL__HIDDEN void zkl__queue_leave(zkl__node *n, bool wait);
/* The attempt node n stood for failed with rc after n was held (a gate
 * whose semaphore turned out wrong): counted in the metrics as such. */
ZKL__HIDDEN void zkl__queue_failed(zkl__node *n, int rc);
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

/* The watcher for node watches (lib/session/client.c): it hands their events to
 * the listener's on_watch_event. Its context is (void *)c->id. */
ZKL__HIDDEN watcher_fn zkl__client_watcher_fn(void);
ZKL__HIDDEN void zkl__zk_log_init(void);

/* ---- a recipe's lost-hold callback (lib/kit/lost.c) ------------------------- */

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

/* ---- a lock object's owner and its threads' holds (lib/kit/holds.c) ------- */

/* Call the user's callback `fn` (a recipe's lost or revoke callback, kept
 * as a zkl__any_fn) with its own type: for the lock object `obj`, the side
 * of the hold (the read-write lock's `write`, else 0), the node's token and
 * the user's `fn_arg`. On the client's keeper thread, no zkl lock held. */
typedef void (*zkl__tell_fn)(zkl__any_fn fn, void *fn_arg, void *obj, int side, int64_t token);

/* What a lock object's holds share: a mutex (which also guards the
 * recipe's own fields, as it says), the client, and the user's lost and
 * revoke callbacks. */
typedef struct zkl__owner {
    pthread_mutex_t mu;
    zkl_client *c;      /* NULL for a lock over other locks (multi-lock) */
    void *obj;
    char *path;         /* the object's lock path (a copy), or NULL */
    zkl__tell_fn tell;  /* NULL: no callbacks */
    bool revocable;     /* nodes get a revoke hook */
    zkl__lost lost, revoke; /* guarded by mu */
} zkl__owner;

/* Set o up for the lock object `obj` of client `c` (NULL: none) on lock
 * path `path` (copied; NULL: none) and open the object (zkl__obj_open). 0,
 * or ZKL_ESYS / ZKL_ENOMEM with nothing left to undo. */
ZKL__HIDDEN int zkl__owner_open(zkl__owner *o, zkl_client *c, void *obj, const char *path,
                                zkl__tell_fn tell, bool revocable);
/* A new lock object of `size` bytes (zeroed) whose zkl__owner lies at byte
 * `offset`, opened as by zkl__owner_open with the object itself as obj;
 * or NULL with ZKL_ENOMEM / ZKL_ESYS in *rc and nothing left to undo. */
ZKL__HIDDEN void *zkl__owner_new(size_t size, size_t offset, zkl_client *c, const char *path,
                                 zkl__tell_fn tell, bool revocable, int *rc);
/* Set the user's lost callback (revoke false) or revoke callback, as
 * zkl__lost_set. Returns 0. */
ZKL__HIDDEN int zkl__owner_set(zkl__owner *o, bool revoke, zkl__any_fn fn, void *arg);
/* The object's free, after zkl__obj_close: once stop returned no callback
 * runs or will; done (once the holds are dropped) destroys o (its path
 * too) and ends the object's claim on its client (zkl__obj_done). */
ZKL__HIDDEN void zkl__owner_stop(zkl__owner *o);
ZKL__HIDDEN void zkl__owner_done(zkl__owner *o);
/* Point the engine's hooks of a node held by the object itself (not by a
 * thread) at o's callbacks, side 0: sets q's on_lost, on_revoke, hook_arg. */
ZKL__HIDDEN void zkl__owner_arm(zkl__owner *o, zkl__qopts *q);

/* One thread's hold: its node and how many times it entered. */
typedef struct zkl__hold {
    pthread_t thread;
    long count;
    zkl__node *node; /* NULL for a hold that only counts (multi-lock) */
    struct zkl__hold *next;
} zkl__hold;

/* The per-thread holds of one reentrant lock (or of one side of the
 * read-write lock), under own->mu. Only a thread adds or removes its own
 * record, so a record found stays valid for the thread that found it. */
typedef struct zkl__holds {
    zkl__owner *own;
    int side;        /* told to the callbacks */
    zkl__hold *head; /* guarded by own->mu */
} zkl__holds;

ZKL__HIDDEN void zkl__holds_init(zkl__holds *h, zkl__owner *own, int side);
/* The calling thread's record, or NULL; or the node of it. */
ZKL__HIDDEN zkl__hold *zkl__holds_find(zkl__holds *h);
ZKL__HIDDEN zkl__node *zkl__holds_node(zkl__holds *h);
/* Acquire for the calling thread: a thread that holds counts once more (0)
 * or gets ZKL_ELOST for a lost hold, which must be released first; else a
 * node is taken on `dir` (zkl__queue_acquire with `o`, its hooks pointed at
 * the owner's callbacks) and recorded. */
ZKL__HIDDEN int zkl__holds_acquire(zkl__holds *h, const char *dir, const zkl__policy *pol,
                                   const zkl__qopts *o, int64_t deadline);
/* Release the calling thread's hold: ZKL_ENOTHELD without one; 0 for an
 * inner count; at the last count, or for a lost hold, the node's release
 * (zkl__queue_release): a code it keeps the node for leaves the hold
 * counted once, any other ends it. */
ZKL__HIDDEN int zkl__holds_release(zkl__holds *h);
/* The calling thread's hold: held (zkl__node_held)? Its token (ZKL_ENOTHELD,
 * ZKL_ELOST)? Its node's path (borrowed, NULL without a hold)? */
ZKL__HIDDEN int zkl__holds_is_held(zkl__holds *h);
ZKL__HIDDEN int64_t zkl__holds_token(zkl__holds *h);
/* A token, or a negative ZKL_E... code in its place, as the public calls
 * give it: 0 and *out, or the code (*out unchanged). */
static inline int zkl__token_out(int64_t v, int64_t *out)
{
    if (out == NULL)
        return ZKL_EINVAL;
    if (v < 0)
        return (int)v;
    *out = v;
    return 0;
}
ZKL__HIDDEN const char *zkl__holds_path(zkl__holds *h);
/* The object's free: every hold still open is released, a refused delete
 * left to the engine (zkl__queue_leave). */
ZKL__HIDDEN void zkl__holds_drop_all(zkl__holds *h);
/* Holds that only count (no node): record a first one (0 or ZKL_ENOMEM),
 * enter once more, leave once (true when that was the last and the record
 * is gone). */
ZKL__HIDDEN int zkl__holds_add(zkl__holds *h, zkl__node *n);
ZKL__HIDDEN void zkl__holds_enter(zkl__holds *h, zkl__hold *r);
ZKL__HIDDEN bool zkl__holds_leave(zkl__holds *h, zkl__hold *r);

/* ---- generic lock handles (recipes/lock.c, recipes/multilock.c) ------- */

/* A handle: a copy of the operations and the object they act on. */
struct zkl_lock {
    zkl_lock_ops ops;
    void *self;
    /* Set by a zkl recipe's adapter (zkl__lock_mark), zero for the
     * caller's own locks: what an asynchronous acquire of the member
     * queues (client, lock path, policy), and its cancellable acquire. */
    zkl_client *c;
    const char *dir;
    const zkl__policy *pol;
    bool prefetch;
    int (*cancellable)(void *self, long timeout_ms, zkl_cancel *h);
};
ZKL__HIDDEN void zkl__lock_mark(zkl_lock *l, zkl_client *c, const char *dir,
                                const zkl__policy *pol, bool prefetch,
                                int (*cancellable)(void *self, long timeout_ms, zkl_cancel *h));
/* The client and prefetch choice of a mutex (recipes/mutex.c). */
ZKL__HIDDEN zkl_client *zkl__mutex_client(const zkl_mutex *m, bool *prefetch);
/* Define `prefix`_ops, the operations of a handle that borrows a recipe's
 * object (no free operation): static functions `prefix`_acquire, _release
 * and _is_held that pass the object on to the recipe's public calls, and
 * path_fn (the recipe's own) for the key. */
#define ZKL__LOCK_OPS(prefix, acquire_fn, release_fn, is_held_fn, path_fn)                   \
    static int prefix##_acquire(void *self, long timeout_ms)                                 \
    {                                                                                        \
        return acquire_fn(self, timeout_ms);                                                 \
    }                                                                                        \
    static int prefix##_release(void *self)                                                  \
    {                                                                                        \
        return release_fn(self);                                                             \
    }                                                                                        \
    static int prefix##_is_held(void *self)                                                  \
    {                                                                                        \
        return is_held_fn(self);                                                             \
    }                                                                                        \
    static const zkl_lock_ops prefix##_ops = {                                               \
        .version = ZKL_LOCK_OPS_VERSION,                                                     \
        .acquire = prefix##_acquire,                                                         \
        .release = prefix##_release,                                                         \
        .is_held = prefix##_is_held,                                                         \
        .path = path_fn,                                                                     \
    }
/* The lock path of a recipe object, borrowed (the key of its adapter). */
ZKL__HIDDEN const char *zkl__mutex_path(const zkl_mutex *m);

#include "list.h"
#include "request.h"

#endif
