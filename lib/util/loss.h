/* The loss rule: when a holder is told its session, and so its lock, is
 * lost (lib/util/loss.c: pure). Defined once here: the session's keeper
 * applies it to the clock, the simulation (tests/sim) to virtual time, and
 * the tests size their bounds with it. */
#ifndef ZKL_LOSS_H
#define ZKL_LOSS_H

#include <stdbool.h>
#include <stdint.h>

/* How long a failed acquire (blocking or asynchronous) waits, while
 * connected, for the server to confirm its node's delete before it
 * returns: a failure leaves nothing behind that it could have removed. */
#define ZKL__GRACE_NS (500 * (int64_t)1000000)

/* The keeper's keepalive period while connected: T/10 (ns) for the
 * session timeout T the server granted (ms); 0 for one not known (<= 0). */
int64_t zkl__keepalive_ns(int timeout_ms);
/* Until when an acquire waits, at `now`, for its `deadline`: that
 * deadline, or for a try once (a deadline not after now) the session
 * timeout T (ms) from now, within which its policy's first answer (or a
 * request's answer) is awaited; *try_once says which (may be NULL). */
int64_t zkl__wait_until(int64_t deadline, int64_t now, int timeout_ms, bool *try_once);

/* The session timeout T the rule counts with (ms): the one the server
 * granted, or the one asked for while none has been granted yet. */
int zkl__loss_timeout_ms(int negotiated_ms, int requested_ms);
/* How long after the send of the last request whose answer arrived a
 * client presumes its session lost: 9T/20 (ns), a twentieth of T before
 * the server's earliest expiry; 0 for a timeout not known (<= 0). */
int64_t zkl__loss_after_ns(int timeout_ms);
/* When a client presumes its session lost: S + 9T/20 for the send time S
 * (monotonic ns) of the last request whose answer arrived and the session
 * timeout T (ms); 0 when either is not known yet. */
int64_t zkl__loss_at(int64_t last_ok_ns, int timeout_ms);

#endif
