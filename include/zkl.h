/*
 * zkl — ZooKeeper lock recipes for C.
 *
 * Every contender for a lock creates an ephemeral sequential znode under the
 * lock's path; the lowest sequence holds; each waiter watches only the node
 * ahead of it. A crashed process's nodes vanish with its session.
 *
 * Conventions, for every function below:
 *  - Functions that can fail return 0 (ZKL_OK) or a negative ZKL_E... code;
 *    zkl_strerror() turns a code into a sentence.
 *  - Objects are created by zkl_<type>_new / zkl_client_open and come out
 *    through a last `**out` argument; *out is left untouched on failure.
 *  - zkl_<type>_free(NULL) does nothing.
 *  - Timeouts are in milliseconds: a negative value (ZKL_WAIT_FOREVER) waits
 *    forever, 0 tries once without waiting, a positive value is one deadline
 *    for the whole call, internal retries included. Running out of time is
 *    ZKL_ETIMEDOUT, and it never leaves a node behind on the server.
 *
 * Thread safety: a zkl_client and every lock object may be shared by any
 * number of threads. What "held" means is per thread for the reentrant locks
 * (mutex, read-write lock) and per object for the semaphore-mutex.
 * No user callback is ever run inside ZooKeeper's own threads.
 */
#ifndef ZKL_H
#define ZKL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define ZKL_EXPORT __attribute__((visibility("default")))
#define ZKL_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define ZKL_EXPORT
#define ZKL_WARN_UNUSED
#endif

/* ------------------------------------------------------------------------
 * Version
 * ---------------------------------------------------------------------- */
#define ZKL_VERSION_MAJOR 0
#define ZKL_VERSION_MINOR 1
#define ZKL_VERSION_PATCH 0
#define ZKL_VERSION_STRING "0.1.0"

/* The version of the library actually linked, e.g. "0.1.0". Never NULL. */
ZKL_EXPORT const char *zkl_version_string(void);

/* ------------------------------------------------------------------------
 * Errors
 *
 * The one list of error codes. Codes are append-only: a code never changes
 * its number or meaning. docs/errors.md says, for each, what to do.
 * ---------------------------------------------------------------------- */
#define ZKL_ERRNO_MAP(X)                                                      \
    X(EINVAL, -1, "invalid argument")                                         \
    X(ENOMEM, -2, "out of memory")                                            \
    X(ETIMEDOUT, -3, "timed out")                                             \
    X(ENOTHELD, -4, "lock not held by the caller")                            \
    X(ELOST, -5, "ZooKeeper session ended: the lock is lost")                 \
    X(ECONNLOSS, -6, "connection to ZooKeeper lost")                          \
    X(EDEADLK, -7, "the call would deadlock")                                 \
    X(ECLOSED, -8, "client is closed")                                        \
    X(EZK, -9, "unexpected ZooKeeper error")                                  \
    X(ENOAUTH, -10, "not authorized by the ZooKeeper ACL")                    \
    X(EMISMATCH, -11, "lock parameters disagree with those on the server")    \
    X(EBUSY, -12, "object is in use")                                         \
    X(ESYS, -13, "system call failed")

enum {
    ZKL_OK = 0,
#define ZKL__ERR_ENUM(name, code, msg) ZKL_##name = (code),
    ZKL_ERRNO_MAP(ZKL__ERR_ENUM)
#undef ZKL__ERR_ENUM
};

/* A sentence describing `err` (0 or a ZKL_E... code). Never NULL; unknown
 * codes get a generic message. Thread-safe; the string is static. */
ZKL_EXPORT const char *zkl_strerror(int err);

/* The code's name without prefix, e.g. "ETIMEDOUT"; "UNKNOWN" for unknown
 * codes, "OK" for 0. Never NULL. Thread-safe; the string is static. */
ZKL_EXPORT const char *zkl_err_name(int err);

#define ZKL_WAIT_FOREVER (-1L)

/* ------------------------------------------------------------------------
 * Client: one ZooKeeper session shared by any number of threads and locks.
 * ---------------------------------------------------------------------- */
typedef struct zkl_client zkl_client;
typedef struct zkl_client_opts zkl_client_opts;

