/* What a listing's answer does to a node: decide.c says what (a plan), this
 * carries it out (watches armed, a waiter woken, sub-states written, the
 * recovery's check of a node found by its uuid), in that order, as one. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

zkl__decision zkl__act_listed(zkl__cnode *n, int rc, const struct String_vector *kids)
{
    bool again = n->listing == ZKL__L_OUT_AGAIN;
    zkl__cnode_listing(n, ZKL__L_IDLE);
    if (!current(n) || (n->st != ZKL__N_QUEUED && n->st != ZKL__N_RECOVER))
        return zkl__do(ZKL__S_NONE); /* stale, or the pipelined listing of a failed create */
    bool queued = n->st == ZKL__N_QUEUED;
    if (rc == ZOK && zkl__decide_too_big(n, kids)) { /* not found: the session's end takes it */
        n->qlen = (uint32_t)kids->count;                /* the caller's text gives the count */
        return zkl__cnode_do_code(queued ? ZKL__S_ABORT : ZKL__S_FAIL, ZKL_EQUEUE);
    }
    if (rc == ZOK)
        return again && queued ? zkl__do(ZKL__S_LIST) : zkl__act_listing(n, kids);
    if (zkl__zk_conn_error(rc))
        return zkl__do(ZKL__S_STALL);
    if (rc == ZNONODE) {
        /* The lock path itself is gone: in recovery, our create never
         * happened; queued, our node went with it. */
        if (abandoned(n))
            return zkl__do(ZKL__S_GONE);
        return zkl__do(queued ? ZKL__S_REQUEUE : ZKL__S_CREATE);
    }
    /* e.g. READ refused; in recovery the lost create may have made a node */
    return zkl__cnode_do_err(queued || rc == ZNOAUTH ? ZKL__S_ABORT : ZKL__S_FAIL, rc);
}

/* ---- recovery: the answer to a create was lost ---------------------------- */

/* A node with our uuid was listed: check who owns it; the check also
 * watches it, as our own node is watched. */
static zkl__decision recover_found(zkl__cnode *n, const char *name)
{
    zkl__core_name(n, zkl__core_seq(name)); /* recoverable(): one of our names */
    char buf[ZKL__MAX_PATH + 96];
    zkl__act a = {.type = ZKL__A_FIND, .path = zkl__core_full(n, name, buf)};
    int rc = zkl__core_send(n, &a);
    if (rc == ZOK)
        return zkl__do(ZKL__S_NONE);
    if (zkl__zk_conn_error(rc)) {
        n->stalled = true;
        return zkl__do(ZKL__S_NONE);
    }
    return zkl__cnode_do_err(ZKL__S_FAIL, rc);
}

zkl__decision zkl__act_found(zkl__cnode *n, const zkl__event *ev)
{
    if (!current(n) || n->st != ZKL__N_RECOVER)
        return zkl__do(ZKL__S_NONE);
    if (ev->rc == ZOK && ev->owner != n->core->sid) {
        /* Our uuid, but not our session's: planted by someone else (our
         * attempt lives in one session). Neither adopt it nor delete it
         * (PITFALLS: adopting a doomed node); look on for the real one. */
        struct zkl__cside *s = zkl__core_side(n);
        char own[ZKL__NAME_BUF];
        const char *name = zkl__core_own(n, own);
        char **sk = s ? zkl__core_realloc(n->core, s->skip, (s->nskip + 1) * sizeof *sk) : NULL;
        if (sk != NULL)
            s->skip = sk;
        bool kept = sk != NULL && name != NULL &&
                    (sk[s->nskip] = zkl__core_strdup(n->core, name)) != NULL;
        if (kept)
            s->nskip++;
        zkl__core_unname(n);
        return kept ? zkl__do(ZKL__S_LIST) : zkl__cnode_do_code(ZKL__S_FAIL, ZKL_ENOMEM);
    }
    if (ev->rc == ZOK) {
        n->token = ev->czxid;
        n->core->stats.recovered++;
        /* The exists call left a watch on it: our own node's watch. */
        zkl__cnode_own(n, ZKL__OWN_SET);
        zkl__core_route(n, ZKL__RT_WATCHING);
        if (abandoned(n))
            return zkl__do(ZKL__S_DELETE);
        return zkl__do(ZKL__S_ADOPT);
    }
    if (ev->rc == ZNONODE) {
        zkl__core_unname(n);
        return zkl__do(abandoned(n) ? ZKL__S_GONE : ZKL__S_CREATE);
    }
    if (zkl__zk_conn_error(ev->rc))
        return zkl__do(ZKL__S_STALL);
    return zkl__cnode_do_err(ZKL__S_FAIL, ev->rc);
}

