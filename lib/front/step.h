/* What the front ends take from their callers and tell them, apart from
 * the front's and the engine's structs (lib/front/front.h), so that a
 * recipe, which sees the kit's header only, can use them: a recipe's
 * acquire, an asynchronous acquire's steps, a release's code. */
#ifndef ZKL_STEP_H
#define ZKL_STEP_H

#include <pthread.h>
#include <stdbool.h>

#include "qopts.h"
#include "zkl.h"

/* A recipe's blocking acquire of its object, with a cancel handle (NULL:
 * none). */
typedef int (*zkl__acquire_fn)(void *obj, long timeout_ms, zkl_cancel *h);

/* Start an acquire's asynchronous request: zkl__async_start_steps with fn
 * NULL and arg `cv`, given the timeout left. */
typedef int (*zkl__start_fn)(void *ctx, long timeout_ms, pthread_cond_t *cv, zkl_request **out);

/* A release's code that kept the node, still held (zkl__wait_release). */
static inline bool zkl__release_kept(int rc)
{
    return rc != 0 && rc != ZKL_ELOST && rc != ZKL_ECLOSED && rc != ZKL_EFORK;
}

/* An asynchronous acquire in steps (a semaphore: its gate node, then its
 * lease node). `held` runs when the request's node holds, c->mu held and
 * sending allowed (the keeper thread, the closing one, or the blocking
 * caller waiting on the request): it returns 0 to
 * deliver the request held; 0 with *next set to a node it enqueued
 * (zkl__async_enqueue) for the request to wait on instead, the held one
 * kept until the request is delivered (then left) or fails (then deleted
 * with it); 1 to wait for zkl__async_poke; or a ZKL_E... code to fail,
 * setting *counted if the metrics have the attempt's outcome already.
 * `drop` frees ctx once the request is freed. */
typedef struct zkl__async_step {
    int (*held)(void *ctx, zkl_request *r, zkl__node *n, zkl__node **next, bool *counted);
    void (*drop)(void *ctx);
    /* The kept nodes are part of the hold (a multi-lock's members): they
     * stay until the request is released, and each counts as a hold. */
    bool keep_held;
} zkl__async_step;

#endif
