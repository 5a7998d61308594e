/* The read-write lock against a real ZooKeeper, its policies on their own,
 * and next to Apache Curator's InterProcessReadWriteLock on one path. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"
#include "zkl/zookeeper.h"

static zkl_client_stats stats_of(zkl_client *c)
{
    zkl_client_stats s;
    ck_assert_int_eq(zkl_client_get_stats(c, &s), 0);
    return s;
}

static void wait_children(const char *path, int want)
{
    ck_assert_msg(tu_wait_children(tu_fixture_zk, path, want, 30000), "%s: %d children, want %d",
                  path, tu_children(tu_fixture_zk, path), want);
}

/* The server's 10-digit sequence of a node path. */
static const char *seq_of(const char *node)
{
    return node + strlen(node) - 10;
}

/* ---- worker processes ----------------------------------------------------- *
 * A worker process is this program run again (--worker ...), not a bare fork:
 * a child forked from a process with threads (ZooKeeper's) and making
 * threads of its own confuses ThreadSanitizer. State shared with the test
 * lives in a file mapped by both. */

/* A new file for shared state, zero-filled and mapped; its name in file. */
static void *new_shared(char file[64], size_t size)
{
    snprintf(file, 64, "/tmp/zkl-rwlock-shm-XXXXXX");
    int fd = mkstemp(file);
    ck_assert_int_ge(fd, 0);
    close(fd);
    void *m = tu_map_shared(file, size, 1);
    ck_assert_ptr_nonnull(m);
    return m;
}

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
    int64_t end = tu_now_ms() + 30000;
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
    int64_t tok = zkl_rwlock_write_token(rw);
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
    int64_t end = tu_now_ms() + 60000;
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

