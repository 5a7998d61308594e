/* Counters and histograms of lock acquisitions, per client and per lock
 * path (lib/metrics/metrics.c), fed by the engine at node level so that every
 * recipe is counted without code of its own. Every function here is called
 * with c->mu held (but zkl__metrics_snapshot); none allocates except the
 * first use of a lock path. */
#ifndef ZKL_METRICS_H
#define ZKL_METRICS_H

#include "internal.h"

/* The lock counters of a client or of one lock path. */
struct zkl__lockm {
    uint64_t acquired, timeouts, cancels, failures, losses, handoffs, releases, requests;
    zkl_histogram wait, hold;
};

/* A node's acquisition begins: find (or make) its lock path's counters,
 * and note the start (unless n->m_start was set already, at the call).
 * Nothing when the client's metrics are off. An acquire path calls it once
 * the node has its client and dir, then zkl__metrics_acquire_end once. */
ZKL__HIDDEN void zkl__metrics_acquire_begin(zkl__node *n);
/* An acquire of node n finished with rc (0: held, handed to the caller).
 * Counts the outcome; for 0, the wait and whether it was a handoff. Any
 * acquire path, blocking or not, calls it once per attempt. */
ZKL__HIDDEN void zkl__metrics_acquire_end(zkl__node *n, int rc);
/* A hold the caller had ends (released, lost and released, given up). */
ZKL__HIDDEN void zkl__metrics_released(zkl__node *n);
/* A hold the caller had was lost (session end, node deleted by others). */
ZKL__HIDDEN void zkl__metrics_lost(zkl__node *n);
/* A request for node n was sent: counted for the client and its path. */
ZKL__HIDDEN void zkl__metrics_sent(zkl__node *n);
/* One lock path's counters, copied. */
struct zkl__path_snap {
    char *path;
    struct zkl__lockm k;
};
/* Copies of the client's stats (st may be NULL), of its lock counters over
 * every path (total may be NULL) and of every tracked lock path's counters,
 * sorted by path, taken at one moment; called WITHOUT c->mu. Returns 0,
 * ZKL_ENOMEM or ZKL_EFORK. */
ZKL__HIDDEN int zkl__metrics_snapshot(zkl_client *c, zkl_client_stats *st,
                                      struct zkl__lockm *total, struct zkl__path_snap **out,
                                      size_t *n);
ZKL__HIDDEN void zkl__metrics_snapshot_free(struct zkl__path_snap *v, size_t n);
/* The client closes: free its metrics. */
ZKL__HIDDEN void zkl__metrics_free(zkl_client *c);

#endif
