/* zkl lock: run a command while holding a ZooKeeper lock.
 *
 * The main thread waits in the event loop (tools/loop.c) and decides; the
 * lock thread acquires and, later, releases, as a hold belongs to the
 * thread that took it; COMMAND runs under tools/command.c.
 *
 * While connecting, a signal ends zkl at once (nothing is on the server
 * yet), and -n / -w bound the connecting too. While waiting, a signal
 * cancels the acquire (zkl_client_cancel), which removes our node before it
 * returns. Without COMMAND (hold mode) zkl prints the node and its fencing
 * token and holds until a signal or the end of its stdin. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "lockkind.h"
#include "lockrun.h"

#define DEFAULT_KILL_AFTER_MS 5000
/* How long -n waits for a connection: "at once", but a healthy server
 * answers well within it. */
#define NONBLOCK_CONNECT_MS 1000
/* How long after its own bound the library's connect wait may end before
 * zkl lock's watch says so itself. */
#define CONNECT_GRACE_MS 250

struct lockopts {
    const char *servers;
    long session_ms;
    long wait_ms; /* ZKL_WAIT_FOREVER, or a bound (0 for -n) */
    long connect_ms; /* --connect-timeout, ZKL_CONNECT_TIMEOUT; -1: not given */
    long conflict_code;
    long lost_code;
    long kill_after_ms;
    const lockkind *kind;
    long permits;
    bool verbose;
    bool revocable; /* --revocable: let go when asked (zkl revoke, Curator) */
    bool until_signal; /* hold mode: stdin's end does not release */
    bool foreground;   /* --foreground: COMMAND in zkl's process group, signalled alone */
    const char *metrics; /* --metrics FILE: the session's metrics, at the end */
    const char *id;      /* --id (zkl elect): the candidate's id */
    const char *path;
    char **cmd; /* NULL-terminated */
    char *shcmd[4];
};

/* ---- the lock thread ---------------------------------------------------- */

/* One attempt to hold the lock, in one session. */
struct attempt {
    zkl_client *c;
    const lockkind *k;
    void *obj;
    long timeout_ms;
    int wfd;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool acquired; /* acquire returned acquire_rc */
    int acquire_rc;
    int acquire_zk; /* ZooKeeper's code behind a ZKL_EZK (per thread: ask here) */
    int64_t token;
    char *node;
    bool release_wanted;
    bool released; /* release returned release_rc */
    int release_rc;
};

static void *lock_main(void *arg)
{
    struct attempt *a = arg;
    int rc = a->k->acquire(a->obj, a->timeout_ms);
    pthread_mutex_lock(&a->mu);
    a->acquire_rc = rc;
    a->acquire_zk = rc == ZKL_EZK ? zkl_last_zk_error() : 0;
    if (rc == 0) {
        /* Token and node are the calling thread's: ask here. */
        a->token = a->k->token(a->obj);
        const char *node = a->k->node(a->obj);
        a->node = strdup(node != NULL ? node : "");
    }
    a->acquired = true;
    pthread_mutex_unlock(&a->mu);
    loop_notify(a->wfd, LOOP_NEWS);
    if (rc != 0)
        return NULL;

    pthread_mutex_lock(&a->mu);
    while (!a->release_wanted)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    rc = a->k->release(a->obj);
    pthread_mutex_lock(&a->mu);
    a->release_rc = rc;
    a->released = true;
    pthread_mutex_unlock(&a->mu);
    loop_notify(a->wfd, LOOP_NEWS);
    return NULL;
}

static bool attempt_acquired(struct attempt *a)
{
    pthread_mutex_lock(&a->mu);
    bool done = a->acquired;
    pthread_mutex_unlock(&a->mu);
    return done;
}

static bool attempt_released(struct attempt *a)
{
    pthread_mutex_lock(&a->mu);
    bool done = a->released;
    pthread_mutex_unlock(&a->mu);
    return done;
}

