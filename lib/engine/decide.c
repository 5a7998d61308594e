/* The queue's order: list the lock path, find our node (or, after a lost
 * create's answer, look for it by its uuid and check who owns it), ask the
 * recipe's policy whether it holds, and if not whom to watch; take the lock
 * without listing when the nodes ahead are known to be gone (PROTOCOL §4).
 * c->mu held. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* Whether a listing is larger than a response may be (the server's
 * jute.maxbuffer, zkl_client_opts_set_max_request): a client that enforces
 * it (Curator's) cannot wait in this queue, and a longer one may not come
 * back at all. The contender leaves with ZKL_EQUEUE rather than wait on. */
bool zkl__listing_too_big(const zkl__node *n, const struct String_vector *kids)
{
    long b = 4, max = n->c->max_request;
    for (int i = 0; kids && i < kids->count && b <= max; i++)
        b += 4 + (long)strlen(kids->data[i]);
    if (b <= max)
        return false;
    return true;
}

void zkl__node_list_answer(zkl__node *n, int rc, const struct String_vector *kids)
{
    n->listing = false;
    if (!current(n) || (n->st != N_QUEUED && n->st != N_RECOVER)) {
        /* a stale answer, or the pipelined listing of a create that failed */
    } else if (rc == ZOK && zkl__listing_too_big(n, kids)) {
        if (n->st == N_QUEUED)
            zkl__node_abort(n, ZKL_EQUEUE); /* our node goes */
        else
            zkl__node_fail(n, ZKL_EQUEUE); /* not found: the session's end takes it */
    } else if (rc == ZOK) {
        if (n->relist && n->st == N_QUEUED) {
            n->relist = false;
            zkl__node_list(n);
        } else {
            zkl__node_decide(n, kids);
        }
    } else if (zkl__zk_conn_error(rc)) {
        zkl__node_stall(n);
    } else if (rc == ZNONODE && n->st == N_RECOVER) {
        /* the lock path itself is gone, so our create never happened */
        if (n->abandon)
            zkl__node_set_state(n, N_GONE), wake(n);
        else
            zkl__node_create(n);
    } else if (rc == ZNONODE) {
        zkl__node_requeue(n); /* the lock path vanished, and our node with it */
    } else if (n->st == N_QUEUED) {
        zkl__node_abort(n, zkl__err_from_zk(rc)); /* e.g. READ refused: ZKL_ENOAUTH */
    } else {
        zkl__node_fail(n, zkl__err_from_zk(rc));
    }
}

void zkl__node_list_done(int rc, const struct String_vector *kids, const void *data)
{
    zkl__node *n = answer_in(data);
    zkl__node_list_answer(n, rc, kids);
    answer_done(n);
}

void zkl__node_list(zkl__node *n)
{
    if (n->listing) {
        n->relist = true; /* coalesce: one listing in flight at a time */
        return;
    }
    int rc = zkl__listing_send(n);
    if (rc != ZOK) {
        n->refs++; /* zkl__node_send_failed counts it off */
        zkl__node_send_failed(n, rc);
    }
}

static void stat_done(int rc, const struct Stat *stat, const void *data)
{
    zkl__node *n = answer_in(data);
    zkl_client *c = n->c;
    if (!current(n) || n->st != N_RECOVER) {
    } else if (rc == ZOK) {
        /* A node is ours only if our current session owns it: never adopt a
         * node of an earlier session (PITFALLS: adopting a doomed node). */
        if (stat->ephemeralOwner != c->sid) {
            /* Our uuid, but not our session's: planted by someone else (our
             * attempt lives in one session). Neither adopt it nor delete
             * it; look on for the real one. */
            char **sk = realloc(n->skip, (n->nskip + 1) * sizeof *sk);
            const char *name = n->path + strlen(n->dir) + 1;
            if (sk == NULL || (sk[n->nskip] = strdup(name)) == NULL) {
                if (sk)
                    n->skip = sk;
                n->path = NULL;
                zkl__node_fail(n, ZKL_ENOMEM);
            } else {
                n->skip = sk;
                n->nskip++;
                n->path = NULL;
                zkl__node_list(n);
            }
        } else {
            n->token = stat->czxid;
            c->stats.recovered++;
            /* The exists call left a watch on it: our own node's watch. */
            n->own_armed = n->own_ok = true;
            zkl__engine_watching_add(n);
            if (n->abandon) {
                zkl__node_delete(n);
            } else {
                zkl__node_set_state(n, N_QUEUED);
                zkl__node_list(n);
            }
        }
    } else if (rc == ZNONODE) {
        n->path = NULL;
        if (n->abandon)
            zkl__node_set_state(n, N_GONE), wake(n);
        else
            zkl__node_create(n);
    } else if (zkl__zk_conn_error(rc)) {
        zkl__node_stall(n);
    } else {
        zkl__node_fail(n, zkl__err_from_zk(rc));
    }
    answer_done(n);
}

