/* How fast the model runs under the kind of load the engine's simulation
 * will put on it: sessions each queueing on one of a few lock paths with a
 * toy of the lock protocol (an ephemeral sequential node, a watch on it, a
 * listing, a data watch on the node ahead, a hold of a few virtual
 * milliseconds, a delete) and a keepalive sync every tenth of the session
 * timeout, with every fault on. A client that loses its connection or its
 * session closes it and starts a new one.
 *
 * It checks that every request is answered exactly once, and prints
 *   zsim: seed S, E steps in T s (R steps/s), ...
 * SIM_SEED (default 1) and SIM_EVENTS (default 1,000,000) choose the seed
 * and the number of steps; SIM_TRACE=1 prints the world's trace, and
 * SIM_DEBUG=1 the lock paths and the clients at the end. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zsim.h"

#define CLIENTS 24
#define LOCKS 4

enum { OP_CREATE = 1, OP_LIST, OP_PRED, OP_OWN, OP_DELETE, OP_SYNC, T_RELEASE, T_START, T_KEEP,
       T_RELIST };
enum { C_IDLE, C_CREATING, C_QUEUED, C_HOLDING, C_DELETING, C_DEAD };

struct client {
    zsim_session *s;
    uint64_t gen; /* a new attempt or session: old answers are ignored */
    int state;
    int lock;
    char node[160];
    long issued, answered;
};

static struct client cl[CLIENTS];
static long acquisitions;
static const char *const locks[LOCKS] = {"/locks/a", "/locks/b", "/locks/c", "/locks/d"};

static uint64_t tag(int ci, int op)
{
    return (uint64_t)ci << 40 | (cl[ci].gen & 0xffffffff) << 8 | (uint64_t)op;
}

static void issued(int ci, int rc)
{
    if (rc == ZSIM_OK)
        cl[ci].issued++;
}

static void start_session(zsim_world *w, int ci)
{
    struct client *c = &cl[ci];
    c->s = zsim_session_new(w, 4000 + 2000 * (int)zsim_below(w, 4), (uint64_t)1 << 62 | (uint64_t)ci);
    c->gen++;
    c->state = C_IDLE;
    c->issued = c->answered = 0;
    zsim_timer(w, c->s, zsim_now(w) + 1000000, tag(ci, T_START));
    zsim_timer(w, c->s, zsim_now(w) + (int64_t)zsim_recv_timeout(c->s) * 100000, tag(ci, T_KEEP));
}

static void enqueue(zsim_world *w, int ci)
{
    struct client *c = &cl[ci];
    char path[64];
    c->lock = (int)zsim_below(w, LOCKS);
    snprintf(path, sizeof path, "%s/n-", locks[c->lock]);
    c->state = C_CREATING;
    issued(ci, zsim_acreate(c->s, path, "me", 2, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_EPHEMERAL_SEQUENTIAL,
                            tag(ci, OP_CREATE)));
}

static void list(zsim_world *w, int ci)
{
    issued(ci, zsim_aget_children(cl[ci].s, locks[cl[ci].lock], 0, tag(ci, OP_LIST)));
}

/* Who holds, and whom to watch: the least sequence first. */
static void decide(zsim_world *w, int ci, const struct zsim_item *it)
{
    struct client *c = &cl[ci];
    const char *me = strrchr(c->node, '/') + 1;
    const char *pred = NULL;
    bool present = false;
    for (int i = 0; i < it->count; i++) {
        int cmp = strcmp(it->names[i], me);
        if (cmp == 0)
            present = true;
        else if (cmp < 0 && (pred == NULL || strcmp(it->names[i], pred) > 0))
            pred = it->names[i];
    }
    if (!present) { /* someone deleted it: queue again */
        c->gen++;
        enqueue(w, ci);
        return;
    }
    if (pred == NULL) {
        c->state = C_HOLDING;
        acquisitions++;
        zsim_timer(w, c->s, zsim_now(w) + 1 + (int64_t)zsim_below(w, 20000000), tag(ci, T_RELEASE));
        return;
    }
    char path[160];
    snprintf(path, sizeof path, "%s/%s", locks[c->lock], pred);
    issued(ci, zsim_aget(c->s, path, (uint64_t)ci + 100, tag(ci, OP_PRED)));
}

static void renew(zsim_world *w, int ci)
{
    struct client *c = &cl[ci];
    if (c->state != C_DEAD) {
        zsim_close(c->s);
        c->state = C_DEAD;
    }
}

