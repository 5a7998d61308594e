/* The event loop of `zkl lock`: signals through a signalfd, the client's
 * state changes and the lock thread's news through a pipe. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"
#include "lockrun.h"

int loop_open(struct loop *l)
{
    *l = (struct loop){.sfd = -1, .rfd = -1, .wfd = -1};
    /* SIGCHLD must not be ignored, or COMMAND's status would be thrown
     * away. The others keep their disposition: ignored ones (nohup) stay
     * ignored, for zkl and COMMAND alike. */
    signal(SIGCHLD, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGCHLD);
    int p[2];
    if (sigprocmask(SIG_BLOCK, &set, &l->orig) != 0 ||
        (l->sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0 || pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        cli_err("cannot set up signals: %s", strerror(errno));
        loop_close(l);
        return EX_OSERR;
    }
    l->rfd = p[0];
    l->wfd = p[1];
    /* From here on the loop's thread acts on what it reads (it signals
     * COMMAND): it must never wait for a reader of stderr. */
    cli_errout_start();
    return 0;
}

void loop_close(struct loop *l)
{
    if (l->sfd >= 0)
        close(l->sfd);
    if (l->rfd >= 0)
        close(l->rfd);
    if (l->wfd >= 0)
        close(l->wfd);
    l->sfd = l->rfd = l->wfd = -1;
}

void loop_notify(int wfd, unsigned char b)
{
    /* One byte per event. Readers also look at the state itself, so a byte
     * lost to a full pipe (64 KiB of state changes) changes nothing. */
    ssize_t r = write(wfd, &b, 1);
    (void)r;
}

void loop_on_state(zkl_client *c, enum zkl_state state, void *arg)
{
    (void)c;
    loop_notify(*(int *)arg, (unsigned char)state);
}

/* When COMMAND's end and the session's end arrive together, the session's
 * end must count: the pipe goes first. */
void loop_next(struct loop *l, int64_t deadline, struct event *ev)
{
    ev->type = EV_NONE;
    for (;;) {
        if (l->head < l->tail) {
            unsigned char b = l->buf[l->head++];
            ev->type = b == LOOP_NEWS  ? EV_NEWS
                       : b == LOOP_EOF ? EV_EOF
                       : b == LOOP_LOST ? EV_LOST
                       : b == LOOP_REVOKE ? EV_REVOKE
                                        : EV_STATE;
            ev->state = b;
            return;
        }
        int timeout = -1;
        if (deadline >= 0) {
            int64_t left = deadline - cli_now_ms();
            timeout = left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
        }
        struct pollfd p[2] = {{l->rfd, POLLIN, 0}, {l->sfd, POLLIN, 0}};
        int n = poll(p, 2, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && deadline >= 0 && cli_now_ms() < deadline)
            continue; /* a long deadline is waited for in slices */
        if (n <= 0)
            return;
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

void loop_drain(struct loop *l)
{
    l->head = l->tail = 0;
    while (read(l->rfd, l->buf, sizeof l->buf) > 0)
        ;
}

int64_t loop_earliest(int64_t a, int64_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}
