/* The engine's fast paths against a real ZooKeeper: handoffs with prefetch
 * under fast turnover (where a deletion races a listing in flight), waiters
 * that give up in front of others, and creating a missing lock path. Only
 * correctness is checked here; speed is tools/zkl-bench's business. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

/* ---- exclusion under fast turnover --------------------------------------- */

struct arena {
    struct tu_arena x;
    atomic_int failures;
};

struct contender {
    struct arena *a;
    zkl_client *c;
    zkl_mutex *m;
    int iters;
};

static void *contender_main(void *arg)
{
    struct contender *k = arg;
    for (int i = 0; i < k->iters; i++) {
        if (zkl_mutex_acquire(k->m, 60000) != 0) {
            atomic_fetch_add(&k->a->failures, 1);
            return NULL;
        }
        struct tu_arena *x = &k->a->x;
        tu_arena_enter(x);
        tu_arena_token(x, tu_mutex_token(k->m));
        long v = x->counter; /* a deliberately non-atomic read-modify-write */
        if (i % 4 == 0)
            sched_yield();
        x->counter = v + 1;
        tu_arena_leave(x);
        /* Released at once: the next holder's listing and this delete race. */
        if (zkl_mutex_release(k->m) != 0) {
            atomic_fetch_add(&k->a->failures, 1);
            return NULL;
        }
    }
    return NULL;
}

static void run_contenders(const char *p, unsigned flags, int n, int iters)
{
    struct arena a = {.x.last_token = 0};
    struct contender k[16];
    pthread_t t[16];
    ck_assert_int_le(n, 16);
    for (int i = 0; i < n; i++) {
        k[i] = (struct contender){.a = &a, .c = tu_client(10000), .iters = iters};
        ck_assert_int_eq(tu_mutex_new_prefetch(k[i].c, p, flags, &k[i].m), 0);
    }
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, contender_main, &k[i]), 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&a.failures), 0);
    ck_assert_int_eq(a.x.violations, 0);
    ck_assert_int_eq(a.x.token_errors, 0);
    ck_assert_int_eq(a.x.counter, (long)n * iters);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    for (int i = 0; i < n; i++) {
        zkl_mutex_free(k[i].m);
        zkl_client_close(k[i].c);
    }
}

START_TEST(test_prefetch_mutex_excludes_eight_sessions_releasing_at_once)
{
    char *p = tu_test_path("prefetch8");
    run_contenders(p, true, 8, 40);
}
END_TEST

START_TEST(test_default_mutex_excludes_eight_sessions_releasing_at_once)
{
    char *p = tu_test_path("default8");
    run_contenders(p, 0, 8, 40);
}
END_TEST

/* ---- waiters that give up in front of others ----------------------------- */

struct waiter {
    zkl_client *c;
    zkl_mutex *m;
    zkl_cancel *quit; /* NULL: waits on */
    int rc;
    int release_rc;
    atomic_int held; /* set once acquire returned 0 */
    atomic_int *holder_inside;
    atomic_int early; /* held while the first holder still held */
    pthread_t t;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->rc = zkl_mutex_acquire_cancellable(w->m, ZKL_WAIT_FOREVER, w->quit);
    if (w->rc == 0) {
        if (atomic_load(w->holder_inside))
            atomic_store(&w->early, 1);
        atomic_store(&w->held, 1);
        usleep(20000);
        w->release_rc = zkl_mutex_release(w->m);
    }
    return NULL;
}

/* Queue: holder, two waiters that give up at the same moment (one cancel
 * handle fired once the queue is whole: a timeout would run from each
 * thread's start, and a slow machine could see the first give up before the
 * last is queued), then two that wait on (with prefetch, the third watches
 * both quitters: their deletions reach it one while the listing the other
 * caused is in flight). Nobody may hold before the holder releases, and
 * then everyone left gets the lock. */
