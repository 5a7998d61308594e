/* The read-write lock against a real ZooKeeper, its basic rules: readers
 * share, writers exclude everyone (threads and processes), a mutex's node
 * counts as a writer, the generic handles; and its policies on their own.
 * Reentrancy and downgrade: check_rwlock_reentry; waiter order and
 * wake-ups: check_rwlock_order; loss: check_rwlock_loss; next to Curator:
 * check_rwlock_interop; what every recipe shares: check_common. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"
#include "rwlock_util.h"
#include "zkl/zookeeper.h"

/* ---- the policies on their own -------------------------------------------- */

#define U1 "_c_11111111-1111-4111-8111-111111111111-"
#define U2 "_c_22222222-2222-4222-8222-222222222222-"
#define U3 "_c_33333333-3333-4333-8333-333333333333-"
#define U4 "_c_44444444-4444-4444-8444-444444444444-"

static void parse_all(const char **names, size_t n, zkl__entry *es)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(zkl__entry_parse(names[i], &es[i]), 0);
}

static bool decide(const zkl__policy *p, const char **names, size_t n, size_t self, bool downgrade,
                   size_t *watch)
{
    zkl__entry es[8];
    parse_all(names, n, es);
    *watch = (size_t)-1;
    return p->holds(es, n, self, watch, &downgrade);
}

START_TEST(test_rwlock_policies_keep_queued_writers_behind_a_downgrade_tie)
{
    /* A writer (seq 5) downgraded: its reader carries the same digits. The
     * pair may come in either order; a writer (7) and a reader (8) queue. */
    const char *w5 = U1 "__WRIT__0000000005", *r5 = U2 "__READ__0000000005";
    const char *w7 = U3 "__WRIT__0000000007", *r8 = U4 "__READ__0000000008";
    const char *orders[2][4] = {{w5, r5, w7, r8}, {r5, w5, w7, r8}};
    size_t watch;
    for (int o = 0; o < 2; o++) {
        const char **l = orders[o];
        /* The downgrade reader holds, wherever it sorts in the pair. */
        ck_assert(decide(&zkl__read_policy, l, 4, o == 0 ? 1 : 0, true, &watch));
        /* The queued writer waits for its neighbour ahead. */
        ck_assert(!decide(&zkl__write_policy, l, 4, 2, false, &watch));
        ck_assert_uint_eq(watch, 1);
        /* The later reader waits for the queued writer, the nearest
         * exclusive node ahead of it, not the first one. */
        ck_assert(!decide(&zkl__read_policy, l, 4, 3, false, &watch));
        ck_assert_uint_eq(watch, 2);
    }
    /* The writer of the pair released: the queued writer still waits, now
     * for the downgrade reader; the later reader for the queued writer. */
    const char *after[3] = {r5, w7, r8};
    ck_assert(!decide(&zkl__write_policy, after, 3, 1, false, &watch));
    ck_assert_uint_eq(watch, 0);
    ck_assert(!decide(&zkl__read_policy, after, 3, 2, false, &watch));
    ck_assert_uint_eq(watch, 1);
    /* Readers that only have readers ahead hold together. */
    const char *readers[3] = {r5, U3 "__READ__0000000006", r8};
    for (size_t i = 0; i < 3; i++)
        ck_assert(decide(&zkl__read_policy, readers, 3, i, false, &watch));
    /* A writer behind readers waits for the last of them. */
    const char *wr[3] = {r5, U3 "__READ__0000000006", w7};
    ck_assert(!decide(&zkl__write_policy, wr, 3, 2, false, &watch));
    ck_assert_uint_eq(watch, 1);
}
END_TEST

START_TEST(test_rwlock_read_policy_counts_every_other_kind_as_exclusive)
{
    const char *l[4] = {U1 "lock-0000000001", U2 "__READ__0000000002", U3 "sem-0000000003",
                        U4 "__READ__0000000004"};
    size_t watch;
    ck_assert(!decide(&zkl__read_policy, l, 4, 1, false, &watch));
    ck_assert_uint_eq(watch, 0);
    ck_assert(!decide(&zkl__read_policy, l, 4, 3, false, &watch));
    ck_assert_uint_eq(watch, 2);
    /* A name without protection still counts by its kind. */
    const char *plain[2] = {"__READ__0000000001", "__READ__0000000002"};
    ck_assert(decide(&zkl__read_policy, plain, 2, 1, false, &watch));
    const char *odd[2] = {"x__READ__0000000001", "__READ__0000000002"};
    ck_assert(!decide(&zkl__read_policy, odd, 2, 1, false, &watch));
    ck_assert(!zkl__read_policy.handoff);
    ck_assert(!zkl__write_policy.handoff);
    ck_assert_str_eq(zkl__read_policy.kind, "__READ__");
    ck_assert_str_eq(zkl__write_policy.kind, "__WRIT__");
}
END_TEST

