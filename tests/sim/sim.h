/* The model's own declarations, shared by its files and by no one else:
 *
 *   tests/sim/tree.c     znodes: the hash map of paths, children, ACLs,
 *                        applying a transaction to one server's tree
 *   tests/sim/prep.c     the leader's checks of a write (change records, as
 *                        the server's PrepRequestProcessor keeps them) and
 *                        the transaction it makes; paths the server refuses
 *   tests/sim/server.c   servers: the log, followers applying it, taking
 *                        requests
 *   tests/sim/leader.c   the leader's session tracker and container sweep
 *   tests/sim/watches.c  the watches a server keeps for its connections
 *   tests/sim/requests.c the handle's requests (zoo_a*), their sizes
 *   tests/sim/items.c    items, the session's inbox, the client's watch tables
 *   tests/sim/client.c   what libzookeeper_mt does for a handle: connecting,
 *                        pings, timeouts, losing a connection, expiry
 *   tests/sim/world.c    the world, its timers and its scheduler; faults
 *   tests/sim/outsider.c outsiders, the truth, names of codes
 *   tests/sim/digest.c   SHA-1 and base64, for digest identities
 *
 * Everything is single-threaded; nothing depends on an address (hash maps
 * hash strings, sets keep indexes), so a seed replays the same run. */
#ifndef ZSIM_SIM_H
#define ZSIM_SIM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsim.h"

/* ---- memory: the model aborts when out of it (it is a test tool) -------- */

void *sim_alloc(size_t n);            /* zeroed */
void *sim_grow(void *p, size_t n);    /* realloc */
char *sim_strdup(const char *s);
char *sim_memdup(const char *s, size_t n); /* n bytes and a NUL */
#define SIM_GROW(v, n, cap)                                                   \
    do {                                                                      \
        if ((n) >= (cap)) {                                                   \
            (cap) = (cap) ? (cap) * 2 : 8;                                    \
            (v) = sim_grow((v), (cap) * sizeof *(v));                         \
        }                                                                     \
    } while (0)

/* A hash table of pointers by 64-bit hash: open addressing with linear
 * probing, deletion by backward shift (no tombstones), grown at 3/4 full.
 * Finding compares the hash first and asks eq only on a match. */
struct pslot {
    uint64_t hash;
    void *p;
};
struct ptab {
    struct pslot *tab;
    size_t mask, count;
};
void ptab_put(struct ptab *t, uint64_t hash, void *p);
void ptab_del(struct ptab *t, uint64_t hash, const void *p);
void *ptab_find(const struct ptab *t, uint64_t hash,
                bool (*eq)(const void *p, const void *key, size_t n), const void *key, size_t n);
void ptab_free(struct ptab *t);
#define PTAB_EACH(t, i) for (size_t i = 0; (t)->tab && i <= (t)->mask; i++) if ((t)->tab[i].p)

/* A set of small non-negative integers (session or server indexes) with
 * O(1) add, remove and pick by position. */
struct iset {
    int32_t *v;
    size_t n, cap;
    int32_t *pos; /* by member: its slot in v, or -1 */
    size_t npos;
};
void iset_add(struct iset *s, int32_t x);
void iset_del(struct iset *s, int32_t x);
bool iset_has(const struct iset *s, int32_t x);
void iset_free(struct iset *s);

/* ---- the generator: xoshiro256**, seeded through splitmix64 -------------- */

struct rng {
    uint64_t s[4];
};
void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
uint64_t rng_below(struct rng *r, uint64_t n); /* uniform in [0, n), n > 0 */

uint64_t sim_hash(const char *s, size_t n); /* FNV-1a */

/* The ephemeral owner the server stores for a container (never shown). */
#define ZSIM_CONTAINER_OWNER INT64_MIN

/* ---- ACLs and identities -------------------------------------------------- */

struct acl_ent {
    int32_t perms;
    char *scheme, *id;
};
/* An ACL as a node carries it: interned by content and shared; the few
 * distinct ACLs of a run live as long as the world. */
