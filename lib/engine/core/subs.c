/* A node's sub-states that have a table of legal moves (the own-node watch,
 * the listing), each changed by its one setter here, and the report of a
 * move any table forbids. Calls nothing of the files that act, so a file
 * that only decides or keeps may set a sub-state without joining their
 * cycle of calls (tests/check-layers.sh). */
#include "machine.h"

#define TO(s) (1u << (s))

/* A move a table forbids: a bug of the engine's. Never abort the user's
 * process for it: say so, and let the owner of a hold hear that it is lost
 * (the engine no longer knows it is theirs); the move is carried out, as
 * the engine's best idea of what to do next (a delete sent again later,
 * say). */
void zkl__cnode_tell_lost(zkl__cnode *n)
{
    if (n->told == ZKL__TOLD_LOST)
        return;
    n->told = ZKL__TOLD_LOST;
    zkl__core_tell(n, ZKL__A_LOST);
}

void zkl__cnode_broken(zkl__cnode *n, const char *what, int from, int to)
{
    zkl__core_broken(n->core, n, what, from, to);
    if (n->st == ZKL__N_HELD || n->st == ZKL__N_RELEASING) {
        if (n->err == 0) /* as zkl__step_set_err: the first cause stays */
            n->err = ZKL_ELOST;
        zkl__cnode_tell_lost(n);
    }
}

/* Move the sub-state at *at to `to` against its table (bit `to` of
 * table[from], count states), counting the move in moves[from * count + to]. */
static bool legal_in(const unsigned *table, int count, int from, int to)
{
    return from >= 0 && from < count && to >= 0 && to < count && (table[from] & TO(to)) != 0;
}

static void sub_move(zkl__cnode *n, uint8_t *at, const unsigned *table, int count,
                     uint32_t *moves, const char *what, int to)
{
    int from = *at;
    if (from == to)
        return;
    if (!legal_in(table, count, from, to))
        zkl__cnode_broken(n, what, from, to);
    moves[from * count + to]++;
    *at = (uint8_t)to;
}

#define O(s) ZKL__OWN_##s
/* The watch on our own node, the busiest of a node's sub-states: bit `to`
 * of own_legal[from]. Every move is taken by the tests too. */
static const unsigned own_legal[ZKL__OWN_COUNT] = {
    /* to SET: a lost create's node, found by the exists call that watches it */
    [O(OFF)] = TO(O(ASKED)) | TO(O(SET)),
    /* to BLIND: a read of it was refused, an existence watch asked instead */
    [O(ASKED)] = TO(O(OFF)) | TO(O(BLIND)) | TO(O(SET)),
    [O(BLIND)] = TO(O(OFF)) | TO(O(SET)),
    /* to ASKED: written to before the watch was set: read it, watching on */
    [O(SET)] = TO(O(OFF)) | TO(O(ASKED)),
};

bool zkl__cnode_own_legal(int from, int to)
{
    return legal_in(own_legal, ZKL__OWN_COUNT, from, to);
}

/* The one place the own-node watch's state changes. */
void zkl__cnode_own(zkl__cnode *n, enum zkl__own to)
{
    sub_move(n, &n->own, own_legal, ZKL__OWN_COUNT, n->core->omoves, "a node's own watch",
             (int)to);
}

#define L(s) ZKL__L_##s
/* The node's listing of its lock path: one in flight at a time, and at
 * most one more wanted after it (a coalesced request). */
static const unsigned listing_legal[ZKL__L_COUNT] = {
    [L(IDLE)] = TO(L(OUT)), /* sent, alone or shared (joint.c) */
    /* to IDLE: answered, or given up (a recovery, a shared one unsent) */
    [L(OUT)] = TO(L(IDLE)) | TO(L(OUT_AGAIN)),
    /* to OUT: the node queues again, and its new create's listing is the
     * one wanted */
    [L(OUT_AGAIN)] = TO(L(IDLE)) | TO(L(OUT)),
};

bool zkl__cnode_listing_legal(int from, int to)
{
    return legal_in(listing_legal, ZKL__L_COUNT, from, to);
}

/* The one place the listing's state changes. */
void zkl__cnode_listing(zkl__cnode *n, enum zkl__listing to)
{
    sub_move(n, &n->listing, listing_legal, ZKL__L_COUNT, n->core->lmoves,
             "a node's listing", (int)to);
}
