/* The semaphore-mutex against a real ZooKeeper. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

/* ---- threads: any may release, none may acquire twice ------------------- */

struct releaser {
    zkl_semmutex *s;
    int held, rc;
    int64_t token;
};

static void *releaser_main(void *arg)
{
    struct releaser *r = arg;
    r->held = zkl_semmutex_is_held(r->s);
    r->token = tu_semmutex_token(r->s);
    r->rc = zkl_semmutex_release(r->s);
    return NULL;
}

START_TEST(test_semmutex_is_released_by_another_thread)
{
    zkl_client *c = tu_test_client(10000);
    char *p = tu_test_path("otherthread");
    zkl_semmutex *s = tu_test_semmutex(c, p);
    ck_assert_int_eq(zkl_semmutex_acquire(s, 5000), 0);
    int64_t tok = tu_semmutex_token(s);
    ck_assert_int_gt(tok, 0);
    struct releaser r = {.s = s};
    pthread_t t;
    pthread_create(&t, NULL, releaser_main, &r);
    pthread_join(t, NULL);
    ck_assert_int_eq(r.held, 1);     /* held by the object, whoever asks */
    ck_assert_int_eq(r.token, tok);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_int_eq(zkl_semmutex_is_held(s), 0);
    ck_assert_int_eq(tu_semmutex_token(s), ZKL_ENOTHELD);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(zkl_semmutex_release(s), ZKL_ENOTHELD);
    /* and it can be taken again */
    ck_assert_int_eq(zkl_semmutex_acquire(s, 5000), 0);
    ck_assert_int_gt(tu_semmutex_token(s), tok);
    ck_assert_int_eq(zkl_semmutex_release(s), 0);
}
END_TEST

START_TEST(test_semmutex_second_acquire_is_edeadlk_at_once)
{
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    char *p = tu_test_path("deadlk");
    zkl_semmutex *sa = tu_test_semmutex(a, p), *sb = tu_test_semmutex(b, p);
    zkl_lock *la, *lb; /* the same objects, for tu_acquirer */
    ck_assert_int_eq(zkl_semmutex_as_lock(sa, &la), 0);
    ck_assert_int_eq(zkl_semmutex_as_lock(sb, &lb), 0);
    /* While the object holds: from the same thread and from another. */
    ck_assert_int_eq(zkl_semmutex_acquire(sa, 5000), 0);
    zkl_client_stats before, after;
    zkl_client_get_stats(a, &before);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_semmutex_acquire(sa, 5000), ZKL_EDEADLK);
    struct tu_acquirer other;
    tu_acquirer_start(&other, la, 5000, false);
    ck_assert_int_eq(tu_acquirer_join(&other), ZKL_EDEADLK);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(1000));
    zkl_client_get_stats(a, &after);
    ck_assert_int_eq(after.requests, before.requests); /* nothing sent */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_semmutex_is_held(sa), 1);

    /* While another thread of the object is still waiting for it. */
    struct tu_acquirer waiter;
    tu_acquirer_start(&waiter, lb, 30000, false);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 2, 10000));
    ck_assert_int_eq(zkl_semmutex_acquire(sb, 5000), ZKL_EDEADLK);
    ck_assert_int_eq(zkl_semmutex_release(sb), ZKL_ENOTHELD); /* not held yet */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 2);
    ck_assert_int_eq(zkl_semmutex_release(sa), 0);
    ck_assert_int_eq(tu_acquirer_join(&waiter), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(sb), 1);
    ck_assert_int_eq(zkl_semmutex_release(sb), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_lock_free(la);
    zkl_lock_free(lb);
}
END_TEST

/* ---- exclusion ------------------------------------------------------------ */

struct excl {
    zkl_semmutex *s;
    zkl_mutex *m;
    struct tu_arena a;
    int iters;
};

static void enter(struct excl *e)
{
    tu_arena_enter(&e->a);
    usleep(500);
    tu_arena_leave(&e->a);
}

/* One contender's turns, through the generic handle of its recipe. */
struct side {
    zkl_lock *l;
    struct excl *e;
};

static void *side_main(void *arg)
{
    struct side *sd = arg;
    for (int i = 0; i < sd->e->iters; i++) {
        ck_assert_int_eq(zkl_lock_acquire(sd->l, 30000), 0);
        enter(sd->e);
        ck_assert_int_eq(zkl_lock_release(sd->l), 0);
    }
    return NULL;
}

