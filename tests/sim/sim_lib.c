/* sim-lib: the real library, as a program links it, against the model of
 * ZooKeeper (docs/simulation.md). Each schedule opens real zkl clients
 * over the model's zapi (tests/sim/zapi_sim.c) with no keeper thread and
 * the virtual clock (util.h: zkl__set_virtual), its threads running one
 * at a time (tests/sim/sim_threads.h), every step chosen from the seed (a
 * world step, a keeper's round, a dispatch, a fault, a program thread
 * going on, or what the program does), so a seed replays exactly. The
 * program, through the public API:
 *   requests  asynchronous acquires of the mutex, the semaphore (one or
 *             more leases), the semaphore-mutex, either side of the
 *             read-write lock and a multi-lock (a mutex of its own and
 *             a second mutex on the mutex's path); release, cancel, free;
 *   blocking  acquires of each of those by the driver's thread (reentry,
 *             the write lock's downgrade to a read hold, half the time at
 *             once, a lease; now and then with a cancel handle fired
 *             meanwhile, or no timeout when nothing the thread holds
 *             stands in the way), their
 *             releases, guarded writes under the exclusive ones; a wait
 *             of the virtual clock runs the keepers, the requests and the
 *             checks meanwhile, and the synchronous zapi calls step the
 *             world until answered (their client's keeper waits for them);
 *   threads   (each schedule runs without them, then with them) two
 *             program threads per client beside the driver's, in
 *             blocking calls at once: holds of the mutex, the semaphore
 *             and either side of the read-write lock (reentries per
 *             thread, a downgrade, half of them without a deadline),
 *             their releases, and releases of another thread's hold
 *             (refused); one step in 1,000 (thread_more: until it first
 *             comes, a schedule takes the steps it took before), the
 *             multi-lock, the semaphore-mutex (the object's hold), an
 *             acquire with a cancel handle the driver's thread fires, the
 *             latch (started, awaited, closed), a listing, or the read-
 *             write lock's upgrade (a thread holding the read lock asks
 *             for the write lock: ZKL_EDEADLK at once, zkl.h); a wait of
 *             the library parks its thread, which runs again once its
 *             condition variable is signalled or its deadline passes
 *             (threads_run);
 *   latch     a leader latch per client: started, awaited, closed (and
 *             closed when its await says a refusal stopped it);
 *   callbacks calls of the library from inside its callbacks, as zkl.h
 *             allows, in a draw of their own (cb_below): a request's
 *             result callback releases it, frees it or starts another
 *             request; a lost callback takes a lease of the semaphore
 *             with a short timeout, a blocking call on the keeper thread
 *             (cb_lost), and lets it go; the latch's listener awaits with
 *             timeout 0; the revoke callbacks call nothing (zkl.h: they
 *             tell the holder);
 *   listings  participants, the semaphore's recorded limit, revocation;
 *   undo      the multi-lock tried while its first member's deletes are
 *             refused (the zapi refuses them, as an ACL would);
 *   close     now and then a client closed mid-run (close_client, one
 *             step in 2,000: with the program threads, once one of its
 *             threads is inside a call): zkl_client_close with requests
 *             waiting and held, holds, its threads' blocking calls and a
 *             latch outstanding; then all of it freed and a new client
 *             opened in its place (the close's plain waits for the callers
 *             inside step the world: simt_stall).
 * The world's faults: connection drops (a tenth of the grants drop their
 * connection at the next step), forced expiries, silent links, cut
 * followers, the unheard fault (unheard_arm), leader failovers, pauses
 * and slow spells, an outsider at a queue's head or a waiter's
 * predecessor (deletes it, marks it, or plants a tie that goes with its
 * session a while later), an outsider who changes the ACL of a lock path
 * or of its head's node (lib_outsider.c: the library's creates, listings
 * or deletes there refused, until it puts the ACL back 0.1 to 5 s later)
 * or deletes a lock path with nothing under it (half the time made again
 * within 2 s; one step in 4,000: every fourth of the steps that draw it,
 * one in 1,000 beside the faults' draw), the descriptor client's event loop busy (up to
 * 30 ms, now and then up to a session timeout), and a client's process
 * standing still (stand_fault: a debugger, a swap storm, a paused VM), a
 * few ms up to twice its session timeout: its keeper, its callbacks, its
 * program threads, the driver's calls on it and its C client's pings (the
 * server may expire its session meanwhile), each part running again within
 * 5 ms of the span's end in an order from the seed (one step in 1,000:
 * at once, or right behind the next create it sends, for T/2 to 2T, the
 * create in flight); or, a third of the times at once, a callback that
 * blocks its C client's completion thread (its callbacks only wait). Their
 * spans count as time the client was held back (deadline, told), they
 * stir (prompt), and a session that expires while the whole process
 * stands still is not the rule's fault (expired). A release, a listing
 * or a guarded write refused (ZKL_ENOAUTH) while such an ACL was in
 * effect is no violation: the hold stays (zkl.h) and is released again a
 * while later; every ACL is put back as the schedule settles, so none is
 * left (orphan). The same outsider, in a draw of its own (guarded_fault:
 * one step in 2,000 of the run with the program threads, a generator
 * seeded from the schedule's seed), sets
 * such an ACL on the mutex's path (the multi-lock's second member's),
 * the multi-lock's first member's or the latch's, or on the head of its
 * queue: a multi-lock member whose release it refuses stays the thread's,
 * which the call's code says (ZKL_ENOAUTH), and is released again once
 * allowed (undo); a latch it refuses stops, its await saying ZKL_ENOAUTH,
 * and the program closes it and starts another later. In a draw of its own
 * too (one step in 4,000: tests/sim/quiet.c), a follower stands still for
 * up to 6 s, its clients' requests and pings with it, while the leader
 * and the other follower go on; or a client's link passes one way only
 * for up to 8 s (what goes the other way waits, or is lost with the
 * connection): time the client may not hear, which stirs as it begins
 * and ends (prompt) and, like a cut follower, lets a failed multi-lock's
 * undo wait for the loss rule (deadline). Beyond the
 * clients (tests/sim/crowd.c): in half the schedules, now and then a
 * crowd of 100 to 400 contenders of another program (the outsider's
 * session) joins a lock path's queue in the protocol of a contender of
 * ours there and leaves it one by one from its head, up to 20 ms apart
 * (at once when the faults end): long queues, listings of hundreds; in a
 * sixth, every new node's sequence starts within 100 of 2^31-1 (a third
 * of those within 8), so that the queues pass the 32-bit wrap, where the
 * server names a create "lock--2147483648" and the library fails it
 * (ZKL_EZK), deleting the node, and a latch so failed stops. The watches
 * world (tests/sim/swarm.c, an eighth of the schedules by a hash of the
 * seed): the servers' jute.maxbuffer is 8 KiB, one client starts a swarm
 * of 150 to 450 asynchronous acquires 10 to 30 ms apart, holding up to
 * 400 ms, and connections drop 1,500 more times per million steps (half
 * of them the swarm's client's), so that its setWatches passes the limit
 * and every reconnection is closed until the loss rule gives the session
 * up. A keeper runs late on its own too (late_fault, one step in 4,000):
 * for up to 3 s its rounds that send a keepalive or apply the loss rule
 * come up to T/25 late. Neither draws from the world's generator.
 *
 *   SIM_SEED       the first schedule's seed (default 1); schedule k has
 *                  seed SIM_SEED + k
 *   SIM_SCHEDULES  at most this many schedules (default: no bound when
 *                  SIM_EVENTS is set; 30 when it is not)
 *   SIM_EVENTS     world steps in all: no schedule starts once the run's
 *                  events reach it (default: no budget when SIM_SCHEDULES
 *                  is set; 1,000,000 when neither is, as make check runs)
 *   SIM_STEPS      driver steps of each schedule before it settles (4,000)
 *   SIM_THREADS    0: without the program threads, 1: with them; unset:
 *                  each schedule both ways, first without
 *   SIM_TRACE=1    a line per event
 *   SIM_TIMEOUT    seconds of real time a schedule may take (default 120;
 *                  the first one's replay in the same process included; 0:
 *                  no limit): past them, as on a crash, the schedule's
 *                  seed and its replay are printed (zsim_crash_lines)
 *   SIM_MIX        the faults' mix instead of the default flow above: by
 *                  factors ("drop*20,outsider*4") or rates per million
 *                  rounds ("expire=300"; grant: per million grants) of
 *                  the kinds drop, expire, link, partition, unheard,
 *                  failover, leader-pause, leader-slow, outsider, stand,
 *                  acl, quiet, crowd, late, close and grant, each round's
 *                  fault drawn from (seed, round) alone; "drawn": each
 *                  schedule's factors from its seed; "fixed" or unset:
 *                  the default flow, every schedule as it ran before
 *                  mixes; anything else exits 2. A replay needs the
 *                  same SIM_MIX
 *   SIM_SHRINK     attempts of the shrinker (default 400; 0: none)
 *   SIM_TAPE       replay a tape as printed after a violation, traced
 *                  (SIM_TRACE=0: not); "seed:threads:steps" alone, the
 *                  whole schedule as its seed runs it
 *
 * A round is one choice of the driver (one_step: a request, a blocking
 * call, a fault, a world step ...), whatever world steps it takes. A
 * schedule's tape is its seed, with or without the program threads, its
 * steps, the rounds it runs before it settles and the faults it takes:
 *   seed:threads:steps:rounds:faults   e.g.  10:0:4000:0-811,990-1203:35=drop,977=grant
 * (rounds by their number in the schedule as its seed runs it, faults by
 * round and kind, as SIM_MIX names them). A tape runs its schedule from
 * the seed first, noting the generator's state as each round began and
 * as its fault or step was done (zsim_rand_state); then it runs the
 * rounds it names, each from the state noted, taking the faults it names
 * (and nothing in place of the others): leaving a fault or a span of
 * rounds out draws nothing else anew, and a whole tape runs exactly as
 * its seed. The default run notes so much (no draw of its own), so its
 * schedules stay as they were. On a violation the schedule's tape, cut
 * after the violation's round, is shrunk while the violation's kind
 * remains (faults left out, halving the groups; spans of rounds cut,
 * halving their length, the faults again after a length that cut some),
 * then run traced, and printed with SIM_TAPE.
 *
 * The invariants, checked after every step against the leader's tree (and
 * basis, lost-grant, kept and orphan against the library's core, through
 * its internal headers, when the client's lock is free):
 *   holders   per lock path, the believed holds whose node exists: at most
 *             one of the mutex (the multi-lock's holds among them) or the
 *             semaphore-mutex, at most SEM_MAX leases of the semaphore,
 *             one writer and then no reader of the read-write lock (but a
 *             read hold of the writer's own thread, a downgrade); at most
 *             one latch leading on a node that exists; a listing's
 *             holders by the same rules (the outsider's nodes aside);
 *   expired   the leader expires no session of a believed hold, unless a
 *             fault forced it;
 *   stale     no hold is granted, once its client ran again, on a node the
 *             leader made while the client stood still and deleted with
 *             its (unforced) expiry before the span ended: the create's
 *             answer came past the loss rule's instant (check_stale);
 *   told      a believed hold (or leadership) whose node is gone is told
 *             (its callback ZKL_ELOST, is_held 0) by the loss rule's time
 *             from the deletion (a multi-lock's: either member's);
 *   token     a mutex's tokens rise, a read-write lock's are above every
 *             writer's granted before, and a latch's leaderships' rise;
 *   fence     a guarded write succeeds only if its hold's node exists as
 *             it is sent (it may go while the call is out, the write
 *             applied before), and each exclusive lock's written tokens
 *             never go back;
 *   twice     one result per request, a second only ZKL_ELOST for a hold;
 *             the semaphore-mutex granted to no thread while another's
 *             hold of the object is not released;
 *   deadline  a result comes by the deadline (a try once: a session
 *             timeout) and the failed attempt's grace, a blocking
 *             acquire's return too (moved by the time its client's
 *             keeper waited for a synchronous call);
 *   prompt    a try once is decided within two thirds of its session
 *             timeout (and the grace) where no fault silenced or slowed
 *             anything around it (check_prompt);
 *   basis     a node that holds after an item of its client's session,
 *             and never held before, was not deleted on the leader at a
 *             zxid before that item's (the core's holds, basis_note);
 *   lost-grant no node of a core holds once its loss was told;
 *   kept      a blocking release that says the hold stays (ZKL_ENOAUTH,
 *             ZKL_ENOMEM, ZKL_EZK) leaves its node to a core that has it;
 *   spin      no keeper's round would wake, ten in a row, at one instant
 *             already past (its thread would wake again at once);
 *   undo      a multi-lock whose undo (or release) was refused leaves the
 *             thread the refused member, nothing else, and says so (its
 *             code the release's); after any other failure or release the
 *             thread holds no member;
 *   cancel    a blocking acquire ends ZKL_ECANCELED only once its handle
 *             fired, and within the grace of it while connected (a wait
 *             for a new session is not cut short: deadline bounds it);
 *   stats     a client's counters never go back, its metrics count no
 *             internal fault;
 *   pred      a latch's watch, as sent, is on the node just before its
 *             own in Curator's order (a name past the wrap first): no
 *             node of the leader's sorts between them;
 *   session   a latch leads (its listener hears 1, or it says so:
 *             zkl_latch_is_leader) on a node whose maker is the session
 *             the client says it has, its token readable (CURATOR-696);
 *   rate      at most RATE_MAX requests per client and virtual second,
 *             and RATE_UP more per connection up in it, or 4 and 2 per
 *             node and waiting request where it has more (a swarm's
 *             reconnections: rate_up) (no busy loop),
 *             besides what a listing of participants or a revocation
 *             sends per node it lists;
 *   thread    a release of a lock another thread of the client holds
 *             returns ZKL_ENOTHELD and leaves that thread's node;
 *   upgrade   a write acquire by a thread that holds the read lock only
 *             returns ZKL_EDEADLK at once, its read hold as it was;
 *   callback  a call from inside a callback returns what zkl.h says: a
 *             release from a result callback 0 or ZKL_ELOST, a lost
 *             callback's lease a code zkl.h names within its timeout and
 *             the grace (and what faults add), the listener's await at
 *             once, 0 exactly when is_leader says 1;
 *   stuck     no blocking call lasts ten virtual minutes (a program
 *             thread's neither); once the faults end, every request ends
 *             within two minutes;
 *   absent    then, within a minute, every latch takes part with a node of
 *             its client's session, and the first node's latch leads (a
 *             latch stopped by a create past the wrap, or by an ACL whose
 *             refusal its await says, aside);
 *   orphan    a node of a client's session under a lock path, while the
 *             client is connected on it and its core counts it current,
 *             is one its core has not let go of (it creates, holds, waits
 *             on or deletes it); once every request is freed and the
 *             faults end, no node of a live session of ours is left;
 *   leak      once every object and request is freed, none is left
 *             registered among the open objects (lib/front/objects.c);
 *   closed    a client closed mid-run: every request whose callback had
 *             not run has a result when zkl_client_close returns, its
 *             latch leads no more and its listener heard 0, a held
 *             request's or a lease's release then says ZKL_ECLOSED, and
 *             no hold is believed past it (a close is no loss);
 *   replay    the first schedule, run twice, takes the same steps.
 * A violation prints a replay line, then shrinks its tape, traces the
 * shortest found and prints its SIM_TAPE line. Ends with
 *   sim: seed S, E events, N schedules, V violations
 * Exit status 0 without violations, 1 with. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crowd.h"
#include "front.h" /* zkl__obj_count */
#include "lib_outsider.h"
#include "quiet.h"
#include "session.h"
#include "sim_threads.h"
#include "swarm.h"
#include "zapi_sim.h"

#define MS ((int64_t)1000000)
#define NCL 3
#define SEM_MAX 2
#define SLACK (50 * MS) /* a keeper's round comes this late at most */
#define NTH 2 /* program threads per client, beside the driver's (sim_threads.h) */
#define CORE_HELD 32 /* a core's held nodes looked at (basis) */
#define EVER_HELD 256 /* a client's nodes remembered as held (basis) */
#define CORE_LIVE 64 /* a core's nodes looked at (orphan: more, not judged) */
#define GONE_SLOTS 4096 /* the leader's deletes remembered (basis) */

/* ---- the faults' kinds, their mix, and a schedule's tape ------------------------- */

/* What a round of the driver (one_step) may take as its fault, by the
 * names SIM_MIX and the tapes give them; F_GRANT: a connection dropped
 * behind a grant. F_NOTHING: a fault was drawn and found nothing to act
 * on. */
enum { F_NONE, F_DROP, F_EXPIRE, F_LINK, F_PARTITION, F_UNHEARD, F_FAILOVER, F_LEADER_PAUSE,
       F_LEADER_SLOW, F_OUTSIDER, F_STAND, F_ACL, F_QUIET, F_CROWD, F_LATE, F_CLOSE, F_GRANT,
       F_NKINDS,
       F_NOTHING = 255 };
static const char *const fault_names[F_NKINDS] = {
    "none",     "drop",     "expire",   "link",  "partition", "unheard", "failover", "leader-pause",
    "leader-slow", "outsider", "stand", "acl", "quiet", "crowd", "late", "close", "grant"};
/* A mix's rates per million rounds (F_GRANT's per million grants): the
 * default flow's, as near as one can say. */
static const uint32_t default_rate[F_NKINDS] = {0,   750,  750, 750, 750, 2400, 200, 200,
                                                200, 2000, 1000, 250, 250, 150, 250,
                                                500, 100000};
static uint32_t rate[F_NKINDS];
/* SIM_MIX: mixed, the faults come by rate (fault_of), a draw of their own
 * from (seed, round); drawn, each schedule's factors from its seed. Else
 * the default flow, each schedule as it always ran. */
static bool mixed, drawn;
/* By kind, in enum order to F_GRANT: every kind a row names, late, close
 * and grant (a tenth of the grants dropped) among them. */
static const uint8_t drawn_mix[][F_NKINDS] = {
    {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 20, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 1, 1, 1, 1, 1, 1, 1, 1, 5, 1, 1, 1, 1, 1, 1, 1},
    {0, 20, 1, 1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1, 1},
    {0, 1, 1, 8, 4, 1, 1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1},
    {0, 2, 10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 1, 1, 1, 1, 4, 1, 1, 1, 1, 8, 1, 1, 1, 1, 1, 1},
    {0, 1, 4, 2, 2, 1, 10, 10, 10, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 8, 1, 12, 1, 1, 1},
};

static uint64_t key64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* A mix as text: "kind*factor" or "kind=rate", comma-separated, over the
 * default rates; "fixed" (or nothing): the default flow; "drawn". 0, or
 * -1 for a bad one. */
static int set_mix(const char *spec)
{
    memcpy(rate, default_rate, sizeof rate);
    mixed = drawn = false;
    if (spec == NULL || *spec == '\0' || strcmp(spec, "fixed") == 0)
        return 0;
    mixed = true;
    if (strcmp(spec, "drawn") == 0) {
        drawn = true;
        return 0;
    }
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, "=*");
        int k = 1;
        while (k < F_NKINDS && (strlen(fault_names[k]) != len || strncmp(p, fault_names[k], len)))
            k++;
        if (k == F_NKINDS || p[len] == '\0')
            return -1;
        char *end;
        unsigned long v = strtoul(p + len + 1, &end, 10);
        if (end == p + len + 1 || (*end != ',' && *end != '\0') || v > 1000000)
            return -1;
        rate[k] = p[len] == '=' ? (uint32_t)v : (uint32_t)(default_rate[k] * v);
        p = *end == ',' ? end + 1 : end;
    }
    uint64_t sum = 0;
    for (int k = 1; k < F_GRANT; k++)
        sum += rate[k];
    return sum <= 1000000 && rate[F_GRANT] <= 1000000 ? 0 : -1;
}

/* Kind k's rate in the schedule of seed. */
static uint64_t rate_of(uint64_t seed, int k)
{
    if (!drawn)
        return rate[k];
    size_t n = sizeof drawn_mix / sizeof drawn_mix[0];
    return (uint64_t)rate[k] * drawn_mix[key64(seed ^ 0x313e) % n][k];
}

/* Under a mix: the fault of the round (F_NONE: none), from (seed, round)
 * alone, so that a round keeps its fault whatever the others did. */
static int mix_kind(uint64_t seed, int64_t round)
{
    if (!mixed)
        return F_NONE;
    uint64_t r = key64(seed ^ key64((uint64_t)round + 0x51ed)) % 1000000;
    for (int k = 1; k < F_GRANT; k++) {
        uint64_t p = rate_of(seed, k);
        if (r < p)
            return k;
        r -= p;
    }
    return F_NONE;
}

/* A round as it ran from its seed: the generator's state as it began and
 * as its fault or program's step was done (the rest of it began), its
 * fault (F_NONE: none was drawn), whether a grant's drop came in it. */
struct round {
    uint64_t st[4], tail[4];
    uint8_t kind;
    bool grant;
    uint64_t count; /* a late keeper's or a close's: its own count of draws */
};

/* The rounds of the run under way, noted when it runs from its seed
 * alone: a violation's tape takes them as its base. */
static struct {
    struct round *v;
    size_t n, cap;
    int64_t main; /* rounds before the schedule settles */
} Rec;

/* A tape: the schedule of seed (with or without the program threads, of
 * steps steps) as it ran (base, its rounds), and which of its rounds to
 * run before it settles (v) and which of their faults to take (keep: 1
 * its fault, 2 its grants' drops). Each round begins, and goes on past
 * its fault, with the generator as it was there in the base: leaving a
 * fault or a round out changes no draw of the others. The settling's
 * rounds follow the base's. */
struct tape {
    uint64_t seed;
    int threads;
    int64_t steps;
    struct round *base;
    size_t nbase;
    int64_t main;
    int64_t *v;
    size_t n;
    uint8_t *keep;
};
static const struct tape *T; /* the tape the run follows (NULL: its seed) */

/* What a request acquires: the mutex, a lease of the semaphore, the
 * read or the write lock of the read-write lock. */
enum { L_MUTEX, L_SEM, L_SEMMUTEX, L_READ, L_WRITE, L_MULTI, NLOCKS };
static const char *const lock_paths[NLOCKS] = {"/sim/mutex", "/sim/sem", "/sim/semmutex",
                                               "/sim/rw", "/sim/rw", "/sim/mutex"};
static const char *const lock_names[NLOCKS] = {"mutex", "semaphore", "semaphore-mutex",
                                               "read lock", "write lock", "multi-lock"};
/* The multi-lock's other member (its first: keys go in strcmp order, so
 * its last, whose node and token a request answers for, is the mutex's). */
#define MULTI_OTHER "/sim/mb"
#define LATCH_PATH "/sim/latch"
/* The lock paths whose ACL an outsider changes (lib_outsider.c), in the
 * faults' draw: these; in a draw of its own (guarded_fault), the mutex's
 * (the multi-lock's second member's too), the multi-lock's first member's
 * and the latch's: a refused release of a member leaves the thread that
 * member (undo, mb_keep, m2_keep), a refusal ends a latch's taking part
 * (ZKL_ENOAUTH, which its await says); and those it deletes when nothing
 * is under them: any. */
static const char *const spoiled[] = {"/sim/sem", "/sim/semmutex", "/sim/rw"};
static const char *const guarded[] = {"/sim/mutex", MULTI_OTHER, LATCH_PATH};
static const char *const parents[] = {"/sim/mutex", "/sim/sem",  "/sim/semmutex",
                                      "/sim/rw",    MULTI_OTHER, LATCH_PATH};
/* Where the guarded writes of each exclusive lock go (made at the start). */
static const char *const fence_paths[NLOCKS] = {"/sim/fence-mutex", NULL, "/sim/fence-semmutex",
                                                NULL, "/sim/fence-rw", NULL};

struct req {
    struct cl *k;
    int id, lock;
    zkl_request *r;     /* NULL: a blocking hold of a thread's (th's) */
    int th;             /* 0: the driver's thread; 1 + t: program thread t */
    bool told;          /* its object's lost callback named its token */
    zkl_lease *lease;   /* a blocking semaphore hold's */
    int leases;         /* of the semaphore */
    int count;          /* a blocking hold's reentries */
    struct req *down;   /* a read hold taken while this thread wrote (downgrade) */
    bool is_down;
    long timeout_ms;
    int64_t started, bound; /* its result comes by bound (0: no bound) */
    bool done, held, freed;
    int result;
    char node[256];
    char member[400];   /* a multi-lock hold's first member's node (under MULTI_OTHER) */
    int64_t gone_at;    /* a believed hold's node found gone then */
    zsim_session *sess; /* a hold's session */
    int64_t release_at; /* a hold is released then; a failure freed then */
    int64_t token;      /* a blocking hold's */
    int64_t mtoken;     /* a blocking multi-lock hold's first member's */
    int64_t held_back;  /* its client's held_back at its start, */
    int64_t gone_back;  /* ... and when its node was found gone */
    int64_t slow_back;  /* R.slow_ns at its start */
    int64_t stood_back; /* a blocking call's: its client's stood_ns at its start */
    bool let_go;        /* released from its callback (cb_result) */
    bool swarm;         /* one of the watches world's swarm (swarm.h), */
    int64_t hold_ns;    /* ... held this long */
    struct req *next;
};

