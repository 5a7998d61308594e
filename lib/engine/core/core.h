/* The engine's pure core: every decision about a contender node, made
 * without I/O. Events go in (an answer to one of the node's requests, a
 * watch event, a session event, a caller's leave or release, a backoff
 * that is due), each with the time passed in; actions come out through the
 * core's sink (requests to send, watches to arm, a waiter to wake, a loss
 * to tell, a node to free). The core calls no zoo_*, takes no lock, reads
 * no clock and starts no thread: its shell (lib/engine/) does all of that,
 * and the tests (tests/check_core*.c) and the simulation (tests/sim/) stand
 * in for the shell.
 *
 * The files, those that act first (they call each other: the one cycle
 * of calls among the core's files, which tests/check-layers.sh bounds),
 * then those that only decide or keep, which call none of them:
 *   cnode.c    a node's machine: its one entry (zkl__cnode_on), its states,
 *              the one transition function, the table of legal moves and
 *              what entering a state does; carrying out a decision
 *   steps.c    the steps the machine takes (create, delete, recover, queue
 *              again, fail), each changing state only through cnode.c
 *   act.c      a listing's answer carried out: decide.c's plan (watches
 *              armed, a waiter woken); recovery's check of a node found
 *   watch.c    the watches: on the node ahead, a watch group, the lock
 *              path's children, our own node; their answers and events
 *   feed.c     what the shell feeds the core (the session, the connection,
 *              watch events routed, a shared listing's answer, the tick,
 *              the client's end), each to a node by its one entry
 *   decide.c   a listing's meaning: find our node, ask the policy, hold or
 *              watch whom (a zkl__plan); it decides only
 *   walk.c     the nodes ahead of ours: walk back when one goes, or hold
 *   alone.c    a lock path acquired alone: its create's number proves it
 *   joint.c    listings shared by a session's waiters on one lock path
 *   verdict.c  what an acquire that waits on a node returns now
 *   subs.c     the sub-states with tables of legal moves (the own-node
 *              watch, the listing), each with its one setter, and the
 *              report of a forbidden move
 *   names.c    a node's names and kind, the names it watches
 *   core.c     the core's store: memory, the sink, the interned lock paths,
 *              the lists that route watch events, the counters
 *   areq.c     an asynchronous request's machine (areq.h)
 *
 * Ownership: the shell allocates a node (its struct embeds zkl__cnode) and
 * frees it when the core says ZKL__A_FREE; the core owns the strings it
 * keeps. Threads: none; the shell serialises every call to one core. */
#ifndef ZKL_CORE_H
#define ZKL_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h> /* return codes, event types, String_vector */

#include "policy.h"

#define ZKL__NO_DEADLINE INT64_MAX
#define ZKL__MAX_PATH 1024

/* ZooKeeper's watch event types and create modes, by value: the C client
 * exports them as variables, the core needs constants (the shell checks
 * that they agree). */
enum { ZKL__WT_CREATED = 1, ZKL__WT_DELETED = 2, ZKL__WT_CHANGED = 3, ZKL__WT_CHILD = 4 };
enum { ZKL__MODE_EPHEMERAL = 1, ZKL__MODE_EPHEMERAL_SEQUENTIAL = 3 };

struct zkl__core;
struct zkl__cnode;
struct zkl__joint;

/* ---- actions: what the core asks its shell to do ------------------------ */