struct acl_list {
    uint64_t hash;
    int32_t n;
    struct acl_ent e[];
};
struct ident {
    char *scheme, *id;
};
struct idents {
    int n, cap;
    struct ident *v;
};
struct acl_table {
    struct ptab map;
};
struct acl_list *acl_intern(struct acl_table *t, const struct acl_ent *e, int n);
void acl_table_free(struct acl_table *t);
/* The server's checkACL: true if ids may do perm on a node with acl a. */
bool acl_allows(const struct acl_list *a, int perm, const struct idents *ids);
/* The server's fixupACL: the ACL a create or setACL stores, interned, or
 * NULL (ZINVALIDACL). */
struct acl_list *acl_fixup(struct acl_table *t, const struct zsim_acl_vector *v,
                           const struct idents *ids);
void idents_add(struct idents *ids, const char *scheme, const char *id);
void idents_free(struct idents *ids);
/* "user:password" -> "user:base64(sha1(user:password))"; NULL if malformed. */
char *digest_id(const char *cert);

/* ---- znodes and trees -------------------------------------------------- */

struct znode {
    char *path;
    uint32_t plen;
    uint32_t name; /* offset of the last component in path */
    uint64_t hash;
    char *data;
    int32_t dlen; /* -1: none */
    struct acl_list *acl;
    struct zsim_stat st;
    struct znode *parent;
    struct znode **kids;
    uint32_t nkids, capkids;
    uint32_t slot;      /* in parent->kids */
    uint32_t all;       /* in tree->all */
    int32_t owner;      /* an ephemeral's session index, else -1 */
    int32_t cont;       /* in tree->containers, else -1 */
    struct znode *eprev, *enext; /* the owner's ephemerals */
};

struct tree {
    struct ptab map; /* by path */
    struct znode **all;
    size_t nall, capall;
    struct znode **eph; /* first ephemeral of each session index */
    size_t neph;
    struct znode **containers;
    size_t ncont, capcont;
    int64_t zxid; /* the last transaction applied */
};

void tree_init(struct tree *t, struct acl_list *open_acl);
void tree_free(struct tree *t);
struct znode *tree_find(const struct tree *t, const char *path, size_t n);
void znode_stat(const struct znode *z, struct zsim_stat *out);
size_t parent_len(const char *path, size_t n); /* "/a/b" -> 2, "/a" -> 1 */

/* ---- transactions --------------------------------------------------------- */

enum txn_type {
    T_ERROR = 1,
    T_CREATE,
    T_DELETE,
    T_SET,
    T_SET_ACL,
    T_CHECK,
    T_MULTI,
    T_CREATE_SESSION,
    T_CLOSE_SESSION
};

struct txn {
    uint8_t type;
    bool container;
    int32_t err;        /* T_ERROR */
    char *path;
    char *data;
    int32_t dlen;
    struct acl_list *acl;   /* interned */
    int64_t owner;          /* ephemeralOwner */
    int32_t owner_ix;       /* its session index, or -1 */
    int32_t cversion;       /* create: the parent's new cversion */
    int32_t version;        /* set: new version; set_acl: new aversion */
    struct txn *sub;        /* multi */
    int32_t nsub;
    char **paths;           /* close session: the ephemerals */
    int32_t npaths;
};

struct logent {
    int64_t zxid, time_ms;
    struct txn t;
    int32_t origin;         /* session whose answer waits for it, or -1 */
    uint32_t origin_epoch;
    int32_t origin_server;
};

/* What applying a transaction to a tree may tell: the stat of a node it
 * made or changed, for the answer. */
struct apply_out {
    struct zsim_stat stat;
    bool has_stat;
};

/* Applies e to server srv's tree, firing that server's watches. The
 * per-op Stats of a multi go to outs (nsub of them) if not NULL. */
void tree_apply(zsim_world *w, int srv, const struct logent *e, struct apply_out *out,
                struct apply_out *outs);
void txn_clear(struct txn *t);

/* ---- the leader's checks ------------------------------------------------ */

/* A write checked against the leader's tree and the change records of the
 * ops before it in the same multi. On success fills the txn; else returns
 * the server's code. */