START_TEST(test_rwlock_threads_share_reads_and_writers_exclude_everyone)
{
    zkl_client *c = tu_client(10000);
    char *p = tu_path("threads");
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
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
    ck_assert_int_eq(s.rendezvous_failed, 0);
    ck_assert_int_eq(s.max_readers, T_READERS); /* all readers were inside at once */
    ck_assert_int_eq(s.violations, 0);
    ck_assert_int_eq(s.counter, T_WRITERS * T_ITER);
    ck_assert_int_eq(s.token_errors, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(p);
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
    char *p = tu_path("procs");
    char file[64];
    struct rw_shared *s = new_shared(file, sizeof *s);
    pid_t pids[P_READERS + P_WRITERS];
    char nreaders[16], iter[16];
    snprintf(nreaders, sizeof nreaders, "%d", P_READERS);
    snprintf(iter, sizeof iter, "%d", P_ITER);
    for (int i = 0; i < P_READERS + P_WRITERS; i++) {
        const char *args[] = {"procs", p, file, i < P_READERS ? "1" : "0", nreaders, iter, NULL};
        pids[i] = tu_spawn_worker(args, -1);
    }
    for (int i = 0; i < P_READERS + P_WRITERS; i++) {
        int st;
        ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d failed: %d", i, st);
    }
    ck_assert_int_eq(s->rendezvous_failed, 0);
    ck_assert_int_eq(s->max_readers, P_READERS);
    ck_assert_int_eq(s->violations, 0);
    ck_assert_int_eq(s->counter, P_WRITERS * P_ITER);
    ck_assert_int_eq(s->token_errors, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    munmap(s, sizeof *s);
    unlink(file);
    free(p);
}
END_TEST

/* ---- fairness ---------------------------------------------------------------- */

enum { F_READERS = 4 };

struct stream {
    zkl_client *c;
    zkl_rwlock *rw;
    int *stop;
    int *inside;
    long *acquired; /* read acquisitions completed, all readers */
    int rc;
    pthread_t t;
};

static void *stream_reader(void *arg)
{
    struct stream *r = arg;
    while (!__atomic_load_n(r->stop, __ATOMIC_SEQ_CST)) {
        if (zkl_rwlock_read_acquire(r->rw, 30000) != 0) {
            r->rc = -1;
            return NULL;
        }
        __atomic_add_fetch(r->inside, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(r->acquired, 1, __ATOMIC_SEQ_CST);
        usleep(30000);
        __atomic_sub_fetch(r->inside, 1, __ATOMIC_SEQ_CST);
        if (zkl_rwlock_read_release(r->rw) != 0) {
            r->rc = -2;
            return NULL;
        }
        /* straight back into the queue: the readers overlap all the time */
    }
    return NULL;
}

struct acq_count {
    long *acquired;
    long want;
};

static bool acquired_at_least(void *arg)
{
    struct acq_count *a = arg;
    return __atomic_load_n(a->acquired, __ATOMIC_SEQ_CST) >= a->want;
}

START_TEST(test_rwlock_writer_is_not_starved_by_a_stream_of_readers)
{
    char *p = tu_path("fair");
    int stop = 0, inside = 0;
    long acquired = 0;
    struct stream r[F_READERS];
    for (int i = 0; i < F_READERS; i++) {
        r[i] = (struct stream){.c = tu_client(10000), .stop = &stop, .inside = &inside,
                               .acquired = &acquired};
        ck_assert_int_eq(zkl_rwlock_new(r[i].c, p, &r[i].rw), 0);
        pthread_create(&r[i].t, NULL, stream_reader, &r[i]);
    }
    struct acq_count ac = {&acquired, 3 * F_READERS};
    ck_assert(tu_wait_until(acquired_at_least, &ac, 30000));

    zkl_client *wc = tu_client(10000);
    zkl_rwlock *w;
    ck_assert_int_eq(zkl_rwlock_new(wc, p, &w), 0);
    long before = __atomic_load_n(&acquired, __ATOMIC_SEQ_CST);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_rwlock_write_acquire(w, 20000), 0);
    int64_t waited = tu_now_ms() - t0;
    long during = __atomic_load_n(&acquired, __ATOMIC_SEQ_CST) - before;
    ck_assert_int_eq(__atomic_load_n(&inside, __ATOMIC_SEQ_CST), 0);
    usleep(50000); /* hold a while: no reader may come in meanwhile */
    ck_assert_int_eq(__atomic_load_n(&inside, __ATOMIC_SEQ_CST), 0);
    long while_held = __atomic_load_n(&acquired, __ATOMIC_SEQ_CST) - before - during;
    ck_assert_int_eq(zkl_rwlock_write_release(w), 0);
    /* Each reader can complete at most the acquisition it had already
     * started when the writer queued (and one counted late): readers that
     * arrive after the writer wait for it. */
    ck_assert_msg(during <= 2 * F_READERS, "%ld reads completed while the writer waited", during);
    ck_assert_int_eq(while_held, 0);
    ck_assert_msg(waited < 10000, "writer waited %lld ms", (long long)waited);
    /* ... and the readers go on afterwards. */
    ac.want = __atomic_load_n(&acquired, __ATOMIC_SEQ_CST) + F_READERS;
    ck_assert(tu_wait_until(acquired_at_least, &ac, 30000));
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < F_READERS; i++) {
        pthread_join(r[i].t, NULL);
        ck_assert_int_eq(r[i].rc, 0);
        zkl_rwlock_free(r[i].rw);
        zkl_client_close(r[i].c);
    }
    fprintf(stderr, "fairness: writer waited %lld ms, %ld reads completed meanwhile\n",
            (long long)waited, during);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(w);
    zkl_client_close(wc);
    free(p);
}
END_TEST

/* ---- downgrade and upgrade ------------------------------------------------- */

struct bg {
    zkl_rwlock *rw;
    int write;       /* 1: write_acquire, 0: read_acquire */
    long timeout_ms;
    int rc;
    int got;         /* set once the acquire returned 0 */
    int release;     /* the main thread asks the holder to release */
    int released_rc;
    pthread_t t;
};

static void *bg_main(void *arg)
{
    struct bg *b = arg;
    b->rc = b->write ? zkl_rwlock_write_acquire(b->rw, b->timeout_ms)
                     : zkl_rwlock_read_acquire(b->rw, b->timeout_ms);
    if (b->rc != 0)
        return NULL;
    __atomic_store_n(&b->got, 1, __ATOMIC_SEQ_CST);
    int64_t end = tu_now_ms() + 60000;
    while (!__atomic_load_n(&b->release, __ATOMIC_SEQ_CST) && tu_now_ms() < end)
        usleep(1000);
    b->released_rc = b->write ? zkl_rwlock_write_release(b->rw) : zkl_rwlock_read_release(b->rw);
    return NULL;
}

static void bg_start(struct bg *b, zkl_rwlock *rw, int write, long timeout_ms)
{
    *b = (struct bg){.rw = rw, .write = write, .timeout_ms = timeout_ms, .rc = 1};
    pthread_create(&b->t, NULL, bg_main, b);
}

static bool bg_got(void *arg)
{
    return __atomic_load_n(&((struct bg *)arg)->got, __ATOMIC_SEQ_CST) != 0;
}

static void bg_finish(struct bg *b)
{
    __atomic_store_n(&b->release, 1, __ATOMIC_SEQ_CST);
    pthread_join(b->t, NULL);
}

struct req_wait {
    zkl_client *c;
    uint64_t requests;
};

static bool requests_at_least(void *arg)
{
    struct req_wait *r = arg;
    zkl_client_stats s;
    zkl_client_get_stats(r->c, &s);
    return s.requests >= r->requests;
}

/* Wait until a waiter on client c has sent n requests (its create, listing
 * and watch: the watch is sent only after it decided not to hold), and the
 * server has answered them. The counter goes up, under the client's lock,
 * as a request is queued on the handle; one session's requests are served
 * in order, so a round trip queued after them on the same handle returns
 * only once the server has set the watch. */
static void wait_requests(zkl_client *c, uint64_t n)
{
    struct req_wait r = {c, n};
    ck_assert_msg(tu_wait_until(requests_at_least, &r, 30000), "client sent %llu requests",
                  (unsigned long long)stats_of(c).requests);
    struct Stat st;
    ck_assert_int_eq(zoo_exists(zkl_client_handle(c), "/", 0, &st), ZOK);
}

START_TEST(test_rwlock_downgrade_keeps_a_queued_writer_out)
{
    char *p = tu_path("downgrade");
    zkl_client *a = tu_client(10000), *b = tu_client(10000);
    zkl_rwlock *ra, *rb;
    ck_assert_int_eq(zkl_rwlock_new(a, p, &ra), 0);
    ck_assert_int_eq(zkl_rwlock_new(b, p, &rb), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(ra, 5000), 0);
    char wnode[512];
    snprintf(wnode, sizeof wnode, "%s", zkl_rwlock_write_node(ra));

    /* Another client queues a writer: create, listing, watch on ours. */
    struct bg wb;
    bg_start(&wb, rb, 1, 60000);
    wait_children(p, 2);
    wait_requests(b, 3);

    /* Downgrade: the read is granted at once, next to the writer. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(ra, 0), 0);
    const char *rnode = zkl_rwlock_read_node(ra);
    ck_assert_ptr_nonnull(rnode);
    ck_assert(strstr(rnode, "/_c_") != NULL && strstr(rnode, "-__READ__") != NULL);
    ck_assert_str_eq(seq_of(rnode), seq_of(wnode));
    struct Stat st;
    ck_assert_int_eq(zoo_exists(tu_fixture_zk, rnode, 0, &st), ZOK);
    ck_assert_int_eq(st.ephemeralOwner, zkl_client_session_id(a));
    ck_assert_int_eq(zkl_rwlock_read_token(ra), st.czxid);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 3);

    /* Release the write: the queued writer wakes, lists, and must go back
     * to waiting, now on the read node. */
    zkl_client_stats s0 = stats_of(b);
    ck_assert_int_eq(zkl_rwlock_write_release(ra), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(ra), 0);
    wait_requests(b, s0.requests + 2); /* a listing, then a new watch */
    ck_assert_int_eq(__atomic_load_n(&wb.got, __ATOMIC_SEQ_CST), 0);
    ck_assert_int_eq(stats_of(b).watch_events, s0.watch_events + 1);
    ck_assert_int_eq(zkl_rwlock_read_is_held(ra), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 2);

    /* Reading goes on; reentry still counts; then the writer gets in. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(ra, 0), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(ra), 0);
    ck_assert_int_eq(__atomic_load_n(&wb.got, __ATOMIC_SEQ_CST), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(ra), 0);
    ck_assert(tu_wait_until(bg_got, &wb, 30000));
    bg_finish(&wb);
    ck_assert_int_eq(wb.rc, 0);
    ck_assert_int_eq(wb.released_rc, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(ra);
    zkl_rwlock_free(rb);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

START_TEST(test_rwlock_downgrade_then_write_reentry_and_release_in_any_order)
{
    char *p = tu_path("downgrade2");
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    /* Holding both, the write side is still reentrant. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 0), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 2);
    /* Release the read first this time: the write stays. */
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rw), 1);
    ck_assert_int_eq(zkl_rwlock_read_is_held(rw), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    /* A downgraded read left alone is an ordinary read: upgrade refused. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), ZKL_EDEADLK);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(p);
}
END_TEST

START_TEST(test_rwlock_upgrade_is_edeadlk_at_once_and_creates_nothing)
{
    char *p = tu_path("upgrade");
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0); /* depth 2 */
    zkl_client_stats s0 = stats_of(c);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, ZKL_WAIT_FOREVER), ZKL_EDEADLK);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 0), ZKL_EDEADLK);
    ck_assert_int_lt(tu_now_ms() - t0, 1000);
    ck_assert_int_eq(stats_of(c).requests, s0.requests); /* nothing sent */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rw), 0);
    ck_assert_int_eq(zkl_rwlock_read_is_held(rw), 1);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 0), ZKL_EDEADLK); /* still reading */
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    /* Read released: writing is allowed again. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* ---- wake-ups -------------------------------------------------------------- */

