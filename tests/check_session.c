/* Session state under faults, against a real ZooKeeper: a client that stays
 * stops hearing from its server gives its session up by itself, tells listeners and lost-hold
 * callbacks, and goes on with a new session; listener removal is safe while
 * the keeper is delivering. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loss.h"
#include "session.h" /* the seam: struct zkl__zapi */
#include "testutil.h"
#include "zkl/zookeeper.h"

/* A client's states (tu_states_record on st) and its locks' lost
 * callbacks, under st's lock. */
struct seen {
    struct tu_states st;
    int64_t lost_token;
    int lost_calls;
};

static void on_lost(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m;
    struct seen *s = arg;
    pthread_mutex_lock(&s->st.mu);
    s->lost_token = token;
    s->lost_calls++;
    pthread_mutex_unlock(&s->st.mu);
}

/* The callback's count and last token, read under its lock (it runs on
 * the keeper thread). */
static int lost_calls(struct seen *s)
{
    pthread_mutex_lock(&s->st.mu);
    int n = s->lost_calls;
    pthread_mutex_unlock(&s->st.mu);
    return n;
}

static int64_t lost_token(struct seen *s)
{
    pthread_mutex_lock(&s->st.mu);
    int64_t t = s->lost_token;
    pthread_mutex_unlock(&s->st.mu);
    return t;
}

/* A private ZooKeeper for a test that stops its server: other suites that
 * share the run's server (make check -j) must not feel it. */
static char zkdir[256];

static void harness(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' >/dev/null 2>&1", tu_harness_path(), args, zkdir);
    ck_assert_msg(system(cmd) == 0, "zk-harness.sh %s failed", args);
}

/* Start the private server; its connect string goes to `hosts`. */
static void private_start(char *hosts, size_t len)
{
    snprintf(zkdir, sizeof zkdir, "/tmp/zkl-session-zk.XXXXXX");
    tu_private_zk_start(zkdir, NULL, hosts, len);
}

static void private_stop(void)
{
    harness("stop");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", zkdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", zkdir);
}

/* SIGSTOP (pause) or SIGCONT (resume) the private server. */
static void server(const char *what)
{
    char args[64];
    snprintf(args, sizeof args, "%s-node", what);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' 1 >/dev/null 2>&1", tu_harness_path(), args, zkdir);
    ck_assert_msg(system(cmd) == 0, "zk-harness.sh %s failed", args);
}

static bool reconnected_new(void *arg)
{
    zkl_client *c = arg;
    return zkl_client_state(c) == ZKL_STATE_CONNECTED && tu_client_session_id(c) != 0;
}

/* A process that stood still past the loss rule's deadline, its session
 * expired meanwhile, hears first the answers that came before: it presumes
 * the session lost before it acts on any of them, and takes no lock on a
 * node that went with the session. The client's table holds the create's
 * answer back on the completion thread until the session is gone on the
 * server and the deadline passed, and then the session's events until the
 * acquire returned; the client runs without a keeper thread, so that
 * nothing else applies the rule meanwhile, as in a stopped process whose
 * threads all start again at once. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *dir;
    clientid_t id;
    int timeout;
    string_stat_completion_t done;
    watcher_fn watcher;
    int stage; /* 1: the answer is held back; 2: let it go; 3: the acquire returned */
} stale = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, {0}, 0, NULL, NULL, 0};

static void stale_events(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    if (type == ZOO_SESSION_EVENT) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 30;
        pthread_mutex_lock(&stale.mu);
        while (stale.stage == 2 && pthread_cond_timedwait(&stale.cv, &stale.mu, &until) == 0)
            ;
        pthread_mutex_unlock(&stale.mu);
    }
    stale.watcher(zh, type, state, path, ctx);
}

static zhandle_t *stale_init(const char *host, watcher_fn fn, int recv_timeout,
                             const clientid_t *clientid, void *context, int flags)
{
    stale.watcher = fn;
    return zkl__zapi_real.init(host, stale_events, recv_timeout, clientid, context, flags);
}

static void stale_created(int rc, const char *name, const struct Stat *st, const void *data)
{
    pthread_mutex_lock(&stale.mu);
    stale.stage = 1;
    pthread_cond_broadcast(&stale.cv);
    while (stale.stage != 2)
        pthread_cond_wait(&stale.cv, &stale.mu);
    pthread_mutex_unlock(&stale.mu);
    stale.done(rc, name, st, data);
}

