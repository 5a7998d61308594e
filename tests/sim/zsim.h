/* zsim: a deterministic model of a ZooKeeper 3.8 ensemble, as the C client
 * (libzookeeper_mt) shows it to a program.
 *
 * No thread, socket or clock: time is virtual (nanoseconds), and every
 * choice the world makes (which request a server takes next, how far a
 * follower lags, which requests a lost connection took with it, when a
 * fault strikes) comes from one seeded generator, so a seed and the same
 * sequence of calls replay exactly. docs/simulation.md says what the model
 * covers and what it leaves out.
 *
 * The calls have the shape of the C client's asynchronous ones. A request
 * returns ZSIM_OK (its answer comes later, as an item carrying the caller's
 * tag) or an error at once, as zoo_a* does. Everything the C client would
 * call back — answers, watch events, session events — becomes an item queued
 * on its session, in the order the client would run the callbacks; the
 * driver takes items one at a time and hands each to the code under test.
 * Watchers are named by non-zero 64-bit tags, the way a (watcher function,
 * context) pair names one in the C client: registering the same tag twice
 * on one path is one registration.
 *
 * Codes, event types, session states and create modes have the C client's
 * numeric values (zookeeper.h), so a driver can pass them on unchanged.
 *
 * Pointers in an item are borrowed: they stay valid until the next call
 * that takes or steps anything in the same world (zsim_step,
 * zsim_deliver, zsim_advance, a fault). One world is used from one thread.
 * The model aborts the process when it runs out of memory (it is a test
 * tool): no call fails for want of it. */
#ifndef ZSIM_H
#define ZSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the C client's values -------------------------------------------- */

enum {
    ZSIM_OK = 0,
    ZSIM_RUNTIMEINCONSISTENCY = -2,
    ZSIM_MARSHALLINGERROR = -5,
    ZSIM_OPERATIONTIMEOUT = -7,
    ZSIM_BADARGUMENTS = -8,
    ZSIM_INVALIDSTATE = -9,
    ZSIM_CONNECTIONLOSS = -4,
    ZSIM_NONODE = -101,
    ZSIM_NOAUTH = -102,
    ZSIM_BADVERSION = -103,
    ZSIM_NOCHILDRENFOREPHEMERALS = -108,
    ZSIM_NODEEXISTS = -110,
    ZSIM_NOTEMPTY = -111,
    ZSIM_SESSIONEXPIRED = -112,
    ZSIM_INVALIDACL = -114,
    ZSIM_AUTHFAILED = -115,
    ZSIM_CLOSING = -116
};

enum { /* watch event types */
    ZSIM_CREATED_EVENT = 1,
    ZSIM_DELETED_EVENT = 2,
    ZSIM_CHANGED_EVENT = 3,
    ZSIM_CHILD_EVENT = 4,
    ZSIM_SESSION_EVENT = -1
};

enum { /* session states, as events and as zsim_state() */
    ZSIM_EXPIRED_SESSION_STATE = -112,
    ZSIM_AUTH_FAILED_STATE = -113,
    ZSIM_CONNECTING_STATE = 1,
    ZSIM_CONNECTED_STATE = 3,
    ZSIM_CLOSED_STATE = 0 /* zsim only: the handle was closed */
};

enum { /* create modes */
    ZSIM_PERSISTENT = 0,
    ZSIM_EPHEMERAL = 1,
    ZSIM_PERSISTENT_SEQUENTIAL = 2,
    ZSIM_EPHEMERAL_SEQUENTIAL = 3,
    ZSIM_CONTAINER = 4
};

enum { /* ACL permissions */
    ZSIM_PERM_READ = 1,
    ZSIM_PERM_WRITE = 2,
    ZSIM_PERM_CREATE = 4,
    ZSIM_PERM_DELETE = 8,
    ZSIM_PERM_ADMIN = 16,
    ZSIM_PERM_ALL = 31
};

/* The fields of the C client's struct Stat, as a client is shown them: the
 * cversion counts creations and deletions of children, a container's
 * ephemeralOwner is 0. Times are virtual milliseconds. */
