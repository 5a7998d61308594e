/* Leader election (zkl_latch) against a real ZooKeeper: one leader among
 * candidates, handover on close, a killed leader process, an expired
 * session (told, rejoined, a larger token), an outsider deleting the
 * leader's node, an outsider's child planted ahead of the latches, an ACL
 * refusing the listing, a handle that refuses creates at once, a hundred candidates each
 * leading once, close in every state, and bad input. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h" /* the seam: struct zkl__zapi */
#include "testutil.h"

/* What a latch's listener heard: each call alternates, or it counts a
 * repeat (the listener is told once per change). */
struct heard {
    pthread_mutex_t mu;
    int last; /* -1 before the first call */
    int ones, zeros, repeats;
};

static void on_change(zkl_latch *l, int leader, void *arg)
{
    (void)l;
    struct heard *h = arg;
    pthread_mutex_lock(&h->mu);
    if (h->last == leader || (h->last == -1 && leader == 0))
        h->repeats++;
    h->last = leader;
    if (leader)
        h->ones++;
    else
        h->zeros++;
    pthread_mutex_unlock(&h->mu);
}

static int heard_get(struct heard *h, int *field)
{
    pthread_mutex_lock(&h->mu);
    int v = *field;
    pthread_mutex_unlock(&h->mu);
    return v;
}

struct cand {
    zkl_client *c;
    zkl_latch *l;
    struct heard h;
};

static void cand_init(struct cand *k, zkl_client *c, const char *path, const char *id)
{
    k->c = c;
    pthread_mutex_init(&k->h.mu, NULL);
    k->h.last = -1;
    k->h.ones = k->h.zeros = k->h.repeats = 0;
    ck_assert_int_eq(zkl_latch_new(c, path, id, &k->l), 0);
    ck_assert_int_eq(zkl_latch_set_listener(k->l, on_change, &k->h), 0);
}

static int64_t latch_token(zkl_latch *l)
{
    int64_t v = 0;
    int rc = zkl_latch_token(l, &v);
    return rc != 0 ? rc : v;
}

/* How many of n candidates believe they lead. */
struct group {
    struct cand *k;
    int n;
};

static int leaders(const struct group *g, int *which)
{
    int count = 0;
    for (int i = 0; i < g->n; i++)
        if (g->k[i].l != NULL && zkl_latch_is_leader(g->k[i].l)) {
            count++;
            if (which)
                *which = i;
        }
    return count;
}

static bool one_leader(void *arg)
{
    return leaders(arg, NULL) == 1;
}

struct told {
    struct heard *h;
    int *field;
    int want;
};

static bool told_enough(void *arg)
{
    struct told *t = arg;
    return heard_get(t->h, t->field) >= t->want;
}

static void wait_told(struct heard *h, int *field, int want)
{
    struct told t = {h, field, want};
    ck_assert(tu_wait_until(told_enough, &t, 30000));
}

/* The election's first child: its data and its full path. */
static void first_child(zkl_client *c, const char *path, char *data, size_t dlen, char *node,
                        size_t nlen)
{
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(c, path, &ps, &n), 0);
    ck_assert_uint_ge(n, 1);
    ck_assert_str_eq(ps[0].kind, "latch-");
    ck_assert_int_eq(ps[0].holds, 1);
    if (data)
        snprintf(data, dlen, "%.*s", (int)ps[0].owner_len, ps[0].owner);
    if (node)
        snprintf(node, nlen, "%s/%s", path, ps[0].node);
    zkl_participants_free(ps, n);
}

