/* Watches: on the node ahead (and the one before it, prefetch), on a
 * policy's watch group, on the lock path's children for a node we may not
 * read, and on our own node (someone else deleting it, a revocation request
 * written into it); their answers, and the watch events routed to a node. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

/* Carry out what walk.c makes of a watched node's going. */
static enum zkl__step walk_back(zkl__cnode *n, int slot)
{
    zkl__walkback w = zkl__walk_back(n, slot);
    if (w.drop != 0)
        zkl__walk_drop(n, w.drop - 1);
    n->pred = (uint8_t)w.pred;
    n->walk = (uint8_t)w.walk;
    return w.step;
}

static void own_changed(zkl__cnode *n);

/* A watch request of n's: sent, or why not (a lost connection stalls n). */
static bool watch_send(zkl__cnode *n, zkl__act *a)
{
    zkl__core_route(n, ZKL__RT_WATCHING);
    int rc = zkl__core_send(n, a);
    if (rc == ZOK)
        return true;
    if (zkl__zk_conn_error(rc))
        n->stalled = true;
    return false;
}

/* ---- our own node ---------------------------------------------------------- */

/* An existence watch: it needs no READ permission, fires on deletion and on
 * a change of the node's data. Without it the node only lists more. */
void zkl__watch_own(zkl__cnode *n)
{
    char own[ZKL__NAME_BUF], buf[ZKL__MAX_PATH + 96];
    const char *name = n->own == ZKL__OWN_OFF ? zkl__core_own(n, own) : NULL;
    if (name == NULL)
        return;
    zkl__act a = {.type = ZKL__A_WATCH_OWN, .path = zkl__core_full(n, name, buf)};
    zkl__cnode_own(n, ZKL__OWN_ASKED);
    if (!watch_send(n, &a))
        zkl__cnode_own(n, ZKL__OWN_OFF);
}

/* Our node's data changed: read it, watching on. Someone wrote the
 * revocation request into it: the owner's revoke hook hears of it. */
static void own_changed(zkl__cnode *n)
{
    char own[ZKL__NAME_BUF], buf[ZKL__MAX_PATH + 96];
    zkl__act a = {.type = ZKL__A_READ_OWN, .path = zkl__core_full(n, zkl__core_own(n, own), buf)};
    zkl__cnode_own(n, ZKL__OWN_ASKED); /* not watched until this answers: no handoff on trust */
    if (!watch_send(n, &a))
        zkl__cnode_own(n, ZKL__OWN_OFF);
}

/* The answer rc to a request that watches our own node (a read if
 * `reading`): *ok if it is a success about the node's current path.
 * Otherwise the node is gone, or the watch is not set: a lost connection
 * stalls n, and a read refused watches on without reading. */
static zkl__decision own_answer(zkl__cnode *n, int rc, bool reading, bool *ok)
{
    *ok = false;
    /* Answers to one session's requests come in order: while the node is
     * queued or held, this answer is about its current path. */
    if (!current(n) || n->own == ZKL__OWN_OFF)
        return zkl__do(ZKL__S_NONE);
    if (n->st != ZKL__N_QUEUED && n->st != ZKL__N_HELD) {
        /* A delete is out (a release): nothing to act on, but the watch is
         * as the answer says. Left asked, a refused release that holds the
         * node again could never watch it again, nor tell its loss. */
        zkl__cnode_own(n, rc == ZOK ? ZKL__OWN_SET : ZKL__OWN_OFF);
        return zkl__do(ZKL__S_NONE);
    }
    if (rc == ZOK) {
        zkl__cnode_own(n, ZKL__OWN_SET);
        *ok = true;
        return zkl__do(ZKL__S_NONE);
    }
    zkl__cnode_own(n, ZKL__OWN_OFF);
    if (rc == ZNONODE)
        return zkl__do(ZKL__S_OWN_GONE);
    if (zkl__zk_conn_error(rc))
        return zkl__do(ZKL__S_STALL);
    if (reading) {
        /* Not allowed to read it: watch on without. The data the watch's
         * answer shows is not read again (it would be refused again: a
         * request loop for as long as the ACL stays); its next change is. */
        zkl__watch_own(n);
        if (n->own == ZKL__OWN_ASKED)
            zkl__cnode_own(n, ZKL__OWN_BLIND);
    }
    return zkl__do(ZKL__S_NONE);
}

