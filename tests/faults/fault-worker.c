/* A lock worker for the fault tests: one process, one zkl client, one mutex.
 *
 *   fault-worker --servers S --path P --log-file L
 *                [--mode loop|pause-holder] [--iterations N] [--stop-file F]
 *                [--counter-file F] [--fence-file F] [--data-node PATH]
 *                [--hold-ms MS] [--session-ms MS] [--acquire-timeout-ms MS]
 *
 * loop (default): N times (0: until the stop file exists) acquire, append
 *   "ACQ mutex <pid>/1 <realtime ns> <token>" to the log, read-modify-write
 *   the counter file (a decimal number, as tests/interop/CuratorWorker.java
 *   does, but replaced by rename so a kill never leaves it half written),
 *   write the token to the fenced store, sleep hold-ms, append "REL ..." and
 *   release. An acquire that fails with ZKL_ELOST (the session ended while
 *   waiting) is tried again; so is, with a stop file, a release that finds
 *   the hold lost (after a "LOST release" line: the logged interval is still
 *   checked). Any other failure, a refused fenced write, or a lost release
 *   without a stop file ends the worker with status 1 after a
 *   "FAIL <what> <code>" line on stderr.
 *
 * pause-holder: acquire once, print "HELD <token>" on stdout, then work in a
 *   loop: fenced write, guarded write of the data node ("A <i>"), each result
 *   logged as "WRITE <fenced|guarded> <rc> <realtime ns> <token> <after-gap>",
 *   until zkl_mutex_is_held() says 0. A gap of more than a second between two
 *   rounds (the process was stopped) marks later writes "after-gap 1". Then
 *   one more fenced and guarded write with the old token, and the release;
 *   prints "DONE release=<rc> lostcb=<n> states=<list> stale=<n>
 *   guarded_ok_after_gap=<n> fenced_ok_after_gap=<n>" and exits 0.
 *
 * Every log line is written with one write(2) to a file opened O_APPEND, so
 * lines of concurrent processes never interleave. Times are CLOCK_REALTIME,
 * comparable between processes of one machine. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fenced_store.h"
#include "zkl.h"
#include "zkl/zookeeper.h"

struct opts {
    const char *servers, *path, *log, *mode, *stop, *counter, *fence, *data;
    long iterations, hold_ms, session_ms, acquire_ms;
};


/* The public calls give these values through an out parameter; this
 * worker logs the value, or the negative code, as one number. */
static int64_t value_of_mutex_token(zkl_mutex *o)
{
    int64_t v = 0;
    int rc = zkl_mutex_token(o, &v);
    return rc != 0 ? rc : v;
}

static int log_fd = -1;

/* libzookeeper_mt 3.8.0 does not free the bookkeeping of a synchronous
 * multi-op (zoo_multi, under zkl_mutex_guarded_set) that fails because the
 * connection dropped, as it does here for a holder that wakes up after its
 * session ended. Not ours to free: for builds with LeakSanitizer. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:zoo_amulti\n";
}

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void logf_line(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof line && write(log_fd, line, (size_t)n) != n)
        _exit(3);
}

static void die(const char *what, int code)
{
    fprintf(stderr, "FAIL %s %d (%s)\n", what, code, code < 0 ? zkl_err_name(code) : "-");
    exit(1);
}

/* counter: read, +1, write to a temporary, rename over. */
static void bump_counter(const char *path, long hold_ms)
{
    long v = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    if (hold_ms > 0)
        usleep((useconds_t)hold_ms * 1000); /* widen the window a second holder would hit */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%ld\n", v + 1) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
        die("counter-write", -errno);
}

/* ---- pause-holder --------------------------------------------------------- */

static char states[256];
static int lost_calls;
static int lost_states; /* ZKL_STATE_LOST seen by on_state */

