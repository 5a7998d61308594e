#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "zkl/zookeeper.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

bool tu_under_valgrind(void)
{
#ifdef RUNNING_ON_VALGRIND
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
}

int tu_slowdown(void)
{
    static int factor;
    if (factor == 0) {
        factor = 1;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        factor = 3;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
        factor = 3;
#endif
#endif
        if (tu_under_valgrind())
            factor = 3;
    }
    return factor;
}

int tu_ms(int ms)
{
    return ms * tu_slowdown();
}

const char *tu_hosts(void)
{
    const char *h = getenv("ZKL_TEST_HOSTS");
    if (h == NULL || *h == '\0')
        ck_abort_msg("ZKL_TEST_HOSTS is not set: run the suites through "
                     "tests/with-zk.sh or 'make check'");
    return h;
}

zkl_client *tu_client(int session_timeout_ms)
{
    zkl_client *c = NULL;
    int rc = zkl_client_open(tu_hosts(), session_timeout_ms, &c);
    ck_assert_msg(rc == 0, "zkl_client_open: %s", zkl_strerror(rc));
    return c;
}

zkl_client *tu_client_with(const char *digest, enum zkl_acl acl)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    if (digest)
        ck_assert_int_eq(zkl_client_opts_set_digest_auth(o, digest), 0);
    ck_assert_int_eq(zkl_client_opts_set_acl(o, acl), 0);
    zkl_client *c = NULL;
    int rc = zkl_client_open_opts(tu_hosts(), 10000, o, &c);
    zkl_client_opts_free(o);
    ck_assert_msg(rc == 0, "open: %s", zkl_strerror(rc));
    return c;
}

const char *tu_harness_path(void)
{
    const char *h = getenv("ZKL_HARNESS");
    return h ? h : ZKL_SRCDIR "/tests/zk-harness.sh";
}

void tu_private_zk_start(char *dir, const char *jvm_extra, char *hosts, size_t len)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char env[512] = "";
    if (jvm_extra != NULL)
        snprintf(env, sizeof env, "ZKL_ZK_JVM_EXTRA='%s' ", jvm_extra);
    char cmd[1024], log[300];
    snprintf(log, sizeof log, "%s/start.out", dir);
    snprintf(cmd, sizeof cmd, "%s'%s' start '%s' --owner %ld >'%s' 2>&1", env,
             tu_harness_path(), dir, (long)getpid(), log);
    if (system(cmd) != 0) {
        /* The harness says why, and shows the server's log tail. */
        char why[4096] = "";
        FILE *lf = fopen(log, "r");
        if (lf != NULL) {
            why[fread(why, 1, sizeof why - 1, lf)] = '\0';
            fclose(lf);
        }
        ck_abort_msg("could not start a private ZooKeeper:\n%s", why);
    }
    char path[300];
    snprintf(path, sizeof path, "%s/hosts", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(hosts, (int)len, f));
    fclose(f);
    hosts[strcspn(hosts, "\n")] = '\0';
}

int64_t tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void quiet_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

zhandle_t *tu_zk(void)
{
    return tu_zk_to(tu_hosts());
}

zhandle_t *tu_zk_to(const char *hosts)
{
    static FILE *devnull;
    if (devnull == NULL && (devnull = fopen("/dev/null", "w")) != NULL)
        zoo_set_log_stream(devnull);
    zhandle_t *zh = zookeeper_init(hosts, quiet_watcher, 10000, NULL, NULL, 0);
    ck_assert_ptr_nonnull(zh);
    /* As zkl's clients do: otherwise the handle's thread resolves the
     * servers' names on every poll, inside the C library's resolver lock
     * much of the time, and a suite's forked child inherits it locked. */
    zoo_set_servers_resolution_delay(zh, 60000);
    int64_t end = tu_now_ms() + tu_ms(15000);
    while (zoo_state(zh) != ZOO_CONNECTED_STATE && tu_now_ms() < end)
        usleep(2000);
    ck_assert_msg(zoo_state(zh) == ZOO_CONNECTED_STATE, "raw handle did not connect");
    return zh;
}

