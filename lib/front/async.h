/* lib/front/async.c's requests, shared with lib/front/async_req.c (the public calls on
 * a request, and delivery by descriptor) and no one else. Everything here
 * is guarded by c->mu. */
#ifndef ZKL_ASYNC_H
#define ZKL_ASYNC_H

#include "front.h"

enum rstate { R_PENDING, R_CLEANING, R_READY, R_HELD, R_DONE };

struct zkl_request {
    zkl_client *c;
    struct zkl__async *a;
    zkl__node *n; /* NULL once given back to the engine */
    zkl__node **kept; /* the steps' held nodes, oldest first */
    size_t nkept;
    const zkl__async_step *step; /* or NULL: one node, no steps */
    void *step_ctx;
    zkl_request_fn fn;
    void *arg;
    enum rstate st;
    int result;
    bool cancel;   /* zkl_request_cancel: the result is ZKL_ECANCELED */
    bool lost_late; /* granted, then a member lost before delivery */
    bool try_once; /* timeout 0: only the policy's first answer */
    bool counted;  /* its outcome went to the metrics */
    bool running;  /* its callback runs, on `runner` */
    bool freed;    /* freed by its own callback: the dispatcher frees it */
    /* which of the client's lists hold it (the links below) */
    bool in_look, in_ready, in_timed;
    pthread_t runner;
    int64_t deadline, grace;
    int64_t token;
    char *path;    /* its node's path once granted */
    zkl_request *lnext; /* a->look, while in_look */
    zkl_request *rnext; /* a->ready, while in_ready */
    zkl_request *aprev, *anext; /* a->timed (PENDING or CLEANING), while in_timed */
};

struct zkl__async {
    zkl_client *c;
    zkl_request *look;                /* to judge */
    zkl_request *ready, *ready_tail;  /* to deliver */
    zkl_request *timed;               /* with a deadline to watch */
    int64_t due;                      /* the earliest of those, 0: none */
    int fd;                           /* -1 until zkl_client_event_fd */
    bool dispatching;                 /* zkl_client_dispatch runs */
};

ZKL__HIDDEN void zkl__areq_look_push(struct zkl__async *a, zkl_request *r);
ZKL__HIDDEN void zkl__areq_look_remove(struct zkl__async *a, zkl_request *r);
ZKL__HIDDEN void zkl__areq_ready_remove(struct zkl__async *a, zkl_request *r);
ZKL__HIDDEN void zkl__areq_timed_add(struct zkl__async *a, zkl_request *r, int64_t at);
ZKL__HIDDEN void zkl__areq_timed_remove(struct zkl__async *a, zkl_request *r);
/* Give the request's nodes back to the engine. */
ZKL__HIDDEN void zkl__areq_detach(zkl_request *r);
ZKL__HIDDEN void zkl__areq_free_now(zkl_request *r);
/* Run the callbacks of the ready requests, c->mu released for each. */
ZKL__HIDDEN int zkl__areq_deliver(struct zkl__async *a, zkl_client *c);
/* The client's async state, made on first use. */
ZKL__HIDDEN struct zkl__async *zkl__areq_async_of(zkl_client *c);
ZKL__HIDDEN bool zkl__areq_node_holds(const zkl__node *n);
ZKL__HIDDEN bool zkl__areq_kept_hold(const zkl_request *r);

#endif
