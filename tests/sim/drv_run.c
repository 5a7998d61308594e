/* One schedule: a world (3 servers), its clients, the steps of the tape
 * (each: the world's generator seeded from the step, a fault if the tape
 * has one, one step of the world, every driver timer that came due, the
 * invariants), then the end: faults healed, outsiders gone, operations
 * finished, the invariants of a settled world, every client closed. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"

const char *const drv_paths[NPATHS] = {"/l/a",   "/l/b", "/l/rw",
                                       "/l/sem", "/l/q", "/l/latch"};

#define HEAL_IX 0xff
#define SETTLE_LIMIT (120 * SEC)

struct sinfo *drv_sinfo(struct drv *d, int ix)
{
    if ((size_t)ix >= d->nsess) {
        size_t n = d->nsess ? d->nsess : 64;
        while (n <= (size_t)ix)
            n *= 2;
        d->sess = realloc(d->sess, n * sizeof *d->sess);
        if (d->sess == NULL)
            abort();
        memset(d->sess + d->nsess, 0, (n - d->nsess) * sizeof *d->sess);
        d->nsess = n;
    }
    return &d->sess[ix];
}

void drv_trace(struct drv *d, const char *fmt, ...)
{
    if (!d->o->trace)
        return;
    fprintf(d->o->out, "%10.6f %6lld  ", (double)zsim_now(d->w) / SEC, (long long)d->step);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(d->o->out, fmt, ap);
    va_end(ap);
    fputc('\n', d->o->out);
}

void drv_violation(struct drv *d, int kind, const char *fmt, ...)
{
    if (d->violated)
        return;
    d->violated = true;
    d->v.kind = kind;
    d->v.step = d->step;
    d->v.settling = d->settling;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->v.text, sizeof d->v.text, fmt, ap);
    va_end(ap);
    drv_trace(d, "VIOLATION (%s): %s", violation_names[kind], d->v.text);
}

static void world_line(void *arg, const char *line)
{
    struct drv *d = arg;
    fprintf(d->o->out, "%10.6f %6lld    . %s\n", (double)zsim_now(d->w) / SEC, (long long)d->step,
            line);
}

/* zkl_client_open: a client of its own core and first session. */
struct dcl *drv_client_new(struct drv *d, int ix)
{
    struct dcl *c = calloc(1, sizeof *c);
    if (c == NULL)
        abort();
    c->d = d;
    c->ix = ix;
    c->serial = ++d->serials;
    uint64_t seed[4];
    for (int i = 0; i < 4; i++)
        seed[i] = zsim_rand(d->w);
    c->core = zkl__core_new(drv_sink, c, seed);
    if (c->core == NULL)
        abort();
    zkl__core_set_max_request(c->core, 0xfffff);
    c->gen = 1;
    c->state = ZKL_STATE_CONNECTING;
    static const int timeouts[] = {600, 1000, 1500, 2000, 3000};
    c->timeout_ms = timeouts[zsim_below(d->w, 5)];
    int64_t now = zsim_now(d->w);
    zkl__core_session(c->core, c->gen, 0, false, now);
    zkl__core_connection(c->core, false, now);
    c->nwk = 2 + (int)zsim_below(d->w, DRV_WORKERS - 1);
    for (int i = 0; i < c->nwk; i++) {
        c->wk[i].wt.run = wk_resume;
        c->wk[i].cl = c;
        c->wk[i].id = i;
        c->wk[i].bound = ZKL__NO_DEADLINE;
    }
    drv_trace(d, "client %d (serial %d): open, session timeout %d ms", ix, c->serial,
              c->timeout_ms);
    drv_session_start(c);
    latch_begin(c);
    return c;
}

void drv_client_free(struct dcl *c)
{
    struct drv *d = c->d;
    aq_free_all(c);
    for (struct dhold *h = d->holds, *next; h; h = next) {
        next = h->next;
        if (h->cl == c)
            check_end(d, h, "its client closed");
    }
    zkl__core_drop_nodes(c->core);
    zkl__core_free(c->core);
    for (size_t i = 0; i < d->nsess; i++)
        if (d->sess[i].owner == c)
            d->sess[i].owner = NULL;
    free(c->slots);
    free(c);
}

/* ---- items and timers -------------------------------------------------------------- */

