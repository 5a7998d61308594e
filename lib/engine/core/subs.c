/* A node's sub-states that have a table of legal moves (the own-node watch,
 * the listing, how it reads the nodes ahead, its watches on others' nodes),
 * each changed by its one setter here, and the report of a
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

#define RD(s) ZKL__R_##s
/* How the node waits on the nodes ahead: data watches on them, until one
 * refuses us; then the lock path's children, one child watch at a time. */
static const unsigned reading_legal[ZKL__READING_COUNT] = {
    /* a node ahead (or a group's member) may not be read by us */
    [RD(NODES)] = TO(RD(KIDS_OFF)),
    /* to NODES: queued again with a new node, which reads again */
    [RD(KIDS_OFF)] = TO(RD(KIDS_SET)) | TO(RD(NODES)),
    /* to KIDS_OFF: its event or answer came, or it could not be sent */
    [RD(KIDS_SET)] = TO(RD(KIDS_OFF)) | TO(RD(NODES)),
};

bool zkl__cnode_reading_legal(int from, int to)
{
    return legal_in(reading_legal, ZKL__READING_COUNT, from, to);
}

/* The one place the reading's state changes. */
void zkl__cnode_reading(zkl__cnode *n, enum zkl__reading to)
{
    sub_move(n, &n->reading, reading_legal, ZKL__READING_COUNT, n->core->rdmoves,
             "a node's reading", (int)to);
}

#define A(s) ZKL__ARM_##s
/* A watch on another's node (a node ahead, a group's member). Arming one
 * asks for it (a data watch sent, or the children told to tell), so
 * arming one that is on already would ask twice: that move, from ON to
 * itself, is forbidden too. Letting go of one that is off is nothing. */
static const unsigned armed_legal[ZKL__ARM_COUNT] = {
    [A(OFF)] = TO(A(ON)),
    /* fired, refused, unsent, let go, or the connection lost */
    [A(ON)] = TO(A(OFF)),
};

bool zkl__cnode_armed_legal(int from, int to)
{
    return legal_in(armed_legal, ZKL__ARM_COUNT, from, to);
}

/* The one place a watch on another's node changes. */
void zkl__cnode_armed(zkl__cnode *n, uint8_t *at, enum zkl__armed to)
{
    static const char what[] = "a node's watch on another's node";
    if (*at == A(ON) && to == A(ON))
        zkl__cnode_broken(n, what, A(ON), A(ON)); /* sub_move takes it for no move */
    sub_move(n, at, armed_legal, ZKL__ARM_COUNT, n->core->amoves, what, (int)to);
}
