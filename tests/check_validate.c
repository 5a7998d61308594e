/* What the server would refuse is refused before anything is sent, against
 * a real ZooKeeper: paths with characters it refuses, a connect string
 * whose chroot does not exist, guarded writes over its request limit. The
 * ZooKeeper code behind a ZKL_EZK is readable afterwards. Misuse of object
 * lifetimes stops the process with a message (in a worker process) or is
 * refused (ZKL_EBUSY), and a client closed before its lock objects stays
 * safe to use through them. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

#define DEFAULT_LIMIT 0xfffff

static char *join(const char *a, const char *b)
{
    char *s = malloc(strlen(a) + strlen(b) + 2);
    sprintf(s, "%s/%s", a, b);
    return s;
}

static void make_node(const char *path, int mode)
{
    /* Its ancestors first. */
    char *up = strdup(path);
    for (char *s = strchr(up + 1, '/'); s != NULL; s = strchr(s + 1, '/')) {
        *s = '\0';
        zoo_create(tu_fixture_zk, up, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        *s = '/';
    }
    free(up);
    int rc = zoo_create(tu_fixture_zk, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, mode, NULL, 0);
    ck_assert_msg(rc == ZOK || rc == ZNODEEXISTS, "create %s: %d", path, rc);
}

/* ---- paths -------------------------------------------------------------- */

/* One leaf per class of what the server refuses. */
static const struct {
    const char *what, *leaf;
} refused[] = {
    {"U+0001", "a\x01"},
    {"U+001F", "a\x1f"},
    {"U+007F", "a\x7f"},
    {"U+0080", "a\xc2\x80"},
    {"U+0085", "a\xc2\x85"},
    {"U+009F", "a\xc2\x9f"},
    {"U+E000", "a\xee\x80\x80"},
    {"U+F8FF", "a\xef\xa3\xbf"},
    {"U+FFF0", "a\xef\xbf\xb0"},
    {"U+FFFD", "a\xef\xbf\xbd"},
    {"U+FFFF", "a\xef\xbf\xbf"},
    {"U+1F600 (a surrogate pair on the server)", "a\xf0\x9f\x98\x80"},
    {"an encoded surrogate U+D800", "a\xed\xa0\x80"},
    {"a stray continuation byte", "a\x80z"},
    {"a byte never in UTF-8", "a\xffz"},
    {"a truncated sequence", "a\xc3z"},
    {"an overlong '/'", "a\xc0\xafz"},
    {"an empty segment", "a//b"},
    {"a \".\" segment", "a/./b"},
    {"a \"..\" segment", "a/../b"},
    {"a trailing '/'", "a/"},
};

/* And their neighbours, which it accepts. */
static const char *accepted[] = {
    "a\x20z",         /* U+0020 */
    "a~z",            /* U+007E */
    "a\xc2\xa0z",     /* U+00A0 */
    "a\xc3\xa9z",     /* U+00E9 */
    "a\xe4\xb8\xadz", /* U+4E2D */
    "a\xed\x9f\xbfz", /* U+D7FF */
    "a\xef\xa4\x80z", /* U+F900 */
    "a\xef\xbf\xafz", /* U+FFEF */
    "a.b..c",
};

