/* COMMAND's life under a lock: its environment, its start in a process
 * group of its own, the terminal it may use, the signals zkl passes on,
 * and its end when the lock is lost. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lockrun.h"

extern char **environ;

static char *env_var(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 1;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, "%s%s", name, value);
    return s;
}

/* environ with ZKL_LOCK_PATH, ZKL_LOCK_NODE and ZKL_FENCING_TOKEN set. The
 * strings of environ are borrowed: free_env frees the array and our three. */
static char **child_env(const struct command *cmd)
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
    char token[24];
    snprintf(token, sizeof token, "%lld", (long long)cmd->token);
    env[k] = env_var(ours[0], cmd->path);
    env[k + 1] = env_var(ours[1], cmd->node);
    env[k + 2] = env_var(ours[2], token);
    if (env[k] == NULL || env[k + 1] == NULL || env[k + 2] == NULL) {
        for (size_t j = k; j < k + 3; j++)
            free(env[j]);
        free(env);
        return NULL;
    }
    return env;
}

static void free_env(char **env)
{
    size_t n = 0;
    while (env[n] != NULL)
        n++;
    for (size_t j = n - 3; j < n; j++)
        free(env[j]);
    free(env);
}

/* COMMAND as zkl signals it: its process group, or (--foreground) its
 * process alone. */
struct job {
    pid_t pid;
    pid_t pgid; /* COMMAND's group, its guard's (tools/guard.c) */
    bool group;
    int tty; /* the terminal COMMAND's group was given, or -1 */
};

/* Send sig to COMMAND (its whole group), then SIGCONT, as timeout(1) does:
 * a stopped process acts on nothing else. */
static void job_signal(const struct job *j, int sig)
{
    kill(j->group ? -j->pgid : j->pid, sig);
    if (sig != SIGKILL && sig != SIGCONT)
        kill(j->group ? -j->pgid : j->pid, SIGCONT);
}

/* Make `pgid` the terminal's foreground process group. From a background
 * group that takes SIGTTOU blocked, or the call stops zkl. */