START_TEST(test_one_of_three_leads_and_close_hands_over)
{
    char *p = tu_test_path("three");
    struct cand k[3];
    const char *ids[] = {"alpha", "beta", ""};
    for (int i = 0; i < 3; i++) {
        cand_init(&k[i], tu_test_client(10000), p, ids[i]);
        ck_assert_int_eq(zkl_latch_start(k[i].l), 0);
    }
    struct group g = {k, 3};
    ck_assert(tu_wait_until(one_leader, &g, 30000));
    int who = -1;
    ck_assert_int_eq(leaders(&g, &who), 1);
    ck_assert_int_eq(zkl_latch_await(k[who].l, 0), 0);
    wait_told(&k[who].h, &k[who].h.ones, 1);
    int64_t t1 = latch_token(k[who].l);
    ck_assert_int_gt(t1, 0);
    /* Its node: _c_<uuid>-latch-<seq>, the id as data, first. */
    char data[64], node[512];
    ck_assert(tu_wait_children(tu_fixture_zk, p, 3, 10000)); /* all joined */
    first_child(k[0].c, p, data, sizeof data, node, sizeof node);
    ck_assert_str_eq(data, ids[who]);
    ck_assert_ptr_nonnull(strstr(node, "-latch-"));
    for (int i = 0; i < 3; i++)
        if (i != who) {
            ck_assert_int_eq(zkl_latch_await(k[i].l, 0), ZKL_ETIMEDOUT);
            ck_assert_int_eq(latch_token(k[i].l), ZKL_ENOTHELD);
        }

    /* Close hands over: the leader is told 0 before the close returns. */
    ck_assert_int_eq(zkl_latch_close(k[who].l), 0);
    ck_assert_int_eq(heard_get(&k[who].h, &k[who].h.zeros), 1);
    ck_assert_int_eq(zkl_latch_is_leader(k[who].l), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 2); /* confirmed gone */
    zkl_latch_free(k[who].l);
    k[who].l = NULL;
    ck_assert(tu_wait_until(one_leader, &g, 30000));
    int next = -1;
    leaders(&g, &next);
    ck_assert_int_gt(latch_token(k[next].l), t1);
    for (int i = 0; i < 3; i++) {
        if (k[i].l == NULL)
            continue;
        ck_assert_int_eq(zkl_latch_close(k[i].l), 0);
        ck_assert_int_eq(zkl_latch_close(k[i].l), ZKL_ECLOSED); /* double close */
        zkl_latch_free(k[i].l);
    }
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(k[i].h.repeats, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

/* The holder worker's hold (tu_holder_main): leads, and gives its token. */
static int lead(zkl_client *c, const char *path, int64_t *token)
{
    zkl_latch *l;
    if (zkl_latch_new(c, path, "doomed", &l) != 0 || zkl_latch_start(l) != 0 ||
        zkl_latch_await(l, 20000) != 0)
        return -1;
    *token = latch_token(l);
    return 0;
}

START_TEST(test_sigkilled_leader_process_hands_over)
{
    char *p = tu_test_path("killed");
    int64_t dead = tu_holder_kill(p);
    struct cand k;
    cand_init(&k, tu_test_client(10000), p, "next");
    ck_assert_int_eq(zkl_latch_start(k.l), 0);
    ck_assert_int_eq(zkl_latch_await(k.l, 30000), 0);
    ck_assert_int_gt(latch_token(k.l), dead);
    zkl_latch_free(k.l);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

static bool two_children(void *arg)
{
    return tu_children(tu_fixture_zk, arg) == 2;
}

/* a leads, b (on a client of its own) waits behind it. */
static void leader_and_follower(const char *p, struct cand *a, struct cand *b)
{
    cand_init(a, tu_test_client(10000), p, "a");
    cand_init(b, tu_test_client(10000), p, "b");
    ck_assert_int_eq(zkl_latch_start(a->l), 0);
    ck_assert_int_eq(zkl_latch_await(a->l, 20000), 0);
    ck_assert_int_eq(zkl_latch_start(b->l), 0);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 2, 10000));
}

/* The end of a test of leader_and_follower's two: each was told once per
 * change, and freed, they leave nothing. */
static void pair_end(struct cand *a, struct cand *b, const char *p)
{
    ck_assert_int_eq(a->h.repeats, 0);
    ck_assert_int_eq(b->h.repeats, 0);
    zkl_latch_free(a->l);
    zkl_latch_free(b->l);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}

START_TEST(test_expired_leader_is_told_and_rejoins_with_a_larger_token)
{
    char *p = tu_test_path("expiry");
    struct cand a, b;
    leader_and_follower(p, &a, &b);
    int64_t ta = latch_token(a.l);
    int64_t old_sid = tu_client_session_id(a.c);

    tu_expire_session(a.c);
    wait_told(&a.h, &a.h.zeros, 1); /* told */
    ck_assert_int_eq(zkl_latch_await(b.l, 30000), 0);
    int64_t tb = latch_token(b.l);
    ck_assert_int_gt(tb, ta);
    /* a rejoined on its new session, with a new node of that session. */
    ck_assert(tu_wait_until(two_children, p, 30000));
    ck_assert_int_eq(zkl_latch_is_leader(a.l), 0);
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(b.c, p, &ps, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(ps[1].owner, "a");
    ck_assert_int_ne(ps[1].session, old_sid);
    ck_assert_int_eq(ps[1].session, tu_client_session_id(a.c));
    zkl_participants_free(ps, n);

    /* ... and can lead again, with a larger token still. */
    ck_assert_int_eq(zkl_latch_close(b.l), 0);
    ck_assert_int_eq(zkl_latch_await(a.l, 30000), 0);
    ck_assert_int_gt(latch_token(a.l), tb);
    wait_told(&a.h, &a.h.ones, 2);
    pair_end(&a, &b, p);
}
END_TEST

/* The election's nodes of `session`, and of every other session. */
struct by_session {
    zkl_client *c; /* the client that lists */
    const char *path;
    int64_t session;
    int mine, others;
};

static void count_by_session(struct by_session *s)
{
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(s->c, s->path, &ps, &n), 0);
    s->mine = s->others = 0;
    for (size_t i = 0; i < n; i++) {
        if (ps[i].session == s->session)
            s->mine++;
        else
            s->others++;
    }
    zkl_participants_free(ps, n);
}

/* The condition for tu_wait_until: a node of the session shows. */
static bool session_joined(void *arg)
{
    struct by_session *s = arg;
    count_by_session(s);
    return s->mine >= 1;
}

/* A latch expired while following takes part again on its new session at
 * once, with one node of that session, and the leader leads on. Then
 * alone, expired while leading: told, it rejoins on its next session and
 * leads again with no one else there. */
START_TEST(test_expired_latch_rejoins_on_its_new_session_with_one_node)
{
    char *p = tu_test_path("rejoin");
    struct cand a, b;
    leader_and_follower(p, &a, &b);
    struct by_session nodes = {a.c, p, tu_client_session_id(b.c), 0, 0};
    int64_t ta = latch_token(a.l);
    tu_expire_session(b.c);
    ck_assert(tu_wait_until(tu_client_connected, b.c, 30000));
    ck_assert_int_ne(tu_client_session_id(b.c), nodes.session);
    nodes.session = tu_client_session_id(b.c);
    tu_wait_until(session_joined, &nodes, 30000);
    /* The other node is the leader's: nothing of b's old session stays. */
    ck_assert_int_eq(nodes.mine, 1);
    ck_assert_int_eq(nodes.others, 1);
    ck_assert_int_eq(zkl_latch_is_leader(b.l), 0);
    ck_assert_int_eq(zkl_latch_await(a.l, 0), 0);
    ck_assert_int_eq(latch_token(a.l), ta);
    ck_assert_int_eq(heard_get(&b.h, &b.h.ones), 0);

    /* b alone, leading, expired: told, then leads on its next session. */
    ck_assert_int_eq(zkl_latch_close(a.l), 0);
    ck_assert_int_eq(zkl_latch_await(b.l, 30000), 0);
    int64_t tb = latch_token(b.l);
    wait_told(&b.h, &b.h.ones, 1);
    int zeros = heard_get(&b.h, &b.h.zeros);
    tu_expire_session(b.c);
    wait_told(&b.h, &b.h.zeros, zeros + 1);
    /* Between sessions await says ZKL_ELOST; on the next one it waits. */
    ck_assert(tu_wait_until(tu_client_connected, b.c, 30000));
    ck_assert_int_eq(zkl_latch_await(b.l, 30000), 0);
    ck_assert_int_gt(latch_token(b.l), tb);
    wait_told(&b.h, &b.h.ones, 2);
    nodes.session = tu_client_session_id(b.c);
    count_by_session(&nodes);
    ck_assert_int_eq(nodes.mine, 1);
    ck_assert_int_eq(nodes.others, 0);
    pair_end(&a, &b, p);
}
END_TEST

/* The client's table (the seam below the session) refuses the latch's
 * creates at once while `on`, as an expired handle does before its
 * session event is heard (the completion thread busy): ZINVALIDSTATE. */
static struct {
    const char *path; /* the election's path: its creates are refused */
    int on, refused;
} dead;

static int dead_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                         const struct ACL_vector *acl, int mode, string_stat_completion_t done,
                         const void *data)
{
    if (__atomic_load_n(&dead.on, __ATOMIC_SEQ_CST) &&
        strncmp(path, dead.path, strlen(dead.path)) == 0 && path[strlen(dead.path)] == '/') {
        __atomic_fetch_add(&dead.refused, 1, __ATOMIC_SEQ_CST);
        return ZINVALIDSTATE;
    }
    return zkl__zapi_real.acreate2(zh, path, value, valuelen, acl, mode, done, data);
}