enum zkl__act_type {
    ZKL__A_CREATE,       /* create path (mode, data: the client's ident) -> E_CREATED */
    ZKL__A_PARENT,       /* create the container/persistent parent path -> E_PARENT */
    ZKL__A_LIST,         /* list path, no watch -> E_LISTED (to n, or to the joint j) */
    ZKL__A_SYNC,         /* sync path -> E_SYNCED */
    ZKL__A_WATCH_AHEAD,  /* data watch on path (slot) -> E_AHEAD */
    ZKL__A_WATCH_MEMBER, /* data watch on a watch group's member -> E_MEMBER */
    ZKL__A_WATCH_KIDS,   /* list path with a child watch -> E_KIDS */
    ZKL__A_WATCH_OWN,    /* existence watch on our own node -> E_OWN */
    ZKL__A_READ_OWN,     /* data watch on our own node, reading it -> E_OWN_DATA */
    ZKL__A_FIND,         /* existence watch on a node with our uuid -> E_FOUND */
    ZKL__A_WATCH_DIR,    /* existence watch on the lock path -> E_DIR */
    ZKL__A_DELETE,       /* delete path, any version -> E_DELETED */
    ZKL__A_WAKE,         /* whoever waits for n should look at it again */
    ZKL__A_LOST,         /* n was held and is lost: tell its owner, once */
    ZKL__A_REVOKE,       /* someone asked n's holder to let go: tell its owner */
    ZKL__A_KICK,         /* a retry is due at `at`: the keeper should tick then */
    ZKL__A_BROKEN,       /* the engine broke its own state table (`text` says how; n
                            may be NULL): count it; n's hold, if any, is told lost */
    ZKL__A_FREE          /* nothing refers to n any more and it is unlinked: free it */
};

/* One action, borrowed for the sink's call. A request's answer comes back
 * as an event to the node (or, for a shared listing, to the joint). */
typedef struct zkl__act {
    enum zkl__act_type type;
    struct zkl__cnode *n;
    struct zkl__joint *j; /* ZKL__A_LIST of a shared listing: n is NULL */
    const char *path;     /* full path; valid during the call */
    int mode;             /* ZKL__A_CREATE: ZKL__MODE_... */
    int slot;             /* ZKL__A_WATCH_AHEAD: 0 the node ahead, 1 the one before it */
    int64_t at;           /* ZKL__A_KICK */
    const char *text;     /* ZKL__A_BROKEN: what broke; valid during the call */
} zkl__act;

/* The shell's side of every action: returns ZOK once a request is queued
 * (its answer will come as an event), or the code the send failed with
 * (then no answer comes); 0 for actions that send nothing. It must not
 * call back into the core. */
typedef int (*zkl__sink_fn)(void *ctx, const zkl__act *a);

/* ---- events: what happens to a node ------------------------------------- */

/* The answers to requests come first, up to ZKL__E_DELETED: each is one the
 * node counted on (zkl__cnode_on). */
enum zkl__ev_type {
    ZKL__E_CREATED,  /* rc, name (the node's name, not its path), czxid */
    ZKL__E_PARENT,   /* rc */
    ZKL__E_LISTED,   /* rc, kids */
    ZKL__E_SYNCED,   /* rc */
    ZKL__E_AHEAD,    /* rc, slot */
    ZKL__E_MEMBER,   /* rc */
    ZKL__E_KIDS,     /* rc, kids */
    ZKL__E_OWN,      /* rc, version */
    ZKL__E_OWN_DATA, /* rc, data/len, version */
    ZKL__E_FOUND,    /* rc, owner (ephemeral owner), czxid */
    ZKL__E_DIR,      /* rc */
    ZKL__E_DELETED,  /* rc */
    ZKL__E_WATCH,    /* wtype, path: a watch event routed to the node */
    ZKL__E_CONNECTED,   /* the session's connection is up (again) */
    ZKL__E_SESSION_END, /* the node's session ended, or the client closes */
    ZKL__E_LEAVE,    /* the caller gives the attempt up: no node may stay */
    ZKL__E_RELEASE,  /* the caller releases its hold */
    ZKL__E_TAKEN,    /* the caller took the hold it waited for */
    ZKL__E_DETACH,   /* the caller is done with the node */
    ZKL__E_RETRY,    /* a refused delete's backoff is due */
    ZKL__E_DROP,     /* the client's memory goes: nothing of the node is kept */
    ZKL__E_UNSHARED, /* rc: the shared listing it waited for could not be sent */
    ZKL__E_OUTRUN,   /* a shared listing's answer it no longer waits for */
    ZKL__E_COUNT
};

/* One answer event per request action (those before ZKL__A_WAKE), in the
 * same order: a request added without its answer, or an answer out of
 * place, would break the count of answers a node waits for. */
_Static_assert((int)ZKL__E_DELETED == (int)ZKL__A_DELETE &&
                   (int)ZKL__E_WATCH == (int)ZKL__A_WAKE,
               "the answer events do not match the request actions");

