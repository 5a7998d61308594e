/* The read-write lock: two policies, "__READ__" and "__WRIT__", on one lock
 * path and one sequence (Curator's InterProcessReadWriteLock protocol,
 * PROTOCOL §2-4).
 *
 * A writer holds when its node is first of all; a reader holds when no
 * exclusive node (anything that is not a reader) comes before it. Readers
 * that arrive after a queued writer sort after it, so a stream of readers
 * cannot starve it. Each side is reentrant per thread; a thread that holds
 * the write lock may also take the read lock (downgrade), never the other
 * way round (upgrade). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zkl/zookeeper.h"

#define READ_KIND "__READ__"
#define WRITE_KIND "__WRIT__"
#define SEQ_DIGITS 10

/* One side of the lock: who holds it in this process, per thread. */
struct side {
    const zkl__policy *pol;
    zkl__owners owners;
};

struct zkl_rwlock {
    zkl_client *c;
    char *path;
    struct side rd, wr;
    zkl__lost lost;   /* guarded by lost_mu */
    zkl__lost revoke; /* guarded by lost_mu */
    pthread_mutex_t lost_mu;
};

/* ---- the two policies ----------------------------------------------------
 *
 * Equal sequences. The only node that ever shares a sequence with another is
 * a downgrade reader, which takes the number of its thread's held writer
 * node (zkl's engine then orders the two by name, Curator by the order of
 * the server's listing: either way, arbitrary). No order of the pair can
 * let anyone in:
 *  - the writer node was first of all when it took the lock, and every node
 *    created later has a larger sequence, so each queued writer and each
 *    later reader sorts after both nodes of the pair;
 *  - a queued writer (zkl or Curator) holds only when first, so not before
 *    both are gone; a later reader (zkl or Curator) waits for the writer
 *    node of the pair, whichever side of the reader it sorts;
 *  - the downgrade reader itself never asks where it sorts: it holds by
 *    virtue of the write lock (read_holds), and a held node is never
 *    decided again.
 * The node cannot appear behind the back of a waiter that already decided,
 * either: it is created only while its writer holds, and deleting the
 * writer is what wakes the waiters, whose listing then shows the reader. */

static bool read_holds(const zkl__entry *cs, size_t n, size_t self, size_t *watch,
                       const void *arg)
{
    (void)n;
    const bool *downgrade = arg;
    if (downgrade != NULL && *downgrade)
        return true; /* the node's thread holds the write lock */
    /* Watch the nearest exclusive node ahead, not the first: the nodes in
     * between are readers, and an exclusive node can never appear among
     * them later, so this waiter wakes only when it may hold or has a new
     * writer to watch. */
    for (size_t i = self; i-- > 0;) {
        if (!zkl__entry_is(&cs[i], READ_KIND)) {
            *watch = i;
            return false;
        }
    }
    return true;
}

static bool write_holds(const zkl__entry *cs, size_t n, size_t self, size_t *watch,
                        const void *arg)
{
    (void)cs, (void)n, (void)arg;
    if (self == 0)
        return true;
    *watch = self - 1;
    return false;
}

/* No handoff without listing on either side: a downgrade reader can appear
 * with an older sequence than the nodes a waiter saw (PROTOCOL §4). */
const zkl__policy zkl__read_policy = {READ_KIND, read_holds, false};
const zkl__policy zkl__write_policy = {WRITE_KIND, write_holds, false};

/* ---- per-side helpers ------------------------------------------------- */

/* The calling thread's hold on side s, or NULL. */
static zkl__hold *side_mine(struct side *s)
{
    pthread_mutex_lock(&s->owners.mu);
    zkl__hold *h = zkl__owners_mine(&s->owners);
    pthread_mutex_unlock(&s->owners.mu);
    /* Only the calling thread adds or removes its own record, so h stays
     * valid for it after the table's lock is dropped. */
    return h;
}

/* Reentry: a thread that holds side s only counts up. A hold that was lost
 * must be released first. */
static int side_reenter(struct side *s, zkl__hold *h)
{
    pthread_mutex_lock(&s->owners.mu);
    int rc = zkl__node_held(h->node) ? 0 : ZKL_ELOST;
    if (rc == 0)
        h->count++;
    pthread_mutex_unlock(&s->owners.mu);
    return rc;
}

static int side_record(struct side *s, zkl__node *n)
{
    pthread_mutex_lock(&s->owners.mu);
    int rc = zkl__owners_add(&s->owners, n);
    pthread_mutex_unlock(&s->owners.mu);
    if (rc != 0)
        zkl__queue_release(n);
    return rc;
}