static bool refused_once(void *arg)
{
    (void)arg;
    return __atomic_load_n(&dead.refused, __ATOMIC_SEQ_CST) >= 1;
}

static void on_barrier(zkl_request *r, int result, void *arg)
{
    (void)r;
    __atomic_store_n((int *)arg, result == 0 ? 1 : 2, __ATOMIC_SEQ_CST);
}

static bool barrier_passed(void *arg)
{
    return __atomic_load_n((int *)arg, __ATOMIC_SEQ_CST) != 0;
}

/* A latch whose node went while its handle refuses every create at once
 * takes part again once, not over and over: it waits for the client's
 * next session (or connection), and leads on it. */
START_TEST(test_a_create_refused_at_once_waits_for_the_next_session)
{
    char *p = tu_test_path("dead");
    struct zkl__zapi z = zkl__zapi_real;
    z.acreate2 = dead_acreate2;
    dead.path = p;
    dead.on = dead.refused = 0;
    zkl_client_opts *co;
    ck_assert_int_eq(zkl_client_opts_new(&co), 0);
    zkl__client_opts_set_zapi(co, &z);
    zkl_client *c = NULL;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), tu_ms(10000), co, &c), 0);
    zkl_client_opts_free(co);
    struct cand a;
    cand_init(&a, c, p, "a");
    ck_assert_int_eq(zkl_latch_start(a.l), 0);
    ck_assert_int_eq(zkl_latch_await(a.l, 20000), 0);
    char node[512];
    first_child(c, p, NULL, 0, node, sizeof node);

    __atomic_store_n(&dead.on, 1, __ATOMIC_SEQ_CST);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node, -1), ZOK);
    wait_told(&a.h, &a.h.zeros, 1);
    ck_assert(tu_wait_until(refused_once, NULL, 20000));
    /* A request of the same client's, answered by the server, delivered
     * by the thread that would spin: the latch made no second attempt
     * meanwhile. */
    char *mp = tu_test_path("barrier");
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, mp, &m), 0);
    int passed = 0;
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 20000, on_barrier, &passed, &r), 0);
    ck_assert(tu_wait_until(barrier_passed, &passed, 30000));
    ck_assert_int_eq(passed, 1);
    ck_assert_int_eq(__atomic_load_n(&dead.refused, __ATOMIC_SEQ_CST), 1);
    zkl_request_free(r);
    zkl_mutex_free(m);

    /* On the next session it takes part again, and leads. */
    __atomic_store_n(&dead.on, 0, __ATOMIC_SEQ_CST);
    tu_expire_session(c);
    ck_assert(tu_wait_until(tu_client_connected, c, 30000));
    ck_assert_int_eq(zkl_latch_await(a.l, 30000), 0);
    wait_told(&a.h, &a.h.ones, 2);
    ck_assert_int_eq(__atomic_load_n(&dead.refused, __ATOMIC_SEQ_CST), 1);
    zkl_latch_free(a.l);
    zkl_client_close(c);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 30000));
}
END_TEST

