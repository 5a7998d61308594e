/* Items: what a session's client is handed, with the storage behind their
 * pointers; the session's inbox, in which they wait in the order the C
 * client calls back, and what the client takes from each; and the client's
 * watch tables that decide whom an event is for
 * (libzookeeper_mt's zk_hashtable.c behaviour: three tables by path, one
 * registration per (watcher, path, table), all of a path's registrations
 * that an event concerns taken at once). */
#include "sim.h"

struct item *item_new(zsim_world *w, int kind)
{
    struct item *it = w->free_items;
    if (it) {
        w->free_items = it->next;
    } else {
        it = sim_alloc(sizeof *it);
    }
    char *buf = it->buf;
    size_t bcap = it->bcap;
    const char **names = it->names;
    size_t ncap = it->ncap;
    struct zsim_op_result *results = it->results;
    struct zsim_stat *rstats = it->rstats;
    size_t rcap = it->rcap;
    uint64_t *watchers = it->watchers;
    size_t wcap = it->wcap;
    memset(it, 0, sizeof *it);
    it->buf = buf, it->bcap = bcap, it->names = names, it->ncap = ncap;
    it->results = results, it->rstats = rstats, it->rcap = rcap;
    it->watchers = watchers, it->wcap = wcap;
    it->pub.kind = (enum zsim_item_kind)kind;
    it->pub.datalen = -1;
    it->off_value = it->off_data = it->off_path = -1;
    return it;
}

void item_free(zsim_world *w, struct item *it)
{
    if (it == NULL)
        return;
    free(it->wpath);
    it->wpath = NULL;
    it->next = w->free_items;
    w->free_items = it;
}

void items_release(struct item *it)
{
    while (it) {
        struct item *next = it->next;
        free(it->buf);
        free(it->names);
        free(it->results);
        free(it->rstats);
        free(it->watchers);
        free(it->wpath);
        free(it);
        it = next;
    }
}

/* Appends n bytes and a NUL to the item's buffer; *off is where they went. */
char *item_str(struct item *it, const char *s, size_t n, int64_t *off)
{
    if (it->blen + n + 1 > it->bcap) {
        size_t cap = it->bcap ? it->bcap : 64;
        while (it->blen + n + 1 > cap)
            cap *= 2;
        it->buf = sim_grow(it->buf, cap);
        it->bcap = cap;
    }
    char *p = it->buf + it->blen;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    *off = (int64_t)it->blen;
    it->blen += n + 1;
    return p;
}

/* Turns the offsets kept while building into pointers (the buffer may have
 * moved meanwhile). */
void item_finish(struct item *it)
{
    it->pub.value = it->off_value >= 0 ? it->buf + it->off_value : NULL;
    it->pub.data = it->off_data >= 0 ? it->buf + it->off_data : NULL;
    it->pub.path = it->off_path >= 0 ? it->buf + it->off_path : NULL;
    if (it->pub.kind == ZSIM_ANSWER && it->pub.req == ZSIM_REQ_MULTI) {
        for (int i = 0; i < it->pub.count; i++) {
            uintptr_t v = (uintptr_t)it->results[i].value;
            it->results[i].value = v ? it->buf + (v - 1) : NULL;
        }
        it->pub.results = it->results;
    } else if (it->pub.count > 0) {
        for (int i = 0; i < it->pub.count; i++)
            it->names[i] = it->buf + (uintptr_t)it->names[i];
        it->pub.names = it->names;
    }
}

/* ---- items into the inbox ------------------------------------------------- */

/* An item queue is a head, a tail and a count kept by its owner (a
 * session's inbox, the world's due timers); these two keep the three in
 * step. */
void itemq_push(struct item **head, struct item **tail, int *n, struct item *it)
{
    it->next = NULL;
    if (*tail)
        (*tail)->next = it;
    else
        *head = it;
    *tail = it;
    (*n)++;
}

struct item *itemq_pop(struct item **head, struct item **tail, int *n)
{
    struct item *it = *head;
    if (it == NULL)
        return NULL;
    *head = it->next;
    if (*head == NULL)
        *tail = NULL;
    (*n)--;
    it->next = NULL;
    return it;
}

