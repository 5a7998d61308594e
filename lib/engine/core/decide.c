/* The queue's order: a listing of the lock path comes in; find our node
 * (or, after a lost create's answer, a node with our uuid), ask the
 * recipe's policy whether it holds, and if not whom to watch. It only
 * decides: it returns a plan (zkl__plan), which act.c carries out. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

/* Whether a listing is larger than a response may be (the server's
 * jute.maxbuffer, zkl_client_opts_set_max_request): a client that enforces
 * it (Curator's) cannot wait in this queue, and a longer one may not come
 * back at all. The contender leaves with ZKL_EQUEUE rather than wait on. */
bool zkl__decide_too_big(const zkl__cnode *n, const struct String_vector *kids)
{
    long b = 4, max = n->core->max_request;
    for (int i = 0; kids && i < kids->count && b <= max; i++)
        b += 4 + (long)strlen(kids->data[i]);
    return b > max;
}

/* ---- recovery: the answer to a create was lost ---------------------------- */

/* Whether `name` may be the node of our lost create: our uuid, our kind,
 * a sequence (or our fixed one), and not already found to be someone
 * else's. Only the owner's check (zkl__act_found, act.c) makes it ours. */
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

/* ---- the decision ------------------------------------------------------------- */

static int entry_cmp(const void *a, const void *b)
{
    const zkl__entry *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A listing's entries in order. A short one (a handful of contenders: the
 * common case, sorted at every listing) by insertion, the comparison
 * inline, where qsort calls back for each; a longer one by qsort. Names
 * in a listing are distinct, so entry_cmp orders them one way only:
 * either gives the same order. */
static void sort_entries(zkl__entry *cs, size_t k)
{
    if (k > 32) {
        qsort(cs, k, sizeof *cs, entry_cmp);
        return;
    }
    for (size_t i = 1; i < k; i++) {
        zkl__entry e = cs[i];
        size_t j = i;
        for (; j > 0 && entry_cmp(&cs[j - 1], &e) > 0; j--)
            cs[j] = cs[j - 1];
        cs[j] = e;
    }
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
bool zkl__decide_nearest_only(const zkl__cnode *n, size_t cnt)
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
 * and ours if `me` (zkl__decide_nearest_only() said so), else all of them
 * sorted (cs has room for kids->count). *self is our index (k if not
 * listed). */
size_t zkl__decide_contenders(const zkl__cnode *n, const struct String_vector *kids,
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
    sort_entries(cs, k);
    *self = k;
    char own[ZKL__NAME_BUF];
    const char *name = zkl__core_own(n, own);
    for (size_t i = 0; i < k; i++) {
        /* our name ends in our sequence: the names of others' compared
         * only when theirs is ours too */
        if (name ? cs[i].seq == n->seq && strcmp(cs[i].name, name) == 0
                 : recoverable(n, cs[i].name)) {
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

zkl__plan zkl__decide_on(const zkl__cnode *n, const zkl__entry *cs, size_t k, size_t self)
{
    zkl__plan p = {.d = zkl__do(ZKL__S_NONE)};
    if (n->st == ZKL__N_RECOVER) {
        if (self < k)
            p.act = ZKL__PL_FIND;
        else /* The lost create never happened. */
            p.d = zkl__do(abandoned(n) ? ZKL__S_GONE : ZKL__S_CREATE);
        return p;
    }
    if (self == k) { /* removed under us (the own watch may not have told yet) */
        p.d = zkl__do(abandoned(n) ? ZKL__S_GONE : ZKL__S_REQUEUE);
        return p;
    }
    if (abandoned(n)) {
        p.d = zkl__do(ZKL__S_DELETE);
        return p;
    }
    if (n->side && n->side->fixed_seq[0] && !paired(cs, k, self)) {
        p.d = zkl__cnode_do_code(ZKL__S_ABORT, ZKL_ELOST);
        return p;
    }
    /* A try-once caller returns on the first answer; any other caller
     * would only wake up to sleep again. */
    p.answered = n->patience == ZKL__P_ONCE;
    p.held = n->pol->holds(cs, k, self, &p.w, n->arg);
    p.listed = n->walk == ZKL__W_LISTED; /* would walking back have served? */
    if (p.held) {
        p.act = ZKL__PL_HOLD;
        p.d = zkl__do(ZKL__S_HOLD);
    } else if (n->pol->watch_group && n->pol->watch_group(&cs[p.w], n->arg)) {
        p.act = ZKL__PL_GROUP;
    } else {
        p.act = ZKL__PL_WATCH;
        p.first = p.w == 0 && zkl__entry_is(&cs[p.w], zkl__cnode_kind(n));
    }
    return p;
}

/* A lost create's node made past the wrap (wrapped_own), or NULL. */
const char *zkl__decide_wrapped(const zkl__cnode *n, const struct String_vector *kids)
{
    return n->st == ZKL__N_RECOVER ? wrapped_own(n, kids) : NULL;
}