struct cl {
    int ix;
    zkl_client *c;
    zkl_mutex *m;
    zkl_semaphore *s;
    zkl_rwlock *rw;
    zkl_semmutex *sm;
    zkl_mutex *mb, *m2;  /* the multi-lock's members */
    zkl_lock *lb, *l2;
    zkl_multilock *ml;
    zkl_lock_opts *opts;
    zkl_latch *latch;
    int leading;         /* what its listener was told last */
    int latch_busy;      /* a thread is inside a call on its latch (none frees it meanwhile) */
    int64_t lead_gone_at, lead_gone_back;
    int64_t timer_at;
    bool fd_mode;
    bool drop_next; /* its connection drops at the next step (drop_aimed) */
    int64_t dispatch_at; /* fd_mode: the program's loop dispatches then (0: not due) */
    int fd;              /* fd_mode: its event descriptor */
    int64_t busy_ns;     /* ... a long spell of its loop's under way, this long */
    bool in_keeper;
    int sync_busy;     /* a synchronous call on its handle is under way */
    int64_t held_back; /* virtual time its keeper waited for a synchronous call */
    int64_t sync_at;   /* ... the last instant it did */
    int64_t refuse_until; /* its deletes under MULTI_OTHER are refused until then */
    zhandle_t *refused;   /* ... on this handle */
    bool mb_stuck;        /* the thread holds the multi-lock's member after a refused undo */
    bool mb_cleared;      /* ... and the multi-lock may have released it lost since */
    char mb_node[400];    /* ... its node */
    bool mb_lost;         /* ... released lost: a lost multi-lock hold sharing it cleared */
    bool m2_stuck;        /* the thread holds the second member after a refused release, */
    char m2_node[400];    /* ... its node; */
    int64_t kept_retry;   /* a kept member's release refused again: tried again then */
    int64_t latch_from;   /* its latch started then */
    zkl_client_stats stats; /* its counters, as last read */
    /* The unheard fault (unheard_arm): keepalives to send unheard from the
     * next one on, then how many are left, the leader slow that long once
     * the silence begins, on the session it was aimed at; the keepalives
     * its keeper sent so far; when the silence ends at the latest. */
    int unheard, unheard_left, unheard_wait;
    int64_t unheard_slow, unheard_late, unheard_heal, unheard_aim;
    int64_t cut_at; /* the fault silenced it or cut its follower then */
    zsim_session *unheard_s;
    uint64_t ka_seen;
    /* Its keeper's keepalive and loss rounds come late_ns late until late_until; the
     * checks allow it the largest lateness of the schedule (late_allow). */
    int64_t late_ns, late_until, late_allow, late_timer;
    /* The requests its handles sent in virtual second rate_sec, and what
     * its connections up in that second allow beyond RATE_MAX; its state
     * as last seen; what a listing of participants or a revocation under
     * way may send besides (a request per node it lists: a crowd's
     * hundreds). */
    int64_t rate_sec, rate_n, rate_allow, rate_list;
    int state;
    /* Its process stands still (stand_fault) from stand_from: its C
     * client's own thread (no ping reaches the server) until io_until, its
     * callbacks until items_until, its keeper until keeper_until, its
     * program threads and the driver's calls on it until prog_until, each
     * part a few ms after stand_end in an order from the seed; the blocked
     * form holds its callbacks only (items_until). stand_until: the last
     * part's end; stand_owed: the whole span, added to held_back (and
     * stood_ns) at stand_end. */
    int64_t stand_from, stand_end, io_until, items_until, keeper_until, prog_until, stand_until;
    int64_t stand_owed, stood_ns;
    zsim_session *stand_s; /* the session held */
    int stand_held;        /* 2: its thread and callbacks held, 1: its callbacks, 0: none */
    bool stand_armed;      /* it stands still right behind its next create (on_request), */
    bool stand_next;       /* ... at the next step, the create in flight */
    bool stand_whole;      /* the last span was the whole process's, not the blocked form */
    bool closing;          /* zkl_client_close under way (close_client) */
    bool unkept;           /* its process ran again, its keeper's round not yet done */
    /* The names of the nodes its core held so far, the latest EVER_HELD
     * (basis_note), and whether one may have come to hold unseen. */
    char ever[EVER_HELD][80];
    int never;
    bool held_unknown;
    /* Its keeper's rounds in a row that would wake at spin_wake, passed
     * (spin). */
    int64_t spin_wake;
    int spin_n;
    zkl_lease *cb_lease;   /* a lost callback's lease whose release was refused (cb_lost) */
};

static struct {
    zsim_world *w;
    uint64_t seed;
    int64_t step, steps;
    bool trace, settling;
    struct cl cl[NCL];
    struct req *reqs;
    int ids;
    int64_t max_token, max_write; /* the mutex's, the write lock's largest */
    uint64_t hash;
    int64_t events;
    uint64_t acquisitions;
    bool violated;
    char vtext[600];
    const char *vkind; /* the violation's kind */
    int64_t vpos;      /* ... the place of its round among the main ones (-1: settling) */
    /* The driver's round under way (one_step: its own choice, whatever
     * world steps that takes), its place among the main ones (pos), the
     * next settling one's; whether the main rounds are under way. */
    int64_t round, pos, next_round;
    bool in_main;
    int64_t link_heal[NCL];
    zsim_session *forced[64]; /* sessions a fault expired */
    int nforced;
    /* The leader's slow spells so far, in all: a slow leader commits
     * nothing, and what waits on it (a failed attempt's deletes, a
     * synchronous call) may take that much past a deadline. */
    int64_t slow_ns;
    int64_t slow_until; /* the last slow spell's end */
    int timeout_ms[NCL]; /* each client's session timeout */
    int64_t fired_slow; /* R.slow_ns when the cancel handle fired */
    int64_t tick_ns, ping_phase_ns; /* the world's (the unheard fault's aim) */
    int64_t wait_timer_at; /* the last deadline of a wait given the world as a timer */
    zkl_cancel *cancel;    /* a blocking acquire's cancel handle, */
    int64_t cancel_at;     /* ... fired then (0: not to be), */
    int64_t fired_at;      /* ... and when it was; */
    struct cl *cancel_k;   /* ... its client, */
    bool cancel_away;      /* ... not connected at some step since it fired */
    int64_t max_lead;    /* the largest leadership token told */
    int64_t fence[NLOCKS]; /* the largest token a guarded write of each wrote */
    uint64_t blocking_calls, revokes_told, latch_leads, listings;
    int64_t outsider_leave_at; /* the outsider's session ends then (0: none to end) */
    int64_t cut_at; /* a follower was cut from the leader then (any client's) */
    uint64_t cuts;  /* the world's cuts so far (cut_seen) */
    /* When a fault silenced or slowed a server or a link, or that ended
     * (a ring of the latest, check_prompt), and whether a follower is cut
     * off (so that its heal counts among them). */
    int64_t stirs[64];
    int nstirs;
    bool parted;
    /* The latch's nodes as the leader made them: czxid, and the session
     * id of their ephemeral owner (a ring of the latest). */
    int64_t latch_czxid[256], latch_owner[256];
    int nlatch;
    uint64_t outsider_acts, failovers;
    uint64_t lout_draws; /* the steps that drew lib_outsider.c's fault */
    uint64_t quiet_draws; /* the steps that drew quiet.c's faults */
    uint64_t late_draws;  /* the steps that drew late_fault */
    uint64_t lates;       /* late_fault's spells */
    uint64_t cb_draws;    /* the draws of what the program does inside callbacks */
    uint64_t cb_acts;     /* ... the calls it made there, */
    uint64_t cb_blocks;   /* ... the blocking ones (cb_lost) */
    struct cl *cb_k;      /* a lost callback of this client's is inside a blocking call */
    uint64_t close_draws; /* the steps that drew close_client */
    uint64_t closes;      /* clients closed and opened again */
    int close_at;         /* 1 + the client to close when a thread of its is in a call, */
    int close_left;       /* ... or within this many steps */
    uint64_t guarded_rng; /* guarded_fault's own generator, from the seed */
    uint64_t guarded_acts;
    int64_t mb_gone_at, mb_gone_back[NCL]; /* multi_gone: the last delete under MULTI_OTHER */
    /* The nodes the leader made under /sim/, when, and when they went
     * (ended: with their session's end), a ring of the latest
     * (check_stale). */
    struct made {
        char path[160];
        int64_t at, gone;
        bool ended;
    } made[256];
    int nmade;
    /* The leader's deletes under /sim/, by node name: their zxid (basis). */
    struct {
        uint64_t hash;
        int64_t zxid;
    } gone[GONE_SLOTS];
} R;

/* The calling thread is inside a blocking call (its waits step), since
 * block_start: per thread, as the program's threads may each be inside
 * one at once. */
static _Thread_local int blocking;
static _Thread_local int64_t block_start;
/* ... on this client (the last call begun): its waits stand still while
 * its process does (v_wait). */
static _Thread_local struct cl *block_k;
/* The events of the schedules before this one (a stuck call's report). */
static int64_t events_before;
/* Whether this run of a schedule has the program threads (main: each
 * schedule runs without them, the steps it took before they came, so
 * that what the driver's thread alone finds stays found, and with them). */
static bool threads_on;

/* The calling thread's number in struct req's th. */
static int cur_th(void)
{
    return simt_self() + 1;
}

/* Client k's program stands still (stand_fault): its threads, the
 * driver's calls on it. */
static bool paused(const struct cl *k)
{
    return zsim_now(R.w) < k->prog_until;
}

/* Some part of client k stands still, or its span is not yet counted in
 * held_back: the deadline and told bounds do not bind it meanwhile. */
