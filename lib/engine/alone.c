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
 * that hand off (PROTOCOL §4) and server-numbered nodes. c->mu held. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define DIRTRACK_MAX 8

static bool fast_eligible(const zkl__node *n)
{
    return n->pol->handoff && !n->fixed_seq[0];
}

struct zkl__dirtrack {
    struct zkl__dirtrack *next;
    char *dir;
    int64_t expect;   /* the sequence of the next create if nobody else creates */
    zkl__node *basis; /* the alone node `expect` comes from, until its delete
                         is confirmed */
    bool ready;       /* basis deleted: one acquire may rely on `expect` */
    bool watched;     /* a data watch on `dir` is set on this connection */
};

static struct zkl__dirtrack *alone_find(struct zkl__engine *e, const char *dir)
{
    for (struct zkl__dirtrack **p = &e->dirs; *p; p = &(*p)->next) {
        struct zkl__dirtrack *t = *p;
        if (strcmp(t->dir, dir) == 0) {
            *p = t->next; /* most recently used first */
            t->next = e->dirs;
            e->dirs = t;
            return t;
        }
    }
    return NULL;
}

static void alone_free_from(struct zkl__dirtrack **p)
{
    while (*p) {
        struct zkl__dirtrack *t = *p;
        *p = t->next;
        free(t->dir);
        free(t);
    }
}

/* Forget what any of them said: after an event on a tracked path, a
 * reconnection, or a failed watch. */
void zkl__alone_invalidate(struct zkl__engine *e, const char *dir)
{
    e->dir_epoch++;
    for (struct zkl__dirtrack *t = e->dirs; t; t = t->next) {
        if (dir == NULL || strcmp(t->dir, dir) == 0) {
            t->ready = false;
            t->basis = NULL;
            t->watched = false;
        }
    }
}

static void dirwatch_done(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    zkl__node *n = answer_in(data);
    struct zkl__engine *e = n->e;
    /* ZNONODE still leaves an existence watch, which also reports the
     * path made anew. */
    if (rc != ZOK && rc != ZNONODE)
        zkl__alone_invalidate(e, n->dir);
    answer_done(n);
}

/* n holds, and the listing showed it alone. */
void zkl__alone_seen(zkl__node *n, int64_t seq)
{
    if (!fast_eligible(n))
        return;
    zkl_client *c = n->c;
    struct zkl__engine *e = n->e;
    struct zkl__dirtrack *t = alone_find(e, n->dir);
    if (t == NULL) {
        /* First time alone here: remember it; a watch only if it repeats
         * (a client taking many different locks once gains nothing). */
        if ((t = calloc(1, sizeof *t)) == NULL || (t->dir = strdup(n->dir)) == NULL) {
            free(t);
            return;
        }
        t->next = e->dirs;
        e->dirs = t;
        size_t k = 0;
        for (struct zkl__dirtrack **p = &e->dirs; *p; p = &(*p)->next) {
            if (++k == DIRTRACK_MAX) {
                /* An event on a path no longer tracked would go unseen by
                 * a create sent on the strength of it: those list. */
                if ((*p)->next != NULL)
                    e->dir_epoch++;
                alone_free_from(&(*p)->next);
                break;
            }
        }
    } else if (!t->watched) {
        n->refs++;
        zkl__metrics_sent(n);
        if (zoo_awexists(n->zh, n->dir, zkl__client_watcher_fn(), (void *)(uintptr_t)c->id,
                         dirwatch_done, n) == ZOK)
            t->watched = true;
        else
            n->refs--;
    }
    t->expect = seq + 1;
    t->basis = n;
    t->ready = false;
}

/* n's delete was answered (ok) or will not be (!ok). */
void zkl__alone_deleted(zkl__node *n, bool ok)
{
    for (struct zkl__dirtrack *t = n->e->dirs; t; t = t->next) {
        if (t->basis == n) {
            t->basis = NULL;
            t->ready = ok;
        }
    }
}

/* A create sent without a listing was answered: its number says whether
 * the lock path held nothing else (see zkl__alone_seen); if not, list now. */
void zkl__alone_answer(zkl__node *n, int64_t want)
{
    zkl__entry e;
    const char *name = n->path + strlen(n->dir) + 1;
    if (n->e->dir_epoch == n->fast_epoch && zkl__entry_parse(name, &e) == 0 && e.seq == want) {
        char *one[1] = {(char *)name};
        struct String_vector kids = {1, one};
        zkl__node_decide(n, &kids);
    } else {
        zkl__node_list(n);
    }
}

/* A new node n is about to be created on a connected client: if the last
 * node alone on its lock path is confirmed deleted, let its create's
 * number answer for the listing (zkl__alone_answer). Returns true then. */
bool zkl__alone_take(struct zkl__engine *e, zkl__node *n)
{
    if (!fast_eligible(n) || !connected(e->c))
        return false;
    struct zkl__dirtrack *t = alone_find(e, n->dir);
    if (t == NULL || !t->ready || !t->watched)
        return false;
    t->ready = false; /* one acquire per confirmed delete */
    n->fast_expect = t->expect;
    n->fast_epoch = e->dir_epoch;
    return true;
}

/* A watch event on `path`: if it is a tracked lock path, it was removed or
 * its data changed. */
void zkl__alone_event(struct zkl__engine *e, const char *path)
{
    for (struct zkl__dirtrack *t = e->dirs; t; t = t->next) {
        if (strcmp(t->dir, path) == 0) {
            zkl__alone_invalidate(e, path);
            break;
        }
    }
}

/* The session ended (or the client goes): forget every lock path. */
void zkl__alone_forget(struct zkl__engine *e)
{
    alone_free_from(&e->dirs);
    e->dir_epoch++;
}
