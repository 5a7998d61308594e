/* What the core's files share and nobody else sees: the core's struct,
 * the steps a node's machine takes, and the decisions the other files
 * hand back to it. Only cnode.c changes a node's state (zkl__cnode_move,
 * which steps.c's steps call), and only subs.c the sub-states that have
 * tables (zkl__cnode_own, zkl__cnode_listing, zkl__cnode_reading,
 * zkl__cnode_armed). decide.c, walk.c and
 * alone.c only decide: they look at what an answer says and return what
 * to do (a zkl__step, or decide.c's zkl__plan), which cnode.c and act.c
 * carry out; watch.c decides on its watches' answers and events, and arms
 * them. feed.c hands the shell's events to the nodes, each by
 * zkl__cnode_on. core.h lists the files. */
#ifndef ZKL_MACHINE_H
#define ZKL_MACHINE_H

#include <string.h>

#include "core.h"
#include "list.h"
#include "zkl.h"

/* A path taken only by a bug's report: kept apart from the code that calls
 * it, so that every sub-state move does not save the registers it needs. */
#if defined(__GNUC__)
#define ZKL__COLD __attribute__((cold, noinline))
#else
#define ZKL__COLD
#endif

/* A listing of more than AHEAD_SHORT entries is a long queue: its waiters
 * keep the nearest AHEAD_LONG nodes ahead only, and walk back through them
 * rather than list the whole queue when the node they watch goes. */
#define AHEAD_SHORT 16
#define AHEAD_LONG 4
/* What a holder's node holds when someone asks it to give the lock up
 * (Curator's cooperative revocation, PROTOCOL §6). */
#define REVOKE_DATA "__REVOKE__"
#define REVOKE_LEN 10

/* Which of the core's routing lists holds a node. */
enum zkl__core_route {
    ZKL__RT_NONE,
    ZKL__RT_WATCHING, /* core->watching: it armed a watch; events may be for it */
    ZKL__RT_HELD,     /* core->held index: held, watching only itself, by path */
    ZKL__RT_BACKOFF   /* core->backoff: in ZKL__N_BACKOFF */
};

/* A lock path, interned: every node, joint and tracked path on it shares
 * one copy. */
struct zkl__dir {
    struct zkl__dir *hnext;
    uint32_t refs;
    uint32_t len;
    char path[]; /* NUL-terminated */
};

struct zkl__core {
    zkl__sink_fn sink;
    void *ctx;
    uint64_t rng[4];      /* the uuids' source, seeded by the shell */
    uint64_t gen;         /* the current session */
    int64_t sid;          /* ... its id */
    bool connected;
    bool closing;
    bool cancelled;       /* zkl_client_cancel: every acquire ends */
    bool walk_pays;       /* in a long queue, walking back lately paid */
    int max_request;      /* the server's jute.maxbuffer */
    const char *ident;    /* written into contender nodes */
    zkl__cnode *live;     /* every node, alive or being cleaned up */
    zkl__cnode *watching; /* nodes that armed a watch */
    zkl__cnode *backoff;  /* nodes in ZKL__N_BACKOFF */
    zkl__cnode **held;    /* held nodes watching only themselves, by path */
    size_t held_buckets, held_count;
    struct zkl__dir **dirs;
    size_t dir_buckets, dir_count;
    size_t dir_longest; /* no lock path interned so far was longer */
    struct zkl__joint **joints;
    size_t joint_buckets, joint_count;
    struct zkl__track *tracks; /* lock paths acquired alone lately (alone.c) */
    uint64_t dir_epoch;
    int64_t now;     /* the time of the event being handled */
    uint16_t holds;  /* nodes that came to hold, wrapping */
    uint32_t queued; /* nodes in ZKL__N_QUEUED */
    zkl__core_stats stats;
    bool (*fail)(void *ctx); /* a test's: refuse this allocation? */
    void *fail_ctx;
    uint32_t moves[ZKL__N_COUNT][ZKL__N_COUNT]; /* nodes' moves taken (tests) */
    uint32_t rmoves[8][8];                        /* requests' moves taken (tests) */
    /* sub-states' moves taken, by from * count + to (tests) */
    uint32_t omoves[ZKL__OWN_COUNT * ZKL__OWN_COUNT]; /* the own watch's */
    uint32_t lmoves[ZKL__L_COUNT * ZKL__L_COUNT];     /* the listing's */
    uint32_t rdmoves[ZKL__READING_COUNT * ZKL__READING_COUNT]; /* the reading's */
    uint32_t amoves[ZKL__ARM_COUNT * ZKL__ARM_COUNT];  /* the watches on others' nodes' */
};

