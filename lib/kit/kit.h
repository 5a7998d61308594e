/* The kit: all that a recipe may use, and the one header recipes include.
 * A recipe is a policy (who holds, whom to watch) and its public calls; it
 * never talks to ZooKeeper for its lock queue: the engine does, behind the
 * front ends (lib/front/). What the kit adds:
 *
 *   lib/kit/holds.c    a lock object's owner and its threads' holds
 *   lib/kit/lost.c     a recipe's lost-hold callback
 *   lib/kit/calls.c    requests with a deadline, for a recipe's own nodes
 *   lib/kit/znode.c    a recipe's own nodes: a recorded parameter, guarded writes
 *   lib/kit/parents.c  lock parents for a recipe's own nodes
 *   lib/kit/lockopts.c lock options (zkl_lock_opts)
 *   lib/kit/pass.c     the calls a recipe makes into the front ends, the
 *                      engine and the session, passed on
 *
 * It shows a recipe no struct of the layers below: a client, a node and a
 * request are opaque here, and a recipe names nothing of the front ends,
 * the engine or the session but what this header declares (the argument
 * types of qopts.h and step.h). tests/check-layers.sh compiles every
 * recipe with only these headers on its include path. */
#ifndef ZKL_KIT_H
#define ZKL_KIT_H

#include <pthread.h>
#include <zookeeper/zookeeper.h>

#include "policy.h"
#include "qopts.h"
#include "step.h"
#include "util.h"

/* ---- the recipes' policies (recipes/) ------------------------------------------ */

/* "lock-": holds when first, watches the node before it (recipes/mutex.c;
 * the semaphore-mutex speaks the same protocol). */
extern const zkl__policy zkl__lock_policy;
/* "__READ__" and "__WRIT__" (recipes/rwlock.c). The read policy's arg is
 * NULL or a `const bool *`: true for a downgrade node, which holds at once. */
extern const zkl__policy zkl__read_policy;
extern const zkl__policy zkl__write_policy;
/* "latch-": leader election, Curator's LeaderLatch (recipes/latch.c): the
 * first node leads, a follower watches the node before it. */
extern const zkl__policy zkl__latch_policy;
/* The counting semaphore (recipes/semaphore.c): "zkl-wait-" gate nodes wait
 * (the gate's arg is a `const struct zkl__gate_arg *`: the limit, and the
 * leases the waiter asks for), "zkl-lease-" nodes hold. */
struct zkl__gate_arg {
    int max;
    int need;
};
extern const zkl__policy zkl__gate_policy;
/* The kind of a lease node standing for n leases. */
void zkl__lease_kind(char *buf, size_t size, int n);
extern const zkl__policy zkl__lease_policy;
/* Leases a node stands for: 1 for "zkl-lease-", n for "zkl-lease-x<n>-",
 * 0 for any other node. */
int zkl__lease_count(const zkl__entry *e);
/* The limit in a semaphore node's data ("max_leases=<n>"), 0 for empty
 * data, -1 for data that is no limit. */
int zkl__semaphore_parse_limit(const char *data, int len);

/* The counting semaphore's acquire as a request (recipes/semaphore_async.c):
 * fn NULL for a blocking caller's (zkl__async_start_steps), whose lease
 * carries the hooks of `own` (else NULL). */
struct zkl__owner;
int zkl__semaphore_start_async(zkl_client *c, const char *path, int max, int n, long timeout_ms,
                               struct zkl__owner *own, zkl_request_fn fn, void *arg, zkl_request **out);

/* The longest id a node may carry as its data (zkl_lock_opts_set_id). */
#define ZKL__ID_MAX 4096

/* What a lock object is made with (zkl_lock_opts_*, lib/session/options.c). */
struct zkl_lock_opts {
    bool prefetch;
    char *id; /* the nodes' data (zkl_lock_opts_set_id), or NULL: the client's "host pid" */
};

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
int zkl__lost_set(zkl__lost *l, pthread_mutex_t *mu, zkl_client *c, zkl__any_fn fn,
                              void *arg);