/* Session states, as reported by zkl_client_state() and to listeners. */
enum zkl_state {
    ZKL_STATE_CONNECTING = 0,  /* not yet connected the first time */
    ZKL_STATE_CONNECTED = 1,   /* connected with a new session */
    ZKL_STATE_SUSPENDED = 2,   /* connection lost; the session may be alive:
                                  a holder cannot be sure it still holds */
    ZKL_STATE_RECONNECTED = 3, /* connected again with the same session:
                                  every lock still held is still held */
    ZKL_STATE_LOST = 4,        /* the session expired: every lock it held is
                                  gone. A new session follows if the client
                                  re-opens (the default). */
    ZKL_STATE_CLOSED = 5       /* zkl_client_close() was called */
};

/* Options for zkl_client_open_opts(). An options object is not shared
 * between threads while it is being set; the client copies what it needs. */
ZKL_EXPORT int zkl_client_opts_new(zkl_client_opts **out);
ZKL_EXPORT void zkl_client_opts_free(zkl_client_opts *o);
/* Re-open a new session by itself after expiry (default 1). With 0 the
 * client stays in ZKL_STATE_LOST and every call returns ZKL_ELOST. */
ZKL_EXPORT int zkl_client_opts_set_reopen(zkl_client_opts *o, int on);
/* Create missing lock parents as container nodes (1, default), which the
 * server removes once empty, or as plain persistent nodes (0). */
ZKL_EXPORT int zkl_client_opts_set_container_parents(zkl_client_opts *o, int on);
/* Add digest credentials ("user:password") to every session this client
 * opens (zoo_add_auth with scheme "digest"). The secret is copied and never
 * logged. Returns ZKL_EINVAL for NULL or an empty credential. */
ZKL_EXPORT int zkl_client_opts_set_digest_auth(zkl_client_opts *o,
                                               const char *user_password);
/* The ACL for nodes the client creates (lock parents and contenders):
 * ZKL_ACL_OPEN (world:anyone all, the default) or ZKL_ACL_CREATOR (only the
 * authenticated creator; needs digest auth). */
enum { ZKL_ACL_OPEN = 0, ZKL_ACL_CREATOR = 1 };
ZKL_EXPORT int zkl_client_opts_set_acl(zkl_client_opts *o, int acl);

/* Open a session to `hosts` ("host:port[,host:port...][/chroot]") and wait
 * until it is connected, for at most about `session_timeout_ms`.
 * Returns 0 and a new client in *out (free with zkl_client_close), or
 * ZKL_EINVAL (NULL/empty hosts, timeout <= 0), ZKL_ENOMEM, ZKL_ECONNLOSS (no
 * server answered in time), ZKL_ENOAUTH (credentials refused), ZKL_ESYS.
 * `opts` may be NULL for the defaults. Thread-safe. */
ZKL_EXPORT int zkl_client_open(const char *hosts, int session_timeout_ms,
                               zkl_client **out) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_client_open_opts(const char *hosts, int session_timeout_ms,
                                    const zkl_client_opts *opts,
                                    zkl_client **out) ZKL_WARN_UNUSED;

/* Close the session (its ephemeral nodes, hence its locks, go at once) and
 * free the client. Every lock object made on it must be freed first; a call
 * blocked on this client returns ZKL_ECLOSED. NULL does nothing. */
ZKL_EXPORT void zkl_client_close(zkl_client *c);

/* The current state (enum zkl_state). Thread-safe, cheap. */
ZKL_EXPORT int zkl_client_state(zkl_client *c);

/* The current session id (0 while none). Thread-safe. */
ZKL_EXPORT int64_t zkl_client_session_id(zkl_client *c);

/* A listener gets every state change, in order, on a thread of the
 * client's own (never a ZooKeeper thread, never with a zkl lock held).
 * It must not call zkl_client_close(). Returns 0, ZKL_EINVAL, ZKL_ENOMEM.
 * Remove with the same (fn, arg). Thread-safe. */
typedef void (*zkl_state_fn)(zkl_client *c, int state, void *arg);
ZKL_EXPORT int zkl_client_add_listener(zkl_client *c, zkl_state_fn fn, void *arg);
ZKL_EXPORT int zkl_client_remove_listener(zkl_client *c, zkl_state_fn fn, void *arg);

/* Counters of what the client did, for tests and benchmarks. */
typedef struct zkl_client_stats {
    uint64_t requests;      /* requests sent to ZooKeeper */
    uint64_t creates;       /* contender nodes created */
    uint64_t deletes;       /* contender nodes deleted */
    uint64_t listings;      /* getChildren calls on lock paths */
    uint64_t watch_events;  /* watch events that woke a waiting contender */
    uint64_t sessions;      /* sessions opened (1 + re-opens) */
} zkl_client_stats;
ZKL_EXPORT int zkl_client_get_stats(zkl_client *c, zkl_client_stats *out);

