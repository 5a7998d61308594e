/* The servers: a leader that orders every write into one log, followers
 * that apply it behind the leader, and the requests a server takes.
 *
 * A write is checked and committed at the leader when its server takes it
 * (the leader's order is the order in which the scheduler lets servers take
 * writes); the leader applies it at once, a follower when the scheduler
 * lets it catch up. The answer comes from the session's own server once it
 * has applied the write, after the watch events that write fired there, as
 * the server's FinalRequestProcessor sends them. A session's requests are
 * taken one at a time in order, so a read never overtakes the session's own
 * write. */
#include "sim.h"

bool server_linked(const zsim_world *w, int srv)
{
    const struct server *x = &w->srv[srv];
    if (w->srv[0].frozen || w->srv[0].looking)
        return false; /* the leader stands still, or an election runs */
    return srv == 0 || (!x->cut && !x->frozen && !x->looking);
}

bool server_serving(const zsim_world *w, int srv)
{
    const struct server *x = &w->srv[srv];
    return !x->frozen && !x->looking;
}

/* ---- the log ------------------------------------------------------------- */

static struct logent *log_at(zsim_world *w, int64_t zxid)
{
    size_t i = (size_t)(zxid - w->log_base);
    return &w->log[(w->log_head + i) % w->log_cap];
}

static struct logent *log_push(zsim_world *w)
{
    if (w->log_n == w->log_cap) {
        size_t cap = w->log_cap ? w->log_cap * 2 : 256;
        struct logent *v = sim_alloc(cap * sizeof *v);
        for (size_t i = 0; i < w->log_n; i++)
            v[i] = w->log[(w->log_head + i) % w->log_cap];
        free(w->log);
        w->log = v;
        w->log_head = 0;
        w->log_cap = cap;
    }
    struct logent *e = &w->log[(w->log_head + w->log_n++) % w->log_cap];
    memset(e, 0, sizeof *e);
    return e;
}

/* Drops the entries every server has applied. */
static void log_compact(zsim_world *w)
{
    int64_t min = w->zxid;
    for (int i = 1; i < w->nsrv; i++)
        if (w->srv[i].tree.zxid < min)
            min = w->srv[i].tree.zxid;
    while (w->log_n > 0 && w->log_base <= min) {
        txn_clear(&w->log[w->log_head].t);
        w->log_head = (w->log_head + 1) % w->log_cap;
        w->log_n--;
        w->log_base++;
    }
}

void server_apply_ready(zsim_world *w, int srv)
{
    struct server *x = &w->srv[srv];
    if (srv != 0 && x->tree.zxid < w->zxid && server_linked(w, srv))
        iset_add(&w->apply, srv);
    else
        iset_del(&w->apply, srv);
}

/* A server applied a close of the session: if it is connected there, the
 * server closes its connection, and a close it asked for is complete. */
static void after_apply(zsim_world *w, int srv, const struct logent *e)
{
    if (e->t.type != T_CLOSE_SESSION)
        return;
    zsim_session *s = w->sess[e->t.owner_ix];
    if (s->server != srv)
        return;
    if (s->rq_head && s->rq_head->kind == REQ_CLOSE && s->rq_head->sent)
        client_close_done(s);
    else
        client_server_closed(s);
}

int64_t commit(zsim_world *w, struct txn *t, int32_t origin, struct apply_out *out,
               struct apply_out *outs)
{
    /* Entries all servers applied go now, never the one made here: the
     * caller reads it (names, sub-results) right after. */
    log_compact(w);
    struct logent *e = log_push(w);
    e->zxid = ++w->zxid;
    e->time_ms = w->now / 1000000;
    e->t = *t;
    memset(t, 0, sizeof *t);
    e->origin = origin;
    if (origin >= 0) {
        e->origin_epoch = w->sess[origin]->epoch;
        e->origin_server = w->sess[origin]->server;
    }
    w->counts.txns++;
    tree_apply(w, 0, e, out, outs);
    int64_t zxid = e->zxid;
    after_apply(w, 0, e); /* may free nothing of e: the log keeps it */
    for (int i = 1; i < w->nsrv; i++)
        server_apply_ready(w, i);
    return zxid;
}