START_TEST(test_rwlock_reader_behind_two_writers_wakes_once)
{
    char *p = tu_path("wake1");
    zkl_client *c1 = tu_client(10000), *c2 = tu_client(10000), *c3 = tu_client(10000);
    zkl_rwlock *w1, *w2, *r;
    ck_assert_int_eq(zkl_rwlock_new(c1, p, &w1), 0);
    ck_assert_int_eq(zkl_rwlock_new(c2, p, &w2), 0);
    ck_assert_int_eq(zkl_rwlock_new(c3, p, &r), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(w1, 5000), 0);
    struct bg b2, b3;
    bg_start(&b2, w2, 1, 60000);
    wait_children(p, 2);
    wait_requests(c2, 3);
    bg_start(&b3, r, 0, 60000);
    wait_children(p, 3);
    wait_requests(c3, 3);
    /* W1 goes: W2 holds; the reader, watching W2, sleeps on. */
    ck_assert_int_eq(zkl_rwlock_write_release(w1), 0);
    ck_assert(tu_wait_until(bg_got, &b2, 30000));
    ck_assert_int_eq(__atomic_load_n(&b3.got, __ATOMIC_SEQ_CST), 0);
    /* W2 goes: the reader wakes once and holds. */
    bg_finish(&b2);
    ck_assert(tu_wait_until(bg_got, &b3, 30000));
    bg_finish(&b3);
    ck_assert_int_eq(b2.rc, 0);
    ck_assert_int_eq(b3.rc, 0);
    ck_assert_int_eq(stats_of(c3).watch_events, 1);
    ck_assert_int_eq(stats_of(c2).watch_events, 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(w1);
    zkl_rwlock_free(w2);
    zkl_rwlock_free(r);
    zkl_client_close(c1);
    zkl_client_close(c2);
    zkl_client_close(c3);
    free(p);
}
END_TEST

START_TEST(test_rwlock_reader_wakes_to_watch_the_next_writer_when_its_writer_leaves)
{
    char *p = tu_path("wake2");
    zkl_client *c1 = tu_client(10000), *c2 = tu_client(10000), *c3 = tu_client(10000);
    zkl_rwlock *w1, *w2, *r;
    ck_assert_int_eq(zkl_rwlock_new(c1, p, &w1), 0);
    ck_assert_int_eq(zkl_rwlock_new(c2, p, &w2), 0);
    ck_assert_int_eq(zkl_rwlock_new(c3, p, &r), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(w1, 5000), 0);
    struct bg b2, b3;
    bg_start(&b2, w2, 1, 60000);
    wait_children(p, 2);
    wait_requests(c2, 3);
    bg_start(&b3, r, 0, 60000);
    wait_children(p, 3);
    wait_requests(c3, 3);
    /* The queued writer gives up (its client closes): the reader wakes,
     * and watches W1 now. */
    zkl_client_close(c2);
    pthread_join(b2.t, NULL);
    ck_assert_int_eq(b2.rc, ZKL_ECLOSED);
    zkl_rwlock_free(w2);
    wait_children(p, 2);
    wait_requests(c3, 5); /* listing, new watch */
    ck_assert_int_eq(__atomic_load_n(&b3.got, __ATOMIC_SEQ_CST), 0);
    ck_assert_int_eq(stats_of(c3).watch_events, 1);
    /* W1 goes: the second and last wake-up. */
    ck_assert_int_eq(zkl_rwlock_write_release(w1), 0);
    ck_assert(tu_wait_until(bg_got, &b3, 30000));
    bg_finish(&b3);
    ck_assert_int_eq(b3.rc, 0);
    ck_assert_int_eq(stats_of(c3).watch_events, 2);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(w1);
    zkl_rwlock_free(r);
    zkl_client_close(c1);
    zkl_client_close(c3);
    free(p);
}
END_TEST

/* ---- timeouts, reentrancy, ownership --------------------------------------- */

START_TEST(test_rwlock_timeouts_on_either_side_leave_no_node)
{
    char *p = tu_path("timeouts");
    zkl_client *a = tu_client(10000), *b = tu_client(10000);
    zkl_rwlock *ra, *rb;
    ck_assert_int_eq(zkl_rwlock_new(a, p, &ra), 0);
    ck_assert_int_eq(zkl_rwlock_new(b, p, &rb), 0);

    /* A writer holds: readers and writers time out. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(ra, 5000), 0);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_rwlock_read_acquire(rb, 0), ZKL_ETIMEDOUT);
    ck_assert_int_lt(tu_now_ms() - t0, 2000);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    t0 = tu_now_ms();
    ck_assert_int_eq(zkl_rwlock_read_acquire(rb, 300), ZKL_ETIMEDOUT);
    int64_t took = tu_now_ms() - t0;
    ck_assert_int_ge(took, 290);
    ck_assert_int_lt(took, 3000);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rb, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rb, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_rwlock_read_is_held(rb), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rb), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rb), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_write_release(rb), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_write_release(ra), 0);

    /* A reader holds: another reader gets in at once, a writer times out. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(ra, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rb, 0), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rb), 0);
    t0 = tu_now_ms();
    ck_assert_int_eq(zkl_rwlock_write_acquire(rb, 300), ZKL_ETIMEDOUT);
    took = tu_now_ms() - t0;
    ck_assert_int_ge(took, 290);
    ck_assert_int_lt(took, 3000);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rb, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_rwlock_read_release(ra), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rb, 0), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rb), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(ra);
    zkl_rwlock_free(rb);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

START_TEST(test_rwlock_each_side_is_reentrant_without_new_nodes)
{
    char *p = tu_path("reentrant");
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    for (int write = 0; write < 2; write++) {
        int (*acq)(zkl_rwlock *, long) = write ? zkl_rwlock_write_acquire
                                               : zkl_rwlock_read_acquire;
        int (*rel)(zkl_rwlock *) = write ? zkl_rwlock_write_release : zkl_rwlock_read_release;
        int (*held)(zkl_rwlock *) = write ? zkl_rwlock_write_is_held : zkl_rwlock_read_is_held;
        int64_t (*token)(zkl_rwlock *) = write ? zkl_rwlock_write_token : zkl_rwlock_read_token;
        const char *(*node)(zkl_rwlock *) = write ? zkl_rwlock_write_node : zkl_rwlock_read_node;
        ck_assert_int_eq(held(rw), 0);
        ck_assert_int_eq(token(rw), ZKL_ENOTHELD);
        ck_assert_ptr_null(node(rw));
        ck_assert_int_eq(acq(rw, 5000), 0);
        int64_t tok = token(rw);
        ck_assert_int_gt(tok, 0);
        const char *n = node(rw);
        ck_assert_ptr_nonnull(n);
        ck_assert(strstr(n, write ? "-__WRIT__" : "-__READ__") != NULL);
        struct Stat st;
        ck_assert_int_eq(zoo_exists(tu_fixture_zk, n, 0, &st), ZOK);
        ck_assert_int_eq(st.czxid, tok);
        zkl_client_stats s0 = stats_of(c);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(acq(rw, 5000), 0);
        ck_assert_int_eq(stats_of(c).requests, s0.requests); /* no server traffic */
        ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
        ck_assert_int_eq(token(rw), tok);
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(rel(rw), 0);
            ck_assert_int_eq(held(rw), 1);
            ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
        }
        ck_assert_int_eq(rel(rw), 0);
        ck_assert_int_eq(held(rw), 0);
        ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
        ck_assert_int_eq(rel(rw), ZKL_ENOTHELD);
    }
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(p);
}
END_TEST

