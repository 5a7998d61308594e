/* sim-lib's world beyond its clients (tests/sim/crowd.c): crowds of
 * another program's contenders on a queue, and the 32-bit wrap of the
 * lock paths' sequence counters (docs/simulation.md). */
#ifndef ZKL_SIM_CROWD_H
#define ZKL_SIM_CROWD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "zsim.h"

/* Where the schedule of seed starts every new node's sequence counter
 * (zsim_config's cversion_start): 0, or for a sixth of the seeds within
 * 100 of 2^31-1 (a third of those within 8), so that the lock paths'
 * queues pass the wrap. */
int32_t crowd_wrap_start(uint64_t seed);

/* A schedule begins on w: whether crowds come in it (half the seeds),
 * and its line of trace (NULL: none). */
void crowd_begin(zsim_world *w, uint64_t seed, void (*trace)(const char *fmt, ...));

/* A fault: in the schedules with crowds, one at a time, 1 to 32 faults
 * apart (the first 0 to 31 faults in; its queue and size too from the
 * seed), a crowd of 100 to 400 contenders of another program joins the
 * queue of one of the n lock paths dirs, in the protocol of the newest
 * contender of ours there (none: at the next fault): true if one did. */
bool crowd_join(const char *const *dirs, int n);
/* The same crowd at once, whatever the count of faults or the schedule
 * (none while one is there): a replay that says where crowds come. */
bool crowd_join_now(const char *const *dirs, int n);

/* Each step: the crowd's next member leaves its queue once its time
 * came, from the head, 1 ns to 20 ms after the one before (the first 50
 * ms after the crowd came); all: every one left leaves at once (the
 * faults end). */
void crowd_tend(bool all);

/* Whether path (a node's) is a crowd member's. */
bool crowd_member(const char *path);

/* Whether name (a child's) is one the server gave past the wrap: "%010d"
 * of a negative counter, a '-' and ten digits after the kind (which ends
 * in '-' or '_' in every recipe). */
bool seq_wrapped(const char *name);

/* The leader made or deleted a node: a create of one of our sessions'
 * given a name past the wrap is noted under its parent. */
void wrap_note(const struct zsim_change *ch);

/* Whether a create of one of our sessions under dir was given a name past
 * the wrap in this schedule. */
bool wrap_seen(const char *dir);

/* The run's figures, on a line of out. */
void crowd_report(FILE *out);

#endif