static void heal_timer(struct drv *d, int64_t at, int kind, int who)
{
    zsim_timer(d->w, NULL, at,
               (uint64_t)HEAL_IX << 48 | (uint64_t)kind << 40 | (uint64_t)(who & 0xffff) << 24);
}

/* ---- aimed faults and crowds ---------------------------------------------------------- */

/* The children of a lock path that end in a sequence, lowest first. */
struct kids {
    char (*v)[160];
    int64_t *seq;
    size_t n, cap;
};

static void kid_add(void *arg, const char *name)
{
    struct kids *k = arg;
    size_t len = strlen(name);
    if (len < 10 || len >= sizeof k->v[0] || strspn(name + len - 10, "0123456789") != 10)
        return;
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 64;
        k->v = realloc(k->v, k->cap * sizeof *k->v);
        k->seq = realloc(k->seq, k->cap * sizeof *k->seq);
        if (k->v == NULL || k->seq == NULL)
            abort();
    }
    int64_t seq = strtoll(name + len - 10, NULL, 10);
    size_t i = k->n++;
    for (; i > 0 && k->seq[i - 1] > seq; i--) {
        k->seq[i] = k->seq[i - 1];
        memcpy(k->v[i], k->v[i - 1], sizeof k->v[i]);
    }
    k->seq[i] = seq;
    memcpy(k->v[i], name, len + 1);
}

static void kids_free(struct kids *k)
{
    free(k->v);
    free(k->seq);
}

/* An outsider acts right at the head of a queue (b even: the holder's
 * node) or just ahead of a waiter (its predecessor): deletes it, changes
 * its data or ACL, or plants a node that ties with its sequence. */
static void aim(struct drv *d, const struct tape_step *ts)
{
    const char *dir = drv_paths[ts->target % NPATHS];
    struct kids k = {0};
    zsim_truth_children(d->w, dir, kid_add, &k);
    if (k.n > 0) {
        size_t at = (ts->b & 1) == 0 || k.n < 2 ? 0 : (size_t)zsim_below(d->w, k.n - 1);
        char path[200];
        snprintf(path, sizeof path, "%s/%s", dir, k.v[at]);
        drv_trace(d, "fault: an outsider aims at %s (%s)", path, at ? "a predecessor" : "the head");
        zsim_outsider_at(d->w, path);
    }
    kids_free(&k);
}

#define CROWD_UUID "0dd0dd00-0000-4000-8000-000000000000"

static bool crowd_node(const char *name)
{
    return strncmp(name, "_c_" CROWD_UUID "-", 40) == 0;
}

/* Hundreds of contenders of another program's join a queue, of the kind
 * of one waiting there, and leave it one by one from its head (drain). */
static void crowd(struct drv *d, const struct tape_step *ts)
{
    int p = ts->target % NPATHS;
    struct kids k = {0};
    zsim_truth_children(d->w, drv_paths[p], kid_add, &k);
    /* waiters: the newest contender's kind, not a semaphore's lease (no
     * more leases than its limit exist: a waiter takes one once it fits) */
    const char *kind = NULL;
    for (size_t i = k.n; i-- > 0 && kind == NULL;)
        if (strncmp(k.v[i], "_c_", 3) == 0 && strlen(k.v[i]) > 50 && !crowd_node(k.v[i]) &&
            strstr(k.v[i] + 40, "lease") == NULL)
            kind = k.v[i];
    if (kind != NULL) {
        int many = 100 + (int)zsim_below(d->w, 300);
        char path[200];
        snprintf(path, sizeof path, "%s/_c_" CROWD_UUID "-%.*s", drv_paths[p],
                 (int)(strlen(kind) - 50), kind + 40);
        drv_trace(d, "fault: a crowd of %d joins %s", many, drv_paths[p]);
        for (int i = 0; i < many; i++)
            zsim_outsider_create(d->w, path, "", 0, &ZSIM_OPEN_ACL_UNSAFE,
                                 ZSIM_EPHEMERAL_SEQUENTIAL, NULL, 0);
        heal_timer(d, zsim_now(d->w) + 50 * MS, TM_DRAIN, p);
    }
    kids_free(&k);
}

