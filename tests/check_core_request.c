/* The engine core's asynchronous request machine (areq.h), without
 * ZooKeeper: each row scripts a request on nodes of the node machine
 * (tests/core_script.h), and the last test checks that the rows take every
 * move of the request's table. */
#include "areq.h"
#include "core_script.h"

/* A request R on A, granted and delivered held. */
#define DELIVERED_R                                                                                \
    CORE_HELD_A "request R on A deadline=1000\n"                                                   \
                "rlook R\n"                                                                        \
                "expect R:take:A R:count:A:0 R:untimed R:ready\n"                                  \
                "rdeliver R 1\n"                                                                   \
                "rstate R HELD\n"

/* A try once request R on A, before the policy's first answer. */
#define ONCE_R                                                                                     \
    "node A lock once\n"                                                                           \
    "start A\n"                                                                                    \
    "create A ok 2\n"                                                                              \
    "own A ok\n"                                                                                   \
    "request R on A deadline=5000\n"                                                               \
    "rlook R\n"

static const core_case cases[] = {
    {"a request whose node holds is taken, counted and delivered held",
     DELIVERED_R "rresult R 0\n"},
    {"a held request's release deletes its node without waiting",
     DELIVERED_R "rrelease R 0\n"
                 "expect R:released:A R:leave:A A:delete R:detach:A\n"
                 "rstate R DONE\n"
                 "delete A ok\n"
                 "expect A:wake A:free\n"},
    {"a released request is not held any more",
     DELIVERED_R "rrelease R 0\n"
                 "expect R:released:A R:leave:A A:delete R:detach:A\n"
                 "rrelease R ENOTHELD\n"
                 "rcancel R EINVAL\n"},
    {"a waiting request goes on waiting",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "rlook R\n"
                    "expect -\n"
                    "rstate R PENDING\n"},
    {"a request waits for its node and is granted when it holds",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "rlook R\n"
                    "deleted x:lock-1\n"
                    "expect A:wake\n"
                    "rlook R\n"
                    "expect R:take:A R:count:A:0 R:untimed R:ready\n"},
    {"a request that times out deletes its node before it is told",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "wait 1000\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                    "rstate R CLEANING\n"
                    "rresult R ETIMEDOUT\n"
                    "rlook R\n"
                    "expect -\n"
                    "delete A ok\n"
                    "expect A:wake\n"
                    "rlook R\n"
                    "expect R:detach:A A:free R:untimed R:ready\n"
                    "rdeliver R 1\n"
                    "rstate R DONE\n"},
    {"a cleaning request waits for the deletes of the parents it made, then is told",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "wait 1000\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                    "runmaking R 1\n"
                    "delete A ok\n"
                    "expect A:wake\n"
                    "rlook R\n"
                    "expect -\n"
                    "rstate R CLEANING\n"
                    "runmaking R 0\n"
                    "rlook R\n"
                    "expect R:detach:A A:free R:untimed R:ready\n"},
    {"a cleaning request that is not answered within its grace is told anyway",
     CORE_WAITING_A "request R on A deadline=100\n"
                    "wait 100\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                    "wait 600\n"
                    "rlook R\n"
                    "expect R:detach:A R:untimed R:ready\n"},
    {"a waiting request cancelled is told ECANCELED once its node is gone",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "rcancel R 0\n"
                    "expect R:look\n"
                    "rlook R\n"
                    "expect R:count:A:ECANCELED R:timer R:leave:A A:delete\n"
                    "rresult R ECANCELED\n"},
    {"a request cancelled while it cleans up only changes its code",
     CORE_WAITING_A "request R on A deadline=100\n"
                    "wait 100\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                    "rcancel R 0\n"
                    "expect -\n"
                    "rresult R ECANCELED\n"},
    {"a granted request cancelled before it is told gives its node up",
     CORE_HELD_A "request R on A deadline=1000\n"
                 "rlook R\n"
                 "expect R:take:A R:count:A:0 R:untimed R:ready\n"
                 "rcancel R 0\n"
                 "expect R:unready R:timer R:look\n"
                 "rstate R PENDING\n"
                 "rlook R\n"
                 "expect R:timer R:leave:A A:delete\n"
                 "rresult R ECANCELED\n"},
    {"a failed request cancelled before it is told only changes its code",
     CORE_WAITING_A "request R on A deadline=100\n"
                    "wait 100\n"
                    "rlook R\n"
                    "delete A ok\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete A:wake R:detach:A A:free "
                    "R:untimed R:ready\n"
                    "rcancel R 0\n"
                    "rresult R ECANCELED\n"
                    "rstate R READY\n"},
    {"a held request cannot be cancelled: it is released",
     DELIVERED_R "rcancel R EBUSY\n"},
    {"a granted request whose node is lost before it is told hears ELOST",
     CORE_HELD_A "request R on A deadline=1000\n"
                 "rlook R\n"
                 "expect R:take:A R:count:A:0 R:untimed R:ready\n"
                 "deleted A1\n"
                 "expect A:lost A:wake\n"
                 "rdeliver R 1\n"
                 "expect R:detach:A A:free\n"
                 "rresult R ELOST\n"
                 "rstate R DONE\n"},
    {"a held request's loss is told through its callback when asked for",
     CORE_HELD_A "request R on A deadline=1000 tell\n"
                 "rlook R\n"
                 "rdeliver R 1\n"
                 "expect R:take:A R:count:A:0 R:untimed R:ready\n"
                 "deleted A1\n"
                 "expect A:lost A:wake\n"
                 "rlook R\n"
                 "expect R:untimed R:ready\n"
                 "rstate R LOSING\n"
                 "rresult R ELOST\n"
                 "rcancel R EBUSY\n"
                 "rdeliver R 1\n"
                 "rstate R LOST\n"
                 "rrelease R ELOST\n"
                 "expect R:released:A R:leave:A R:detach:A A:free\n"
                 "rstate R DONE\n"},
    {"a held request's loss is not told unless asked for",
     DELIVERED_R "deleted A1\n"
                 "expect A:lost A:wake\n"
                 "rlook R\n"
                 "expect -\n"
                 "rstate R HELD\n"
                 "rrelease R ELOST\n"
                 "expect R:released:A R:leave:A R:detach:A A:free\n"},
    {"a session's end tells a held request ELOST when asked for",
     CORE_HELD_A "request R on A deadline=1000 tell\n"
                 "rlook R\n"
                 "rdeliver R 1\n"
                 "expect R:take:A R:count:A:0 R:untimed R:ready\n"
                 "expire\n"
                 "expect A:lost A:wake A:wake\n"
                 "rlook R\n"
                 "expect R:untimed R:ready\n"
                 "rfree R\n"
                 "expect R:unready R:untimed R:released:A R:leave:A R:detach:A A:free\n"
                 "rstate R DONE\n"},
    {"a waiting request freed gives its node up and is never told",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "rfree R\n"
                    "expect R:unready R:untimed R:leave:A A:delete R:detach:A\n"
                    "rstate R DONE\n"},
    {"a cleaning request freed is done",
     CORE_WAITING_A "request R on A deadline=100\n"
                    "wait 100\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                    "rfree R\n"
                    "expect R:unready R:untimed R:leave:A R:detach:A\n"
                    "rstate R DONE\n"},
    {"a ready request freed is never told",
     CORE_HELD_A "request R on A deadline=1000\n"
                 "rlook R\n"
                 "expect R:take:A R:count:A:0 R:untimed R:ready\n"
                 "rfree R\n"
                 "expect R:unready R:untimed R:leave:A A:delete R:detach:A\n"
                 "rstate R DONE\n"},
    {"a losing request freed is done",
     CORE_HELD_A "request R on A deadline=1000 tell\n"
                 "rlook R\n"
                 "rdeliver R 1\n"
                 "deleted A1\n"
                 "rlook R\n"
                 "expect R:take:A R:count:A:0 R:untimed R:ready A:lost A:wake R:untimed R:ready\n"
                 "rrelease R ELOST\n"
                 "expect R:released:A R:leave:A R:detach:A A:free\n"
                 "rstate R DONE\n"},
    {"a request in steps waits on its next node, keeping the one that held",
     CORE_HELD_A "node B lease\n"
                 "request R on A deadline=1000 steps\n"
                 "step R next=B\n"
                 "start B\n"
                 "expect B:create B:list\n"
                 "rlook R\n"
                 "expect R:step:A R:look\n"
                 "rlook R\n"
                 "expect -\n"
                 "create B ok 2\n"
                 "list B ok A1 B2\n"
                 "expect B:own B:wake\n"
                 "step R deliver\n"
                 "rlook R\n"
                 "expect R:step:B R:take:B R:count:B:0 R:leave:A A:delete R:detach:A R:untimed "
                 "R:ready\n"},
    {"a step that waits for an answer leaves the request pending",
     CORE_HELD_A "request R on A deadline=1000 steps\n"
                 "step R wait\n"
                 "rlook R\n"
                 "expect R:step:A\n"
                 "rstate R PENDING\n"},
    {"a step whose answer outwaits the deadline times out there, its node deleted",
     CORE_HELD_A "request R on A deadline=1000 steps\n"
                 "step R wait\n"
                 "rlook R\n"
                 "expect R:step:A\n"
                 "wait 1000\n"
                 "rlook R\n"
                 "expect R:step:A R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                 "rstate R CLEANING\n"
                 "rresult R ETIMEDOUT\n"},
    /* When a blocking caller looks again if nothing wakes it: never
     * unbounded once its deadline passed. */
    {"a waiting request is looked at again at its deadline",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "rlook R\n"
                    "rdue R 1000\n"
                    "wait 400\n"
                    "rdue R 600\n"},
    {"a request without a deadline is looked at again only when woken",
     CORE_WAITING_A "request R on A\n"
                    "rlook R\n"
                    "rdue R none\n"},
    {"a failed request is looked at again at the end of its grace",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "wait 1000\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                    "rdue R 500\n"
                    "wait 200\n"
                    "rdue R 300\n"},
    {"a step's next node queued past the deadline is looked at again within a grace",
     CORE_HELD_A "node B lease\n"
                 "request R on A deadline=1000 steps\n"
                 "step R next=B\n"
                 "start B\n"
                 "wait 1000\n"
                 "rlook R\n"
                 "expect B:create B:list R:step:A R:look\n"
                 "rstate R PENDING\n"
                 "rdue R 500\n"
                 "rlook R\n"
                 "expect R:count:B:ETIMEDOUT R:timer R:leave:B R:released:A R:leave:A A:delete\n"
                 "rstate R CLEANING\n"
                 "rdue R 500\n"},
    {"a step that fails fails the request, its node deleted",
     CORE_HELD_A "request R on A deadline=1000 steps\n"
                 "step R EMISMATCH\n"
                 "rlook R\n"
                 "expect R:step:A R:count:A:EMISMATCH R:timer R:leave:A A:delete\n"
                 "rresult R EMISMATCH\n"},
    {"a multi-lock's members are holds, and one lost before delivery fails it",
     CORE_HELD_A "node B lock\n"
                 "request R on A deadline=1000 steps keep\n"
                 "step R next=B\n"
                 "start B\n"
                 "rlook R\n"
                 "expect B:create B:list R:step:A R:count:A:0 R:take:A R:look\n"
                 "create B ok 2\n"
                 "list B ok B2\n"
                 "step R deliver\n"
                 "rlook R\n"
                 "expect B:own B:dir B:wake R:step:B R:take:B R:count:B:0 R:untimed R:ready\n"
                 "deleted A1\n"
                 "expect A:lost A:wake\n"
                 "rdeliver R 0\n"
                 "expect R:unready R:timer R:look\n"
                 "rstate R PENDING\n"
                 "rlook R\n"
                 "expect R:timer R:leave:B B:delete R:released:A R:leave:A\n"
                 "rresult R ELOST\n"},
    {"a request with no memory to take its hold fails",
     CORE_HELD_A "request R on A deadline=1000\n"
                 "nomem 1\n"
                 "rlook R\n"
                 "expect R:take:A R:count:A:ENOMEM R:timer R:leave:A A:delete\n"
                 "rresult R ENOMEM\n"},
    {"a request of a closing client is told ECLOSED",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "close\n"
                    "expect A:wake A:wake\n"
                    "rlook R\n"
                    "expect R:count:A:ECLOSED R:timer R:leave:A R:detach:A A:free R:untimed R:ready\n"
                    "rdeliver R 1\n"
                    "rresult R ECLOSED\n"},
    {"a try once request is told ETIMEDOUT on the policy's first answer",
     ONCE_R "expect A:create A:list A:own\n"
     "list A ok x:lock-1 A2\n"
     "expect A:wake A:ahead0:x:lock-1\n"
     "rlook R\n"
     "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"},
    /* A blocking call is a request its caller waits for and takes
     * (ZKL__RE_TAKE) in place of a callback. */
    {"a blocking caller takes a granted request's node: handed over, not left",
     CORE_HELD_A "request R on A deadline=1000\n"
                 "rlook R\n"
                 "expect R:take:A R:count:A:0 R:untimed R:ready\n"
                 "rtake R 0\n"
                 "expect R:hand:A\n"
                 "rstate R DONE\n"
                 "rfree R\n"
                 "expect R:unready R:untimed\n"
                 "state A HELD\n"},
    {"a blocking caller's take of a pending request is not yet",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "rtake R 1\n"
                    "expect -\n"
                    "rstate R PENDING\n"},
    {"a blocking caller takes a failed request's code once its node is gone",
     CORE_WAITING_A "request R on A deadline=100\n"
                    "wait 100\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                    "rtake R 1\n"
                    "delete A ok\n"
                    "expect A:wake\n"
                    "rlook R\n"
                    "expect R:detach:A A:free R:untimed R:ready\n"
                    "rtake R ETIMEDOUT\n"
                    "expect -\n"
                    "rstate R DONE\n"},
    /* The deadline, the try-once bound and the grace of every blocking
     * acquire are the machine's: a blocking caller sees them as a callback
     * would. */
    {"a blocking caller cancelled takes ECANCELED once its node is gone",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "rcancel R 0\n"
                    "expect R:look\n"
                    "rlook R\n"
                    "expect R:count:A:ECANCELED R:timer R:leave:A A:delete\n"
                    "rtake R 1\n"
                    "delete A ok\n"
                    "expect A:wake\n"
                    "rlook R\n"
                    "expect R:detach:A A:free R:untimed R:ready\n"
                    "rtake R ECANCELED\n"
                    "rstate R DONE\n"},
    {"a blocking caller waits out the grace of its node's delete, no longer",
     CORE_WAITING_A "request R on A deadline=100\n"
                    "wait 100\n"
                    "rlook R\n"
                    "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
                    "wait 499\n"
                    "rlook R\n"
                    "rtake R 1\n"
                    "expect -\n"
                    "wait 1\n"
                    "rlook R\n"
                    "expect R:detach:A R:untimed R:ready\n"
                    "rtake R ETIMEDOUT\n"},
    {"a blocking caller trying once takes ETIMEDOUT on the policy's first answer",
     ONCE_R "rtake R 1\n"
     "expect A:create A:list A:own\n"
     "list A ok x:lock-1 A2\n"
     "expect A:wake A:ahead0:x:lock-1\n"
     "rlook R\n"
     "expect R:count:A:ETIMEDOUT R:timer R:leave:A A:delete\n"
     "delete A ok\n"
     "expect A:wake\n"
     "rlook R\n"
     "expect R:detach:A R:untimed R:ready\n"
     "rtake R ETIMEDOUT\n"},
    {"a blocking caller whose session ends while it waits takes ELOST",
     CORE_WAITING_A "request R on A deadline=1000\n"
                    "expire\n"
                    "expect A:wake A:wake\n"
                    "rlook R\n"
                    "expect R:count:A:ELOST R:timer R:leave:A R:detach:A A:free R:untimed R:ready\n"
                    "rtake R ELOST\n"},
    {"a blocking caller of a semaphore is handed its lease, the gate left",
     CORE_HELD_A "node B lease\n"
                 "request R on A deadline=1000 steps\n"
                 "step R next=B\n"
                 "start B\n"
                 "rlook R\n"
                 "create B ok 2\n"
                 "list B ok A1 B2\n"
                 "step R deliver\n"
                 "rlook R\n"
                 "expect B:create B:list R:step:A R:look B:own B:wake R:step:B R:take:B "
                 "R:count:B:0 R:leave:A A:delete R:detach:A R:untimed R:ready\n"
                 "rtake R 0\n"
                 "expect R:hand:B\n"
                 "state B HELD\n"},
    {"a failed request keeps its node's ZooKeeper code for its caller's detail text",
     "node A lock\n"
     "start A\n"
     "create A ok 2\n"
     "request R on A deadline=1000\n"
     "list A NOAUTH\n"
     "expect A:create A:list A:own A:delete A:wake\n"
     "rlook R\n"
     "expect R:count:A:ENOAUTH R:timer R:leave:A\n"
     "rfailed R NOAUTH 0\n"
     "rresult R ENOAUTH\n"},
    {"a request failed with EQUEUE keeps the length of the listing",
     "maxreq 4096\n"
     "node A lock\n"
     "start A\n"
     "create A ok 9\n"
     "request R on A deadline=1000\n"
     "list A ok " CORE_LONG_LISTING_A9
     "rlook R\n"
     "expect A:create A:list A:own A:delete A:wake R:count:A:EQUEUE R:timer R:leave:A\n"
     "rresult R EQUEUE\n"
     "rfailed R ok 80\n"},
    {"a request granted, then lost before its caller takes it, says ELOST",
     CORE_HELD_A "request R on A deadline=1000\n"
                 "rlook R\n"
                 "expect R:take:A R:count:A:0 R:untimed R:ready\n"
                 "deleted A1\n"
                 "expect A:lost A:wake\n"
                 "rtake R ELOST\n"
                 "expect R:detach:A A:free\n"
                 "rstate R DONE\n"},
};

/* The request's table: every move must be taken by some row above. */
static const char *const request_states[ZKL__R_COUNT] = {"PENDING", "CLEANING", "READY", "HELD",
                                                         "LOSING",  "LOST",     "DONE"};

int main(void)
{
    const core_table t = {ZKL__R_COUNT, request_states, zkl__areq_legal, core_script_rmoves,
                          NULL};
    return core_script_main("core_request", cases, (int)(sizeof cases / sizeof cases[0]), &t);
}
