/* The reentrant mutex against a real ZooKeeper. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

/* ---- mutual exclusion, threads ------------------------------------------ */

struct shared_counter {
    zkl_mutex *m;
    struct tu_arena a;
    int per_thread;
};

static void *counter_thread(void *arg)
{
    struct shared_counter *s = arg;
    for (int i = 0; i < s->per_thread; i++) {
        ck_assert_int_eq(zkl_mutex_acquire(s->m, 30000), 0);
        tu_arena_enter(&s->a);
        long v = s->a.counter; /* a deliberately non-atomic read-modify-write */
        sched_yield();
        s->a.counter = v + 1;
        tu_arena_leave(&s->a);
        ck_assert_int_eq(zkl_mutex_release(s->m), 0);
    }
    return NULL;
}

START_TEST(test_mutex_excludes_eight_threads_sharing_one_object)
{
    zkl_client *c = tu_test_client(10000);
    char *p = tu_test_path("threads");
    struct shared_counter s = {.per_thread = 25};
    ck_assert_int_eq(zkl_mutex_new(c, p, &s.m), 0);
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, counter_thread, &s);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(s.a.counter, 8 * 25);
    ck_assert_int_eq(s.a.violations, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_mutex_free(s.m);
}
END_TEST

/* ---- mutual exclusion, processes --------------------------------------- */

enum { PROCS = 4, ITER = 30 };

/* One contender process: ITER times acquire, check, non-atomic increment,
 * release. */
static int counter_worker(const char *path, const char *shm)
{
    struct tu_arena *sh = tu_map_shared(shm, sizeof *sh, 0);
    zkl_client *c = NULL;
    if (sh == NULL || zkl_client_open(tu_hosts(), 10000, &c) != 0)
        return 2;
    zkl_mutex *m;
    if (zkl_mutex_new(c, path, &m) != 0)
        return 3;
    for (int k = 0; k < ITER; k++) {
        if (zkl_mutex_acquire(m, 30000) != 0)
            return 4;
        tu_arena_enter(sh);
        tu_arena_token(sh, tu_mutex_token(m));
        long v = sh->counter;
        usleep(100);
        sh->counter = v + 1;
        tu_arena_leave(sh);
        if (zkl_mutex_release(m) != 0)
            return 5;
    }
    zkl_mutex_free(m);
    zkl_client_close(c);
    munmap(sh, sizeof *sh);
    return 0;
}

START_TEST(test_mutex_excludes_four_processes_with_increasing_tokens)
{
    char *p = tu_test_path("procs");
    struct tu_arena *sh = tu_workers_run_shared("counter", p, sizeof *sh, PROCS);
    ck_assert_int_eq(sh->counter, PROCS * ITER);
    ck_assert_int_eq(sh->violations, 0);
    ck_assert_int_eq(sh->token_errors, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    munmap(sh, sizeof *sh);
}
END_TEST

/* ---- reentrancy, try, timeout, ownership ------------------------------- */

START_TEST(test_mutex_reentrancy_counts_without_new_nodes)
{
    zkl_client *c = tu_test_client(10000);
    char *p = tu_test_path("reentrant");
    zkl_mutex *m = tu_test_mutex(c, p);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(tu_mutex_token(m), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    int64_t tok = tu_mutex_token(m);
    ck_assert_int_gt(tok, 0);
    zkl_client_stats before, after;
    zkl_client_get_stats(c, &before);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    zkl_client_get_stats(c, &after);
    ck_assert_int_eq(after.requests, before.requests); /* no server traffic */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(tu_mutex_token(m), tok);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(zkl_mutex_release(m), 0);
        ck_assert_int_eq(zkl_mutex_is_held(m), 1);
        ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    }
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(zkl_mutex_release(m), ZKL_ENOTHELD); /* double release */
}
END_TEST

/* ---- one wake-up per handoff ------------------------------------------- */

enum { WAITERS = 20 };

struct waiter {
    zkl_client *c;
    zkl_mutex *m;
    pthread_t t;
    int order;
};

static int next_order;
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    ck_assert_int_eq(zkl_mutex_acquire(w->m, 60000), 0);
    pthread_mutex_lock(&order_mu);
    w->order = ++next_order;
    pthread_mutex_unlock(&order_mu);
    ck_assert_int_eq(zkl_mutex_release(w->m), 0);
    return NULL;
}

struct armed {
    struct waiter *w;
};

static bool all_armed(void *arg)
{
    struct waiter *w = arg;
    for (int i = 0; i < WAITERS; i++) {
        zkl_client_stats s;
        zkl_client_get_stats(w[i].c, &s);
        /* create, the watch on its own node, listing, the watch ahead */
        if (s.requests < 4)
            return false;
    }
    return true;
}

