/* SIGPIPE kept from the program while the library writes to a socket or
 * starts the threads that will: one job, used by the session's open, close
 * and keeper, and by the TLS probe. */
#include <signal.h>
#include <time.h>

#include "session.h"

/* ---- SIGPIPE ----------------------------------------------------------
 * libzookeeper_mt writes its plain sockets with MSG_NOSIGNAL, but a TLS
 * connection through OpenSSL's socket BIO, with write(2): a server that
 * drops a handshake raises SIGPIPE, which kills a program that never asked
 * for sockets. The threads that write are ours to set up: the io and
 * completion threads zookeeper_init starts (they inherit the mask of the
 * thread that calls it), our keeper, the thread that calls zookeeper_close
 * (it sends the close itself), and the opening thread's TLS probe
 * (lib/session/probe.c). Each gets SIGPIPE blocked; a calling thread's
 * mask is put back after, and a SIGPIPE raised meanwhile is taken away
 * rather than delivered then. */

void zkl__nopipe_begin(struct zkl__nopipe *np)
{
    sigset_t pipe, pend;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &np->old);
    np->pending = sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE);
}

void zkl__nopipe_end(struct zkl__nopipe *np)
{
    sigset_t pipe, pend;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!np->pending && !sigismember(&np->old, SIGPIPE) && sigpending(&pend) == 0 &&
        sigismember(&pend, SIGPIPE)) {
        struct timespec zero = {0, 0};
        (void)sigtimedwait(&pipe, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &np->old, NULL);
}
