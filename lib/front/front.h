/* The front ends over the engine: the blocking calls, each an asynchronous
 * request and a wait for it (lib/front/wait.c), the asynchronous requests (lib/front/async.c,
 * lib/front/request.c), cancel handles (lib/front/cancel.c), lock objects'
 * lifetimes (lib/front/objects.c) and the public metrics calls
 * (lib/front/stats.c). Their users are the kit and, through it, the
 * recipes. */
#ifndef ZKL_FRONT_H
#define ZKL_FRONT_H

#include "engine.h"
#include "step.h"

/* ---- lock objects' lifetimes (lib/front/objects.c) ---------------------------- */

/* A lock object (or request) came to be: it keeps its client's memory (not
 * its session) alive until zkl__obj_done. `c` may be NULL. 0, ZKL_ENOMEM,
 * or ZKL_EFORK (c was inherited across fork()). */
int zkl__obj_open(zkl_client *c, const void *obj);
/* The object's own mutex (its zkl__owner's), held across a fork() so that
 * a child finds it unlocked and the fields it guards whole. */
void zkl__obj_set_mutex(const void *obj, pthread_mutex_t *mu);
/* A call through the object starts / ends (`fn` names it in a message). A
 * call through an object that is not open aborts the process. */
void zkl__obj_enter(const void *obj, const char *fn);
void zkl__obj_leave(const void *obj);
/* A recipe's acquire, as its public call: ZKL_EINVAL for a NULL obj,
 * ZKL_EFORK for an object of a parent process, else `acquire` without a
 * cancel handle between zkl__obj_enter(obj, fn) and zkl__obj_leave. */
int zkl__obj_acquire(void *obj, const char *fn, zkl__acquire_fn acquire, long timeout_ms);
/* A recipe's cancellable acquire, as its public call: ZKL_EINVAL for a
 * NULL obj, ZKL_ECANCELED for a handle fired already (nothing is sent),
 * else `acquire` with h, between zkl__obj_enter(obj, fn) and
 * zkl__obj_leave. No fork check of its own: `acquire` makes it. */
int zkl__obj_acquire_cancellable(void *obj, const char *fn, zkl__acquire_fn acquire,
                                 long timeout_ms, zkl_cancel *h);
/* The object's free starts: aborts the process, with a message naming
 * `fn`, if a call through it is still in progress or it is not open; from
 * now on, a call through it aborts. */
void zkl__obj_close(const void *obj, const char *fn);
/* The object's free is done with its client `c` (NULL: none): the last
 * object of a closed client frees it. */
void zkl__obj_done(zkl_client *c);
/* How many objects and requests are open (for tests: each free ends one). */
size_t zkl__obj_count(void);

/* ---- cancel handles of blocking calls (lib/front/cancel.c) ------------------- */

/* A waiter registered with a handle: firing it broadcasts cv under c->mu. */
struct zkl__cancel_reg {
    zkl_client *c;
    pthread_cond_t *cv;
    struct zkl__cancel_reg *next;
};
/* Register / unregister (no zkl lock held). */
void zkl__cancel_watch(zkl_cancel *h, struct zkl__cancel_reg *reg, zkl_client *c,
                       pthread_cond_t *cv);
void zkl__cancel_unwatch(zkl_cancel *h, struct zkl__cancel_reg *reg);
bool zkl__cancel_fired(const zkl_cancel *h);
/* fork(): every handle's mutex, taken before the lock objects' (and the
 * clients'), given back in the parent, started afresh in the child. */
void zkl__cancel_fork_prepare(void);
void zkl__cancel_fork_parent(void);
void zkl__cancel_fork_child(void);
/* Register the fork() handlers (the lock objects', the cancel handles' and
 * the session's) once. */
void zkl__front_fork_watch(void);

/* ---- the blocking calls (lib/front/wait.c); no lock held ---------------------- */