START_TEST(test_refused_paths_never_reach_the_server)
{
    make_node(tu_fixture_root, 0);
    zkl_client *c = tu_test_client(10000);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *p = join(tu_fixture_root, refused[i].leaf);
        /* The server (or the C client before it) refuses to create it. */
        int raw = zoo_create(tu_fixture_zk, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        ck_assert_msg(raw == ZBADARGUMENTS, "%s: raw create gave %d", refused[i].what, raw);
        ck_assert_int_eq(tu_children(tu_fixture_zk, tu_fixture_root), 0);
        /* zkl refuses it first, for every kind of lock, sending nothing. */
        uint64_t before = tu_stats(c).requests;
        zkl_mutex *m = NULL;
        zkl_semmutex *sm = NULL;
        zkl_rwlock *rw = NULL;
        zkl_semaphore *s = NULL;
        zkl_multilock *ml = NULL;
        const char *paths[] = {p};
        ck_assert_msg(zkl_mutex_new(c, p, &m) == ZKL_EINVAL, "%s accepted", refused[i].what);
        ck_assert(strlen(zkl_last_error_text()) > 0);
        ck_assert_int_eq(zkl_semmutex_new(c, p, &sm), ZKL_EINVAL);
        ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), ZKL_EINVAL);
        ck_assert_int_eq(zkl_semaphore_new(c, p, 2, &s), ZKL_EINVAL);
        ck_assert_int_eq(zkl_multilock_new(c, paths, 1, &ml), ZKL_EINVAL);
        ck_assert_int_eq(tu_stats(c).requests, before);
        free(p);
    }
    ck_assert_int_eq(tu_children(tu_fixture_zk, tu_fixture_root), 0);
    /* The reason names the character. */
    char *p = join(tu_fixture_root, "a\xc2\x85");
    zkl_mutex *m = NULL;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), ZKL_EINVAL);
    ck_assert_ptr_nonnull(strstr(zkl_last_error_text(), "U+0085"));
    free(p);
}
END_TEST

START_TEST(test_neighbouring_characters_are_accepted_and_work)
{
    zkl_client *c = tu_test_client(10000);
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        char *p = join(tu_fixture_root, accepted[i]);
        zkl_mutex *m;
        ck_assert_msg(zkl_mutex_new(c, p, &m) == 0, "refused %s: %s", accepted[i],
                      zkl_last_error_text());
        ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
        ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
        ck_assert_int_eq(zkl_mutex_release(m), 0);
        zkl_mutex_free(m);
        free(p);
    }
}
END_TEST

/* A guarded write's target path and the paths of its ops: checked too. */
START_TEST(test_guarded_write_to_a_refused_path_sends_nothing)
{
    zkl_client *c = tu_test_client(10000);
    char *lp = tu_test_path("lock");
    zkl_mutex *m = tu_test_held_mutex(c, lp);
    uint64_t before = tu_stats(c).requests;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *p = join(tu_fixture_root, refused[i].leaf);
        ck_assert_int_eq(zkl_mutex_guarded_set(m, p, "x", 1), ZKL_EINVAL);
        zoo_op_t op;
        zoo_create_op_init(&op, p, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        ck_assert_int_eq(zkl_mutex_guarded_multi(m, 1, &op, NULL), ZKL_EINVAL);
        free(p);
    }
    ck_assert_int_eq(tu_stats(c).requests, before);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
}
END_TEST

/* ---- the chroot ------------------------------------------------------------ */

START_TEST(test_missing_chroot_fails_the_open_and_names_it)
{
    char hosts[512];
    snprintf(hosts, sizeof hosts, "%s/zkl-nochroot-%ld", tu_hosts(), (long)getpid());
    zkl_client *c = NULL;
    ck_assert_int_eq(zkl_client_open(hosts, 10000, &c), ZKL_ENOCHROOT);
    ck_assert_ptr_null(c);
    char want[64];
    snprintf(want, sizeof want, "/zkl-nochroot-%ld", (long)getpid());
    ck_assert_msg(strstr(zkl_last_error_text(), want) != NULL, "%s", zkl_last_error_text());
    ck_assert_str_eq(zkl_err_name(ZKL_ENOCHROOT), "ENOCHROOT");
    ck_assert_int_eq(tu_exists(tu_fixture_zk, want), 0);

    /* A chroot that exists: the client works inside it. */
    make_node(tu_fixture_root, 0);
    snprintf(hosts, sizeof hosts, "%s%s", tu_hosts(), tu_fixture_root);
    ck_assert_int_eq(zkl_client_open(hosts, 10000, &c), 0);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, "/inside", &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    char *in = tu_test_path("inside");
    ck_assert_int_eq(tu_children(tu_fixture_zk, in), 1);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    /* The chroot deleted while the client is open: an acquire names it. */
    tu_rmr(tu_fixture_zk, tu_fixture_root);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), ZKL_ENOCHROOT);
    ck_assert_msg(strstr(zkl_last_error_text(), "no longer exists") != NULL, "%s",
                  zkl_last_error_text());
    ck_assert_int_eq(tu_exists(tu_fixture_zk, tu_fixture_root), 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
}
END_TEST