static int stale_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                          const struct ACL_vector *acl, int mode, string_stat_completion_t done,
                          const void *data)
{
    size_t dl = strlen(stale.dir);
    if (stale.done == NULL && strncmp(path, stale.dir, dl) == 0 && path[dl] == '/') {
        stale.id = *zkl__zapi_real.client_id(zh);
        stale.timeout = zkl__zapi_real.recv_timeout(zh);
        stale.done = done;
        done = stale_created;
    }
    return zkl__zapi_real.acreate2(zh, path, value, valuelen, acl, mode, done, data);
}

struct stale_acquire {
    zkl_mutex *m;
    int rc;
};

static void *stale_acquirer(void *arg)
{
    struct stale_acquire *a = arg;
    a->rc = zkl_mutex_acquire(a->m, tu_ms(30000));
    pthread_mutex_lock(&stale.mu);
    stale.stage = 3;
    pthread_cond_broadcast(&stale.cv);
    pthread_mutex_unlock(&stale.mu);
    return NULL;
}

START_TEST(test_answers_after_the_loss_deadline_take_no_lock)
{
    (void)tu_test_path("stale"); /* cleaned up after the test */
    char *dir = tu_path("stale/lock");
    tu_mkdirs(tu_fixture_zk, dir);
    stale.dir = dir;
    stale.done = NULL;
    stale.stage = 0;
    struct zkl__zapi z = zkl__zapi_real;
    z.acreate2 = stale_acreate2;
    z.init = stale_init;
    zkl_client_opts *co;
    ck_assert_int_eq(zkl_client_opts_new(&co), 0);
    zkl__client_opts_set_zapi(co, &z);
    zkl__client_opts_set_no_keeper(co, 1);
    zkl_client *c = NULL;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), tu_ms(4000), co, &c), 0);
    zkl_client_opts_free(co);
    struct stale_acquire a = {NULL, 1};
    ck_assert_int_eq(zkl_mutex_new(c, dir, &a.m), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, stale_acquirer, &a), 0);

    /* The create's answer is in, held back: the session goes on the
     * server, its node with it, and the loss rule's deadline passes. */
    pthread_mutex_lock(&stale.mu);
    while (stale.stage != 1)
        pthread_cond_wait(&stale.cv, &stale.mu);
    pthread_mutex_unlock(&stale.mu);
    int64_t deadline = 0;
    ck_assert_int_eq(zkl_client_loss_deadline(c, &deadline), 0);
    ck_assert_int_gt(deadline, 0);
    tu_expire_id(&stale.id, stale.timeout);
    ck_assert(tu_wait_children(tu_fixture_zk, dir, 0, 30000));
    while (tu_mono_ns() <= deadline)
        usleep(1000);

    pthread_mutex_lock(&stale.mu);
    stale.stage = 2;
    pthread_cond_broadcast(&stale.cv);
    pthread_mutex_unlock(&stale.mu);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(a.rc, ZKL_ELOST);
    ck_assert_int_eq(zkl_mutex_is_held(a.m), 0);
    zkl_mutex_free(a.m);
    zkl_client_close(c);
    ck_assert(tu_wait_children(tu_fixture_zk, dir, 0, 30000));
    free(dir);
}
END_TEST

