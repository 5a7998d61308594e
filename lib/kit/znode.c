/* A recipe's own znodes beside its lock queue: the persistent node that
 * records a parameter every participant checks (the semaphore's limit),
 * and the guarded writes made under a held node. */
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "kit.h"

/* ---- the limit node, on the engine ------------------------------------------ */

struct zkl__fill {
    zkl_client *c;
    zhandle_t *zh;
    char *path;
    char *want;
    zkl__fill_fn fn;
    void *arg;
    int tries;
    bool dropped; /* the caller left: the answer frees */
};

static void fill_free(struct zkl__fill *f)
{
    free(f->path);
    free(f->want);
    free(f);
}

/* The round is over (c->mu held): tell the caller, unless it left. */
static void fill_end(struct zkl__fill *f, int err, const char *data, int len)
{
    if (!f->dropped)
        f->fn(f->arg, err, data, len);
    fill_free(f);
}

static void fill_got(int rc, const char *value, int len, const struct Stat *st, const void *data);

static int fill_ask(struct zkl__fill *f)
{
    return f->c->zapi->aget(f->zh, f->path, 0, fill_got, f);
}

static void fill_set(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    struct zkl__fill *f = (struct zkl__fill *)data;
    zkl_client *c = f->c;
    pthread_mutex_lock(&c->mu);
    if (rc == ZOK) {
        fill_end(f, 0, f->want, (int)strlen(f->want));
    } else if ((rc == ZBADVERSION || rc == ZNONODE) && !f->dropped && ++f->tries < 20) {
        /* Someone wrote first: read theirs. */
        int src = fill_ask(f);
        if (src != ZOK)
            fill_end(f, zkl__err_from_zk(src), NULL, 0);
    } else {
        fill_end(f, zkl__err_from_zk(rc), NULL, 0);
    }
    pthread_mutex_unlock(&c->mu);
}

static void fill_got(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    struct zkl__fill *f = (struct zkl__fill *)data;
    zkl_client *c = f->c;
    pthread_mutex_lock(&c->mu);
    if (rc == ZOK && len > 0) {
        fill_end(f, 0, value, len);
    } else if (rc == ZOK && !f->dropped) {
        /* There, without data: fill it in, unless someone writes first. */
        int src = c->zapi->aset(f->zh, f->path, f->want, (int)strlen(f->want), st->version,
                                fill_set, f);
        if (src != ZOK)
            fill_end(f, zkl__err_from_zk(src), NULL, 0);
    } else {
        fill_end(f, rc == ZOK ? 0 : zkl__err_from_zk(rc), NULL, 0);
    }
    pthread_mutex_unlock(&c->mu);
}

struct zkl__fill *zkl__znode_fill_start(zkl_client *c, const char *path, const char *want,
                                       zkl__fill_fn fn, void *arg, int *err)
{
    struct zkl__fill *f = calloc(1, sizeof *f);
    if (f == NULL || (f->path = strdup(path)) == NULL || (f->want = strdup(want)) == NULL) {
        if (f != NULL)
            free(f->path);
        free(f);
        *err = ZKL_ENOMEM;
        return NULL;
    }
    *f = (struct zkl__fill){c, c->zh, f->path, f->want, fn, arg, 0, false};
    int rc = fill_ask(f);
    if (rc != ZOK) {
        fill_free(f);
        *err = zkl__err_from_zk(rc);
        return NULL;
    }
    return f;
}

void zkl__znode_fill_drop(struct zkl__fill *f)
{
    if (f != NULL)
        f->dropped = true;
}

int zkl__znode_guarded_ops(zkl__node *n, int count, const zoo_op_t *ops, zoo_op_result_t *results)
{
    if (ops == NULL || count < 1)
        return ZKL_EINVAL;
    if (n == NULL)
        return ZKL_ENOTHELD;
    if (zkl__forked(zkl__node_client(n)))
        return ZKL_EFORK;
    return zkl__guarded_multi(n, count, ops, results);
}

int zkl__znode_guarded_set(zkl__node *n, const char *path, const void *data, int len)
{
    if (zkl__path_check(path) != 0 || len < 0 || (data == NULL && len > 0))
        return ZKL_EINVAL;
    if (n == NULL)
        return ZKL_ENOTHELD; /* as zkl__znode_guarded_ops says */
    zoo_op_t op;
    zkl__node_client(n)->zapi->set_op_init(&op, path, data, len, -1, NULL);
    zoo_op_result_t res = {.err = ZOK};
    int rc = zkl__znode_guarded_ops(n, 1, &op, &res);
    if (rc == ZKL_EZK && res.err == ZNONODE) {
        zkl__detail("guarded set: no node %.200s (nothing written)", path);
        return ZKL_ENOENT;
    }
    return rc;
}
