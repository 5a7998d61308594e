/* The engine core on each recipe's policy and on what only timing reaches
 * against a real server: shared listings, walking back, long queues, the
 * held-alone proof, prefetch, revocation, refused reads and sends. Each row
 * is a script (tests/core_script.h); no ZooKeeper. */
#include "core_script.h"

/* A holds alone, then releases, everything answered. */
#define ALONE_A_RELEASED                                                                           \
    CORE_OPEN_A "taken A\n"                                                                        \
                "release A\n"                                                                      \
                "delete A ok\n"                                                                    \
                "detach A\n"                                                                       \
                "expect A:create A:list A:own A:wake A:delete A:wake A:free\n"

/* ALONE_A_RELEASED, then B holds alone and releases, everything answered. */
#define ALONE_B_RELEASED                                                                           \
    ALONE_A_RELEASED "node B lock\n"                                                               \
                     "start B\n"                                                                   \
                     "create B ok 2\n"                                                             \
                     "list B ok B2\n"                                                              \
                     "taken B\n"                                                                   \
                     "release B\n"                                                                 \
                     "delete B ok\n"                                                               \
                     "expect B:create B:list B:own B:dir B:wake B:delete B:wake\n"

/* B waits behind C, its listing behind C's; then (a handoff, forced) B
 * holds and its caller takes the hold, C's listing still out. */
#define B_HELD_BEHIND_C_LISTING                                                                    \
    "node C lock\n"                                                                                \
    "node B lock\n"                                                                                \
    "start C\n"                                                                                    \
    "start B\n"                                                                                    \
    "create C ok 1\n"                                                                              \
    "create B ok 2\n"                                                                              \
    "expect C:create C:list B:create C:own B:own\n"                                                \
    "own B ok\n"                                                                                   \
    "force B HELD\n"                                                                               \
    "expect B:wake\n"                                                                              \
    "taken B\n"

