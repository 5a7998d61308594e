/* The simulation's driver: simulated clients of zkl in virtual time, each a
 * zsim session with the real engine core (lib/engine/core/) behind a shell
 * that does what lib/engine/shell.c and lib/session/ do, and workers that
 * run every recipe as lib/front/ and recipes/ do; the invariants checked at
 * every step; the tape that replays and shrinks a run. docs/simulation.md
 * says what it covers and what it leaves out.
 *
 *   drv_shell.c    the core's sink: actions to zsim requests (tags name the
 *                  node and the kind of answer), answers and watch events
 *                  back to the core (lib/engine/shell.c)
 *   drv_session.c  a client's session: states, keepalive, the loss rule
 *                  (lib/util/loss.c), re-open (lib/session/)
 *   drv_wait.c     blocking calls: the wait on a node's verdict, leaving on
 *                  failure with the grace for the delete, release
 *                  (lib/front/wait.c); a thread's holds (lib/kit/holds.c);
 *                  requests with a deadline (lib/kit/calls.c, znode.c)
 *   drv_async.c    asynchronous requests through the core's request machine
 *                  (lib/front/async.c, request.c; the semaphore's and the
 *                  multi-lock's steps)
 *   drv_recipes.c  what a worker does: every recipe, blocking and
 *                  asynchronous, holds, reentry, downgrade, cancel
 *   drv_latch.c    a client's leader latch: joins, rejoins, leaves
 *                  (recipes/latch.c), and its invariants
 *   drv_check.c    the invariants
 *   drv_tape.c     the tape of a schedule's steps and faults; shrinking
 *   drv_run.c      one schedule: the world, its clients, the steps, the end
 *   sim_locks.c    the program: seeds, events, schedules, mutants
 *
 * Everything is single-threaded and virtual: one world per schedule, time
 * in ns. A "thread" of the library is a state machine here, resumed when
 * what it waits on happens. */
#ifndef SIM_DRV_H
#define SIM_DRV_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "areq.h"
#include "kit.h"
#include "zsim.h"

#define MS ((int64_t)1000000)
#define DRV_NAME 160 /* a node name's room: "_c_", a uuid, "-", a kind, 10 digits */
#define SEC ((int64_t)1000000000)

/* ---- lock paths, and what each allows ------------------------------------ */

enum { P_A, P_B, P_RW, P_SEM, P_Q, P_LATCH, NPATHS };
extern const char *const drv_paths[NPATHS];
#define SEM_MAX 3
#define SEM_DATA "max_leases=3"

/* A hold's kind, for the holders' count. */
enum hkind { HK_EXCL, HK_READ, HK_WRITE, HK_LEASE };

struct drv;
struct dcl;
struct dwk;
struct dreq;

/* Whoever waits on a node (a blocking worker or an asynchronous request):
 * woken by the core's ZKL__A_WAKE, run once the current event is done. */
struct dwait {
    void (*run)(struct dwait *w);
    struct dwait *next; /* the client's run list */
    bool queued;
};

/* One hold, as its owner believes it: from the grant (the acquire returned
 * 0, or the callback said held) until the release call starts, its loss is
 * told, or its client closes. */
struct dhold {
    struct dcl *cl;
    int owner;         /* worker id, or 1000 + request id */
    int path;          /* P_... */
    enum hkind kind;
    int leases;        /* HK_LEASE: how many */
    struct dnode *n;
    int64_t token;
    int64_t granted;   /* virtual ns */
    int sess;          /* its session's index in the world */
    bool live;
    struct dhold *next;
};

/* A node of the core, and what the shell keeps beside it (zkl__node). */
typedef struct dnode {
    zkl__cnode cn; /* first: the core's part */
    struct dcl *cl;
    uint32_t uid;
    struct dwait *waiter;  /* woken by ZKL__A_WAKE, or NULL */
    struct dhold *hold;    /* the hold it carries, or NULL */
    bool hooks;            /* the owner's lost hook is on */
    bool granted;          /* the core put it in ZKL__N_HELD once */
    bool ever_held;        /* its owner had a hold on it */
    uint8_t lost_told;
    int path;
    int sess;              /* the world's index of its session, once named */
    int64_t deleted_at;    /* the leader deleted its node (0: not) ... */
    int64_t deleted_zxid;
    bool deleted_by_other; /* ... someone else than its own session's request,
                              or a forced expiry */
    bool deleted_expired;  /* ... the leader expired its session */
    bool deleted_held;     /* ... by its own session while its owner believed it held */
    int64_t owner;         /* its ephemeral owner, as the server said (shell.c) */
    char name[DRV_NAME]; /* its node's name once known */
    struct dnode *hnext;   /* d->byname */
} dnode;

