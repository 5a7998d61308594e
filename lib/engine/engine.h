/* The lock-queue engine: the pure core (lib/engine/core/) in its shell. The
 * shell turns ZooKeeper's completions and watch events into the core's
 * events and the core's actions into zoo_a* calls; it keeps a node's
 * waiter, its owner's hooks and its metrics, which the core knows nothing
 * of. Its users are the front ends (lib/front/: the blocking calls and
 * the asynchronous requests) and the kit (lib/kit/).
 *
 *   lib/engine/engine.c   the engine of a client: its session listener, the
 *                         keeper's ticks, the owners' hooks, the front end
 *   lib/engine/shell.c    the core's sink, and the completions that answer it
 *   lib/engine/node.c     a node as its caller sees it: made, started, given
 *                         up, released, asked about
 *   lib/engine/guarded.c  guarded writes
 *   lib/engine/unmake.c   the lock parents a refused attempt made, deleted again
 *
 * Every function here is called with c->mu held unless it says otherwise. */
#ifndef ZKL_ENGINE_H
#define ZKL_ENGINE_H

#include "core.h"
#include "metrics.h"
#include "qopts.h"
#include "session.h"

/* The owner's hooks of a node (zkl__qopts), apart: only a lock object's
 * holds have them. Called on the keeper thread with no zkl lock held. */
struct zkl__hooks {
    zkl__node_fn on_lost, on_revoke;
    void *arg;
    zkl__node *n;
    struct zkl__hooks *next; /* e->notify queue */
    uint8_t notify;          /* what is still to be told */
    bool queued;             /* on e->notify */
};

/* One contender: the core's node, and what the shell keeps beside it. */
/* Paths of lock parents an acquire created (malloc, each and the array). */
typedef struct zkl__made {
    char **paths;
    size_t n;
} zkl__made;

struct zkl__node {
    zkl__cnode cn;           /* first: the core's part */
    zkl__wake_fn wake;       /* an asynchronous waiter's wake-up, or NULL ... */
    union {
        void *wake_arg;      /* ... its argument */
        pthread_cond_t *cv;  /* ... else the blocked caller's condition variable, or NULL */
    };
    struct zkl__hooks *hooks; /* or NULL */
    char *path;              /* its full path, once the caller took the hold */
    char *ident;             /* its data, or NULL: the client's ident */
    int64_t owner;           /* the ephemeral owner its create (or find) answered */
    zkl__meter meter;
    bool broken;             /* the engine broke its state table on it: said on release */
    zkl__made made;          /* the lock parents its creates made, outermost first */
};

/* The engine of a node's client (the core's sink context), and the client:
 * a node knows them once started. */
#define ZKL__NODE_ENGINE(n) ((struct zkl__engine *)zkl__core_ctx((n)->cn.core))
#define ZKL__NODE_CLIENT(n) (ZKL__NODE_ENGINE(n)->c)

/* A front end beside the blocking calls (the asynchronous requests): the
 * engine calls it on the keeper thread and when the client goes, and
 * names it nowhere else. */
typedef struct zkl__front_ops {
    /* The keeper's tick (c->mu held, may be released meanwhile): returns
     * when to run again (monotonic ns), 0 for "on a signal". */
    int64_t (*tick)(void *ctx);
    /* The client closes (c->mu held, may be released meanwhile). */
    void (*close)(void *ctx);
    /* The client's memory goes: free ctx. */
    void (*drop)(void *ctx);
} zkl__front_ops;

struct zkl__engine {
    zkl_client *c;
    struct zkl__core *core;
    struct zkl__metrics *metrics; /* made on first use; never when off */
    struct zkl__hooks *notify_head, *notify_tail; /* owners' hooks that are due */
    const struct zkl__hooks *notifying; /* the one running */
    int inside;                   /* caller threads inside a blocking engine call */
    const zkl__front_ops *front;
    void *front_ctx;
};

#define ZKL__NOTIFY_LOST 1u
#define ZKL__NOTIFY_REVOKE 2u

/* ---- lib/engine/engine.c ---- */
/* The client's engine, made and registered on first use, or NULL without
 * memory. */
struct zkl__engine *zkl__engine_of(zkl_client *c);
/* The client's engine if it has one, else NULL (never made here). */
struct zkl__engine *zkl__engine_find(zkl_client *c);
/* Register the (one) front end beside the blocking calls. */
void zkl__engine_set_front(struct zkl__engine *e, const zkl__front_ops *ops, void *ctx);
/* The owner's hooks of n are off: none runs from now on (a caller thread
 * waits for one that is running; a loss already queued is told first). */
void zkl__engine_hooks_off(zkl__node *n);
/* Queue a hook call for the keeper. */
void zkl__engine_notify(zkl__node *n, unsigned what);
/* Whether the client counts as connected right now. */
bool zkl__engine_connected(const zkl_client *c);

