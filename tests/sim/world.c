/* The world: its configuration, its timers, the scheduler that picks every
 * step from the seed, and the faults it injects. */
#include "sim.h"

void zsim_config_default(struct zsim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 1;
    cfg->servers = 3;
    cfg->tick_ns = 2000000000;
    cfg->sync_limit = 5;
    cfg->container_check_ns = 60000000000;
    cfg->max_buffer = 0xfffff;
    cfg->latency_ns = 1000000;
    cfg->w_deliver = 4;
    cfg->w_process = 4;
    cfg->w_apply = 3;
    cfg->p_advance = 150000;
    cfg->outsider_root = "/";
}

/* ---- timers: a binary heap by (time, order pushed) ----------------------- */

static bool timer_before(const struct timer *a, const struct timer *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

void timer_push(zsim_world *w, int64_t at, int kind, int32_t a, uint64_t b)
{
    SIM_GROW(w->heap, w->nheap, w->capheap);
    size_t i = w->nheap++;
    struct timer t = {at, w->timer_seq++, (uint8_t)kind, a, b};
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_before(&t, &w->heap[parent]))
            break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = t;
}

static struct timer timer_pop(zsim_world *w)
{
    struct timer top = w->heap[0];
    struct timer last = w->heap[--w->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->nheap)
            break;
        if (c + 1 < w->nheap && timer_before(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!timer_before(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->nheap > 0)
        w->heap[i] = last;
    return top;
}

int64_t sim_latency(zsim_world *w)
{
    return 1 + (int64_t)rng_below(&w->rng, (uint64_t)(2 * w->cfg.latency_ns) + 1);
}

static void conn_ready(zsim_world *w, int srv)
{
    struct server *x = &w->srv[srv];
    for (size_t i = 0; i < x->conn.n; i++)
        sess_ready(w->sess[x->conn.v[i]]);
}

static void attempts_retry(zsim_world *w, int srv)
{
    for (size_t i = 0; i < w->connecting.n; i++) {
        zsim_session *s = w->sess[w->connecting.v[i]];
        if (s->att_server == srv)
            client_reevaluate_attempt(s);
    }
}

static void link_set(zsim_session *s, bool out, bool in)
{
    zsim_world *w = s->w;
    if ((s->link_out == out && s->link_in == in) || s->finished)
        return;
    sim_trace(w, "session %d: link to server %s, from server %s", s->ix, out ? "up" : "silent",
              in ? "up" : "silent");
    if ((s->link_out && !out) || (s->link_in && !in))
        s->link_heal_gen++;
    bool out_back = out && !s->link_out, in_back = in && !s->link_in;
    s->link_out = out;
    s->link_in = in;
    if (in_back && s->held > 0) {
        s->held = 0;
        s->last_recv = w->now;
    }
    for (struct req *r = s->rq_head; out_back && r; r = r->next) {
        if (r->sent && !r->arrived) {
            r->arrived = true;
            if (r->oversize)
                s->oversize++;
            s->last_send = w->now;
            if (s->server >= 0 && server_serving(w, s->server))
                server_touch(w, s);
        }
    }
    if (out_back || in_back)
        client_reevaluate_attempt(s);
    sess_ready(s);
    client_timer_update(s);
}

static void partition_set(zsim_world *w, int srv, bool cut)
{
    struct server *x = &w->srv[srv];
    if (srv == 0 || x->cut == cut)
        return;
    x->cut = cut;
    sim_trace(w, "server %d %s", srv, cut ? "cut from the leader" : "back with the leader");
    if (cut) {
        x->cut_at = w->now;
        x->cut_gen++;
        timer_push(w, w->now + w->cfg.sync_limit * w->cfg.tick_ns, TM_SYNC_LIMIT, srv, x->cut_gen);
    } else if (x->looking && !x->frozen) {
        server_resync(w, srv);
        x->looking = false;
    } else {
        server_owed_pings(w, srv);
    }
    server_apply_ready(w, srv);
    conn_ready(w, srv);
    attempts_retry(w, srv);
}

static void freeze_set(zsim_world *w, int srv, bool frozen)
{
    struct server *x = &w->srv[srv];
    if (srv == 0 || x->frozen == frozen)
        return;
    x->frozen = frozen;
    sim_trace(w, "server %d %s", srv, frozen ? "stops" : "resumes");
    if (frozen) {
        x->frozen_at = w->now;
        x->freeze_gen++;
    } else if (w->now - x->frozen_at >= w->cfg.sync_limit * w->cfg.tick_ns || x->looking) {
        /* It finds the leader long gone: it drops its clients and syncs
         * before it serves again. */
        x->looking = true;
        server_drop_clients(w, srv);
        while (x->touched.n > 0)
            iset_del(&x->touched, x->touched.v[0]);
        x->ping_owed = false;
        if (!x->cut) {
            server_resync(w, srv);
            x->looking = false;
        }
    } else {
        server_owed_pings(w, srv);
    }
    server_apply_ready(w, srv);
    conn_ready(w, srv);
    attempts_retry(w, srv);
}

static void ready_all(zsim_world *w);
static void elected(zsim_world *w);

static void timer_fire(zsim_world *w, const struct timer *t)
{
    w->counts.timers++;
    switch (t->kind) {
    case TM_HALFTICK:
        server_halftick(w);
        break;
    case TM_EXPIRE: /* on whole ticks, apart from the pings (ping_phase_ns) */
        if (server_linked(w, 0))
            leader_expire_due(w);
        timer_push(w, w->now + w->cfg.tick_ns, TM_EXPIRE, 0, 0);
        break;
    case TM_SESSION: {
        zsim_session *s = w->sess[t->a];
        if (t->at == s->timer_at)
            client_timer(s);
        break;
    }
    case TM_CONTAINER:
        server_containers(w);
        break;
    case TM_DRIVER: {
        struct item *it = item_new(w, ZSIM_TIMER);
        it->pub.session = t->a >= 0 ? w->sess[t->a] : NULL;
        it->pub.tag = t->b;
        it->done = it->internal = true;
        itemq_push(&w->tq_head, &w->tq_tail, &w->ntq, it);
        break;
    }
    case TM_LINK_HEAL: {
        zsim_session *s = w->sess[t->a];
        if (t->b == (uint64_t)s->link_heal_gen)
            link_set(s, true, true);
        break;
    }
    case TM_CUT_HEAL:
        if (t->b == w->srv[t->a].cut_gen)
            partition_set(w, t->a, false);
        break;
    case TM_THAW:
        if (t->b == w->srv[t->a].freeze_gen)
            freeze_set(w, t->a, false);
        break;
    case TM_ELECTED:
        if (t->b == w->lead_gen && w->srv[0].looking)
            elected(w);
        break;
    case TM_LEADER_RESUME:
        if (t->b == w->lead_gen && w->srv[0].frozen) {
            /* Its expirer wakes with the rest: what ran out during the
             * pause expires before any follower's touches come in. If
             * its ping loop's half-tick wait ran out meanwhile, it pings
             * every follower at once (Leader.lead), which answer with
             * the touches they took meanwhile. */
            sim_trace(w, "the leader runs again");
            w->srv[0].frozen = false;
            leader_expire_due(w);
            if (w->ping_missed)
                server_ping_all(w);
            w->ping_missed = false;
            ready_all(w);
        }
        break;
    case TM_LEADER_FAST:
        if (t->b == w->slow_gen && w->lead_slow) {
            w->lead_slow = false;
            ready_all(w);
        }
        break;
    case TM_SYNC_LIMIT: {
        struct server *x = &w->srv[t->a];
        if (t->b == x->cut_gen && x->cut && !x->looking && !x->frozen) {
            sim_trace(w, "server %d gives the leader up and drops its clients", t->a);
            x->looking = true;
            while (x->touched.n > 0)
                iset_del(&x->touched, x->touched.v[0]);
            x->ping_owed = false;
            server_drop_clients(w, t->a);
            server_apply_ready(w, t->a);
        }
        break;
    }
    default:
        break;
    }
}

static void advance_to(zsim_world *w, int64_t to)
{
    while (w->nheap > 0 && w->heap[0].at <= to) {
        struct timer t = timer_pop(w);
        if (t.at > w->now)
            w->now = t.at;
        timer_fire(w, &t);
    }
    if (to > w->now)
        w->now = to;
}

/* ---- the world ------------------------------------------------------------ */

int zsim_world_new(const struct zsim_config *cfg, zsim_world **out)
{
    *out = NULL;
    if (cfg->servers < 1 || cfg->servers > ZSIM_MAX_SERVERS || cfg->tick_ns < 2 ||
        cfg->sync_limit < 1 || cfg->container_check_ns < 1 || cfg->max_buffer < 1 ||
        cfg->latency_ns < 0 || cfg->answer_limit < 0 || cfg->ping_phase_ns < 0 ||
        cfg->ping_phase_ns >= cfg->tick_ns / 2)
        return ZSIM_BADARGUMENTS;
    zsim_world *w = sim_alloc(sizeof *w);
    w->cfg = *cfg;
    int64_t tick_ms = cfg->tick_ns / 1000000;
    if (w->cfg.min_timeout_ms <= 0)
        w->cfg.min_timeout_ms = (int32_t)(2 * tick_ms);
    if (w->cfg.max_timeout_ms <= 0)
        w->cfg.max_timeout_ms = (int32_t)(20 * tick_ms);
    if (w->cfg.fault_max_ns <= 0)
        w->cfg.fault_max_ns = 4 * cfg->tick_ns;
    w->cfg.outsider_root = sim_strdup(cfg->outsider_root ? cfg->outsider_root : "/");
    if (w->cfg.w_deliver + w->cfg.w_process + w->cfg.w_apply == 0)
        w->cfg.w_deliver = w->cfg.w_process = w->cfg.w_apply = 1;
    rng_seed(&w->rng, cfg->seed);
    char world[] = "world", anyone[] = "anyone";
    struct acl_ent open = {ZSIM_PERM_ALL, world, anyone};
    w->open_acl = acl_intern(&w->acls, &open, 1);
    w->nsrv = cfg->servers;
    for (int i = 0; i < w->nsrv; i++) {
        w->srv[i].ix = i;
        tree_init(&w->srv[i].tree, w->open_acl);
    }
    w->next_session_id = (int64_t)1 << 56 | 1;
    w->log_base = 1;
    w->prep = prep_new(w);
    timer_push(w, cfg->tick_ns / 2 + cfg->ping_phase_ns, TM_HALFTICK, 0, 0);
    if (cfg->ping_phase_ns != 0)
        timer_push(w, cfg->tick_ns, TM_EXPIRE, 0, 0);
    timer_push(w, cfg->container_check_ns, TM_CONTAINER, 0, 0);
    *out = w;
    return ZSIM_OK;
}

void zsim_world_free(zsim_world *w)
{
    if (w == NULL)
        return;
    item_free(w, w->current);
    for (struct item *it = w->tq_head, *next; it; it = next) {
        next = it->next;
        item_free(w, it);
    }
    for (size_t i = 0; i < w->nsess; i++)
        session_free(w->sess[i]);
    free(w->sess);
    for (int i = 0; i < w->nsrv; i++) {
        struct server *x = &w->srv[i];
        tree_free(&x->tree);
        wtable_free(&x->watches);
        iset_free(&x->conn);
        iset_free(&x->touched);
        free(x->syncs);
    }
    while (w->log_n > 0) {
        txn_clear(&w->log[w->log_head].t);
        w->log_head = (w->log_head + 1) % w->log_cap;
        w->log_n--;
    }
    free(w->log);
    iset_free(&w->deliver);
    iset_free(&w->process);
    iset_free(&w->apply);
    iset_free(&w->connecting);
    iset_free(&w->alive);
    free(w->heap);
    items_release(w->free_items);
    prep_free(w->prep);
    acl_table_free(&w->acls);
    free((char *)w->cfg.outsider_root);
    free(w->outsider_digest);
    for (size_t i = 0; i < w->nmarred; i++)
        free(w->acl_marred[i]);
    free(w->acl_marred);
    free(w);
}

/* ---- the scheduler ----------------------------------------------------------- */

/* A follower that answered an armed session's sync (zsim_cut_after_sync)
 * is cut from the leader before anything else happens. */
static void cut_pending(zsim_world *w)
{
    int srv = w->cut_srv;
    w->cut_srv = 0;
    struct server *x = &w->srv[srv];
    if (srv <= 0 || x->cut || x->frozen || x->looking)
        return;
    w->counts.partitions++;
    partition_set(w, srv, true);
    timer_push(w, w->now + w->cut_len, TM_CUT_HEAL, srv, x->cut_gen);
}

static void drop_current(zsim_world *w)
{
    item_free(w, w->current);
    w->current = NULL;
    if (w->cut_srv > 0)
        cut_pending(w);
}

const struct zsim_item *zsim_deliver_timer(zsim_world *w)
{
    drop_current(w);
    struct item *it = itemq_pop(&w->tq_head, &w->tq_tail, &w->ntq);
    if (it == NULL)
        return NULL;
    w->current = it;
    w->counts.delivered++;
    return &it->pub;
}

static int random_fault(zsim_world *w)
{
    const struct zsim_config *c = &w->cfg;
    uint64_t total = (uint64_t)c->p_drop + c->p_link + c->p_partition + c->p_freeze +
                     c->p_expire + c->p_outsider;
    if (total == 0)
        return 0;
    uint64_t r = rng_below(&w->rng, 1000000);
    if (r >= total)
        return 0;
    zsim_session *s = NULL;
    if (w->nsess > 0) {
        s = w->sess[rng_below(&w->rng, w->nsess)];
        if (s == w->outsider)
            s = NULL;
    }
    int srv = w->nsrv > 1 ? 1 + (int)rng_below(&w->rng, (uint64_t)w->nsrv - 1) : 0;
    int64_t len = 1 + (int64_t)rng_below(&w->rng, (uint64_t)c->fault_max_ns);
    if (r < c->p_drop) {
        if (s && s->state == ZSIM_CONNECTED_STATE)
            zsim_drop(s, -1, -1);
    } else if ((r -= c->p_drop) < c->p_link) {
        if (s && s->link_out && s->link_in && !s->finished) {
            /* both ways, or one of them */
            uint64_t how = rng_below(&w->rng, 3);
            zsim_link_oneway(s, how == 1, how == 2);
            timer_push(w, w->now + len, TM_LINK_HEAL, s->ix, (uint64_t)s->link_heal_gen);
        }
    } else if ((r -= c->p_link) < c->p_partition) {
        if (srv > 0 && !w->srv[srv].cut) {
            zsim_partition(w, srv, true);
            timer_push(w, w->now + len, TM_CUT_HEAL, srv, w->srv[srv].cut_gen);
        }
    } else if ((r -= c->p_partition) < c->p_freeze) {
        if (srv > 0 && !w->srv[srv].frozen) {
            zsim_freeze(w, srv, true);
            timer_push(w, w->now + len, TM_THAW, srv, w->srv[srv].freeze_gen);
        }
    } else if ((r -= c->p_freeze) < c->p_expire) {
        if (s && s->alive)
            zsim_expire(s);
    } else {
        zsim_outsider_random(w);
    }
    return 1;
}

int zsim_internal_step(zsim_world *w)
{
    drop_current(w);
    size_t np = w->process.n, na = w->apply.n;
    if (np + na == 0)
        return -1;
    uint64_t wp = np ? w->cfg.w_process : 0, wa = na ? w->cfg.w_apply : 0;
    if (wp + wa == 0)
        wp = np ? 1 : 0, wa = na ? 1 : 0;
    if (rng_below(&w->rng, wp + wa) < wp)
        server_take(w, w->sess[w->process.v[rng_below(&w->rng, np)]]);
    else
        server_apply_next(w, w->apply.v[rng_below(&w->rng, na)]);
    return 0;
}

int zsim_take(zsim_session *s)
{
    drop_current(s->w);
    if (!sess_processable(s))
        return -1;
    server_take(s->w, s);
    return 0;
}

int zsim_apply(zsim_world *w, int server)
{
    drop_current(w);
    if (server <= 0 || server >= w->nsrv || !iset_has(&w->apply, server))
        return -1;
    server_apply_next(w, server);
    return 0;
}

int zsim_step(zsim_world *w, const struct zsim_item **item)
{
    drop_current(w);
    *item = NULL;
    w->counts.steps++;
    if (random_fault(w))
        return 0;
    size_t nd = w->deliver.n + (w->ntq > 0), np = w->process.n, na = w->apply.n;
    if (nd + np + na == 0) {
        if (w->nheap == 0)
            return -1;
        advance_to(w, w->heap[0].at);
        return 0;
    }
    if (w->cfg.p_advance && rng_below(&w->rng, 1000000) < w->cfg.p_advance) {
        int64_t to = w->now + sim_latency(w);
        if (w->nheap > 0 && w->heap[0].at <= to)
            to = w->heap[0].at;
        advance_to(w, to);
        return 0;
    }
    uint64_t wd = nd ? w->cfg.w_deliver : 0, wp = np ? w->cfg.w_process : 0,
             wa = na ? w->cfg.w_apply : 0;
    if (wd + wp + wa == 0)
        wd = nd ? 1 : 0, wp = np ? 1 : 0, wa = na ? 1 : 0;
    uint64_t r = rng_below(&w->rng, wd + wp + wa);
    if (r < wd) {
        size_t i = (size_t)rng_below(&w->rng, nd);
        if (i == w->deliver.n) {
            *item = zsim_deliver_timer(w);
            return 1;
        }
        *item = zsim_deliver(w->sess[w->deliver.v[i]]);
        return *item ? 1 : 0;
    }
    if (r < wd + wp)
        server_take(w, w->sess[w->process.v[rng_below(&w->rng, np)]]);
    else
        server_apply_next(w, w->apply.v[rng_below(&w->rng, na)]);
    return 0;
}

static int int_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

size_t zsim_deliverable(zsim_world *w, zsim_session **out, size_t max)
{
    size_t n = w->deliver.n;
    int32_t *v = sim_alloc((n ? n : 1) * sizeof *v);
    memcpy(v, w->deliver.v, n * sizeof *v);
    qsort(v, n, sizeof *v, int_cmp);
    for (size_t i = 0; i < n && i < max; i++)
        out[i] = w->sess[v[i]];
    free(v);
    return n;
}

int64_t zsim_now(const zsim_world *w)
{
    return w->now;
}

int64_t zsim_next_timer(const zsim_world *w)
{
    return w->nheap ? w->heap[0].at : INT64_MAX;
}

void zsim_advance(zsim_world *w, int64_t ns)
{
    drop_current(w);
    advance_to(w, w->now + (ns > 0 ? ns : 0));
}

void zsim_timer(zsim_world *w, zsim_session *s, int64_t at, uint64_t tag)
{
    timer_push(w, at < w->now ? w->now : at, TM_DRIVER, s ? s->ix : -1, tag);
}

uint64_t zsim_rand(zsim_world *w)
{
    return rng_next(&w->rng);
}

uint64_t zsim_below(zsim_world *w, uint64_t n)
{
    return n ? rng_below(&w->rng, n) : 0;
}

void zsim_reseed(zsim_world *w, uint64_t seed)
{
    rng_seed(&w->rng, seed);
}

void zsim_rand_state(zsim_world *w, uint64_t state[4], bool set)
{
    for (int i = 0; i < 4; i++) {
        if (set)
            w->rng.s[i] = state[i];
        else
            state[i] = w->rng.s[i];
    }
}

void zsim_on_change(zsim_world *w, void (*fn)(void *arg, const struct zsim_change *c), void *arg)
{
    w->change_fn = fn;
    w->change_arg = arg;
}

/* ---- faults ----------------------------------------------------------------- */

void zsim_drop(zsim_session *s, int applied, int received)
{
    zsim_world *w = s->w;
    drop_current(w);
    if (s->state != ZSIM_CONNECTED_STATE || s->server < 0)
        return;
    w->counts.drops++;
    client_lost(s, ZSIM_CONNECTIONLOSS, applied, received);
}

void zsim_link_oneway(zsim_session *s, bool to_server, bool to_client)
{
    drop_current(s->w);
    if ((!to_server && s->link_out) || (!to_client && s->link_in))
        s->w->counts.links++;
    link_set(s, to_server, to_client);
}

void zsim_hold(zsim_session *s, bool items, bool stopped)
{
    zsim_world *w = s->w;
    drop_current(w);
    sim_trace(w, "session %d: callbacks %s, client thread %s", s->ix, items ? "held" : "run",
              stopped ? "stopped" : "runs");
    bool resume = s->stopped && !stopped;
    s->hold_items = items;
    s->stopped = stopped;
    sess_ready(s);
    if (resume)
        client_timer(s); /* what came due meanwhile, at once */
}

void zsim_link(zsim_session *s, bool up)
{
    zsim_link_oneway(s, up, up);
}

static void ready_all(zsim_world *w)
{
    for (int i = 0; i < w->nsrv; i++) {
        server_apply_ready(w, i);
        conn_ready(w, i);
        attempts_retry(w, i);
    }
}

void zsim_failover(zsim_world *w, int64_t ns)
{
    drop_current(w);
    if (w->srv[0].looking || w->srv[0].frozen)
        return;
    sim_trace(w, "the leader is lost: every server looks for a new one for %.3f s", (double)ns / 1e9);
    w->counts.failovers++;
    w->lead_gen++;
    for (int i = 0; i < w->nsrv; i++) {
        struct server *x = &w->srv[i];
        x->looking = true;
        server_drop_clients(w, i);
        while (x->touched.n > 0) /* touches not passed on are lost */
            iset_del(&x->touched, x->touched.v[0]);
        x->ping_owed = false;
    }
    ready_all(w);
    timer_push(w, w->now + (ns > 0 ? ns : 1), TM_ELECTED, 0, w->lead_gen);
}

/* A new leader (still server 0 in the model) serves: as ZooKeeper's, its
 * session tracker starts every session anew, one timeout from now. */
static void elected(zsim_world *w)
{
    sim_trace(w, "a leader is elected; every session's expiry starts anew");
    w->srv[0].looking = false;
    for (int i = 1; i < w->nsrv; i++) {
        struct server *x = &w->srv[i];
        if (!x->cut && !x->frozen) {
            server_resync(w, i);
            x->looking = false;
        }
    }
    for (size_t k = 0; k < w->alive.n; k++)
        leader_touch(w, w->sess[w->alive.v[k]]);
    ready_all(w);
}

void zsim_leader_pause(zsim_world *w, int64_t ns)
{
    drop_current(w);
    if (w->srv[0].looking || w->srv[0].frozen)
        return;
    sim_trace(w, "the leader stands still for %.3f s", (double)ns / 1e9);
    w->counts.leader_pauses++;
    w->srv[0].frozen = true;
    w->lead_gen++;
    ready_all(w);
    timer_push(w, w->now + (ns > 0 ? ns : 1), TM_LEADER_RESUME, 0, w->lead_gen);
}

void zsim_leader_slow(zsim_world *w, int64_t ns)
{
    drop_current(w);
    if (w->lead_slow)
        return;
    sim_trace(w, "the leader commits nothing for %.3f s", (double)ns / 1e9);
    w->lead_slow = true;
    w->slow_gen++;
    ready_all(w);
    timer_push(w, w->now + (ns > 0 ? ns : 1), TM_LEADER_FAST, 0, w->slow_gen);
}

void zsim_partition(zsim_world *w, int server, bool cut)
{
    drop_current(w);
    if (server <= 0 || server >= w->nsrv)
        return;
    if (cut && !w->srv[server].cut)
        w->counts.partitions++;
    partition_set(w, server, cut);
}

void zsim_cut_after_sync(zsim_session *s, int64_t ns)
{
    drop_current(s->w);
    s->cut_ns = ns > 0 ? ns : 0;
}

void zsim_freeze(zsim_world *w, int server, bool frozen)
{
    drop_current(w);
    if (server <= 0 || server >= w->nsrv)
        return;
    if (frozen && !w->srv[server].frozen)
        w->counts.freezes++;
    freeze_set(w, server, frozen);
}

void zsim_expire(zsim_session *s)
{
    zsim_world *w = s->w;
    drop_current(w);
    if (!s->alive || s == w->outsider)
        return;
    w->counts.expiries++;
    leader_expire(w, s);
}

void zsim_counts(const zsim_world *w, struct zsim_counts *out)
{
    *out = w->counts;
}

void zsim_trace(zsim_world *w, void (*fn)(void *arg, const char *line), void *arg)
{
    w->trace_fn = fn;
    w->trace_arg = arg;
}