/* The callback and its arg, read under mu (for the recipe's node hook). */
zkl__any_fn zkl__lost_get(zkl__lost *l, pthread_mutex_t *mu, void **arg);
/* When the recipe's object is freed: no callback runs after this. */
void zkl__lost_stop(zkl__lost *l, pthread_mutex_t *mu, zkl_client *c);

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
    bool prefetch;      /* the object's zkl_lock_opts_set_prefetch, set by its recipe */
    char *ident;        /* its nodes' data (a copy), or NULL: the client's */
    zkl__lost lost, revoke; /* guarded by mu */
} zkl__owner;

/* Set o up for the lock object `obj` of client `c` (NULL: none) on lock
 * path `path` (copied; NULL: none) and open the object (zkl__obj_open). 0,
 * or ZKL_ESYS / ZKL_ENOMEM with nothing left to undo. */
int zkl__owner_open(zkl__owner *o, zkl_client *c, void *obj, const char *path,
                                zkl__tell_fn tell, bool revocable);
/* A new lock object of `size` bytes (zeroed) whose zkl__owner lies at byte
 * `offset`, opened as by zkl__owner_open with the object itself as obj;
 * or NULL with ZKL_ENOMEM / ZKL_ESYS in *rc and nothing left to undo. */
void *zkl__owner_new(size_t size, size_t offset, zkl_client *c, const char *path,
                                 zkl__tell_fn tell, bool revocable, int *rc);
/* Take a recipe's lock options (NULL: the defaults): prefetch and the
 * nodes' data. 0, or ZKL_ENOMEM with o unchanged. */
int zkl__owner_opts(zkl__owner *o, const zkl_lock_opts *opts);
/* Set the user's lost callback (revoke false) or revoke callback, as
 * zkl__lost_set. Returns 0. */
int zkl__owner_set(zkl__owner *o, bool revoke, zkl__any_fn fn, void *arg);
/* The object's free, after zkl__obj_close: once stop returned no callback
 * runs or will; done (once the holds are dropped) destroys o (its path
 * too) and ends the object's claim on its client (zkl__obj_done). */
void zkl__owner_stop(zkl__owner *o);
void zkl__owner_done(zkl__owner *o);
/* A recipe's asynchronous acquire of a node of `pol` on the lock path of
 * `own` (zkl__async_start, with own's prefetch choice), between
 * zkl__obj_enter(obj, fn_name) and zkl__obj_leave. obj is own's object, not
 * NULL: passed on its own so that nothing of a freed object is read before
 * zkl__obj_enter aborts. */
int zkl__owner_acquire_async(void *obj, zkl__owner *own, const char *fn_name,
                             const zkl__policy *pol, long timeout_ms, zkl_request_fn fn,
                             void *arg, zkl_request **out);
/* Point the engine's hooks of a node held by the object itself (not by a
 * thread) at o's callbacks, side 0: sets q's on_lost, on_revoke, hook_arg. */
void zkl__owner_arm(zkl__owner *o, zkl__qopts *q);

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

void zkl__holds_init(zkl__holds *h, zkl__owner *own, int side);
/* The calling thread's record, or NULL; or the node of it. */
zkl__hold *zkl__holds_find(zkl__holds *h);
zkl__node *zkl__holds_node(zkl__holds *h);
/* Acquire for the calling thread: a thread that holds counts once more (0)
 * or gets ZKL_ELOST for a lost hold, which must be released first; else a
 * node is taken on `dir` (zkl__wait_acquire with `o` and the call's
 * timeout, its hooks pointed at the owner's callbacks) and recorded, the
 * record made first: ZKL_ENOMEM then takes no node, and nothing fails
 * once the node holds. */
int zkl__holds_acquire(zkl__holds *h, const char *dir, const zkl__policy *pol,
                       const zkl__qopts *o, long timeout_ms);