START_TEST(test_semmutex_and_mutex_on_one_path_exclude_each_other)
{
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    char *p = tu_test_path("mixed");
    struct excl e = {.iters = 25};
    ck_assert_int_eq(zkl_semmutex_new(a, p, &e.s), 0);
    ck_assert_int_eq(zkl_mutex_new(b, p, &e.m), 0);
    /* Plainly: one holds, the other times out. */
    ck_assert_int_eq(zkl_semmutex_acquire(e.s, 5000), 0);
    ck_assert_int_eq(zkl_mutex_acquire(e.m, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_semmutex_release(e.s), 0);
    ck_assert_int_eq(zkl_mutex_acquire(e.m, 5000), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(e.s, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_release(e.m), 0);
    /* And under contention. */
    struct side sd[2] = {{NULL, &e}, {NULL, &e}};
    ck_assert_int_eq(zkl_semmutex_as_lock(e.s, &sd[0].l), 0);
    ck_assert_int_eq(zkl_mutex_as_lock(e.m, &sd[1].l), 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, side_main, &sd[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        zkl_lock_free(sd[i].l);
    }
    ck_assert_int_eq(e.a.violations, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_semmutex_free(e.s);
    zkl_mutex_free(e.m);
}
END_TEST

START_TEST(test_semmutex_node_is_a_lock_node)
{
    zkl_client *c = tu_test_client(10000);
    char *p = tu_test_path("protocol");
    zkl_semmutex *s = tu_test_semmutex(c, p);
    ck_assert_int_eq(zkl_semmutex_acquire(s, 5000), 0);
    struct String_vector kids = {0};
    ck_assert_int_eq(zoo_get_children(tu_fixture_zk, p, 0, &kids), ZOK);
    ck_assert_int_eq(kids.count, 1);
    ck_assert(strncmp(kids.data[0], "_c_", 3) == 0);
    ck_assert(strstr(kids.data[0], "-lock-") != NULL);
    char full[1200];
    snprintf(full, sizeof full, "%s/%s", p, kids.data[0]);
    struct Stat st;
    ck_assert_int_eq(zoo_exists(tu_fixture_zk, full, 0, &st), ZOK);
    ck_assert_int_eq(st.czxid, tu_semmutex_token(s));
    deallocate_String_vector(&kids);
    ck_assert_int_eq(zkl_semmutex_release(s), 0);
}
END_TEST

/* ---- generic lock interface ------------------------------------------------ */

START_TEST(test_semmutex_as_lock_joins_a_multilock)
{
    zkl_client *c = tu_test_client(10000), *o = tu_test_client(10000);
    char *p1 = tu_path("ml-a"), *p2 = tu_path("ml-b");
    zkl_semmutex *s, *other;
    zkl_mutex *m;
    ck_assert_int_eq(zkl_semmutex_new(c, p1, &s), 0);
    ck_assert_int_eq(zkl_semmutex_new(o, p1, &other), 0);
    ck_assert_int_eq(zkl_mutex_new(c, p2, &m), 0);
    zkl_lock *h[2];
    ck_assert_int_eq(zkl_semmutex_as_lock(s, &h[0]), 0);
    ck_assert_int_eq(zkl_mutex_as_lock(m, &h[1]), 0);
    ck_assert_str_eq(zkl_lock_path(h[0]), p1);
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(h, 2, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(s), 1);
    ck_assert_int_eq(zkl_lock_is_held(h[0]), 1);
    ck_assert_int_eq(zkl_semmutex_acquire(other, 200), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(s), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p1), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p2), 0);
    ck_assert_int_eq(zkl_semmutex_as_lock(NULL, &h[0]), ZKL_EINVAL);
    zkl_multilock_free(ml);
    zkl_lock_free(h[0]);
    zkl_lock_free(h[1]);
    zkl_mutex_free(m);
    zkl_semmutex_free(s);
    zkl_semmutex_free(other);
    free(p1);
    free(p2);
}
END_TEST

/* ---- next to Curator ---------------------------------------------------------- *
 * Apache Curator 5.4's InterProcessMutex queues on the same "lock-" nodes, so
 * it and the semaphore-mutex must exclude each other on one path. Curator
 * processes (tests/interop/CuratorWorker.java) and zkl threads, each on its own
 * client, log "ACQ|REL mutex <pid>/<thread> <realtime-ns> <czxid>" to one
 * O_APPEND file, one write per line, and bump one counter file with a
 * deliberately non-atomic read-modify-write while they hold. */

enum { CUR_PROCS = 2, CUR_THREADS = 2, CUR_ITER = 40, CUR_HOLD_MS = 2 };

struct zkl_side {
    zkl_client *c;
    zkl_semmutex *s;
    const char *log, *counter;
    int no;
    const char *failed; /* the step that failed, or NULL */
    int rc;
};

static int log_hold(int fd, const char *ev, int no, int64_t tok)
{
    char line[160];
    int len = snprintf(line, sizeof line, "%s mutex %ld/zkl%d %lld %lld\n", ev, (long)getpid(),
                       no, (long long)tu_realtime_ns(), (long long)tok);
    return write(fd, line, (size_t)len) == len ? 0 : -1;
}

static void *zkl_side_main(void *arg)
{
    struct zkl_side *z = arg;
    int fd = open(z->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) {
        z->failed = "open log";
        return NULL;
    }
    for (int i = 0; i < CUR_ITER && z->failed == NULL; i++) {
        int rc = zkl_semmutex_acquire(z->s, 45000);
        if (rc != 0) {
            z->failed = "acquire";
            z->rc = rc;
            break;
        }
        int64_t tok = tu_semmutex_token(z->s);
        if (log_hold(fd, "ACQ", z->no, tok) != 0)
            z->failed = "log ACQ";
        long v = tu_counter_read(z->counter);
        usleep(CUR_HOLD_MS * 1000);
        if (tu_counter_write(z->counter, v + 1) != 0)
            z->failed = "write counter";
        if (log_hold(fd, "REL", z->no, tok) != 0)
            z->failed = "log REL";
        rc = zkl_semmutex_release(z->s);
        if (rc != 0 && z->failed == NULL) {
            z->failed = "release";
            z->rc = rc;
        }
    }
    close(fd);
    return NULL;
}

/* Reap pid within timeout_ms, killing it if it is still there. Returns its
 * exit code, 128 + signal, or -1 if it had to be killed. */
/* Wait for a worker; past the deadline, kill it (-1). */
static int reap_within(pid_t pid, int timeout_ms)
{
    int rc = tu_wait_exit(pid, timeout_ms);
    if (rc == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return rc;
}

struct merged {
    int acq[2];      /* [0] zkl, [1] Curator */
    int no_token;    /* ACQ lines without a czxid */
    int switches;    /* consecutive holds (in time order) from different sides */
};

struct acq_line {
    int64_t ns;
    int curator;
};

static int acq_cmp(const void *a, const void *b)
{
    const struct acq_line *x = a, *y = b;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

static void read_merged(const char *log, struct merged *m)
{
    memset(m, 0, sizeof *m);
    static struct acq_line acqs[4 * CUR_ITER * (CUR_PROCS + CUR_THREADS)];
    int n = 0;
    FILE *f = fopen(log, "r");
    if (f == NULL)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char ev[8], kind[16], id[64], tok[32];
        long long ns;
        if (sscanf(line, "%7s %15s %63s %lld %31s", ev, kind, id, &ns, tok) != 5 ||
            strcmp(ev, "ACQ") != 0)
            continue;
        int cur = strstr(id, "/zkl") == NULL;
        m->acq[cur]++;
        m->no_token += strcmp(tok, "-") == 0;
        if (n < (int)(sizeof acqs / sizeof acqs[0]))
            acqs[n++] = (struct acq_line){ns, cur};
    }
    fclose(f);
    qsort(acqs, (size_t)n, sizeof acqs[0], acq_cmp);
    for (int i = 1; i < n; i++)
        m->switches += acqs[i].curator != acqs[i - 1].curator;
}

static bool log_has_acq(void *arg)
{
    struct merged m;
    read_merged(arg, &m);
    return m.acq[1] > 0;
}

/* Runs tests/history-check.py over the log: its exit status, and its
 * summary line in `summary`. */
static int history_check(const char *log, char *summary, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/history-check.py' '%s' 2>&1", ZKL_SRCDIR, log);
    summary[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        if (summary[0] == '\0') {
            size_t n = strcspn(line, "\n");
            n = n < len ? n : len - 1;
            memcpy(summary, line, n);
            summary[n] = '\0';
        }
        fputs(line, stderr);
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_semmutex_excludes_curator_interprocessmutex_on_one_path)
{
    char *p = tu_test_path("curator");
    struct zkl_side z[CUR_THREADS];
    for (int i = 0; i < CUR_THREADS; i++) {
        z[i] = (struct zkl_side){.c = tu_client(10000), .no = i};
        ck_assert_int_eq(zkl_semmutex_new(z[i].c, p, &z[i].s), 0);
    }
    tu_curator_worker_build();
    char dir[] = "/tmp/zkl-semmutex-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char log[64], counter[64], script[1024], iters[16], hold[16];
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(counter, sizeof counter, "%s/counter", dir);
    snprintf(script, sizeof script, "%s/tests/interop/run-curator-worker.sh", ZKL_SRCDIR);
    snprintf(iters, sizeof iters, "%d", CUR_ITER);
    snprintf(hold, sizeof hold, "%d", CUR_HOLD_MS);
    for (int i = 0; i < CUR_THREADS; i++) {
        z[i].log = log;
        z[i].counter = counter;
    }
    const char *argv[] = {"/bin/sh", script, "--servers", tu_hosts(), "--path", p,
                          "--mode", "mutex", "--iterations", iters, "--counter-file", counter,
                          "--log-file", log, "--hold-ms", hold, "--acquire-timeout-ms", "45000",
                          NULL};

    /* From here to the cleanup nothing asserts, so a failure still kills
     * the JVMs and deletes the znodes and files; PDEATHSIG covers a test
     * process killed on its timeout. */
    pid_t parent = getpid(), pids[CUR_PROCS];
    int started = 0;
    for (int i = 0; i < CUR_PROCS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() == parent)
                execv(argv[0], (char *const *)argv);
            _exit(127);
        }
        started += pids[i] > 0;
    }
    /* Join in while Curator is already taking the lock. */
    bool curator_in = started == CUR_PROCS && tu_wait_until(log_has_acq, log, 60000);
    pthread_t t[CUR_THREADS];
    int threads = 0;
    for (int i = 0; curator_in && i < CUR_THREADS; i++)
        threads += pthread_create(&t[threads], NULL, zkl_side_main, &z[i]) == 0;
    int cur_rc[CUR_PROCS];
    for (int i = 0; i < CUR_PROCS; i++)
        cur_rc[i] = pids[i] > 0 ? reap_within(pids[i], curator_in ? 90000 : 0) : -3;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    bool no_node = tu_wait_children(tu_fixture_zk, p, 0, 10000);
    tu_rmr(tu_fixture_zk, p);

    struct merged m;
    read_merged(log, &m);
    char summary[256];
    int hist = history_check(log, summary, sizeof summary);
    long count = tu_counter_read(counter);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    for (int i = 0; i < CUR_THREADS; i++) {
        zkl_semmutex_free(z[i].s);
        zkl_client_close(z[i].c);
    }
    fprintf(stderr,
            "semmutex: curator: %d Curator 5.4 processes x %d + %d zkl clients x %d on one "
            "path: %d Curator and %d zkl holds, %d switches between sides, counter %ld; %s\n",
            CUR_PROCS, CUR_ITER, CUR_THREADS, CUR_ITER, m.acq[1], m.acq[0], m.switches, count,
            summary);

    ck_assert_msg(curator_in, "no Curator worker got the lock within 60 s");
    ck_assert_int_eq(threads, CUR_THREADS);
    for (int i = 0; i < CUR_PROCS; i++)
        ck_assert_msg(cur_rc[i] == 0, "Curator worker %d: %d", i, cur_rc[i]);
    for (int i = 0; i < CUR_THREADS; i++)
        ck_assert_msg(z[i].failed == NULL, "zkl side %d: %s failed (%d)", i, z[i].failed,
                      z[i].rc);
    ck_assert_int_eq(m.acq[1], CUR_PROCS * CUR_ITER);
    ck_assert_int_eq(m.acq[0], CUR_THREADS * CUR_ITER);
    ck_assert_int_eq(m.no_token, 0); /* every hold took part in the token check */
    /* No overlap, tokens increasing, every hold released. */
    ck_assert_msg(hist == 0, "history-check: %d: %s", hist, summary);
    /* No read-modify-write was lost. */
    ck_assert_int_eq(count, (CUR_PROCS + CUR_THREADS) * CUR_ITER);
    /* The sides really took turns, not one after the other. */
    ck_assert_int_ge(m.switches, 4);
    ck_assert(no_node);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_semmutex_is_released_by_another_thread,
        test_semmutex_second_acquire_is_edeadlk_at_once,
        test_semmutex_and_mutex_on_one_path_exclude_each_other,
        test_semmutex_node_is_a_lock_node,
        test_semmutex_as_lock_joins_a_multilock,
        test_semmutex_excludes_curator_interprocessmutex_on_one_path,
        NULL,
    };
    return tu_run_zk_case("semmutex", 120, tests);
}
