/* The watches a server keeps for its connections (its WatchManager): by
 * path, each a list of the sessions registered, with what for (data and
 * exists, or children); one-shot; gone with the connection. */
#include "sim.h"

static bool wentry_is(const void *p, const void *key, size_t n)
{
    const struct wentry *e = p;
    return e->plen == n && memcmp(e->path, key, n) == 0;
}

static struct wentry *wt_find(struct wtable *t, const char *path, size_t n)
{
    return ptab_find(&t->map, sim_hash(path, n), wentry_is, path, n);
}

static void wt_remove(struct wtable *t, struct wentry *e)
{
    ptab_del(&t->map, e->hash, e);
    free(e->path);
    free(e);
}

void watch_add(zsim_world *w, int srv, zsim_session *s, const char *path, uint8_t kind)
{
    struct wtable *t = &w->srv[srv].watches;
    size_t n = strlen(path);
    struct wentry *e = wt_find(t, path, n);
    if (e == NULL) {
        e = sim_alloc(sizeof *e);
        e->path = sim_memdup(path, n);
        e->plen = n;
        e->hash = sim_hash(path, n);
        ptab_put(&t->map, e->hash, e);
    }
    for (struct wreg *g = e->head; g; g = g->enext) {
        if (g->s == s) {
            g->kinds |= kind;
            return;
        }
    }
    struct wreg *g = sim_alloc(sizeof *g);
    g->e = e;
    g->s = s;
    g->kinds = kind;
    g->enext = e->head;
    if (e->head)
        e->head->eprev = g;
    e->head = g;
    g->snext = s->regs;
    if (s->regs)
        s->regs->sprev = g;
    s->regs = g;
}

static void reg_unlink(struct wreg *g)
{
    if (g->eprev)
        g->eprev->enext = g->enext;
    else
        g->e->head = g->enext;
    if (g->enext)
        g->enext->eprev = g->eprev;
    if (g->sprev)
        g->sprev->snext = g->snext;
    else
        g->s->regs = g->snext;
    if (g->snext)
        g->snext->sprev = g->sprev;
}

/* One-shot: the watches an event fires are gone. A node deleted fires its
 * data and child watches once per connection. */
void watch_fire(zsim_world *w, int srv, const char *path, size_t n, int type)
{
    struct wtable *t = &w->srv[srv].watches;
    struct wentry *e = wt_find(t, path, n);
    if (e == NULL)
        return;
    uint8_t mask = type == ZSIM_CHILD_EVENT ? WK_CHILD
                   : type == ZSIM_DELETED_EVENT ? (WK_DATA | WK_CHILD)
                                                : WK_DATA;
    /* Oldest registration first: the list is newest first, so go from its
     * end. */
    struct wreg *g = e->head;
    while (g && g->enext)
        g = g->enext;
    while (g) {
        struct wreg *prev = g->eprev;
        if (g->kinds & mask) {
            g->kinds &= (uint8_t)~mask;
            struct item *it = item_new(w, ZSIM_WATCH);
            it->pub.session = g->s;
            it->zxid = w->srv[srv].tree.zxid;
            it->pub.type = type;
            it->pub.state = ZSIM_CONNECTED_STATE;
            item_str(it, path, n, &it->off_path);
            item_finish(it);
            zsim_session *s = g->s;
            if (g->kinds == 0) {
                reg_unlink(g);
                free(g);
            }
            sess_emit(s, it);
        }
        g = prev;
    }
    if (e->head == NULL)
        wt_remove(t, e);
}

/* The connection closed: the server forgets its watches. */
void watch_drop_session(zsim_world *w, zsim_session *s)
{
    while (s->regs) {
        struct wreg *g = s->regs;
        struct wentry *e = g->e;
        reg_unlink(g);
        free(g);
        if (e->head == NULL) /* the connection's server keeps them all */
            wt_remove(&w->srv[s->server].watches, e);
    }
}

void wtable_free(struct wtable *t)
{
    PTAB_EACH(&t->map, i)
    {
        struct wentry *e = t->map.tab[i].p;
        for (struct wreg *g = e->head, *next; g; g = next) {
            next = g->enext;
            free(g); /* the world goes: no session walks its list again */
        }
        free(e->path);
        free(e);
    }
    ptab_free(&t->map);
}
