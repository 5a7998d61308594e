/* A stand-in for the engine's shell, for the core's table tests: it records
 * the actions the core asks for, answers them as a script says, and checks
 * what came out. No ZooKeeper, no thread, no clock: the script is the world.
 *
 * A script is text, one command a line (tests/check_core*.c hold them in
 * tables). Nodes are named by a capital letter; a node's own names by its
 * letter and a sequence (A7 is node A's node with sequence 7, of its kind);
 * other clients' nodes by `x:` and a kind and sequence (x:lock-5, x:__READ__3,
 * x:__WRIT__2, x:zkl-lease-4, x:zkl-wait-6). Commands:
 *
 *   node A lock|read|write|gate|lease [prefetch] [once] [down=7] [max=N need=N]
 *   start A              its create goes out
 *   create A ok 7        the create's answer: ok and the sequence, or a code
 *   create A CONNLOSS
 *   list A ok A7 x:lock-3  a listing's answer for A (its own, or its joint's)
 *   list A NONODE
 *   ahead A 0 ok|NONODE|NOAUTH|CONNLOSS   the data watch of slot 0 / 1
 *   member A rc          a watch group member's watch
 *   kids A ok names...   the child watch's listing
 *   own A ok [version]   the own node's existence watch
 *   owndata A ok <data> <version>
 *   found A ok self|other   a node found by uuid: whose session owns it
 *   found A NONODE
 *   delete A ok|NONODE|NOAUTH|CONNLOSS
 *   parent A ok|NOAUTH   a lock parent's create
 *   sync A               the recovery's sync
 *   dir A ok             the alone-path watch
 *   deleted x:lock-3     a watch event (deleted, changed, child <dir>)
 *   changed A7
 *   child
 *   down / up            the connection
 *   expire               the session ends (a new one follows)
 *   close                the client closes
 *   cancel               zkl_client_cancel
 *   leave A / release A / taken A / detach A
 *   wait 500             time passes (ms); the core's backoffs tick
 *   nomem 2              the core's second allocation from now fails
 *   maxreq 4096          the largest answer the server gives (jute.maxbuffer)
 *   fail CONNLOSS        the next request sent fails at once with this code
 *   force A QUEUED       move A's state as only a bug of the engine's would
 *   forceown A BLIND     the same for the watch on A's own node
 *   forcelisting A OUT   the same for A's listing
 *   forcereading A KIDS_SET   the same for how A reads the nodes ahead
 *   forcearmed A 0 ON    the same for A's watch on the node ahead (slot 0 / 1)
 *   expect A:create A:list ...   exactly these actions since the last expect
 *   expect -             none
 *   state A HELD         the node's state
 *   ownstate A SET       the watch on its own node: OFF, ASKED, BLIND, SET
 *   reading A NODES      how it reads the nodes ahead: NODES, KIDS_OFF, KIDS_SET
 *   armed A 0 ON         its watch on the node ahead (slot 0 / 1): OFF, ON
 *   err A ENOQUEUE       the node's error (0 for none)
 *   verdict A 1|0|ETIMEDOUT|... [cancelled] [past]
 *   freed A              the node was freed
 *   pending A n          the node's answers still to come
 *
 * Asynchronous requests (areq.h) are named R, S, T, U:
 *
 *   request R on A [deadline=ms] [steps] [keep] [tell]   a request waiting on A
 *   step R next=B | deliver | wait | EMISMATCH   what its recipe's step answers
 *   rlook R / rdeliver R 1 / rcancel R 0 / rrelease R ELOST / rfree R
 *                        an event, and what the call returns
 *   rstate R HELD / rresult R ELOST
 *   runmaking R 1      the front's deletes of the parents R made: out (1) or answered (0)
 *
 * A request's actions print as R:take:A, R:count:A:0, R:leave:A, R:ready, ...
 *
 * Actions print as NODE:kind[:detail]: create, parent:<path>, list, sync,
 * ahead0:<name>, ahead1:<name>, member:<name>, kids, own, readown,
 * find:<name>, dir, delete, wake, lost, revoke, kick, free. */
#ifndef ZKL_CORE_SCRIPT_H
#define ZKL_CORE_SCRIPT_H

#include <stdbool.h>

#include "core.h"

/* Openings of many scripts. Node A of the lock path holds alone, its own
 * watch answered, nothing expected yet: */
#define CORE_OPEN_A                                                                                \
    "node A lock\n"                                                                                \
    "start A\n"                                                                                    \
    "create A ok 1\n"                                                                              \
    "own A ok\n"                                                                                   \
    "list A ok A1\n"