struct prep;
struct prep *prep_new(zsim_world *w);
void prep_free(struct prep *p);
void prep_reset(struct prep *p);
struct wop {
    int type; /* ZSIM_MOP_* */
    char *path;
    char *data;
    int32_t dlen;
    struct zsim_acl_vector acl; /* copied */
    struct zsim_acl *acl_ents;
    int mode;
    int version;
};
/* setACL as a write of the model (no multi op of the C client) */
#define MOP_SET_ACL 7
int prep_op(struct prep *p, const struct wop *op, zsim_session *s, struct txn *out);
/* The server's PathUtils.validatePath on a path it is given whole. */
bool server_path_ok(const char *path);
/* The C client's isValidPath. */
bool client_path_ok(const char *path, int mode);

/* ---- watches on a server -------------------------------------------------- */

enum { WK_DATA = 1, WK_CHILD = 2 };
struct wentry;
struct wreg {
    struct wentry *e;
    zsim_session *s;
    uint8_t kinds;
    struct wreg *eprev, *enext; /* on the entry */
    struct wreg *sprev, *snext; /* on the session */
};
struct wentry {
    char *path;
    size_t plen;
    uint64_t hash;
    struct wreg *head;
};
struct wtable {
    struct ptab map;
};

/* ---- servers ---------------------------------------------------------------- */

struct waitsync {
    int64_t zxid;
    int32_t s;
    uint32_t epoch;
};

struct server {
    int ix;
    struct tree tree;
    struct wtable watches;
    bool cut;     /* partitioned from the leader */
    bool frozen;
    int64_t frozen_at;
    uint64_t freeze_gen;
    bool looking; /* dropped its clients; refuses new ones */
    int64_t cut_at;
    uint64_t cut_gen;
    struct iset conn;    /* connected sessions */
    struct iset touched; /* sessions touched since the leader last heard */
    bool ping_owed;      /* a ping the leader sent while cut or stopped waits */
    struct waitsync *syncs; /* FIFO, by zxid */
    size_t sync_head, nsync, capsync;
};

/* Can the server reach the leader (for writes, syncs, touches, sessions)? */
bool server_linked(const zsim_world *w, int srv);
/* Does it answer its clients at all? */
bool server_serving(const zsim_world *w, int srv);

/* ---- items ---------------------------------------------------------------- */

struct item {
    struct zsim_item pub;
    struct item *next;
    bool done;     /* the client has seen it (effects applied) */
    bool internal; /* produced by the client (losses), not the network */
    /* an answer's effects on the client */
    uint64_t watcher;
    uint8_t wkind; /* CW_* table the watch goes to if rc allows, or 0 */
    char *wpath;
    int64_t zxid;
    /* storage behind pub's pointers */
    char *buf;
    size_t blen, bcap;
    struct zsim_stat stat;
    const char **names;
    size_t ncap;
    struct zsim_op_result *results;
    struct zsim_stat *rstats;
    size_t rcap;
    uint64_t *watchers;
    size_t wcap;
    /* offsets into buf, made pointers when the item is finished */
    int64_t off_value, off_data, off_path;
};

/* ---- requests ---------------------------------------------------------------- */

enum { RQ_QUEUED = 1, RQ_WAIT = 2 };
enum { REQ_SETWATCHES = 100, REQ_CLOSE = 101 };

struct req {
    uint64_t tag;
    int kind; /* enum zsim_req, REQ_SETWATCHES, REQ_CLOSE */
    uint8_t state;
    bool sent;     /* on the current connection */
    bool arrived;  /* at the server (the link was up) */
    bool oversize; /* larger than the servers' jute.maxbuffer */
    uint64_t watcher;
    struct wop op;      /* single ops; path for reads */
    struct wop *ops;    /* multi */
    int nops;
    int64_t size;       /* bytes on the wire */
    int64_t zxid;       /* RQ_WAIT: the zxid it waits for */
    struct item *ans;   /* RQ_WAIT: the answer, made at the leader */
    struct req *next;
};