/* ---- the request size limit ------------------------------------------------ */

static int suspended;
static void count_suspended(zkl_client *c, enum zkl_state state, void *arg)
{
    (void)c, (void)arg;
    if (state == ZKL_STATE_SUSPENDED)
        __atomic_add_fetch(&suspended, 1, __ATOMIC_SEQ_CST);
}

static int data_length(const char *path)
{
    struct Stat st;
    ck_assert_int_eq(zoo_exists(tu_fixture_zk, path, 0, &st), ZOK);
    return st.dataLength;
}

/* The largest data zkl lets through to `missing` (a path as long as the
 * real target), found by bisection: what it lets through reaches the
 * server, which answers ZNONODE (ZKL_ENOENT). */
static int largest_accepted(zkl_mutex *m, const char *missing, const char *buf, int hi)
{
    int lo = 0;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        int rc = zkl_mutex_guarded_set(m, missing, buf, mid);
        if (rc == ZKL_EINVAL) {
            hi = mid - 1;
        } else {
            ck_assert_int_eq(rc, ZKL_ENOENT);
            lo = mid;
        }
    }
    return lo;
}

START_TEST(test_oversized_guarded_write_is_refused_before_sending)
{
    __atomic_store_n(&suspended, 0, __ATOMIC_SEQ_CST);
    zkl_client *c = tu_test_client(10000);
    ck_assert_int_eq(zkl_client_add_listener(c, count_suspended, NULL), 0);
    char *lp = tu_path("lock"), *target = tu_path("data"), *missing = tu_path("datx");
    make_node(tu_fixture_root, 0);
    make_node(target, 0);
    zkl_mutex *m = tu_test_held_mutex(c, lp);
    char *buf = calloc(1, 2 * DEFAULT_LIMIT);

    /* At the limit (the request is larger still) and well over it. */
    uint64_t before = tu_stats(c).requests;
    ck_assert_int_eq(zkl_mutex_guarded_set(m, target, buf, DEFAULT_LIMIT), ZKL_EINVAL);
    ck_assert_ptr_nonnull(strstr(zkl_last_error_text(), "limit"));
    ck_assert_int_eq(zkl_mutex_guarded_set(m, target, buf, 2 * DEFAULT_LIMIT - 1), ZKL_EINVAL);
    zoo_op_t ops[2];
    zoo_set_op_init(&ops[0], target, buf, DEFAULT_LIMIT / 2, -1, NULL);
    zoo_set_op_init(&ops[1], target, buf, DEFAULT_LIMIT / 2, -1, NULL);
    ck_assert_int_eq(zkl_mutex_guarded_multi(m, 2, ops, NULL), ZKL_EINVAL);
    ck_assert_int_eq(tu_stats(c).requests, before);

    /* Just under: the largest data zkl lets through is written, one byte
     * more is refused, and zkl's margin stays small. */
    int best = largest_accepted(m, missing, buf, DEFAULT_LIMIT);
    ck_assert_int_gt(best, DEFAULT_LIMIT - 1024);
    ck_assert_int_eq(zkl_mutex_guarded_set(m, target, buf, best), 0);
    ck_assert_int_eq(data_length(target), best);
    before = tu_stats(c).requests;
    ck_assert_int_eq(zkl_mutex_guarded_set(m, target, buf, best + 1), ZKL_EINVAL);
    ck_assert_int_eq(tu_stats(c).requests, before);

    /* The connection never dropped: no lock of the client was in doubt. */
    ck_assert_int_eq(zkl_client_state(c), ZKL_STATE_CONNECTED);
    ck_assert_int_eq(__atomic_load_n(&suspended, __ATOMIC_SEQ_CST), 0);
    ck_assert_int_eq(tu_stats(c).sessions, 1);
    ck_assert(zkl_mutex_is_held(m));
    ck_assert_int_eq(zkl_mutex_guarded_set(m, target, "ok", 2), 0);
    ck_assert_int_eq(data_length(target), 2);

    ck_assert_int_eq(zkl_mutex_release(m), 0);
    free(buf);
    free(lp), free(target), free(missing);
}
END_TEST

