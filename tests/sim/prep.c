/* The leader's checks of a write, in the server's order (its
 * PrepRequestProcessor), and the transaction a write that passes becomes.
 *
 * The order of the checks decides which code a request gets when several
 * apply (a delete under a parent without DELETE permission is refused
 * NOAUTH even if the node does not exist), so it follows the server's.
 * Within a multi each op sees what the ops before it did: the checks read
 * change records laid over the leader's tree, as the server's do; a single
 * write is a multi of one. */
#include "sim.h"

/* What the checks need of a node: the tree's, or an earlier op's. */
struct rec {
    char *path;
    size_t plen;
    bool exists;
    int32_t version, cversion, aversion, nkids;
    int64_t owner;
    const struct acl_list *acl;
};

struct prep {
    zsim_world *w;
    struct rec *v;
    size_t n, cap;
};

struct prep *prep_new(zsim_world *w)
{
    struct prep *p = sim_alloc(sizeof *p);
    p->w = w;
    return p;
}

void prep_reset(struct prep *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].path);
    p->n = 0;
}

void prep_free(struct prep *p)
{
    if (p == NULL)
        return;
    prep_reset(p);
    free(p->v);
    free(p);
}

static bool get_rec(struct prep *p, const char *path, size_t n, struct rec *out)
{
    for (size_t i = p->n; i-- > 0;) {
        if (p->v[i].plen == n && memcmp(p->v[i].path, path, n) == 0) {
            *out = p->v[i];
            return out->exists;
        }
    }
    const struct znode *z = tree_find(&p->w->srv[0].tree, path, n);
    if (z == NULL)
        return false;
    out->path = NULL;
    out->plen = n;
    out->exists = true;
    out->version = z->st.version;
    out->cversion = z->st.cversion;
    out->aversion = z->st.aversion;
    out->nkids = (int32_t)z->nkids;
    out->owner = z->st.ephemeralOwner;
    out->acl = z->acl;
    return true;
}

static void put_rec(struct prep *p, const char *path, size_t n, const struct rec *r)
{
    SIM_GROW(p->v, p->n, p->cap);
    struct rec *x = &p->v[p->n++];
    *x = *r;
    x->path = sim_memdup(path, n);
    x->plen = n;
}

/* ---- paths ------------------------------------------------------------ */

bool client_path_ok(const char *path, int mode)
{
    bool seq = mode == ZSIM_PERSISTENT_SEQUENTIAL || mode == ZSIM_EPHEMERAL_SEQUENTIAL;
    if (path == NULL || path[0] != '/')
        return false;
    size_t len = strlen(path);
    if (len == 1)
        return true;
    if (path[len - 1] == '/' && !seq)
        return false;
    char lastc = '/';
    for (size_t i = 1; i < len; lastc = path[i], i++) {
        char c = path[i];
        if (c == '/' && lastc == '/')
            return false;
        if (c == '.' && lastc == '.') {
            if (path[i - 2] == '/' && ((i + 1 == len && !seq) || path[i + 1] == '/'))
                return false;
        } else if (c == '.') {
            if (path[i - 1] == '/' && ((i + 1 == len && !seq) || path[i + 1] == '/'))
                return false;
        } else if (c > 0x00 && c < 0x1f) { /* the C client lets 0x1f through */
            return false;
        }
    }
    return true;
}

/* One UTF-16 unit as Java sees the path: the server decodes the bytes as
 * UTF-8, a malformed sequence becoming U+FFFD and a character beyond
 * U+FFFF a surrogate pair; either is refused below. */