/* ---- the plan, carried out -------------------------------------------------- */

static zkl__decision carry(zkl__cnode *n, const zkl__entry *cs, size_t k, size_t self,
                           size_t older, size_t total)
{
    zkl__plan p = zkl__decide_on(n, cs, k, self);
    if (p.act == ZKL__PL_FIND)
        return recover_found(n, cs[self].name);
    if (p.answered) {
        n->patience = ZKL__P_ANSWERED;
        zkl__core_tell(n, ZKL__A_WAKE);
    }
    if (p.listed) {
        n->walk = ZKL__W_NONE;
        n->core->walk_pays = !p.held;
    }
    switch (p.act) {
    case ZKL__PL_HOLD:
        if (total == 1)
            zkl__alone_seen(n, cs[0].seq);
        break;
    case ZKL__PL_GROUP:
        n->pred = ZKL__PRED_NONE;
        zkl__walk_clear(n);
        zkl__watch_arm(n, 0, NULL);
        zkl__watch_arm(n, 1, NULL);
        if (!zkl__watch_group(n, cs, k, self))
            return zkl__cnode_do_code(ZKL__S_ABORT, ZKL_ENOMEM);
        break;
    case ZKL__PL_WATCH: {
        size_t w = p.w;
        n->pred = p.first ? ZKL__PRED_FIRST : ZKL__PRED_NONE;
        n->walk = ZKL__W_NONE;
        zkl__walk_set(n, cs, w, total, older);
        zkl__watch_group_clear(n);
        /* The nodes ahead kept end with cs[w], read into a peer already. */
        bool armed = n->nahead > 0
                         ? zkl__watch_arm_peer(n, cs[w].name, &n->ahead[n->nahead - 1])
                         : zkl__watch_arm(n, 0, cs[w].name);
        if (!armed || !zkl__watch_arm(n, 1, n->prefetch && w > 0 ? cs[w - 1].name : NULL))
            return zkl__cnode_do_code(ZKL__S_ABORT, ZKL_ENOMEM);
        break;
    }
    default:
        break;
    }
    return p.d;
}

zkl__decision zkl__act_listing(zkl__cnode *n, const struct String_vector *kids)
{
    size_t cnt = kids ? (size_t)kids->count : 0;
    zkl__entry stackbuf[64], *cs = stackbuf, me;
    size_t self = 0, older = 0, total = 0;
    const char *wrapped = zkl__decide_wrapped(n, kids);
    if (wrapped != NULL) {
        /* as a create answered with that name: delete it, and fail */
        zkl__step_set_err(n, ZKL_EZK, ZAPIERROR);
        return (zkl__decision){ZKL__S_DELETE, 0, 0, wrapped};
    }
    char own[ZKL__NAME_BUF];
    bool near = zkl__decide_nearest_only(n, cnt) && zkl__entry_parse(zkl__core_own(n, own), &me) == 0;
    if (!near && cnt > 64 && (cs = zkl__core_malloc(n->core, cnt * sizeof *cs)) == NULL)
        return zkl__cnode_do_code(n->st == ZKL__N_QUEUED ? ZKL__S_ABORT : ZKL__S_FAIL, ZKL_ENOMEM);
    size_t k = zkl__decide_contenders(n, kids, near ? &me : NULL, cs, &self, &older, &total);
    zkl__decision d = carry(n, cs, k, self, older, total);
    if (cs != stackbuf)
        free(cs);
    return d;
}