START_TEST(test_suspended_client_gives_its_session_up_and_goes_on)
{
    char *p = tu_test_path("giveup");
    char hosts[256];
    private_start(hosts, sizeof hosts);
    zkl_client *c;
    /* Short, to be given up soon; stretched on a slow build, where a 2 s
     * session's loss rule (0.9 s without an answer) could give it up by
     * itself before the pause. The checks go by the negotiated timeout. */
    ck_assert_int_eq(zkl_client_open(hosts, tu_ms(2000), &c), 0);
    struct seen s = {.st = TU_STATES_INIT};
    ck_assert_int_eq(zkl_client_add_listener(c, tu_states_record, &s.st), 0);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_set_lost_fn(m, on_lost, &s), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    int64_t token = tu_mutex_token(m), sid = tu_client_session_id(c);
    int negotiated = zoo_recv_timeout(zkl_client_handle(c));
    ck_assert_int_eq(zkl_client_session_timeout(c), negotiated);
    ck_assert_int_eq(zkl_client_session_timeout(NULL), ZKL_EINVAL);
    /* The instant it gives the session up unless answered: ahead, within
     * the loss rule's span (on CLOCK_MONOTONIC). */
    int64_t dl = 0, t_ns = tu_mono_ns();
    ck_assert_int_eq(zkl_client_loss_deadline(c, &dl), 0);
    ck_assert_int_gt(dl, t_ns);
    ck_assert_int_le(dl, t_ns + zkl__loss_after_ns(negotiated));
    ck_assert_int_eq(zkl_client_loss_deadline(NULL, &dl), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_loss_deadline(c, NULL), ZKL_EINVAL);
    /* Cut the client off: the server stops answering until the client
     * has given its session up. */
    int64_t pause0 = tu_now_ms();
    server("pause");
    int64_t paused = tu_now_ms();
    struct tu_state_wait lost = {&s.st, -1, ZKL_STATE_LOST};
    bool gave_up = tu_wait_until(tu_states_saw, &lost, 20000);
    server("resume");
    ck_assert_msg(gave_up, "the client never gave up (state %d)", zkl_client_state(c));
    /* Not before the instant it said: that only moves later. */
    ck_assert_int_ge(tu_mono_ns(), dl);
    /* Known without a handle too (the given-up one is closed). */
    ck_assert_int_eq(zkl_client_session_timeout(c), negotiated);
    int64_t susp = tu_states_at(&s.st, ZKL_STATE_SUSPENDED, 0), gone = tu_states_at(&s.st, ZKL_STATE_LOST, 0);
    ck_assert_int_ge(susp, 0);
    ck_assert_int_le(susp, gone);
    /* Given up by the loss rule (lib/util/loss.h: 9/20 of the negotiated
     * timeout T) after the send of the last request answered. That send
     * was at most one keepalive period (T/10) before the pause began, or
     * two if the keepalive sent just before it went unanswered (a loaded
     * server stopped before it replied), and no later than its end, so the
     * give-up comes 5T/20..9T/20 after the pause, before the server's
     * earliest expiry (T/2 after that send). */
    int64_t loss_ms = zkl__loss_after_ns(negotiated) / 1000000;
    ck_assert_int_ge(gone - pause0, loss_ms - 2 * zkl__keepalive_ns(negotiated) / 1000000 - 200);
    ck_assert_int_lt(gone - paused, loss_ms + tu_ms(1500));
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(tu_mutex_token(m), ZKL_ELOST);
    /* The callback ran on the keeper, before or right after the listener. */
    int64_t end = tu_now_ms() + tu_ms(5000);
    while (tu_now_ms() < end && lost_calls(&s) == 0)
        usleep(2000);
    ck_assert_int_eq(lost_calls(&s), 1);
    ck_assert_int_eq(lost_token(&s), token);
    ck_assert_int_eq(zkl_mutex_release(m), ZKL_ELOST);
    /* A new session on the configured servers, and the lock works again
     * (once the server expired the old session's node). */
    ck_assert(tu_wait_until(reconnected_new, c, 15000));
    ck_assert_int_ne(tu_client_session_id(c), sid);
    ck_assert_int_eq(zkl_client_loss_deadline(c, &dl), 0);
    ck_assert_int_gt(dl, 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 15000), 0);
    ck_assert_int_gt(tu_mutex_token(m), token);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(lost_calls(&s), 1); /* once per lost hold */
    zkl_mutex_free(m);
    zkl_client_close(c);
    private_stop();
}
END_TEST

/* A listener that takes a while; removal must wait for it to finish. */
struct slow {
    int started, finished;
};

static void slow_listener(zkl_client *c, enum zkl_state st, void *arg)
{
    (void)c, (void)st;
    struct slow *s = arg;
    __atomic_add_fetch(&s->started, 1, __ATOMIC_SEQ_CST);
    usleep(300000);
    __atomic_add_fetch(&s->finished, 1, __ATOMIC_SEQ_CST);
}

/* A call is under way right now. */
static bool slow_running(void *arg)
{
    struct slow *s = arg;
    return __atomic_load_n(&s->started, __ATOMIC_SEQ_CST) >
           __atomic_load_n(&s->finished, __ATOMIC_SEQ_CST);
}

/* Without a connection: suspended, or lost and waiting for a new one. */
static bool suspended(void *arg)
{
    int st = zkl_client_state(arg);
    return st == ZKL_STATE_SUSPENDED || st == ZKL_STATE_LOST;
}

