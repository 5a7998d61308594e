/* The core's sink and the completions that answer it: each action the
 * core asks for becomes a zoo_a* call on the session's live handle (or a
 * wake-up, a hook queued, a node freed), and each completion becomes the
 * node's event, on ZooKeeper's completion thread with c->mu taken. Nothing
 * here decides anything. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* The watcher context of node watches: the client's id (a watch outlives
 * the objects that armed it; the client is looked up by id). */
static void *watch_ctx(const zkl_client *c)
{
    return (void *)(uintptr_t)c->id;
}

void zkl__shell_wake(zkl__node *n)
{
    if (n->wake != NULL)
        n->wake(n, n->wake_arg);
    else if (n->cv)
        pthread_cond_signal(n->cv);
}

/* ---- answers ------------------------------------------------------------------ */

/* Remember a lock parent this node's creates made (the path without the
 * chroot, as the server's answer names it): an acquire the server then
 * refuses removes it. Without memory it is not remembered, and stays. */
static void made_add(zkl__made *m, const char *path)
{
    char **p = realloc(m->paths, (m->n + 1) * sizeof *p);
    if (p == NULL)
        return;
    m->paths = p;
    if ((p[m->n] = strdup(path)) != NULL)
        m->n++;
}

void zkl__made_free(zkl__made *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->paths[i]);
    free(m->paths);
    *m = (zkl__made){0};
}

/* Hand an answer to its node: on ZooKeeper's completion thread, c->mu taken
 * for the call. The node lives until its answers are in (the core counts
 * them), so n is valid here; it may be freed by the call. */
static void answer(const void *data, zkl__event *ev)
{
    zkl__node *n = (zkl__node *)data;
    zkl_client *c = ZKL__NODE_CLIENT(n);
    pthread_mutex_lock(&c->mu);
    ev->now = zkl__now_ns();
    /* Past the loss rule's instant the answer may be of a session the
     * server has ended: the session is given up first, and the core takes
     * it as one of an ended session. */
    zkl__keeper_give_up_due(c, ev->now);
    /* Whose the node is, as the server says: a latch leads only on a node
     * of its current session (the core judges by its own rule). */
    if ((ev->type == ZKL__E_CREATED || ev->type == ZKL__E_FOUND) && ev->rc == ZOK)
        n->owner = ev->owner;
    if (ev->type == ZKL__E_PARENT && ev->rc == ZOK && ev->name != NULL)
        made_add(&n->made, ev->name);
    zkl__cnode_on(&n->cn, ev);
    pthread_mutex_unlock(&c->mu);
}

static void create_done(int rc, const char *name, const struct Stat *st, const void *data)
{
    /* The core keeps the node's name, not its path. */
    const char *slash = rc == ZOK && name ? strrchr(name, '/') : NULL;
    answer(data, &(zkl__event){.type = ZKL__E_CREATED,
                               .rc = rc,
                               .name = slash ? slash + 1 : name,
                               .owner = rc == ZOK && st ? st->ephemeralOwner : 0,
                               .czxid = rc == ZOK && st ? st->czxid : 0});
}

static void parent_done(int rc, const char *name, const void *data)
{
    answer(data, &(zkl__event){.type = ZKL__E_PARENT, .rc = rc, .name = name});
}

static void list_done(int rc, const struct String_vector *kids, const void *data)
{
    answer(data, &(zkl__event){.type = ZKL__E_LISTED, .rc = rc, .kids = kids});
}

static void joint_done(int rc, const struct String_vector *kids, const void *data)
{
    struct zkl__joint *j = (struct zkl__joint *)data;
    zkl__node *first = (zkl__node *)zkl__joint_first(j);
    zkl_client *c = ZKL__NODE_CLIENT(first); /* a joint serves one node at least */
    pthread_mutex_lock(&c->mu);
    int64_t now = zkl__now_ns();
    zkl__keeper_give_up_due(c, now); /* as in answer() */
    zkl__joint_on(j, rc, kids, now);
    pthread_mutex_unlock(&c->mu);
}

static void sync_done(int rc, const char *value, const void *data)
{
    (void)value;
    answer(data, &(zkl__event){.type = ZKL__E_SYNCED, .rc = rc});
}

static void ahead_done(int rc, int slot, const void *data)
{
    answer(data, &(zkl__event){.type = ZKL__E_AHEAD, .rc = rc, .slot = slot});
}

static void ahead0_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    (void)v, (void)len, (void)st;
    ahead_done(rc, 0, data);
}

static void ahead1_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    (void)v, (void)len, (void)st;
    ahead_done(rc, 1, data);
}

static void member_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    (void)v, (void)len, (void)st;
    answer(data, &(zkl__event){.type = ZKL__E_MEMBER, .rc = rc});
}

static void kids_done(int rc, const struct String_vector *kids, const void *data)
{
    answer(data, &(zkl__event){.type = ZKL__E_KIDS, .rc = rc, .kids = kids});
}

static void own_done(int rc, const struct Stat *st, const void *data)
{
    answer(data, &(zkl__event){.type = ZKL__E_OWN,
                               .rc = rc,
                               .version = rc == ZOK && st ? st->version : -1});
}

static void own_data_done(int rc, const char *v, int len, const struct Stat *st, const void *data)
{
    answer(data, &(zkl__event){.type = ZKL__E_OWN_DATA,
                               .rc = rc,
                               .data = v,
                               .len = len,
                               .version = rc == ZOK && st ? st->version : -1});
}

