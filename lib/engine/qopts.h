/* What an acquire asks of its node: the arguments the front ends, the kit
 * and the recipes hand the engine (lib/engine/engine.h), apart from the
 * engine's structs, so that a recipe, which sees the kit's header only,
 * can fill them in. A node is opaque here. */
#ifndef ZKL_QOPTS_H
#define ZKL_QOPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "zkl.h"

typedef struct zkl__node zkl__node;

/* A hook of a node's owner: called on the client's keeper thread with no zkl
 * lock held, with the node (valid for the call), its token and the owner's
 * `hook_arg`. */
typedef void (*zkl__node_fn)(zkl__node *n, int64_t token, void *arg);
/* How an asynchronous waiter is told to look at its node again (any thread,
 * c->mu held): it must only take note and wake whoever judges. */
typedef void (*zkl__wake_fn)(zkl__node *n, void *arg);

/* What an acquire asks of its node (lib/front/, lib/kit/, recipes/). */
typedef struct zkl__qopts {
    const void *arg;       /* passed to policy->holds */
    bool prefetch;         /* also watch the node two ahead */
    const char *fixed_seq; /* a plain ephemeral node with this 10-digit sequence
                              instead of a sequential one (read-lock downgrade) */
    const char *kind;      /* the node's kind instead of the policy's; copied */
    const char *ident;     /* the node's data instead of the client's "host pid"; copied */
    const zkl__node *within; /* enqueue only while this node, held by the caller,
                                belongs to the live session; else ZKL_ELOST */
    /* Once the node is held: on_lost is called once if it is lost (the
     * session ended, or someone else deleted it); on_revoke when someone
     * writes the revocation request ("__REVOKE__") into it. Both stop when
     * the node is released or given up: once zkl__node_release or
     * zkl__node_leave returned, neither is running or will run. */
    zkl__node_fn on_lost, on_revoke;
    void *hook_arg;
    zkl_cancel *cancel;    /* a blocking acquire ends with ZKL_ECANCELED once it fires */
    bool tell_lost;        /* an asynchronous request tells a held node's loss to its
                              callback, whatever the client's option (a latch) */
    zkl__wake_fn wake;     /* an asynchronous waiter's wake-up (not a thread) */
    void *wake_arg;
} zkl__qopts;

#endif