struct kids {
    zkl_client *c;
    const char *path;
};

/* `path` has no children (or does not exist), as seen through k->c. */
static bool no_kids(void *arg)
{
    struct kids *k = arg;
    struct String_vector v = {0, NULL};
    int rc = zoo_get_children(zkl_client_handle(k->c), k->path, 0, &v);
    bool none = rc == ZNONODE || (rc == ZOK && v.count == 0);
    deallocate_String_vector(&v);
    return none;
}

START_TEST(test_try_once_without_a_connection_is_econnloss_at_once)
{
    char *p = tu_path("tryonce"), *q = tu_path("tryonce-rw"), *r = tu_path("tryonce-sem");
    char hosts[256];
    private_start(hosts, sizeof hosts);
    zkl_client *c, *look;
    /* 20 s: part (b) must see the client suspended, not yet presumed lost
     * (9 s after its last answer), however slowly the server dies. */
    ck_assert_int_eq(zkl_client_open(hosts, 20000, &c), 0);
    ck_assert_int_eq(zkl_client_open(hosts, 20000, &look), 0);
    zkl_mutex *m;
    zkl_rwlock *rw;
    zkl_semaphore *sem;
    zkl_lease *lease = NULL;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_rwlock_new(c, q, &rw), 0);
    ck_assert_int_eq(zkl_semaphore_new(c, r, 2, &sem), 0);
    int negotiated = zoo_recv_timeout(zkl_client_handle(c));

    /* (a) The server stops answering while a try once waits for its
     * answer: it ends when the client presumes the session lost by the
     * loss rule (9/20 of the timeout after the last answered send, before
     * it would notice the dead connection at about 2/3), with ZKL_ELOST,
     * not with a timeout later. */
    server("pause");
    int64_t ta = tu_now_ms();
    ck_assert_int_eq(zkl_mutex_acquire(m, 0), ZKL_ELOST);
    /* by the loss rule (9 s), before the dead connection (13.3 s) */
    ck_assert_int_lt(tu_now_ms() - ta, negotiated * 2 / 3);
    ck_assert(suspended(c));
    server("resume");
    ck_assert(tu_wait_until(tu_client_connected, c, 30000));

    /* (b) Known to be disconnected (the server is gone and the client saw
     * the connection drop; its session may live): every recipe's try once
     * fails at once. */
    server("kill");
    ck_assert(tu_wait_until(suspended, c, 10000));
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_client_state(c), ZKL_STATE_SUSPENDED);
    ck_assert_int_eq(zkl_mutex_acquire(m, 0), ZKL_ECONNLOSS);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 0), ZKL_ECONNLOSS);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 0), ZKL_ECONNLOSS);
    ck_assert_int_eq(zkl_semaphore_acquire(sem, 0, &lease), ZKL_ECONNLOSS);
    ck_assert_ptr_null(lease);
    ck_assert_int_lt(tu_now_ms() - t0, negotiated / 2);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    server("start");

    /* Back on line (the same session, or a new one): nothing of the failed
     * tries stays, and a try once works again. */
    ck_assert(tu_wait_until(tu_client_connected, c, 30000));
    ck_assert(tu_wait_until(tu_client_connected, look, 30000));
    struct kids kp = {look, p}, kq = {look, q};
    ck_assert(tu_wait_until(no_kids, &kp, 15000));
    ck_assert(tu_wait_until(no_kids, &kq, 15000));
    int rc;
    int64_t end = tu_now_ms() + tu_ms(15000);
    while ((rc = zkl_mutex_acquire(m, 0)) == ZKL_ECONNLOSS && tu_now_ms() < end)
        usleep(20000); /* a give-up and re-open may still be under way */
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_semaphore_free(sem);
    zkl_rwlock_free(rw);
    zkl_mutex_free(m);
    zkl_client_close(c);
    zkl_client_close(look);
    private_stop();
    free(p), free(q), free(r);
}
END_TEST

/* The semaphore's lost callback records into a struct seen too. */
static void on_lease_lost(zkl_semaphore *sem, int64_t token, void *arg)
{
    (void)sem;
    on_lost(NULL, token, arg);
}

static bool lease_not_held(void *arg)
{
    return zkl_lease_is_held(arg) == 0;
}

static bool connected_again(void *arg)
{
    return zkl_client_state(arg) == ZKL_STATE_CONNECTED;
}

