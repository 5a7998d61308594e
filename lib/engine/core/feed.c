/* The core of one client, fed by its shell: the session and the
 * connection as its nodes see them, watch events routed to the nodes they
 * may be for, a shared listing's answer, the keeper's tick, and the
 * client's end. Each reaches a node
 * through its one entry (zkl__cnode_on); nothing here changes a node. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

void zkl__core_free(struct zkl__core *k)
{
    if (k == NULL)
        return;
    zkl__alone_forget(k);
    zkl__joint_drop_all(k);
    zkl__core_release(k);
}

void zkl__core_session(struct zkl__core *k, uint64_t gen, int64_t sid, bool closing, int64_t now)
{
    bool ended = gen != k->gen || (closing && !k->closing);
    k->now = now;
    k->gen = gen;
    k->sid = sid;
    k->closing = closing;
    if (closing)
        k->connected = false;
    if (!ended)
        return;
    /* Every node of the old session went with it: tell each. */
    zkl__alone_forget(k);
    for (zkl__cnode *n = k->live, *next; n; n = next) {
        next = n->next;
        zkl__cnode_on(n, &(zkl__event){.type = ZKL__E_SESSION_END, .now = now});
    }
}

void zkl__core_connection(struct zkl__core *k, bool up, int64_t now)
{
    k->now = now;
    k->connected = up && !k->closing;
    if (!k->connected)
        return;
    /* Events may have been missed while disconnected: what the client
     * knew of its lock paths is no proof any more; and what a lost
     * connection stalled is done again. */
    zkl__alone_invalidate(k, NULL);
    for (zkl__cnode *n = k->live, *next; n; n = next) {
        next = n->next;
        zkl__cnode_on(n, &(zkl__event){.type = ZKL__E_CONNECTED, .now = now});
    }
}

int64_t zkl__core_tick(struct zkl__core *k, int64_t now)
{
    k->now = now;
    /* Each node through its one entry; a node leaves the list as its
     * delete goes out, and only then. */
    for (zkl__cnode *n = k->backoff, *after; n; n = after) {
        after = n->rnext;
        zkl__cnode_on(n, &(zkl__event){.type = ZKL__E_RETRY, .now = now});
    }
    int64_t next = 0;
    for (const zkl__cnode *n = k->backoff; n; n = n->rnext)
        if (n->st == ZKL__N_BACKOFF && (next == 0 || n->side->retry_at < next))
            next = n->side->retry_at;
    return next;
}

void zkl__core_drop_nodes(struct zkl__core *k)
{
    while (k->live) /* each through its one entry, which frees it */
        zkl__cnode_on(k->live, &(zkl__event){.type = ZKL__E_DROP, .now = k->now});
}

/* Take a watch event's path apart (see struct zkl__target). */
void zkl__core_target(const struct zkl__core *k, const char *path, struct zkl__target *t)
{
    *t = (struct zkl__target){.seq = -1};
    zkl__core_dirs_of(k, path, &t->dir, &t->self, &t->name);
    zkl__entry e;
    /* The uuid is compared, not read, and only with a node whose sequence
     * it has (names.c): most events are for one node of many. */
    if (strncmp(t->name, "_c_", 3) == 0 && strlen(t->name) > 40 && t->name[39] == '-' &&
        zkl__entry_parse(t->name, &e) == 0 && e.seq <= INT32_MAX) {
        t->seq = (int32_t)e.seq;
        t->uuid = t->name + 3;
        t->kind = e.kind;
        t->kindlen = strlen(e.kind) - 10;
    }
}

void zkl__core_watch_event(struct zkl__core *k, int wtype, const char *path, int64_t now)
{
    struct zkl__target t;
    zkl__core_target(k, path, &t);
    zkl__event ev = {.type = ZKL__E_WATCH, .wtype = wtype, .name = path, .target = &t, .now = now};
    k->now = now;
    zkl__alone_event(k, path);
    /* Nodes that join the watching list meanwhile are not visited: the
     * event was not for a watch they had. */
    zkl__cnode *first = k->watching;
    zkl__cnode *held = zkl__core_held_find(k, path, &t);
    if (held != NULL)
        zkl__cnode_on(held, &ev);
    for (zkl__cnode *n = first, *next; n; n = next) {
        next = n->rnext;
        zkl__cnode_on(n, &ev);
    }
}

/* A shared listing's answer: to every node it serves, by its one entry, as
 * its own listing's answer would be. */
void zkl__joint_on(struct zkl__joint *j, int rc, const struct String_vector *kids, int64_t now)
{
    zkl__cnode **ns, **unsent;
    size_t k, nu;
    int sent;
    bool again = zkl__joint_turn(j, &ns, &k, &unsent, &nu, &sent);
    for (size_t i = 0; i < nu; i++) /* their listing could not be sent */
        zkl__cnode_on(unsent[i], &(zkl__event){.type = ZKL__E_UNSHARED, .rc = sent,
                                               .now = unsent[i]->core->now});
    free(unsent);
    for (size_t i = 0; i < k; i++) {
        /* One that listed anew since this one went out (a recovery after a
         * reconnection, behind its sync): that listing tells, not this
         * one, which a lagging server may have answered. */
        bool outrun = again && zkl__joint_asked_again(j, ns[i]);
        zkl__cnode_on(ns[i], &(zkl__event){.type = outrun ? ZKL__E_OUTRUN : ZKL__E_LISTED,
                                           .rc = rc, .kids = kids,
                                           .now = outrun ? ns[i]->core->now : now});
    }
    free(ns);
}
