/* The monotonic clock, deadlines and waits on them. */
#include <errno.h>
#include <limits.h>
#include <time.h>

#include "util.h"

const struct zkl__virtual *zkl__virtual;

void zkl__set_virtual(const struct zkl__virtual *v)
{
    zkl__virtual = v;
}

int64_t zkl__now_ns(void)
{
    if (zkl__virtual != NULL)
        return zkl__virtual->now(zkl__virtual->arg);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t zkl__deadline(long timeout_ms)
{
    return zkl__deadline_at(timeout_ms, zkl__now_ns());
}

int64_t zkl__deadline_at(long timeout_ms, int64_t now)
{
    /* A timeout too large to add (LONG_MAX, say) means forever, not a
     * deadline that wrapped into the past. */
    if (timeout_ms < 0 || (int64_t)timeout_ms > (ZKL__NO_DEADLINE - now) / 1000000)
        return ZKL__NO_DEADLINE;
    return now + (int64_t)timeout_ms * 1000000;
}

long zkl__remaining_ms(long timeout_ms, int64_t deadline, int64_t now)
{
    if (timeout_ms < 0)
        return -1; /* ZKL_WAIT_FOREVER */
    int64_t left = deadline - now;
    if (left <= 0)
        return 0;
    int64_t ms = left / 1000000 + (left % 1000000 != 0);
    return ms > LONG_MAX ? LONG_MAX : (long)ms;
}

int zkl__cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return ZKL_ESYS;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc == 0 ? 0 : ZKL_ESYS;
}

int zkl__cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline)
{
    if (zkl__virtual != NULL)
        return zkl__virtual->wait(zkl__virtual->arg, cv, mu, deadline);
    if (deadline == ZKL__NO_DEADLINE) {
        pthread_cond_wait(cv, mu);
        return 0;
    }
    /* A deadline already past times out at once: no clock reading of our
     * own ahead of it, which a waiter that just read one would repeat. */
    struct timespec ts = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
    return pthread_cond_timedwait(cv, mu, &ts) == ETIMEDOUT ? ETIMEDOUT : 0;
}