struct zsim_stat {
    int64_t czxid, mzxid, ctime, mtime;
    int32_t version, cversion, aversion;
    int64_t ephemeralOwner;
    int32_t dataLength, numChildren;
    int64_t pzxid;
};

struct zsim_acl {
    int32_t perms;
    const char *scheme; /* "world", "auth", "digest" or "ip" */
    const char *id;     /* "anyone", "" (auth), "user:base64(sha1)", "127.0.0.1" */
};
struct zsim_acl_vector {
    int32_t count;
    const struct zsim_acl *data;
};
extern const struct zsim_acl_vector ZSIM_OPEN_ACL_UNSAFE;  /* world:anyone, all */
extern const struct zsim_acl_vector ZSIM_READ_ACL_UNSAFE;  /* world:anyone, read */
extern const struct zsim_acl_vector ZSIM_CREATOR_ALL_ACL;  /* auth:, all */

/* ---- the world --------------------------------------------------------- */

typedef struct zsim_world zsim_world;
typedef struct zsim_session zsim_session;

/* Rates are chances per step in parts per million (0: never). */
struct zsim_config {
    uint64_t seed;
    int servers;                /* 1 (standalone) to ZSIM_MAX_SERVERS; server 0 leads */
    int64_t tick_ns;            /* tickTime (2 s) */
    int32_t min_timeout_ms;     /* minSessionTimeout (2 ticks), 0: 2 ticks */
    int32_t max_timeout_ms;     /* maxSessionTimeout (20 ticks), 0: 20 ticks */
    int32_t sync_limit;         /* syncLimit in ticks (5) */
    int64_t container_check_ns; /* znode.container.checkIntervalMs (60 s) */
    int32_t max_buffer;         /* jute.maxbuffer of the servers (0xfffff) */
    int32_t answer_limit;       /* largest answer the client takes; 0: any
                                   (libzookeeper_mt); a Java client: max_buffer */
    int64_t latency_ns;         /* mean network and processing delay (1 ms) */
    /* Relative weights of what a step does when several things can happen. */
    uint32_t w_deliver, w_process, w_apply;
    uint32_t p_advance;          /* time moves a little on this share of steps */
    /* Random faults (0 by default). */
    uint32_t p_drop;      /* a session's connection is reset */
    uint32_t p_link;      /* a session's link goes silent for a while */
    uint32_t p_partition; /* a follower is cut from the leader for a while */
    uint32_t p_freeze;    /* a follower stops for a while */
    uint32_t p_expire;    /* the leader expires a session */
    uint32_t p_outsider;  /* an outsider changes a node under outsider_root */
    const char *outsider_root; /* "/" by default */
    int64_t fault_max_ns;      /* longest a timed fault lasts (4 ticks) */
    /* The count of child creations a new node starts with (0): near
     * INT32_MAX, its children's sequence numbers soon pass the 32-bit
     * wrap, where the server's %010d of a signed int turns negative. */
    int32_t cversion_start;
    /* The leader pings its followers this long after each half tick (0,
     * below a half tick), while it expires sessions on whole ticks: the
     * server's expiry queue counts ticks of the clock, its pings from the
     * leader's start, so a touch a follower passes on may come just before
     * a tick boundary as well as on it. */
    int64_t ping_phase_ns;
};

#define ZSIM_MAX_SERVERS 7

void zsim_config_default(struct zsim_config *cfg);
/* A new world: the servers up with the tree "/" and "/zookeeper", time 0.
 * Returns ZSIM_OK, or ZSIM_BADARGUMENTS for a configuration out of range. */
int zsim_world_new(const struct zsim_config *cfg, zsim_world **out);
/* Frees the world, its sessions and every item. */
void zsim_world_free(zsim_world *w);

/* ---- sessions (zookeeper_init, zoo_add_auth, zookeeper_close) ---------- */

/* A handle that starts connecting at once, to servers in a seeded order,
 * like zookeeper_init(hosts, watcher, timeout_ms, NULL, ...): its default
 * watcher is `watcher` (non-zero). */