static void quitters_case(unsigned flags)
{
    char *p = tu_path(flags ? "quit-prefetch" : "quit-default");
    zkl_client *hc = tu_client(10000);
    zkl_mutex *hm;
    ck_assert_int_eq(tu_mutex_new_prefetch(hc, p, flags, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 10000), 0);
    atomic_int holder_inside;
    atomic_init(&holder_inside, 1);
    enum { N = 4 };
    struct waiter w[N];
    zkl_cancel *quit;
    ck_assert_int_eq(zkl_cancel_new(&quit), 0);
    for (int i = 0; i < N; i++) {
        w[i] = (struct waiter){.c = tu_client(10000), .holder_inside = &holder_inside};
        atomic_init(&w[i].held, 0);
        atomic_init(&w[i].early, 0);
        w[i].quit = i < 2 ? quit : NULL;
        ck_assert_int_eq(tu_mutex_new_prefetch(w[i].c, p, flags, &w[i].m), 0);
    }
    /* One at a time, so that the queue has this order. */
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(pthread_create(&w[i].t, NULL, waiter_main, &w[i]), 0);
        ck_assert(tu_wait_children_at_least(tu_fixture_zk, p, i + 2, 20000));
    }
    ck_assert_int_eq(zkl_cancel_fire(quit), 0);
    pthread_join(w[0].t, NULL);
    pthread_join(w[1].t, NULL);
    ck_assert_int_eq(w[0].rc, ZKL_ECANCELED);
    ck_assert_int_eq(w[1].rc, ZKL_ECANCELED);
    zkl_cancel_free(quit);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 3, 20000)); /* the holder, two waiters */
    /* The two left have acted on the quitters' deletes (each event, the
     * listing it caused and the watches after it answered before round
     * trips on their sessions): a wrong handoff was decided by now. A
     * moment more for such a waiter's thread to return and show it. */
    zkl_client *left[2] = {w[2].c, w[3].c};
    tu_drain(left, 2);
    usleep((useconds_t)tu_ms(100) * 1000);
    ck_assert_int_eq(atomic_load(&w[2].held), 0);
    ck_assert_int_eq(atomic_load(&w[3].held), 0);
    atomic_store(&holder_inside, 0);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    pthread_join(w[2].t, NULL);
    pthread_join(w[3].t, NULL);
    ck_assert_int_eq(w[2].rc, 0);
    ck_assert_int_eq(w[3].rc, 0);
    ck_assert_int_eq(w[2].release_rc, 0);
    ck_assert_int_eq(w[3].release_rc, 0);
    ck_assert_int_eq(atomic_load(&w[2].early), 0);
    ck_assert_int_eq(atomic_load(&w[3].early), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    for (int i = 0; i < N; i++) {
        zkl_mutex_free(w[i].m);
        zkl_client_close(w[i].c);
    }
    zkl_mutex_free(hm);
    zkl_client_close(hc);
    free(p);
}

START_TEST(test_prefetch_waiters_behind_quitters_wait_for_the_holder)
{
    quitters_case(true);
}
END_TEST

START_TEST(test_default_waiters_behind_quitters_wait_for_the_holder)
{
    quitters_case(0);
}
END_TEST

/* ---- routing watch events in a client that holds many locks ------------- */

/* One client holds 300 locks and queues three threads (own mutex objects,
 * prefetch on) behind a holder on another client, on one path: every
 * handoff event must still find its waiter among all those nodes, and the
 * waiters must still get the lock in turn. */
