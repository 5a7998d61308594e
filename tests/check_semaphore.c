/* The counting semaphore against a real ZooKeeper. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

/* Children of `path` whose name contains `part` ("zkl-wait-", "zkl-lease-"). */
static int count_kind(const char *path, const char *part)
{
    return tu_children_named(tu_fixture_zk, path, part);
}

/* Wait until `path` has exactly `want` children (the semaphore's gate
 * nodes are deleted without waiting, so they may linger a moment). */
static void wait_children(const char *path, int want)
{
    ck_assert_msg(tu_wait_children(tu_fixture_zk, path, want, 10000), "%s: %d children, want %d",
                  path, tu_children(tu_fixture_zk, path), want);
}

static void take(zkl_semaphore *s, int n, zkl_lease **l)
{
    int rc = zkl_semaphore_acquire_many(s, n, 10000, l);
    ck_assert_msg(rc == 0, "acquire_many(%d): %s", n, zkl_strerror(rc));
}

/* ---- never more than N, processes and threads ----------------------------- */

struct shared_use {
    int inuse;
    int max_seen;
    int violations;
    int done;
};

enum { PROCS = 4, THREADS = 4, ITER = 5, LIMIT = 3 };

struct worker {
    zkl_semaphore *s;
    struct shared_use *sh;
    int failures;
};