/* ---- sessions ---------------------------------------------------------------- */

enum { CW_NODE = 1, CW_EXIST = 2, CW_CHILD = 4 };
struct cwreg {
    uint64_t tag;
    uint8_t bits;
};
struct cwentry {
    char *path;
    uint64_t hash;
    struct cwreg *v;
    int n, cap;
};
struct cwtable {
    struct ptab map;
};

struct zsim_session {
    zsim_world *w;
    int32_t ix;
    int64_t id;
    uint64_t watcher;
    int req_timeout, timeout; /* ms */
    int state;
    bool closing;      /* zsim_close called */
    bool finished;     /* closed: nothing more will come */
    int64_t close_deadline;
    /* the leader's view */
    bool alive;
    bool ever_alive;
    int64_t expire_at;
    /* the connection */
    int server;
    uint32_t epoch;
    bool link_out; /* client to server */
    bool link_in;  /* server to client */
    bool hold_items;  /* its callbacks wait (the completion thread is blocked) */
    bool stopped;     /* its own thread stands still too (the process paused) */
    int64_t link_heal_gen;
    int order[ZSIM_MAX_SERVERS];
    int nhosts, next_srv;
    bool attempting;
    int att_server;
    int64_t att_start, att_at;
    bool att_hung;
    int64_t last_send, last_recv;
    int64_t last_zxid;
    struct idents ids;
    /* requests without an answer, in order */
    struct req *rq_head, *rq_tail;
    int nreq;
    int oversize; /* arrived requests in the queue over the size limit */
    /* items sent to the client, in order; the last `held` are still on a
     * silent link */
    struct item *in_head, *in_tail;
    int nin, held;
    struct cwtable cw;
    struct wreg *regs;
    int64_t timer_at;         /* the earliest session timer pushed */
    int64_t cut_ns;           /* zsim_cut_after_sync: armed for this long */
};

/* ---- the world ---------------------------------------------------------------- */

enum timer_kind {
    TM_HALFTICK = 1,
    TM_SESSION,
    TM_CONTAINER,
    TM_DRIVER,
    TM_LINK_HEAL,
    TM_CUT_HEAL,
    TM_THAW,
    TM_SYNC_LIMIT,
    TM_ELECTED,
    TM_LEADER_RESUME,
    TM_LEADER_FAST,
    TM_EXPIRE
};
struct timer {
    int64_t at;
    uint64_t seq;
    uint8_t kind;
    int32_t a;
    uint64_t b;
};

struct zsim_world {
    struct zsim_config cfg;
    struct rng rng;
    int64_t now;
    int64_t zxid;
    int64_t next_session_id;
    struct acl_table acls;
    struct acl_list *open_acl;
    struct server srv[ZSIM_MAX_SERVERS];
    int nsrv;
    uint64_t lead_gen; /* of an election or a leader's pause (srv[0] looking or frozen) */
    bool lead_slow;    /* the leader commits nothing (a slow disk): writes and syncs wait */
    bool ping_missed;  /* a half tick's ping fell in the leader's pause: owed at its end */
    uint64_t slow_gen;
    int cut_srv;      /* a follower to cut right after this step (zsim_cut_after_sync) */
    int64_t cut_len;
    /* committed transactions not yet applied everywhere */
    struct logent *log;
    size_t log_head, log_n, log_cap;
    int64_t log_base; /* zxid of log[log_head] */
    zsim_session **sess;
    size_t nsess, capsess;
    struct iset deliver, process, apply, connecting, alive;
    struct timer *heap;
    size_t nheap, capheap;
    uint64_t timer_seq;
    struct item *free_items;
    struct item *current;      /* the item handed out last */
    struct item *tq_head, *tq_tail; /* driver timers due */
    int ntq;
    struct prep *prep;
    zsim_session *outsider;
    char *outsider_digest;    /* its credentials, for every outsider session */
    char **acl_marred;        /* nodes whose ACL an outsider changed */
    size_t nmarred, capmarred;
    struct zsim_counts counts;
    void (*trace_fn)(void *, const char *);
    void *trace_arg;
    void (*change_fn)(void *, const struct zsim_change *);
    void *change_arg;
    int32_t change_origin; /* the transaction the leader applies: its origin */
    bool change_closing;   /* ... a session's end */
    uint64_t fault_gen;
};