START_TEST(test_semaphore_lost_callback_fires_once_per_lost_lease)
{
    char *p = tu_test_path("lostsem");
    /* Expired by tu_expire_session, at once whatever its timeout. */
    zkl_client *c = tu_test_client(20000);
    struct seen s = {.st = TU_STATES_INIT};
    zkl_semaphore *sem;
    zkl_lease *one, *two, *kept;
    ck_assert_int_eq(zkl_semaphore_new(c, p, 4, &sem), 0);
    ck_assert_int_eq(zkl_semaphore_set_lost_fn(sem, on_lease_lost, &s), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(sem, 5000, &one), 0);
    ck_assert_int_eq(zkl_semaphore_acquire_many(sem, 2, 5000, &two), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(sem, 5000, &kept), 0);
    /* A lease given back before the loss is not reported. */
    ck_assert_int_eq(zkl_lease_release(kept), 0);
    int64_t t1 = tu_lease_token(one), t2 = tu_lease_token(two);
    tu_expire_session(c);
    ck_assert(tu_wait_until(lease_not_held, one, 30000));
    ck_assert(tu_wait_until(lease_not_held, two, 5000));
    int64_t end = tu_now_ms() + tu_ms(5000);
    while (tu_now_ms() < end && lost_calls(&s) < 2)
        usleep(2000);
    ck_assert_int_eq(lost_calls(&s), 2);
    ck_assert(lost_token(&s) == t1 || lost_token(&s) == t2);
    ck_assert_int_eq(zkl_lease_release(one), ZKL_ELOST);
    ck_assert_int_eq(zkl_lease_release(two), ZKL_ELOST);
    /* A new lease in the client's next session, lost again: told once more. */
    ck_assert(tu_wait_until(connected_again, c, 30000));
    zkl_lease *three;
    ck_assert_int_eq(zkl_semaphore_acquire(sem, 5000, &three), 0);
    int64_t t3 = tu_lease_token(three);
    tu_expire_session(c);
    ck_assert(tu_wait_until(lease_not_held, three, 30000));
    end = tu_now_ms() + tu_ms(5000);
    while (tu_now_ms() < end && lost_calls(&s) < 3)
        usleep(2000);
    ck_assert_int_eq(lost_calls(&s), 3);
    ck_assert_int_eq(lost_token(&s), t3);
    ck_assert_int_eq(zkl_lease_release(three), ZKL_ELOST);
    ck_assert_int_eq(zkl_semaphore_set_lost_fn(sem, NULL, NULL), 0);
    ck_assert_int_eq(zkl_semaphore_set_lost_fn(NULL, on_lease_lost, &s), ZKL_EINVAL);
    zkl_semaphore_free(sem);
}
END_TEST

/* A lost callback that acquires another lock: it runs on the keeper
 * thread, which opens the client's next session only once it returns. */
struct grab {
    pthread_mutex_t mu;
    zkl_mutex *other;
    int rc, calls;
    int64_t ms;
};

static void grab_on_lost(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m;
    (void)token;
    struct grab *g = arg;
    int64_t t0 = tu_now_ms();
    int rc = zkl_mutex_acquire(g->other, tu_ms(8000));
    int64_t ms = tu_now_ms() - t0;
    if (rc == 0)
        (void)zkl_mutex_release(g->other);
    pthread_mutex_lock(&g->mu);
    g->rc = rc;
    g->ms = ms;
    g->calls++;
    pthread_mutex_unlock(&g->mu);
}

static bool grabbed(void *arg)
{
    struct grab *g = arg;
    pthread_mutex_lock(&g->mu);
    int n = g->calls;
    pthread_mutex_unlock(&g->mu);
    return n > 0;
}

/* A blocking acquire made in a lost callback, between sessions, does not
 * wait for the next session, which only the thread it runs on would open:
 * it fails at once, and the client opens its next session once the
 * callback returns. */