/* An answer to a request the node sent (and counted in its refs). */
static inline bool zkl__ev_is_answer(enum zkl__ev_type t)
{
    return t <= ZKL__E_DELETED;
}

struct zkl__target;

typedef struct zkl__event {
    enum zkl__ev_type type;
    int rc;
    int slot;
    int wtype;         /* ZKL__E_WATCH: ZKL__WT_... */
    const char *name;  /* E_CREATED: the created node's name; E_WATCH: the path */
    const char *data;  /* E_OWN_DATA */
    int len;
    int32_t version;   /* E_OWN, E_OWN_DATA: the node's data version */
    int64_t czxid;     /* E_CREATED, E_FOUND */
    int64_t owner;     /* E_CREATED, E_FOUND: the node's ephemeral owner */
    const struct String_vector *kids;
    const struct zkl__target *target; /* E_WATCH: its path taken apart (names.c) */
    int64_t now;       /* monotonic ns */
} zkl__event;

/* ---- a node ----------------------------------------------------------------- */

/* A node's life. Only the transition function changes it, against a table
 * of legal moves (cnode.c). */
enum zkl__nstate {
    ZKL__N_NEW,       /* made, nothing sent yet */
    ZKL__N_CREATING,  /* create (+ listing) sent; name unknown until it answers */
    ZKL__N_RECOVER,   /* a create's answer was lost: find the node by its uuid */
    ZKL__N_QUEUED,    /* our node exists; waiting for the policy to say "held" */
    ZKL__N_HELD,      /* the policy said so: the lock is ours */
    ZKL__N_RELEASING, /* the delete in flight releases the hold; refused: held again */
    ZKL__N_DELETING,  /* delete sent (or to be sent again on reconnect) */
    ZKL__N_BACKOFF,   /* nobody holds it, the server refused its delete: sent again later */
    ZKL__N_LOST,      /* held, then deleted by someone else or taken by the session's end */
    ZKL__N_GONE,      /* no node of this attempt exists any more */
    ZKL__N_COUNT
};

/* Who the node is for. */
enum zkl__caller {
    ZKL__C_WAITING, /* a caller waits for the policy to say "held" */
    ZKL__C_TAKEN,   /* the caller took the hold */
    ZKL__C_LEFT,    /* the caller gave up: delete as soon as the name is known */
    ZKL__C_GONE     /* no caller refers to the node any more */
};

/* What the caller has heard of its hold: a loss is told once, also when an
 * internal error told it first (subs.c). */
enum zkl__told {
    ZKL__TOLD_NOTHING,
    ZKL__TOLD_LOST
};

/* The watch on our own node (PITFALLS: a handoff trusted without one's own
 * node): from the create's answer on, anyone else deleting the node is
 * seen before any later event, in the server's order. */
enum zkl__own {
    ZKL__OWN_OFF,   /* none set */
    ZKL__OWN_ASKED, /* set or being set, not yet confirmed */
    ZKL__OWN_BLIND, /* ... after a read of it was refused: the data version
                       its answer shows counts as read (no read loop) */
    ZKL__OWN_SET,   /* set, and the server said the node existed then */
    ZKL__OWN_COUNT
};

/* The node's listing of its lock path. */
enum zkl__listing {
    ZKL__L_IDLE,
    ZKL__L_OUT,      /* one in flight */
    ZKL__L_OUT_AGAIN, /* one in flight, and another wanted after it */
    ZKL__L_COUNT
};

/* How the node waits on others' nodes it may not read. */
enum zkl__reading {
    ZKL__R_NODES,    /* data watches on the nodes ahead */
    ZKL__R_KIDS_OFF, /* refused a node: the lock path's children instead; none set */
    ZKL__R_KIDS_SET, /* ... a child watch set or being set */
    ZKL__READING_COUNT
};

/* A watch on another's node: one of the nodes ahead (a slot), or a watch
 * group's member. */
enum zkl__armed {
    ZKL__ARM_OFF,
    ZKL__ARM_ON, /* set or being set (or the lock path's children tell instead) */
    ZKL__ARM_COUNT
};