zsim_session *zsim_session_new(zsim_world *w, int timeout_ms, uint64_t watcher);
/* The same with a host list of its own: the servers it may use (indexes),
 * tried in a seeded order as zookeeper_init does with its list; NULL if
 * none of them is a server of the world. */
zsim_session *zsim_session_new_hosts(zsim_world *w, int timeout_ms, uint64_t watcher,
                                     const int *servers, int n);
/* Adds credentials ("digest", "user:password"), used from the next request
 * on and on every reconnection. ZSIM_OK, ZSIM_BADARGUMENTS (an unknown
 * scheme or a malformed digest), ZSIM_INVALIDSTATE (expired, closed). */
int zsim_add_auth(zsim_session *s, const char *scheme, const char *cert);
/* zookeeper_close: if connected, the close goes to the server behind the
 * requests already sent, and the session ends there (its ephemerals go);
 * every request not answered by then is answered ZSIM_CLOSING. Items already
 * received are still delivered. Later calls on s return ZSIM_INVALIDSTATE;
 * s itself lives as long as the world. */
int zsim_close(zsim_session *s);

/* What the client knows: its state, session id (0 before the first
 * connection), negotiated timeout (ms; the requested one before), and the
 * server it talks to (-1 none). */
int zsim_state(const zsim_session *s);
int64_t zsim_session_id(const zsim_session *s);
int zsim_recv_timeout(const zsim_session *s);
int zsim_server(const zsim_session *s);
/* What the leader knows: whether the session is alive there. */
bool zsim_session_alive(const zsim_session *s);
/* A small integer naming the session in traces (0, 1, ...). */
int zsim_session_index(const zsim_session *s);

/* ---- requests (zoo_a*) --------------------------------------------------- */
/* Each returns ZSIM_OK (an answer item with `tag` follows), or at once:
 * ZSIM_BADARGUMENTS (a path the C client refuses), ZSIM_INVALIDSTATE (the
 * session expired or was closed). A watcher of 0 sets no watch. */

/* zoo_acreate2: answered with the created name and its Stat. */
int zsim_acreate(zsim_session *s, const char *path, const char *data, int len,
                 const struct zsim_acl_vector *acl, int mode, uint64_t tag);
int zsim_adelete(zsim_session *s, const char *path, int version, uint64_t tag);
int zsim_aexists(zsim_session *s, const char *path, uint64_t watcher, uint64_t tag);
int zsim_aget(zsim_session *s, const char *path, uint64_t watcher, uint64_t tag);
/* zoo_awget_children (no Stat) and zoo_awget_children2 (with the Stat). */
int zsim_aget_children(zsim_session *s, const char *path, uint64_t watcher, uint64_t tag);
int zsim_aget_children2(zsim_session *s, const char *path, uint64_t watcher, uint64_t tag);
int zsim_aset(zsim_session *s, const char *path, const char *data, int len, int version,
              uint64_t tag);
int zsim_aset_acl(zsim_session *s, const char *path, int version,
                  const struct zsim_acl_vector *acl, uint64_t tag);
int zsim_async(zsim_session *s, const char *path, uint64_t tag);

/* One op of a multi (zoo_create_op_init, zoo_delete_op_init, zoo_set_op_init,
 * zoo_check_op_init). */
enum { ZSIM_MOP_CREATE = 1, ZSIM_MOP_DELETE = 2, ZSIM_MOP_SET = 5, ZSIM_MOP_CHECK = 13 };
struct zsim_op {
    int type;
    const char *path;
    const char *data; /* create, set */
    int len;
    const struct zsim_acl_vector *acl; /* create */
    int mode;                          /* create */
    int version;                       /* delete, set, check */
};
int zsim_amulti(zsim_session *s, int count, const struct zsim_op *ops, uint64_t tag);

/* ---- items --------------------------------------------------------------- */