START_TEST(test_the_limit_is_an_option)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_max_request(o, 100), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_max_request(NULL, 1 << 20), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_max_request(o, 16384), 0);
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), 0);
    zkl_client_opts_free(o);
    char *lp = tu_path("lock"), *target = tu_path("data");
    make_node(tu_fixture_root, 0);
    make_node(target, 0);
    zkl_mutex *m = tu_test_held_mutex(c, lp);
    char buf[16384] = {0};
    uint64_t before = tu_stats(c).requests;
    ck_assert_int_eq(zkl_mutex_guarded_set(m, target, buf, 16384), ZKL_EINVAL);
    ck_assert_int_eq(tu_stats(c).requests, before);
    ck_assert_int_eq(zkl_mutex_guarded_set(m, target, buf, 15000), 0);
    ck_assert_int_eq(data_length(target), 15000);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_client_close(c);
    free(lp), free(target);
}
END_TEST

/* A server started with a larger jute.maxbuffer takes a larger write, once
 * the client is told. Its directory is named after the suite's process,
 * which stops it at exit if a failing test could not (and the harness's
 * watchdog does if the suite dies). */
static char harness_dir[256];
static pid_t suite_pid;

static void stop_big_server(void)
{
    struct stat st;
    if (harness_dir[0] == '\0' || stat(harness_dir, &st) != 0)
        return;
    char *cmd;
    if (asprintf(&cmd, "'%s/tests/zk-harness.sh' stop '%s' >/dev/null 2>&1; rm -rf '%s' '%s.log'",
                 ZKL_SRCDIR, harness_dir, harness_dir, harness_dir) < 0)
        return;
    if (system(cmd) != 0)
        fprintf(stderr, "stopping %s failed\n", harness_dir);
    free(cmd);
}

