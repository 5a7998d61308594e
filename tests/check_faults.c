/* Fault tests: real processes, a real ZooKeeper ensemble, invariants checked.
 *
 * Run by `make check-faults`, which starts a 3-node ensemble for the whole
 * suite (tests/with-zk.sh --nodes 3). Each test starts lock workers
 * (tests/faults/fault-worker, or Curator's tests/interop/CuratorWorker.java),
 * injects a fault — SIGSTOP/SIGKILL of a holder, SIGKILL of the leader,
 * SIGSTOP of the server a client talks to — and checks the merged history
 * with tests/history-check.py: no two holders overlap, tokens increase. Each
 * test prints one "faults: ..." line with what it did and saw. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fenced_store.h"
#include "testutil.h"
#include "zkl/zookeeper.h"


static zhandle_t *zk;
static char *root;
static char tmp[256];

static void setup(void)
{
    zk = tu_zk();
    root = tu_root("faults");
    snprintf(tmp, sizeof tmp, "%s/zkl-faults.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
    tu_rmr(zk, root);
    zookeeper_close(zk);
    free(root);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp);
}

/* Diagnostics: the children of `path` with their owners. */
static void dump_children(const char *path)
{
    struct String_vector kids = {0};
    if (zoo_get_children(zk, path, 0, &kids) != ZOK)
        return;
    for (int i = 0; i < kids.count; i++) {
        char full[1024];
        struct Stat st;
        snprintf(full, sizeof full, "%s/%s", path, kids.data[i]);
        if (zoo_exists(zk, full, 0, &st) == ZOK)
            fprintf(stderr, "  child %s owner %llx czxid %lld\n", kids.data[i],
                    (unsigned long long)st.ephemeralOwner, (long long)st.czxid);
    }
    deallocate_String_vector(&kids);
}

static char *lockpath(const char *leaf)
{
    char *p = malloc(strlen(root) + strlen(leaf) + 2);
    sprintf(p, "%s/%s", root, leaf);
    return p;
}

