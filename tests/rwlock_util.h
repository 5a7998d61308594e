/* Helpers of the read-write lock suites (check_rwlock*): waits with
 * deadlines, shared memory for worker processes, and an acquire in a
 * background thread that holds until told to release. */
#ifndef ZKL_RWLOCK_UTIL_H
#define ZKL_RWLOCK_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "testutil.h"

zkl_client_stats stats_of(zkl_client *c);
/* Wait until `path` has exactly `want` children, or fail the test. */
void wait_children(const char *path, int want);
/* The server's 10-digit sequence of a node path (borrowed from it). */
const char *seq_of(const char *node);
/* A new file for shared state, zero-filled and mapped; its name in file. */
void *new_shared(char file[64], size_t size);
/* Wait until client c has sent n requests and the server answered them. */
void wait_requests(zkl_client *c, uint64_t n);

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
