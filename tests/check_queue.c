/* Long queues against a real ZooKeeper: a waiter whose predecessor leaves
 * early walks back through the nodes it knows instead of listing the whole
 * queue, exclusion holds while waiters give up and nodes are deleted under
 * them, and a queue too long for the server's limit fails clearly and
 * leaves no node of its contender behind. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

enum { CLIENTS = 4, JOINERS = 300 };
/* lib/engine/engine.h's AHEAD_SHORT: a listing longer than this is a long queue. */
enum { AHEAD_SHORT_TEST = 16 };

struct waiter {
    struct tu_arena *sh;
    zkl_mutex *m;
    int timeout_ms;
    int rc;
    atomic_int done;
    pthread_t t;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    int rc = zkl_mutex_acquire(w->m, w->timeout_ms);
    if (rc == 0) {
        struct tu_arena *sh = w->sh;
        tu_arena_enter(sh);
        tu_arena_token(sh, tu_mutex_token(w->m));
        long v = sh->counter; /* a deliberately non-atomic read-modify-write */
        sched_yield();
        sh->counter = v + 1;
        tu_arena_leave(sh);
        rc = zkl_mutex_release(w->m);
    }
    w->rc = rc;
    atomic_store(&w->done, 1);
    return NULL;
}

static void start_waiter(struct waiter *w)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    ck_assert_int_eq(pthread_create(&w->t, &a, waiter_main, w), 0);
    pthread_attr_destroy(&a);
}

static uint64_t listings(zkl_client *const *cs, int n)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        zkl_client_stats st;
        ck_assert_int_eq(zkl_client_get_stats(cs[i], &st), 0);
        sum += st.listings;
    }
    return sum;
}

/* The full path of a child of lock path `dir` other than the holder's
 * node `holder_name`, picked at random, or NULL. */
static char *random_waiter_node(const char *dir, const char *holder_name, unsigned *seed)
{
    struct String_vector kids = {0, NULL};
    if (zoo_get_children(tu_fixture_zk, dir, 0, &kids) != ZOK || kids.count < 2) {
        deallocate_String_vector(&kids);
        return NULL;
    }
    char *pick = NULL;
    for (int tries = 0; tries < 8 && pick == NULL; tries++) {
        const char *k = kids.data[rand_r(seed) % (unsigned)kids.count];
        if (strcmp(k, holder_name) != 0 && (pick = malloc(strlen(dir) + strlen(k) + 2)) != NULL)
            sprintf(pick, "%s/%s", dir, k);
    }
    deallocate_String_vector(&kids);
    return pick;
}

/* 240 waiters on four clients queue one by one behind a holder; every
 * fourth gives up (its client is cancelled) while the holder holds. Their
 * successors walk back to the node ahead, which still exists: a few
 * listings at most, not one per waiter that gave up. Then another session
 * deletes random waiters' nodes (they queue again), the holder releases,
 * and the lock passes through every remaining waiter, one at a time, with
 * strictly increasing tokens; no node is left. */