static char *tmpfile_path(const char *leaf)
{
    char *p = malloc(strlen(tmp) + strlen(leaf) + 2);
    sprintf(p, "%s/%s", tmp, leaf);
    return p;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- the ensemble --------------------------------------------------------- */

/* Run "$ZKL_HARNESS ARGS" (printf-style), capture its first output line. */
static int harness(char *out, size_t outlen, const char *fmt, ...)
{
    const char *h = getenv("ZKL_HARNESS"), *dir = getenv("ZKL_TEST_ZKDIR");
    ck_assert_msg(h && dir, "ZKL_HARNESS/ZKL_TEST_ZKDIR not set: run through make check-faults");
    char args[512], cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", h, args);
    /* %D in args stands for the harness directory. */
    char *d = strstr(cmd, "%D");
    if (d) {
        char rest[1024];
        snprintf(rest, sizeof rest, "%s", d + 2);
        snprintf(d, sizeof cmd - (size_t)(d - cmd), "'%s'%s", dir, rest);
    }
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char line[512] = "";
    if (fgets(line, sizeof line, p) == NULL)
        line[0] = '\0';
    char drain[512];
    while (fgets(drain, sizeof drain, p))
        ;
    int st = pclose(p);
    line[strcspn(line, "\n")] = '\0';
    if (out)
        snprintf(out, outlen, "%s", line);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

static int ensemble_nodes(void)
{
    const char *dir = getenv("ZKL_TEST_ZKDIR");
    ck_assert_msg(dir != NULL, "ZKL_TEST_ZKDIR not set: run through make check-faults");
    char p[512];
    snprintf(p, sizeof p, "%s/nodes", dir);
    return (int)tu_counter_read(p); /* 0 if missing */
}

static void need_three_nodes(void)
{
    ck_assert_msg(ensemble_nodes() == 3,
                  "this test needs a 3-node ensemble: run it with make check-faults "
                  "(tests/with-zk.sh --nodes 3)");
}

/* The current leader's index. Right after a pause or a kill, or with a
 * server slow to answer "srvr", there may be none for a moment: ask again
 * until one answers, within a bound. */
static int leader(void)
{
    char out[64];
    int64_t end = tu_now_ms() + tu_ms(30000);
    while (harness(out, sizeof out, "leader %%D") != 0) {
        ck_assert_msg(tu_now_ms() < end, "no leader in the ensemble for %d s", tu_ms(30000) / 1000);
        sleep_ms(100);
    }
    return atoi(out);
}

static void node_host(int i, char *out, size_t len)
{
    ck_assert_int_eq(harness(out, len, "host %%D %d", i), 0);
}

/* ---- processes ------------------------------------------------------------- */

#define MAXARG 40

static const char *worker_path(void)
{
    return ZKL_BUILDDIR "/tests/faults/fault-worker";
}

/* Start argv[0] with the rest; stdout to a pipe if out_fd. */
static pid_t spawn(const char *const argv[], int *out_fd)
{
    int fds[2] = {-1, -1};
    if (out_fd)
        ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (out_fd) {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (out_fd) {
        close(fds[1]);
        *out_fd = fds[0];
    }
    return pid;
}

/* Wait for pid up to tu_ms(timeout_ms); kill it if it is still there.
 * Returns the wait status, or -1 if it had to be killed. */
static int reap(pid_t pid, int timeout_ms)
{
    int64_t end = tu_now_ms() + tu_ms(timeout_ms);
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (tu_now_ms() >= end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        sleep_ms(20);
    }
}

static void append_line(const char *path, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, line, (size_t)n), n);
    close(fd);
}

/* Run the history checker over the logs; its summary goes to `summary`.
 * Returns its exit status. */
static int check_history(char *summary, size_t len, const char *logs)
{
    char cmd[2048];
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    snprintf(cmd, sizeof cmd, "%s '%s/tests/history-check.py' %s 2>&1", py, ZKL_SRCDIR, logs);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char line[1024];
    summary[0] = '\0';
    while (fgets(line, sizeof line, p)) {
        if (summary[0] == '\0') {
            size_t n = strlen(line) < len ? strlen(line) : len - 1;
            memcpy(summary, line, n);
            summary[n] = '\0';
        }
        fputs(line, stderr);
    }
    int st = pclose(p);
    summary[strcspn(summary, "\n")] = '\0';
    return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

struct children_want {
    const char *path;
    int n;
    zhandle_t *zh; /* NULL: the test's own handle */
};

/* Exactly n children, as read by a connected handle (an error is no answer). */
static bool children_are(void *arg)
{
    struct children_want *w = arg;
    struct String_vector kids = {0};
    int rc = zoo_get_children(w->zh ? w->zh : zk, w->path, 0, &kids);
    if (rc == ZNONODE)
        return w->n == 0;
    if (rc != ZOK)
        return false;
    int n = kids.count;
    deallocate_String_vector(&kids);
    return n == w->n;
}

/* zoo_get of `path` on the current session of `c`, its handle borrowed. */
static int get_on(zkl_client *c, const char *path, char *buf, int *len, struct Stat *st)
{
    zhandle_t *zh = NULL;
    int rc = zkl_client_handle_borrow(c, &zh);
    if (rc != 0)
        return rc;
    rc = zoo_get(zh, path, 0, buf, len, st);
    zkl_client_handle_return(c, zh);
    return rc;
}

/* ---- 1. a paused holder ---------------------------------------------------- */

START_TEST(test_paused_holder_learns_loss_and_its_writes_are_refused)
{
    char *p = lockpath("paused");
    char *data = lockpath("data");
    char *store = tmpfile_path("store"), *log = tmpfile_path("log");
    tu_mkdirs(zk, root);
    ck_assert_int_eq(zoo_create(zk, data, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    const char *argv[] = {(char *)worker_path(), "--mode", "pause-holder", "--servers",
                    (char *)tu_hosts(), "--path", p, "--log-file", log, "--fence-file", store,
                    "--data-node", data, "--session-ms", "2000", NULL};
    int out;
    pid_t a = spawn(argv, &out);
    FILE *af = fdopen(out, "r");
    char line[512];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, af));
    long long a_token = 0;
    ck_assert_int_eq(sscanf(line, "HELD %lld", &a_token), 1);
    /* Let A work a little, then stop it mid-work. */
    char *writes = store;
    int64_t end = tu_now_ms() + tu_ms(10000);
    while (fenced_store_fence(writes) == 0 && tu_now_ms() < end)
        sleep_ms(5);
    sleep_ms(100);
    ck_assert_int_eq(kill(a, SIGSTOP), 0);
    int64_t stopped = tu_now_ms();

    /* B takes the lock once A's session expired on the server. */
    zkl_client *b = tu_client(10000);
    zkl_mutex *mb;
    ck_assert_int_eq(zkl_mutex_new(b, p, &mb), 0);
    ck_assert_int_eq(zkl_mutex_acquire(mb, tu_ms(20000)), 0);
    int64_t b_token = tu_mutex_token(mb);
    ck_assert_int_gt(b_token, a_token);
    append_line(log, "ACQ mutex B/1 %lld %lld\n", (long long)tu_realtime_ns(), (long long)b_token);
    ck_assert_int_eq(fenced_store_write(store, b_token, "B", "B-1"), 0);
    ck_assert_int_eq(zkl_mutex_guarded_set(mb, data, "B-1", 3), 0);
    struct Stat b1;
    char buf[16];
    int len = sizeof buf - 1;
    ck_assert_int_eq(get_on(b, data, buf, &len, &b1), ZOK);

    /* A wakes up, believing it holds. */
    ck_assert_int_eq(kill(a, SIGCONT), 0);
    int64_t paused_ms = tu_now_ms() - stopped;
    char done[512] = "";
    while (fgets(line, sizeof line, af))
        if (strncmp(line, "DONE", 4) == 0)
            snprintf(done, sizeof done, "%s", line);
    fclose(af);
    int st = reap(a, 30000);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "A failed: %d", st);
    int rel = 0, lostcb = 0, stale = 0, gok = -1, fok = -1;
    char states[256] = "";
    ck_assert_msg(sscanf(done, "DONE release=%d lostcb=%d states=%255s stale=%d "
                               "guarded_ok_after_gap=%d fenced_ok_after_gap=%d",
                         &rel, &lostcb, states, &stale, &gok, &fok) == 6,
                  "A said: %s", done);
    ck_assert_int_eq(rel, ZKL_ELOST);        /* release: the hold was lost */
    ck_assert_int_eq(lostcb, 1);             /* the per-lock callback fired once */
    ck_assert_msg(strstr(states, "lost") != NULL, "A's states: %s", states);
    ck_assert_int_ge(stale, 1);              /* the store refused A's token */
    ck_assert_int_eq(fok, 0);                /* ... every time after the pause */
    ck_assert_int_eq(gok, 0);                /* no guarded write of A got through */
    /* ... and the data node is exactly as B left it: nothing of A's landed. */
    struct Stat now;
    len = sizeof buf - 1;
    ck_assert_int_eq(get_on(b, data, buf, &len, &now), ZOK);
    buf[len] = '\0';
    ck_assert_str_eq(buf, "B-1");
    ck_assert_int_eq(now.version, b1.version);
    ck_assert_int_eq(now.mzxid, b1.mzxid);

    /* B writes again and releases: its data is what stays. */
    ck_assert_int_eq(fenced_store_write(store, b_token, "B", "B-2"), 0);
    ck_assert_int_eq(zkl_mutex_guarded_set(mb, data, "B-2", 3), 0);
    append_line(log, "REL mutex B/1 %lld %lld\n", (long long)tu_realtime_ns(), (long long)b_token);
    ck_assert_int_eq(zkl_mutex_release(mb), 0);
    len = sizeof buf - 1;
    ck_assert_int_eq(get_on(b, data, buf, &len, NULL), ZOK);
    buf[len] = '\0';
    ck_assert_str_eq(buf, "B-2");
    /* The store's journal: after B's first line, no line of a lower token. */
    FILE *sf = fopen(store, "r");
    ck_assert_ptr_nonnull(sf);
    int seen_b = 0, a_lines = 0, late = 0;
    while (fgets(line, sizeof line, sf)) {
        long long t;
        char who[32];
        if (sscanf(line, "%lld %31s", &t, who) != 2)
            continue; /* the header */
        if (strcmp(who, "B") == 0)
            seen_b = 1;
        else
            a_lines++;
        if (seen_b && t < b_token)
            late++;
    }
    fclose(sf);
    ck_assert_int_eq(late, 0);
    ck_assert_int_gt(a_lines, 0);
    ck_assert_int_eq(fenced_store_fence(store), b_token);
    /* What A's guarded writes after the pause were told. */
    int g_lost = 0, g_conn = 0, g_other = 0;
    FILE *lf = fopen(log, "r");
    ck_assert_ptr_nonnull(lf);
    while (fgets(line, sizeof line, lf)) {
        int rcw, after;
        long long ns, t;
        if (sscanf(line, "WRITE guarded %d %lld %lld %d", &rcw, &ns, &t, &after) == 4 && after) {
            if (rcw == ZKL_ELOST)
                g_lost++;
            else if (rcw == ZKL_ECONNLOSS)
                g_conn++;
            else
                g_other++;
        }
    }
    fclose(lf);
    ck_assert_int_ge(g_lost, 1);
    ck_assert_int_eq(g_other, 0);
    /* A's ACQ..LOST overlaps B in wall time (that is the point: A could not
     * know), so the history check runs on B's line and the writes above. */
    fprintf(stderr, "faults: pause: A held token %lld, stopped %lld ms, B got token %lld; "
                    "A: release %s, lost callback %d, states %s, %d stale writes refused, "
                    "guarded writes after the pause: %d ELOST, %d ECONNLOSS, none applied; "
                    "0 violations\n",
            a_token, (long long)paused_ms, (long long)b_token, zkl_err_name(rel), lostcb, states,
            stale, g_lost, g_conn);
    struct children_want w = {p, 0};
    ck_assert(tu_wait_until(children_are, &w, 10000));
    zkl_mutex_free(mb);
    zkl_client_close(b);
    free(store);
    free(log);
    free(data);
    free(p);
}
END_TEST

/* ---- 2. holders killed at random ------------------------------------------ */

START_TEST(test_killed_holders_never_overlap_and_leave_no_node)
{
    enum { WORKERS = 4, RUN_MS = 16000 };
    /* The workers' sessions are 4 s: short, so that a killed one's node goes
     * soon, yet a live holder's loss rule (1.8 s without an answer) outlasts
     * a stall of a loaded machine; a session lost by itself mid-hold would
     * show as an overlap, or end its worker at a refused fenced write. */
    char *p = lockpath("killed");
    char *log = tmpfile_path("log"), *counter = tmpfile_path("counter"),
         *store = tmpfile_path("store"), *stop = tmpfile_path("stop");
    const char *argv[] = {(char *)worker_path(), "--servers", (char *)tu_hosts(), "--path", p,
                    "--log-file", log, "--counter-file", counter, "--fence-file", store,
                    "--stop-file", stop, "--hold-ms", "3", "--session-ms", "4000", NULL};
    pid_t w[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        w[i] = spawn(argv, NULL);
    unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL);
    int kills = 0, respawns = 0;
    int64_t end = tu_now_ms() + RUN_MS;
    while (tu_now_ms() < end) {
        sleep_ms(300 + rand_r(&seed) % 1200);
        int i = (int)(rand_r(&seed) % WORKERS);
        int st;
        if (waitpid(w[i], &st, WNOHANG) == w[i])
            ck_abort_msg("worker %d ended by itself: %d", (int)w[i], st);
        kill(w[i], SIGKILL);
        waitpid(w[i], &st, 0);
        append_line(log, "KILL - %ld %lld\n", (long)w[i], (long long)tu_realtime_ns());
        kills++;
        w[i] = spawn(argv, NULL);
        respawns++;
    }
    append_line(stop, "stop\n");
    for (int i = 0; i < WORKERS; i++) {
        int st = reap(w[i], 60000);
        ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %d: %d",
                      (int)w[i], st);
    }
    char summary[256];
    int rc = check_history(summary, sizeof summary, log);
    ck_assert_msg(rc == 0, "history: %s", summary);
    int acq = tu_file_lines(log, "ACQ"), rel = tu_file_lines(log, "REL");
    long cnt = tu_counter_read(counter);
    /* A killed holder may die before or after its increment. */
    ck_assert_int_ge(cnt, rel);
    ck_assert_int_le(cnt, acq);
    ck_assert_int_gt(rel, 10); /* the lock kept being granted */
    /* Once the killed sessions expired, nothing is left. */
    struct children_want cw = {p, 0};
    ck_assert(tu_wait_until(children_are, &cw, 15000));
    fprintf(stderr, "faults: kill: %d workers, %d SIGKILLs (+%d respawns) in %d s, "
                    "%d acquisitions, %d releases, counter %ld; %s; no node left\n",
            WORKERS, kills, respawns, RUN_MS / 1000, acq, rel, cnt, summary);
    free(log);
    free(counter);
    free(store);
    free(stop);
    free(p);
}
END_TEST