START_TEST(test_outsider_deleting_the_leaders_node)
{
    char *p = tu_test_path("outsider");
    struct cand a;
    cand_init(&a, tu_test_client(10000), p, "a");
    ck_assert_int_eq(zkl_latch_start(a.l), 0);
    ck_assert_int_eq(zkl_latch_await(a.l, 20000), 0);
    int64_t t1 = latch_token(a.l);
    char node[512];
    first_child(a.c, p, NULL, 0, node, sizeof node);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node, -1), ZOK);
    wait_told(&a.h, &a.h.zeros, 1);
    /* Alone, it rejoins at once and leads again on a new node. */
    wait_told(&a.h, &a.h.ones, 2);
    ck_assert_int_eq(zkl_latch_await(a.l, 20000), 0);
    ck_assert_int_gt(latch_token(a.l), t1);
    char again[512];
    first_child(a.c, p, NULL, 0, again, sizeof again);
    ck_assert_str_ne(again, node);
    ck_assert_int_eq(a.h.repeats, 0);
    zkl_latch_free(a.l);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

/* A foreign child named as a latch's node, with the lowest sequence there
 * is (made by name, as no sequential create can), ephemeral on the
 * fixture's session. */
static void plant(const char *path, char *node, size_t len)
{
    snprintf(node, len, "%s/_c_00000000-0000-4000-8000-000000000000-latch-0000000000", path);
    ck_assert_int_eq(zoo_create(tu_fixture_zk, node, "outsider", 8, &ZOO_OPEN_ACL_UNSAFE,
                                ZOO_EPHEMERAL, NULL, 0),
                     ZOK);
}