static void on_state(zkl_client *c, enum zkl_state st, void *arg)
{
    (void)c, (void)arg;
    static const char *names[] = {"connecting", "connected", "suspended", "reconnected", "lost",
                                  "closed"};
    size_t len = strlen(states);
    if (st >= 0 && st <= 5 && len + 16 < sizeof states)
        snprintf(states + len, sizeof states - len, "%s%s", len ? "," : "", names[st]);
    if (st == ZKL_STATE_LOST)
        __atomic_add_fetch(&lost_states, 1, __ATOMIC_SEQ_CST);
}

static void on_lost(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m, (void)token, (void)arg;
    __atomic_add_fetch(&lost_calls, 1, __ATOMIC_SEQ_CST);
}

static int pause_holder(const struct opts *o, zkl_client *c, zkl_mutex *m)
{
    zkl_client_add_listener(c, on_state, NULL);
    zkl_mutex_set_lost_fn(m, on_lost, NULL);
    int rc = zkl_mutex_acquire(m, o->acquire_ms);
    if (rc != 0)
        die("acquire", rc);
    int64_t token = value_of_mutex_token(m);
    logf_line("ACQ mutex %ld/1 %" PRId64 " %" PRId64 "\n", (long)getpid(), realtime_ns(), token);
    printf("HELD %" PRId64 "\n", token);
    fflush(stdout);
    int stale = 0, guarded_ok_after = 0, fenced_ok_after = 0, after = 0;
    int64_t last = mono_ms(), give_up = 0;
    for (int i = 0;; i++) {
        int64_t now = mono_ms();
        if (now - last > 1000)
            after = 1; /* we were stopped in between */
        last = now;
        char data[64];
        snprintf(data, sizeof data, "A-%d", i);
        int f = fenced_store_write(o->fence, token, "A", data);
        logf_line("WRITE fenced %d %" PRId64 " %" PRId64 " %d\n", f, realtime_ns(), token, after);
        stale += f == FENCED_STALE;
        fenced_ok_after += after && f == 0;
        int g = zkl_mutex_guarded_set(m, o->data, data, (int)strlen(data));
        logf_line("WRITE guarded %d %" PRId64 " %" PRId64 " %d\n", g, realtime_ns(), token, after);
        guarded_ok_after += after && g == 0;
        if (!zkl_mutex_is_held(m))
            break;
        if (after && give_up == 0)
            give_up = now + 30000;
        if (give_up && now > give_up)
            die("still-held-after-resume", 0);
        usleep(20000);
    }
    /* The hold is known lost: a last try with the old token must fail too. */
    int f = fenced_store_write(o->fence, token, "A", "A-late");
    logf_line("WRITE fenced %d %" PRId64 " %" PRId64 " %d\n", f, realtime_ns(), token, 1);
    stale += f == FENCED_STALE;
    fenced_ok_after += f == 0;
    int g = zkl_mutex_guarded_set(m, o->data, "A-late", 6);
    logf_line("WRITE guarded %d %" PRId64 " %" PRId64 " %d\n", g, realtime_ns(), token, 1);
    guarded_ok_after += g == 0;
    int rel = zkl_mutex_release(m);
    logf_line("LOST mutex %ld/1 %" PRId64 " %" PRId64 "\n", (long)getpid(), realtime_ns(), token);
    /* The lost callback runs on the keeper: give it a moment to be counted. */
    for (int i = 0; i < 500 && __atomic_load_n(&lost_calls, __ATOMIC_SEQ_CST) == 0; i++)
        usleep(10000);
    /* The hold may be known lost before the session is: the server deletes
     * the node of an expired session, and its watch event can reach us
     * ahead of the client's verdict on the session. Wait for that too. */
    for (int i = 0; i < 1500 && __atomic_load_n(&lost_states, __ATOMIC_SEQ_CST) == 0; i++)
        usleep(10000);
    printf("DONE release=%d lostcb=%d states=%s stale=%d guarded_ok_after_gap=%d "
           "fenced_ok_after_gap=%d\n",
           rel, __atomic_load_n(&lost_calls, __ATOMIC_SEQ_CST), states, stale, guarded_ok_after,
           fenced_ok_after);
    fflush(stdout);
    zkl_mutex_set_lost_fn(m, NULL, NULL);
    return 0;
}