static int side_release(struct side *s)
{
    pthread_mutex_lock(&s->owners.mu);
    zkl__hold *h = zkl__owners_mine(&s->owners);
    if (h == NULL) {
        pthread_mutex_unlock(&s->owners.mu);
        return ZKL_ENOTHELD;
    }
    zkl__node *n = h->node;
    if (--h->count > 0 && zkl__node_held(n)) {
        pthread_mutex_unlock(&s->owners.mu);
        return 0;
    }
    pthread_mutex_unlock(&s->owners.mu);
    /* Last count, or the hold is lost: the thread's hold ends here either
     * way, once the server confirmed -- unless it refuses the delete: then
     * node and hold stay, counted once. Only this thread removes its own
     * record, so h stays valid meanwhile. */
    int rc = zkl__queue_release(n);
    pthread_mutex_lock(&s->owners.mu);
    if (zkl__release_kept(rc))
        h->count = 1;
    else
        zkl__owners_remove(&s->owners, h);
    pthread_mutex_unlock(&s->owners.mu);
    return rc;
}

static int side_is_held(struct side *s)
{
    zkl__hold *h = side_mine(s);
    return h != NULL && zkl__node_held(h->node);
}

static int64_t side_token(struct side *s)
{
    zkl__hold *h = side_mine(s);
    if (h == NULL)
        return ZKL_ENOTHELD;
    return zkl__node_held(h->node) ? zkl__node_token(h->node) : ZKL_ELOST;
}

static const char *side_node(struct side *s)
{
    zkl__hold *h = side_mine(s);
    return h ? zkl__node_path(h->node) : NULL;
}

static void side_drop_all(struct side *s)
{
    while (s->owners.head) {
        zkl__hold *h = s->owners.head;
        s->owners.head = h->next;
        if (zkl__release_kept(zkl__queue_release(h->node)))
            zkl__queue_leave(h->node, false); /* the engine retries */
        free(h);
    }
    zkl__owners_destroy(&s->owners);
}

static void read_node_lost(zkl__node *n, int64_t token, void *arg);
static void write_node_lost(zkl__node *n, int64_t token, void *arg);
static void read_node_revoke(zkl__node *n, int64_t token, void *arg);
static void write_node_revoke(zkl__node *n, int64_t token, void *arg);

/* ---- the API ------------------------------------------------------------ */

int zkl_rwlock_new(zkl_client *c, const char *path, zkl_rwlock **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0)
        return ZKL_EINVAL;
    zkl_rwlock *rw = calloc(1, sizeof *rw);
    if (rw == NULL)
        return ZKL_ENOMEM;
    if ((rw->path = strdup(path)) == NULL) {
        free(rw);
        return ZKL_ENOMEM;
    }
    if (zkl__owners_init(&rw->rd.owners) != 0) {
        free(rw->path);
        free(rw);
        return ZKL_ESYS;
    }
    if (zkl__owners_init(&rw->wr.owners) != 0) {
        zkl__owners_destroy(&rw->rd.owners);
        free(rw->path);
        free(rw);
        return ZKL_ESYS;
    }
    if (pthread_mutex_init(&rw->lost_mu, NULL) != 0) {
        zkl__owners_destroy(&rw->wr.owners);
        zkl__owners_destroy(&rw->rd.owners);
        free(rw->path);
        free(rw);
        return ZKL_ESYS;
    }
    if (zkl__obj_open(c, rw) != 0) {
        pthread_mutex_destroy(&rw->lost_mu);
        zkl__owners_destroy(&rw->wr.owners);
        zkl__owners_destroy(&rw->rd.owners);
        free(rw->path);
        free(rw);
        return ZKL_ENOMEM;
    }
    rw->c = c;
    rw->rd.pol = &zkl__read_policy;
    rw->wr.pol = &zkl__write_policy;
    *out = rw;
    return 0;
}

static int zkl_rwlock_read_acquire_unguarded(zkl_rwlock *rw, long timeout_ms)
{
    if (rw == NULL)
        return ZKL_EINVAL;
    int64_t deadline = zkl__deadline(timeout_ms);
    zkl__hold *h = side_mine(&rw->rd);
    if (h != NULL)
        return side_reenter(&rw->rd, h);

    bool downgrade = false;
    zkl__qopts o = {.arg = &downgrade,
                    .on_lost = read_node_lost,
                    .on_revoke = read_node_revoke,
                    .hook_arg = rw};
    char seq[SEQ_DIGITS + 1];
    zkl__hold *wh = side_mine(&rw->wr);
    zkl__node *wnode = wh ? wh->node : NULL;
    if (wnode != NULL) {
        /* Downgrade (Curator 5.5's naming, PROTOCOL §4): a plain ephemeral
         * node with the writer's own sequence sorts level with the writer,
         * ahead of every queued writer, so none can slip in between the
         * write release and this read. Only from a live write hold, and
         * only in its session (`within`): a node with an old sequence made
         * in a later session would jump the queue. */
        if (!zkl__node_held(wnode))
            return ZKL_ELOST;
        const char *wp = zkl__node_path(wnode);
        memcpy(seq, wp + strlen(wp) - SEQ_DIGITS, sizeof seq);
        downgrade = true;
        o.fixed_seq = seq;
        o.within = wnode;
    }
    zkl__node *n;
    int rc = zkl__queue_acquire(rw->c, rw->path, rw->rd.pol, &o, deadline, &n);
    if (rc != 0)
        return rc;
    return side_record(&rw->rd, n);
}

