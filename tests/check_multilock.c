/* The generic lock interface and the multi-lock against a real ZooKeeper. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

/* ---- a lock of the test's own, behind the generic interface --------------
 *
 * Held per object, in this process only. It logs its acquires (+id) and
 * releases (-id), records the timeout it was given, can be told to fail,
 * and can be slow: its acquire first spends `slow_ms` (at most its timeout),
 * as a lock that has to wait would. */

struct ulock {
    char key[512];
    int id;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int held;
    int acquire_rc;  /* != 0: acquire fails with it */
    int release_rc;  /* returned by release, which releases all the same */
    int slow_ms;
    long last_timeout;
    int freed;
};

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int oplog[64];
static int nlog;

static void log_op(int op)
{
    pthread_mutex_lock(&log_mu);
    if (nlog < 64)
        oplog[nlog++] = op;
    pthread_mutex_unlock(&log_mu);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int u_acquire(void *self, long timeout_ms)
{
    struct ulock *u = self;
    u->last_timeout = timeout_ms;
    if (u->slow_ms > 0)
        sleep_ms(timeout_ms >= 0 && timeout_ms < u->slow_ms ? timeout_ms : u->slow_ms);
    if (u->acquire_rc != 0)
        return u->acquire_rc;
    pthread_mutex_lock(&u->mu);
    int64_t end = tu_now_ms() + (timeout_ms < 0 ? 3600000 : timeout_ms);
    while (u->held && tu_now_ms() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 5 * 1000000L;
        if (ts.tv_nsec >= 1000000000L)
            ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&u->cv, &u->mu, &ts);
    }
    int rc = u->held ? ZKL_ETIMEDOUT : 0;
    if (rc == 0) {
        u->held = 1;
        log_op(u->id);
    }
    pthread_mutex_unlock(&u->mu);
    return rc;
}

static int u_release(void *self)
{
    struct ulock *u = self;
    pthread_mutex_lock(&u->mu);
    int was = u->held;
    u->held = 0;
    pthread_cond_broadcast(&u->cv);
    if (was)
        log_op(-u->id);
    pthread_mutex_unlock(&u->mu);
    return was ? u->release_rc : ZKL_ENOTHELD;
}

static int u_is_held(void *self)
{
    struct ulock *u = self;
    pthread_mutex_lock(&u->mu);
    int h = u->held;
    pthread_mutex_unlock(&u->mu);
    return h;
}

static const char *u_path(void *self)
{
    return ((struct ulock *)self)->key;
}

static void u_free(void *self)
{
    ((struct ulock *)self)->freed++;
}

static const zkl_lock_ops ulock_ops = {
    .version = ZKL_LOCK_OPS_VERSION,
    .acquire = u_acquire,
    .release = u_release,
    .is_held = u_is_held,
    .path = u_path,
    .free = u_free,
};

static void ulock_init(struct ulock *u, int id, const char *leaf)
{
    memset(u, 0, sizeof *u);
    u->id = id;
    u->last_timeout = -999; /* never asked */
    snprintf(u->key, sizeof u->key, "%s/%s", tu_fixture_root, leaf);
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
}

static zkl_lock *ulock_handle(struct ulock *u)
{
    zkl_lock *l = NULL;
    ck_assert_int_eq(zkl_lock_new(&ulock_ops, u, &l), 0);
    return l;
}

static void ulock_destroy(struct ulock *u)
{
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
}

static zkl_lock *mutex_handle(zkl_mutex *m)
{
    zkl_lock *l = NULL;
    ck_assert_int_eq(zkl_mutex_as_lock(m, &l), 0);
    return l;
}

/* Each of `n` paths, given with a count, has that many children. */
static void expect_children(int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *path = va_arg(ap, const char *);
        int want = va_arg(ap, int);
        /* Waited for: a failed acquire may return before the server has
         * applied the delete of what it gave back. */
        bool ok = tu_wait_children(tu_fixture_zk, path, want, 10000);
        ck_assert_msg(ok, "%s: %d children, want %d", path, tu_children(tu_fixture_zk, path),
                      want);
    }
    va_end(ap);
}

/* Every node the client created was deleted again (arg: the client). */
static bool creates_deleted(void *arg)
{
    zkl_client_stats st;
    ck_assert_int_eq(zkl_client_get_stats(arg, &st), 0);
    return st.creates == st.deletes;
}

/* ---- order --------------------------------------------------------------- */