/* ---- 3. the leader dies under load ----------------------------------------- */

START_TEST(test_leader_failover_keeps_mutual_exclusion)
{
    need_three_nodes();
    enum { LOCKS = 2, PER_LOCK = 3 };
    char *path[LOCKS], *log[LOCKS], *counter[LOCKS];
    char *stop = tmpfile_path("stop");
    pid_t w[LOCKS][PER_LOCK];
    for (int l = 0; l < LOCKS; l++) {
        char leaf[32];
        snprintf(leaf, sizeof leaf, "lock%d", l);
        path[l] = lockpath(leaf);
        snprintf(leaf, sizeof leaf, "log%d", l);
        log[l] = tmpfile_path(leaf);
        snprintf(leaf, sizeof leaf, "counter%d", l);
        counter[l] = tmpfile_path(leaf);
        const char *argv[] = {(char *)worker_path(), "--servers", (char *)tu_hosts(), "--path",
                        path[l], "--log-file", log[l], "--counter-file", counter[l],
                        "--stop-file", stop, "--hold-ms", "2", "--session-ms", "8000",
                        "--acquire-timeout-ms", "60000", NULL};
        for (int i = 0; i < PER_LOCK; i++)
            w[l][i] = spawn(argv, NULL);
    }
    /* Work goes on, then the leader dies. */
    int64_t end = tu_now_ms() + tu_ms(30000);
    while ((tu_file_lines(log[0], "REL") < 20 || tu_file_lines(log[1], "REL") < 20) &&
           tu_now_ms() < end)
        sleep_ms(50);
    ck_assert_int_ge(tu_file_lines(log[0], "ACQ"), 20);
    int old = leader();
    /* Counted and timed right before the kill (finding the leader takes a
     * while, and work goes on meanwhile). */
    int before[LOCKS] = {tu_file_lines(log[0], "ACQ"), tu_file_lines(log[1], "ACQ")};
    int64_t killed_at = tu_now_ms();
    ck_assert_int_eq(harness(NULL, 0, "kill-node %%D %d", old), 0);
    /* After the election, both locks are granted again. */
    end = tu_now_ms() + tu_ms(45000);
    while ((tu_file_lines(log[0], "REL") < before[0] + 20 ||
            tu_file_lines(log[1], "REL") < before[1] + 20) &&
           tu_now_ms() < end)
        sleep_ms(50);
    int64_t resumed_ms = tu_now_ms() - killed_at;
    int after[LOCKS] = {tu_file_lines(log[0], "ACQ") - before[0],
                        tu_file_lines(log[1], "ACQ") - before[1]};
    int now_leader = leader();
    /* Bring the node back for the tests after this one. */
    ck_assert_int_eq(harness(NULL, 0, "start-node %%D %d", old), 0);
    ck_assert_int_eq(harness(NULL, 0, "wait-ready %%D 60"), 0);
    append_line(stop, "stop\n");
    for (int l = 0; l < LOCKS; l++)
        for (int i = 0; i < PER_LOCK; i++) {
            int st = reap(w[l][i], 60000);
            ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %d: %d",
                          (int)w[l][i], st);
        }
    ck_assert_int_ge(after[0], 20);
    ck_assert_int_ge(after[1], 20);
    ck_assert_int_ne(now_leader, old);
    int total = 0;
    for (int l = 0; l < LOCKS; l++) {
        char summary[256];
        int rc = check_history(summary, sizeof summary, log[l]);
        ck_assert_msg(rc == 0, "lock %d: %s", l, summary);
        int rel = tu_file_lines(log[l], "REL");
        ck_assert_int_eq(tu_counter_read(counter[l]), rel); /* exact: nobody was killed */
        struct children_want cw = {path[l], 0};
        ck_assert(tu_wait_until(children_are, &cw, 15000));
        total += tu_file_lines(log[l], "ACQ");
        fprintf(stderr, "faults: failover lock %d: %s; counter %ld exact\n", l, summary,
                tu_counter_read(counter[l]));
    }
    fprintf(stderr, "faults: failover: %d workers on %d locks, leader %d SIGKILLed, new leader %d, "
                    "%d+%d acquisitions after the kill (20 each within %lld ms), "
                    "%d acquisitions in all, 0 violations, no node left\n",
            LOCKS * PER_LOCK, LOCKS, old, now_leader, after[0], after[1], (long long)resumed_ms,
            total);
    for (int l = 0; l < LOCKS; l++) {
        free(path[l]);
        free(log[l]);
        free(counter[l]);
    }
    free(stop);
}
END_TEST

