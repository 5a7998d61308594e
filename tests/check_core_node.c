/* The engine core's node machine, without ZooKeeper: each row of the table
 * is a script of events and the actions they must bring (tests/core_script.h
 * tells its language). The last test checks that the rows together take
 * every move of the machine's table. */
#include "core_script.h"

/* Node A held (its own watch not yet answered), taken and released: its
 * delete sent, not yet answered. */
#define RELEASING_A                                                                                \
    "node A lock\n"                                                                                \
    "start A\n"                                                                                    \
    "create A ok 1\n"                                                                              \
    "list A ok A1\n"                                                                               \
    "taken A\n"                                                                                    \
    "release A\n"                                                                                  \
    "expect A:create A:list A:own A:wake A:delete\n"

/* Node A held alone and taken, its own watch not yet answered. */
#define TAKEN_A_OWN_OUT                                                                            \
    "node A lock\n"                                                                                \
    "start A\n"                                                                                    \
    "create A ok 1\n"                                                                              \
    "list A ok A1\n"                                                                               \
    "taken A\n"                                                                                    \
    "expect A:create A:list A:own A:wake\n"

/* A waiter with prefetch, behind another recipe's nodes (no handoff
 * between kinds): the nearest one went, and its listing is out. */
#define LISTING_OUT_A3                                                                             \
    "node A lock prefetch\n"                                                                       \
    "start A\n"                                                                                    \
    "create A ok 3\n"                                                                             \
    "own A ok\n"                                                                                  \
    "list A ok x:__WRIT__1 x:__WRIT__2 A3\n"                                                       \
    "ahead A 0 ok\n"                                                                               \
    "ahead A 1 ok\n"                                                                               \
    "expect A:create A:list A:own A:ahead0:x:__WRIT__2 A:ahead1:x:__WRIT__1\n"                     \
    "deleted x:__WRIT__2\n"                                                                        \
    "expect A:list\n"