START_TEST(test_an_acquire_in_a_lost_callback_does_not_wait_for_its_own_keeper)
{
    char *p = tu_test_path("lostgrab");
    char *p2 = tu_test_path("lostgrab-other");
    /* Expired by tu_expire_session, at once whatever its timeout. */
    zkl_client *c = tu_test_client(20000);
    struct grab g = {.mu = PTHREAD_MUTEX_INITIALIZER};
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_new(c, p2, &g.other), 0);
    ck_assert_int_eq(zkl_mutex_set_lost_fn(m, grab_on_lost, &g), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    tu_expire_session(c);
    ck_assert(tu_wait_until(grabbed, &g, 40000));
    pthread_mutex_lock(&g.mu);
    int rc = g.rc;
    int64_t ms = g.ms;
    pthread_mutex_unlock(&g.mu);
    ck_assert_msg(rc == ZKL_ELOST, "the acquire in the lost callback returned %s",
                  zkl_strerror(rc));
    /* (It waited out its whole timeout before: nothing was to come.) */
    ck_assert_msg(ms < tu_ms(8000) / 2, "the acquire in the lost callback took %lld ms",
                  (long long)ms);
    ck_assert_int_eq(zkl_mutex_release(m), ZKL_ELOST);
    ck_assert(tu_wait_until(connected_again, c, 30000));
    ck_assert_int_eq(zkl_mutex_acquire(g.other, 5000), 0);
    ck_assert_int_eq(zkl_mutex_release(g.other), 0);
    ck_assert_int_eq(zkl_mutex_set_lost_fn(m, NULL, NULL), 0);
    zkl_mutex_free(g.other);
    zkl_mutex_free(m);
}
END_TEST

/* The client's getters: the state is an enum (CLOSED for NULL); the
 * session id comes through an out parameter, left alone on failure. */
START_TEST(test_client_getters_take_out_parameters)
{
    zkl_client *c = tu_test_client(10000);
    ck_assert_int_eq(zkl_client_state(c), ZKL_STATE_CONNECTED);
    ck_assert_int_eq(zkl_client_state(NULL), ZKL_STATE_CLOSED);
    int64_t id = 42;
    ck_assert_int_eq(zkl_client_session_id(NULL, &id), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_session_id(c, NULL), ZKL_EINVAL);
    ck_assert_int_eq(id, 42);
    ck_assert_int_eq(zkl_client_session_id(c, &id), 0);
    zhandle_t *zh;
    ck_assert_int_eq(zkl_client_handle_borrow(c, &zh), 0);
    ck_assert_int_eq(id, (int64_t)zoo_client_id(zh)->client_id);
    zkl_client_handle_return(c, zh);
    ck_assert_int_ne(id, 0);
    zkl_client_stats st;
    ck_assert_int_eq(zkl_client_get_stats(NULL, &st), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_get_stats(c, NULL), ZKL_EINVAL);
}
END_TEST

START_TEST(test_listener_removal_waits_for_a_running_delivery)
{
    zkl_client *c = tu_test_client(20000); /* expired at once, as above */
    struct slow *s = calloc(1, sizeof *s);
    ck_assert_int_eq(zkl_client_add_listener(c, slow_listener, s), 0);
    tu_expire_session(c); /* lost, then a new session: events to deliver */
    ck_assert(tu_wait_until(slow_running, s, 20000));
    ck_assert_int_eq(zkl_client_remove_listener(c, slow_listener, s), 0);
    /* Once removal returned, the listener is not running: its arg can go. */
    int started = __atomic_load_n(&s->started, __ATOMIC_SEQ_CST);
    ck_assert_int_ge(started, 1);
    ck_assert_int_eq(__atomic_load_n(&s->finished, __ATOMIC_SEQ_CST), started);
    /* And no call starts later: a listener added now hears a second
     * expiry's loss and then the new session, on the one thread that
     * delivers every change to every listener in turn; by the new session
     * the removed one would have been called for the loss. */
    struct tu_states after = TU_STATES_INIT;
    ck_assert_int_eq(zkl_client_add_listener(c, tu_states_record, &after), 0);
    tu_expire_session(c);
    struct tu_state_wait back = {&after, ZKL_STATE_LOST, ZKL_STATE_CONNECTED};
    ck_assert(tu_wait_until(tu_states_saw, &back, 30000));
    ck_assert_int_eq(__atomic_load_n(&s->started, __ATOMIC_SEQ_CST), started);
    ck_assert_int_eq(zkl_client_remove_listener(c, tu_states_record, &after), 0);
    ck_assert_int_eq(zkl_client_remove_listener(c, slow_listener, s), ZKL_EINVAL);
    free(s);
}
END_TEST

/* A borrowed handle outlives its session: the keeper, which wants to
 * close it to open a new session after the expiry, waits until it is back
 * (under ASan a close meanwhile is a use-after-free of the next call). */