/* A request of the client's in flight: what its answer is for. */
enum slot_kind { SL_NODE, SL_JOINT, SL_KEEP, SL_CALL, SL_ASYNC_FILL };
struct dslot {
    uint8_t kind;
    uint8_t act;   /* zkl__act_type for SL_NODE */
    int8_t wslot;  /* ZKL__A_WATCH_AHEAD: 0 or 1 */
    bool used;
    dnode *n;
    struct zkl__joint *j;
    void *p;       /* a worker or a request for SL_CALL / SL_ASYNC_FILL */
    uint64_t seq;  /* SL_KEEP: the keepalive's number; SL_CALL: the call's */
    int id;        /* SL_ASYNC_FILL: the request's */
    uint32_t next_free;
};

/* ---- workers ----------------------------------------------------------------- */

/* Reentrant objects of a client (each holds per worker, as per thread). */
enum { O_MX, O_PF, O_MB, O_MLA, O_MLB, O_RD, O_WR, NOBJ };

/* What a blocking call waits for. */
enum wphase {
    W_NONE,
    W_SLEEP,   /* a timer */
    W_REOPEN,  /* wait_reopened: a new session, or the deadline */
    W_ACQ,     /* the node's verdict */
    W_SETTLE,  /* a failed attempt's delete, for the grace */
    W_REL,     /* a release's delete */
    W_CALL,    /* a request's answer, or the deadline */
    W_ASYNC    /* asynchronous requests of its own */
};

/* One engine wait (zkl__wait_acquire), its options (zkl__qopts). */
struct ew {
    const zkl__policy *pol;
    const void *arg;
    bool prefetch;
    const char *fixed_seq;
    const char *kind;
    dnode *within;
    bool hooks;
    int path;
    int64_t deadline, wait_until, grace;
    int64_t call_deadline; /* a request's (lib/kit/calls.c) */
    int grace_rc;          /* the failed attempt's result, or a release's */
    dnode *n;
};

/* A request sent by a blocking call (lib/kit/calls.c): one at a time. */
struct dcall {
    uint64_t seq;      /* its slot's number: a later answer is ignored */
    bool done;
    int rc;
    char data[64];
    int len;
    int32_t version;
};

struct dwk {
    struct dwait wt;
    struct dcl *cl;
    int id;
    int op, pc;
    bool busy;          /* an op in progress */
    bool in_flow;
    enum wphase phase;
    int rc;             /* the last primitive's result */
    int op_rc;          /* the operation's, while undoing */
    int64_t deadline;   /* the op's */
    long timeout_ms;
    bool cancel_fired;  /* its cancel handle fired */
    bool cancellable;
    int64_t timer_at;   /* the worker's timer, and its generation */
    uint32_t tgen;
    int64_t cancel_at;
    uint32_t cgen;
    int64_t call_started; /* an acquire's start: it must end by its bound */
    int64_t bound;        /* ... this */
    struct ew ew;
    int ewpc;           /* where in the engine wait */
    int prim;           /* which primitive runs */
    int obj;            /* the holds primitive's object */
    dnode *node;        /* a primitive's node */
    /* per thread: the reentrant holds (holds.c's records) */
    long count[NOBJ];
    dnode *held[NOBJ];
    long ml_count;      /* the multi-lock's own count */
    int ml_got;
    int reenter;        /* inner acquires to do */
    bool downgrade;
    /* semaphore */
    dnode *gate, *lease;
    int leases;
    struct dcall chk;   /* the limit read sent ahead of the gate */
    struct dcall call;
    struct zkl__gate_arg ga;
    char kind[32], seq[11];
    int fill_tries, fill_pc;
    /* asynchronous requests it runs */
    struct dreq *reqs;
    int nreqs;
    bool read_down;     /* the downgrade flag a read node's policy reads */
};

/* ---- clients ---------------------------------------------------------------- */

#define DRV_WORKERS 6

/* A client's leader latch (recipes/latch.c's struct zkl_latch): the
 * request taking part now, the one it leads on, what its listener was told
 * last; a timer (TM_LATCH) makes it join or leave. */
struct dlatch {
    bool started;        /* joined, not closed */
    struct dreq *cur;    /* taking part now, or NULL (no session) */
    struct dreq *lead;   /* leading on, or NULL */
    int64_t cur_sid;     /* the session cur was started in */
    int told;            /* the listener's last value */
    int err;             /* what ended taking part for good */
    uint32_t tgen;       /* its join-or-leave timer's generation */
    int joins;           /* requests it started */
    struct dreq *held[8]; /* held results delivered, their callbacks not run yet */
    int nheld;
};

