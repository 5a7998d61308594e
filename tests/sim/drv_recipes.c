/* What a worker (a thread of the simulated process) does: one operation at
 * a time, each as the recipe's public call does it (recipes/): the
 * mutex and the prefetch mutex (reentrant per thread), the semaphore-mutex
 * (the object's hold), the counting semaphore (its gate, the limit read
 * sent ahead and filled in if missing, then its lease within the gate's
 * session, then the gate left), the read-write lock (reentry, downgrade
 * with the writer's sequence, upgrade refused), the multi-lock (members in
 * canonical order within one deadline, undone newest first), and the
 * asynchronous acquires (drv_async.c). An operation is a sequence of steps
 * (w->pc); each step starts a primitive of drv_wait.c and the next runs
 * once it is done. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

enum { OP_MUTEX, OP_PREFETCH, OP_MUTEX_B, OP_SEMMUTEX, OP_SEM, OP_READ, OP_WRITE, OP_MULTI,
       OP_A_MUTEX, OP_A_READ, OP_A_WRITE, OP_A_SEM, OP_A_MULTI, OP_BURST, NOPS };

static const char *const op_names[NOPS] = {
    "mutex", "prefetch mutex", "mutex b", "semaphore-mutex", "semaphore", "read lock",
    "write lock", "multi-lock", "async mutex", "async read", "async write", "async semaphore",
    "async multi-lock", "async burst"};

const char *op_name(int op)
{
    return op >= 0 && op < NOPS ? op_names[op] : "?";
}

static const unsigned op_weight[NOPS] = {10, 6, 4, 5, 8, 8, 8, 6, 5, 3, 3, 4, 3, 2};

static int64_t now_of(const struct dwk *w)
{
    return zsim_now(w->cl->d->w);
}

static uint64_t rnd(const struct dwk *w, uint64_t n)
{
    return zsim_below(w->cl->d->w, n);
}

/* A timeout as callers pass them: try once, short, long, or forever. */
static long pick_timeout(const struct dwk *w)
{
    static const long t[] = {0, 10, 100, 500, 2000, 5000, -1};
    static const unsigned wt[] = {2, 2, 3, 4, 4, 2, 1};
    unsigned r = (unsigned)rnd(w, 18);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (r < wt[i])
            return t[i];
        r -= wt[i];
    }
    return 500;
}

static int64_t deadline_of(const struct dwk *w, long timeout_ms)
{
    return timeout_ms < 0 ? ZKL__NO_DEADLINE : now_of(w) + (int64_t)timeout_ms * MS;
}

static int64_t hold_ns(const struct dwk *w)
{
    return (int64_t)rnd(w, 600) * MS + (int64_t)rnd(w, MS);
}

/* ---- holds, as their owners believe them ----------------------------------------- */

static void grant(struct dwk *w, dnode *n, enum hkind kind, int leases)
{
    w->cl->d->acquisitions++;
    check_grant(w->cl->d, n, w->id, kind, leases);
}

static void end_belief(struct dwk *w, dnode *n, const char *why)
{
    if (n != NULL && n->hold != NULL)
        check_end(w->cl->d, n->hold, why);
}

/* The engine wait's options for a reentrant object (a mutex, a side of the
 * read-write lock, a multi-lock's member). */
static void spec_obj(struct dwk *w, int obj)
{
    static const int path[NOBJ] = {P_A, P_A, P_B, P_A, P_B, P_RW, P_RW};
    struct ew *e = &w->ew;
    *e = (struct ew){.path = path[obj], .hooks = true, .prefetch = obj == O_PF,
                     .deadline = w->deadline};
    e->pol = obj == O_RD ? &zkl__read_policy : obj == O_WR ? &zkl__write_policy : &zkl__lock_policy;
    if (obj == O_RD) {
        w->read_down = false;
        e->arg = &w->read_down;
    }
}

static enum hkind kind_of(int obj)
{
    return obj == O_RD ? HK_READ : obj == O_WR ? HK_WRITE : HK_EXCL;
}

static void finish(struct dwk *w)
{
    struct drv *d = w->cl->d;
    if (w->rc != 0)
        d->failures++;
    drv_trace(d, "client %d worker %d: %s done: %s", w->cl->ix, w->id, op_name(w->op),
              w->rc ? zkl_err_name(w->rc) : "ok");
    w->busy = false;
    w->cancel_at = 0;
    w->cancel_fired = false;
    w->phase = W_NONE;
    /* a pause, then the next operation */
    w->timer_at = 0;
    wk_timer(w, now_of(w) + 1 + (int64_t)rnd(w, 400 * MS));
}