START_TEST(test_mutex_release_wakes_exactly_one_of_twenty_waiters)
{
    char *p = tu_test_path("herd");
    zkl_mutex *hm = tu_test_holder(p);
    struct waiter w[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        w[i].c = tu_client(10000);
        ck_assert_int_eq(zkl_mutex_new(w[i].c, p, &w[i].m), 0);
        pthread_create(&w[i].t, NULL, waiter_main, &w[i]);
    }
    ck_assert(tu_wait_children(tu_fixture_zk, p, WAITERS + 1, 20000));
    ck_assert(tu_wait_until(all_armed, w, 20000));
    /* A request sent is not yet a watch set: one round trip on each
     * waiter's session, answered after its watch, before the release. */
    for (int i = 0; i < WAITERS; i++)
        ck_assert_int_eq(tu_round_trip(w[i].c), ZOK);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    for (int i = 0; i < WAITERS; i++)
        pthread_join(w[i].t, NULL);
    /* Twenty handoffs in all; each woke exactly one waiter. */
    uint64_t events = 0;
    for (int i = 0; i < WAITERS; i++) {
        zkl_client_stats s;
        zkl_client_get_stats(w[i].c, &s);
        events += s.watch_events;
        ck_assert_int_le(s.watch_events, 1);
        ck_assert_int_gt(w[i].order, 0);
    }
    ck_assert_int_eq(events, WAITERS);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    for (int i = 0; i < WAITERS; i++) {
        zkl_mutex_free(w[i].m);
        zkl_client_close(w[i].c);
    }
}
END_TEST

/* ---- fencing tokens ------------------------------------------------------ */

struct handoff {
    zkl_mutex *m;
    int64_t *tokens;
    int *n;
    int iters;
    pthread_mutex_t *mu;
};

static void *handoff_main(void *arg)
{
    struct handoff *h = arg;
    for (int i = 0; i < h->iters; i++) {
        ck_assert_int_eq(zkl_mutex_acquire(h->m, 30000), 0);
        h->tokens[(*h->n)++] = tu_mutex_token(h->m); /* under the lock */
        ck_assert_int_eq(zkl_mutex_release(h->m), 0);
    }
    return NULL;
}

START_TEST(test_mutex_tokens_strictly_increase_across_100_handoffs)
{
    char *p = tu_test_path("tokens");
    zkl_client *c1 = tu_test_client(10000), *c2 = tu_test_client(10000);
    zkl_mutex *m1 = tu_test_mutex(c1, p), *m2 = tu_test_mutex(c2, p);
    int64_t tokens[100];
    int n = 0;
    struct handoff h1 = {m1, tokens, &n, 50, NULL}, h2 = {m2, tokens, &n, 50, NULL};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, handoff_main, &h1);
    pthread_create(&t2, NULL, handoff_main, &h2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    ck_assert_int_eq(n, 100);
    for (int i = 1; i < 100; i++)
        ck_assert_msg(tokens[i] > tokens[i - 1], "token %d: %lld after %lld", i,
                      (long long)tokens[i], (long long)tokens[i - 1]);
}
END_TEST

/* ---- crashes and expiry ------------------------------------------------- */

/* The holder worker's hold (tu_holder_main): takes the lock, and gives its
 * token. */
static int hold(zkl_client *c, const char *path, int64_t *token)
{
    zkl_mutex *m;
    if (zkl_mutex_new(c, path, &m) != 0 || zkl_mutex_acquire(m, 10000) != 0)
        return -1;
    *token = tu_mutex_token(m);
    return 0;
}

START_TEST(test_mutex_sigkilled_holder_frees_lock_after_session_timeout)
{
    char *p = tu_test_path("killed");
    int64_t dead_token = tu_holder_kill(p);
    zkl_client *c = tu_client(10000);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_mutex_acquire(m, tu_ms(15000)), 0);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(10000));
    ck_assert_int_gt(tu_mutex_token(m), dead_token);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
}
END_TEST

/* ---- bad input ------------------------------------------------------------ */

START_TEST(test_client_open_fails_when_no_server_answers)
{
    zkl_client *c = NULL;
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_client_open("127.0.0.1:1", 1000, &c), ZKL_ECONNLOSS);
    ck_assert_ptr_null(c);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(5000));
}
END_TEST

START_TEST(test_mutex_creates_missing_parents_as_containers)
{
    char *p = tu_test_path("deep/er/lock");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m = tu_test_held_mutex(c, p);
    const char *node = zkl_mutex_node(m);
    ck_assert_ptr_nonnull(node);
    ck_assert(strncmp(node, p, strlen(p)) == 0);
    ck_assert(strstr(node, "/_c_") != NULL && strstr(node, "-lock-") != NULL);
    struct Stat st;
    ck_assert_int_eq(zoo_exists(tu_fixture_zk, node, 0, &st), ZOK);
    ck_assert_int_eq(st.ephemeralOwner, tu_client_session_id(c));
    ck_assert_int_eq(st.czxid, tu_mutex_token(m));
    char data[128];
    int len = sizeof data - 1;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, node, 0, data, &len, NULL), ZOK);
    data[len] = '\0';
    char want[32];
    snprintf(want, sizeof want, " %ld", (long)getpid());
    ck_assert_msg(strstr(data, want) != NULL, "owner data '%s'", data);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    tu_holder_main(argc, argv, hold);
    if (argc == 5 && strcmp(argv[1], "--worker") == 0) {
        if (strcmp(argv[2], "counter") == 0)
            return counter_worker(argv[3], argv[4]);
        return 64;
    }
    const TTest *tests[] = {
        test_mutex_excludes_eight_threads_sharing_one_object,
        test_mutex_excludes_four_processes_with_increasing_tokens,
        test_mutex_reentrancy_counts_without_new_nodes,
        test_mutex_release_wakes_exactly_one_of_twenty_waiters,
        test_mutex_tokens_strictly_increase_across_100_handoffs,
        test_mutex_sigkilled_holder_frees_lock_after_session_timeout,
        test_client_open_fails_when_no_server_answers,
        test_mutex_creates_missing_parents_as_containers,
        NULL,
    };
    return tu_run_zk_case("mutex", 120, tests);
}
