/* Leader election: how fast leadership passes on.
 *
 *   elect  `clients` candidates (one session each) on one path; each
 *          leader resigns at once (zkl_latch_close) and joins again with
 *          a new latch. ops = leaderships; latency = from a leader's
 *          resignation to the next leader's await returning (the first:
 *          from the start). Rate = leadership changes per second.
 *
 *   elect-kill `ops` times (default 5), a leader in a process of its own
 *          (this program again, --elect-child) is SIGKILLed while one
 *          candidate of ours follows. Latency = from the SIGKILL to our
 *          await returning: the server's expiry of the dead session
 *          (--session-timeout), then the handover. */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

struct elect_run {
    struct run *r;
    const char *path;
    int ops;
    struct result *res;
    pthread_mutex_t mu;
    int done;         /* leaderships counted */
    int64_t resigned; /* when the last leader resigned */
    int64_t end;      /* when the last counted leader resigned */
};

struct candidate {
    struct elect_run *e;
    zkl_client *c;
    pthread_t t;
};

static void *candidate_main(void *arg)
{
    struct candidate *k = arg;
    struct elect_run *e = k->e;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        bool over = e->done >= e->ops;
        pthread_mutex_unlock(&e->mu);
        if (over)
            return NULL;
        zkl_latch *l;
        int rc = zkl_latch_new(k->c, e->path, NULL, &l);
        if (rc != 0 || (rc = zkl_latch_start(l)) != 0 ||
            (rc = zkl_latch_await(l, LOCK_TIMEOUT_MS)) != 0)
            die("latch", rc);
        int64_t t = now_ns();
        pthread_mutex_lock(&e->mu); /* only the leader is here */
        int i = e->done++;
        if (i < e->ops)
            e->res->lat[i] = t - e->resigned;
        e->resigned = now_ns();
        if (i == e->ops - 1)
            e->end = e->resigned;
        pthread_mutex_unlock(&e->mu);
        if ((rc = zkl_latch_close(l)) != 0)
            die("resign", rc);
        zkl_latch_free(l);
    }
}

void elect_run(struct run *r, const char *path, int ops, struct result *res)
{
    struct elect_run e = {.r = r, .path = path, .ops = ops, .res = res};
    pthread_mutex_init(&e.mu, NULL);
    struct candidate *ks = xcalloc((size_t)r->ncs, sizeof *ks);
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    e.resigned = t0;
    for (int i = 0; i < r->ncs; i++) {
        ks[i] = (struct candidate){.e = &e, .c = r->cs[i]};
        start_thread(&ks[i].t, candidate_main, &ks[i], 256 * 1024);
    }
    for (int i = 0; i < r->ncs; i++)
        pthread_join(ks[i].t, NULL);
    res->elapsed_ns = e.end - t0;
    run_end(r, &before, res);
    free(ks);
    pthread_mutex_destroy(&e.mu);
}

int elect_child(const char *servers, const char *path, int session_ms)
{
    zkl_client *c;
    zkl_latch *l;
    int rc = zkl_client_open(servers, session_ms, &c);
    if (rc == 0 && (rc = zkl_latch_new(c, path, NULL, &l)) == 0 && (rc = zkl_latch_start(l)) == 0)
        rc = zkl_latch_await(l, LOCK_TIMEOUT_MS);
    if (rc != 0)
        die("elect child", rc);
    if (write(1, "L", 1) != 1)
        return 1;
    for (;;)
        pause(); /* until SIGKILL */
}

/* How many candidates `path` has. */
static int candidates(zkl_client *c, const char *path)
{
    zkl_participant *ps;
    size_t n;
    if (zkl_participants_list(c, path, &ps, &n) != 0)
        return -1;
    zkl_participants_free(ps, n);
    return (int)n;
}

extern char **environ;

void elect_kill_run(struct run *r, const char *path, int ops, struct result *res)
{
    zkl_client *c = r->cs[0];
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t total = 0;
    char session[24];
    snprintf(session, sizeof session, "%d", r->o->session_timeout_ms);
    for (int i = 0; i < ops; i++) {
        int fd[2];
        if (pipe(fd) != 0)
            die("pipe", ZKL_ESYS);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
        posix_spawn_file_actions_addclose(&fa, fd[0]);
        char child[] = "--elect-child";
        char *argv[] = {(char *)zkl_bench_prog, child, (char *)r->o->servers, (char *)path,
                        session, NULL};
        pid_t pid;
        int e = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(fd[1]);
        char b = 0;
        if (e != 0 || read(fd[0], &b, 1) != 1 || b != 'L')
            die("the leader to kill never led", ZKL_ESYS);
        close(fd[0]);
        zkl_latch *l;
        int rc = zkl_latch_new(c, path, NULL, &l);
        if (rc != 0 || (rc = zkl_latch_start(l)) != 0)
            die("latch", rc);
        while (candidates(c, path) < 2)
            usleep(1000);
        int64_t t0 = now_ns();
        kill(pid, SIGKILL);
        if ((rc = zkl_latch_await(l, LOCK_TIMEOUT_MS)) != 0)
            die("latch", rc);
        res->lat[i] = now_ns() - t0;
        total += res->lat[i];
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        if ((rc = zkl_latch_close(l)) != 0)
            die("resign", rc);
        zkl_latch_free(l);
    }
    res->elapsed_ns = total;
    run_end(r, &before, res);
}