/* ------------------------------------------------------------------------
 * Reentrant mutex (Curator InterProcessMutex protocol: "lock-" nodes).
 *
 * One zkl_mutex may be shared by many threads: each thread's acquisition is
 * its own (its own znode); a thread that holds it may acquire it again, which
 * only counts. The node is deleted when the thread's count returns to 0.
 * ---------------------------------------------------------------------- */
typedef struct zkl_mutex zkl_mutex;

/* Options for zkl_mutex_new2(): ZKL_MUTEX_PREFETCH also watches the node two
 * ahead, so the handoff to this waiter needs no listing (one more cheap read
 * per acquisition, at most two wake-ups per handoff). */
enum { ZKL_MUTEX_PREFETCH = 1 };

/* A mutex on lock path `path` (absolute, no trailing '/', no empty, "." or
 * ".." segments, at most 1024 bytes). Nothing is sent to the server yet.
 * Returns 0, ZKL_EINVAL (NULL, bad path), ZKL_ENOMEM. Thread-safe. */
ZKL_EXPORT int zkl_mutex_new(zkl_client *c, const char *path,
                             zkl_mutex **out) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_mutex_new2(zkl_client *c, const char *path, unsigned flags,
                              zkl_mutex **out) ZKL_WARN_UNUSED;

/* Acquire for the calling thread. Returns 0 when held (or when the calling
 * thread already held it: the count goes up), ZKL_ETIMEDOUT, ZKL_ELOST (the
 * session ended while waiting, or the calling thread's hold was already
 * lost: release it first), ZKL_ECLOSED, ZKL_ENOAUTH, ZKL_EINVAL (NULL),
 * ZKL_ENOMEM, ZKL_EZK. On every failure the caller's node is removed.
 * Thread-safe. */
ZKL_EXPORT int zkl_mutex_acquire(zkl_mutex *m, long timeout_ms) ZKL_WARN_UNUSED;

/* Release one count of the calling thread's hold; the node is deleted when
 * the count reaches 0, and the call returns once the server confirmed it.
 * Returns 0, ZKL_ENOTHELD (the calling thread holds nothing: nothing
 * changes), ZKL_ELOST (the session ended: the hold is cleared), ZKL_ECLOSED,
 * ZKL_EINVAL (NULL). Thread-safe. */
ZKL_EXPORT int zkl_mutex_release(zkl_mutex *m);

/* 1 if the calling thread holds the mutex and its session is alive, else 0
 * (also for NULL). Cheap: no server traffic. Thread-safe. */
ZKL_EXPORT int zkl_mutex_is_held(zkl_mutex *m);

/* The fencing token of the calling thread's hold (the czxid of its node):
 * successive holders of one path get strictly increasing tokens. Negative
 * ZKL_ENOTHELD if the thread holds nothing, ZKL_ELOST if its hold was lost,
 * ZKL_EINVAL for NULL. Thread-safe. */
ZKL_EXPORT int64_t zkl_mutex_token(zkl_mutex *m);

/* The full path of the calling thread's node, or NULL if it holds nothing.
 * Borrowed: valid until the thread releases. Thread-safe. */
ZKL_EXPORT const char *zkl_mutex_node(zkl_mutex *m);

/* Set the data of the existing znode `path` only if the calling thread still
 * holds `m`, atomically on the server (a multi-op that first checks the
 * holder's own node). Returns 0, ZKL_ENOTHELD, ZKL_ELOST (the hold is gone:
 * nothing was written), ZKL_EINVAL, ZKL_ECONNLOSS (outcome unknown), ZKL_EZK
 * (e.g. `path` does not exist). Thread-safe. */
ZKL_EXPORT int zkl_mutex_guarded_set(zkl_mutex *m, const char *path,
                                     const void *data, int len);

/* Free the mutex. Holds still open are released (best effort). Must not be
 * called while another thread uses the mutex. NULL does nothing. */
ZKL_EXPORT void zkl_mutex_free(zkl_mutex *m);

/* ---- semaphore-mutex and counting semaphore ---------------------------- */

/* ---- read-write lock ---------------------------------------------------- */

/* ---- generic lock interface and multi-lock ----------------------------- */

#ifdef __cplusplus
}
#endif
#endif /* ZKL_H */