struct lent {
    zkl_client *c;
    zhandle_t *zh;
    int64_t sid; /* the session before the expiry */
};

static bool borrow_is_lost(void *arg)
{
    zhandle_t *zh = NULL;
    int rc = zkl_client_handle_borrow(arg, &zh);
    if (rc == 0)
        zkl_client_handle_return(arg, zh);
    return rc == ZKL_ELOST && zh == NULL;
}

static bool handle_replaced(void *arg)
{
    struct lent *l = arg;
    return zkl_client_handle(l->c) != l->zh;
}

/* A new session, told by its id: the new handle may well sit at the old
 * one's address, freed just before. */
static bool connected_anew(void *arg)
{
    struct lent *l = arg;
    return tu_client_connected(l->c) && tu_client_session_id(l->c) != l->sid;
}

START_TEST(test_a_borrowed_handle_stays_open_across_an_expiry_until_returned)
{
    /* Expired by tu_expire_session, at once whatever its timeout; a session
     * lost by itself while the handle is lent would stay lost, and leave
     * tu_expire_session none to expire. */
    zkl_client *c = tu_test_client(20000);
    zhandle_t *zh = (zhandle_t *)&zh;
    ck_assert_int_eq(zkl_client_handle_borrow(NULL, &zh), ZKL_EINVAL);
    ck_assert_ptr_null(zh);
    ck_assert_int_eq(zkl_client_handle_borrow(c, NULL), ZKL_EINVAL);
    zkl_client_handle_return(NULL, zh); /* nothing to do */
    zkl_client_handle_return(c, NULL);

    ck_assert_int_eq(zkl_client_handle_borrow(c, &zh), 0);
    ck_assert_ptr_eq(zh, zkl_client_handle(c));
    int64_t sid = tu_client_session_id(c);
    tu_expire_session(c);
    /* The keeper has come to close it: no new loan between sessions. */
    ck_assert(tu_wait_until(borrow_is_lost, c, 30000));
    struct lent l = {c, zh, sid};
    ck_assert(!tu_wait_until(handle_replaced, &l, 1000));
    struct Stat st;
    /* The old handle is still open and answers: that its session expired,
     * or, when the loss rule gave the session up before the handle heard
     * of the expiry (a loaded machine), that it is still trying to connect. */
    int zrc = zoo_exists(zh, "/", 0, &st);
    ck_assert_msg(zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE || zrc == ZOPERATIONTIMEOUT ||
                      zrc == ZCONNECTIONLOSS,
                  "zoo_exists: %d", zrc);
    ck_assert_int_eq(zkl_client_state(c), ZKL_STATE_LOST);
    zkl_client_handle_return(c, zh);

    /* Back: the old handle is closed, a new session opens and lends. */
    ck_assert(tu_wait_until(connected_anew, &l, 30000));
    ck_assert_int_ne(tu_client_session_id(c), sid);
    zhandle_t *now;
    ck_assert_int_eq(zkl_client_handle_borrow(c, &now), 0);
    ck_assert_int_eq(zoo_exists(now, "/", 0, &st), ZOK);
    zkl_client_handle_return(c, now);
}
END_TEST

/* A closed client lends nothing (its memory kept by an open lock object),
 * and a close waits for a loan returned from another thread. */
static void *return_later(void *arg)
{
    struct lent *l = arg;
    /* The close has begun once a borrow says so. */
    zhandle_t *zh;
    int64_t end = tu_now_ms() + tu_ms(30000);
    while (zkl_client_handle_borrow(l->c, &zh) != ZKL_ECLOSED && tu_now_ms() < end) {
        if (zh != NULL)
            zkl_client_handle_return(l->c, zh);
        usleep(10000);
    }
    struct Stat st;
    int zrc = zoo_exists(l->zh, "/", 0, &st); /* still open: the close waits */
    zkl_client_handle_return(l->c, l->zh);
    return (void *)(intptr_t)zrc;
}

START_TEST(test_a_closing_client_waits_for_its_lent_handle_and_lends_no_more)
{
    char *p = tu_test_path("lent");
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open(tu_hosts(), 10000, &c), 0);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0); /* keeps the client's memory */
    struct lent l = {c, NULL};
    ck_assert_int_eq(zkl_client_handle_borrow(c, &l.zh), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, return_later, &l), 0);
    zkl_client_close(c);
    void *res;
    ck_assert_int_eq(pthread_join(t, &res), 0);
    ck_assert_int_eq((int)(intptr_t)res, ZOK);
    zhandle_t *zh = (zhandle_t *)&zh;
    ck_assert_int_eq(zkl_client_handle_borrow(c, &zh), ZKL_ECLOSED);
    ck_assert_ptr_null(zh);
    zkl_mutex_free(m);
}
END_TEST

