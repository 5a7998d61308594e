/* zkl lock: run a command while holding a ZooKeeper lock.
 *
 * The main thread takes every decision in one poll() loop over a signalfd
 * and a pipe: signals, the client's state changes (a listener writes them
 * into the pipe from the client's own thread) and the lock thread's news all
 * arrive there. The lock thread acquires and, later, releases: a hold
 * belongs to the thread that took it.
 *
 * While waiting, a signal makes the server end the session (another handle
 * closes it by id), which ends the acquire and removes our node at once:
 * zkl has no other way to cancel a waiting acquire. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "lockkind.h"
#include "zkl/zookeeper.h"

extern char **environ;

#define DEFAULT_KILL_AFTER_MS 5000

struct lockopts {
    const char *servers;
    long session_ms;
    long wait_ms; /* ZKL_WAIT_FOREVER, or a bound (0 for -n) */
    long conflict_code;
    long lost_code;
    long kill_after_ms;
    const lockkind *kind;
    long permits;
    bool verbose;
    const char *path;
    char **cmd; /* NULL-terminated */
    char *shcmd[4];
};

/* ---- the event loop ----------------------------------------------------- */

/* What the lock thread writes into the pipe; state changes are written as
 * their enum zkl_state value, all smaller. */
#define NEWS_BYTE 100

enum { EV_NONE, EV_SIGNAL, EV_STATE, EV_NEWS };

struct event {
    int type;
    int sig;      /* EV_SIGNAL */
    int32_t code; /* EV_SIGNAL: si_code, SI_KERNEL for a terminal's signal */
    int state;    /* EV_STATE */
};

struct loop {
    int sfd;        /* signalfd */
    int rfd, wfd;   /* the pipe */
    unsigned char buf[64];
    size_t head, tail;
    sigset_t orig;  /* the mask zkl started with, for COMMAND */
};

static void notify(int wfd, unsigned char b)
{
    /* One byte per event; the reader also looks at the state itself, so an
     * event lost to a full pipe (never seen in practice) changes nothing. */
    ssize_t r = write(wfd, &b, 1);
    (void)r;
}

static void on_state(zkl_client *c, int state, void *arg)
{
    (void)c;
    notify(*(int *)arg, (unsigned char)state);
}

/* The next event, or EV_NONE once `deadline` (ms, -1 for none) passed.
 * State changes and news come before signals: when COMMAND's end and the
 * session's end arrive together, the session's end must count. */
static void next_event(struct loop *l, int64_t deadline, struct event *ev)
{
    ev->type = EV_NONE;
    for (;;) {
        if (l->head < l->tail) {
            unsigned char b = l->buf[l->head++];
            ev->type = b == NEWS_BYTE ? EV_NEWS : EV_STATE;
            ev->state = b;
            return;
        }
        struct pollfd p[2] = {{l->rfd, POLLIN, 0}, {l->sfd, POLLIN, 0}};
        int64_t left = deadline < 0 ? -1 : deadline - cli_now_ms();
        int n = poll(p, 2, left < 0 ? (deadline < 0 ? -1 : 0) : (int)(left > 60000 ? 60000 : left));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0 && deadline >= 0 && cli_now_ms() < deadline)
                continue; /* a long deadline is waited for in slices */
            return;
        }
        if (p[0].revents != 0) {
            ssize_t r = read(l->rfd, l->buf, sizeof l->buf);
            l->head = 0;
            l->tail = r > 0 ? (size_t)r : 0;
            continue;
        }
        struct signalfd_siginfo si;
        if (read(l->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            ev->type = EV_SIGNAL;
            ev->sig = (int)si.ssi_signo;
            ev->code = si.ssi_code;
            return;
        }
    }
}

static int64_t earliest(int64_t a, int64_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}

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
    if (rc == 0) {
        /* Token and node are the calling thread's: ask here. */
        a->token = a->k->token(a->obj);
        const char *node = a->k->node(a->obj);
        a->node = strdup(node != NULL ? node : "");
    }
    a->acquired = true;
    pthread_mutex_unlock(&a->mu);
    notify(a->wfd, NEWS_BYTE);
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
    notify(a->wfd, NEWS_BYTE);
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

/* ---- ending a session from outside -------------------------------------- */

static void quiet_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

/* Make the server close the client's session: a second handle attaches to
 * it by id and password, then closes it. The session's nodes go at once and
 * the waiting acquire returns ZKL_ELOST. The client may take the session
 * back before the close (the close is then refused): the caller tries again
 * until the acquire returned. */
