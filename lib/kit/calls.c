/* Requests with a deadline, for recipes that read or write a node of their
 * own beside the lock queue (the semaphore's limit, a holders listing):
 * single ones, a read sent ahead and looked at later, reads of many nodes.
 * A batch of asynchronous requests whose answers the caller waits for, up to
 * its deadline. The completions never block: they record and signal. A
 * caller that gives up leaves the batch to the last answer to free. */
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "kit.h"

struct zkl__batch *zkl__batch_new(size_t n)
{
    struct zkl__batch *b = calloc(1, sizeof *b + n * sizeof(struct zkl__slot));
    if (b == NULL)
        return NULL;
    if (pthread_mutex_init(&b->mu, NULL) != 0) {
        free(b);
        return NULL;
    }
    if (zkl__cond_init(&b->cv) != 0) {
        pthread_mutex_destroy(&b->mu);
        free(b);
        return NULL;
    }
    b->n = n;
    for (size_t i = 0; i < n; i++)
        b->s[i].b = b;
    return b;
}

void zkl__batch_destroy(struct zkl__batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->s[i].data);
        deallocate_String_vector(&b->s[i].kids);
    }
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* Record an answer (in ZooKeeper's completion thread). */
static void slot_done(struct zkl__slot *sl, int rc)
{
    struct zkl__batch *b = sl->b;
    pthread_mutex_lock(&b->mu);
    sl->rc = rc;
    sl->done = true;
    bool last = --b->pending == 0;
    bool drop = last && b->abandoned;
    if (last)
        pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (drop)
        zkl__batch_destroy(b);
}

void zkl__get_done(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    struct zkl__slot *sl = (struct zkl__slot *)data;
    if (rc == ZOK) {
        sl->st = *st;
        sl->len = len > 0 ? len : 0;
        if ((sl->data = malloc((size_t)sl->len + 1)) != NULL) {
            if (sl->len > 0)
                memcpy(sl->data, value, (size_t)sl->len);
            sl->data[sl->len] = '\0';
        } else {
            rc = ZSYSTEMERROR;
        }
    }
    slot_done(sl, rc);
}

static void kids_done(int rc, const struct String_vector *kids, const void *data)
{
    struct zkl__slot *sl = (struct zkl__slot *)data;
    if (rc == ZOK && kids != NULL && kids->count > 0) {
        sl->kids.data = calloc((size_t)kids->count, sizeof(char *));
        if (sl->kids.data == NULL) {
            rc = ZSYSTEMERROR;
        } else {
            sl->kids.count = kids->count;
            for (int i = 0; i < kids->count; i++)
                if ((sl->kids.data[i] = strdup(kids->data[i])) == NULL)
                    rc = ZSYSTEMERROR;
        }
    }
    slot_done(sl, rc);
}

void zkl__string_done(int rc, const char *value, const void *data)
{
    (void)value;
    slot_done((struct zkl__slot *)data, rc);
}

static void stat_done(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    slot_done((struct zkl__slot *)data, rc);
}

/* Take the session's handle for sending: c->hlock keeps the keeper from
 * replacing it meanwhile. Returns 0 with the lock held, or why not. */
int zkl__send_begin(zkl_client *c, zhandle_t **zh)
{
    if (zkl__forked(c))
        return ZKL_EFORK; /* the handle is the parent's */
    pthread_rwlock_rdlock(&c->hlock);
    pthread_mutex_lock(&c->mu);
    int err = c->closing                                    ? ZKL_ECLOSED
              : c->state == ZKL_STATE_LOST || c->zh == NULL ? ZKL_ELOST
                                                            : 0;
    *zh = c->zh;
    pthread_mutex_unlock(&c->mu);
    if (err != 0)
        pthread_rwlock_unlock(&c->hlock);
    return err;
}

void zkl__send_end(zkl_client *c, int requests)
{
    pthread_mutex_lock(&c->mu);
    c->stats.requests += (uint64_t)requests;
    pthread_mutex_unlock(&c->mu);
    pthread_rwlock_unlock(&c->hlock);
}

int zkl__batch_begin(zkl_client *c, size_t n, struct zkl__batch **b, zhandle_t **zh)
{
    if ((*b = zkl__batch_new(n)) == NULL)
        return ZKL_ENOMEM;
    int err = zkl__send_begin(c, zh);
    if (err != 0)
        zkl__batch_destroy(*b);
    return err;
}

/* Count a request as sent, or record that it could not be. */
void zkl__sent(struct zkl__slot *sl, int rc)
{
    struct zkl__batch *b = sl->b;
    pthread_mutex_lock(&b->mu);
    if (rc == ZOK) {
        b->pending++;
    } else {
        sl->rc = rc;
        sl->done = true;
    }
    pthread_mutex_unlock(&b->mu);
}

/* Wait for every answer, up to the deadline: 0 or ZKL_ETIMEDOUT. */
int zkl__batch_wait(struct zkl__batch *b, int64_t deadline)
{
    int rc = 0;
    pthread_mutex_lock(&b->mu);
    while (b->pending > 0 && rc == 0)
        if (zkl__cond_wait(&b->cv, &b->mu, deadline) != 0 && b->pending > 0)
            rc = ZKL_ETIMEDOUT;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

/* The caller is done with the batch: free it now, or at the last answer. */
void zkl__batch_drop(struct zkl__batch *b)
{
    if (b == NULL)
        return;
    pthread_mutex_lock(&b->mu);
    bool now = b->pending == 0;
    b->abandoned = true;
    pthread_mutex_unlock(&b->mu);
    if (now)
        zkl__batch_destroy(b);
}

/* Send one request into slot sl; its answer completes the slot. */
static int send_one(zkl_client *c, zhandle_t *zh, enum zkl__op op, const char *path,
                    const char *data, int mode, int version, struct zkl__slot *sl)
{
    switch (op) {
    case ZKL__OP_GET:
        return c->zapi->aget(zh, path, 0, zkl__get_done, sl);
    case ZKL__OP_KIDS:
        return c->zapi->aget_children(zh, path, 0, kids_done, sl);
    case ZKL__OP_CREATE:
        return c->zapi->acreate(zh, path, data, data ? (int)strlen(data) : -1,
                               zkl__options_acl(c), mode, zkl__string_done, sl);
    default:
        return c->zapi->aset(zh, path, data, (int)strlen(data), version, stat_done, sl);
    }
}

/* n requests of one kind, one for each path, pipelined and waited for. */
static int run(zkl_client *c, enum zkl__op op, const char *const *paths, size_t n,
               const char *data, int mode, int version, int64_t deadline,
               struct zkl__batch **out)
{
    struct zkl__batch *b;
    zhandle_t *zh;
    int err = zkl__batch_begin(c, n, &b, &zh);
    if (err != 0)
        return err;
    for (size_t i = 0; i < n; i++)
        zkl__sent(&b->s[i], send_one(c, zh, op, paths[i], data, mode, version, &b->s[i]));
    zkl__send_end(c, (int)n);
    if ((err = zkl__batch_wait(b, deadline)) != 0) {
        zkl__batch_drop(b);
        return err;
    }
    *out = b;
    return 0;
}

int zkl__call(zkl_client *c, enum zkl__op op, const char *path, const char *data, int mode,
              int version, int64_t deadline, struct zkl__batch **out)
{
    return run(c, op, &path, 1, data, mode, version, deadline, out);
}

int zkl__get_many(zkl_client *c, char *const *paths, size_t n, int64_t deadline,
                  struct zkl__batch **out)
{
    return run(c, ZKL__OP_GET, (const char *const *)paths, n, NULL, 0, 0, deadline, out);
}

int64_t zkl__request_deadline(zkl_client *c, int64_t deadline)
{
    return zkl__wait_until(deadline, zkl__now_ns(), c->timeout_ms, NULL);
}

struct zkl__batch *zkl__get_ahead(zkl_client *c, const char *path)
{
    struct zkl__batch *b = zkl__batch_new(1);
    if (b == NULL)
        return NULL;
    /* It is sent for an acquire: on a cancelled client, which acquires
     * nothing more, it would be a request for nothing. */
    pthread_mutex_lock(&c->mu);
    bool cancelled = c->cancelled;
    pthread_mutex_unlock(&c->mu);
    zhandle_t *zh;
    if (!cancelled && zkl__send_begin(c, &zh) == 0) {
        zkl__sent(&b->s[0], send_one(c, zh, ZKL__OP_GET, path, NULL, 0, 0, &b->s[0]));
        zkl__send_end(c, 1);
    } else {
        b->s[0].done = true;
        b->s[0].rc = ZSESSIONEXPIRED;
    }
    return b;
}

bool zkl__get_peek(struct zkl__batch *b, const char **data, int *len)
{
    if (b == NULL)
        return false;
    pthread_mutex_lock(&b->mu);
    /* An answered slot is not written again: its data stays as it is. */
    bool ok = b->s[0].done && b->s[0].rc == ZOK;
    if (ok) {
        *data = b->s[0].data;
        *len = b->s[0].len;
    }
    pthread_mutex_unlock(&b->mu);
    return ok;
}

int zkl__read_children(zkl_client *c, const char *dir, int (*pick)(const char *name),
                       int64_t deadline, zkl__read **out, size_t *n)
{
    struct zkl__batch *lb, *gb = NULL;
    int err = zkl__call(c, ZKL__OP_KIDS, dir, NULL, 0, 0, deadline, &lb);
    if (err != 0)
        return err;
    int rc = lb->s[0].rc;
    const struct String_vector *kids = &lb->s[0].kids;
    size_t k = 0, m = 0, room = kids->count > 0 ? (size_t)kids->count : 1;
    zkl__read *r = calloc(room, sizeof *r);
    char **paths = calloc(room, sizeof *paths);
    if (rc != ZOK && rc != ZNONODE) /* ZNONODE: an emptied container parent */
        err = zkl__err_from_zk(rc);
    else if (r == NULL || paths == NULL)
        err = ZKL_ENOMEM;
    for (int i = 0; err == 0 && i < kids->count; i++) {
        int tag = pick(kids->data[i]);
        if (tag <= 0)
            continue;
        r[k].tag = tag;
        if ((paths[k++] = zkl__path_join(dir, kids->data[i])) == NULL)
            err = ZKL_ENOMEM;
    }
    /* The chosen children, read in one pipelined batch. */
    if (err == 0 && k > 0)
        err = zkl__get_many(c, paths, k, deadline, &gb);
    for (size_t i = 0; err == 0 && i < k; i++) {
        struct zkl__slot *sl = &gb->s[i];
        if (sl->rc == ZNONODE)
            continue; /* gone since the listing */
        if (sl->rc != ZOK) {
            err = zkl__err_from_zk(sl->rc);
            break;
        }
        int tag = r[i].tag; /* m <= i: r[m] is done with */
        r[m++] = (zkl__read){.path = paths[i], .data = sl->data, .len = sl->len, .tag = tag,
                             .czxid = sl->st.czxid, .owner = sl->st.ephemeralOwner};
        paths[i] = NULL;
        sl->data = NULL;
    }
    for (size_t i = 0; paths != NULL && i < k; i++)
        free(paths[i]);
    free(paths);
    zkl__batch_drop(gb);
    zkl__batch_drop(lb);
    if (err != 0) {
        zkl__reads_free(r, m);
        return err;
    }
    *out = r;
    *n = m;
    return 0;
}

void zkl__reads_free(zkl__read *r, size_t n)
{
    for (size_t i = 0; r != NULL && i < n; i++) {
        free(r[i].path);
        free(r[i].data);
    }
    free(r);
}