/* What walking back through the nodes ahead is doing. */
enum zkl__walk {
    ZKL__W_NONE,
    ZKL__W_PROBE, /* a long queue's walk-back watch went to a node that may be gone too */
    ZKL__W_LISTED /* listed instead of walking back: would walking have served? */
};

/* How long the caller waits. */
enum zkl__patience {
    ZKL__P_DEADLINE, /* until its deadline */
    ZKL__P_ONCE,     /* only for the policy's first answer (timeout 0) */
    ZKL__P_ANSWERED  /* ... which came */
};

/* Whether the watched node (slot 0) may hand us the lock when it goes
 * (PROTOCOL §4): what the latest listing said of it. */
enum zkl__pred {
    ZKL__PRED_NONE,  /* not first in it, or not of our kind */
    ZKL__PRED_FIRST  /* first in it, and of our kind */
};

/* Another node of our kind with a protected name (`_c_<uuid>-<kind><seq>`),
 * kept as its uuid and sequence: 24 bytes rather than its 50-odd characters
 * (a waiter in a long queue keeps a few). seq -1: none. */
typedef struct zkl__peer {
    uint8_t uuid[16];
    int32_t seq; /* the server's counter is a 32-bit int */
} zkl__peer;

/* The rare parts of a node, apart: a watch group, planted nodes skipped in
 * recovery, a kind of its own, a fixed sequence. */
struct zkl__gwatch {
    char *name;
    uint8_t armed; /* enum zkl__armed: only zkl__cnode_armed() writes it */
};

struct zkl__cside {
    struct zkl__gwatch *group;
    size_t ngroup;
    char **skip; /* recovery: nodes with our uuid another session owns */
    size_t nskip;
    char *gone[2]; /* watched names seen deleted while a listing was out */
    char *kind_copy; /* a kind of its own, instead of the policy's */
    char fixed_seq[11];
    int64_t retry_at; /* ZKL__N_BACKOFF: when the delete is sent again */
};

/* One contender, as the core sees it. Facts, each on its own line; every
 * state is a named state of one of the enums above. */
typedef struct zkl__cnode {
    struct zkl__core *core;
    struct zkl__cnode *prev, *next;   /* core->live */
    struct zkl__cnode *rprev, *rnext; /* core->watching or core->backoff, or (rnext
                                         alone) a chain of the held index: its route */
    const zkl__policy *pol;
    const void *arg;
    struct zkl__dir *dir;  /* the lock path, interned */
    int32_t seq;           /* our node's sequence once known, else -1: its name is
                              made of its uuid, kind and sequence (zkl__core_own) */
    char *name;            /* that name, written once when seq became known; NULL
                              without memory (then written where needed) */
    int32_t own_version;   /* our node's data version last read */
    char *watch[2];        /* watched names: the node ahead, and (prefetch) the one before */
    zkl__peer wpeer;       /* the node ahead, when of our kind, instead of watch[0] */
    int32_t fast_expect;   /* >= 0: created without a listing (alone.c) */
    zkl__peer *ahead;      /* nodes ahead of ours, nearest last (see walk.c) */
    struct zkl__cside *side; /* NULL until a rare part is needed */
    uint64_t gen;          /* the session it belongs to */
    int64_t token;         /* our node's czxid */
    uint32_t fast_epoch;
    uint32_t qlen;         /* entries of the latest listing */
    uint32_t refs;         /* answers still to come, and the caller's reference */
    uint16_t rank;         /* nodes ahead of ours in it (at most UINT16_MAX) */
    uint16_t holds0;       /* core->holds at that listing */
    uint8_t wsent[2], wdone[2]; /* data watches sent / answered per slot (wrapping) */
    int16_t err;           /* why the attempt failed, for the caller */
    int16_t zk_rc;         /* ... and the ZooKeeper code behind a ZKL_EZK */
    uint8_t creates;       /* create attempts, to bound a container race */
    int8_t parent_rc;      /* a lock parent the server refused to create */
    uint8_t retries;       /* refused deletes so far: the backoff grows with it */
    uint8_t uuid[16];
    uint8_t nahead;
    uint8_t st;            /* enum zkl__nstate: only zkl__cnode_move() writes it */
    uint8_t caller;        /* enum zkl__caller */
    uint8_t told;          /* enum zkl__told: only subs.c writes it */
    uint8_t own;           /* enum zkl__own: only zkl__cnode_own() writes it */
    uint8_t listing;       /* enum zkl__listing: only zkl__cnode_listing() writes it */
    uint8_t reading;       /* enum zkl__reading: only zkl__cnode_reading() writes it */
    uint8_t walk;          /* enum zkl__walk */
    uint8_t patience;      /* enum zkl__patience */
    uint8_t pred;          /* enum zkl__pred */
    uint8_t route;         /* enum zkl__core_route (core.c) */
    uint8_t armed[2];      /* enum zkl__armed of the watch on watch[i]: only
                              zkl__cnode_armed() writes it */
    bool prefetch;         /* also watch the node two ahead */
    bool ahead_front;      /* ahead[0] was first in that listing */
    bool mates;            /* at that listing other nodes of this client waited too */
    bool stalled;          /* a request failed for a connection reason: redo on reconnect */
} zkl__cnode;