struct other {
    zkl_rwlock *rw;
    int rrel, wrel, rheld, wheld;
    int64_t rtok, wtok;
    const char *rnode, *wnode;
    int gset;
    const char *data;
};

static void *other_main(void *arg)
{
    struct other *o = arg;
    o->rheld = zkl_rwlock_read_is_held(o->rw);
    o->wheld = zkl_rwlock_write_is_held(o->rw);
    o->rtok = zkl_rwlock_read_token(o->rw);
    o->wtok = zkl_rwlock_write_token(o->rw);
    o->rnode = zkl_rwlock_read_node(o->rw);
    o->wnode = zkl_rwlock_write_node(o->rw);
    o->rrel = zkl_rwlock_read_release(o->rw);
    o->wrel = zkl_rwlock_write_release(o->rw);
    o->gset = zkl_rwlock_write_guarded_set(o->rw, o->data, "x", 1);
    return NULL;
}

START_TEST(test_rwlock_release_from_wrong_thread_is_enotheld)
{
    char *p = tu_path("wrongthread");
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    struct other o = {.rw = rw, .data = tu_fixture_root};
    pthread_t t;
    pthread_create(&t, NULL, other_main, &o);
    pthread_join(t, NULL);
    ck_assert_int_eq(o.rheld, 0);
    ck_assert_int_eq(o.wheld, 0);
    ck_assert_int_eq(o.rtok, ZKL_ENOTHELD);
    ck_assert_int_eq(o.wtok, ZKL_ENOTHELD);
    ck_assert_ptr_null(o.rnode);
    ck_assert_ptr_null(o.wnode);
    ck_assert_int_eq(o.rrel, ZKL_ENOTHELD);
    ck_assert_int_eq(o.wrel, ZKL_ENOTHELD);
    ck_assert_int_eq(o.gset, ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_read_is_held(rw), 1);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rw), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 2);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* ---- sessions ------------------------------------------------------------------ */

static bool neither_held(void *arg)
{
    return zkl_rwlock_read_is_held(arg) == 0 && zkl_rwlock_write_is_held(arg) == 0;
}

static bool client_connected(void *arg)
{
    int st = zkl_client_state(arg);
    return st == ZKL_STATE_CONNECTED || st == ZKL_STATE_RECONNECTED;
}

START_TEST(test_rwlock_session_expiry_is_reported_as_lost_on_both_sides)
{
    char *p = tu_path("expired");
    zkl_client *c = tu_client(4000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0); /* read depth 2 */
    int64_t old_sid = zkl_client_session_id(c);
    tu_expire_session(c);
    ck_assert(tu_wait_until(neither_held, rw, 15000));
    ck_assert_int_eq(zkl_rwlock_read_token(rw), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_write_token(rw), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 1000), ZKL_ELOST);  /* reentry on a lost hold */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 1000), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ELOST); /* cleared whatever the depth */
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ENOTHELD);
    /* Only the lost write remains: a downgrade from it is refused, since a
     * read node with its old sequence would jump the queue. */
    ck_assert(tu_wait_until(client_connected, c, 15000));
    ck_assert_int_ne(zkl_client_session_id(c), old_sid);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 1000), ZKL_ELOST);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ENOTHELD);
    /* New work goes on in the new session. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(p);
}
END_TEST

START_TEST(test_rwlock_waiting_reader_gets_elost_on_expiry_and_leaves_no_node)
{
    char *p = tu_path("waitexpire");
    zkl_client *a = tu_client(10000), *b = tu_client(4000);
    zkl_rwlock *ra, *rb;
    ck_assert_int_eq(zkl_rwlock_new(a, p, &ra), 0);
    ck_assert_int_eq(zkl_rwlock_new(b, p, &rb), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(ra, 5000), 0);
    struct bg r;
    bg_start(&r, rb, 0, 60000);
    wait_children(p, 2);
    tu_expire_session(b);
    pthread_join(r.t, NULL);
    ck_assert_int_eq(r.rc, ZKL_ELOST);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_rwlock_write_release(ra), 0);
    zkl_rwlock_free(ra);
    zkl_rwlock_free(rb);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

struct lost_log {
    pthread_mutex_t mu;
    int calls, reads, writes;
    int64_t rtok, wtok;
    zkl_rwlock *rw;
    int wrong_lock;
};

static void on_lost(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    struct lost_log *l = arg;
    pthread_mutex_lock(&l->mu);
    l->calls++;
    if (rw != l->rw)
        l->wrong_lock++;
    if (write)
        l->writes++, l->wtok = token;
    else
        l->reads++, l->rtok = token;
    pthread_mutex_unlock(&l->mu);
}

static bool two_calls(void *arg)
{
    struct lost_log *l = arg;
    pthread_mutex_lock(&l->mu);
    int n = l->calls;
    pthread_mutex_unlock(&l->mu);
    return n >= 2;
}

START_TEST(test_rwlock_lost_fn_reports_each_lost_hold_once)
{
    char *p = tu_path("lostfn");
    zkl_client *c = tu_client(4000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    struct lost_log l = {.mu = PTHREAD_MUTEX_INITIALIZER, .rw = rw};
    ck_assert_int_eq(zkl_rwlock_set_lost_fn(NULL, on_lost, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_set_lost_fn(rw, on_lost, &l), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    int64_t wtok = zkl_rwlock_write_token(rw), rtok = zkl_rwlock_read_token(rw);
    tu_expire_session(c);
    ck_assert(tu_wait_until(two_calls, &l, 15000));
    ck_assert(tu_wait_until(client_connected, c, 15000));
    pthread_mutex_lock(&l.mu);
    ck_assert_int_eq(l.calls, 2);
    ck_assert_int_eq(l.writes, 1);
    ck_assert_int_eq(l.reads, 1);
    ck_assert_int_eq(l.wtok, wtok);
    ck_assert_int_eq(l.rtok, rtok);
    ck_assert_int_eq(l.wrong_lock, 0);
    pthread_mutex_unlock(&l.mu);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ELOST);
    /* A second expiry with nothing held tells nothing. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    tu_expire_session(c);
    ck_assert(tu_wait_until(client_connected, c, 15000));
    /* Removed, the callback is not called any more. */
    ck_assert_int_eq(zkl_rwlock_set_lost_fn(rw, NULL, NULL), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    tu_expire_session(c);
    ck_assert(tu_wait_until(client_connected, c, 15000));
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ELOST);
    pthread_mutex_lock(&l.mu);
    ck_assert_int_eq(l.calls, 2);
    pthread_mutex_unlock(&l.mu);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* ---- the generic lock interface ------------------------------------------------ */