/* ---- readers share, writers exclude: threads ------------------------------- */

enum { T_READERS = 4, T_WRITERS = 2, T_ITER = 15 };

struct rw_shared {
    int readers, writers;      /* inside right now */
    int max_readers;
    int violations;
    int met;                   /* readers that saw all readers inside */
    int go;                    /* writers may start */
    int rendezvous_failed;
    long counter;              /* written only under the write lock */
    long writes;
    int64_t last_wtoken;
    int token_errors;
};

static void note_max(int *max, int v)
{
    int m = __atomic_load_n(max, __ATOMIC_SEQ_CST);
    while (v > m && !__atomic_compare_exchange_n(max, &m, v, false, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST))
        ;
}

/* Phase one: every reader acquires and stays inside until all readers are
 * inside at once, which proves they share the lock (no writer runs yet). */
static int reader_rendezvous(zkl_rwlock *rw, struct rw_shared *s, int nreaders)
{
    if (zkl_rwlock_read_acquire(rw, 30000) != 0)
        return -1;
    int in = __atomic_add_fetch(&s->readers, 1, __ATOMIC_SEQ_CST);
    note_max(&s->max_readers, in);
    int64_t end = tu_now_ms() + tu_ms(30000);
    while (__atomic_load_n(&s->readers, __ATOMIC_SEQ_CST) < nreaders && tu_now_ms() < end)
        usleep(1000);
    if (__atomic_load_n(&s->readers, __ATOMIC_SEQ_CST) < nreaders)
        __atomic_store_n(&s->rendezvous_failed, 1, __ATOMIC_SEQ_CST);
    if (__atomic_add_fetch(&s->met, 1, __ATOMIC_SEQ_CST) == nreaders)
        __atomic_store_n(&s->go, 1, __ATOMIC_SEQ_CST);
    /* Leave only once everyone has looked, so nobody misses anybody. */
    while (__atomic_load_n(&s->go, __ATOMIC_SEQ_CST) == 0 && tu_now_ms() < end)
        usleep(1000);
    __atomic_sub_fetch(&s->readers, 1, __ATOMIC_SEQ_CST);
    return zkl_rwlock_read_release(rw) == 0 ? 0 : -1;
}

static int one_read(zkl_rwlock *rw, struct rw_shared *s)
{
    if (zkl_rwlock_read_acquire(rw, 30000) != 0)
        return -1;
    int in = __atomic_add_fetch(&s->readers, 1, __ATOMIC_SEQ_CST);
    note_max(&s->max_readers, in);
    if (__atomic_load_n(&s->writers, __ATOMIC_SEQ_CST) != 0)
        __atomic_add_fetch(&s->violations, 1, __ATOMIC_SEQ_CST);
    long c1 = __atomic_load_n(&s->counter, __ATOMIC_SEQ_CST);
    usleep(2000);
    if (__atomic_load_n(&s->counter, __ATOMIC_SEQ_CST) != c1) /* a writer got in */
        __atomic_add_fetch(&s->violations, 1, __ATOMIC_SEQ_CST);
    __atomic_sub_fetch(&s->readers, 1, __ATOMIC_SEQ_CST);
    return zkl_rwlock_read_release(rw) == 0 ? 0 : -1;
}

static int one_write(zkl_rwlock *rw, struct rw_shared *s)
{
    if (zkl_rwlock_write_acquire(rw, 30000) != 0)
        return -1;
    if (__atomic_add_fetch(&s->writers, 1, __ATOMIC_SEQ_CST) != 1 ||
        __atomic_load_n(&s->readers, __ATOMIC_SEQ_CST) != 0)
        __atomic_add_fetch(&s->violations, 1, __ATOMIC_SEQ_CST);
    int64_t tok = tu_rwlock_write_token(rw);
    if (tok <= s->last_wtoken)
        s->token_errors++;
    s->last_wtoken = tok;
    long v = s->counter; /* a deliberately non-atomic read-modify-write */
    usleep(1000);
    s->counter = v + 1;
    s->writes++;
    __atomic_sub_fetch(&s->writers, 1, __ATOMIC_SEQ_CST);
    return zkl_rwlock_write_release(rw) == 0 ? 0 : -1;
}

struct worker {
    zkl_rwlock *rw;
    struct rw_shared *s;
    int reader;
    int nreaders;
    int iter;
    int rc;
};

static void wait_go(struct rw_shared *s)
{
    int64_t end = tu_now_ms() + tu_ms(60000);
    while (__atomic_load_n(&s->go, __ATOMIC_SEQ_CST) == 0 && tu_now_ms() < end)
        usleep(1000);
}