/* ---- answers -------------------------------------------------------------- */

static int64_t stat_size(void)
{
    return 68; /* czxid mzxid ctime mtime 8 each, 3 versions 4 each, owner 8,
                  dataLength numChildren 4 each, pzxid 8 */
}

static struct item *answer_new(zsim_world *w, zsim_session *s, const struct req *r, int rc,
                               int64_t zxid)
{
    struct item *it = item_new(w, ZSIM_ANSWER);
    it->pub.session = s;
    it->pub.tag = r->tag;
    it->pub.req = (enum zsim_req)r->kind;
    it->pub.rc = rc;
    it->pub.datalen = -1;
    it->pub.size = 16; /* the reply header */
    it->zxid = zxid;
    return it;
}

static void answer_stat(struct item *it, const struct zsim_stat *st)
{
    it->stat = *st;
    it->pub.stat = &it->stat;
    it->pub.size += stat_size();
}

static void sync_answer(zsim_world *w, zsim_session *s, struct req *r, int64_t zxid)
{
    struct item *it = answer_new(w, s, r, ZSIM_OK, zxid);
    item_str(it, r->op.path, strlen(r->op.path), &it->off_value);
    it->pub.size += 4 + (int64_t)strlen(r->op.path);
    item_finish(it);
    req_free(sess_pop(s));
    sess_emit(s, it);
    bool last = true; /* no other sync of the session has reached the server */
    for (const struct req *q = s->rq_head; q && last; q = q->next)
        last = !(q->arrived && q->kind == ZSIM_REQ_SYNC);
    if (s->cut_ns > 0 && s->server > 0 && last) {
        /* cut right after this step (zsim_cut_after_sync) */
        w->cut_srv = s->server;
        w->cut_len = s->cut_ns;
        s->cut_ns = 0;
    }
}

/* ---- taking requests ------------------------------------------------------- */

static void take_read(zsim_world *w, zsim_session *s, struct req *r)
{
    struct server *x = &w->srv[s->server];
    const char *path = r->op.path;
    size_t n = strlen(path);
    const struct znode *z = tree_find(&x->tree, path, n);
    int rc = ZSIM_OK;
    uint8_t wkind = 0;
    if (r->kind == ZSIM_REQ_EXISTS) {
        rc = z ? ZSIM_OK : ZSIM_NONODE;
        wkind = z ? CW_NODE : CW_EXIST;
        if (r->watcher)
            watch_add(w, s->server, s, path, WK_DATA);
    } else if (z == NULL) {
        rc = ZSIM_NONODE;
    } else if (!acl_allows(z->acl, ZSIM_PERM_READ, &s->ids)) {
        rc = ZSIM_NOAUTH;
    } else {
        wkind = r->kind == ZSIM_REQ_GET ? CW_NODE : CW_CHILD;
        if (r->watcher)
            watch_add(w, s->server, s, path, r->kind == ZSIM_REQ_GET ? WK_DATA : WK_CHILD);
    }
    struct item *it = answer_new(w, s, r, rc, x->tree.zxid);
    if (r->watcher && wkind) {
        it->watcher = r->watcher;
        it->wkind = wkind;
        it->wpath = sim_memdup(path, n);
    }
    if (rc == ZSIM_OK && r->kind == ZSIM_REQ_GET) {
        if (z->dlen >= 0) /* a node made with no data gives NULL, -1 */
            item_str(it, z->data ? z->data : "", (size_t)z->dlen, &it->off_data);
        it->pub.datalen = z->dlen;
        it->pub.size += 4 + (z->dlen > 0 ? z->dlen : 0);
    }
    if (rc == ZSIM_OK && (r->kind == ZSIM_REQ_CHILDREN || r->kind == ZSIM_REQ_CHILDREN2)) {
        /* The server's children are a HashSet: no order. Ours come out in
         * a seeded one, so nothing can lean on an order by accident. */
        uint32_t k = z->nkids;
        if (k > it->ncap) {
            it->ncap = k;
            it->names = sim_grow(it->names, k * sizeof *it->names);
        }
        uint32_t start = k ? (uint32_t)rng_below(&w->rng, k) : 0;
        bool back = k > 1 && (rng_next(&w->rng) & 1);
        it->pub.size += 4;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t j = back ? (start + k - i) % k : (start + i) % k;
            const struct znode *c = z->kids[j];
            int64_t off;
            item_str(it, c->path + c->name, c->plen - c->name, &off);
            it->names[i] = (const char *)(uintptr_t)off;
            it->pub.size += 4 + (int64_t)(c->plen - c->name);
        }
        it->pub.count = (int)k;
    }
    if (rc == ZSIM_OK && r->kind != ZSIM_REQ_CHILDREN) {
        struct zsim_stat st;
        znode_stat(z, &st);
        answer_stat(it, &st);
    }
    item_finish(it);
    req_free(sess_pop(s));
    sess_emit(s, it);
}

