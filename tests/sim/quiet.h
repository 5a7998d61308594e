/* sim-lib's quiet faults (tests/sim/quiet.c): a follower that stands
 * still for a while, its clients' requests and pings with it, and a
 * client's link that passes what goes one way only (docs/simulation.md). */
#ifndef ZKL_SIM_QUIET_H
#define ZKL_SIM_QUIET_H

#include <stdbool.h>
#include <stdio.h>

#include "zsim.h"

/* A schedule begins on w, with its line of trace (NULL: none). */
void quiet_begin(zsim_world *w, void (*trace)(const char *fmt, ...));

/* A fault, from the world's generator: half the time a follower stands
 * still (zsim_freeze) for 1 ms to 6 s (past the followers' sync limit it
 * drops its clients and syncs again as it thaws), else the link of
 * sessions[i] (i below n, NULL: none) holds what goes to the server
 * (it arrives as the link heals), or to the client (it arrives then, or
 * is lost with the connection), for 1 ms to 8 s. Returns -1 if none began, n for a
 * follower, else the client whose link it is. */
int quiet_start(zsim_session *const *sessions, int n);

/* Each step: a follower thaws and a link heals once its time came (all:
 * every one, now); a link only while sessions[i] is still the one it was
 * aimed at. Returns whether any ended. */
bool quiet_tend(zsim_session *const *sessions, int n, bool all);

/* The run's figures, on a line of out. */
void quiet_report(FILE *out);

#endif