struct dcl {
    struct drv *d;
    int ix;              /* its place in d->cl[] */
    int serial;          /* the how-many-th client in that place */
    struct zkl__core *core;
    zsim_session *s;     /* the live handle, or NULL */
    zsim_session *old;   /* a handle being closed (zookeeper_close runs) */
    int state;           /* ZKL_STATE_... */
    uint64_t gen;
    int64_t sid;
    int timeout_ms, negotiated_ms;
    int64_t last_ok, ka_sent, ka_next, handle_started;
    uint64_t ka_seq;
    struct {
        uint64_t seq, gen;
        int64_t sent;
    } ka_ring[16];
    bool need_reopen, closing, cancelled, retiring, gone, started;
    int64_t keeper_at;   /* the keeper's timer, and its generation */
    uint32_t kgen;
    struct dslot *slots;
    uint32_t nslots, cap, free_slot;
    uint64_t call_seq;
    struct dwait *run, *run_tail;
    struct dwk wk[DRV_WORKERS];
    int nwk;
    dnode *sm_node;      /* the semaphore-mutex object's hold */
    bool sm_acquiring;
    int64_t rate_sec;
    uint32_t rate_n;
    uint32_t rate_ups;   /* connections up again in that second, */
    uint32_t rate_allow; /* ... and the requests they allow besides */
    uint64_t sent;
    struct dreq *reqs;   /* its live asynchronous requests */
    struct dlatch latch;
    /* time faults: the whole process paused, its callbacks blocked, its
     * keeper's ticks late (by late_ns), each until the time given */
    int64_t paused_until, blocked_until, late_until, late_ns;
    int64_t link_back;   /* when its silent link last came back */
    int unheard;         /* F_UNHEARD: keepalives it sends unheard from its next one on */
    int unheard_left;
};

/* ---- asynchronous requests ---------------------------------------------------- */

enum { AQ_MUTEX, AQ_READ, AQ_WRITE, AQ_SEM, AQ_MULTI, AQ_BURST, AQ_LATCH };

struct dreq {
    zkl__areq m;          /* the core's machine */
    struct dwait wt;
    struct dcl *cl;
    struct dwk *wk;
    int id;
    int kind;             /* AQ_... */
    int path;             /* of its first node */
    zkl__cnode *kept[2];
    bool in_look, ready, done, freed;
    bool delivered_held;
    int64_t due;          /* its timer (the deadline, or the cleanup's end) */
    uint32_t tgen;
    int64_t release_at;   /* held: released then */
    int64_t cancel_at;
    int64_t started, bound;
    int result;
    struct dhold *hold[2];
    /* steps */
    int step;             /* the multi-lock's member, the semaphore's stage */
    struct zkl__gate_arg ga;
    char kind_s[32];
    struct dcall chk;     /* the limit read sent ahead */
    int lim;              /* 0 peek, 1 asked, 2 ok */
    int lim_rc;
    uint64_t fill_seq;
    int fill_tries;
    dnode *lease;
    struct dreq *next, *wnext;
};

/* ---- the run of one schedule --------------------------------------------------- */

/* What the driver knows of each session of the world. */
struct sinfo {
    zsim_session *s;
    struct dcl *owner;  /* our client's, or NULL */
    bool forced;        /* the world expired it by force (a fault) */
    bool closed;        /* our client closed it */
    int64_t forced_at;
};
struct sinfo *drv_sinfo(struct drv *d, int ix);

#define DRV_CLIENTS 5

/* A violation: its kind (for the shrinker: the same kind must remain) and
 * what happened. */
struct violation {
    int kind;
    int64_t step;
    bool settling;  /* found once the faults ended: the tape is not cut */
    char text[512];
};
enum { V_HOLDERS = 1, V_BASIS, V_TOLD, V_EXPIRED, V_TOKEN, V_TWICE, V_STRAY_LOSS, V_DEADLINE,
       V_ORPHAN, V_RATE, V_LOST_LIVE, V_STUCK, V_LEFT, V_KEPT, V_TABLE, V_LOST_GRANT, V_PROMPT,
       V_PRED, V_ABSENT, V_SESSION, V_SPIN, V_NKINDS };
extern const char *const violation_names[V_NKINDS];

/* One step of a tape: the seed of the world's choices for it, and a fault
 * injected before it. */
enum fault_kind { F_NONE, F_DROP, F_LINK, F_PARTITION, F_FREEZE, F_EXPIRE, F_OUTSIDER, F_RETIRE,
                  F_AIM, F_CROWD, F_PAUSE, F_BLOCK, F_LATE, F_FAILOVER, F_LEADER_PAUSE,
                  F_LEADER_SLOW, F_UNHEARD, F_NKINDS };
