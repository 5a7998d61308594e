/* An asynchronous request's machine (areq.c): a request waits on its node
 * instead of a thread; every decision about it (held, failed and cleaned
 * up, timed out, cancelled, granted but lost before it was told, released,
 * lost while held) is made here, without I/O. Its front end
 * (lib/front/async.c) feeds it events and carries out its actions: the
 * recipe's step, the node calls, the delivery of its result and the timer.
 * Pure, like the rest of the core. */
#ifndef ZKL_AREQ_H
#define ZKL_AREQ_H

#include "core.h"

enum zkl__rstate {
    ZKL__R_PENDING,  /* its node is queued (or a step's answer is awaited) */
    ZKL__R_CLEANING, /* it failed: its nodes are being deleted */
    ZKL__R_READY,    /* a result to deliver */
    ZKL__R_HELD,     /* delivered held */
    ZKL__R_LOSING,   /* held, then lost: the loss is to be told */
    ZKL__R_LOST,     /* ... and was told; release says ZKL_ELOST */
    ZKL__R_DONE,     /* delivered failed, released, or freed */
    ZKL__R_COUNT
};

/* Why a request ends besides its node's verdict. */
enum zkl__rend {
    ZKL__END_NONE,
    ZKL__END_CANCEL, /* zkl_request_cancel */
    ZKL__END_LOST    /* a member lost before delivery, or no memory to take one */
};

typedef struct zkl__areq {
    struct zkl__core *core;
    zkl__cnode *n;      /* the node it waits on, NULL once given back */
    zkl__cnode **kept;  /* the steps' held nodes, oldest first */
    int64_t deadline;   /* its deadline; CLEANING: how long it waits for its deletes */
    int result;
    uint32_t qlen;      /* failed: the failed node's listing length (ZKL_EQUEUE) ... */
    int16_t zk_rc;      /* ... and the ZooKeeper code behind its error, for a waiter */
    uint8_t nkept;
    uint8_t st;         /* enum zkl__rstate: only areq.c's move writes it */
    uint8_t end;        /* enum zkl__rend */
    bool counted;       /* the attempt's outcome went to the metrics */
    bool stepped;       /* the recipe takes steps (a gate, then a lease) */
    bool keep_held;     /* the kept nodes are part of the hold (a multi-lock's) */
    bool tell_loss;     /* a loss while held is told (ZKL__R_LOSING) */
    bool unmaking;      /* CLEANING: the front's deletes of the lock parents the
                           refused attempt made are unanswered (front-written) */
} zkl__areq;

/* What the machine asks its front end to do. */
enum zkl__ract_type {
    ZKL__RA_STEP,     /* the recipe's step for held node n: returns 0 (and *next,
                         a node to wait on instead, or NULL: deliver), 1 (an answer
                         is awaited: an event comes), or a ZKL_E... code */
    ZKL__RA_TAKE,     /* n's hold is taken: 0 or ZKL_ENOMEM */
    ZKL__RA_COUNT,    /* the attempt ended with rc, counted on n */
    ZKL__RA_RELEASED, /* n's hold ends (metrics) */
    ZKL__RA_LEAVE,    /* n is given up: no node of it may stay */
    ZKL__RA_DETACH,   /* the request is done with n */
    ZKL__RA_READY,    /* the result is to be delivered */
    ZKL__RA_UNREADY,  /* ... no longer */
    ZKL__RA_TIMER,    /* be woken at `at` (ZKL__NO_DEADLINE: listed, no time) */
    ZKL__RA_UNTIMED,  /* no timer any more */
    ZKL__RA_LOOK,     /* be judged again soon */
    ZKL__RA_HAND      /* held node n is handed to the blocking caller (ZKL__RE_TAKE) */
};

typedef struct zkl__ract {
    enum zkl__ract_type type;
    zkl__areq *r;
    zkl__cnode *n;
    int rc;
    int64_t at;
    int64_t now;       /* the time of the event that led to it */
    zkl__cnode **next; /* ZKL__RA_STEP: where the step puts its next node */
} zkl__ract;

typedef int (*zkl__rsink_fn)(void *ctx, const zkl__ract *a);

/* Events, each with the time; all but LOOK and FREE return the call's result. */
enum zkl__rev_type {
    ZKL__RE_LOOK,    /* its node (or a step's answer) woke it, or its time came */
    ZKL__RE_DELIVER, /* its result is about to be delivered: 1 to deliver it */
    ZKL__RE_CANCEL,  /* zkl_request_cancel: 0, ZKL_EBUSY (held), ZKL_EINVAL (done) */
    ZKL__RE_RELEASE, /* zkl_request_release: 0, ZKL_ELOST, ZKL_ECLOSED, ZKL_ENOTHELD */
    ZKL__RE_FREE,    /* zkl_request_free: everything goes */
    ZKL__RE_TAKE     /* a blocking caller takes the result instead of a callback:
                        READY only (else 1: not yet); the result, and when 0 the
                        held node is the caller's (r->n, handed over, neither left
                        nor detached: a lock object keeps it) and the request DONE */
};

/* Set a request up around its first node. */
void zkl__areq_init(zkl__areq *r, zkl__cnode *n, zkl__cnode **kept, int64_t deadline,
                    bool stepped, bool keep_held, bool tell_loss);
/* One event: the machine's one entry. */
int zkl__areq_on(zkl__areq *r, enum zkl__rev_type ev, int64_t now, zkl__rsink_fn sink,
                 void *ctx);
/* When a caller waiting on the request, which it just looked at (LOOK),
 * the clock read as `now` before that look, must look again if nothing
 * wakes it: its deadline, or
 * ZKL__NO_DEADLINE for none. A look past the deadline ends the attempt or
 * moves the deadline to the end of the failed attempt's grace, but for a
 * step's next node, judged at the next look: then (and for a machine that
 * left its deadline behind in any other way) one grace from now, so that
 * no wait is unbounded once the caller's deadline passed. */
int64_t zkl__areq_due(const zkl__areq *r, int64_t now);
/* Whether it holds now: delivered held, and its nodes all hold. */
bool zkl__areq_holds(const zkl__areq *r);
/* Whether the table allows the move (zkl__core_rmoves counts those taken). */
bool zkl__areq_legal(int from, int to);

#endif