/* What an answer or an event means for a node: cnode.c carries it out. */
enum zkl__step {
    ZKL__S_NONE,    /* nothing more (watches armed, a listing sent, ...) */
    ZKL__S_HOLD,    /* the node holds */
    ZKL__S_LIST,    /* list the lock path again */
    ZKL__S_REQUEUE, /* our node is gone: queue again with a fresh one */
    ZKL__S_CREATE,  /* recovery: the lost create never happened: create */
    ZKL__S_ADOPT,   /* recovery: the node found is ours: queue on it */
    ZKL__S_DELETE,  /* the caller left: delete our node */
    ZKL__S_GONE,    /* nothing of the attempt exists (any more) */
    ZKL__S_FAIL,    /* the attempt failed with `err`; no node to delete */
    ZKL__S_ABORT,   /* the attempt failed with `err`; delete our node */
    ZKL__S_STALL,   /* a connection error: redo on reconnect */
    ZKL__S_OWN_GONE, /* our own node is gone and we did not delete it */
    ZKL__S_WALK     /* walked back past nodes gone: watch the nearest one left */
};

typedef struct zkl__decision {
    enum zkl__step step;
    int err;          /* ZKL__S_FAIL, ZKL__S_ABORT */
    int zk_rc;        /* the ZooKeeper code behind a ZKL_EZK */
    const char *name; /* ZKL__S_DELETE: a name at hand that the node could not keep */
} zkl__decision;

static inline zkl__decision zkl__do(enum zkl__step s)
{
    return (zkl__decision){s, 0, 0, NULL};
}
/* ZooKeeper's codes, classed (lib/util/zkcode.c). */
int zkl__zk_class(int rc);
bool zkl__zk_conn_error(int rc);
bool zkl__zk_session_error(int rc);

static inline zkl__decision zkl__cnode_do_err(enum zkl__step s, int zk_rc)
{
    return (zkl__decision){s, zkl__zk_class(zk_rc), zk_rc, NULL};
}

static inline zkl__decision zkl__cnode_do_code(enum zkl__step s, int err)
{
    return (zkl__decision){s, err, 0, NULL};
}

static inline bool current(const zkl__cnode *n)
{
    return n->gen == n->core->gen && !n->core->closing;
}

/* The attempt is given up (its caller left, or it failed): a node of it
 * that is found is deleted, never waited on. */
static inline bool abandoned(const zkl__cnode *n)
{
    return n->caller == ZKL__C_LEFT || n->caller == ZKL__C_GONE || n->err != 0;
}

/* ---- core.c (the store) and names.c (names) ---- */
void *zkl__core_malloc(struct zkl__core *k, size_t size);
void *zkl__core_calloc(struct zkl__core *k, size_t n, size_t size);
void *zkl__core_realloc(struct zkl__core *k, void *p, size_t size);
char *zkl__core_strdup(struct zkl__core *k, const char *s);
/* Send action a for n: ZOK (an answer is counted on) or the send's code. */
int zkl__core_send(zkl__cnode *n, zkl__act *a);
/* Tell the shell something that sends nothing. */
void zkl__core_tell(zkl__cnode *n, enum zkl__act_type type);
/* A move that a state table forbids was asked for (n may be NULL): the
 * shell is told, never the process aborted (a bug of the engine's must not
 * take the user's program down). */
void zkl__core_broken(struct zkl__core *k, zkl__cnode *n, const char *what, int from, int to)
    ZKL__COLD;
