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

/* The size of the setWatches the C client sends (send_set_watches): all of
 * its watches in one request, whatever their number: the header, the last
 * zxid, and the paths of its three tables (a path in two tables counts
 * twice). Over the servers' jute.maxbuffer, it closes the connection as
 * any request does (server_take), on every reconnection. */
static int64_t setwatches_size(const zsim_session *s)
{
    int64_t n = 8 + 8 + 3 * 4;
    PTAB_EACH(&s->cw.map, i)
    {
        const struct cwentry *ce = s->cw.map.tab[i].p;
        unsigned bits = 0;
        for (int j = 0; j < ce->n; j++)
            bits |= ce->v[j].bits;
        int tables = !!(bits & CW_NODE) + !!(bits & CW_EXIST) + !!(bits & CW_CHILD);
        n += tables * (4 + (int64_t)strlen(ce->path));
    }
    return n;
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
        r->size = setwatches_size(s);
        r->oversize = r->size > w->cfg.max_buffer;
        sim_trace(w, "session %d sends its watches again: %lld bytes%s", s->ix, (long long)r->size,
                  r->oversize ? ", over the size limit" : "");
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
    if (s->finished || s->stopped)
        return; /* a stopped client looks at its clock when it runs again */
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