START_TEST(test_multilock_acquires_in_path_order_and_releases_in_reverse)
{
    struct ulock u[4];
    const char *leaves[4] = {"d", "b", "a", "c"};
    zkl_lock *l[4];
    for (int i = 0; i < 4; i++) {
        ulock_init(&u[i], leaves[i][0] - 'a' + 1, leaves[i]); /* id: a=1 .. d=4 */
        l[i] = ulock_handle(&u[i]);
        ck_assert_str_eq(zkl_lock_path(l[i]), u[i].key);
    }
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(l, 4, &ml), 0);
    nlog = 0;
    ck_assert_int_eq(zkl_multilock_acquire(ml, 1000), 0);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 1);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    const int want[8] = {1, 2, 3, 4, -4, -3, -2, -1};
    ck_assert_int_eq(nlog, 8);
    for (int i = 0; i < 8; i++)
        ck_assert_msg(oplog[i] == want[i], "op %d: %d, want %d", i, oplog[i], want[i]);
    /* The multi-lock as a lock: its key is the smallest member key. */
    zkl_lock *mll;
    ck_assert_int_eq(zkl_multilock_as_lock(ml, &mll), 0);
    ck_assert_str_eq(zkl_lock_path(mll), u[2].key);
    ck_assert_int_eq(zkl_lock_acquire(mll, 1000), 0);
    ck_assert_int_eq(zkl_lock_is_held(mll), 1);
    ck_assert_int_eq(zkl_lock_release(mll), 0);
    ck_assert_int_eq(zkl_lock_is_held(mll), 0);
    zkl_lock_free(mll);
    zkl_multilock_free(ml);
    /* Freeing a handle of zkl_lock_new runs ops->free, once; the
     * multi-lock freed none of them. */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(u[i].freed, 0);
        zkl_lock_free(l[i]);
        ck_assert_int_eq(u[i].freed, 1);
        ulock_destroy(&u[i]);
    }
}
END_TEST

/* ---- two processes, overlapping sets, opposite orders --------------------- */

enum { ML_PROCS_ITER = 25 };

struct ml_shared {
    int inside[4]; /* holders of paths a, b, c, d right now */
    int violations;
    int done[2];
};

/* One of the two processes: a fresh program (tu_spawn_worker), not a bare
 * fork of the suite, whose other threads (the fixture's handle resolving
 * its hosts) may hold a libc lock that the child would wait on for ever.
 * `who` 0 takes a, b, c; 1 takes d, c, b. The shared state is in `file`. */
static int worker_child(const char *who_arg, const char *file, const char *const *paths)
{
    alarm(100); /* never outlive the test, even if something hangs */
    int who = who_arg[0] == '1';
    static const int idxs[2][3] = {{0, 1, 2}, {3, 2, 1}};
    const int *idx = idxs[who];
    const size_t n = 3;
    struct ml_shared *sh = tu_map_shared(file, sizeof *sh, 0);
    if (sh == NULL)
        return 6;
    zkl_client *c = NULL;
    if (zkl_client_open(tu_hosts(), 10000, &c) != 0)
        return 2;
    zkl_multilock *ml;
    if (zkl_multilock_new(c, paths, n, &ml) != 0)
        return 3;
    for (int k = 0; k < ML_PROCS_ITER; k++) {
        if (zkl_multilock_acquire(ml, 30000) != 0)
            return 4;
        for (size_t i = 0; i < n; i++)
            if (__atomic_add_fetch(&sh->inside[idx[i]], 1, __ATOMIC_SEQ_CST) != 1)
                __atomic_add_fetch(&sh->violations, 1, __ATOMIC_SEQ_CST);
        usleep(200);
        for (size_t i = 0; i < n; i++)
            __atomic_sub_fetch(&sh->inside[idx[i]], 1, __ATOMIC_SEQ_CST);
        if (zkl_multilock_release(ml) != 0)
            return 5;
        sh->done[who]++;
    }
    zkl_multilock_free(ml);
    zkl_client_close(c);
    return 0;
}

START_TEST(test_multilock_two_processes_with_opposite_orders_never_deadlock)
{
    char *a = tu_path("a"), *b = tu_path("b"), *c = tu_path("c"), *d = tu_path("d");
    char file[64];
    struct ml_shared *sh = tu_shared_new(file, sizeof *sh);
    /* Overlap {b, c}: one process names it b-then-c, the other c-then-b. */
    const char *w0[] = {"ml-child", "0", file, a, b, c, NULL};
    const char *w1[] = {"ml-child", "1", file, d, c, b, NULL};
    pid_t pids[2] = {tu_spawn_worker(w0, -1), tu_spawn_worker(w1, -1)};
    tu_workers_join(pids, 2);
    unlink(file);
    ck_assert_int_eq(sh->done[0], ML_PROCS_ITER);
    ck_assert_int_eq(sh->done[1], ML_PROCS_ITER);
    ck_assert_int_eq(sh->violations, 0);
    expect_children(4, a, 0, b, 0, c, 0, d, 0);
    munmap(sh, sizeof *sh);
    free(a), free(b), free(c), free(d);
}
END_TEST

/* ---- all or nothing -------------------------------------------------------- */