START_TEST(test_a_larger_limit_lets_a_larger_write_through)
{
    char *cmd;
    char log[300];
    snprintf(log, sizeof log, "%s.log", harness_dir);
    ck_assert_int_ge(asprintf(&cmd,
                              "ZKL_ZK_JVM_EXTRA=-Djute.maxbuffer=4194304 '%s/tests/zk-harness.sh' "
                              "start '%s' --owner %ld >'%s' 2>&1",
                              ZKL_SRCDIR, harness_dir, (long)suite_pid, log),
                     0);
    if (system(cmd) != 0) {
        /* The harness says why (and the server's log tail) on its stderr. */
        char why[4096] = "";
        FILE *lf = fopen(log, "r");
        if (lf != NULL) {
            size_t n = fread(why, 1, sizeof why - 1, lf);
            why[n] = '\0';
            fclose(lf);
        }
        ck_abort_msg("could not start a ZooKeeper with a larger jute.maxbuffer:\n%s", why);
    }
    unlink(log);
    free(cmd);
    char hosts[256] = "";
    char hf[300];
    snprintf(hf, sizeof hf, "%s/hosts", harness_dir);
    FILE *f = fopen(hf, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(hosts, sizeof hosts, f));
    fclose(f);
    hosts[strcspn(hosts, "\n")] = '\0';

    const int size = 3 * 1024 * 1024;
    char *buf = calloc(1, (size_t)size);
    for (int big = 0; big < 2; big++) {
        zkl_client_opts *o;
        ck_assert_int_eq(zkl_client_opts_new(&o), 0);
        if (big)
            ck_assert_int_eq(zkl_client_opts_set_max_request(o, 4194304), 0);
        zkl_client *c;
        ck_assert_int_eq(zkl_client_open_opts(hosts, 10000, o, &c), 0);
        zkl_client_opts_free(o);
        zhandle_t *zh = zkl_client_handle(c);
        int rc = zoo_create(zh, "/data", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        ck_assert(rc == ZOK || rc == ZNODEEXISTS);
        zkl_mutex *m;
        ck_assert_int_eq(zkl_mutex_new(c, "/lock", &m), 0);
        ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
        uint64_t before = tu_stats(c).requests;
        rc = zkl_mutex_guarded_set(m, "/data", buf, size);
        if (!big) {
            ck_assert_int_eq(rc, ZKL_EINVAL); /* the default limit */
            ck_assert_int_eq(tu_stats(c).requests, before);
        } else {
            ck_assert_int_eq(rc, 0);
            struct Stat st;
            ck_assert_int_eq(zoo_exists(zh, "/data", 0, &st), ZOK);
            ck_assert_int_eq(st.dataLength, size);
            ck_assert_int_eq(zoo_delete(zh, "/data", -1), ZOK);
        }
        ck_assert_int_eq(zkl_mutex_release(m), 0);
        zkl_mutex_free(m);
        zkl_client_close(c);
    }
    free(buf);
    stop_big_server();
}
END_TEST

/* ---- the ZooKeeper error behind ZKL_EZK ------------------------------------ */

static void *other_thread_zk_error(void *arg)
{
    *(int *)arg = zkl_last_zk_error();
    return NULL;
}

START_TEST(test_zookeeper_error_is_readable_after_ezk)
{
    zkl_client *c = tu_test_client(10000);
    make_node(tu_fixture_root, 0);
    /* A guarded multi-op on a node that does not exist (a guarded set says
     * ZKL_ENOENT instead). */
    char *lp = tu_path("lock"), *missing = tu_path("missing");
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, lp, &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    zoo_op_t op;
    zoo_set_op_init(&op, missing, "x", 1, -1, NULL);
    zoo_op_result_t res;
    ck_assert_int_eq(zkl_mutex_guarded_multi(m, 1, &op, &res), ZKL_EZK);
    ck_assert_int_eq(res.err, ZNONODE);
    ck_assert_int_eq(zkl_last_zk_error(), ZNONODE);
    char want[64];
    snprintf(want, sizeof want, "ZooKeeper error %d", ZNONODE);
    ck_assert_msg(strstr(zkl_last_error_text(), want) != NULL, "%s", zkl_last_error_text());
    /* Per thread: another thread has none. */
    int seen = 1;
    pthread_t t;
    pthread_create(&t, NULL, other_thread_zk_error, &seen);
    pthread_join(t, NULL);
    ck_assert_int_eq(seen, 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_mutex_free(m);

    /* An acquire whose lock path is an ephemeral node: the engine's
     * failure, in ZooKeeper's completion thread, reaches the caller's. */
    char *eph = tu_test_path("ephemeral");
    make_node(eph, ZOO_EPHEMERAL);
    zkl_mutex *e = tu_test_mutex(c, eph);
    ck_assert_int_eq(zkl_mutex_acquire(e, 10000), ZKL_EINVAL);
    ck_assert_int_eq(zkl_last_zk_error(), ZNOCHILDRENFOREPHEMERALS);
    ck_assert_msg(strstr(zkl_last_error_text(), "ephemeral") != NULL, "%s",
                  zkl_last_error_text());
    /* Deeper: the lock path's parent is the ephemeral node. At once, not
     * after the retries a missing parent gets. */
    char *under = tu_test_path("ephemeral/jobs/lock");
    zkl_mutex *u = tu_test_mutex(c, under);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_mutex_acquire(u, tu_ms(10000)), ZKL_EINVAL);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(5000));
    ck_assert_int_eq(zkl_last_zk_error(), ZNOCHILDRENFOREPHEMERALS);
    ck_assert_msg(strstr(zkl_last_error_text(), "ephemeral") != NULL, "%s",
                  zkl_last_error_text());
    free(lp), free(missing);
}
END_TEST

/* ---- misuse of lifetimes ----------------------------------------------------- */

struct bg {
    void *obj;
    int rc;
    zkl_lease *lease;
    pthread_t t;
};

static void *bg_mutex(void *arg)
{
    struct bg *b = arg;
    b->rc = zkl_mutex_acquire(b->obj, 60000);
    return NULL;
}

static void *bg_semaphore(void *arg)
{
    struct bg *b = arg;
    b->rc = zkl_semaphore_acquire(b->obj, 60000, &b->lease);
    return NULL;
}

