/* zkl's messages on stderr, which may be a pipe whose reader is gone or
 * stalls. Once cli_errout_start ran (zkl lock), a message is only put in
 * a buffer here, and a thread of its own writes it: the thread that acts
 * (signals COMMAND, releases the lock) never waits for a reader, and never
 * gets SIGPIPE (zkl ignores it: the write fails with EPIPE, and the
 * message is dropped). Before, a message is written at once. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define RING 65536

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char ring[RING];
static size_t head, len;    /* the bytes waiting: ring[head..], len of them */
static bool started, busy; /* busy: the writer has bytes out of the ring */

/* Write all of buf[n] to stderr, or give up on an error. */
static void write_all(const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        n -= (size_t)w;
    }
}

static void *writer_main(void *arg)
{
    (void)arg;
    char buf[4096];
    pthread_mutex_lock(&mu);
    for (;;) {
        while (len == 0)
            pthread_cond_wait(&cv, &mu);
        size_t n = len < sizeof buf ? len : sizeof buf;
        size_t first = RING - head < n ? RING - head : n;
        memcpy(buf, ring + head, first);
        memcpy(buf + first, ring, n - first);
        head = (head + n) % RING;
        len -= n;
        busy = true;
        pthread_mutex_unlock(&mu);
        write_all(buf, n);
        pthread_mutex_lock(&mu);
        busy = false;
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}

void cli_errout_start(void)
{
    pthread_t th;
    pthread_mutex_lock(&mu);
    if (!started && pthread_create(&th, NULL, writer_main, NULL) == 0) {
        pthread_detach(th);
        started = true;
    }
    pthread_mutex_unlock(&mu);
}

void cli_errout_write(const char *msg, size_t n)
{
    pthread_mutex_lock(&mu);
    if (!started) {
        pthread_mutex_unlock(&mu);
        write_all(msg, n);
        return;
    }
    /* A message that does not fit while the reader stalls is dropped
     * whole: never half a line. */
    if (n <= RING - len) {
        size_t tail = (head + len) % RING;
        size_t first = RING - tail < n ? RING - tail : n;
        memcpy(ring + tail, msg, first);
        memcpy(ring, msg + first, n - first);
        len += n;
        pthread_cond_signal(&cv);
    }
    pthread_mutex_unlock(&mu);
}

void cli_errout_flush(long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&mu);
    while (started && (len > 0 || busy))
        if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&mu);
}