/* An outsider's child ahead of every latch node, planted before the
 * candidates join and again while one follows: the first child leads, as
 * for Curator, so no latch does while it is there (and never two); a
 * latch follows its predecessor, and leads once the outsider's is gone. */
START_TEST(test_outsiders_child_ahead_of_the_latches_leads_for_them)
{
    char *p = tu_test_path("planted");
    char node[512], data[64];
    tu_mkdirs(tu_fixture_zk, p);
    plant(p, node, sizeof node);
    struct cand k[2];
    cand_init(&k[0], tu_test_client(10000), p, "a");
    cand_init(&k[1], tu_test_client(10000), p, "b");
    struct group g = {k, 2};
    ck_assert_int_eq(zkl_latch_start(k[0].l), 0);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 2, 20000));
    ck_assert_int_eq(zkl_latch_start(k[1].l), 0);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 3, 20000));
    /* Both have listed (their nodes exist), and neither leads. */
    ck_assert_int_eq(zkl_latch_await(k[0].l, 1000), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_latch_await(k[1].l, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(leaders(&g, NULL), 0);
    first_child(k[0].c, p, data, sizeof data, NULL, 0);
    ck_assert_str_eq(data, "outsider");
    /* Its child gone, the first latch leads; the other follows. */
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node, -1), ZOK);
    ck_assert_int_eq(zkl_latch_await(k[0].l, 20000), 0);
    ck_assert_int_eq(leaders(&g, NULL), 1);
    ck_assert_int_eq(zkl_latch_is_leader(k[1].l), 0);
    /* Planted again while b follows; a, leading, lists no more (nor does
     * Curator's). When a leaves, b lists and finds the outsider first. */
    plant(p, node, sizeof node);
    uint64_t listed = tu_stats(k[1].c).listings;
    ck_assert_int_eq(zkl_latch_close(k[0].l), 0);
    /* Its listing answered: what it found is acted on. */
    tu_wait_stat(k[1].c, TU_STAT(listings), listed + 1);
    ck_assert_int_eq(zkl_latch_await(k[1].l, 500), ZKL_ETIMEDOUT);
    ck_assert_int_eq(leaders(&g, NULL), 0);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node, -1), ZOK);
    ck_assert_int_eq(zkl_latch_await(k[1].l, 20000), 0);
    ck_assert_int_eq(leaders(&g, NULL), 1);
    ck_assert_int_eq(k[0].h.repeats + k[1].h.repeats, 0);
    zkl_latch_free(k[0].l);
    zkl_latch_free(k[1].l);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