static int work(struct worker *w)
{
    if (w->reader && reader_rendezvous(w->rw, w->s, w->nreaders) != 0)
        return -1;
    wait_go(w->s);
    for (int i = 0; i < w->iter; i++) {
        if ((w->reader ? one_read(w->rw, w->s) : one_write(w->rw, w->s)) != 0)
            return -1;
    }
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    w->rc = work(w);
    return NULL;
}

/* What the readers and writers saw: all readers inside at once, never a
 * writer beside anyone, every write counted, tokens increasing; and no
 * node left. */
static void shared_and_excluded(const struct rw_shared *s, int readers, long writes,
                                const char *p)
{
    ck_assert_int_eq(s->rendezvous_failed, 0);
    ck_assert_int_eq(s->max_readers, readers); /* all readers were inside at once */
    ck_assert_int_eq(s->violations, 0);
    ck_assert_int_eq(s->counter, writes);
    ck_assert_int_eq(s->token_errors, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}

START_TEST(test_rwlock_threads_share_reads_and_writers_exclude_everyone)
{
    zkl_client *c = tu_test_client(10000);
    char *p = tu_test_path("threads");
    zkl_rwlock *rw = tu_test_rwlock(c, p);
    struct rw_shared s = {0};
    struct worker w[T_READERS + T_WRITERS];
    pthread_t t[T_READERS + T_WRITERS];
    for (int i = 0; i < T_READERS + T_WRITERS; i++) {
        w[i] = (struct worker){rw, &s, i < T_READERS, T_READERS, T_ITER, 0};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < T_READERS + T_WRITERS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(w[i].rc == 0, "worker %d failed", i);
    }
    shared_and_excluded(&s, T_READERS, T_WRITERS * T_ITER, p);
}
END_TEST

/* ---- readers share, writers exclude: processes ----------------------------- */

enum { P_READERS = 3, P_WRITERS = 2, P_ITER = 15 };

/* Worker "procs PATH SHM READER NREADERS ITER": one reader or writer of the
 * processes test, sharing struct rw_shared through SHM. */
static int procs_worker(char **args)
{
    const char *hosts = getenv("ZKL_TEST_HOSTS");
    struct rw_shared *s = tu_map_shared(args[1], sizeof *s, 0);
    if (hosts == NULL || s == NULL)
        return 2;
    zkl_client *c = NULL;
    zkl_rwlock *rw;
    if (zkl_client_open(hosts, 10000, &c) != 0)
        return 2;
    if (zkl_rwlock_new(c, args[0], &rw) != 0)
        return 2;
    struct worker w = {rw, s, atoi(args[2]), atoi(args[3]), atoi(args[4]), 0};
    int rc = work(&w);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    munmap(s, sizeof *s);
    return rc == 0 ? 0 : 3;
}

START_TEST(test_rwlock_processes_share_reads_and_writers_exclude_everyone)
{
    char *p = tu_test_path("procs");
    char file[64];
    struct rw_shared *s = tu_shared_new(file, sizeof *s);
    pid_t pids[P_READERS + P_WRITERS];
    char nreaders[16], iter[16];
    snprintf(nreaders, sizeof nreaders, "%d", P_READERS);
    snprintf(iter, sizeof iter, "%d", P_ITER);
    for (int i = 0; i < P_READERS + P_WRITERS; i++) {
        const char *args[] = {"procs", p, file, i < P_READERS ? "1" : "0", nreaders, iter, NULL};
        pids[i] = tu_spawn_worker(args, -1);
    }
    tu_workers_join(pids, P_READERS + P_WRITERS);
    shared_and_excluded(s, P_READERS, P_WRITERS * P_ITER, p);
    munmap(s, sizeof *s);
    unlink(file);
}
END_TEST


/* ---- timeouts -------------------------------------------------------------- */

START_TEST(test_rwlock_reader_shares_at_once_and_writer_times_out_leaving_no_node)
{
    struct rwset t;
    rwset_open(&t, "timeouts", 2, 10000);
    const char *p = t.p;
    zkl_rwlock *ra = t.rw[0], *rb = t.rw[1];

    /* A writer holds: either side times out (check_common). A reader
     * holds: another reader gets in at once, a writer times out. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(ra, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rb, 0), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rb), 0);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_rwlock_write_acquire(rb, 300), ZKL_ETIMEDOUT);
    int64_t took = tu_now_ms() - t0;
    ck_assert_int_ge(took, 290);
    ck_assert_int_lt(took, 300 + tu_ms(2700)); /* its node's round trips, on a slow build */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rb, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_rwlock_read_release(ra), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rb, 0), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rb), 0);
    rwset_close(&t);
}
END_TEST