START_TEST(test_multilock_is_all_or_nothing_when_one_member_is_held_elsewhere)
{
    char *m1 = tu_path("m1"), *m2 = tu_path("m2"), *m3 = tu_path("m3");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_mutex *bm = tu_test_held_mutex(b, m2);
    const char *paths[] = {m3, m1, m2};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new(a, paths, 3, &ml), 0);
    /* m1 is taken, m2 waits and times out: m1 must be given back. */
    ck_assert_int_eq(zkl_multilock_acquire(ml, 500), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    ck_assert_int_eq(zkl_multilock_release(ml), ZKL_ENOTHELD);
    expect_children(3, m1, 0, m2, 1, m3, 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 0), ZKL_ETIMEDOUT); /* try once */
    expect_children(3, m1, 0, m2, 1, m3, 0);
    ck_assert(tu_wait_until(creates_deleted, a, 10000));
    /* The others are free at once for anyone. */
    zkl_mutex *o1 = tu_test_mutex(b, m1), *o3 = tu_test_mutex(b, m3);
    ck_assert_int_eq(zkl_mutex_acquire(o1, 0), 0);
    ck_assert_int_eq(zkl_mutex_acquire(o3, 0), 0);
    ck_assert_int_eq(zkl_mutex_release(o1), 0);
    ck_assert_int_eq(zkl_mutex_release(o3), 0);
    /* Once the member is free, the whole set is taken. */
    ck_assert_int_eq(zkl_mutex_release(bm), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 1);
    expect_children(3, m1, 1, m2, 1, m3, 1);
    ck_assert_int_eq(zkl_mutex_acquire(bm, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    expect_children(3, m1, 0, m2, 0, m3, 0);
    zkl_multilock_free(ml);
    free(m1), free(m2), free(m3);
}
END_TEST

START_TEST(test_multilock_member_failure_releases_what_the_call_took)
{
    char *p = tu_test_path("a-mutex");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m = tu_test_mutex(c, p);
    struct ulock bad, later;
    ulock_init(&bad, 2, "b-fails");
    ulock_init(&later, 3, "c-never");
    bad.acquire_rc = ZKL_EZK;
    zkl_lock *l[3] = {ulock_handle(&later), ulock_handle(&bad), mutex_handle(m)};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(l, 3, &ml), 0);
    nlog = 0;
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), ZKL_EZK);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(later.last_timeout, -999); /* never asked */
    ck_assert_int_eq(nlog, 0);
    /* A mutex the thread already held keeps its own count. */
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), ZKL_EZK);
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_multilock_free(ml);
    for (int i = 0; i < 3; i++)
        zkl_lock_free(l[i]);
    ulock_destroy(&bad);
    ulock_destroy(&later);
}
END_TEST

/* ---- one deadline ------------------------------------------------------------ */

START_TEST(test_multilock_timeout_bounds_the_whole_call)
{
    char *m1 = tu_path("t1"), *m2 = tu_path("t2"), *m3 = tu_path("t3");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_mutex *bm = tu_test_held_mutex(b, m3);
    /* Three mutexes, the last held elsewhere. */
    const char *paths[] = {m1, m2, m3};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new(a, paths, 3, &ml), 0);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_multilock_acquire(ml, 500), ZKL_ETIMEDOUT);
    int64_t took = tu_now_ms() - t0;
    ck_assert_int_ge(took, 490);
    ck_assert_int_lt(took, 500 + tu_ms(900)); /* the members' round trips, on a slow build */
    expect_children(2, m1, 0, m2, 0);

    /* Members that each take time share one deadline: two that spend 600 ms
     * each, then the held mutex. Each gets only what is left, so the call
     * ends at about 1000 ms (a timeout per member would take 2200). */
    struct ulock s1, s2;
    ulock_init(&s1, 1, "t0-slow");
    ulock_init(&s2, 2, "t1-slow");
    s1.slow_ms = s2.slow_ms = 600;
    zkl_mutex *am = tu_test_mutex(a, m3);
    zkl_lock *l[3] = {ulock_handle(&s1), ulock_handle(&s2), mutex_handle(am)};
    zkl_multilock *ml2;
    ck_assert_int_eq(zkl_multilock_new_locks(l, 3, &ml2), 0);
    t0 = tu_now_ms();
    ck_assert_int_eq(zkl_multilock_acquire(ml2, 1000), ZKL_ETIMEDOUT);
    took = tu_now_ms() - t0;
    ck_assert_int_ge(took, 990);
    /* Under 2200, the least a timeout per member takes whatever the
     * machine's speed: that leaves 1200 ms for the mutex's try once and
     * the rest on a loaded sanitizer run. */
    ck_assert_int_lt(took, 2200);
    ck_assert_int_gt(s1.last_timeout, 900); /* nearly all of it: it came first */
    ck_assert_int_le(s1.last_timeout, 1000);
    ck_assert_int_le(s2.last_timeout, 401);
    ck_assert_int_eq(s1.held, 0);
    ck_assert_int_eq(s2.held, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, m3), 1);
    /* Forever stays forever for every member. */
    ck_assert_int_eq(zkl_mutex_release(bm), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml2, ZKL_WAIT_FOREVER), 0);
    ck_assert_int_eq(s1.last_timeout, ZKL_WAIT_FOREVER);
    ck_assert_int_eq(s2.last_timeout, ZKL_WAIT_FOREVER);
    ck_assert_int_eq(zkl_multilock_release(ml2), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, m3), 0);
    zkl_multilock_free(ml2);
    for (int i = 0; i < 3; i++)
        zkl_lock_free(l[i]);
    ulock_destroy(&s1);
    ulock_destroy(&s2);
    zkl_multilock_free(ml);
    free(m1), free(m2), free(m3);
}
END_TEST

/* The deadline passed while an earlier member was taken: a free member
 * reached after it is tried once, and taken, not failed at once. */