static int zkl_rwlock_write_acquire_unguarded(zkl_rwlock *rw, long timeout_ms)
{
    if (rw == NULL)
        return ZKL_EINVAL;
    int64_t deadline = zkl__deadline(timeout_ms);
    zkl__hold *h = side_mine(&rw->wr);
    if (h != NULL)
        return side_reenter(&rw->wr, h);
    /* Upgrade: our own read node would sit ahead of the new write node
     * forever (Curator waits for good). Refuse before creating anything. */
    if (side_mine(&rw->rd) != NULL)
        return ZKL_EDEADLK;
    zkl__node *n;
    zkl__qopts o = {.on_lost = write_node_lost, .on_revoke = write_node_revoke, .hook_arg = rw};
    int rc = zkl__queue_acquire(rw->c, rw->path, rw->wr.pol, &o, deadline, &n);
    if (rc != 0)
        return rc;
    return side_record(&rw->wr, n);
}

int zkl_rwlock_read_release(zkl_rwlock *rw)
{
    return rw == NULL ? ZKL_EINVAL : side_release(&rw->rd);
}

int zkl_rwlock_write_release(zkl_rwlock *rw)
{
    return rw == NULL ? ZKL_EINVAL : side_release(&rw->wr);
}

int zkl_rwlock_read_is_held(zkl_rwlock *rw)
{
    return rw == NULL ? 0 : side_is_held(&rw->rd);
}

int zkl_rwlock_write_is_held(zkl_rwlock *rw)
{
    return rw == NULL ? 0 : side_is_held(&rw->wr);
}

int64_t zkl_rwlock_read_token(zkl_rwlock *rw)
{
    return rw == NULL ? ZKL_EINVAL : side_token(&rw->rd);
}

int64_t zkl_rwlock_write_token(zkl_rwlock *rw)
{
    return rw == NULL ? ZKL_EINVAL : side_token(&rw->wr);
}

const char *zkl_rwlock_read_node(zkl_rwlock *rw)
{
    return rw == NULL ? NULL : side_node(&rw->rd);
}

const char *zkl_rwlock_write_node(zkl_rwlock *rw)
{
    return rw == NULL ? NULL : side_node(&rw->wr);
}

int zkl_rwlock_write_guarded_multi(zkl_rwlock *rw, int count, const zoo_op_t *ops,
                                   zoo_op_result_t *results)
{
    if (rw == NULL || ops == NULL || count < 1)
        return ZKL_EINVAL;
    zkl__hold *h = side_mine(&rw->wr);
    if (h == NULL)
        return ZKL_ENOTHELD;
    /* Only the calling thread can release its own hold, so the node stays
     * valid for the call. */
    return zkl__node_guarded_multi(h->node, count, ops, results);
}

int zkl_rwlock_write_guarded_set(zkl_rwlock *rw, const char *path, const void *data, int len)
{
    if (rw == NULL || zkl__path_check(path) != 0 || len < 0 || (data == NULL && len > 0))
        return ZKL_EINVAL;
    zoo_op_t op;
    zoo_set_op_init(&op, path, data, len, -1, NULL);
    zoo_op_result_t res;
    return zkl_rwlock_write_guarded_multi(rw, 1, &op, &res);
}

/* ---- lost holds --------------------------------------------------------- */

/* The engine's word that a hold's node is lost: tell the user's callback
 * which side. Runs on the client's keeper thread, once per node. */
static void node_lost(zkl_rwlock *rw, int write, int64_t token)
{
    void *fn_arg;
    zkl_rwlock_lost_fn fn = (zkl_rwlock_lost_fn)zkl__lost_get(&rw->lost, &rw->lost_mu, &fn_arg);
    if (fn != NULL)
        fn(rw, write, token, fn_arg);
}

static void read_node_lost(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    node_lost(arg, 0, token);
}

static void write_node_lost(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    node_lost(arg, 1, token);
}

/* Someone asked a hold to let go: tell the user's revoke callback which
 * side. Runs on the client's keeper thread. */