static void end_session(zkl_client *c, const char *servers)
{
    zhandle_t *zh = zkl_client_handle(c); /* stable: the client never re-opens */
    const clientid_t *cid = zh != NULL ? zoo_client_id(zh) : NULL;
    if (cid == NULL || cid->client_id == 0)
        return;
    clientid_t id = *cid;
    zhandle_t *other = zookeeper_init(servers, quiet_watcher, zoo_recv_timeout(zh), &id, NULL, 0);
    if (other == NULL)
        return;
    int64_t end = cli_now_ms() + 2000;
    while (zoo_state(other) != ZOO_CONNECTED_STATE && cli_now_ms() < end)
        usleep(2000);
    zookeeper_close(other);
}

/* ---- COMMAND ------------------------------------------------------------ */

/* environ with ZKL_LOCK_PATH, ZKL_LOCK_NODE and ZKL_FENCING_TOKEN set. The
 * strings of environ are borrowed; free the array and its last three. */
static char **child_env(const char *path, const char *node, int64_t token)
{
    static const char *const ours[] = {"ZKL_LOCK_PATH=", "ZKL_LOCK_NODE=", "ZKL_FENCING_TOKEN="};
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **env = calloc(n + 4, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t j = 0; j < 3; j++)
            replaced |= strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
        if (!replaced)
            env[k++] = environ[i];
    }
    int ok = asprintf(&env[k], "%s%s", ours[0], path) >= 0;
    ok = ok && asprintf(&env[k + 1], "%s%s", ours[1], node) >= 0;
    ok = ok && asprintf(&env[k + 2], "%s%lld", ours[2], (long long)token) >= 0;
    if (!ok) {
        for (size_t j = k; j < k + 3; j++)
            free(env[j]);
        free(env);
        return NULL;
    }
    return env;
}

static void free_env(char **env)
{
    if (env == NULL)
        return;
    size_t n = 0;
    while (env[n] != NULL)
        n++;
    for (size_t j = n - 3; j < n; j++)
        free(env[j]);
    free(env);
}

/* Start COMMAND. Returns 0, or an exit code after saying why not. */
static int spawn_command(const struct lockopts *o, const struct loop *l, char **env, pid_t *pid)
{
    posix_spawnattr_t at;
    if (posix_spawnattr_init(&at) != 0)
        return EX_OSERR;
    /* COMMAND gets the signal mask zkl started with, not the one zkl uses
     * to read signals through its signalfd. */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigmask(&at, &l->orig);
    cli_fds_close_on_exec_new();
    int rc = posix_spawnp(pid, o->cmd[0], NULL, &at, o->cmd, env);
    posix_spawnattr_destroy(&at);
    if (rc == 0)
        return 0;
    cli_err("%s: %s", o->cmd[0], strerror(rc));
    return rc == ENOENT ? CLI_EXIT_NOTFOUND : rc == ENOMEM || rc == EAGAIN ? EX_OSERR
                                                                           : CLI_EXIT_NOEXEC;
}

/* Run COMMAND while the lock is held and wait for its end, passing signals
 * on and ending it if the lock is lost. Returns COMMAND's exit code, or an
 * exit code of zkl's. */
