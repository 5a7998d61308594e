/* The loss rule: when a client presumes its session lost (include/zkl.h,
 * docs/failures.md). Pure, so that the keeper (lib/session/keeper.c)
 * applies it to the clock and the simulation (tests/sim) to virtual time,
 * by the same code.
 *
 * The server touched the session no earlier than the send time S of the
 * last request whose answer arrived (`last_ok_ns`). The leader expires a
 * session one timeout T after the last touch it knows of; a follower
 * passes its touches on about once a tick, and a tick is at most T/2 (the
 * server grants no less than two ticks), so the leader may count from as
 * early as S - T/2: the earliest expiry is S + T/2. The client presumes
 * the session lost a twentieth of T before that, at S + 9T/20, connected
 * or not: a server that stopped answering (frozen, partitioned without a
 * reset) is not noticed as a disconnection before 2T/3. */
#include <stddef.h>

#include "loss.h"

int zkl__loss_timeout_ms(int negotiated_ms, int requested_ms)
{
    return negotiated_ms > 0 ? negotiated_ms : requested_ms;
}

int64_t zkl__loss_after_ns(int timeout_ms)
{
    if (timeout_ms <= 0)
        return 0;
    return (int64_t)timeout_ms * 9 / 20 * 1000000;
}

int64_t zkl__loss_at(int64_t last_ok_ns, int timeout_ms)
{
    if (timeout_ms <= 0 || last_ok_ns == 0)
        return 0;
    return last_ok_ns + zkl__loss_after_ns(timeout_ms);
}

int64_t zkl__keepalive_ns(int timeout_ms)
{
    return timeout_ms > 0 ? (int64_t)timeout_ms * 1000000 / 10 : 0;
}

int64_t zkl__wait_until(int64_t deadline, int64_t now, int timeout_ms, bool *try_once)
{
    bool once = deadline <= now;
    if (try_once != NULL)
        *try_once = once;
    return once ? now + (int64_t)timeout_ms * 1000000 : deadline;
}
