/* What libzookeeper_mt does for one handle, as its program sees it: the
 * requests, the items it hands over in order, connecting and reconnecting
 * to the servers in a seeded order, pings, and giving a connection up.
 *
 * The rules come from the C client (zookeeper.c of 3.8):
 * - a request is queued whether connected or not; one made while
 *   disconnected is sent once a connection is made, and fails with the
 *   code of a connection attempt that fails before;
 * - a connection that breaks gives ZOO_CONNECTING_STATE to every watcher,
 *   then ZCONNECTIONLOSS (ZOPERATIONTIMEOUT if the client gave up waiting)
 *   to each request without an answer, in order;
 * - the client gives a connection up after 2/3 of the timeout without
 *   hearing from its server, pings after 1/3 without sending, but only
 *   when no request is waiting for an answer, and waits 1/60 of the timeout
 *   after trying every server once;
 * - on reconnection it sends its watches (setWatches, with the last zxid it
 *   saw in an answer) before the requests made meanwhile;
 * - a server that has expired the session answers the reconnection with
 *   ZOO_EXPIRED_SESSION_STATE, and every request left gets ZSESSIONEXPIRED;
 *   the handle is then unusable (ZINVALIDSTATE).
 * An item's effects on the client (the last zxid, a watch registered by an
 * answer, the watchers an event is for) are taken when the item is
 * delivered, or when a lost connection shows that it had arrived. */
#include "sim.h"

static int64_t ms(int64_t v)
{
    return v * 1000000;
}

/* ---- requests ------------------------------------------------------------- */

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
    if (s->nin - s->held > 0)
        iset_add(&w->deliver, s->ix);
    else
        iset_del(&w->deliver, s->ix);
    if (sess_processable(s))
        iset_add(&w->process, s->ix);
    else
        iset_del(&w->process, s->ix);
}

static void req_arrive(zsim_session *s, struct req *r)
{
    r->arrived = true;
    if (r->oversize)
        s->oversize++;
    s->last_send = s->w->now;
    if (server_serving(s->w, s->server))
        server_touch(s->w, s);
}

static void req_send(zsim_session *s, struct req *r)
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

static struct req *req_new(int kind, uint64_t tag)
{
    struct req *r = sim_alloc(sizeof *r);
    r->kind = kind;
    r->tag = tag;
    r->state = RQ_QUEUED;
    return r;
}

int zsim_acreate(zsim_session *s, const char *path, const char *data, int len,
                 const struct zsim_acl_vector *acl, int mode, uint64_t tag)
{
    int rc = req_check(s, path, mode);
    if (rc != ZSIM_OK)
        return rc;
    if ((data == NULL && len > 0) || mode < ZSIM_PERSISTENT || mode > ZSIM_CONTAINER)
        return ZSIM_BADARGUMENTS;
    struct req *r = req_new(ZSIM_REQ_CREATE, tag);
    wop_set(&r->op, ZSIM_MOP_CREATE, path, data, len, acl, mode, -1);
    req_send(s, r);
    return ZSIM_OK;
}

int zsim_adelete(zsim_session *s, const char *path, int version, uint64_t tag)
{
    int rc = req_check(s, path, 0);
    if (rc != ZSIM_OK)
        return rc;
    struct req *r = req_new(ZSIM_REQ_DELETE, tag);
    wop_set(&r->op, ZSIM_MOP_DELETE, path, NULL, -1, NULL, 0, version);
    req_send(s, r);
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
    struct req *r = req_new(ZSIM_REQ_SET, tag);
    wop_set(&r->op, ZSIM_MOP_SET, path, data, len, NULL, 0, version);
    req_send(s, r);
    return ZSIM_OK;
}