static void *use_main(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < ITER; i++) {
        zkl_lease *l;
        if (zkl_semaphore_acquire(w->s, 60000, &l) != 0) {
            __atomic_add_fetch(&w->failures, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        int now = __atomic_add_fetch(&w->sh->inuse, 1, __ATOMIC_SEQ_CST);
        if (now > LIMIT)
            __atomic_add_fetch(&w->sh->violations, 1, __ATOMIC_SEQ_CST);
        int seen = __atomic_load_n(&w->sh->max_seen, __ATOMIC_SEQ_CST);
        while (now > seen &&
               !__atomic_compare_exchange_n(&w->sh->max_seen, &seen, now, false,
                                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            ;
        usleep(20000); /* hold long enough for others to come in */
        __atomic_sub_fetch(&w->sh->inuse, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&w->sh->done, 1, __ATOMIC_SEQ_CST);
        if (zkl_lease_release(l) != 0)
            __atomic_add_fetch(&w->failures, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* A contender process: THREADS threads, ITER leases each. */
static int use_worker(const char *p, const char *shm)
{
    struct shared_use *sh = tu_map_shared(shm, sizeof *sh, 0);
    zkl_client *c = NULL;
    if (sh == NULL || zkl_client_open(tu_hosts(), 10000, &c) != 0)
        return 2;
    zkl_semaphore *s;
    if (zkl_semaphore_new(c, p, LIMIT, &s) != 0)
        return 3;
    struct worker w = {.s = s, .sh = sh};
    pthread_t t[THREADS];
    for (int k = 0; k < THREADS; k++)
        pthread_create(&t[k], NULL, use_main, &w);
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    if (w.failures != 0)
        return 4;
    zkl_semaphore_free(s);
    zkl_client_close(c);
    munmap(sh, sizeof *sh);
    return 0;
}

START_TEST(test_semaphore_never_admits_more_than_n_across_processes_and_threads)
{
    char *p = tu_test_path("limit3");
    struct shared_use *sh = tu_workers_run_shared("use", p, sizeof *sh, PROCS);
    ck_assert_int_eq(sh->done, PROCS * THREADS * ITER);
    ck_assert_int_eq(sh->violations, 0);
    ck_assert_int_eq(sh->max_seen, LIMIT); /* concurrency really happened */
    ck_assert_int_eq(count_kind(p, "zkl-"), 0);
    munmap(sh, sizeof *sh);
}
END_TEST

/* ---- fairness --------------------------------------------------------------- */

struct fair_waiter {
    zkl_client *c;
    zkl_semaphore *s;
    int need;
    int rc;
    int64_t token;
    pthread_t t;
};

static void *fair_main(void *arg)
{
    struct fair_waiter *w = arg;
    zkl_lease *l;
    w->rc = zkl_semaphore_acquire_many(w->s, w->need, 60000, &l);
    if (w->rc == 0) {
        w->token = tu_lease_token(l);
        zkl_lease_release(l);
    }
    return NULL;
}

START_TEST(test_semaphore_serves_waiters_in_arrival_order)
{
    enum { W = 8 };
    char *p = tu_test_path("fair");
    zkl_semaphore *hs = tu_test_semaphore_apart(p, 2);
    zkl_lease *a, *b;
    take(hs, 1, &a);
    take(hs, 1, &b);
    wait_children(p, 2); /* our own waiter node is gone: only the leases */
    struct fair_waiter w[W];
    for (int i = 0; i < W; i++) {
        w[i].c = tu_client(10000);
        /* One waiter in the middle asks for both leases: later waiters that
         * want one must not overtake it. */
        w[i].need = i == 3 ? 2 : 1;
        ck_assert_int_eq(zkl_semaphore_new(w[i].c, p, 2, &w[i].s), 0);
        pthread_create(&w[i].t, NULL, fair_main, &w[i]);
        /* Arrival order is the order of the waiter nodes: start the next
         * one only once this one is queued. */
        ck_assert(tu_wait_children_named(tu_fixture_zk, p, "zkl-wait-", i + 1, 10000));
    }
    ck_assert_int_eq(zkl_lease_release(a), 0);
    ck_assert_int_eq(zkl_lease_release(b), 0);
    for (int i = 0; i < W; i++) {
        pthread_join(w[i].t, NULL);
        ck_assert_int_eq(w[i].rc, 0);
        /* Tokens are the czxids of the lease nodes: the order of service. */
        if (i > 0)
            ck_assert_msg(w[i].token > w[i - 1].token, "waiter %d served before waiter %d", i,
                          i - 1);
    }
    wait_children(p, 0);
    for (int i = 0; i < W; i++) {
        zkl_semaphore_free(w[i].s);
        zkl_client_close(w[i].c);
    }
}
END_TEST

/* ---- one wake-up per release ------------------------------------------------ */

enum { HERD = 20 };

struct herd_waiter {
    zkl_client *c;
    zkl_semaphore *s;
    zkl_lease *l;
    int rc;
    pthread_t t;
};

static pthread_mutex_t herd_mu = PTHREAD_MUTEX_INITIALIZER;
static int herd_order[HERD]; /* indexes, in the order they acquired */
static int herd_n;

static struct herd_waiter *herd_base;

static void *herd_thread(void *arg)
{
    struct herd_waiter *w = arg;
    w->rc = zkl_semaphore_acquire(w->s, 120000, &w->l);
    pthread_mutex_lock(&herd_mu);
    herd_order[herd_n++] = (int)(w - herd_base);
    pthread_mutex_unlock(&herd_mu);
    return NULL;
}

static bool herd_reached(void *arg)
{
    int want = *(int *)arg;
    pthread_mutex_lock(&herd_mu);
    int n = herd_n;
    pthread_mutex_unlock(&herd_mu);
    return n >= want;
}

/* Every waiter sent its create, listing and at least one watch. */
static bool herd_armed(void *arg)
{
    struct herd_waiter *w = arg;
    for (int i = 0; i < HERD; i++) {
        zkl_client_stats st;
        zkl_client_get_stats(w[i].c, &st);
        if (st.requests < 5) /* limit reads (open, acquire), create, listing, watch */
            return false;
    }
    return true;
}

static uint64_t events_of(zkl_client *c)
{
    zkl_client_stats st;
    zkl_client_get_stats(c, &st);
    return st.watch_events;
}

START_TEST(test_semaphore_release_wakes_one_of_twenty_waiters)
{
    char *p = tu_test_path("herd");
    zkl_semaphore *hs = tu_test_semaphore_apart(p, 3);
    zkl_lease *mine[3];
    for (int i = 0; i < 3; i++)
        take(hs, 1, &mine[i]);
    wait_children(p, 3);
    struct herd_waiter w[HERD];
    herd_base = w;
    herd_n = 0;
    for (int i = 0; i < HERD; i++) {
        w[i].c = tu_client(10000);
        ck_assert_int_eq(zkl_semaphore_new(w[i].c, p, 3, &w[i].s), 0);
        pthread_create(&w[i].t, NULL, herd_thread, &w[i]);
    }
    ck_assert(tu_wait_children_named(tu_fixture_zk, p, "zkl-wait-", HERD, 20000));
    ck_assert(tu_wait_until(herd_armed, w, 20000));
    for (int i = 0; i < HERD; i++)
        ck_assert_uint_eq(events_of(w[i].c), 0);

    /* Release one lease at a time; each release lets exactly one waiter in.
     * Between two releases, count which clients saw a watch event: the
     * head (woken by the release) and the next head (woken when the gate
     * is handed over), no one else. */
    int woken_max = 0;
    for (int step = 0; step < HERD; step++) {
        uint64_t before[HERD];
        for (int i = 0; i < HERD; i++)
            before[i] = events_of(w[i].c);
        if (step < 3) {
            ck_assert_int_eq(zkl_lease_release(mine[step]), 0);
        } else {
            struct herd_waiter *o = &w[herd_order[step - 3]];
            ck_assert_int_eq(zkl_lease_release(o->l), 0);
            o->l = NULL;
        }
        int want = step + 1;
        ck_assert_msg(tu_wait_until(herd_reached, &want, 20000), "step %d: nobody got in", step);
        int woken = 0;
        for (int i = 0; i < HERD; i++)
            woken += events_of(w[i].c) != before[i];
        ck_assert_msg(woken <= 2, "step %d: %d waiters woke", step, woken);
        if (woken > woken_max)
            woken_max = woken;
    }
    uint64_t total = 0;
    for (int i = 0; i < HERD; i++) {
        pthread_join(w[i].t, NULL);
        ck_assert_int_eq(w[i].rc, 0);
        uint64_t e = events_of(w[i].c);
        ck_assert_msg(e <= 2, "waiter %d saw %llu events", i, (unsigned long long)e);
        total += e;
    }
    /* At most 19 gate handoffs (the first head needed none) and one lease
     * event per release. (A watch armed after its node went answers "no
     * node" instead of an event: then fewer.) */
    ck_assert_uint_le(total, (HERD - 1) + HERD);
    fprintf(stderr,
            "semaphore herd: %d waiters, %d releases: %llu watch events in all "
            "(<= %d gate handoffs + <= 1 per release); per release, at most %d clients saw "
            "an event (the head it let in, and the next head when the gate passed on)\n",
            HERD, HERD, (unsigned long long)total, HERD - 1, woken_max);
    for (int i = 0; i < HERD; i++) {
        if (w[i].l)
            ck_assert_int_eq(zkl_lease_release(w[i].l), 0);
        zkl_semaphore_free(w[i].s);
        zkl_client_close(w[i].c);
    }
    wait_children(p, 0);
}
END_TEST

/* ---- many leases at once ------------------------------------------------------ */

struct many {
    zkl_client *c;
    zkl_semaphore *s;
    int need, iters, failures;
    int *inuse, *violations;
    pthread_t t;
};

static void *many_main(void *arg)
{
    struct many *m = arg;
    for (int i = 0; i < m->iters; i++) {
        zkl_lease *l;
        int rc = zkl_semaphore_acquire_many(m->s, m->need, 30000, &l);
        if (rc != 0) {
            m->failures++;
            continue;
        }
        if (zkl_lease_count(l) != m->need)
            m->failures++;
        int now = __atomic_add_fetch(m->inuse, m->need, __ATOMIC_SEQ_CST);
        if (now > 4)
            __atomic_add_fetch(m->violations, 1, __ATOMIC_SEQ_CST);
        usleep(2000);
        __atomic_sub_fetch(m->inuse, m->need, __ATOMIC_SEQ_CST);
        if (zkl_lease_release(l) != 0)
            m->failures++;
    }
    return NULL;
}

START_TEST(test_semaphore_acquire_many_callers_never_deadlock)
{
    enum { M = 6 };
    char *p = tu_test_path("many");
    int inuse = 0, violations = 0;
    struct many m[M];
    for (int i = 0; i < M; i++) {
        m[i] = (struct many){.need = i % 2 ? 3 : 2, .iters = 8, .inuse = &inuse,
                             .violations = &violations};
        m[i].c = tu_client(10000);
        ck_assert_int_eq(zkl_semaphore_new(m[i].c, p, 4, &m[i].s), 0);
    }
    int64_t t0 = tu_now_ms();
    for (int i = 0; i < M; i++)
        pthread_create(&m[i].t, NULL, many_main, &m[i]);
    for (int i = 0; i < M; i++) {
        pthread_join(m[i].t, NULL);
        ck_assert_int_eq(m[i].failures, 0);
    }
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(60000));
    ck_assert_int_eq(violations, 0);
    wait_children(p, 0);
    for (int i = 0; i < M; i++) {
        zkl_semaphore_free(m[i].s);
        zkl_client_close(m[i].c);
    }
}
END_TEST

START_TEST(test_semaphore_many_lease_is_one_node_with_one_token)
{
    char *p = tu_test_path("onenode");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s = tu_test_semaphore(c, p, 5);
    zkl_lease *three, *one;
    take(s, 3, &three);
    take(s, 1, &one);
    ck_assert_int_eq(zkl_lease_count(three), 3);
    ck_assert_int_eq(zkl_lease_count(one), 1);
    ck_assert_int_eq(count_kind(p, "-zkl-lease-x3-"), 1);
    ck_assert_int_eq(count_kind(p, "-zkl-lease-"), 2);
    ck_assert_int_gt(tu_lease_token(one), tu_lease_token(three));
    struct Stat st;
    ck_assert_int_eq(zoo_exists(tu_fixture_zk, zkl_lease_node(three), 0, &st), ZOK);
    ck_assert_int_eq(st.czxid, tu_lease_token(three));
    ck_assert_int_eq(st.ephemeralOwner, tu_client_session_id(c));
    /* 4 of 5 taken: 2 more do not fit, 1 does. */
    zkl_lease *x;
    ck_assert_int_eq(zkl_semaphore_acquire_many(s, 2, 0, &x), ZKL_ETIMEDOUT);
    take(s, 1, &x);
    ck_assert_int_eq(zkl_lease_release(three), 0);
    ck_assert_int_eq(zkl_lease_release(one), 0);
    ck_assert_int_eq(zkl_lease_release(x), 0);
    wait_children(p, 0);
}
END_TEST

/* ---- the limit ----------------------------------------------------------------- */

START_TEST(test_semaphore_limit_mismatch_is_refused)
{
    char *p = tu_test_path("mismatch");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s3, *s4 = NULL;
    /* Making a semaphore sends nothing; its first acquire records the
     * limit. */
    ck_assert_int_eq(zkl_semaphore_new(c, p, 3, &s3), 0);
    ck_assert(!tu_exists(tu_fixture_zk, p));
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_acquire(s3, 5000, &l), 0);
    ck_assert_int_eq(zkl_lease_release(l), 0);
    char buf[64];
    int len = sizeof buf - 1;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, p, 0, buf, &len, NULL), ZOK);
    buf[len] = '\0';
    ck_assert_str_eq(buf, "max_leases=3");
    /* Another limit: refused at the acquire, which changes nothing. */
    ck_assert_int_eq(zkl_semaphore_new(c, p, 4, &s4), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(s4, 5000, &l), ZKL_EMISMATCH);
    ck_assert_int_eq(zkl_semaphore_acquire(s4, 0, &l), ZKL_EMISMATCH);
    len = sizeof buf - 1;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, p, 0, buf, &len, NULL), ZOK);
    buf[len] = '\0';
    ck_assert_str_eq(buf, "max_leases=3");
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_semaphore_free(s4);

    /* Recorded anew behind the object's back: its next acquire refuses,
     * and leaves no node. */
    ck_assert_int_eq(zoo_set(tu_fixture_zk, p, "max_leases=5", 12, -1), ZOK);
    ck_assert_int_eq(zkl_semaphore_acquire(s3, 5000, &l), ZKL_EMISMATCH);
    wait_children(p, 0);
    zkl_semaphore_free(s3);

    /* A node that holds something else is no semaphore. */
    char *q = tu_test_path("foreign");
    ck_assert_int_eq(
        zoo_create(tu_fixture_zk, q, "{\"x\":1}", 7, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkl_semaphore *sf = NULL;
    ck_assert_int_eq(zkl_semaphore_new(c, q, 2, &sf), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(sf, 5000, &l), ZKL_EMISMATCH);
    ck_assert_int_eq(tu_children(tu_fixture_zk, q), 0);
    zkl_semaphore_free(sf);
    /* An empty node is filled in. */
    char *e = tu_test_path("empty");
    ck_assert_int_eq(zoo_create(tu_fixture_zk, e, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    ck_assert_int_eq(zkl_semaphore_new(c, e, 2, &sf), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(sf, 5000, &l), 0);
    ck_assert_int_eq(zkl_lease_release(l), 0);
    len = sizeof buf - 1;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, e, 0, buf, &len, NULL), ZOK);
    buf[len] = '\0';
    ck_assert_str_eq(buf, "max_leases=2");
    ck_assert_int_eq(zkl_semaphore_max_leases(sf), 2);
    zkl_semaphore_free(sf);
}
END_TEST

/* ---- timeouts --------------------------------------------------------------------- */

struct blocked {
    zkl_semaphore *s;
    int need;
    long timeout;
    int rc;
    zkl_lease *l;
};

static void *blocked_main(void *arg)
{
    struct blocked *b = arg;
    b->rc = zkl_semaphore_acquire_many(b->s, b->need, b->timeout, &b->l);
    return NULL;
}

START_TEST(test_semaphore_timeouts_leave_no_node)
{
    char *p = tu_test_path("timeout");
    zkl_semaphore *sa = tu_test_semaphore_apart(p, 2), *sb = tu_test_semaphore_apart(p, 2);
    zkl_semaphore *sc = tu_test_semaphore_apart(p, 2);
    zkl_lease *la;
    take(sa, 2, &la);
    wait_children(p, 1);
    zkl_lease *l = NULL;
    /* A try once and the head waiter's timeout: check_common. A waiter
     * behind another one times out. */
    struct blocked head = {.s = sc, .need = 1, .timeout = 30000};
    pthread_t t;
    pthread_create(&t, NULL, blocked_main, &head);
    ck_assert(tu_wait_children_named(tu_fixture_zk, p, "zkl-wait-", 1, 10000));
    ck_assert_int_eq(zkl_semaphore_acquire_many(sb, 2, 300, &l), ZKL_ETIMEDOUT);
    ck_assert_int_eq(count_kind(p, "zkl-wait-"), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 2);
    ck_assert_ptr_null(l);
    /* the holder is undisturbed; the queued head gets in after it */
    ck_assert_int_eq(zkl_lease_is_held(la), 1);
    ck_assert_int_eq(zkl_lease_release(la), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(head.rc, 0);
    ck_assert_int_eq(zkl_lease_release(head.l), 0);
    wait_children(p, 0);
}
END_TEST

/* ---- crashes and expiry ------------------------------------------------------------ */

/* The holder worker's hold (tu_holder_main): takes both leases, and gives
 * their token. */
static int hold_both(zkl_client *c, const char *p, int64_t *token)
{
    zkl_semaphore *s;
    zkl_lease *l;
    if (zkl_semaphore_new(c, p, 2, &s) != 0 || zkl_semaphore_acquire_many(s, 2, 10000, &l) != 0)
        return -1;
    *token = tu_lease_token(l);
    return 0;
}

START_TEST(test_semaphore_killed_holders_lease_is_freed_after_its_session_ends)
{
    char *p = tu_test_path("killed");
    int64_t dead_token = tu_holder_kill(p);
    ck_assert_int_eq(count_kind(p, "zkl-lease-x2-"), 1); /* still there: session alive */
    zkl_client *c = tu_client(10000);
    zkl_semaphore *s;
    ck_assert_int_eq(zkl_semaphore_new(c, p, 2, &s), 0);
    int64_t t0 = tu_now_ms();
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_acquire(s, tu_ms(15000), &l), 0);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(10000));
    ck_assert_int_gt(tu_lease_token(l), dead_token);
    ck_assert_int_eq(count_kind(p, "zkl-lease-x2-"), 0);
    ck_assert_int_eq(zkl_lease_release(l), 0);
    zkl_semaphore_free(s);
    zkl_client_close(c);
}
END_TEST

static bool lease_not_held(void *arg)
{
    return zkl_lease_is_held(arg) == 0;
}

START_TEST(test_semaphore_session_expiry_is_reported_as_lost)
{
    char *p = tu_test_path("expired");
    char *data = tu_test_path("data");
    /* a is expired by tu_expire_session, at once whatever its timeout; b
     * must keep its session to get the lease (both long: a sanitizer run
     * that stalls on a loaded machine does not lose them by itself). */
    zkl_client *a = tu_test_client(20000), *b = tu_test_client(20000);
    zkl_semaphore *sa = tu_test_semaphore(a, p, 1), *sb = tu_test_semaphore(b, p, 1);
    zkl_lease *l;
    take(sa, 1, &l);
    wait_children(p, 1);
    ck_assert_int_eq(
        zoo_create(tu_fixture_zk, data, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    ck_assert_int_eq(zkl_lease_guarded_set(l, data, "1", 1), 0);
    /* b waits behind a's lease */
    struct blocked w = {.s = sb, .need = 1, .timeout = 60000};
    pthread_t t;
    pthread_create(&t, NULL, blocked_main, &w);
    ck_assert(tu_wait_children_named(tu_fixture_zk, p, "zkl-wait-", 1, 10000));
    int64_t tok = tu_lease_token(l);
    tu_expire_session(a);
    ck_assert(tu_wait_until(lease_not_held, l, 15000));
    ck_assert_int_eq(tu_lease_token(l), ZKL_ELOST);
    ck_assert_int_eq(zkl_lease_guarded_set(l, data, "2", 1), ZKL_ELOST);
    ck_assert_int_eq(zkl_lease_release(l), ZKL_ELOST);
    /* the waiter got in, with a later token */
    pthread_join(t, NULL);
    ck_assert_int_eq(w.rc, 0);
    ck_assert_int_gt(tu_lease_token(w.l), tok);
    char buf[4];
    int len = sizeof buf;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, data, 0, buf, &len, NULL), ZOK);
    ck_assert_int_eq(buf[0], '1');
    /* a waiter whose own session expires gets ZKL_ELOST and leaves nothing */
    ck_assert(tu_wait_until(tu_client_connected, a, 15000));
    struct blocked w2 = {.s = sa, .need = 1, .timeout = 60000};
    pthread_create(&t, NULL, blocked_main, &w2);
    ck_assert(tu_wait_children_named(tu_fixture_zk, p, "zkl-wait-", 1, 10000));
    tu_expire_session(a);
    pthread_join(t, NULL);
    ck_assert_int_eq(w2.rc, ZKL_ELOST);
    wait_children(p, 1);
    ck_assert_int_eq(zkl_lease_release(w.l), 0);
}
END_TEST

/* ---- holders, threads, freeing ------------------------------------------------------ */

struct lease_releaser {
    zkl_lease *l;
    int held, rc;
};

static void *lease_release_main(void *arg)
{
    struct lease_releaser *r = arg;
    r->held = zkl_lease_is_held(r->l);
    r->rc = zkl_lease_release(r->l);
    return NULL;
}

START_TEST(test_semaphore_holders_show_owner_token_and_count)
{
    char *p = tu_test_path("holders");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s = tu_test_semaphore(c, p, 4);
    zkl_lease_info *info = NULL;
    int n = -1;
    ck_assert_int_eq(zkl_semaphore_holders(s, 5000, &info, &n), 0);
    ck_assert_int_eq(n, 0);
    zkl_lease_info_free(info);
    zkl_lease *one, *two;
    take(s, 1, &one);
    take(s, 2, &two);
    ck_assert_int_eq(zkl_semaphore_holders(s, 5000, &info, &n), 0);
    ck_assert_int_eq(n, 2);
    char want[64];
    snprintf(want, sizeof want, " %ld", (long)getpid());
    ck_assert(strstr(info[0].owner, want) != NULL);
    ck_assert_int_eq(info[0].token, tu_lease_token(one));
    ck_assert_int_eq(info[0].count, 1);
    ck_assert_str_eq(info[0].node, zkl_lease_node(one));
    ck_assert_int_eq(info[1].token, tu_lease_token(two));
    ck_assert_int_eq(info[1].count, 2);
    ck_assert_int_eq(info[1].session, tu_client_session_id(c));
    zkl_lease_info_free(info);
    zkl_lease_info_free(NULL);
    /* a lease may be given back by another thread */
    struct lease_releaser r = {.l = two};
    pthread_t t;
    pthread_create(&t, NULL, lease_release_main, &r);
    pthread_join(t, NULL);
    ck_assert_int_eq(r.held, 1);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_int_eq(zkl_lease_release(one), 0);
    wait_children(p, 0);
}
END_TEST

/* ---- bad input ------------------------------------------------------------------------ */


int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    tu_holder_main(argc, argv, hold_both);
    if (argc >= 5 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "use") == 0)
        return use_worker(argv[3], argv[4]);
    const TTest *tests[] = {
        test_semaphore_never_admits_more_than_n_across_processes_and_threads,
        test_semaphore_serves_waiters_in_arrival_order,
        test_semaphore_release_wakes_one_of_twenty_waiters,
        test_semaphore_acquire_many_callers_never_deadlock,
        test_semaphore_many_lease_is_one_node_with_one_token,
        test_semaphore_limit_mismatch_is_refused,
        test_semaphore_timeouts_leave_no_node,
        test_semaphore_killed_holders_lease_is_freed_after_its_session_ends,
        test_semaphore_session_expiry_is_reported_as_lost,
        test_semaphore_holders_show_owner_token_and_count,
        NULL,
    };
    return tu_run_zk_case("semaphore", 180, tests);
}
