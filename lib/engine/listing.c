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
 * listing's answer would be (zkl__node_list_answer). A joint holds a
 * reference (n->refs) on each node it serves; a node may be in two joints
 * at once (an answer still due from before a reconnection), each with its
 * own reference.
 *
 * A joint is keyed by the handle and the session's generation: a handle
 * closed with a listing in flight may never answer it (libzookeeper_mt
 * drops what is pending at close), and the next session's handle may be
 * given the same address; its waiters must not wait behind that stale
 * joint. Such a joint stays until its answer comes or the client closes. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct zkl__joint {
    struct zkl__engine *e;
    zhandle_t *zh;
    uint64_t gen; /* the session's generation (n->gen) */
    char *dir;
    struct zkl__joint *hnext;  /* e->joints bucket */
    zkl__node **sent;          /* served by the listing in flight */
    size_t nsent;
    zkl__node **wait;          /* served by the one sent after it */
    size_t nwait, capwait;
};

static size_t dir_hash(const zhandle_t *zh, uint64_t gen, const char *p)
{
    size_t h = (1469598103934665603u ^ (size_t)(uintptr_t)zh) * 1099511628211u ^ (size_t)gen;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    return h;
}

static struct zkl__joint **find(struct zkl__engine *e, const zhandle_t *zh, uint64_t gen,
                                const char *dir)
{
    struct zkl__joint **p = &e->joints[dir_hash(zh, gen, dir) & (e->joint_buckets - 1)];
    while (*p && ((*p)->zh != zh || (*p)->gen != gen || strcmp((*p)->dir, dir) != 0))
        p = &(*p)->hnext;
    return p;
}

/* Room for one more joint; false without memory (the caller lists alone). */
static bool reserve(struct zkl__engine *e)
{
    if (e->joint_count < 2 * e->joint_buckets)
        return true;
    size_t nb = e->joint_buckets ? 2 * e->joint_buckets : 16;
    struct zkl__joint **t = calloc(nb, sizeof *t);
    if (t == NULL)
        return e->joint_buckets > 0; /* a fuller table: slower, still right */
    for (size_t i = 0; i < e->joint_buckets; i++)
        for (struct zkl__joint *j = e->joints[i], *next; j; j = next) {
            next = j->hnext;
            struct zkl__joint **b = &t[dir_hash(j->zh, j->gen, j->dir) & (nb - 1)];
            j->hnext = *b;
            *b = j;
        }
    free(e->joints);
    e->joints = t;
    e->joint_buckets = nb;
    return true;
}

static void joint_free(struct zkl__joint *j)
{
    free(j->sent);
    free(j->wait);
    free(j->dir);
    free(j);
}

static void unlink_joint(struct zkl__joint *j)
{
    struct zkl__joint **p = find(j->e, j->zh, j->gen, j->dir);
    *p = j->hnext;
    j->e->joint_count--;
}

/* Tell each of ns[0..k-1] (refs taken for this listing) that its listing
 * could not be sent, as a listing of its own would tell it. */
static void tell_unsent(zkl__node **ns, size_t k, int rc)
{
    for (size_t i = 0; i < k; i++) {
        ns[i]->listing = false;
        zkl__node_send_failed(ns[i], rc);
        zkl__node_maybe_free(ns[i]);
    }
    free(ns);
}

static void listing_done(int rc, const struct String_vector *kids, const void *data)
{
    struct zkl__joint *j = (struct zkl__joint *)data;
    zkl_client *c = j->e->c;
    pthread_mutex_lock(&c->mu);
    zkl__node **ns = j->sent;
    size_t k = j->nsent;
    j->sent = NULL;
    j->nsent = 0;
    /* The waiting ones' listing goes out first: their answer is due the
     * soonest that way. */
    bool again = false;
    int sent = ZOK;
    if (j->nwait > 0) {
        j->sent = j->wait;
        j->nsent = j->nwait;
        j->wait = NULL;
        j->nwait = j->capwait = 0;
        zkl__metrics_sent(j->sent[0]);
        c->stats.listings++;
        sent = zoo_aget_children(j->zh, j->dir, 0, listing_done, j);
        again = sent == ZOK;
    }
    if (!again) {
        /* Nothing in flight any more: whoever asks next starts anew. */
        zkl__node **unsent = j->sent;
        size_t nu = j->nsent;
        j->sent = NULL;
        unlink_joint(j);
        joint_free(j);
        if (nu > 0)
            tell_unsent(unsent, nu, sent);
    }
    for (size_t i = 0; i < k; i++) {
        ns[i]->refs--;
        zkl__node_list_answer(ns[i], rc, kids);
        zkl__node_maybe_free(ns[i]);
    }
    free(ns);
    pthread_mutex_unlock(&c->mu);
}

int zkl__listing_send(zkl__node *n)
{
    struct zkl__engine *e = n->e;
    n->listing = true;
    n->refs++;
    struct zkl__joint **p = e->joint_buckets ? find(e, n->zh, n->gen, n->dir) : NULL;
    if (p != NULL && *p != NULL) {
        struct zkl__joint *j = *p;
        if (j->nwait == j->capwait) {
            size_t cap = j->capwait ? 2 * j->capwait : 4;
            zkl__node **w = realloc(j->wait, cap * sizeof *w);
            if (w == NULL)
                goto alone;
            j->wait = w;
            j->capwait = cap;
        }
        j->wait[j->nwait++] = n;
        return ZOK;
    }
    struct zkl__joint *j = NULL;
    if (reserve(e) && (j = calloc(1, sizeof *j)) != NULL &&
        (j->dir = strdup(n->dir)) != NULL && (j->sent = malloc(sizeof *j->sent)) != NULL) {
        j->e = e;
        j->zh = n->zh;
        j->gen = n->gen;
        j->sent[0] = n;
        j->nsent = 1;
        zkl__metrics_sent(n);
        n->c->stats.listings++;
        int rc = zoo_aget_children(j->zh, j->dir, 0, listing_done, j);
        if (rc != ZOK) {
            joint_free(j);
            n->listing = false;
            n->refs--;
            return rc;
        }
        p = find(e, j->zh, j->gen, j->dir);
        j->hnext = *p;
        *p = j;
        e->joint_count++;
        return ZOK;
    }
    if (j != NULL)
        joint_free(j);
alone:
    /* Without memory for sharing: a listing of its own. */
    zkl__metrics_sent(n);
    n->c->stats.listings++;
    int rc = zoo_aget_children(n->zh, n->dir, 0, zkl__node_list_done, n);
    if (rc != ZOK) {
        n->listing = false;
        n->refs--;
    }
    return rc;
}

void zkl__listing_drop_all(struct zkl__engine *e)
{
    for (size_t i = 0; i < e->joint_buckets; i++)
        for (struct zkl__joint *j = e->joints[i], *next; j; j = next) {
            next = j->hnext;
            joint_free(j);
        }
    free(e->joints);
    e->joints = NULL;
    e->joint_buckets = e->joint_count = 0;
}