static void node_revoke(zkl_rwlock *rw, int write, int64_t token)
{
    void *fn_arg;
    zkl_rwlock_revoke_fn fn =
        (zkl_rwlock_revoke_fn)zkl__lost_get(&rw->revoke, &rw->lost_mu, &fn_arg);
    if (fn != NULL)
        fn(rw, write, token, fn_arg);
}

static void read_node_revoke(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    node_revoke(arg, 0, token);
}

static void write_node_revoke(zkl__node *n, int64_t token, void *arg)
{
    (void)n;
    node_revoke(arg, 1, token);
}

int zkl_rwlock_set_revoke_fn(zkl_rwlock *rw, zkl_rwlock_revoke_fn fn, void *arg)
{
    if (rw == NULL)
        return ZKL_EINVAL;
    return zkl__lost_set(&rw->revoke, &rw->lost_mu, rw->c, (zkl__any_fn)fn, arg);
}

int zkl_rwlock_set_lost_fn(zkl_rwlock *rw, zkl_rwlock_lost_fn fn, void *arg)
{
    if (rw == NULL)
        return ZKL_EINVAL;
    return zkl__lost_set(&rw->lost, &rw->lost_mu, rw->c, (zkl__any_fn)fn, arg);
}

/* ---- the generic lock interface ------------------------------------------ */

static int read_acquire_op(void *self, long timeout_ms)
{
    return zkl_rwlock_read_acquire(self, timeout_ms);
}

static int read_release_op(void *self)
{
    return zkl_rwlock_read_release(self);
}

static int read_is_held_op(void *self)
{
    return zkl_rwlock_read_is_held(self);
}

static int write_acquire_op(void *self, long timeout_ms)
{
    return zkl_rwlock_write_acquire(self, timeout_ms);
}

static int write_release_op(void *self)
{
    return zkl_rwlock_write_release(self);
}

static int write_is_held_op(void *self)
{
    return zkl_rwlock_write_is_held(self);
}

/* Both sides share the lock path as their key: a multi-lock refuses the two
 * sides of one lock as members, which could only wait for each other. */
static const char *path_op(void *self)
{
    return ((zkl_rwlock *)self)->path;
}

static const zkl_lock_ops read_ops = {
    .version = ZKL_LOCK_OPS_VERSION,
    .acquire = read_acquire_op,
    .release = read_release_op,
    .is_held = read_is_held_op,
    .path = path_op,
};

static const zkl_lock_ops write_ops = {
    .version = ZKL_LOCK_OPS_VERSION,
    .acquire = write_acquire_op,
    .release = write_release_op,
    .is_held = write_is_held_op,
    .path = path_op,
};

int zkl_rwlock_read_as_lock(zkl_rwlock *rw, zkl_lock **out)
{
    return rw == NULL ? ZKL_EINVAL : zkl_lock_new(&read_ops, rw, out);
}

int zkl_rwlock_write_as_lock(zkl_rwlock *rw, zkl_lock **out)
{
    return rw == NULL ? ZKL_EINVAL : zkl_lock_new(&write_ops, rw, out);
}

void zkl_rwlock_free(zkl_rwlock *rw)
{
    if (rw == NULL)
        return;
    zkl__obj_close(rw, "zkl_rwlock_free");
    /* After this no callback can be running or start. */
    zkl__lost_stop(&rw->lost, &rw->lost_mu, rw->c);
    zkl__lost_stop(&rw->revoke, &rw->lost_mu, rw->c);
    /* Best effort: holds still open go now rather than with the session. */
    side_drop_all(&rw->rd);
    side_drop_all(&rw->wr);
    pthread_mutex_destroy(&rw->lost_mu);
    zkl_client *c = rw->c;
    free(rw->path);
    free(rw);
    zkl__obj_done(c);
}

/* ---- misuse checks (lib/guard.c) ----------------------------------------- */

int zkl_rwlock_read_acquire(zkl_rwlock *rw, long timeout_ms)
{
    if (rw == NULL)
        return ZKL_EINVAL;
    zkl__obj_enter(rw, "zkl_rwlock_read_acquire"); /* a free meanwhile aborts, naming it */
    int rc = zkl_rwlock_read_acquire_unguarded(rw, timeout_ms);
    zkl__obj_leave(rw);
    return rc;
}

int zkl_rwlock_write_acquire(zkl_rwlock *rw, long timeout_ms)
{
    if (rw == NULL)
        return ZKL_EINVAL;
    zkl__obj_enter(rw, "zkl_rwlock_write_acquire"); /* a free meanwhile aborts, naming it */
    int rc = zkl_rwlock_write_acquire_unguarded(rw, timeout_ms);
    zkl__obj_leave(rw);
    return rc;
}