/* The seam below the session: a client opened with a table of its own
 * (here one that counts, then calls the real client) makes its calls
 * through it, from the first handle to the last close. */
static struct {
    int init, acreate2, adelete, close;
} through;

static zhandle_t *count_init(const char *host, watcher_fn fn, int recv_timeout,
                             const clientid_t *cid, void *ctx, int flags)
{
    __atomic_add_fetch(&through.init, 1, __ATOMIC_SEQ_CST);
    return zkl__zapi_real.init(host, fn, recv_timeout, cid, ctx, flags);
}

static int count_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                          const struct ACL_vector *acl, int mode, string_stat_completion_t done,
                          const void *data)
{
    __atomic_add_fetch(&through.acreate2, 1, __ATOMIC_SEQ_CST);
    return zkl__zapi_real.acreate2(zh, path, value, valuelen, acl, mode, done, data);
}

static int count_adelete(zhandle_t *zh, const char *path, int version, void_completion_t done,
                         const void *data)
{
    __atomic_add_fetch(&through.adelete, 1, __ATOMIC_SEQ_CST);
    return zkl__zapi_real.adelete(zh, path, version, done, data);
}

static int count_close(zhandle_t *zh)
{
    __atomic_add_fetch(&through.close, 1, __ATOMIC_SEQ_CST);
    return zkl__zapi_real.close(zh);
}

START_TEST(test_a_client_makes_its_calls_through_the_table_it_was_opened_with)
{
    char *p = tu_test_path("seam");
    struct zkl__zapi z = zkl__zapi_real;
    z.init = count_init;
    z.acreate2 = count_acreate2;
    z.adelete = count_adelete;
    z.close = count_close;
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    zkl__client_opts_set_zapi(o, &z);
    zkl_client *c, *plain;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), 0);
    zkl_client_opts_free(o);
    ck_assert_int_eq(zkl_client_open(tu_hosts(), 10000, &plain), 0);
    ck_assert_int_eq(__atomic_load_n(&through.init, __ATOMIC_SEQ_CST), 1);
    zkl_mutex *m, *other;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_new(plain, p, &other), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    int created = __atomic_load_n(&through.acreate2, __ATOMIC_SEQ_CST);
    int deleted = __atomic_load_n(&through.adelete, __ATOMIC_SEQ_CST);
    ck_assert_int_ge(created, 1);
    ck_assert_int_ge(deleted, 1);
    ck_assert_int_eq(zkl_mutex_acquire(other, 10000), 0); /* the real table: not counted */
    ck_assert_int_eq(zkl_mutex_release(other), 0);
    ck_assert_int_eq(__atomic_load_n(&through.acreate2, __ATOMIC_SEQ_CST), created);
    ck_assert_int_eq(__atomic_load_n(&through.adelete, __ATOMIC_SEQ_CST), deleted);
    zkl_mutex_free(m);
    zkl_mutex_free(other);
    zkl_client_close(plain);
    ck_assert_int_eq(__atomic_load_n(&through.close, __ATOMIC_SEQ_CST), 0);
    zkl_client_close(c);
    ck_assert_int_eq(__atomic_load_n(&through.close, __ATOMIC_SEQ_CST), 1);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_answers_after_the_loss_deadline_take_no_lock,
        test_suspended_client_gives_its_session_up_and_goes_on,
        test_semaphore_lost_callback_fires_once_per_lost_lease,
        test_an_acquire_in_a_lost_callback_does_not_wait_for_its_own_keeper,
        test_try_once_without_a_connection_is_econnloss_at_once,
        test_listener_removal_waits_for_a_running_delivery,
        test_client_getters_take_out_parameters,
        test_a_client_makes_its_calls_through_the_table_it_was_opened_with,
        test_a_borrowed_handle_stays_open_across_an_expiry_until_returned,
        test_a_closing_client_waits_for_its_lent_handle_and_lends_no_more,
        NULL,
    };
    return tu_run_zk_case("session", 90, tests);
}