static zkl__decision own_data(zkl__cnode *n, const zkl__event *ev)
{
    bool ok;
    zkl__decision d = own_answer(n, ev->rc, true, &ok);
    if (ok) {
        bool fresh = ev->version > n->own_version;
        if (fresh)
            n->own_version = ev->version;
        if (fresh && n->st == ZKL__N_HELD && ev->len == REVOKE_LEN && ev->data != NULL &&
            memcmp(ev->data, REVOKE_DATA, REVOKE_LEN) == 0)
            zkl__core_tell(n, ZKL__A_REVOKE);
    }
    return d;
}

/* ---- the nodes ahead, the group, the children ------------------------------- */

static void send_kids(zkl__cnode *n)
{
    if (n->reading == ZKL__R_KIDS_SET)
        return; /* one is set: its event lists again */
    zkl__act a = {.type = ZKL__A_WATCH_KIDS, .path = n->dir->path};
    zkl__cnode_reading(n, ZKL__R_KIDS_SET);
    n->core->stats.listings++;
    if (!watch_send(n, &a))
        zkl__cnode_reading(n, ZKL__R_KIDS_OFF);
}

static void unwatch(zkl__cnode *n, int slot)
{
    free(n->watch[slot]);
    n->watch[slot] = NULL;
    if (slot == 0)
        n->wpeer.seq = -1;
    zkl__cnode_armed(n, &n->armed[slot], ZKL__ARM_OFF);
}

/* Watch `name` in slot; p: it as a peer of our kind, kept as such (slot 0
 * only), or NULL. */
static bool arm(zkl__cnode *n, int slot, const char *name, const zkl__peer *p)
{
    /* Already watching it? A peer's name and a peer are one (names.c). */
    bool same = n->watch[slot] != NULL ? strcmp(n->watch[slot], name) == 0
                                       : p != NULL && zkl__core_same_peer(&n->wpeer, p);
    if (n->armed[slot] == ZKL__ARM_ON && same)
        return true;
    /* The node ahead, of our kind, is kept as a peer, any other by its
     * name (made, and its path written, before the old one goes: name may
     * be it). */
    char *copy = NULL;
    if (p == NULL && (copy = zkl__core_strdup(n->core, name)) == NULL)
        return false;
    char buf[ZKL__MAX_PATH + 96];
    const char *path = zkl__core_full(n, name, buf);
    unwatch(n, slot);
    if (p != NULL)
        n->wpeer = *p;
    else
        n->watch[slot] = copy;
    zkl__cnode_armed(n, &n->armed[slot], ZKL__ARM_ON);
    zkl__core_route(n, ZKL__RT_WATCHING);
    if (n->reading != ZKL__R_NODES) {
        send_kids(n); /* the lock path's children tell */
        return true;
    }
    /* A data watch, not an existence watch: none is left behind on a node
     * that is already gone (PROTOCOL §4). */
    zkl__act a = {.type = ZKL__A_WATCH_AHEAD, .path = path, .slot = slot};
    n->wsent[slot]++;
    int rc = zkl__core_send(n, &a);
    if (rc != ZOK) {
        n->wsent[slot]--;
        zkl__cnode_armed(n, &n->armed[slot], ZKL__ARM_OFF);
        (void)zkl__step_unsent(n, rc);
    }
    return true;
}

bool zkl__watch_arm(zkl__cnode *n, int slot, const char *name)
{
    if (name == NULL) {
        unwatch(n, slot);
        return true;
    }
    zkl__peer p;
    return arm(n, slot, name, slot == 0 && zkl__core_peer(n, name, &p) ? &p : NULL);
}

bool zkl__watch_arm_peer(zkl__cnode *n, const char *name, const zkl__peer *p)
{
    return arm(n, 0, name, p);
}

/* After a walk back: watch the nearest node ahead that is left, and with
 * prefetch the one before it. false without memory. */