static void tty_give(int tty, pid_t pgid)
{
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    (void)tcsetpgrp(tty, pgid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The terminal, if zkl leads its foreground job (run from a shell prompt):
 * COMMAND's group gets it while it runs, so that it reads the terminal and
 * gets its signals (Ctrl-C) as if run from the prompt itself. In a script,
 * zkl leads no group, and the terminal stays the script's. */
static int tty_to_hand_over(void)
{
    if (getpgrp() != getpid())
        return -1;
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0 && tcgetpgrp(fd) != getpgrp()) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* COMMAND stopped. With the terminal (Ctrl-Z), zkl takes the terminal
 * back and stops too, so that the shell sees its job stopped; when
 * continued (fg, bg), it gives the terminal back if its job is in the
 * foreground again, and continues COMMAND. Without it, COMMAND stopped to
 * use the terminal (zkl runs in a script): if zkl's group has the
 * terminal, COMMAND's group gets it from now on; else COMMAND stays
 * stopped, as a background job that reads the terminal does. */
static void job_stopped(struct job *j, int status)
{
    int sig = WSTOPSIG(status);
    if (j->tty < 0) {
        int fd = sig == SIGTTIN || sig == SIGTTOU ? open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
                                                  : -1;
        if (fd >= 0 && tcgetpgrp(fd) == getpgrp()) {
            cli_err("COMMAND (pid %ld) uses the terminal: it has it until it ends", (long)j->pid);
            j->tty = fd;
            tty_give(fd, j->pgid);
            kill(-j->pgid, SIGCONT);
        } else {
            if (fd >= 0)
                close(fd);
            cli_err("COMMAND (pid %ld) is stopped (signal %d)%s", (long)j->pid, sig,
                    sig == SIGTTIN || sig == SIGTTOU
                        ? ": it uses the terminal, which is not zkl's; --foreground runs it in "
                          "zkl's process group"
                        : "");
        }
        return;
    }
    tty_give(j->tty, getpgrp());
    kill(getpid(), sig == SIGTTIN || sig == SIGTTOU ? SIGTSTP : sig);
    /* Continued. */
    if (tcgetpgrp(j->tty) == getpgrp())
        tty_give(j->tty, j->pgid);
    kill(-j->pgid, SIGCONT);
}

/* Hand the guard the loss rule's deadline as it stands (zkl_client_loss_
 * deadline: S + 9T/20, the instant zkl itself is told the session lost):
 * SIGTERM T/40 after it, by when a running zkl has ended COMMAND itself
 * and moved the deadline (below), and SIGKILL --kill-after later but by
 * T/20 after it, the earliest instant the server may expire the session.
 * So a zkl that is stopped or starved past its session's end cannot leave
 * COMMAND running beside the next holder. *armed is the SIGTERM instant
 * the guard holds (0: none); nothing is sent unless it changes. */
static void guard_renew(struct guard *g, zkl_client *c, long kill_after_ms, int64_t *armed)
{
    int64_t loss = 0;
    int t = zkl_client_session_timeout(c);
    if (zkl_client_loss_deadline(c, &loss) != 0 || loss == 0 || t <= 0)
        return;
    int64_t term = loss + (int64_t)t * 1000000 / 40;
    int64_t kill = loss + (int64_t)t * 1000000 / 20;
    if (kill_after_ms == 0)
        kill = term;
    else if (kill_after_ms < t && term + (int64_t)kill_after_ms * 1000000 < kill)
        kill = term + (int64_t)kill_after_ms * 1000000;
    if (term == *armed)
        return;
    guard_deadline(g, term, kill);
    *armed = term;
}

/* Start COMMAND, in process group `pgid` unless --foreground. Returns 0,
 * or an exit code after saying why not. */
static int spawn(const struct command *cmd, const struct loop *l, pid_t pgid, pid_t *pid)
{
    char **env = child_env(cmd);
    posix_spawnattr_t at;
    if (env == NULL || posix_spawnattr_init(&at) != 0) {
        cli_err("out of memory");
        if (env != NULL)
            free_env(env);
        return EX_OSERR;
    }
    /* COMMAND gets the signal mask zkl started with, not the one zkl reads
     * its signals through. */
    /* And SIGPIPE as zkl found it: zkl ignores it for its own writes. */
    sigset_t def;
    sigemptyset(&def);
    if (cli_sigpipe_default)
        sigaddset(&def, SIGPIPE);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      (cmd->foreground ? 0 : POSIX_SPAWN_SETPGROUP));
    posix_spawnattr_setsigmask(&at, &l->orig);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setpgroup(&at, pgid); /* a group of its own, led by its guard */
    cli_fds_close_on_exec_new();
    int rc = posix_spawnp(pid, cmd->argv[0], NULL, &at, cmd->argv, env);
    posix_spawnattr_destroy(&at);
    free_env(env);
    if (rc == 0)
        return 0;
    cli_err("%s: %s", cmd->argv[0], strerror(rc));
    if (rc == ENOENT)
        return CLI_EXIT_NOTFOUND;
    return rc == ENOMEM || rc == EAGAIN ? EX_OSERR : CLI_EXIT_NOEXEC;
}

int command_run(const struct command *cmd, struct loop *l, zkl_client *c, bool *lost)
{
    int st = zkl_client_state(c);
    if (st == ZKL_STATE_LOST || st == ZKL_STATE_CLOSED) {
        /* Lost between the acquire and now: COMMAND never starts. */
        cli_err("lock %s lost (the ZooKeeper session expired) before COMMAND started", cmd->path);
        *lost = true;
        return 0;
    }
    /* If zkl dies, its guard ends COMMAND: SIGTERM, then SIGKILL after
     * --kill-after, but within a twentieth of the session timeout. By the
     * loss rule (9/20 of it without an answer) zkl counts the lock as lost
     * before the server may expire the session (half of it at the
     * earliest, a tick early): once zkl is gone, a twentieth is all that
     * is sure to be left. */
    long grace = cmd->kill_after_ms;
    int session_ms = zkl_client_session_timeout(c);
    if (session_ms > 0 && session_ms / 20 < grace)
        grace = session_ms / 20;
    struct guard g;
    int rc = guard_start(&g, !cmd->foreground, grace);
    if (rc != 0)
        return rc;
    /* Armed before COMMAND exists. */
    int64_t armed = 0;
    guard_renew(&g, c, cmd->kill_after_ms, &armed);
    struct job j = {.group = !cmd->foreground,
                    .pgid = g.pid,
                    .tty = cmd->foreground ? -1 : tty_to_hand_over()};
    rc = spawn(cmd, l, g.pid, &j.pid);
    if (rc != 0) {
        guard_stop(&g);
        if (j.tty >= 0)
            close(j.tty);
        return rc;
    }
    pid_t pid = j.pid;
    /* With --foreground the guard learns COMMAND's pid only now: zkl's
     * death in between leaves COMMAND to run alone. */
    if (cmd->foreground)
        guard_watch(&g, pid);
    if (j.tty >= 0)
        tty_give(j.tty, j.pgid);

    /* The library says when the session is lost: at its expiry, or when
     * by the loss rule (zkl.h) the server may expire it soon, connected or
     * not. Until then a dropped connection is waited out. */
    int64_t kill_at = -1;
    int64_t renew_at = -1; /* when to look at the loss rule's deadline again */
    int status = 0;
    bool ending = false; /* SIGTERM sent: a loss or a revocation */
    for (;;) {
        /* COMMAND is signalled first, and only then is it said: a
         * message never delays the signal (cli_err never blocks). */
        if (!*lost && (st == ZKL_STATE_LOST || st == ZKL_STATE_CLOSED)) {
            *lost = true;
            if (!ending) {
                job_signal(&j, cmd->kill_after_ms == 0 ? SIGKILL : SIGTERM);
                kill_at = cmd->kill_after_ms == 0 ? -1 : cli_now_ms() + cmd->kill_after_ms;
            }
            ending = true;
            /* The guard keeps zkl's SIGKILL instant from now on, in case
             * zkl stops again. */
            int64_t at = kill_at >= 0 ? kill_at : cli_now_ms();
            guard_deadline(&g, at * 1000000, at * 1000000);
            armed = at * 1000000;
            cli_err("lock %s lost (its node was deleted, or the ZooKeeper session expired or may "
                    "expire any moment with no answer in time): terminating COMMAND (pid %ld)",
                    cmd->path, (long)pid);
        }
        if (kill_at >= 0 && cli_now_ms() >= kill_at) {
            job_signal(&j, SIGKILL);
            kill_at = -1;
            cli_err("COMMAND (pid %ld) still runs: SIGKILL", (long)pid);
        }
        /* Renewed at least every T/20: keepalives are answered every T/10,
         * which leaves the guard at least about 6T/20 of margin. */
        if (!*lost && (renew_at < 0 || cli_now_ms() >= renew_at)) {
            guard_renew(&g, c, cmd->kill_after_ms, &armed);
            renew_at = cli_now_ms() + (session_ms > 0 ? session_ms / 20 : 500);
        }
        struct event ev;
        loop_next(l, loop_earliest(kill_at, *lost ? -1 : renew_at), &ev);
        if (ev.type == EV_STATE) {
            st = ev.state == ZKL_STATE_LOST || ev.state == ZKL_STATE_CLOSED ? ev.state
                                                                          : (int)zkl_client_state(c);
        } else if (ev.type == EV_LOST) {
            st = ZKL_STATE_LOST; /* the recipe lost our hold (its node is gone) */
        } else if (ev.type == EV_REVOKE && !ending && !*lost) {
            /* --revocable: someone asked us to let go. COMMAND ends as for a
             * loss; the lock is released once it has. */
            job_signal(&j, cmd->kill_after_ms == 0 ? SIGKILL : SIGTERM);
            kill_at = cmd->kill_after_ms == 0 ? -1 : cli_now_ms() + cmd->kill_after_ms;
            ending = true;
            cli_err("lock %s: release requested (revocation): terminating COMMAND (pid %ld)",
                    cmd->path, (long)pid);
        } else if (ev.type == EV_SIGNAL && ev.sig == SIGCHLD) {
            /* Looked at first, not reaped: the guard stands down while
             * COMMAND's pid is still COMMAND's. */
            siginfo_t si;
            si.si_pid = 0;
            if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT |
                                                (j.group ? WSTOPPED : 0)) != 0 ||
                si.si_pid != pid)
                continue;
            if (si.si_code != CLD_STOPPED && si.si_code != CLD_TRAPPED)
                guard_stop(&g);
            pid_t r = waitpid(pid, &status, WNOHANG | (j.group ? WUNTRACED : 0));
            if (r == pid && WIFSTOPPED(status))
                job_stopped(&j, status);
            else if (r == pid)
                break;
        } else if (ev.type == EV_SIGNAL && (j.group || ev.code != SI_KERNEL)) {
            /* In zkl's group (--foreground), a terminal's signal reached
             * COMMAND already, as it went to the whole foreground process
             * group: pass on only the others. A group of COMMAND's own gets
             * every one, from zkl (unless it has the terminal, whose
             * signals then go to it and not to zkl). */
            job_signal(&j, ev.sig);
        }
    }
    guard_stop(&g); /* if COMMAND's end was seen only by waitpid */
    if (j.tty >= 0) {
        tty_give(j.tty, getpgrp()); /* the terminal is zkl's job's again */
        close(j.tty);
    }
    /* zkl did not run (stopped, starved) until past the deadline its guard
     * held: the guard ended COMMAND, and the session may be gone. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!*lost && armed != 0 && (int64_t)now.tv_sec * 1000000000 + now.tv_nsec >= armed) {
        *lost = true;
        cli_err("lock %s lost: zkl did not run until past its session's deadline (stopped?); "
                "COMMAND was ended by its guard",
                cmd->path);
    }
    /* The session's end may be known only now. */
    if (!*lost && zkl_client_state(c) == ZKL_STATE_LOST) {
        *lost = true;
        cli_err("lock %s lost (the ZooKeeper session expired) while COMMAND ran", cmd->path);
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
