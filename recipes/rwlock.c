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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "zkl/zookeeper.h"

#define READ_KIND "__READ__"
#define WRITE_KIND "__WRIT__"
#define SEQ_DIGITS 10

struct zkl_rwlock {
    zkl__owner own;     /* the client, the callbacks of both sides */
    zkl__holds rd, wr;  /* sides 0 and 1: the callbacks' `write` */
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

/* ---- the API ------------------------------------------------------------ */

/* The user's callbacks, lost and revoke alike (the two types are one), told
 * which side. */
static void tell(zkl__any_fn fn, void *fn_arg, void *obj, int side, int64_t token)
{
    ((zkl_rwlock_lost_fn)fn)(obj, side, token, fn_arg);
}

int zkl_rwlock_new(zkl_client *c, const char *path, zkl_rwlock **out)
{
    if (c == NULL || out == NULL || zkl__path_check(path) != 0)
        return ZKL_EINVAL;
    int rc;
    zkl_rwlock *rw =
        zkl__owner_new(sizeof *rw, offsetof(zkl_rwlock, own), c, path, tell, true, &rc);
    if (rw == NULL)
        return rc;
    zkl__holds_init(&rw->rd, &rw->own, 0);
    zkl__holds_init(&rw->wr, &rw->own, 1);
    *out = rw;
    return 0;
}

static int read_acquire_with(void *self, long timeout_ms, zkl_cancel *h)
{
    zkl_rwlock *rw = self;
    bool downgrade = false;
    zkl__qopts o = {.arg = &downgrade, .cancel = h};
    char seq[SEQ_DIGITS + 1];
    zkl__node *wnode = zkl__holds_node(&rw->wr);
    if (wnode != NULL && zkl__holds_find(&rw->rd) == NULL) {
        /* Downgrade (Curator 5.5's naming, PROTOCOL §4): a plain ephemeral
         * node with the writer's own sequence sorts level with the writer,
         * ahead of every queued writer, so none can slip in between the
         * write release and this read. Only from a live write hold, and
         * only in its session (`within`): a node with an old sequence made
         * in a later session would jump the queue. */
        if (!zkl__kit_node_held(wnode))
            return ZKL_ELOST;
        const char *wp = zkl__kit_node_path(wnode);
        memcpy(seq, wp + strlen(wp) - SEQ_DIGITS, sizeof seq);
        downgrade = true;
        o.fixed_seq = seq;
        o.within = wnode;
    }
    /* A thread that holds the read side already only counts up. */
    return zkl__holds_acquire(&rw->rd, rw->own.path, &zkl__read_policy, &o, timeout_ms);
}

static int write_acquire_with(void *self, long timeout_ms, zkl_cancel *h)
{
    zkl_rwlock *rw = self;
    /* Upgrade: our own read node would sit ahead of the new write node
     * forever (Curator waits for good). Refuse before creating anything;
     * a thread that holds the write side already only counts up. */
    if (zkl__holds_find(&rw->wr) == NULL && zkl__holds_find(&rw->rd) != NULL)
        return ZKL_EDEADLK;
    zkl__qopts o = {.cancel = h};
    return zkl__holds_acquire(&rw->wr, rw->own.path, &zkl__write_policy, &o, timeout_ms);
}

int zkl_rwlock_read_release(zkl_rwlock *rw)
{
    return rw == NULL ? ZKL_EINVAL : zkl__holds_release(&rw->rd);
}

int zkl_rwlock_write_release(zkl_rwlock *rw)
{
    return rw == NULL ? ZKL_EINVAL : zkl__holds_release(&rw->wr);
}

int zkl_rwlock_read_is_held(zkl_rwlock *rw)
{
    return rw == NULL ? 0 : zkl__holds_is_held(&rw->rd);
}

int zkl_rwlock_write_is_held(zkl_rwlock *rw)
{
    return rw == NULL ? 0 : zkl__holds_is_held(&rw->wr);
}

int zkl_rwlock_read_token(zkl_rwlock *rw, int64_t *out)
{
    return rw == NULL ? ZKL_EINVAL : zkl__token_out(zkl__holds_token(&rw->rd), out);
}

int zkl_rwlock_write_token(zkl_rwlock *rw, int64_t *out)
{
    return rw == NULL ? ZKL_EINVAL : zkl__token_out(zkl__holds_token(&rw->wr), out);
}

const char *zkl_rwlock_read_node(zkl_rwlock *rw)
{
    return rw == NULL ? NULL : zkl__holds_path(&rw->rd);
}

const char *zkl_rwlock_write_node(zkl_rwlock *rw)
{
    return rw == NULL ? NULL : zkl__holds_path(&rw->wr);
}

/* Only the calling thread can release its own hold, so the node stays
 * valid for the guarded writes. */
int zkl_rwlock_write_guarded_multi(zkl_rwlock *rw, int count, const zoo_op_t *ops,
                                   zoo_op_result_t *results)
{
    return rw == NULL ? ZKL_EINVAL
                      : zkl__znode_guarded_ops(zkl__holds_node(&rw->wr), count, ops, results);
}

int zkl_rwlock_write_guarded_set(zkl_rwlock *rw, const char *path, const void *data, int len)
{
    return rw == NULL ? ZKL_EINVAL
                      : zkl__znode_guarded_set(zkl__holds_node(&rw->wr), path, data, len);
}

/* ---- lost and revoked holds --------------------------------------------- */

int zkl_rwlock_set_revoke_fn(zkl_rwlock *rw, zkl_rwlock_revoke_fn fn, void *arg)
{
    return rw == NULL ? ZKL_EINVAL : zkl__owner_set(&rw->own, true, (zkl__any_fn)fn, arg);
}

int zkl_rwlock_set_lost_fn(zkl_rwlock *rw, zkl_rwlock_lost_fn fn, void *arg)
{
    return rw == NULL ? ZKL_EINVAL : zkl__owner_set(&rw->own, false, (zkl__any_fn)fn, arg);
}

/* ---- the generic lock interface ------------------------------------------ */

/* Both sides share the lock path as their key: a multi-lock refuses the two
 * sides of one lock as members, which could only wait for each other. */
static const char *path_op(void *self)
{
    return ((zkl_rwlock *)self)->own.path;
}

ZKL__LOCK_OPS(read, zkl_rwlock_read_acquire, zkl_rwlock_read_release, zkl_rwlock_read_is_held,
              path_op);
ZKL__LOCK_OPS(write, zkl_rwlock_write_acquire, zkl_rwlock_write_release,
              zkl_rwlock_write_is_held, path_op);

int zkl_rwlock_read_as_lock(zkl_rwlock *rw, zkl_lock **out)
{
    return rw == NULL ? ZKL_EINVAL
                      : zkl__lock_adapt(rw, &rw->own, &read_ops, &zkl__read_policy,
                                        read_acquire_with, "zkl_rwlock_read_acquire_cancellable",
                                        out);
}

int zkl_rwlock_write_as_lock(zkl_rwlock *rw, zkl_lock **out)
{
    return rw == NULL ? ZKL_EINVAL
                      : zkl__lock_adapt(rw, &rw->own, &write_ops, &zkl__write_policy,
                                        write_acquire_with, "zkl_rwlock_write_acquire_cancellable",
                                        out);
}

void zkl_rwlock_free(zkl_rwlock *rw)
{
    if (rw == NULL)
        return;
    zkl__kit_obj_close(rw, "zkl_rwlock_free");
    zkl__owner_stop(&rw->own); /* no callback runs from here on */
    zkl__holds_drop_all(&rw->rd);
    zkl__holds_drop_all(&rw->wr);
    zkl__owner_done(&rw->own);
    free(rw);
}

/* ---- misuse checks (lib/front/objects.c) ------------------------------------- */

int zkl_rwlock_read_acquire(zkl_rwlock *rw, long timeout_ms)
{
    return zkl__kit_obj_acquire(rw, "zkl_rwlock_read_acquire", read_acquire_with, timeout_ms);
}

int zkl_rwlock_write_acquire(zkl_rwlock *rw, long timeout_ms)
{
    return zkl__kit_obj_acquire(rw, "zkl_rwlock_write_acquire", write_acquire_with, timeout_ms);
}

/* Asynchronous acquires: the request's hold is its own, so a read request
 * is never a downgrade of a thread's write hold (and, without options,
 * own.prefetch stays false). */
int zkl_rwlock_read_acquire_async(zkl_rwlock *rw, long timeout_ms, zkl_request_fn fn,
                                  void *arg, zkl_request **out)
{
    return rw == NULL ? ZKL_EINVAL
                      : zkl__owner_acquire_async(rw, &rw->own, "zkl_rwlock_read_acquire_async",
                                                 &zkl__read_policy, timeout_ms, fn, arg, out);
}

int zkl_rwlock_write_acquire_async(zkl_rwlock *rw, long timeout_ms, zkl_request_fn fn,
                                   void *arg, zkl_request **out)
{
    return rw == NULL ? ZKL_EINVAL
                      : zkl__owner_acquire_async(rw, &rw->own, "zkl_rwlock_write_acquire_async",
                                                 &zkl__write_policy, timeout_ms, fn, arg, out);
}

int zkl_rwlock_read_acquire_cancellable(zkl_rwlock *rw, long timeout_ms, zkl_cancel *h)
{
    return zkl__kit_obj_acquire_cancellable(rw, "zkl_rwlock_read_acquire_cancellable",
                                        read_acquire_with, timeout_ms, h);
}

int zkl_rwlock_write_acquire_cancellable(zkl_rwlock *rw, long timeout_ms, zkl_cancel *h)
{
    return zkl__kit_obj_acquire_cancellable(rw, "zkl_rwlock_write_acquire_cancellable",
                                        write_acquire_with, timeout_ms, h);
}
