/* The lock parents a refused attempt created, deleted again. A create the
 * server refuses (ACL entries that shut the client out) leaves behind the
 * parents made on the way, with those entries: every later client would be
 * refused below them. Both front ends (the blocking wait and the
 * asynchronous requests) start this once the attempt failed and its own
 * node is going, and wait for the answers within their grace. */
#include <stdlib.h>

#include "engine.h"

struct zkl__unmake {
    zkl_client *c;
    zkl__made m;          /* outermost first; deleted deepest first */
    size_t sent, left;    /* deletes sent, and still unanswered */
    size_t bad;           /* the first one refused (index into the send order) */
    int bad_rc;           /* its code, 0: none refused */
    zkl__unmake_fn fn;    /* told of each answer, or NULL once dropped */
    void *arg;
};

bool zkl__node_refused_create(const zkl__node *n, int err)
{
    return n->cn.zk_rc != 0 && (err == ZKL_EINVAL || err == ZKL_ENOAUTH);
}

static void unmake_free(struct zkl__unmake *u)
{
    zkl__made_free(&u->m);
    free(u);
}

/* On ZooKeeper's completion thread: answers come in the order sent, so
 * the k-th answer is the k-th delete. */
static void deleted(int rc, const void *data)
{
    struct zkl__unmake *u = (struct zkl__unmake *)data;
    zkl_client *c = u->c;
    pthread_mutex_lock(&c->mu);
    size_t k = u->sent - u->left;
    u->left--;
    /* Gone already, or someone else's node under it: the parent stays,
     * which is no failure of ours. */
    if (rc != ZOK && rc != ZNONODE && rc != ZNOTEMPTY && u->bad_rc == 0) {
        u->bad = k;
        u->bad_rc = rc;
    }
    if (u->fn != NULL)
        u->fn(u->arg);
    else if (u->left == 0)
        unmake_free(u);
    pthread_mutex_unlock(&c->mu);
}

struct zkl__unmake *zkl__node_unmake(zkl__node *n, int err, zkl__unmake_fn fn, void *arg)
{
    if (n->made.n == 0 || !zkl__node_refused_create(n, err))
        return NULL;
    zkl_client *c = ZKL__NODE_CLIENT(n);
    struct zkl__unmake *u = calloc(1, sizeof *u);
    if (u == NULL)
        return NULL; /* no memory: the parents stay, as without this */
    u->c = c;
    u->m = n->made;
    n->made = (zkl__made){0};
    u->fn = fn;
    u->arg = arg;
    /* On the live handle, as the shell sends (c->mu held keeps it):
     * pipelined deepest first, each finds its children gone. A parent is
     * no session's, so a newer session may delete it too. */
    zhandle_t *zh = c->closing ? NULL : c->zh;
    for (size_t k = 0; zh != NULL && k < u->m.n; k++) {
        int rc = c->zapi->adelete(zh, u->m.paths[u->m.n - 1 - k], -1, deleted, u);
        if (rc != ZOK) {
            u->bad = k;
            u->bad_rc = rc;
            break;
        }
        c->stats.requests++;
        u->sent++;
        u->left++;
    }
    if (zh == NULL)
        u->bad_rc = ZINVALIDSTATE; /* closing, or between sessions: they stay */
    return u;
}

bool zkl__unmake_pending(const struct zkl__unmake *u)
{
    return u != NULL && u->left > 0;
}

const char *zkl__unmake_refused(const struct zkl__unmake *u, int *rc)
{
    if (u == NULL || u->bad_rc == 0)
        return NULL;
    *rc = u->bad_rc;
    return u->m.paths[u->m.n - 1 - u->bad];
}

void zkl__unmake_drop(struct zkl__unmake *u)
{
    if (u == NULL)
        return;
    u->fn = NULL;
    if (u->left == 0)
        unmake_free(u); /* else its last answer frees it */
}