/* and its actions expected; */
#define CORE_HELD_A                                                                                \
    CORE_OPEN_A "expect A:create A:list A:own A:wake\n"
/* and its hold taken by its caller, then the actions expected. */
#define CORE_TAKEN_A                                                                               \
    CORE_OPEN_A "taken A\n"                                                                        \
                "expect A:create A:list A:own A:wake\n"
/* A listing of A9 behind 79 other nodes: longer than a request of 4096
 * bytes ("maxreq 4096") may be. */
#define CORE_LONG_LISTING_A9                                                                       \
    "x:lock-1 x:lock-2 x:lock-3 x:lock-4 x:lock-5 x:lock-6 x:lock-7 x:lock-8 x:lock-10 "           \
    "x:lock-11 x:lock-12 x:lock-13 x:lock-14 x:lock-15 x:lock-16 x:lock-17 x:lock-18 x:lock-19 "   \
    "x:lock-20 x:lock-21 x:lock-22 x:lock-23 x:lock-24 x:lock-25 x:lock-26 x:lock-27 x:lock-28 "   \
    "x:lock-29 x:lock-30 x:lock-31 x:lock-32 x:lock-33 x:lock-34 x:lock-35 x:lock-36 x:lock-37 "   \
    "x:lock-38 x:lock-39 x:lock-40 x:lock-41 x:lock-42 x:lock-43 x:lock-44 x:lock-45 x:lock-46 "   \
    "x:lock-47 x:lock-48 x:lock-49 x:lock-50 x:lock-51 x:lock-52 x:lock-53 x:lock-54 x:lock-55 "   \
    "x:lock-56 x:lock-57 x:lock-58 x:lock-59 x:lock-60 x:lock-61 x:lock-62 x:lock-63 x:lock-64 "   \
    "x:lock-65 x:lock-66 x:lock-67 x:lock-68 x:lock-69 x:lock-70 x:lock-71 x:lock-72 x:lock-73 "   \
    "x:lock-74 x:lock-75 x:lock-76 x:lock-77 x:lock-78 x:lock-79 x:lock-80 A9\n"
/* Node A waits behind another client's x:lock-1 (A2), everything
 * answered. */
#define CORE_WAITING_A                                                                             \
    "node A lock\n"                                                                                \
    "start A\n"                                                                                    \
    "create A ok 2\n"                                                                              \
    "own A ok\n"                                                                                   \
    "list A ok x:lock-1 A2\n"                                                                      \
    "ahead A 0 ok\n"                                                                               \
    "expect A:create A:list A:own A:ahead0:x:lock-1\n"

/* One row of a table: a name for the failure message and its script. */
typedef struct core_case {
    const char *name;
    const char *script;
} core_case;

/* Run one script; on a failed command, returns false with a message in
 * why (the line and what differed). */
bool core_script_run(const char *script, char *why, size_t whylen);

/* Moves taken over every script run so far in this process, to check that
 * every legal move of the node's table was taken. */
unsigned core_script_moves(int from, int to);
/* The same for the watch on a node's own node (enum zkl__own), and its
 * states' names. */
unsigned core_script_omoves(int from, int to);
extern const char *const core_script_own_states[];
/* The same for a node's listing (enum zkl__listing). */
unsigned core_script_lmoves(int from, int to);
extern const char *const core_script_listing_states[];
/* The same for how a node reads the nodes ahead (enum zkl__reading), and
 * for its watches on others' nodes (enum zkl__armed). */
unsigned core_script_rdmoves(int from, int to);
extern const char *const core_script_reading_states[];
unsigned core_script_amoves(int from, int to);
extern const char *const core_script_armed_states[];
/* Actions seen so far in this process, by type. */
unsigned core_script_actions(int type);
/* The same for asynchronous requests' moves and actions. */
unsigned core_script_rmoves(int from, int to);
unsigned core_script_ractions(int type);

/* A table of moves for core_script_main's coverage test: its state names,
 * which moves are legal, and how often each was taken. */
typedef struct core_table {
    int count;
    const char *const *names;
    bool (*legal)(int from, int to);
    unsigned (*taken)(int from, int to);
    const struct core_table *also; /* another table, checked the same way, or NULL */
} core_table;

/* A suite named `suite` of one test per case, then (if table is not NULL)
 * one that fails when a legal move of the table (or of those it names in
 * `also`) was never taken; all in
 * one process, since that test reads what the scripts counted. Returns the
 * program's exit status. */
int core_script_main(const char *suite, const core_case *cases, int ncases,
                     const core_table *table);

#endif