/* Release the calling thread's hold: ZKL_ENOTHELD without one; 0 for an
 * inner count; at the last count, or for a lost hold, the node's release
 * (zkl__queue_release): a code it keeps the node for leaves the hold
 * counted once, any other ends it. */
int zkl__holds_release(zkl__holds *h);
/* The calling thread's hold: held (zkl__node_held)? Its token (ZKL_ENOTHELD,
 * ZKL_ELOST)? Its node's path (borrowed, NULL without a hold)? */
int zkl__holds_is_held(zkl__holds *h);
int64_t zkl__holds_token(zkl__holds *h);
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
const char *zkl__holds_path(zkl__holds *h);
/* The object's free: every hold still open is released, a refused delete
 * left to the engine (zkl__queue_leave). */
void zkl__holds_drop_all(zkl__holds *h);
/* A record of the calling thread's hold, counted once (NULL: no memory),
 * made before the hold is taken so that nothing fails once it holds; freed
 * with free() if unused. Add it as the thread's record of node n (NULL: a
 * hold that only counts). */
zkl__hold *zkl__holds_new(void);
void zkl__holds_add(zkl__holds *h, zkl__hold *r, zkl__node *n);
/* Holds that only count (no node): enter once more, leave once (true when
 * that was the last and the record is gone). */
void zkl__holds_enter(zkl__holds *h, zkl__hold *r);
bool zkl__holds_leave(zkl__holds *h, zkl__hold *r);

/* ---- generic lock handles (recipes/lock.c, recipes/multilock.c) ------- */

/* A handle: a copy of the operations and the object they act on. */
struct zkl_lock {
    zkl_lock_ops ops;
    void *self;
    /* Set by a zkl recipe's adapter (zkl__lock_adapt), zero for the
     * caller's own locks: what an asynchronous acquire of the member
     * queues (client, lock path, policy), and the recipe's acquire, which
     * a cancellable acquire runs as the public call `with_name` does
     * (zkl__obj_acquire_cancellable). */
    zkl_client *c;
    const char *dir;
    const zkl__policy *pol;
    bool prefetch;
    const char *ident; /* the owner's, borrowed: NULL for the client's */
    zkl__acquire_fn with;
    const char *with_name;
};
/* A new handle on the recipe object `obj` (`ops` borrow it: no free
 * operation), set up as above from its owner `own` (client, lock path,
 * prefetch choice), the policy its nodes take and its acquire. Returns
 * zkl_lock_new's code. */
int zkl__lock_adapt(void *obj, const zkl__owner *own, const zkl_lock_ops *ops,
                    const zkl__policy *pol, zkl__acquire_fn with, const char *with_name,
                    zkl_lock **out);
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

/* ---- requests with a deadline (lib/kit/calls.c) -------------------------- */

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

struct zkl__batch *zkl__batch_new(size_t n);
void zkl__batch_destroy(struct zkl__batch *b);
/* Completions for zoo_aget / zoo_acreate with a slot as data. */
void zkl__get_done(int rc, const char *value, int len, const struct Stat *st,
                               const void *data);
void zkl__string_done(int rc, const char *value, const void *data);
/* Take the session's handle for sending (c->hlock held until send_end). */
int zkl__send_begin(zkl_client *c, zhandle_t **zh);
void zkl__send_end(zkl_client *c, int requests);
/* A new batch of n slots in *b, and the handle to send its requests on, as
 * zkl__send_begin: 0, or ZKL_ENOMEM or zkl__send_begin's code with nothing
 * left to undo. */
int zkl__batch_begin(zkl_client *c, size_t n, struct zkl__batch **b, zhandle_t **zh);
/* Count a request as sent (rc ZOK), or record that it could not be. */
void zkl__sent(struct zkl__slot *sl, int rc);
/* Wait for every answer, up to the deadline: 0 or ZKL_ETIMEDOUT. */
int zkl__batch_wait(struct zkl__batch *b, int64_t deadline);
/* The caller is done with the batch: freed now, or at the last answer. */
void zkl__batch_drop(struct zkl__batch *b);
/* One request, waited for: 0 with the answer in *out (a batch to drop), or
 * ZKL_ETIMEDOUT / ZKL_ELOST / ZKL_ECLOSED / ZKL_ENOMEM. */