/* Recovery: the answer to a create was lost. List, look for our uuid, and
 * check who owns what we find (the check also watches it, as our own node
 * is watched). */
static void recover_found(zkl__node *n, const char *name)
{
    char *full = zkl__path_join(n->dir, name);
    int err = full ? zkl__node_set_path(n, full) : ZKL_ENOMEM;
    free(full);
    if (err != 0) {
        zkl__node_fail(n, ZKL_ENOMEM);
        return;
    }
    n->refs++;
    zkl__metrics_sent(n);
    int rc = zoo_awexists(n->zh, n->path, zkl__client_watcher_fn(), (void *)(uintptr_t)n->c->id,
                          stat_done, n);
    if (rc != ZOK)
        zkl__node_send_failed(n, rc);
}

static void sync_done(int rc, const char *value, const void *data)
{
    (void)rc, (void)value;
    zkl__node *n = answer_in(data); /* the listing sent right behind it tells what happened */
    answer_done(n);
}

/* Recovery's listing must see the lost create if the quorum applied it. The
 * server we reconnected to may lag behind the leader, which may still commit
 * a create sent on the old connection: a sync first makes the listing (same
 * session, served in order) see every write the leader had proposed. */
void zkl__node_recover(zkl__node *n)
{
    n->refs++;
    zkl__metrics_sent(n);
    if (zoo_async(n->zh, n->dir, sync_done, n) != ZOK)
        n->refs--;
    zkl__node_list(n);
}

/* Whether `name` may be the node of our lost create: our uuid, our kind,
 * a sequence (or our fixed one), and not already found to be someone
 * else's. Only a session check (stat_done) makes it ours. */