/* ---- a reentrant lock: mutex, prefetch mutex, a side of the rwlock --------------- */

/* Steps 0..9 of an operation on one reentrant object: acquire (with
 * reentries), hold, release (every count). `first` is where the caller's
 * own steps go on after the hold's release (-1: done). */
static void reentrant(struct dwk *w, int obj, int after)
{
    switch (w->pc) {
    case 0:
        w->pc = 1;
        spec_obj(w, obj);
        holds_acquire(w, obj);
        break;
    case 1:
        if (w->rc != 0) {
            finish(w);
            return;
        }
        if (w->count[obj] == 1)
            grant(w, w->held[obj], kind_of(obj), 0);
        w->pc = 2;
        break;
    case 2:
        if (w->reenter > 0) {
            w->reenter--;
            holds_acquire(w, obj); /* counts, or ELOST: no traffic */
        } else if (after >= 0) {
            w->pc = after;
        } else {
            w->pc = 3;
            wk_sleep(w, hold_ns(w));
        }
        break;
    case 3:
        if (w->count[obj] == 0) {
            finish(w);
            return;
        }
        if (w->count[obj] == 1 || !node_held(w->held[obj]))
            end_belief(w, w->held[obj], "release");
        w->node = w->held[obj];
        w->pc = 4;
        holds_release(w, obj);
        break;
    case 4:
        if (zkl__release_kept(w->rc)) {
            /* Refused: the node and the hold stay; try again later. */
            grant(w, w->held[obj], kind_of(obj), 0);
            w->pc = 5;
            wk_sleep(w, 100 * MS);
        } else {
            w->pc = 3;
        }
        break;
    case 5:
        w->pc = 3;
        break;
    default:
        break;
    }
}

/* ---- the read-write lock: downgrade and upgrade ------------------------------------ */

static void read_lock(struct dwk *w)
{
    if (w->pc == 0 && w->count[O_WR] > 0 && w->count[O_RD] == 0) {
        /* Downgrade: a plain ephemeral node with the writer's sequence,
         * only from a live write hold and in its session. */
        dnode *wn = w->held[O_WR];
        if (!node_held(wn)) {
            w->rc = ZKL_ELOST;
            w->pc = 3; /* nothing acquired: on to the releases */
            return;
        }
        memcpy(w->seq, wn->name + strlen(wn->name) - 10, 11);
        w->pc = 1;
        spec_obj(w, O_RD);
        w->read_down = true;
        w->ew.fixed_seq = w->seq;
        w->ew.within = wn;
        holds_acquire(w, O_RD);
        return;
    }
    reentrant(w, O_RD, -1);
}

static void write_lock(struct dwk *w)
{
    if (w->pc == 0 && w->count[O_WR] == 0 && w->count[O_RD] > 0) {
        w->rc = ZKL_EDEADLK; /* an upgrade could only wait for itself */
        finish(w);
        return;
    }
    if (w->pc < 10) {
        reentrant(w, O_WR, w->downgrade ? 10 : -1);
        return;
    }
    switch (w->pc) {
    case 10: /* take the read side while holding the write side */
        w->pc = 0;
        read_lock(w);
        if (w->pc == 1)
            w->pc = 11;
        else
            w->pc = 12;
        break;
    case 11:
        if (w->rc == 0 && w->count[O_RD] == 1)
            grant(w, w->held[O_RD], HK_READ, 0);
        w->pc = 12;
        break;
    case 12: /* the write side goes first: the read hold keeps the lock shared */
        if (w->count[O_WR] == 0) {
            w->pc = 14;
            wk_sleep(w, hold_ns(w));
            break;
        }
        end_belief(w, w->held[O_WR], "release");
        w->pc = 13;
        w->count[O_WR] = 1;
        holds_release(w, O_WR);
        break;
    case 13:
        if (zkl__release_kept(w->rc)) {
            grant(w, w->held[O_WR], HK_WRITE, 0);
            w->pc = 12;
            wk_sleep(w, 100 * MS);
        } else {
            w->pc = 12;
        }
        break;
    case 14: /* then the read side, as reentrant()'s releases */
        w->op = OP_READ;
        w->pc = 3;
        break;
    default:
        break;
    }
}

/* ---- the semaphore-mutex: the object's hold ------------------------------------------ */