enum zkl__op { ZKL__OP_GET, ZKL__OP_KIDS, ZKL__OP_CREATE, ZKL__OP_SET };
int zkl__call(zkl_client *c, enum zkl__op op, const char *path, const char *data,
                          int mode, int version, int64_t deadline, struct zkl__batch **out);

/* ---- a recipe's own nodes (lib/kit/calls.c, lib/kit/znode.c) ----------------- */

/* The deadline for requests a call must see answered: its own, or once
 * that has passed (a try once), the session timeout from now, as the
 * engine bounds a try-once acquire. */
int64_t zkl__request_deadline(zkl_client *c, int64_t deadline);
/* Send a read of `path` now, to look at its answer later: a batch to drop,
 * or NULL (no memory). */
struct zkl__batch *zkl__get_ahead(zkl_client *c, const char *path);
/* The read's answer, if it is in and found the node: true, with the data
 * (borrowed until the batch is dropped). b may be NULL. */
bool zkl__get_peek(struct zkl__batch *b, const char **data, int *len);
/* Read n nodes in one pipelined batch, waited for up to the deadline: 0
 * with the answers in *out (slot i for paths[i]; a batch to drop), or
 * ZKL_ETIMEDOUT / ZKL_ELOST / ZKL_ECLOSED / ZKL_ENOMEM. */
int zkl__get_many(zkl_client *c, char *const *paths, size_t n, int64_t deadline,
                              struct zkl__batch **out);
/* One child read by zkl__read_children. */
typedef struct zkl__read {
    char *path;    /* the child's full path */
    char *data;    /* its data, NUL-terminated, len bytes before the NUL */
    int len;
    int tag;       /* what pick() said of its name */
    int64_t czxid; /* its creation's zxid */
    int64_t owner; /* its ephemeral owner's session, 0 if persistent */
} zkl__read;
/* List `dir` and read each child whose name pick() tags with a number
 * above 0, in one pipelined batch, up to the deadline. A child gone since
 * the listing is left out, and a missing `dir` has no children. 0 with *n
 * reads in listing order in *out (free with zkl__reads_free), or a ZKL_E...
 * code. */
int zkl__read_children(zkl_client *c, const char *dir, int (*pick)(const char *name),
                                   int64_t deadline, zkl__read **out, size_t *n);
void zkl__reads_free(zkl__read *r, size_t n);
/* Make sure the persistent node `path` (a lock path, so there) carries
 * data: fill it in with `want`, by version, if it has none; started on the
 * engine (c->mu held; sent on the session's current handle), without
 * creating: a node missing is ZNONODE's code.
 * fn is called once, on ZooKeeper's thread with c->mu held, with 0 and the
 * data the node carries (borrowed for the call), or a ZKL_E... code; or
 * never, after zkl__znode_fill_drop. NULL with *err if nothing was sent. */
typedef void (*zkl__fill_fn)(void *arg, int err, const char *data, int len);
struct zkl__fill;
struct zkl__fill *zkl__znode_fill_start(zkl_client *c, const char *path,
                                                   const char *want, zkl__fill_fn fn, void *arg,
                                                   int *err);
/* The caller no longer wants the answer (c->mu held): fn is not called,
 * and the last answer frees. */
void zkl__znode_fill_drop(struct zkl__fill *f);
/* The guarded writes of every recipe, for the hold of node n (NULL: none):
 * ZKL_EINVAL for arguments the public calls refuse, ZKL_ENOTHELD without a
 * node, else zkl__guarded_multi; set writes `len` bytes of `data` into
 * `path` (any version). */
int zkl__znode_guarded_ops(zkl__node *n, int count, const zoo_op_t *ops,
                                      zoo_op_result_t *results);
int zkl__znode_guarded_set(zkl__node *n, const char *path, const void *data, int len);


