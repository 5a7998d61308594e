/* The nodes ahead of ours. For a kind that hands off, the latest listing's
 * nodes ahead of ours are kept, nearest last, when all were of our kind:
 * all of them in a short queue, the nearest AHEAD_LONG in a long one (the
 * memory a waiter keeps stays flat as the queue grows). Nodes ahead of ours
 * only ever go (every later node sorts after ours), so when the one we
 * watch goes, the next one ahead that still exists is the new one to
 * watch: no listing needed. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"

void zkl__walk_clear(zkl__cnode *n)
{
    free(n->ahead);
    n->ahead = NULL;
    n->nahead = 0;
    n->ahead_front = false;
}

/* Whether a waiter with `nahead` nodes ahead of it known, in a listing of
 * qlen entries, lists when the node it watches goes, rather than walk back:
 * in a short queue with more than two of them, many may have gone at once
 * (fast turnover), and one small listing sees all that, where walking
 * would cost a request per node (list_instead, and the prefetch watch's
 * going in zkl__walk_back). */
static bool short_lists(size_t nahead, size_t qlen)
{
    return nahead > 2 && qlen <= AHEAD_SHORT;
}

/* Remember the nodes ahead of ours, cs[0..w] (the nearest AHEAD_LONG of
 * them in a long queue of k entries), if all are of our kind and our kind
 * hands off, and walking back through them may serve. `older` more nodes
 * were ahead of cs[0] in the listing. */
void zkl__walk_set(zkl__cnode *n, const zkl__entry *cs, size_t w, size_t k, size_t older)
{
    zkl__walk_clear(n);
    n->qlen = k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
    n->rank = w + 1 + older > UINT16_MAX ? UINT16_MAX : (uint16_t)(w + 1 + older);
    n->holds0 = n->core->holds;
    n->mates = n->core->queued > 1;
    if (!n->pol->handoff)
        return;
    size_t from = k > AHEAD_SHORT && w + 1 > AHEAD_LONG ? w + 1 - AHEAD_LONG : 0;
    /* Such a waiter never walks: until its next listing, no node ahead
     * goes but it lists (nothing is dropped from what it would keep, so
     * it stays so). Reading and keeping them would serve nothing. */
    if (short_lists(w + 1 - from, k))
        return;
    /* Only nodes of our kind with protected names, kept as peers. Without
     * memory, or for another name: nothing kept, the waiter lists. */
    if ((n->ahead = zkl__core_malloc(n->core, (w + 1 - from) * sizeof *n->ahead)) == NULL)
        return;
    for (size_t i = from; i <= w; i++) {
        if (!zkl__core_peer(n, cs[i].name, &n->ahead[i - from])) {
            zkl__walk_clear(n);
            return;
        }
    }
    n->nahead = (uint8_t)(w + 1 - from);
    n->ahead_front = from == 0 && older == 0;
}

/* Whether the node watched in slot 0 going should list rather than walk
 * back through `ahead`. In a short queue, with more than one node still
 * ahead of the next one to watch, many of them may have gone at once (fast
 * turnover): one small listing sees all that, where walking would cost a
 * request per node. In a long queue a listing costs the whole queue: walk
 * when the node ahead of a vanished one lately still existed (a waiter
 * gave up), list when all ahead were gone (handed off in order: walking
 * would ask node by node what one listing tells). Listings and walks
 * both teach it (core->walk_pays): a listing chosen so is marked LISTED. */
static enum zkl__walk list_instead(const zkl__cnode *n, bool *list)
{
    *list = false;
    if (n->nahead <= 2)
        return (enum zkl__walk)n->walk;
    if (short_lists(n->nahead, n->qlen)) {
        *list = true;
        return (enum zkl__walk)n->walk;
    }
    /* Far back in the queue, other nodes of this client waited too, and
     * none of them has held since we listed: the queue has hardly moved, so
     * the node we watched gave up rather than handed off. (A client with
     * one waiter cannot tell: it goes by what walking lately taught.) */
    bool still = n->rank > AHEAD_SHORT && n->mates && n->core->holds == n->holds0;
    if (n->core->walk_pays || still)
        return (enum zkl__walk)n->walk;
    *list = true;
    return ZKL__W_LISTED;
}

zkl__walkback zkl__walk_back(const zkl__cnode *n, int slot)
{
    zkl__walkback r = {.step = ZKL__S_LIST, .pred = (enum zkl__pred)n->pred,
                   .walk = (enum zkl__walk)n->walk};
    if (n->nahead == 0 || n->own != ZKL__OWN_SET || !n->pol->handoff)
        return r;
    /* The node watched, as a peer: any other name is none of those ahead. */
    zkl__peer w;
    if (n->watch[slot] != NULL) {
        if (!zkl__core_peer(n, n->watch[slot], &w))
            return r;
    } else if (slot == 0 && n->wpeer.seq >= 0) {
        w = n->wpeer;
    } else {
        return r;
    }
    size_t i = n->nahead;
    while (i > 0 && !zkl__core_same_peer(&n->ahead[i - 1], &w))
        i--;
    if (i == 0)
        return r;
    bool list = false;
    if (slot == 0)
        r.walk = list_instead(n, &list);
    /* The prefetch watch (slot 1) is there to learn, before the node ahead
     * goes, that it is first. When its node goes and older nodes remain
     * unknown, they went too, most likely (the queue moves in order): one
     * listing tells, where walking would ask node by node and, in a long
     * queue where only the nearest few were kept, list after all. Unless
     * walking lately found waiters that gave up (walk_pays). */
    if (list || (slot == 1 && i > 1 && (n->qlen <= AHEAD_SHORT || !n->core->walk_pays)))
        return r;
    r.drop = i;
    if (n->nahead == 1) {
        /* Every node ahead is gone, and none was before them; our own
         * node still exists (its watch would have told first). */
        r.step = n->ahead_front ? ZKL__S_HOLD : ZKL__S_LIST;
        return r;
    }
    r.pred = n->ahead_front && n->nahead == 2 ? ZKL__PRED_FIRST : ZKL__PRED_NONE;
    /* In a long queue the next one may be gone as well: its watch's
     * answer tells (watch.c). */
    r.walk = slot == 0 && n->qlen > AHEAD_SHORT ? ZKL__W_PROBE : ZKL__W_NONE;
    r.step = ZKL__S_WALK; /* the nearest one left is watched next */
    return r;
}

void zkl__walk_drop(zkl__cnode *n, size_t i)
{
    memmove(n->ahead + i, n->ahead + i + 1, (n->nahead - i - 1) * sizeof *n->ahead);
    n->nahead--;
}