enum zsim_item_kind {
    ZSIM_ANSWER = 1,  /* a completion */
    ZSIM_WATCH = 2,   /* a watch event, for the listed watchers */
    ZSIM_SESSION = 3, /* a session event, for the listed watchers */
    ZSIM_TIMER = 4    /* a driver's timer (zsim_timer) came due */
};

enum zsim_req {
    ZSIM_REQ_CREATE = 1,
    ZSIM_REQ_DELETE,
    ZSIM_REQ_EXISTS,
    ZSIM_REQ_GET,
    ZSIM_REQ_CHILDREN,
    ZSIM_REQ_CHILDREN2,
    ZSIM_REQ_SET,
    ZSIM_REQ_SET_ACL,
    ZSIM_REQ_SYNC,
    ZSIM_REQ_MULTI
};

struct zsim_op_result {
    int err;
    const char *value;      /* a create's name, else NULL */
    const struct zsim_stat *stat; /* a set's Stat, else NULL */
};

struct zsim_item {
    enum zsim_item_kind kind;
    zsim_session *session;  /* NULL for a timer without one */
    uint64_t tag;           /* the request's or the timer's tag */
    /* answers */
    enum zsim_req req;
    int rc;
    const char *value;            /* create: the name; sync: the path */
    const struct zsim_stat *stat; /* where the C client passes one */
    const char *data;             /* get */
    int datalen;                  /* get; -1 for none */
    const char *const *names;     /* children */
    int count;                    /* children; multi: results */
    const struct zsim_op_result *results; /* multi */
    int64_t size;                 /* the answer's bytes on the wire */
    /* watch and session events */
    int type, state;
    const char *path;
    const uint64_t *watchers; /* the tags to call, each once */
    int nwatchers;
    /* zsim only: the server's zxid behind the item (what it knew when it
     * answered; the transaction that fired a watch event, or the server's
     * zxid at a setWatches); 0 for what the client made itself (losses,
     * session events) and for timers. No C client shows this: it tells a
     * checker how old the information is that the item carries. */
    int64_t zxid;
};

/* ---- the scheduler ------------------------------------------------------- */

/* One step chosen from the seed among what can happen now: deliver a
 * session's next item, let a server take a request, let a follower apply
 * the next transaction, move time (firing timers), or a random fault.
 * Returns 1 with *item set when the step delivered an item (hand it to its
 * session's client), 0 for a step inside the world, -1 when nothing can
 * happen any more (the leader's ticks never stop, so a run is bounded by
 * its steps or its virtual time). */
int zsim_step(zsim_world *w, const struct zsim_item **item);

/* Finer control, for scripted runs. */
/* Sessions that have an item to deliver now, in index order: up to max of
 * them go to out; returns how many there are. */
size_t zsim_deliverable(zsim_world *w, zsim_session **out, size_t max);
/* Takes the session's next item (NULL if none). */
const struct zsim_item *zsim_deliver(zsim_session *s);
/* Takes the next driver timer that came due (NULL if none). */
const struct zsim_item *zsim_deliver_timer(zsim_world *w);
/* One step inside the world (no delivery, no time): returns 0, or -1 when
 * no such step can be taken. */
int zsim_internal_step(zsim_world *w);
/* The session's server takes its next request: 0, or -1 if it cannot now. */
int zsim_take(zsim_session *s);
/* A follower applies the next committed transaction: 0, or -1 if it cannot
 * (up to date, cut off or stopped). */
int zsim_apply(zsim_world *w, int server);
/* Time: now, the next timer (INT64_MAX if none), and moving to `ns` later
 * (every timer up to then fires in order). */
int64_t zsim_now(const zsim_world *w);
int64_t zsim_next_timer(const zsim_world *w);
void zsim_advance(zsim_world *w, int64_t ns);

/* A timer of the driver's: an item ZSIM_TIMER with `tag` (and session s, if
 * not NULL) becomes deliverable once time reaches `at`. */
void zsim_timer(zsim_world *w, zsim_session *s, int64_t at, uint64_t tag);

