/* The core's shell in the simulation, as lib/engine/shell.c is in the
 * library: each action the core asks for becomes a zsim request on the
 * client's live handle (its tag names the slot that says which node, or
 * joint, and which kind of answer), and each answer or watch event the
 * world hands the client becomes the core's event. Nothing here decides
 * anything. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

/* ---- request slots: a tag names one ------------------------------------------ */

uint32_t drv_slot_new(struct dcl *c, uint8_t kind)
{
    if (c->free_slot == 0) {
        if (c->nslots == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 64;
            c->slots = realloc(c->slots, c->cap * sizeof *c->slots);
            if (c->slots == NULL)
                abort();
        }
        c->slots[c->nslots] = (struct dslot){0};
        c->free_slot = ++c->nslots; /* 1-based: 0 is none */
        c->slots[c->free_slot - 1].next_free = 0;
    }
    uint32_t i = c->free_slot - 1;
    c->free_slot = c->slots[i].next_free;
    c->slots[i] = (struct dslot){.kind = kind, .used = true};
    return i;
}

void drv_slot_free(struct dcl *c, uint32_t i)
{
    c->slots[i].used = false;
    c->slots[i].next_free = c->free_slot;
    c->free_slot = i + 1;
}

uint64_t drv_tag(struct dcl *c, uint32_t slot)
{
    return ((uint64_t)c->ix + 1) << 48 | slot;
}

/* ---- nodes ------------------------------------------------------------------ */

dnode *drv_node_new(struct dcl *c, int path)
{
    dnode *n = calloc(1, sizeof *n);
    if (n == NULL)
        abort();
    n->cl = c;
    n->uid = ++c->d->uids;
    n->path = path;
    n->sess = -1;
    return n;
}