static bool stands(const struct cl *k)
{
    return zsim_now(R.w) < k->stand_until || k->stand_owed != 0;
}

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
    if (!R.trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("[%6" PRId64 " %9.3f] ", R.step, (double)zsim_now(R.w) / 1e9);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

static void violation(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(const char *kind, const char *fmt, ...)
{
    if (R.violated)
        return;
    R.violated = true;
    R.vkind = kind;
    R.vpos = R.in_main ? R.pos : -1;
    char text[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(R.vtext, sizeof R.vtext, "(%s) in the schedule of seed %" PRIu64 ", step %" PRId64
             ": %s", kind, R.seed, R.step, text);
}

static void mix(uint64_t x)
{
    R.hash = (R.hash ^ x) * 0x100000001b3u;
}

/* ---- virtual time: the library's clock, waits and randomness --------------------- */

static void world_step(void);
static void rate_second(struct cl *k);
static int64_t rate_up(struct cl *k);
static void wait_step(zhandle_t *zh);
static void threads_run(void);

/* The leader's slow spells so far, less what is left of the current one:
 * from now on, a bound moves by R.slow_ns less this. */
static int64_t slow_mark(void)
{
    int64_t left = R.slow_until - zsim_now(R.w);
    return R.slow_ns - (left > 0 ? left : 0);
}

static int64_t v_now(void *arg)
{
    (void)arg;
    return zsim_now(R.w);
}

/* A wait (the open's for its first session, a blocking call's): the world
 * goes on meanwhile, and while a blocking call of the driver's runs, the
 * keepers and the program's requests too (wait_step). */
static int v_wait(void *arg, pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline)
{
    (void)arg;
    if (zsim_now(R.w) >= deadline)
        return ETIMEDOUT;
    /* A timer at the deadline: the world's time does not jump past it. */
    if (deadline != ZKL__NO_DEADLINE && deadline != R.wait_timer_at) {
        zsim_timer(R.w, NULL, deadline, 0);
        R.wait_timer_at = deadline;
    }
    if (simt_self() >= 0) {
        /* A program thread's: it parks, and whoever ran it steps on, until
         * its condition variable is signalled or its deadline passes
         * (threads_run) and it is picked again. */
        simt_park(cv, mu, deadline);
        return zsim_now(R.w) >= deadline ? ETIMEDOUT : 0;
    }
    pthread_mutex_unlock(mu);
    wait_step(NULL);
    /* Its process stands still: the call goes on once it runs again. */
    while (blocking > 0 && block_k != NULL && paused(block_k))
        wait_step(NULL);
    pthread_mutex_lock(mu);
    return zsim_now(R.w) >= deadline ? ETIMEDOUT : 0;
}

static void v_random(void *arg, void *buf, size_t size)
{
    (void)arg;
    unsigned char *p = buf;
    for (size_t i = 0; i < size; i++)
        p[i] = (unsigned char)zsim_rand(R.w);
}

static const struct zkl__virtual virt = {v_now, v_wait, v_random, NULL};

/* ---- the world and the keepers --------------------------------------------------- */

static zsim_session *session_of(struct cl *k);

static bool stand_fault(struct cl *k, bool aimed);

/* A follower cut from the leader since the last look: then, whatever cut
 * it (a cut armed for a session's next sync may come long after the
 * unheard fault armed it). */
static void cut_seen(void)
{
    struct zsim_counts c;
    zsim_counts(R.w, &c);
    if (c.partitions != R.cuts) {
        R.cuts = c.partitions;
        R.cut_at = zsim_now(R.w);
    }
}

static void basis_note(struct cl *k, int64_t zxid);
static uint64_t name_hash(const char *s);

static void world_step(void)
{
    for (int i = 0; i < NCL; i++)
        basis_note(&R.cl[i], 0);
    for (int i = 0; i < NCL; i++)
        if (R.cl[i].stand_next) {
            R.cl[i].stand_next = false;
            (void)stand_fault(&R.cl[i], true);
        }
    for (int i = 0; i < NCL; i++)
        if (R.cl[i].drop_next) {
            R.cl[i].drop_next = false;
            zsim_session *s = session_of(&R.cl[i]);
            trace("fault: client %d's connection drops behind a grant", i);
            if (s != NULL)
                zsim_drop(s, -1, -1);
        }
    const struct zsim_item *it;
    cut_seen();
    int rc = zsim_step(R.w, &it);
    R.events++;
    cut_seen();
    if (rc != 1 || it->kind == ZSIM_TIMER)
        return; /* a keeper's timer: every keeper runs after each step */
    /* A connection up: rate's allowance (the checks' look at the state
     * may miss one that came and went between two steps). */
    for (int i = 0; i < NCL && it->kind == ZSIM_SESSION && it->state == ZSIM_CONNECTED_STATE; i++)
        if (R.cl[i].c != NULL && it->session == session_of(&R.cl[i])) {
            rate_second(&R.cl[i]);
            R.cl[i].rate_allow += rate_up(&R.cl[i]);
        }
    mix((uint64_t)it->kind << 56 ^ it->tag << 8 ^ (uint64_t)(uint32_t)it->rc ^
        (uint64_t)zsim_now(R.w) << 20 ^ (uint64_t)zsim_session_index(it->session) << 40);
    trace("item %s s%d tag %" PRIu64 " rc %s %s%s", it->kind == ZSIM_ANSWER ? "answer"
          : it->kind == ZSIM_WATCH ? "watch" : "session", zsim_session_index(it->session),
          it->tag, zsim_rc_name(it->rc),
          it->kind == ZSIM_SESSION ? zsim_state_name(it->state) : "",
          it->kind == ZSIM_WATCH ? it->path : "");
    zapi_sim_item(it);
    for (int i = 0; i < NCL; i++)
        if (it->zxid > 0 && !R.cl[i].fd_mode && it->session != NULL &&
            it->session == session_of(&R.cl[i]))
            basis_note(&R.cl[i], it->zxid);
}

static void unheard_sent(struct cl *k);

/* spin: a keeper's round that would have its thread wake at an instant
 * already past (by more than a keeper's lateness), ten rounds in a row at
 * the same one, would have it wake again at once without end (a request
 * judged at its deadline and still waiting did, in sim-locks' copy of the
 * asynchronous front). Here the round's wake-up only sets no timer. */
#define SPIN_ROUNDS 10

/* The keeper's rounds until it waits, and a timer for when it wakes. */
static void keeper(struct cl *k)
{
    zkl_client *c = k->c;
    int64_t wake = 0;
    if (k->in_keeper || k->sync_busy > 0 || k->closing)
        return; /* its round waits on the world, or a caller borrows its handle
                 * (the keeper re-opens under the handle's lock): not now */
    if (zsim_now(R.w) < k->keeper_until)
        return; /* its process stands still */
    /* A late keeper: the round that sends a keepalive or applies the loss
     * rule comes late_ns after its time (a thread that runs late), within
     * the margin the loss rule keeps (T/20). */
    int64_t now = zsim_now(R.w);
    if (now < k->late_until) {
        pthread_mutex_lock(&c->mu);
        int64_t due = c->ka_next_ns, at = zkl__keeper_loss_at(c);
        pthread_mutex_unlock(&c->mu);
        if (due == 0 || (at != 0 && at < due))
            due = at;
        if (due != 0 && now >= due && now < due + k->late_ns) {
            if (k->late_timer != due + k->late_ns) {
                k->late_timer = due + k->late_ns;
                zsim_timer(R.w, NULL, k->late_timer, (uint64_t)k->ix + 1);
            }
            return;
        }
    }
    k->in_keeper = true;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < 1000; i++) {
        int r = zkl__keeper_step(c, &wake);
        if (r < 0)
            wake = 0;
        if (r <= 0)
            break;
    }
    now = zsim_now(R.w);
    if (wake != 0 && wake + SLACK < now) {
        if (wake != k->spin_wake)
            k->spin_n = 0;
        k->spin_wake = wake;
        if (++k->spin_n == SPIN_ROUNDS)
            violation("spin", "client %d: %d rounds of its keeper in a row would wake at "
                      "%.3f s, %.3f s past: its thread would wake again at once, without end",
                      k->ix, SPIN_ROUNDS, (double)wake / 1e9, (double)(now - wake) / 1e9);
    } else {
        k->spin_n = 0;
    }
    uint64_t sent = c->ka_seq;
    pthread_mutex_unlock(&c->mu);
    k->unkept = false;
    if (sent != k->ka_seen) {
        k->ka_seen = sent;
        trace("client %d: keepalive %" PRIu64 " sent", k->ix, sent);
        if (k->unheard > 0 || k->unheard_left > 0)
            unheard_sent(k);
    }
    /* The program's event loop gets to the descriptor up to 30 ms after
     * the keeper's round (it was busy): the callbacks wait meanwhile, while
     * the world and the keeper go on. Now and then (during the faults) it
     * is busy for up to a session timeout: what its callbacks tell is
     * late by as much. The deadline and told bounds do not bind its
     * requests meanwhile, and then allow it as time the client was held
     * back. */
    struct pollfd pfd = {.fd = k->fd, .events = POLLIN};
    if (k->fd_mode && k->dispatch_at == 0 && poll(&pfd, 1, 0) > 0) {
        int64_t busy = (int64_t)zsim_below(R.w, 30) * MS;
        if (!R.settling && zsim_below(R.w, 300) == 0) {
            busy = (int64_t)zsim_below(R.w, (uint64_t)c->timeout_ms) * MS;
            k->busy_ns = busy;
            trace("client %d: its event loop is busy for %.3f s", k->ix, (double)busy / 1e9);
        }
        k->dispatch_at = zsim_now(R.w) + busy;
        zsim_timer(R.w, NULL, k->dispatch_at, (uint64_t)k->ix + 1);
    }
    if (k->fd_mode && k->dispatch_at != 0 && zsim_now(R.w) >= k->dispatch_at) {
        k->dispatch_at = 0;
        k->held_back += k->busy_ns;
        k->busy_ns = 0;
        (void)zkl_client_dispatch(c);
    }
    k->in_keeper = false;
    if (wake != 0 && wake != k->timer_at && wake > zsim_now(R.w)) {
        trace("client %d: the keeper wakes at %.3f", k->ix, (double)wake / 1e9);
        zsim_timer(R.w, NULL, wake, (uint64_t)k->ix + 1);
        k->timer_at = wake;
    }
}

static zsim_session *session_of(struct cl *k)
{
    /* The handle the client uses now: the model's session behind it (none
     * while a client closed opens again: close_client). */
    return k->c != NULL && k->c->zh != NULL ? zapi_sim_session(k->c->zh) : NULL;
}

/* The contenders' nodes of a lock path (names that end in a ten-digit
 * sequence), lowest sequence first; at most KIDS_MAX of them (a crowd's
 * hundreds too). */
#define KIDS_MAX 1024
struct kids {
    const char *dir;
    int n;
    char name[KIDS_MAX][160];
    int64_t seq[KIDS_MAX], owner[KIDS_MAX];
};

static void kid_add(void *arg, const char *name)
{
    struct kids *k = arg;
    size_t len = strlen(name);
    if (k->n == KIDS_MAX || len < 10 || len >= sizeof k->name[0] ||
        strspn(name + len - 10, "0123456789") != 10)
        return;
    char path[400];
    struct zsim_stat st;
    snprintf(path, sizeof path, "%s/%s", k->dir, name);
    if (zsim_truth_stat(R.w, path, &st) != ZSIM_OK)
        return;
    int64_t seq = strtoll(name + len - 10, NULL, 10);
    int i = k->n++;
    for (; i > 0 && k->seq[i - 1] > seq; i--) {
        k->seq[i] = k->seq[i - 1];
        k->owner[i] = k->owner[i - 1];
        memcpy(k->name[i], k->name[i - 1], sizeof k->name[i]);
    }
    k->seq[i] = seq;
    k->owner[i] = st.ephemeralOwner;
    memcpy(k->name[i], name, len + 1);
}

static void kids_of(const char *dir, struct kids *k)
{
    k->dir = dir;
    k->n = 0;
    zsim_truth_children(R.w, dir, kid_add, k);
}

/* ---- requests --------------------------------------------------------------------- */

static void check_expired(const struct req *q);
static void check_stale(const struct req *q);

/* A multi-lock hold's first member's node: a blocking one's, the member
 * mutex's; a request's, its session's lowest node under MULTI_OTHER that
 * no other hold of ours has (its earlier requests' members sort ahead of
 * its later ones'). None: q->member stays empty (no node: gone). */
static void multi_member(struct req *q)
{
    static struct kids kl;
    struct cl *k = q->k;
    if (q->r == NULL) {
        const char *n = zkl_mutex_node(k->mb);
        snprintf(q->member, sizeof q->member, "%s", n ? n : "");
        return;
    }
    zsim_session *s = session_of(k);
    q->member[0] = '\0';
    if (s == NULL)
        return;
    const char *mine = zkl_mutex_is_held(k->mb) ? zkl_mutex_node(k->mb) : NULL;
    kids_of(MULTI_OTHER, &kl);
    for (int i = 0; i < kl.n; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", MULTI_OTHER, kl.name[i]);
        bool taken = kl.owner[i] != zsim_session_id(s) || (mine && strcmp(mine, path) == 0) ||
                     seq_wrapped(kl.name[i]); /* no hold's: going (the create failed) */
        for (struct req *o = R.reqs; o && !taken; o = o->next)
            taken = o != q && o->held && strcmp(o->member, path) == 0;
        if (!taken) {
            snprintf(q->member, sizeof q->member, "%s", path);
            return;
        }
    }
}

/* A multi-lock request granted with its first member's node gone: that
 * node went after the request began, at the last delete under MULTI_OTHER
 * (whoever's node) or before it. Its told bound runs from that delete, as
 * for a hold whose node goes while it is believed held, not from the
 * grant: a grant made long after the client could have heard of the
 * delete (the earlier member no longer checked) breaks it sooner. */
static void multi_gone(struct req *q)
{
    if (q->lock != L_MULTI || q->r == NULL || R.mb_gone_at <= q->started ||
        zsim_truth_stat(R.w, q->node, NULL) != ZSIM_OK ||
        zsim_truth_stat(R.w, q->member, NULL) == ZSIM_OK)
        return;
    q->gone_at = R.mb_gone_at;
    q->gone_back = R.mb_gone_back[q->k->ix];
    trace("request %d: granted with its first member gone since %.3f s at the latest", q->id,
          (double)q->gone_at / 1e9);
}

/* The leader makes or deletes a node: a latch node's owner noted, a
 * delete under MULTI_OTHER timed (multi_gone). */
static void on_change(void *arg, const struct zsim_change *ch)
{
    (void)arg;
    size_t n = strlen(LATCH_PATH);
    /* (not a crowd's hundreds, which would push ours out of the ring) */
    if (strncmp(ch->path, "/sim/", 5) == 0 && strlen(ch->path) < sizeof R.made[0].path &&
        !crowd_member(ch->path)) {
        if (ch->created) {
            struct made *m = &R.made[R.nmade++ % 256];
            snprintf(m->path, sizeof m->path, "%s", ch->path);
            m->at = zsim_now(R.w);
            m->gone = 0;
            m->ended = false;
        } else {
            for (int i = 0; i < 256 && i < R.nmade; i++)
                if (R.made[i].gone == 0 && strcmp(R.made[i].path, ch->path) == 0) {
                    R.made[i].gone = zsim_now(R.w);
                    R.made[i].ended = ch->closing;
                }
        }
    }
    wrap_note(ch);
    const char *base = strrchr(ch->path, '/');
    if (!ch->created && base != NULL && strncmp(ch->path, "/sim/", 5) == 0) {
        uint64_t h = name_hash(base + 1);
        R.gone[h % GONE_SLOTS].hash = h;
        R.gone[h % GONE_SLOTS].zxid = ch->zxid;
    }
    if (!ch->created && strncmp(ch->path, MULTI_OTHER "/", strlen(MULTI_OTHER) + 1) == 0) {
        R.mb_gone_at = zsim_now(R.w);
        for (int i = 0; i < NCL; i++)
            R.mb_gone_back[i] = R.cl[i].held_back;
    }
    if (!ch->created || strncmp(ch->path, LATCH_PATH, n) != 0 || ch->path[n] != '/')
        return;
    struct zsim_stat st;
    if (zsim_truth_stat(R.w, ch->path, &st) != ZSIM_OK)
        return;
    int i = R.nlatch++ % 256;
    R.latch_czxid[i] = st.czxid;
    R.latch_owner[i] = st.ephemeralOwner;
}

/* The session that made the latch node of czxid token (0: not known). */
static int64_t latch_owner(int64_t token)
{
    for (int i = 0; i < 256 && i < R.nlatch; i++)
        if (R.latch_czxid[i] == token)
            return R.latch_owner[i];
    return 0;
}

/* prompt: a try once is decided (held or not) without waiting for the
 * lock (zkl(3)): by the server's answers, or by the lost connection, which
 * the client notices within two thirds of its session timeout of silence;
 * never by the session timeout itself. Checked where no fault silenced or
 * slowed a server or a link, or ended, from three session timeouts before
 * the call to its bound (deadline bounds those), the failed attempt's
 * delete and a late keeper allowed; not for the descriptor client's
 * requests, whose results wait for its loop. extra: what else its bound
 * allows. */
#define PROMPT_SLACK (200 * MS)
static void stir(void)
{
    R.stirs[R.nstirs++ % 64] = zsim_now(R.w);
}

/* Whether a fault stirred from from to to (the ring too short: yes). */
static bool stirred(int64_t from, int64_t to)
{
    if (R.nstirs > 64 && R.stirs[R.nstirs % 64] >= from)
        return true;
    for (int i = 0; i < R.nstirs && i < 64; i++)
        if (R.stirs[i] >= from && R.stirs[i] <= to)
            return true;
    return false;
}

static void check_prompt(const struct req *q, int64_t now, int64_t extra)
{
    struct cl *k = q->k;
    int64_t t = (int64_t)zkl__loss_timeout_ms(k->c->negotiated_ms, k->c->timeout_ms) * MS;
    int64_t bound = 2 * t / 3 + PROMPT_SLACK + ZKL__GRACE_NS + SLACK + 2 * k->late_allow + extra;
    if (q->timeout_ms != 0 || (q->r != NULL && k->fd_mode) ||
        stirred(q->started - 3 * t, q->started + bound))
        return;
    if (now - q->started > bound)
        violation("prompt", "request %d, a try once: decided %.3f s after its call, over %.3f s "
                  "(two thirds of its session timeout and the grace)", q->id,
                  (double)(now - q->started) / 1e9, (double)bound / 1e9);
}

static void result_told(struct req *q, int result)
{
    int64_t now = zsim_now(R.w);
    mix((uint64_t)q->id << 32 ^ (uint32_t)result);
    trace("client %d: request %d (%s): result %s", q->k->ix, q->id, lock_names[q->lock],
          zkl_strerror(result));
    if (q->done) {
        if (result != ZKL_ELOST || q->result != 0)
            violation("twice", "request %d: a second result %s after %s", q->id,
                      zkl_strerror(result), zkl_strerror(q->result));
        q->held = false; /* told */
        return;
    }
    q->done = true;
    q->result = result;
    /* A failed multi-lock's undo waits for the server's word, as a
     * blocking one's (blocking_acquire_of): a follower cut from the
     * leader or standing still, or a link that passes one way, holds it
     * until the loss rule gives the session up. */
    int64_t undo = 0, cut = q->k->cut_at > R.cut_at ? q->k->cut_at : R.cut_at;
    if (q->lock == L_MULTI && result != 0 && cut != 0 &&
        cut + 2 * (int64_t)q->k->c->negotiated_ms * MS > q->started)
        undo = zkl__loss_after_ns(q->k->c->negotiated_ms) + SLACK + q->k->late_allow;
    if (q->bound != 0 && now > q->bound + 2 * q->k->late_allow + R.slow_ns - q->slow_back +
                                   q->k->held_back - q->held_back + undo)
        violation("deadline", "request %d (timeout %ld ms) ended %.3f s after its start, bound "
                  "%.3f s", q->id, q->timeout_ms, (double)(now - q->started) / 1e9,
                  (double)(q->bound - q->started) / 1e9);
    check_prompt(q, now, q->k->held_back - q->held_back);
    if (result != 0) {
        q->release_at = now;
        return;
    }
    R.acquisitions++;
    if (q->swarm)
        q->release_at = now + q->hold_ns;
    q->held = true;
    /* Now and then the connection drops right behind a grant, what the
     * hold sent on it (the watch on its own node) in flight. */
    if (!R.settling &&
        (mixed ? zsim_below(R.w, 1000000) < rate_of(R.seed, F_GRANT) : zsim_below(R.w, 10) == 0) &&
        (T == NULL || ((size_t)R.round < T->nbase && T->base[R.round].grant &&
                       (T->keep[R.round] & 2)))) {
        q->k->drop_next = true;
        if (T == NULL && (size_t)R.round < Rec.n)
            Rec.v[R.round].grant = true;
    }
    q->sess = session_of(q->k);
    int64_t token = q->token; /* a blocking hold's: node and token are known */
    if (q->r != NULL) {
        const char *node = zkl_request_node(q->r);
        snprintf(q->node, sizeof q->node, "%s", node ? node : "");
        if (zkl_request_token(q->r, &token) != 0)
            violation("token", "request %d: held, but no token", q->id);
        q->token = token;
    }
    if (q->lock == L_MULTI)
        multi_member(q);
    /* A hold granted on a node already gone (its session expired before
     * the client heard) is in the loss window from the start: its token
     * orders nothing. */
    if (zsim_truth_stat(R.w, q->node, NULL) != ZSIM_OK ||
        (q->lock == L_MULTI && zsim_truth_stat(R.w, q->member, NULL) != ZSIM_OK)) {
        q->gone_at = now;
        q->gone_back = q->k->held_back;
        multi_gone(q);
        check_expired(q);
        check_stale(q);
    } else if (q->lock == L_MUTEX || q->lock == L_MULTI) {
        if (token <= R.max_token)
            violation("token", "request %d: token %" PRId64 " not above %" PRId64, q->id, token,
                      R.max_token);
        if (token > R.max_token)
            R.max_token = token;
    } else if (q->lock == L_READ || q->lock == L_WRITE) {
        /* Above every write lock's granted before, a reader's too. */
        if (token <= R.max_write)
            violation("token", "request %d (%s): token %" PRId64 " not above %" PRId64
                      " of a write lock before it", q->id, lock_names[q->lock], token,
                      R.max_write);
        if (q->lock == L_WRITE && token > R.max_write)
            R.max_write = token;
    }
    if (!q->swarm)
        q->release_at = now + (int64_t)zsim_below(R.w, 3000) * MS;
}

static void cb_result(struct req *q, int result);

static void on_result(zkl_request *r, int result, void *arg)
{
    struct req *q = arg;
    bool first = !q->done;
    result_told(q, result);
    if (first && r != NULL)
        cb_result(q, result);
}

/* A draw of what the program does inside callbacks (cb_below). */
static uint64_t cb_below(uint64_t n);

/* Start a request: what it acquires, its timeout and its leases from the
 * seed (own: from the draws of the callbacks', cb_below). */
static uint64_t pick(bool own, uint64_t n)
{
    return own ? cb_below(n) : zsim_below(R.w, n);
}

static void start_request_by(struct cl *k, bool own)
{
    int n = 0;
    for (struct req *q = R.reqs; q; q = q->next)
        n += q->k == k && !q->swarm;
    if (n >= 3)
        return;
    struct req *q = calloc(1, sizeof *q);
    if (q == NULL)
        abort();
    q->k = k;
    q->id = ++R.ids;
    q->lock = (int)pick(own, NLOCKS);
    uint64_t t = pick(own, 10);
    q->timeout_ms = t == 0 ? 0 : t == 1 ? -1 : (long)(100 + pick(own, 4000));
    q->started = zsim_now(R.w);
    q->held_back = k->held_back;
    q->slow_back = slow_mark();
    if (q->timeout_ms > 0)
        q->bound = q->started + q->timeout_ms * MS + ZKL__GRACE_NS + SLACK;
    else if (q->timeout_ms == 0)
        q->bound = q->started + (int64_t)k->c->timeout_ms * MS + ZKL__GRACE_NS + SLACK;
    int rc = ZKL_EINVAL;
    switch (q->lock) {
    case L_MUTEX:
        rc = zkl_mutex_acquire_async(k->m, q->timeout_ms, on_result, q, &q->r);
        break;
    case L_SEM:
        q->leases = 1 + (int)pick(own, SEM_MAX);
        rc = q->leases == 1
                 ? zkl_semaphore_acquire_async(k->s, q->timeout_ms, on_result, q, &q->r)
                 : zkl_semaphore_acquire_many_async(k->s, q->leases, q->timeout_ms, on_result,
                                                    q, &q->r);
        break;
    case L_SEMMUTEX:
        rc = zkl_semmutex_acquire_async(k->sm, q->timeout_ms, on_result, q, &q->r);
        break;
    case L_READ:
        rc = zkl_rwlock_read_acquire_async(k->rw, q->timeout_ms, on_result, q, &q->r);
        break;
    case L_WRITE:
        rc = zkl_rwlock_write_acquire_async(k->rw, q->timeout_ms, on_result, q, &q->r);
        break;
    case L_MULTI:
        rc = zkl_multilock_acquire_async(k->ml, q->timeout_ms, on_result, q, &q->r);
        break;
    }
    mix((uint64_t)q->id << 32 ^ (uint32_t)rc ^ 0x5a5a);
    trace("client %d: request %d on the %s, timeout %ld ms%s: %s", k->ix, q->id,
          lock_names[q->lock], q->timeout_ms, own ? " (from a callback)" : "", zkl_strerror(rc));
    if (rc != 0) {
        free(q);
        return;
    }
    q->next = R.reqs;
    R.reqs = q;
}

static void start_request(struct cl *k)
{
    start_request_by(k, false);
}

/* The watches world's swarm (swarm.h): its client's next asynchronous
 * acquire, of the mutex, the semaphore-mutex or either side of the
 * read-write lock, none of its choices from the world's generator. */
static void swarm_request(void)
{
    int ix = swarm_client(), kind;
    long timeout;
    int64_t hold;
    if (ix < 0 || R.settling || paused(&R.cl[ix]) || R.cl[ix].closing ||
        !swarm_next(&kind, &timeout, &hold))
        return;
    static const int locks[] = {L_MUTEX, L_SEMMUTEX, L_READ, L_WRITE};
    struct cl *k = &R.cl[ix];
    struct req *q = calloc(1, sizeof *q);
    if (q == NULL)
        abort();
    q->k = k;
    q->id = ++R.ids;
    q->lock = locks[kind];
    q->swarm = true;
    q->hold_ns = hold;
    q->timeout_ms = timeout;
    q->started = zsim_now(R.w);
    q->held_back = k->held_back;
    q->slow_back = slow_mark();
    if (q->timeout_ms > 0)
        q->bound = q->started + q->timeout_ms * MS + ZKL__GRACE_NS + SLACK;
    int rc = q->lock == L_MUTEX ? zkl_mutex_acquire_async(k->m, timeout, on_result, q, &q->r)
             : q->lock == L_SEMMUTEX
                 ? zkl_semmutex_acquire_async(k->sm, timeout, on_result, q, &q->r)
             : q->lock == L_READ ? zkl_rwlock_read_acquire_async(k->rw, timeout, on_result, q, &q->r)
                                 : zkl_rwlock_write_acquire_async(k->rw, timeout, on_result, q,
                                                                  &q->r);
    mix((uint64_t)q->id << 32 ^ (uint32_t)rc ^ 0x5a4);
    trace("client %d: swarm request %d on the %s, timeout %ld ms, holds %.3f s: %s", k->ix, q->id,
          lock_names[q->lock], timeout, (double)hold / 1e9, zkl_strerror(rc));
    if (rc != 0) {
        free(q);
        return;
    }
    q->next = R.reqs;
    R.reqs = q;
}

/* Each step (a wait's of the driver's blocking call too, as a program's
 * requests go on beside it): the watches world's next request, and its
 * drops. */
static void swarm_step(void)
{
    swarm_request();
    int drop = swarm_drop();
    if (drop >= 0 && !R.settling && session_of(&R.cl[drop]) != NULL) {
        trace("fault: client %d's connection drops (the watches world)", drop);
        zsim_drop(session_of(&R.cl[drop]), -1, -1);
    }
}

static void free_request(struct req *q)
{
    trace("client %d: request %d freed", q->k->ix, q->id);
    q->held = false;
    q->freed = true;
    zkl_request_free(q->r);
    for (struct req **p = &R.reqs; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    free(q);
}

/* What the program does with its requests now: release holds whose time
 * came, free what ended, now and then cancel or free a pending one. */
static void cb_lease_again(struct cl *k);

static void tend_requests(bool all)
{
    int64_t now = zsim_now(R.w);
    for (int i = 0; i < NCL; i++)
        if (R.cl[i].c != NULL && (all || !paused(&R.cl[i])))
            cb_lease_again(&R.cl[i]);
    for (struct req *q = R.reqs, *next; q; q = next) {
        next = q->next;
        if (q->r == NULL)
            continue; /* the thread's own: released where it runs (tend_blocking) */
        if ((paused(q->k) && !all) || q->k->closing)
            continue; /* its process stands still, or closes its client */
        if (q->done && q->result == 0 && !q->let_go && (all || now >= q->release_at)) {
            q->held = false; /* the release call ends the belief */
            int rc = zkl_request_release(q->r);
            trace("client %d: request %d released: %s", q->k->ix, q->id, zkl_strerror(rc));
            free_request(q);
        } else if (q->done && (all || now >= q->release_at)) {
            free_request(q);
        } else if (!q->done && all) {
            free_request(q);
        } else if (q->swarm) {
            continue; /* the watches world's swarm waits for its results */
        } else if (!q->done && zsim_below(R.w, 2000) == 0) {
            int rc = zkl_request_cancel(q->r);
            trace("client %d: request %d cancelled: %s", q->k->ix, q->id, zkl_strerror(rc));
        } else if (!q->done && zsim_below(R.w, 4000) == 0) {
            free_request(q);
        }
    }
}

/* ---- the program's calls from inside callbacks ------------------------------------ */

static bool ok_code(int rc, const int *codes, size_t n);
static void begin_blocking(struct cl *k);

/* zkl.h lets callbacks call the library: a request's result callback any
 * zkl_request_* function (its own request's free too) and new requests,
 * not zkl_client_close; a lost callback any function but zkl_client_close,
 * on the keeper thread (returning soon: the client's state changes wait
 * for it); the latch's listener zkl_latch_is_leader, _token and _await
 * with timeout 0. A revoke callback tells the holder and must not wait for
 * the release (a semaphore-mutex's waits for the server): here it calls
 * nothing, and a request's hold has no revoke callback. What the
 * program does there comes from a draw of its own, from the schedule's
 * seed and the draw's count, never the world's generator: a schedule takes
 * the steps it took before until one such call is made. */
static uint64_t cb_below(uint64_t n)
{
    return key64(key64(R.seed ^ 0xcb5eedu) + R.cb_draws++) % n;
}

/* A held request released from a callback: 0, or ZKL_ELOST if the hold
 * was lost already (zkl.h). */
static void cb_release(struct req *q, const char *from)
{
    q->held = false; /* the release call ends the belief */
    q->let_go = true;
    int rc = zkl_request_release(q->r);
    R.cb_acts++;
    trace("client %d: request %d released from %s: %s", q->k->ix, q->id, from,
          zkl_strerror(rc));
    if (rc != 0 && rc != ZKL_ELOST)
        violation("callback", "request %d, released from %s, says %s", q->id, from,
                  zkl_strerror(rc));
}

/* A request's first result, in its callback, in a quarter of the
 * schedules (by a hash of the seed: the others take the steps they took
 * before): one in 64 releases it (or frees it, failed), one frees it, one
 * starts another request (a drawn one, its choices from the callbacks'
 * draws). Not the swarm's (its
 * results come in hundreds), nor while the client closes (the close runs
 * what is pending on its own thread, walking the requests). */
static void cb_result(struct req *q, int result)
{
    struct cl *k = q->k;
    if (q->swarm || k->closing || key64(R.seed ^ 0xcb5eedu) % 4 != 0)
        return;
    uint64_t x = cb_below(64);
    if (x == 0 && result == 0) {
        cb_release(q, "its callback");
    } else if (x <= 1) {
        trace("client %d: request %d freed from its callback", k->ix, q->id);
        R.cb_acts++;
        free_request(q); /* zkl_request_free: it goes once the callback returns */
    } else if (x == 2) {
        R.cb_acts++;
        start_request_by(k, true);
    }
}

/* The latch's listener, one time in 2: zkl_latch_await with timeout 0
 * and zkl_latch_is_leader (zkl.h allows them there). The await waits for
 * nothing (no virtual time passes), and told 1 it says 0 exactly when
 * the latch says it leads (callback): one thread runs at a time here, so
 * nothing changes between the two calls. */
static void cb_lead(struct cl *k, zkl_latch *l, int leader)
{
    if (cb_below(2) != 0)
        return;
    int64_t before = zsim_now(R.w);
    int rc = zkl_latch_await(l, 0);
    int il = zkl_latch_is_leader(l);
    R.cb_acts++;
    trace("client %d: its latch's listener awaits (0 ms): %s, is_leader %d", k->ix,
          zkl_strerror(rc), il);
    if (zsim_now(R.w) != before)
        violation("callback", "client %d: the latch's await (0 ms) from its listener took %.3f s",
                  k->ix, (double)(zsim_now(R.w) - before) / 1e9);
    if (leader && (rc == 0) != (il == 1))
        violation("callback", "client %d: told it leads, its latch's await (0 ms) says %s while "
                  "is_leader says %d", k->ix, zkl_strerror(rc), il);
}

/* A lease of a lost callback's whose release the ACL refused: again. */
static void cb_lease_again(struct cl *k)
{
    if (k->cb_lease == NULL || k->closing)
        return;
    int rc = zkl_lease_release(k->cb_lease);
    trace("client %d: the lost callback's lease released again: %s", k->ix, zkl_strerror(rc));
    if (rc != ZKL_ENOAUTH)
        k->cb_lease = NULL;
}

/* A lost callback: one in 8 takes a lease of the semaphore with a short
 * timeout (1 to 20 ms), a blocking call on the keeper thread, and lets it
 * go at once. The keeper of a real program is a thread of its own, which
 * here is the driver's: not while that thread is inside a call of its
 * own. Meanwhile the client's keeper waits for the callback (wait_step
 * runs the rest: the other clients' keepers and program threads, the
 * requests, the checks), its requests' deadlines with it (held_back, as
 * the call goes: wait_step). Its
 * own program threads wait too: a release of the lost hold waits, in a
 * plain wait that cannot step here, for the callback to return
 * (zkl__engine_hooks_off). The
 * call returns what zkl.h says, by its timeout and the grace (callback);
 * a call that never returns is stuck. */
static void cb_lost(struct cl *k)
{
    if (cb_below(2) != 0 || blocking > 0 || simt_self() >= 0 || R.cb_k != NULL ||
        k->closing || k->cb_lease != NULL)
        return;
    long t = 1 + (long)cb_below(20);
    int64_t start = zsim_now(R.w), slow0 = slow_mark(), stood0 = k->stood_ns;
    zkl_lease *lease = NULL;
    R.cb_k = k;
    begin_blocking(k);
    int rc = zkl_semaphore_acquire(k->s, t, &lease);
    blocking--;
    R.cb_k = NULL;
    R.cb_acts++;
    R.cb_blocks++;
    int64_t now = zsim_now(R.w);
    trace("client %d: a lost callback takes a lease of the semaphore (%ld ms): %s, %.3f s", k->ix,
          t, zkl_strerror(rc), (double)(now - start) / 1e9);
    static const int codes[] = {0, ZKL_ETIMEDOUT, ZKL_ELOST, ZKL_ECONNLOSS, ZKL_ENOAUTH};
    if (!ok_code(rc, codes, sizeof codes / sizeof codes[0]) &&
        !(rc == ZKL_EZK && wrap_seen("/sim/sem")))
        violation("callback", "client %d: a lost callback's lease of the semaphore says %s",
                  k->ix, zkl_strerror(rc));
    int64_t bound = t * MS + ZKL__GRACE_NS + SLACK + 2 * k->late_allow + slow_mark() - slow0 +
                    k->stood_ns - stood0 + (stands(k) ? k->stand_owed : 0);
    if (now - start > bound)
        violation("callback", "client %d: a lost callback's lease of the semaphore (%ld ms) "
                  "returned %.3f s after its call, over %.3f s", k->ix, t,
                  (double)(now - start) / 1e9, (double)bound / 1e9);
    if (rc != 0)
        return;
    rc = zkl_lease_release(lease);
    trace("client %d: the lost callback's lease released: %s", k->ix, zkl_strerror(rc));
    static const int rel[] = {0, ZKL_ELOST, ZKL_ENOAUTH};
    if (!ok_code(rc, rel, sizeof rel / sizeof rel[0]))
        violation("callback", "client %d: a lost callback's lease release says %s", k->ix,
                  zkl_strerror(rc));
    if (rc == ZKL_ENOAUTH)
        k->cb_lease = lease;
}

/* ---- faults ---------------------------------------------------------------------- */

/* The earliest expiry the server allows, aimed at a holder (a leading
 * latch first): its requests go unheard from right after a keepalive (a
 * link silent one way) while its keeper sends more; once the last is sent
 * they arrive, and its follower is cut from the leader right after it
 * answers the last sync, before its next ping passes those touches on:
 * the leader counts from the keepalive before the silence. That keepalive
 * is one whose touch the leader counts from early (unheard_early): soon
 * after it, a ping passes it on, and the expiry it sets is rounded up to
 * a tick by little (or none came in twelve keepalives). A third of the
 * time the leader is slow as the silence begins (T/10 to 7T/20: that
 * keepalive's answer comes late) while five to eight keepalives go
 * unheard; a third of the time the keeper's rounds that send a keepalive
 * or apply the loss rule run late (T/100 to T/25) while four do (or two to
 * five); else two to eight. */
static bool unheard_arm(void)
{
    struct cl *k = NULL;
    for (int i = 0; i < NCL && k == NULL; i++)
        if (R.cl[i].latch != NULL && zkl_latch_is_leader(R.cl[i].latch))
            k = &R.cl[i];
    for (struct req *q = R.reqs; q != NULL && k == NULL; q = q->next)
        if (q->held && zsim_below(R.w, 2) == 0)
            k = q->k;
    if (k == NULL)
        k = &R.cl[zsim_below(R.w, NCL)];
    zsim_session *s = session_of(k);
    int t = k->c->negotiated_ms;
    if (s == NULL || t <= 0 || k->unheard > 0 || k->unheard_left > 0)
        return false;
    int64_t tn = (int64_t)t * MS;
    int how = (int)zsim_below(R.w, 3);
    k->unheard = how == 0   ? 5 + (int)zsim_below(R.w, 4)
                 : how == 1 ? (zsim_below(R.w, 3) != 0 ? 4 : 2 + (int)zsim_below(R.w, 4))
                            : 2 + (int)zsim_below(R.w, 7);
    k->unheard_s = s;
    k->unheard_slow = how == 0 ? tn / 10 + (int64_t)zsim_below(R.w, (uint64_t)tn / 4) : 0;
    k->unheard_aim = (int64_t)zsim_below(R.w, (uint64_t)tn / 10);
    k->unheard_late = how == 1 ? tn / 100 + (int64_t)zsim_below(R.w, (uint64_t)tn * 3 / 100) : 0;
    k->unheard_wait = 12;
    trace("fault: the touches of client %d go unheard after %d keepalives (leader slow %.3f s, "
          "keeper late %.3f s)", k->ix, k->unheard, (double)k->unheard_slow / 1e9,
          (double)k->unheard_late / 1e9);
    return true;
}

/* Client k's keeper runs late by ns for a while. */
static void late_set(struct cl *k, int64_t until, int64_t ns)
{
    /* No less late than before while a round made late may be pending. */
    if (zsim_now(R.w) <= k->late_until + k->late_ns && k->late_ns > ns)
        ns = k->late_ns;
    k->late_ns = ns;
    if (until > k->late_until)
        k->late_until = until;
    if (ns > k->late_allow)
        k->late_allow = ns;
}

/* A client's keeper runs late on its own (the late fault): for 1
 * ms to 3 s its rounds that send a keepalive or apply the loss rule come
 * up to T/25 after their time, within the rule's margin of T/20. Its
 * choices come from the schedule's seed and the draw's count, not the
 * world's generator, so that the schedule's steps stay what they were
 * until it comes. */
static bool late_fault(void)
{
    uint64_t x = (R.seed ^ 0x1a7e) * 0x9e3779b97f4a7c15u + R.late_draws;
    x = (x ^ x >> 31) * 0xbf58476d1ce4e5b9u;
    x ^= x >> 29;
    struct cl *k = &R.cl[x % NCL];
    int t = k->c->negotiated_ms > 0 ? k->c->negotiated_ms : k->c->timeout_ms;
    int64_t len = (1 + (int64_t)((x >> 8) % 3000)) * MS;
    int64_t ns = 1 + (int64_t)((x >> 24) % ((uint64_t)t * MS / 25));
    if (session_of(k) == NULL)
        return false;
    trace("fault: client %d's keeper runs up to %.3f s late for %.3f s", k->ix, (double)ns / 1e9,
          (double)len / 1e9);
    R.lates++;
    late_set(k, zsim_now(R.w) + len, ns);
    return true;
}

/* How early the leader may count from a touch taken now on a session of
 * tn: the time to the ping that passes it on, and the rounding of the
 * expiry it sets up to the next tick. */
static int64_t unheard_early(int64_t tn)
{
    int64_t half = R.tick_ns / 2;
    int64_t r = zsim_now(R.w) + MS; /* it reaches the follower */
    int64_t p = r <= half + R.ping_phase_ns ? half + R.ping_phase_ns
                : R.ping_phase_ns + (r - R.ping_phase_ns + half - 1) / half * half;
    int64_t e = p + tn;
    return p - zsim_now(R.w) + (e / R.tick_ns + 1) * R.tick_ns - e;
}

/* Client k's keeper sent a keepalive: an unheard client's requests go
 * silent now (if the leader counts from its touch early enough, or it
 * waited long enough), and come through once it sent the number the
 * fault said. */
static void unheard_sent(struct cl *k)
{
    zsim_session *s = session_of(k);
    if (s == NULL || s != k->unheard_s) {
        k->unheard = k->unheard_left = 0; /* another session: the aim is gone */
        return;
    }
    int64_t tn = (int64_t)zsim_recv_timeout(s) * MS;
    if (k->unheard > 0) {
        int64_t early = unheard_early(tn);
        if (early > k->unheard_aim && k->unheard_wait-- > 0)
            return;
        trace("client %d: its requests go unheard (the leader may count from its last touch "
              "%.3f s early)", k->ix, (double)early / 1e9);
        zsim_link_oneway(s, false, true);
        if (k->unheard_slow > 0) {
            zsim_leader_slow(R.w, k->unheard_slow);
            R.slow_ns += k->unheard_slow;
            if (zsim_now(R.w) + k->unheard_slow > R.slow_until)
                R.slow_until = zsim_now(R.w) + k->unheard_slow;
        }
        if (k->unheard_late > 0)
            late_set(k, zsim_now(R.w) + 2 * tn, k->unheard_late);
        k->unheard_left = k->unheard;
        k->unheard = 0;
        k->unheard_heal = zsim_now(R.w) + tn;
        k->cut_at = zsim_now(R.w);
        stir();
    } else if (--k->unheard_left == 0) {
        trace("client %d: its requests come through; its follower is cut after its sync", k->ix);
        zsim_link(s, true);
        zsim_cut_after_sync(s, 2 * tn);
        k->cut_at = R.cut_at = zsim_now(R.w);
        stir();
        k->unheard_heal = 0;
    }
}

/* An outsider (another program, an operator) acts right at the head of a
 * lock path's queue (the holder's node) or just ahead of a waiter (its
 * predecessor): deletes it, sets its data (a revocation's mark, or other),
 * or plants a node with its very sequence under another contender's uuid,
 * which sorts beside it until the outsider's session ends, a while later.
 * It changes no ACL: lib_outsider.c's outsider does (lout_fault). */
static bool outsider_aim(void)
{
    static const char *const dirs[] = {"/sim/mutex", "/sim/sem", "/sim/semmutex", "/sim/rw",
                                       MULTI_OTHER, LATCH_PATH};
    static struct kids k;
    kids_of(dirs[zsim_below(R.w, sizeof dirs / sizeof dirs[0])], &k);
    if (k.n == 0)
        return false;
    int at = zsim_below(R.w, 2) == 0 || k.n < 2 ? 0 : (int)zsim_below(R.w, (uint64_t)k.n - 1);
    char path[400];
    snprintf(path, sizeof path, "%s/%s", k.dir, k.name[at]);
    R.outsider_acts++;
    switch (zsim_below(R.w, 4)) {
    case 0:
    case 1:
        trace("fault: an outsider deletes %s (%s)", path, at ? "a predecessor" : "the head");
        (void)zsim_outsider_delete(R.w, path, -1);
        break;
    case 2: {
        const char *d = zsim_below(R.w, 2) == 0 ? "__REVOKE__" : "outsider";
        trace("fault: an outsider sets %s's data to %s", path, d);
        (void)zsim_outsider_set(R.w, path, d, (int)strlen(d), -1);
        break;
    }
    default: {
        size_t name = strlen(k.dir) + 1;
        if (strncmp(path + name, "_c_", 3) != 0)
            return false;
        path[name + 3] = path[name + 3] == '0' ? '1' : '0'; /* another uuid */
        trace("fault: an outsider plants %s", path);
        (void)zsim_outsider_create(R.w, path, "planted", 7, &ZSIM_OPEN_ACL_UNSAFE,
                                   ZSIM_EPHEMERAL, NULL, 0);
        int64_t leave = zsim_now(R.w) + (int64_t)zsim_below(R.w, 5000) * MS;
        if (leave > R.outsider_leave_at)
            R.outsider_leave_at = leave;
        break;
    }
    }
    return true;
}

/* The leader stands still, or fails over, or is slow (the requests wait
 * for it): what waits on it may take that much past a deadline. */
static void stall(int64_t ns)
{
    R.slow_ns += ns;
    stir();
    if (zsim_now(R.w) + ns > R.slow_until)
        R.slow_until = zsim_now(R.w) + ns;
}

static int leader_fault(int how)
{
    int64_t ns = 50 * MS + (int64_t)zsim_below(R.w, 950) * MS;
    R.failovers++;
    if (how < 0)
        how = (int)zsim_below(R.w, 3);
    switch (how) {
    case 0:
        trace("fault: the leader fails over (an election of %.3f s)", (double)ns / 1e9);
        zsim_failover(R.w, ns);
        break;
    case 1:
        ns -= 50 * MS; /* shorter than the followers' sync limit */
        trace("fault: the leader stands still for %.3f s", (double)ns / 1e9);
        zsim_leader_pause(R.w, ns);
        break;
    default:
        ns *= 2;
        trace("fault: the leader is slow for %.3f s", (double)ns / 1e9);
        zsim_leader_slow(R.w, ns);
        break;
    }
    stall(ns);
    return F_FAILOVER + how;
}

/* The model's hold of client k's session as its parts stand now: its
 * callbacks' items wait, and while its whole process stands still its C
 * client's thread too (no ping: the server may expire the session). */
static void stand_hold(struct cl *k)
{
    int64_t now = zsim_now(R.w);
    bool items = now < k->items_until, stopped = now < k->io_until;
    int want = stopped ? 2 : items ? 1 : 0;
    if (want == k->stand_held)
        return;
    if (k->stand_s != NULL && k->stand_s == session_of(k))
        zsim_hold(k->stand_s, items, stopped);
    k->stand_held = want;
    if (want == 0)
        k->stand_s = NULL;
}

/* Client k's whole process stands still (a debugger, a swap storm, a
 * paused VM): its keeper, its callbacks, its program threads, the
 * driver's calls on it and its C client's thread, from a few ms up to
 * twice its session timeout; when the span ends, each part runs again
 * within 5 ms of it, in an order from the seed. Or, the blocked form, a
 * callback blocks the C client's completion thread: only its callbacks
 * wait, its keeper and its I/O go on. The span is time its client was
 * held back (the deadline and told bounds), and stirs (check_prompt). */
static bool stand_fault(struct cl *k, bool aimed)
{
    int64_t now = zsim_now(R.w);
    zsim_session *s = session_of(k);
    if (s == NULL || stands(k) || R.settling)
        return false;
    int t = k->c->negotiated_ms > 0 ? k->c->negotiated_ms : k->c->timeout_ms;
    bool whole = aimed || zsim_below(R.w, 3) != 0;
    int64_t len = aimed ? (int64_t)(t / 2 + (int)zsim_below(R.w, 3 * (uint64_t)t / 2)) * MS
                  : zsim_below(R.w, 2) == 0 ? (int64_t)(1 + zsim_below(R.w, 2 * (uint64_t)t)) * MS
                                            : (int64_t)(1 + zsim_below(R.w, 300)) * MS;
    int64_t end = now + len;
    k->stand_from = now;
    k->stand_end = end;
    k->stand_whole = whole;
    if (whole) {
        k->io_until = end;
        k->items_until = end + (int64_t)zsim_below(R.w, 5 * MS);
        k->keeper_until = end + (int64_t)zsim_below(R.w, 5 * MS);
        k->prog_until = end + (int64_t)zsim_below(R.w, 5 * MS);
    } else {
        k->io_until = k->keeper_until = k->prog_until = now;
        k->items_until = end;
    }
    int64_t parts[] = {k->io_until, k->items_until, k->keeper_until, k->prog_until};
    k->stand_until = end;
    for (int i = 0; i < 4; i++) {
        if (parts[i] > k->stand_until)
            k->stand_until = parts[i];
        if (parts[i] > now)
            zsim_timer(R.w, NULL, parts[i], (uint64_t)k->ix + 1);
    }
    k->stand_owed = k->stand_until - now;
    k->stand_s = s;
    trace("fault: client %d's %s stands still for %.3f s", k->ix,
          whole ? "process" : "completion thread (a callback blocks)", (double)len / 1e9);
    stir();
    stand_hold(k);
    return true;
}

/* The clients' spans that end (all: every one, now): the model's hold
 * follows, and the span is counted as time held back once it ends. */
static void stand_tend(bool all)
{
    int64_t now = zsim_now(R.w);
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        if (k->stand_until == 0)
            continue;
        if (all && now < k->stand_until) {
            int64_t *parts[] = {&k->stand_end, &k->io_until, &k->items_until, &k->keeper_until,
                                &k->prog_until, &k->stand_until};
            for (int j = 0; j < 6; j++)
                if (*parts[j] > now)
                    *parts[j] = now;
        }
        stand_hold(k);
        if (k->stand_owed != 0 && now >= k->stand_end) {
            trace("client %d runs again", k->ix);
            k->held_back += k->stand_owed;
            k->stood_ns += k->stand_owed;
            k->stand_owed = 0;
            k->unkept = k->stand_whole;
            stir();
        }
    }
}

/* A client stands still now (stand_fault), or right behind the next
 * create it sends, half the time each. */
static bool stand_draw(void)
{
    struct cl *k = &R.cl[zsim_below(R.w, NCL)];
    if (zsim_below(R.w, 2) == 0)
        return stand_fault(k, false);
    k->stand_armed = true;
    return true;
}

/* The clients' sessions as they are now (quiet.h). */
static void sessions_now(zsim_session **ss)
{
    for (int i = 0; i < NCL; i++)
        ss[i] = session_of(&R.cl[i]);
}

/* guarded_fault's draws: a generator of its own, seeded from the
 * schedule's seed (splitmix64), so that the world's stay what they were. */
static uint64_t guarded_below(uint64_t n)
{
    uint64_t x = (R.guarded_rng += 0x9e3779b97f4a7c15u);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return (x ^ (x >> 31)) % n;
}

/* An outsider's ACL on the mutex's path, the multi-lock's first member's
 * or the latch's, or on the head of its queue (lib_outsider.c), one step
 * in 2,000, every choice guarded_below's; only in the run with the
 * program threads, so that the run without them takes today's steps
 * whole (mutant 20 is found at step 3,743 of seed 291's: with this fault
 * in both runs, one step in 2,000, it was not; that schedule draws it at
 * the 797th of its driver's steps, at one in 4,000 as well). */
static bool threads_multi(void);
static void guarded_fault(void)
{
    if (R.settling || !threads_on || guarded_below(2000) != 0)
        return;
    /* Not while a program thread takes or holds the multi-lock: a member
     * it kept would be released by the driver's thread (tend_refusals). */
    if (threads_multi())
        return;
    R.guarded_acts++;
    lout_acl_fault(guarded, sizeof guarded / sizeof guarded[0], guarded_below);
}

/* A follower stands still or a link passes one way only (quiet.h): like
 * a cut follower, its clients' touches and what their releases wait on
 * stay away meanwhile (cut_at), and it stirs as it begins and ends. */
static bool quiet_fault(void)
{
    zsim_session *ss[NCL];
    sessions_now(ss);
    int i = quiet_start(ss, NCL);
    if (i < 0)
        return false;
    if (i < NCL)
        R.cl[i].cut_at = zsim_now(R.w);
    else
        R.cut_at = zsim_now(R.w);
    stir();
    return true;
}

/* A fault of client k's (its session s: drop, expire, link) or a cut
 * follower: its kind, or F_NOTHING. */
static int client_fault(struct cl *k, zsim_session *s, int kind)
{
    switch (kind) {
    case F_DROP:
        trace("fault: client %d's connection drops", k->ix);
        zsim_drop(s, -1, -1);
        break;
    case F_EXPIRE:
        trace("fault: client %d's session expires", k->ix);
        if (R.nforced < (int)(sizeof R.forced / sizeof R.forced[0]))
            R.forced[R.nforced++] = s;
        else
            return F_NOTHING; /* no more: the expired check would not know it forced */
        zsim_expire(s);
        break;
    case F_LINK:
        if (R.link_heal[k->ix] != 0)
            return F_NOTHING;
        trace("fault: client %d's link goes silent", k->ix);
        zsim_link(s, false);
        /* A multi-lock under way (a request, or a program thread's call:
         * the driver's is never inside one at a fault) waits on the link
         * for its undo, as behind a cut follower (seed 47001415 with the
         * program threads). */
        k->cut_at = zsim_now(R.w);
        R.link_heal[k->ix] = zsim_now(R.w) + (int64_t)zsim_below(R.w, 8000) * MS;
        stir();
        break;
    default:
        trace("fault: a follower is cut off for a while");
        R.cut_at = zsim_now(R.w);
        R.parted = true;
        stir();
        zsim_partition(R.w, 1 + (int)zsim_below(R.w, 2), true);
        break;
    }
    return kind;
}

static const char *const queues[] = {"/sim/mutex", "/sim/sem", "/sim/semmutex", "/sim/rw",
                                     MULTI_OTHER, LATCH_PATH};

/* The faults' step (six in 1,000): a crowd when its count says, else one
 * drawn. want: the kind a tape says this step took (a crowd comes where
 * it says, not by the count), or -1. Its kind, or F_NOTHING. */
static int fault(int want)
{
    int n = sizeof queues / sizeof queues[0];
    if (want < 0 ? crowd_join(queues, n) : want == F_CROWD && crowd_join_now(queues, n))
        return F_CROWD;
    if (want == F_CROWD)
        return F_NOTHING;
    if (zsim_below(R.w, 5) < 2)
        return unheard_arm() ? F_UNHEARD : F_NOTHING;
    if (zsim_below(R.w, 6) == 0)
        return leader_fault(-1);
    struct cl *k = &R.cl[zsim_below(R.w, NCL)];
    zsim_session *s = session_of(k);
    if (s == NULL)
        return F_NOTHING;
    return client_fault(k, s, F_DROP + (int)zsim_below(R.w, 4));
}

static void heal(bool all)
{
    int64_t now = zsim_now(R.w);
    stand_tend(all);
    zsim_session *ss[NCL];
    sessions_now(ss);
    if (quiet_tend(ss, NCL, all))
        stir();
    for (int i = 0; i < NCL; i++)
        if (R.link_heal[i] != 0 && (all || now >= R.link_heal[i])) {
            zsim_session *s = session_of(&R.cl[i]);
            if (s != NULL)
                zsim_link(s, true);
            R.link_heal[i] = 0;
            stir();
        }
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        if (k->unheard_heal != 0 && (all || now >= k->unheard_heal)) {
            if (k->unheard_s == session_of(k))
                zsim_link(k->unheard_s, true);
            k->unheard_heal = 0;
            k->unheard = k->unheard_left = 0;
        }
        if (all)
            k->unheard = k->unheard_left = 0;
    }
    if (all || zsim_below(R.w, 3000) == 0) {
        for (int sv = 1; sv < 3; sv++)
            zsim_partition(R.w, sv, false);
        if (R.parted)
            stir();
        R.parted = false;
    }
    crowd_tend(all);
    if (R.outsider_leave_at != 0 && (all || now >= R.outsider_leave_at)) {
        trace("the outsider's session ends");
        zsim_outsider_leave(R.w); /* what it planted goes */
        R.outsider_leave_at = 0;
    }
    lout_heal(all);
}

/* ---- the invariants --------------------------------------------------------------- */

/* A believed hold's node is gone: not by its session's expiry, unless a
 * fault forced that (the loss rule presumes the loss before the earliest
 * expiry). */
static bool keeper_waited(const struct cl *k);

static void check_expired(const struct req *q)
{
    if (q->sess == NULL || zsim_session_alive(q->sess) || keeper_waited(q->k))
        return;
    for (int i = 0; i < R.nforced; i++)
        if (R.forced[i] == q->sess)
            return;
    violation("expired", "request %d: the leader expired its session while its hold was "
              "believed (node %s)", q->id, q->node);
}

/* A hold granted once its client ran again, on a node the leader made
 * while the client stood still and deleted with its session's end (not a
 * forced one) before the span ended: the create's answer reached the
 * client only after the span, when the loss rule's instant had passed
 * (the session expired, past it, before), and the rule is applied as each
 * answer arrives, before it is acted on (seed 97002619 of the engine's
 * earlier simulation, docs/simulation.md). The
 * span excuses the expiry (keeper_waited), not such a grant. */
static void check_stale(const struct req *q)
{
    const struct cl *k = q->k;
    if (k->stand_from == 0 || zsim_now(R.w) < k->stand_end || q->sess == NULL)
        return;
    for (int i = 0; i < R.nforced; i++)
        if (R.forced[i] == q->sess)
            return;
    for (int i = 0; i < 256 && i < R.nmade; i++) {
        const struct made *m = &R.made[i];
        if (strcmp(m->path, q->node) == 0 && m->ended && m->at >= k->stand_from &&
            m->gone != 0 && m->gone <= k->stand_end)
            violation("stale", "request %d: granted on %s, made at %.3f s while client %d "
                      "stood still (%.3f s to %.3f s) and gone with its session at %.3f s",
                      q->id, q->node, (double)m->at / 1e9, k->ix, (double)k->stand_from / 1e9,
                      (double)k->stand_end / 1e9, (double)m->gone / 1e9);
    }
}

/* Whether client k's keeper waited for a synchronous call (which the
 * simulation runs in its stead) within the loss rule's time: it may not
 * have applied the rule yet, as a process that stood still. */
static bool keeper_waited(const struct cl *k)
{
    int t = k->c->negotiated_ms > 0 ? k->c->negotiated_ms : k->c->timeout_ms;
    /* Its process stands still: no rule of its runs. Once its keeper runs
     * again, the rule gives the session up if due, before the leader can
     * have expired it; with its callbacks only held, the keeper runs on,
     * and the C client pings. */
    if (k->stand_whole && stands(k))
        return true;
    /* ... nor until its keeper's first round since: that round may run
     * the callback of a grant decided before the span ahead of the rule,
     * whose parts all run again at once as the faults end. */
    if (k->unkept)
        return true;
    return k->sync_at != 0 &&
           zsim_now(R.w) <= k->sync_at + zkl__loss_after_ns(t) + SLACK + k->late_allow;
}

/* Whether the library says the hold is still held: 1, 0, or -1 if the
 * calling thread cannot tell (another thread's hold, on an object whose
 * holds are per thread, and no lost callback told its token). */
static int still_held(struct req *q)
{
    struct cl *k = q->k;
    if (q->r != NULL)
        return zkl_request_is_held(q->r);
    if (q->lock == L_SEM)
        return zkl_lease_is_held(q->lease);
    if (q->th != cur_th() && q->lock != L_SEMMUTEX) { /* holds per thread */
        if (q->told)
            return 0;
        return q->lock == L_MUTEX || q->lock == L_READ || q->lock == L_WRITE ||
                       q->lock == L_MULTI
                   ? 1
                   : -1;
    }
    switch (q->lock) {
    case L_MUTEX:
        return zkl_mutex_is_held(k->m);
    case L_SEM:
        return zkl_lease_is_held(q->lease);
    case L_SEMMUTEX:
        return zkl_semmutex_is_held(k->sm);
    case L_READ:
        return zkl_rwlock_read_is_held(k->rw);
    case L_WRITE:
        return zkl_rwlock_write_is_held(k->rw);
    case L_MULTI:
        return zkl_multilock_is_held(k->ml);
    }
    return false;
}

struct token_arg {
    const char *dir;
    int64_t token;
    bool found;
    char path[400];
};

static void token_child(void *arg, const char *name)
{
    struct token_arg *a = arg;
    char path[400];
    snprintf(path, sizeof path, "%s/%s", a->dir, name);
    struct zsim_stat st;
    if (zsim_truth_stat(R.w, path, &st) == ZSIM_OK && st.czxid == a->token) {
        a->found = true;
        snprintf(a->path, sizeof a->path, "%s", path);
    }
}

/* The node under dir whose czxid is token, in the leader's tree: its path
 * in out (empty if none). */
static bool node_of_token(const char *dir, int64_t token, char *out, size_t size)
{
    struct token_arg a = {dir, token, false, ""};
    zsim_truth_children(R.w, dir, token_child, &a);
    snprintf(out, size, "%s", a.path);
    return a.found;
}

/* The latches: at most one leads on a node that exists; a leadership whose
 * node is gone is told by the loss rule's time. */
static void check_latches(void)
{
    int64_t now = zsim_now(R.w);
    int leaders = 0;
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        if (k->latch == NULL || !zkl_latch_is_leader(k->latch)) {
            k->lead_gone_at = 0;
            continue;
        }
        /* session: a latch says it leads only while its node's request
         * holds on the client's live session (zkl.h), whatever its
         * listener has heard: its token can be read, and the node's maker
         * is the session the client has (CURATOR-696). */
        int64_t token = 0, sid = 0;
        int trc = zkl_latch_token(k->latch, &token);
        int64_t owner = trc == 0 ? latch_owner(token) : 0;
        if (trc != 0 || (owner != 0 && (zkl_client_session_id(k->c, &sid) != 0 || sid != owner)))
            violation("session", "client %d's latch says it leads, its token %s (%" PRId64
                      "), its node's session 0x%" PRIx64 ", the client's 0x%" PRIx64, i,
                      zkl_strerror(trc), token, (uint64_t)owner, (uint64_t)sid);
        if (k->busy_ns != 0 || stands(k))
            continue; /* its listener waits for its loop, or its process stands still */
        if (trc != 0)
            continue;
        char node[400];
        if (node_of_token(LATCH_PATH, token, node, sizeof node)) {
            leaders++;
            k->lead_gone_at = 0;
            continue;
        }
        if (k->lead_gone_at == 0) {
            k->lead_gone_at = now;
            k->lead_gone_back = k->held_back;
            /* Not by its session's expiry, unless a fault forced it. */
            zsim_session *s = session_of(k);
            bool forced = false;
            for (int j = 0; j < R.nforced; j++)
                forced |= R.forced[j] == s;
            if (s != NULL && !zsim_session_alive(s) && !forced && !keeper_waited(k))
                violation("expired", "client %d: the leader expired its session while its latch "
                          "led (token %" PRId64 ")", i, token);
        }
        zkl_client *c = k->c;
        int t = c->negotiated_ms > 0 ? c->negotiated_ms : c->timeout_ms;
        if (now > k->lead_gone_at + zkl__loss_after_ns(t) + SLACK + k->late_allow +
                      k->held_back - k->lead_gone_back)
            violation("told", "client %d's latch leads on token %" PRId64 ", whose node is "
                      "gone since %.3f s", i, token, (double)k->lead_gone_at / 1e9);
    }
    if (leaders > 1)
        violation("holders", "%d latches lead on %s", leaders, LATCH_PATH);
}

