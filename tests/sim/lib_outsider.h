/* sim-lib's outsider who changes a lock path's ACL or deletes its parent
 * (tests/sim/lib_outsider.c). */
#ifndef ZKL_SIM_LIB_OUTSIDER_H
#define ZKL_SIM_LIB_OUTSIDER_H

#include <stdbool.h>
#include <stdint.h>

#include "zsim.h"

typedef void (*lout_trace_fn)(const char *fmt, ...);

/* A schedule's start: the world, the lock paths whose ACL the outsider
 * may change, those it may delete, and where its acts are told. */
void lout_begin(zsim_world *w, const char *const *acl_dirs, int nacl, const char *const *dirs,
                int ndirs, lout_trace_fn trace);
/* One act: an ACL on a lock path or one of its nodes that refuses the
 * library something, put back a while later, or the path deleted if
 * empty (now and then made again soon after). */
void lout_fault(void);
/* An ACL act as lout_fault's on one of dirs (not those of lout_begin),
 * every choice drawn by below(n) (0 to n-1): a generator of the caller's
 * own, so that the world's draws stay what they were. */
void lout_acl_fault(const char *const *dirs, int ndirs, uint64_t (*below)(uint64_t n));
/* The ACLs whose time came put back (all: every one, now), and a deleted
 * path made again when due. */
void lout_heal(bool all);
/* Whether an ACL of the outsider's was in effect at some instant from
 * `since` to now (a refusal is allowed then). */
bool lout_refused(int64_t since);
/* Virtual time some ACL of the outsider's was in effect, in all so far. */
int64_t lout_marred_ns(void);
/* The acts so far in this schedule. */
uint64_t lout_acts(void);

#endif