/* ---- 4. a connection drop without expiry ----------------------------------- */

/* A waiter that notes the node and token it held by, and releases. */
struct waiter {
    zkl_mutex *m;
    int rc;
    char node[512];
    int64_t token;
    int release_rc;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->rc = zkl_mutex_acquire(w->m, 60000);
    if (w->rc == 0) {
        snprintf(w->node, sizeof w->node, "%s", zkl_mutex_node(w->m));
        w->token = tu_mutex_token(w->m);
        w->release_rc = zkl_mutex_release(w->m);
    }
    return NULL;
}

/* The index of the node `c` is connected to, or 0. The handle borrowed:
 * the client may replace it at any moment while servers come and go. */
static int server_of(zkl_client *c)
{
    zhandle_t *zh = NULL;
    if (zkl_client_handle_borrow(c, &zh) != 0)
        return 0;
    const char *cur = zoo_get_current_server(zh);
    int r = 0;
    for (int i = 1; cur && i <= 3 && r == 0; i++) {
        char h[64];
        node_host(i, h, sizeof h);
        if (strcmp(h, cur) == 0)
            r = i;
    }
    zkl_client_handle_return(c, zh);
    return r;
}

/* A round trip, so the session was touched just now. */
static void touch(zkl_client *c)
{
    ck_assert_int_eq(tu_round_trip(c), ZOK);
}