START_TEST(test_client_holding_many_locks_still_routes_each_handoff)
{
    enum { HELD = 300, W = 3 };
    zkl_client *busy = tu_test_client(10000);
    zkl_mutex *held[HELD];
    char leaf[64];
    for (int i = 0; i < HELD; i++) {
        snprintf(leaf, sizeof leaf, "held/%d", i);
        char *hp = tu_path(leaf);
        ck_assert_int_eq(zkl_mutex_new(busy, hp, &held[i]), 0);
        ck_assert_int_eq(zkl_mutex_acquire(held[i], 10000), 0);
        free(hp);
    }
    char *p = tu_test_path("shared");
    zkl_mutex *hm = tu_test_holder(p);
    zkl_mutex *wm[W];
    zkl_lock *wl[W];
    struct tu_acquirer w[W];
    for (int i = 0; i < W; i++) {
        ck_assert_int_eq(tu_mutex_new_prefetch(busy, p, true, &wm[i]), 0);
        ck_assert_int_eq(zkl_mutex_as_lock(wm[i], &wl[i]), 0);
        tu_acquirer_start(&w[i], wl[i], 60000, true);
    }
    ck_assert(tu_wait_children_at_least(tu_fixture_zk, p, W + 1, 20000));
    /* Every waiter's listing and watches answered, and a moment for a
     * wrong grant's thread to show it. */
    tu_drain(&busy, 1);
    usleep((useconds_t)tu_ms(100) * 1000);
    for (int i = 0; i < W; i++)
        ck_assert(!tu_acquirer_got(&w[i]));
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    for (int i = 0; i < W; i++) {
        ck_assert_int_eq(tu_acquirer_join(&w[i]), 0);
        ck_assert_int_eq(w[i].release_rc, 0);
        zkl_lock_free(wl[i]);
        zkl_mutex_free(wm[i]);
    }
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    for (int i = 0; i < HELD; i++) {
        ck_assert_int_eq(zkl_mutex_is_held(held[i]), 1);
        ck_assert_int_eq(zkl_mutex_release(held[i]), 0);
        zkl_mutex_free(held[i]);
    }
}
END_TEST

/* ---- repeated acquisitions of a lock path used by nobody else ------------- *
 * After a few of them, an acquire is its create alone (the create's sequence
 * number proves the path held nothing else). These check that the proof is
 * never taken for more than it shows. */

static int64_t node_seq(const char *node)
{
    size_t len = strlen(node);
    ck_assert_uint_ge(len, 10);
    return strtoll(node + len - 10, NULL, 10);
}

/* `rounds` acquire+release cycles; returns the sequence of the last node. */
static int64_t cycle_alone(zkl_mutex *m, int rounds)
{
    int64_t seq = -1;
    for (int i = 0; i < rounds; i++) {
        ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
        seq = node_seq(zkl_mutex_node(m));
        ck_assert_int_eq(zkl_mutex_release(m), 0);
    }
    return seq;
}

/* An acquire of `m` in a thread of its own, to its end; its code. A lock
 * got is released there. */
static int try_lock(zkl_mutex *m, long timeout_ms)
{
    zkl_lock *l;
    ck_assert_int_eq(zkl_mutex_as_lock(m, &l), 0);
    struct tu_acquirer a;
    tu_acquirer_start(&a, l, timeout_ms, true);
    int rc = tu_acquirer_join(&a);
    ck_assert_int_eq(a.release_rc, 0);
    zkl_lock_free(l);
    return rc;
}

