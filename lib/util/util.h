/* The bottom layer: time and deadlines, ZooKeeper's codes, paths and node
 * names, the calling thread's error details, randomness, intrusive lists.
 * Depends on nothing else of the library. */
#ifndef ZKL_UTIL_H
#define ZKL_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "list.h"
#include "names.h"
#include "zkl.h"

#define ZKL__HIDDEN __attribute__((visibility("hidden")))

/* ---- new objects ---------------------------------------------------------------- */

/* How a zkl_<noun>_new starts: a new zeroed object of `size` bytes; or
 * NULL, with ZKL_EINVAL in *rc if `args_ok` (the call's arguments, its out
 * pointer first) is false, else ZKL_ENOMEM. */
static inline void *zkl__new_zeroed(bool args_ok, size_t size, int *rc)
{
    void *p = args_ok ? calloc(1, size) : NULL;
    *rc = !args_ok ? ZKL_EINVAL : p == NULL ? ZKL_ENOMEM : 0;
    return p;
}

/* ---- time (time.c) ---------------------------------------------------------- */

#define ZKL__NO_DEADLINE INT64_MAX
/* CLOCK_MONOTONIC in nanoseconds. */
int64_t zkl__now_ns(void);
/* One absolute deadline for a call: forever for timeout < 0, now for 0. */
int64_t zkl__deadline(long timeout_ms);
/* The same, from a time the caller has just read. */
int64_t zkl__deadline_at(long timeout_ms, int64_t now);
/* What is left at `now` of the deadline a call with timeout_ms made, in
 * milliseconds rounded up (never less than what is left): 0 once past (a
 * try once), -1 (forever) for a negative timeout_ms. */
long zkl__remaining_ms(long timeout_ms, int64_t deadline, int64_t now);
/* Wait on cv (created by zkl__cond_init) until signalled or the deadline;
 * returns 0, or ETIMEDOUT once the deadline has passed. */
int zkl__cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline);
int zkl__cond_init(pthread_cond_t *cv);
/* Virtual time, for a program that runs the library in one thread, every
 * step chosen by its own scheduler (the simulation, tests/sim/sim_lib.c):
 * the clock, the waits on it (entered with mu held, which the hook may
 * release meanwhile; 0, or ETIMEDOUT once the deadline has passed) and the
 * randomness the library draws, instead of the real ones. Set before any
 * client opens, NULL again after the last closes; never in production. */
struct zkl__virtual {
    int64_t (*now)(void *arg);
    int (*wait)(void *arg, pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline);
    void (*random)(void *arg, void *buf, size_t size);
    void *arg;
};
void zkl__set_virtual(const struct zkl__virtual *v);
extern const struct zkl__virtual *zkl__virtual;

/* ---- the loss rule and the grace (loss.h, loss.c: pure) ------------------------ */

#include "loss.h"

/* ---- ZooKeeper's codes (zkcode.c: pure; detail.c) ------------------------------ */

/* The ZKL_E... class of a ZooKeeper return code (0 for ZOK). */
int zkl__zk_class(int rc);
/* The request's outcome is unknown, but the session may live on: what
 * maps to ZKL_ECONNLOSS. */
bool zkl__zk_conn_error(int rc);
/* The session is gone (or the handle closing): what maps to ZKL_ELOST. */
bool zkl__zk_session_error(int rc);
/* zkl__zk_class, noting the code for the calling thread (ZKL_EZK notes it
 * for zkl_last_zk_error()). */
int zkl__err_from_zk(int rc);

/* ---- paths (path.c) ----------------------------------------------------------- */

#define ZKL__MAX_PATH 1024
/* 0 if `path` is an absolute, normalised ZooKeeper path that zkl accepts
 * as a lock path; else ZKL_EINVAL with the reason as the thread's detail. */
int zkl__path_check(const char *path);
/* What the server refuses in any path it is sent (not only lock paths):
 * 0, or ZKL_EINVAL with the reason in why (if not NULL). */
int zkl__path_check_server(const char *path, char *why, size_t whylen);
/* New string "dir/name" (malloc), or NULL. */
char *zkl__path_join(const char *dir, const char *name);

/* ---- randomness (random.c) ------------------------------------------------------ */

/* `size` bytes from the kernel (or, without it, from the clock and pid). */
void zkl__random(void *buf, size_t size);
/* A fresh random lowercase uuid, 36 chars + NUL. */
void zkl__random_uuid(char out[37]);

/* ---- details of the calling thread's failure (detail.c) -------------------------- */

/* Set the text zkl_last_error_text() returns. */
void zkl__detail(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
/* Record `rc` as the ZooKeeper code behind a ZKL_EZK the thread returns. */
void zkl__detail_zk(int rc);
/* Record `rc`, the ZooKeeper code behind an acquire's failure under
 * `path`, with a sentence that says what it means where zkl knows. */
void zkl__detail_failed(int rc, const char *path);
/* The text of ZKL_EQUEUE: `path` has `children`, a listing over `limit`
 * bytes. */
void zkl__detail_queue(const char *path, long children, long limit);
/* zkl__err_from_zk notes every code it maps, in the thread that maps it:
 * the engine keeps the one behind a failure for its caller's thread. */
void zkl__note_mapped(int rc);
int zkl__last_mapped(void);

#endif