static bool recoverable(const zkl__node *n, const char *name)
{
    size_t kl = strlen(n->kind);
    char uuid[37];
    zkl__node_uuid_text(n, uuid);
    if (!zkl__name_has_uuid(name, uuid) || strlen(name) != 40 + kl + 10 ||
        memcmp(name + 40, n->kind, kl) != 0)
        return false;
    for (size_t i = 40 + kl; name[i]; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    if (n->fixed_seq[0] && strcmp(name + 40 + kl, n->fixed_seq) != 0)
        return false;
    for (size_t i = 0; i < n->nskip; i++)
        if (strcmp(n->skip[i], name) == 0)
            return false;
    return true;
}

static int entry_cmp(const void *a, const void *b)
{
    const zkl__entry *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Whether `name` is a node whose deletion was already seen: a listing sent
 * before that deletion may still show it, and it never comes back. */
static bool seen_gone(const zkl__node *n, const char *name)
{
    size_t d = strlen(n->dir) + 1;
    for (int i = 0; i < 2; i++)
        if (n->gone[i] && strcmp(n->gone[i] + d, name) == 0)
            return true;
    return false;
}

void zkl__node_forget_gone(zkl__node *n)
{
    for (int i = 0; i < 2; i++) {
        free(n->gone[i]);
        n->gone[i] = NULL;
    }
}

/* Remember the nodes ahead of ours, cs[0..w] (the nearest AHEAD_LONG of
 * them in a long queue of k entries), if all are of our kind and our kind
 * hands off (see `ahead`). `older` more nodes were ahead of cs[0] in the
 * listing (left out by nearest_ahead). */
static void ahead_set(zkl__node *n, const zkl__entry *cs, size_t w, size_t k, size_t older)
{
    zkl__node_ahead_clear(n);
    n->qlen = k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
    n->rank = w + 1 + older > UINT16_MAX ? UINT16_MAX : (uint16_t)(w + 1 + older);
    n->holds0 = n->e->holds;
    n->mates = n->e->queued > 1;
    if (!n->pol->handoff)
        return;
    size_t from = k > AHEAD_SHORT && w + 1 > AHEAD_LONG ? w + 1 - AHEAD_LONG : 0;
    for (size_t i = from; i <= w; i++)
        if (!zkl__entry_is(&cs[i], n->kind))
            return;
    /* One block: the pointers, then the names they point to (a waiter in
     * a long queue keeps a few names, and a block each cost as much again
     * in allocator overhead). */
    size_t bytes = (w + 1 - from) * sizeof *n->ahead;
    for (size_t i = from; i <= w; i++)
        bytes += strlen(cs[i].name) + 1;
    if ((n->ahead = malloc(bytes)) == NULL)
        return;
    char *at = (char *)(n->ahead + (w + 1 - from));
    for (size_t i = from; i <= w; i++) {
        size_t len = strlen(cs[i].name) + 1;
        n->ahead[i - from] = memcpy(at, cs[i].name, len);
        at += len;
    }
    n->nahead = (uint8_t)(w + 1 - from);
    n->ahead_front = from == 0 && older == 0;
}

/* Watch the nearest node ahead, and with prefetch the one before it. */
static void arm_ahead(zkl__node *n)
{
    zkl__watch_arm(n, 0, n->ahead[n->nahead - 1]);
    zkl__watch_arm(n, 1, n->prefetch && n->nahead >= 2 ? n->ahead[n->nahead - 2] : NULL);
}

/* Hold without listing (PROTOCOL §4): every node that was ahead of ours is
 * gone, none can come back ahead of it, and our own node still exists. */
void zkl__node_hold_now(zkl__node *n)
{
    zkl__node_set_state(n, N_HELD);
    n->e->holds++;
    zkl__node_ahead_clear(n);
    n->probing = false;
    zkl__watch_arm(n, 0, NULL);
    zkl__watch_arm(n, 1, NULL);
    zkl__node_forget_gone(n);
    wake(n);
}

/* Whether the node watched in slot 0 going should list rather than walk
 * back through `ahead`. In a short queue, with more than one node still
 * ahead of the next one to watch, many of them may have gone at once (fast
 * turnover): one small listing sees all that, where walking would cost a
 * request per node. In a long queue a listing costs the whole queue: walk
 * when the node ahead of a vanished one lately still existed (a waiter
 * gave up), list when all ahead were gone (handed off in order: walking
 * would ask node by node what one listing tells). Listings and walks
 * both teach it (walk_pays). */
static bool list_instead(zkl__node *n)
{
    if (n->nahead <= 2)
        return false;
    if (n->qlen <= AHEAD_SHORT)
        return true;
    /* Far back in the queue, other nodes of this client waited too, and
     * none of them has held since we listed: the queue has hardly moved, so
     * the node we watched gave up rather than handed off. (A client with
     * one waiter cannot tell: it goes by what walking lately taught.) */
    bool still = n->rank > AHEAD_SHORT && n->mates && n->e->holds == n->holds0;
    n->gone_list = !n->e->walk_pays && !still;
    return n->gone_list;
}

/* The node watched in `slot` is gone. If we know the nodes that were ahead
 * of ours (`ahead`) and our own node is watched, nothing can have come in
 * between: watch the nearest one still ahead instead of listing, or hold if
 * none is left and none was before them. Returns false if that knowledge
 * is missing or used up: list then. */
bool zkl__node_walk_back(zkl__node *n, int slot)
{
    if (n->nahead == 0 || !n->own_ok || !n->pol->handoff || n->watch[slot] == NULL)
        return false;
    const char *name = n->watch[slot] + strlen(n->dir) + 1;
    size_t i = n->nahead;
    while (i > 0 && strcmp(n->ahead[i - 1], name) != 0)
        i--;
    /* The prefetch watch (slot 1) is there to learn, before the node ahead
     * goes, that it is first. When its node goes and older nodes remain
     * unknown, they went too, most likely (the queue moves in order): one
     * listing tells, where walking would ask node by node and, in a long
     * queue where only the nearest few were kept, list after all. Unless
     * walking lately found waiters that gave up (walk_pays). */
    if (i == 0 || (slot == 0 && list_instead(n)) ||
        (slot == 1 && i > 1 && (n->qlen <= AHEAD_SHORT || !n->e->walk_pays)))
        return false;
    /* the name stays in the block; only its pointer goes */
    memmove(n->ahead + i - 1, n->ahead + i, (n->nahead - i) * sizeof *n->ahead);
    n->nahead--;
    if (n->nahead == 0) {
        if (!n->ahead_front)
            return false; /* nodes before the ones we kept may remain */
        zkl__node_hold_now(n);
        return true;
    }
    n->pred_first = n->ahead_front && n->nahead == 1;
    n->pred_same = true;
    /* In a long queue the next one may be gone as well: its watch's
     * answer tells (wget_done). */
    n->probing = slot == 0 && n->qlen > AHEAD_SHORT;
    arm_ahead(n);
    return true;
}

/* How many nodes ahead of ours a long listing keeps (nearest_ahead). */
#define NEAREST (AHEAD_SHORT + 1)

/* Whether n decides on the NEAREST nodes ahead of its own alone, in a
 * listing of cnt children. A kind that hands off looks at nothing else: it
 * holds when no node is ahead and watches the nearest ones. Picking those
 * out of a long listing takes one pass, where sorting all of it cost
 * O(cnt log cnt) per handoff: most of the client's time in a queue of
 * thousands. */
static bool nearest_only(const zkl__node *n, size_t cnt)
{
    return cnt > 4 * AHEAD_SHORT && n->pol->handoff && n->pol->watch_group == NULL &&
           n->st == N_QUEUED && n->path != NULL && !n->fixed_seq[0];
}

size_t zkl__entries_nearest(const struct String_vector *kids, const zkl__entry *me, size_t m,
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

/* Fill cs (room for NEAREST + 1) with the nearest nodes ahead of ours, in
 * order, then ours if the listing has it (zkl__entries_nearest). False if
 * our own name does not parse (never for a sequential node): sort all
 * then. */
static bool nearest_ahead(const zkl__node *n, const struct String_vector *kids, bool gone,
                          zkl__entry *cs, size_t *k, size_t *self, size_t *older,
                          size_t *total)
{
    zkl__entry me;
    if (zkl__entry_parse(n->path + strlen(n->dir) + 1, &me) != 0)
        return false;
    *k = zkl__entries_nearest(kids, &me, NEAREST, gone ? skip_gone : NULL, n, cs, self, older,
                              total);
    return true;
}

void zkl__node_decide(zkl__node *n, const struct String_vector *kids)
{
    size_t cnt = kids ? (size_t)kids->count : 0;
    zkl__entry stackbuf[64];
    size_t k = 0, self = 0, older = 0, total = 0;
    bool gone = n->gone[0] || n->gone[1];
    zkl__entry *cs = stackbuf;
    if (!nearest_only(n, cnt) ||
        !nearest_ahead(n, kids, gone, cs, &k, &self, &older, &total)) {
        if (cnt > 64 && (cs = malloc(cnt * sizeof *cs)) == NULL) {
            zkl__node_fail(n, ZKL_ENOMEM);
            return;
        }
        for (size_t i = 0; i < cnt; i++) {
            if (zkl__entry_parse(kids->data[i], &cs[k]) == 0 &&
                !(gone && seen_gone(n, kids->data[i])))
                k++;
        }
        qsort(cs, k, sizeof *cs, entry_cmp);
        self = k;
        for (size_t i = 0; i < k; i++) {
            if (n->path ? strcmp(cs[i].name, n->path + strlen(n->dir) + 1) == 0
                        : recoverable(n, cs[i].name)) {
                self = i;
                break;
            }
        }
        total = k;
    }
    if (n->st == N_RECOVER) {
        if (self < k) {
            recover_found(n, cs[self].name);
        } else if (n->abandon) {
            zkl__node_set_state(n, N_GONE);
            wake(n);
        } else {
            zkl__node_create(n); /* the lost create never happened */
        }
    } else if (self == k) {
        /* Our node was removed under us (the own watch may not have told
         * yet): it holds nothing; queue again. */
        if (n->abandon) {
            zkl__node_set_state(n, N_GONE);
            wake(n);
        } else {
            zkl__node_requeue(n);
        }
    } else if (n->abandon) {
        zkl__node_delete(n);
    } else {
        size_t w = 0;
        if (!n->decided) {
            n->decided = true;
            /* A try-once caller returns on the first answer; any other
             * caller would only wake up to sleep again. */
            if (n->try_once)
                wake(n);
        }
        bool held = n->pol->holds(cs, k, self, &w, n->arg);
        if (n->gone_list) {
            /* listed instead of walking back: would walking have served? */
            n->gone_list = false;
            n->e->walk_pays = !held;
        }
        if (held) {
            zkl__node_ahead_clear(n);
            zkl__node_set_state(n, N_HELD);
            n->e->holds++;
            zkl__watch_arm(n, 0, NULL);
            zkl__watch_arm(n, 1, NULL);
            zkl__watch_group_clear(n);
            zkl__node_forget_gone(n);
            if (total == 1)
                zkl__alone_seen(n, cs[0].seq);
            wake(n);
        } else if (n->pol->watch_group && n->pol->watch_group(&cs[w], n->arg)) {
            n->waited = true;
            n->pred_first = n->pred_same = false;
            zkl__node_ahead_clear(n);
            zkl__watch_arm(n, 0, NULL);
            zkl__watch_arm(n, 1, NULL);
            zkl__watch_group(n, cs, k, self);
        } else {
            n->waited = true;
            n->pred_first = w == 0;
            n->pred_same = zkl__entry_is(&cs[w], n->kind);
            n->probing = false;
            ahead_set(n, cs, w, total, older);
            zkl__watch_group_clear(n);
            zkl__watch_arm(n, 0, cs[w].name);
            zkl__watch_arm(n, 1, n->prefetch && w > 0 ? cs[w - 1].name : NULL);
        }
    }
    if (cs != stackbuf)
        free(cs);
}