static void drain(struct drv *d, int p)
{
    struct kids k = {0};
    zsim_truth_children(d->w, drv_paths[p], kid_add, &k);
    size_t i = 0;
    while (i < k.n && !crowd_node(k.v[i]))
        i++;
    if (i < k.n) {
        char path[200];
        snprintf(path, sizeof path, "%s/%s", drv_paths[p], k.v[i]);
        zsim_outsider_delete(d->w, path, -1);
        heal_timer(d, zsim_now(d->w) + 1 + (int64_t)zsim_below(d->w, 20 * MS), TM_DRAIN, p);
    }
    kids_free(&k);
}

static void timer(struct drv *d, uint64_t tag)
{
    int ix = (int)((tag >> 48) & 0xff) - 1, kind = (int)((tag >> 40) & 0xff);
    int who = (int)((tag >> 24) & 0xffff), serial = (int)(tag >> 56);
    uint32_t gen = (uint32_t)(tag & 0xffffff);
    if (ix == HEAL_IX - 1) {
        if (kind == TM_HEAL_LINK || kind == TM_HEAL_ARM) {
            struct sinfo *si = drv_sinfo(d, who);
            if (si->s != NULL)
                zsim_link(si->s, true);
            if (si->owner != NULL)
                si->owner->link_back = zsim_now(d->w); /* its 2T/3 of silence start again */
            if (kind == TM_HEAL_ARM && si->s != NULL)
                zsim_cut_after_sync(si->s, 2 * (int64_t)zsim_recv_timeout(si->s) * MS);
        } else if (kind == TM_HEAL_CUT) {
            zsim_partition(d->w, who, false);
        } else if (kind == TM_THAW) {
            zsim_freeze(d->w, who, false);
        } else if (kind == TM_DRAIN) {
            drain(d, who);
        } else if (kind == TM_RESUME && who < d->nclients && d->cl[who] != NULL) {
            drv_hold(d->cl[who]);
        }
        return;
    }
    if (ix < 0 || ix >= d->nclients)
        return;
    struct dcl *c = d->cl[ix];
    if (c == NULL || (c->serial & 0xff) != serial || c->gone)
        return;
    if (zsim_now(d->w) < c->paused_until) {
        /* no thread of it runs; when they do, in any order (the keeper's
         * and the callbacks' threads race) */
        zsim_timer(d->w, NULL, c->paused_until + 1 + (int64_t)zsim_below(d->w, 5 * MS), tag);
        return;
    }
    switch (kind) {
    case TM_KEEPER:
        if (gen == (c->kgen & 0xffffff))
            drv_keeper(c);
        break;
    case TM_WORKER:
        if (who < c->nwk && gen == (c->wk[who].tgen & 0xffffff))
            wk_fire(&c->wk[who]);
        break;
    case TM_CANCEL:
        if (who < c->nwk && gen == (c->wk[who].cgen & 0xffffff) && c->wk[who].busy) {
            drv_trace(d, "client %d worker %d: its cancel handle fires", c->ix, who);
            c->wk[who].cancel_fired = true;
            wk_fire(&c->wk[who]);
        }
        break;
    case TM_REQ: {
        struct dreq *r = aq_by_id(c, who);
        if (r != NULL)
            aq_timer(r, gen);
        break;
    }
    case TM_LATCH:
        latch_timer(c, who, gen);
        break;
    default:
        break;
    }
    drv_run_woken(c);
}

static void dispatch(struct drv *d, const struct zsim_item *it)
{
    if (it->kind == ZSIM_TIMER) {
        timer(d, it->tag);
        return;
    }
    struct dcl *c = drv_sinfo(d, zsim_session_index(it->session))->owner;
    if (c != NULL && !c->gone)
        drv_item(c, it);
}

/* ---- faults --------------------------------------------------------------------------- */

static void lead_stall(struct drv *d, int64_t until)
{
    if (until <= d->lead_back)
        return;
    if (d->lead_back <= zsim_now(d->w)) /* ended: a try once's silence counts from it */
        d->lead_back_was = d->lead_back;
    d->lead_back = until;
}

/* The keeper's ticks come late by ns until `until`: no less late than
 * before while a tick made late before may still be pending, which the
 * told invariant allows for by the client's late_ns. */
static void late_set(struct dcl *c, int64_t until, int64_t ns)
{
    if (zsim_now(c->d->w) <= c->late_until + c->late_ns && c->late_ns > ns)
        ns = c->late_ns;
    if (until > c->late_until)
        c->late_until = until;
    c->late_ns = ns;
}

