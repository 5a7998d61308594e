/* fork(): in a child, every call on a client or lock object inherited from
 * the parent fails at once with ZKL_EFORK, is_held says 0, and freeing them
 * (zkl_client_close included) is a local free that touches neither the
 * parent's session nor its nodes: no crash, no hang, and the parent still
 * holds and releases as if nothing happened. The child can open clients
 * of its own. Against a real ZooKeeper. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

/* ---- the child's checks ------------------------------------------------------
 * A failed check is written to the pipe (its line and expression), and the
 * child goes on, so that one run reports every call that misbehaves. The
 * child also writes where it is (CHILD_AT), so that a hang names the step. */
static int report_fd = -1;
static int child_failures;

static void child_failed(int line, const char *what)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "line %d: %s\n", line, what);
    if (write(report_fd, msg, (size_t)n) < 0)
        _exit(99);
    child_failures++;
}
static void child_at(const char *step)
{
    char msg[128];
    int n = snprintf(msg, sizeof msg, "at: %s\n", step);
    if (write(report_fd, msg, (size_t)n) < 0)
        _exit(99);
}
#define CHILD_AT(step) child_at(step)
#define CHILD_CHECK(cond)                                                                \
    do {                                                                                 \
        if (!(cond))                                                                     \
            child_failed(__LINE__, #cond);                                               \
    } while (0)

/* The first line of DIR/TASK/FILE, without its newline ("" if none). */
static void proc_line(const char *dir, const char *task, const char *file, char *out, size_t size)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s/%s", dir, task, file);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f != NULL && fgets(out, (int)size, f) == NULL)
        out[0] = '\0';
    if (f != NULL)
        fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* What a process that does not exit is doing: each of its threads' wait
 * channel and system call (number first; 202 is futex on x86-64). */
static void describe_stuck(pid_t pid, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    for (struct dirent *t; d && (t = readdir(d)) != NULL && used + 1 < size;) {
        if (t->d_name[0] == '.')
            continue;
        char wchan[64], sys[128];
        proc_line(dir, t->d_name, "wchan", wchan, sizeof wchan);
        proc_line(dir, t->d_name, "syscall", sys, sizeof sys);
        int k = snprintf(out + used, size - used, "thread %s: wchan %s, syscall %.40s\n",
                         t->d_name, wchan[0] ? wchan : "?", sys[0] ? sys : "?");
        used += k > 0 ? (size_t)k : 0;
    }
    if (d)
        closedir(d);
}

/* Run `child` in a fork, with a pipe for its report; wait for it within
 * `timeout_ms`. Returns 1 when it exited 0, or 0 with what went wrong (a
 * failed check, a crash or a hang) in msg. Asserts nothing, so that a
 * caller with a thread of its own running can stop it first. */
static int run_child(void (*child)(void *), void *arg, int timeout_ms, char *msg, size_t size)
{
    int p[2];
    if (pipe(p) != 0) {
        snprintf(msg, size, "no pipe");
        return 0;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        report_fd = p[1];
        child(arg);
        _exit(child_failures == 0 ? 0 : 1);
    }
    close(p[1]);
    int st = pid < 0 ? -2 : tu_wait_exit(pid, timeout_ms);
    char stuck[1024] = "";
    if (st == -1) {
        describe_stuck(pid, stuck, sizeof stuck);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    char report[4096] = "";
    ssize_t k = read(p[0], report, sizeof report - 1);
    report[k > 0 ? k : 0] = '\0';
    close(p[0]);
    snprintf(msg, size, "the child %s%s%s",
             st == -2   ? "could not be forked\n"
             : st == -1 ? "hung (killed after the deadline)\n"
             : st > 128 ? "died of a signal\n"
                        : "failed:\n",
             report, stuck);
    return st == 0;
}

/* run_child, and the test fails unless the child passed. */
static void in_child(void (*child)(void *), void *arg, int timeout_ms)
{
    char msg[6144];
    int ok = run_child(child, arg, timeout_ms, msg, sizeof msg);
    ck_assert_msg(ok, "%s", msg);
}

/* ---- a parent that holds one of every kind ---------------------------------- */

struct held {
    zkl_client *c;
    char *pm, *prw, *psm, *psem, *preq, *pml[2];
    zkl_mutex *m;
    zkl_rwlock *rw;
    zkl_semmutex *sm;
    zkl_semaphore *sem;
    zkl_lease *lease;
    zkl_request *req;
    zkl_multilock *ml;
    zkl_cancel *h;
    int req_result;
    int64_t sid, tm, trw, tsm, tl, treq;
};

static void req_done(zkl_request *r, int result, void *arg)
{
    (void)r;
    __atomic_store_n((int *)arg, result == 0 ? 1 : result, __ATOMIC_SEQ_CST);
}

static bool req_told(void *arg)
{
    return __atomic_load_n((int *)arg, __ATOMIC_SEQ_CST) != 0;
}

static void hold_everything(struct held *x)
{
    x->c = tu_client(10000);
    x->pm = tu_path("mutex");
    x->prw = tu_path("rw");
    x->psm = tu_path("semmutex");
    x->psem = tu_path("sem");
    x->preq = tu_path("req");
    x->pml[0] = tu_path("ml-a");
    x->pml[1] = tu_path("ml-b");
    ck_assert_int_eq(zkl_mutex_new(x->c, x->pm, &x->m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(x->m, 10000), 0);
    ck_assert_int_eq(zkl_rwlock_new(x->c, x->prw, &x->rw), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(x->rw, 10000), 0);
    ck_assert_int_eq(zkl_semmutex_new(x->c, x->psm, &x->sm), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(x->sm, 10000), 0);
    ck_assert_int_eq(zkl_semaphore_new(x->c, x->psem, 2, &x->sem), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(x->sem, 10000, &x->lease), 0);
    zkl_mutex *rm;
    ck_assert_int_eq(zkl_mutex_new(x->c, x->preq, &rm), 0);
    ck_assert_int_eq(zkl_mutex_acquire_async(rm, 10000, req_done, &x->req_result, &x->req), 0);
    zkl_mutex_free(rm); /* the request is independent of it */
    ck_assert(tu_wait_until(req_told, &x->req_result, 10000));
    ck_assert_int_eq(x->req_result, 1);
    ck_assert_int_eq(zkl_multilock_new(x->c, (const char *const *)x->pml, 2, &x->ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(x->ml, 10000), 0);
    ck_assert_int_eq(zkl_cancel_new(&x->h), 0);
    ck_assert_int_eq(zkl_client_session_id(x->c, &x->sid), 0);
    ck_assert_int_eq(zkl_mutex_token(x->m, &x->tm), 0);
    ck_assert_int_eq(zkl_rwlock_read_token(x->rw, &x->trw), 0);
    ck_assert_int_eq(zkl_semmutex_token(x->sm, &x->tsm), 0);
    ck_assert_int_eq(zkl_lease_token(x->lease, &x->tl), 0);
    ck_assert_int_eq(zkl_request_token(x->req, &x->treq), 0);
}

static int nodes_of(const struct held *x)
{
    int n = 0;
    const char *paths[] = {x->pm, x->prw, x->psm, x->psem, x->preq, x->pml[0], x->pml[1]};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        n += tu_children(tu_fixture_zk, paths[i]);
    return n;
}

static void unused_lost(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m, (void)token, (void)arg;
}

static void unused_state(zkl_client *c, enum zkl_state st, void *arg)
{
    (void)c, (void)st, (void)arg;
}

/* In the child: every kind of call, on every inherited object. */
static void child_calls_everything(void *arg)
{
    struct held *x = arg;
    int64_t t = -7;
    zkl_request *r = NULL;
    zkl_lease *l2 = NULL;
    const char *data = tu_fixture_root;
    zoo_op_t op;
    zoo_set_op_init(&op, data, "x", 1, -1, NULL);
    zoo_op_result_t res;

    /* mutex */
    CHILD_AT("mutex");
    CHILD_CHECK(zkl_mutex_is_held(x->m) == 0);
    CHILD_CHECK(zkl_mutex_token(x->m, &t) == ZKL_EFORK && t == -7);
    CHILD_CHECK(zkl_mutex_acquire(x->m, 1000) == ZKL_EFORK);
    CHILD_CHECK(zkl_mutex_acquire_cancellable(x->m, 1000, x->h) == ZKL_EFORK);
    CHILD_CHECK(zkl_mutex_acquire_async(x->m, 1000, req_done, &x->req_result, &r) == ZKL_EFORK &&
                r == NULL);
    CHILD_CHECK(zkl_mutex_guarded_set(x->m, data, "x", 1) == ZKL_EFORK);
    CHILD_CHECK(zkl_mutex_guarded_multi(x->m, 1, &op, &res) == ZKL_EFORK);
    CHILD_CHECK(zkl_mutex_set_lost_fn(x->m, unused_lost, NULL) == ZKL_EFORK);
    CHILD_CHECK(zkl_mutex_release(x->m) == ZKL_EFORK);
    zkl_mutex *m2 = NULL;
    CHILD_CHECK(zkl_mutex_new(x->c, x->pm, &m2) == ZKL_EFORK && m2 == NULL);
    /* read-write lock */
    CHILD_AT("read-write lock");
    CHILD_CHECK(zkl_rwlock_read_is_held(x->rw) == 0);
    CHILD_CHECK(zkl_rwlock_read_token(x->rw, &t) == ZKL_EFORK);
    CHILD_CHECK(zkl_rwlock_read_acquire(x->rw, 1000) == ZKL_EFORK);
    CHILD_CHECK(zkl_rwlock_write_acquire(x->rw, 0) == ZKL_EFORK);
    CHILD_CHECK(zkl_rwlock_read_release(x->rw) == ZKL_EFORK);
    /* semaphore-mutex */
    CHILD_AT("semaphore-mutex");
    CHILD_CHECK(zkl_semmutex_is_held(x->sm) == 0);
    CHILD_CHECK(zkl_semmutex_token(x->sm, &t) == ZKL_EFORK);
    CHILD_CHECK(zkl_semmutex_acquire(x->sm, 1000) == ZKL_EFORK);
    CHILD_CHECK(zkl_semmutex_guarded_set(x->sm, data, "x", 1) == ZKL_EFORK);
    CHILD_CHECK(zkl_semmutex_release(x->sm) == ZKL_EFORK);
    /* semaphore and lease */
    CHILD_AT("semaphore and lease");
    CHILD_CHECK(zkl_lease_is_held(x->lease) == 0);
    CHILD_CHECK(zkl_lease_token(x->lease, &t) == ZKL_EFORK);
    CHILD_CHECK(zkl_lease_guarded_set(x->lease, data, "x", 1) == ZKL_EFORK);
    CHILD_CHECK(zkl_semaphore_acquire(x->sem, 1000, &l2) == ZKL_EFORK && l2 == NULL);
    zkl_lease_info *info = NULL;
    int count = -1;
    CHILD_CHECK(zkl_semaphore_holders(x->sem, 1000, &info, &count) == ZKL_EFORK);
    CHILD_CHECK(zkl_lease_release(x->lease) == ZKL_EFORK); /* and freed, here only */
    /* asynchronous request */
    CHILD_AT("asynchronous request");
    CHILD_CHECK(zkl_request_is_held(x->req) == 0);
    CHILD_CHECK(zkl_request_token(x->req, &t) == ZKL_EFORK);
    CHILD_CHECK(zkl_request_node(x->req) == NULL);
    CHILD_CHECK(zkl_request_cancel(x->req) == ZKL_EFORK);
    CHILD_CHECK(zkl_request_release(x->req) == ZKL_EFORK);
    /* multi-lock */
    CHILD_AT("multi-lock");
    CHILD_CHECK(zkl_multilock_is_held(x->ml) == 0);
    CHILD_CHECK(zkl_multilock_acquire(x->ml, 1000) == ZKL_EFORK);
    CHILD_CHECK(zkl_multilock_release(x->ml) == ZKL_EFORK);
    /* the client */
    CHILD_AT("the client");
    int64_t sid = -7;
    zkl_client_stats st;
    zkl_metrics mx = {.version = ZKL_METRICS_VERSION};
    zkl_participant *ps = NULL;
    size_t n = 0;
    int fd = -1, limit = -1;
    char buf[64];
    CHILD_CHECK(zkl_client_state(x->c) == ZKL_STATE_CLOSED);
    CHILD_CHECK(zkl_client_session_id(x->c, &sid) == ZKL_EFORK && sid == -7);
    CHILD_CHECK(zkl_client_session_timeout(x->c) == ZKL_EFORK);
    CHILD_CHECK(zkl_client_get_stats(x->c, &st) == ZKL_EFORK);
    CHILD_CHECK(zkl_client_handle(x->c) == NULL);
    CHILD_CHECK(zkl_client_add_listener(x->c, unused_state, NULL) == ZKL_EFORK);
    CHILD_CHECK(zkl_client_remove_listener(x->c, unused_state, NULL) == ZKL_EFORK);
    CHILD_CHECK(zkl_client_metrics(x->c, &mx) == ZKL_EFORK);
    CHILD_CHECK(zkl_client_path_metrics(x->c, x->pm, &mx) == ZKL_EFORK);
    CHILD_CHECK(zkl_client_metrics_write(x->c, buf, sizeof buf, NULL) == ZKL_EFORK);
    CHILD_CHECK(zkl_participants_list(x->c, x->pm, &ps, &n) == ZKL_EFORK);
    CHILD_CHECK(zkl_participants_limit(x->c, x->psem, &limit) == ZKL_EFORK);
    CHILD_CHECK(zkl_revoke(x->c, x->pm, NULL) == ZKL_EFORK);
    CHILD_CHECK(zkl_client_event_fd(x->c, &fd) == ZKL_EFORK && fd == -1);
    CHILD_CHECK(zkl_client_dispatch(x->c) == ZKL_EFORK);
    CHILD_CHECK(zkl_client_cancel(x->c) == ZKL_EFORK);
    /* cancel handles registered by the parent's waiters: nothing to wake */
    CHILD_CHECK(zkl_cancel_fire(x->h) == 0);
    /* Frees: local, in any order, the client before its objects. */
    CHILD_AT("frees");
    zkl_request_free(x->req);
    zkl_client_close(x->c);
    zkl_multilock_free(x->ml);
    zkl_mutex_free(x->m);
    zkl_rwlock_free(x->rw);
    zkl_semmutex_free(x->sm);
    zkl_semaphore_free(x->sem);
    zkl_cancel_free(x->h);

    /* A client of the child's own works, in a program of its own: opening
     * one resolves the servers' names, which is not safe in the forked
     * child of a threaded process (zkl(3)), so the child execs first. */
    CHILD_AT("a client of its own");
    const char *args[] = {"own-client", x->pm, NULL};
    pid_t w = tu_spawn_worker(args, -1);
    int wst = -1;
    CHILD_CHECK(w > 0 && waitpid(w, &wst, 0) == w);
    CHILD_CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    CHILD_AT("done");
}

/* The child's own client: a lock of its own is taken and given back, and
 * the parent's lock `theirs`, still held, is not to be had. */
static int worker_own_client(const char *theirs)
{
    zkl_client *c = NULL;
    if (zkl_client_open(tu_hosts(), 10000, &c) != 0)
        return 2;
    char path[512];
    snprintf(path, sizeof path, "%s-own", theirs);
    zkl_mutex *own = NULL, *other = NULL;
    int rc = 0;
    if (zkl_mutex_new(c, path, &own) != 0 || zkl_mutex_acquire(own, 10000) != 0 ||
        zkl_mutex_is_held(own) != 1 || zkl_mutex_release(own) != 0)
        rc = 3;
    else if (zkl_mutex_new(c, theirs, &other) != 0 || zkl_mutex_acquire(other, 0) != ZKL_ETIMEDOUT)
        rc = 4;
    zkl_mutex_free(other);
    zkl_mutex_free(own);
    zkl_client_close(c);
    return rc;
}

START_TEST(test_child_gets_efork_and_the_parent_keeps_its_locks)
{
    struct held x = {0};
    hold_everything(&x);
    int before = nodes_of(&x);
    ck_assert_int_eq(before, 7);

    in_child(child_calls_everything, &x, 30000);

    /* The parent: the same session, every hold still there. */
    int64_t sid = 0, t = 0;
    ck_assert_int_eq(zkl_client_session_id(x.c, &sid), 0);
    ck_assert_int_eq(sid, x.sid);
    ck_assert_int_eq(zkl_client_state(x.c), ZKL_STATE_CONNECTED);
    ck_assert_int_eq(nodes_of(&x), before);
    ck_assert_int_eq(zkl_mutex_is_held(x.m), 1);
    ck_assert_int_eq(zkl_mutex_token(x.m, &t), 0);
    ck_assert_int_eq(t, x.tm);
    ck_assert_int_eq(zkl_rwlock_read_is_held(x.rw), 1);
    ck_assert_int_eq(zkl_semmutex_is_held(x.sm), 1);
    ck_assert_int_eq(zkl_lease_is_held(x.lease), 1);
    ck_assert_int_eq(zkl_request_is_held(x.req), 1);
    ck_assert_int_eq(zkl_multilock_is_held(x.ml), 1);
    /* ... and it releases them as usual. */
    ck_assert_int_eq(zkl_mutex_release(x.m), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(x.rw), 0);
    ck_assert_int_eq(zkl_semmutex_release(x.sm), 0);
    ck_assert_int_eq(zkl_lease_release(x.lease), 0);
    ck_assert_int_eq(zkl_request_release(x.req), 0);
    ck_assert_int_eq(zkl_multilock_release(x.ml), 0);
    zkl_request_free(x.req);
    zkl_multilock_free(x.ml);
    zkl_mutex_free(x.m);
    zkl_rwlock_free(x.rw);
    zkl_semmutex_free(x.sm);
    zkl_semaphore_free(x.sem);
    zkl_cancel_free(x.h);
    zkl_client_close(x.c);
    ck_assert(tu_wait_children(tu_fixture_zk, x.pm, 0, 5000));
    ck_assert_int_eq(nodes_of(&x), 0);
    free(x.pm), free(x.prw), free(x.psm), free(x.psem), free(x.preq);
    free(x.pml[0]), free(x.pml[1]);
}
END_TEST

/* ---- a fork while another thread waits in an acquire ------------------------ */

struct waiting {
    zkl_mutex *m;
    zkl_cancel *h;
    int rc;
};

static void *wait_in_acquire(void *arg)
{
    struct waiting *w = arg;
    w->rc = zkl_mutex_acquire_cancellable(w->m, 30000, w->h);
    if (w->rc == 0)
        w->rc = zkl_mutex_release(w->m);
    return NULL;
}

/* The object is in use by a thread that does not exist in the child: its
 * free there must neither abort (the in-use check) nor wait for it. */
static void child_frees_an_object_in_use(void *arg)
{
    struct waiting *w = arg;
    CHILD_AT("acquire");
    CHILD_CHECK(zkl_mutex_acquire(w->m, 0) == ZKL_EFORK);
    CHILD_AT("fire");
    CHILD_CHECK(zkl_cancel_fire(w->h) == 0); /* the waiter is the parent's */
    CHILD_AT("frees");
    zkl_mutex_free(w->m);
    zkl_cancel_free(w->h);
    CHILD_AT("done");
}

START_TEST(test_child_frees_objects_a_parent_thread_waits_on)
{
    zkl_client *holder = tu_client(10000), *c = tu_client(10000);
    char *p = tu_path("busy");
    zkl_mutex *hm;
    ck_assert_int_eq(zkl_mutex_new(holder, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 10000), 0);
    struct waiting w = {0};
    ck_assert_int_eq(zkl_mutex_new(c, p, &w.m), 0);
    ck_assert_int_eq(zkl_cancel_new(&w.h), 0);
    pthread_t th;
    pthread_create(&th, NULL, wait_in_acquire, &w);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 2, 10000));

    in_child(child_frees_an_object_in_use, &w, 30000);

    /* The parent's waiter waits on, and gets the lock once it is free. */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 2);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(w.rc, 0);
    zkl_mutex_free(w.m);
    zkl_cancel_free(w.h);
    zkl_mutex_free(hm);
    zkl_client_close(c);
    zkl_client_close(holder);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    free(p);
}
END_TEST

/* ---- a fork while another thread uses a cancel handle ----------------------- */

struct churn {
    zkl_cancel *h;
    atomic_int stop, rounds;
    bool yield;
};

/* Fires the handle (mostly) and makes and frees others, without pause:
 * at a fork it is likely inside the handle's mutex or the list of all
 * handles. */
static void *churn_main(void *arg)
{
    struct churn *ch = arg;
    while (!atomic_load(&ch->stop)) {
        for (int k = 0; k < 100; k++)
            zkl_cancel_fire(ch->h);
        zkl_cancel *t = NULL;
        if (zkl_cancel_new(&t) == 0)
            zkl_cancel_free(t);
        atomic_fetch_add(&ch->rounds, 1);
        if (ch->yield)
            sched_yield(); /* valgrind runs one thread at a time: let the forks run */
    }
    return NULL;
}

static bool churning(void *arg)
{
    return atomic_load(&((struct churn *)arg)->rounds) > 0;
}

static void child_uses_the_handle(void *arg)
{
    struct churn *ch = arg;
    CHILD_AT("fire");
    CHILD_CHECK(zkl_cancel_fire(ch->h) == 0);
    CHILD_CHECK(zkl_cancel_is_fired(ch->h) == 1);
    CHILD_AT("new and free");
    zkl_cancel *t = NULL;
    CHILD_CHECK(zkl_cancel_new(&t) == 0);
    zkl_cancel_free(t);
    zkl_cancel_free(ch->h);
    CHILD_AT("done");
}

/* A handle is not tied to a client, so no client's fork handling covers
 * it: a child forked while another thread was inside the handle's mutex
 * must still fire and free it at once. */
START_TEST(test_fork_while_a_thread_uses_a_cancel_handle)
{
    struct churn ch = {.yield = tu_under_valgrind()};
    ck_assert_int_eq(zkl_cancel_new(&ch.h), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, churn_main, &ch), 0);
    bool started = tu_wait_until(churning, &ch, 10000);
    char msg[6144] = "";
    int ok = 1;
    /* Under valgrind a few: it looks for memory errors here, and each of
     * its forks copies its whole bookkeeping. */
    int forks = tu_under_valgrind() ? 5 : 200;
    for (int i = 0; i < forks && started && ok; i++)
        ok = run_child(child_uses_the_handle, &ch, 30000, msg, sizeof msg);
    /* The thread stops before any assertion: it uses ch, on this stack. */
    atomic_store(&ch.stop, 1);
    pthread_join(th, NULL);
    ck_assert_msg(started, "the thread did not start");
    ck_assert_msg(ok, "%s", msg);
    zkl_cancel_free(ch.h);
}
END_TEST