static uint32_t next_unit(const unsigned char **pp, const unsigned char *end)
{
    const unsigned char *p = *pp;
    uint32_t c = *p++;
    int more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (more < 0) {
        *pp = p;
        return 0xfffd;
    }
    c &= more == 0 ? 0x7f : more == 1 ? 0x1f : more == 2 ? 0x0f : 0x07;
    for (int i = 0; i < more; i++) {
        if (p >= end || (*p & 0xc0) != 0x80) {
            *pp = p;
            return 0xfffd;
        }
        c = c << 6 | (*p++ & 0x3f);
    }
    *pp = p;
    if (c < min[more] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0xfffd;
    return c > 0xffff ? 0xd800 : c;
}

bool server_path_ok(const char *path)
{
    size_t len = strlen(path);
    if (len == 0 || path[0] != '/')
        return false;
    if (len == 1)
        return true;
    if (path[len - 1] == '/')
        return false;
    const unsigned char *p = (const unsigned char *)path + 1, *end = (const unsigned char *)path + len;
    uint32_t lastc = '/', last2 = 0;
    while (p < end) {
        uint32_t c = next_unit(&p, end);
        bool at_end = p == end;
        uint32_t next = at_end ? 0 : *p;
        if (c == '/' && lastc == '/')
            return false;
        if (c == '.' && lastc == '.') {
            if (last2 == '/' && (at_end || next == '/'))
                return false;
        } else if (c == '.') {
            if (lastc == '/' && (at_end || next == '/'))
                return false;
        } else if ((c > 0 && c <= 0x1f) || (c >= 0x7f && c <= 0x9f) ||
                   (c >= 0xd800 && c <= 0xf8ff) || c >= 0xfff0) {
            return false;
        }
        last2 = lastc;
        lastc = c;
    }
    return true;
}

static bool special_path(const char *path)
{
    return strcmp(path, "/") == 0 || strcmp(path, "/zookeeper") == 0 ||
           strcmp(path, "/zookeeper/quota") == 0 || strcmp(path, "/zookeeper/config") == 0;
}

static bool version_ok(int32_t current, int expected)
{
    return expected == -1 || expected == current;
}

static bool is_ephemeral_owner(int64_t owner)
{
    return owner != 0 && owner != ZSIM_CONTAINER_OWNER;
}

/* ---- the ops -------------------------------------------------------------- */

static int prep_create(struct prep *p, const struct wop *op, zsim_session *s, struct txn *out)
{
    zsim_world *w = p->w;
    const char *path = op->path;
    size_t n = strlen(path);
    if (n == 0 || path[0] != '/')
        return ZSIM_BADARGUMENTS;
    struct acl_list *acl = acl_fixup(&w->acls, &op->acl, &s->ids);
    if (acl == NULL)
        return ZSIM_INVALIDACL;
    size_t pn = n == 1 ? 1 : parent_len(path, n);
    struct rec parent;
    if (!get_rec(p, path, pn, &parent))
        return ZSIM_NONODE;
    if (!acl_allows(parent.acl, ZSIM_PERM_CREATE, &s->ids))
        return ZSIM_NOAUTH;
    bool seq = op->mode == ZSIM_PERSISTENT_SEQUENTIAL || op->mode == ZSIM_EPHEMERAL_SEQUENTIAL;
    char *name = sim_grow(NULL, n + 16);
    memcpy(name, path, n);
    if (seq)
        n += (size_t)snprintf(name + n, 16, "%010d", parent.cversion);
    name[n] = '\0';
    struct rec old;
    int rc = ZSIM_OK;
    if (!server_path_ok(name))
        rc = ZSIM_BADARGUMENTS;
    else if (get_rec(p, name, n, &old))
        rc = ZSIM_NODEEXISTS;
    else if (is_ephemeral_owner(parent.owner))
        rc = ZSIM_NOCHILDRENFOREPHEMERALS;
    if (rc != ZSIM_OK) {
        free(name);
        return rc;
    }
    bool eph = op->mode == ZSIM_EPHEMERAL || op->mode == ZSIM_EPHEMERAL_SEQUENTIAL;
    out->type = T_CREATE;
    out->path = name;
    out->data = op->dlen > 0 ? sim_memdup(op->data, (size_t)op->dlen) : NULL;
    out->dlen = op->dlen;
    out->acl = acl;
    out->container = op->mode == ZSIM_CONTAINER;
    out->owner = out->container ? ZSIM_CONTAINER_OWNER : eph ? s->id : 0;
    out->owner_ix = eph ? s->ix : -1;
    out->cversion = (int32_t)((uint32_t)parent.cversion + 1u); /* Java's int wraps */
    parent.nkids++;
    parent.cversion = out->cversion;
    put_rec(p, path, pn, &parent);
    struct rec z = {NULL, n, true, 0, p->w->cfg.cversion_start, 0, 0, out->owner, acl};
    put_rec(p, name, n, &z);
    return ZSIM_OK;
}

static int prep_delete(struct prep *p, const struct wop *op, zsim_session *s, struct txn *out)
{
    const char *path = op->path;
    size_t n = strlen(path);
    if (n == 0 || path[0] != '/' || special_path(path))
        return ZSIM_BADARGUMENTS;
    size_t pn = parent_len(path, n);
    struct rec parent, z;
    if (!get_rec(p, path, pn, &parent))
        return ZSIM_NONODE;
    if (!acl_allows(parent.acl, ZSIM_PERM_DELETE, &s->ids))
        return ZSIM_NOAUTH;
    if (!get_rec(p, path, n, &z))
        return ZSIM_NONODE;
    if (!version_ok(z.version, op->version))
        return ZSIM_BADVERSION;
    if (z.nkids > 0)
        return ZSIM_NOTEMPTY;
    out->type = T_DELETE;
    out->path = sim_memdup(path, n);
    parent.nkids--;
    put_rec(p, path, pn, &parent);
    struct rec gone = {NULL, n, false, 0, 0, 0, 0, 0, NULL};
    put_rec(p, path, n, &gone);
    return ZSIM_OK;
}

/* What a set and a check ask of their node, in the server's order: a
 * valid path, a node there, PERM on it, and the data version expected. */
static int prep_node(struct prep *p, const struct wop *op, zsim_session *s, int perm,
                     struct rec *z)
{
    if (!server_path_ok(op->path))
        return ZSIM_BADARGUMENTS;
    if (!get_rec(p, op->path, strlen(op->path), z))
        return ZSIM_NONODE;
    if (!acl_allows(z->acl, perm, &s->ids))
        return ZSIM_NOAUTH;
    if (!version_ok(z->version, op->version))
        return ZSIM_BADVERSION;
    return ZSIM_OK;
}

static int prep_set(struct prep *p, const struct wop *op, zsim_session *s, struct txn *out)
{
    const char *path = op->path;
    size_t n = strlen(path);
    struct rec z;
    int rc = prep_node(p, op, s, ZSIM_PERM_WRITE, &z);
    if (rc != ZSIM_OK)
        return rc;
    out->type = T_SET;
    out->path = sim_memdup(path, n);
    out->data = op->dlen > 0 ? sim_memdup(op->data, (size_t)op->dlen) : NULL;
    out->dlen = op->dlen;
    out->version = z.version + 1;
    z.version = out->version;
    put_rec(p, path, n, &z);
    return ZSIM_OK;
}

static int prep_check(struct prep *p, const struct wop *op, zsim_session *s, struct txn *out)
{
    struct rec z;
    int rc = prep_node(p, op, s, ZSIM_PERM_READ, &z);
    if (rc != ZSIM_OK)
        return rc;
    out->type = T_CHECK;
    out->path = sim_strdup(op->path);
    return ZSIM_OK;
}

static int prep_set_acl(struct prep *p, const struct wop *op, zsim_session *s, struct txn *out)
{
    const char *path = op->path;
    size_t n = strlen(path);
    struct rec z;
    if (!server_path_ok(path))
        return ZSIM_BADARGUMENTS;
    struct acl_list *acl = acl_fixup(&p->w->acls, &op->acl, &s->ids);
    if (acl == NULL)
        return ZSIM_INVALIDACL;
    if (!get_rec(p, path, n, &z))
        return ZSIM_NONODE;
    if (!acl_allows(z.acl, ZSIM_PERM_ADMIN, &s->ids))
        return ZSIM_NOAUTH;
    if (!version_ok(z.aversion, op->version))
        return ZSIM_BADVERSION;
    out->type = T_SET_ACL;
    out->path = sim_memdup(path, n);
    out->acl = acl;
    out->version = z.aversion + 1;
    z.aversion = out->version;
    z.acl = acl;
    put_rec(p, path, n, &z);
    return ZSIM_OK;
}

int prep_op(struct prep *p, const struct wop *op, zsim_session *s, struct txn *out)
{
    memset(out, 0, sizeof *out);
    out->owner_ix = -1;
    if (!s->alive)
        return ZSIM_SESSIONEXPIRED;
    switch (op->type) {
    case ZSIM_MOP_CREATE:
        return prep_create(p, op, s, out);
    case ZSIM_MOP_DELETE:
        return prep_delete(p, op, s, out);
    case ZSIM_MOP_SET:
        return prep_set(p, op, s, out);
    case ZSIM_MOP_CHECK:
        return prep_check(p, op, s, out);
    case MOP_SET_ACL:
        return prep_set_acl(p, op, s, out);
    default:
        return ZSIM_BADARGUMENTS;
    }
}
