/* What every file of the library uses: the monotonic clock, deadlines and
 * waits on them, and the one mapping from ZooKeeper's return codes to
 * ZKL_E... codes. */
#include <errno.h>
#include <time.h>

#include "internal.h"

/* ---- time ------------------------------------------------------------ */

int64_t zkl__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t zkl__deadline(long timeout_ms)
{
    int64_t now = zkl__now_ns();
    /* A timeout too large to add (LONG_MAX, say) means forever, not a
     * deadline that wrapped into the past. */
    if (timeout_ms < 0 || (int64_t)timeout_ms > (ZKL__NO_DEADLINE - now) / 1000000)
        return ZKL__NO_DEADLINE;
    return now + (int64_t)timeout_ms * 1000000;
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
    if (deadline == ZKL__NO_DEADLINE) {
        pthread_cond_wait(cv, mu);
        return 0;
    }
    if (zkl__now_ns() >= deadline)
        return ETIMEDOUT;
    struct timespec ts = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
    return pthread_cond_timedwait(cv, mu, &ts) == ETIMEDOUT ? ETIMEDOUT : 0;
}

/* ---- ZooKeeper's codes ------------------------------------------------- */

/* One class per code. ZSESSIONMOVED is a connection error, not a lost
 * session: the server refuses a request that arrives on a connection the
 * session has since left for another server. The session, and every node
 * and hold of it, lives on; only that request's outcome has to be looked
 * up again. Calling it a loss would make a holder give up a lock it still
 * holds, and the engine drop a node that still exists (an orphan). */
static int zk_class(int rc)
{
    switch (rc) {
    case ZOK:
        return 0;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT: /* the server stalled the request (ZOOKEEPER-4537) */
    case ZSESSIONMOVED:
        return ZKL_ECONNLOSS;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZCLOSING:
        return ZKL_ELOST;
    case ZNOAUTH:
    case ZAUTHFAILED:
        return ZKL_ENOAUTH;
    case ZBADARGUMENTS:
        return ZKL_EINVAL;
    case ZSYSTEMERROR:
        return ZKL_ESYS;
    default:
        return ZKL_EZK;
    }
}

int zkl__err_from_zk(int rc)
{
    zkl__note_mapped(rc);
    int err = zk_class(rc);
    if (err == ZKL_EZK)
        zkl__detail_zk(rc);
    return err;
}

bool zkl__zk_conn_error(int rc)
{
    return zk_class(rc) == ZKL_ECONNLOSS;
}

bool zkl__zk_session_error(int rc)
{
    return zk_class(rc) == ZKL_ELOST;
}