static void attempt_release(struct attempt *a)
{
    pthread_mutex_lock(&a->mu);
    a->release_wanted = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* ---- the command -------------------------------------------------------- */

/* zkl elect runs as zkl lock does, its lock a latch (tools/electkind.c). */
static bool electing;

/* What zkl elect takes of the lock's options, and its own: -1 to go on, or
 * an exit code. COMMAND finds the id in ZKL_LEADER_ID. */
static int elect_options(struct lockopts *o)
{
    if (o->kind != &lockkind_mutex)
        return cli_usage_error("elect: -s, -x and --semaphore are zkl lock's");
    if (o->revocable)
        return cli_usage_error("elect: --revocable is zkl lock's");
    if (o->id != NULL && strlen(o->id) > 4096)
        return cli_usage_error("elect: --id is longer than 4096 bytes");
    o->kind = &lockkind_latch;
    lockkind_latch_id(o->id);
    if (setenv("ZKL_LEADER_ID", o->id != NULL ? o->id : "", 1) != 0) {
        cli_err("cannot set ZKL_LEADER_ID");
        return EX_OSERR;
    }
    return -1;
}

static int parse(int argc, char **argv, struct lockopts *o)
{
    enum {
        OPT_SEM = 256,
        OPT_SESSION,
        OPT_KILL_AFTER,
        OPT_LOST_CODE,
        OPT_REVOCABLE,
        OPT_METRICS,
        OPT_UNTIL_SIGNAL,
        OPT_FOREGROUND,
        OPT_CONNECT,
        OPT_ID
    };
    static const struct option longopts[] = {
        {"wait", required_argument, NULL, 'w'},
        {"timeout", required_argument, NULL, 'w'},
        {"nonblock", no_argument, NULL, 'n'},
        {"nb", no_argument, NULL, 'n'},
        {"conflict-exit-code", required_argument, NULL, 'E'},
        {"shared", no_argument, NULL, 's'},
        {"exclusive", no_argument, NULL, 'x'},
        {"semaphore", required_argument, NULL, OPT_SEM},
        {"servers", required_argument, NULL, 'S'},
        {"session-timeout", required_argument, NULL, OPT_SESSION},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT},
        {"kill-after", required_argument, NULL, OPT_KILL_AFTER},
        {"lost-exit-code", required_argument, NULL, OPT_LOST_CODE},
        {"revocable", no_argument, NULL, OPT_REVOCABLE},
        {"metrics", required_argument, NULL, OPT_METRICS},
        {"until-signal", no_argument, NULL, OPT_UNTIL_SIGNAL},
        {"foreground", no_argument, NULL, OPT_FOREGROUND},
        {"id", required_argument, NULL, OPT_ID},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        CLI_SECURE_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    const char *servers = NULL, *shell = NULL;
    bool nonblock = false, waits = false;
    int modes = 0;
    double secs;
    *o = (struct lockopts){.session_ms = CLI_DEFAULT_SESSION_MS,
                           .wait_ms = ZKL_WAIT_FOREVER,
                           .connect_ms = -1,
                           .conflict_code = CLI_EXIT_CONFLICT,
                           .lost_code = CLI_EXIT_LOST,
                           .kill_after_ms = DEFAULT_KILL_AFTER_MS,
                           .kind = &lockkind_mutex};
    int c;
    /* '+': options stop at PATH; what follows is COMMAND's. */
    while ((c = getopt_long(argc, argv, "+w:nE:sxS:c:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'w':
            if (cli_parse_seconds("-w", optarg, &secs) != 0)
                return EX_USAGE;
            o->wait_ms = (long)ceil(secs * 1000);
            waits = true;
            break;
        case 'n':
            o->wait_ms = 0;
            nonblock = true;
            break;
        case 'E':
            if (cli_parse_long("-E", optarg, 0, 255, &o->conflict_code) != 0)
                return EX_USAGE;
            break;
        case 's':
            o->kind = &lockkind_read;
            modes++;
            break;
        case 'x':
            o->kind = &lockkind_write;
            modes++;
            break;
        case OPT_SEM:
            if (cli_parse_long("--semaphore", optarg, 1, 1000000, &o->permits) != 0)
                return EX_USAGE;
            o->kind = &lockkind_semaphore;
            modes++;
            break;
        case 'S':
            servers = optarg;
            break;
        case OPT_SESSION:
            if (cli_parse_long("--session-timeout", optarg, 1, 3600000, &o->session_ms) != 0)
                return EX_USAGE;
            break;
        case OPT_CONNECT:
            if (cli_parse_seconds("--connect-timeout", optarg, &secs) != 0)
                return EX_USAGE;
            o->connect_ms = (long)ceil(secs * 1000);
            break;
        case OPT_KILL_AFTER:
            if (cli_parse_seconds("--kill-after", optarg, &secs) != 0)
                return EX_USAGE;
            o->kill_after_ms = (long)ceil(secs * 1000);
            break;
        case OPT_LOST_CODE:
            if (cli_parse_long("--lost-exit-code", optarg, 0, 255, &o->lost_code) != 0)
                return EX_USAGE;
            break;
        case OPT_REVOCABLE:
            o->revocable = true;
            break;
        case OPT_METRICS:
            o->metrics = optarg;
            break;
        case OPT_UNTIL_SIGNAL:
            o->until_signal = true;
            break;
        case OPT_FOREGROUND:
            o->foreground = true;
            break;
        case OPT_ID:
            o->id = optarg;
            break;
        case 'c':
            shell = optarg;
            break;
        case 'v':
            o->verbose = true;
            break;
        case 'h':
            cli_help();
            return 0;
        default:
            if (cli_secure_option(c, optarg) > 0)
                break;
            fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
            return EX_USAGE;
        }
    }
    if (nonblock && waits)
        return cli_usage_error("-n and -w exclude each other");
    const char *env_connect = getenv("ZKL_CONNECT_TIMEOUT");
    if (o->connect_ms < 0 && env_connect != NULL && *env_connect != '\0') {
        if (cli_parse_seconds("ZKL_CONNECT_TIMEOUT", env_connect, &secs) != 0)
            return EX_USAGE;
        o->connect_ms = (long)ceil(secs * 1000);
    }
    if (o->connect_ms == 0)
        return cli_usage_error("--connect-timeout (ZKL_CONNECT_TIMEOUT) must be more than 0");
    if (modes > 1)
        return cli_usage_error("-s, -x and --semaphore exclude each other");
    if (o->revocable && o->kind->on_revoke == NULL)
        return cli_usage_error("--revocable takes a mutex or a read-write lock, not --semaphore");
    if (optind >= argc)
        return cli_usage_error("lock: no PATH");
    o->path = argv[optind++];
    const char *why = cli_path_problem(o->path);
    if (why != NULL)
        return cli_usage_error("lock: bad PATH '%s': %s", o->path, why);
    if (optind < argc && strcmp(argv[optind], "--") == 0) {
        optind++;
    } else if (optind < argc && strcmp(argv[optind], "-c") == 0) {
        /* flock's "PATH -c COMMAND" */
        if (shell != NULL || optind + 2 != argc)
            return cli_usage_error("lock: -c takes one SHELL-COMMAND, and no other");
        shell = argv[optind + 1];
        optind = argc;
    }
    if (shell != NULL && optind < argc)
        return cli_usage_error("lock: -c and COMMAND exclude each other");
    if (shell != NULL) {
        static char sh[] = "/bin/sh", dash_c[] = "-c";
        o->shcmd[0] = sh;
        o->shcmd[1] = dash_c;
        o->shcmd[2] = (char *)shell;
        o->cmd = o->shcmd;
    } else if (optind < argc) {
        o->cmd = argv + optind;
    } else {
        o->cmd = NULL; /* hold mode */
    }
    if (o->until_signal && o->cmd != NULL)
        return cli_usage_error("lock: --until-signal is for hold mode, without COMMAND");
    o->servers = cli_servers(servers);
    return electing ? elect_options(o) : o->id != NULL ? cli_usage_error("lock: --id is zkl elect's")
                                                       : -1;
}

/* Stop waiting at once: the process ends, the session with it (and any node
 * of ours when the server notices, within the session timeout). */
static void die(int code)
{
    fflush(stdout);
    fflush(stderr);
    cli_errout_flush(CLI_ERROUT_FLUSH_MS);
    _exit(code);
}

/* --metrics FILE: the client's metrics in Prometheus text, "-" for stderr
 * (stdout may be COMMAND's). A failure is said, and changes no exit code. */
static void write_metrics(zkl_client *c, const char *file)
{
    bool err = strcmp(file, "-") == 0;
    FILE *f = err ? stderr : fopen(file, "we");
    int rc = f != NULL ? zkl_client_metrics_fprint(c, f) : ZKL_ESYS;
    if (f != NULL && !err && fclose(f) != 0)
        rc = ZKL_ESYS;
    if (rc != 0)
        cli_err("cannot write the metrics to %s: %s", file, zkl_strerror(rc));
}

/* ---- connecting, bounded ------------------------------------------------- */

struct connector {
    const char *servers;
    int session_ms;
    int wfd;
    pthread_mutex_t mu;
    bool done;
    int rc;
    zkl_client *c;
};

static void *connect_main(void *arg)
{
    struct connector *k = arg;
    zkl_client *c = NULL;
    int rc = cli_connect(k->servers, k->session_ms, &c);
    pthread_mutex_lock(&k->mu);
    k->rc = rc;
    k->c = c;
    k->done = true;
    pthread_mutex_unlock(&k->mu);
    loop_notify(k->wfd, LOOP_NEWS);
    return NULL;
}

/* Connect on a thread of its own while the main thread watches signals
 * and the bound (ms of cli_now_ms, -1 for none), `span_ms` from now: a
 * signal ends zkl at once with 128+N, the bound with EX_UNAVAILABLE.
 * Nothing of ours is on the server before the connection, so leaving is
 * safe. Returns 0 with the client in *out, or an exit code after saying
 * why. */
static int connect_bounded(const struct lockopts *o, struct loop *l, int64_t bound,
                           int64_t span_ms, zkl_client **out)
{
    static struct connector k; /* outlives a thread left behind by die() */
    k = (struct connector){.servers = o->servers, .session_ms = (int)o->session_ms,
                           .wfd = l->wfd};
    pthread_mutex_init(&k.mu, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, connect_main, &k) != 0) {
        cli_err("cannot start a thread");
        return EX_OSERR;
    }
    for (;;) {
        pthread_mutex_lock(&k.mu);
        bool done = k.done;
        pthread_mutex_unlock(&k.mu);
        if (done)
            break;
        struct event ev;
        loop_next(l, bound, &ev);
        if (ev.type == EV_SIGNAL && ev.sig != SIGCHLD)
            die(128 + ev.sig);
        if (ev.type == EV_NONE && bound >= 0 && cli_now_ms() >= bound) {
            /* The bound given, as the library's own wait says it
             * (cli_connect): which of the two ends first is a race. */
            cli_err("no ZooKeeper server answered at %s within %g s", o->servers,
                    (double)span_ms / 1000);
            die(EX_UNAVAILABLE);
        }
    }
    pthread_join(th, NULL);
    pthread_mutex_destroy(&k.mu);
    loop_drain(l); /* the connector's news */
    *out = k.c;
    return k.rc;
}

/* ---- hold mode ------------------------------------------------------------ */

/* Reads stdin until its end, then tells the loop: a script that runs zkl
 * as a coprocess releases by closing the pipe. */
static void *stdin_main(void *arg)
{
    int wfd = *(int *)arg;
    char buf[4096];
    ssize_t r;
    while ((r = read(STDIN_FILENO, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
        ;
    loop_notify(wfd, LOOP_EOF);
    return NULL;
}

/* Whether stdin is at its end before anything was read: /dev/null (as a
 * script's background job gets it, or a closed stdin, which zkl holds with
 * /dev/null), a file, or a pipe whose writer is gone. Hold mode would then
 * release at once. */
static bool stdin_at_end(void)
{
    struct stat st, null;
    if (fstat(STDIN_FILENO, &st) != 0)
        return true;
    if (S_ISREG(st.st_mode))
        return true;
    if (S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 && st.st_rdev == null.st_rdev)
        return true;
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
}

/* Hold until SIGTERM, SIGINT, SIGHUP, SIGQUIT or the end of stdin (0; not
 * with --until-signal), or until the lock is lost (*lost set). */
static int hold(const struct lockopts *o, struct loop *l, zkl_client *c, const char *node,
                int64_t token, bool *lost)
{
    printf("%s %lld\n", node, (long long)token);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_err("write error: %s: cannot write the node and token: releasing %s",
                strerror(errno ? errno : EIO), o->path);
        /* Said once: what stays unwritten is not tried again at the exit. */
        __fpurge(stdout);
        clearerr(stdout);
        return EX_IOERR;
    }
    if (!o->until_signal && stdin_at_end())
        cli_err("standard input is at its end (/dev/null, a file, or a closed pipe): releasing %s "
                "at once, as at the end of stdin; --until-signal holds until a signal instead",
                o->path);
    pthread_t th;
    if (!o->until_signal) {
        if (pthread_create(&th, NULL, stdin_main, &l->wfd) != 0) {
            cli_err("cannot start a thread");
            return EX_OSERR;
        }
        pthread_detach(th); /* it may block in read until zkl exits */
    }
    int st = zkl_client_state(c);
    for (;;) {
        if (st == ZKL_STATE_LOST || st == ZKL_STATE_CLOSED) {
            *lost = true;
            cli_err("lock %s lost (its node was deleted, or the ZooKeeper session expired or may "
                    "expire any moment with no answer in time)",
                    o->path);
            return 0;
        }
        struct event ev;
        loop_next(l, -1, &ev);
        if (ev.type == EV_STATE)
            st = ev.state == ZKL_STATE_LOST || ev.state == ZKL_STATE_CLOSED ? ev.state
                                                                          : (int)zkl_client_state(c);
        else if (ev.type == EV_LOST)
            st = ZKL_STATE_LOST; /* the recipe lost our hold (its node is gone) */
        else if (ev.type == EV_EOF)
            return 0;
        else if (ev.type == EV_REVOKE) {
            cli_err("lock %s: release requested (revocation): releasing", o->path);
            return 0;
        }
        else if (ev.type == EV_SIGNAL && ev.sig != SIGCHLD)
            return 0;
    }
}

/* --semaphore N disagrees with the server: say its limit. */
static int limit_mismatch(zkl_client *c, const struct lockopts *o)
{
    int limit = 0;
    if (zkl_participants_limit(c, o->path, &limit) == 0 && limit > 0)
        cli_err("%s: --semaphore %ld, but the semaphore's limit on the server is %d", o->path,
                o->permits, limit);
    else
        cli_err("%s: --semaphore %ld disagrees with the limit on the server", o->path,
                o->permits);
    return cli_exit_for(ZKL_EMISMATCH);
}

/* --semaphore N, and the server records another limit: the library would
 * say so only once zkl's waiter is first in the semaphore's gate, after
 * every waiter ahead of it (or time out first): ask at once, and again
 * after a time-out, as the semaphore may have come meanwhile. */
static bool limit_disagrees(zkl_client *c, const struct lockopts *o)
{
    int limit = 0;
    return o->kind == &lockkind_semaphore && zkl_participants_limit(c, o->path, &limit) == 0 &&
           limit > 0 && limit != o->permits;
}

/* -v on a conflict: who holds, from the participants' listing. */
static void say_holders(zkl_client *c, const char *path)
{
    zkl_participant *ps;
    size_t n;
    if (zkl_participants_list(c, path, &ps, &n) != 0)
        return;
    for (size_t i = 0; i < n && ps[i].holds; i++) {
        char owner[300] = "(unreadable: the node's ACL refuses its data)";
        if (ps[i].readable)
            cli_printable(ps[i].owner, owner, sizeof owner);
        cli_err("%s is held by %s (node %s, token %lld)", path, owner, ps[i].node,
                (long long)ps[i].token);
    }
    zkl_participants_free(ps, n);
}

/* Wait for the lock thread's acquire to return. A signal meanwhile cancels
 * it (*interrupted tells which); a second one ends zkl. */
static void wait_acquired(struct loop *l, struct attempt *a, int session_ms, int *interrupted)
{
    int64_t give_up_at = -1;
    while (!attempt_acquired(a)) {
        struct event ev;
        loop_next(l, give_up_at, &ev);
        if (ev.type == EV_SIGNAL && ev.sig != SIGCHLD) {
            if (*interrupted)
                die(128 + *interrupted);
            *interrupted = ev.sig;
            zkl_client_cancel(a->c);
            /* The acquire returns once its node's delete is confirmed, or
             * after half a second without; only a stuck process needs
             * this bound. */
            give_up_at = cli_now_ms() + session_ms + 2000;
        } else if (give_up_at >= 0 && cli_now_ms() >= give_up_at) {
            cli_err("the cancelled acquire did not return; its node goes when the session expires");
            die(128 + *interrupted);
        }
    }
}

/* Have the lock thread release, and wait for it, boundedly: a delete is
 * retried until the server confirms or the session ends, which with no
 * server in reach is only known once one is back. If it does not finish,
 * zkl exits with `code`; the node goes when the session expires. */
static void release(struct loop *l, struct attempt *a, const char *path, int session_ms, int code)
{
    attempt_release(a);
    int64_t until = cli_now_ms() + session_ms + 2000;
    while (!attempt_released(a) && cli_now_ms() < until) {
        struct event ev;
        loop_next(l, until, &ev);
    }
    if (!attempt_released(a)) {
        cli_err("could not confirm the release of %s; its node goes when the session expires",
                path);
        die(code);
    }
}

static int lock_and_run(const struct lockopts *o, struct loop *l)
{
    int64_t t0 = cli_now_ms();
    int64_t deadline = o->wait_ms < 0 ? -1 : t0 + o->wait_ms;
    int interrupted = 0;
    for (;;) {
        zkl_client *c;
        /* Connecting ends by -w's deadline; -n gives it a second; either
         * way --connect-timeout, when given, bounds it alone. */
        int64_t now = cli_now_ms();
        int64_t bound = o->wait_ms == 0 ? now + NONBLOCK_CONNECT_MS : deadline;
        if (o->connect_ms >= 0 &&
            (o->wait_ms == 0 || bound < 0 || now + o->connect_ms < bound))
            bound = now + o->connect_ms;
        /* A bound shorter than the library's own wait (the session
         * timeout): the library's wait ends with it, so that it asks the
         * servers why (TLS) within it. */
        cli_connect_ms = 0;
        if (bound >= 0 && bound - now < o->session_ms)
            cli_connect_ms = bound > now ? (long)(bound - now) : 1;
        /* The library's wait ends first and says why; the watch, a little
         * later, only when it did not (one message, not two). */
        int64_t watch = bound >= 0 && cli_connect_ms > 0 ? bound + CONNECT_GRACE_MS : bound;
        int rc = connect_bounded(o, l, watch, bound >= 0 ? bound - now : -1, &c);
        if (rc != 0)
            return rc;
        /* The negotiated timeout: the server may have changed ours. Not
         * from the handle: a session given up at once (the loss rule, a
         * slow connect) has none any more, or one being closed. */
        int session_ms = zkl_client_session_timeout(c);
        struct attempt a = {.c = c, .k = o->kind, .wfd = l->wfd};
        pthread_mutex_init(&a.mu, NULL);
        pthread_cond_init(&a.cv, NULL);
        a.timeout_ms = ZKL_WAIT_FOREVER;
        if (deadline >= 0) {
            int64_t left = deadline - cli_now_ms();
            a.timeout_ms = left > 0 ? (long)left : 0;
        }
        a.obj = NULL;
        if ((rc = zkl_client_add_listener(c, loop_on_state, (void *)&l->wfd)) != 0 ||
            (rc = o->kind->create(c, o->path, o->permits, &a.obj)) != 0 ||
            (limit_disagrees(c, o) && (rc = ZKL_EMISMATCH) != 0) ||
            (rc = o->kind->on_lost(a.obj, &l->wfd)) != 0 ||
            (o->revocable && (rc = o->kind->on_revoke(a.obj, &l->wfd)) != 0)) {
            if (a.obj != NULL)
                o->kind->destroy(a.obj);
            if (rc == ZKL_EMISMATCH)
                rc = limit_mismatch(c, o);
            else
                rc = cli_report(o->path, rc);
            zkl_client_close(c);
            return rc;
        }
        if (pthread_create(&a.th, NULL, lock_main, &a) != 0) {
            cli_err("cannot start a thread");
            o->kind->destroy(a.obj);
            zkl_client_close(c);
            return EX_OSERR;
        }

        wait_acquired(l, &a, session_ms, &interrupted);
        rc = a.acquire_rc;
        int code = 0;
        bool again = false;
        if (rc == 0 && !interrupted) {
            if (o->verbose)
                cli_err("acquired %s (%s) after %.3f s: token %lld, node %s", o->path,
                        o->kind->name, (double)(cli_now_ms() - t0) / 1000, (long long)a.token,
                        a.node);
            /* With --revocable a request to let go ("__REVOKE__" in our
             * node: zkl revoke, Curator's Revoker) ends COMMAND as a loss
             * does (SIGTERM, --kill-after), or leaves hold mode; then the
             * lock is released as usual. */
            bool lost = false;
            if (o->cmd == NULL) {
                code = hold(o, l, c, a.node != NULL ? a.node : "", a.token, &lost);
            } else {
                struct command cmd = {.argv = o->cmd,
                                      .path = o->path,
                                      .node = a.node != NULL ? a.node : "",
                                      .token = a.token,
                                      .kill_after_ms = o->kill_after_ms,
                                      .foreground = o->foreground};
                code = command_run(&cmd, l, c, &lost);
            }
            if (lost)
                code = (int)o->lost_code;
        } else if (interrupted) {
            code = 128 + interrupted;
        } else if (rc == ZKL_ETIMEDOUT && limit_disagrees(c, o)) {
            code = limit_mismatch(c, o);
        } else if (rc == ZKL_ETIMEDOUT) {
            if (o->verbose) {
                cli_err("%s not acquired after %.3f s", o->path,
                        (double)(cli_now_ms() - t0) / 1000);
                say_holders(c, o->path);
            }
            code = (int)o->conflict_code;
        } else if (rc == ZKL_EMISMATCH) {
            code = limit_mismatch(c, o);
        } else if (rc == ZKL_ELOST && (deadline < 0 || cli_now_ms() < deadline)) {
            cli_err("the ZooKeeper session expired while waiting for %s: waiting again", o->path);
            again = true;
        } else if (rc == ZKL_EZK) {
            cli_err("%s: %s: ZooKeeper error %d", o->path, zkl_strerror(rc), a.acquire_zk);
            code = cli_exit_for(rc);
        } else {
            cli_err("%s: %s", o->path, zkl_strerror(rc));
            code = cli_exit_for(rc);
        }

        if (rc == 0) {
            release(l, &a, o->path, session_ms, code);
            /* A failed release leaves nothing behind: closing the session
             * below removes the node all the same. */
            if (o->verbose && a.release_rc != 0)
                cli_err("releasing %s: %s", o->path, zkl_strerror(a.release_rc));
        }
        pthread_join(a.th, NULL);
        o->kind->destroy(a.obj);
        free(a.node);
        pthread_mutex_destroy(&a.mu);
        pthread_cond_destroy(&a.cv);
        zkl_client_remove_listener(c, loop_on_state, (void *)&l->wfd);
        if (o->metrics != NULL && !again)
            write_metrics(c, o->metrics);
        zkl_client_close(c);
        if (!again)
            return code;
        loop_drain(l); /* the closed session's news */
    }
}

int cli_lock(int argc, char **argv)
{
    struct lockopts o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    struct loop l;
    cli_fds_note_inherited();
    if ((rc = loop_open(&l)) != 0)
        return rc;
    rc = lock_and_run(&o, &l);
    loop_close(&l);
    return rc;
}

/* zkl elect: zkl lock with a latch (leader election) for its lock, set up
 * by parse(): COMMAND runs while it leads. */
int cli_elect(int argc, char **argv)
{
    electing = true;
    return cli_lock(argc, argv);
}