/* pred: a latch's node watches the node just before its own, in
 * Curator's order (zsim_latch_key): when the watch is sent, none of the
 * leader's children sorts between the two. A node between them exists
 * now, so it was made before the watcher's own (sequences only grow; past
 * the wrap, each name sorts before every name made before it), and the
 * listing the watcher chose by, read after its own node was made, showed
 * it. Its own: of a sequence (the library holds or waits on no name past
 * the wrap). */
static void check_pred(struct cl *k, zhandle_t *zh, const char *path)
{
    static struct kids kl;
    const char *name = path + strlen(LATCH_PATH) + 1;
    const char *kx = zsim_latch_key(name), *own = NULL;
    int64_t sid = zsim_session_id(zapi_sim_session(zh));
    struct zsim_stat st;
    if (kx == NULL || zsim_truth_stat(R.w, path, &st) != ZSIM_OK || st.ephemeralOwner == sid)
        return; /* gone already (it fails), or its own */
    kids_of(LATCH_PATH, &kl);
    for (int i = 0; i < kl.n; i++) {
        const char *key = zsim_latch_key(kl.name[i]);
        if (kl.owner[i] == sid && zsim_latch_seq(kl.name[i]) >= 0 && strcmp(key, kx) > 0 &&
            (own == NULL || strcmp(key, own) < 0))
            own = key;
    }
    for (int i = 0; i < kl.n && own != NULL; i++) {
        const char *key = zsim_latch_key(kl.name[i]);
        if (key != NULL && strcmp(key, kx) > 0 && strcmp(key, own) < 0) {
            violation("pred", "client %d's latch node of sequence %s watches %s, but %s sorts "
                      "between them", k->ix, own, name, kl.name[i]);
            return;
        }
    }
}

/* A request client k's handle sends: rate: at most RATE_MAX per client and
 * virtual second (no busy loop), and what its connections up in that
 * second allow beyond (each looks at its own nodes again and sends again
 * what the lost connection failed). */
#define RATE_MAX 600
#define RATE_UP 40 /* per connection up: 4, and 2 for each of its nodes (at most 18) */

static void rate_second(struct cl *k)
{
    int64_t sec = zsim_now(R.w) / (1000 * MS);
    if (sec != k->rate_sec) {
        k->rate_sec = sec;
        k->rate_n = k->rate_allow = 0;
    }
}

/* What a connection of client k's allows beyond RATE_MAX in its second:
 * RATE_UP, or 4 and 2 for each node of its session under a lock path and
 * each request of its still waiting, where it has more (the watches
 * world's swarm: hundreds, its reconnections each closed at once, a
 * dozen or more in a second). */
static int64_t rate_up(struct cl *k)
{
    static const char *const dirs[] = {"/sim/mutex", "/sim/sem", "/sim/semmutex", "/sim/rw",
                                       MULTI_OTHER, LATCH_PATH};
    static struct kids kd;
    zsim_session *s = session_of(k);
    int64_t n = 0, sid = s != NULL ? zsim_session_id(s) : 0;
    for (struct req *q = R.reqs; q; q = q->next)
        n += q->k == k && !q->done;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        kids_of(dirs[i], &kd);
        for (int j = 0; j < kd.n; j++)
            n += kd.owner[j] == sid;
    }
    return 4 + 2 * n > RATE_UP ? 4 + 2 * n : RATE_UP;
}

static void on_request(zhandle_t *zh, const char *path, bool watch)
{
    struct cl *k = NULL;
    for (int i = 0; i < NCL && k == NULL; i++)
        if (R.cl[i].c != NULL && R.cl[i].c->zh == zh)
            k = &R.cl[i];
    if (k == NULL)
        return; /* one opening */
    rate_second(k);
    if (k->rate_list > 0 && !watch)
        k->rate_list--;
    else if (++k->rate_n == RATE_MAX + k->rate_allow + 1)
        violation("rate", "client %d sent more than %" PRId64 " requests in the virtual second "
                  "from %" PRId64 " s (a busy loop?), the last on %s", k->ix,
                  RATE_MAX + k->rate_allow, k->rate_sec, path ? path : "?");
    size_t n = strlen(LATCH_PATH);
    if (watch && path != NULL && strncmp(path, LATCH_PATH, n) == 0 && path[n] == '/')
        check_pred(k, zh, path);
    /* Now and then its process stands still right behind a create (a
     * name without its sequence yet), which the leader may apply meanwhile
     * and its session expire after: the answer waits for the span's end. */
    size_t len = path != NULL ? strlen(path) : 0;
    if (k->stand_armed && !watch && !R.settling && len > 5 && strncmp(path, "/sim/", 5) == 0 &&
        strspn(path + (len > 10 ? len - 10 : 0), "0123456789") != 10 && !stands(k)) {
        k->stand_armed = false;
        k->stand_next = true;
    }
}

static void check_core(void);

static void check(void)
{
    int64_t now = zsim_now(R.w);
    cut_seen();
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        int st = k->c != NULL ? zkl_client_state(k->c) : 0;
        if (st != k->state && (st == ZKL_STATE_CONNECTED || st == ZKL_STATE_RECONNECTED)) {
            rate_second(k);
            k->rate_allow += RATE_UP;
        }
        k->state = st;
    }
    int live[NLOCKS] = {0};
    for (struct req *q = R.reqs; q; q = q->next) {
        /* its callbacks wait for its loop, or its process stands still */
        bool busy = q->k->busy_ns != 0 || stands(q->k);
        if (!busy && !q->done && q->bound != 0 &&
            now > q->bound + 2 * q->k->late_allow + R.slow_ns - q->slow_back +
                      q->k->held_back - q->held_back)
            violation("deadline", "request %d (timeout %ld ms) has no result %.3f s after its "
                      "start", q->id, q->timeout_ms, (double)(now - q->started) / 1e9);
        if (!q->held)
            continue;
        int sh = still_held(q);
        if (sh < 0)
            continue; /* its own thread's checks look */
        if (sh == 0) {
            q->held = false; /* told: the library says it holds no more */
            continue;
        }
        if (q->gone_at == 0 && (zsim_truth_stat(R.w, q->node, NULL) != ZSIM_OK ||
                                (q->lock == L_MULTI &&
                                 zsim_truth_stat(R.w, q->member, NULL) != ZSIM_OK))) {
            q->gone_at = now;
            q->gone_back = q->k->held_back;
            trace("the leader has no node %s of request %d, believed held", q->node, q->id);
            check_expired(q);
        }
        if (q->gone_at == 0) {
            /* A read hold the same thread took under its write hold
             * (downgrade) does not count against that writer. */
            bool under = false;
            for (struct req *w = R.reqs; w && q->is_down; w = w->next)
                under |= w->down == q && w->held && w->gone_at == 0;
            live[q->lock] += q->lock == L_SEM ? q->leases : !under;
            continue;
        }
        zkl_client *c = q->k->c;
        int t = c->negotiated_ms > 0 ? c->negotiated_ms : c->timeout_ms;
        if (!busy && now > q->gone_at + zkl__loss_after_ns(t) + SLACK + q->k->late_allow +
                               q->k->held_back - q->gone_back)
            violation("told", "request %d: its node %s is gone since %.3f s, still believed held",
                      q->id,
                      zsim_truth_stat(R.w, q->node, NULL) != ZSIM_OK ? q->node
                      : q->member[0] != '\0'                           ? q->member
                                                                       : "(its first member's: none)",
                      (double)q->gone_at / 1e9);
    }
    if (live[L_MUTEX] + live[L_MULTI] > 1)
        violation("holders", "%d holders of the mutex %s (%d through the multi-lock)",
                  live[L_MUTEX] + live[L_MULTI], lock_paths[L_MUTEX], live[L_MULTI]);
    if (live[L_SEM] > SEM_MAX)
        violation("holders", "%d leases of the semaphore %s (at most %d)", live[L_SEM],
                  lock_paths[L_SEM], SEM_MAX);
    if (live[L_SEMMUTEX] > 1)
        violation("holders", "%d holders of the semaphore-mutex %s", live[L_SEMMUTEX],
                  lock_paths[L_SEMMUTEX]);
    if (live[L_WRITE] > 1 || (live[L_WRITE] > 0 && live[L_READ] > 0))
        violation("holders", "%d writers and %d readers hold %s", live[L_WRITE], live[L_READ],
                  lock_paths[L_WRITE]);
    check_latches();
    check_core();
}

struct orphan_arg {
    const char *path;
    int found;
    char name[440];
};

static void orphan_child(void *arg, const char *name)
{
    struct orphan_arg *o = arg;
    char path[400];
    snprintf(path, sizeof path, "%s/%s", o->path, name);
    struct zsim_stat st;
    if (zsim_truth_stat(R.w, path, &st) != ZSIM_OK || st.ephemeralOwner == 0)
        return;
    for (int i = 0; i < NCL; i++) {
        zsim_session *s = session_of(&R.cl[i]);
        if (s != NULL && zsim_session_alive(s) && zsim_session_id(s) == st.ephemeralOwner) {
            o->found++;
            snprintf(o->name, sizeof o->name, "%s (client %d)", path, i);
        }
    }
}