static void semmutex(struct dwk *w)
{
    struct dcl *c = w->cl;
    switch (w->pc) {
    case 0:
        if (c->sm_acquiring || (c->sm_node != NULL && node_held(c->sm_node))) {
            w->rc = ZKL_EDEADLK;
            finish(w);
            return;
        }
        if (c->sm_node != NULL) {
            w->rc = ZKL_ELOST; /* a lost hold: released (and so acknowledged) first */
            w->pc = 2;
            return;
        }
        c->sm_acquiring = true;
        w->pc = 1;
        w->ew = (struct ew){.pol = &zkl__lock_policy, .path = P_A, .hooks = true,
                            .deadline = w->deadline};
        ew_begin(w);
        break;
    case 1:
        c->sm_acquiring = false;
        if (w->rc != 0) {
            finish(w);
            return;
        }
        c->sm_node = w->node;
        grant(w, w->node, HK_EXCL, 0);
        w->pc = 2;
        wk_sleep(w, hold_ns(w));
        break;
    case 2: {
        dnode *n = c->sm_node;
        c->sm_node = NULL;
        if (n == NULL) {
            finish(w);
            return;
        }
        end_belief(w, n, "release");
        w->pc = 3;
        ew_release(w, n);
        break;
    }
    case 3:
        if (zkl__release_kept(w->rc)) {
            c->sm_node = w->node;
            grant(w, w->node, HK_EXCL, 0);
            w->pc = 2;
            wk_sleep(w, 100 * MS);
        } else {
            finish(w);
        }
        break;
    default:
        break;
    }
}

/* ---- the counting semaphore --------------------------------------------------------- */

/* zkl__znode_fill: the limit node carries the limit, ours or another's.
 * Steps 20..24; w->rc ends at 0 (w->call.data holds the limit) or a code. */
static void fill(struct dwk *w)
{
    const char *path = drv_paths[P_SEM];
    struct dcall *k = &w->call;
    switch (w->pc) {
    case 20:
        if (++w->fill_tries > 20) {
            w->rc = ZKL_EZK;
            w->pc = 25;
            return;
        }
        w->pc = 21;
        wk_call(w, k, CALL_GET, path, NULL, 0, true);
        break;
    case 21:
        if (w->rc != 0) {
            w->pc = 25;
        } else if (k->rc == ZOK && k->len > 0) {
            w->pc = 25;
        } else if (k->rc == ZOK) {
            w->pc = 22; /* there, without data: fill it in unless someone writes first */
            wk_call(w, k, CALL_SET, path, SEM_DATA, k->version, true);
        } else if (k->rc != ZNONODE) {
            w->rc = zkl__zk_class(k->rc);
            w->pc = 25;
        } else {
            w->pc = 23;
            wk_call(w, k, CALL_CREATE, path, SEM_DATA, 0, true);
        }
        break;
    case 22:
    case 23:
        if (w->rc != 0) {
            w->pc = 25;
        } else if (k->rc == ZOK) {
            snprintf(k->data, sizeof k->data, "%s", SEM_DATA);
            k->len = (int)strlen(SEM_DATA);
            w->pc = 25;
        } else if (w->pc == 23 && k->rc == ZNONODE) {
            w->pc = 24;
            wk_call(w, k, CALL_ANCESTOR, "/l", NULL, 0, true);
        } else if (w->pc == 22 ? (k->rc == ZBADVERSION || k->rc == ZNONODE) : k->rc == ZNODEEXISTS) {
            w->pc = 20;
        } else {
            w->rc = zkl__zk_class(k->rc);
            w->pc = 25;
        }
        break;
    case 24:
        w->pc = w->rc != 0 ? 25 : 20;
        break;
    default:
        break;
    }
}