static void inbox_push(zsim_session *s, struct item *it)
{
    itemq_push(&s->in_head, &s->in_tail, &s->nin, it);
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

void emit_session_event(zsim_session *s, int state)
{
    struct item *it = internal_item(s, ZSIM_SESSION);
    it->pub.type = ZSIM_SESSION_EVENT;
    it->pub.state = state;
    cw_all(&s->cw, s->watcher, it);
    emit_internal(s, it);
}

void emit_loss(zsim_session *s, uint64_t tag, int kind, int rc)
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
void fail_queue(zsim_session *s, int rc)
{
    struct req *r;
    while ((r = sess_pop(s)) != NULL) {
        emit_loss(s, r->tag, r->kind, rc);
        req_free(r);
    }
}

/* The client sees an item: the zxid of an answer, the watch it registers,
 * the watchers an event is for. */
void item_take(zsim_session *s, struct item *it)
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

struct item *inbox_pop(zsim_session *s)
{
    return itemq_pop(&s->in_head, &s->in_tail, &s->nin);
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
    it->pub.zxid = it->zxid > 0 && it->pub.kind != ZSIM_SESSION ? it->zxid : 0;
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


/* ---- the client's watch tables ------------------------------------------- */

static bool cw_is(const void *p, const void *key, size_t unused)
{
    return strcmp(((const struct cwentry *)p)->path, key) == 0;
}

static struct cwentry *cw_find(const struct cwtable *t, const char *path, uint64_t h)
{
    return ptab_find(&t->map, h, cw_is, path, 0);
}

static void cw_remove(struct cwtable *t, struct cwentry *e)
{
    ptab_del(&t->map, e->hash, e);
    free(e->path);
    free(e->v);
    free(e);
}

void cw_add(struct cwtable *t, const char *path, uint64_t tag, uint8_t bits)
{
    uint64_t h = sim_hash(path, strlen(path));
    struct cwentry *e = cw_find(t, path, h);
    if (e == NULL) {
        e = sim_alloc(sizeof *e);
        e->path = sim_strdup(path);
        e->hash = h;
        ptab_put(&t->map, h, e);
    }
    for (int i = 0; i < e->n; i++) {
        if (e->v[i].tag == tag) {
            e->v[i].bits |= bits;
            return;
        }
    }
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 2;
        e->v = sim_grow(e->v, (size_t)e->cap * sizeof *e->v);
    }
    e->v[e->n++] = (struct cwreg){tag, bits};
}

static void watchers_push(struct item *it, uint64_t tag)
{
    if ((size_t)it->pub.nwatchers == it->wcap) {
        it->wcap = it->wcap ? it->wcap * 2 : 4;
        it->watchers = sim_grow(it->watchers, it->wcap * sizeof *it->watchers);
    }
    it->watchers[it->pub.nwatchers++] = tag;
}

static int tag_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Each watcher once, in ascending order: the C client's order among the
 * watchers of one event is its hash table's, of no meaning. */
static void watchers_done(struct item *it)
{
    int n = it->pub.nwatchers, k = 0;
    if (n > 1)
        qsort(it->watchers, (size_t)n, sizeof *it->watchers, tag_cmp);
    for (int i = 0; i < n; i++)
        if (k == 0 || it->watchers[k - 1] != it->watchers[i])
            it->watchers[k++] = it->watchers[i];
    it->pub.nwatchers = k;
    it->pub.watchers = it->watchers;
}

/* collectWatchers for a path event: created and changed take the data and
 * exists registrations, child the child ones, deleted all three. */
void cw_collect(struct cwtable *t, const char *path, int type, struct item *it)
{
    struct cwentry *e = cw_find(t, path, sim_hash(path, strlen(path)));
    it->pub.nwatchers = 0;
    it->pub.watchers = it->watchers;
    if (e == NULL)
        return;
    uint8_t mask = type == ZSIM_CHILD_EVENT     ? CW_CHILD
                   : type == ZSIM_DELETED_EVENT ? (CW_NODE | CW_EXIST | CW_CHILD)
                                                : (CW_NODE | CW_EXIST);
    int k = 0;
    for (int i = 0; i < e->n; i++) {
        if (e->v[i].bits & mask) {
            watchers_push(it, e->v[i].tag);
            e->v[i].bits &= (uint8_t)~mask;
        }
        if (e->v[i].bits)
            e->v[k++] = e->v[i];
    }
    e->n = k;
    if (k == 0)
        cw_remove(t, e);
    watchers_done(it);
}

/* A session event goes to the default watcher and to every watcher
 * registered anywhere; the registrations stay. */
void cw_all(const struct cwtable *t, uint64_t def, struct item *it)
{
    it->pub.nwatchers = 0;
    it->pub.watchers = it->watchers;
    if (def)
        watchers_push(it, def);
    PTAB_EACH(&t->map, i)
    {
        const struct cwentry *e = t->map.tab[i].p;
        for (int k = 0; k < e->n; k++)
            watchers_push(it, e->v[k].tag);
    }
    watchers_done(it);
}

void cw_free(struct cwtable *t)
{
    PTAB_EACH(&t->map, i)
    {
        struct cwentry *e = t->map.tab[i].p;
        free(e->path);
        free(e->v);
        free(e);
    }
    ptab_free(&t->map);
}
