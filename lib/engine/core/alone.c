/* Repeated acquisitions of a lock path nobody else uses.
 *
 * Sequence numbers count the nodes ever created under a lock path (a path
 * removed and made anew counts from 0 again). When a listing showed a node
 * alone, the next node created under the path gets that node's number plus
 * one, unless another was created in between. So once the alone node is
 * deleted, a create that comes back with exactly that number proves the
 * path held nothing else: nothing was created since, and all that was there
 * before is gone. That is the answer a listing would give, without sending
 * one: an uncontended acquire is then its create alone. A data watch on the
 * lock path reports it removed (and maybe made anew) meanwhile; its event
 * reaches us before the answer to any create sent after. Only for kinds
 * that hand off (PROTOCOL §4) and server-numbered nodes. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

#define TRACK_MAX 8

struct zkl__track {
    struct zkl__track *next;
    struct zkl__dir *dir;
    int64_t expect;        /* the sequence of the next create if nobody else creates */
    const zkl__cnode *basis; /* the alone node `expect` comes from, until its delete
                                is confirmed */
    bool ready;            /* basis deleted: one acquire may rely on `expect` */
    bool watched;          /* a data watch on the path is set on this connection */
};

static bool fast_eligible(const zkl__cnode *n)
{
    return n->pol->handoff && !(n->side && n->side->fixed_seq[0]);
}

static struct zkl__track *find(struct zkl__core *k, const struct zkl__dir *dir)
{
    for (struct zkl__track **p = &k->tracks; *p; p = &(*p)->next) {
        struct zkl__track *t = *p;
        if (t->dir == dir) {
            *p = t->next; /* most recently used first */
            t->next = k->tracks;
            k->tracks = t;
            return t;
        }
    }
    return NULL;
}

static void free_from(struct zkl__core *k, struct zkl__track **p)
{
    while (*p) {
        struct zkl__track *t = *p;
        *p = t->next;
        zkl__core_dir_put(k, t->dir);
        free(t);
    }
}

/* Forget what any of them said (dir NULL: all): after an event on a
 * tracked path, a reconnection, or a failed watch. */
void zkl__alone_invalidate(struct zkl__core *k, const struct zkl__dir *dir)
{
    k->dir_epoch++;
    for (struct zkl__track *t = k->tracks; t; t = t->next) {
        if (dir == NULL || t->dir == dir) {
            t->ready = false;
            t->basis = NULL;
            t->watched = false;
        }
    }
}

zkl__decision zkl__alone_dir_answer(zkl__cnode *n, int rc)
{
    /* ZNONODE still leaves an existence watch, which also reports the path
     * made anew. */
    if (rc != ZOK && rc != ZNONODE)
        zkl__alone_invalidate(n->core, n->dir);
    return zkl__do(ZKL__S_NONE);
}

void zkl__alone_seen(zkl__cnode *n, int64_t seq)
{
    if (!fast_eligible(n))
        return;
    struct zkl__core *k = n->core;
    struct zkl__track *t = find(k, n->dir);
    if (t == NULL) {
        /* First time alone here: remember it; a watch only if it repeats
         * (a client taking many different locks once gains nothing). */
        if ((t = zkl__core_calloc(k, 1, sizeof *t)) == NULL)
            return;
        t->dir = n->dir;
        n->dir->refs++;
        t->next = k->tracks;
        k->tracks = t;
        size_t count = 0;
        for (struct zkl__track **p = &k->tracks; *p; p = &(*p)->next) {
            if (++count == TRACK_MAX) {
                /* An event on a path no longer tracked would go unseen by
                 * a create sent on the strength of it: those list. */
                if ((*p)->next != NULL)
                    k->dir_epoch++;
                free_from(k, &(*p)->next);
                break;
            }
        }
    } else if (!t->watched) {
        zkl__act a = {.type = ZKL__A_WATCH_DIR, .path = n->dir->path};
        t->watched = zkl__core_send(n, &a) == ZOK;
    }
    t->expect = seq + 1;
    t->basis = n;
    t->ready = false;
}

void zkl__alone_deleted(zkl__cnode *n, bool ok)
{
    for (struct zkl__track *t = n->core->tracks; t; t = t->next) {
        if (t->basis == n) {
            t->basis = NULL;
            t->ready = ok;
        }
    }
}

bool zkl__alone_proved(const zkl__cnode *n, int64_t want)
{
    return (uint32_t)n->core->dir_epoch == n->fast_epoch && n->seq == want;
}

bool zkl__alone_take(zkl__cnode *n)
{
    struct zkl__core *k = n->core;
    if (!fast_eligible(n) || !k->connected || k->closing)
        return false;
    struct zkl__track *t = find(k, n->dir);
    if (t == NULL || !t->ready || !t->watched)
        return false;
    t->ready = false; /* one acquire per confirmed delete */
    if (t->expect > INT32_MAX)
        return false;
    n->fast_expect = (int32_t)t->expect;
    n->fast_epoch = (uint32_t)k->dir_epoch;
    return true;
}

void zkl__alone_event(struct zkl__core *k, const char *path)
{
    for (struct zkl__track *t = k->tracks; t; t = t->next) {
        if (strcmp(t->dir->path, path) == 0) {
            zkl__alone_invalidate(k, t->dir);
            break;
        }
    }
}

void zkl__alone_forget(struct zkl__core *k)
{
    free_from(k, &k->tracks);
    k->dir_epoch++;
}