/* A foreign child with the lowest sequence but no "latch-" in its name:
 * Curator orders it by its whole name, behind every latch node, and so
 * does zkl: it stops no latch from leading (a mixed election with Curator
 * would otherwise have no leader at all), and the second latch follows
 * the first, not it. */
START_TEST(test_foreign_child_without_latch_in_its_name_sorts_behind_the_latches)
{
    char *p = tu_test_path("foreign");
    char node[512];
    tu_mkdirs(tu_fixture_zk, p);
    snprintf(node, sizeof node, "%s/foreign-0000000000", p);
    ck_assert_int_eq(zoo_create(tu_fixture_zk, node, "x", 1, &ZOO_OPEN_ACL_UNSAFE,
                                ZOO_EPHEMERAL, NULL, 0),
                     ZOK);
    struct cand k[2];
    cand_init(&k[0], tu_test_client(10000), p, "a");
    cand_init(&k[1], tu_test_client(10000), p, "b");
    struct group g = {k, 2};
    ck_assert_int_eq(zkl_latch_start(k[0].l), 0);
    ck_assert_int_eq(zkl_latch_await(k[0].l, 20000), 0);
    ck_assert_int_eq(zkl_latch_start(k[1].l), 0);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 3, 20000));
    ck_assert_int_eq(zkl_latch_await(k[1].l, 500), ZKL_ETIMEDOUT);
    ck_assert_int_eq(leaders(&g, NULL), 1);
    /* The leader leaves: the second leads, the foreign child still there. */
    ck_assert_int_eq(zkl_latch_close(k[0].l), 0);
    ck_assert_int_eq(zkl_latch_await(k[1].l, 20000), 0);
    ck_assert_int_eq(leaders(&g, NULL), 1);
    zkl_latch_free(k[0].l);
    zkl_latch_free(k[1].l);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node, -1), ZOK);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

#define SECRET "alice:secret"

START_TEST(test_acl_refusing_the_listing_ends_with_enoauth)
{
    char *p = tu_test_path("noread");
    ck_assert_int_eq(
        zoo_add_auth(tu_fixture_zk, "digest", SECRET, (int)strlen(SECRET), NULL, NULL), ZOK);
    tu_mkdirs(tu_fixture_zk, p);
    tu_guard_path(p, ZOO_PERM_CREATE | ZOO_PERM_DELETE);
    struct cand a;
    cand_init(&a, tu_test_client(10000), p, "a");
    ck_assert_int_eq(zkl_latch_start(a.l), 0);
    ck_assert_int_eq(zkl_latch_await(a.l, 20000), ZKL_ENOAUTH);
    ck_assert_int_eq(zkl_latch_is_leader(a.l), 0);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 10000)); /* no node left */
    ck_assert_int_eq(heard_get(&a.h, &a.h.ones), 0);
    zkl_latch_free(a.l);
    ck_assert_int_eq(zoo_set_acl(tu_fixture_zk, p, -1, &ZOO_OPEN_ACL_UNSAFE), ZOK);
}
END_TEST

/* A hundred candidates: each leads once, alone, and a counter that only
 * the leader bumps comes out exact. The listener of the leader asks the
 * test to close it. */
#define MANY 100
struct many {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int leading, violations, led[MANY];
    long counter;
    int due; /* the latch to close, or -1 */
};
static struct many M;
static zkl_latch *many_l[MANY];

