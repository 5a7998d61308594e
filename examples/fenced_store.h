/*
 * fenced_store — a file that only the current holder of a lock can write.
 *
 * A lock service cannot stop a holder that was paused (a long stall, a
 * SIGSTOP, a full disk) from waking up and writing after its lock expired
 * and passed to someone else. The resource has to refuse such a write
 * itself. zkl gives every hold a fencing token (zkl_mutex_token: the czxid
 * of the holder's node), and successive holders of one lock path get
 * strictly increasing tokens. So the resource:
 *
 *   1. keeps the highest token it has accepted;
 *   2. refuses a write whose token is lower;
 *   3. does the comparison and the write as one atomic step of its own
 *      (here: under an exclusive flock(2) on the file; in a database: one
 *      transaction, e.g. UPDATE ... WHERE fence <= :token).
 *
 * Equal tokens are accepted: one holder may write many times.
 *
 * File format: a fixed-size header line "fence <20-digit token>\n", then a
 * journal of accepted writes, one "<token> <who> <data>\n" line each. The
 * journal lets tests check the order of what was accepted.
 */
#ifndef FENCED_STORE_H
#define FENCED_STORE_H

#include <stdint.h>

/* fenced_store_write: returns 0 when written, FENCED_STALE when `token` is
 * lower than the highest one accepted (nothing written), or -errno. */
#define FENCED_STALE 1
int fenced_store_write(const char *path, int64_t token, const char *who, const char *data);

/* The highest token accepted so far (0 for a new or missing store), or
 * -errno. */
int64_t fenced_store_fence(const char *path);

#endif