static void check_orphans(void)
{
    static const char *const dirs[] = {"/sim/mutex", "/sim/sem", "/sim/semmutex", "/sim/rw",
                                       MULTI_OTHER, LATCH_PATH};
    for (size_t l = 0; l < sizeof dirs / sizeof dirs[0]; l++) {
        struct orphan_arg o = {dirs[l], 0, ""};
        zsim_truth_children(R.w, dirs[l], orphan_child, &o);
        if (o.found > 0)
            violation("orphan", "%d nodes of live sessions left under %s, such as %s", o.found,
                      dirs[l], o.name);
    }
}

/* ---- the library's own nodes: its core, as the internal headers show it ------------- */

/* The client's core, its lock taken, or NULL (none yet, or the lock is
 * held: a call of the library under way on this stack or a parked
 * thread's; the look waits for a later step). */
static struct zkl__core *core_take(struct cl *k)
{
    if (k->c == NULL || pthread_mutex_trylock(&k->c->mu) != 0)
        return NULL;
    struct zkl__engine *e = zkl__engine_find(k->c);
    if (e == NULL || e->core == NULL) {
        pthread_mutex_unlock(&k->c->mu);
        return NULL;
    }
    return e->core;
}

struct core_look {
    int nheld, nlive;
    char held[CORE_HELD][80];  /* the names of its nodes the policy said hold */
    char uuid[CORE_LIVE][44];  /* "_c_<uuid>-" of every node it has not let go of */
    bool told_held;            /* a node told lost is held */
    char told_name[80];
    int64_t sid;               /* the client's session, */
    bool current;              /* ... the core's, connected, the client not closing */
};

static void core_node(zkl__cnode *n, void *arg)
{
    struct core_look *l = arg;
    if (l->nlive < CORE_LIVE) {
        char u[37];
        zkl__uuid_text(n->uuid, u);
        snprintf(l->uuid[l->nlive++], sizeof l->uuid[0], "_c_%s-", u);
    }
    if (n->st != ZKL__N_HELD || n->name == NULL)
        return;
    if (n->told == ZKL__TOLD_LOST && !l->told_held) {
        l->told_held = true;
        snprintf(l->told_name, sizeof l->told_name, "%s", n->name);
    }
    if (l->nheld < CORE_HELD)
        snprintf(l->held[l->nheld++], sizeof l->held[0], "%s", n->name);
}

/* The core's nodes now: false when it cannot be looked at. */
static bool core_look(struct cl *k, struct core_look *l)
{
    l->nheld = l->nlive = 0;
    l->told_held = false;
    struct zkl__core *core = core_take(k);
    if (core == NULL)
        return false;
    zkl__core_each(core, core_node, l);
    l->sid = k->c->sid;
    /* (a session the loss rule gave up is on its way out, its handle to
     * be closed: its nodes are the server's to end, though the handle may
     * connect again meanwhile) */
    l->current = !k->c->closing && !k->c->need_reopen && zkl__core_gen(core) == k->c->gen &&
                 zkl__core_connected(core);
    pthread_mutex_unlock(&k->c->mu);
    return true;
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h | 1;
}

/* The zxid of the leader's delete of a node named name (its last path
 * part: our names are unique by their uuid), 0 if not known. */
static int64_t gone_zxid(const char *name)
{
    uint64_t h = name_hash(name);
    return R.gone[h % GONE_SLOTS].hash == h ? R.gone[h % GONE_SLOTS].zxid : 0;
}

static bool node_exists(const char *name)
{
    static const char *const dirs[] = {"/sim/mutex", "/sim/sem", "/sim/semmutex", "/sim/rw",
                                       MULTI_OTHER, LATCH_PATH};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", dirs[i], name);
        if (zsim_truth_stat(R.w, path, NULL) == ZSIM_OK)
            return true;
    }
    return false;
}

/* basis: a node comes to hold only on news from a time its node existed.
 * The holds of each core are noted before every world step (those a
 * keeper's round or a program's call granted are not judged: their news
 * is not known); a node that holds after an item of the client's session
 * and never held before came to hold on that item's news (zxid). Deleted
 * strictly before it is a violation: a session's end deletes all its
 * nodes in one transaction, whose news may tell of a predecessor's end
 * before our own node's. The descriptor client's items are dispatched by
 * its loop later: not judged either. */
static void basis_note(struct cl *k, int64_t zxid)
{
    static struct core_look l;
    if (!core_look(k, &l) || l.nheld >= CORE_HELD) {
        k->held_unknown = true; /* nothing judged until a look that sees them all */
        return;
    }
    for (int i = 0; i < l.nheld; i++) {
        bool before = false;
        for (int j = 0; j < EVER_HELD && !before; j++)
            before = strcmp(k->ever[j], l.held[i]) == 0;
        if (before)
            continue; /* held before (again after a refused release: the same hold) */
        snprintf(k->ever[k->never++ % EVER_HELD], sizeof k->ever[0], "%s", l.held[i]);
        if (zxid == 0 || k->held_unknown || node_exists(l.held[i]))
            continue;
        int64_t z = gone_zxid(l.held[i]);
        if (z != 0 && z < zxid)
            violation("basis", "client %d: node %s came to hold on news of zxid %" PRId64
                      ", but the leader had deleted it at zxid %" PRId64, k->ix, l.held[i],
                      zxid, z);
    }
    k->held_unknown = false;
}

/* At every step, through the core:
 *   lost-grant  no node is held once its loss was told;
 *   orphan      every node of the client's live session under a lock
 *               path is one its core has not let go of (one it still
 *               creates, holds, waits on or deletes), while the client
 *               is connected on that session: a node let go of stays
 *               until the session ends. */
struct live_arg {
    const struct core_look *l;
    int64_t sid;
    const char *dir;
    char found[400];
};

static void live_child(void *arg, const char *name)
{
    struct live_arg *a = arg;
    if (a->found[0] != '\0' || strncmp(name, "_c_", 3) != 0)
        return;
    char path[400];
    snprintf(path, sizeof path, "%s/%s", a->dir, name);
    struct zsim_stat st;
    if (zsim_truth_stat(R.w, path, &st) != ZSIM_OK || st.ephemeralOwner != a->sid)
        return;
    for (int i = 0; i < a->l->nlive; i++)
        if (strncmp(name, a->l->uuid[i], strlen(a->l->uuid[i])) == 0)
            return;
    snprintf(a->found, sizeof a->found, "%s", path);
}

static void check_core(void)
{
    static const char *const dirs[] = {"/sim/mutex", "/sim/sem", "/sim/semmutex", "/sim/rw",
                                       MULTI_OTHER, LATCH_PATH};
    static struct core_look l;
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        if (!core_look(k, &l))
            continue;
        if (l.told_held)
            violation("lost-grant", "client %d: node %s holds after its loss was told", k->ix,
                      l.told_name);
        zsim_session *s = session_of(k);
        int st = zkl_client_state(k->c);
        if (s == NULL || !zsim_session_alive(s) || !l.current || l.nlive >= CORE_LIVE ||
            l.sid != zsim_session_id(s) ||
            (st != ZKL_STATE_CONNECTED && st != ZKL_STATE_RECONNECTED))
            continue;
        for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
            struct live_arg a = {&l, zsim_session_id(s), dirs[d], ""};
            zsim_truth_children(R.w, dirs[d], live_child, &a);
            if (a.found[0] != '\0')
                violation("orphan", "client %d let go of %s, which stays in its live session",
                          k->ix, a.found);
        }
    }
}

/* ---- the thread's own calls: blocking acquires and releases, guarded
 * writes, the latch, listings and revocation ----------------------------------------- */

/* A blocking call went on for ten virtual minutes: it waits for nothing
 * that comes. No return to the schedule from inside it: report and end. */
static void cancel_tend(void);
static void stuck_check(void)
{
    if (zsim_now(R.w) - block_start <= 600 * 1000 * MS)
        return;
    printf("sim: VIOLATION (stuck) in the schedule of seed %" PRIu64 ", step %" PRId64
           ": a blocking call began at %.3f s and has not returned at %.3f s\n", R.seed, R.step,
           (double)block_start / 1e9, (double)zsim_now(R.w) / 1e9);
    printf("sim: replay: SIM_SEED=%" PRIu64 " SIM_SCHEDULES=1 SIM_THREADS=%d SIM_TRACE=1 "
           "tests/sim/sim-lib\n", R.seed, threads_on);
    printf("sim: seed %" PRIu64 ", %" PRId64 " events, stopped, 1 violations\n", R.seed,
           events_before + R.events);
    exit(1);
}

/* A step while a call waits: while a blocking call of the driver's runs
 * (and no keeper's round is under way), what would run beside it in a
 * program runs too: the keepers, the program's requests, the checks.
 * Otherwise the world only. A synchronous zapi call on handle zh may hold
 * its client's handle lock, which that client's keeper takes to re-open:
 * that keeper waits for the call (it would block on the lock only to
 * re-open; held back for the whole call here), and the deadlines of the
 * client's requests move by as much. The program threads whose waits may
 * end run too (threads_run), as they would beside the call: no zkl lock is
 * held here but the handle's (read: theirs may share it). */
static void wait_step(zhandle_t *zh)
{
    bool inner = blocking == 0;
    for (int i = 0; i < NCL; i++)
        inner |= R.cl[i].in_keeper && &R.cl[i] != R.cb_k; /* a lost callback's call: the rest runs */
    int64_t before = zsim_now(R.w);
    world_step();
    R.step++;
    if (R.cb_k != NULL)
        R.cb_k->held_back += zsim_now(R.w) - before; /* its keeper waits for its callback */
    if (inner)
        return;
    struct cl *hk = NULL;
    for (int i = 0; zh != NULL && i < NCL; i++)
        if (R.cl[i].c != NULL && R.cl[i].c->zh == zh && &R.cl[i] != R.cb_k)
            hk = &R.cl[i];
    if (hk != NULL) {
        hk->sync_busy++;
        hk->held_back += zsim_now(R.w) - before;
        hk->sync_at = before = zsim_now(R.w);
    }
    stuck_check();
    cancel_tend();
    heal(false);
    for (int i = 0; i < NCL; i++)
        if (zh == NULL || R.cl[i].c == NULL || R.cl[i].c->zh != zh)
            keeper(&R.cl[i]);
    swarm_step();
    tend_requests(false);
    threads_run();
    if (hk != NULL) {
        hk->sync_busy--;
        hk->held_back += zsim_now(R.w) - before; /* the threads' steps took it on */
        hk->sync_at = zsim_now(R.w);
    }
    check();
}

/* A blocking acquire's cancel handle fires once its time came, by the
 * driver's thread: inside the driver's own call (wait_step), or at a step
 * while a program thread waits with it (another thread's). */
static void cancel_tend(void)
{
    if (R.cancel != NULL && R.fired_at != 0) {
        int st = zkl_client_state(R.cancel_k->c);
        R.cancel_away |= st != ZKL_STATE_CONNECTED && st != ZKL_STATE_RECONNECTED;
    }
    if (R.cancel != NULL && R.cancel_at != 0 && zsim_now(R.w) >= R.cancel_at &&
        !paused(R.cancel_k)) {
        trace("the blocking acquire's cancel handle fires");
        (void)zkl_cancel_fire(R.cancel);
        R.fired_at = zsim_now(R.w);
        R.fired_slow = slow_mark();
        R.cancel_at = 0;
    }
}

/* A synchronous zapi call's step (zapi_sim_set_stepper). A program
 * thread's parks until the next step (its answer may have come): it never
 * steps the world itself, so that whoever ran it is not held up for the
 * whole call. Its client's keeper waits meanwhile, as for the driver's
 * (wait_step): the call holds the handle's lock, which the keeper takes
 * to re-open. */
static void sync_step(zhandle_t *zh)
{
    if (simt_self() < 0) {
        wait_step(zh);
        return;
    }
    struct cl *hk = NULL;
    for (int i = 0; i < NCL; i++)
        if (R.cl[i].c != NULL && R.cl[i].c->zh == zh)
            hk = &R.cl[i];
    int64_t before = zsim_now(R.w);
    if (hk != NULL)
        hk->sync_busy++;
    simt_park(NULL, NULL, ZKL__NO_DEADLINE);
    if (hk != NULL) {
        hk->sync_busy--;
        hk->held_back += zsim_now(R.w) - before;
        hk->sync_at = zsim_now(R.w);
    }
}

static void begin_blocking(struct cl *k)
{
    block_k = k;
    if (blocking++ == 0)
        block_start = zsim_now(R.w);
    R.blocking_calls++;
}

/* Thread th's hold of lock on client k, if any. */
static struct req *hold_of(struct cl *k, int lock, int th)
{
    for (struct req *q = R.reqs; q; q = q->next)
        if (q->r == NULL && q->k == k && q->lock == lock && q->lock != L_SEM && q->th == th)
            return q;
    return NULL;
}

/* The thread keeps the multi-lock's first member (a refused undo or
 * release). */
static void mb_keep(struct cl *k)
{
    const char *n = zkl_mutex_node(k->mb);
    snprintf(k->mb_node, sizeof k->mb_node, "%s", n ? n : "");
    k->mb_stuck = true;
}

/* The same for the second member, on the mutex's path: an outsider's ACL
 * there refused its delete (guarded_fault). The thread tries the
 * multi-lock no more until it let go of it (tend_refusals). */
static void m2_keep(struct cl *k)
{
    const char *n = zkl_mutex_node(k->m2);
    snprintf(k->m2_node, sizeof k->m2_node, "%s", n ? n : "");
    k->m2_stuck = true;
    trace("client %d: the thread keeps the multi-lock's second member %s", k->ix, k->m2_node);
}

/* undo: after a multi-lock's failure, or the release of its hold, the
 * thread holds a member only where that member's delete was refused
 * (zkl.h: the call returns that release's code) and some refusal was in
 * effect: refuse_op's of the first member's deletes, or an outsider's
 * ACL since start. Such a member is kept (mb_keep, m2_keep). */
static bool members_kept(struct cl *k, int rc, int64_t start, const char *what)
{
    bool kept = false;
    bool refusal = rc == ZKL_ENOAUTH || rc == ZKL_ELOST;
    if (refusal && (k->refused != NULL || lout_refused(start)) && !k->mb_stuck &&
        zkl_mutex_is_held(k->mb)) {
        mb_keep(k);
        kept = true;
    }
    if (refusal && lout_refused(start) && !k->m2_stuck && zkl_mutex_is_held(k->m2)) {
        m2_keep(k);
        kept = true;
    }
    if (!k->mb_stuck && zkl_mutex_is_held(k->mb))
        violation("undo", "client %d: %s returned %s, and the thread holds the first member",
                  k->ix, what, zkl_strerror(rc));
    else if (!k->m2_stuck && zkl_mutex_is_held(k->m2))
        violation("undo", "client %d: %s returned %s, and the thread holds the second member",
                  k->ix, what, zkl_strerror(rc));
    return kept;
}

/* The calling thread's. */
static struct req *thread_hold(struct cl *k, int lock)
{
    return hold_of(k, lock, cur_th());
}

static bool ok_code(int rc, const int *codes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rc == codes[i])
            return true;
    return false;
}

/* A guarded write under a blocking hold: a token written to the lock's
 * fence node; each exclusive lock's written tokens never go back. */
static void guarded_write(struct req *q)
{
    struct cl *k = q->k;
    char data[32];
    int len = snprintf(data, sizeof data, "%" PRId64, q->token);
    const char *fence = fence_paths[q->lock] ? fence_paths[q->lock] : "/sim/fence-sem";
    /* Whether its node is gone before the write is sent: the node may go
     * while the call is out (a fault, its session's expiry, as other
     * threads run) after the server applied the write, which succeeds. */
    bool was_gone = q->gone_at != 0 || zsim_truth_stat(R.w, q->node, NULL) != ZSIM_OK;
    int rc = ZKL_EINVAL;
    int64_t start = zsim_now(R.w);
    begin_blocking(k);
    switch (q->lock) {
    case L_MUTEX:
        rc = zkl_mutex_guarded_set(k->m, fence, data, len);
        break;
    case L_SEM:
        rc = zkl_lease_guarded_set(q->lease, fence, data, len);
        break;
    case L_SEMMUTEX:
        rc = zkl_semmutex_guarded_set(k->sm, fence, data, len);
        break;
    case L_WRITE:
        rc = zkl_rwlock_write_guarded_set(k->rw, fence, data, len);
        break;
    default:
        blocking--;
        return;
    }
    blocking--;
    mix((uint64_t)q->id << 32 ^ (uint32_t)rc ^ 0x6a6a);
    trace("client %d: request %d's guarded write of %s to %s: %s", k->ix, q->id, data, fence,
          zkl_strerror(rc));
    static const int codes[] = {0, ZKL_ELOST, ZKL_ECONNLOSS, ZKL_ECLOSED};
    /* An outsider's ACL on its node refuses the write's check of it (seed
     * 9100159). */
    if (!ok_code(rc, codes, sizeof codes / sizeof codes[0]) &&
        !(rc == ZKL_ENOAUTH && lout_refused(start)))
        violation("fence", "request %d: a guarded write returned %s", q->id, zkl_strerror(rc));
    if (rc != 0 || fence_paths[q->lock] == NULL)
        return;
    if (was_gone)
        violation("fence", "request %d: a guarded write succeeded, its node %s gone", q->id,
                  q->node);
    if (q->token < R.fence[q->lock])
        violation("fence", "request %d: a guarded write of token %" PRId64 " after one of %"
                  PRId64, q->id, q->token, R.fence[q->lock]);
    if (q->token > R.fence[q->lock])
        R.fence[q->lock] = q->token;
}

/* Whether the calling thread may wait for lock of client k without a
 * timeout: nothing held stands in the way (the thread holds nothing, or
 * only that lock of k: a reentry, or the write lock a read lock
 * downgrades; no other thread holds anything, nor is inside a call that
 * may end in a hold, which only the driver's steps let go), so the wait
 * ends once the program's requests let go. Not while a client's deletes
 * are refused (refuse_op): the driver's thread ends that only between its
 * calls. */
static bool may_wait_forever(const struct cl *k, int lock)
{
    int th = cur_th();
    for (int i = 0; i < NCL; i++)
        if (R.cl[i].mb_stuck || R.cl[i].m2_stuck || R.cl[i].refused != NULL)
            return false;
    for (const struct req *q = R.reqs; q; q = q->next)
        if (q->r == NULL &&
            (q->k != k || q->th != th || lock == L_SEM || lock == L_SEMMUTEX ||
             !(q->lock == lock || (lock == L_READ && q->lock == L_WRITE))))
            return false;
    for (int t = 0; t < NCL * NTH; t++)
        if (t + 1 != th && simt_busy(t))
            return false;
    return true;
}

/* A blocking acquire of lock by the calling thread (the driver's or a
 * program thread) on client k's objects; cancellable: now and then with a
 * cancel handle (one at a time, the driver's thread's or a program
 * thread's), which the driver's thread fires (cancel_tend). */
static void blocking_acquire_of(struct cl *k, int lock, bool cancellable)
{
    if (lock == L_MULTI && k->m2_stuck)
        return; /* (m2_keep) */
    long t = zsim_below(R.w, 2) == 0 ? 0 : (long)(100 + zsim_below(R.w, 2000));
    if (zsim_below(R.w, 3) == 0 && may_wait_forever(k, lock))
        t = -1; /* stuck bounds it */
    struct req *have = thread_hold(k, lock);
    /* A downgrade from a live write hold needs no wait (its node holds by
     * virtue of the write lock): with the program threads, half of them
     * wait without a deadline whatever else the thread holds, so one that
     * waits for its own writer never returns (stuck). Without them, the
     * draws stay those of the schedule before the threads came. */
    struct req *wr = lock == L_READ && have == NULL ? thread_hold(k, L_WRITE) : NULL;
    if (t >= 0 && wr != NULL && wr->gone_at == 0 && threads_on && zsim_below(R.w, 2) == 0)
        t = -1;
    struct req *q = calloc(1, sizeof *q);
    if (q == NULL)
        abort();
    q->k = k;
    q->id = ++R.ids;
    q->lock = lock;
    q->th = cur_th();
    q->timeout_ms = t;
    q->started = zsim_now(R.w);
    q->slow_back = slow_mark();
    q->stood_back = k->stood_ns;
    q->bound = t < 0 ? 0
                     : q->started + (t > 0 ? t : (int64_t)k->c->timeout_ms) * MS +
                           ZKL__GRACE_NS + SLACK;
    int rc = ZKL_EINVAL;
    /* Now and then with a cancel handle, fired a while after the start. */
    zkl_cancel *h = NULL;
    if (cancellable && zsim_below(R.w, 3) == 0 && R.cancel == NULL) {
        if (zkl_cancel_new(&h) != 0)
            abort();
        R.cancel = h;
        R.cancel_k = k;
        R.cancel_away = false;
        R.cancel_at = q->started + (int64_t)zsim_below(R.w, t > 500 ? (uint64_t)t : 500) * MS;
        R.fired_at = 0;
    }
    begin_blocking(k);
    switch (lock) {
    case L_MUTEX:
        rc = zkl_mutex_acquire_cancellable(k->m, t, h);
        break;
    case L_SEM:
        q->leases = 1 + (int)zsim_below(R.w, SEM_MAX);
        rc = zkl_semaphore_acquire_many_cancellable(k->s, q->leases, t, h, &q->lease);
        break;
    case L_SEMMUTEX:
        rc = zkl_semmutex_acquire_cancellable(k->sm, t, h);
        break;
    case L_READ:
        rc = zkl_rwlock_read_acquire_cancellable(k->rw, t, h);
        break;
    case L_WRITE:
        rc = zkl_rwlock_write_acquire_cancellable(k->rw, t, h);
        break;
    case L_MULTI: {
        /* Its undo releases the kept member's reentry; that member lost
         * (told so before the call, or its session ended during it), the
         * release clears its hold whatever its count (zkl.h), whatever
         * the call returns (lost, cancelled, timed out). */
        int64_t tok = 0;
        uint64_t gen = k->c->gen;
        bool lost = k->mb_stuck && zkl_mutex_token(k->mb, &tok) == ZKL_ELOST;
        /* undo: a failed acquire leaves the thread nothing of the call
         * (zkl.h), but a member whose release was refused. */
        bool fresh = have == NULL && !(q->th == 0 && k->mb_stuck) && !zkl_mutex_is_held(k->mb) &&
                     !zkl_mutex_is_held(k->m2);
        rc = zkl_multilock_acquire_cancellable(k->ml, t, h);
        if (k->mb_stuck && (rc == ZKL_ELOST || (rc != 0 && (lost || k->c->gen != gen))))
            k->mb_cleared = true;
        /* undo: the driver's thread, tried while its first member's
         * deletes are refused, or an outsider's ACL refused either's: the
         * undo keeps that member for the thread (as refuse_op's). A
         * program thread's tries no refusal (thread_more, refuse_op and
         * guarded_fault keep away): it is left nothing of a failed call. */
        if (q->th == 0 && rc != 0 && have == NULL)
            (void)members_kept(k, rc, q->started, "a failed multi-lock");
        else if (q->th != 0 && fresh && rc != 0 &&
                 (zkl_mutex_is_held(k->mb) || zkl_mutex_is_held(k->m2)))
            violation("undo", "client %d: thread %d's multi-lock failed (%s), but the thread "
                      "holds a member", k->ix, q->th, zkl_strerror(rc));
        break;
    }
    }
    blocking--;
    int64_t now = zsim_now(R.w);
    /* A multi-lock's undo releases what it took, each release waiting for
     * the server's word (zkl.h), which a silent link or a follower cut from
     * the leader holds until it ends or the loss rule gives the session up.
     * A follower cut for another client's fault (or cut off by a fault of
     * its own) serves this one's session too when it is connected there:
     * any follower cut counts, as it comes (cut_seen). */
    int64_t undo = 0;
    int64_t cut = k->cut_at > R.cut_at ? k->cut_at : R.cut_at;
    if (lock == L_MULTI && cut != 0 && cut + 2 * (int64_t)k->c->negotiated_ms * MS > q->started)
        undo = zkl__loss_after_ns(k->c->negotiated_ms) + SLACK + k->late_allow;
    /* Its process stood still meanwhile: its call went on once it ran. */
    undo += k->stood_ns - q->stood_back;
    if (stands(k))
        undo += k->stand_owed;
    if (h != NULL) {
        if (rc == ZKL_ECANCELED && R.fired_at == 0)
            violation("cancel", "blocking acquire %d: cancelled, its handle not fired", q->id);
        else if (rc == ZKL_ECANCELED && !R.cancel_away &&
                 now > R.fired_at + ZKL__GRACE_NS + SLACK + k->late_allow + R.slow_ns -
                           R.fired_slow + undo)
            violation("cancel", "blocking acquire %d: cancelled %.3f s after its handle fired",
                      q->id, (double)(now - R.fired_at) / 1e9);
        R.cancel = NULL;
        R.cancel_at = 0;
        zkl_cancel_free(h);
    }
    mix((uint64_t)q->id << 32 ^ (uint32_t)rc ^ 0x7b7b);
    trace("client %d: thread %d's blocking acquire %d of the %s, timeout %ld ms: %s%s", k->ix,
          q->th, q->id, lock_names[lock], t, zkl_strerror(rc),
          have ? " (held already)" : wr ? " (a downgrade)" : "");
    if (q->bound != 0 && now > q->bound + 2 * k->late_allow + R.slow_ns - q->slow_back + undo)
        violation("deadline", "blocking acquire %d (timeout %ld ms) returned %.3f s after its "
                  "start", q->id, t, (double)(now - q->started) / 1e9);
    check_prompt(q, now, undo);
    if (rc == 0 && have != NULL && lock != L_SEMMUTEX) {
        have->count++; /* a reentry only counts */
        free(q);
        return;
    }
    if (rc == 0 && have != NULL)
        violation("twice", "the semaphore-mutex of client %d granted twice", k->ix);
    /* The semaphore-mutex's hold is the object's: granted while another
     * thread's hold of it is not yet released, it would be twice. */
    for (struct req *o = R.reqs; o && rc == 0 && lock == L_SEMMUTEX; o = o->next)
        if (o->r == NULL && o->k == k && o->lock == L_SEMMUTEX)
            violation("twice", "the semaphore-mutex of client %d granted to thread %d while "
                      "thread %d's hold (%d) is not released", k->ix, q->th, o->th, o->id);
    if (rc != 0) {
        free(q);
        return;
    }
    struct req *writer = lock == L_READ ? thread_hold(k, L_WRITE) : NULL;
    const char *node = NULL;
    int trc = ZKL_EINVAL;
    switch (lock) {
    case L_MUTEX:
        node = zkl_mutex_node(k->m);
        trc = zkl_mutex_token(k->m, &q->token);
        break;
    case L_SEM:
        node = zkl_lease_node(q->lease);
        trc = zkl_lease_token(q->lease, &q->token);
        break;
    case L_SEMMUTEX:
        trc = zkl_semmutex_token(k->sm, &q->token);
        break;
    case L_READ:
        node = zkl_rwlock_read_node(k->rw);
        trc = zkl_rwlock_read_token(k->rw, &q->token);
        break;
    case L_WRITE:
        node = zkl_rwlock_write_node(k->rw);
        trc = zkl_rwlock_write_token(k->rw, &q->token);
        break;
    case L_MULTI:
        node = zkl_mutex_node(k->m2);
        trc = zkl_mutex_token(k->m2, &q->token);
        (void)zkl_mutex_token(k->mb, &q->mtoken);
        break;
    }
    if (trc != 0 && trc != ZKL_ELOST)
        violation("token", "blocking acquire %d of the %s: held, but its token says %s", q->id,
                  lock_names[lock], zkl_strerror(trc));
    if (node != NULL)
        snprintf(q->node, sizeof q->node, "%s", node);
    else if (lock == L_SEMMUTEX)
        (void)node_of_token(lock_paths[lock], q->token, q->node, sizeof q->node);
    if (writer != NULL) {
        q->is_down = true; /* taken under the thread's write hold: a downgrade */
        writer->down = q;
    }
    q->next = R.reqs;
    R.reqs = q;
    q->told = still_held(q) == 0; /* lost before it was recorded: no callback to come */
    on_result(NULL, 0, q);
    if (q->gone_at == 0 && zsim_below(R.w, 2) == 0)
        guarded_write(q);
    /* A write hold is downgraded at once half the time (its read hold
     * taken, the write hold released in its time, before or after). */
    if (lock == L_WRITE && zsim_below(R.w, 2) == 0)
        blocking_acquire_of(k, L_READ, cancellable);
}

