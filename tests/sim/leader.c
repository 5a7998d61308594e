/* What only the leader does: its session tracker (touches, expiry on its
 * ticks, a close's transaction) and its sweep of empty containers. */
#include "sim.h"

void close_txn(zsim_world *w, zsim_session *s, struct txn *t)
{
    memset(t, 0, sizeof *t);
    t->type = T_CLOSE_SESSION;
    t->owner = s->id;
    t->owner_ix = s->ix;
    const struct tree *lt = &w->srv[0].tree;
    int n = 0;
    for (const struct znode *z = (size_t)s->ix < lt->neph ? lt->eph[s->ix] : NULL; z; z = z->enext)
        n++;
    t->paths = sim_alloc((size_t)(n ? n : 1) * sizeof *t->paths);
    for (const struct znode *z = (size_t)s->ix < lt->neph ? lt->eph[s->ix] : NULL; z; z = z->enext)
        t->paths[t->npaths++] = sim_memdup(z->path, z->plen);
    /* The server deletes them in the order of a HashSet: any order. */
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&w->rng, (uint64_t)i + 1);
        char *tmp = t->paths[i];
        t->paths[i] = t->paths[j];
        t->paths[j] = tmp;
    }
}

void session_alive_set(zsim_world *w, zsim_session *s, bool alive)
{
    s->alive = alive;
    if (alive)
        iset_add(&w->alive, s->ix);
    else
        iset_del(&w->alive, s->ix);
}

void leader_expire(zsim_world *w, zsim_session *s)
{
    if (!s->alive)
        return;
    session_alive_set(w, s, false);
    w->counts.sessions_expired++;
    sim_trace(w, "leader expires session %d", s->ix);
    struct txn t;
    close_txn(w, s, &t);
    commit(w, &t, -1, NULL, NULL);
}

/* A write checked and committed at the leader; the answer it gets. */
void leader_touch(zsim_world *w, zsim_session *s)
{
    if (!s->alive || s == w->outsider)
        return;
    int64_t tick = w->cfg.tick_ns;
    int64_t t = w->now + (int64_t)s->timeout * 1000000;
    s->expire_at = (t / tick + 1) * tick;
}

void server_touch(zsim_world *w, zsim_session *s)
{
    if (s->server == 0)
        leader_touch(w, s);
    else if (s->server > 0)
        iset_add(&w->srv[s->server].touched, s->ix);
}

/* A follower answers the leader's ping with the sessions it saw since its
 * last answer; the leader touches each as the answer arrives. */
void server_pass_touches(zsim_world *w, int srv)
{
    struct server *x = &w->srv[srv];
    x->ping_owed = false;
    for (size_t k = 0; k < x->touched.n; k++)
        leader_touch(w, w->sess[x->touched.v[k]]);
    while (x->touched.n > 0)
        iset_del(&x->touched, x->touched.v[x->touched.n - 1]);
}

/* A follower back from a cut or a stop within the sync limit reads first
 * the pings the leader queued for it meanwhile (LearnerHandler's queue,
 * ahead of any commit or sync it sends after them) and answers them at
 * once, before it answers a client: what it saw meanwhile reaches the
 * leader now, not at the next ping. */
void server_owed_pings(zsim_world *w, int srv)
{
    if (w->srv[srv].ping_owed && server_linked(w, srv))
        server_pass_touches(w, srv);
}

/* Every half tick the leader pings its followers, which answer with the
 * sessions they saw since; on every tick it expires the sessions whose
 * time ran out (here when the pings fall on ticks, else TM_EXPIRE). */
void server_ping_all(zsim_world *w)
{
    for (int i = 1; i < w->nsrv; i++) {
        struct server *x = &w->srv[i];
        if (server_linked(w, i))
            server_pass_touches(w, i);
        else if (!x->looking)
            x->ping_owed = true;
    }
}

void server_halftick(zsim_world *w)
{
    if (!server_linked(w, 0)) {
        /* no leader pings or expires: it stands still, or is being elected */
        w->ping_missed = w->srv[0].frozen && !w->srv[0].looking;
        timer_push(w, w->now + w->cfg.tick_ns / 2, TM_HALFTICK, 0, 0);
        return;
    }
    server_ping_all(w);
    if (w->cfg.ping_phase_ns == 0 && w->now % w->cfg.tick_ns == 0)
        leader_expire_due(w);
    timer_push(w, w->now + w->cfg.tick_ns / 2, TM_HALFTICK, 0, 0);
}

/* The leader's expirer: every session whose time ran out. */
void leader_expire_due(zsim_world *w)
{
    {
        int32_t *due = NULL;
        size_t n = 0, cap = 0;
        for (size_t k = 0; k < w->alive.n; k++) {
            zsim_session *s = w->sess[w->alive.v[k]];
            if (s != w->outsider && s->expire_at <= w->now) {
                SIM_GROW(due, n, cap);
                due[n++] = s->ix;
            }
        }
        for (size_t k = 0; k < n; k++)
            leader_expire(w, w->sess[due[k]]);
        free(due);
    }
}

/* The leader's container sweep: an empty container that ever had a child
 * is deleted (one that never had one stays). */
void server_containers(zsim_world *w)
{
    struct tree *t = &w->srv[0].tree;
    char **doomed = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < t->ncont; i++) {
        const struct znode *z = t->containers[i];
        if (z->nkids == 0 && z->st.cversion != w->cfg.cversion_start) {
            SIM_GROW(doomed, n, cap);
            doomed[n++] = sim_memdup(z->path, z->plen);
        }
    }
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(&w->rng, i);
        char *tmp = doomed[i - 1];
        doomed[i - 1] = doomed[j];
        doomed[j] = tmp;
    }
    for (size_t i = 0; i < n; i++) {
        const struct znode *z = tree_find(t, doomed[i], strlen(doomed[i]));
        if (z && z->nkids == 0) {
            sim_trace(w, "container sweep deletes %s", doomed[i]);
            struct txn x = {0};
            x.type = T_DELETE;
            x.path = doomed[i];
            doomed[i] = NULL;
            commit(w, &x, -1, NULL, NULL);
        }
        free(doomed[i]);
    }
    free(doomed);
    timer_push(w, w->now + w->cfg.container_check_ns, TM_CONTAINER, 0, 0);
}