static const core_case cases[] = {
    /* ---- the read-write lock ---- */
    {"a reader holds with only readers ahead",
     "node A read\n"
     "start A\n"
     "create A ok 3\n"
     "list A ok x:__READ__1 y:__READ__2 A3\n"
     "expect A:create A:list A:own A:wake\n"
     "state A HELD\n"},
    {"a reader waits behind a writer and lists again when it goes",
     "node A read\n"
     "start A\n"
     "create A ok 2\n"
     "own A ok\n"
     "list A ok x:__WRIT__1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:__WRIT__1\n"
     "ahead A 0 ok\n"
     "deleted x:__WRIT__1\n"
     "expect A:list\n"
     "list A ok A2\n"
     "expect A:wake\n"},
    {"a reader watches the nearest exclusive node ahead, not the first",
     "node A read\n"
     "start A\n"
     "create A ok 4\n"
     "list A ok x:__WRIT__1 y:__READ__2 x:__WRIT__3 A4\n"
     "expect A:create A:list A:own A:ahead0:x:__WRIT__3\n"},
    {"a reader takes another recipe's node ahead for an exclusive one",
     "node A read\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:lock-1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:lock-1\n"},
    {"a writer waits behind readers, watching the node just ahead",
     "node A write\n"
     "start A\n"
     "create A ok 3\n"
     "list A ok x:__READ__1 y:__READ__2 A3\n"
     "expect A:create A:list A:own A:ahead0:y:__READ__2\n"},
    {"a writer holds when first",
     "node A write\n"
     "start A\n"
     "create A ok 4\n"
     "list A ok A4 x:__READ__5\n"
     "expect A:create A:list A:own A:wake\n"},
    {"a downgrade reader is created with its writer's sequence and holds at once",
     "node A read down=7\n"
     "start A\n"
     "expect A:create A:list\n"
     "create A ok\n"
     "list A ok x:__WRIT__5 A7 y:__WRIT__7\n"
     "expect A:own A:wake\n"
     "state A HELD\n"},
    {"a downgrade reader whose writer's node is gone when it lists is lost, and deleted",
     "node A read down=7\n"
     "start A\n"
     "expect A:create A:list\n"
     "create A ok\n"
     "list A ok A7 y:__WRIT__9\n"
     "expect A:own A:delete A:wake\n"
     "verdict A ELOST\n"},
    {"a lease beyond the limit waits for room: the gate it was made under went first",
     "node A lease max=3\n"
     "start A\n"
     "create A ok 6\n"
     "list A ok x:zkl-lease-2 y:zkl-lease-x2-4 A6\n"
     "expect A:create A:list A:own A:ahead0:x:zkl-lease-2\n"
     "state A QUEUED\n"
     "deleted x:zkl-lease-2\n"
     "expect A:list\n"
     "list A ok y:zkl-lease-x2-4 A6\n"
     "expect A:wake\n"
     "state A HELD\n"},
    {"a watched node whose data changes is watched again",
     "node A read\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:__WRIT__1 A2\n"
     "ahead A 0 ok\n"
     "expect A:create A:list A:own A:ahead0:x:__WRIT__1\n"
     "changed x:__WRIT__1\n"
     "expect A:ahead0:x:__WRIT__1\n"
     "state A QUEUED\n"},
    {"a waiter refused the node ahead waits on the lock path's children instead",
     "node A write\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:__WRIT__1 A2\n"
     "expect A:create A:list A:own A:ahead0:x:__WRIT__1\n"
     "ahead A 0 NOAUTH\n"
     "expect A:kids\n"
     "kids A ok x:__WRIT__1 A2\n"
     "expect -\n"
     "child\n"
     "expect A:kids\n"
     "kids A ok A2\n"
     "expect A:wake\n"},
    {"a lock path gone under a waiter on its children queues it again",
     "node A write\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:__WRIT__1 A2\n"
     "ahead A 0 NOAUTH\n"
     "expect A:create A:list A:own A:ahead0:x:__WRIT__1 A:kids\n"
     "kids A NONODE\n"
     "expect A:create A:list\n"},
    /* ---- the counting semaphore ---- */
    {"a gate holds with room among the leases",
     "node A gate max=2\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:zkl-lease-1 A2\n"
     "expect A:create A:list A:own A:wake\n"},
    {"a gate without room watches every lease",
     "node A gate max=2\n"
     "start A\n"
     "create A ok 3\n"
     "list A ok x:zkl-lease-1 y:zkl-lease-2 A3\n"
     "expect A:create A:list A:own A:member:x:zkl-lease-1 A:member:y:zkl-lease-2\n"
     "member A ok\n"
     "member A ok\n"
     "deleted y:zkl-lease-2\n"
     "expect A:list\n"
     "list A ok x:zkl-lease-1 A3\n"
     "expect A:wake\n"},
    {"a gate behind another waiter watches it alone",
     "node A gate max=1\n"
     "start A\n"
     "create A ok 3\n"
     "list A ok x:zkl-lease-1 y:zkl-wait-2 A3\n"
     "expect A:create A:list A:own A:ahead0:y:zkl-wait-2\n"},
    {"a gate asking for two leases waits while only one is free",
     "node A gate max=3 need=2\n"
     "start A\n"
     "create A ok 3\n"
     "list A ok x:zkl-lease-1 y:zkl-lease-2 A3\n"
     "expect A:create A:list A:own A:member:x:zkl-lease-1 A:member:y:zkl-lease-2\n"},
    {"a lease standing for several counts them all",
     "node A gate max=3\n"
     "start A\n"
     "create A ok 3\n"
     "list A ok x:zkl-lease-x3-1 A3\n"
     "expect A:create A:list A:own A:member:x:zkl-lease-x3-1\n"},
    {"a lease node holds as soon as it exists",
     "node A lease need=2\n"
     "start A\n"
     "create A ok 4\n"
     "list A ok x:zkl-lease-1 y:zkl-wait-3 A4\n"
     "expect A:create A:list A:own A:wake\n"},
    {"a watched lease gone before its watch was set lists again",
     "node A gate max=1\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:zkl-lease-1 A2\n"
     "expect A:create A:list A:own A:member:x:zkl-lease-1\n"
     "member A NONODE\n"
     "expect A:list\n"},
    {"a watched lease whose data changes is watched again",
     "node A gate max=1\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:zkl-lease-1 A2\n"
     "member A ok\n"
     "expect A:create A:list A:own A:member:x:zkl-lease-1\n"
     "changed x:zkl-lease-1\n"
     "expect A:member:x:zkl-lease-1\n"},
    {"a lease the gate may not read is waited on through the children",
     "node A gate max=1\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:zkl-lease-1 A2\n"
     "expect A:create A:list A:own A:member:x:zkl-lease-1\n"
     "member A NOAUTH\n"
     "expect A:kids\n"},
    {"a lease watch refused for another reason ends the attempt",
     "node A gate max=1\n"
     "start A\n"
     "create A ok 2\n"
     "list A ok x:zkl-lease-1 A2\n"
     "expect A:create A:list A:own A:member:x:zkl-lease-1\n"
     "member A APIERROR\n"
     "expect A:delete A:wake\n"
     "err A EZK\n"},
    /* ---- the mutex: prefetch, walking back, long queues ---- */
    {"with prefetch a waiter also watches the node two ahead",
     "node A lock prefetch\n"
     "start A\n"
     "create A ok 3\n"
     "list A ok x:lock-1 y:lock-2 A3\n"
     "expect A:create A:list A:own A:ahead0:y:lock-2 A:ahead1:x:lock-1\n"},
    {"with prefetch the node two ahead going makes the node ahead the first",
     "node A lock prefetch\n"
     "start A\n"
     "create A ok 3\n"
     "own A ok\n"
     "list A ok x:lock-1 y:lock-2 A3\n"
     "ahead A 0 ok\n"
     "ahead A 1 ok\n"
     "expect A:create A:list A:own A:ahead0:y:lock-2 A:ahead1:x:lock-1\n"
     "deleted x:lock-1\n"
     "expect -\n"
     "deleted y:lock-2\n"
     "expect A:wake\n"},
    {"in a short queue a waiter lists rather than walk past several nodes",
     "node A lock\n"
     "start A\n"
     "create A ok 4\n"
     "own A ok\n"
     "list A ok x:lock-1 y:lock-2 x:lock-3 A4\n"
     "ahead A 0 ok\n"
     "expect A:create A:list A:own A:ahead0:x:lock-3\n"
     "deleted x:lock-3\n"
     "expect A:list\n"},
    {"a watched node seen gone while a listing is out is skipped in its answer",
     "node A lock prefetch\n"
     "start A\n"
     "create A ok 4\n"
     "own A ok\n"
     "list A ok x:lock-1 y:lock-2 x:lock-3 A4\n"
     "ahead A 0 ok\n"
     "ahead A 1 ok\n"
     "expect A:create A:list A:own A:ahead0:x:lock-3 A:ahead1:y:lock-2\n"
     "deleted y:lock-2\n"
     "expect A:list\n"
     "deleted x:lock-3\n"
     "expect -\n"
     "list A ok x:lock-1 x:lock-3 A4\n"
     "expect A:ahead0:x:lock-1\n"},
    {"deep in a long queue a waiter lists when the node ahead goes, then walks once walking pays",
     "node A lock\n"
     "start A\n"
     "create A ok 90\n"
     "own A ok\n"
     "list A ok x:lock-70 x:lock-71 x:lock-72 x:lock-73 x:lock-74 x:lock-75 x:lock-76 "
     "x:lock-77 x:lock-78 x:lock-79 x:lock-80 x:lock-81 x:lock-82 x:lock-83 x:lock-84 x:lock-85 "
     "x:lock-86 x:lock-87 x:lock-88 x:lock-89 A90 y:lock-91\n"
     "expect A:create A:list A:own A:ahead0:x:lock-89\n"
     "ahead A 0 ok\n"
     "deleted x:lock-89\n"
     "expect A:list\n"
     "list A ok x:lock-70 x:lock-71 x:lock-72 x:lock-73 x:lock-74 x:lock-75 x:lock-76 "
     "x:lock-77 x:lock-78 x:lock-79 x:lock-80 x:lock-81 x:lock-82 x:lock-83 x:lock-84 x:lock-85 "
     "x:lock-86 x:lock-87 x:lock-88 A90 y:lock-91\n"
     "expect A:ahead0:x:lock-88\n"
     "ahead A 0 ok\n"
     "deleted x:lock-88\n"
     "expect A:ahead0:x:lock-87\n"
     "ahead A 0 NONODE\n"
     "expect A:list\n"},
    {"a long queue's listing is read nearest first, without sorting it all",
     "node A lock\n"
     "start A\n"
     "create A ok 80\n"
     "list A ok y:lock-91 x:lock-1 x:lock-2 x:lock-3 x:lock-4 x:lock-5 x:lock-6 x:lock-7 "
     "x:lock-8 x:lock-9 x:lock-10 x:lock-11 x:lock-12 x:lock-13 x:lock-14 x:lock-15 x:lock-16 "
     "x:lock-17 x:lock-18 x:lock-19 x:lock-20 x:lock-21 x:lock-22 x:lock-23 x:lock-24 "
     "x:lock-25 x:lock-26 x:lock-27 x:lock-28 x:lock-29 x:lock-30 x:lock-31 x:lock-32 "
     "x:lock-33 x:lock-34 x:lock-35 x:lock-36 x:lock-37 x:lock-38 x:lock-39 x:lock-40 "
     "x:lock-41 x:lock-42 x:lock-43 x:lock-44 x:lock-45 x:lock-46 x:lock-47 x:lock-48 "
     "x:lock-49 x:lock-50 x:lock-51 x:lock-52 x:lock-53 x:lock-54 x:lock-55 x:lock-56 "
     "x:lock-57 x:lock-58 x:lock-59 x:lock-60 x:lock-61 x:lock-62 x:lock-63 x:lock-64 "
     "x:lock-65 x:lock-66 x:lock-67 A80 x:lock-79\n"
     "expect A:create A:list A:own A:ahead0:x:lock-79\n"},
    /* ---- listings shared by one client's waiters ---- */
    {"two waiters of one client share the listing in flight",
     "node A lock\n"
     "node B lock\n"
     "start A\n"
     "start B\n"
     "expect A:create A:list B:create\n"
     "create A ok 1\n"
     "create B ok 2\n"
     "list A ok A1\n"
     "expect A:own B:own B:list A:wake\n"
     "list B ok A1 B2\n"
     "expect B:ahead0:A1\n"},
    {"a third waiter joins the same next listing",
     "node A lock\n"
     "node B lock\n"
     "node C lock\n"
     "start A\n"
     "start B\n"
     "start C\n"
     "create A ok 1\n"
     "create B ok 2\n"
     "create C ok 3\n"
     "expect A:create A:list B:create C:create A:own B:own C:own\n"
     "list A ok A1\n"
     "expect B:list A:wake\n"
     "list B ok A1 B2 C3\n"
     "expect B:ahead0:A1 C:ahead0:B2\n"},
    {"waiters whose shared listing cannot be sent wait for the connection",
     "node A lock\n"
     "node B lock\n"
     "start A\n"
     "start B\n"
     "create A ok 1\n"
     "create B ok 2\n"
     "expect A:create A:list B:create A:own B:own\n"
     "fail CONNLOSS\n"
     "list A ok A1\n"
     "expect B:list A:wake\n"
     "down\n"
     "up\n"
     "expect B:list\n"},
    /* A waiter whose listing waits behind another's can come to hold (a
     * handoff, forced here) and lose that hold before the listing is sent:
     * if it then cannot be sent, that concerns only waiters still queued. */
    {"a listing that cannot be sent leaves alone a node held and lost since it asked",
     B_HELD_BEHIND_C_LISTING
     "deleted B2\n"
     "expect B:lost B:wake\n"
     "state B LOST\n"
     "fail NOAUTH\n"
     "list C ok C1 B2\n"
     "expect B:list C:wake\n"
     "state B LOST\n"},
    {"a listing that cannot be sent leaves alone a node held since it asked, its session ended",
     B_HELD_BEHIND_C_LISTING
     "expire\n"
     "expect B:lost B:wake B:wake C:wake C:wake\n"
     "state B LOST\n"
     "fail SESSIONEXPIRED\n"
     "list C ok C1 B2\n"
     "expect B:list\n"
     "state B LOST\n"},
    {"a listing of an ended session holds up no waiter of the next",
     "node A lock\n"
     "start A\n"
     "expect A:create A:list\n"
     "expire\n"
     "expect A:wake A:wake\n"
     "up\n"
     "node B lock\n"
     "start B\n"
     "expect B:create B:list\n"},
    /* ---- the held-alone proof ---- */
    {"a lock path held alone twice lets the third acquire skip its listing",
     ALONE_A_RELEASED "node B lock\n"
                      "start B\n"
                      "create B ok 2\n"
                      "own B ok\n"
                      "list B ok B2\n"
                      "taken B\n"
                      "release B\n"
                      "delete B ok\n"
                      "dir B ok\n"
                      "detach B\n"
                      "expect B:create B:list B:own B:dir B:wake B:delete B:wake B:free\n"
                      "node C lock\n"
                      "start C\n"
                      "expect C:create\n"
                      "create C ok 3\n"
                      "expect C:own C:wake\n"
                      "state C HELD\n"},
    {"a create whose number is not the expected one lists as usual",
     ALONE_B_RELEASED
     "node C lock\n"
     "start C\n"
     "create C ok 5\n"
     "expect C:create C:own C:list\n"},
    {"an event on a lock path held alone ends what its numbers prove",
     ALONE_B_RELEASED
     "changed\n"
     "node C lock\n"
     "start C\n"
     "expect C:create C:list\n"},
    {"a reconnection ends what a lock path's numbers prove",
     ALONE_B_RELEASED
     "down\n"
     "up\n"
     "node C lock\n"
     "start C\n"
     "expect C:create C:list\n"},
    /* ---- revocation and the own node's data ---- */
    {"a revocation request written into a held node is told to its owner",
     CORE_TAKEN_A
     "changed A1\n"
     "expect A:readown\n"
     "owndata A ok __REVOKE__ 1\n"
     "expect A:revoke\n"
     "changed A1\n"
     "owndata A ok other 2\n"
     "expect A:readown\n"},
    {"a held node written to before its watch was set is read at once",
     "node A lock\n"
     "start A\n"
     "create A ok 1\n"
     "list A ok A1\n"
     "expect A:create A:list A:own A:wake\n"
     "own A ok 1\n"
     "expect A:readown\n"
     "owndata A ok __REVOKE__ 1\n"
     "expect A:revoke\n"},
    {"a held node its holder may not read is watched without reading",
     CORE_HELD_A
     "changed A1\n"
     "expect A:readown\n"
     "owndata A NOAUTH\n"
     "expect A:own\n"},
    /* ---- what refuses or fails at once ---- */
    {"a create the server refuses ends the attempt with nothing to delete",
     "node A lock\n"
     "start A\n"
     "create A NOAUTH\n"
     "expect A:create A:list A:wake\n"
     "err A ENOAUTH\n"
     "list A NOAUTH\n"
     "expect -\n"},
    {"a create that cannot be sent for a lost connection is recovered on reconnect",
     "node A lock\n"
     "down\n"
     "fail CONNLOSS\n"
     "start A\n"
     "expect A:create\n"
     "state A CREATING\n"
     "up\n"
     "expect A:sync A:list\n"
     "state A RECOVER\n"},
    {"a watch that cannot be sent for another reason ends the attempt, its node deleted",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "expect A:create A:list A:own\n"
     "fail MARSHALLING\n"
     "list A ok x:lock-1 A2\n"
     "expect A:ahead0:x:lock-1 A:delete A:wake\n"
     "err A EZK\n"},
    {"a delete that cannot be sent for another reason is tried again later",
     CORE_WAITING_A "fail MARSHALLING\n"
                    "leave A\n"
                    "expect A:delete A:wake A:kick\n"
                    "state A BACKOFF\n"},
    {"an answer from a connection the session left is asked again",
     CORE_WAITING_A "deleted x:lock-1\n"
                    "expect A:wake\n"
                    "state A HELD\n"
                    "taken A\n"
                    "release A\n"
                    "expect A:delete\n"
                    "delete A MOVED\n"
                    "expect A:delete\n"
                    "state A DELETING\n"},
};

int main(void)
{
    return core_script_main("core_queue", cases, (int)(sizeof cases / sizeof cases[0]), NULL);
}