START_TEST(test_long_queue_walks_back_past_waiters_that_give_up)
{
    enum { N = 240, DELETED = 20 };
    char *p = tu_test_path("walk");
    zkl_client *hc = tu_test_client(20000);
    zkl_mutex *hm;
    ck_assert_int_eq(zkl_mutex_new(hc, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 10000), 0);
    zkl_client *stay[CLIENTS], *quit[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        stay[i] = tu_client(20000);
        quit[i] = tu_client(20000);
    }
    struct tu_arena sh = {.last_token = tu_mutex_token(hm)};
    struct waiter *ws = calloc(N, sizeof *ws);
    ck_assert_ptr_nonnull(ws);
    int quitters = 0;
    for (int i = 0; i < N; i++) {
        bool quits = i % 4 == 1;
        quitters += quits;
        zkl_client *c = quits ? quit[i / 4 % CLIENTS] : stay[i % CLIENTS];
        ws[i] = (struct waiter){.sh = &sh, .timeout_ms = 120000};
        ck_assert_int_eq(zkl_mutex_new(c, p, &ws[i].m), 0);
        start_waiter(&ws[i]);
        /* one at a time: the queue's order is the waiters' order */
        ck_assert(tu_wait_children(tu_fixture_zk, p, i + 2, 10000));
    }
    tu_drain(stay, CLIENTS);
    uint64_t before = listings(stay, CLIENTS);
    for (int i = 0; i < CLIENTS; i++)
        ck_assert_int_eq(zkl_client_cancel(quit[i]), 0);
    for (int i = 1; i < N; i += 4) {
        pthread_join(ws[i].t, NULL);
        ck_assert_int_eq(ws[i].rc, ZKL_ECANCELED);
    }
    int left = 1 + N - quitters;
    ck_assert(tu_wait_children(tu_fixture_zk, p, left, 10000));
    tu_drain(stay, CLIENTS);
    uint64_t walked = listings(stay, CLIENTS) - before;
    /* Without walking back, one listing per waiter giving up (60). With
     * it, the listings a client sends before it learns that walking pays
     * (those that left at once all list), and none after. */
    ck_assert_msg(walked <= (uint64_t)quitters / 3, "%llu listings for %d waiters giving up",
                  (unsigned long long)walked, quitters);

    /* Nodes deleted under their waiters: those queue again, at the end. */
    char holder_name[256];
    const char *hp = zkl_mutex_node(hm);
    ck_assert_ptr_nonnull(hp);
    snprintf(holder_name, sizeof holder_name, "%s", strrchr(hp, '/') + 1);
    unsigned seed = 42;
    for (int d = 0; d < DELETED; d++) {
        char *victim = random_waiter_node(p, holder_name, &seed);
        if (victim == NULL)
            continue;
        int rc = zoo_delete(tu_fixture_zk, victim, -1);
        ck_assert(rc == ZOK || rc == ZNONODE);
        free(victim);
    }
    ck_assert(tu_wait_children(tu_fixture_zk, p, left, 20000)); /* all queued again */

    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    for (int i = 0; i < N; i++) {
        if (i % 4 == 1)
            continue;
        pthread_join(ws[i].t, NULL);
        ck_assert_int_eq(ws[i].rc, 0);
    }
    ck_assert_int_eq(sh.violations, 0);
    ck_assert_int_eq(sh.token_errors, 0);
    ck_assert_int_eq(sh.counter, N - quitters);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    for (int i = 0; i < N; i++)
        zkl_mutex_free(ws[i].m);
    free(ws);
    zkl_mutex_free(hm);
    for (int i = 0; i < CLIENTS; i++) {
        zkl_client_close(stay[i]);
        zkl_client_close(quit[i]);
    }
}
END_TEST

struct queued {
    const char *path;
    struct waiter *ws;
    int n;
};

/* Nodes under the path (the holder's too) and waiters done add up to all
 * contenders. */
static bool all_queued_or_done(void *arg)
{
    struct queued *q = arg;
    int done = 0;
    for (int i = 0; i < q->n; i++)
        done += atomic_load(&q->ws[i].done);
    return tu_children(tu_fixture_zk, q->path) + done >= q->n + 1;
}

/* Random waiters of a queue of 200 give up at random moments while the
 * lock passes along: exclusion and token order hold, every waiter either
 * acquires or times out, and no node is left. */
START_TEST(test_queue_with_random_quitters_keeps_one_holder)
{
    enum { N = 200 };
    char *p = tu_test_path("random");
    zkl_client *cs[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        cs[i] = tu_client(20000);
    zkl_client *hc = tu_test_client(20000);
    zkl_mutex *hm;
    ck_assert_int_eq(zkl_mutex_new(hc, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 10000), 0);
    struct tu_arena sh = {.last_token = tu_mutex_token(hm)};
    struct waiter *ws = calloc(N, sizeof *ws);
    ck_assert_ptr_nonnull(ws);
    unsigned seed = 7;
    for (int i = 0; i < N; i++) {
        /* a third give up after 0.5 to 2.5 s, the others wait long enough */
        int t = rand_r(&seed) % 3 == 0 ? 500 + rand_r(&seed) % 2000 : 120000;
        ws[i] = (struct waiter){.sh = &sh, .timeout_ms = t};
        ck_assert_int_eq(zkl_mutex_new(cs[i % CLIENTS], p, &ws[i].m), 0);
        start_waiter(&ws[i]);
    }
    /* Every waiter queued or already given up (a short timeout may run out
     * before the last waiter has even started, under valgrind say). */
    struct queued qd = {p, ws, N};
    ck_assert(tu_wait_until(all_queued_or_done, &qd, 30000));
    /* hold a little while some give up, then let the lock pass */
    (void)tu_wait_children(tu_fixture_zk, p, N, 600);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    int acquired = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(ws[i].t, NULL);
        ck_assert_msg(ws[i].rc == 0 || (ws[i].rc == ZKL_ETIMEDOUT && ws[i].timeout_ms < 120000),
                      "waiter %d: %s", i, zkl_err_name(ws[i].rc));
        acquired += ws[i].rc == 0;
    }
    ck_assert_int_eq(sh.violations, 0);
    ck_assert_int_eq(sh.token_errors, 0);
    ck_assert_int_eq(sh.counter, acquired);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 10000));
    for (int i = 0; i < N; i++)
        zkl_mutex_free(ws[i].m);
    free(ws);
    zkl_mutex_free(hm);
    for (int i = 0; i < CLIENTS; i++)
        zkl_client_close(cs[i]);
}
END_TEST

