/* The counting semaphore's acquire, written once: an asynchronous request
 * that the blocking call (recipes/semaphore.c) starts and waits for. The
 * request waits on its gate node; once the gate holds, the recorded limit
 * is checked (the read sent before the gate, or, if that found no limit,
 * lib/kit/znode.c's read and conditional write of ours, on the engine),
 * then the lease node is made within the gate's session and the request
 * waits on it; it holds at once, and the gate is left (lib/front/async.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

enum lim { L_PEEK, L_ASKED, L_OK };

struct sem_step {
    zkl_client *c;
    zkl_request *r;
    char *path;
    struct zkl__gate_arg ga; /* the gate node's policy argument */
    char kind[32];
    char want[32];           /* the limit as recorded */
    struct zkl__batch *chk;  /* the read sent before the gate, or NULL */
    enum lim lim;
    int lim_rc;              /* the limit check failed: why */
    struct zkl__fill *fill;  /* the limit's read (and write) out, or NULL */
    const zkl__node *lease;
    zkl__owner *own;         /* a blocking caller's semaphore: the lease's hooks */
};

static void step_free(struct sem_step *st)
{
    zkl__znode_fill_drop(st->fill);
    zkl__batch_drop(st->chk);
    free(st->path);
    free(st);
}

/* The limit the node records, ours or another client's (c->mu held). */
static void limit_known(void *arg, int err, const char *data, int len)
{
    struct sem_step *st = arg;
    st->fill = NULL;
    if (err != 0)
        st->lim_rc = err;
    else if (zkl__semaphore_parse_limit(data, len) == st->ga.max)
        st->lim = L_OK;
    else
        st->lim_rc = ZKL_EMISMATCH;
    zkl__kit_async_poke(st->r);
}

static int step_held(void *ctx, zkl_request *r, zkl__node *n, zkl__node **next, bool *counted)
{
    struct sem_step *st = ctx;
    st->r = r;
    if (n == st->lease)
        return 0; /* the lease holds: deliver (the gate is left) */
    if (st->lim_rc != 0)
        return st->lim_rc;
    if (st->lim == L_PEEK) {
        const char *data;
        int len, limit = zkl__get_peek(st->chk, &data, &len)
                             ? zkl__semaphore_parse_limit(data, len) : 0;
        zkl__batch_drop(st->chk);
        st->chk = NULL;
        if (limit != 0 && limit != st->ga.max)
            return ZKL_EMISMATCH;
        if (limit == st->ga.max) {
            st->lim = L_OK;
        } else {
            st->lim = L_ASKED;
            /* Sent now: the gate holds in the live session. */
            int err = 0;
            st->fill = zkl__znode_fill_start(st->c, st->path, st->want, limit_known, st, &err);
            return st->fill != NULL ? 1 : err;
        }
    }
    if (st->lim != L_OK)
        return 1; /* its answer is still to come */
    /* Only the gate holder creates leases, and only within the gate's
     * session: after an expiry the gate is someone else's. */
    zkl__qopts lo = {.kind = st->kind, .arg = &st->ga, .within = n};
    if (st->own != NULL)
        zkl__owner_arm(st->own, &lo);
    zkl__node *lease;
    int rc = zkl__kit_async_enqueue(r, st->path, &zkl__lease_policy, &lo, &lease);
    if (rc != 0) {
        *counted = true; /* the enqueue counted it */
        return rc;
    }
    st->lease = lease;
    *next = lease;
    return 0;
}

static void step_drop(void *ctx)
{
    step_free(ctx); /* a limit answer still out frees itself */
}

static const zkl__async_step sem_steps = {step_held, step_drop, false};

int zkl__semaphore_start_async(zkl_client *c, const char *path, int max, int n,
                               long timeout_ms, zkl__owner *own, zkl_request_fn fn, void *arg,
                               zkl_request **out)
{
    if (out == NULL || n < 1 || n > max)
        return ZKL_EINVAL;
    struct sem_step *st = calloc(1, sizeof *st);
    if (st == NULL || (st->path = strdup(path)) == NULL) {
        free(st);
        return ZKL_ENOMEM;
    }
    st->c = c;
    st->own = own;
    st->ga = (struct zkl__gate_arg){max, n};
    zkl__lease_kind(st->kind, sizeof st->kind, n);
    snprintf(st->want, sizeof st->want, "max_leases=%d", max);
    /* Sent before the gate: answered by the time the gate holds. */
    st->chk = zkl__get_ahead(c, path);
    zkl__qopts go = {.arg = &st->ga};
    int rc = zkl__kit_async_start_steps(c, path, &zkl__gate_policy, &go, timeout_ms, &sem_steps, st, 2,
                                    fn, arg, out);
    if (rc != 0)
        step_free(st);
    return rc;
}