static size_t name_hash(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static void full_path(const dnode *n, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", drv_paths[n->path], n->name);
}

void drv_name_node(struct drv *d, dnode *n)
{
    if (d->nnamed >= d->nbuckets) {
        size_t nb = d->nbuckets ? 2 * d->nbuckets : 256;
        dnode **t = calloc(nb, sizeof *t);
        if (t == NULL)
            abort();
        for (size_t i = 0; i < d->nbuckets; i++)
            for (dnode *x = d->byname[i], *next; x; x = next) {
                next = x->hnext;
                char p[ZKL__MAX_PATH + 96];
                full_path(x, p, sizeof p);
                size_t b = name_hash(p) & (nb - 1);
                x->hnext = t[b];
                t[b] = x;
            }
        free(d->byname);
        d->byname = t;
        d->nbuckets = nb;
    }
    char p[ZKL__MAX_PATH + 96];
    full_path(n, p, sizeof p);
    size_t b = name_hash(p) & (d->nbuckets - 1);
    n->hnext = d->byname[b];
    d->byname[b] = n;
    d->nnamed++;
}

void drv_unname_node(struct drv *d, dnode *n)
{
    if (n->name[0] == '\0')
        return;
    char p[ZKL__MAX_PATH + 96];
    full_path(n, p, sizeof p);
    for (dnode **q = &d->byname[name_hash(p) & (d->nbuckets - 1)]; *q; q = &(*q)->hnext)
        if (*q == n) {
            *q = n->hnext;
            d->nnamed--;
            break;
        }
    n->name[0] = '\0';
}

dnode *drv_find_node(struct drv *d, const char *path)
{
    if (d->nbuckets == 0)
        return NULL;
    for (dnode *n = d->byname[name_hash(path) & (d->nbuckets - 1)]; n; n = n->hnext) {
        const char *dir = drv_paths[n->path];
        size_t dl = strlen(dir);
        if (strncmp(path, dir, dl) == 0 && path[dl] == '/' && strcmp(path + dl + 1, n->name) == 0)
            return n;
    }
    return NULL;
}

/* The node's name as the core knows it now (its uuid and sequence), kept
 * in the index by path: the truth's changes find it there. */
static void sync_name(zkl__cnode *cn, void *arg)
{
    dnode *n = (dnode *)cn;
    struct drv *d = arg;
    char p[ZKL__MAX_PATH + 96];
    const char *now = cn->seq >= 0 && zkl__cnode_path(cn, NULL, p, sizeof p) ? strrchr(p, '/') + 1
                                                                             : "";
    if (strcmp(now, n->name) == 0)
        return;
    drv_unname_node(d, n);
    if (now[0] == '\0')
        return;
    snprintf(n->name, sizeof n->name, "%s", now);
    n->sess = n->cl->s ? zsim_session_index(n->cl->s) : -1;
    drv_trace(d, "client %d: node %u is %s/%s", n->cl->ix, n->uid, drv_paths[n->path], n->name);
    n->deleted_at = n->deleted_zxid = 0;
    n->deleted_by_other = n->deleted_expired = n->deleted_held = false;
    drv_name_node(d, n);
    check_named(d, n);
}

/* ---- waking ---------------------------------------------------------------- */

void drv_wake(struct dcl *c, struct dwait *w)
{
    if (w == NULL || w->queued)
        return;
    w->queued = true;
    w->next = NULL;
    if (c->run_tail)
        c->run_tail->next = w;
    else
        c->run = w;
    c->run_tail = w;
}

/* Take w off the run list: its owner goes (a request freed while woken). */
void drv_unwake(struct dcl *c, struct dwait *w)
{
    if (!w->queued)
        return;
    struct dwait *prev = NULL;
    for (struct dwait *p = c->run; p != NULL; prev = p, p = p->next)
        if (p == w) {
            if (prev)
                prev->next = w->next;
            else
                c->run = w->next;
            if (c->run_tail == w)
                c->run_tail = prev;
            break;
        }
    w->queued = false;
}

/* Run whoever was woken: after the event, as the woken thread would once
 * the completion thread let go of the client's mutex. */
void drv_run_woken(struct dcl *c)
{
    for (int guard = 0; c->run != NULL; guard++) {
        struct dwait *w = c->run;
        c->run = w->next;
        if (c->run == NULL)
            c->run_tail = NULL;
        w->queued = false;
        w->run(w);
        if (guard > 100000) {
            drv_violation(c->d, V_RATE, "client %d: its threads never rest (a busy loop)", c->ix);
            c->run = c->run_tail = NULL;
            return;
        }
    }
    zkl__core_each(c->core, sync_name, c->d);
}

void drv_count_request(struct dcl *c)
{
    c->sent++;
    check_rate(c);
}

/* ---- the sink: lib/engine/shell.c's zkl__shell_act ----------------------------- */

static void tell(struct dcl *c, const zkl__act *a)
{
    dnode *n = (dnode *)a->n;
    switch (a->type) {
    case ZKL__A_WAKE:
        if (n->cn.st == ZKL__N_HELD && !n->granted) {
            n->granted = true;
            check_basis(c->d, n);
        }
        drv_wake(c, n->waiter);
        break;
    case ZKL__A_LOST:
        check_lost(c->d, n);
        break;
    case ZKL__A_KICK:
        drv_keeper_kick(c, a->at); /* the keeper ticks the core then */
        break;
    case ZKL__A_BROKEN:
        drv_violation(c->d, V_TABLE, "client %d: %s (node %u)", c->ix, a->text, n ? n->uid : 0);
        break;
    case ZKL__A_FREE:
        check_freed(c->d, n);
        drv_unname_node(c->d, n);
        if (n->hold)
            n->hold->n = NULL;
        free(n);
        break;
    default:
        break;
    }
}

int drv_sink(void *ctx, const zkl__act *a)
{
    struct dcl *c = ctx;
    if (a->type >= ZKL__A_WAKE) {
        tell(c, a);
        return 0;
    }
    dnode *n = (dnode *)a->n;
    uint64_t gen = a->j ? zkl__joint_gen(a->j) : n->cn.gen;
    /* Sends go on the live handle only, for nodes of its session. */
    if (c->s == NULL || gen != c->gen || c->closing)
        return ZINVALIDSTATE;
    drv_count_request(c);
    uint32_t i = drv_slot_new(c, a->j ? SL_JOINT : SL_NODE);
    struct dslot *sl = &c->slots[i];
    sl->act = (uint8_t)a->type;
    sl->n = n;
    sl->j = a->j;
    sl->wslot = (int8_t)a->slot;
    uint64_t tag = drv_tag(c, i), w = DRV_WATCHER(c);
    zsim_session *s = c->s;
    int rc;
    char ident[32];
    switch (a->type) {
    case ZKL__A_CREATE:
        snprintf(ident, sizeof ident, "sim client %d", c->ix);
        rc = zsim_acreate(s, a->path, ident, (int)strlen(ident), &ZSIM_OPEN_ACL_UNSAFE, a->mode,
                          tag);
        break;
    case ZKL__A_PARENT:
        rc = zsim_acreate(s, a->path, "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_CONTAINER, tag);
        break;
    case ZKL__A_LIST:
        rc = zsim_aget_children(s, a->path, 0, tag);
        break;
    case ZKL__A_SYNC:
        rc = zsim_async(s, a->path, tag);
        break;
    case ZKL__A_WATCH_AHEAD:
        if (n->path == P_LATCH)
            latch_check_ahead(c->d, n, a->path);
        /* fall through */
    case ZKL__A_WATCH_MEMBER:
    case ZKL__A_READ_OWN:
        rc = zsim_aget(s, a->path, w, tag);
        break;
    case ZKL__A_WATCH_KIDS:
        rc = zsim_aget_children(s, a->path, w, tag);
        break;
    case ZKL__A_WATCH_OWN:
    case ZKL__A_FIND:
    case ZKL__A_WATCH_DIR:
        rc = zsim_aexists(s, a->path, w, tag);
        break;
    case ZKL__A_DELETE:
        rc = zsim_adelete(s, a->path, -1, tag);
        break;
    default:
        rc = ZBADARGUMENTS;
        break;
    }
    if (rc != ZOK)
        drv_slot_free(c, i);
    return rc;
}

/* ---- answers and events: lib/engine/shell.c's completions ----------------------- */

/* A listing, for a trace: each name's end (its kind and sequence). */
static const char *kids_text(const struct String_vector *kids, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; kids && i < kids->count && k + 80 < size; i++)
        k += (size_t)snprintf(buf + k, size - k, " %s",
                              strlen(kids->data[i]) > 40 ? kids->data[i] + 40 : kids->data[i]);
    return buf;
}

/* The event each kind of request is answered with. */
static const uint8_t answer_event[] = {
    [ZKL__A_CREATE] = ZKL__E_CREATED,      [ZKL__A_PARENT] = ZKL__E_PARENT,
    [ZKL__A_LIST] = ZKL__E_LISTED,         [ZKL__A_SYNC] = ZKL__E_SYNCED,
    [ZKL__A_WATCH_AHEAD] = ZKL__E_AHEAD,   [ZKL__A_WATCH_MEMBER] = ZKL__E_MEMBER,
    [ZKL__A_WATCH_KIDS] = ZKL__E_KIDS,     [ZKL__A_WATCH_OWN] = ZKL__E_OWN,
    [ZKL__A_READ_OWN] = ZKL__E_OWN_DATA,   [ZKL__A_FIND] = ZKL__E_FOUND,
    [ZKL__A_WATCH_DIR] = ZKL__E_DIR,       [ZKL__A_DELETE] = ZKL__E_DELETED};
static const char *const event_names[] = {
    [ZKL__E_CREATED] = "created", [ZKL__E_PARENT] = "parent", [ZKL__E_LISTED] = "listed",
    [ZKL__E_SYNCED] = "synced",   [ZKL__E_AHEAD] = "ahead",   [ZKL__E_MEMBER] = "member",
    [ZKL__E_KIDS] = "kids",       [ZKL__E_OWN] = "own",       [ZKL__E_OWN_DATA] = "owndata",
    [ZKL__E_FOUND] = "found",     [ZKL__E_DIR] = "dir",       [ZKL__E_DELETED] = "deleted"};

/* What the C client passes a completion, as the node's event. */
static void node_answer(struct dcl *c, const struct dslot *sl, const struct zsim_item *it,
                        const struct String_vector *kids)
{
    const struct zsim_stat *st = it->rc == ZOK ? it->stat : NULL;
    zkl__event ev = {.type = (enum zkl__ev_type)answer_event[sl->act],
                     .rc = it->rc,
                     .now = zsim_now(c->d->w),
                     .slot = sl->wslot,
                     .version = st ? st->version : -1,
                     .czxid = st ? st->czxid : 0,
                     .owner = st ? st->ephemeralOwner : 0};
    if (ev.type == ZKL__E_LISTED || ev.type == ZKL__E_KIDS)
        ev.kids = kids;
    if (ev.type == ZKL__E_OWN_DATA) {
        ev.data = it->data;
        ev.len = it->datalen;
    }
    if ((ev.type == ZKL__E_CREATED || ev.type == ZKL__E_FOUND) && it->rc == ZOK)
        sl->n->owner = ev.owner; /* whose the node is, as the server says */
    if (ev.type == ZKL__E_CREATED) {
        /* The core keeps the node's name, not its path. */
        const char *slash = it->rc == ZOK && it->value ? strrchr(it->value, '/') : NULL;
        ev.name = slash ? slash + 1 : it->value;
    }
    if (c->d->o->trace) {
        char list[1024];
        drv_trace(c->d, "client %d node %u: %s %s%s%s (zxid %lld)", c->ix, sl->n->uid,
                  event_names[ev.type], zsim_rc_name(it->rc), ev.name ? " " : "",
                  ev.name ? ev.name : "", (long long)it->zxid);
        if (ev.kids)
            drv_trace(c->d, "    [%s ]", kids_text(kids, list, sizeof list));
    }
    zkl__cnode_on(&sl->n->cn, &ev);
}

void drv_item(struct dcl *c, const struct zsim_item *it)
{
    struct drv *d = c->d;
    d->basis = it->zxid;
    if (it->kind == ZSIM_ANSWER) {
        uint32_t i = (uint32_t)(it->tag & 0xffffffffu);
        if (i >= c->nslots || !c->slots[i].used) {
            drv_violation(d, V_LEFT, "client %d: an answer for no request (tag %llx)", c->ix,
                          (unsigned long long)it->tag);
            return;
        }
        struct dslot sl = c->slots[i];
        drv_slot_free(c, i);
        /* The children as the C client passes them. */
        struct String_vector kids = {it->count, (char **)it->names};
        const struct String_vector *kv = it->rc == ZOK ? &kids : NULL;
        if (sl.kind == SL_NODE || sl.kind == SL_JOINT)
            drv_give_up_due(c, zsim_now(d->w)); /* as the library's shell */
        switch (sl.kind) {
        case SL_NODE:
            node_answer(c, &sl, it, kv);
            break;
        case SL_JOINT:
            if (d->o->trace) {
                char list[1024];
                drv_trace(d, "client %d joint of node %u: listed %s (zxid %lld) [%s ]", c->ix,
                          ((dnode *)zkl__joint_first(sl.j))->uid, zsim_rc_name(it->rc),
                          (long long)it->zxid, kids_text(kv, list, sizeof list));
            }
            zkl__joint_on(sl.j, it->rc, kv, zsim_now(d->w));
            break;
        case SL_KEEP:
            drv_keepalive_done(c, &sl, it);
            break;
        case SL_CALL:
            wk_call_answer(sl.p, &sl, it);
            break;
        case SL_ASYNC_FILL: {
            struct dreq *r = aq_by_id(c, sl.id);
            if (r != NULL) /* else the request was freed: the answer only frees */
                aq_fill_answer(r, &sl, it);
            break;
        }
        default:
            break;
        }
    } else if (it->kind == ZSIM_WATCH) {
        /* Only the live handle's events: an old one's watches are of an
         * ended session, whose nodes are gone. */
        if (it->session == c->s && c->s != NULL)
            drv_give_up_due(c, zsim_now(d->w)); /* as the library's watcher */
        for (int k = 0; k < it->nwatchers; k++)
            if (it->watchers[k] == DRV_WATCHER(c) && it->session == c->s && c->s != NULL)
                zkl__core_watch_event(c->core, it->type, it->path, zsim_now(d->w));
    } else if (it->kind == ZSIM_SESSION) {
        for (int k = 0; k < it->nwatchers; k++)
            if (it->watchers[k] == DRV_SESSION_WATCHER(c))
                drv_session_event(c, it->session, it->state);
    }
    d->basis = 0;
    drv_run_woken(c);
}