bool zkl__watch_ahead(zkl__cnode *n)
{
    char a[ZKL__NAME_BUF], b[ZKL__NAME_BUF];
    const zkl__peer *first = &n->ahead[n->nahead - 1];
    const char *second =
        n->prefetch && n->nahead >= 2 ? zkl__core_peer_name(n, &n->ahead[n->nahead - 2], b) : NULL;
    return arm(n, 0, zkl__core_peer_name(n, first, a), first) && zkl__watch_arm(n, 1, second);
}

void zkl__watch_group_clear(zkl__cnode *n)
{
    if (n->side == NULL)
        return;
    for (size_t i = 0; i < n->side->ngroup; i++)
        free(n->side->group[i].name);
    free(n->side->group);
    n->side->group = NULL;
    n->side->ngroup = 0;
}

void zkl__watch_off(zkl__cnode *n)
{
    unwatch(n, 0);
    unwatch(n, 1);
    zkl__watch_group_clear(n);
}

static void arm_member(zkl__cnode *n, struct zkl__gwatch *g)
{
    zkl__cnode_armed(n, &g->armed, ZKL__ARM_ON);
    zkl__core_route(n, ZKL__RT_WATCHING);
    if (n->reading != ZKL__R_NODES) {
        send_kids(n); /* no request for this member: the children tell */
        return;
    }
    char buf[ZKL__MAX_PATH + 96];
    zkl__act a = {.type = ZKL__A_WATCH_MEMBER, .path = zkl__core_full(n, g->name, buf)};
    int rc = zkl__core_send(n, &a);
    if (rc != ZOK) {
        zkl__cnode_armed(n, &g->armed, ZKL__ARM_OFF);
        (void)zkl__step_unsent(n, rc);
    }
}

/* Watch every member of the policy's watch group in this listing: the
 * watches still armed from an earlier listing stay, new members get one.
 * Any member going lists again, so the node waits for the first of them.
 * false without memory. */
bool zkl__watch_group(zkl__cnode *n, const zkl__entry *cs, size_t k, size_t self)
{
    struct zkl__cside *s = zkl__core_side(n);
    struct zkl__gwatch *g = s ? zkl__core_calloc(n->core, k ? k : 1, sizeof *g) : NULL;
    if (g == NULL)
        return false;
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (i == self || !n->pol->watch_group(&cs[i], n->arg))
            continue;
        if ((g[m].name = zkl__core_strdup(n->core, cs[i].name)) == NULL) {
            while (m > 0)
                free(g[--m].name);
            free(g);
            return false;
        }
        for (size_t j = 0; j < s->ngroup; j++)
            if (strcmp(s->group[j].name, g[m].name) == 0) { /* its watch stays */
                zkl__cnode_armed(n, &g[m].armed, (enum zkl__armed)s->group[j].armed);
                break;
            }
        m++;
    }
    zkl__watch_group_clear(n);
    s->group = g;
    s->ngroup = m;
    for (size_t i = 0; i < m && n->st == ZKL__N_QUEUED; i++)
        if (g[i].armed == ZKL__ARM_OFF)
            arm_member(n, &g[i]);
    return true;
}

/* ---- answers -------------------------------------------------------------------- */

static zkl__decision ahead_answer(zkl__cnode *n, int slot, int rc)
{
    bool latest = ++n->wdone[slot] == n->wsent[slot];
    /* A walk-back's watch in a long queue: did the next node ahead still
     * exist? (walk.c learns from it) */
    bool probe = latest && slot == 0 && n->walk == ZKL__W_PROBE;
    if (probe) {
        n->walk = ZKL__W_NONE;
        if (rc == ZOK || rc == ZNONODE)
            n->core->walk_pays = rc == ZOK;
    }
    if (!current(n) || n->st != ZKL__N_QUEUED || rc == ZOK)
        return zkl__do(ZKL__S_NONE);
    if (rc == ZNOAUTH) {
        /* Not allowed to read it (another identity's node): no watch on it
         * is allowed either (the server does not report a node the watcher
         * may not read). Wait on the lock path's children instead, quietly,
         * rather than listing in a loop until the deadline. */
        zkl__cnode_reading(n, ZKL__R_KIDS_OFF);
        send_kids(n);
        return zkl__do(ZKL__S_NONE);
    }
    zkl__cnode_armed(n, &n->armed[slot], ZKL__ARM_OFF);
    if (rc == ZNONODE) {
        /* Already gone before the watch was set: the next one ahead, or
         * list again, nothing more (PITFALLS: ZNONODE on the predecessor is
         * no failure). In a long queue, list: a walk back that found the
         * next one gone too, or a listing stale on arrival, says that more
         * may have gone. */
        if (probe || (slot == 0 && n->qlen > AHEAD_SHORT) || !latest)
            return zkl__do(ZKL__S_LIST);
        return zkl__do(walk_back(n, slot));
    }
    if (zkl__zk_conn_error(rc))
        return zkl__do(ZKL__S_STALL);
    return zkl__cnode_do_err(ZKL__S_ABORT, rc); /* retrying cannot cure it */
}