/* The world's generator, for a driver's own choices (same stream). */
uint64_t zsim_rand(zsim_world *w);
uint64_t zsim_below(zsim_world *w, uint64_t n);
/* Seed the generator anew: a driver that seeds it before each step from a
 * tape of its own makes each step's choices depend on that step's seed
 * alone, so that steps can be cut from the tape without shifting the
 * choices of the others. */
void zsim_reseed(zsim_world *w, uint64_t seed);
/* The generator's whole state: read (set false) or put back (true). A
 * driver that notes it before each of its steps can run a step again
 * from where it began, whatever the steps before it drew. */
void zsim_rand_state(zsim_world *w, uint64_t state[4], bool set);

/* A crash, an assertion or a schedule past SIM_TIMEOUT seconds of real
 * time says which schedule it was (crash.c): zsim_crash_arm installs the
 * handlers once; zsim_crash_lines, before each schedule, says its seed and
 * the command that replays it. */
void zsim_crash_arm(void);
void zsim_crash_lines(uint64_t seed, const char *replay);

/* A leader latch node's sequence as the checkers order the nodes
 * (latchseq.c): the ten digits after the name's last "latch-", or -1, as
 * for a name past the sequence's 32-bit wrap. */
int64_t zsim_latch_seq(const char *name);
/* The text Curator's latch orders the node by (strcmp): after the name's
 * last "latch-", or NULL. */
const char *zsim_latch_key(const char *name);

/* ---- faults -------------------------------------------------------------- */

/* The session's connection is reset. Of the requests its server has not
 * taken yet, the first `applied` are taken anyway (their answers lost); of
 * the items sent to the client and not delivered, the first `received`
 * reached it (the rest are lost). -1 lets the seed decide either. The
 * client then reports ZSIM_CONNECTING_STATE and ZSIM_CONNECTIONLOSS for
 * every request without an answer, and reconnects. No effect unless
 * connected. */
void zsim_drop(zsim_session *s, int applied, int received);
/* The session's link goes silent (down) or comes back: nothing passes while
 * down; the client gives up after 2/3 of its timeout without an answer
 * (ZSIM_OPERATIONTIMEOUT) and its connection attempts hang. */
void zsim_link(zsim_session *s, bool up);
/* One way or both: requests sent while to_server is down arrive when it
 * comes back; items sent while to_client is down arrive when it does, or
 * are lost with the connection. */
void zsim_link_oneway(zsim_session *s, bool to_server, bool to_client);
/* The program's side stands still: with items, no callback of the session
 * runs (its items wait, as behind a callback that blocks); with stopped,
 * the C client's own thread stands still too (no ping, no timeout: a
 * paused process), and looks at its clock when it runs again. What the
 * server sends meanwhile waits in the socket. (false, false) resumes. */
void zsim_hold(zsim_session *s, bool items, bool stopped);
/* Leader changes. zsim_failover: the leader is lost; every server drops
 * its clients and serves none for ns (the election), the touches the
 * followers had not passed on are lost, and the new leader (server 0
 * again in the model) starts every session's expiry anew, one timeout from
 * its start. zsim_leader_pause: the leader stands still for ns (pings,
 * expiry, requests); when it runs again, what ran out expires first.
 * zsim_leader_slow: the leader commits nothing for ns: writes and syncs
 * wait, pings, touches and expiry go on. */
void zsim_failover(zsim_world *w, int64_t ns);
void zsim_leader_pause(zsim_world *w, int64_t ns);
void zsim_leader_slow(zsim_world *w, int64_t ns);
/* A follower cut from the leader (or healed): it answers reads and pings
 * from its stale tree, holds writes and syncs, forwards no touches, and
 * after sync_limit ticks drops its clients and refuses new ones until healed. */
void zsim_partition(zsim_world *w, int server, bool cut);
/* The session's follower is cut from the leader for ns right after it next
 * answers a sync of the session with no other sync of it behind: the
 * touch of that sync never reaches the leader, which counts the session's
 * expiry from the touches it heard before, the earliest the server allows
 * after that request (aimed at a holder after a silence: the touches before
 * it are as old as the silence is long). A session on the leader is not cut. */