enum { MAXW = 24 };

/* W clients with one waiter each (with prefetch or not) queue in order on
 * path `leaf` behind a holder, which then releases: the lock passes through
 * all of them, one at a time, in token order. req[i] and lst[i]: the
 * requests and listings waiter i's client sent after joining. */
static void one_waiter_queue(const char *leaf, int W, bool prefetch, uint64_t *req,
                             uint64_t *lst)
{
    ck_assert_int_le(W, MAXW);
    char *p = tu_path(leaf);
    zkl_client *hc = tu_client(20000);
    zkl_mutex *hm;
    ck_assert_int_eq(zkl_mutex_new(hc, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 10000), 0);
    zkl_lock_opts *lo;
    ck_assert_int_eq(zkl_lock_opts_new(&lo), 0);
    ck_assert_int_eq(zkl_lock_opts_set_prefetch(lo, prefetch), 0);
    zkl_client *cs[MAXW];
    struct tu_arena sh = {.last_token = tu_mutex_token(hm)};
    struct waiter ws[MAXW];
    for (int i = 0; i < W; i++) {
        cs[i] = tu_client(20000);
        ws[i] = (struct waiter){.sh = &sh, .timeout_ms = 60000};
        ck_assert_int_eq(zkl_mutex_new_opts(cs[i], p, lo, &ws[i].m), 0);
        start_waiter(&ws[i]);
        ck_assert(tu_wait_children(tu_fixture_zk, p, i + 2, 10000));
    }
    zkl_lock_opts_free(lo);
    tu_drain(cs, W);
    zkl_client_stats s0[MAXW];
    for (int i = 0; i < W; i++)
        ck_assert_int_eq(zkl_client_get_stats(cs[i], &s0[i]), 0);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    for (int i = 0; i < W; i++) {
        pthread_join(ws[i].t, NULL);
        ck_assert_msg(ws[i].rc == 0, "waiter %d: %s", i, zkl_err_name(ws[i].rc));
    }
    ck_assert_int_eq(sh.violations, 0);
    ck_assert_int_eq(sh.token_errors, 0);
    ck_assert_int_eq(sh.counter, W);
    for (int i = 0; i < W; i++) {
        zkl_client_stats s1;
        ck_assert_int_eq(zkl_client_get_stats(cs[i], &s1), 0);
        req[i] = s1.requests - s0[i].requests;
        lst[i] = s1.listings - s0[i].listings;
    }
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 10000));
    for (int i = 0; i < W; i++) {
        zkl_mutex_free(ws[i].m);
        zkl_client_close(cs[i]);
    }
    zkl_mutex_free(hm);
    zkl_client_close(hc);
    free(p);
}

/* A long queue of clients with one waiter each, joined in order: as the lock
 * passes along, each waiter far back hears its predecessor go and lists
 * once (a handoff in order: every node it kept ahead is gone), holds, and
 * deletes; it probes no node ahead first. Such a client has no other
 * waiter of its own whose holding would show that the queue moves, so it
 * may not take "none of mine has held" as a sign that the queue stands. */
START_TEST(test_one_waiter_clients_in_a_long_queue_list_once_per_handoff)
{
    enum { W = AHEAD_SHORT_TEST + 8 };
    uint64_t req[W], lst[W];
    one_waiter_queue("mates", W, false, req, lst);
    /* Waiters that listed a long queue on joining (more than AHEAD_SHORT
     * nodes: the holder and those ahead) kept only the nearest nodes. */
    for (int i = AHEAD_SHORT_TEST; i < W; i++)
        ck_assert_msg(lst[i] == 1 && req[i] == 2,
                      "waiter %d: %llu listings, %llu requests after joining", i,
                      (unsigned long long)lst[i], (unsigned long long)req[i]);
}
END_TEST