/* ---- the core of one client ------------------------------------------------ */

typedef struct zkl__core_stats {
    uint64_t creates, deletes, listings, watch_events, recovered;
    uint64_t broken; /* moves a state table forbids (zkl__core_broken) */
} zkl__core_stats;

/* Make a core that acts through sink(ctx, ...), its uuids drawn from a
 * generator seeded with `seed` (the shell's randomness); NULL without
 * memory. */
struct zkl__core *zkl__core_new(zkl__sink_fn sink, void *ctx, const uint64_t seed[4]);
/* The context the sink is called with. */
void *zkl__core_ctx(const struct zkl__core *k);
/* Free it; every node must be freed already (zkl__core_drop_nodes). */
void zkl__core_free(struct zkl__core *k);
/* For tests: fail(ctx) is asked before each of the core's allocations,
 * and true makes it fail as if out of memory. */
void zkl__core_set_fail(struct zkl__core *k, bool (*fail)(void *ctx), void *ctx);
/* The client's options the decisions need. */
void zkl__core_set_max_request(struct zkl__core *k, int bytes);
void zkl__core_set_ident(struct zkl__core *k, const char *ident); /* borrowed for life */
const zkl__core_stats *zkl__core_stats_of(const struct zkl__core *k);

/* The session, as the nodes see it: a new session (gen moved on) or the
 * client closing ends every node of the old one; `sid` is the session id
 * nodes found by their uuid are checked against. */
void zkl__core_session(struct zkl__core *k, uint64_t gen, int64_t sid, bool closing, int64_t now);
/* The connection went down, or came up (again): then whatever a lost
 * connection stalled is done again. */
void zkl__core_connection(struct zkl__core *k, bool up, int64_t now);
uint64_t zkl__core_gen(const struct zkl__core *k);
bool zkl__core_connected(const struct zkl__core *k);
/* zkl_client_cancel: every acquire ends with ZKL_ECANCELED, for good. */
void zkl__core_cancel(struct zkl__core *k);
/* A watch event of the current session (the shell drops other handles'). */
void zkl__core_watch_event(struct zkl__core *k, int wtype, const char *path, int64_t now);
/* Backoffs due by now are sent again; returns when the next is due, 0 for none. */
int64_t zkl__core_tick(struct zkl__core *k, int64_t now);
/* A request of the core's (any node's) is still pending. */
bool zkl__core_pending(const struct zkl__core *k);
/* Unlink every node (the client's memory goes); ZKL__A_FREE for each. */
void zkl__core_drop_nodes(struct zkl__core *k);
/* Call fn for every live node (wake-ups). */
void zkl__core_each(struct zkl__core *k, void (*fn)(zkl__cnode *n, void *arg), void *arg);
/* Nodes in ZKL__N_QUEUED. */
uint32_t zkl__core_queued(const struct zkl__core *k);
/* How often a node moved from state `from` to `to` (the tests check that
 * every legal move of the table was taken). */