/* The client of a live hold (the target-th, round), else the target's. */
static struct dcl *holder(struct drv *d, int target)
{
    int n = 0;
    for (struct dhold *h = d->holds; h; h = h->next)
        n += h->live && !h->cl->gone;
    if (n == 0)
        return d->cl[target % d->nclients];
    int k = target % n;
    for (struct dhold *h = d->holds; h; h = h->next)
        if (h->live && !h->cl->gone && k-- == 0)
            return h->cl;
    return NULL;
}

/* The earliest expiry the server allows, aimed at a holder. Its
 * requests go unheard from right after its next keepalive reached the
 * server (a silent link one way) while its keeper sends two to five more,
 * unless b says none; once they arrive, its follower is cut from the
 * leader right after it answers the last sync, before its next ping passes
 * that touch on: the leader counts from the keepalive before the silence.
 * Its keeper may run late meanwhile (as F_LATE). */
static void unheard(struct drv *d, const struct tape_step *ts)
{
    struct dcl *c = holder(d, ts->target);
    zsim_session *s = c && !c->gone ? c->s : NULL;
    if (s == NULL || zsim_recv_timeout(s) <= 0)
        return;
    int64_t t = (int64_t)zsim_recv_timeout(s) * MS;
    drv_trace(d, "fault: the touches of client %d go unheard", c->ix);
    if (ts->a == 0)
        late_set(c, zsim_now(d->w) + 2 * t, 1 + (int64_t)zsim_below(d->w, (uint64_t)t / 25));
    if (ts->b == 2)
        zsim_cut_after_sync(s, 2 * t);
    else if (c->unheard == 0 && c->unheard_left == 0)
        c->unheard = 2 + (int)(ts->len % 4);
}

/* The keeper sent a keepalive, which reached the server: an unheard
 * client's requests go silent now, and come through once it sent the
 * number of keepalives the fault said (or after its timeout). */
void drv_unheard_sent(struct dcl *c)
{
    int ix = zsim_session_index(c->s);
    if (c->unheard > 0) {
        zsim_link_oneway(c->s, false, true);
        heal_timer(c->d, zsim_now(c->d->w) + (int64_t)zsim_recv_timeout(c->s) * MS, TM_HEAL_LINK,
                   ix);
        c->unheard_left = c->unheard;
        c->unheard = 0;
    } else if (--c->unheard_left == 0) {
        heal_timer(c->d, zsim_now(c->d->w), TM_HEAL_ARM, ix);
    }
}

