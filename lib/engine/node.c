/* A node as its caller sees it: made, started (its create sent), given up,
 * taken, released, asked about. The caller's side of the core's machine:
 * each call here is one event for it. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int zkl__node_make(const zkl__policy *pol, const zkl__qopts *o, bool try_once, zkl__node **out)
{
    zkl__node *n = calloc(1, sizeof *n);
    if (n == NULL)
        return ZKL_ENOMEM;
    n->cn.pol = pol;
    n->cn.arg = o ? o->arg : NULL;
    n->cn.prefetch = o && o->prefetch;
    n->cn.patience = try_once ? ZKL__P_ONCE : ZKL__P_DEADLINE;
    n->meter.gate = (pol->flags & ZKL__POL_GATE) != 0;
    if (o && o->ident && (n->ident = strdup(o->ident)) == NULL) {
        free(n);
        return ZKL_ENOMEM;
    }
    if (o && (o->on_lost || o->on_revoke)) {
        if ((n->hooks = calloc(1, sizeof *n->hooks)) == NULL) {
            free(n->ident);
            free(n);
            return ZKL_ENOMEM;
        }
        n->hooks->on_lost = o->on_lost;
        n->hooks->on_revoke = o->on_revoke;
        n->hooks->arg = o->hook_arg;
        n->hooks->n = n;
    }
    if (o && o->wake) {
        n->wake = o->wake;
        n->wake_arg = o->wake_arg;
    }
    *out = n;
    return 0;
}

/* Between make and start the core does not know the node yet: its options
 * wait in the node's own fields, and the lock path in `dir`. */
static int link_node(struct zkl__engine *e, zkl__node *n, const char *dir, const zkl__qopts *o)
{
    zkl__cnode_opts co = {.pol = n->cn.pol,
                          .arg = n->cn.arg,
                          .dir = dir,
                          .kind = o ? o->kind : NULL,
                          .fixed_seq = o ? o->fixed_seq : NULL,
                          .prefetch = n->cn.prefetch,
                          .try_once = n->cn.patience == ZKL__P_ONCE};
    return zkl__cnode_init(e->core, &n->cn, &co);
}

static int state_err(zkl_client *c)
{
    if (c->closing)
        return ZKL_ECLOSED;
    if (c->state == ZKL_STATE_LOST || c->zh == NULL)
        return ZKL_ELOST;
    if (c->cancelled)
        return ZKL_ECANCELED;
    return 0;
}

int zkl__node_start(zkl_client *c, zkl__node *n, const char *dir, const zkl__qopts *o)
{
    int64_t now = zkl__now_ns();
    /* A semaphore's lease continues the attempt its gate began. */
    if (o && o->within) {
        n->meter.at = o->within->meter.at;
        n->meter.waited = o->within->meter.waited;
    }
    int err = state_err(c);
    struct zkl__engine *e = c->closing ? NULL : zkl__engine_of(c);
    if (err == 0 && e == NULL)
        err = ZKL_ENOMEM;
    /* Work done under a node (a semaphore's gate) must not spill over into
     * a later session, where that node no longer protects it. */
    if (err == 0 && o && o->within && !zkl__node_is_held(o->within))
        err = ZKL_ELOST;
    if (err == 0)
        err = link_node(e, n, dir, o);
    if (err != 0) {
        if (!c->metrics_off && e != NULL) {
            zkl__metrics_acquire_begin(&e->metrics, &n->meter, dir, (size_t)c->metric_paths, now);
            zkl__metrics_acquire_end(e->metrics, &n->meter, err, now);
        }
        free(n->hooks);
        free(n->ident);
        free(n);
        return err;
    }
    if (!c->metrics_off)
        zkl__metrics_acquire_begin(&e->metrics, &n->meter, dir, (size_t)c->metric_paths, now);
    zkl__cnode_start(&n->cn, now);
    return 0;
}

static void event(zkl__node *n, enum zkl__ev_type type, int64_t now)
{
    zkl__cnode_on(&n->cn, &(zkl__event){.type = type, .now = now});
}

void zkl__node_leave(zkl__node *n, int64_t now)
{
    event(n, ZKL__E_LEAVE, now);
}

int zkl__node_taken(zkl__node *n, int64_t now)
{
    char buf[ZKL__MAX_PATH + 96];
    if (zkl__cnode_path(&n->cn, NULL, buf, sizeof buf) == NULL ||
        (n->path = strdup(buf)) == NULL)
        return ZKL_ENOMEM;
    n->meter.held = true;
    event(n, ZKL__E_TAKEN, now);
    return 0;
}

bool zkl__node_releasing(const zkl__node *n)
{
    uint8_t st = n->cn.st;
    return zkl__cnode_current(&n->cn) &&
           (st == ZKL__N_RELEASING || st == ZKL__N_DELETING || st == ZKL__N_BACKOFF);
}

int zkl__node_released(const zkl__node *n)
{
    if (n->broken)
        zkl__detail("an internal error of zkl's lock engine (counted in zkl_metrics' faults) "
                    "made it presume this hold lost");
    if (n->cn.st != ZKL__N_GONE)
        return ZKL__NODE_CLIENT(n)->closing ? ZKL_ECLOSED : ZKL_ELOST;
    return n->cn.err;
}

void zkl__node_release(zkl__node *n, int64_t now)
{
    event(n, ZKL__E_RELEASE, now);
}

/* The caller is done with n: it may be freed by this call. */
void zkl__node_detach(zkl__node *n, int64_t now)
{
    n->wake = NULL;
    n->cv = NULL;
    event(n, ZKL__E_DETACH, now);
}

bool zkl__node_is_held(const zkl__node *n)
{
    return n->cn.st == ZKL__N_HELD && zkl__cnode_current(&n->cn);
}

bool zkl__node_current(const zkl__node *n)
{
    return zkl__cnode_current(&n->cn);
}

bool zkl__node_refused(const zkl__node *n, int *err)
{
    if (n->cn.st != ZKL__N_HELD || !zkl__cnode_current(&n->cn) || n->cn.err == 0)
        return false;
    *err = n->cn.err;
    return true;
}

void zkl__node_count_end(zkl__node *n, int rc, int64_t now)
{
    if (n->cn.core != NULL)
        zkl__metrics_acquire_end(ZKL__NODE_ENGINE(n)->metrics, &n->meter, rc, now);
}

void zkl__node_count_released(zkl__node *n, int64_t now)
{
    if (n->cn.core != NULL)
        zkl__metrics_released(ZKL__NODE_ENGINE(n)->metrics, &n->meter, now);
}

int zkl__node_held(const zkl__node *n)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    if (zkl__forked(c))
        return 0; /* a child of fork(): the parent's */
    pthread_mutex_lock(&c->mu);
    int held = zkl__node_is_held(n) && c->state != ZKL_STATE_LOST;
    pthread_mutex_unlock(&c->mu);
    return held;
}

int zkl__node_sure(const zkl__node *n)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    if (zkl__forked(c))
        return 0;
    pthread_mutex_lock(&c->mu);
    int sure = zkl__node_is_held(n) && zkl__engine_connected(c);
    pthread_mutex_unlock(&c->mu);
    return sure;
}

int64_t zkl__node_token(const zkl__node *n)
{
    return n->cn.token;
}

const char *zkl__node_path(const zkl__node *n)
{
    return n->path;
}

zkl_client *zkl__node_client(const zkl__node *n)
{
    return ZKL__NODE_CLIENT(n);
}