uint32_t zkl__core_moves(const struct zkl__core *k, int from, int to);
/* The same for asynchronous requests (areq.h). */
uint32_t zkl__core_rmoves(const struct zkl__core *k, int from, int to);
/* Whether the table allows the move. */
bool zkl__cnode_legal(int from, int to);
/* The same for the watch on a node's own node (enum zkl__own). */
uint32_t zkl__core_omoves(const struct zkl__core *k, int from, int to);
bool zkl__cnode_own_legal(int from, int to);
/* The same for a node's listing (enum zkl__listing). */
uint32_t zkl__core_lmoves(const struct zkl__core *k, int from, int to);
bool zkl__cnode_listing_legal(int from, int to);
/* The same for how the node reads the nodes ahead (enum zkl__reading). */
uint32_t zkl__core_rdmoves(const struct zkl__core *k, int from, int to);
bool zkl__cnode_reading_legal(int from, int to);
/* The same for its watches on others' nodes (enum zkl__armed). */
uint32_t zkl__core_amoves(const struct zkl__core *k, int from, int to);
bool zkl__cnode_armed_legal(int from, int to);

/* ---- a node's life, from the shell --------------------------------------- */

/* What a node is made with. */
typedef struct zkl__cnode_opts {
    const zkl__policy *pol;
    const void *arg;       /* passed to pol->holds */
    const char *dir;       /* the lock path (interned: copied once per core) */
    const char *kind;      /* NULL: the policy's; else copied */
    const char *fixed_seq; /* NULL, or a 10-digit sequence (a downgrade node) */
    bool prefetch;
    bool try_once;
} zkl__cnode_opts;

/* Set n up (its memory is the shell's, zeroed) and link it: 0, or
 * ZKL_ENOMEM with nothing to undo. The caller holds a reference. */
int zkl__cnode_init(struct zkl__core *k, zkl__cnode *n, const zkl__cnode_opts *o);
/* Send its create (the lock path acquired alone lately: without a listing). */
void zkl__cnode_start(zkl__cnode *n, int64_t now);
/* One event for the node: the one entry to its machine. The answer to a
 * request counts the node's reference for it off. n may be freed by the
 * call (ZKL__A_FREE): don't touch it after, unless the caller holds a
 * reference. */
void zkl__cnode_on(zkl__cnode *n, const zkl__event *ev);
/* The answer to a shared listing, for every node it serves. */
void zkl__joint_on(struct zkl__joint *j, int rc, const struct String_vector *kids, int64_t now);
/* The session a shared listing is of, and the first node it serves. */
uint64_t zkl__joint_gen(const struct zkl__joint *j);
zkl__cnode *zkl__joint_first(const struct zkl__joint *j);

/* Questions about a node (pure). */
bool zkl__cnode_current(const zkl__cnode *n);
/* The kind its node is created with: the policy's, or one of its own. */
const char *zkl__cnode_kind(const zkl__cnode *n);
bool zkl__cnode_settled(const zkl__cnode *n); /* nothing left to wait for */
bool zkl__cnode_exists(const zkl__cnode *n);  /* a node of the attempt may exist */
/* The node's full path into buf (size >= ZKL__MAX_PATH + 96): its own
 * name, or another name in its lock path. Returns buf. */
char *zkl__cnode_path(const zkl__cnode *n, const char *name, char *buf, size_t size);
const char *zkl__cnode_dir(const zkl__cnode *n);

/* Of the children in kids that parse and that skip (if given) lets
 * through, the m nearest ahead of *me (sorted by sequence, then name) go
 * to cs in that order, then *me if it is listed: cs has room for m + 1.
 * Returns the entries written; *self is me's index (the count written if
 * me is not listed), *older the nodes ahead that were left out, *total
 * every child counted. One pass: a long queue is never sorted. */
size_t zkl__decide_nearest(const struct String_vector *kids, const zkl__entry *me, size_t m,
                            bool (*skip)(const char *name, const void *arg), const void *arg,
                            zkl__entry *cs, size_t *self, size_t *older, size_t *total);

/* What an acquire waiting on n should return now: 1 to go on waiting, 0
 * held, or a ZKL_E... code (verdict.c). */
typedef struct zkl__wait_view {
    bool cancelled;     /* the caller's cancel, or the client's */
    bool client_cancel; /* zkl_client_cancel */
    bool deadline_past;
} zkl__wait_view;
int zkl__verdict(const zkl__cnode *n, const zkl__wait_view *w);

#endif
