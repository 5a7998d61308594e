/* The asynchronous front end's requests (lib/front/async.c), shared with the
 * public calls on a request (lib/front/request.c) and the blocking calls
 * that wait on one (lib/front/wait.c), and no one else. The
 * request's decisions are the core's (lib/engine/core/areq.c); this keeps
 * the lists that carry them out. Everything here is guarded by c->mu. */
#ifndef ZKL_ASYNC_H
#define ZKL_ASYNC_H

#include "areq.h"
#include "front.h"

/* Where a request's callback is. */
enum zkl__callback { ZKL__CB_IDLE, ZKL__CB_RUNNING, ZKL__CB_FREED };

struct zkl_request {
    zkl__areq m;             /* the core's machine: first */
    struct zkl__async *a;    /* the client's asynchronous front (a->c: the client) */
    const zkl__async_step *step; /* or NULL: one node, no steps */
    void *step_ctx;
    zkl_request_fn fn;       /* NULL: a blocking caller waits on it (lib/front/wait.c) ... */
    void *arg;
    pthread_cond_t *wcv;     /* ... on this, woken where a callback would be made ready */
    zkl__node *handed;       /* what ZKL__RE_TAKE handed that caller */
    struct zkl__unmake *unmake; /* refused: the deletes of the lock parents it made */
    uint8_t cb;              /* enum zkl__callback: FREED, freed by its own callback */
    bool in_look, in_ready, in_timed; /* which of the client's lists hold it */
    zkl_request *lnext;      /* a->look or a->ready, never both at once */
    zkl_request *aprev, *anext; /* a->timed */
};

struct zkl__async {
    zkl_client *c;
    zkl_request *look;                /* to judge */
    zkl_request *ready, *ready_tail;  /* to deliver */
    zkl_request *timed;               /* with a deadline to watch */
    int64_t due;                      /* the earliest of those, 0: none */
    int fd;                           /* -1 until zkl_client_event_fd */
    bool dispatching;                 /* zkl_client_dispatch runs */
    bool delivering;                  /* a thread runs callbacks: `runner` */
    pthread_t runner;                 /* the thread running a callback (one at a time) */
};

/* One event for the request's machine, carried out here. */
int zkl__async_on(zkl_request *r, enum zkl__rev_type ev);
/* The same, at a time the caller has just read. */
int zkl__async_on_at(zkl_request *r, enum zkl__rev_type ev, int64_t now);
/* Run the callbacks of the ready requests, c->mu released for each, one
 * at a time: after those another thread runs now. Once the client closes,
 * only the closing thread (`closing`) runs them. */
int zkl__async_deliver(struct zkl__async *a, zkl_client *c, bool closing);
/* The client's async state, made on first use. */
struct zkl__async *zkl__async_of(zkl_client *c);
/* Take the request off the client's lists (it is being freed). */
void zkl__async_unlist(zkl_request *r);
/* Free the request's memory, and its registration as an open object if
 * it has one. */
void zkl__async_free_now(zkl_request *r);

/* Whether r is in the table of open objects, holding its client: a
 * request with a callback is; a blocking caller's is not. */
static inline bool zkl__async_registered(const zkl_request *r)
{
    return r->wcv == NULL;
}

#endif