static void answer(zsim_world *w, int ci, const struct zsim_item *it)
{
    struct client *c = &cl[ci];
    c->answered++;
    if (it->session != c->s || ((it->tag >> 8) & 0xffffffff) != (c->gen & 0xffffffff))
        return; /* an old attempt's */
    int op = (int)(it->tag & 0xff);
    if (it->rc == ZSIM_CONNECTIONLOSS || it->rc == ZSIM_OPERATIONTIMEOUT ||
        it->rc == ZSIM_SESSIONEXPIRED) {
        renew(w, ci);
        return;
    }
    switch (op) {
    case OP_CREATE:
        if (it->rc != ZSIM_OK) {
            c->state = C_IDLE;
            zsim_timer(w, c->s, zsim_now(w) + 1000000, tag(ci, T_START));
            break;
        }
        snprintf(c->node, sizeof c->node, "%s", it->value);
        c->state = C_QUEUED;
        issued(ci, zsim_aexists(c->s, c->node, (uint64_t)ci + 100, tag(ci, OP_OWN)));
        list(w, ci);
        break;
    case OP_LIST:
        if (c->state == C_QUEUED && it->rc == ZSIM_OK)
            decide(w, ci, it);
        else if (c->state == C_QUEUED) /* refused (an outsider's ACL): later */
            zsim_timer(w, c->s, zsim_now(w) + 100000000, tag(ci, T_RELIST));
        break;
    case OP_PRED:
        if (c->state == C_QUEUED && it->rc == ZSIM_NONODE)
            list(w, ci);
        else if (c->state == C_QUEUED && it->rc != ZSIM_OK)
            zsim_timer(w, c->s, zsim_now(w) + 100000000, tag(ci, T_RELIST));
        break;
    case OP_DELETE:
        c->state = C_IDLE;
        c->gen++;
        zsim_timer(w, c->s, zsim_now(w) + 1 + (int64_t)zsim_below(w, 5000000), tag(ci, T_START));
        break;
    default:
        break;
    }
}

static void event(zsim_world *w, int ci, const struct zsim_item *it)
{
    struct client *c = &cl[ci];
    if (it->session != c->s || c->state != C_QUEUED)
        return;
    if (strcmp(it->path, c->node) == 0 && it->type == ZSIM_DELETED_EVENT) {
        c->gen++;
        enqueue(w, ci);
    } else if (strcmp(it->path, c->node) == 0) {
        issued(ci, zsim_aexists(c->s, c->node, (uint64_t)ci + 100, tag(ci, OP_OWN)));
    } else { /* the node ahead went or changed (its watch is spent): look again */
        list(w, ci);
    }
}

static void timer(zsim_world *w, int ci, const struct zsim_item *it)
{
    struct client *c = &cl[ci];
    if (it->session != c->s || c->state == C_DEAD)
        return;
    int op = (int)(it->tag & 0xff);
    if (op == T_KEEP) {
        issued(ci, zsim_async(c->s, "/", tag(ci, OP_SYNC)));
        zsim_timer(w, c->s, zsim_now(w) + (int64_t)zsim_recv_timeout(c->s) * 100000, it->tag);
    } else if (((it->tag >> 8) & 0xffffffff) != (c->gen & 0xffffffff)) {
        return;
    } else if (op == T_START && c->state == C_IDLE) {
        enqueue(w, ci);
    } else if (op == T_RELIST && c->state == C_QUEUED) {
        list(w, ci);
    } else if (op == T_RELEASE && c->state == C_HOLDING) {
        c->state = C_DELETING;
        issued(ci, zsim_adelete(c->s, c->node, -1, tag(ci, OP_DELETE)));
    }
}

static zsim_world *dbg_w;
static void trace_line(void *arg, const char *line)
{
    puts(line);
}
static void show_child(void *arg, const char *name)
{
    char path[200];
    struct zsim_stat st;
    snprintf(path, sizeof path, "%s/%s", (const char *)arg, name);
    zsim_truth_stat(dbg_w, path, &st);
    printf(" %s(owner %llx)", name, (unsigned long long)st.ephemeralOwner);
}

