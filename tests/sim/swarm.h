/* sim-lib's watches world (tests/sim/swarm.c): a client's swarm of
 * asynchronous acquires whose watches pass a small jute.maxbuffer in one
 * setWatches, and connections dropped often (docs/simulation.md). */
#ifndef ZKL_SIM_SWARM_H
#define ZKL_SIM_SWARM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "zsim.h"

/* The servers' jute.maxbuffer in the schedule of seed: 8 KiB in the
 * watches world (an eighth of the seeds), else 0 (the model's default). */
int32_t swarm_max_buffer(uint64_t seed);

/* A schedule begins on w with nclients clients: whether it is a watches
 * world, which client swarms and how many requests, all from the seed
 * (not the world's generator); its line of trace (NULL: none). */
void swarm_begin(zsim_world *w, uint64_t seed, int nclients,
                 void (*trace)(const char *fmt, ...));

/* The swarm's client, or -1 outside the watches world. */
int swarm_client(void);

/* Each step: whether the swarm's next request starts now (10 to 30 ms
 * after the one before, while any are left): its kind (0 to 3: the
 * mutex, the semaphore-mutex, the read lock, the write lock), its timeout
 * (-1: none, else 1 to 30 s) and how long it holds. */
bool swarm_next(int *kind, long *timeout_ms, int64_t *hold_ns);

/* Each step: the client whose connection drops now (1,500 per million
 * steps, half of them the swarm's client's), or -1. */
int swarm_drop(void);

/* The run's figures, on a line of out. */
void swarm_report(FILE *out);

#endif