struct tape_step {
    uint64_t seed;
    int64_t orig;     /* its place in the tape made from the seed */
    uint8_t fault;
    uint8_t target;   /* a client (or a server) */
    int8_t a, b;      /* drop: applied, received; link: how */
    int64_t len;      /* a timed fault's length */
};
struct tape {
    uint64_t seed;     /* the schedule's */
    int64_t limit;     /* steps of a tape made from the seed */
    struct tape_step *v;
    size_t n, cap;
    uint64_t workers;  /* which workers may start operations (a mask) */
    bool explicit_;    /* v holds the steps; else they come from the seed */
};

struct drv_stats {
    int64_t virtual_ns;
};
struct drv_opts {
    struct drv_stats *stats;
    int64_t steps;      /* of the main phase */
    bool trace;         /* print a line per event */
    FILE *out;
};

struct drv {
    zsim_world *w;
    const struct tape *tape;
    const struct drv_opts *o;
    int64_t step;       /* steps taken */
    int64_t basis;      /* the zxid behind the item being handled (0: none) */
    int64_t events;     /* world steps (the count the summary reports) */
    bool settling;
    struct dcl *cl[DRV_CLIENTS];
    int nclients;
    int serials;
    uint32_t uids;
    int req_ids;
    struct dnode **byname; /* named nodes by full path */
    size_t nbuckets, nnamed;
    struct dhold *holds;   /* live holds */
    struct dhold *ended;   /* and those that ended */
    int64_t max_excl[NPATHS]; /* tokens: the largest exclusive one granted */
    int64_t lead_back;        /* when the leader's last stall (election, pause, slowness) ends */
    int64_t lead_back_was;    /* ... and the one before, when the last began after it ended */
    struct sinfo *sess;    /* by the world's session index */
    size_t nsess;
    struct violation v;
    bool violated;
    bool stop;            /* a violation: stop at once */
    uint64_t acquisitions, failures, losses;
    int64_t max_rate;
    bool swarm_on;        /* the watches world: */
    int swarm_client;     /* ... the client of the swarm, */
    int swarm_left;       /* ... its requests still to start, */
    int64_t swarm_next;   /* ... and when the next one starts */
};

/* drv_run.c */
int drv_run(const struct tape *t, const struct drv_opts *o, struct violation *v, int64_t *events,
            uint64_t *acquisitions);