/* ---- a fork while another thread uses a latch -------------------------------- */

struct latch_churn {
    zkl_latch *l;
    atomic_int stop, rounds;
    bool yield;
};

/* Asks the latch, without pause: at a fork it is likely inside its mutex. */
static void *latch_churn_main(void *arg)
{
    struct latch_churn *ch = arg;
    while (!atomic_load(&ch->stop)) {
        for (int k = 0; k < 100; k++)
            (void)zkl_latch_is_leader(ch->l);
        atomic_fetch_add(&ch->rounds, 1);
        if (ch->yield)
            sched_yield();
    }
    return NULL;
}

static bool latch_churning(void *arg)
{
    return atomic_load(&((struct latch_churn *)arg)->rounds) > 0;
}

static void child_frees_the_latch(void *arg)
{
    struct latch_churn *ch = arg;
    CHILD_AT("is_leader");
    CHILD_CHECK(zkl_latch_is_leader(ch->l) == 0);
    CHILD_AT("free");
    zkl_latch_free(ch->l);
    CHILD_AT("done");
}

/* A latch that joined (its request started) is covered by the fork hooks
 * as every lock object is: a child forked while another thread was inside
 * the latch's mutex finds it usable, and frees it at once. */
START_TEST(test_fork_while_a_thread_uses_a_latch)
{
    zkl_client *c = tu_client(10000);
    char *p = tu_path("latch");
    struct latch_churn ch = {.yield = tu_under_valgrind()};
    ck_assert_int_eq(zkl_latch_new(c, p, "a", &ch.l), 0);
    ck_assert_int_eq(zkl_latch_start(ch.l), 0);
    ck_assert_int_eq(zkl_latch_await(ch.l, 10000), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, latch_churn_main, &ch), 0);
    bool started = tu_wait_until(latch_churning, &ch, 10000);
    char msg[6144] = "";
    int ok = 1;
    int forks = tu_under_valgrind() ? 5 : 100;
    for (int i = 0; i < forks && started && ok; i++)
        ok = run_child(child_frees_the_latch, &ch, 30000, msg, sizeof msg);
    atomic_store(&ch.stop, 1);
    pthread_join(th, NULL);
    ck_assert_msg(started, "the thread did not start");
    ck_assert_msg(ok, "%s", msg);
    ck_assert_int_eq(zkl_latch_is_leader(ch.l), 1); /* the parent's leads on */
    zkl_latch_free(ch.l);
    zkl_client_close(c);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    free(p);
}
END_TEST