static zkl__decision member_answer(zkl__cnode *n, int rc)
{
    if (!current(n) || n->st != ZKL__N_QUEUED || rc == ZOK)
        return zkl__do(ZKL__S_NONE);
    if (zkl__zk_conn_error(rc))
        return zkl__do(ZKL__S_STALL);
    if (rc == ZNONODE)
        return zkl__do(ZKL__S_LIST); /* gone before the watch was set */
    if (rc == ZNOAUTH) {
        zkl__cnode_reading(n, ZKL__R_KIDS_OFF); /* not allowed to read a member: the children */
        send_kids(n);
        return zkl__do(ZKL__S_NONE);
    }
    return zkl__cnode_do_err(ZKL__S_ABORT, rc);
}

/* The answer to a listing that also set a child watch on the lock path:
 * decided on as any listing (the watched node may be gone already). */
static zkl__decision kids_answer(zkl__cnode *n, int rc, const struct String_vector *kids)
{
    if (!current(n) || n->st != ZKL__N_QUEUED)
        return zkl__do(ZKL__S_NONE);
    if (rc == ZOK && !zkl__decide_too_big(n, kids))
        return zkl__act_listing(n, kids);
    zkl__cnode_reading(n, ZKL__R_KIDS_OFF);
    if (rc == ZOK) {
        n->qlen = (uint32_t)kids->count; /* the caller's text gives the count */
        return zkl__cnode_do_code(ZKL__S_ABORT, ZKL_EQUEUE);
    }
    if (zkl__zk_conn_error(rc))
        return zkl__do(ZKL__S_STALL);
    if (rc == ZNONODE)
        return zkl__do(ZKL__S_REQUEUE);
    return zkl__cnode_do_err(ZKL__S_ABORT, rc);
}

zkl__decision zkl__watch_answer(zkl__cnode *n, const zkl__event *ev)
{
    bool ok;
    switch (ev->type) {
    case ZKL__E_AHEAD:
        return ahead_answer(n, ev->slot, ev->rc);
    case ZKL__E_MEMBER:
        return member_answer(n, ev->rc);
    case ZKL__E_KIDS:
        return kids_answer(n, ev->rc, ev->kids);
    case ZKL__E_OWN: {
        bool blind = n->own == ZKL__OWN_BLIND;
        zkl__decision d = own_answer(n, ev->rc, false, &ok);
        /* Written to before this watch was set (another client's request
         * can overtake it): read it as if the watch had fired. Unless its
         * read was just refused: that version counts as read. */
        if (ok && ev->version > n->own_version) {
            if (blind)
                n->own_version = ev->version;
            else
                own_changed(n);
        }
        return d;
    }
    case ZKL__E_OWN_DATA:
        return own_data(n, ev);
    default:
        return zkl__do(ZKL__S_NONE);
    }
}

/* ---- watch events ---------------------------------------------------------------- */

/* An event on our own node: deleted while we did not delete it, someone
 * else did (or the lock path went); changed, someone wrote into it. */
static zkl__decision own_event(zkl__cnode *n, int type)
{
    zkl__cnode_own(n, ZKL__OWN_OFF);
    bool live = n->st == ZKL__N_QUEUED || n->st == ZKL__N_HELD;
    if (live)
        n->core->stats.watch_events++; /* our own delete's event is no wake-up */
    if (type == ZKL__WT_DELETED)
        return zkl__do(ZKL__S_OWN_GONE);
    if (type == ZKL__WT_CHANGED && live)
        own_changed(n);
    return zkl__do(ZKL__S_NONE);
}

