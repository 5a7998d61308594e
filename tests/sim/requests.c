/* The requests of a handle, as the C client's zoo_a* calls make them: the
 * path checked as the C client checks it, the request's size as it goes
 * on the wire, queued whether connected or not (sent once connected). */
#include "sim.h"

void wop_free(struct wop *op)
{
    free(op->path);
    free(op->data);
    free(op->acl_ents);
    memset(op, 0, sizeof *op);
}

void req_free(struct req *r)
{
    if (r == NULL)
        return;
    wop_free(&r->op);
    for (int i = 0; i < r->nops; i++)
        wop_free(&r->ops[i]);
    free(r->ops);
    if (r->ans)
        item_free(r->ans->pub.session ? r->ans->pub.session->w : NULL, r->ans);
    free(r);
}

struct req *sess_pop(zsim_session *s)
{
    struct req *r = s->rq_head;
    if (r == NULL)
        return NULL;
    s->rq_head = r->next;
    if (s->rq_head == NULL)
        s->rq_tail = NULL;
    s->nreq--;
    if (r->oversize && r->arrived)
        s->oversize--;
    r->next = NULL;
    return r;
}

/* A request keeps its own copy of the ACL it was given, strings and all,
 * in one block: the entries, then the strings. */
static void wop_copy_acl(struct wop *op, const struct zsim_acl_vector *acl)
{
    if (acl == NULL || acl->count <= 0 || acl->data == NULL)
        return;
    size_t need = 0;
    for (int i = 0; i < acl->count; i++)
        need += strlen(acl->data[i].scheme ? acl->data[i].scheme : "") +
                strlen(acl->data[i].id ? acl->data[i].id : "") + 2;
    struct zsim_acl *v = sim_alloc((size_t)acl->count * sizeof *v + need);
    char *p = (char *)(v + acl->count);
    for (int i = 0; i < acl->count; i++) {
        const char *sc = acl->data[i].scheme ? acl->data[i].scheme : "";
        const char *id = acl->data[i].id ? acl->data[i].id : "";
        v[i].perms = acl->data[i].perms;
        v[i].scheme = strcpy(p, sc);
        p += strlen(sc) + 1;
        v[i].id = strcpy(p, id);
        p += strlen(id) + 1;
    }
    op->acl_ents = v;
    op->acl.count = acl->count;
    op->acl.data = v;
}

static void wop_set(struct wop *op, int type, const char *path, const char *data, int len,
                    const struct zsim_acl_vector *acl, int mode, int version)
{
    op->type = type;
    op->path = sim_strdup(path ? path : "");
    op->dlen = len < 0 ? -1 : len;
    op->data = len > 0 ? sim_memdup(data, (size_t)len) : NULL;
    op->mode = mode;
    op->version = version;
    wop_copy_acl(op, acl);
}

static int64_t str_size(const char *s)
{
    return 4 + (int64_t)(s ? strlen(s) : 0);
}

static int64_t acl_size(const struct zsim_acl_vector *v)
{
    int64_t n = 4;
    for (int i = 0; i < v->count; i++)
        n += 4 + str_size(v->data[i].scheme) + str_size(v->data[i].id);
    return n;
}

static int64_t wop_size(const struct wop *op)
{
    int64_t n = str_size(op->path);
    switch (op->type) {
    case ZSIM_MOP_CREATE:
        return n + 4 + (op->dlen > 0 ? op->dlen : 0) + acl_size(&op->acl) + 4;
    case ZSIM_MOP_SET:
        return n + 4 + (op->dlen > 0 ? op->dlen : 0) + 4;
    case MOP_SET_ACL:
        return n + acl_size(&op->acl) + 4;
    default: /* delete, check */
        return n + 4;
    }
}

/* The request's length as its 4-byte prefix states it (the server refuses
 * more than jute.maxbuffer): the header (xid, type) and the body. */
int64_t req_size(const struct req *r)
{
    int64_t n = 8;
    switch (r->kind) {
    case ZSIM_REQ_EXISTS:
    case ZSIM_REQ_GET:
    case ZSIM_REQ_CHILDREN:
    case ZSIM_REQ_CHILDREN2:
        return n + str_size(r->op.path) + 1;
    case ZSIM_REQ_SYNC:
        return n + str_size(r->op.path);
    case ZSIM_REQ_MULTI:
        for (int i = 0; i < r->nops; i++)
            n += 9 + wop_size(&r->ops[i]);
        return n + 9;
    case REQ_SETWATCHES:
    case REQ_CLOSE:
        return n;
    default:
        return n + wop_size(&r->op);
    }
}

void sess_ready(zsim_session *s)
{
    zsim_world *w = s->w;
    if (s->nin - s->held > 0 && !s->hold_items)
        iset_add(&w->deliver, s->ix);
    else
        iset_del(&w->deliver, s->ix);
    if (sess_processable(s))
        iset_add(&w->process, s->ix);
    else
        iset_del(&w->process, s->ix);
}

void req_arrive(zsim_session *s, struct req *r)
{
    r->arrived = true;
    if (r->oversize)
        s->oversize++;
    s->last_send = s->w->now;
    if (server_serving(s->w, s->server))
        server_touch(s->w, s);
}

void req_send(zsim_session *s, struct req *r)
{
    r->size = req_size(r);
    r->oversize = r->size > s->w->cfg.max_buffer;
    if (s->rq_tail)
        s->rq_tail->next = r;
    else
        s->rq_head = r;
    s->rq_tail = r;
    s->nreq++;
    if (s->state == ZSIM_CONNECTED_STATE) {
        r->sent = true;
        if (s->link_out)
            req_arrive(s, r);
    }
    sess_ready(s);
    client_timer_update(s);
}