START_TEST(test_rwlock_sides_work_as_generic_locks_and_in_a_multilock)
{
    char *p = tu_path("generic"), *q = tu_path("generic-other");
    zkl_client *a = tu_client(10000), *b = tu_client(10000);
    zkl_rwlock *rw, *other;
    zkl_mutex *m;
    ck_assert_int_eq(zkl_rwlock_new(a, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_new(b, p, &other), 0);
    ck_assert_int_eq(zkl_mutex_new(a, q, &m), 0);
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
    zkl_mutex_free(m);
    zkl_rwlock_free(rw);
    zkl_rwlock_free(other);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
    free(q);
}
END_TEST

/* ---- a mutex on the same path ------------------------------------------------- */

START_TEST(test_rwlock_mutex_and_reader_on_one_path_exclude_each_other)
{
    char *p = tu_path("mixed");
    zkl_client *a = tu_client(10000), *b = tu_client(10000);
    zkl_mutex *m;
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_mutex_new(a, p, &m), 0);
    ck_assert_int_eq(zkl_rwlock_new(b, p, &rw), 0);
    /* The mutex holds: a reader treats its "lock-" node as a writer. */
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    zkl_client_stats s0 = stats_of(b);
    struct bg r;
    bg_start(&r, rw, 0, 60000);
    wait_children(p, 2);
    wait_requests(b, s0.requests + 3); /* create, listing, watch */
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
    zkl_mutex_free(m);
    zkl_rwlock_free(rw);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

/* ---- guarded writes ------------------------------------------------------------ */

START_TEST(test_rwlock_guarded_set_only_while_the_write_lock_is_held)
{
    char *p = tu_path("guarded");
    char *data = tu_path("data");
    ck_assert_int_eq(zoo_create(tu_fixture_zk, tu_fixture_root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0,
                                NULL, 0) == ZOK ||
                         tu_exists(tu_fixture_zk, tu_fixture_root),
                     1);
    ck_assert_int_eq(
        zoo_create(tu_fixture_zk, data, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkl_client *c = tu_client(4000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, data, "x", 1), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, data, "x", 1), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, data, "1", 1), 0);
    char buf[8];
    int len = sizeof buf;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, data, 0, buf, &len, NULL), ZOK);
    ck_assert_int_eq(len, 1);
    ck_assert_int_eq(buf[0], '1');
    /* The multi form: several ops, all or nothing. */
    char *extra = tu_path("extra");
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    zoo_set_op_init(&ops[0], data, "2", 1, -1, NULL);
    zoo_create_op_init(&ops[1], extra, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(rw, 2, ops, res), 0);
    ck_assert(tu_exists(tu_fixture_zk, extra));
    /* A failing op applies nothing. */
    zoo_set_op_init(&ops[0], data, "3", 1, -1, NULL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(rw, 2, ops, res), ZKL_EZK);
    len = sizeof buf;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, data, 0, buf, &len, NULL), ZOK);
    ck_assert_int_eq(buf[0], '2');
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(rw, 0, ops, res), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(rw, 1, NULL, res), ZKL_EINVAL);
    /* Lost: nothing is written. */
    tu_expire_session(c);
    ck_assert(tu_wait_until(neither_held, rw, 15000));
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, data, "4", 1), ZKL_ELOST);
    len = sizeof buf;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, data, 0, buf, &len, NULL), ZOK);
    ck_assert_int_eq(buf[0], '2');
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ELOST);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(extra);
    free(data);
    free(p);
}
END_TEST

/* ---- bad input ---------------------------------------------------------------- */

