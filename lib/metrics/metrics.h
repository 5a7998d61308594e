/* Counters and histograms of lock acquisitions, per client and per lock
 * path (lib/metrics/metrics.c), and their Prometheus text
 * (lib/metrics/prometheus.c). The engine feeds them at node level, so that
 * every recipe is counted without code of its own; the public calls that
 * read them are lib/front/stats.c's. Every function here is called with
 * the client's lock held, but the snapshot's readers and the text. None
 * allocates but the first use of a lock path. */
#ifndef ZKL_METRICS_H
#define ZKL_METRICS_H

#include <stdbool.h>
#include <stdio.h>

#include "util.h"

/* The lock counters, in zkl_metrics' order: X(field, help). Each is a
 * uint64_t field of struct zkl__lockm and of zkl_metrics, and the
 * Prometheus family zkl_lock_<field>_total. Listed once, so that a new
 * counter cannot be copied into one place and forgotten in another. */
#define ZKL__LOCK_COUNTERS(X)                                                                      \
    X(acquired, "Acquire attempts that returned the lock held.")                                   \
    X(timeouts, "Acquire attempts that timed out.")                                                \
    X(cancels, "Acquire attempts cancelled by zkl_client_cancel.")                                 \
    X(failures, "Acquire attempts that failed for another reason.")                                \
    X(losses, "Holds lost while held (session end, node deleted).")                                \
    X(handoffs, "Acquisitions that waited behind another holder first.")                           \
    X(releases, "Holds ended.")                                                                    \
    X(requests, "Requests sent for lock queue nodes.")                                             \
    X(faults, "Internal errors of the engine: a state change its table forbids.")

/* The client's counters: X(zkl_client_stats field, zkl_metrics field,
 * help), the Prometheus family zkl_client_<stats field>_total. */
#define ZKL__CLIENT_COUNTERS(X)                                                                    \
    X(requests, requests_all, "Requests sent to ZooKeeper.")                                       \
    X(creates, creates, "Contender nodes created.")                                                \
    X(deletes, deletes, "Contender nodes deleted.")                                                \
    X(listings, listings, "Listings of lock paths.")                                               \
    X(watch_events, watch_events, "Watch events that woke a waiting contender.")                   \
    X(sessions, sessions, "Sessions opened.")                                                      \
    X(recovered, recovered, "Creates whose answer was lost and whose node was found again.")

/* The lock counters of a client or of one lock path. */
struct zkl__lockm {
#define ZKL__LOCKM_FIELD(field, help) uint64_t field;
    ZKL__LOCK_COUNTERS(ZKL__LOCKM_FIELD)
#undef ZKL__LOCKM_FIELD
    zkl_histogram wait, hold;
};

/* The metrics of one client: made on first use (NULL until then). */
struct zkl__metrics;

/* What one attempt, then its hold, carries for the metrics. */
typedef struct zkl__meter {
    struct zkl__lockm *pm; /* its lock path's counters, or NULL */
    int64_t at;            /* when the attempt began, then the hold */
    bool on;               /* counted: the metrics were on at its start */
    bool waited;           /* the policy said "wait" at least once */
    bool held;             /* its hold was taken by the caller */
    bool gate;             /* no hold of its own: it opens another node's attempt */
} zkl__meter;

/* An attempt begins on lock path `dir` at `now` (unless mt->at is set
 * already): find or make the path's counters, if fewer than `max_paths`
 * paths have theirs (else the attempt counts in the totals only); *m is
 * made on first use. */
void zkl__metrics_acquire_begin(struct zkl__metrics **m, zkl__meter *mt, const char *dir,
                                size_t max_paths, int64_t now);
/* The attempt ended with rc (0: held, handed to the caller). */
void zkl__metrics_acquire_end(struct zkl__metrics *m, zkl__meter *mt, int rc, int64_t now);
/* A hold the caller had ends (released, lost and released, given up). */
void zkl__metrics_released(struct zkl__metrics *m, zkl__meter *mt, int64_t now);
/* A hold the caller had was lost (session end, node deleted by others). */
void zkl__metrics_lost(struct zkl__metrics *m, zkl__meter *mt);
/* The engine broke its state table on mt's node (mt may be NULL); *m is
 * made on first use. */
void zkl__metrics_fault(struct zkl__metrics **m, zkl__meter *mt);
/* A request was sent for the attempt (mt may be NULL: the client's only). */
void zkl__metrics_sent(struct zkl__metrics *m, zkl__meter *mt);
void zkl__metrics_free(struct zkl__metrics *m);

/* The client's totals and one lock path's counters, copied. */
bool zkl__metrics_total(const struct zkl__metrics *m, struct zkl__lockm *out);
bool zkl__metrics_path(const struct zkl__metrics *m, const char *path, struct zkl__lockm *out);

/* Every lock path's counters, copied and sorted by path. */
struct zkl__path_snap {
    char *path;
    struct zkl__lockm k;
};
int zkl__metrics_snapshot(const struct zkl__metrics *m, struct zkl__path_snap **out, size_t *n);
void zkl__metrics_snapshot_free(struct zkl__path_snap *v, size_t n);

/* Prometheus text of a snapshot, the client's lock totals (NULL: none yet)
 * and its stats: into buf (counting what does not fit in *pos) or into f.
 * 0, or ZKL_ENOMEM / ZKL_ESYS. */
int zkl__metrics_text(const zkl_client_stats *st, const struct zkl__lockm *total,
                      const struct zkl__path_snap *v, size_t n, char *buf, size_t len,
                      size_t *pos, FILE *f);

#endif