/* Half the time, thread th of client k, which holds its write lock,
 * downgrades instead of taking lock: its read node sorts level with its
 * write node, before the writers and readers queued meanwhile. */
static int downgrade_or(struct cl *k, int th, int lock)
{
    if (hold_of(k, L_WRITE, th) != NULL && zsim_below(R.w, 2) == 0)
        return L_READ;
    return lock;
}

/* A blocking acquire by the driver's thread, of what the seed says. */
static void blocking_acquire(struct cl *k)
{
    int lock = (int)zsim_below(R.w, NLOCKS);
    blocking_acquire_of(k, downgrade_or(k, cur_th(), lock), true);
}

/* Release the thread's hold q, one count of it. */
/* kept: a release that says the hold stays (zkl.h: the delete refused,
 * ZKL_ENOAUTH, or not sent, ZKL_ENOMEM or ZKL_EZK) leaves the node to its core, which has not let go
 * of it: else the caller keeps a hold of a node nobody deletes. */
static void check_kept(const struct req *q, int rc)
{
    static struct core_look l;
    const char *base = strrchr(q->node, '/');
    if (base == NULL || !core_look(q->k, &l) || l.nlive >= CORE_LIVE)
        return;
    for (int i = 0; i < l.nlive; i++)
        if (strncmp(base + 1, l.uuid[i], strlen(l.uuid[i])) == 0)
            return;
    violation("kept", "client %d: the release of %d (%s) says %s, the hold stays, but the "
              "library let go of its node %s", q->k->ix, q->id, lock_names[q->lock],
              zkl_strerror(rc), q->node);
}

static void blocking_release(struct req *q)
{
    struct cl *k = q->k;
    int rc = ZKL_EINVAL;
    int64_t start = zsim_now(R.w);
    begin_blocking(k);
    switch (q->lock) {
    case L_MUTEX:
        rc = zkl_mutex_release(k->m);
        break;
    case L_SEM:
        rc = zkl_lease_release(q->lease);
        if (rc != ZKL_ENOAUTH)
            q->lease = NULL;
        break;
    case L_SEMMUTEX:
        rc = zkl_semmutex_release(k->sm);
        break;
    case L_READ:
        rc = zkl_rwlock_read_release(k->rw);
        break;
    case L_WRITE:
        rc = zkl_rwlock_write_release(k->rw);
        break;
    case L_MULTI:
        rc = zkl_multilock_release(k->ml);
        if (rc == ZKL_ELOST && k->mb_stuck)
            k->mb_cleared = true; /* as for an acquire's undo */
        break;
    }
    blocking--;
    mix((uint64_t)q->id << 32 ^ (uint32_t)rc ^ 0x8c8c);
    trace("client %d: blocking release of %d (%s%s): %s", k->ix, q->id, lock_names[q->lock],
          q->count > 0 ? ", a reentry" : "", zkl_strerror(rc));
    static const int codes[] = {0, ZKL_ELOST, ZKL_ECLOSED};
    /* A multi-lock hold whose first member the thread kept too (a refused
     * undo) is cleared, lost, by that member's release (zkl.h: a lost
     * hold's release clears it whatever its count). */
    bool cleared = q->lock == L_MULTI && rc == ZKL_ENOTHELD && k->mb_lost;
    if (q->lock == L_MULTI)
        k->mb_lost = false;
    if ((rc == ZKL_ENOAUTH || rc == ZKL_ENOMEM || rc == ZKL_EZK) && q->lock != L_MULTI)
        check_kept(q, rc);
    if (rc == ZKL_ENOAUTH && q->lock != L_MULTI && lout_refused(start)) {
        /* An outsider's ACL refused the delete: the hold stays (zkl.h),
         * released again a while later. */
        q->release_at = zsim_now(R.w) + (int64_t)(1 + zsim_below(R.w, 1000)) * MS;
        return;
    }
    /* A member's delete was refused: the thread keeps it, the multi-lock's
     * hold is over (refuse_op, guarded_fault); the release returns the
     * first member error it met, its other member's ZKL_ELOST too (seed
     * 7400961). */
    bool kept = q->lock == L_MULTI && q->count == 0 &&
                members_kept(k, rc, start, "the multi-lock's release");
    if (!kept && !cleared && !ok_code(rc, codes, sizeof codes / sizeof codes[0]))
        violation("release", "the release of %d (%s) returned %s", q->id, lock_names[q->lock],
                  zkl_strerror(rc));
    /* A lost hold is cleared whatever its count (zkl.h): its reentries
     * have nothing left to release. */
    if (q->count > 0 && rc != ZKL_ELOST) {
        q->count--;
        return;
    }
    for (struct req *w = R.reqs; w; w = w->next)
        if (w->down == q)
            w->down = NULL;
    if (q->down != NULL)
        q->down->is_down = false; /* the writer went: a reader as any other */
    free_request(q);
}

/* The driver's thread's holds whose time came (all: every one), released. A
 * release's waits run the program's requests, which may free some: from
 * the list's start after each. */
static void tend_blocking(bool all)
{
    while (!R.violated) {
        int64_t now = zsim_now(R.w);
        struct req *q = R.reqs;
        while (q != NULL && !(q->r == NULL && q->th == 0 && (all || now >= q->release_at) &&
                              (all || !paused(q->k))))
            q = q->next;
        if (q == NULL)
            return;
        blocking_release(q);
    }
}

/* ---- the program threads: a client's threads in blocking calls at once -------- */

/* Each client has NTH program threads (sim_threads.h: real threads, one
 * running at a time) beside the driver's: each takes blocking holds of
 * the mutex, a lease of the semaphore or either side of the read-write
 * lock (reentries counted per thread, a downgrade from its own write
 * hold), releases them on their time, and now and then releases a lock
 * another thread of its client holds, which must be refused (ZKL_ENOTHELD:
 * zkl.h, holds are the calling thread's). Their waits park them; every
 * step runs those whose condition variable was signalled or whose
 * deadline passed (threads_run), in an order from the seed. */
enum { J_ACQUIRE, J_RELEASE, J_FOREIGN, J_LATCH, J_LIST, J_UPGRADE };
static struct job {
    struct cl *k;
    int kind, lock;
    bool cancellable; /* J_ACQUIRE: now and then with a cancel handle */
    struct req *q; /* J_RELEASE: the hold; J_FOREIGN: another thread's */
    int64_t started;
} jobs[NCL * NTH];

/* A program thread takes or holds the multi-lock. */
static bool threads_multi(void)
{
    for (int t = 0; t < NCL * NTH; t++)
        if (simt_busy(t) && jobs[t].kind == J_ACQUIRE && jobs[t].lock == L_MULTI)
            return true;
    for (struct req *q = R.reqs; q; q = q->next)
        if (q->r == NULL && q->th != 0 && q->lock == L_MULTI)
            return true;
    return false;
}
/* In all schedules: the program threads' calls, the refused releases of
 * another thread's lock, and the steps at which two or more threads of a
 * client were inside calls at once; thread_more's calls, and its upgrade
 * attempts refused. */
static uint64_t thread_calls, foreign_refused, overlapped, more_calls, upgrades_refused;

/* A program thread's call does not return: no way back to the schedule
 * (the thread is inside the library), so report and end. */
static void threads_stuck(const char *text, int t, int64_t started)
{
    /* A schedule cut short by a violation lets go of no hold, which a
     * thread waiting without a timeout may wait on for ever: the violation
     * that cut it short is the one to report. */
    if (R.violated)
        printf("sim: VIOLATION %s\n", R.vtext);
    else
        printf("sim: VIOLATION (stuck) in the schedule of seed %" PRIu64 ", step %" PRId64
               ": program thread %d's blocking call began at %.3f s and %s at %.3f s\n",
               R.seed, R.step, t + 1, (double)started / 1e9, text,
               (double)zsim_now(R.w) / 1e9);
    printf("sim: replay: SIM_SEED=%" PRIu64 " SIM_SCHEDULES=1 SIM_THREADS=%d SIM_TRACE=1 "
           "tests/sim/sim-lib\n", R.seed, threads_on);
    printf("sim: seed %" PRIu64 ", %" PRId64 " events, stopped, 1 violations\n", R.seed,
           events_before + R.events);
    exit(1);
}

static void foreign_release(struct job *j)
{
    struct cl *k = j->k;
    struct req *o = j->q;
    bool live = o->gone_at == 0 && zsim_truth_stat(R.w, o->node, NULL) == ZSIM_OK;
    int rc = j->lock == L_MUTEX  ? zkl_mutex_release(k->m)
             : j->lock == L_READ ? zkl_rwlock_read_release(k->rw)
                                 : zkl_rwlock_write_release(k->rw);
    mix((uint64_t)o->id << 32 ^ (uint32_t)rc ^ 0xd1d1);
    trace("client %d: thread %d releases the %s held by thread %d (%d): %s", k->ix, cur_th(),
          lock_names[j->lock], o->th, o->id, zkl_strerror(rc));
    foreign_refused += rc == ZKL_ENOTHELD;
    if (rc != ZKL_ENOTHELD)
        violation("thread", "client %d: thread %d's release of the %s that thread %d holds "
                  "returned %s", k->ix, cur_th(), lock_names[j->lock], o->th,
                  zkl_strerror(rc));
    else if (live && zsim_truth_stat(R.w, o->node, NULL) != ZSIM_OK)
        violation("thread", "client %d: a refused release by thread %d deleted thread %d's "
                  "node %s", k->ix, cur_th(), o->th, o->node);
}

static void latch_op(struct cl *k);
static void list_op(struct cl *k);

/* The read-write lock's upgrade: a thread that holds the read lock (taken
 * first if it holds neither side) asks for the write lock, which could
 * only wait for its own reader: ZKL_EDEADLK at once, nothing sent, its
 * read hold as it was (zkl.h). */
static void upgrade(struct job *j)
{
    struct cl *k = j->k;
    if (thread_hold(k, L_READ) == NULL && thread_hold(k, L_WRITE) == NULL)
        blocking_acquire_of(k, L_READ, false);
    struct req *rd = thread_hold(k, L_READ);
    if (rd == NULL || thread_hold(k, L_WRITE) != NULL || R.violated)
        return;
    int held = zkl_rwlock_read_is_held(k->rw);
    bool live = zsim_truth_stat(R.w, rd->node, NULL) == ZSIM_OK;
    int64_t start = zsim_now(R.w);
    begin_blocking(k);
    int rc = zkl_rwlock_write_acquire(k->rw, 1000);
    blocking--;
    mix((uint64_t)rd->id << 32 ^ (uint32_t)rc ^ 0xe2e2);
    trace("client %d: thread %d, holding the read lock (%d), asks for the write lock: %s",
          k->ix, cur_th(), rd->id, zkl_strerror(rc));
    upgrades_refused += rc == ZKL_EDEADLK;
    if (rc != ZKL_EDEADLK)
        violation("upgrade", "client %d: thread %d's write acquire over its read hold %d "
                  "returned %s", k->ix, cur_th(), rd->id, zkl_strerror(rc));
    else if (zsim_now(R.w) != start || zkl_rwlock_read_is_held(k->rw) != held ||
             (live && zsim_truth_stat(R.w, rd->node, NULL) != ZSIM_OK))
        violation("upgrade", "client %d: thread %d's refused upgrade waited or changed its "
                  "read hold %d", k->ix, cur_th(), rd->id);
}

static void job_run(void *arg)
{
    struct job *j = arg;
    switch (j->kind) {
    case J_ACQUIRE:
        blocking_acquire_of(j->k, j->lock, j->cancellable);
        break;
    case J_RELEASE:
        blocking_release(j->q);
        break;
    case J_LATCH:
        latch_op(j->k);
        break;
    case J_LIST:
        list_op(j->k);
        break;
    case J_UPGRADE:
        upgrade(j);
        break;
    default:
        foreign_release(j);
        break;
    }
}

/* Thread t starts a job (it runs at once, until it parks or returns);
 * a J_ACQUIRE of thread_more's may be cancellable. */
static bool next_cancellable;
static void start_job(int t, int kind, int lock, struct req *q)
{
    struct job *j = &jobs[t];
    j->k = &R.cl[t / NTH];
    j->kind = kind;
    j->lock = lock;
    j->cancellable = next_cancellable;
    next_cancellable = false;
    j->q = q;
    j->started = zsim_now(R.w);
    thread_calls++;
    simt_start(t, job_run, j);
}

/* The parked program threads whose wait may end run, one at a time, each
 * until it parks again or its call returns (a bounded number: two that
 * keep waking each other go on at the next step). */
static void threads_run(void)
{
    simt_wake(NULL); /* those in synchronous calls: the world stepped */
    for (int round = 0; round < 4 * NCL * NTH; round++) {
        int ready[NCL * NTH], n = 0;
        int64_t now = zsim_now(R.w);
        for (int t = 0; t < NCL * NTH; t++)
            if (simt_ready(t, now) && !paused(&R.cl[t / NTH]) && &R.cl[t / NTH] != R.cb_k)
                ready[n++] = t;
        if (n == 0)
            return;
        simt_resume(ready[n == 1 ? 0 : (int)zsim_below(R.w, (uint64_t)n)]);
    }
}

/* A program thread of client k, if idle: a blocking acquire, or now and
 * then the release of a lock another thread of k holds. */
static void thread_op(struct cl *k)
{
    int t = k->ix * NTH + (int)zsim_below(R.w, NTH);
    if (simt_busy(t))
        return;
    static const int locks[] = {L_MUTEX, L_SEM, L_READ, L_WRITE};
    int lock = downgrade_or(k, t + 1, locks[zsim_below(R.w, 4)]);
    if (lock != L_SEM && hold_of(k, lock, t + 1) == NULL && zsim_below(R.w, 2) == 0) {
        for (struct req *q = R.reqs; q; q = q->next)
            if (q->r == NULL && q->k == k && q->lock == lock && q->th != t + 1 && q->held) {
                start_job(t, J_FOREIGN, lock, q);
                return;
            }
    }
    start_job(t, J_ACQUIRE, lock, NULL);
}

/* Now and then (thread_more's draw), a program thread of client k, if
 * idle, does what the others' calls do not: the multi-lock (not while the
 * client's deletes are refused: refuse_op's undo is the driver's thread's),
 * the semaphore-mutex (its hold the object's: ZKL_EDEADLK while another
 * thread holds it or acquires through it), an acquire of any of them with a
 * cancel handle the driver's thread fires, the client's latch (started,
 * awaited, closed), a listing (participants, limit, revocation), or the
 * read-write lock's upgrade. */
static void thread_more(struct cl *k)
{
    int t = k->ix * NTH + (int)zsim_below(R.w, NTH);
    if (simt_busy(t)) {
        trace("client %d: thread %d, in a call, does nothing more", k->ix, t + 1);
        return;
    }
    more_calls++;
    uint64_t what = zsim_below(R.w, 6);
    static const char *const names[] = {"the multi-lock",  "the semaphore-mutex",
                                        "a cancellable acquire", "the latch",
                                        "a listing",        "the upgrade"};
    trace("client %d: thread %d goes for %s", k->ix, t + 1, names[what]);
    int lock = what == 0 ? L_MULTI : L_SEMMUTEX;
    if (what == 2)
        lock = (int)zsim_below(R.w, NLOCKS);
    /* A refusal keeps a member for the driver's thread (members_kept): a
     * program thread takes no multi-lock while one may come. */
    if (what <= 2 && lock == L_MULTI &&
        (k->refused != NULL || k->mb_stuck || k->m2_stuck || lout_refused(zsim_now(R.w))))
        lock = L_MUTEX;
    if (what <= 2) {
        next_cancellable = what == 2;
        start_job(t, J_ACQUIRE, downgrade_or(k, t + 1, lock), NULL);
    } else
        start_job(t, what == 3 ? J_LATCH : what == 4 ? J_LIST : J_UPGRADE, 0, NULL);
}

/* Each step: the program threads that may go on run; an idle one whose
 * hold's time came (all: every hold) releases it; none is stuck. */
static void tend_threads(bool all)
{
    threads_run();
    int64_t now = zsim_now(R.w);
    for (int i = 0; i < NCL; i++) {
        int in = 0;
        for (int t = i * NTH; t < (i + 1) * NTH; t++)
            in += simt_busy(t);
        overlapped += in > 1;
    }
    for (int t = 0; t < NCL * NTH && !R.violated; t++) {
        if (simt_busy(t)) {
            if (now - jobs[t].started > 600 * 1000 * MS)
                threads_stuck("has not returned", t, jobs[t].started);
            continue;
        }
        if (paused(&R.cl[t / NTH]) && !all)
            continue;
        for (struct req *q = R.reqs; q; q = q->next)
            if (q->r == NULL && q->th == t + 1 && (all || now >= q->release_at)) {
                start_job(t, J_RELEASE, q->lock, q);
                break;
            }
    }
}

/* Before the objects go: every program thread's call returns (the world,
 * the keepers and the threads run; a call that waits ten virtual minutes
 * more is stuck). Their holds go with the objects. */
static void threads_drain(void)
{
    int64_t until = zsim_now(R.w) + 600 * 1000 * MS;
    for (long n = 0;; n++) {
        int busy = -1;
        for (int t = 0; t < NCL * NTH; t++)
            if (simt_busy(t))
                busy = t;
        if (busy < 0)
            return;
        if (zsim_now(R.w) > until || n > 10000000) /* the world stands still: no timer */
            threads_stuck("has not returned once the schedule ended, ten minutes later",
                          busy, jobs[busy].started);
        world_step();
        stand_tend(false);
        for (int i = 0; i < NCL; i++)
            keeper(&R.cl[i]);
        threads_run();
    }
}

static void on_lead(zkl_latch *l, int leader, void *arg)
{
    struct cl *k = arg;
    k->leading = leader;
    int64_t token = 0;
    int rc = leader ? zkl_latch_token(l, &token) : ZKL_ENOTHELD;
    cb_lead(k, l, leader);
    mix((uint64_t)k->ix << 40 ^ (uint64_t)leader << 36 ^ (uint64_t)token);
    trace("client %d: the latch %s (token %" PRId64 ")", k->ix, leader ? "leads" : "leads no more",
          token);
    if (!leader || rc != 0)
        return;
    R.latch_leads++;
    /* session: it leads on a node of the client's current session
     * (CURATOR-696): the node's ephemeral owner, as the leader made it (it
     * may be gone since), is the session the client says it has. */
    int64_t owner = latch_owner(token), sid = 0;
    if (owner != 0 && (zkl_client_session_id(k->c, &sid) != 0 || sid != owner))
        violation("session", "client %d's latch leads on its node of token %" PRId64 ", of "
                  "session 0x%" PRIx64 ", while its session is 0x%" PRIx64, k->ix, token,
                  (uint64_t)owner, (uint64_t)sid);
    char node[400];
    if (node_of_token(LATCH_PATH, token, node, sizeof node)) {
        if (token <= R.max_lead)
            violation("token", "client %d's latch leads with token %" PRId64 ", not above %"
                      PRId64, k->ix, token, R.max_lead);
        R.max_lead = token;
    }
}

/* The leader latch of client k: made and started, awaited, or closed. */
static void latch_call(struct cl *k)
{
    int rc;
    if (k->latch == NULL) {
        char id[32];
        snprintf(id, sizeof id, "sim-%d", k->ix);
        if (zkl_latch_new(k->c, LATCH_PATH, id, &k->latch) != 0)
            abort();
        (void)zkl_latch_set_listener(k->latch, on_lead, k);
        rc = zkl_latch_start(k->latch);
        k->latch_from = zsim_now(R.w);
        trace("client %d: the latch starts: %s", k->ix, zkl_strerror(rc));
        return;
    }
    switch (zsim_below(R.w, 3)) {
    case 0:
    case 1: {
        long t = zsim_below(R.w, 2) == 0 ? 0 : (long)zsim_below(R.w, 1000);
        begin_blocking(k);
        rc = zkl_latch_await(k->latch, t);
        blocking--;
        trace("client %d: the latch's await (%ld ms): %s", k->ix, t, zkl_strerror(rc));
        static const int codes[] = {0, ZKL_ETIMEDOUT, ZKL_ELOST};
        /* A program thread's await that its client's close (close_client)
         * ends says so. */
        if (!ok_code(rc, codes, sizeof codes / sizeof codes[0]) &&
            !(rc == ZKL_EZK && wrap_seen(LATCH_PATH)) && !(rc == ZKL_ECLOSED && k->closing) &&
            !(rc == ZKL_ENOAUTH && lout_refused(k->latch_from)))
            violation("latch", "client %d's await returned %s", k->ix, zkl_strerror(rc));
        if (rc == ZKL_ENOAUTH && !R.violated) {
            /* An outsider's ACL refused its node or the listing: it takes
             * part no more (zkl_latch(3)); the program closes it, and
             * starts another later. */
            begin_blocking(k);
            int crc = zkl_latch_close(k->latch);
            blocking--;
            trace("client %d: the latch, stopped by a refusal, closes: %s", k->ix,
                  zkl_strerror(crc));
            if (zkl_latch_is_leader(k->latch))
                violation("latch", "client %d's latch stopped by a refusal still leads", k->ix);
            zkl_latch_free(k->latch);
            k->latch = NULL;
            k->leading = 0;
        }
        break;
    }
    default: {
        int64_t start = zsim_now(R.w);
        begin_blocking(k);
        rc = zkl_latch_close(k->latch);
        blocking--;
        trace("client %d: the latch closes: %s", k->ix, zkl_strerror(rc));
        static const int codes[] = {0, ZKL_ECONNLOSS, ZKL_ETIMEDOUT};
        /* (ZKL_ENOAUTH: the ACL refuses the delete, retried until the
         * session ends or the ACL is put back) */
        if (!ok_code(rc, codes, sizeof codes / sizeof codes[0]) &&
            !(rc == ZKL_ECLOSED && k->closing) && !(rc == ZKL_ENOAUTH && lout_refused(start)))
            violation("latch", "client %d's latch close returned %s", k->ix, zkl_strerror(rc));
        if (zkl_latch_is_leader(k->latch))
            violation("latch", "client %d's closed latch still leads", k->ix);
        zkl_latch_free(k->latch);
        k->latch = NULL;
        k->leading = 0;
        break;
    }
    }
    mix((uint64_t)k->ix << 32 ^ (uint32_t)rc ^ 0x9d9d);
}

/* By the driver's thread or a program thread: not while another thread's
 * call on the latch is under way, as a close frees it. */
static void latch_op(struct cl *k)
{
    if (k->latch_busy > 0)
        return;
    k->latch_busy++;
    latch_call(k);
    k->latch_busy--;
}

/* A thread's hold of client k's lock, lost (its token named): told. The
 * holds of the mutex and of each side of the read-write lock are per
 * thread, so other threads' checks learn of it only so. */
static void told_lost(struct cl *k, int lock, int64_t token)
{
    for (struct req *q = R.reqs; q; q = q->next)
        if (q->r == NULL && q->k == k && q->lock == lock && q->token == token && q->held)
            q->told = true;
    trace("client %d: a %s hold (token %" PRId64 ") is told lost", k->ix, lock_names[lock],
          token);
}

static void on_lost_mutex(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m;
    told_lost(arg, L_MUTEX, token);
    cb_lost(arg);
}

/* A multi-lock member's loss ends the multi-lock's hold (its token the
 * second member's, the mutex path's; mb: the first's). */
static void on_lost_m2(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m;
    told_lost(arg, L_MULTI, token);
    cb_lost(arg);
}

static void on_lost_mb(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m;
    struct cl *k = arg;
    for (struct req *q = R.reqs; q; q = q->next)
        if (q->r == NULL && q->k == k && q->lock == L_MULTI && q->mtoken == token && q->held)
            q->told = true;
    trace("client %d: a multi-lock's first member (token %" PRId64 ") is told lost", k->ix,
          token);
    cb_lost(k);
}

static void on_lost_rw(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    (void)rw;
    told_lost(arg, write ? L_WRITE : L_READ, token);
    cb_lost(arg);
}

static void on_revoke_mutex(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m, (void)arg;
    R.revokes_told++;
    trace("a mutex hold (token %" PRId64 ") is asked to let go", token);
}

static void on_revoke_rw(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    (void)rw, (void)arg;
    R.revokes_told++;
    trace("a %s hold (token %" PRId64 ") is asked to let go", write ? "write" : "read", token);
}

static void on_revoke_sm(zkl_semmutex *sm, int64_t token, void *arg)
{
    (void)sm, (void)arg;
    R.revokes_told++;
    trace("a semaphore-mutex hold (token %" PRId64 ") is asked to let go", token);
}

/* A listing of a lock path's participants (its holders by the recipes'
 * policies, on one listing), the semaphore's limit, or a revocation. */
