/* What an acquire waiting on a node returns now: the blocking call and the
 * asynchronous request judge alike, by this one rule. */
#include "machine.h"

int zkl__verdict(const zkl__cnode *n, const zkl__wait_view *w)
{
    const struct zkl__core *k = n->core;
    if (w->cancelled)
        return ZKL_ECANCELED;
    if (n->st == ZKL__N_HELD && current(n))
        return 0;
    if (n->err != 0)
        return n->err;
    if (n->st == ZKL__N_LOST)
        return ZKL_ELOST; /* held, and deleted before it was taken */
    if (!current(n))
        return k->closing ? ZKL_ECLOSED : ZKL_ELOST;
    if (w->client_cancel || k->cancelled)
        return ZKL_ECANCELED;
    /* A try once does not wait for a reconnect (the session timeout,
     * perhaps): the shell wakes waiters when the connection goes. */
    if (n->patience != ZKL__P_DEADLINE && !k->connected)
        return ZKL_ECONNLOSS;
    if (n->patience == ZKL__P_ANSWERED)
        return ZKL_ETIMEDOUT;
    if (w->deadline_past)
        return ZKL_ETIMEDOUT;
    return 1;
}
