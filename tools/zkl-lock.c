/* zkl lock: run a command while holding a ZooKeeper lock.
 *
 * The main thread waits in the event loop (tools/loop.c) and decides; the
 * lock thread acquires and, later, releases, as a hold belongs to the
 * thread that took it; COMMAND runs under tools/command.c.
 *
 * While waiting, a signal cancels the acquire (zkl_client_cancel), which
 * removes our node before it returns. */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lockkind.h"
#include "lockrun.h"
#include "zkl/zookeeper.h"

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
        if ((rc = zkl_client_add_listener(c, loop_on_state, (void *)&l->wfd)) != 0 ||
            (rc = o->kind->create(c, o->path, o->permits, &a.obj)) != 0) {
            zkl_client_close(c);
            if (rc == ZKL_EINVAL)
                return cli_usage_error("lock: bad PATH '%s'", o->path);
            if (rc == ZKL_EMISMATCH) {
                cli_err("%s: the semaphore's limit on the server is not %ld", o->path, o->permits);
                return cli_exit_for(rc);
            }
            cli_err("%s: %s", o->path, zkl_strerror(rc));
            return cli_exit_for(rc);
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
            struct command cmd = {.argv = o->cmd,
                                  .path = o->path,
                                  .node = a.node != NULL ? a.node : "",
                                  .token = a.token,
                                  .kill_after_ms = o->kill_after_ms};
            bool lost = false;
            code = command_run(&cmd, l, c, session_ms, &lost);
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