/* A node name's room: "_c_", a uuid, "-", a kind and 10 digits. */
#define ZKL__NAME_BUF 160
/* The name watched in slot, or NULL (formatted into buf if need be). */
const char *zkl__watch_name(const zkl__cnode *n, int slot, char buf[ZKL__NAME_BUF]);
/* Our node's name, or NULL while its sequence is not known: the copy kept
 * (zkl__core_name), or else written into buf. Use what it returns. */
const char *zkl__core_own(const zkl__cnode *n, char buf[ZKL__NAME_BUF]);
/* The path of the node to create, dir/_c_<uuid>-<kind><seq> (seq "" for
 * the server's), into path, cut as snprintf would cut it. */
void zkl__cnode_create_path(const zkl__cnode *n, const char *seq, char *path, size_t size);
/* The sequence of a name of ours (its last 10 digits), or -1. */
int32_t zkl__core_seq(const char *name);
/* `name` as a peer of n's kind, if it is one exactly (true), and back. */
bool zkl__core_peer(const zkl__cnode *n, const char *name, zkl__peer *p);
/* Two peers are one node (of one kind, as a node's peers are). */
static inline bool zkl__core_same_peer(const zkl__peer *a, const zkl__peer *b)
{
    return a->seq == b->seq && memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0;
}
const char *zkl__core_peer_name(const zkl__cnode *n, const zkl__peer *p, char buf[ZKL__NAME_BUF]);
/* A watch event's path, taken apart once for all the nodes it is held
 * against: its lock path (if interned: a node of ours may be under it),
 * and its name as a peer (a protected name: its uuid and sequence). */
struct zkl__target {
    const struct zkl__dir *dir;  /* the interned parent, or NULL */
    const struct zkl__dir *self; /* the path itself as an interned lock path, or NULL */
    const char *name;            /* after the last '/' */
    int32_t seq;                 /* -1: not a protected name */
    const char *uuid;            /* its uuid's text, within name (seq >= 0), unchecked */
    const char *kind;            /* its kind, within name (seq >= 0) */
    size_t kindlen;
};
/* Whether the target is our own node, or a peer of our kind, or `name`
 * (any name) in n's lock path. */
bool zkl__core_is_own(const zkl__cnode *n, const struct zkl__target *t);
bool zkl__core_is_peer(const zkl__cnode *n, const struct zkl__target *t, const zkl__peer *p);
bool zkl__core_is_named(const zkl__cnode *n, const struct zkl__target *t, const char *name);
/* Take a watch event's path apart (feed.c). */
void zkl__core_target(const struct zkl__core *k, const char *path, struct zkl__target *t);
/* The held node whose own node is the target's path (its path `path`), or NULL. */
zkl__cnode *zkl__core_held_find(const struct zkl__core *k, const char *path,
                                const struct zkl__target *t);
/* Free the core's own memory (zkl__core_free, once the rest is gone). */
void zkl__core_release(struct zkl__core *k);
/* The full path of `name` in n's lock path, in buf (ZKL__MAX_PATH + 96). */
const char *zkl__core_full(const zkl__cnode *n, const char *name, char *buf);
void zkl__core_route(zkl__cnode *n, enum zkl__core_route to);
void zkl__core_new_uuid(zkl__cnode *n);
/* Forget n's node name (its sequence), leaving the held index first. */
void zkl__core_unname(zkl__cnode *n);
/* n's node has sequence seq (< 0: none): its name, written, is kept. */
void zkl__core_name(zkl__cnode *n, int32_t seq);
struct zkl__dir *zkl__core_dir_get(struct zkl__core *k, const char *path);
/* A path's parent (all before its last '/'; NULL without one) and the path
 * itself as interned lock paths, or NULL; *name: what follows that '/'. */
void zkl__core_dirs_of(const struct zkl__core *k, const char *path, const struct zkl__dir **parent,
                       const struct zkl__dir **self, const char **name);
void zkl__core_dir_put(struct zkl__core *k, struct zkl__dir *d);
struct zkl__cside *zkl__core_side(zkl__cnode *n); /* made on first use, or NULL */