static int run_command(const struct lockopts *o, struct loop *l, struct attempt *a,
                       int session_ms, bool *lost)
{
    char **env = child_env(o->path, a->node, a->token);
    if (env == NULL) {
        cli_err("out of memory");
        return EX_OSERR;
    }
    pid_t pid;
    int rc = spawn_command(o, l, env, &pid);
    free_env(env);
    if (rc != 0)
        return rc;

    /* Past a third of the session timeout without a connection, the server
     * may already have expired the session (it counts from the last ping it
     * heard, which can be two thirds of the timeout before the client
     * notices): the lock is then presumed lost. */
    int64_t grace = session_ms / 3;
    int st = zkl_client_state(a->c);
    int64_t suspended_since = st == ZKL_STATE_SUSPENDED ? cli_now_ms() : -1;
    int64_t kill_at = -1;
    const char *why = NULL;
    int status = 0;
    for (;;) {
        if (!*lost && (st == ZKL_STATE_LOST || st == ZKL_STATE_CLOSED))
            why = "the ZooKeeper session expired";
        else if (!*lost && suspended_since >= 0 && cli_now_ms() >= suspended_since + grace)
            why = "no connection to ZooKeeper for a third of the session timeout";
        if (!*lost && why != NULL) {
            *lost = true;
            cli_err("lock %s lost (%s): terminating COMMAND (pid %ld)", o->path, why, (long)pid);
            kill(pid, o->kill_after_ms == 0 ? SIGKILL : SIGTERM);
            kill_at = o->kill_after_ms == 0 ? -1 : cli_now_ms() + o->kill_after_ms;
        }
        if (kill_at >= 0 && cli_now_ms() >= kill_at) {
            cli_err("COMMAND (pid %ld) still runs: SIGKILL", (long)pid);
            kill(pid, SIGKILL);
            kill_at = -1;
        }
        struct event ev;
        next_event(l, earliest(kill_at, *lost || suspended_since < 0 ? -1 : suspended_since + grace),
                   &ev);
        if (ev.type == EV_STATE) {
            if (ev.state == ZKL_STATE_SUSPENDED && suspended_since < 0)
                suspended_since = cli_now_ms();
            else if (ev.state == ZKL_STATE_RECONNECTED)
                suspended_since = -1;
            st = ev.state == ZKL_STATE_LOST || ev.state == ZKL_STATE_CLOSED ? ev.state
                                                                          : zkl_client_state(a->c);
        } else if (ev.type == EV_SIGNAL && ev.sig == SIGCHLD) {
            pid_t r = waitpid(pid, &status, WNOHANG);
            if (r == pid || (r < 0 && errno == ECHILD))
                break;
        } else if (ev.type == EV_SIGNAL && ev.code != SI_KERNEL) {
            /* A terminal's signal reached COMMAND already, as it went to
             * the whole foreground process group: only pass on the others. */
            kill(pid, ev.sig);
        }
    }
    /* The session's end may be known only now. */
    if (!*lost && zkl_client_state(a->c) == ZKL_STATE_LOST) {
        *lost = true;
        cli_err("lock %s lost (the ZooKeeper session expired) while COMMAND ran", o->path);
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : EX_SOFTWARE;
}

/* ---- the command -------------------------------------------------------- */

static int parse(int argc, char **argv, struct lockopts *o)
{
    enum { OPT_SEM = 256, OPT_SESSION, OPT_KILL_AFTER, OPT_LOST_CODE };
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
        {"kill-after", required_argument, NULL, OPT_KILL_AFTER},
        {"lost-exit-code", required_argument, NULL, OPT_LOST_CODE},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *servers = NULL, *shell = NULL;
    bool nonblock = false, waits = false;
    int modes = 0;
    double secs;
    *o = (struct lockopts){.session_ms = CLI_DEFAULT_SESSION_MS,
                           .wait_ms = ZKL_WAIT_FOREVER,
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
            o->kind = NULL; /* read-write lock: not yet */
            modes++;
            break;
        case 'x':
            o->kind = NULL;
            modes++;
            break;
        case OPT_SEM:
            if (cli_parse_long("--semaphore", optarg, 1, 1000000, &o->permits) != 0)
                return EX_USAGE;
            o->kind = NULL; /* semaphore: not yet */
            modes++;
            break;
        case 'S':
            servers = optarg;
            break;
        case OPT_SESSION:
            if (cli_parse_long("--session-timeout", optarg, 1, 3600000, &o->session_ms) != 0)
                return EX_USAGE;
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
            fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
            return EX_USAGE;
        }
    }
    if (nonblock && waits)
        return cli_usage_error("-n and -w exclude each other");
    if (modes > 1)
        return cli_usage_error("-s, -x and --semaphore exclude each other");
    if (o->kind == NULL)
        return cli_usage_error("-s, -x and --semaphore are not available yet");
    if (optind >= argc)
        return cli_usage_error("lock: no PATH");
    o->path = argv[optind++];
    if (o->path[0] != '/')
        return cli_usage_error("lock: PATH must be absolute: '%s'", o->path);
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
        return cli_usage_error("lock: no COMMAND");
    }
    o->servers = cli_servers(servers);
    return -1;
}

/* Stop waiting at once: the process ends, the session with it (and any node
 * of ours when the server notices, within the session timeout). */