static void semaphore(struct dwk *w)
{
    struct dcl *c = w->cl;
    if (w->pc >= 20 && w->pc < 25) {
        fill(w);
        return;
    }
    switch (w->pc) {
    case 0:
        /* The limit read goes out before the gate's node: answered by the
         * time the gate is ours. */
        wk_call(w, &w->chk, CALL_GET, drv_paths[P_SEM], NULL, 0, false);
        w->ga = (struct zkl__gate_arg){SEM_MAX, w->leases};
        w->ew = (struct ew){.pol = &zkl__gate_policy, .arg = &w->ga, .path = P_SEM,
                            .deadline = w->deadline};
        w->pc = 1;
        ew_begin(w);
        break;
    case 1: {
        if (w->rc != 0) {
            w->chk.seq = 0;
            finish(w);
            return;
        }
        w->gate = w->node;
        int limit = w->chk.done && w->chk.rc == ZOK
                        ? zkl__semaphore_parse_limit(w->chk.data, w->chk.len) : 0;
        w->chk.seq = 0;
        if (limit > 0 && limit != SEM_MAX) {
            w->rc = ZKL_EMISMATCH;
            w->pc = 4;
        } else if (limit <= 0) {
            /* Not read, or not there: the slow way, bounded as a try once
             * is once the deadline passed. */
            w->fill_tries = 0;
            int64_t now = now_of(w);
            w->ew.call_deadline = w->deadline > now ? w->deadline
                                                    : now + (int64_t)c->timeout_ms * MS;
            w->pc = 20;
        } else {
            w->pc = 3;
        }
        break;
    }
    case 25:
        if (w->rc == 0 && zkl__semaphore_parse_limit(w->call.data, w->call.len) != SEM_MAX)
            w->rc = ZKL_EMISMATCH;
        w->pc = w->rc == 0 ? 3 : 4;
        break;
    case 3:
        zkl__lease_kind(w->kind, sizeof w->kind, w->leases);
        w->ew = (struct ew){.pol = &zkl__lease_policy,
                            .arg = &w->ga,
                            .kind = w->kind,
                            .within = w->gate,
                            .path = P_SEM,
                            .hooks = true,
                            .deadline = w->deadline};
        w->pc = 4;
        ew_begin(w);
        break;
    case 4: {
        /* Leaving the gate wakes the next waiter; after a failure the call
         * returns with no node of it left, as far as the connection allows. */
        int rc = w->rc;
        w->lease = rc == 0 ? w->node : NULL;
        w->pc = 5;
        w->ew.grace_rc = rc;
        ew_leave(w, w->gate, rc != 0);
        w->rc = rc;
        break;
    }
    case 5:
        w->gate = NULL;
        w->rc = w->ew.grace_rc;
        if (w->rc != 0) {
            finish(w);
            return;
        }
        grant(w, w->lease, HK_LEASE, w->leases);
        w->pc = 6;
        wk_sleep(w, hold_ns(w));
        break;
    case 6:
        end_belief(w, w->lease, "release");
        w->pc = 7;
        ew_release(w, w->lease);
        break;
    case 7:
        if (zkl__release_kept(w->rc)) {
            grant(w, w->lease, HK_LEASE, w->leases);
            w->pc = 6;
            wk_sleep(w, 100 * MS);
        } else {
            w->lease = NULL;
            finish(w);
        }
        break;
    default:
        break;
    }
}

/* ---- the multi-lock ------------------------------------------------------------------- */

static const int members[2] = {O_MLA, O_MLB}; /* "/l/a" < "/l/b": the canonical order */

static void multilock(struct dwk *w)
{
    switch (w->pc) {
    case 0:
        w->ml_got = 0;
        w->op_rc = 0;
        w->pc = 1;
        break;
    case 1:
        if (w->ml_got == 2) {
            w->ml_count = 1;
            w->pc = 3;
            wk_sleep(w, hold_ns(w));
            break;
        }
        if (w->cancel_fired) {
            w->op_rc = ZKL_ECANCELED;
            w->pc = 4;
            break;
        }
        {
            /* A member gets what is left of the one deadline, rounded up
             * to whole ms; after it, it is tried once. */
            int64_t left = w->deadline - now_of(w);
            long ms = w->timeout_ms < 0 ? -1 : left <= 0 ? 0 : (long)((left + MS - 1) / MS);
            spec_obj(w, members[w->ml_got]);
            w->ew.deadline = deadline_of(w, ms);
            w->pc = 2;
            holds_acquire(w, members[w->ml_got]);
        }
        break;
    case 2:
        if (w->rc != 0) {
            w->op_rc = w->rc; /* all or nothing: undo, newest first */
            w->pc = 4;
            break;
        }
        if (w->count[members[w->ml_got]] == 1)
            grant(w, w->held[members[w->ml_got]], HK_EXCL, 0);
        w->ml_got++;
        w->pc = 1;
        break;
    case 3: /* the last release releases every member, newest first */
        w->ml_count = 0;
        w->pc = 4;
        break;
    case 4:
        if (w->ml_got == 0) {
            w->rc = w->op_rc;
            finish(w);
            return;
        }
        end_belief(w, w->held[members[w->ml_got - 1]], "release");
        w->pc = 5;
        holds_release(w, members[w->ml_got - 1]);
        break;
    case 5:
        if (zkl__release_kept(w->rc)) {
            /* Refused: a member's hold stays, also when undoing a failed
             * acquire (recipes/multilock.c returns the acquire's error and
             * leaves the member held by the thread): the caller releases
             * it again, as one who checks each member's is_held would. */
            grant(w, w->held[members[w->ml_got - 1]], HK_EXCL, 0);
            w->pc = 4;
            wk_sleep(w, 100 * MS);
            break;
        }
        w->ml_got--;
        w->pc = 4;
        break;
    default:
        break;
    }
}

