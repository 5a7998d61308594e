/* COMMAND's guard: a small process of zkl's that ends COMMAND when zkl
 * itself ends without having done so, whatever ended it (SIGKILL, the OOM
 * killer, a signal zkl does not handle, a crash). zkl cannot do that
 * itself once dead, and COMMAND, in a process group of its own, gets no
 * signal of a terminal that zkl's death could have caused.
 *
 * The guard is forked before COMMAND starts and leads the process group
 * COMMAND then joins, so the group to end is known before COMMAND exists
 * and its id stays COMMAND's group's while the guard lives. It holds one
 * end of a socket pair whose other end only zkl holds: when zkl ends, for
 * whatever reason, the kernel closes zkl's end, the guard reads the end of
 * file and ends the group (SIGTERM, then SIGKILL after the grace). zkl
 * stands it down with a byte before it reaps COMMAND. With --foreground,
 * COMMAND is in zkl's process group: zkl tells the guard COMMAND's pid,
 * which the guard then ends alone.
 *
 * The guard is a fork of a process with threads: it calls only
 * async-signal-safe functions, and never returns. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lockrun.h"

#define GUARD_STOP 'q'
#define GUARD_PID 'p'

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static _Noreturn void guard_main(int fd, bool group, long grace_ms)
{
    /* Deaf to every signal but SIGKILL: its group gets zkl's signals for
     * COMMAND, and the terminal's. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            (void)sigaction(s, &ign, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Nothing of zkl's stays open here but the socket: not its ZooKeeper
     * connection, nor the pipes its readers wait to see closed. */
    int null = open("/dev/null", O_RDWR);
    if (fd != 3 && dup2(fd, 3) < 0)
        _exit(1);
    for (int i = 0; i <= 2; i++)
        if (null >= 0)
            dup2(null, i);
    close_range(4, ~0U, 0);
    if (null > 3)
        close(null);
    pid_t target = group ? -getpid() : 0;
    for (;;) {
        unsigned char b;
        ssize_t r = read(3, &b, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 1 && b == GUARD_STOP)
            _exit(0);
        if (r == 1 && b == GUARD_PID) {
            pid_t pid;
            unsigned char *p = (unsigned char *)&pid;
            size_t got = 0;
            while (got < sizeof pid) {
                r = read(3, p + got, sizeof pid - got);
                if (r > 0)
                    got += (size_t)r;
                else if (r == 0 || errno != EINTR)
                    break;
            }
            if (got == sizeof pid && pid > 0)
                target = pid;
            if (got < sizeof pid)
                break;
            continue;
        }
        if (r == 1)
            continue;
        break; /* end of file: zkl is gone */
    }
    if (target != 0) {
        kill(target, grace_ms == 0 ? SIGKILL : SIGTERM);
        kill(target, SIGCONT);
        if (grace_ms > 0) {
            sleep_ms(grace_ms);
            kill(target, SIGKILL); /* the guard's own end too, in a group */
        }
    }
    _exit(0);
}

int guard_start(struct guard *g, bool group, long grace_ms)
{
    *g = (struct guard){.pid = -1, .fd = -1};
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        cli_err("cannot start COMMAND's guard: %s", strerror(errno));
        return EX_OSERR;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        if (group)
            setpgid(0, 0);
        guard_main(sv[1], group, grace_ms);
    }
    int e = errno;
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        cli_err("cannot start COMMAND's guard: %s", strerror(e));
        return EX_OSERR;
    }
    /* Here too, so that COMMAND can join the group whichever runs first. */
    if (group)
        setpgid(pid, pid);
    g->pid = pid;
    g->fd = sv[0];
    g->group = group;
    return 0;
}

void guard_watch(struct guard *g, pid_t pid)
{
    unsigned char msg[1 + sizeof pid];
    msg[0] = GUARD_PID;
    memcpy(msg + 1, &pid, sizeof pid);
    if (g->fd >= 0)
        (void)send(g->fd, msg, sizeof msg, MSG_NOSIGNAL);
}

void guard_stop(struct guard *g)
{
    if (g->fd < 0)
        return;
    unsigned char b = GUARD_STOP;
    (void)send(g->fd, &b, 1, MSG_NOSIGNAL);
    close(g->fd);
    g->fd = -1;
    /* It ends at once; or it is gone already (a SIGKILL to the group). */
    while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    g->pid = -1;
}
