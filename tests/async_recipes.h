/* The recipes as the asynchronous suites see them: each recipe's
 * asynchronous acquire, its blocking acquire with a cancel handle, and what
 * blocks it. One row per recipe; check_async runs each of its tests over
 * every row. And what the asynchronous suites share: a request's outcome
 * as its callback saw it. */
#ifndef ZKL_ASYNC_RECIPES_H
#define ZKL_ASYNC_RECIPES_H

#include <pthread.h>
#include <stdbool.h>

#include "testutil.h"

#define PROMPT_MS 10000

/* One request's outcome, as its callback saw it. */
struct res {
    pthread_mutex_t mu;
    int calls;
    int result;
    pthread_t thread;
    zkl_request *r;
    bool free_in_cb; /* the callback frees its request */
};

void res_init(struct res *s);
/* The callback that records into a struct res (arg). */
void on_done(zkl_request *r, int result, void *arg);
int calls_of(struct res *s);
/* Wait for the callback (or fail the test), and return its result. */
int wait_result(struct res *s);
/* A callback that must never run. */
void never(zkl_request *r, int result, void *arg);
bool fd_readable(int fd, int ms);
/* Dispatch (delivery by descriptor) until s's callback ran, once. */
void dispatch_until_called(zkl_client *c, int fd, struct res *s);
/* Wait until the request is no longer held. */
bool request_not_held(void *r);

struct arow;

/* One contender of a row on one client and lock path. */
struct aobj {
    const struct arow *r;
    zkl_client *c;
    char *path;
    void *o;         /* the recipe's object */
    zkl_lock *lock;  /* its handle (NULL for the semaphore) */
    zkl_lease *lease; /* the semaphore's blocking hold */
    char *sub[3];    /* a multi-lock's member paths, below `path` */
    /* The paths whose metrics count a request (a multi-lock: each
     * member's), NULL-terminated, and the one a held request's node is
     * under (a multi-lock: the last member's). */
    const char *counted[4];
    const char *node_path;
};

struct arow {
    const char *name;
    /* The row whose blocking hold makes a request of this one wait, on
     * the lock path with `blocker_leaf` appended (a member's path). */
    int blocker;
    const char *blocker_leaf;
    /* The cancel-handle test fires the later of its two waiters (else
     * the one next in line). */
    bool fire_later;
    void (*open)(struct aobj *o);
    void (*close)(struct aobj *o);
    int (*start)(struct aobj *o, long timeout_ms, zkl_request_fn fn, void *arg,
                 zkl_request **out);
    /* The blocking acquire with a cancel handle (NULL: none), and the
     * release of what it took. */
    int (*acquire_cancellable)(struct aobj *o, long timeout_ms, zkl_cancel *h);
    int (*release)(struct aobj *o);
    /* The row's asynchronous and cancellable calls on a NULL object: each
     * ZKL_EINVAL. */
    void (*null_calls)(void);
};

enum { A_MUTEX, A_SEMMUTEX, A_READ, A_WRITE, A_LEASE, A_MULTI, A_COUNT };
extern const struct arow arows[A_COUNT];

void aobj_open(struct aobj *o, int row, zkl_client *c, const char *path);
void aobj_close(struct aobj *o);
/* The blocking acquire without a handle, or fail the test. */
void aobj_acquire(struct aobj *o, long timeout_ms);

#endif
