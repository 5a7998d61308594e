/* Outsiders (another program with rights on the same tree: an operator, a
 * script), the truth of the leader's tree, and the names of the C client's
 * codes. */
#include "sim.h"

zsim_session *outsider_session(zsim_world *w)
{
    if (w->outsider)
        return w->outsider;
    zsim_session *s = sim_alloc(sizeof *s);
    s->w = w;
    s->ix = (int32_t)w->nsess;
    SIM_GROW(w->sess, w->nsess, w->capsess);
    w->sess[w->nsess++] = s;
    s->id = w->next_session_id++;
    s->timeout = w->cfg.max_timeout_ms;
    s->state = ZSIM_CONNECTED_STATE;
    s->server = -1; /* it hears nothing: it only writes */
    s->finished = true;
    s->nhosts = 1;
    s->link_out = s->link_in = true;
    s->timer_at = INT64_MAX;
    s->expire_at = INT64_MAX;
    idents_add(&s->ids, "ip", "127.0.0.1");
    /* an operator: the server's superuser, whom no ACL refuses, so that
     * what outsiders break they can also mend */
    idents_add(&s->ids, "super", "");
    if (w->outsider_digest) {
        char *id = digest_id(w->outsider_digest);
        if (id)
            idents_add(&s->ids, "digest", id);
        free(id);
    }
    w->outsider = s;
    session_alive_set(w, s, true);
    s->ever_alive = true;
    struct txn t = {0};
    t.type = T_CREATE_SESSION;
    commit(w, &t, -1, NULL, NULL);
    return s;
}

void zsim_outsider_auth(zsim_world *w, const char *digest)
{
    zsim_session *s = outsider_session(w);
    char *id = digest ? digest_id(digest) : NULL;
    if (id) {
        idents_add(&s->ids, "digest", id);
        free(w->outsider_digest);
        w->outsider_digest = sim_strdup(digest);
        free(id);
    }
}

int64_t zsim_outsider_id(const zsim_world *w)
{
    return w->outsider ? w->outsider->id : 0;
}

/* The outsider's session ends (its ephemerals go); the next outsider call
 * opens another. */
void zsim_outsider_leave(zsim_world *w)
{
    if (w->outsider == NULL)
        return;
    sim_trace(w, "outsider session %d ends", w->outsider->ix);
    zsim_session *s = w->outsider;
    w->outsider = NULL;
    leader_expire(w, s);
}

/* One write of the outsider's, checked and committed at once; a create's
 * name to name. */
static int outsider_write(zsim_world *w, struct wop *op, char *name, size_t size)
{
    item_free(w, w->current);
    w->current = NULL;
    zsim_session *s = outsider_session(w);
    prep_reset(w->prep);
    struct txn t;
    int rc = prep_op(w->prep, op, s, &t);
    if (rc == ZSIM_OK && name && size) {
        snprintf(name, size, "%s", t.path);
    }
    if (rc != ZSIM_OK) {
        txn_clear(&t);
        t.type = T_ERROR;
        t.err = rc;
    }
    sim_trace(w, "outsider %d on %s: %s", op->type, op->path, zsim_rc_name(rc));
    commit(w, &t, -1, NULL, NULL);
    wop_free(op);
    return rc;
}

static void op_fill(struct wop *op, int type, const char *path, const char *data, int len,
                    const struct zsim_acl_vector *acl, int mode, int version)
{
    memset(op, 0, sizeof *op);
    op->type = type;
    op->path = sim_strdup(path);
    op->dlen = len < 0 ? -1 : len;
    op->data = len > 0 ? sim_memdup(data, (size_t)len) : NULL;
    op->mode = mode;
    op->version = version;
    if (acl)
        op->acl = *acl; /* borrowed for the call */
}

int zsim_outsider_create(zsim_world *w, const char *path, const char *data, int len,
                         const struct zsim_acl_vector *acl, int mode, char *name, size_t size)
{
    if (!client_path_ok(path, mode))
        return ZSIM_BADARGUMENTS;
    struct wop op;
    op_fill(&op, ZSIM_MOP_CREATE, path, data, len, acl, mode, -1);
    return outsider_write(w, &op, name, size);
}

int zsim_outsider_delete(zsim_world *w, const char *path, int version)
{
    if (!client_path_ok(path, 0))
        return ZSIM_BADARGUMENTS;
    struct wop op;
    op_fill(&op, ZSIM_MOP_DELETE, path, NULL, -1, NULL, 0, version);
    return outsider_write(w, &op, NULL, 0);
}

int zsim_outsider_set(zsim_world *w, const char *path, const char *data, int len, int version)
{
    if (!client_path_ok(path, 0))
        return ZSIM_BADARGUMENTS;
    struct wop op;
    op_fill(&op, ZSIM_MOP_SET, path, data, len, NULL, 0, version);
    return outsider_write(w, &op, NULL, 0);
}