static void found_done(int rc, const struct Stat *st, const void *data)
{
    answer(data, &(zkl__event){.type = ZKL__E_FOUND,
                               .rc = rc,
                               .owner = rc == ZOK && st ? st->ephemeralOwner : 0,
                               .czxid = rc == ZOK && st ? st->czxid : 0});
}

static void dir_done(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    answer(data, &(zkl__event){.type = ZKL__E_DIR, .rc = rc});
}

static void delete_done(int rc, const void *data)
{
    answer(data, &(zkl__event){.type = ZKL__E_DELETED, .rc = rc});
}

/* The completions of the watched reads, by action: one ZooKeeper call
 * each, told apart by the event their answer becomes. */
static const data_completion_t data_done[ZKL__A_WAKE] = {
    [ZKL__A_WATCH_MEMBER] = member_done,
    [ZKL__A_READ_OWN] = own_data_done,
};
static const stat_completion_t stat_done[ZKL__A_WAKE] = {
    [ZKL__A_WATCH_OWN] = own_done,
    [ZKL__A_FIND] = found_done,
    [ZKL__A_WATCH_DIR] = dir_done,
};

/* ---- the sink --------------------------------------------------------------------- */

/* Things that send nothing. */
static int tell(struct zkl__engine *e, const zkl__act *a)
{
    zkl__node *n = (zkl__node *)a->n;
    switch (a->type) {
    case ZKL__A_WAKE:
        zkl__shell_wake(n);
        break;
    case ZKL__A_LOST:
        zkl__metrics_lost(e->metrics, &n->meter);
        zkl__engine_notify(n, ZKL__NOTIFY_LOST);
        break;
    case ZKL__A_REVOKE:
        zkl__engine_notify(n, ZKL__NOTIFY_REVOKE);
        break;
    case ZKL__A_KICK:
        pthread_cond_broadcast(&e->c->cv); /* the keeper ticks the core */
        break;
    case ZKL__A_BROKEN:
        /* A bug of the engine's: counted, and its hold (if any) is told
         * lost by the core; the release says why. */
        zkl__metrics_fault(&e->metrics, n ? &n->meter : NULL);
        if (n != NULL)
            n->broken = true;
        break;
    case ZKL__A_FREE: {
        zkl_client *c = ZKL__NODE_CLIENT(n);
        free(n->path);
        free(n->hooks);
        free(n->ident);
        zkl__made_free(&n->made);
        free(n);
        /* Only a closing client waits for nodes to go; otherwise this would
         * wake the keeper thread on every release, for nothing. */
        if (c->closing)
            pthread_cond_broadcast(&c->cv);
        break;
    }
    default:
        break;
    }
    return 0;
}

int zkl__shell_act(void *ctx, const zkl__act *a)
{
    struct zkl__engine *e = ctx;
    zkl_client *c = e->c;
    if (a->type >= ZKL__A_WAKE)
        return tell(e, a);
    zkl__node *n = (zkl__node *)a->n;
    uint64_t gen = a->j ? zkl__joint_gen(a->j) : n->cn.gen;
    /* Sends go on the live handle only, for nodes of its session: c->mu is
     * held, and the keeper takes it before it swaps or closes the handle. */
    zhandle_t *zh = c->zh;
    if (zh == NULL || gen != c->gen || c->closing)
        return ZINVALIDSTATE;
    c->stats.requests++;
    if (a->j != NULL)
        n = (zkl__node *)zkl__joint_first(a->j);
    zkl__metrics_sent(e->metrics, n ? &n->meter : NULL);
    const struct ACL_vector *acl = zkl__options_acl(c);
    watcher_fn w = zkl__client_watcher_fn();
    void *wc = watch_ctx(c);
    const void *d = a->n;
    if (a->type == ZKL__A_WATCH_AHEAD || a->type == ZKL__A_WATCH_MEMBER ||
        a->type == ZKL__A_WATCH_KIDS)
        n->meter.waited = true; /* the policy said "wait": a handoff, if it holds */
    switch (a->type) {
    case ZKL__A_CREATE: {
        const char *ident = n->ident ? n->ident : c->ident;
        return c->zapi->acreate2(zh, a->path, ident, (int)strlen(ident), acl, a->mode,
                                 create_done, d);
    }
    case ZKL__A_PARENT:
        return c->zapi->acreate(zh, a->path, "", 0, acl,
                                c->container_parents ? ZOO_CONTAINER : ZOO_PERSISTENT,
                                parent_done, d);
    case ZKL__A_LIST:
        if (a->j != NULL)
            return c->zapi->aget_children(zh, a->path, 0, joint_done, a->j);
        return c->zapi->aget_children(zh, a->path, 0, list_done, d);
    case ZKL__A_SYNC:
        return c->zapi->async(zh, a->path, sync_done, d);
    case ZKL__A_WATCH_AHEAD:
        return c->zapi->awget(zh, a->path, w, wc, a->slot == 0 ? ahead0_done : ahead1_done, d);
    case ZKL__A_WATCH_MEMBER:
    case ZKL__A_READ_OWN:
        return c->zapi->awget(zh, a->path, w, wc, data_done[a->type], d);
    case ZKL__A_WATCH_KIDS:
        return c->zapi->awget_children(zh, a->path, w, wc, kids_done, d);
    case ZKL__A_WATCH_OWN:
    case ZKL__A_FIND:
    case ZKL__A_WATCH_DIR:
        return c->zapi->awexists(zh, a->path, w, wc, stat_done[a->type], d);
    case ZKL__A_DELETE:
        return c->zapi->adelete(zh, a->path, -1, delete_done, d);
    default:
        return ZBADARGUMENTS;
    }
}