/* ---- lib/engine/shell.c ---- */
/* The core's sink: a core action carried out. */
int zkl__shell_act(void *ctx, const zkl__act *a);
/* Let the waiter of n look again (cv or wake-up). */
void zkl__shell_wake(zkl__node *n);
/* Free the paths in m, and empty it. */
void zkl__made_free(zkl__made *m);

/* ---- lib/engine/unmake.c: the lock parents a refused attempt made ---- */
/* Told of each answer to an unmake's deletes (c->mu held, any thread). */
typedef void (*zkl__unmake_fn)(void *arg);
/* Whether n's attempt, failed with err, was refused by the server (its
 * ACL entries, or a request it rejects): the parents it made must go. */
bool zkl__node_refused_create(const zkl__node *n, int err);
/* If so, and n's creates made lock parents: send their deletes, deepest
 * first (each deletes only an empty node), and return the unmake that
 * waits for the answers, calling fn(arg) on each; else NULL (also without
 * memory: the parents stay). The front end calls this once its attempt
 * failed and n is given up, then drops it. */
struct zkl__unmake *zkl__node_unmake(zkl__node *n, int err, zkl__unmake_fn fn, void *arg);
/* Answers still to come (false for NULL). */
bool zkl__unmake_pending(const struct zkl__unmake *u);
/* The first parent whose delete failed other than "gone" or "not empty"
 * (or could not be sent), its code in *rc; NULL if none (so far). Valid
 * until the drop. */
const char *zkl__unmake_refused(const struct zkl__unmake *u, int *rc);
/* Done with u (NULL does nothing): fn is not called from now on; u goes
 * with its last answer. */
void zkl__unmake_drop(struct zkl__unmake *u);

/* ---- lib/engine/node.c: a node as its caller sees it ---- */
/* Make a node for an acquire (no lock held): 0 and *out, or ZKL_ENOMEM
 * with nothing made. */
int zkl__node_make(const zkl__policy *pol, const zkl__qopts *o, bool try_once, zkl__node **out);
/* Link it to c's engine and send its create on `dir` (c->mu held): 0, or a
 * ZKL_E... code with the node counted and freed. */
int zkl__node_start(zkl_client *c, zkl__node *n, const char *dir, const zkl__qopts *o);
/* Tell the node's machine of the caller, at `now` (zkl__now_ns, read by
 * the caller): it left (no node of the attempt may stay), it releases its
 * hold, it is done with the node (which may be freed by the call). */
void zkl__node_leave(zkl__node *n, int64_t now);
void zkl__node_release(zkl__node *n, int64_t now);
void zkl__node_detach(zkl__node *n, int64_t now);
/* The caller takes the hold it waited for: 0, or ZKL_ENOMEM (no memory to
 * keep its path: the caller fails the attempt, and leaves). */
int zkl__node_taken(zkl__node *n, int64_t now);
/* A release is in flight (its delete not confirmed), and what it came to
 * once it is not (0, ZKL_ELOST: someone else deleted the node first or the
 * session ended, ZKL_ECLOSED). */
bool zkl__node_releasing(const zkl__node *n);
int zkl__node_released(const zkl__node *n);
/* 1 while the node's session is the client's live session and it is held
 * (the hold may be uncertain while the client is suspended); sure: and
 * the client is connected right now. Take c->mu themselves. */
int zkl__node_held(const zkl__node *n);
int zkl__node_sure(const zkl__node *n);
int64_t zkl__node_token(const zkl__node *n);
/* Full path of the node (borrowed until the node goes), NULL before known. */
const char *zkl__node_path(const zkl__node *n);
zkl_client *zkl__node_client(const zkl__node *n);
/* The state questions the front ends ask (c->mu held). */
bool zkl__node_is_held(const zkl__node *n);  /* held, of the live session */
bool zkl__node_current(const zkl__node *n);
bool zkl__node_refused(const zkl__node *n, int *err); /* release refused: the hold stays */
/* The node's metrics: the attempt ended with rc; the hold ended (at now). */
void zkl__node_count_end(zkl__node *n, int rc, int64_t now);
void zkl__node_count_released(zkl__node *n, int64_t now);

/* ---- lib/engine/validate.c ---- */
/* Check a guarded multi-op (`count` ops behind a check of `guard`) before
 * it is sent: every path as the server checks it, and the request's size
 * against c->max_request. 0 or ZKL_EINVAL (with a detail). */
int zkl__validate_ops(zkl_client *c, const char *guard, int count, const zoo_op_t *ops);

/* ---- lib/engine/guarded.c ---- */
/* Run a multi-op whose first op checks that n still exists, then `ops`.
 * 0, ZKL_ELOST (n is gone: nothing applied), ZKL_ECONNLOSS, ZKL_EZK, ... */
int zkl__guarded_multi(zkl__node *n, int count, const zoo_op_t *ops,
                            zoo_op_result_t *results);

#endif