START_TEST(test_multilock_member_reached_after_the_deadline_is_tried_once)
{
    char *p = tu_path("b-free");
    zkl_client *a = tu_test_client(10000);
    struct ulock s;
    ulock_init(&s, 1, "a-slow");
    s.slow_ms = 600; /* spends all of the call's 300 ms */
    zkl_mutex *m = tu_test_mutex(a, p);
    zkl_lock *l[2] = {ulock_handle(&s), mutex_handle(m)};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(l, 2, &ml), 0);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_multilock_acquire(ml, 300), 0);
    ck_assert_int_ge(tu_now_ms() - t0, 290);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 1);
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(s.held, 0);
    expect_children(1, p, 0);
    zkl_multilock_free(ml);
    zkl_lock_free(l[0]);
    zkl_lock_free(l[1]);
    ulock_destroy(&s);
    free(p);
}
END_TEST

struct bg_acquire {
    zkl_multilock *ml;
    long timeout;
    int rc, release_rc;
};

static void *bg_acquire_main(void *arg)
{
    struct bg_acquire *b = arg;
    b->rc = zkl_multilock_acquire(b->ml, b->timeout);
    b->release_rc = b->rc == 0 ? zkl_multilock_release(b->ml) : 0;
    return NULL;
}

START_TEST(test_multilock_huge_timeout_waits_instead_of_failing_at_once)
{
    char *p1 = tu_path("h1"), *p2 = tu_path("h2");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_mutex *bm = tu_test_held_mutex(b, p2);
    const char *paths[] = {p1, p2};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new(a, paths, 2, &ml), 0);
    /* LONG_MAX ms cannot be added to a clock: it must mean "forever". */
    struct bg_acquire bg = {ml, LONG_MAX, 1, 1};
    pthread_t t;
    pthread_create(&t, NULL, bg_acquire_main, &bg);
    bool queued = tu_wait_children(tu_fixture_zk, p2, 2, 15000);
    ck_assert_int_eq(zkl_mutex_release(bm), 0);
    pthread_join(t, NULL);
    ck_assert_msg(queued, "the multi-lock never queued behind the holder (rc %s)",
                  zkl_err_name(bg.rc));
    ck_assert_int_eq(bg.rc, 0);
    ck_assert_int_eq(bg.release_rc, 0);
    expect_children(2, p1, 0, p2, 0);
    zkl_multilock_free(ml);
    free(p1), free(p2);
}
END_TEST

/* ---- mixed kinds ------------------------------------------------------------- */

