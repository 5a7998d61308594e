/* The recipes as check_common sees them: every recipe through its zkl_lock
 * handle, and small adapters for what the handle lacks (lost callback,
 * token, guarded write, the recipe's own argument checks). One row per
 * recipe; check_common runs each of its tests over every row. */
#ifndef ZKL_COMMON_RECIPES_H
#define ZKL_COMMON_RECIPES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "zkl.h"

/* What a lost callback was told. Shared with the client's keeper thread:
 * read it with lost_calls()/lost_token(). */
struct lost_log {
    pthread_mutex_t mu;
    int calls;
    int64_t token;  /* of the latest call */
    int write;      /* read-write lock: the latest call's side */
    const void *expect; /* the recipe object the calls must name */
    int wrong_obj;  /* calls that named another object */
};

struct recipe;

/* One contender: a recipe object on one client and one lock path, with its
 * generic handle. */
struct obj {
    const struct recipe *r;
    zkl_client *c;
    char *path;    /* the lock path (a multi-lock's members are below it) */
    void *o;       /* the recipe's own object (the lease adapter's state) */
    void *self;    /* what the lost callback names (the recipe object) */
    zkl_lock *lock;
    char *sub[2];  /* a multi-lock's member paths */
};

struct recipe {
    const char *name;
    int blocker;       /* the row whose hold makes this one wait */
    int hold_nodes;    /* nodes one hold keeps on the server */
    bool per_thread;   /* a hold belongs to the thread (else to the object) */
    bool reentrant;    /* a holder's second acquire only counts, and a release
                          of a lost hold clears it whatever the count */
    bool lost_refuses_acquire; /* acquire on a lost hold is ZKL_ELOST */
    bool object_survives_release; /* releasing twice is meaningful (a lease
                                     is freed by its release) */
    int lost_write;    /* the `write` its lost callback gets; -1 if none */
    /* Make o->o and o->lock on o->c and o->path; asserts success. */
    void (*open)(struct obj *o);
    void (*close)(struct obj *o);
    /* NULL when the recipe has none. */
    int (*set_lost)(struct obj *o, struct lost_log *l);
    int64_t (*token)(struct obj *o);
    int (*guarded_set)(struct obj *o, const char *path, const void *data, int len);
    const char *(*node)(struct obj *o); /* the calling thread's node, or NULL */
    /* The constructor with `path` (and `c`, which may be NULL); out NULL if
     * null_out. Returns its code; asserts nothing came out on failure. */
    int (*try_new)(zkl_client *c, const char *path, bool null_out);
    /* The recipe's calls on NULL objects, each with its documented answer. */
    void (*null_calls)(void);
    /* Calls on the good, unheld object `o` with bad arguments: each is
     * ZKL_EINVAL and sends nothing (checked by the caller). */
    void (*bad_args)(struct obj *o);
};

enum { R_MUTEX, R_PREFETCH, R_SEMMUTEX, R_LEASE, R_READ, R_WRITE, R_MULTI, R_COUNT };
extern const struct recipe recipes[R_COUNT];

/* The leases a lease row's contender takes at once, of as many. */
enum { LEASES = 3 };

int lost_calls(struct lost_log *l);
int64_t lost_token(struct lost_log *l);

void obj_open(struct obj *o, int row, zkl_client *c, const char *path);
void obj_close(struct obj *o);

#endif