/* Prefetch in a queue of one-waiter clients joined in order: a waiter
 * watches the node ahead and the one before it. When that one goes (it
 * held and released), the nodes older still are gone as well; one listing
 * says so and that the node ahead now holds, where walking back would ask
 * each of them in turn. So each waiter sends one listing and its delete
 * after joining, however far back it queued, and holds without listing
 * when the node ahead goes; in a long queue as well, where a waiter kept
 * only the nearest nodes ahead and would list after walking them. */
static void prefetch_queue(int W)
{
    uint64_t req[MAXW], lst[MAXW];
    one_waiter_queue("prefetch", W, true, req, lst);
    for (int i = 0; i < W; i++)
        /* the first two knew the holder's node was first: the delete only */
        ck_assert_msg(lst[i] <= 1 && req[i] <= 2 && (i >= 2 || req[i] == 1),
                      "queue of %d, waiter %d: %llu listings, %llu requests after joining", W, i,
                      (unsigned long long)lst[i], (unsigned long long)req[i]);
}

START_TEST(test_prefetch_waiters_list_once_instead_of_walking_back)
{
    prefetch_queue(10); /* a short queue: every node ahead is kept */
    prefetch_queue(24); /* a long one (over AHEAD_SHORT): the nearest four */
}
END_TEST

/* ---- shared listings -------------------------------------------------------- */

struct joiner {
    atomic_int done, held, failed, inside, overlap;
};

static void joiner_cb(zkl_request *r, int result, void *arg)
{
    struct joiner *j = arg;
    if (result == 0) {
        if (atomic_fetch_add(&j->inside, 1) != 0)
            atomic_fetch_add(&j->overlap, 1);
        atomic_fetch_add(&j->held, 1);
        atomic_fetch_sub(&j->inside, 1);
        if (zkl_request_release(r) != 0)
            atomic_fetch_add(&j->failed, 1);
    } else {
        atomic_fetch_add(&j->failed, 1);
    }
    atomic_fetch_add(&j->done, 1);
}

static bool joiners_done(void *arg)
{
    struct joiner *j = arg;
    return atomic_load(&j->done) == JOINERS;
}

static void harness_node(const char *verb)
{
    const char *h = getenv("ZKL_HARNESS"), *dir = getenv("ZKL_TEST_ZKDIR");
    ck_assert_msg(h && dir, "ZKL_HARNESS/ZKL_TEST_ZKDIR not set: run through tests/with-zk.sh");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' 1 >/dev/null 2>&1", h, verb, dir);
    ck_assert_int_eq(system(cmd), 0);
}

struct client_state {
    zkl_client *c;
    enum zkl_state want;
};

static bool client_in_state(void *arg)
{
    struct client_state *s = arg;
    enum zkl_state st = zkl_client_state(s->c);
    return st == s->want || (s->want == ZKL_STATE_CONNECTED && st == ZKL_STATE_RECONNECTED);
}

struct two_done {
    struct joiner *j;
    int n;
};

static bool joiners_at(void *arg)
{
    struct two_done *t = arg;
    return atomic_load(&t->j->done) >= t->n;
}

/* Waiters of one session on one lock path share their listings: while one
 * is in flight, those who ask wait for the next. Joined while the server is
 * paused (no answer can come in between), JOINERS waiters take two
 * listings, not one each, and then hold one at a time. */
START_TEST(test_waiters_of_one_session_share_their_listings)
{
    char *p = tu_test_path("shared");
    zkl_client *hc = tu_test_client(20000), *c = tu_test_client(20000);
    zkl_mutex *hm = tu_test_mutex(hc, p), *m = tu_test_mutex(c, p);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    zkl_client_stats s0, s1;
    ck_assert_int_eq(zkl_client_get_stats(c, &s0), 0);
    struct joiner j = {0};
    zkl_request **rs = calloc(JOINERS, sizeof *rs);
    harness_node("pause-node");
    for (int i = 0; i < JOINERS; i++)
        ck_assert_int_eq(zkl_mutex_acquire_async(m, 60000, joiner_cb, &j, &rs[i]), 0);
    harness_node("resume-node");
    ck_assert(tu_wait_children(tu_fixture_zk, p, JOINERS + 1, 30000));
    /* The second listing is sent once the first answers, a moment after
     * the nodes show: wait for it, then let anything that would follow it
     * be sent too before counting. */
    tu_wait_stat(c, TU_STAT(listings), s0.listings + 2);
    tu_drain(&c, 1);
    ck_assert_int_eq(zkl_client_get_stats(c, &s1), 0);
    ck_assert_uint_eq(s1.listings - s0.listings, 2);
    ck_assert_int_eq(atomic_load(&j.done), 0);

    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    ck_assert(tu_wait_until(joiners_done, &j, 60000));
    ck_assert_int_eq(atomic_load(&j.held), JOINERS);
    ck_assert_int_eq(atomic_load(&j.failed), 0);
    ck_assert_int_eq(atomic_load(&j.overlap), 0);
    for (int i = 0; i < JOINERS; i++)
        zkl_request_free(rs[i]);
    free(rs);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 10000));
}
END_TEST