/* ---- loop ------------------------------------------------------------------ */

static int stop_requested(const struct opts *o)
{
    return o->stop && access(o->stop, F_OK) == 0;
}

static int loop(const struct opts *o, zkl_mutex *m)
{
    for (long i = 0; o->iterations == 0 || i < o->iterations; i++) {
        if (stop_requested(o))
            break;
        int rc = zkl_mutex_acquire(m, o->acquire_ms);
        if (rc == ZKL_ELOST || (rc == ZKL_ETIMEDOUT && o->stop)) {
            i--; /* the session ended while waiting, or a long stall: again */
            continue;
        }
        if (rc != 0)
            die("acquire", rc);
        int64_t token = value_of_mutex_token(m);
        logf_line("ACQ mutex %ld/1 %" PRId64 " %" PRId64 "\n", (long)getpid(), realtime_ns(), token);
        if (o->counter)
            bump_counter(o->counter, o->hold_ms);
        else if (o->hold_ms > 0)
            usleep((useconds_t)o->hold_ms * 1000);
        if (o->fence) {
            char who[32];
            snprintf(who, sizeof who, "%ld", (long)getpid());
            int f = fenced_store_write(o->fence, token, who, "w");
            if (f != 0)
                die(f == FENCED_STALE ? "fenced-write-refused" : "fenced-write", f);
        }
        logf_line("REL mutex %ld/1 %" PRId64 " %" PRId64 "\n", (long)getpid(), realtime_ns(), token);
        rc = zkl_mutex_release(m);
        if (rc == ZKL_ELOST && o->stop) {
            /* The session ended after the REL line (a failover that
             * stalled past the session timeout): the loss is reported as
             * it must be, and the history check judges the interval. */
            fprintf(stderr, "LOST release\n");
            continue;
        }
        if (rc != 0)
            die("release", rc);
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: fault-worker --servers S --path P --log-file L [--mode loop|pause-holder]"
                    " [--iterations N] [--stop-file F] [--counter-file F] [--fence-file F]"
                    " [--data-node P] [--hold-ms MS] [--session-ms MS] [--acquire-timeout-ms MS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct opts o = {.mode = "loop", .session_ms = 4000, .acquire_ms = 60000};
    /* Every option takes a value: a string kept as it is, or a number. */
    const struct {
        const char *name;
        const char **str;
        long *num;
    } opt[] = {
        {"--servers", &o.servers, NULL},      {"--path", &o.path, NULL},
        {"--log-file", &o.log, NULL},         {"--mode", &o.mode, NULL},
        {"--stop-file", &o.stop, NULL},       {"--counter-file", &o.counter, NULL},
        {"--fence-file", &o.fence, NULL},     {"--data-node", &o.data, NULL},
        {"--iterations", NULL, &o.iterations}, {"--hold-ms", NULL, &o.hold_ms},
        {"--session-ms", NULL, &o.session_ms}, {"--acquire-timeout-ms", NULL, &o.acquire_ms},
    };
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t j = 0;
        while (j < sizeof opt / sizeof opt[0] && strcmp(k, opt[j].name))
            j++;
        if (v == NULL || j == sizeof opt / sizeof opt[0])
            usage();
        if (opt[j].str)
            *opt[j].str = v;
        else
            *opt[j].num = atol(v);
    }
    int pause = !strcmp(o.mode, "pause-holder");
    if (!o.servers || !o.path || !o.log || (!pause && strcmp(o.mode, "loop")) ||
        (pause && (!o.fence || !o.data)))
        usage();
    log_fd = open(o.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0)
        die("log-open", -errno);
    zkl_client *c;
    int rc = zkl_client_open(o.servers, (int)o.session_ms, &c);
    if (rc != 0)
        die("open", rc);
    zkl_mutex *m;
    if ((rc = zkl_mutex_new(c, o.path, &m)) != 0)
        die("mutex", rc);
    rc = pause ? pause_holder(&o, c, m) : loop(&o, m);
    zkl_mutex_free(m);
    zkl_client_close(c);
    close(log_fd);
    return rc;
}