int zsim_outsider_set_acl(zsim_world *w, const char *path, int version,
                          const struct zsim_acl_vector *acl)
{
    if (!client_path_ok(path, 0))
        return ZSIM_BADARGUMENTS;
    struct wop op;
    op_fill(&op, MOP_SET_ACL, path, NULL, -1, acl, 0, version);
    int rc = outsider_write(w, &op, NULL, 0);
    if (rc == ZSIM_OK && acl != &ZSIM_OPEN_ACL_UNSAFE) {
        SIM_GROW(w->acl_marred, w->nmarred, w->capmarred);
        w->acl_marred[w->nmarred++] = sim_strdup(path);
    }
    return rc;
}

/* An ACL an outsider changed goes back to open. */
static void acl_mend(zsim_world *w)
{
    size_t i = (size_t)rng_below(&w->rng, w->nmarred);
    char *path = w->acl_marred[i];
    w->acl_marred[i] = w->acl_marred[--w->nmarred];
    zsim_outsider_set_acl(w, path, -1, &ZSIM_OPEN_ACL_UNSAFE);
    free(path);
}

void zsim_outsider_mend(zsim_world *w)
{
    while (w->nmarred > 0)
        acl_mend(w);
}

static bool under_root(const zsim_world *w, const struct znode *z)
{
    const char *root = w->cfg.outsider_root;
    size_t n = strlen(root);
    if (z->plen <= 1 || strncmp(z->path, "/zookeeper", 10) == 0)
        return false;
    if (n <= 1)
        return true;
    return z->plen > n && memcmp(z->path, root, n) == 0 && z->path[n] == '/';
}

/* ACLs an outsider may put on a node: each refuses somebody something. */
static const struct zsim_acl acl_read_only[] = {{ZSIM_PERM_READ, "world", "anyone"}};
static const struct zsim_acl acl_no_delete[] = {
    {ZSIM_PERM_ALL & ~ZSIM_PERM_DELETE, "world", "anyone"}};
static const struct zsim_acl acl_no_read[] = {{ZSIM_PERM_ALL & ~ZSIM_PERM_READ, "world", "anyone"}};
static const struct zsim_acl acl_stranger[] = {
    {ZSIM_PERM_ALL, "digest", "stranger:2jmj7l5rSw0yVb/vlWAYkK/YBwk="}};
static const struct zsim_acl_vector outsider_acls[] = {
    {1, acl_read_only}, {1, acl_no_delete}, {1, acl_no_read}, {1, acl_stranger}};

static void act_on(zsim_world *w, const struct znode *z, bool tie);

int zsim_outsider_random(zsim_world *w)
{
    /* What outsiders do also comes undone: their sessions end, and the
     * ACLs they changed are put back, so no damage lasts for ever. */
    uint64_t undo = rng_below(&w->rng, 6);
    if (undo == 0 && w->outsider) {
        w->counts.outsiders++;
        zsim_outsider_leave(w);
        return 0;
    }
    if (undo == 1 && w->nmarred > 0) {
        w->counts.outsiders++;
        acl_mend(w);
        return 0;
    }
    const struct tree *t = &w->srv[0].tree;
    const struct znode *z = NULL;
    for (int i = 0; i < 8 && z == NULL; i++) {
        const struct znode *c = t->all[rng_below(&w->rng, t->nall)];
        if (under_root(w, c))
            z = c;
    }
    if (z == NULL)
        return -1;
    act_on(w, z, false);
    return 0;
}

/* One action of an outsider's on a node: delete it (a leaf), change its
 * data or its ACL, or plant a node beside it: with its name's prefix and
 * the next sequence, or (`tie`) with its very sequence under another
 * contender's prefix, so that it sorts right beside it. */
static void act_on(zsim_world *w, const struct znode *z, bool tie)
{
    w->counts.outsiders++;
    char *path = sim_memdup(z->path, z->plen);
    size_t plen = z->plen, name = z->name;
    bool leaf = z->nkids == 0, eph = z->st.ephemeralOwner != 0 &&
                                     z->st.ephemeralOwner != ZSIM_CONTAINER_OWNER;
    int action = (int)rng_below(&w->rng, 4);
    if (action == 0 && !leaf)
        action = 1; /* a node with children stays; its data changes */
    switch (action) {
    case 0:
        zsim_outsider_delete(w, path, -1);
        break;
    case 1: {
        static const char *const data[] = {"__REVOKE__", "outsider", ""};
        const char *d = data[rng_below(&w->rng, 3)];
        zsim_outsider_set(w, path, d, (int)strlen(d), -1);
        break;
    }
    case 2:
        zsim_outsider_set_acl(w, path, -1, &outsider_acls[rng_below(&w->rng, 4)]);
        break;
    default: {
        /* A node beside it with its name's prefix and the next sequence (a
         * contender's name someone else owns), or a child of it. */
        size_t digits = 0;
        while (digits < 10 && digits < plen - name && path[plen - 1 - digits] >= '0' &&
               path[plen - 1 - digits] <= '9')
            digits++;
        if (digits == 10 && tie && plen - name > 3 + 10 && memcmp(path + name, "_c_", 3) == 0) {
            path[name + 3] = path[name + 3] == '0' ? '1' : '0'; /* another uuid */
            zsim_outsider_create(w, path, "planted", 7, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_EPHEMERAL,
                                 NULL, 0);
        } else if (digits == 10) {
            path[plen - 10] = '\0';
            zsim_outsider_create(w, path, "planted", 7, &ZSIM_OPEN_ACL_UNSAFE,
                                 ZSIM_EPHEMERAL_SEQUENTIAL, NULL, 0);
        } else if (!eph) {
            char *child = sim_grow(NULL, plen + 10);
            snprintf(child, plen + 10, "%s/planted", path);
            zsim_outsider_create(w, child, "planted", 7, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT,
                                 NULL, 0);
            free(child);
        }
        break;
    }
    }
    free(path);
}