/* ---- the generic lock interface ------------------------------------------------ */

START_TEST(test_rwlock_sides_work_as_generic_locks_and_in_a_multilock)
{
    char *p = tu_path("generic"), *q = tu_path("generic-other");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_rwlock *rw = tu_test_rwlock(a, p), *other = tu_test_rwlock(b, p);
    zkl_mutex *m = tu_test_mutex(a, q);
    zkl_lock *rl, *wl, *ml;
    ck_assert_int_eq(zkl_rwlock_read_as_lock(NULL, &rl), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_as_lock(NULL, &wl), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_as_lock(rw, &rl), 0);
    ck_assert_int_eq(zkl_rwlock_write_as_lock(rw, &wl), 0);
    ck_assert_int_eq(zkl_mutex_as_lock(m, &ml), 0);
    ck_assert_str_eq(zkl_lock_path(rl), p);
    ck_assert_str_eq(zkl_lock_path(wl), p);
    /* The read side through the handle. */
    ck_assert_int_eq(zkl_lock_acquire(rl, 5000), 0);
    ck_assert_int_eq(zkl_lock_is_held(rl), 1);
    ck_assert_int_eq(zkl_lock_is_held(wl), 0);
    ck_assert_int_eq(zkl_rwlock_read_is_held(rw), 1);
    ck_assert_int_eq(zkl_lock_acquire(wl, 0), ZKL_EDEADLK); /* upgrade */
    ck_assert_int_eq(zkl_lock_release(rl), 0);
    /* Both sides of one lock cannot be members of one multi-lock. */
    zkl_multilock *mlk = NULL;
    zkl_lock *both[2] = {rl, wl};
    ck_assert_int_eq(zkl_multilock_new_locks(both, 2, &mlk), ZKL_EINVAL);
    /* The write side and a mutex, all or nothing. */
    zkl_lock *members[2] = {ml, wl};
    ck_assert_int_eq(zkl_multilock_new_locks(members, 2, &mlk), 0);
    ck_assert_int_eq(zkl_multilock_acquire(mlk, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rw), 1);
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(zkl_rwlock_read_acquire(other, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_multilock_release(mlk), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rw), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    /* A reader elsewhere makes the whole multi-lock time out, taking
     * nothing. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(other, 5000), 0);
    ck_assert_int_eq(zkl_multilock_acquire(mlk, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, q), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_rwlock_read_release(other), 0);
    zkl_multilock_free(mlk);
    zkl_lock_free(rl);
    zkl_lock_free(wl);
    zkl_lock_free(ml);
    free(p);
    free(q);
}
END_TEST

/* ---- a mutex on the same path ------------------------------------------------- */

START_TEST(test_rwlock_mutex_and_reader_on_one_path_exclude_each_other)
{
    char *p = tu_test_path("mixed");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_mutex *m = tu_test_mutex(a, p);
    zkl_rwlock *rw = tu_test_rwlock(b, p);
    /* The mutex holds: a reader treats its "lock-" node as a writer. */
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    zkl_client_stats s0 = tu_stats(b);
    struct bg r;
    bg_start(&r, rw, 0, 60000);
    wait_children(p, 2);
    tu_wait_requests(b, s0.requests + 4); /* create, listing, own watch, watch */
    ck_assert_int_eq(__atomic_load_n(&r.got, __ATOMIC_SEQ_CST), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert(tu_wait_until(bg_got, &r, 30000));
    /* The reader holds: the mutex waits. */
    ck_assert_int_eq(zkl_mutex_acquire(m, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_acquire(m, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    bg_finish(&r);
    ck_assert_int_eq(r.released_rc, 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST


int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    if (argc == 8 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "procs") == 0)
        return procs_worker(argv + 3);
    Suite *s = suite_create("rwlock");
    TCase *tp = tu_tcase("policies", 10);
    tcase_add_test(tp, test_rwlock_policies_keep_queued_writers_behind_a_downgrade_tie);
    tcase_add_test(tp, test_rwlock_read_policy_counts_every_other_kind_as_exclusive);
    suite_add_tcase(s, tp);

    TCase *tc = tu_tcase("rwlock", 120);
    tu_add_fixture(tc, "rwlock");
    tcase_add_test(tc, test_rwlock_threads_share_reads_and_writers_exclude_everyone);
    tcase_add_test(tc, test_rwlock_processes_share_reads_and_writers_exclude_everyone);
    tcase_add_test(tc, test_rwlock_reader_shares_at_once_and_writer_times_out_leaving_no_node);
    tcase_add_test(tc, test_rwlock_mutex_and_reader_on_one_path_exclude_each_other);
    tcase_add_test(tc, test_rwlock_sides_work_as_generic_locks_and_in_a_multilock);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