void sim_trace(zsim_world *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* world.c */
void timer_push(zsim_world *w, int64_t at, int kind, int32_t a, uint64_t b);
void sess_ready(zsim_session *s); /* recompute its set memberships */
void server_apply_ready(zsim_world *w, int srv);
int64_t sim_latency(zsim_world *w);

/* items (items.c) */
struct item *item_new(zsim_world *w, int kind);
void item_free(zsim_world *w, struct item *it);
char *item_str(struct item *it, const char *s, size_t n, int64_t *off);
void item_finish(struct item *it);
void itemq_push(struct item **head, struct item **tail, int *n, struct item *it);
struct item *itemq_pop(struct item **head, struct item **tail, int *n);
void sess_emit(zsim_session *s, struct item *it); /* from the server, if connected */

/* server.c, leader.c, watches.c */
int64_t commit(zsim_world *w, struct txn *t, int32_t origin, struct apply_out *out,
               struct apply_out *outs);
void server_take(zsim_world *w, zsim_session *s); /* the session's next request */
void server_take_silent(zsim_world *w, zsim_session *s, struct req *r);
void wtable_free(struct wtable *t);
void server_apply_next(zsim_world *w, int srv);
void server_touch(zsim_world *w, zsim_session *s);
void leader_touch(zsim_world *w, zsim_session *s);
void leader_expire_due(zsim_world *w);
void server_halftick(zsim_world *w);
/* The leader pings every follower: a linked one answers with its touches
 * at once, a cut one owes the answer (server_owed_pings). */
void server_ping_all(zsim_world *w);
void server_pass_touches(zsim_world *w, int srv);
void server_owed_pings(zsim_world *w, int srv);
void server_containers(zsim_world *w);
void server_drop_clients(zsim_world *w, int srv);
void server_resync(zsim_world *w, int srv);
void watch_add(zsim_world *w, int srv, zsim_session *s, const char *path, uint8_t kind);
void watch_fire(zsim_world *w, int srv, const char *path, size_t n, int type);
void watch_drop_session(zsim_world *w, zsim_session *s);
void leader_expire(zsim_world *w, zsim_session *s);
void close_txn(zsim_world *w, zsim_session *s, struct txn *t);
bool sess_processable(const zsim_session *s);
void session_alive_set(zsim_world *w, zsim_session *s, bool alive);

/* client.c */
void client_timer(zsim_session *s);
void client_lost(zsim_session *s, int rc, int applied, int received);
void client_server_closed(zsim_session *s); /* the server closed the connection */
void client_timer_update(zsim_session *s);
void client_reevaluate_attempt(zsim_session *s);
struct item *client_head(zsim_session *s); /* the next deliverable item, effects done */
void emit_session_event(zsim_session *s, int state);
void emit_loss(zsim_session *s, uint64_t tag, int kind, int rc);
void fail_queue(zsim_session *s, int rc);
void item_take(zsim_session *s, struct item *it);
struct item *inbox_pop(zsim_session *s);
/* requests.c */
struct req *req_new(int kind, uint64_t tag);
void req_arrive(zsim_session *s, struct req *r);
void req_send(zsim_session *s, struct req *r); /* queued, and sent if connected */
struct req *sess_pop(zsim_session *s);
void session_free(zsim_session *s);
void items_release(struct item *it);
void cw_free(struct cwtable *t);
void cw_add(struct cwtable *t, const char *path, uint64_t tag, uint8_t bits);
void cw_collect(struct cwtable *t, const char *path, int type, struct item *it);
void cw_all(const struct cwtable *t, uint64_t def, struct item *it);
void req_free(struct req *r);
void wop_free(struct wop *op);
void client_close_done(zsim_session *s);
int64_t req_size(const struct req *r);

/* outsider.c */
zsim_session *outsider_session(zsim_world *w);

#endif
