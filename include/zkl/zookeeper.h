/*
 * zkl/zookeeper.h — the bridge between zkl and the ZooKeeper C client's own
 * types. Include it only where a zhandle_t or a zoo_op_t is needed.
 */
#ifndef ZKL_ZOOKEEPER_H
#define ZKL_ZOOKEEPER_H

#include <zookeeper/zookeeper.h>

#include "../zkl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Build a client on a handle the caller already opened (libzookeeper_mt).
 * zkl takes over the handle's session watcher (the previous one is put back
 * by zkl_client_close) and never closes the handle; after the session
 * expires the client stays in ZKL_STATE_LOST, as only the owner of the
 * handle can open a new session. For the same reason such a client never
 * gives a suspended session up by itself: it waits for the server's verdict
 * (reconnected or expired). Returns 0, ZKL_EINVAL, ZKL_ENOMEM,
 * ZKL_ELOST (the handle's session already ended), ZKL_ESYS. */
ZKL_EXPORT int zkl_client_wrap(zhandle_t *zh, zkl_client **out);

/* The handle of the client's current session. Borrowed: it changes when
 * the client re-opens after expiry, and is closed by zkl_client_close()
 * unless it was wrapped. NULL for NULL. The client's keeper thread may
 * close it at any moment (a session given up or expired), even during a
 * call on it: zkl_client_handle_borrow is the safe way to use it while the
 * client runs. */
ZKL_EXPORT zhandle_t *zkl_client_handle(zkl_client *c);

/* Lend the handle of the client's current session: *out is a handle that
 * the client does not close until it is given back with
 * zkl_client_handle_return (a re-open after expiry, or zkl_client_close,
 * waits for that), so calls on it are safe from any thread meanwhile (if
 * its session ended, they fail with a ZooKeeper code). Give it back soon:
 * while a loan is out the client cannot replace an expired session, so a
 * thread with a loan must not wait for a new one (an acquire). Each successful borrow needs one return; borrow and
 * return may be on different threads. zkl_client_close waits until every
 * loan is back: return before closing, or close from another thread.
 * Returns 0, ZKL_EINVAL (NULL c or out), ZKL_ELOST (no handle now: the
 * session was given up or expired and no new one is open yet; try again
 * later), ZKL_ECLOSED (zkl_client_close has begun), ZKL_EFORK (a client of
 * a parent process). *out is NULL on failure. Thread-safe. */
ZKL_EXPORT int zkl_client_handle_borrow(zkl_client *c, zhandle_t **out);

/* Give back a handle that zkl_client_handle_borrow lent. NULL c or zh, or
 * a client of a parent process (after fork), does nothing. Thread-safe. */
ZKL_EXPORT void zkl_client_handle_return(zkl_client *c, zhandle_t *zh);

/* Run `ops` (count >= 1) as one ZooKeeper multi-op that the server applies
 * only if the calling thread still holds `m`: a check of the holder's own
 * node goes first. `results` (may be NULL) receives count results.
 * Returns 0, ZKL_ENOTHELD, ZKL_ELOST (the hold is gone: nothing applied),
 * ZKL_EINVAL (NULL, count < 1, an op of a type a multi-op cannot carry, a
 * path the server refuses, or a request over the limit of
 * zkl_client_opts_set_max_request: nothing is sent), ZKL_ECONNLOSS (outcome
 * unknown), ZKL_ENOAUTH, ZKL_EZK (an op failed; see results, and
 * zkl_last_zk_error()). Thread-safe. */
ZKL_EXPORT int zkl_mutex_guarded_multi(zkl_mutex *m, int count, const zoo_op_t *ops,
                                       zoo_op_result_t *results);

/* As zkl_mutex_guarded_multi, for the calling thread's write hold of a
 * read-write lock: the server applies `ops` only while the writer's node
 * exists. ZKL_ENOTHELD if the thread holds no write lock (a read hold does
 * not count). Thread-safe. */
ZKL_EXPORT int zkl_rwlock_write_guarded_multi(zkl_rwlock *rw, int count,
                                              const zoo_op_t *ops,
                                              zoo_op_result_t *results);

/* As zkl_mutex_guarded_multi, for the hold of a semaphore-mutex object
 * (whichever thread acquired it): ZKL_ENOTHELD if the object holds nothing.
 * A release from another thread waits for it to finish. Thread-safe. */
ZKL_EXPORT int zkl_semmutex_guarded_multi(zkl_semmutex *s, int count, const zoo_op_t *ops,
                                          zoo_op_result_t *results);

/* As zkl_mutex_guarded_multi, guarded by a lease's node: the server applies
 * `ops` only while the lease is held. ZKL_ELOST once it is lost. */
ZKL_EXPORT int zkl_lease_guarded_multi(zkl_lease *l, int count, const zoo_op_t *ops,
                                       zoo_op_result_t *results);

#ifdef __cplusplus
}
#endif
#endif