char *tu_root(const char *name)
{
    static int n;
    char buf[256];
    snprintf(buf, sizeof buf, "/zkl-test/%s-%ld-%d", name, (long)getpid(), ++n);
    return strdup(buf);
}

void tu_rmr(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0};
    if (zoo_get_children(zh, path, 0, &kids) == ZOK) {
        for (int i = 0; i < kids.count; i++) {
            char sub[2048];
            snprintf(sub, sizeof sub, "%s/%s", path, kids.data[i]);
            tu_rmr(zh, sub);
        }
        deallocate_String_vector(&kids);
    }
    zoo_delete(zh, path, -1);
}

void tu_mkdirs(zhandle_t *zh, const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = strchr(buf + 1, '/');; s = strchr(s + 1, '/')) {
        if (s)
            *s = '\0';
        int rc = zoo_create(zh, buf, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        ck_assert_msg(rc == ZOK || rc == ZNODEEXISTS, "create %s: %d", buf, rc);
        if (!s)
            break;
        *s = '/';
    }
}

int tu_children(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0};
    if (zoo_get_children(zh, path, 0, &kids) != ZOK)
        return 0;
    int n = kids.count;
    deallocate_String_vector(&kids);
    return n;
}

int tu_exists(zhandle_t *zh, const char *path)
{
    struct Stat st;
    return zoo_exists(zh, path, 0, &st) == ZOK;
}

bool tu_wait_until(bool (*cond)(void *), void *arg, int timeout_ms)
{
    int64_t end = tu_now_ms() + tu_ms(timeout_ms);
    for (;;) {
        if (cond(arg))
            return true;
        if (tu_now_ms() >= end)
            return cond(arg);
        usleep(2000);
    }
}

bool tu_client_connected(void *c)
{
    int st = zkl_client_state(c);
    return st == ZKL_STATE_CONNECTED || st == ZKL_STATE_RECONNECTED;
}

/* Counts the session events delivered to a handle (ctx: an int). */
static void counting_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)state, (void)path;
    if (type == ZOO_SESSION_EVENT)
        __atomic_add_fetch((int *)ctx, 1, __ATOMIC_SEQ_CST);
}

/* A second handle on the session `id`: true if the server said the session
 * is gone; else it attached, and closing it closed the session (unless the
 * first handle took the session back in between). */
static bool attach_finds_it_gone(const clientid_t *id, int timeout_ms)
{
    int events = 0;
    zhandle_t *other = zookeeper_init(tu_hosts(), counting_watcher, timeout_ms, id, &events, 0);
    ck_assert_ptr_nonnull(other);
    int64_t end = tu_now_ms() + tu_ms(15000);
    int st = zoo_state(other);
    /* Wait for the event to be delivered, not only for the state:
     * libzookeeper_mt leaks an event still queued when the handle closes. */
    while ((st != ZOO_CONNECTED_STATE && st != ZOO_EXPIRED_SESSION_STATE) ||
           !__atomic_load_n(&events, __ATOMIC_SEQ_CST)) {
        ck_assert_msg(tu_now_ms() < end, "a second handle on the session got no answer");
        usleep(1000);
        st = zoo_state(other);
    }
    zookeeper_close(other);
    return st == ZOO_EXPIRED_SESSION_STATE;
}

void tu_expire_id(const clientid_t *id, int timeout_ms)
{
    int64_t end = tu_now_ms() + tu_ms(30000);
    while (!attach_finds_it_gone(id, timeout_ms))
        ck_assert_msg(tu_now_ms() < end, "could not expire the session");
}

void tu_heard_fn(zkl_request *r, int result, void *arg)
{
    (void)r;
    struct tu_heard *h = arg;
    __atomic_store_n(&h->result, result, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&h->calls, 1, __ATOMIC_SEQ_CST);
}

int tu_heard_calls(struct tu_heard *h)
{
    return __atomic_load_n(&h->calls, __ATOMIC_SEQ_CST);
}

