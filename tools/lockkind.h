/* The kinds of lock `zkl lock` can hold, behind one interface: a mutex, the
 * read or the write side of a read-write lock, a semaphore lease. Public
 * API only. */
#ifndef ZKL_CLI_LOCKKIND_H
#define ZKL_CLI_LOCKKIND_H

#include <stdint.h>

#include "zkl.h"

typedef struct lockkind {
    const char *name; /* for messages: "mutex", "read", "write", "semaphore" */
    /* A new lock object on `path` (permits: the semaphore's N). */
    int (*create)(zkl_client *c, const char *path, long permits, void **out);
    /* As the recipe's acquire and release: from one thread. */
    int (*acquire)(void *obj, long timeout_ms);
    int (*release)(void *obj);
    /* The calling thread's hold: fencing token and node (borrowed). */
    int64_t (*token)(void *obj);
    const char *(*node)(void *obj);
    /* Have `loop_notify(*wfd, LOOP_LOST)` called when a hold of obj is
     * lost (the recipe's lost callback: the session ended, or, where the
     * engine watches a holder's own node, the node was deleted); `wfd`
     * must outlive obj. 0 or a ZKL_E... code. */
    int (*on_lost)(void *obj, int *wfd);
    /* Have `loop_notify(*wfd, LOOP_REVOKE)` called when someone asks a hold
     * of obj to let go (zkl_revoke, Curator's revocation); NULL for a kind
     * without revocation (the semaphore). */
    int (*on_revoke)(void *obj, int *wfd);
    void (*destroy)(void *obj);
} lockkind;

extern const lockkind lockkind_mutex, lockkind_read, lockkind_write, lockkind_semaphore;
/* `zkl elect`'s kind: a latch (tools/electkind.c), whose nodes carry the id
 * given here first (NULL: "host pid"). */
extern const lockkind lockkind_latch;
void lockkind_latch_id(const char *id);

#endif