/* Whether the watched node `name` is of the node's own kind. */
static bool same_kind(const zkl__cnode *n, const char *name)
{
    zkl__entry e;
    return zkl__entry_parse(name, &e) == 0 && zkl__entry_is(&e, zkl__cnode_kind(n));
}

static zkl__decision ahead_event(zkl__cnode *n, int slot, int type)
{
    zkl__cnode_armed(n, &n->armed[slot], ZKL__ARM_OFF);
    n->core->stats.watch_events++;
    char nm[ZKL__NAME_BUF];
    if (type == ZKL__WT_CHANGED) /* data changed: watch on */
        return zkl__watch_arm(n, slot, zkl__watch_name(n, slot, nm))
                   ? zkl__do(ZKL__S_NONE)
                   : zkl__cnode_do_code(ZKL__S_ABORT, ZKL_ENOMEM);
    if (type != ZKL__WT_DELETED)
        return zkl__do(ZKL__S_LIST);
    if (slot == 0 && n->pred == ZKL__PRED_FIRST && n->pol->handoff && n->own == ZKL__OWN_SET)
        /* The node we watch was first in our latest listing, and every
         * node created since sorts after ours: we are first now, without
         * listing again (PROTOCOL §4). Our own node still exists: its
         * watch was set before the one on the node ahead, so its deletion
         * would have been told first. */
        return zkl__do(ZKL__S_HOLD);
    if (n->listing == ZKL__L_IDLE)
        return zkl__do(walk_back(n, slot)); /* the next one ahead, or hold */
    const char *name = zkl__watch_name(n, slot, nm);
    struct zkl__cside *s;
    char *copy;
    if (n->pol->handoff && same_kind(n, name) && (s = zkl__core_side(n)) != NULL &&
        (copy = zkl__core_strdup(n->core, name)) != NULL) {
        /* A listing is already in flight. Sent before this deletion, it
         * may still show the node: the decision skips it then, so that
         * answer serves and no second listing is needed (the node's name,
         * with its sequence, never comes back). */
        free(s->gone[slot]);
        s->gone[slot] = copy;
        unwatch(n, slot);
        return zkl__do(ZKL__S_NONE);
    }
    return zkl__do(ZKL__S_LIST);
}

zkl__decision zkl__watch_event(zkl__cnode *n, const zkl__event *ev)
{
    if (!current(n))
        return zkl__do(ZKL__S_NONE);
    const struct zkl__target *t = ev->target;
    if (n->own != ZKL__OWN_OFF && zkl__core_is_own(n, t))
        return own_event(n, ev->wtype);
    if (n->st != ZKL__N_QUEUED)
        return zkl__do(ZKL__S_NONE); /* done, or held watching only itself */
    if (n->reading == ZKL__R_KIDS_SET && ev->wtype == ZKL__WT_CHILD && t->self == n->dir) {
        /* A waiter that may not read the node ahead: a child came or went;
         * list again, watching on. */
        zkl__cnode_reading(n, ZKL__R_KIDS_OFF);
        n->core->stats.watch_events++;
        send_kids(n);
        return zkl__do(ZKL__S_NONE);
    }
    if (t->dir != n->dir)
        return zkl__do(ZKL__S_NONE); /* not under our lock path */
    for (int slot = 0; slot < 2; slot++) {
        if (slot == 0 && n->wpeer.seq >= 0 ? zkl__core_is_peer(n, t, &n->wpeer)
                                           : zkl__core_is_named(n, t, n->watch[slot]))
            return ahead_event(n, slot, ev->wtype);
    }
    for (size_t i = 0; n->side && i < n->side->ngroup; i++) {
        struct zkl__gwatch *g = &n->side->group[i];
        if (!zkl__core_is_named(n, t, g->name))
            continue;
        zkl__cnode_armed(n, &g->armed, ZKL__ARM_OFF);
        n->core->stats.watch_events++;
        if (ev->wtype != ZKL__WT_CHANGED)
            return zkl__do(ZKL__S_LIST);
        arm_member(n, g); /* data changed: watch on */
        return zkl__do(ZKL__S_NONE);
    }
    return zkl__do(ZKL__S_NONE);
}