START_TEST(test_rwlock_bad_input_is_einval_and_creates_nothing)
{
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw = NULL;
    const char *bad[] = {NULL, "", "relative", "/ends/", "/a//b", "/a/./b", "/a/../b",
                         "/zookeeper/x", "/zookeeper"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(zkl_rwlock_new(c, bad[i], &rw), ZKL_EINVAL);
        ck_assert_ptr_null(rw);
    }
    char longp[1100];
    longp[0] = '/';
    memset(longp + 1, 'a', sizeof longp - 2);
    longp[sizeof longp - 1] = '\0';
    ck_assert_int_eq(zkl_rwlock_new(c, longp, &rw), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_new(NULL, "/x", &rw), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_new(c, "/x", NULL), ZKL_EINVAL);
    ck_assert_ptr_null(rw);
    ck_assert_int_eq(zkl_rwlock_read_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_is_held(NULL), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(NULL), 0);
    ck_assert_int_eq(zkl_rwlock_read_token(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_token(NULL), ZKL_EINVAL);
    ck_assert_ptr_null(zkl_rwlock_read_node(NULL));
    ck_assert_ptr_null(zkl_rwlock_write_node(NULL));
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(NULL, "/x", "", 0), ZKL_EINVAL);
    zoo_op_t op;
    zoo_set_op_init(&op, "/x", "", 0, -1, NULL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(NULL, 1, &op, NULL), ZKL_EINVAL);
    zkl_rwlock_free(NULL);
    /* A good lock, bad guarded-write arguments. */
    char *p = tu_path("badargs");
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, "bad", "", 0), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, "/x", "", -1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, "/x", NULL, 1), ZKL_EINVAL);
    zkl_client_stats s = stats_of(c);
    ck_assert_int_eq(s.requests, 0);
    ck_assert_int_eq(s.creates, 0);
    /* Nothing reached the server. */
    ck_assert(!tu_exists(tu_fixture_zk, "/ends"));
    ck_assert(!tu_exists(tu_fixture_zk, "/a"));
    ck_assert(!tu_exists(tu_fixture_zk, "/relative"));
    ck_assert(!tu_exists(tu_fixture_zk, "/x"));
    ck_assert(!tu_exists(tu_fixture_zk, p));
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* ---- next to Curator ------------------------------------------------------------ *
 * Curator workers (tests/interop/CuratorWorker.java, Debian's Curator 5.4)
 * and zkl workers log "ACQ|REL kind id realtime-ns token" lines to one file;
 * intervals [ACQ, REL] lie inside the real holds. */

enum { MAX_KIDS = 16 };
static pid_t kids[MAX_KIDS];
static int nkids;
static char tmpdir[64];

static void interop_setup(void)
{
    tu_fixture_setup_named("rwlock");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zkl-rwlock-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    /* Small, quick JVMs: two cores are shared with the server and zkl. */
    setenv("ZKL_JAVA_OPTS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx96m -Xss512k", 0);
    /* Compile the worker once, before any test starts several at once. */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "sh '%s/bench/build-java.sh' --cached '%s/tests/interop/CuratorWorker.java' >/dev/null",
             ZKL_SRCDIR, ZKL_SRCDIR);
    ck_assert_msg(system(cmd) == 0, "cannot build the Curator worker (JDK and Curator jars?)");
}

static void interop_teardown(void)
{
    for (int i = 0; i < nkids; i++) {
        if (kids[i] > 0) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
        }
    }
    nkids = 0;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    tu_fixture_teardown();
}

static char *tmpfile_path(const char *name)
{
    char *s = malloc(strlen(tmpdir) + strlen(name) + 2);
    sprintf(s, "%s/%s", tmpdir, name);
    return s;
}

static pid_t spawn_curator(const char *path, const char *mode, int iters, int hold_ms,
                           const char *log, const char *counter)
{
    char it[16], hold[16];
    snprintf(it, sizeof it, "%d", iters);
    snprintf(hold, sizeof hold, "%d", hold_ms);
    char script[1024];
    snprintf(script, sizeof script, "%s/tests/interop/run-curator-worker.sh", ZKL_SRCDIR);
    const char *hosts = tu_hosts();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", script, "--servers", hosts, "--path", path, "--mode", mode,
              "--iterations", it, "--counter-file", counter, "--log-file", log, "--hold-ms", hold,
              "--acquire-timeout-ms", "45000", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_lt(nkids, MAX_KIDS);
    kids[nkids++] = pid;
    return pid;
}

/* Wait for a child with a deadline; returns its exit status, or -1. */
static int wait_child(pid_t pid, int timeout_ms)
{
    int rc = tu_wait_exit(pid, timeout_ms);
    if (rc >= 0) {
        for (int i = 0; i < nkids; i++)
            if (kids[i] == pid)
                kids[i] = 0;
    }
    return rc < 0 ? -1 : rc;
}

struct iv {
    char kind[8];
    char id[48];
    int64_t acq, rel;
    int zkl;
};

/* Parse a merged log into intervals; returns how many. Each id's lines
 * alternate ACQ, REL. */
static int read_intervals(const char *log, struct iv *out, int max)
{
    FILE *f = fopen(log, "r");
    if (f == NULL)
        return 0;
    int n = 0;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char ev[8], kind[8], id[48];
        long long ns;
        if (sscanf(line, "%7s %7s %47s %lld", ev, kind, id, &ns) != 4)
            ck_abort_msg("bad log line: %s", line);
        if (strcmp(ev, "ACQ") == 0) {
            ck_assert_int_lt(n, max);
            snprintf(out[n].kind, sizeof out[n].kind, "%s", kind);
            snprintf(out[n].id, sizeof out[n].id, "%s", id);
            out[n].acq = ns;
            out[n].rel = -1;
            out[n].zkl = strncmp(id, "zkl-", 4) == 0;
            n++;
        } else {
            int k = n - 1;
            while (k >= 0 && (strcmp(out[k].id, id) != 0 || out[k].rel >= 0))
                k--;
            ck_assert_msg(k >= 0, "REL without ACQ: %s", line);
            out[k].rel = ns;
        }
    }
    fclose(f);
    return n;
}

static int count_lines(const char *log, const char *prefix)
{
    FILE *f = fopen(log, "r");
    if (f == NULL)
        return 0;
    int n = 0;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            n++;
    fclose(f);
    return n;
}

struct line_wait {
    const char *log, *prefix;
    int want;
};

static bool has_lines(void *arg)
{
    struct line_wait *l = arg;
    return count_lines(l->log, l->prefix) >= l->want;
}

static void log_line(int fd, const char *ev, const char *kind, int64_t ns, int64_t tok)
{
    char line[160];
    int len = snprintf(line, sizeof line, "%s %s zkl-%ld %lld %lld\n", ev, kind, (long)getpid(),
                       (long long)ns, (long long)tok);
    if (write(fd, line, (size_t)len) != len)
        _exit(9);
}