/* A session given up (the loss rule: the server paused) while two of its
 * waiters shared a listing that never answered: libzookeeper_mt drops what
 * is pending when the handle closes, and the next session's handle may get
 * the same address. The next session's waiters on that path must list and
 * hold all the same, not wait behind the stale listing. */
START_TEST(test_a_session_given_up_with_a_shared_listing_in_flight_leaves_no_stale_wait)
{
    char *p = tu_test_path("stale");
    zkl_client *c = tu_test_client(4000);
    zkl_mutex *m1 = tu_test_mutex(c, p), *m2 = tu_test_mutex(c, p);
    /* Three rounds: the first session's handle was made by this thread, the
     * later ones by the client's keeper thread, one after another. */
    for (int round = 0; round < 3; round++) {
        int64_t sid0 = 0, sid1 = 0;
        ck_assert_int_eq(zkl_client_session_id(c, &sid0), 0);
        zhandle_t *zh0 = zkl_client_handle(c);
        struct joiner j = {0};
        zkl_request *r1, *r2;
        harness_node("pause-node");
        ck_assert_int_eq(zkl_mutex_acquire_async(m1, 30000, joiner_cb, &j, &r1), 0);
        ck_assert_int_eq(zkl_mutex_acquire_async(m2, 30000, joiner_cb, &j, &r2), 0);
        struct client_state lost = {c, ZKL_STATE_LOST};
        bool given_up = tu_wait_until(client_in_state, &lost, 15000);
        harness_node("resume-node");
        ck_assert_msg(given_up, "round %d: the session was not given up while the server was "
                      "paused", round);
        struct two_done both = {&j, 2};
        ck_assert(tu_wait_until(joiners_at, &both, 15000));
        ck_assert_int_eq(atomic_load(&j.held), 0);
        zkl_request_free(r1);
        zkl_request_free(r2);

        /* A new session, re-opened by the client, on a handle that may sit
         * where the old one did. */
        struct client_state up = {c, ZKL_STATE_CONNECTED};
        ck_assert(tu_wait_until(client_in_state, &up, 15000));
        ck_assert_int_eq(zkl_client_session_id(c, &sid1), 0);
        ck_assert(sid1 != sid0);
        bool same = zkl_client_handle(c) == zh0;
        struct joiner j2 = {0};
        ck_assert_int_eq(zkl_mutex_acquire_async(m1, 10000, joiner_cb, &j2, &r1), 0);
        ck_assert_int_eq(zkl_mutex_acquire_async(m2, 10000, joiner_cb, &j2, &r2), 0);
        struct two_done both2 = {&j2, 2};
        ck_assert(tu_wait_until(joiners_at, &both2, 20000));
        ck_assert_msg(atomic_load(&j2.held) == 2 && atomic_load(&j2.failed) == 0,
                      "round %d (handle %s): %d held, %d failed", round,
                      same ? "at the old one's address" : "elsewhere", atomic_load(&j2.held),
                      atomic_load(&j2.failed));
        ck_assert_int_eq(atomic_load(&j2.overlap), 0);
        zkl_request_free(r1);
        zkl_request_free(r2);
    }
    /* the old sessions' nodes, if their creates were applied, go with them */
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 15000));
}
END_TEST

/* ---- a queue over the server's limit ------------------------------------ */

static char zkdir[256];

/* A private server whose jute.maxbuffer is `bytes`; its connect string goes
 * to `hosts`. */
static void small_server_start(int bytes, char *hosts, size_t len)
{
    snprintf(zkdir, sizeof zkdir, "/tmp/zkl-queue-zk.XXXXXX");
    char extra[64];
    snprintf(extra, sizeof extra, "-Djute.maxbuffer=%d", bytes);
    tu_private_zk_start(zkdir, extra, hosts, len);
}