static void fault(struct drv *d, const struct tape_step *ts)
{
    struct dcl *c = d->cl[ts->target % d->nclients];
    if (ts->fault == F_DROP && d->swarm_on && (ts->target & 0x80))
        c = d->cl[d->swarm_client]; /* the watches world: its swarm's client */
    zsim_session *s = c && !c->gone ? c->s : NULL;
    int srv = 1 + ts->target % 2;
    int64_t now = zsim_now(d->w);
    drv_trace(d, "fault: %s (client %d, server %d, %.3f s)", fault_name(ts->fault),
              c ? c->ix : -1, srv, (double)ts->len / SEC);
    switch (ts->fault) {
    case F_DROP:
        if (s != NULL)
            zsim_drop(s, ts->a, ts->b);
        break;
    case F_LINK:
        if (s != NULL) {
            int how = (ts->a + 1) % 3; /* both ways, requests, or answers */
            zsim_link_oneway(s, how == 2, how == 1);
            heal_timer(d, now + ts->len, TM_HEAL_LINK, zsim_session_index(s));
        }
        break;
    case F_PARTITION:
        zsim_partition(d->w, srv, true);
        heal_timer(d, now + ts->len, TM_HEAL_CUT, srv);
        break;
    case F_FREEZE:
        zsim_freeze(d->w, srv, true);
        heal_timer(d, now + ts->len, TM_THAW, srv);
        break;
    case F_EXPIRE:
        if (s != NULL && zsim_session_alive(s)) {
            struct sinfo *si = drv_sinfo(d, zsim_session_index(s));
            si->forced = true;
            si->forced_at = now;
            zsim_expire(s);
        }
        break;
    case F_OUTSIDER:
        zsim_outsider_random(d->w);
        break;
    case F_RETIRE:
        if (c != NULL && c->started && !c->retiring && !c->closing && !d->settling) {
            c->retiring = true;
            if (ts->b >= 0)
                drv_client_cancel(c);
        }
        break;
    case F_PAUSE: /* the whole process stops: a debugger, a swap storm, a VM paused */
    case F_BLOCK: /* a callback blocks the completion thread */
        if (c != NULL && !c->gone && now >= c->paused_until) {
            int64_t *until = ts->fault == F_PAUSE ? &c->paused_until : &c->blocked_until;
            if (now + ts->len > *until)
                *until = now + ts->len;
            drv_hold(c);
            heal_timer(d, *until, TM_RESUME, c->ix);
        }
        break;
    case F_LATE: /* the keeper's ticks come late, within the loss rule's margin */
        if (c != NULL && !c->gone) {
            int t = c->negotiated_ms > 0 ? c->negotiated_ms : c->timeout_ms;
            late_set(c, now + ts->len, 1 + (int64_t)zsim_below(d->w, (uint64_t)t * MS / 25));
        }
        break;
    case F_FAILOVER: /* an election of 50 ms to a second */
        zsim_failover(d->w, 50 * MS + ts->len % (950 * MS));
        lead_stall(d, now + 50 * MS + ts->len % (950 * MS));
        break;
    case F_LEADER_PAUSE: /* shorter than the followers' sync limit (a second) */
        zsim_leader_pause(d->w, 1 + ts->len % (900 * MS));
        lead_stall(d, now + 1 + ts->len % (900 * MS));
        break;
    case F_LEADER_SLOW:
        zsim_leader_slow(d->w, ts->len);
        lead_stall(d, now + ts->len);
        break;
    case F_AIM:
        aim(d, ts);
        break;
    case F_UNHEARD:
        unheard(d, ts);
        break;
    case F_CROWD:
        crowd(d, ts);
        break;
    default:
        break;
    }
}

/* ---- the steps -------------------------------------------------------------------------- */

static bool client_idle(const struct dcl *c)
{
    for (int i = 0; i < c->nwk; i++)
        if (c->wk[i].busy)
            return false;
    return c->reqs == NULL;
}

static void housekeeping(struct drv *d)
{
    for (int i = 0; i < d->nclients; i++) {
        struct dcl *c = d->cl[i];
        if (c == NULL || zsim_now(d->w) < c->paused_until || zsim_now(d->w) < c->blocked_until)
            continue; /* its threads wait */
        if (c->old != NULL)
            drv_old_handle(c);
        if (c->retiring && !c->closing && c->latch.started)
            latch_close(c);
        if ((c->retiring || d->settling) && !c->closing && client_idle(c) && c->retiring)
            drv_client_close(c);
        if (c->gone) {
            drv_client_free(c);
            d->cl[i] = d->settling ? NULL : drv_client_new(d, i);
        }
    }
}

/* The watches world: the swarm's next request, 10 to 30 ms after the one
 * before (within the checker's rate), on the lock paths of the mutexes and
 * the read-write lock; one in three waits without a deadline, the others
 * up to 30 s; each holds up to 400 ms, so that the queues grow. */
static void swarm(struct drv *d, const struct tape_step *ts)
{
    struct dcl *c = d->cl[d->swarm_client];
    if (d->swarm_left == 0 || zsim_now(d->w) < d->swarm_next || c == NULL || !c->started || c->retiring ||
        c->closing || d->settling || zsim_now(d->w) < c->paused_until ||
        zsim_now(d->w) < c->blocked_until)
        return;
    static const int kinds[] = {AQ_MUTEX, AQ_BURST, AQ_READ, AQ_WRITE};
    uint64_t r = drv_mix(ts->seed ^ 0x5a4);
    long timeout = r % 3 == 0 ? -1 : 1000 + (long)((r >> 8) % 29000);
    aq_start_swarm(c, kinds[(r >> 40) % 4], timeout, (int64_t)((r >> 48) % 401) * MS);
    d->swarm_left--;
    d->swarm_next = zsim_now(d->w) + (int64_t)(10 + (r >> 16) % 21) * MS;
}

