/* The queue's order: a listing of the lock path comes in; find our node
 * (or, after a lost create's answer, look for it by its uuid and check who
 * owns it), ask the recipe's policy whether it holds, and if not whom to
 * watch. Returns what to do; cnode.c does it. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

/* Whether a listing is larger than a response may be (the server's
 * jute.maxbuffer, zkl_client_opts_set_max_request): a client that enforces
 * it (Curator's) cannot wait in this queue, and a longer one may not come
 * back at all. The contender leaves with ZKL_EQUEUE rather than wait on. */
bool zkl__decide_too_big(zkl__cnode *n, const struct String_vector *kids)
{
    long b = 4, max = n->core->max_request;
    for (int i = 0; kids && i < kids->count && b <= max; i++)
        b += 4 + (long)strlen(kids->data[i]);
    if (b > max) /* the caller's text gives the count */
        n->qlen = (uint32_t)kids->count;
    return b > max;
}

zkl__decision zkl__decide_listed(zkl__cnode *n, int rc, const struct String_vector *kids)
{
    bool again = n->listing == ZKL__L_OUT_AGAIN;
    n->listing = ZKL__L_IDLE;
    if (!current(n) || (n->st != ZKL__N_QUEUED && n->st != ZKL__N_RECOVER))
        return zkl__do(ZKL__S_NONE); /* stale, or the pipelined listing of a failed create */
    bool queued = n->st == ZKL__N_QUEUED;
    if (rc == ZOK && zkl__decide_too_big(n, kids)) /* not found: the session's end takes it */
        return zkl__cnode_do_code(queued ? ZKL__S_ABORT : ZKL__S_FAIL, ZKL_EQUEUE);
    if (rc == ZOK)
        return again && queued ? zkl__do(ZKL__S_LIST) : zkl__decide(n, kids);
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

/* Whether `name` may be the node of our lost create: our uuid, our kind,
 * a sequence (or our fixed one), and not already found to be someone
 * else's. Only the owner's check (zkl__decide_found) makes it ours. */
static bool recoverable(const zkl__cnode *n, const char *name)
{
    size_t kl = strlen(zkl__cnode_kind(n));
    char uuid[37];
    zkl__uuid_text(n->uuid, uuid);
    if (!zkl__name_has_uuid(name, uuid) || strlen(name) != 40 + kl + 10 ||
        memcmp(name + 40, zkl__cnode_kind(n), kl) != 0)
        return false;
    for (size_t i = 40 + kl; name[i]; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    if (n->side && n->side->fixed_seq[0] && strcmp(name + 40 + kl, n->side->fixed_seq) != 0)
        return false;
    for (size_t i = 0; n->side && i < n->side->nskip; i++)
        if (strcmp(n->side->skip[i], name) == 0)
            return false;
    return true;
}

/* A lost create's node made past the 32-bit wrap of the parent's counter:
 * our uuid and kind, then a negative sequence ("-2147483647", the server's
 * %010d of a signed int), a name the node cannot keep. NULL if none. */
static const char *wrapped_own(const zkl__cnode *n, const struct String_vector *kids)
{
    size_t kl = strlen(zkl__cnode_kind(n));
    char uuid[37];
    zkl__uuid_text(n->uuid, uuid);
    const char *wrapped = NULL;
    for (int i = 0; kids && i < kids->count; i++) {
        const char *name = kids->data[i];
        size_t len = strlen(name);
        if (!zkl__name_has_uuid(name, uuid) || len < 40 + kl + 1 ||
            memcmp(name + 40, zkl__cnode_kind(n), kl) != 0)
            continue;
        const char *seq = name + 40 + kl;
        size_t digits = strspn(seq, "0123456789");
        /* A name of ours with a sequence that fits is listed too: the lost
         * create made that one (recovered as such), and the wrapped one
         * is someone else's with our uuid, not ours to delete. */
        if (digits > 0 && digits == len - 40 - kl)
            return NULL;
        if (seq[0] == '-' && len > 40 + kl + 1 && strspn(seq + 1, "0123456789") == len - 40 - kl - 1)
            wrapped = name;
    }
    return wrapped;
}

void zkl__decide_skip_clear(zkl__cnode *n)
{
    if (n->side == NULL)
        return;
    for (size_t i = 0; i < n->side->nskip; i++)
        free(n->side->skip[i]);
    free(n->side->skip);
    n->side->skip = NULL;
    n->side->nskip = 0;
}

/* A node with our uuid was listed: check who owns it; the check also
 * watches it, as our own node is watched. */
static zkl__decision recover_found(zkl__cnode *n, const char *name)
{
    n->seq = zkl__core_seq(name); /* recoverable(): one of our names */
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

zkl__decision zkl__decide_found(zkl__cnode *n, const zkl__event *ev)
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

/* ---- the decision ------------------------------------------------------------- */

static int entry_cmp(const void *a, const void *b)
{
    const zkl__entry *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Whether `name` is a node whose deletion was already seen: a listing sent
 * before that deletion may still show it, and it never comes back. */
static bool seen_gone(const zkl__cnode *n, const char *name)
{
    for (int i = 0; n->side && i < 2; i++)
        if (n->side->gone[i] && strcmp(n->side->gone[i], name) == 0)
            return true;
    return false;
}

void zkl__decide_gone_clear(zkl__cnode *n)
{
    for (int i = 0; n->side && i < 2; i++) {
        free(n->side->gone[i]);
        n->side->gone[i] = NULL;
    }
}

/* How many nodes ahead of ours a long listing keeps (nearest_ahead). */
#define NEAREST (AHEAD_SHORT + 1)

/* Whether n decides on the NEAREST nodes ahead of its own alone, in a
 * listing of cnt children. A kind that hands off looks at nothing else: it
 * holds when no node is ahead and watches the nearest ones. Picking those
 * out of a long listing takes one pass, where sorting all of it cost
 * O(cnt log cnt) per handoff: most of the client's time in a queue of
 * thousands. */
static bool nearest_only(const zkl__cnode *n, size_t cnt)
{
    return cnt > 4 * AHEAD_SHORT && n->pol->handoff && n->pol->watch_group == NULL &&
           n->st == ZKL__N_QUEUED && n->seq >= 0 && !(n->side && n->side->fixed_seq[0]);
}

size_t zkl__decide_nearest(const struct String_vector *kids, const zkl__entry *me, size_t m,
                            bool (*skip)(const char *name, const void *arg), const void *arg,
                            zkl__entry *cs, size_t *self, size_t *older, size_t *total)
{
    size_t kept = 0, ahead = 0, all = 0;
    bool found = false;
    for (int i = 0; kids && i < kids->count; i++) {
        const char *name = kids->data[i];
        zkl__entry e;
        if (zkl__entry_parse(name, &e) != 0 || (skip && skip(name, arg)))
            continue;
        all++;
        if (e.seq > me->seq)
            continue; /* behind ours */
        if (strcmp(name, me->name) == 0) {
            found = true;
            continue;
        }
        if (entry_cmp(&e, me) > 0)
            continue;
        ahead++;
        if (kept == m) {
            if (m == 0 || entry_cmp(&e, &cs[0]) < 0)
                continue; /* older than every one kept */
            memmove(cs, cs + 1, --kept * sizeof *cs);
        }
        size_t j = kept++;
        for (; j > 0 && entry_cmp(&cs[j - 1], &e) > 0; j--)
            cs[j] = cs[j - 1];
        cs[j] = e;
    }
    *older = ahead - kept;
    *total = all;
    *self = kept;
    if (found)
        cs[kept++] = *me;
    return kept;
}

static bool skip_gone(const char *name, const void *arg)
{
    return seen_gone(arg, name);
}

/* The contenders of a listing in order, in cs: the NEAREST ahead of ours
 * and ours if `me` (nearest_only() said so), else all of them sorted (cs
 * has room for kids->count). *self is our index (k if not listed). */
static size_t contenders(const zkl__cnode *n, const struct String_vector *kids,
                         const zkl__entry *me, zkl__entry *cs, size_t *self, size_t *older,
                         size_t *total)
{
    size_t cnt = kids ? (size_t)kids->count : 0, k = 0;
    bool gone = n->side && (n->side->gone[0] || n->side->gone[1]);
    *older = 0;
    if (me != NULL)
        return zkl__decide_nearest(kids, me, NEAREST, gone ? skip_gone : NULL, n, cs, self, older,
                                    total);
    for (size_t i = 0; i < cnt; i++)
        if (zkl__entry_parse(kids->data[i], &cs[k]) == 0 && !(gone && seen_gone(n, kids->data[i])))
            k++;
    qsort(cs, k, sizeof *cs, entry_cmp);
    *self = k;
    char own[ZKL__NAME_BUF];
    const char *name = zkl__core_own(n, own);
    for (size_t i = 0; i < k; i++) {
        if (name ? strcmp(cs[i].name, name) == 0 : recoverable(n, cs[i].name)) {
            *self = i;
            break;
        }
    }
    *total = k;
    return k;
}

/* A node with a given sequence (a downgrade) sorts level with its writer,
 * ahead of every waiter, which is safe only while the writer's node is
 * there: then the create came before the writer's delete, and whoever
 * that delete wakes lists after it and sees this node. A listing after
 * the create without the writer's node (someone else deleted it first)
 * means a waiter may hold already without knowing of this node. */
static bool paired(const zkl__entry *cs, size_t k, size_t self)
{
    return (self > 0 && cs[self - 1].seq == cs[self].seq) ||
           (self + 1 < k && cs[self + 1].seq == cs[self].seq);
}

static zkl__decision decide_on(zkl__cnode *n, const zkl__entry *cs, size_t k, size_t self,
                               size_t older, size_t total)
{
    if (n->st == ZKL__N_RECOVER) {
        if (self < k)
            return recover_found(n, cs[self].name);
        /* The lost create never happened. */
        return zkl__do(abandoned(n) ? ZKL__S_GONE : ZKL__S_CREATE);
    }
    if (self == k) /* removed under us (the own watch may not have told yet) */
        return zkl__do(abandoned(n) ? ZKL__S_GONE : ZKL__S_REQUEUE);
    if (abandoned(n))
        return zkl__do(ZKL__S_DELETE);
    if (n->side && n->side->fixed_seq[0] && !paired(cs, k, self))
        return zkl__cnode_do_code(ZKL__S_ABORT, ZKL_ELOST);
    if (n->patience == ZKL__P_ONCE) {
        /* A try-once caller returns on the first answer; any other caller
         * would only wake up to sleep again. */
        n->patience = ZKL__P_ANSWERED;
        zkl__core_tell(n, ZKL__A_WAKE);
    }
    size_t w = 0;
    bool held = n->pol->holds(cs, k, self, &w, n->arg);
    if (n->walk == ZKL__W_LISTED) {
        /* listed instead of walking back: would walking have served? */
        n->walk = ZKL__W_NONE;
        n->core->walk_pays = !held;
    }
    if (held) {
        if (total == 1)
            zkl__alone_seen(n, cs[0].seq);
        return zkl__do(ZKL__S_HOLD);
    }
    if (n->pol->watch_group && n->pol->watch_group(&cs[w], n->arg)) {
        n->pred = ZKL__PRED_NONE;
        zkl__walk_clear(n);
        zkl__watch_arm(n, 0, NULL);
        zkl__watch_arm(n, 1, NULL);
        if (!zkl__watch_group(n, cs, k, self))
            return zkl__cnode_do_code(ZKL__S_ABORT, ZKL_ENOMEM);
        return zkl__do(ZKL__S_NONE);
    }
    n->pred = w == 0 && zkl__entry_is(&cs[w], zkl__cnode_kind(n)) ? ZKL__PRED_FIRST : ZKL__PRED_NONE;
    n->walk = ZKL__W_NONE;
    zkl__walk_set(n, cs, w, total, older);
    zkl__watch_group_clear(n);
    if (!zkl__watch_arm(n, 0, cs[w].name) ||
        !zkl__watch_arm(n, 1, n->prefetch && w > 0 ? cs[w - 1].name : NULL))
        return zkl__cnode_do_code(ZKL__S_ABORT, ZKL_ENOMEM);
    return zkl__do(ZKL__S_NONE);
}

zkl__decision zkl__decide(zkl__cnode *n, const struct String_vector *kids)
{
    size_t cnt = kids ? (size_t)kids->count : 0;
    zkl__entry stackbuf[64], *cs = stackbuf, me;
    size_t self = 0, older = 0, total = 0;
    const char *wrapped = n->st == ZKL__N_RECOVER ? wrapped_own(n, kids) : NULL;
    if (wrapped != NULL) {
        /* as a create answered with that name: delete it, and fail */
        zkl__step_set_err(n, ZKL_EZK, ZAPIERROR);
        return (zkl__decision){ZKL__S_DELETE, 0, 0, wrapped};
    }
    char own[ZKL__NAME_BUF];
    bool near = nearest_only(n, cnt) && zkl__entry_parse(zkl__core_own(n, own), &me) == 0;
    if (!near && cnt > 64 && (cs = zkl__core_malloc(n->core, cnt * sizeof *cs)) == NULL)
        return zkl__cnode_do_code(n->st == ZKL__N_QUEUED ? ZKL__S_ABORT : ZKL__S_FAIL, ZKL_ENOMEM);
    size_t k = contenders(n, kids, near ? &me : NULL, cs, &self, &older, &total);
    zkl__decision d = decide_on(n, cs, k, self, older, total);
    if (cs != stackbuf)
        free(cs);
    return d;
}