void zsim_cut_after_sync(zsim_session *s, int64_t ns);
/* A follower stopped (or resumed): it does nothing at all. */
void zsim_freeze(zsim_world *w, int server, bool frozen);
/* The leader expires the session now (as the test harness does). */
void zsim_expire(zsim_session *s);

/* Outsiders: a session of their own on the leader, never faulty, with the
 * server's superuser identity (no ACL refuses it) and the credentials of
 * zsim_outsider_auth, if any. Each call is applied
 * at once and returns the server's code; a create's name goes to name
 * (size bytes) if given. */
void zsim_outsider_auth(zsim_world *w, const char *digest);
int64_t zsim_outsider_id(const zsim_world *w);
/* The outsider's session ends, taking its ephemerals; the next outsider
 * call opens a new one (0 until then from zsim_outsider_id). */
void zsim_outsider_leave(zsim_world *w);
int zsim_outsider_create(zsim_world *w, const char *path, const char *data, int len,
                         const struct zsim_acl_vector *acl, int mode, char *name, size_t size);
int zsim_outsider_delete(zsim_world *w, const char *path, int version);
int zsim_outsider_set(zsim_world *w, const char *path, const char *data, int len, int version);
int zsim_outsider_set_acl(zsim_world *w, const char *path, int version,
                          const struct zsim_acl_vector *acl);
/* One random outsider action on a node under outsider_root: delete it,
 * change its data, change its ACL, or plant a node beside it; or an undoing:
 * the outsider's session ends, or an ACL it changed is put back. Returns 0,
 * or -1 if there was nothing to act on. */
int zsim_outsider_random(zsim_world *w);
/* The same on the node at path (under outsider_root), a plant beside it
 * taking its very sequence: -1 if there is no such node. */
int zsim_outsider_at(zsim_world *w, const char *path);
/* Every ACL an outsider changed goes back to open (a run's end heals). */
void zsim_outsider_mend(zsim_world *w);

/* ---- the truth (the leader's tree) --------------------------------------- */

/* ZSIM_OK with the node's Stat, or ZSIM_NONODE. */
int zsim_truth_stat(const zsim_world *w, const char *path, struct zsim_stat *st);
/* The number of children, and each child's name in turn through fn; -1 if
 * the node does not exist. */
int zsim_truth_children(const zsim_world *w, const char *path,
                        void (*fn)(void *arg, const char *name), void *arg);
/* The leader's zxid, and a follower's (how far it has applied). */
int64_t zsim_zxid(const zsim_world *w, int server);

/* Every node the leader creates or deletes, as it applies the transaction:
 * fn(arg, change) with the node's path (borrowed for the call), the zxid,
 * its ephemeral owner's session index (-1 for none), and who asked: the
 * index of the session whose request it was, or -1 (an outsider, the
 * leader's expiry, a container sweep). A session's end (its close, or its
 * expiry) deletes its ephemerals with `closing` set. NULL: none. */
struct zsim_change {
    bool created; /* else deleted */
    bool closing;
    const char *path;
    int64_t zxid;
    int owner;
    int origin;
};
void zsim_on_change(zsim_world *w, void (*fn)(void *arg, const struct zsim_change *c), void *arg);

/* ---- accounting and traces ----------------------------------------------- */

struct zsim_counts {
    uint64_t steps, delivered, processed, applied, txns, timers;
    uint64_t drops, links, partitions, freezes, expiries, outsiders;
    uint64_t sessions_expired, connects;
    uint64_t failovers, leader_pauses;
};
void zsim_counts(const zsim_world *w, struct zsim_counts *out);
/* Called with one line per step of the world (no newline), or NULL. */
void zsim_trace(zsim_world *w, void (*fn)(void *arg, const char *line), void *arg);
/* The C client's name of a code, event type or state ("ZNONODE", ...). */
const char *zsim_rc_name(int rc);
const char *zsim_event_name(int type);
const char *zsim_state_name(int state);

#ifdef __cplusplus
}
#endif
#endif