/* ---- subs.c ---- */
/* The one function that changes the watch on its own node (n->own). */
void zkl__cnode_own(zkl__cnode *n, enum zkl__own to);
/* The one function that changes the node's listing (n->listing). */
void zkl__cnode_listing(zkl__cnode *n, enum zkl__listing to);
/* The one function that changes how the node reads the nodes ahead
 * (n->reading). */
void zkl__cnode_reading(zkl__cnode *n, enum zkl__reading to);
/* The one function that changes a watch of n's on another's node: *at is
 * n->armed[slot], or a member's of n's watch group. */
void zkl__cnode_armed(zkl__cnode *n, uint8_t *at, enum zkl__armed to);
/* A move a table forbids: reported, and a hold told lost (once). */
void zkl__cnode_broken(zkl__cnode *n, const char *what, int from, int to) ZKL__COLD;
/* Tell the node's owner its hold is lost, unless told already. */
void zkl__cnode_tell_lost(zkl__cnode *n);

/* ---- cnode.c ---- */
/* The one function that changes a node's state. */
void zkl__cnode_move(zkl__cnode *n, enum zkl__nstate to);
/* Carry out a decision. */
void zkl__cnode_apply(zkl__cnode *n, zkl__decision d, int64_t now);
void zkl__cnode_maybe_free(zkl__cnode *n);

/* ---- steps.c ---- */
void zkl__step_set_err(zkl__cnode *n, int err, int zk_rc);
void zkl__step_fail(zkl__cnode *n, int err, int zk_rc);
/* A send failed with rc (ZOK: it did not): true then. */
bool zkl__step_unsent(zkl__cnode *n, int rc);
void zkl__step_list(zkl__cnode *n);
void zkl__step_create(zkl__cnode *n);
void zkl__step_recover(zkl__cnode *n);
void zkl__step_requeue(zkl__cnode *n);
void zkl__step_delete(zkl__cnode *n, int64_t now);
void zkl__step_delete_named(zkl__cnode *n, const char *name, int64_t now);
void zkl__step_abort(zkl__cnode *n, int err, int zk_rc, int64_t now);
void zkl__step_own_gone(zkl__cnode *n);
zkl__decision zkl__step_created(zkl__cnode *n, const zkl__event *ev);
void zkl__step_deleted(zkl__cnode *n, const zkl__event *ev);
void zkl__step_leave(zkl__cnode *n, int64_t now);
void zkl__step_release(zkl__cnode *n, int64_t now);
void zkl__step_reconnect(zkl__cnode *n);
void zkl__step_session_end(zkl__cnode *n);
void zkl__step_retry(zkl__cnode *n, int64_t now);

/* ---- decide.c: it only decides ---- */
bool zkl__decide_too_big(const zkl__cnode *n, const struct String_vector *kids);
void zkl__decide_gone_clear(zkl__cnode *n);
void zkl__decide_skip_clear(zkl__cnode *n);
/* Whether n decides on the nodes nearest ahead of its own alone, in a
 * listing of cnt children. */
bool zkl__decide_nearest_only(const zkl__cnode *n, size_t cnt);
/* The contenders of a listing in order, in cs: the nearest ahead of ours
 * and ours if `me` (zkl__decide_nearest_only), else all of them sorted (cs
 * has room for kids->count). *self is our index (the count if not listed). */
size_t zkl__decide_contenders(const zkl__cnode *n, const struct String_vector *kids,
                              const zkl__entry *me, zkl__entry *cs, size_t *self, size_t *older,
                              size_t *total);
/* In recovery, a node of our lost create made past the 32-bit wrap, or NULL. */
const char *zkl__decide_wrapped(const zkl__cnode *n, const struct String_vector *kids);
/* What a listing's contenders mean for n, for act.c to carry out. */
typedef struct zkl__plan {
    zkl__decision d; /* what then, once the plan's act is done */
    enum {
        ZKL__PL_NONE,
        ZKL__PL_FIND,  /* recovery: cs[self] has our uuid: check whose it is */
        ZKL__PL_HOLD,  /* it holds (a listing of it alone is remembered: alone.c) */
        ZKL__PL_GROUP, /* watch the policy's watch group */
        ZKL__PL_WATCH  /* watch cs[w] (and with prefetch the one before it) */
    } act;
    size_t w;      /* the node to watch, as the policy said */
    bool answered; /* a try once's first answer: its caller is woken */
    bool listed;   /* listed instead of walking back: `held` says if walking served */
    bool held;
    bool first;    /* cs[w] is first, and of our kind: its going hands over */
} zkl__plan;
zkl__plan zkl__decide_on(const zkl__cnode *n, const zkl__entry *cs, size_t k, size_t self);