int zsim_outsider_at(zsim_world *w, const char *path)
{
    const struct znode *z = tree_find(&w->srv[0].tree, path, strlen(path));
    if (z == NULL || !under_root(w, z))
        return -1;
    act_on(w, z, true);
    return 0;
}

/* ---- the truth ---------------------------------------------------------- */

int zsim_truth_stat(const zsim_world *w, const char *path, struct zsim_stat *st)
{
    const struct znode *z = tree_find(&w->srv[0].tree, path, strlen(path));
    if (z == NULL)
        return ZSIM_NONODE;
    if (st)
        znode_stat(z, st);
    return ZSIM_OK;
}

int zsim_truth_children(const zsim_world *w, const char *path,
                        void (*fn)(void *arg, const char *name), void *arg)
{
    const struct znode *z = tree_find(&w->srv[0].tree, path, strlen(path));
    if (z == NULL)
        return -1;
    for (uint32_t i = 0; fn && i < z->nkids; i++)
        fn(arg, z->kids[i]->path + z->kids[i]->name);
    return (int)z->nkids;
}

int64_t zsim_zxid(const zsim_world *w, int server)
{
    if (server < 0 || server >= w->nsrv)
        return -1;
    return server == 0 ? w->zxid : w->srv[server].tree.zxid;
}

/* ---- names ---------------------------------------------------------------- */

const char *zsim_rc_name(int rc)
{
    switch (rc) {
    case ZSIM_OK: return "ZOK";
    case ZSIM_RUNTIMEINCONSISTENCY: return "ZRUNTIMEINCONSISTENCY";
    case ZSIM_MARSHALLINGERROR: return "ZMARSHALLINGERROR";
    case ZSIM_OPERATIONTIMEOUT: return "ZOPERATIONTIMEOUT";
    case ZSIM_BADARGUMENTS: return "ZBADARGUMENTS";
    case ZSIM_INVALIDSTATE: return "ZINVALIDSTATE";
    case ZSIM_CONNECTIONLOSS: return "ZCONNECTIONLOSS";
    case ZSIM_NONODE: return "ZNONODE";
    case ZSIM_NOAUTH: return "ZNOAUTH";
    case ZSIM_BADVERSION: return "ZBADVERSION";
    case ZSIM_NOCHILDRENFOREPHEMERALS: return "ZNOCHILDRENFOREPHEMERALS";
    case ZSIM_NODEEXISTS: return "ZNODEEXISTS";
    case ZSIM_NOTEMPTY: return "ZNOTEMPTY";
    case ZSIM_SESSIONEXPIRED: return "ZSESSIONEXPIRED";
    case ZSIM_INVALIDACL: return "ZINVALIDACL";
    case ZSIM_AUTHFAILED: return "ZAUTHFAILED";
    case ZSIM_CLOSING: return "ZCLOSING";
    default: return "Z?";
    }
}

const char *zsim_event_name(int type)
{
    switch (type) {
    case ZSIM_CREATED_EVENT: return "CREATED";
    case ZSIM_DELETED_EVENT: return "DELETED";
    case ZSIM_CHANGED_EVENT: return "CHANGED";
    case ZSIM_CHILD_EVENT: return "CHILD";
    case ZSIM_SESSION_EVENT: return "SESSION";
    default: return "?";
    }
}

const char *zsim_state_name(int state)
{
    switch (state) {
    case ZSIM_EXPIRED_SESSION_STATE: return "EXPIRED";
    case ZSIM_AUTH_FAILED_STATE: return "AUTH_FAILED";
    case ZSIM_CONNECTING_STATE: return "CONNECTING";
    case ZSIM_CONNECTED_STATE: return "CONNECTED";
    case ZSIM_CLOSED_STATE: return "CLOSED";
    default: return "?";
    }
}