static void on_many(zkl_latch *l, int leader, void *arg)
{
    int i = (int)(intptr_t)arg;
    (void)l;
    pthread_mutex_lock(&M.mu);
    if (leader) {
        if (++M.leading > 1)
            M.violations++;
        M.led[i]++;
        long v = M.counter;
        M.counter = v + 1;
        M.due = i;
        pthread_cond_broadcast(&M.cv);
    } else {
        M.leading--;
    }
    pthread_mutex_unlock(&M.mu);
}

static bool one_due(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&M.mu);
    bool due = M.due >= 0;
    pthread_mutex_unlock(&M.mu);
    return due;
}

START_TEST(test_hundred_candidates_each_lead_once)
{
    int n = tu_under_valgrind() ? 20 : MANY;
    char *p = tu_test_path("many");
    zkl_client *cs[4];
    for (int i = 0; i < 4; i++)
        cs[i] = tu_test_client(15000);
    pthread_mutex_init(&M.mu, NULL);
    pthread_cond_init(&M.cv, NULL);
    M.due = -1;
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(zkl_latch_new(cs[i % 4], p, NULL, &many_l[i]), 0);
        ck_assert_int_eq(zkl_latch_set_listener(many_l[i], on_many, (void *)(intptr_t)i), 0);
        ck_assert_int_eq(zkl_latch_start(many_l[i]), 0);
    }
    int64_t last = 0;
    for (int round = 0; round < n; round++) {
        ck_assert(tu_wait_until(one_due, NULL, 60000));
        pthread_mutex_lock(&M.mu);
        int i = M.due;
        M.due = -1;
        pthread_mutex_unlock(&M.mu);
        ck_assert_int_ge(i, 0);
        int64_t t = latch_token(many_l[i]);
        ck_assert_int_gt(t, last);
        last = t;
        ck_assert_int_eq(zkl_latch_close(many_l[i]), 0);
    }
    ck_assert_int_eq(M.violations, 0);
    ck_assert_int_eq(M.counter, n);
    ck_assert_int_eq(M.leading, 0);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(M.led[i], 1);
        zkl_latch_free(many_l[i]);
    }
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

START_TEST(test_close_while_waiting_and_while_leading)
{
    char *p = tu_test_path("close");
    struct cand a, b;
    leader_and_follower(p, &a, &b);
    ck_assert_int_eq(zkl_latch_close(b.l), 0); /* waiting */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_latch_await(b.l, 0), ZKL_ECLOSED);
    ck_assert_int_eq(zkl_latch_start(b.l), ZKL_ECLOSED);
    ck_assert_int_eq(heard_get(&b.h, &b.h.ones) + heard_get(&b.h, &b.h.zeros), 0);
    ck_assert_int_eq(zkl_latch_close(a.l), 0); /* leading */
    ck_assert_int_eq(heard_get(&a.h, &a.h.zeros), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(zkl_latch_is_leader(a.l), 0);
    ck_assert_int_eq(latch_token(a.l), ZKL_ENOTHELD);
    /* A latch never started closes too; free closes one still open. */
    zkl_latch *x;
    ck_assert_int_eq(zkl_latch_new(a.c, p, "x", &x), 0);
    ck_assert_int_eq(zkl_latch_close(x), 0);
    zkl_latch_free(x);
    ck_assert_int_eq(zkl_latch_new(a.c, p, "y", &x), 0);
    ck_assert_int_eq(zkl_latch_start(x), 0);
    ck_assert_int_eq(zkl_latch_await(x, 20000), 0);
    zkl_latch_free(x);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_latch_free(a.l);
    zkl_latch_free(b.l);
}
END_TEST

/* On an event loop: after zkl_client_event_fd the listener runs only in
 * zkl_client_dispatch, on the loop's thread. */
static pthread_t heard_on;
static int loop_heard = -1;
static void on_loop(zkl_latch *l, int leader, void *arg)
{
    (void)l, (void)arg;
    heard_on = pthread_self();
    loop_heard = leader;
}