static void step(struct drv *d, const struct tape_step *ts)
{
    zsim_reseed(d->w, ts->seed);
    swarm(d, ts);
    if (ts->fault != F_NONE)
        fault(d, ts);
    const struct zsim_item *it;
    int rc = zsim_step(d->w, &it);
    d->events++;
    if (rc == 1)
        dispatch(d, it);
    while ((it = zsim_deliver_timer(d->w)) != NULL)
        dispatch(d, it);
    housekeeping(d);
    if (!d->violated)
        check_step(d);
    d->step++;
}

struct count_arg {
    const struct dcl *c;
    int live;
};

/* A node of the core not done, but a latch's node taking part. */
static void count_node(zkl__cnode *n, void *arg)
{
    struct count_arg *ca = arg;
    ca->live += !latch_node_settled(ca->c, (const dnode *)n);
}

/* Everything settled: no process stands still or has yet to hear that its
 * session ended, no operation runs, every client is connected on a session
 * its keeper keeps, and its core let go of every node (no delete out, none
 * refused). */
static bool settled(struct drv *d, char *why, size_t size)
{
    for (int i = 0; i < d->nclients; i++) {
        const struct dcl *c = d->cl[i];
        if (c == NULL)
            continue;
        /* A process that stood still has yet to hear what happened
         * meanwhile: its session's expiry, say, which its latch acts on. */
        if (zsim_now(d->w) <= c->paused_until || zsim_now(d->w) <= c->blocked_until ||
            (drv_connected(c) && c->s != NULL && !zsim_session_alive(c->s))) {
            snprintf(why, size, "client %d: its process stood still, or its session ended unheard",
                     c->ix);
            return false;
        }
        for (int k = 0; k < c->nwk; k++)
            if (c->wk[k].busy) {
                snprintf(why, size, "client %d worker %d still in its %s (phase %d)", c->ix, k,
                         op_name(c->wk[k].op), c->wk[k].phase);
                return false;
            }
        for (const struct dreq *r = c->reqs; r; r = r->next)
            if (r->kind != AQ_LATCH) {
                snprintf(why, size, "client %d: request %d still running", c->ix, r->id);
                return false;
            }
        if (!latch_settled(c, why, size))
            return false;
        struct count_arg ca = {c, 0};
        zkl__core_each(c->core, count_node, &ca);
        int live = ca.live;
        /* A session the loss rule gave up that came back is its keeper's
         * to close, on its next turn: a keeper that never takes that turn
         * leaves its nodes behind, which the quiet check then sees. */
        if (!drv_connected(c) || c->old != NULL || c->need_reopen || live > 0) {
            snprintf(why, size, "client %d: %s", c->ix,
                     !drv_connected(c)  ? "not connected"
                     : c->need_reopen ? "a given-up session not yet closed by its keeper"
                                      : "nodes of its core not done (deletes out or refused)");
            return false;
        }
    }
    return true;
}