/* A misuse worker's start: stderr unbuffered into `errfile` (the parent
 * reads the abort message there) and a client. 0, or the worker's exit
 * code (2: no stderr, 3: no client). */
static int worker_open(const char *errfile, zkl_client **a)
{
    if (freopen(errfile, "w", stderr) == NULL)
        return 2;
    setvbuf(stderr, NULL, _IONBF, 0);
    return zkl_client_open(tu_hosts(), 10000, a) != 0 ? 3 : 0;
}

/* The same with a second client, for the waiter. */
static int worker_open_two(const char *errfile, zkl_client **a, zkl_client **b)
{
    int err = worker_open(errfile, a);
    if (err == 0 && zkl_client_open(tu_hosts(), 10000, b) != 0)
        err = 3;
    return err;
}

/* Wait until the waiter on client b has its node on the server: it is
 * inside its acquire. */
static void worker_wait_inside(zkl_client *b)
{
    zkl_client_stats st;
    for (int i = 0; i < 10000; i++) {
        zkl_client_get_stats(b, &st);
        if (st.creates >= 1)
            break;
        usleep(1000);
    }
}

/* Worker: "free-acquiring HOSTS PATH ERRFILE": a thread waits in an acquire
 * of a mutex while the main thread frees it. Must die with SIGABRT.
 * "sem-free-acquiring HOSTS PATH ERRFILE" (semaphore true): the same for a
 * semaphore whose acquire waits behind a lease of another client. */
static int worker_free_acquiring(const char *path, const char *errfile, bool semaphore)
{
    zkl_client *a, *b;
    int err = worker_open_two(errfile, &a, &b);
    if (err != 0)
        return err;
    void *obj; /* b's, freed under its waiter */
    if (semaphore) {
        zkl_semaphore *sa, *sb;
        zkl_lease *la;
        if (zkl_semaphore_new(a, path, 1, &sa) != 0 || zkl_semaphore_new(b, path, 1, &sb) != 0 ||
            zkl_semaphore_acquire(sa, 10000, &la) != 0)
            return 4;
        obj = sb;
    } else {
        zkl_mutex *ma, *mb;
        if (zkl_mutex_new(a, path, &ma) != 0 || zkl_mutex_new(b, path, &mb) != 0 ||
            zkl_mutex_acquire(ma, 10000) != 0)
            return 4;
        obj = mb;
    }
    struct bg w = {.obj = obj};
    pthread_create(&w.t, NULL, semaphore ? bg_semaphore : bg_mutex, &w);
    worker_wait_inside(b);
    /* The misuse: */
    if (semaphore)
        zkl_semaphore_free(obj);
    else
        zkl_mutex_free(obj);
    return 0; /* not reached */
}

/* Worker: "use-after-free HOSTS PATH ERRFILE": an acquire through a mutex
 * already freed. */
static int worker_use_after_free(const char *path, const char *errfile)
{
    zkl_client *a;
    int err = worker_open(errfile, &a);
    if (err != 0)
        return err;
    zkl_mutex *m;
    if (zkl_mutex_new(a, path, &m) != 0)
        return 4;
    zkl_mutex_free(m);
    int rc = zkl_mutex_acquire(m, 0); /* the misuse */
    return rc == 0 ? 5 : 6;          /* not reached */
}