START_TEST(test_rwlock_curator_readers_share_with_zkl_readers_and_its_writers_wait)
{
    char *p = tu_path("curator-share");
    char *log = tmpfile_path("share.log"), *cnt = tmpfile_path("counter");
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    /* A Curator reader gets in next to ours, and leaves. */
    pid_t cr = spawn_curator(p, "read", 1, 1, log, cnt);
    ck_assert_int_eq(wait_child(cr, 60000), 0);
    ck_assert_int_eq(count_lines(log, "ACQ read"), 1);
    /* A Curator writer queues behind our read, and stays out. */
    pid_t cw = spawn_curator(p, "write", 1, 1, log, cnt);
    wait_children(p, 2);
    usleep(1000000); /* give it every chance to take the lock wrongly */
    ck_assert_int_eq(count_lines(log, "ACQ write"), 0);
    int64_t released = tu_realtime_ns();
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(wait_child(cw, 60000), 0);
    struct iv ivs[8];
    int n = read_intervals(log, ivs, 8);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(ivs[1].kind, "write");
    ck_assert_int_gt(ivs[1].acq, released);
    ck_assert_int_eq(tu_counter_read(cnt), 1);
    /* A Curator writer holds: our reader waits for it. */
    pid_t cw2 = spawn_curator(p, "write", 1, 3000, log, cnt);
    struct line_wait lw = {log, "ACQ write", 2};
    ck_assert(tu_wait_until(has_lines, &lw, 60000));
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 30000), 0);
    int64_t got = tu_realtime_ns();
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(wait_child(cw2, 60000), 0);
    n = read_intervals(log, ivs, 8);
    ck_assert_int_eq(n, 3);
    ck_assert_int_lt(ivs[2].rel, got);
    ck_assert_int_eq(tu_counter_read(cnt), 2);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(log);
    free(cnt);
    free(p);
}
END_TEST

START_TEST(test_rwlock_downgrade_keeps_a_queued_curator_writer_out)
{
    char *p = tu_path("curator-downgrade");
    char *log = tmpfile_path("downgrade.log"), *cnt = tmpfile_path("counter");
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    /* Behind our writer: a Curator reader, then a Curator writer. */
    pid_t cr = spawn_curator(p, "read", 1, 200, log, cnt);
    wait_children(p, 2);
    pid_t cw = spawn_curator(p, "write", 1, 1, log, cnt);
    wait_children(p, 3);
    /* Downgrade, then release the write. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 0), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    /* The Curator reader, ahead of the writer, joins our read ... */
    struct line_wait lw = {log, "ACQ read", 1};
    ck_assert(tu_wait_until(has_lines, &lw, 60000));
    ck_assert_int_eq(wait_child(cr, 60000), 0);
    /* ... the Curator writer stays out while we read. */
    usleep(1500000);
    ck_assert_int_eq(count_lines(log, "ACQ write"), 0);
    ck_assert_int_eq(zkl_rwlock_read_is_held(rw), 1);
    int64_t released = tu_realtime_ns();
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(wait_child(cw, 60000), 0);
    struct iv ivs[4];
    ck_assert_int_eq(read_intervals(log, ivs, 4), 2);
    ck_assert_str_eq(ivs[1].kind, "write");
    ck_assert_int_gt(ivs[1].acq, released);
    ck_assert_int_gt(ivs[1].acq, ivs[0].rel);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(log);
    free(cnt);
    free(p);
}
END_TEST

enum { MIX_CURATOR_W = 2, MIX_CURATOR_R = 2, MIX_ZKL_W = 2, MIX_ZKL_R = 2, MIX_MAXIV = 2000 };

/* A zkl process of the mixed run: loops until the Curator workers are all
 * done (and at least `min` times), so both run side by side throughout. */
static int zkl_mixed_worker(const char *p, int write, int min, const int *stop, const char *log,
                            const char *cnt)
{
    zkl_client *c = NULL;
    zkl_rwlock *rw;
    const char *hosts = getenv("ZKL_TEST_HOSTS");
    if (hosts == NULL || zkl_client_open(hosts, 10000, &c) != 0 || zkl_rwlock_new(c, p, &rw) != 0)
        return 2;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return 3;
    for (int i = 0; i < min || !__atomic_load_n(stop, __ATOMIC_SEQ_CST); i++) {
        int rc = write ? zkl_rwlock_write_acquire(rw, 45000) : zkl_rwlock_read_acquire(rw, 45000);
        if (rc != 0)
            return 4;
        const char *kind = write ? "write" : "read";
        int64_t tok = write ? zkl_rwlock_write_token(rw) : zkl_rwlock_read_token(rw);
        log_line(fd, "ACQ", kind, tu_realtime_ns(), tok);
        long v = tu_counter_read(cnt);
        usleep(write ? 3000 : 8000);
        if (write && tu_counter_write(cnt, v + 1) != 0)
            return 5;
        log_line(fd, "REL", kind, tu_realtime_ns(), tok);
        rc = write ? zkl_rwlock_write_release(rw) : zkl_rwlock_read_release(rw);
        if (rc != 0)
            return 6;
    }
    close(fd);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    return 0;
}

/* Worker "mixed PATH STOPFILE WRITE MIN LOG COUNTER". */
static int mixed_worker(char **args)
{
    int *stop = tu_map_shared(args[1], sizeof *stop, 0);
    if (stop == NULL)
        return 2;
    int rc = zkl_mixed_worker(args[0], atoi(args[2]), atoi(args[3]), stop, args[4], args[5]);
    munmap(stop, sizeof *stop);
    return rc;
}

static int iv_cmp(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    return x->acq < y->acq ? -1 : x->acq > y->acq;
}