/* SetWatches after a reconnection: a watch on a change the client missed
 * fires at once, the others are set again, from the server's own tree and
 * the last zxid the client saw in an answer. */
static void take_setwatches(zsim_world *w, zsim_session *s, struct req *r)
{
    struct server *x = &w->srv[s->server];
    int64_t rel = r->zxid;
    static const uint8_t kinds[] = {CW_NODE, CW_EXIST, CW_CHILD};
    for (int k = 0; k < 3; k++) {
        PTAB_EACH(&s->cw.map, i)
        {
            struct cwentry *ce = s->cw.map.tab[i].p;
            bool has = false;
            for (int j = 0; j < ce->n && !has; j++)
                has = (ce->v[j].bits & kinds[k]) != 0;
            if (!has)
                continue;
            size_t n = strlen(ce->path);
            const struct znode *z = tree_find(&x->tree, ce->path, n);
            int type = 0;
            if (kinds[k] == CW_NODE)
                type = !z ? ZSIM_DELETED_EVENT : z->st.mzxid > rel ? ZSIM_CHANGED_EVENT : 0;
            else if (kinds[k] == CW_EXIST)
                type = z ? ZSIM_CREATED_EVENT : 0;
            else
                type = !z ? ZSIM_DELETED_EVENT : z->st.pzxid > rel ? ZSIM_CHILD_EVENT : 0;
            if (type) {
                struct item *it = item_new(w, ZSIM_WATCH);
                it->pub.session = s;
                it->zxid = x->tree.zxid;
                it->pub.type = type;
                it->pub.state = ZSIM_CONNECTED_STATE;
                item_str(it, ce->path, n, &it->off_path);
                item_finish(it);
                sess_emit(s, it);
            } else {
                watch_add(w, s->server, s, ce->path, kinds[k] == CW_CHILD ? WK_CHILD : WK_DATA);
            }
        }
    }
    req_free(sess_pop(s));
}

