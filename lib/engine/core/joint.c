/* Listings of a lock path, shared: one in flight per session and lock path.
 *
 * Every waiter learns its place from a listing sent after its own create.
 * When one client queues many waiters on one path, each joining waiter
 * would list the whole queue: N joins cost N listings of up to N names, and
 * their answers pile up in front of everything else the session is told
 * (the keepalive's answer too). So waiters of one session on one path
 * share: while a listing is in flight, those who ask wait for the next one,
 * sent as soon as the first answers. That next listing leaves after each of
 * their requests (one session's requests are served in order), so it shows
 * all that a listing of their own would have shown. With one waiter per
 * session and path nothing changes: its listing goes out at once, right
 * behind its create.
 *
 * Each answer is handed to every node it serves, one by one, as its own
 * listing's answer would be (feed.c, by the node's one entry: this file
 * keeps the joints, and of a node changes only what a listing sent for it
 * counts, its answer due and its listing out). A joint holds a reference (n->refs) on each
 * node it serves; a node may be in two joints at once (an answer still due
 * from before a reconnection), each with its own reference.
 *
 * A joint is keyed by the session and the lock path: a handle closed with
 * a listing in flight may never answer it, and the next session must not
 * wait behind that stale joint. Such a joint stays until its answer comes
 * or the client goes. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

struct zkl__joint {
    struct zkl__core *core;
    uint64_t gen;            /* the session (n->gen) */
    struct zkl__dir *dir;
    struct zkl__joint *hnext; /* core->joints bucket */
    zkl__cnode **sent;       /* served by the listing in flight */
    size_t nsent;
    zkl__cnode **wait;       /* served by the one sent after it */
    size_t nwait, capwait;
};

static size_t joint_hash(uint64_t gen, const struct zkl__dir *d)
{
    return (size_t)((((uintptr_t)d >> 4) * 1099511628211u) ^ gen);
}

static struct zkl__joint **find(struct zkl__core *k, uint64_t gen, const struct zkl__dir *d)
{
    struct zkl__joint **p = &k->joints[joint_hash(gen, d) & (k->joint_buckets - 1)];
    while (*p && ((*p)->gen != gen || (*p)->dir != d))
        p = &(*p)->hnext;
    return p;
}

/* Room for one more joint; false without memory (the caller lists alone). */
static bool reserve(struct zkl__core *k)
{
    if (k->joint_count < 2 * k->joint_buckets)
        return true;
    size_t nb = k->joint_buckets ? 2 * k->joint_buckets : 16;
    struct zkl__joint **t = zkl__core_calloc(k, nb, sizeof *t);
    if (t == NULL)
        return k->joint_buckets > 0; /* a fuller table: slower, still right */
    for (size_t i = 0; i < k->joint_buckets; i++)
        for (struct zkl__joint *j = k->joints[i], *next; j; j = next) {
            next = j->hnext;
            struct zkl__joint **b = &t[joint_hash(j->gen, j->dir) & (nb - 1)];
            j->hnext = *b;
            *b = j;
        }
    free(k->joints);
    k->joints = t;
    k->joint_buckets = nb;
    return true;
}

static void joint_free(struct zkl__joint *j)
{
    zkl__core_dir_put(j->core, j->dir);
    free(j->sent);
    free(j->wait);
    free(j);
}

static void unlink_joint(struct zkl__joint *j)
{
    struct zkl__joint **p = find(j->core, j->gen, j->dir);
    *p = j->hnext;
    j->core->joint_count--;
}

static int send_list(struct zkl__joint *j)
{
    zkl__act a = {.type = ZKL__A_LIST, .j = j, .path = j->dir->path};
    j->core->stats.listings++;
    return j->core->sink(j->core->ctx, &a);
}

bool zkl__joint_asked_again(const struct zkl__joint *j, const zkl__cnode *n)
{
    for (size_t i = 0; i < j->nsent; i++)
        if (j->sent[i] == n)
            return true;
    return false;
}

bool zkl__joint_turn(struct zkl__joint *j, zkl__cnode ***served, size_t *nserved,
                     zkl__cnode ***unsent, size_t *nunsent, int *sent)
{
    *served = j->sent;
    *nserved = j->nsent;
    j->sent = NULL;
    j->nsent = 0;
    /* The waiting ones' listing goes out first: their answer is due the
     * soonest that way. */
    *sent = ZOK;
    bool again = false;
    if (j->nwait > 0) {
        j->sent = j->wait;
        j->nsent = j->nwait;
        j->wait = NULL;
        j->nwait = j->capwait = 0;
        *sent = send_list(j);
        again = *sent == ZOK;
    }
    *unsent = NULL;
    *nunsent = 0;
    if (!again) {
        /* Nothing in flight any more: whoever asks next starts anew. */
        *unsent = j->sent;
        *nunsent = j->nsent;
        j->sent = NULL;
        unlink_joint(j);
        joint_free(j);
    }
    return again;
}

/* A listing of its own, for a node that has no memory for sharing. */
static int alone(zkl__cnode *n)
{
    zkl__act a = {.type = ZKL__A_LIST, .path = n->dir->path};
    n->core->stats.listings++;
    return zkl__core_send(n, &a);
}

int zkl__joint_send(zkl__cnode *n)
{
    struct zkl__core *k = n->core;
    struct zkl__joint **p = k->joint_buckets ? find(k, n->gen, n->dir) : NULL;
    if (p != NULL && *p != NULL) {
        struct zkl__joint *j = *p;
        if (j->nwait == j->capwait) {
            size_t cap = j->capwait ? 2 * j->capwait : 4;
            zkl__cnode **w = zkl__core_realloc(k, j->wait, cap * sizeof *w);
            if (w == NULL)
                goto solo;
            j->wait = w;
            j->capwait = cap;
        }
        j->wait[j->nwait++] = n;
        n->refs++;
        zkl__cnode_listing(n, ZKL__L_OUT);
        return ZOK;
    }
    struct zkl__joint *j = NULL;
    if (reserve(k) && (j = zkl__core_calloc(k, 1, sizeof *j)) != NULL &&
        (j->sent = zkl__core_malloc(k, sizeof *j->sent)) != NULL) {
        j->core = k;
        j->gen = n->gen;
        j->dir = n->dir;
        n->dir->refs++;
        j->sent[0] = n;
        j->nsent = 1;
        int rc = send_list(j);
        if (rc != ZOK) {
            joint_free(j);
            return rc;
        }
        n->refs++;
        zkl__cnode_listing(n, ZKL__L_OUT);
        p = find(k, j->gen, j->dir);
        j->hnext = *p;
        *p = j;
        k->joint_count++;
        return ZOK;
    }
    if (j != NULL) {
        free(j->sent);
        free(j);
    }
solo: {
    int rc = alone(n);
    if (rc == ZOK)
        zkl__cnode_listing(n, ZKL__L_OUT);
    return rc;
}
}

uint64_t zkl__joint_gen(const struct zkl__joint *j)
{
    return j->gen;
}

zkl__cnode *zkl__joint_first(const struct zkl__joint *j)
{
    return j->nsent > 0 ? j->sent[0] : NULL;
}

void zkl__joint_drop_all(struct zkl__core *k)
{
    for (size_t i = 0; i < k->joint_buckets; i++)
        for (struct zkl__joint *j = k->joints[i], *next; j; j = next) {
            next = j->hnext;
            joint_free(j);
        }
    free(k->joints);
    k->joints = NULL;
    k->joint_buckets = k->joint_count = 0;
}