static void handle(zsim_world *w, const struct zsim_item *it, long *delivered)
{
    (*delivered)++;
    if (it->kind == ZSIM_ANSWER) {
        answer(w, (int)(it->tag >> 40), it);
    } else if (it->kind == ZSIM_TIMER) {
        timer(w, (int)(it->tag >> 40), it);
    } else if (it->kind == ZSIM_SESSION) {
        for (int k = 0; k < it->nwatchers; k++) {
            int ci = (int)(it->watchers[k] & 0xffff);
            if (it->watchers[k] >> 62 && it->session == cl[ci].s &&
                it->state != ZSIM_CONNECTED_STATE)
                renew(w, ci);
        }
    } else {
        for (int k = 0; k < it->nwatchers; k++)
            event(w, (int)it->watchers[k] - 100, it);
    }
}

int main(void)
{
    const char *seed_env = getenv("SIM_SEED"), *events_env = getenv("SIM_EVENTS");
    uint64_t seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 0) : 1;
    long steps = events_env && *events_env ? atol(events_env) : 1000000;
    struct zsim_config cfg;
    zsim_config_default(&cfg);
    cfg.seed = seed;
    cfg.servers = 3;
    cfg.tick_ns = 500000000;
    cfg.container_check_ns = 5000000000;
    cfg.p_drop = 20;
    cfg.p_link = 10;
    cfg.p_partition = 5;
    cfg.p_freeze = 5;
    cfg.p_expire = 3;
    cfg.p_outsider = 20;
    cfg.outsider_root = "/locks";
    zsim_world *w;
    if (zsim_world_new(&cfg, &w) != ZSIM_OK)
        return 2;
    dbg_w = w;
    if (getenv("SIM_TRACE"))
        zsim_trace(w, trace_line, NULL);
    zsim_outsider_create(w, "/locks", "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, NULL, 0);
    for (int i = 0; i < LOCKS; i++)
        zsim_outsider_create(w, locks[i], "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, NULL, 0);
    for (int i = 0; i < CLIENTS; i++)
        start_session(w, i);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long n, delivered = 0;
    for (n = 0; n < steps; n++) {
        const struct zsim_item *it;
        int rc = zsim_step(w, &it);
        if (rc < 0)
            break;
        if (rc == 1)
            handle(w, it, &delivered);
        for (int ci = 0; ci < CLIENTS; ci++) {
            if (cl[ci].state == C_DEAD && zsim_state(cl[ci].s) != ZSIM_CONNECTED_STATE &&
                zsim_state(cl[ci].s) != ZSIM_CONNECTING_STATE) {
                /* the handle is done: what it still has to say, then count */
                const struct zsim_item *last;
                while ((last = zsim_deliver(cl[ci].s)) != NULL)
                    if (last->kind == ZSIM_ANSWER)
                        cl[ci].answered++;
                if (cl[ci].issued != cl[ci].answered) {
                    fprintf(stderr, "zsim: seed %" PRIu64 ": session %d: %ld requests, %ld answers\n",
                            seed, zsim_session_index(cl[ci].s), cl[ci].issued, cl[ci].answered);
                    return 1;
                }
                start_session(w, ci);
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct zsim_counts k;
    zsim_counts(w, &k);
    printf("zsim: seed %" PRIu64 ", %ld steps in %.2f s (%.0f steps/s): %ld items delivered, "
           "%" PRIu64 " transactions, %ld acquisitions, %.0f virtual s; faults: %" PRIu64
           " resets, %" PRIu64 " silent links, %" PRIu64 " partitions, %" PRIu64 " stops, %" PRIu64
           " expiries (%" PRIu64 " sessions expired), %" PRIu64 " outsiders\n",
           seed, n, sec, (double)n / sec, delivered, k.txns, acquisitions, (double)zsim_now(w) / 1e9,
           k.drops, k.links, k.partitions, k.freezes, k.expiries, k.sessions_expired, k.outsiders);
    if (getenv("SIM_DEBUG")) {
        for (int i = 0; i < LOCKS; i++) {
            printf("%s:", locks[i]);
            zsim_truth_children(w, locks[i], show_child, (void *)locks[i]);
            struct zsim_stat st;
            zsim_truth_stat(w, locks[i], &st);
            printf("\n");
        }
        for (int ci = 0; ci < CLIENTS; ci++)
            printf("client %d: session %d id %llx (%s, alive %d) state %d node %s\n", ci,
                   zsim_session_index(cl[ci].s), (unsigned long long)zsim_session_id(cl[ci].s),
                   zsim_state_name(zsim_state(cl[ci].s)),
                   zsim_session_alive(cl[ci].s), cl[ci].state, cl[ci].node);
    }
    zsim_world_free(w);
    return 0;
}