static struct item *write_commit(zsim_world *w, zsim_session *s, struct req *r, int32_t origin)
{
    struct prep *p = w->prep;
    prep_reset(p);
    struct txn t;
    int rc;
    struct apply_out out = {0};
    struct item *it;
    if (r->kind != ZSIM_REQ_MULTI) {
        rc = prep_op(p, &r->op, s, &t);
        if (rc != ZSIM_OK) {
            txn_clear(&t);
            t.type = T_ERROR;
            t.err = rc;
        }
        int64_t zxid = commit(w, &t, origin, &out, NULL);
        it = answer_new(w, s, r, rc, zxid);
        if (rc == ZSIM_OK && r->kind == ZSIM_REQ_CREATE) {
            const struct logent *e = log_at(w, zxid);
            size_t n = strlen(e->t.path);
            item_str(it, e->t.path, n, &it->off_value);
            it->pub.size += 4 + (int64_t)n;
        }
        if (rc == ZSIM_OK && out.has_stat && r->kind != ZSIM_REQ_DELETE)
            answer_stat(it, &out.stat);
        item_finish(it);
        return it;
    }
    /* A multi: the ops before a failing one are told ZOK, the failing one
     * its code, the ones after ZRUNTIMEINCONSISTENCY, and nothing is
     * applied; the answer's code is the failing op's. */
    int n = r->nops;
    struct txn *sub = sim_alloc((size_t)(n ? n : 1) * sizeof *sub);
    int failed = -1;
    rc = ZSIM_OK;
    for (int i = 0; i < n && failed < 0; i++) {
        int e = prep_op(p, &r->ops[i], s, &sub[i]);
        if (e != ZSIM_OK) {
            failed = i;
            rc = e;
        }
    }
    if (failed >= 0) {
        for (int i = 0; i < n; i++) {
            txn_clear(&sub[i]);
            sub[i].type = T_ERROR;
            sub[i].err = i < failed ? ZSIM_OK : i == failed ? rc : ZSIM_RUNTIMEINCONSISTENCY;
        }
    }
    memset(&t, 0, sizeof t);
    t.type = T_MULTI;
    t.sub = sub;
    t.nsub = n;
    struct apply_out *outs = sim_alloc((size_t)(n ? n : 1) * sizeof *outs);
    int64_t zxid = commit(w, &t, origin, NULL, outs);
    it = answer_new(w, s, r, rc, zxid);
    if ((size_t)n > it->rcap) {
        it->rcap = (size_t)n;
        it->results = sim_grow(it->results, it->rcap * sizeof *it->results);
        it->rstats = sim_grow(it->rstats, it->rcap * sizeof *it->rstats);
    }
    const struct logent *e = log_at(w, zxid);
    it->pub.size += 9; /* the closing multi header */
    for (int i = 0; i < n; i++) {
        struct zsim_op_result *res = &it->results[i];
        const struct txn *x = &e->t.sub[i];
        memset(res, 0, sizeof *res);
        res->err = x->type == T_ERROR ? x->err : ZSIM_OK;
        it->pub.size += 9;
        if (x->type == T_CREATE) {
            int64_t off;
            item_str(it, x->path, strlen(x->path), &off);
            res->value = (const char *)(uintptr_t)(off + 1); /* 0 stays NULL */
            it->pub.size += 4 + (int64_t)strlen(x->path);
        } else if (x->type == T_SET && outs[i].has_stat) {
            it->rstats[i] = outs[i].stat;
            res->stat = &it->rstats[i];
            it->pub.size += stat_size();
        } else if (x->type == T_ERROR) {
            it->pub.size += 4;
        }
    }
    it->pub.count = n;
    free(outs);
    item_finish(it);
    return it;
}

static bool is_write(int kind)
{
    return kind == ZSIM_REQ_CREATE || kind == ZSIM_REQ_DELETE || kind == ZSIM_REQ_SET ||
           kind == ZSIM_REQ_SET_ACL || kind == ZSIM_REQ_MULTI;
}

bool sess_processable(const zsim_session *s)
{
    const zsim_world *w = s->w;
    if (s->server < 0 || s->state != ZSIM_CONNECTED_STATE || !server_serving(w, s->server))
        return false;
    if (s->oversize > 0)
        return true;
    const struct req *r = s->rq_head;
    if (r == NULL || !r->sent || !r->arrived || r->state != RQ_QUEUED)
        return false;
    bool read = r->kind == ZSIM_REQ_EXISTS || r->kind == ZSIM_REQ_GET ||
                r->kind == ZSIM_REQ_CHILDREN || r->kind == ZSIM_REQ_CHILDREN2 ||
                r->kind == REQ_SETWATCHES;
    return read || (server_linked(w, s->server) && !w->lead_slow);
}