START_TEST(test_listener_runs_in_dispatch_on_an_event_loop)
{
    char *p = tu_test_path("loop");
    zkl_client *c = tu_test_client(10000);
    int fd;
    ck_assert_int_eq(zkl_client_event_fd(c, &fd), 0);
    zkl_latch *l;
    ck_assert_int_eq(zkl_latch_new(c, p, "looped", &l), 0);
    ck_assert_int_eq(zkl_latch_set_listener(l, on_loop, NULL), 0);
    ck_assert_int_eq(zkl_latch_start(l), 0);
    /* Leadership comes with the callback, which only dispatch runs. */
    ck_assert(tu_wait_children(tu_fixture_zk, p, 1, 10000));
    ck_assert_int_eq(loop_heard, -1);
    int64_t end = tu_now_ms() + tu_ms(20000);
    while (loop_heard != 1 && tu_now_ms() < end) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 1000) > 0)
            ck_assert_int_ge(zkl_client_dispatch(c), 0);
    }
    ck_assert_int_eq(loop_heard, 1);
    ck_assert(pthread_equal(heard_on, pthread_self()));
    ck_assert_int_eq(zkl_latch_await(l, 0), 0);
    ck_assert_int_eq(zkl_latch_is_leader(l), 1);
    ck_assert_int_eq(zkl_latch_close(l), 0);
    ck_assert_int_eq(loop_heard, 0);
    zkl_latch_free(l);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

START_TEST(test_bad_input_has_clear_codes)
{
    zkl_client *c = tu_client(10000);
    zkl_latch *l = NULL;
    int64_t t;
    ck_assert_int_eq(zkl_latch_new(NULL, "/x", "id", &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_new(c, NULL, "id", &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_new(c, "x", "id", &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_new(c, "/x/", "id", &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_new(c, "/x", "id", NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_start(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_await(NULL, 0), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_is_leader(NULL), 0);
    ck_assert_int_eq(zkl_latch_set_listener(NULL, on_change, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_token(NULL, &t), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_close(NULL), ZKL_EINVAL);
    zkl_latch_free(NULL);

    char *p = tu_test_path("bad");
    ck_assert_int_eq(zkl_latch_new(c, p, "id", &l), 0);
    ck_assert_int_eq(zkl_latch_await(l, 0), ZKL_EINVAL); /* not started */
    ck_assert_int_eq(zkl_latch_token(l, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_latch_start(l), 0);
    ck_assert_int_eq(zkl_latch_start(l), ZKL_EBUSY);
    ck_assert_int_eq(zkl_latch_await(l, 20000), 0);
    /* The client closes under it: the latch ends with ZKL_ECLOSED. */
    zkl_latch *w;
    ck_assert_int_eq(zkl_latch_new(c, p, "w", &w), 0);
    zkl_client_close(c);
    ck_assert_int_eq(zkl_latch_start(w), ZKL_ECLOSED);
    ck_assert_int_eq(zkl_latch_await(l, 10000), ZKL_ECLOSED);
    ck_assert_int_eq(zkl_latch_is_leader(l), 0);
    zkl_latch_free(w);
    zkl_latch_free(l);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 30000));
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    tu_holder_main(argc, argv, lead);
    const TTest *tests[] = {
        test_one_of_three_leads_and_close_hands_over,
        test_sigkilled_leader_process_hands_over,
        test_expired_leader_is_told_and_rejoins_with_a_larger_token,
        test_expired_latch_rejoins_on_its_new_session_with_one_node,
        test_outsider_deleting_the_leaders_node,
        test_a_create_refused_at_once_waits_for_the_next_session,
        test_outsiders_child_ahead_of_the_latches_leads_for_them,
        test_foreign_child_without_latch_in_its_name_sorts_behind_the_latches,
        test_acl_refusing_the_listing_ends_with_enoauth,
        test_hundred_candidates_each_lead_once,
        test_close_while_waiting_and_while_leading,
        test_listener_runs_in_dispatch_on_an_event_loop,
        test_bad_input_has_clear_codes,
        NULL,
    };
    return tu_run_zk_case("latch", 240, tests);
}
