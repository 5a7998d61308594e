/* One server's tree of znodes, and what applying a committed transaction
 * does to it (the server's DataTree.processTxn): every server applies the
 * same log in zxid order, firing the watches its own clients set.
 *
 * Nodes are found by path in a hash table (struct ptab), so a lookup costs
 * the same with a million nodes as with ten. A node keeps its children in an unsorted array with
 * each child's slot, so adding and removing one is O(1); listings come out
 * in a seeded order, as the server's HashSet gives no order either. */
#include "sim.h"

size_t parent_len(const char *path, size_t n)
{
    if (n <= 1)
        return 0;
    size_t i = n;
    while (i > 0 && path[i - 1] != '/')
        i--;
    return i > 1 ? i - 1 : 1;
}

/* ---- the map ----------------------------------------------------------- */

static bool znode_is(const void *p, const void *key, size_t n)
{
    const struct znode *z = p;
    return z->plen == n && memcmp(z->path, key, n) == 0;
}

struct znode *tree_find(const struct tree *t, const char *path, size_t n)
{
    return ptab_find(&t->map, sim_hash(path, n), znode_is, path, n);
}

/* ---- nodes ----------------------------------------------------------------- */

static struct znode *node_new(struct tree *t, const char *path, size_t n)
{
    struct znode *z = sim_alloc(sizeof *z);
    z->path = sim_memdup(path, n);
    z->plen = (uint32_t)n;
    size_t p = parent_len(path, n);
    z->name = (uint32_t)(n <= 1 ? 0 : p == 1 ? 1 : p + 1);
    z->hash = sim_hash(path, n);
    z->dlen = -1;
    z->owner = -1;
    z->cont = -1;
    ptab_put(&t->map, z->hash, z);
    SIM_GROW(t->all, t->nall, t->capall);
    z->all = (uint32_t)t->nall;
    t->all[t->nall++] = z;
    return z;
}

static void kid_add(struct znode *parent, struct znode *z)
{
    SIM_GROW(parent->kids, parent->nkids, parent->capkids);
    z->slot = parent->nkids;
    parent->kids[parent->nkids++] = z;
    z->parent = parent;
    parent->st.numChildren = (int32_t)parent->nkids;
}

static void kid_del(struct znode *parent, struct znode *z)
{
    struct znode *last = parent->kids[--parent->nkids];
    parent->kids[z->slot] = last;
    last->slot = z->slot;
    parent->st.numChildren = (int32_t)parent->nkids;
}

static void eph_link(struct tree *t, struct znode *z)
{
    if ((size_t)z->owner >= t->neph) {
        size_t n = t->neph ? t->neph : 16;
        while (n <= (size_t)z->owner)
            n *= 2;
        t->eph = sim_grow(t->eph, n * sizeof *t->eph);
        memset(t->eph + t->neph, 0, (n - t->neph) * sizeof *t->eph);
        t->neph = n;
    }
    z->enext = t->eph[z->owner];
    z->eprev = NULL;
    if (z->enext)
        z->enext->eprev = z;
    t->eph[z->owner] = z;
}

static void eph_unlink(struct tree *t, struct znode *z)
{
    if (z->eprev)
        z->eprev->enext = z->enext;
    else
        t->eph[z->owner] = z->enext;
    if (z->enext)
        z->enext->eprev = z->eprev;
}

/* The Stat a client is shown (the server's DataNode.copyStat): the stored
 * cversion counts creations, which is what sequence numbers use, but a
 * client sees the changes, creations and deletions: twice the creations
 * less the children left. A container's owner mark is not shown. */
void znode_stat(const struct znode *z, struct zsim_stat *out)
{
    *out = z->st;
    out->cversion = (int32_t)((uint32_t)z->st.cversion * 2u - z->nkids); /* wraps as Java's int */
    if (out->ephemeralOwner == ZSIM_CONTAINER_OWNER)
        out->ephemeralOwner = 0;
}

static void node_free(struct znode *z)
{
    free(z->path);
    free(z->data);
    free(z->kids);
    free(z);
}

static void node_remove(struct tree *t, struct znode *z)
{
    ptab_del(&t->map, z->hash, z);
    struct znode *last = t->all[--t->nall];
    t->all[z->all] = last;
    last->all = z->all;
    if (z->owner >= 0)
        eph_unlink(t, z);
    if (z->cont >= 0) {
        struct znode *lc = t->containers[--t->ncont];
        t->containers[z->cont] = lc;
        lc->cont = z->cont;
    }
    if (z->parent)
        kid_del(z->parent, z);
    node_free(z);
}

static void node_set_data(struct znode *z, const char *data, int32_t len)
{
    free(z->data);
    z->data = len > 0 ? sim_memdup(data, (size_t)len) : NULL;
    z->dlen = len;
    z->st.dataLength = len < 0 ? 0 : len;
}

void tree_init(struct tree *t, struct acl_list *open_acl)
{
    memset(t, 0, sizeof *t);
    /* A fresh server: "/" and "/zookeeper" with its "quota" and "config",
     * added without counting as changes (cversion 0, zxid 0). */
    static const char *const paths[] = {"/", "/zookeeper", "/zookeeper/quota",
                                        "/zookeeper/config"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        struct znode *z = node_new(t, paths[i], strlen(paths[i]));
        z->acl = open_acl;
        z->st.dataLength = 0;
        z->dlen = 0;
        if (i > 0)
            kid_add(tree_find(t, paths[i], parent_len(paths[i], strlen(paths[i]))), z);
    }
}