int tu_heard_result(struct tu_heard *h)
{
    return __atomic_load_n(&h->result, __ATOMIC_SEQ_CST);
}

bool tu_heard_once(void *h)
{
    return tu_heard_calls(h) > 0;
}

void tu_states_record(zkl_client *c, enum zkl_state st, void *arg)
{
    (void)c;
    struct tu_states *s = arg;
    pthread_mutex_lock(&s->mu);
    if (s->n < 32) {
        s->at[s->n] = tu_now_ms();
        s->states[s->n++] = st;
    }
    pthread_mutex_unlock(&s->mu);
}

int64_t tu_states_at(struct tu_states *s, int st, int from)
{
    pthread_mutex_lock(&s->mu);
    int64_t r = -1;
    for (int i = from; i < s->n && r < 0; i++)
        if (s->states[i] == st)
            r = s->at[i];
    pthread_mutex_unlock(&s->mu);
    return r;
}

bool tu_states_saw(void *arg)
{
    struct tu_state_wait *w = arg;
    pthread_mutex_lock(&w->s->mu);
    bool first = w->first < 0, then = false;
    for (int i = 0; i < w->s->n && !then; i++) {
        then = first && w->s->states[i] == w->then;
        first = first || w->s->states[i] == w->first;
    }
    pthread_mutex_unlock(&w->s->mu);
    return then;
}

static void *acquirer_main(void *arg)
{
    struct tu_acquirer *a = arg;
    int64_t t0 = tu_now_ms();
    a->rc = zkl_lock_acquire(a->l, a->timeout_ms);
    a->returned_ms = tu_now_ms();
    a->took_ms = a->returned_ms - t0;
    if (a->rc == 0)
        __atomic_store_n(&a->got, 1, __ATOMIC_SEQ_CST);
    if (a->rc == 0 && a->release)
        a->release_rc = zkl_lock_release(a->l);
    return NULL;
}

void tu_acquirer_start(struct tu_acquirer *a, zkl_lock *l, long timeout_ms, bool release)
{
    *a = (struct tu_acquirer){.l = l, .timeout_ms = timeout_ms, .release = release, .rc = 1};
    ck_assert_int_eq(pthread_create(&a->t, NULL, acquirer_main, a), 0);
}

bool tu_acquirer_got(struct tu_acquirer *a)
{
    return __atomic_load_n(&a->got, __ATOMIC_SEQ_CST) != 0;
}

int tu_acquirer_join(struct tu_acquirer *a)
{
    pthread_join(a->t, NULL);
    return a->rc;
}

/* A round trip's exists, in flight. Whichever of the waiter and the
 * completion comes last frees it: a waiter that gives up (the test fails)
 * leaves it to a completion that may still come. */
enum { TRIP_PENDING, TRIP_DONE, TRIP_ABANDONED };
struct trip {
    atomic_int state;
    int rc; /* written before state becomes TRIP_DONE */
};

static void trip_done(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    struct trip *t = (struct trip *)data;
    t->rc = rc;
    if (atomic_exchange(&t->state, TRIP_DONE) == TRIP_ABANDONED)
        free(t);
}

static bool trip_came(void *t)
{
    return atomic_load(&((struct trip *)t)->state) != TRIP_PENDING;
}

int tu_round_trip(zkl_client *c)
{
    int64_t end = tu_now_ms() + tu_ms(30000);
    zhandle_t *zh = NULL;
    while (zkl_client_handle_borrow(c, &zh) != 0) {
        ck_assert_msg(tu_now_ms() < end, "the client has no session for a round trip");
        usleep(2000);
    }
    /* Asynchronous, not zoo_exists: libzookeeper_mt hands a synchronous
     * call its answer on its I/O thread, past the answers and events still
     * queued for the completion thread, where zkl handles them. This one's
     * completion runs after all of those. */
    struct trip *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    atomic_init(&t->state, TRIP_PENDING);
    int rc = zoo_aexists(zh, "/", 0, trip_done, t);
    if (rc != ZOK) {
        zkl_client_handle_return(c, zh);
        free(t);
        return rc;
    }
    (void)tu_wait_until(trip_came, t, 30000);
    zkl_client_handle_return(c, zh);
    if (atomic_exchange(&t->state, TRIP_ABANDONED) == TRIP_PENDING)
        ck_abort_msg("no answer to a round trip within %d ms", tu_ms(30000));
    rc = t->rc;
    free(t);
    return rc;
}