static char *other_child(zhandle_t *zh, const char *path, const char *not_this)
{
    struct String_vector kids = {0};
    char *r = NULL;
    if (zoo_get_children(zh, path, 0, &kids) == ZOK) {
        for (int i = 0; i < kids.count; i++)
            if (!not_this || strcmp(kids.data[i], not_this) != 0)
                r = strdup(kids.data[i]);
        deallocate_String_vector(&kids);
    }
    return r;
}

START_TEST(test_connection_drop_keeps_the_hold_and_the_waiters_place)
{
    need_three_nodes();
    int lead = leader();
    int f1 = lead == 1 ? 2 : 1, f2 = 6 - lead - f1;
    char h1[64], h2[64], hosts[160];
    node_host(f1, h1, sizeof h1);
    node_host(f2, h2, sizeof h2);
    snprintf(hosts, sizeof hosts, "%s,%s", h1, h2);
    char lhost[64];
    node_host(lead, lhost, sizeof lhost);
    /* Checks go through the leader: it serves the latest committed state,
     * never a lagging or stalled follower's. */
    zhandle_t *zl = tu_zk_to(lhost);
    char *p = lockpath("drop");
    char *data = lockpath("data");
    tu_mkdirs(zk, root);
    ck_assert_int_eq(zoo_create(zk, data, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkl_client *h, *wc;
    /* 20 s: the move to the other follower must come within the loss
     * rule's 9 s, not 3.6 s, on a loaded machine too. */
    ck_assert_int_eq(zkl_client_open(hosts, 20000, &h), 0);
    ck_assert_int_eq(zkl_client_open(hosts, 20000, &wc), 0);
    struct tu_states hs = TU_STATES_INIT, ws = TU_STATES_INIT;
    struct tu_state_wait h_back = {&hs, ZKL_STATE_SUSPENDED, ZKL_STATE_RECONNECTED},
                         w_back = {&ws, ZKL_STATE_SUSPENDED, ZKL_STATE_RECONNECTED};
    ck_assert_int_eq(zkl_client_add_listener(h, tu_states_record, &hs), 0);
    ck_assert_int_eq(zkl_client_add_listener(wc, tu_states_record, &ws), 0);
    zkl_mutex *mh, *mw;
    ck_assert_int_eq(zkl_mutex_new(h, p, &mh), 0);
    ck_assert_int_eq(zkl_mutex_new(wc, p, &mw), 0);
    ck_assert_int_eq(zkl_mutex_acquire(mh, tu_ms(10000)), 0);
    int64_t tok = tu_mutex_token(mh);
    char hnode[512];
    snprintf(hnode, sizeof hnode, "%s", zkl_mutex_node(mh));
    int64_t hsid = tu_client_session_id(h), wsid = tu_client_session_id(wc);
    struct waiter w = {.m = mw};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    struct children_want two = {p, 2, zl}, none = {p, 0, zl};
    ck_assert(tu_wait_until(children_are, &two, 10000));
    char *wnode = other_child(zl, p, strrchr(hnode, '/') + 1);
    ck_assert_ptr_nonnull(wnode);

    int srv = server_of(h);
    ck_assert_msg(srv == f1 || srv == f2, "holder on node %d", srv);
    int wsrv = server_of(wc);
    touch(h);
    touch(wc);
    /* The server goes away with its connections (a crash, a restart): the
     * client sees it at once and moves to the other follower, well within
     * the loss rule's bound (9/20 of the session timeout after its last
     * answered request), so nothing is presumed lost. (A server that stalls
     * without closing its connections is the loss rule's case: see the
     * stall test below.) */
    ck_assert_int_eq(harness(NULL, 0, "kill-node %%D %d", srv), 0);
    int64_t paused_at = tu_now_ms();
    bool ok = tu_wait_until(tu_states_saw, &h_back, 20000);
    int64_t took = tu_now_ms() - paused_at;
    ck_assert_int_eq(harness(NULL, 0, "start-node %%D %d", srv), 0);
    ck_assert_msg(ok, "the holder did not reconnect");
    if (wsrv == srv)
        ck_assert(tu_wait_until(tu_states_saw, &w_back, 20000));

    /* Same session, same hold, same place in the queue. */
    ck_assert_int_eq(tu_client_session_id(h), hsid);
    ck_assert_int_eq(tu_client_session_id(wc), wsid);
    ck_assert_int_lt(tu_states_at(&hs, ZKL_STATE_LOST, 0), 0);
    ck_assert_int_eq(zkl_mutex_is_held(mh), 1);
    ck_assert_int_eq(tu_mutex_token(mh), tok);
    ck_assert_str_eq(zkl_mutex_node(mh), hnode);
    ck_assert_int_eq(zkl_mutex_guarded_set(mh, data, "H", 1), 0);
    ck_assert_int_eq(tu_children(zl, p), 2);
    char *still = other_child(zl, p, strrchr(hnode, '/') + 1);
    ck_assert_ptr_nonnull(still);
    ck_assert_str_eq(still, wnode);
    ck_assert_int_eq(zkl_mutex_release(mh), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.rc, 0);
    ck_assert_str_eq(strrchr(w.node, '/') + 1, wnode); /* it got the lock on its old node */
    ck_assert_int_gt(w.token, tok);
    ck_assert_int_eq(w.release_rc, 0);
    ck_assert(tu_wait_until(children_are, &none, 10000));
    fprintf(stderr, "faults: drop: node %d (follower) killed, holder back as reconnected in "
                    "%lld ms with the same session, node and token; waiter on node %d kept "
                    "%s and then got the lock; 0 violations\n",
            srv, (long long)took, wsrv, wnode);
    free(still);
    free(wnode);
    zkl_mutex_free(mh);
    zkl_mutex_free(mw);
    zkl_client_close(h);
    zkl_client_close(wc);
    zookeeper_close(zl);
    free(data);
    free(p);
}
END_TEST

/* ---- 5. a stalled server ---------------------------------------------------- */

START_TEST(test_stalled_server_presumes_the_session_lost_and_leaves_no_orphan)
{
    need_three_nodes();
    int lead = leader();
    int f = lead == 1 ? 2 : 1;
    char host[64], lhost[64];
    node_host(f, host, sizeof host);
    node_host(lead, lhost, sizeof lhost);
    zhandle_t *zl = tu_zk_to(lhost);
    char *p = lockpath("stalled");
    /* The client talks to one follower only, so it cannot escape the stall.
     * A stalled server closes no connection: the client cannot tell a slow
     * server from a partition, and the leader may expire the session T/2
     * after the last touch the follower passed on. By the loss rule the
     * client gives the session up 9/20 of its timeout (6 s: 2.7 s) after
     * its last answered request, before libzookeeper_mt would even drop the
     * connection (2/3 of it). A create the follower applies once resumed
     * belongs to the given-up session and goes when that one expires. */
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open(host, 6000, &c), 0);
    struct tu_states s = TU_STATES_INIT;
    struct tu_state_wait lost_w = {&s, -1, ZKL_STATE_LOST}, susp_w = {&s, -1, ZKL_STATE_SUSPENDED};
    ck_assert_int_eq(zkl_client_add_listener(c, tu_states_record, &s), 0);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    int64_t sid = tu_client_session_id(c);

    /* (a) A generous deadline: the waiting acquire hears that its session
     * is presumed lost (ZKL_ELOST, as for an expiry), long before it. */
    touch(c);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(harness(NULL, 0, "pause-node %%D %d", f), 0);
    zkl_lock *l;
    ck_assert_int_eq(zkl_mutex_as_lock(m, &l), 0);
    struct tu_acquirer w;
    tu_acquirer_start(&w, l, 30000, true);
    tu_acquirer_join(&w);
    int64_t lost_after = tu_now_ms() - t0;
    bool lost = tu_wait_until(tu_states_saw, &lost_w, 10000);
    ck_assert_int_eq(harness(NULL, 0, "resume-node %%D %d", f), 0);
    ck_assert_msg(w.rc == ZKL_ELOST, "acquire: %s", zkl_err_name(w.rc));
    ck_assert_msg(lost, "the client did not presume its session lost");
    /* 9/20 of 6 s after the touch, with room for a loaded machine, and in
     * any case before the 30 s deadline */
    ck_assert_int_lt(lost_after, tu_ms(10000));
    /* Nothing is left once the given-up session is gone on the server. */
    struct children_want none = {p, 0, zl}, one = {p, 1, zl};
    if (!tu_wait_until(children_are, &none, 20000)) {
        dump_children(p);
        ck_abort_msg("a node was left behind");
    }
    /* The client goes on with a new session, and the lock works. */
    ck_assert_int_eq(zkl_mutex_acquire(m, tu_ms(15000)), 0);
    ck_assert(tu_client_session_id(c) != sid);
    ck_assert(tu_wait_until(children_are, &one, 10000));
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert(tu_wait_until(children_are, &none, 10000));

    /* (b) A short deadline ends the call on time, before the loss rule. */
    pthread_mutex_lock(&s.mu);
    s.n = 0;
    pthread_mutex_unlock(&s.mu);
    sid = tu_client_session_id(c);
    touch(c);
    ck_assert_int_eq(harness(NULL, 0, "pause-node %%D %d", f), 0);
    struct tu_acquirer w2;
    tu_acquirer_start(&w2, l, 1500, true);
    tu_acquirer_join(&w2);
    bool susp = tu_wait_until(tu_states_saw, &susp_w, 15000);
    ck_assert_int_eq(harness(NULL, 0, "resume-node %%D %d", f), 0);
    ck_assert_msg(susp, "the client never noticed the stall");
    ck_assert_msg(w2.rc == ZKL_ETIMEDOUT || w2.rc == ZKL_ELOST, "acquire: %s",
                  zkl_err_name(w2.rc));
    ck_assert_int_lt(w2.took_ms, 1500 + tu_ms(2000));
    ck_assert(tu_wait_until(children_are, &none, 20000));
    ck_assert_int_eq(zkl_mutex_acquire(m, tu_ms(15000)), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert(tu_wait_until(children_are, &none, 10000));
    fprintf(stderr, "faults: stall: follower %d paused twice; a waiting acquire (30 s) heard "
                    "ELOST after %lld ms (loss rule: 2.7 s after the last answer), one of 1.5 s "
                    "ended %s after %lld ms; no orphan node; the lock works on a new session\n",
            f, (long long)lost_after, zkl_err_name(w2.rc), (long long)w2.took_ms);
    zkl_lock_free(l);
    zkl_mutex_free(m);
    zkl_client_close(c);
    zookeeper_close(zl);
    free(p);
}
END_TEST

/* ---- 6. Curator and zkl on one lock ----------------------------------------- */

START_TEST(test_curator_and_zkl_processes_exclude_each_other)
{
    enum { ITER = 25 };
    char *p = lockpath("interop");
    char *log = tmpfile_path("log"), *counter = tmpfile_path("counter");
    char iters[16];
    snprintf(iters, sizeof iters, "%d", ITER);
    char script[512];
    snprintf(script, sizeof script, "%s/tests/interop/run-curator-worker.sh", ZKL_SRCDIR);
    const char *cargv[] = {"/bin/sh", script, "--servers", (char *)tu_hosts(), "--path", p, "--mode",
                     "mutex", "--iterations", iters, "--counter-file", counter, "--log-file", log,
                     "--hold-ms", "2", NULL};
    const char *zargv[] = {(char *)worker_path(), "--servers", (char *)tu_hosts(), "--path", p,
                     "--log-file", log, "--counter-file", counter, "--iterations", iters,
                     "--hold-ms", "2", "--session-ms", "10000", NULL};
    pid_t pids[4];
    pids[0] = spawn(cargv, NULL);
    pids[1] = spawn(cargv, NULL);
    pids[2] = spawn(zargv, NULL);
    pids[3] = spawn(zargv, NULL);
    for (int i = 0; i < 4; i++) {
        int st = reap(pids[i], 150000);
        ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s worker %d: %d",
                      i < 2 ? "Curator" : "zkl", i, st);
    }
    char summary[256];
    int rc = check_history(summary, sizeof summary, log);
    ck_assert_msg(rc == 0, "history: %s", summary);
    ck_assert_int_eq(tu_file_lines(log, "ACQ"), 4 * ITER);
    ck_assert_int_eq(tu_counter_read(counter), 4 * ITER);
    struct children_want none = {p, 0};
    ck_assert(tu_wait_until(children_are, &none, 10000));
    fprintf(stderr, "faults: curator: 2 Curator 5.4 + 2 zkl processes x %d on one path; "
                    "counter %ld exact; %s\n",
            ITER, tu_counter_read(counter), summary);
    free(log);
    free(counter);
    free(p);
}
END_TEST

/* ---- the checker itself ------------------------------------------------------ */

START_TEST(test_history_checker_catches_overlap_and_token_regression)
{
    char *log = tmpfile_path("bad");
    append_line(log, "ACQ mutex 1/1 100 10\nREL mutex 1/1 200 10\n");
    append_line(log, "ACQ mutex 2/1 150 11\nREL mutex 2/1 250 11\n"); /* overlaps 1 */
    append_line(log, "ACQ mutex 3/1 300 9\nREL mutex 3/1 400 9\n");   /* token down */
    char summary[256];
    ck_assert_int_eq(check_history(summary, sizeof summary, log), 1);
    ck_assert_msg(strstr(summary, "2 violations") != NULL, "%s", summary);
    char *good = tmpfile_path("good");
    append_line(good, "ACQ mutex 1/1 100 10\nKILL - 1 200\nACQ read 2/1 300 11\n"
                      "ACQ read 3/1 310 -\nREL read 2/1 400 11\nREL read 3/1 400 -\n");
    ck_assert_int_eq(check_history(summary, sizeof summary, good), 0);
    free(good);
    free(log);
}
END_TEST

int main(void)
{
    const TTest *all[] = {
        test_history_checker_catches_overlap_and_token_regression,
        test_paused_holder_learns_loss_and_its_writes_are_refused,
        test_killed_holders_never_overlap_and_leave_no_node,
        test_connection_drop_keeps_the_hold_and_the_waiters_place,
        test_stalled_server_presumes_the_session_lost_and_leaves_no_orphan,
        test_leader_failover_keeps_mutual_exclusion,
        test_curator_and_zkl_processes_exclude_each_other,
        NULL,
    };
    /* ZKL_FAULTS_ONLY=word runs only the tests whose name contains it. */
    const char *only = getenv("ZKL_FAULTS_ONLY");
    const TTest *tests[sizeof all / sizeof *all];
    size_t n = 0;
    for (size_t i = 0; all[i] != NULL; i++)
        if (only == NULL || strstr(all[i]->name, only) != NULL)
            tests[n++] = all[i];
    tests[n] = NULL;
    return tu_run_case("faults", 240, setup, teardown, tests);
}