int zsim_aset_acl(zsim_session *s, const char *path, int version,
                  const struct zsim_acl_vector *acl, uint64_t tag)
{
    int rc = req_check(s, path, 0);
    if (rc != ZSIM_OK)
        return rc;
    struct req *r = req_new(ZSIM_REQ_SET_ACL, tag);
    wop_set(&r->op, MOP_SET_ACL, path, NULL, -1, acl, 0, version);
    req_send(s, r);
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

/* ---- items into the inbox ------------------------------------------------- */

static void inbox_push(zsim_session *s, struct item *it)
{
    it->next = NULL;
    if (s->in_tail)
        s->in_tail->next = it;
    else
        s->in_head = it;
    s->in_tail = it;
    s->nin++;
}

/* From the server, on the session's connection. */
void sess_emit(zsim_session *s, struct item *it)
{
    if (s->server < 0) {
        item_free(s->w, it);
        return;
    }
    inbox_push(s, it);
    if (!s->link_in)
        s->held++;
    else
        s->last_recv = s->w->now;
    sess_ready(s);
}

/* Made by the client itself: nothing of it can be lost on the way. */
static struct item *internal_item(zsim_session *s, int kind)
{
    struct item *it = item_new(s->w, kind);
    it->pub.session = s;
    it->internal = true;
    it->done = true;
    return it;
}

/* Internal items come when nothing is held on a silent link: at a lost
 * connection (which ends the link's hold) or while disconnected. */
static void emit_internal(zsim_session *s, struct item *it)
{
    inbox_push(s, it);
    sess_ready(s);
}

static void emit_session_event(zsim_session *s, int state)
{
    struct item *it = internal_item(s, ZSIM_SESSION);
    it->pub.type = ZSIM_SESSION_EVENT;
    it->pub.state = state;
    cw_all(&s->cw, s->watcher, it);
    emit_internal(s, it);
}

static void emit_loss(zsim_session *s, uint64_t tag, int kind, int rc)
{
    if (kind == REQ_SETWATCHES || kind == REQ_CLOSE)
        return; /* no completion of the program's */
    struct item *it = internal_item(s, ZSIM_ANSWER);
    it->pub.tag = tag;
    it->pub.req = (enum zsim_req)kind;
    it->pub.rc = rc;
    it->pub.size = 16;
    it->zxid = -1;
    emit_internal(s, it);
}

/* Every request in the queue is answered rc, and the queue is empty. */
static void fail_queue(zsim_session *s, int rc)
{
    struct req *r;
    while ((r = sess_pop(s)) != NULL) {
        emit_loss(s, r->tag, r->kind, rc);
        req_free(r);
    }
}

/* The client sees an item: the zxid of an answer, the watch it registers,
 * the watchers an event is for. */
static void item_take(zsim_session *s, struct item *it)
{
    it->done = true;
    if (it->pub.kind == ZSIM_ANSWER) {
        if (it->zxid > 0)
            s->last_zxid = it->zxid;
        if (it->watcher && it->wkind)
            cw_add(&s->cw, it->wpath, it->watcher, it->wkind);
    } else if (it->pub.kind == ZSIM_WATCH) {
        cw_collect(&s->cw, it->pub.path, it->pub.type, it);
    }
}

static struct item *inbox_pop(zsim_session *s)
{
    struct item *it = s->in_head;
    s->in_head = it->next;
    if (s->in_head == NULL)
        s->in_tail = NULL;
    s->nin--;
    it->next = NULL;
    return it;
}

struct item *client_head(zsim_session *s)
{
    zsim_world *w = s->w;
    while (s->nin - s->held > 0) {
        struct item *it = s->in_head;
        if (!it->done) {
            if (it->pub.kind == ZSIM_ANSWER && w->cfg.answer_limit > 0 &&
                it->pub.size > w->cfg.answer_limit && s->server >= 0) {
                /* A client that enforces the limit reads the length, gives
                 * the connection up, and loses all that came after. */
                sim_trace(w, "session %d: answer of %lld bytes over the limit", s->ix,
                          (long long)it->pub.size);
                client_lost(s, ZSIM_CONNECTIONLOSS, -1, 0);
                continue;
            }
            item_take(s, it);
        }
        if ((it->pub.kind == ZSIM_WATCH || it->pub.kind == ZSIM_SESSION) &&
            it->pub.nwatchers == 0) {
            item_free(w, inbox_pop(s)); /* nobody to call */
            sess_ready(s);
            continue;
        }
        return it;
    }
    return NULL;
}

const struct zsim_item *zsim_deliver(zsim_session *s)
{
    zsim_world *w = s->w;
    item_free(w, w->current);
    w->current = NULL;
    struct item *it = client_head(s);
    if (it == NULL)
        return NULL;
    inbox_pop(s);
    w->current = it;
    w->counts.delivered++;
    sess_ready(s);
    if (w->trace_fn) {
        if (it->pub.kind == ZSIM_ANSWER)
            sim_trace(w, "deliver session %d answer tag %llu %s", s->ix,
                      (unsigned long long)it->pub.tag, zsim_rc_name(it->pub.rc));
        else
            sim_trace(w, "deliver session %d %s %s %s", s->ix, zsim_event_name(it->pub.type),
                      it->pub.kind == ZSIM_SESSION ? zsim_state_name(it->pub.state) : "",
                      it->pub.path ? it->pub.path : "");
    }
    return &it->pub;
}

/* ---- connections ----------------------------------------------------------- */

static void attempt_start(zsim_session *s, bool delay)
{
    zsim_world *w = s->w;
    s->attempting = true;
    s->att_server = s->order[s->next_srv];
    s->next_srv = (s->next_srv + 1) % s->nhosts;
    s->att_hung = false;
    s->att_start = w->now + (delay ? ms(s->timeout / 60) : 0);
    s->att_at = s->att_start + sim_latency(w);
    iset_add(&w->connecting, s->ix);
    client_timer_update(s);
}

static void detach(zsim_session *s)
{
    zsim_world *w = s->w;
    if (s->server < 0)
        return;
    watch_drop_session(w, s);
    iset_del(&w->srv[s->server].conn, s->ix);
    s->server = -1;
    s->epoch++;
    iset_del(&w->process, s->ix);
}

static void finish(zsim_session *s, int rc)
{
    zsim_world *w = s->w;
    detach(s);
    fail_queue(s, rc);
    s->attempting = false;
    iset_del(&w->connecting, s->ix);
    s->finished = true;
    s->state = ZSIM_CLOSED_STATE;
    s->held = 0;
    sess_ready(s);
}

static void attempt_failed(zsim_session *s, int rc)
{
    zsim_world *w = s->w;
    sim_trace(w, "session %d: connecting to server %d failed: %s", s->ix, s->att_server,
              zsim_rc_name(rc));
    s->attempting = false;
    iset_del(&w->connecting, s->ix);
    fail_queue(s, rc);
    if (s->closing) {
        finish(s, ZSIM_CLOSING);
        return;
    }
    attempt_start(s, s->next_srv == 0);
}

static void connected(zsim_session *s, int srv)
{
    zsim_world *w = s->w;
    struct server *x = &w->srv[srv];
    s->attempting = false;
    iset_del(&w->connecting, s->ix);
    if (s->id == 0) {
        s->id = w->next_session_id++;
        int lo = w->cfg.min_timeout_ms, hi = w->cfg.max_timeout_ms;
        s->timeout = s->req_timeout < lo ? lo : s->req_timeout > hi ? hi : s->req_timeout;
        session_alive_set(w, s, true);
        s->ever_alive = true;
        struct txn t = {0};
        t.type = T_CREATE_SESSION;
        commit(w, &t, -1, NULL, NULL);
    }
    s->server = srv;
    s->epoch++;
    iset_add(&x->conn, s->ix);
    s->state = ZSIM_CONNECTED_STATE;
    s->last_send = s->last_recv = w->now;
    w->counts.connects++;
    sim_trace(w, "session %d connected to server %d", s->ix, srv);
    /* Creating or revalidating a session goes through the leader, which
     * counts it as a touch. */
    leader_touch(w, s);
    server_touch(w, s);
    emit_session_event(s, ZSIM_CONNECTED_STATE);
    /* setWatches goes ahead of the requests made while disconnected */
    if (s->cw.map.count > 0) {
        struct req *r = req_new(REQ_SETWATCHES, 0);
        r->zxid = s->last_zxid;
        r->size = req_size(r);
        r->next = s->rq_head;
        s->rq_head = r;
        if (s->rq_tail == NULL)
            s->rq_tail = r;
        s->nreq++;
    }
    for (struct req *r = s->rq_head; r; r = r->next) {
        r->sent = true;
        if (s->link_out)
            req_arrive(s, r);
    }
    sess_ready(s);
    client_timer_update(s);
}

static void expired(zsim_session *s)
{
    zsim_world *w = s->w;
    sim_trace(w, "session %d: the server says it expired", s->ix);
    s->attempting = false;
    iset_del(&w->connecting, s->ix);
    s->state = ZSIM_EXPIRED_SESSION_STATE;
    emit_session_event(s, ZSIM_EXPIRED_SESSION_STATE);
    fail_queue(s, ZSIM_SESSIONEXPIRED);
    s->finished = true;
    sess_ready(s);
}

/* A connection attempt comes to its end: the handshake needs a server that
 * serves, has seen at least what the client saw, and (to create or
 * revalidate the session) reaches the leader. A server that does not
 * answer leaves the attempt hanging until 2/3 of the timeout. */
static void attempt_resolve(zsim_session *s)
{
    zsim_world *w = s->w;
    int srv = s->att_server;
    struct server *x = &w->srv[srv];
    bool silent = !s->link_out || !s->link_in || x->frozen || (x->cut && !x->looking);
    if (silent) {
        int64_t end = s->att_start + ms(s->timeout * 2 / 3);
        if (w->now >= end) {
            attempt_failed(s, ZSIM_OPERATIONTIMEOUT);
        } else {
            s->att_hung = true;
            s->att_at = end;
            client_timer_update(s);
        }
        return;
    }
    if (x->looking || s->last_zxid > x->tree.zxid) {
        attempt_failed(s, ZSIM_CONNECTIONLOSS);
        return;
    }
    if (s->id != 0 && !s->alive) {
        expired(s);
        return;
    }
    connected(s, srv);
}

void client_reevaluate_attempt(zsim_session *s)
{
    if (s->attempting && s->att_hung) {
        s->att_at = s->w->now;
        client_timer_update(s);
    }
}

/* The connection is gone (rc says how the client saw it). `applied` and
 * `received` as zsim_drop says; -2 for received: all that was not on a
 * silent link. */
void client_lost(zsim_session *s, int rc, int applied, int received)
{
    zsim_world *w = s->w;
    if (s->server < 0 || s->state != ZSIM_CONNECTED_STATE)
        return;
    int srv = s->server;
    bool linked = server_linked(w, srv), serving = server_serving(w, srv);
    sim_trace(w, "session %d loses its connection to server %d: %s", s->ix, srv, zsim_rc_name(rc));
    /* What had reached the client stays; the rest of what the server sent
     * is lost, and a lost answer is a request without one. */
    struct item *p = s->in_head, *prev = NULL;
    while (p && p->done)
        prev = p, p = p->next;
    int undone = 0;
    for (struct item *q = p; q; q = q->next)
        undone++;
    int can = undone - s->held;
    int j = received == -1 ? (int)rng_below(&w->rng, (uint64_t)can + 1)
            : received == -2 ? can
            : received < can ? received : can;
    for (int i = 0; i < j; i++, prev = p, p = p->next)
        item_take(s, p);
    struct item *lost = p;
    if (prev)
        prev->next = NULL;
    else
        s->in_head = NULL;
    s->in_tail = prev;
    s->nin -= undone - j;
    s->held = 0;
    detach(s);
    /* Of the requests the server had and not yet taken, a prefix is
     * carried out anyway. */
    int m = 0;
    for (struct req *r = s->rq_head; r; r = r->next) {
        if (r->state == RQ_WAIT)
            continue;
        if (!r->arrived || r->oversize || !serving)
            break;
        bool needs_leader = r->kind != ZSIM_REQ_EXISTS && r->kind != ZSIM_REQ_GET &&
                            r->kind != ZSIM_REQ_CHILDREN && r->kind != ZSIM_REQ_CHILDREN2 &&
                            r->kind != REQ_SETWATCHES;
        if (needs_leader && !linked)
            break;
        m++;
    }
    int k = applied == -1 ? (int)rng_below(&w->rng, (uint64_t)m + 1) : applied < m ? applied : m;
    for (struct req *r = s->rq_head; r && k > 0; r = r->next) {
        if (r->state == RQ_WAIT)
            continue;
        server_take_silent(w, s, r);
        k--;
    }
    if (s->state == ZSIM_CONNECTED_STATE)
        emit_session_event(s, ZSIM_CONNECTING_STATE);
    s->state = ZSIM_CONNECTING_STATE;
    for (struct item *q = lost, *next; q; q = next) {
        next = q->next;
        if (q->pub.kind == ZSIM_ANSWER)
            emit_loss(s, q->pub.tag, q->pub.req, rc);
        item_free(w, q);
    }
    fail_queue(s, rc);
    if (s->closing) {
        finish(s, ZSIM_CLOSING);
        return;
    }
    attempt_start(s, s->next_srv == 0);
    sess_ready(s);
}

void client_server_closed(zsim_session *s)
{
    client_lost(s, ZSIM_CONNECTIONLOSS, 0, -1);
}

void client_close_done(zsim_session *s)
{
    sim_trace(s->w, "session %d closed", s->ix);
    req_free(sess_pop(s)); /* the close itself */
    finish(s, ZSIM_CLOSING);
}

/* ---- timers --------------------------------------------------------------- */

void client_timer_update(zsim_session *s)
{
    if (s->finished)
        return;
    int64_t due = INT64_MAX;
    if (s->closing)
        due = s->close_deadline;
    if (s->attempting) {
        if (s->att_at < due)
            due = s->att_at;
    } else if (s->state == ZSIM_CONNECTED_STATE) {
        int64_t recv = s->last_recv + ms(s->timeout * 2 / 3);
        if (recv < due)
            due = recv;
        int64_t ping = s->last_send + ms(s->timeout / 3);
        if (s->rq_head == NULL && ping < due)
            due = ping;
    }
    if (due < s->timer_at) {
        s->timer_at = due;
        timer_push(s->w, due, TM_SESSION, s->ix, 0);
    }
}

void client_timer(zsim_session *s)
{
    zsim_world *w = s->w;
    s->timer_at = INT64_MAX;
    if (s->finished)
        return;
    if (s->closing && w->now >= s->close_deadline) {
        sim_trace(w, "session %d: no answer to its close in time", s->ix);
        finish(s, ZSIM_CLOSING);
        return;
    }
    if (s->attempting && w->now >= s->att_at) {
        attempt_resolve(s);
    } else if (s->state == ZSIM_CONNECTED_STATE) {
        if (w->now >= s->last_recv + ms(s->timeout * 2 / 3)) {
            client_lost(s, ZSIM_OPERATIONTIMEOUT, -1, -2);
        } else if (s->rq_head == NULL && w->now >= s->last_send + ms(s->timeout / 3)) {
            s->last_send = w->now;
            if (s->link_out && server_serving(w, s->server)) {
                server_touch(w, s);
                if (s->link_in)
                    s->last_recv = w->now;
            }
        }
    }
    client_timer_update(s);
}

/* ---- the handle ------------------------------------------------------------- */

zsim_session *zsim_session_new_hosts(zsim_world *w, int timeout_ms, uint64_t watcher,
                                     const int *servers, int n)
{
    item_free(w, w->current);
    w->current = NULL;
    int hosts[ZSIM_MAX_SERVERS], nh = 0;
    for (int i = 0; i < n && nh < ZSIM_MAX_SERVERS; i++)
        if (servers[i] >= 0 && servers[i] < w->nsrv)
            hosts[nh++] = servers[i];
    if (nh == 0)
        return NULL;
    zsim_session *s = sim_alloc(sizeof *s);
    s->w = w;
    s->ix = (int32_t)w->nsess;
    SIM_GROW(w->sess, w->nsess, w->capsess);
    w->sess[w->nsess++] = s;
    s->watcher = watcher;
    s->req_timeout = s->timeout = timeout_ms > 0 ? timeout_ms : 1;
    s->state = ZSIM_CONNECTING_STATE;
    s->server = -1;
    s->link_out = s->link_in = true;
    s->timer_at = INT64_MAX;
    s->expire_at = INT64_MAX;
    /* zookeeper_init shuffles the host list */
    s->nhosts = nh;
    memcpy(s->order, hosts, (size_t)nh * sizeof *hosts);
    for (int i = nh - 1; i > 0; i--) {
        int j = (int)rng_below(&w->rng, (uint64_t)i + 1);
        int t = s->order[i];
        s->order[i] = s->order[j];
        s->order[j] = t;
    }
    idents_add(&s->ids, "ip", "127.0.0.1");
    sim_trace(w, "session %d starts (timeout %d ms)", s->ix, timeout_ms);
    attempt_start(s, false);
    return s;
}

zsim_session *zsim_session_new(zsim_world *w, int timeout_ms, uint64_t watcher)
{
    int all[ZSIM_MAX_SERVERS];
    for (int i = 0; i < w->nsrv; i++)
        all[i] = i;
    return zsim_session_new_hosts(w, timeout_ms, watcher, all, w->nsrv);
}

int zsim_add_auth(zsim_session *s, const char *scheme, const char *cert)
{
    if (s->finished || s->closing || s->state == ZSIM_EXPIRED_SESSION_STATE)
        return ZSIM_INVALIDSTATE;
    if (scheme == NULL || cert == NULL || strcmp(scheme, "digest") != 0)
        return ZSIM_BADARGUMENTS;
    char *id = digest_id(cert);
    if (id == NULL)
        return ZSIM_BADARGUMENTS;
    idents_add(&s->ids, "digest", id);
    free(id);
    return ZSIM_OK;
}

int zsim_close(zsim_session *s)
{
    zsim_world *w = s->w;
    item_free(w, w->current);
    w->current = NULL;
    if (s->finished || s->closing)
        return ZSIM_INVALIDSTATE;
    s->closing = true;
    sim_trace(w, "session %d closes", s->ix);
    if (s->state != ZSIM_CONNECTED_STATE || s->state == ZSIM_EXPIRED_SESSION_STATE) {
        finish(s, ZSIM_CLOSING);
        return ZSIM_OK;
    }
    s->close_deadline = w->now + ms(1500);
    struct req *r = req_new(REQ_CLOSE, 0);
    req_send(s, r);
    return ZSIM_OK;
}

int zsim_state(const zsim_session *s)
{
    return s->state;
}

int64_t zsim_session_id(const zsim_session *s)
{
    return s->id;
}

int zsim_recv_timeout(const zsim_session *s)
{
    return s->timeout;
}

int zsim_server(const zsim_session *s)
{
    return s->server;
}

bool zsim_session_alive(const zsim_session *s)
{
    return s->alive;
}

int zsim_session_index(const zsim_session *s)
{
    return s->ix;
}

void session_free(zsim_session *s)
{
    while (s->rq_head)
        req_free(sess_pop(s));
    while (s->in_head)
        item_free(s->w, inbox_pop(s));
    cw_free(&s->cw);
    idents_free(&s->ids);
    free(s);
}