void tu_drain(zkl_client *const *cs, int n)
{
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(tu_round_trip(cs[i]), ZOK);
}

zkl_client_stats tu_stats(zkl_client *c)
{
    zkl_client_stats st;
    ck_assert_int_eq(zkl_client_get_stats(c, &st), 0);
    return st;
}

uint64_t tu_stat(zkl_client *c, size_t field)
{
    zkl_client_stats st = tu_stats(c);
    uint64_t v;
    memcpy(&v, (const char *)&st + field, sizeof v);
    return v;
}

struct stat_wait {
    zkl_client *c;
    size_t field;
    uint64_t n;
};

static bool stat_reached(void *arg)
{
    struct stat_wait *w = arg;
    return tu_stat(w->c, w->field) >= w->n;
}

void tu_wait_stat(zkl_client *c, size_t field, uint64_t n)
{
    struct stat_wait w = {c, field, n};
    ck_assert_msg(tu_wait_until(stat_reached, &w, 30000), "a counter of the client at %llu, want %llu",
                  (unsigned long long)tu_stat(c, field), (unsigned long long)n);
    /* One session's requests are answered in order: a round trip sent
     * after them returns after theirs. */
    ck_assert_int_eq(tu_round_trip(c), ZOK);
}

void tu_wait_requests(zkl_client *c, uint64_t n)
{
    tu_wait_stat(c, TU_STAT(requests), n);
}

void tu_expire_session(zkl_client *c)
{
    /* The session to expire is the one the client has once it is connected:
     * on a loaded machine (a sanitizer build beside busy loops) a short
     * session may have been lost and be re-opening just now, with no id yet.
     * Read the client's id and its handle's until both name one session; the
     * handle borrowed for that, since the client closes it when a session
     * ends. */
    int64_t old = 0;
    clientid_t id = {0};
    int timeout = 0;
    int64_t until = tu_now_ms() + tu_ms(30000);
    for (;;) {
        ck_assert_msg(tu_wait_until(tu_client_connected, c, 30000), "no session to expire");
        old = tu_client_session_id(c);
        zhandle_t *zh = NULL;
        if (old > 0 && zkl_client_handle_borrow(c, &zh) == 0) {
            id = *zoo_client_id(zh);
            timeout = zoo_recv_timeout(zh);
            zkl_client_handle_return(c, zh);
            if (id.client_id == old)
                break;
        }
        ck_assert_msg(tu_now_ms() < until, "the client's session did not settle");
        usleep(2000);
    }
    /* Close the session from a second handle until another one that
     * attaches is told that it is gone: the first handle may take its
     * session back between a second one's attach and close (then that
     * close closes nothing). */
    tu_expire_id(&id, timeout);
    int64_t end;
    /* Gone on the server: the client hears of it when it reconnects. */
    end = tu_now_ms() + tu_ms(15000);
    while (tu_client_session_id(c) == old && zkl_client_state(c) != ZKL_STATE_LOST) {
        ck_assert_msg(tu_now_ms() < end, "the client did not see its session expire");
        usleep(2000);
    }
}

TCase *tu_tcase(const char *name, int timeout_s)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout_s * tu_slowdown());
    return tc;
}

void tu_add_row(TCase *tc, const TTest *test, int i)
{
    tcase_add_loop_test(tc, test, i, i + 1);
}

static int run_case(const char *suite, int timeout_s, bool zk, void (*setup)(void),
                    void (*teardown)(void), const TTest *const *tests)
{
    Suite *s = suite_create(suite);
    TCase *tc = tu_tcase(suite, timeout_s);
    if (zk)
        tu_add_fixture(tc, suite);
    else if (setup != NULL || teardown != NULL)
        tcase_add_checked_fixture(tc, setup, teardown);
    for (size_t i = 0; tests[i] != NULL; i++)
        tcase_add_test(tc, tests[i]);
    suite_add_tcase(s, tc);
    return tu_run(s);
}