static const core_case cases[] = {
    /* One listing in flight at a time: one wanted meanwhile is sent when it
     * answers (its answer may be stale), or, if the node queues again
     * meanwhile, is the new create's. */
    {"a listing wanted while one is out is sent once that one answers",
     LISTING_OUT_A3
     "deleted x:__WRIT__1\n"
     "expect -\n"
     "list A ok x:__WRIT__1 A3\n"
     "expect A:list\n"
     "list A ok A3\n"
     "expect A:wake\n"
     "state A HELD\n"},
    {"a listing wanted while one is out is the new create's when the node queues again",
     LISTING_OUT_A3
     "deleted x:__WRIT__1\n"
     "expect -\n"
     "deleted A3\n"
     "expect A:create\n"
     "list A ok x:__WRIT__1 A3\n"
     "expect A:list\n"
     "create A ok 4\n"
     "list A ok A4\n"
     "expect A:own A:wake\n"
     "state A HELD\n"},
    {"an acquire alone takes three requests and holds on the listing's answer",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "create A ok 1\n"
     "expect A:own\n"
     "list A ok A1\n"
     "expect A:wake\n"
     "state A HELD\n"
     "verdict A 0\n"
     "own A ok\n"
     "expect -\n"
     "pending A 0\n"},
    {"a release deletes the node and ends when the server confirms",
     CORE_TAKEN_A
     "release A\n"
     "expect A:delete\n"
     "state A RELEASING\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"
     "err A 0\n"
     "detach A\n"
     "expect A:free\n"
     "freed A\n"},
    {"a waiter whose predecessor was first holds when it goes, without a listing",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1\n"
     "state A QUEUED\n"
     "verdict A 1\n"
     "own A ok\n"
     "ahead A 0 ok\n"
     "expect -\n"
     "deleted x:lock-1\n"
     "expect A:wake\n"
     "state A HELD\n"},
    {"without its own node's watch confirmed a waiter lists when its predecessor goes",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1\n"
     "ahead A 0 ok\n"
     "deleted x:lock-1\n"
     "expect A:list\n"
     "state A QUEUED\n"
     "list A ok A2\n"
     "expect A:wake\n"
     "state A HELD\n"},
    {"a waiter walks back to the next node ahead when the one it watches goes",
     "node A lock\n"
     "start A\n"
     "create A ok 3\n"
     "own A ok\n"
     "list A ok x:lock-1 x:lock-2 A3\n"
     "expect A:create A:list A:own A:ahead0:x:lock-2\n"
     "ahead A 0 ok\n"
     "deleted x:lock-2\n"
     "expect A:ahead0:x:lock-1\n"
     "ahead A 0 ok\n"
     "deleted x:lock-1\n"
     "expect A:wake\n"
     "state A HELD\n"},
    {"a predecessor gone before its watch was set is walked past",
     "node A lock\n"
     "start A\n"
     "create A ok 3\n"
     "own A ok\n"
     "list A ok x:lock-1 x:lock-2 A3\n"
     "expect A:create A:list A:own A:ahead0:x:lock-2\n"
     "ahead A 0 NONODE\n"
     "expect A:ahead0:x:lock-1\n"
     "ahead A 0 NONODE\n"
     "expect A:wake\n"
     "state A HELD\n"},
    {"a waiter's own node deleted by someone else queues again with a fresh node",
     CORE_WAITING_A
     "deleted A2\n"
     "expect A:create A:list\n"
     "state A CREATING\n"
     "create A ok 3\n"
     "expect A:own\n"
     "list A ok x:lock-1 A3\n"
     "expect A:ahead0:x:lock-1\n"},
    {"a held node deleted by someone else is lost, and told once",
     CORE_TAKEN_A
     "deleted A1\n"
     "expect A:lost A:wake\n"
     "state A LOST\n"
     "verdict A ELOST\n"
     "release A\n"
     "expect -\n"
     "detach A\n"
     "expect A:free\n"},
    {"a node held but not yet taken queues again when someone deletes it",
     CORE_HELD_A
     "deleted A1\n"
     "expect A:create A:list\n"
     "state A CREATING\n"},
    {"a held node routed by its name queues again when someone deletes it, and leaves the index first",
     CORE_HELD_A
     "changed A1\n"
     "expect A:readown\n"
     "owndata A ok - 1\n"
     "deleted A1\n"
     "expect A:create A:list\n"
     "state A CREATING\n"
     "create A ok 2\n"
     "list A ok A2\n"
     "expect A:own A:dir A:wake\n"
     "deleted A2\n"
     "expect A:create A:list\n"},
    {"a session's end takes its held node: lost",
     TAKEN_A_OWN_OUT
     "expire\n"
     "expect A:lost A:wake A:wake\n"
     "state A LOST\n"
     "verdict A ELOST\n"
     "detach A\n"
     "expect -\n"
     "pending A 1\n"
     "own A EXPIRED\n"
     "expect A:free\n"},
    {"a session's end ends a waiting attempt with ELOST",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1\n"
     "expire\n"
     "expect A:wake A:wake\n"
     "state A GONE\n"
     "err A ELOST\n"
     "verdict A ELOST\n"
     "own A EXPIRED\n"
     "ahead A 0 EXPIRED\n"
     "expect -\n"
     "detach A\n"
     "expect A:free\n"},
    {"the client closing ends a waiting attempt with ECLOSED",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "close\n"
     "expect A:wake A:wake\n"
     "err A ECLOSED\n"
     "verdict A ECLOSED\n"
     "create A CLOSING\n"
     "list A CLOSING\n"
     "detach A\n"
     "expect A:free\n"},
    {"a create whose answer was lost is found by its uuid and adopted",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "down\n"
     "create A CONNLOSS\n"
     "list A CONNLOSS\n"
     "state A RECOVER\n"
     "expect -\n"
     "up\n"
     "expect A:sync A:list\n"
     "sync A\n"
     "list A ok A1\n"
     "expect A:find:A1\n"
     "found A ok self\n"
     "expect A:list\n"
     "state A QUEUED\n"
     "list A ok A1\n"
     "expect A:wake\n"
     "state A HELD\n"},
    {"a lost create that never happened is made again",
     "node A lock\n"
     "start A\n"
     "down\n"
     "create A CONNLOSS\n"
     "list A CONNLOSS\n"
     "up\n"
     "expect A:create A:list A:sync A:list\n"
     "list A ok x:lock-1\n"
     "expect A:create A:list\n"
     "state A CREATING\n"},
    {"a node with our uuid that another session owns is neither adopted nor deleted",
     "node A lock\n"
     "start A\n"
     "down\n"
     "create A CONNLOSS\n"
     "list A CONNLOSS\n"
     "up\n"
     "list A ok A1\n"
     "expect A:create A:list A:sync A:list A:find:A1\n"
     "found A ok other\n"
     "expect A:list\n"
     "list A ok A1\n"
     "expect A:create A:list\n"},
    {"a caller that gives up while its create is out has the node deleted when it answers",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "leave A\n"
     "expect -\n"
     "create A ok 1\n"
     "expect A:delete\n"
     "state A DELETING\n"
     "list A ok A1\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"
     "detach A\n"
     "expect A:free\n"},
    /* A node comes back to HELD from DELETING only as a refused release
     * of a taken hold: one its caller left is reported. */
    {"a left node moved from deleting to held is reported",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "leave A\n"
     "create A ok 1\n"
     "expect A:delete\n"
     "state A DELETING\n"
     "force A HELD\n"
     "expect A:broken A:wake\n"
     "state A HELD\n"},
    {"a waiter that gives up deletes its node",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1\n"
     "verdict A ETIMEDOUT past\n"
     "leave A\n"
     "expect A:delete\n"
     "delete A ok\n"
     "expect A:wake\n"
     "detach A\n"
     "own A ok\n"
     "ahead A 0 ok\n"
     "expect A:free\n"},
    {"a cancelled waiter's verdict is ECANCELED, its own or the client's",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1\n"
     "verdict A ECANCELED cancelled\n"
     "verdict A ECANCELED client\n"
     "verdict A 1\n"
     "cancel\n"
     "verdict A ECANCELED\n"},
    {"a refused release keeps the node and the hold",
     RELEASING_A
     "delete A NOAUTH\n"
     "expect A:wake\n"
     "state A HELD\n"
     "err A ENOAUTH\n"},
    {"a release whose node someone else deleted first says ELOST",
     RELEASING_A
     "delete A NONODE\n"
     "expect A:wake\n"
     "state A GONE\n"
     "err A ELOST\n"},
    /* A release whose delete cannot be sent at all (no memory to marshal
     * it) is refused as the server would refuse it: the hold stays, and
     * the caller hears why at once, not after a retry that succeeded
     * (its node gone, its error still said, as if kept). */
    {"a release whose delete cannot be sent keeps the hold and says why",
     CORE_TAKEN_A
     "fail MARSHALLING\n"
     "release A\n"
     "expect A:delete A:wake\n"
     "state A HELD\n"
     "err A EZK\n"
     "release A\n"
     "expect A:delete\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"
     "err A 0\n"},
    {"a release whose answer is lost deletes again on reconnect",
     RELEASING_A
     "down\n"
     "delete A CONNLOSS\n"
     "state A DELETING\n"
     "expect -\n"
     "up\n"
     "expect A:delete\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"},
    /* The caller of a release waits for the server's word: a refusal of
     * the delete sent again after a lost answer is that word, as it is for
     * the first one (an ACL that refuses for good would keep it waiting). */
    {"a release whose answer is lost, then refused, says so and keeps the hold",
     "node A lock\n"
     "start A\n"
     "create A ok 1\n"
     "list A ok A1\n"
     "own A ok\n"
     "taken A\n"
     "release A\n"
     "down\n"
     "delete A CONNLOSS\n"
     "up\n"
     "expect A:create A:list A:own A:wake A:delete A:delete\n"
     "delete A NOAUTH\n"
     "expect A:wake\n"
     "state A HELD\n"
     "err A ENOAUTH\n"
     "release A\n"
     "expect A:delete\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"
     "err A 0\n"},
    /* ... and so does a delete sent again that cannot be sent at all (no
     * memory to marshal it, say), as for the first one: the caller hears
     * why and keeps the hold, which the core no longer deletes behind it. */
    {"a release whose answer is lost, then not sent again, says so and keeps the hold",
     "node A lock\n"
     "start A\n"
     "create A ok 1\n"
     "list A ok A1\n"
     "own A ok\n"
     "taken A\n"
     "release A\n"
     "down\n"
     "delete A CONNLOSS\n"
     "fail MARSHALLING\n"
     "up\n"
     "expect A:create A:list A:own A:wake A:delete A:delete A:wake\n"
     "state A HELD\n"
     "err A EZK\n"
     "wait 200\n"
     "expect -\n"
     "release A\n"
     "expect A:delete\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"
     "err A 0\n"},
    /* A listing sent as the connection broke, before the client said so,
     * goes out on the next connection, ahead of the recovery's sync: the
     * server it reaches may not have the lost create yet. */
    {"a lost create is judged by the listing after the recovery's sync, not one sent before",
     "node A lock\n"
     "start A\n"
     "down\n"
     "create A CONNLOSS\n"
     "up\n"
     "expect A:create A:list A:sync\n"
     "list A NONODE\n"
     "expect A:list\n"
     "state A RECOVER\n"
     "sync A\n"
     "list A ok x:lock-3 A4\n"
     "expect A:find:A4\n"},
    /* A recovery's listing, made while disconnected, leaves on the next
     * connection ahead of the next recovery's sync: a lagging server may
     * answer it without the node the lost create made. */
    {"a lost create is not judged by an earlier recovery's listing, sent before the latest sync",
     "node A lock\n"
     "start A\n"
     "down\n"
     "create A CONNLOSS\n"
     "list A CONNLOSS\n"
     "up\n"
     "expect A:create A:list A:sync A:list\n"
     "down\n"
     "sync A CONNLOSS\n"
     "up\n"
     "expect A:sync\n"
     "list A ok x:lock-3\n"
     "expect A:list\n"
     "state A RECOVER\n"
     "sync A\n"
     "list A ok x:lock-3 A4\n"
     "expect A:find:A4\n"},
    {"a refused release of a node someone else deleted meanwhile tells its loss",
     "node A lock\n"
     "start A\n"
     "create A ok 1\n"
     "list A ok A1\n"
     "own A ok\n"
     "taken A\n"
     "release A\n"
     "expect A:create A:list A:own A:wake A:delete\n"
     "deleted A1\n"
     "delete A NOAUTH\n"
     "state A HELD\n"
     "expect A:wake A:own\n"
     "own A NONODE\n"
     "expect A:lost A:wake\n"
     "state A LOST\n"},
    /* A read of the node's data, sent as someone wrote into it, answers
     * that the node is gone while the release's delete is out; the delete
     * is refused (the parent's ACL is checked first) and the node held
     * again: it must be watched again, or its loss is never told. */
    {"a refused release after an own-data read found the node gone tells its loss",
     "node A lock\n"
     "start A\n"
     "create A ok 1\n"
     "list A ok A1\n"
     "expect A:create A:list A:own A:wake\n"
     "taken A\n"
     "own A ok 1\n"
     "expect A:readown\n"
     "ownstate A ASKED\n"
     "release A\n"
     "expect A:delete\n"
     "owndata A NONODE\n"
     "ownstate A OFF\n"
     "delete A NOAUTH\n"
     "state A HELD\n"
     "expect A:wake A:own\n"
     "own A NONODE\n"
     "expect A:lost A:wake\n"
     "state A LOST\n"},
    {"a lost create whose recovery may not list fails, and looks for its node again later",
     "node A lock\n"
     "start A\n"
     "create A CONNLOSS\n"
     "expect A:create A:list A:sync\n"
     "list A CONNLOSS\n"
     "sync A\n"
     "list A NOAUTH\n"
     "verdict A ENOAUTH\n"
     "state A BACKOFF\n"
     "expect A:list A:wake A:kick A:wake\n"
     "leave A\n"
     "wait 110\n"
     "state A RECOVER\n"
     "expect A:sync A:list\n"
     "sync A\n"
     "list A ok x:lock-3 A4\n"
     "expect A:find:A4\n"
     "found A ok self\n"
     "state A DELETING\n"
     "expect A:delete\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"},
    {"a refused delete of a node nobody holds is sent again with backoff",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "own A ok\n"
     "ahead A 0 ok\n"
     "leave A\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1 A:delete\n"
     "delete A NOAUTH\n"
     "expect A:wake A:kick\n"
     "state A BACKOFF\n"
     "verdict A ENOAUTH\n"
     "wait 50\n"
     "expect -\n"
     "wait 60\n"
     "expect A:delete\n"
     "state A DELETING\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"},
    {"a backoff due while disconnected is sent on reconnect",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "leave A\n"
     "delete A NOAUTH\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1 A:delete A:wake A:kick\n"
     "down\n"
     "wait 200\n"
     "state A DELETING\n"
     "expect -\n"
     "up\n"
     "expect A:delete\n"},
    {"a backoff ends with the session",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "leave A\n"
     "delete A NOAUTH\n"
     "detach A\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1 A:delete A:wake A:kick\n"
     "expire\n"
     "expect A:wake A:wake\n"
     "own A EXPIRED\n"
     "ahead A 0 EXPIRED\n"
     "expect A:free\n"
     "freed A\n"},
    {"a missing lock path is created, then its parents, then the node",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "create A NONODE\n"
     "expect A:parent:/locks/t A:create\n"
     "list A NONODE\n"
     "expect A:list\n"
     "parent A NONODE\n"
     "create A NONODE\n"
     "expect A:parent:/locks A:parent:/locks/t A:create\n"
     "list A NONODE\n"
     "expect A:list\n"
     "parent A ok\n"
     "parent A ok\n"
     "create A ok 1\n"
     "expect A:own\n"
     "list A ok A1\n"
     "expect A:wake\n"
     "state A HELD\n"},
    {"a lock parent the server refuses ends the attempt with ENOAUTH",
     "node A lock\n"
     "start A\n"
     "create A NONODE\n"
     "expect A:create A:list A:parent:/locks/t A:create\n"
     "parent A NOAUTH\n"
     "create A NONODE\n"
     "expect A:wake\n"
     "state A GONE\n"
     "err A ENOAUTH\n"},
    {"a listing larger than a request may be ends the attempt with EQUEUE",
     "maxreq 4096\n"
     "node A lock\n"
     "start A\n"
     "create A ok 9\n"
     "list A ok " CORE_LONG_LISTING_A9
     "expect A:create A:list A:own A:delete A:wake\n"
     "err A EQUEUE\n"},
    {"a lock path removed under a waiter queues it again",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "expect A:create A:list A:own\n"
     "list A NONODE\n"
     "expect A:create A:list\n"},
    {"a listing the server refuses ends the attempt and deletes the node",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "expect A:create A:list A:own\n"
     "list A NOAUTH\n"
     "expect A:delete A:wake\n"
     "err A ENOAUTH\n"},
    {"a try once returns on the policy's first answer",
     "node A lock once\n"
     "start A\n"
     "create A ok 2\n"
     "verdict A 1\n"
     "list A ok x:lock-1 A2\n"
     "expect A:create A:list A:own A:wake A:ahead0:x:lock-1\n"
     "verdict A ETIMEDOUT\n"},
    {"a try once does not wait for a reconnection",
     "node A lock once\n"
     "start A\n"
     "expect A:create A:list\n"
     "down\n"
     "verdict A ECONNLOSS\n"},
    {"a recovery that finds the node of a caller who left deletes it",
     "node A lock\n"
     "start A\n"
     "down\n"
     "create A CONNLOSS\n"
     "list A CONNLOSS\n"
     "leave A\n"
     "up\n"
     "list A ok A1 x:lock-2\n"
     "expect A:create A:list A:sync A:list A:find:A1\n"
     "found A ok self\n"
     "expect A:delete\n"
     "state A DELETING\n"
     "delete A ok\n"
     "expect A:wake\n"},
    {"a recovery for a caller who left that finds nothing is done",
     "node A lock\n"
     "start A\n"
     "down\n"
     "create A CONNLOSS\n"
     "list A CONNLOSS\n"
     "leave A\n"
     "up\n"
     "list A ok x:lock-2\n"
     "expect A:create A:list A:sync A:list A:wake\n"
     "state A GONE\n"},
    {"a held node given up by its caller is deleted",
     TAKEN_A_OWN_OUT
     "leave A\n"
     "expect A:delete\n"
     "state A DELETING\n"},
    {"a downgrade node taken away before its caller took it is lost, not made anew",
     "node A read down=3\n"
     "start A\n"
     "expect A:create A:list\n"
     "create A ok\n"
     "list A ok x:__WRIT__3 A3\n"
     "expect A:own A:wake\n"
     "state A HELD\n"
     "deleted A3\n"
     "expect A:wake\n"
     "state A GONE\n"
     "err A ELOST\n"},
    /* After a reconnection on the same session the server fires the
     * watches missed meanwhile in its own order (data watches before
     * existence watches): the node ahead's deletion can come before our
     * own node's. The own watch set before is no proof then. */
    {"after a reconnection a waiter does not take the lock on its predecessor's deletion alone",
     CORE_WAITING_A
     "down\n"
     "up\n"
     "deleted x:lock-1\n"
     "state A QUEUED\n"
     "expect A:own A:list\n"
     "deleted A2\n"
     "expect A:create\n"
     "state A CREATING\n"},
    {"after a reconnection a waiter whose own node is confirmed again takes the lock by handoff",
     CORE_WAITING_A
     "down\n"
     "up\n"
     "expect A:own\n"
     "own A ok\n"
     "deleted x:lock-1\n"
     "expect A:wake\n"
     "state A HELD\n"},
    /* Any watch event takes a releasing node off the routing lists; a
     * refused release must put it back, or its loss is never told. */
    {"a refused release after another node's watch event still tells a later loss",
     CORE_TAKEN_A
     "release A\n"
     "expect A:delete\n"
     "deleted x:lock-5\n"
     "expect -\n"
     "delete A NOAUTH\n"
     "expect A:wake A:own\n"
     "state A HELD\n"
     "own A ok\n"
     "deleted A1\n"
     "expect A:lost A:wake\n"
     "state A LOST\n"},
    /* ... and if its own node is deleted meanwhile, that event reaches no
     * node: the refused release must watch the node again, not trust a
     * watch the deletion spent. */
    {"a refused release after its node's unrouted deletion watches again and tells the loss",
     CORE_TAKEN_A
     "release A\n"
     "expect A:delete\n"
     "deleted x:lock-5\n"
     "expect -\n"
     "deleted A1\n"
     "expect -\n"
     "delete A NOAUTH\n"
     "expect A:wake A:own\n"
     "state A HELD\n"
     "own A NONODE\n"
     "expect A:lost A:wake\n"
     "state A LOST\n"},
    {"a held node whose changed data may not be read watches on without reading again",
     CORE_TAKEN_A
     "changed A1\n"
     "expect A:readown\n"
     "owndata A NOAUTH\n"
     "expect A:own\n"
     "own A ok 1\n"
     "expect -\n"
     "changed A1\n"
     "expect A:readown\n"
     "owndata A NOAUTH\n"
     "expect A:own\n"
     "own A ok 2\n"
     "expect -\n"
     "changed A1\n"
     "expect A:readown\n"
     "owndata A ok __REVOKE__ 3\n"
     "expect A:revoke\n"
     "deleted A1\n"
     "expect A:lost A:wake\n"},
    /* A connection error stalls the whole node; a release sent after it,
     * while disconnected, goes out on the next connection and must not be
     * sent twice (a second refusal found the node held). */
    {"a release made while disconnected after a stall is sent once",
     TAKEN_A_OWN_OUT
     "down\n"
     "own A CONNLOSS\n"
     "release A\n"
     "expect A:delete\n"
     "up\n"
     "expect -\n"
     "delete A NOAUTH\n"
     "expect A:wake A:own\n"
     "state A HELD\n"
     "err A ENOAUTH\n"
     "own A ok\n"
     "pending A 0\n"},
    /* A bug of the engine's never aborts the process: it is said, and the
     * hold it concerns is told lost. */
    {"a move the table forbids is reported and its hold told lost, without an abort",
     CORE_TAKEN_A
     "force A QUEUED\n"
     "expect A:broken A:lost\n"
     "state A QUEUED\n"
     "err A ELOST\n"
     "verdict A ELOST\n"},
    /* The watch on its own node has a table of its own, kept the same way. */
    {"a move of the own watch its table forbids is reported and the hold told lost, no abort",
     CORE_TAKEN_A
     "ownstate A SET\n"
     "forceown A BLIND\n"
     "expect A:broken A:lost\n"
     "ownstate A BLIND\n"
     "state A HELD\n"
     "err A ELOST\n"},
    /* The loss is told once: a real loss after that report tells nothing more. */
    {"a hold told lost for a forbidden move of its own watch is not told again when lost",
     CORE_TAKEN_A
     "ownstate A SET\n"
     "forceown A BLIND\n"
     "expect A:broken A:lost\n"
     "deleted A1\n"
     "expect A:wake\n"
     "state A LOST\n"
     "err A ELOST\n"},
    {"a held node's own watch: read when written to early, blind when refused, off when deleted",
     "node A lock\n"
     "start A\n"
     "create A ok 1\n"
     "list A ok A1\n"
     "expect A:create A:list A:own A:wake\n"
     "taken A\n"
     "own A ok 1\n"
     "expect A:readown\n"
     "ownstate A ASKED\n"
     "owndata A NOAUTH\n"
     "expect A:own\n"
     "ownstate A BLIND\n"
     "deleted A1\n"
     "expect A:lost A:wake\n"
     "ownstate A OFF\n"
     "state A LOST\n"},
    {"a move of the listing its table forbids is reported and the hold told lost, no abort",
     CORE_TAKEN_A
     "forcelisting A OUT_AGAIN\n"
     "expect A:broken A:lost\n"
     "state A HELD\n"
     "err A ELOST\n"},
    /* How a waiter reads the nodes ahead: data watches, until one refuses
     * it; then the lock path's children, one child watch at a time, until
     * it queues again with a new node. */
    {"a waiter refused the node ahead reads the children until it queues again",
     "node A write\n"
     "start A\n"
     "create A ok 2\n"
     "own A ok\n"
     "list A ok x:__WRIT__1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:__WRIT__1\n"
     "reading A NODES\n"
     "armed A 0 ON\n"
     "ahead A 0 NOAUTH\n"
     "expect A:kids\n"
     "reading A KIDS_SET\n"
     "child\n"
     "expect A:kids\n"
     "reading A KIDS_SET\n"
     "kids A NONODE\n"
     "expect A:create A:list\n"
     "reading A NODES\n"
     "armed A 0 OFF\n"},
    {"a waiter reading the children whose own node goes queues again reading the nodes",
     "node A write\n"
     "start A\n"
     "create A ok 2\n"
     "own A ok\n"
     "list A ok x:__WRIT__1 A2\n"
     "ahead A 0 NOAUTH\n"
     "expect A:create A:list A:own A:ahead0:x:__WRIT__1 A:kids\n"
     "reading A KIDS_SET\n"
     "deleted A2\n"
     "expect A:create A:list\n"
     "reading A NODES\n"
     "state A CREATING\n"},
    {"a move of the reading its table forbids is reported and the hold told lost, no abort",
     CORE_TAKEN_A
     "reading A NODES\n"
     "forcereading A KIDS_SET\n"
     "expect A:broken A:lost\n"
     "reading A KIDS_SET\n"
     "state A HELD\n"
     "err A ELOST\n"},
    /* Arming a watch that is on already would ask for it twice. */
    {"a watch on the node ahead armed twice is reported, and the waiter goes on",
     CORE_WAITING_A
     "armed A 0 ON\n"
     "forcearmed A 0 ON\n"
     "expect A:broken\n"
     "armed A 0 ON\n"
     "state A QUEUED\n"
     "deleted x:lock-1\n"
     "expect A:wake\n"
     "state A HELD\n"
     "armed A 0 OFF\n"},
    {"a move of the own watch its table forbids, while queued, is reported",
     "node A lock\n"
     "start A\n"
     "create A ok 1\n"
     "expect A:create A:list A:own\n"
     "ownstate A ASKED\n"
     "forceown A OFF\n"
     "forceown A BLIND\n"
     "expect A:broken\n"
     "ownstate A BLIND\n"
     "state A QUEUED\n"},
    {"past the 32-bit wrap a sequence is negative: a name not of ours, deleted by that name",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "create A ok -2147483647\n"
     "expect A:delete A:wake\n"
     "state A DELETING\n"
     "err A EZK\n"
     "verdict A EZK\n"
     "list A ok A1\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"},
    {"a lost create whose node came past the 32-bit wrap deletes it by its name, and fails",
     "node A lock\n"
     "start A\n"
     "create A CONNLOSS\n"
     "expect A:create A:list A:sync\n"
     "list A CONNLOSS\n"
     "sync A\n"
     "list A ok x:lock-3 A-2147483647\n"
     "expect A:list A:delete A:wake\n"
     "state A DELETING\n"
     "err A EZK\n"
     "verdict A EZK\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"},
    /* Someone else made a node with our uuid that came past the wrap: the
     * lost create's own node, listed beside it, is ours to recover; the
     * other is not taken for ours (deleting it would leave ours orphaned). */
    {"a lost create finds its own node beside a wrapped name with its uuid, and recovers it",
     "node A lock\n"
     "start A\n"
     "create A CONNLOSS\n"
     "expect A:create A:list A:sync\n"
     "list A CONNLOSS\n"
     "sync A\n"
     "list A ok x:lock-3 A5 A-2147483648\n"
     "expect A:list A:find:A5\n"
     "state A RECOVER\n"},
    {"a create answered with a name not of ours deletes the node by that name",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "create A ok raw\n"
     "expect A:delete A:wake\n"
     "state A DELETING\n"
     "err A EZK\n"
     "verdict A EZK\n"
     "list A ok A1\n"
     "down\n"
     "delete A CONNLOSS\n"
     "up\n"
     "expect A:sync A:list\n"
     "state A RECOVER\n"
     "list A ok A1\n"
     "expect A:find:A1\n"
     "found A ok self\n"
     "expect A:delete\n"
     "delete A ok\n"
     "expect A:wake\n"
     "state A GONE\n"},
};

/* The node's table: every move must be taken by some row above. */
static const char *const node_states[ZKL__N_COUNT] = {
    "NEW", "CREATING", "RECOVER", "QUEUED", "HELD", "RELEASING", "DELETING", "BACKOFF",
    "LOST", "GONE"};

int main(void)
{
    const core_table armed = {ZKL__ARM_COUNT, core_script_armed_states, zkl__cnode_armed_legal,
                              core_script_amoves, NULL};
    const core_table reading = {ZKL__READING_COUNT, core_script_reading_states,
                                zkl__cnode_reading_legal, core_script_rdmoves, &armed};
    const core_table listing = {ZKL__L_COUNT, core_script_listing_states,
                                zkl__cnode_listing_legal, core_script_lmoves, &reading};
    const core_table own = {ZKL__OWN_COUNT, core_script_own_states, zkl__cnode_own_legal,
                            core_script_omoves, &listing};
    const core_table t = {ZKL__N_COUNT, node_states, zkl__cnode_legal, core_script_moves, &own};
    return core_script_main("core_node", cases, (int)(sizeof cases / sizeof cases[0]), &t);
}