void drv_trace(struct drv *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void drv_violation(struct drv *d, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
uint64_t drv_mix(uint64_t x);
struct dcl *drv_client_new(struct drv *d, int ix);
void drv_client_free(struct dcl *c);

/* drv_shell.c */
int drv_sink(void *ctx, const zkl__act *a);
void drv_item(struct dcl *c, const struct zsim_item *it);
uint32_t drv_slot_new(struct dcl *c, uint8_t kind);
void drv_slot_free(struct dcl *c, uint32_t i);
uint64_t drv_tag(struct dcl *c, uint32_t slot);
#define DRV_WATCHER(c) (((uint64_t)(c)->ix + 1) << 48 | 0xfffffffeu)
#define DRV_SESSION_WATCHER(c) (((uint64_t)(c)->ix + 1) << 48 | 0xffffffffu)
/* A driver timer's tag: the client's place and serial, what for, whose,
 * and a generation (a timer pushed again makes the earlier one stale). */
#define DRV_TIMER(c, kind, who, gen)                                                            \
    ((uint64_t)((c)->serial & 0xff) << 56 | ((uint64_t)(c)->ix + 1) << 48 |                   \
     (uint64_t)(kind) << 40 | (uint64_t)((who) & 0xffff) << 24 | ((gen) & 0xffffff))
enum { TM_KEEPER = 1, TM_WORKER, TM_CANCEL, TM_REQ, TM_HEAL_LINK, TM_HEAL_CUT, TM_THAW, TM_LATCH,
       TM_DRAIN, TM_RESUME, TM_HEAL_ARM };
void drv_run_woken(struct dcl *c);
void drv_wake(struct dcl *c, struct dwait *w);
void drv_unwake(struct dcl *c, struct dwait *w);
dnode *drv_node_new(struct dcl *c, int path);
void drv_name_node(struct drv *d, dnode *n);
void drv_unname_node(struct drv *d, dnode *n);
dnode *drv_find_node(struct drv *d, const char *path);
void drv_count_request(struct dcl *c);

/* drv_session.c */
void drv_session_start(struct dcl *c);
void drv_session_event(struct dcl *c, zsim_session *s, int state);
void drv_keeper(struct dcl *c);
bool drv_give_up_due(struct dcl *c, int64_t now);
void drv_keeper_kick(struct dcl *c, int64_t at);
void drv_keepalive_done(struct dcl *c, const struct dslot *sl, const struct zsim_item *it);
void drv_client_cancel(struct dcl *c);
void drv_client_close(struct dcl *c);
void drv_old_handle(struct dcl *c);
bool drv_connected(const struct dcl *c);
void drv_hold(struct dcl *c);
void drv_wake_all(struct dcl *c);

/* drv_wait.c */
void wk_timer(struct dwk *w, int64_t at);
void wk_call_answer(struct dwk *w, const struct dslot *sl, const struct zsim_item *it);
void dcall_answer(struct dcall *call, const struct zsim_item *it);
void ew_begin(struct dwk *w);
void ew_release(struct dwk *w, dnode *n);
void ew_leave(struct dwk *w, dnode *n, bool wait);
void wk_sleep(struct dwk *w, int64_t ns);
void wk_call(struct dwk *w, struct dcall *call, int what, const char *path, const char *data,
             int version, bool wait);
void holds_acquire(struct dwk *w, int obj);
void holds_release(struct dwk *w, int obj);
bool node_held(const dnode *n);
void wk_resume(struct dwait *wt);
void wk_fire(struct dwk *w);
enum { CALL_GET, CALL_SET, CALL_CREATE, CALL_ANCESTOR };

/* drv_recipes.c */
void wk_flow(struct dwk *w);
void wk_start(struct dwk *w);
const char *op_name(int op);

/* drv_async.c */
struct dreq *aq_start(struct dwk *w, int kind, long timeout_ms, int64_t hold_ns, int64_t cancel_ns);
void aq_timer(struct dreq *r, uint32_t gen);
void aq_fill_answer(struct dreq *r, const struct dslot *sl, const struct zsim_item *it);
void aq_call_answer(struct dreq *r, const struct dslot *sl, const struct zsim_item *it);
void aq_close_all(struct dcl *c);
void aq_free_all(struct dcl *c);
struct dreq *aq_by_id(struct dcl *c, int id);
struct dreq *aq_start_latch(struct dcl *c);
struct dreq *aq_start_swarm(struct dcl *c, int kind, long timeout_ms, int64_t hold_ns);
void aq_free(struct dreq *r);

/* drv_latch.c */
void latch_begin(struct dcl *c);
void latch_timer(struct dcl *c, int who, uint32_t gen);
void latch_result(struct dreq *r, int result);
void latch_session(struct dcl *c);
void latch_close(struct dcl *c);
bool latch_node_settled(const struct dcl *c, const dnode *n);
bool latch_settled(const struct dcl *c, char *why, size_t size);
bool latch_takes_part(const struct dcl *c, const char *name);
void latch_check_ahead(struct drv *d, const dnode *n, const char *ahead);
void latch_check_quiet(struct drv *d);

/* drv_check.c */
void check_grant(struct drv *d, dnode *n, int owner, enum hkind kind, int leases);
void check_end(struct drv *d, struct dhold *h, const char *why);
void check_basis(struct drv *d, dnode *n);
void check_lost(struct drv *d, dnode *n);
void check_step(struct drv *d);
void check_freed(struct drv *d, dnode *n);
void check_change(void *arg, const struct zsim_change *c);
void check_named(struct drv *d, dnode *n);
void check_acquire_end(struct drv *d, struct dcl *c, int64_t started, int64_t bound, int rc,
                       uint64_t gen, const char *what);
void check_quiet(struct drv *d, struct dcl *c);
void check_rate(struct dcl *c);
void check_rate_up(struct dcl *c);
void check_prompt(struct drv *d, struct dcl *c, const zkl__cnode *n, int64_t started);
bool check_stood(const struct dcl *c, int64_t since);

/* drv_tape.c */
void tape_init(struct tape *t, uint64_t seed, int64_t steps);
void tape_free(struct tape *t);
struct tape_step tape_at(const struct tape *t, int64_t i, bool *end);
void tape_materialize(struct tape *t, int64_t steps);
int tape_shrink(struct tape *t, const struct drv_opts *o, int kind, int budget);
void tape_print(const struct tape *t, FILE *out);
int tape_parse(struct tape *t, const char *text);
const char *fault_name(int kind);
int tape_set_mix(const char *spec);
int32_t tape_cversion_start(const struct tape *t);
void drv_unheard_sent(struct dcl *c);
int64_t tape_ping_phase(const struct tape *t, int64_t half_tick);
int tape_swarm(const struct tape *t);

#endif