START_TEST(test_multilock_mixes_mutexes_user_locks_and_multilocks)
{
    char *x1 = tu_path("x1"), *x3 = tu_path("x3"), *x5 = tu_path("x5");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_mutex *m1 = tu_test_mutex(a, x1);
    struct ulock u;
    ulock_init(&u, 2, "x2-user");
    const char *inner_paths[] = {x5, x3};
    zkl_multilock *inner;
    ck_assert_int_eq(zkl_multilock_new(a, inner_paths, 2, &inner), 0);
    zkl_lock *il;
    ck_assert_int_eq(zkl_multilock_as_lock(inner, &il), 0);
    zkl_lock *l[3] = {il, ulock_handle(&u), mutex_handle(m1)};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(l, 3, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 1);
    ck_assert_int_eq(zkl_mutex_is_held(m1), 1);
    ck_assert_int_eq(u.held, 1);
    expect_children(3, x1, 1, x3, 1, x5, 1);
    /* Taken through the outer multi-lock, not through the inner one. */
    ck_assert_int_eq(zkl_multilock_is_held(inner), 0);
    ck_assert_int_eq(zkl_multilock_release(inner), ZKL_ENOTHELD);
    /* Others are kept out of every member. */
    zkl_mutex *o1 = tu_test_mutex(b, x1), *o5 = tu_test_mutex(b, x5);
    ck_assert_int_eq(zkl_mutex_acquire(o1, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_acquire(o5, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m1), 0);
    ck_assert_int_eq(u.held, 0);
    expect_children(3, x1, 0, x3, 0, x5, 0);
    ck_assert_int_eq(zkl_mutex_acquire(o5, 0), 0);
    ck_assert_int_eq(zkl_mutex_release(o5), 0);
    zkl_multilock_free(ml);
    zkl_lock_free(l[1]);
    zkl_lock_free(l[2]);
    zkl_lock_free(il);
    zkl_multilock_free(inner);
    ulock_destroy(&u);
    free(x1), free(x3), free(x5);
}
END_TEST

/* What another thread of this process sees of a multi-lock held here: a
 * hold is per thread, so it neither holds nor may release it. */
struct other {
    zkl_multilock *ml;
    int timeout_ms;
    int held, release_rc, acquire_rc;
};

static void *other_main(void *arg)
{
    struct other *o = arg;
    o->held = zkl_multilock_is_held(o->ml);
    o->release_rc = zkl_multilock_release(o->ml);
    o->acquire_rc = zkl_multilock_acquire(o->ml, o->timeout_ms);
    return NULL;
}

static struct other other_try(zkl_multilock *ml, int timeout_ms)
{
    struct other o = {.ml = ml, .timeout_ms = timeout_ms};
    pthread_t t;
    pthread_create(&t, NULL, other_main, &o);
    pthread_join(t, NULL);
    return o;
}

START_TEST(test_multilock_holds_a_semmutex_member_for_its_object)
{
    char *s1 = tu_path("s1"), *s2 = tu_path("s2");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_semmutex *sm;
    zkl_mutex *m;
    ck_assert_int_eq(zkl_semmutex_new(a, s1, &sm), 0);
    ck_assert_int_eq(zkl_mutex_new(a, s2, &m), 0);
    struct ulock u;
    ulock_init(&u, 3, "s3-user");
    zkl_lock *sl = NULL;
    ck_assert_int_eq(zkl_semmutex_as_lock(sm, &sl), 0);
    ck_assert_str_eq(zkl_lock_path(sl), s1);
    zkl_lock *l[3] = {ulock_handle(&u), mutex_handle(m), sl};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(l, 3, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(sm), 1);
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(u.held, 1);
    expect_children(2, s1, 1, s2, 1);
    /* The semaphore-mutex speaks the mutex protocol: others are kept out. */
    zkl_semmutex *osm;
    zkl_mutex *om;
    ck_assert_int_eq(zkl_semmutex_new(b, s1, &osm), 0);
    ck_assert_int_eq(zkl_mutex_new(b, s1, &om), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(osm, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_acquire(om, 0), ZKL_ETIMEDOUT);
    /* Another thread of this process: the hold is not its own to release,
     * and the object's semaphore-mutex refuses a second hold at once
     * (ZKL_EDEADLK) rather than waiting for itself; nothing changes. */
    struct other st = other_try(ml, 2000);
    ck_assert_int_eq(st.held, 0);
    ck_assert_int_eq(st.release_rc, ZKL_ENOTHELD);
    ck_assert_int_eq(st.acquire_rc, ZKL_EDEADLK);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 1);
    expect_children(2, s1, 1, s2, 1);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(sm), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(u.held, 0);
    expect_children(2, s1, 0, s2, 0);
    ck_assert_int_eq(zkl_semmutex_acquire(osm, 0), 0);
    ck_assert_int_eq(zkl_semmutex_release(osm), 0);
    zkl_multilock_free(ml);
    for (int i = 0; i < 3; i++)
        zkl_lock_free(l[i]);
    ck_assert_int_eq(zkl_semmutex_as_lock(NULL, &sl), ZKL_EINVAL);
    ulock_destroy(&u);
    zkl_semmutex_free(sm);
    zkl_semmutex_free(osm);
    zkl_mutex_free(m);
    zkl_mutex_free(om);
    free(s1), free(s2);
}
END_TEST

START_TEST(test_multilock_mixes_rwlock_sides_semmutex_mutex_and_user_lock)
{
    char *w1 = tu_path("w1"), *w2 = tu_path("w2"), *w3 = tu_path("w3"), *w4 = tu_path("w4");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_rwlock *r1 = tu_test_rwlock(a, w1), *r2 = tu_test_rwlock(a, w2);
    zkl_mutex *m3 = tu_test_mutex(a, w3);
    zkl_lock *rd1 = NULL, *wr1 = NULL, *wr2 = NULL;
    ck_assert_int_eq(zkl_rwlock_read_as_lock(r1, &rd1), 0);
    ck_assert_int_eq(zkl_rwlock_write_as_lock(r1, &wr1), 0);
    ck_assert_int_eq(zkl_rwlock_write_as_lock(r2, &wr2), 0);
    ck_assert_str_eq(zkl_lock_path(rd1), w1);
    ck_assert_str_eq(zkl_lock_path(wr2), w2);
    zkl_lock *m3l = mutex_handle(m3);
    zkl_semmutex *s4 = tu_test_semmutex(a, w4);
    zkl_lock *s4l = NULL;
    ck_assert_int_eq(zkl_semmutex_as_lock(s4, &s4l), 0);
    struct ulock u5;
    ulock_init(&u5, 5, "w5-user");
    zkl_lock *u5l = ulock_handle(&u5);
    /* Both sides of one read-write lock share its path: refused. */
    zkl_lock *both[2] = {rd1, wr1};
    zkl_multilock *ml = NULL;
    ck_assert_int_eq(zkl_multilock_new_locks(both, 2, &ml), ZKL_EINVAL);
    ck_assert_ptr_null(ml);

    zkl_lock *l[5] = {u5l, m3l, wr2, s4l, rd1};
    ck_assert_int_eq(zkl_multilock_new_locks(l, 5, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_is_held(r1), 1);
    ck_assert_int_eq(zkl_rwlock_write_is_held(r2), 1);
    ck_assert_int_eq(zkl_mutex_is_held(m3), 1);
    ck_assert_int_eq(zkl_semmutex_is_held(s4), 1);
    ck_assert_int_eq(u5.held, 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, w4), 1);
    /* The read side is shared, the write side exclusive. */
    zkl_rwlock *o1 = tu_test_rwlock(b, w1), *o2 = tu_test_rwlock(b, w2);
    ck_assert_int_eq(zkl_rwlock_read_acquire(o1, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(o1), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(o1, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_rwlock_read_acquire(o2, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_rwlock_read_is_held(r1), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(r2), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(s4), 0);
    ck_assert_int_eq(u5.held, 0);
    expect_children(4, w1, 0, w2, 0, w3, 0, w4, 0);

    /* A member that refuses at once (an upgrade: the thread reads w2 and
     * the multi-lock wants to write it) undoes the members before it. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(r2, 5000), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), ZKL_EDEADLK);
    ck_assert_int_eq(zkl_rwlock_read_is_held(r1), 0);
    expect_children(4, w1, 0, w2, 1, w3, 0, w4, 0);
    ck_assert_int_eq(u5.held, 0);
    ck_assert_int_eq(zkl_rwlock_read_release(r2), 0);
    /* A thread that writes may read too (downgrade): a multi-lock reading
     * w1 is taken while the thread writes w1 directly. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(r1, 5000), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(r1), 1);
    ck_assert_int_eq(zkl_rwlock_write_release(r1), 0);
    expect_children(2, w1, 0, w2, 0);

    zkl_multilock_free(ml);
    zkl_lock_free(rd1);
    zkl_lock_free(wr1);
    zkl_lock_free(wr2);
    zkl_lock_free(m3l);
    zkl_lock_free(s4l);
    zkl_lock_free(u5l);
    ulock_destroy(&u5);
    free(w1), free(w2), free(w3), free(w4);
}
END_TEST

/* ---- nested multi-locks ------------------------------------------------------ */

enum { NEST_ITER = 20 };

struct nest_worker {
    zkl_multilock *ml;
    int idx[3];
    int n;
    int *inside;
    int *violations;
    int rc;
};

static void *nest_main(void *arg)
{
    struct nest_worker *w = arg;
    for (int k = 0; k < NEST_ITER && w->rc == 0; k++) {
        if ((w->rc = zkl_multilock_acquire(w->ml, 30000)) != 0)
            break;
        for (int i = 0; i < w->n; i++)
            if (__atomic_add_fetch(&w->inside[w->idx[i]], 1, __ATOMIC_SEQ_CST) != 1)
                __atomic_add_fetch(w->violations, 1, __ATOMIC_SEQ_CST);
        usleep(200);
        for (int i = 0; i < w->n; i++)
            __atomic_sub_fetch(&w->inside[w->idx[i]], 1, __ATOMIC_SEQ_CST);
        w->rc = zkl_multilock_release(w->ml);
    }
    return NULL;
}

START_TEST(test_nested_multilocks_with_interleaved_paths_never_deadlock)
{
    char *a = tu_path("a"), *b = tu_path("b"), *c = tu_path("c");
    zkl_client *c1 = tu_test_client(10000), *c2 = tu_test_client(10000);
    /* {{a, c}, b} against {c, b}. Ordering the inner multi-lock as one unit,
     * by its smallest path, would take a, c, then b against b, then c: each
     * could hold what the other waits for. Member by member, both take b
     * before c. */
    const char *ip[] = {a, c};
    zkl_multilock *inner;
    ck_assert_int_eq(zkl_multilock_new(c1, ip, 2, &inner), 0);
    zkl_mutex *mb = tu_test_mutex(c1, b);
    zkl_lock *il, *bl;
    ck_assert_int_eq(zkl_multilock_as_lock(inner, &il), 0);
    bl = mutex_handle(mb);
    zkl_lock *ol[2] = {il, bl};
    zkl_multilock *outer1;
    ck_assert_int_eq(zkl_multilock_new_locks(ol, 2, &outer1), 0);
    const char *p2[] = {c, b};
    zkl_multilock *outer2;
    ck_assert_int_eq(zkl_multilock_new(c2, p2, 2, &outer2), 0);

    /* The same lock twice, through nesting, is refused. */
    zkl_mutex *mc = tu_test_mutex(c1, c);
    zkl_lock *cl = mutex_handle(mc);
    zkl_lock *dup[2] = {il, cl};
    zkl_multilock *bad = NULL;
    ck_assert_int_eq(zkl_multilock_new_locks(dup, 2, &bad), ZKL_EINVAL);
    ck_assert_ptr_null(bad);
    zkl_lock *twice[2] = {il, il};
    ck_assert_int_eq(zkl_multilock_new_locks(twice, 2, &bad), ZKL_EINVAL);

    int inside[3] = {0}, violations = 0;
    struct nest_worker w1 = {outer1, {0, 2, 1}, 3, inside, &violations, 0};
    struct nest_worker w2 = {outer2, {2, 1, 0}, 2, inside, &violations, 0};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, nest_main, &w1);
    pthread_create(&t2, NULL, nest_main, &w2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    ck_assert_msg(w1.rc == 0, "outer1: %s", zkl_err_name(w1.rc));
    ck_assert_msg(w2.rc == 0, "outer2: %s", zkl_err_name(w2.rc));
    ck_assert_int_eq(violations, 0);
    expect_children(3, a, 0, b, 0, c, 0);

    /* A thread that holds the inner multi-lock may take the outer one too
     * (the mutexes only count), and gives everything back in the end. */
    ck_assert_int_eq(zkl_multilock_acquire(inner, 5000), 0);
    ck_assert_int_eq(zkl_multilock_acquire(outer1, 5000), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, a), 1);
    ck_assert_int_eq(zkl_multilock_release(outer1), 0);
    ck_assert_int_eq(zkl_multilock_is_held(inner), 1);
    expect_children(2, a, 1, b, 0);
    ck_assert_int_eq(zkl_multilock_release(inner), 0);
    expect_children(2, a, 0, c, 0);

    zkl_multilock_free(outer1);
    zkl_multilock_free(outer2);
    zkl_lock_free(cl);
    zkl_lock_free(bl);
    zkl_lock_free(il);
    zkl_multilock_free(inner);
    free(a), free(b), free(c);
}
END_TEST

/* ---- threads and reentrancy -------------------------------------------------- */

START_TEST(test_multilock_is_reentrant_and_held_per_thread)
{
    char *p1 = tu_path("r1"), *p2 = tu_path("r2");
    zkl_client *c = tu_test_client(10000);
    const char *paths[] = {p1, p2};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new(c, paths, 2, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    zkl_client_stats before, after;
    zkl_client_get_stats(c, &before);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    zkl_client_get_stats(c, &after);
    ck_assert_int_eq(after.requests, before.requests); /* only counts */
    /* Another thread of the same process neither holds it nor can release
     * it, and waits like any other contender. */
    struct other o = other_try(ml, 300);
    ck_assert_int_eq(o.held, 0);
    ck_assert_int_eq(o.release_rc, ZKL_ENOTHELD);
    ck_assert_int_eq(o.acquire_rc, ZKL_ETIMEDOUT);
    expect_children(2, p1, 1, p2, 1);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p1), 1);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    expect_children(2, p1, 0, p2, 0);
    ck_assert_int_eq(zkl_multilock_release(ml), ZKL_ENOTHELD);
    /* Freeing a held multi-lock gives its nodes back. */
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p1), 1);
    zkl_multilock_free(ml);
    expect_children(2, p1, 0, p2, 0);
    free(p1), free(p2);
}
END_TEST

/* ---- release past failures --------------------------------------------------- */

static bool mutex_not_held(void *arg)
{
    return zkl_mutex_is_held(arg) == 0;
}

START_TEST(test_multilock_release_keeps_going_past_a_lost_member)
{
    char *pa = tu_path("a"), *pb = tu_path("b"), *pz = tu_path("z");
    zkl_client *good = tu_test_client(10000), *doomed = tu_test_client(10000);
    zkl_mutex *ma = tu_test_mutex(good, pa);
    zkl_mutex *mb = tu_test_mutex(good, pb);
    zkl_mutex *mz = tu_test_mutex(doomed, pz);
    zkl_lock *l[3] = {mutex_handle(mz), mutex_handle(ma), mutex_handle(mb)};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(l, 3, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0); /* depth 2 */
    /* z, the last in order and so the first released, goes with its session. */
    tu_expire_session(doomed);
    ck_assert(tu_wait_until(mutex_not_held, mz, 15000));
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 1000), ZKL_ELOST); /* reentry on a lost hold */
    ck_assert_int_eq(zkl_multilock_release(ml), 0);         /* depth 2 -> 1: only counts */
    ck_assert_int_eq(tu_children(tu_fixture_zk, pa), 1);
    ck_assert_int_eq(zkl_multilock_release(ml), ZKL_ELOST); /* the last one releases all */
    ck_assert_int_eq(zkl_mutex_is_held(ma), 0);
    ck_assert_int_eq(zkl_mutex_is_held(mb), 0);
    expect_children(3, pa, 0, pb, 0, pz, 0);
    ck_assert_int_eq(zkl_multilock_release(ml), ZKL_ENOTHELD);
    zkl_multilock_free(ml);
    for (int i = 0; i < 3; i++)
        zkl_lock_free(l[i]);

    /* Several failures: every member is released, the first error counts. */
    struct ulock u1, u2, u3;
    ulock_init(&u1, 1, "u1");
    ulock_init(&u2, 2, "u2");
    ulock_init(&u3, 3, "u3");
    u3.release_rc = ZKL_ECONNLOSS;
    u1.release_rc = ZKL_EZK;
    zkl_lock *ul[4] = {ulock_handle(&u2), ulock_handle(&u3), ulock_handle(&u1), mutex_handle(ma)};
    ck_assert_int_eq(zkl_multilock_new_locks(ul, 4, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, pa), 1);
    ck_assert_int_eq(zkl_multilock_release(ml), ZKL_ECONNLOSS);
    ck_assert_int_eq(u1.held + u2.held + u3.held, 0);
    ck_assert_int_eq(zkl_mutex_is_held(ma), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, pa), 0);
    zkl_multilock_free(ml);
    for (int i = 0; i < 4; i++)
        zkl_lock_free(ul[i]);
    ulock_destroy(&u1);
    ulock_destroy(&u2);
    ulock_destroy(&u3);
    free(pa), free(pb), free(pz);
}
END_TEST

