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
 * A zkl that is stopped (SIGSTOP, a debugger) or starved is not gone, yet
 * cannot end COMMAND when its session is lost. So zkl also hands the guard
 * two instants of CLOCK_MONOTONIC, renewed as the server answers: when to
 * send SIGTERM and when SIGKILL unless renewed first, both from the loss
 * rule (zkl_client_loss_deadline), so that COMMAND has ended before the
 * server can expire the session. The guard keeps them by its own clock,
 * whatever becomes of zkl.
 *
 * The guard is a fork of a process with threads: it calls only
 * async-signal-safe functions, and never returns. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lockrun.h"

#define GUARD_STOP 'q'
#define GUARD_PID 'p'
#define GUARD_DEADLINE 'd'

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t at_ns)
{
    for (int64_t now = mono_ns(); now < at_ns; now = mono_ns()) {
        int64_t d = at_ns - now;
        struct timespec ts = {(time_t)(d / 1000000000), (long)(d % 1000000000)};
        nanosleep(&ts, NULL);
    }
}

/* n bytes of the socket, or false at its end. */
static bool read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (unsigned char *)buf + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0 || errno != EINTR)
            return false;
    }
    return true;
}

/* End the target: SIGTERM (SIGCONT too, for a stopped one) at once, then
 * SIGKILL at kill_ns (at once if that is no later). */
static _Noreturn void end_target(pid_t target, int64_t kill_ns)
{
    if (target != 0) {
        bool now = kill_ns <= mono_ns();
        kill(target, now ? SIGKILL : SIGTERM);
        kill(target, SIGCONT);
        if (!now) {
            sleep_until(kill_ns);
            kill(target, SIGKILL); /* the guard's own end too, in a group */
        }
    }
    _exit(0);
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
    int64_t term_ns = 0, kill_ns = 0; /* zkl's deadline; 0: none */
    for (;;) {
        int wait_ms = -1;
        if (term_ns != 0) {
            int64_t left = term_ns - mono_ns();
            if (left <= 0)
                end_target(target, kill_ns); /* zkl did not renew in time */
            wait_ms = left / 1000000 >= 60000 ? 60000 : (int)(left / 1000000) + 1;
        }
        struct pollfd pfd = {.fd = 3, .events = POLLIN};
        int n = poll(&pfd, 1, wait_ms);
        if (n == 0 || (n < 0 && errno == EINTR))
            continue;
        unsigned char b;
        ssize_t r = read(3, &b, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 1 && b == GUARD_STOP)
            _exit(0);
        if (r == 1 && b == GUARD_PID) {
            pid_t pid;
            if (!read_full(3, &pid, sizeof pid))
                break;
            if (pid > 0)
                target = pid;
            continue;
        }
        if (r == 1 && b == GUARD_DEADLINE) {
            int64_t at[2];
            if (!read_full(3, at, sizeof at))
                break;
            term_ns = at[0];
            kill_ns = at[1];
            continue;
        }
        if (r == 1)
            continue;
        break; /* end of file: zkl is gone */
    }
    end_target(target, grace_ms == 0 ? 0 : mono_ns() + (int64_t)grace_ms * 1000000);
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

void guard_deadline(struct guard *g, int64_t term_ns, int64_t kill_ns)
{
    unsigned char msg[1 + 2 * sizeof(int64_t)];
    int64_t at[2] = {term_ns, kill_ns};
    msg[0] = GUARD_DEADLINE;
    memcpy(msg + 1, at, sizeof at);
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