static void list_op(struct cl *k)
{
    static const char *const dirs[] = {"/sim/mutex", "/sim/sem", "/sim/semmutex", "/sim/rw",
                                       LATCH_PATH};
    const char *dir = dirs[zsim_below(R.w, 5)];
    uint64_t what = zsim_below(R.w, 4);
    int rc;
    int64_t start = zsim_now(R.w);
    begin_blocking(k);
    if (what == 0) {
        /* The path of a hold of the thread's, if any: its holder hears. */
        for (struct req *q = R.reqs; q; q = q->next)
            if (q->r == NULL && q->held && q->lock != L_SEM)
                dir = lock_paths[q->lock];
        /* Its listing (below), and a write to each holder. */
        /* (added: another thread's listing may be under way) */
        int64_t more = 1 + 2 * zsim_truth_children(R.w, dir, NULL, NULL) + 16;
        k->rate_list += more;
        rc = zkl_revoke(k->c, dir, NULL);
        k->rate_list -= more;
        blocking--;
        trace("client %d: revoke the holders of %s: %s", k->ix, dir, zkl_strerror(rc));
    } else if (what == 1) {
        int max = -1;
        rc = zkl_participants_limit(k->c, "/sim/sem", &max);
        blocking--;
        trace("client %d: the semaphore's limit: %s, %d", k->ix, zkl_strerror(rc), max);
        if (rc == 0 && max != 0 && max != SEM_MAX)
            violation("limit", "the semaphore's recorded limit reads %d", max);
    } else {
        zkl_participant *p = NULL;
        size_t n = 0;
        int64_t outsider = zsim_outsider_id(R.w);
        /* The listing, and a read of each node (the nodes made while it
         * is sent a few more). */
        int64_t more = 1 + zsim_truth_children(R.w, dir, NULL, NULL) + 16;
        k->rate_list += more;
        rc = zkl_participants_list(k->c, dir, &p, &n);
        k->rate_list -= more;
        blocking--;
        R.listings++;
        /* The outsider's nodes do not count: a tie it planted (one
         * sequence, two nodes: never so by sequential creates) holds by
         * the same rule as the node it ties with. */
        int holders = 0, leases = 0;
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (p[i].holds && (outsider == 0 || p[i].session != outsider)) {
                holders++;
                leases += p[i].leases;
            }
        trace("client %d: the participants of %s: %s, %zu, %d holding", k->ix, dir,
              zkl_strerror(rc), n, holders);
        bool excl = strcmp(dir, "/sim/mutex") == 0 || strcmp(dir, "/sim/semmutex") == 0 ||
                    strcmp(dir, LATCH_PATH) == 0;
        if (rc == 0 && excl && holders > 1)
            violation("holders", "a listing of %s shows %d holders", dir, holders);
        if (rc == 0 && strcmp(dir, "/sim/sem") == 0 && leases > SEM_MAX)
            violation("holders", "a listing of %s shows %d leases held", dir, leases);
        zkl_participants_free(p, n);
    }
    mix((uint64_t)k->ix << 32 ^ (uint32_t)rc ^ 0xaeae ^ what);
    static const int codes[] = {0, ZKL_ENOTHELD, ZKL_ELOST, ZKL_ECONNLOSS, ZKL_ECLOSED};
    if (!ok_code(rc, codes, sizeof codes / sizeof codes[0]) &&
        !(rc == ZKL_ENOAUTH && lout_refused(start)))
        violation("call", "client %d: a %s of %s returned %s", k->ix,
                  what == 0 ? "revocation" : what == 1 ? "limit read" : "listing", dir,
                  zkl_strerror(rc));
}

/* The multi-lock's undo with a member's release refused: client k's
 * deletes under the multi-lock's first member are refused for a while
 * (as an ACL without DELETE would), and the thread acquires the
 * multi-lock at once. If the second member fails, the first, taken, is
 * released and refused: the call returns that release's code and the
 * thread keeps the member, nothing else of the call; it is released once
 * the deletes are allowed again. */
static void refuse_op(struct cl *k)
{
    if (k->refused != NULL || k->mb_stuck || k->m2_stuck || k->c->zh == NULL)
        return;
    /* Nor while a program thread holds the multi-lock or acquires it: its
     * refused undo or release would keep the member for that thread. */
    for (int t = k->ix * NTH; t < (k->ix + 1) * NTH; t++)
        if (simt_busy(t) && jobs[t].kind == J_ACQUIRE && jobs[t].lock == L_MULTI)
            return;
    for (struct req *q = R.reqs; q; q = q->next)
        if (q->r == NULL && q->k == k && q->th != 0 && q->lock == L_MULTI)
            return;
    int64_t start = zsim_now(R.w);
    k->refused = k->c->zh;
    k->refuse_until = zsim_now(R.w) + (int64_t)zsim_below(R.w, 3000) * MS;
    zapi_sim_refuse_deletes(k->refused, MULTI_OTHER);
    trace("client %d: its deletes under %s are refused until %.3f s", k->ix, MULTI_OTHER,
          (double)k->refuse_until / 1e9);
    bool had = zkl_mutex_is_held(k->m2);
    begin_blocking(k);
    int rc = zkl_multilock_acquire(k->ml, 0);
    blocking--;
    mix((uint64_t)k->ix << 32 ^ (uint32_t)rc ^ 0xbfbf);
    trace("client %d: the multi-lock, tried once: %s", k->ix, zkl_strerror(rc));
    if (rc == 0) {
        /* Held: released at once (its release may be refused too). */
        begin_blocking(k);
        rc = zkl_multilock_release(k->ml);
        blocking--;
        trace("client %d: the multi-lock released: %s", k->ix, zkl_strerror(rc));
        if (rc == ZKL_ENOAUTH && zkl_mutex_is_held(k->mb))
            mb_keep(k);
        if (rc == ZKL_ENOAUTH && lout_refused(start) && zkl_mutex_is_held(k->m2) && !had)
            m2_keep(k);
        return;
    }
    if (rc != ZKL_ENOAUTH)
        return;
    /* An outsider's ACL may have refused a member's create (nothing held)
     * or the second member's delete too (members_kept). */
    if (lout_refused(start) && !had) {
        (void)members_kept(k, rc, start, "a multi-lock tried once");
        return;
    }
    if (!zkl_mutex_is_held(k->mb))
        violation("undo", "client %d: the multi-lock's undo was refused, but the thread does "
                  "not hold the member", k->ix);
    if (zkl_mutex_is_held(k->m2) && !had)
        violation("undo", "client %d: the multi-lock failed, but the thread holds its "
                  "second member", k->ix);
    mb_keep(k);
}

/* Deletes allowed again once the time came; a member kept by a refused
 * undo released then. */
static void tend_refusals(bool all)
{
    int64_t now = zsim_now(R.w);
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        if (k->refused != NULL && (all || now >= k->refuse_until)) {
            zapi_sim_refuse_deletes(k->refused, NULL);
            k->refused = NULL;
            trace("client %d: its deletes are allowed again", k->ix);
        }
        if (k->m2_stuck && (all || (!paused(k) && now >= k->kept_retry))) {
            int64_t start = zsim_now(R.w);
            begin_blocking(k);
            int rc = zkl_mutex_release(k->m2);
            blocking--;
            mix((uint64_t)k->ix << 32 ^ (uint32_t)rc ^ 0xc1c1);
            trace("client %d: the second member kept by a refused release released: %s", k->ix,
                  zkl_strerror(rc));
            if (rc == ZKL_ENOAUTH && lout_refused(start)) {
                k->kept_retry = zsim_now(R.w) + 200 * MS; /* the ACL is still there */
                continue;
            }
            bool gone = zsim_truth_stat(R.w, k->m2_node, NULL) != ZSIM_OK;
            if (rc != 0 && rc != ZKL_ELOST && rc != ZKL_ECLOSED && !(rc == ZKL_ENOTHELD && gone))
                violation("undo", "client %d: the second member kept by a refused release: its "
                          "release returned %s", k->ix, zkl_strerror(rc));
            k->m2_stuck = false;
        }
        if (k->mb_stuck && k->refused == NULL && (all || (!paused(k) && now >= k->kept_retry))) {
            int64_t start = zsim_now(R.w);
            begin_blocking(k);
            int rc = zkl_mutex_release(k->mb);
            blocking--;
            mix((uint64_t)k->ix << 32 ^ (uint32_t)rc ^ 0xc0c0);
            trace("client %d: the member kept by a refused undo released: %s", k->ix,
                  zkl_strerror(rc));
            if (rc == ZKL_ENOAUTH && lout_refused(start)) {
                k->kept_retry = zsim_now(R.w) + 200 * MS; /* the ACL is still there */
                continue;
            }
            /* Its node gone (its session ended, or someone deleted it),
             * a release or an undo may have cleared the lost hold. */
            bool gone = zsim_truth_stat(R.w, k->mb_node, NULL) != ZSIM_OK;
            if (rc != 0 && rc != ZKL_ELOST && rc != ZKL_ECLOSED &&
                !(rc == ZKL_ENOTHELD && (k->mb_cleared || gone)))
                violation("undo", "client %d: the member kept by a refused undo: its release "
                          "returned %s", k->ix, zkl_strerror(rc));
            k->mb_stuck = false;
            k->mb_cleared = false;
            k->mb_lost = rc == ZKL_ELOST;
        }
    }
}

/* The clients' counters never go back; their metrics can be read. */
static void check_stats(void)
{
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        zkl_client_stats st;
        if (zkl_client_get_stats(k->c, &st) != 0)
            violation("stats", "client %d: no counters", i);
        const zkl_client_stats *o = &k->stats;
        if (st.requests < o->requests || st.creates < o->creates || st.deletes < o->deletes ||
            st.listings < o->listings || st.watch_events < o->watch_events ||
            st.sessions < o->sessions || st.recovered < o->recovered || st.sessions < 1)
            violation("stats", "client %d: a counter went back", i);
        k->stats = st;
    }
    if (R.step % 512 != 0)
        return;
    /* Now and then the metrics, whole and per path, and their text. */
    for (int i = 0; i < NCL; i++) {
        zkl_client *c = R.cl[i].c;
        zkl_metrics m = {.version = ZKL_METRICS_VERSION};
        char **paths = NULL;
        size_t n = 0, needed = 0;
        if (zkl_client_metrics(c, &m) != 0 || zkl_client_metrics_paths(c, &paths, &n) != 0)
            violation("stats", "client %d: no metrics", i);
        else if (m.faults != 0) /* a state change the engine's tables forbid */
            violation("faults", "client %d: %" PRIu64 " internal faults", i, m.faults);
        for (size_t j = 0; j < n; j++)
            if (zkl_client_path_metrics(c, paths[j], &m) != 0)
                violation("stats", "client %d: no metrics of %s, a path it lists", i, paths[j]);
        zkl_client_metrics_paths_free(paths, n);
        if (zkl_client_metrics_write(c, NULL, 0, &needed) != ZKL_ERANGE)
            violation("stats", "client %d: the metrics' text fits in nothing", i);
        char *text = malloc(needed + 1);
        if (text == NULL)
            abort();
        if (zkl_client_metrics_write(c, text, needed + 1, NULL) != 0)
            violation("stats", "client %d: the metrics' text does not fit in what it asked",
                      i);
        free(text);
    }
}

/* ---- a client closed mid-run ------------------------------------------------------ */

static int open_client(struct cl *k, int ix);

/* The close's wait for the program threads inside its client's calls:
 * they, and the rest of the program, run (simt_stall). */
static void close_wait(void)
{
    wait_step(NULL);
}

/* The program closes client k (zkl_client_close, as the drivers' retired
 * client does) while it has requests waiting and held, holds of its
 * threads, blocking calls of its program threads under way and a latch
 * taking part, then frees what it had and opens a new client in its
 * place. zkl.h: a close is no loss (no hold is believed past it, no lost
 * callback is owed); every request whose callback had not run gets
 * ZKL_ECLOSED before the close returns; the threads' calls return
 * (ZKL_ECLOSED); a held request's release, a lease's, then say
 * ZKL_ECLOSED; the latch leads no more. Its session's nodes go with it
 * (orphan, once the faults end: only live sessions count), and every
 * object and request freed leaves none registered (leak, at the end). Not
 * while the driver's thread is inside a call, nor while a program thread
 * of k's is in a synchronous call (it holds the handle's lock, which the
 * close takes: one thread runs at a time here), nor while its process
 * stands still (the program does nothing then). */
static bool close_client(struct cl *k)
{
    if (R.settling || blocking > 0 || stands(k) || k->sync_busy > 0 || k->in_keeper ||
        R.cancel != NULL)
        return false;
    int ix = k->ix;
    int waiting = 0, held = 0, holds = 0, inside = 0;
    for (struct req *q = R.reqs; q; q = q->next)
        if (q->k == k) {
            waiting += q->r != NULL && !q->done;
            held += q->r != NULL && q->done && q->result == 0;
            holds += q->r == NULL;
        }
    for (int t = ix * NTH; t < (ix + 1) * NTH; t++)
        inside += simt_busy(t);
    trace("fault: client %d closes (%d requests waiting, %d held, %d holds of its threads, %d "
          "threads in calls, %s), and opens again", ix, waiting, held, holds, inside,
          k->latch != NULL ? "a latch" : "no latch");
    R.closes++;
    if (k->refused != NULL)
        zapi_sim_refuse_deletes(k->refused, NULL);
    k->refused = NULL;
    for (struct req *q = R.reqs; q; q = q->next)
        if (q->k == k)
            q->held = false; /* a close is no loss: the belief ends here */
    /* Callbacks of the objects go before their client closes (zkl.h). */
    (void)zkl_mutex_set_lost_fn(k->m, NULL, NULL);
    (void)zkl_mutex_set_revoke_fn(k->m, NULL, NULL);
    (void)zkl_rwlock_set_lost_fn(k->rw, NULL, NULL);
    (void)zkl_rwlock_set_revoke_fn(k->rw, NULL, NULL);
    (void)zkl_semmutex_set_revoke_fn(k->sm, NULL, NULL);
    /* A long spell of its event loop's under way ends with the close,
     * which runs the callbacks still pending: the results it held back
     * come that much late (as at its dispatch). */
    if (k->busy_ns != 0 && k->dispatch_at - k->busy_ns < zsim_now(R.w))
        k->held_back += zsim_now(R.w) - (k->dispatch_at - k->busy_ns);
    k->busy_ns = 0;
    k->closing = true;
    /* The close's waits, and the new client's wait for its session, run
     * the other clients (their keepers, requests, threads) as a blocking
     * call's do: a program's other clients go on meanwhile. */
    begin_blocking(k);
    simt_stall(&k->c->mu, close_wait);
    zkl_client_close(k->c);
    simt_stall(NULL, NULL);
    blocking--;
    for (struct req *q = R.reqs; q; q = q->next)
        if (q->k == k && q->r != NULL && !q->done)
            violation("closed", "request %d (%s) has no result once its client %d closed", q->id,
                      lock_names[q->lock], ix);
    if (k->latch != NULL && zkl_latch_is_leader(k->latch))
        violation("closed", "client %d's latch leads once its client closed", ix);
    /* Its program threads' calls return. */
    int64_t until = zsim_now(R.w) + 600 * 1000 * MS;
    for (long n = 0;; n++) {
        int busy = -1;
        for (int t = ix * NTH; t < (ix + 1) * NTH; t++)
            if (simt_busy(t))
                busy = t;
        if (busy < 0)
            break;
        if (zsim_now(R.w) > until || n > 10000000)
            threads_stuck("has not returned once its client closed, ten minutes later", busy,
                          jobs[busy].started);
        world_step();
        stand_tend(false);
        for (int i = 0; i < NCL; i++)
            keeper(&R.cl[i]);
        threads_run();
    }
    /* What it had: released and freed. */
    for (struct req *q = R.reqs, *next; q; q = next) {
        next = q->next;
        if (q->k != k)
            continue;
        int rc = ZKL_ECLOSED;
        if (q->r != NULL && q->done && q->result == 0 && !q->let_go)
            rc = zkl_request_release(q->r);
        else if (q->lease != NULL)
            rc = zkl_lease_release(q->lease);
        q->lease = NULL;
        trace("client %d: %d (%s) let go after the close: %s", ix, q->id, lock_names[q->lock],
              zkl_strerror(rc));
        if (rc != ZKL_ECLOSED)
            violation("closed", "the release of %d (%s) once its client %d closed returned %s",
                      q->id, lock_names[q->lock], ix, zkl_strerror(rc));
        free_request(q);
        next = R.reqs; /* the list may have changed */
    }
    if (k->cb_lease != NULL) {
        int rc = zkl_lease_release(k->cb_lease);
        k->cb_lease = NULL;
        trace("client %d: the lost callback's lease let go after the close: %s", ix,
              zkl_strerror(rc));
        if (rc != ZKL_ECLOSED)
            violation("closed", "the release of a lost callback's lease once its client %d "
                      "closed returned %s", ix, zkl_strerror(rc));
    }
    if (k->latch != NULL) {
        int rc = zkl_latch_close(k->latch);
        trace("client %d: the latch closes after its client: %s", ix, zkl_strerror(rc));
        if (rc != 0 && rc != ZKL_ECLOSED)
            violation("closed", "client %d's latch close after its client's returned %s", ix,
                      zkl_strerror(rc));
        if (k->leading != 0)
            violation("closed", "client %d's latch listener was not told 0 by the close", ix);
        zkl_latch_free(k->latch);
    }
    zkl_multilock_free(k->ml);
    zkl_lock_free(k->lb);
    zkl_lock_free(k->l2);
    zkl_mutex_free(k->mb);
    zkl_mutex_free(k->m2);
    zkl_mutex_free(k->m);
    zkl_lock_opts_free(k->opts);
    zkl_semaphore_free(k->s);
    zkl_rwlock_free(k->rw);
    zkl_semmutex_free(k->sm);
    /* A new client in its place; the time it was held back so far and the
     * lateness its keeper was allowed stay (the checks' bounds of other
     * spans count from them). */
    int64_t held_back = k->held_back, stood = k->stood_ns, late = k->late_allow;
    memset(k, 0, sizeof *k);
    k->held_back = held_back;
    k->stood_ns = stood;
    k->late_allow = late;
    k->closing = true; /* until it is open: nothing runs on it */
    begin_blocking(k);
    if (open_client(k, ix) != 0)
        violation("open", "client %d could not open again", ix);
    blocking--;
    k->closing = false;
    return true;
}

/* A close is drawn (one step in 2,000): of the client its count names. */
static void close_arm(void)
{
    R.close_at = 1 + (int)((R.close_draws / 2 + R.seed) % NCL);
    R.close_left = 300;
}

/* A client is to close (close_client): with the program threads, once one
 * of its threads is inside a call (within 300 steps), so that the close
 * finds it there. */
static void close_tend(void)
{
    if (R.close_at == 0)
        return;
    struct cl *k = &R.cl[R.close_at - 1];
    bool inside = false;
    for (int t = k->ix * NTH; t < (k->ix + 1) * NTH; t++)
        inside |= simt_busy(t);
    if ((inside || !threads_on || --R.close_left <= 0) && close_client(k))
        R.close_at = 0;
    else if (R.close_left < -300)
        R.close_at = 0; /* never free to close: let it be */
}

/* ---- one schedule ----------------------------------------------------------------- */

/* A round's generator: noted as it runs from its seed (the rounds before
 * it are noted: tail says which half), put back as its tape's base had it
 * (past the base: from the seed and the round). */
static void round_state(bool tail)
{
    int64_t i = R.round;
    if (T == NULL) {
        if (!tail && (size_t)i == Rec.n) {
            if (Rec.n == Rec.cap) {
                Rec.cap = Rec.cap ? 2 * Rec.cap : 8192;
                Rec.v = realloc(Rec.v, Rec.cap * sizeof *Rec.v);
                if (Rec.v == NULL)
                    abort();
            }
            memset(&Rec.v[Rec.n++], 0, sizeof *Rec.v);
        }
        if ((size_t)i < Rec.n)
            zsim_rand_state(R.w, tail ? Rec.v[i].tail : Rec.v[i].st, false);
    } else if ((size_t)i < T->nbase) {
        uint64_t st[4];
        memcpy(st, tail ? T->base[i].tail : T->base[i].st, sizeof st);
        zsim_rand_state(R.w, st, true);
    } else {
        zsim_reseed(R.w, key64(R.seed ^ key64((uint64_t)i ^ (tail ? 0x7a11 : 0x7a10))));
    }
}

/* The fault of kind (a mix's): its kind, or F_NOTHING. */
static int fault_of(int kind)
{
    switch (kind) {
    case F_DROP:
    case F_EXPIRE:
    case F_LINK: {
        struct cl *k = &R.cl[zsim_below(R.w, NCL)];
        zsim_session *s = session_of(k);
        return s == NULL ? F_NOTHING : client_fault(k, s, kind);
    }
    case F_PARTITION:
        return client_fault(NULL, NULL, kind);
    case F_UNHEARD:
        return unheard_arm() ? kind : F_NOTHING;
    case F_FAILOVER:
    case F_LEADER_PAUSE:
    case F_LEADER_SLOW:
        return leader_fault(kind - F_FAILOVER);
    case F_OUTSIDER:
        return outsider_aim() ? kind : F_NOTHING;
    case F_STAND:
        return stand_draw() ? kind : F_NOTHING;
    case F_ACL:
        lout_fault();
        return kind;
    case F_QUIET:
        return quiet_fault() ? kind : F_NOTHING;
    case F_LATE:
        R.late_draws++;
        return late_fault() ? kind : F_NOTHING;
    case F_CLOSE:
        if (R.close_at != 0)
            return F_NOTHING;
        R.close_draws += 2;
        close_arm();
        return kind;
    default:
        return crowd_join_now(queues, sizeof queues / sizeof queues[0]) ? kind : F_NOTHING;
    }
}

/* The default flow's fault of r's slot (want: as fault's). */
static int slot_fault(uint64_t r, int want)
{
    if (r < 46)
        return fault(want);
    if (r < 56)
        return outsider_aim() ? F_OUTSIDER : F_NOTHING;
    if (r == 64)
        return stand_draw() ? F_STAND : F_NOTHING;
    if (r == 65) {
        lout_fault();
        return F_ACL;
    }
    if (r == 66)
        return quiet_fault() ? F_QUIET : F_NOTHING;
    /* The late keepers' and the closes' own counts choose what they do: a
     * tape puts back the count its base had there. */
    uint64_t *count = r == 68 ? &R.close_draws : &R.late_draws;
    if (T != NULL)
        *count = T->base[R.round].count;
    else if ((size_t)R.round < Rec.n)
        Rec.v[R.round].count = *count;
    if (r == 68) {
        close_arm();
        return F_CLOSE;
    }
    return late_fault() ? F_LATE : F_NOTHING;
}

static void one_step(void)
{
    if (R.settling)
        R.round = R.next_round++;
    round_state(false);
    uint64_t r = zsim_below(R.w, 1000);
    stand_tend(false);
    if (!R.settling)
        close_tend();
    swarm_step();
    /* What the program does with a client: nothing while its process
     * stands still (the world steps instead). */
    struct cl *k = NULL;
    if (!R.settling && (r < 40 || (r >= 46 && r < 54) || (threads_on && r >= 56 && r < 64))) {
        k = &R.cl[zsim_below(R.w, NCL)];
        if (paused(k))
            r = 1000;
    }
    /* The faults: the default flow's in their slots of r (the outsider's
     * and quiet.c's every fourth time: one round in 4,000, so that most
     * schedules keep their rounds for long, mutant 20), or a mix's by
     * rate in place of the round's step. A tape takes those its base
     * took, where it keeps them, and nothing in place of the others. */
    bool slot = !R.settling && ((r >= 40 && r < 46) || r == 54 || r == 55 || r == 64 ||
                                (r == 65 && (T != NULL || R.lout_draws++ % 4 == 3)) ||
                                (r == 66 && (T != NULL || R.quiet_draws++ % 4 == 3)) ||
                                (r == (threads_on ? 69 : 67) &&
                                 (T != NULL || R.late_draws++ % 4 == 3)) ||
                                (r == 68 && (T != NULL || R.close_draws++ % 2 == 1) &&
                                 R.close_at == 0));
    int mk = R.settling ? F_NONE : mix_kind(R.seed, R.round);
    if (mixed)
        slot = false;
    int base = T == NULL ? F_NONE : (size_t)R.round < T->nbase ? T->base[R.round].kind : F_NONE;
    if (T != NULL && base != F_NONE) {
        if (base != F_NOTHING && (T->keep[R.round] & 1)) {
            trace("round %" PRId64 ": its fault (%s)", R.round, fault_names[base]);
            (void)(mk != F_NONE ? fault_of(mk) : slot_fault(r, base));
        }
    } else if (T == NULL && (mk != F_NONE || slot)) {
        int kind = mk != F_NONE ? fault_of(mk) : slot_fault(r, -1);
        if ((size_t)R.round < Rec.n)
            Rec.v[R.round].kind = (uint8_t)kind;
    } else if (!R.settling && r < 40)
        start_request(k);
    else if (!R.settling && r >= 46 && r < 51)
        blocking_acquire(k);
    else if (!R.settling && r == 51)
        latch_op(k);
    else if (!R.settling && r == 52)
        list_op(k);
    else if (!R.settling && r == 53)
        refuse_op(k);
    else if (!R.settling && threads_on && r >= 56 && r < 64)
        thread_op(k);
    else if (!R.settling && threads_on && r == 67)
        thread_more(&R.cl[zsim_below(R.w, NCL)]); /* one step in 1,000, with the threads
                                                   * only: until it first comes, their
                                                   * schedules take the steps they took */
    else
        world_step();
    cancel_tend(); /* a program thread's cancel handle */
    guarded_fault();
    round_state(true);
    heal(false);
    for (int i = 0; i < NCL; i++)
        keeper(&R.cl[i]);
    tend_requests(false);
    tend_blocking(false);
    tend_threads(R.settling);
    tend_refusals(false);
    check();
    check_stats();
}

static int open_client(struct cl *k, int ix)
{
    k->ix = ix;
    zkl_client_opts *o;
    if (zkl_client_opts_new(&o) != 0)
        return -1;
    zkl__client_opts_set_zapi(o, &zapi_sim);
    zkl__client_opts_set_no_keeper(o, 1);
    int rc = zkl_client_opts_set_lost_requests(o, 1);
    if (rc == 0)
        rc = zkl_client_opts_set_connect_timeout(o, 60000);
    if (rc == 0)
        rc = zkl_client_open_opts("127.0.0.1:2181", R.timeout_ms[ix], o, &k->c);
    zkl_client_opts_free(o);
    if (rc != 0) {
        fprintf(stderr, "sim: client %d: zkl_client_open: %s\n", ix, zkl_strerror(rc));
        return -1;
    }
    k->fd_mode = ix == 0; /* one client delivers by descriptor and dispatch */
    /* The multi-lock's members: an id of their own, one client's without
     * prefetch. */
    char id[32];
    snprintf(id, sizeof id, "sim-multi-%d", ix);
    if (zkl_lock_opts_new(&k->opts) != 0 || zkl_lock_opts_set_id(k->opts, id) != 0 ||
        zkl_lock_opts_set_prefetch(k->opts, ix != 1) != 0)
        return -1;
    if (k->fd_mode && zkl_client_event_fd(k->c, &k->fd) != 0)
        return -1;
    if (zkl_mutex_new(k->c, lock_paths[L_MUTEX], &k->m) != 0 ||
        zkl_semaphore_new(k->c, lock_paths[L_SEM], SEM_MAX, &k->s) != 0 ||
        zkl_rwlock_new(k->c, lock_paths[L_READ], &k->rw) != 0 ||
        zkl_semmutex_new(k->c, lock_paths[L_SEMMUTEX], &k->sm) != 0 ||
        zkl_mutex_new_opts(k->c, MULTI_OTHER, k->opts, &k->mb) != 0 ||
        zkl_mutex_new_opts(k->c, lock_paths[L_MULTI], k->opts, &k->m2) != 0 ||
        zkl_mutex_as_lock(k->mb, &k->lb) != 0 || zkl_mutex_as_lock(k->m2, &k->l2) != 0)
        return -1;
    /* Given in the wrong order: the multi-lock orders them itself. */
    zkl_lock *members[2] = {k->l2, k->lb};
    if (zkl_multilock_new_locks(members, 2, &k->ml) != 0 ||
        zkl_mutex_set_revoke_fn(k->m, on_revoke_mutex, k) != 0 ||
        zkl_mutex_set_lost_fn(k->m, on_lost_mutex, k) != 0 ||
        zkl_mutex_set_lost_fn(k->m2, on_lost_m2, k) != 0 ||
        zkl_mutex_set_lost_fn(k->mb, on_lost_mb, k) != 0 ||
        zkl_rwlock_set_lost_fn(k->rw, on_lost_rw, k) != 0 ||
        zkl_rwlock_set_revoke_fn(k->rw, on_revoke_rw, k) != 0 ||
        zkl_semmutex_set_revoke_fn(k->sm, on_revoke_sm, k) != 0)
        return -1;
    return 0;
}