/* ---- act.c: a listing's answer carried out ---- */
zkl__decision zkl__act_listing(zkl__cnode *n, const struct String_vector *kids);
zkl__decision zkl__act_listed(zkl__cnode *n, int rc, const struct String_vector *kids);
zkl__decision zkl__act_found(zkl__cnode *n, const zkl__event *ev);

/* ---- walk.c ---- */
void zkl__walk_set(zkl__cnode *n, const zkl__entry *cs, size_t w, size_t k, size_t older);
void zkl__walk_clear(zkl__cnode *n);
/* What the node watched in `slot` going means: walk back (S_WALK: the
 * nearest one left is to be watched), hold (S_HOLD), or no knowledge to
 * walk on (S_LIST). It decides only; watch.c carries it out. */
typedef struct zkl__walkback {
    enum zkl__step step;
    size_t drop;         /* 1 + the index in n->ahead of the node gone (0: keep them all) */
    enum zkl__pred pred; /* the node's sub-states from now on */
    enum zkl__walk walk;
} zkl__walkback;
zkl__walkback zkl__walk_back(const zkl__cnode *n, int slot);
/* Forget n->ahead[i], gone. */
void zkl__walk_drop(zkl__cnode *n, size_t i);

/* ---- watch.c ---- */
void zkl__watch_own(zkl__cnode *n);
/* Watch `name` in slot (NULL: none). false without memory. */
bool zkl__watch_arm(zkl__cnode *n, int slot, const char *name);
/* The same in slot 0, p being name as a peer (zkl__core_peer read it). */
bool zkl__watch_arm_peer(zkl__cnode *n, const char *name, const zkl__peer *p);
bool zkl__watch_ahead(zkl__cnode *n);
void zkl__watch_off(zkl__cnode *n); /* slots and group */
bool zkl__watch_group(zkl__cnode *n, const zkl__entry *cs, size_t k, size_t self);
void zkl__watch_group_clear(zkl__cnode *n);
zkl__decision zkl__watch_answer(zkl__cnode *n, const zkl__event *ev);
zkl__decision zkl__watch_event(zkl__cnode *n, const zkl__event *ev);

/* ---- joint.c ---- */
int zkl__joint_send(zkl__cnode *n);
/* The answer to j's listing came: the listing of those who asked since
 * goes out (*sent: its send's code). The nodes the answer serves come back
 * in *served, those whose listing could not be sent in *unsent (the caller
 * frees both arrays). Returns whether j lives on (a listing in flight);
 * if not, j is freed. */
bool zkl__joint_turn(struct zkl__joint *j, zkl__cnode ***served, size_t *nserved,
                     zkl__cnode ***unsent, size_t *nunsent, int *sent);
/* n asked for the listing in flight of j. */
bool zkl__joint_asked_again(const struct zkl__joint *j, const zkl__cnode *n);
void zkl__joint_drop_all(struct zkl__core *k);

/* ---- alone.c ---- */
void zkl__alone_event(struct zkl__core *k, const char *path);
void zkl__alone_forget(struct zkl__core *k);
void zkl__alone_invalidate(struct zkl__core *k, const struct zkl__dir *dir);
void zkl__alone_seen(zkl__cnode *n, int64_t seq);
void zkl__alone_deleted(zkl__cnode *n, bool ok);
/* A create's number proves the lock path held nothing else. */
bool zkl__alone_proved(const zkl__cnode *n, int64_t want);
bool zkl__alone_take(zkl__cnode *n);
zkl__decision zkl__alone_dir_answer(zkl__cnode *n, int rc);

#endif