/* ---- the worker's loop ----------------------------------------------------------------- */

static void step(struct dwk *w)
{
    switch (w->op) {
    case OP_MUTEX:
        reentrant(w, O_MX, -1);
        break;
    case OP_PREFETCH:
        reentrant(w, O_PF, -1);
        break;
    case OP_MUTEX_B:
        reentrant(w, O_MB, -1);
        break;
    case OP_READ:
        read_lock(w);
        break;
    case OP_WRITE:
        write_lock(w);
        break;
    case OP_SEMMUTEX:
        semmutex(w);
        break;
    case OP_SEM:
        semaphore(w);
        break;
    case OP_MULTI:
        multilock(w);
        break;
    default: /* asynchronous: the requests run by themselves */
        if (w->nreqs == 0) {
            w->rc = 0;
            finish(w);
        } else {
            w->phase = W_ASYNC;
        }
        break;
    }
}

void wk_flow(struct dwk *w)
{
    if (w->in_flow)
        return;
    w->in_flow = true;
    while (w->busy && w->phase == W_NONE)
        step(w);
    if (w->phase == W_ASYNC && w->nreqs == 0) {
        w->phase = W_NONE;
        w->in_flow = false;
        wk_flow(w);
        return;
    }
    w->in_flow = false;
}

static int pick_op(const struct dwk *w)
{
    unsigned total = 0;
    for (int i = 0; i < NOPS; i++)
        total += op_weight[i];
    unsigned r = (unsigned)rnd(w, total);
    for (int i = 0; i < NOPS; i++) {
        if (r < op_weight[i])
            return i;
        r -= op_weight[i];
    }
    return OP_MUTEX;
}

/* Start the worker's next operation (a pause between two). */
void wk_start(struct dwk *w)
{
    struct dcl *c = w->cl;
    struct drv *d = c->d;
    w->busy = true;
    w->pc = 0;
    w->rc = 0;
    w->phase = W_NONE;
    bool enabled = (d->tape->workers >> (c->ix * DRV_WORKERS + w->id)) & 1;
    if (!enabled || c->retiring || d->settling || c->closing) {
        w->busy = false; /* it rests */
        return;
    }
    w->op = pick_op(w);
    w->timeout_ms = pick_timeout(w);
    w->deadline = deadline_of(w, w->timeout_ms);
    w->reenter = rnd(w, 3) == 0 ? (int)rnd(w, 3) : 0;
    w->downgrade = rnd(w, 3) == 0;
    w->leases = 1 + (int)rnd(w, 2);
    w->cancel_fired = false;
    w->cancel_at = 0;
    if (rnd(w, 7) == 0) {
        /* a cancellable acquire whose handle fires a random while later */
        int64_t in = (int64_t)rnd(w, (uint64_t)(w->timeout_ms > 0 ? w->timeout_ms : 1000)) * MS;
        w->cancel_at = now_of(w) + in;
        zsim_timer(d->w, NULL, w->cancel_at, DRV_TIMER(c, TM_CANCEL, w->id, ++w->cgen));
    }
    drv_trace(d, "client %d worker %d: %s, timeout %ld ms", c->ix, w->id, op_name(w->op),
              w->timeout_ms);
    static const int async_kind[] = {[OP_A_MUTEX] = AQ_MUTEX, [OP_A_READ] = AQ_READ,
                                     [OP_A_WRITE] = AQ_WRITE, [OP_A_SEM] = AQ_SEM,
                                     [OP_A_MULTI] = AQ_MULTI, [OP_BURST] = AQ_BURST};
    if (w->op >= OP_A_MUTEX && w->op <= OP_BURST) {
        int k = w->op == OP_BURST ? 3 + (int)rnd(w, 6) : 1;
        for (int i = 0; i < k; i++) {
            long t = pick_timeout(w);
            int64_t cancel = rnd(w, 6) == 0 ? (int64_t)rnd(w, 1000) * MS : -1;
            aq_start(w, async_kind[w->op], t, hold_ns(w), cancel);
        }
    }
    wk_flow(w);
}