/* stuck: once the faults end, and the thread lets go of its holds, every
 * request ends (what holds lets go in its time) within two minutes of
 * virtual time: a waiter does not wait for a change that already came. */
static void settle_requests(void)
{
    int64_t start = zsim_now(R.w);
    while (!R.violated) {
        struct req *q = R.reqs;
        while (q != NULL && q->done)
            q = q->next;
        if (q == NULL)
            return;
        if (zsim_now(R.w) - start > 120000 * MS) {
            violation("stuck", "request %d (%s, timeout %ld ms) has no result 120 s after the "
                      "faults' end", q->id, lock_names[q->lock], q->timeout_ms);
            return;
        }
        one_step();
        R.step++;
    }
}

/* A latch stopped for good by a create of its given a name past the wrap:
 * zkl_latch_await says ZKL_EZK (zkl_latch(3)), which taking part again
 * would not cure, and it takes part no more. */
static bool latch_wrapped(struct cl *k)
{
    return wrap_seen(LATCH_PATH) && zkl_latch_await(k->latch, 0) == ZKL_EZK;
}

/* A latch stopped for good by an outsider's ACL that refused its node or
 * the listing: its await says ZKL_ENOAUTH (zkl_latch(3)). */
static bool latch_refused(struct cl *k)
{
    return lout_refused(k->latch_from) && zkl_latch_await(k->latch, 0) == ZKL_ENOAUTH;
}

/* Whether every started latch of a connected client takes part with a node
 * of its current session, and the first node (in Curator's order, a name
 * past the wrap first) leads, told so; but a latch stopped by the wrap. */
static bool latches_settled(char *why, size_t size)
{
    static struct kids kl;
    kids_of(LATCH_PATH, &kl);
    int64_t first = -1, sids[NCL] = {0};
    for (int i = 0; i < kl.n; i++) {
        const char *key = zsim_latch_key(kl.name[i]);
        if (key != NULL && (first < 0 || strcmp(key, zsim_latch_key(kl.name[first])) < 0))
            first = i;
    }
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        int st = zkl_client_state(k->c);
        if (k->latch == NULL || latch_wrapped(k) || latch_refused(k))
            continue;
        if ((st != ZKL_STATE_CONNECTED && st != ZKL_STATE_RECONNECTED) ||
            zkl_client_session_id(k->c, &sids[i]) != 0) {
            snprintf(why, size, "client %d is not connected", i);
            return false;
        }
        bool in = false;
        for (int j = 0; j < kl.n; j++)
            in |= kl.owner[j] == sids[i] && zsim_latch_seq(kl.name[j]) >= 0;
        if (!in) {
            snprintf(why, size, "client %d's latch has no node of its session 0x%" PRIx64, i,
                     (uint64_t)sids[i]);
            return false;
        }
    }
    if (first < 0)
        return true;
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        if (k->latch != NULL && kl.owner[first] == sids[i] &&
            (!zkl_latch_is_leader(k->latch) || k->leading != 1)) {
            snprintf(why, size, "client %d's latch has the first node, %s, and does not lead",
                     i, kl.name[first]);
            return false;
        }
    }
    return true;
}

/* absent: the latches settle within a minute of the requests' end (a
 * session given up lives on the leader until it expires: a timeout and a
 * tick). */
static void settle_latches(void)
{
    int64_t start = zsim_now(R.w);
    char why[300] = "";
    while (!R.violated && !latches_settled(why, sizeof why)) {
        if (zsim_now(R.w) - start > 60000 * MS) {
            violation("absent", "the latches do not settle within 60 s: %s", why);
            return;
        }
        one_step();
        R.step++;
    }
}

/* Runs the schedule of `seed`: 1 on a violation (R.vtext), 0 if none; the
 * hash of its steps in *hash. */
static int run(uint64_t seed, int64_t steps, bool tr, uint64_t *hash)
{
    memset(&R, 0, sizeof R);
    Rec.n = 0;
    Rec.main = 0;
    R.seed = seed;
    R.guarded_rng = seed ^ 0x6a4d5e11u;
    R.steps = steps;
    R.trace = tr;
    R.hash = 0xcbf29ce484222325u;
    struct zsim_config cfg;
    zsim_config_default(&cfg);
    cfg.seed = seed;
    /* Half the schedules ping the followers at a phase of their own, so
     * that a touch passed on may be counted from just before a tick
     * boundary as well as on it (docs/simulation.md). */
    uint64_t x = (seed + 0x9e3779b97f4a7c15u) * 0xbf58476d1ce4e5b9u;
    x ^= x >> 31;
    if (x & 1)
        cfg.ping_phase_ns = (int64_t)((x >> 1) % (uint64_t)(cfg.tick_ns / 2));
    R.tick_ns = cfg.tick_ns;
    R.ping_phase_ns = cfg.ping_phase_ns;
    cfg.cversion_start = crowd_wrap_start(seed);
    if (swarm_max_buffer(seed) != 0)
        cfg.max_buffer = swarm_max_buffer(seed);
    /* The session timeouts: 6, 8 and 10 s (3 to 5 ticks) in half the
     * schedules, else drawn from 4 to 10 s, whole ticks or not, so that the
     * expiry's rounding up to a tick takes any size. */
    for (int i = 0; i < NCL; i++) {
        x = (x ^ x >> 29) * 0x94d049bb133111ebu;
        R.timeout_ms[i] = (x >> 60) & 1 ? (int)(4000 + (x >> 8) % 6001) : 6000 + 2000 * i;
    }
    if (zsim_world_new(&cfg, &R.w) != 0)
        abort();
    zapi_sim_begin(R.w);
    zapi_sim_set_stepper(sync_step);
    zapi_sim_set_observer(on_request);
    zsim_on_change(R.w, on_change, NULL);
    crowd_begin(R.w, seed, trace);
    quiet_begin(R.w, trace);
    swarm_begin(R.w, seed, NCL, trace);
    if (cfg.cversion_start != 0)
        trace("world: every new node's sequence starts at %d", (int)cfg.cversion_start);
    zkl__set_virtual(&virt);
    lout_begin(R.w, spoiled, sizeof spoiled / sizeof spoiled[0], parents,
               sizeof parents / sizeof parents[0], trace);
    /* The fence nodes the guarded writes write. */
    static const char *const made[] = {"/sim", "/sim/fence-mutex", "/sim/fence-semmutex",
                                       "/sim/fence-rw", "/sim/fence-sem"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++)
        if (zsim_outsider_create(R.w, made[i], "0", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT,
                                 NULL, 0) != ZSIM_OK)
            abort();
    for (int i = 0; i < NCL; i++)
        if (open_client(&R.cl[i], i) != 0) {
            violation("open", "client %d could not open", i);
            goto end;
        }
    R.in_main = true;
    if (T == NULL) {
        for (R.step = 0; R.step < steps && !R.violated; R.step++) {
            R.round = R.pos = R.next_round++;
            one_step();
        }
        Rec.main = R.next_round;
    } else {
        R.step = 0;
        for (size_t i = 0; i < T->n && !R.violated; i++, R.step++) {
            R.pos = (int64_t)i;
            R.round = T->v[i];
            one_step();
        }
        R.next_round = T->main;
    }
    R.in_main = false;
    /* Settle: the faults end, the thread lets go of its holds, the
     * requests' holds go in their time; every request ends (stuck), every
     * latch takes part (absent); then every request is freed, and time goes
     * on. */
    R.settling = true;
    heal(true);
    tend_blocking(true);
    tend_refusals(true);
    settle_requests();
    settle_latches();
    tend_requests(true);
    /* A program thread's call on a latch (its await ends within a second)
     * returns before the latches go. */
    for (int i = 0; i < NCL; i++)
        while (!R.violated && R.cl[i].latch_busy > 0) {
            one_step();
            R.step++;
        }
    for (int i = 0; i < NCL; i++)
        if (R.cl[i].latch != NULL) {
            begin_blocking(&R.cl[i]);
            (void)zkl_latch_close(R.cl[i].latch);
            blocking--;
            zkl_latch_free(R.cl[i].latch);
            R.cl[i].latch = NULL;
        }
    int64_t until = zsim_now(R.w) + 30000 * MS;
    while (!R.violated && zsim_now(R.w) < until) {
        one_step();
        R.step++;
    }
    if (!R.violated)
        check_orphans();
end:
    blocking = 0;
    threads_drain();
    while (R.reqs) {
        if (R.reqs->lease != NULL)
            (void)zkl_lease_release(R.reqs->lease);
        free_request(R.reqs);
    }
    for (int i = 0; i < NCL; i++)
        if (R.cl[i].cb_lease != NULL) {
            (void)zkl_lease_release(R.cl[i].cb_lease);
            R.cl[i].cb_lease = NULL;
        }
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        if (k->c == NULL)
            continue;
        zkl_latch_free(k->latch);
        zkl_multilock_free(k->ml);
        zkl_lock_free(k->lb);
        zkl_lock_free(k->l2);
        zkl_mutex_free(k->mb);
        zkl_mutex_free(k->m2);
        zkl_mutex_free(k->m);
        zkl_lock_opts_free(k->opts);
        zkl_semaphore_free(k->s);
        zkl_rwlock_free(k->rw);
        zkl_semmutex_free(k->sm);
        zkl_client_close(k->c);
    }
    /* Every object and request freed: none is left registered. */
    if (zkl__obj_count() != 0)
        violation("leak", "%zu lock objects or requests still registered once every one was "
                  "freed", zkl__obj_count());
    zkl__set_virtual(NULL);
    zapi_sim_set_stepper(NULL);
    zapi_sim_set_observer(NULL);
    zapi_sim_end();
    R.outsider_acts += lout_acts();
    zsim_world_free(R.w);
    *hash = R.hash;
    return R.violated;
}

static long long env_num(const char *name, long long dflt)
{
    const char *s = getenv(name);
    return s && *s ? strtoll(s, NULL, 0) : dflt;
}

/* ---- tapes: made from a run, printed, read, shrunk -------------------------------- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        abort();
    return p;
}

/* The tape of the run just done from seed (Rec): every main round, every
 * fault; it takes Rec's rounds. */
static void tape_from_run(struct tape *t, uint64_t seed, int threads, int64_t steps)
{
    t->seed = seed;
    t->threads = threads;
    t->steps = steps;
    t->base = Rec.v;
    t->nbase = Rec.n;
    t->main = Rec.main;
    Rec.v = NULL;
    Rec.n = Rec.cap = 0;
    t->n = (size_t)t->main;
    t->v = xmalloc(t->n * sizeof *t->v);
    for (size_t i = 0; i < t->n; i++)
        t->v[i] = (int64_t)i;
    t->keep = xmalloc(t->nbase);
    memset(t->keep, 3, t->nbase);
}

/* A copy of t's choices, sharing its base. */
static void tape_copy(struct tape *to, const struct tape *from)
{
    *to = *from;
    to->v = xmalloc(from->n * sizeof *to->v);
    memcpy(to->v, from->v, from->n * sizeof *to->v);
    to->keep = xmalloc(from->nbase);
    memcpy(to->keep, from->keep, from->nbase);
}

static void tape_drop(struct tape *t)
{
    free(t->v);
    free(t->keep);
    t->v = NULL;
    t->keep = NULL;
}

/* The faults a tape takes: its main rounds' kept ones (a round's and its
 * grants' drops count one each). */
static int tape_faults(const struct tape *t)
{
    int n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct round *b = &t->base[t->v[i]];
        n += b->kind != F_NONE && b->kind != F_NOTHING && (t->keep[t->v[i]] & 1);
        n += b->grant && (t->keep[t->v[i]] & 2);
    }
    return n;
}

/* As text: "seed:threads:steps:rounds:faults", the main rounds kept as
 * ranges of their numbers in the base ("0-811,1020-1188"), the faults
 * taken as "round=kind" ("35=drop,977=grant"). */
static void tape_print(const struct tape *t, FILE *out)
{
    fprintf(out, "%" PRIu64 ":%d:%" PRId64 ":", t->seed, t->threads, t->steps);
    for (size_t i = 0; i < t->n;) {
        size_t j = i;
        while (j + 1 < t->n && t->v[j + 1] == t->v[j] + 1)
            j++;
        fprintf(out, "%s%" PRId64, i ? "," : "", t->v[i]);
        if (j > i)
            fprintf(out, "-%" PRId64, t->v[j]);
        i = j + 1;
    }
    fputc(':', out);
    bool first = true;
    for (size_t i = 0; i < t->n; i++) {
        int64_t o = t->v[i];
        const struct round *b = &t->base[o];
        if (b->kind != F_NONE && b->kind != F_NOTHING && (t->keep[o] & 1)) {
            fprintf(out, "%s%" PRId64 "=%s", first ? "" : ",", o, fault_names[b->kind]);
            first = false;
        }
        if (b->grant && (t->keep[o] & 2)) {
            fprintf(out, "%s%" PRId64 "=grant", first ? "" : ",", o);
            first = false;
        }
    }
}

/* Reads a tape: runs its schedule from the seed for its base (under the
 * mix set), then takes the rounds and faults it names. 0, or -1 with
 * why. */
static int tape_parse(struct tape *t, const char *text, char *why, size_t size)
{
    char *end;
    memset(t, 0, sizeof *t);
    uint64_t seed = strtoull(text, &end, 10);
    if (end == text || *end != ':')
        goto bad;
    long threads = strtol(end + 1, &end, 10);
    if ((threads != 0 && threads != 1) || *end != ':')
        goto bad;
    long long steps = strtoll(end + 1, &end, 10);
    if (steps <= 0 || (*end != ':' && *end != '\0'))
        goto bad;
    threads_on = threads == 1;
    uint64_t hash;
    (void)run(seed, steps, false, &hash);
    tape_from_run(t, seed, (int)threads, steps);
    if (*end == '\0')
        return 0; /* the whole schedule as it runs from its seed */
    if (*end != ':')
        goto bad;
    memset(t->keep, 0, t->nbase);
    t->n = 0;
    const char *p = end + 1;
    while (*p != ':' && *p != '\0') {
        long long a = strtoll(p, &end, 10), b = a;
        if (end == p)
            goto bad;
        if (*end == '-')
            b = strtoll(end + 1, &end, 10);
        if (a < 0 || b < a || b >= t->main || (t->n > 0 && a <= t->v[t->n - 1])) {
            snprintf(why, size, "rounds %lld-%lld: not main rounds of the schedule, in order "
                     "(it has %" PRId64 ")", a, b, t->main);
            return -1;
        }
        for (long long i = a; i <= b; i++)
            t->v[t->n++] = i;
        p = *end == ',' ? end + 1 : end;
    }
    if (*p == ':')
        p++;
    while (*p != '\0') {
        long long o = strtoll(p, &end, 10);
        if (end == p || *end != '=' || o < 0 || o >= t->main)
            goto bad;
        p = end + 1;
        size_t len = strcspn(p, ",");
        int k = 1;
        while (k < F_NKINDS && (strlen(fault_names[k]) != len || strncmp(p, fault_names[k], len)))
            k++;
        const struct round *b = &t->base[o];
        if (k == F_GRANT && b->grant)
            t->keep[o] |= 2;
        else if (k < F_GRANT && b->kind == k)
            t->keep[o] |= 1;
        else {
            snprintf(why, size, "round %lld took no %.*s in the schedule (SIM_MIX?)", o,
                     (int)len, p);
            return -1;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
bad:
    snprintf(why, size, "not a tape (seed:threads:steps[:rounds:faults])");
    return -1;
}

/* Runs tape t (traced or not): 1 on a violation (R.vkind, R.vpos). */
static int tape_run(const struct tape *t, bool tr)
{
    uint64_t hash;
    threads_on = t->threads == 1;
    T = t;
    int bad = run(t->seed, t->steps, tr, &hash);
    T = NULL;
    return bad;
}

struct shrink {
    struct tape *best;
    const char *kind;
    int budget, tries;
    unsigned timeout;
};

/* Does t (a copy) still fail with the same kind of violation? If so it
 * becomes the best, cut after its violation's round; else it goes. */
static bool still(struct shrink *sh, struct tape *t)
{
    bool ok = false;
    if (sh->tries < sh->budget) {
        sh->tries++;
        alarm(sh->timeout);
        ok = tape_run(t, false) && strcmp(R.vkind, sh->kind) == 0;
        alarm(0);
    }
    if (!ok) {
        tape_drop(t);
        return false;
    }
    if (R.vpos >= 0 && (size_t)R.vpos + 1 < t->n)
        t->n = (size_t)R.vpos + 1;
    tape_drop(sh->best);
    *sh->best = *t;
    return true;
}

/* The faults, halving the groups left out at once (delta debugging):
 * each a round's (bit 1) or its grants' drops (bit 2). */
static bool shrink_faults(struct shrink *sh)
{
    bool progress = false;
    const struct tape *b = sh->best;
    size_t n = 0;
    int64_t *at = xmalloc(2 * b->n * sizeof *at);
    for (size_t i = 0; i < b->n; i++) {
        int64_t o = b->v[i];
        if (b->base[o].kind != F_NONE && b->base[o].kind != F_NOTHING && (b->keep[o] & 1))
            at[n++] = o * 4 + 1;
        if (b->base[o].grant && (b->keep[o] & 2))
            at[n++] = o * 4 + 2;
    }
    for (size_t len = n; len >= 1 && sh->tries < sh->budget; len /= 2)
        for (size_t from = 0; from < n && sh->tries < sh->budget; from += len) {
            struct tape t;
            tape_copy(&t, sh->best);
            bool any = false;
            for (size_t k = from; k < from + len && k < n; k++) {
                any |= (t.keep[at[k] / 4] & at[k] % 4) != 0;
                t.keep[at[k] / 4] &= (uint8_t)~(at[k] % 4);
            }
            if (!any)
                tape_drop(&t);
            else if (still(sh, &t))
                progress = true;
        }
    free(at);
    return progress;
}

/* Shrinks *t (failing with a violation of kind): leaves faults out, cuts
 * spans of rounds (halving their length), while the kind remains. The
 * runs tried. */
static int tape_shrink(struct tape *t, const char *kind, int budget, unsigned timeout)
{
    struct shrink sh = {t, kind, budget, 0, timeout};
    bool progress = true;
    while (progress && sh.tries < sh.budget) {
        progress = shrink_faults(&sh);
        for (size_t len = t->n / 2; len >= 1 && sh.tries < sh.budget; len /= 2) {
            bool cut = false;
            for (size_t from = 0; from + len <= t->n && sh.tries < sh.budget;) {
                struct tape c;
                tape_copy(&c, t);
                memmove(c.v + from, c.v + from + len, (c.n - from - len) * sizeof *c.v);
                c.n -= len;
                if (still(&sh, &c))
                    cut = progress = true;
                else
                    from += len;
            }
            /* with fewer rounds, faults that mattered may no longer */
            if (cut)
                (void)shrink_faults(&sh);
        }
    }
    return sh.tries;
}

/* After a violation of the run just done (Rec): its tape, shrunk
 * (SIM_SHRINK attempts), traced, and the line that replays it. */
static void report_tape(uint64_t seed, int threads, int64_t steps, unsigned timeout)
{
    struct tape t;
    int64_t vpos = R.vpos;
    char kind[32];
    snprintf(kind, sizeof kind, "%s", R.vkind);
    tape_from_run(&t, seed, threads, steps);
    if (vpos >= 0 && (size_t)vpos + 1 < t.n)
        t.n = (size_t)vpos + 1;
    const char *mix = getenv("SIM_MIX");
    char env[256] = "";
    if (mix && *mix)
        snprintf(env, sizeof env, "SIM_MIX='%s' ", mix);
    long long budget = env_num("SIM_SHRINK", 400);
    if (budget > 0) {
        printf("sim: shrinking its tape (%zu rounds, %d faults) ...\n", t.n, tape_faults(&t));
        fflush(stdout);
        int tries = tape_shrink(&t, kind, (int)budget, timeout);
        printf("sim: %d runs tried; the shortest failing tape has %zu rounds, %d faults\n",
               tries, t.n, tape_faults(&t));
    }
    printf("sim: its trace, event by event:\n");
    fflush(stdout);
    alarm(timeout);
    if (!tape_run(&t, true))
        printf("sim: (the tape no longer fails: a tape replays exactly, this is a bug of the "
               "simulation)\n");
    else
        printf("sim: its violation: %s\n", R.vtext);
    alarm(0);
    printf("sim: tape: %sSIM_TAPE='", env);
    tape_print(&t, stdout);
    printf("' tests/sim/sim-lib\n");
    fflush(stdout);
    tape_drop(&t);
    free(t.base);
}

/* SIM_TAPE: the tape given, traced. */
static int replay_tape(const char *text)
{
    struct tape t;
    char why[200];
    if (tape_parse(&t, text, why, sizeof why) != 0) {
        fprintf(stderr, "sim: SIM_TAPE: %s\n", why);
        free(t.base);
        tape_drop(&t);
        return 2;
    }
    printf("sim: tape of %zu rounds, %d faults: ", t.n, tape_faults(&t));
    tape_print(&t, stdout);
    printf("\n");
    int bad = tape_run(&t, env_num("SIM_TRACE", 1) != 0);
    if (bad)
        printf("sim: VIOLATION %s\n", R.vtext);
    printf("sim: seed %" PRIu64 ", %" PRId64 " events, 1 schedules, %d violations\n", t.seed,
           R.events, bad);
    tape_drop(&t);
    free(t.base);
    return bad;
}

int main(void)
{
    const char *mix = getenv("SIM_MIX");
    if (set_mix(mix) != 0) {
        fprintf(stderr, "sim: SIM_MIX: not a mix of faults: %s (kinds:", mix);
        for (int k = 1; k < F_NKINDS; k++)
            fprintf(stderr, " %s", fault_names[k]);
        fprintf(stderr, "; or fixed, drawn)\n");
        return 2;
    }
    uint64_t seed = (uint64_t)env_num("SIM_SEED", 1);
    /* Neither bound given (make check): a million events. */
    const char *given = getenv("SIM_SCHEDULES");
    long long budget = env_num("SIM_EVENTS", given != NULL && *given ? -1 : 1000000);
    long long schedules = env_num("SIM_SCHEDULES", budget > 0 ? LLONG_MAX / 2 : 30);
    int64_t steps = env_num("SIM_STEPS", 4000);
    bool tr = env_num("SIM_TRACE", 0) != 0;
    if (tr) /* a crash's lines come after the trace's last ones, none lost */
        setvbuf(stdout, NULL, _IOLBF, 0);
    /* 0: without the program threads, 1: with them, else each schedule
     * both ways (first without). */
    long long with = env_num("SIM_THREADS", 2);
    int violations = 0;
    long long done = 0;
    unsigned timeout = (unsigned)env_num("SIM_TIMEOUT", 120);
    zsim_crash_arm();
    simt_init(NCL * NTH);
    const char *tape = getenv("SIM_TAPE");
    if (tape != NULL && *tape != '\0') {
        setvbuf(stdout, NULL, _IOLBF, 0);
        return replay_tape(tape);
    }
    int64_t events = 0;
    uint64_t acq = 0, calls = 0, leads = 0, revokes = 0, listings = 0, outsiders = 0,
             leaders = 0, lates = 0, closes = 0, cb_acts = 0, cb_blocks = 0;
    for (long long n = 0; n < schedules * 2 && violations == 0; n++) {
        long long k = n / 2;
        if ((with == 0 || with == 1) && n % 2 != with)
            continue;
        if (budget > 0 && events >= budget && (n % 2 == 0 || with == 1))
            break; /* a schedule's two ways are both run, or neither */
        threads_on = n % 2 == 1;
        uint64_t h1, h2;
        events_before = events;
        char replay[160];
        snprintf(replay, sizeof replay, "SIM_SEED=%" PRIu64 " SIM_SCHEDULES=1 SIM_THREADS=%d "
                 "SIM_TRACE=1 tests/sim/sim-lib", seed + (uint64_t)k, threads_on);
        zsim_crash_lines(seed + (uint64_t)k, replay);
        alarm(timeout); /* the replay below too */
        int bad = run(seed + (uint64_t)k, steps, tr, &h1);
        bool taped = bad != 0; /* its tape is Rec's */
        events += R.events;
        acq += R.acquisitions;
        calls += R.blocking_calls;
        leads += R.latch_leads;
        revokes += R.revokes_told;
        listings += R.listings;
        outsiders += R.outsider_acts;
        leaders += R.failovers;
        lates += R.lates;
        closes += R.closes;
        cb_acts += R.cb_acts;
        cb_blocks += R.cb_blocks;
        done += n % 2 == 1 || with == 0;
        if (!bad && k == 0) {
            /* The same seed again, in the same process (other addresses,
             * other client ids): the same steps. */
            bad = run(seed, steps, false, &h2);
            if (!bad && h1 != h2) {
                bad = 1;
                snprintf(R.vtext, sizeof R.vtext, "(replay) the schedule of seed %" PRIu64
                         " took other steps when run again", seed);
            }
        }
        alarm(0);
        if (bad) {
            violations++;
            printf("sim: VIOLATION %s\n", R.vtext);
            const char *m = getenv("SIM_MIX");
            printf("sim: replay: %s%s%s%s\n", m && *m ? "SIM_MIX='" : "", m && *m ? m : "",
                   m && *m ? "' " : "", replay);
            fflush(stdout);
            if (taped)
                report_tape(seed + (uint64_t)k, threads_on, steps, timeout);
        }
    }
    fprintf(stderr, "sim-lib: %" PRIu64 " acquisitions, %" PRIu64 " blocking calls, %" PRIu64
            " leaderships, %" PRIu64 " revocations told, %" PRIu64 " listings, %" PRIu64
            " outsiders' acts, %" PRIu64 " leader faults, %" PRIu64 " keepers late, %" PRIu64
            " clients closed mid-run\n", acq, calls, leads, revokes, listings, outsiders, leaders,
            lates, closes);
    fprintf(stderr, "sim-lib: %" PRIu64 " calls of the program threads, %" PRIu64 " steps with "
            "two of a client's in calls, %" PRIu64 " releases of another thread's lock "
            "refused\n", thread_calls, overlapped, foreign_refused);
    fprintf(stderr, "sim-lib: %" PRIu64 " of their calls of the multi-lock, the "
            "semaphore-mutex, a cancel handle, the latch, a listing or an upgrade, %" PRIu64
            " upgrades refused\n", more_calls, upgrades_refused);
    fprintf(stderr, "sim-lib: %" PRIu64 " calls from inside callbacks, %" PRIu64
            " of them blocking (a lost callback's lease)\n", cb_acts, cb_blocks);
    crowd_report(stderr);
    quiet_report(stderr);
    swarm_report(stderr);
    printf("sim: seed %" PRIu64 ", %" PRId64 " events, %lld schedules, %d violations\n", seed,
           events, done, violations);
    return violations > 0;
}