static char *read_file(const char *path)
{
    static char buf[4096];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

static void expect_abort(const char *mode, const char *message)
{
    char *p = tu_path("misuse");
    char errfile[128];
    snprintf(errfile, sizeof errfile, "/tmp/zkl-validate-%ld-%s.err", (long)getpid(), mode);
    pid_t pid = tu_spawn_worker((const char *[]){mode, p, errfile, NULL}, -1);
    int status = tu_wait_exit(pid, 60000);
    ck_assert_msg(status == 128 + SIGABRT, "%s: worker exit %d, stderr: %s", mode, status,
                  read_file(errfile));
    const char *err = read_file(errfile);
    ck_assert_msg(strstr(err, message) != NULL, "%s: stderr was: %s", mode, err);
    unlink(errfile);
    free(p);
}

START_TEST(test_free_while_another_thread_acquires_aborts_with_a_message)
{
    expect_abort("free-acquiring", "zkl: zkl_mutex_free: the object is still in use by 1 call");
}
END_TEST

START_TEST(test_acquire_through_a_freed_mutex_aborts_with_a_message)
{
    expect_abort("use-after-free", "zkl: zkl_mutex_acquire: not an open lock object");
}
END_TEST

static bool created_one(void *arg)
{
    return tu_stats(arg).creates >= 1;
}

START_TEST(test_semaphore_free_while_another_thread_acquires_aborts)
{
    expect_abort("sem-free-acquiring",
                 "zkl: zkl_semaphore_free: the object is still in use by 1 call");
}
END_TEST

/* A semaphore freed while its leases are out cannot refuse: the leases stay
 * valid, release as usual, and the last one frees the semaphore (memcheck
 * sees that nothing stays). */
START_TEST(test_semaphore_freed_with_leases_out_keeps_them)
{
    char *p = tu_test_path("sem");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_semaphore *sa, *sb;
    ck_assert_int_eq(zkl_semaphore_new(a, p, 2, &sa), 0);
    ck_assert_int_eq(zkl_semaphore_new(b, p, 2, &sb), 0);
    zkl_lease *l1, *l2;
    ck_assert_int_eq(zkl_semaphore_acquire(sa, 10000, &l1), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(sa, 10000, &l2), 0);
    int64_t t1 = tu_lease_token(l1);
    zkl_semaphore_free(sa);
    /* b waits: both leases are still held */
    struct bg w = {.obj = sb};
    pthread_create(&w.t, NULL, bg_semaphore, &w);
    ck_assert(tu_wait_until(created_one, b, 10000));
    ck_assert_int_eq(zkl_lease_is_held(l1), 1);
    ck_assert_int_eq(tu_lease_token(l1), t1);
    ck_assert_int_eq(zkl_lease_release(l1), 0);
    pthread_join(w.t, NULL);
    ck_assert_int_eq(w.rc, 0);
    ck_assert_int_gt(tu_lease_token(w.lease), t1);
    ck_assert_int_eq(zkl_lease_release(l2), 0); /* the last: sa goes */
    ck_assert_int_eq(zkl_lease_release(w.lease), 0);
    zkl_semaphore_free(sb);
}
END_TEST

/* Closing the client first is safe: its lock objects keep its memory, their
 * holds went with the session, and freeing them frees the client. */
START_TEST(test_objects_outlive_their_closed_client_safely)
{
    char *p = tu_path("lock"), *q = tu_path("rw"), *r = tu_path("sm"), *u = tu_path("sem");
    zkl_client *c = tu_client(10000);
    zkl_mutex *m;
    zkl_rwlock *rw;
    zkl_semmutex *sm;
    zkl_semaphore *sem;
    zkl_lease *lease;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_rwlock_new(c, q, &rw), 0);
    ck_assert_int_eq(zkl_semmutex_new(c, r, &sm), 0);
    ck_assert_int_eq(zkl_semaphore_new(c, u, 2, &sem), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 10000), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 10000), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(sm, 10000), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(sem, 10000, &lease), 0);
    zkl_semaphore_free(sem); /* its lease keeps it */
    zkl_client_close(c);
    /* The session's nodes are gone. */
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 10000));
    ck_assert_int_eq(tu_children(tu_fixture_zk, q), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, r), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, u), 0);
    /* A lease still out goes with the session; its release frees it. */
    ck_assert(!zkl_lease_is_held(lease));
    ck_assert_int_eq(zkl_lease_release(lease), ZKL_ECLOSED);
    ck_assert(!zkl_mutex_is_held(m));
    ck_assert_int_eq(zkl_mutex_acquire(m, 1000), ZKL_ELOST);
    ck_assert_int_eq(zkl_mutex_release(m), ZKL_ECLOSED);
    ck_assert_int_eq(zkl_semmutex_release(sm), ZKL_ECLOSED);
    zkl_mutex_free(m);
    zkl_semmutex_free(sm);
    zkl_rwlock_free(rw); /* the last one frees the client */
    free(p), free(q), free(r), free(u);
}
END_TEST