/* A latch listener that stays inside its call, told it leads, until let go:
 * the client's thread is then inside the latch's call of its listener. */
struct stuck_listener {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool inside, go;
};

static void stuck_listener_fn(zkl_latch *l, int leader, void *arg)
{
    (void)l;
    struct stuck_listener *s = arg;
    if (!leader)
        return;
    pthread_mutex_lock(&s->mu);
    s->inside = true;
    pthread_cond_broadcast(&s->cv);
    while (!s->go)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static bool listener_inside(void *arg)
{
    struct stuck_listener *s = arg;
    pthread_mutex_lock(&s->mu);
    bool in = s->inside;
    pthread_mutex_unlock(&s->mu);
    return in;
}

static void child_sets_and_frees_the_latch(void *arg)
{
    zkl_latch *l = arg;
    int64_t token = 0;
    CHILD_AT("calls");
    CHILD_CHECK(zkl_latch_set_listener(l, NULL, NULL) == ZKL_EFORK);
    CHILD_CHECK(zkl_latch_await(l, 0) == ZKL_EFORK);
    CHILD_CHECK(zkl_latch_token(l, &token) == ZKL_EFORK);
    CHILD_CHECK(zkl_latch_start(l) == ZKL_EFORK);
    CHILD_CHECK(zkl_latch_is_leader(l) == 0);
    CHILD_AT("free");
    zkl_latch_free(l);
    CHILD_AT("done");
}

/* The listener's calls are serialized by a lock of the latch's own that
 * the client's thread holds while it calls: a child forked meanwhile has
 * no such thread, and must still free the latch, not wait for a call that
 * never ends there. */
START_TEST(test_fork_while_a_latch_listener_runs)
{
    zkl_client *c = tu_client(10000);
    char *p = tu_path("listening");
    struct stuck_listener s = {.inside = false};
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    zkl_latch *l;
    ck_assert_int_eq(zkl_latch_new(c, p, "a", &l), 0);
    ck_assert_int_eq(zkl_latch_set_listener(l, stuck_listener_fn, &s), 0);
    ck_assert_int_eq(zkl_latch_start(l), 0);
    bool inside = tu_wait_until(listener_inside, &s, 10000);
    char msg[6144] = "";
    int ok = inside && run_child(child_sets_and_frees_the_latch, l, 30000, msg, sizeof msg);
    pthread_mutex_lock(&s.mu);
    s.go = true;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    ck_assert_msg(inside, "the listener was not told it leads");
    ck_assert_msg(ok, "%s", msg);
    ck_assert_int_eq(zkl_latch_is_leader(l), 1); /* the parent's leads on */
    zkl_latch_free(l);
    zkl_client_close(c);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    free(p);
}
END_TEST

/* ---- a client closed in the child while the parent goes on ------------------ */

static void child_closes_the_client(void *arg)
{
    CHILD_AT("close");
    zkl_client_close(arg);
    CHILD_AT("done");
}

START_TEST(test_close_in_the_child_leaves_the_parents_session)
{
    zkl_client *c = tu_client(10000);
    int64_t sid = 0, after = 0;
    ck_assert_int_eq(zkl_client_session_id(c, &sid), 0);
    in_child(child_closes_the_client, c, 30000);
    /* Still the same session, still connected, still working. */
    char *p = tu_path("after");
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    ck_assert_int_eq(zkl_client_session_id(c, &after), 0);
    ck_assert_int_eq(after, sid);
    ck_assert_int_eq(zkl_client_state(c), ZKL_STATE_CONNECTED);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
    free(p);
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    if (argc == 4 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "own-client") == 0)
        return worker_own_client(argv[3]);
    const TTest *tests[] = {
        test_child_gets_efork_and_the_parent_keeps_its_locks,
        test_child_frees_objects_a_parent_thread_waits_on,
        test_close_in_the_child_leaves_the_parents_session,
        test_fork_while_a_thread_uses_a_cancel_handle,
        test_fork_while_a_thread_uses_a_latch,
        test_fork_while_a_latch_listener_runs,
        NULL,
    };
    return tu_run_zk_case("fork", 120, tests);
}
