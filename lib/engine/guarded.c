/* Guarded writes: a multi-op that applies only while the holder's node
 * still exists, that is only while the lock is really held. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int zkl__guarded_multi(zkl__node *n, int count, const zoo_op_t *ops,
                            zoo_op_result_t *results)
{
    zkl_client *c = ZKL__NODE_CLIENT(n);
    if (count < 1 || ops == NULL)
        return ZKL_EINVAL;
    int bad = zkl__validate_ops(c, n->path, count, ops); /* nothing the server refuses */
    if (bad != 0)
        return bad;
    zoo_op_t *all = calloc((size_t)count + 1, sizeof *all);
    zoo_op_result_t *res = calloc((size_t)count + 1, sizeof *res);
    if (all == NULL || res == NULL) {
        free(all);
        free(res);
        return ZKL_ENOMEM;
    }
    /* The check goes first: the server applies the writes only while our
     * node exists, that is only while the lock is really held. */
    c->zapi->check_op_init(&all[0], n->path, -1);
    memcpy(all + 1, ops, (size_t)count * sizeof *ops);
    /* c->hlock (read) keeps the keeper from closing the handle while the
     * call runs without c->mu. */
    pthread_rwlock_rdlock(&c->hlock);
    pthread_mutex_lock(&c->mu);
    bool ok = zkl__node_is_held(n) && c->state != ZKL_STATE_LOST && c->zh != NULL;
    zhandle_t *zh = c->zh;
    if (ok) {
        c->stats.requests++;
        zkl__metrics_sent(ZKL__NODE_ENGINE(n)->metrics, &n->meter);
    }
    pthread_mutex_unlock(&c->mu);
    int err;
    if (!ok) {
        err = ZKL_ELOST;
    } else {
        int rc = c->zapi->multi(zh, count + 1, all, res);
        if (rc == ZOK)
            err = 0;
        else if (zkl__zk_conn_error(rc))
            err = ZKL_ECONNLOSS; /* applied or not: unknown */
        else if (res[0].err == ZNONODE || zkl__zk_session_error(rc))
            err = ZKL_ELOST;
        else
            err = zkl__err_from_zk(rc);
    }
    pthread_rwlock_unlock(&c->hlock);
    if (results)
        memcpy(results, res + 1, (size_t)count * sizeof *res);
    free(all);
    free(res);
    return err;
}