/* Enqueue on lock path `dir` and wait until the policy says the node holds,
 * or the call's timeout (0: try once), or o->cancel (or NULL) fires: a
 * one-node request and a wait for it (zkl__wait_request). Returns 0 and
 * the held node in *out, or a ZKL_E... code; on failure no node of this
 * attempt remains on the server (or it is being deleted and goes at the
 * latest with the session). */
int zkl__wait_acquire(zkl_client *c, const char *dir, const zkl__policy *pol, const zkl__qopts *o,
                      long timeout_ms, zkl__node **out);
/* Delete a held node and free it. Returns 0 once the server confirmed,
 * ZKL_ELOST if the session ended first or someone else had deleted the
 * node (it is gone), ZKL_ECLOSED, ZKL_EFORK (in a child of fork(): nothing
 * sent, the node left to the client's local free). Any other code
 * (ZKL_ENOAUTH: the server refused the delete) means the node stays and is
 * still held, not freed: zkl__release_kept() (step.h) tells. */
int zkl__wait_release(zkl__node *n);
/* Give a node up (held or not) and hand it to the engine, which frees it:
 * its delete is sent, not waited for; the engine finishes it on reconnect,
 * or the session's end takes the node. */
void zkl__wait_leave(zkl__node *n);
/* Every blocking acquire: the request start(ctx, ...) makes (with no
 * callback), and a wait for it, for the call's timeout and cancel handle
 * h (or NULL). Between sessions it first waits, within the timeout, for
 * the next. The request's machine applies the deadline, the try-once
 * bound and the grace of a failure. 0 and the held node in *out, the
 * caller's from then on (released with zkl__wait_release), or a ZKL_E...
 * code. `dir` names the lock path in a failure's detail text. */
int zkl__wait_request(zkl_client *c, const char *dir, long timeout_ms, zkl_cancel *h,
                      zkl__start_fn start, void *ctx, zkl__node **out);

/* ---- asynchronous acquires (lib/front/async.c) ------------------------------- */

/* Start an asynchronous acquire on `dir`: 0 with the request in *out, whose
 * callback `fn` runs once; or a ZKL_E... code, no request and no callback.
 * o's hooks are not used. */
int zkl__async_start(zkl_client *c, const char *dir, const zkl__policy *pol, const zkl__qopts *o,
                     long timeout_ms, zkl_request_fn fn, void *arg, zkl_request **out);

/* A held request's node is of the client's current session, as the server
 * said when it created (or found) the node: its ephemeral owner is the
 * session the client has now. Takes c->mu. */
bool zkl__request_on_session(zkl_request *r);
/* A failed request failed because the handle refused it for its session
 * (expired, closing, or one the client has not yet heard ended): a new
 * attempt on this session would fail at once too. Takes c->mu. */
bool zkl__request_session_refused(zkl_request *r);
/* Wait, up to the deadline, until a request cancelled while pending has
 * its node deleted (or its session ended): true then. Takes c->mu. */
bool zkl__request_wait_settled(zkl_request *r, int64_t deadline);

/* zkl__async_start with steps, `nodes` nodes in all at most: ctx is the
 * request's once this returns 0 (else still the caller's). With fn NULL a
 * blocking caller waits on the request (zkl__wait_request): arg is the
 * condition variable it waits on, and the nodes keep o's hooks. */
int zkl__async_start_steps(zkl_client *c, const char *dir, const zkl__policy *pol,
                           const zkl__qopts *o, long timeout_ms, const zkl__async_step *step,
                           void *ctx, size_t nodes, zkl_request_fn fn, void *arg,
                           zkl_request **out);
/* A step's next node, for request r (c->mu held, sending allowed). */
int zkl__async_enqueue(zkl_request *r, const char *dir, const zkl__policy *pol,
                       const zkl__qopts *o, zkl__node **out);
/* Judge the request again (c->mu held): a step's answer came in. */
void zkl__async_poke(zkl_request *r);

#endif