static int req_check(zsim_session *s, const char *path, int mode)
{
    if (!client_path_ok(path, mode))
        return ZSIM_BADARGUMENTS;
    if (s->finished || s->closing || s->state == ZSIM_EXPIRED_SESSION_STATE ||
        s->state == ZSIM_AUTH_FAILED_STATE)
        return ZSIM_INVALIDSTATE;
    return ZSIM_OK;
}

struct req *req_new(int kind, uint64_t tag)
{
    struct req *r = sim_alloc(sizeof *r);
    r->kind = kind;
    r->tag = tag;
    r->state = RQ_QUEUED;
    return r;
}

/* A write request carries its op in the form a multi's ops take, so that
 * the server prepares both alike. */
static void write_req(zsim_session *s, int kind, int mop, const char *path, const char *data,
                      int len, const struct zsim_acl_vector *acl, int mode, int version,
                      uint64_t tag)
{
    struct req *r = req_new(kind, tag);
    wop_set(&r->op, mop, path, data, len, acl, mode, version);
    req_send(s, r);
}

int zsim_acreate(zsim_session *s, const char *path, const char *data, int len,
                 const struct zsim_acl_vector *acl, int mode, uint64_t tag)
{
    int rc = req_check(s, path, mode);
    if (rc != ZSIM_OK)
        return rc;
    if ((data == NULL && len > 0) || mode < ZSIM_PERSISTENT || mode > ZSIM_CONTAINER)
        return ZSIM_BADARGUMENTS;
    write_req(s, ZSIM_REQ_CREATE, ZSIM_MOP_CREATE, path, data, len, acl, mode, -1, tag);
    return ZSIM_OK;
}

int zsim_adelete(zsim_session *s, const char *path, int version, uint64_t tag)
{
    int rc = req_check(s, path, 0);
    if (rc != ZSIM_OK)
        return rc;
    write_req(s, ZSIM_REQ_DELETE, ZSIM_MOP_DELETE, path, NULL, -1, NULL, 0, version, tag);
    return ZSIM_OK;
}

static int read_req(zsim_session *s, int kind, const char *path, uint64_t watcher, uint64_t tag)
{
    int rc = req_check(s, path, 0);
    if (rc != ZSIM_OK)
        return rc;
    struct req *r = req_new(kind, tag);
    r->op.path = sim_strdup(path);
    r->watcher = watcher;
    req_send(s, r);
    return ZSIM_OK;
}

int zsim_aexists(zsim_session *s, const char *path, uint64_t watcher, uint64_t tag)
{
    return read_req(s, ZSIM_REQ_EXISTS, path, watcher, tag);
}

int zsim_aget(zsim_session *s, const char *path, uint64_t watcher, uint64_t tag)
{
    return read_req(s, ZSIM_REQ_GET, path, watcher, tag);
}

int zsim_aget_children(zsim_session *s, const char *path, uint64_t watcher, uint64_t tag)
{
    return read_req(s, ZSIM_REQ_CHILDREN, path, watcher, tag);
}

int zsim_aget_children2(zsim_session *s, const char *path, uint64_t watcher, uint64_t tag)
{
    return read_req(s, ZSIM_REQ_CHILDREN2, path, watcher, tag);
}

int zsim_async(zsim_session *s, const char *path, uint64_t tag)
{
    return read_req(s, ZSIM_REQ_SYNC, path, 0, tag);
}

int zsim_aset(zsim_session *s, const char *path, const char *data, int len, int version,
              uint64_t tag)
{
    int rc = req_check(s, path, 0);
    if (rc != ZSIM_OK)
        return rc;
    if (data == NULL && len > 0)
        return ZSIM_BADARGUMENTS;
    write_req(s, ZSIM_REQ_SET, ZSIM_MOP_SET, path, data, len, NULL, 0, version, tag);
    return ZSIM_OK;
}

int zsim_aset_acl(zsim_session *s, const char *path, int version,
                  const struct zsim_acl_vector *acl, uint64_t tag)
{
    int rc = req_check(s, path, 0);
    if (rc != ZSIM_OK)
        return rc;
    write_req(s, ZSIM_REQ_SET_ACL, MOP_SET_ACL, path, NULL, -1, acl, 0, version, tag);
    return ZSIM_OK;
}

/* zoo_amulti checks no path itself: the server does, op by op. */
int zsim_amulti(zsim_session *s, int count, const struct zsim_op *ops, uint64_t tag)
{
    int rc = req_check(s, "/", 0);
    if (rc != ZSIM_OK)
        return rc;
    if (count < 0 || (count > 0 && ops == NULL))
        return ZSIM_BADARGUMENTS;
    for (int i = 0; i < count; i++) {
        int t = ops[i].type;
        if (t != ZSIM_MOP_CREATE && t != ZSIM_MOP_DELETE && t != ZSIM_MOP_SET && t != ZSIM_MOP_CHECK)
            return ZSIM_BADARGUMENTS;
        if (ops[i].data == NULL && ops[i].len > 0)
            return ZSIM_BADARGUMENTS;
    }
    struct req *r = req_new(ZSIM_REQ_MULTI, tag);
    r->nops = count;
    r->ops = sim_alloc((size_t)(count ? count : 1) * sizeof *r->ops);
    for (int i = 0; i < count; i++)
        wop_set(&r->ops[i], ops[i].type, ops[i].path, ops[i].data,
                ops[i].type == ZSIM_MOP_CREATE || ops[i].type == ZSIM_MOP_SET ? ops[i].len : -1,
                ops[i].acl, ops[i].mode, ops[i].version);
    req_send(s, r);
    return ZSIM_OK;
}