void tree_free(struct tree *t)
{
    for (size_t i = 0; i < t->nall; i++)
        node_free(t->all[i]);
    ptab_free(&t->map);
    free(t->all);
    free(t->eph);
    free(t->containers);
    memset(t, 0, sizeof *t);
}

/* ---- applying transactions ----------------------------------------------------- */

static void apply_create(zsim_world *w, int srv, const struct txn *x, int64_t zxid,
                         int64_t time_ms, struct apply_out *out)
{
    struct tree *t = &w->srv[srv].tree;
    size_t n = strlen(x->path);
    size_t pn = parent_len(x->path, n);
    struct znode *parent = tree_find(t, x->path, pn);
    struct znode *z = node_new(t, x->path, n);
    node_set_data(z, x->data, x->dlen);
    z->acl = x->acl;
    z->st.czxid = z->st.mzxid = z->st.pzxid = zxid;
    z->st.ctime = z->st.mtime = time_ms;
    z->st.ephemeralOwner = x->owner;
    z->st.cversion = w->cfg.cversion_start;
    if (x->owner_ix >= 0) {
        z->owner = x->owner_ix;
        eph_link(t, z);
    }
    if (x->container) {
        SIM_GROW(t->containers, t->ncont, t->capcont);
        z->cont = (int32_t)t->ncont;
        t->containers[t->ncont++] = z;
    }
    if ((int32_t)((uint32_t)x->cversion - (uint32_t)parent->st.cversion) > 0) { /* past a wrap too */
        parent->st.cversion = x->cversion;
        parent->st.pzxid = zxid;
    }
    kid_add(parent, z);
    if (srv == 0 && w->change_fn) {
        struct zsim_change c = {true, false, z->path, zxid, z->owner, w->change_origin};
        w->change_fn(w->change_arg, &c);
    }
    if (out) {
        znode_stat(z, &out->stat);
        out->has_stat = true;
    }
    watch_fire(w, srv, x->path, n, ZSIM_CREATED_EVENT);
    watch_fire(w, srv, x->path, pn, ZSIM_CHILD_EVENT);
}

static void apply_delete(zsim_world *w, int srv, const char *path, int64_t zxid)
{
    struct tree *t = &w->srv[srv].tree;
    size_t n = strlen(path);
    struct znode *z = tree_find(t, path, n);
    if (z == NULL)
        return; /* a close session's list may name a node deleted meanwhile */
    struct znode *parent = z->parent;
    /* A delete moves the parent's pzxid, never its cversion: sequence
     * numbers count creations only. */
    if (zxid > parent->st.pzxid)
        parent->st.pzxid = zxid;
    size_t pn = parent->plen;
    if (srv == 0 && w->change_fn) {
        struct zsim_change c = {false, w->change_closing, z->path, zxid, z->owner,
                                w->change_origin};
        w->change_fn(w->change_arg, &c);
    }
    node_remove(t, z);
    watch_fire(w, srv, path, n, ZSIM_DELETED_EVENT);
    watch_fire(w, srv, path, pn, ZSIM_CHILD_EVENT);
}

static void apply_one(zsim_world *w, int srv, const struct txn *x, int64_t zxid, int64_t time_ms,
                      struct apply_out *out)
{
    struct tree *t = &w->srv[srv].tree;
    struct znode *z;
    switch (x->type) {
    case T_CREATE:
        apply_create(w, srv, x, zxid, time_ms, out);
        break;
    case T_DELETE:
        apply_delete(w, srv, x->path, zxid);
        break;
    case T_SET:
        z = tree_find(t, x->path, strlen(x->path));
        node_set_data(z, x->data, x->dlen);
        z->st.mzxid = zxid;
        z->st.mtime = time_ms;
        z->st.version = x->version;
        if (out) {
            out->stat = z->st;
            out->has_stat = true;
        }
        watch_fire(w, srv, x->path, z->plen, ZSIM_CHANGED_EVENT);
        break;
    case T_SET_ACL:
        z = tree_find(t, x->path, strlen(x->path));
        z->acl = x->acl;
        z->st.aversion = x->version;
        if (out) {
            out->stat = z->st;
            out->has_stat = true;
        }
        break;
    case T_CLOSE_SESSION:
        for (int i = 0; i < x->npaths; i++)
            apply_delete(w, srv, x->paths[i], zxid);
        break;
    default: /* errors, checks, new sessions: nothing to the tree */
        break;
    }
}

void tree_apply(zsim_world *w, int srv, const struct logent *e, struct apply_out *out,
                struct apply_out *outs)
{
    struct tree *t = &w->srv[srv].tree;
    t->zxid = e->zxid;
    w->change_origin = e->origin;
    w->change_closing = e->t.type == T_CLOSE_SESSION;
    if (e->t.type != T_MULTI) {
        apply_one(w, srv, &e->t, e->zxid, e->time_ms, out);
        return;
    }
    for (int i = 0; i < e->t.nsub; i++)
        apply_one(w, srv, &e->t.sub[i], e->zxid, e->time_ms, outs ? &outs[i] : NULL);
}

void txn_clear(struct txn *t)
{
    free(t->path);
    free(t->data);
    for (int i = 0; i < t->nsub; i++)
        txn_clear(&t->sub[i]);
    free(t->sub);
    for (int i = 0; i < t->npaths; i++)
        free(t->paths[i]);
    free(t->paths);
    memset(t, 0, sizeof *t);
}
