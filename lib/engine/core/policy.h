/* A recipe's policy, and the contenders it decides on: the one thing a
 * recipe tells the engine (DESIGN: every recipe is a small policy on one
 * engine). Pure: the core, the recipes and the tests share it. */
#ifndef ZKL_POLICY_H
#define ZKL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "names.h"

/* Flags of a policy. */
enum {
    /* Its node opens an attempt that another node finishes (a counting
     * semaphore's gate, then its lease): the attempt is counted once, by
     * the last node. */
    ZKL__POL_GATE = 1u << 0
};

/* A recipe's policy: which node kind it creates, and, given the contenders
 * of the lock path in order, whether node `self` holds; if not, which index
 * to watch (always one before `self`). */
typedef struct zkl__policy {
    const char *kind;
    bool (*holds)(const zkl__entry *cs, size_t n, size_t self, size_t *watch, const void *arg);
    /* Nodes of this kind may take the lock when the first node leaves
     * without listing again (PROTOCOL §4): only for kinds that never see
     * a node appear ahead of them. */
    bool handoff;
    /* Optional. When holds() chose to watch a node for which this is true,
     * every such node of the listing is watched (ahead of `self` or not),
     * and any of them changing lists again: for a node that waits until
     * any one of several others goes (a counting semaphore's head waiter
     * and the leases). */
    bool (*watch_group)(const zkl__entry *e, const void *arg);
    unsigned flags; /* ZKL__POL_... */
} zkl__policy;

#endif