static void settle(struct drv *d)
{
    d->settling = true;
    int64_t start = zsim_now(d->w);
    for (size_t i = 0; i < d->nsess; i++)
        if (d->sess[i].s != NULL)
            zsim_link(d->sess[i].s, true);
    for (int s = 1; s < 3; s++) {
        zsim_partition(d->w, s, false);
        zsim_freeze(d->w, s, false);
    }
    zsim_outsider_mend(d->w);
    zsim_outsider_leave(d->w);
    char why[256] = "";
    int64_t j = 0;
    while (!d->violated) {
        if (settled(d, why, sizeof why))
            break;
        if (zsim_now(d->w) - start > SETTLE_LIMIT) {
            drv_violation(d, V_STUCK, "nothing settles within %lld s of the faults' end: %s",
                          (long long)(SETTLE_LIMIT / SEC), why);
            return;
        }
        struct tape_step ts = {.seed = drv_mix(d->tape->seed ^ drv_mix(0x5e771eULL + (uint64_t)j++))};
        step(d, &ts);
    }
    if (d->violated)
        return;
    for (int i = 0; i < d->nclients; i++)
        if (d->cl[i])
            check_quiet(d, d->cl[i]);
    latch_check_quiet(d);
    /* every client closes; its sessions end */
    for (int i = 0; i < d->nclients; i++)
        if (d->cl[i] && !d->cl[i]->closing) {
            d->cl[i]->retiring = true;
            drv_client_close(d->cl[i]);
        }
    for (int64_t k = 0; k < 100000 && !d->violated; k++) {
        bool any = false;
        for (int i = 0; i < d->nclients; i++)
            any |= d->cl[i] != NULL;
        if (!any)
            break;
        struct tape_step ts = {.seed = drv_mix(d->tape->seed ^ drv_mix(0xc105eULL + (uint64_t)k))};
        step(d, &ts);
    }
    /* A session given up without a goodbye (its close had no connection)
     * lives on the leader until it expires: a timeout (at most 20 ticks of
     * 2 s) and a tick later. */
    int64_t closed = zsim_now(d->w);
    for (int64_t k = 0; !d->violated && zsim_now(d->w) - closed < 90 * SEC; k++) {
        bool alive = false;
        for (size_t i = 0; i < d->nsess && !alive; i++)
            alive = d->sess[i].s != NULL && zsim_session_alive(d->sess[i].s);
        if (!alive)
            break;
        struct tape_step ts = {.seed = drv_mix(d->tape->seed ^ drv_mix(0xe4d5ULL + (uint64_t)k))};
        step(d, &ts);
    }
    for (size_t i = 0; i < d->nsess && !d->violated; i++)
        if (d->sess[i].s != NULL && zsim_session_alive(d->sess[i].s))
            drv_violation(d, V_LEFT, "session %zu of client serial is still alive after its "
                          "client closed", i);
}

int drv_run(const struct tape *t, const struct drv_opts *o, struct violation *v, int64_t *events,
            uint64_t *acquisitions)
{
    struct drv *d = calloc(1, sizeof *d);
    if (d == NULL)
        abort();
    d->tape = t;
    d->o = o;
    struct zsim_config cfg;
    zsim_config_default(&cfg);
    cfg.seed = t->seed;
    cfg.servers = 3;
    cfg.tick_ns = 200 * MS;
    cfg.container_check_ns = 1 * SEC;
    cfg.latency_ns = 2 * MS;
    cfg.outsider_root = "/l";
    cfg.cversion_start = tape_cversion_start(t);
    cfg.ping_phase_ns = tape_ping_phase(t, cfg.tick_ns / 2);
    d->swarm_left = tape_swarm(t);
    d->swarm_client = (int)(drv_mix(t->seed ^ 0x3b1) % DRV_CLIENTS);
    d->swarm_on = d->swarm_left > 0;
    if (d->swarm_on)
        cfg.max_buffer = 8 * 1024;
    if (zsim_world_new(&cfg, &d->w) != ZSIM_OK)
        abort();
    zsim_on_change(d->w, check_change, d);
    if (o->trace)
        zsim_trace(d->w, world_line, d);
    zsim_outsider_create(d->w, "/l", "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, NULL, 0);
    zsim_outsider_create(d->w, drv_paths[P_SEM], SEM_DATA, (int)strlen(SEM_DATA),
                         &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, NULL, 0);
    if (cfg.cversion_start != 0)
        drv_trace(d, "world: every new node's sequence starts at %d", (int)cfg.cversion_start);
    if (d->swarm_left > 0)
        drv_trace(d, "world: client %d starts a swarm of %d requests; jute.maxbuffer %d",
                  d->swarm_client, d->swarm_left, (int)cfg.max_buffer);
    d->nclients = DRV_CLIENTS;
    for (int i = 0; i < d->nclients; i++)
        d->cl[i] = drv_client_new(d, i);
    for (int64_t i = 0; !d->violated; i++) {
        bool end;
        struct tape_step ts = tape_at(t, i, &end);
        if (end)
            break;
        step(d, &ts);
    }
    if (!d->violated)
        settle(d);
    for (int i = 0; i < d->nclients; i++)
        if (d->cl[i] != NULL)
            drv_client_free(d->cl[i]);
    *v = d->v;
    *events = d->events;
    *acquisitions = d->acquisitions;
    d->o->stats->virtual_ns += zsim_now(d->w);
    int rc = d->violated ? 1 : 0;
    while (d->ended) {
        struct dhold *h = d->ended;
        d->ended = h->next;
        free(h);
    }
    zsim_world_free(d->w);
    free(d->sess);
    free(d->byname);
    free(d);
    return rc;
}
