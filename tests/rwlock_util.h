/* Helpers of the read-write lock suites (check_rwlock*): waits with
 * deadlines, shared memory for worker processes, and an acquire in a
 * background thread that holds until told to release. */
#ifndef ZKL_RWLOCK_UTIL_H
#define ZKL_RWLOCK_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "testutil.h"

/* Wait until `path` has exactly `want` children, or fail the test. */
void wait_children(const char *path, int want);
/* The calling thread's holds of rw (read, write: 1 or 0) and the nodes
 * under `path` are these, or the test fails. */
void expect_holds(zkl_rwlock *rw, const char *path, int read, int write, int nodes);
/* The server's 10-digit sequence of a node path (borrowed from it). */
const char *seq_of(const char *node);

/* The lock's two sides, as the suites' tables see them: [0] read, [1]
 * write. */
struct side {
    const char *name;
    const char *kind; /* in its nodes' names */
    int (*acquire)(zkl_rwlock *rw, long timeout_ms);
    int (*release)(zkl_rwlock *rw);
    int (*is_held)(zkl_rwlock *rw);
    int64_t (*token)(zkl_rwlock *rw); /* tu_rwlock_*_token */
    const char *(*node)(zkl_rwlock *rw);
};
extern const struct side sides[2];

/* Clients that contend for one lock path (under the fixture's root), a
 * read-write lock each, sessions of session_ms. */
struct rwset {
    char *p;
    int n;
    zkl_client *c[3];
    zkl_rwlock *rw[3];
};

void rwset_open(struct rwset *s, const char *leaf, int n, int session_ms);
/* Check that no node is left under the path, and free it all (a client
 * already closed and its lock freed are NULL). */
void rwset_close(struct rwset *s);

/* An acquire in a thread of its own that holds until bg_finish(). */
struct bg {
    zkl_rwlock *rw;
    int write;       /* 1: write_acquire, 0: read_acquire */
    long timeout_ms;
    int rc;
    int got;         /* set once the acquire returned 0 */
    int release;     /* the main thread asks the holder to release */
    int released_rc;
    pthread_t t;
};

void bg_start(struct bg *b, zkl_rwlock *rw, int write, long timeout_ms);
/* The acquire returned 0 (for tu_wait_until). */
bool bg_got(void *arg);
/* Ask the holder to release and join its thread (released_rc says how). */
void bg_finish(struct bg *b);

#endif