/* Worker: "many-objects HOSTS PATH ERRFILE": 20,000 mutexes open at once
 * (the table of open objects grows several times), each still usable; a
 * third of them freed, out of order; a call through one of those must die. */
static int worker_many_objects(const char *path, const char *errfile)
{
    zkl_client *a;
    int err = worker_open(errfile, &a);
    if (err != 0)
        return err;
    enum { N = 20000 };
    static zkl_mutex *ms[N];
    for (int i = 0; i < N; i++)
        if (zkl_mutex_new(a, path, &ms[i]) != 0)
            return 4;
    for (int i = 0; i < N; i++)
        if (zkl_mutex_is_held(ms[i]) != 0)
            return 5;
    for (int i = 0; i < N; i += 3)
        zkl_mutex_free(ms[(i * 7919) % N]); /* a scattered third */
    if (zkl_mutex_acquire(ms[N / 2 + 1], 5000) != 0 || zkl_mutex_release(ms[N / 2 + 1]) != 0)
        return 6;
    int gone = ((N / 3) * 7919) % N; /* i = N/3 * 3 is below N: freed */
    zkl_mutex_free(ms[gone]); /* the misuse: freed twice */
    return 0;                 /* not reached */
}

START_TEST(test_thousands_of_objects_are_each_checked)
{
    expect_abort("many-objects", "zkl: zkl_mutex_free: not an open lock object (freed twice?)");
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    if (argc == 5 && strcmp(argv[1], "--worker") == 0) {
        if (strcmp(argv[2], "free-acquiring") == 0)
            return worker_free_acquiring(argv[3], argv[4], false);
        if (strcmp(argv[2], "sem-free-acquiring") == 0)
            return worker_free_acquiring(argv[3], argv[4], true);
        if (strcmp(argv[2], "use-after-free") == 0)
            return worker_use_after_free(argv[3], argv[4]);
        if (strcmp(argv[2], "many-objects") == 0)
            return worker_many_objects(argv[3], argv[4]);
        return 1;
    }
    suite_pid = getpid();
    snprintf(harness_dir, sizeof harness_dir, "/tmp/zkl-validate-zk.%ld", (long)suite_pid);
    atexit(stop_big_server);
    Suite *s = suite_create("validate");
    TCase *tc = tu_tcase("paths", 120);
    tu_add_fixture(tc, "validate");
    tcase_add_test(tc, test_refused_paths_never_reach_the_server);
    tcase_add_test(tc, test_neighbouring_characters_are_accepted_and_work);
    tcase_add_test(tc, test_guarded_write_to_a_refused_path_sends_nothing);
    tcase_add_test(tc, test_missing_chroot_fails_the_open_and_names_it);
    suite_add_tcase(s, tc);
    tc = tu_tcase("limits", 180);
    tu_add_fixture(tc, "validate");
    tcase_add_test(tc, test_oversized_guarded_write_is_refused_before_sending);
    tcase_add_test(tc, test_the_limit_is_an_option);
    tcase_add_test(tc, test_a_larger_limit_lets_a_larger_write_through);
    suite_add_tcase(s, tc);
    tc = tu_tcase("errors", 60);
    tu_add_fixture(tc, "validate");
    tcase_add_test(tc, test_zookeeper_error_is_readable_after_ezk);
    suite_add_tcase(s, tc);
    tc = tu_tcase("misuse", 120);
    tu_add_fixture(tc, "validate");
    tcase_add_test(tc, test_free_while_another_thread_acquires_aborts_with_a_message);
    tcase_add_test(tc, test_acquire_through_a_freed_mutex_aborts_with_a_message);
    tcase_add_test(tc, test_thousands_of_objects_are_each_checked);
    tcase_add_test(tc, test_semaphore_free_while_another_thread_acquires_aborts);
    tcase_add_test(tc, test_semaphore_freed_with_leases_out_keeps_them);
    tcase_add_test(tc, test_objects_outlive_their_closed_client_safely);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