/* ---- lock parents (lib/kit/parents.c) -------------------------------------------- */

/* Told each create's return code as soon as it is known (lib/kit/parents.c):
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
int zkl__parents_send(zkl_client *c, zhandle_t *zh, const char *path, bool ancestors,
                                  bool self, string_completion_t done, const void *data,
                                  size_t stride, zkl__parent_sent_fn sent, void *arg);
/* ---- the calls a recipe makes below the kit (lib/kit/pass.c) ---------------
 * Each passes its arguments on, unchanged, to the function of the front
 * ends (lib/front/front.h), the engine (lib/engine/engine.h) or the
 * session (lib/session/session.h) whose name follows zkl__kit_, and
 * returns what it returns; the comments there say what they do. */

/* lock objects' lifetimes (lib/front/objects.c) */
void zkl__kit_obj_enter(const void *obj, const char *fn);
void zkl__kit_obj_leave(const void *obj);
void zkl__kit_obj_close(const void *obj, const char *fn);
int zkl__kit_obj_acquire(void *obj, const char *fn, zkl__acquire_fn acquire, long timeout_ms);
int zkl__kit_obj_acquire_cancellable(void *obj, const char *fn, zkl__acquire_fn acquire,
                                     long timeout_ms, zkl_cancel *h);
/* the blocking calls (lib/front/wait.c) */
int zkl__kit_wait_acquire(zkl_client *c, const char *dir, const zkl__policy *pol,
                          const zkl__qopts *o, long timeout_ms, zkl__node **out);
int zkl__kit_wait_release(zkl__node *n);
void zkl__kit_wait_leave(zkl__node *n);
int zkl__kit_wait_request(zkl_client *c, const char *dir, long timeout_ms, zkl_cancel *h,
                          zkl__start_fn start, void *ctx, zkl__node **out);
/* asynchronous acquires (lib/front/async.c, lib/front/request.c) */
int zkl__kit_async_start(zkl_client *c, const char *dir, const zkl__policy *pol,
                         const zkl__qopts *o, long timeout_ms, zkl_request_fn fn, void *arg,
                         zkl_request **out);
int zkl__kit_async_start_steps(zkl_client *c, const char *dir, const zkl__policy *pol,
                               const zkl__qopts *o, long timeout_ms, const zkl__async_step *step,
                               void *ctx, size_t nodes, zkl_request_fn fn, void *arg,
                               zkl_request **out);
int zkl__kit_async_enqueue(zkl_request *r, const char *dir, const zkl__policy *pol,
                           const zkl__qopts *o, zkl__node **out);
void zkl__kit_async_poke(zkl_request *r);
bool zkl__kit_request_on_session(zkl_request *r);
bool zkl__kit_request_session_refused(zkl_request *r);
bool zkl__kit_request_wait_settled(zkl_request *r, int64_t deadline);
/* a node as its caller sees it (lib/engine/node.c) */
int zkl__kit_node_held(const zkl__node *n);
int64_t zkl__kit_node_token(const zkl__node *n);
const char *zkl__kit_node_path(const zkl__node *n);
zkl_client *zkl__kit_node_client(const zkl__node *n);
/* the session (lib/session/session.h): zkl__forked, and the synchronous
 * requests of zkl__send_begin's handle zh (c->zapi's get, exists,
 * get_children, set; no watch, any version), and the largest request the
 * server takes (c->max_request) */
bool zkl__kit_forked(const zkl_client *c);
int zkl__kit_get(zkl_client *c, zhandle_t *zh, const char *path, char *buf, int *len,
                 struct Stat *st);
int zkl__kit_exists(zkl_client *c, zhandle_t *zh, const char *path, struct Stat *st);
int zkl__kit_children(zkl_client *c, zhandle_t *zh, const char *path,
                      struct String_vector *kids);
int zkl__kit_set(zkl_client *c, zhandle_t *zh, const char *path, const char *data, int len);
int zkl__kit_max_request(const zkl_client *c);

#endif