static void small_server_stop(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' stop '%s' >/dev/null 2>&1; rm -rf '%s'", tu_harness_path(),
             zkdir, zkdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not stop %s\n", zkdir);
}

static int count_children(zhandle_t *zh, const char *path)
{
    struct Stat st;
    return zoo_exists(zh, path, 0, &st) == ZOK ? st.numChildren : -1;
}

/* With the server's jute.maxbuffer at 16 KiB (and the client told so), a
 * lock path with 400 waiting Curator-style nodes (about 24 KB to list) is
 * over the limit: each contender of each recipe that lists it returns
 * ZKL_EQUEUE within a second or two, not at its deadline, after one
 * listing, and its own node is gone again. */
START_TEST(test_queue_over_the_servers_limit_fails_clearly_and_leaves_no_node)
{
    enum { LIMIT = 16384, NODES = 400 };
    char hosts[256];
    small_server_start(LIMIT, hosts, sizeof hosts);
    zhandle_t *zh = tu_zk_to(hosts);
    const char *dir = "/full";
    ck_assert_int_eq(zoo_create(zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    char name[128];
    for (int i = 0; i < NODES; i++) {
        snprintf(name, sizeof name, "%s/_c_%08x-0000-4000-8000-000000000000-lock-", dir, i);
        ck_assert_int_eq(zoo_create(zh, name, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                                    ZOO_EPHEMERAL | ZOO_SEQUENCE, NULL, 0),
                         ZOK);
    }
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_max_request(o, LIMIT), 0);
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open_opts(hosts, 20000, o, &c), 0);
    zkl_client_opts_free(o);

    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, dir, &m), 0);
    zkl_client_stats s0, s1;
    ck_assert_int_eq(zkl_client_get_stats(c, &s0), 0);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_mutex_acquire(m, tu_ms(30000)), ZKL_EQUEUE);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(5000)); /* no wait to the deadline */
    ck_assert_int_eq(zkl_client_get_stats(c, &s1), 0);
    ck_assert_uint_le(s1.listings - s0.listings, 2); /* no listing loop */
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(count_children(zh, dir), NODES); /* ours is gone */
    /* The text names the path and how many children it has. */
    ck_assert_msg(strstr(zkl_last_error_text(), "children") != NULL &&
                      strstr(zkl_last_error_text(), dir) != NULL,
                  "%s", zkl_last_error_text());
    /* A listing of the participants says the same, not "nobody". */
    zkl_participant *ps;
    size_t np;
    ck_assert_int_eq(zkl_participants_list(c, dir, &ps, &np), ZKL_EQUEUE);
    ck_assert_msg(strstr(zkl_last_error_text(), "400 children") != NULL, "%s",
                  zkl_last_error_text());
    ck_assert_ptr_nonnull(strstr(zkl_strerror(ZKL_EQUEUE), "jute.maxbuffer"));
    ck_assert_str_eq(zkl_err_name(ZKL_EQUEUE), "EQUEUE");

    /* the other recipes that queue on a lock path say the same */
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, dir, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 30000), ZKL_EQUEUE);
    ck_assert_int_eq(count_children(zh, dir), NODES);
    zkl_rwlock_free(rw);

    /* Shorter again, the queue works as before. */
    struct String_vector kids = {0, NULL};
    ck_assert_int_eq(zoo_get_children(zh, dir, 0, &kids), ZOK);
    for (int i = 0; i < kids.count; i++) {
        char full[256];
        snprintf(full, sizeof full, "%s/%s", dir, kids.data[i]);
        ck_assert_int_eq(zoo_delete(zh, full, -1), ZOK);
    }
    deallocate_String_vector(&kids);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(count_children(zh, dir), 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
    zookeeper_close(zh);
    small_server_stop();
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_long_queue_walks_back_past_waiters_that_give_up,
        test_queue_with_random_quitters_keeps_one_holder,
        test_waiters_of_one_session_share_their_listings,
        test_one_waiter_clients_in_a_long_queue_list_once_per_handoff,
        test_prefetch_waiters_list_once_instead_of_walking_back,
        test_a_session_given_up_with_a_shared_listing_in_flight_leaves_no_stale_wait,
        test_queue_over_the_servers_limit_fails_clearly_and_leaves_no_node,
        NULL,
    };
    return tu_run_zk_case("queue", 240, tests);
}