void server_take(zsim_world *w, zsim_session *s)
{
    w->counts.processed++;
    if (s->oversize > 0) {
        /* The server reads a request's length first, and closes the
         * connection of one over jute.maxbuffer: the requests before it were
         * read and are carried out, their answers lost. */
        int k = 0;
        for (struct req *r = s->rq_head; r && !(r->oversize && r->arrived); r = r->next)
            k++;
        sim_trace(w, "server %d: session %d sent a request over the size limit", s->server, s->ix);
        client_lost(s, ZSIM_CONNECTIONLOSS, k, -2);
        return;
    }
    struct req *r = s->rq_head;
    struct server *x = &w->srv[s->server];
    sim_trace(w, "server %d takes request %d of session %d", s->server, r->kind, s->ix);
    switch (r->kind) {
    case ZSIM_REQ_EXISTS:
    case ZSIM_REQ_GET:
    case ZSIM_REQ_CHILDREN:
    case ZSIM_REQ_CHILDREN2:
        take_read(w, s, r);
        break;
    case REQ_SETWATCHES:
        take_setwatches(w, s, r);
        break;
    case ZSIM_REQ_SYNC:
        if (x->tree.zxid >= w->zxid) {
            sync_answer(w, s, r, x->tree.zxid);
        } else {
            r->state = RQ_WAIT;
            r->zxid = w->zxid;
            if (x->sync_head > 0 && x->sync_head >= x->nsync) { /* reuse the front */
                memmove(x->syncs, x->syncs + x->sync_head, x->nsync * sizeof *x->syncs);
                x->sync_head = 0;
            }
            SIM_GROW(x->syncs, x->sync_head + x->nsync, x->capsync);
            x->syncs[x->sync_head + x->nsync++] = (struct waitsync){w->zxid, s->ix, s->epoch};
        }
        break;
    case REQ_CLOSE: {
        r->state = RQ_WAIT;
        struct txn t;
        if (!s->alive) {
            client_close_done(s);
            break;
        }
        session_alive_set(w, s, false);
        close_txn(w, s, &t);
        /* The close completes where the session's server applies it: at
         * once on the leader (r is gone then), later on a follower. */
        commit(w, &t, -1, NULL, NULL);
        break;
    }
    default: {
        struct item *it = write_commit(w, s, r, s->ix);
        if (s->server == 0) {
            req_free(sess_pop(s));
            sess_emit(s, it);
        } else {
            r->state = RQ_WAIT;
            r->zxid = it->zxid;
            r->ans = it;
        }
        break;
    }
    }
    sess_ready(s);
}

/* A request the server carries out although its answer will be lost (the
 * connection went first). */
void server_take_silent(zsim_world *w, zsim_session *s, struct req *r)
{
    if (r->kind == REQ_CLOSE && s->alive) {
        struct txn t;
        session_alive_set(w, s, false);
        close_txn(w, s, &t);
        commit(w, &t, -1, NULL, NULL);
    } else if (is_write(r->kind)) {
        item_free(w, write_commit(w, s, r, -1));
    }
}

/* ---- followers ----------------------------------------------------------- */

void server_apply_next(zsim_world *w, int srv)
{
    struct server *x = &w->srv[srv];
    const struct logent *e = log_at(w, x->tree.zxid + 1);
    w->counts.applied++;
    sim_trace(w, "server %d applies zxid %lld", srv, (long long)e->zxid);
    tree_apply(w, srv, e, NULL, NULL);
    if (e->origin >= 0 && e->origin_server == srv) {
        zsim_session *s = w->sess[e->origin];
        struct req *r = s->rq_head;
        if (s->epoch == e->origin_epoch && r && r->state == RQ_WAIT && r->zxid == e->zxid &&
            r->ans) {
            struct item *it = r->ans;
            r->ans = NULL;
            req_free(sess_pop(s));
            sess_emit(s, it);
            sess_ready(s);
        }
    }
    after_apply(w, srv, e);
    while (x->nsync > 0 && x->syncs[x->sync_head].zxid <= x->tree.zxid) {
        struct waitsync ws = x->syncs[x->sync_head++];
        x->nsync--;
        zsim_session *s = w->sess[ws.s];
        struct req *r = s->rq_head;
        if (s->epoch != ws.epoch || s->server != srv || !r || r->kind != ZSIM_REQ_SYNC ||
            r->state != RQ_WAIT)
            continue;
        sync_answer(w, s, r, x->tree.zxid);
        sess_ready(s);
    }
    if (x->nsync == 0)
        x->sync_head = 0;
    server_apply_ready(w, srv);
}

/* A follower back from a partition syncs with the leader at once before it
 * serves again. */
void server_resync(zsim_world *w, int srv)
{
    struct server *x = &w->srv[srv];
    while (x->tree.zxid < w->zxid)
        server_apply_next(w, srv);
}

void server_drop_clients(zsim_world *w, int srv)
{
    struct server *x = &w->srv[srv];
    while (x->conn.n > 0)
        client_server_closed(w->sess[x->conn.v[x->conn.n - 1]]);
}