static void die(int code)
{
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

static int lock_and_run(const struct lockopts *o, struct loop *l)
{
    int64_t t0 = cli_now_ms();
    int64_t deadline = o->wait_ms < 0 ? -1 : t0 + o->wait_ms;
    int interrupted = 0;
    for (;;) {
        zkl_client *c;
        int rc = cli_connect(o->servers, (int)o->session_ms, &c);
        if (rc != 0)
            return rc;
        /* The negotiated timeout: the server may have changed ours. */
        int session_ms = zoo_recv_timeout(zkl_client_handle(c));
        struct attempt a = {.c = c, .k = o->kind, .wfd = l->wfd};
        pthread_mutex_init(&a.mu, NULL);
        pthread_cond_init(&a.cv, NULL);
        a.timeout_ms = ZKL_WAIT_FOREVER;
        if (deadline >= 0) {
            int64_t left = deadline - cli_now_ms();
            a.timeout_ms = left > 0 ? (long)left : 0;
        }
        if ((rc = zkl_client_add_listener(c, on_state, &l->wfd)) != 0 ||
            (rc = o->kind->create(c, o->path, o->permits, &a.obj)) != 0) {
            zkl_client_close(c);
            if (rc == ZKL_EINVAL)
                return cli_usage_error("lock: bad PATH '%s'", o->path);
            cli_err("%s", zkl_strerror(rc));
            return cli_exit_for(rc);
        }
        if (pthread_create(&a.th, NULL, lock_main, &a) != 0) {
            cli_err("cannot start a thread");
            o->kind->destroy(a.obj);
            zkl_client_close(c);
            return EX_OSERR;
        }

        /* Wait for the acquire to return. */
        int64_t retry_at = -1, give_up_at = -1;
        while (!attempt_acquired(&a)) {
            struct event ev;
            next_event(l, earliest(retry_at, give_up_at), &ev);
            if (ev.type == EV_SIGNAL && ev.sig != SIGCHLD) {
                if (interrupted)
                    die(128 + interrupted); /* a second signal: no more patience */
                interrupted = ev.sig;
                end_session(c, o->servers);
                retry_at = cli_now_ms() + 1000;
                give_up_at = cli_now_ms() + session_ms + 2000;
            } else if (give_up_at >= 0 && cli_now_ms() >= give_up_at) {
                cli_err("could not end the session; its node goes when it expires");
                die(128 + interrupted);
            } else if (retry_at >= 0 && cli_now_ms() >= retry_at) {
                end_session(c, o->servers);
                retry_at = cli_now_ms() + 1000;
            }
        }
        rc = a.acquire_rc;
        int code = 0;
        bool again = false;
        if (rc == 0 && !interrupted) {
            if (o->verbose)
                cli_err("acquired %s (%s) after %.3f s: token %lld, node %s", o->path,
                        o->kind->name, (double)(cli_now_ms() - t0) / 1000, (long long)a.token,
                        a.node);
            bool lost = false;
            code = run_command(o, l, &a, session_ms, &lost);
            if (lost)
                code = (int)o->lost_code;
        } else if (interrupted) {
            code = 128 + interrupted;
        } else if (rc == ZKL_ETIMEDOUT) {
            if (o->verbose)
                cli_err("%s not acquired after %.3f s", o->path,
                        (double)(cli_now_ms() - t0) / 1000);
            code = (int)o->conflict_code;
        } else if (rc == ZKL_ELOST && (deadline < 0 || cli_now_ms() < deadline)) {
            cli_err("the ZooKeeper session expired while waiting for %s: waiting again", o->path);
            again = true;
        } else {
            cli_err("%s: %s", o->path, zkl_strerror(rc));
            code = cli_exit_for(rc);
        }

        if (rc == 0) {
            /* Release, bounded: a delete is retried until the server
             * confirms or the session ends, which with no server in reach
             * is only known after it came back. */
            attempt_release(&a);
            int64_t until = cli_now_ms() + session_ms + 2000;
            while (!attempt_released(&a) && cli_now_ms() < until) {
                struct event ev;
                next_event(l, until, &ev);
            }
            if (!attempt_released(&a)) {
                cli_err("could not confirm the release of %s; its node goes when the session expires",
                        o->path);
                die(code);
            }
        }
        pthread_join(a.th, NULL);
        o->kind->destroy(a.obj);
        free(a.node);
        pthread_mutex_destroy(&a.mu);
        pthread_cond_destroy(&a.cv);
        zkl_client_remove_listener(c, on_state, &l->wfd);
        zkl_client_close(c);
        if (!again)
            return code;
        l->head = l->tail = 0; /* the old session's news */
    }
}

int cli_lock(int argc, char **argv)
{
    struct lockopts o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;

    struct loop l = {.sfd = -1, .rfd = -1, .wfd = -1};
    cli_fds_note_inherited();
    /* Signals are read from a signalfd, so they must be blocked in every
     * thread: block them before the client starts its threads. SIGCHLD must
     * not be ignored, or COMMAND's status would be thrown away. */
    signal(SIGCHLD, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGCHLD);
    int p[2];
    if (sigprocmask(SIG_BLOCK, &set, &l.orig) != 0 ||
        (l.sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0 || pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        cli_err("cannot set up signals: %s", strerror(errno));
        return EX_OSERR;
    }
    l.rfd = p[0];
    l.wfd = p[1];
    rc = lock_and_run(&o, &l);
    close(l.sfd);
    close(l.rfd);
    close(l.wfd);
    return rc;
}
