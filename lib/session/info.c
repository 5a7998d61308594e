/* What a client tells of its session: state, id, timeout, counters. */
#include "session.h"

enum zkl_state zkl_client_state(zkl_client *c)
{
    if (c == NULL || zkl__forked(c))
        return ZKL_STATE_CLOSED;
    pthread_mutex_lock(&c->mu);
    enum zkl_state st = (enum zkl_state)c->state;
    pthread_mutex_unlock(&c->mu);
    return st;
}

int zkl_client_session_id(zkl_client *c, int64_t *out)
{
    int rc = zkl__client_lock(c, out != NULL);
    if (rc != 0)
        return rc;
    *out = c->sid;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int zkl_client_session_timeout(zkl_client *c)
{
    int rc = zkl__client_lock(c, true);
    if (rc != 0)
        return rc;
    int ms = zkl__loss_timeout_ms(c->negotiated_ms, c->timeout_ms);
    pthread_mutex_unlock(&c->mu);
    return ms;
}

int zkl_client_loss_deadline(zkl_client *c, int64_t *out)
{
    int rc = zkl__client_lock(c, out != NULL);
    if (rc != 0)
        return rc;
    /* The keeper gives the session up at this instant (lib/session/
     * keeper.c): only for a handle of ours, and only while a session may
     * still be alive. */
    bool pending = c->owns_zh && c->sid != 0 &&
                   (c->state == ZKL_STATE_CONNECTED || c->state == ZKL_STATE_RECONNECTED ||
                    c->state == ZKL_STATE_SUSPENDED);
    *out = pending ? zkl__keeper_loss_at(c) : 0;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int zkl_client_get_stats(zkl_client *c, zkl_client_stats *out)
{
    int rc = zkl__client_lock(c, out != NULL);
    if (rc != 0)
        return rc;
    zkl__client_stats(c, out);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

void zkl__client_stats(zkl_client *c, zkl_client_stats *st)
{
    *st = c->stats;
    if (c->sl)
        c->sl->add_stats(c->sl_ctx, st);
}