/* ---- bad input ------------------------------------------------------------------ */

static const char *null_path(void *self)
{
    (void)self;
    return NULL;
}

static const char *empty_path(void *self)
{
    (void)self;
    return "";
}

START_TEST(test_multilock_bad_input_is_einval_and_creates_nothing)
{
    zkl_client *c = tu_test_client(10000);
    char *a = tu_path("a"), *b = tu_path("b");
    zkl_multilock *ml = NULL;
    const char *good[] = {a, b};
    ck_assert_int_eq(zkl_multilock_new(c, good, 0, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new(NULL, good, 2, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new(c, NULL, 2, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new(c, good, 2, NULL), ZKL_EINVAL);
    const char *with_null[] = {a, NULL, b};
    ck_assert_int_eq(zkl_multilock_new(c, with_null, 3, &ml), ZKL_EINVAL);
    const char *dups[] = {a, b, a};
    ck_assert_int_eq(zkl_multilock_new(c, dups, 3, &ml), ZKL_EINVAL);
    const char *bad[] = {"", "relative", "/ends/", "/a//b", "/a/./b", "/a/../b", "/zookeeper/x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *one[] = {a, bad[i]};
        ck_assert_msg(zkl_multilock_new(c, one, 2, &ml) == ZKL_EINVAL, "path '%s'", bad[i]);
    }
    ck_assert_ptr_null(ml);

    /* Handles. */
    zkl_lock *l = NULL;
    ck_assert_int_eq(zkl_lock_new(NULL, NULL, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lock_new(&ulock_ops, NULL, NULL), ZKL_EINVAL);
    zkl_lock_ops missing = ulock_ops;
    missing.version = 0; /* not set */
    ck_assert_int_eq(zkl_lock_new(&missing, NULL, &l), ZKL_EINVAL);
    missing.version = ZKL_LOCK_OPS_VERSION + 1; /* built with a newer zkl.h */
    ck_assert_int_eq(zkl_lock_new(&missing, NULL, &l), ZKL_EINVAL);
    missing = ulock_ops;
    missing.is_held = NULL;
    ck_assert_int_eq(zkl_lock_new(&missing, NULL, &l), ZKL_EINVAL);
    missing = ulock_ops;
    missing.path = NULL;
    ck_assert_int_eq(zkl_lock_new(&missing, NULL, &l), ZKL_EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(zkl_mutex_as_lock(NULL, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_as_lock(NULL, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lock_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lock_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lock_is_held(NULL), 0);
    ck_assert_ptr_null(zkl_lock_path(NULL));
    zkl_lock_free(NULL);

    zkl_mutex *ma = tu_test_mutex(c, a), *ma2 = tu_test_mutex(c, a);
    zkl_lock *la = mutex_handle(ma), *la2 = mutex_handle(ma2);
    zkl_lock *nokey, *emptykey;
    zkl_lock_ops o = ulock_ops;
    o.free = NULL;
    o.path = null_path;
    ck_assert_int_eq(zkl_lock_new(&o, NULL, &nokey), 0);
    o.path = empty_path;
    ck_assert_int_eq(zkl_lock_new(&o, NULL, &emptykey), 0);
    zkl_lock *set_null[] = {la, NULL};
    zkl_lock *set_same[] = {la, la};
    zkl_lock *set_twin[] = {la, la2}; /* two objects, one path */
    zkl_lock *set_nokey[] = {la, nokey};
    zkl_lock *set_empty[] = {emptykey, la};
    ck_assert_int_eq(zkl_multilock_new_locks(set_null, 0, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new_locks(NULL, 1, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new_locks(set_null, 1, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new_locks(set_null, 2, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new_locks(set_same, 2, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new_locks(set_twin, 2, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new_locks(set_nokey, 2, &ml), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_new_locks(set_empty, 2, &ml), ZKL_EINVAL);
    ck_assert_ptr_null(ml);

    /* Calls on NULL. */
    ck_assert_int_eq(zkl_multilock_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_is_held(NULL), 0);
    zkl_multilock_free(NULL);

    /* Nothing reached the server. */
    ck_assert(!tu_exists(tu_fixture_zk, tu_fixture_root));
    zkl_client_stats st;
    zkl_client_get_stats(c, &st);
    ck_assert_int_eq(st.creates, 0);
    zkl_lock_free(nokey);
    zkl_lock_free(emptykey);
    zkl_lock_free(la);
    zkl_lock_free(la2);
    free(a), free(b);
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    if (argc == 8 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "ml-child") == 0) {
        const char *paths[] = {argv[5], argv[6], argv[7]};
        return worker_child(argv[3], argv[4], paths);
    }
    const TTest *tests[] = {
        test_multilock_acquires_in_path_order_and_releases_in_reverse,
        test_multilock_two_processes_with_opposite_orders_never_deadlock,
        test_multilock_is_all_or_nothing_when_one_member_is_held_elsewhere,
        test_multilock_member_failure_releases_what_the_call_took,
        test_multilock_timeout_bounds_the_whole_call,
        test_multilock_member_reached_after_the_deadline_is_tried_once,
        test_multilock_huge_timeout_waits_instead_of_failing_at_once,
        test_multilock_mixes_mutexes_user_locks_and_multilocks,
        test_multilock_holds_a_semmutex_member_for_its_object,
        test_multilock_mixes_rwlock_sides_semmutex_mutex_and_user_lock,
        test_nested_multilocks_with_interleaved_paths_never_deadlock,
        test_multilock_is_reentrant_and_held_per_thread,
        test_multilock_release_keeps_going_past_a_lost_member,
        test_multilock_bad_input_is_einval_and_creates_nothing,
        NULL,
    };
    return tu_run_zk_case("multilock", 120, tests);
}
