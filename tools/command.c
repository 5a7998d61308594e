/* COMMAND's life under a lock: its environment, its start, the signals zkl
 * passes on, and its end when the lock is lost. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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

/* Start COMMAND. Returns 0, or an exit code after saying why not. */
static int spawn(const struct command *cmd, const struct loop *l, pid_t *pid)
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
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigmask(&at, &l->orig);
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
    pid_t pid;
    int rc = spawn(cmd, l, &pid);
    if (rc != 0)
        return rc;

    /* The library says when the session is lost: at its expiry, or when
     * by the loss rule (zkl.h) the server may expire it soon, connected or
     * not. Until then a dropped connection is waited out. */
    int64_t kill_at = -1;
    int status = 0;
    bool ending = false; /* SIGTERM sent: a loss or a revocation */
    for (;;) {
        if (!*lost && (st == ZKL_STATE_LOST || st == ZKL_STATE_CLOSED)) {
            *lost = true;
            cli_err("lock %s lost (its node was deleted, or the ZooKeeper session expired or may "
                    "expire any moment with no answer in time): terminating COMMAND (pid %ld)",
                    cmd->path, (long)pid);
            if (!ending) {
                kill(pid, cmd->kill_after_ms == 0 ? SIGKILL : SIGTERM);
                kill_at = cmd->kill_after_ms == 0 ? -1 : cli_now_ms() + cmd->kill_after_ms;
            }
            ending = true;
        }
        if (kill_at >= 0 && cli_now_ms() >= kill_at) {
            cli_err("COMMAND (pid %ld) still runs: SIGKILL", (long)pid);
            kill(pid, SIGKILL);
            kill_at = -1;
        }
        struct event ev;
        loop_next(l, kill_at, &ev);
        if (ev.type == EV_STATE) {
            st = ev.state == ZKL_STATE_LOST || ev.state == ZKL_STATE_CLOSED ? ev.state
                                                                          : (int)zkl_client_state(c);
        } else if (ev.type == EV_LOST) {
            st = ZKL_STATE_LOST; /* the recipe lost our hold (its node is gone) */
        } else if (ev.type == EV_REVOKE && !ending && !*lost) {
            /* --revocable: someone asked us to let go. COMMAND ends as for a
             * loss; the lock is released once it has. */
            cli_err("lock %s: release requested (revocation): terminating COMMAND (pid %ld)",
                    cmd->path, (long)pid);
            kill(pid, cmd->kill_after_ms == 0 ? SIGKILL : SIGTERM);
            kill_at = cmd->kill_after_ms == 0 ? -1 : cli_now_ms() + cmd->kill_after_ms;
            ending = true;
        } else if (ev.type == EV_SIGNAL && ev.sig == SIGCHLD) {
            pid_t r = waitpid(pid, &status, WNOHANG);
            if (r == pid)
                break;
        } else if (ev.type == EV_SIGNAL && ev.code != SI_KERNEL) {
            /* A terminal's signal reached COMMAND already, as it went to
             * the whole foreground process group: pass on only the others. */
            kill(pid, ev.sig);
        }
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