START_TEST(test_rwlock_mixed_curator_and_zkl_run_never_overlaps_a_writer)
{
    char *p = tu_path("curator-mixed");
    char *log = tmpfile_path("mixed.log"), *cnt = tmpfile_path("counter");
    char *stopfile = tmpfile_path("stop");
    int *stop = tu_map_shared(stopfile, sizeof *stop, 1);
    ck_assert_ptr_nonnull(stop);
    enum { CW_ITER = 12, CR_ITER = 20 };
    pid_t cur[MIX_CURATOR_W + MIX_CURATOR_R];
    for (int i = 0; i < MIX_CURATOR_W + MIX_CURATOR_R; i++) {
        int w = i < MIX_CURATOR_W;
        cur[i] = spawn_curator(p, w ? "write" : "read", w ? CW_ITER : CR_ITER, w ? 3 : 8, log, cnt);
    }
    for (int i = 0; i < MIX_ZKL_W + MIX_ZKL_R; i++) {
        const char *args[] = {"mixed", p, stopfile, i < MIX_ZKL_W ? "1" : "0", "5", log, cnt, NULL};
        kids[nkids++] = tu_spawn_worker(args, -1);
    }
    for (int i = 0; i < MIX_CURATOR_W + MIX_CURATOR_R; i++)
        ck_assert_msg(wait_child(cur[i], 90000) == 0, "Curator worker %d failed", i);
    __atomic_store_n(stop, 1, __ATOMIC_SEQ_CST);
    for (int i = MIX_CURATOR_W + MIX_CURATOR_R; i < nkids; i++)
        if (kids[i] > 0)
            ck_assert_msg(wait_child(kids[i], 60000) == 0, "zkl worker failed");

    static struct iv ivs[MIX_MAXIV];
    int n = read_intervals(log, ivs, MIX_MAXIV);
    qsort(ivs, (size_t)n, sizeof ivs[0], iv_cmp);
    int writes = 0, zkl_n = 0, cur_n = 0, max_readers = 0, mixed_readers = 0;
    int64_t zkl_first = INT64_MAX, zkl_last = 0, cur_first = INT64_MAX, cur_last = 0;
    for (int i = 0; i < n; i++) {
        struct iv *a = &ivs[i];
        ck_assert_msg(a->rel >= a->acq, "%s %s never released", a->kind, a->id);
        int w = strcmp(a->kind, "write") == 0;
        writes += w;
        if (a->zkl) {
            zkl_n++;
            zkl_first = a->acq < zkl_first ? a->acq : zkl_first;
            zkl_last = a->rel > zkl_last ? a->rel : zkl_last;
        } else {
            cur_n++;
            cur_first = a->acq < cur_first ? a->acq : cur_first;
            cur_last = a->rel > cur_last ? a->rel : cur_last;
        }
        int readers = 1;
        for (int j = 0; j < n; j++) {
            struct iv *b = &ivs[j];
            if (j == i || b->acq >= a->rel || b->rel <= a->acq)
                continue; /* no overlap */
            int bw = strcmp(b->kind, "write") == 0;
            ck_assert_msg(!w && !bw, "%s %s [%lld, %lld] overlaps %s %s [%lld, %lld]", a->kind,
                          a->id, (long long)a->acq, (long long)a->rel, b->kind, b->id,
                          (long long)b->acq, (long long)b->rel);
            if (b->acq <= a->acq && b->rel > a->acq)
                readers++; /* inside when a came in */
            if (a->zkl != b->zkl)
                mixed_readers++;
        }
        if (!w && readers > max_readers)
            max_readers = readers;
    }
    fprintf(stderr,
            "mixed run: %d intervals (%d zkl, %d Curator), %d writes, max %d readers at once, "
            "%d zkl/Curator reader overlaps\n",
            n, zkl_n, cur_n, writes, max_readers, mixed_readers / 2);
    ck_assert_int_eq(cur_n, MIX_CURATOR_W * CW_ITER + MIX_CURATOR_R * CR_ITER);
    ck_assert_int_ge(zkl_n, (MIX_ZKL_W + MIX_ZKL_R) * 5);
    /* Both ran side by side. */
    ck_assert(zkl_first < cur_last && cur_first < zkl_last);
    /* Every write was a read-modify-write of the counter: none was lost. */
    ck_assert_int_eq(tu_counter_read(cnt), writes);
    ck_assert_int_ge(max_readers, 2);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    munmap(stop, sizeof *stop);
    free(stopfile);
    free(log);
    free(cnt);
    free(p);
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "--worker") == 0) {
        if (strcmp(argv[2], "procs") == 0 && argc == 8)
            return procs_worker(argv + 3);
        if (strcmp(argv[2], "mixed") == 0 && argc == 9)
            return mixed_worker(argv + 3);
        return 2;
    }
    Suite *s = suite_create("rwlock");
    TCase *tp = tu_tcase("policies", 10);
    tcase_add_test(tp, test_rwlock_policies_keep_queued_writers_behind_a_downgrade_tie);
    tcase_add_test(tp, test_rwlock_read_policy_counts_every_other_kind_as_exclusive);
    suite_add_tcase(s, tp);

    TCase *tc = tu_tcase("rwlock", 120);
    tu_add_fixture(tc, "rwlock");
    tcase_add_test(tc, test_rwlock_threads_share_reads_and_writers_exclude_everyone);
    tcase_add_test(tc, test_rwlock_processes_share_reads_and_writers_exclude_everyone);
    tcase_add_test(tc, test_rwlock_writer_is_not_starved_by_a_stream_of_readers);
    tcase_add_test(tc, test_rwlock_downgrade_keeps_a_queued_writer_out);
    tcase_add_test(tc, test_rwlock_downgrade_then_write_reentry_and_release_in_any_order);
    tcase_add_test(tc, test_rwlock_upgrade_is_edeadlk_at_once_and_creates_nothing);
    tcase_add_test(tc, test_rwlock_timeouts_on_either_side_leave_no_node);
    tcase_add_test(tc, test_rwlock_each_side_is_reentrant_without_new_nodes);
    tcase_add_test(tc, test_rwlock_release_from_wrong_thread_is_enotheld);
    tcase_add_test(tc, test_rwlock_mutex_and_reader_on_one_path_exclude_each_other);
    tcase_add_test(tc, test_rwlock_bad_input_is_einval_and_creates_nothing);
    tcase_add_test(tc, test_rwlock_sides_work_as_generic_locks_and_in_a_multilock);
    suite_add_tcase(s, tc);

    TCase *tw = tu_tcase("wakeups", 60);
    tu_add_fixture(tw, "rwlock");
    tcase_add_test(tw, test_rwlock_reader_behind_two_writers_wakes_once);
    tcase_add_test(tw, test_rwlock_reader_wakes_to_watch_the_next_writer_when_its_writer_leaves);
    suite_add_tcase(s, tw);

    TCase *ts = tu_tcase("sessions", 120);
    tu_add_fixture(ts, "rwlock");
    tcase_add_test(ts, test_rwlock_session_expiry_is_reported_as_lost_on_both_sides);
    tcase_add_test(ts, test_rwlock_waiting_reader_gets_elost_on_expiry_and_leaves_no_node);
    tcase_add_test(ts, test_rwlock_guarded_set_only_while_the_write_lock_is_held);
    tcase_add_test(ts, test_rwlock_lost_fn_reports_each_lost_hold_once);
    suite_add_tcase(s, ts);

    TCase *ti = tu_tcase("curator", 150);
    tcase_add_checked_fixture(ti, interop_setup, interop_teardown);
    tcase_add_test(ti, test_rwlock_curator_readers_share_with_zkl_readers_and_its_writers_wait);
    tcase_add_test(ti, test_rwlock_downgrade_keeps_a_queued_curator_writer_out);
    tcase_add_test(ti, test_rwlock_mixed_curator_and_zkl_run_never_overlaps_a_writer);
    suite_add_tcase(s, ti);
    return tu_run(s);
}