int tu_run_zk_case(const char *suite, int timeout_s, const TTest *const *tests)
{
    return run_case(suite, timeout_s, true, NULL, NULL, tests);
}

int tu_run_case(const char *suite, int timeout_s, void (*setup)(void), void (*teardown)(void),
                const TTest *const *tests)
{
    return run_case(suite, timeout_s, false, setup, teardown, tests);
}

void tu_curator_worker_build(void)
{
    setenv("ZKL_JAVA_OPTS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx96m -Xss512k", 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "sh '%s/bench/build-java.sh' --cached '%s/tests/interop/CuratorWorker.java' >/dev/null",
             ZKL_SRCDIR, ZKL_SRCDIR);
    ck_assert_msg(system(cmd) == 0, "cannot build the Curator worker (JDK and Curator jars?)");
}

int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

static char self_exe[PATH_MAX] = "/proc/self/exe";

void tu_main_init(int argc, char **argv)
{
    /* argv[0], not /proc/self/exe: under valgrind that names valgrind. */
    if (argc > 0 && strchr(argv[0], '/') != NULL && realpath(argv[0], self_exe) == NULL)
        snprintf(self_exe, sizeof self_exe, "/proc/self/exe");
}

pid_t tu_spawn_worker(const char *const *args, int out_fd)
{
    const char *argv[32] = {self_exe, "--worker"};
    size_t n = 2;
    for (size_t i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (out_fd >= 0)
            dup2(out_fd, 1);
        execv(self_exe, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

void tu_workers_join(const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        int st;
        ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d failed: %d", i, st);
    }
}

void tu_workers_run(const char *const *args, int n)
{
    pid_t *pids = malloc((size_t)n * sizeof *pids);
    ck_assert_ptr_nonnull(pids);
    for (int i = 0; i < n; i++)
        pids[i] = tu_spawn_worker(args, -1);
    tu_workers_join(pids, n);
    free(pids);
}

void *tu_workers_run_shared(const char *kind, const char *path, size_t size, int n)
{
    char file[64];
    void *shared = tu_shared_new(file, size);
    tu_workers_run((const char *[]){kind, path, file, NULL}, n);
    unlink(file);
    return shared;
}

int64_t tu_holder_kill(const char *path)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = tu_spawn_worker((const char *[]){"holder", path, NULL}, fds[1]);
    close(fds[1]);
    int64_t token = 0;
    ck_assert_int_eq(read(fds[0], &token, sizeof token), sizeof token);
    ck_assert_int_gt(token, 0);
    close(fds[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return token;
}

void tu_holder_main(int argc, char **argv,
                    int (*take)(zkl_client *c, const char *path, int64_t *token))
{
    if (argc != 4 || strcmp(argv[1], "--worker") != 0 || strcmp(argv[2], "holder") != 0)
        return;
    zkl_client *c = NULL;
    /* Stretched as deadlines are: under valgrind a 2 s session's loss rule
     * (0.9 s without an answer) can give it up while it takes its hold. */
    if (zkl_client_open(tu_hosts(), tu_ms(2000), &c) != 0)
        exit(2);
    int64_t token = 0;
    if (take(c, argv[3], &token) != 0)
        exit(3);
    if (write(1, &token, sizeof token) != sizeof token)
        exit(4);
    for (;;)
        pause();
}

void *tu_map_shared(const char *file, size_t size, int create)
{
    int fd = open(file, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0600);
    if (fd < 0)
        return NULL;
    if (create && ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

void *tu_shared_new(char file[64], size_t size)
{
    snprintf(file, 64, "/tmp/zkl-test-shm-XXXXXX");
    int fd = mkstemp(file);
    ck_assert_int_ge(fd, 0);
    close(fd);
    void *m = tu_map_shared(file, size, 1);
    ck_assert_ptr_nonnull(m);
    return m;
}

zhandle_t *tu_fixture_zk;
char *tu_fixture_root;
static const char *fixture_suite;

void tu_fixture_setup_named(const char *suite)
{
    tu_fixture_zk = tu_zk();
    tu_fixture_root = tu_root(suite);
}

/* What tu_defer was given, run by tu_fixture_teardown. */
static struct {
    void (*fn)(void *);
    void *arg;
} deferred[64];
static size_t ndeferred;

void tu_defer(void (*fn)(void *), void *arg)
{
    ck_assert_msg(ndeferred < sizeof deferred / sizeof *deferred, "too many deferred releases");
    deferred[ndeferred].fn = fn;
    deferred[ndeferred].arg = arg;
    ndeferred++;
}

static void client_close(void *c)
{
    zkl_client_close(c);
}

char *tu_test_path(const char *leaf)
{
    char *p = tu_path(leaf);
    tu_defer(free, p);
    return p;
}

zkl_client *tu_test_adopt(zkl_client *c)
{
    tu_defer(client_close, c);
    return c;
}

zkl_client *tu_test_client(int session_timeout_ms)
{
    return tu_test_adopt(tu_client(session_timeout_ms));
}

/* tu_test_mutex and the like, written once for every recipe: the object
 * made (or the test fails) and its free deferred. */
#define TEST_OBJECT(recipe, params, args)                                                          \
    static void recipe##_free_deferred(void *o)                                                    \
    {                                                                                              \
        zkl_##recipe##_free(o);                                                                    \
    }                                                                                              \
    zkl_##recipe *tu_test_##recipe params                                                          \
    {                                                                                              \
        zkl_##recipe *o = NULL;                                                                    \
        ck_assert_int_eq(zkl_##recipe##_new args, 0);                                              \
        tu_defer(recipe##_free_deferred, o);                                                       \
        return o;                                                                                  \
    }
TEST_OBJECT(mutex, (zkl_client *c, const char *path), (c, path, &o))
TEST_OBJECT(rwlock, (zkl_client *c, const char *path), (c, path, &o))
TEST_OBJECT(semmutex, (zkl_client *c, const char *path), (c, path, &o))
TEST_OBJECT(semaphore, (zkl_client *c, const char *path, int limit), (c, path, limit, &o))

zkl_mutex *tu_test_held_mutex(zkl_client *c, const char *path)
{
    zkl_mutex *m = tu_test_mutex(c, path);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    return m;
}

zkl_mutex *tu_test_holder(const char *path)
{
    return tu_test_held_mutex(tu_test_client(10000), path);
}

zkl_rwlock *tu_test_rwlock_apart(const char *path)
{
    return tu_test_rwlock(tu_test_client(10000), path);
}

zkl_semaphore *tu_test_semaphore_apart(const char *path, int limit)
{
    return tu_test_semaphore(tu_test_client(10000), path, limit);
}

void tu_expect_turns(zkl_mutex *first, zkl_mutex *second)
{
    ck_assert_int_eq(zkl_mutex_acquire(first, 5000), 0);
    int64_t t1 = tu_mutex_token(first);
    ck_assert_int_eq(zkl_mutex_acquire(second, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_release(first), 0);
    ck_assert_int_eq(zkl_mutex_acquire(second, 5000), 0);
    ck_assert_int_gt(tu_mutex_token(second), t1);
}

void tu_fixture_teardown(void)
{
    while (ndeferred > 0) {
        ndeferred--;
        deferred[ndeferred].fn(deferred[ndeferred].arg);
    }
    tu_rmr(tu_fixture_zk, tu_fixture_root);
    zookeeper_close(tu_fixture_zk);
    free(tu_fixture_root);
    tu_fixture_zk = NULL;
    tu_fixture_root = NULL;
}

static void fixture_setup(void)
{
    tu_fixture_setup_named(fixture_suite);
}

void tu_add_fixture(TCase *tc, const char *suite)
{
    fixture_suite = suite;
    tcase_add_checked_fixture(tc, fixture_setup, tu_fixture_teardown);
}

void tu_guard_path(const char *path, int perms)
{
    static char world[] = "world", anyone[] = "anyone", auth[] = "auth", empty[] = "";
    struct ACL acl[2] = {{perms, {world, anyone}}, {ZOO_PERM_ALL, {auth, empty}}};
    struct ACL_vector v = {2, acl};
    ck_assert_int_eq(zoo_set_acl(tu_fixture_zk, path, -1, &v), ZOK);
}

char *tu_path(const char *leaf)
{
    char *p = malloc(strlen(tu_fixture_root) + strlen(leaf) + 2);
    ck_assert_ptr_nonnull(p);
    sprintf(p, "%s/%s", tu_fixture_root, leaf);
    return p;
}

struct children_wait {
    zhandle_t *zh;
    const char *path;
    int want;
    bool at_least;
};

static bool children_are(void *arg)
{
    struct children_wait *w = arg;
    int n = tu_children(w->zh, w->path);
    return w->at_least ? n >= w->want : n == w->want;
}

int tu_children_named(zhandle_t *zh, const char *path, const char *part)
{
    struct String_vector kids = {0};
    if (zoo_get_children(zh, path, 0, &kids) != ZOK)
        return 0;
    int n = 0;
    for (int i = 0; i < kids.count; i++)
        n += strstr(kids.data[i], part) != NULL;
    deallocate_String_vector(&kids);
    return n;
}

struct named_wait {
    zhandle_t *zh;
    const char *path, *part;
    int want;
};

static bool named_are(void *arg)
{
    struct named_wait *w = arg;
    return tu_children_named(w->zh, w->path, w->part) == w->want;
}

bool tu_wait_children_named(zhandle_t *zh, const char *path, const char *part, int want,
                            int timeout_ms)
{
    struct named_wait w = {zh, path, part, want};
    return tu_wait_until(named_are, &w, timeout_ms);
}

bool tu_wait_children(zhandle_t *zh, const char *path, int want, int timeout_ms)
{
    struct children_wait w = {zh, path, want, false};
    return tu_wait_until(children_are, &w, timeout_ms);
}

bool tu_wait_children_at_least(zhandle_t *zh, const char *path, int want, int timeout_ms)
{
    struct children_wait w = {zh, path, want, true};
    return tu_wait_until(children_are, &w, timeout_ms);
}

/* Count the contenders below `path`, deleting them if `del`. */
static int contenders_walk(const char *path, bool del)
{
    struct String_vector kids = {0};
    if (zoo_get_children(tu_fixture_zk, path, 0, &kids) != ZOK)
        return 0;
    int n = 0;
    for (int i = 0; i < kids.count; i++) {
        char sub[2048];
        snprintf(sub, sizeof sub, "%s/%s", path, kids.data[i]);
        struct Stat st;
        if (zoo_exists(tu_fixture_zk, sub, 0, &st) != ZOK)
            continue;
        if (st.ephemeralOwner == 0)
            n += contenders_walk(sub, del);
        else if (!del || zoo_delete(tu_fixture_zk, sub, -1) == ZOK)
            n++;
    }
    deallocate_String_vector(&kids);
    return n;
}

int tu_contenders(const char *path)
{
    return contenders_walk(path, false);
}

int tu_delete_contenders(const char *path)
{
    return contenders_walk(path, true);
}

struct contenders_wait {
    const char *path;
    int want;
    bool above;
};

static bool contenders_reached(void *arg)
{
    struct contenders_wait *w = arg;
    int n = tu_contenders(w->path);
    return w->above ? n > w->want : n == w->want;
}

void tu_expect_contenders(const char *path, int want)
{
    tu_expect_contenders_within(path, want, 10000);
}

void tu_expect_contenders_within(const char *path, int want, int timeout_ms)
{
    struct contenders_wait w = {path, want, false};
    ck_assert_msg(tu_wait_until(contenders_reached, &w, timeout_ms), "%s: %d contenders, want %d",
                  path, tu_contenders(path), want);
}

void tu_wait_contenders_above(const char *path, int base)
{
    struct contenders_wait w = {path, base, true};
    ck_assert_msg(tu_wait_until(contenders_reached, &w, 10000), "no contender came under %s",
                  path);
}

void tu_arena_enter(struct tu_arena *a)
{
    if (__atomic_add_fetch(&a->inside, 1, __ATOMIC_SEQ_CST) != 1)
        __atomic_add_fetch(&a->violations, 1, __ATOMIC_SEQ_CST);
}

void tu_arena_leave(struct tu_arena *a)
{
    __atomic_sub_fetch(&a->inside, 1, __ATOMIC_SEQ_CST);
}

void tu_arena_token(struct tu_arena *a, int64_t token)
{
    if (token <= a->last_token)
        a->token_errors++;
    a->last_token = token;
}

int tu_file_lines(const char *path, const char *prefix)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strncmp(line, prefix, strlen(prefix)) == 0;
    fclose(f);
    return n;
}

int64_t tu_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tu_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

long tu_counter_read(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = 0;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

int tu_counter_write(const char *path, long v)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%ld\n", v);
    return fclose(f) == 0 ? 0 : -1;
}

int tu_wait_exit(pid_t pid, int timeout_ms)
{
    int64_t end = tu_now_ms() + tu_ms(timeout_ms);
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0)
            return -2;
        if (tu_now_ms() >= end)
            return -1;
        usleep(5000);
    }
}

/* One server's answer to a four-letter command, malloc'd; NULL if none. */
static char *four_letters(const char *host, size_t hlen, const char *cmd)
{
    char name[256], *port;
    if (hlen >= sizeof name)
        return NULL;
    memcpy(name, host, hlen);
    name[hlen] = '\0';
    if ((port = strrchr(name, ':')) == NULL)
        return NULL;
    *port++ = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(name, port, &hints, &ai) != 0)
        return NULL;
    int fd = socket(ai->ai_family, ai->ai_socktype, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return NULL;
    }
    freeaddrinfo(ai);
    char *out = NULL;
    size_t len = 0, cap = 0;
    if (write(fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd)) {
        for (;;) {
            if (len + 4096 + 1 > cap) {
                char *m = realloc(out, cap = 2 * cap + 8192);
                if (m == NULL)
                    break;
                out = m;
            }
            ssize_t r = read(fd, out + len, cap - len - 1);
            if (r <= 0)
                break;
            len += (size_t)r;
        }
    }
    close(fd);
    if (out != NULL)
        out[len] = '\0';
    return out;
}

char *tu_four_letters(const char *host, const char *cmd)
{
    return four_letters(host, strlen(host), cmd);
}

bool tu_session_watches(const char *path, int64_t session)
{
    char sid[32];
    snprintf(sid, sizeof sid, "0x%llx", (unsigned long long)session);
    size_t plen = strlen(path);
    const char *h = tu_hosts();
    bool found = false;
    while (*h && !found) {
        size_t hlen = strcspn(h, ",");
        char *txt = four_letters(h, hlen, "wchp");
        /* wchp: each watched path on a line, then its sessions, one per
         * line, indented. */
        bool in = false;
        for (char *line = txt; line != NULL && *line && !found;) {
            char *end = strchr(line, '\n');
            size_t n = end ? (size_t)(end - line) : strlen(line);
            if (line[0] == '/')
                in = n == plen && memcmp(line, path, plen) == 0;
            else if (in) {
                const char *s = line + strspn(line, " \t");
                size_t slen = n - (size_t)(s - line);
                found = slen == strlen(sid) && strncasecmp(s, sid, slen) == 0;
            }
            line = end ? end + 1 : NULL;
        }
        free(txt);
        h += hlen;
        if (*h == ',')
            h++;
    }
    return found;
}

bool tu_wait_session_watches(const char *path, int64_t session, int timeout_ms)
{
    int64_t end = tu_now_ms() + tu_ms(timeout_ms);
    while (!tu_session_watches(path, session)) {
        if (tu_now_ms() >= end)
            return false;
        usleep(5000);
    }
    return true;
}