START_TEST(test_acquires_alone_skip_the_listing_yet_exclude_the_same_clients_thread)
{
    char *p = tu_test_path("alone-threads");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m = tu_test_mutex(c, p), *m2 = tu_test_mutex(c, p);
    zkl_client_stats s0, s1;
    ck_assert_int_eq(zkl_client_get_stats(c, &s0), 0);
    cycle_alone(m, 10);
    ck_assert_int_eq(zkl_client_get_stats(c, &s1), 0);
    /* The mechanism is in use: most of those acquires sent no listing. */
    ck_assert_uint_le(s1.listings - s0.listings, 4);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    /* Another thread of the same client, on the same path: must wait. */
    ck_assert_int_eq(try_lock(m2, 500), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(try_lock(m2, 10000), 0);
    cycle_alone(m, 3);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

START_TEST(test_acquires_alone_wait_once_another_client_holds)
{
    char *p = tu_test_path("alone-clients");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_mutex *ma = tu_test_mutex(a, p), *mb = tu_test_mutex(b, p);
    cycle_alone(ma, 10);
    ck_assert_int_eq(zkl_mutex_acquire(mb, 10000), 0);
    ck_assert_int_eq(zkl_mutex_acquire(ma, 500), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_acquire(ma, 500), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_release(mb), 0);
    cycle_alone(ma, 5);
    /* B queued behind A's hold, A released: the next acquire must see B. */
    ck_assert_int_eq(zkl_mutex_acquire(ma, 10000), 0);
    zkl_lock *lb;
    ck_assert_int_eq(zkl_mutex_as_lock(mb, &lb), 0);
    struct tu_acquirer t;
    tu_acquirer_start(&t, lb, 20000, true);
    ck_assert(tu_wait_children_at_least(tu_fixture_zk, p, 2, 20000));
    ck_assert_int_eq(zkl_mutex_release(ma), 0);
    ck_assert_int_eq(tu_acquirer_join(&t), 0);
    ck_assert_int_eq(t.release_rc, 0);
    zkl_lock_free(lb);
    cycle_alone(ma, 3);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

/* The path is removed and made anew, and filled so that the next create
 * gets the very number the client expects, with a holder ahead of it: the
 * client must notice (its watch on the path) and wait for that holder. */
START_TEST(test_lock_path_made_anew_with_the_expected_numbers_is_not_trusted)
{
    char *p = tu_test_path("alone-remade");
    zkl_client *a = tu_test_client(10000);
    zkl_mutex *ma = tu_test_mutex(a, p);
    int64_t last = cycle_alone(ma, 10);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, p, -1), ZOK);
    ck_assert_int_eq(zoo_create(tu_fixture_zk, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    /* Creates number 0 .. last in the new path; the last stays, as a
     * contender ahead ("lock-" kind, protected name). */
    char prefix[512], made[512];
    snprintf(prefix, sizeof prefix, "%s/_c_00000000-0000-4000-8000-000000000000-lock-", p);
    for (int64_t i = 0; i <= last; i++) {
        ck_assert_int_eq(zoo_create(tu_fixture_zk, prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE,
                                    ZOO_EPHEMERAL_SEQUENTIAL, made, sizeof made),
                         ZOK);
        ck_assert_int_eq(node_seq(made), i);
        if (i < last)
            ck_assert_int_eq(zoo_delete(tu_fixture_zk, made, -1), ZOK);
    }
    ck_assert_int_eq(zkl_mutex_acquire(ma, 700), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, made, -1), ZOK);
    ck_assert_int_eq(zkl_mutex_acquire(ma, 10000), 0);
    ck_assert_int_eq(zkl_mutex_release(ma), 0);
}
END_TEST

/* ---- a missing lock path -------------------------------------------------- */

static void acquire_release_on(zkl_client *c, const char *p)
{
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    const char *node = zkl_mutex_node(m);
    ck_assert_ptr_nonnull(node);
    ck_assert(strncmp(node, p, strlen(p)) == 0 && node[strlen(p)] == '/');
    ck_assert(tu_exists(tu_fixture_zk, node));
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_mutex_free(m);
}

START_TEST(test_lock_path_is_created_whether_its_parent_exists_or_not)
{
    zkl_client *c = tu_test_client(10000);
    /* Nothing of the path exists: every ancestor is created. */
    char *deep = tu_test_path("a/b/c/lock");
    acquire_release_on(c, deep);
    /* Only the lock path itself is missing. */
    char *leaf = tu_test_path("a/b/c/other");
    acquire_release_on(c, leaf);
    /* Two levels missing under an existing node. */
    char *two = tu_test_path("a/b/x/y");
    acquire_release_on(c, two);
    /* And every one of them still works once it exists. */
    acquire_release_on(c, deep);
    acquire_release_on(c, two);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_prefetch_mutex_excludes_eight_sessions_releasing_at_once,
        test_default_mutex_excludes_eight_sessions_releasing_at_once,
        test_prefetch_waiters_behind_quitters_wait_for_the_holder,
        test_default_waiters_behind_quitters_wait_for_the_holder,
        test_client_holding_many_locks_still_routes_each_handoff,
        test_acquires_alone_skip_the_listing_yet_exclude_the_same_clients_thread,
        test_acquires_alone_wait_once_another_client_holds,
        test_lock_path_made_anew_with_the_expected_numbers_is_not_trusted,
        test_lock_path_is_created_whether_its_parent_exists_or_not,
        NULL,
    };
    return tu_run_zk_case("handoff", 180, tests);
}
