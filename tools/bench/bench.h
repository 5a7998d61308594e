/* zkl-bench's parts (tools/bench/): what the workloads share. main.c reads
 * the options and runs a workload of the table (workloads.c); the workloads
 * that contend for one lock run through one runner (runner.c) over zkl_lock
 * handles, zkl's recipes and the bare-client locks (bare.c, protocol.c)
 * alike; server.c reads the servers' counters, report.c prints the line. */
#ifndef ZKL_BENCH_H
#define ZKL_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "zkl.h"
#include "zkl/zookeeper.h"

#define SESSION_TIMEOUT_MS 30000
#define HERD_SETTLE_MS 200
#define LOCK_TIMEOUT_MS 120000L

struct opts {
    const char *servers;
    const char *workload;
    int clients;
    int ops;
    int warmup;
    const char *path;
    bool prefetch;
    double read_fraction;
    int permits;
    int session_timeout_ms;
    int waiters;
    bool async;     /* queue: asynchronous requests instead of threads */
    int metrics_ab; /* > 0: that many passes with metrics on and off */
};

struct result {
    int ops;
    int64_t elapsed_ns;
    int64_t *lat; /* ops entries, ns */
    double bytes_per_lock;
    double rss_bytes_per_lock;
    double wakeups_per_handoff;
    zkl_client_stats delta;      /* summed over the sessions, over the timed part */
    int reads;                   /* rw: how many operations were reads */
    int64_t join_ns;             /* queue: from the first waiter's start until all joined */
    double bytes_per_waiter;     /* queue: heap in use per waiting contender
                                    beyond the first of each session */
    double bytes_per_waiter_all; /* ... and with the first ones: the lock
                                    path's cost per session included */
    double listing_bytes;        /* queue: one listing of the full queue */
    double join_listings;        /* queue: listings per waiter while joining */
    int64_t open_ns;             /* sessions: opening all of them */
    double bytes_per_session;    /* sessions: heap in use per open session */
    double rss_per_session;      /* sessions: resident memory per open session */
    double threads_per_session;  /* sessions: threads per open session */
    bool has_delta;
    /* the runner's handoff timeline (sums over the timed part) */
    int64_t handoffs, gap_ns, release_ns, hold_ns;
};

/* The servers' counters around the timed part (server.c). */
struct meter {
    char **servers;
    int nservers;
    bool ok;
    int64_t packets0, packets1;
    int64_t zxid0, zxid1;
};

/* The sessions a workload runs on: zkl clients, or bare ZooKeeper handles
 * (floor, chain, protocol). */
struct run {
    const struct opts *o;
    zkl_client **cs; /* [0] for one-session workloads; herd: [0] the holder */
    int ncs;
    zhandle_t **zhs;
    int nzhs;
    struct meter *meter; /* NULL for the warm-up */
};

/* What the JSON line adds for a workload (report.c). */
enum {
    OUT_HANDOFF = 1 << 0,  /* handoff_us, release_us, hold_us */
    OUT_MANY = 1 << 1,     /* bytes_per_lock, rss_bytes_per_lock */
    OUT_SESSIONS = 1 << 2, /* open_seconds, bytes/rss/threads per session */
    OUT_TENTHS = 1 << 3,   /* first_tenth_p50_us, last_tenth_p50_us */
    OUT_WAKEUPS = 1 << 4,  /* wakeups_per_handoff */
    OUT_QUEUE = 1 << 5,    /* waiters, join_*, bytes_per_waiter*, listing_bytes, async */
    OUT_PERMITS = 1 << 6,
    OUT_RW = 1 << 7, /* read_fraction, reads */
};

/* Which sessions a workload opens: one per client, one per client and the
 * holder's, or one; zkl clients or bare handles. */
enum sessions { S_CLIENTS, S_CLIENTS_AND_HOLDER, S_ONE };

struct workload {
    const char *name;
    enum sessions sessions;
    bool bare;           /* bare ZooKeeper handles, not zkl clients */
    int default_clients; /* -1: the sessions workload's own rule */
    void (*run)(struct run *r, const char *path, int ops, struct result *res);
    unsigned out;
};

extern const struct workload zkl_bench_workloads[];
extern const int zkl_bench_nworkloads;
extern const char *const zkl_bench_prog;

/* ---- common.c --------------------------------------------------------- */
_Noreturn void die(const char *what, int err);
int64_t now_ns(void);
int64_t cpu_ns(void);
void sleep_ms(int ms);
void *xcalloc(size_t n, size_t size);
long proc_status_kb(const char *field);

/* ---- meter.c ---------------------------------------------------------- */
/* For a workload that reads the heap, from main before anything else:
 * runs the program again (execv) with the heap meter preloaded, or, once
 * run so, finds it. Without it (not found, a sanitizer's allocator) the
 * heap reads 0 and the workload reports its heap figures as null. */
void heap_meter_load(char **argv);
/* Bytes of heap live in the process (heapcount.c): chunks counted as they
 * are allocated and freed, so glibc's per-thread caches of freed chunks do
 * not count as in use; 0 without the meter. */
size_t heap_in_use(void);
zkl_client *open_client_metrics(const struct opts *o, bool metrics);
zkl_client *open_client(const struct opts *o);
zkl_mutex *new_mutex(zkl_client *c, const char *path, bool prefetch);
void ensure_path(zhandle_t *zh, const char *path);
void delete_tree(zhandle_t *zh, const char *path);
/* The same through a client's session: its handle lent
 * (zkl_client_handle_borrow) for the call alone, since a loan held across a
 * run would keep the client from replacing an expired session; or die. */
void client_ensure_path(zkl_client *c, const char *path);
void client_delete_tree(zkl_client *c, const char *path);
/* A client's handle lent for a look at the server, or die; give it back
 * with zkl_client_handle_return before c waits for anything. */
zhandle_t *borrow_or_die(zkl_client *c);
void stats_add(zkl_client_stats *sum, const zkl_client_stats *a, int sign);
void stats_sum(zkl_client **cs, int n, zkl_client_stats *out);
/* Threads with small stacks: the herd runs a hundred, a queue thousands. */
void start_thread(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack);
/* The timed part's bracket: the clients' counters and the servers'. */
void run_begin(struct run *r, zkl_client_stats *before);
void run_end(struct run *r, const zkl_client_stats *before, struct result *res);

/* ---- server.c ----------------------------------------------------------- */
char **server_list(const char *servers, int *count);
void meter_begin(struct meter *m);
void meter_end(struct meter *m);

/* ---- runner.c: contenders for one lock ------------------------------------ */

/* A contender's lock: a zkl_lock handle, or two for a mix (l[1]: rw's write
 * side, taken with probability 1 - read_fraction), and the object behind
 * them, freed with free_obj after the handles. */
struct bench_lock {
    zkl_lock *l[2];
    void *obj;
    void (*free_obj)(void *obj);
};

typedef void (*lock_open_fn)(struct run *r, int i, const char *path, struct bench_lock *out);

/* Every session's contender on `path`, one thread each, draws tickets
 * until `ops` acquisitions were made, each released at once. latency =
 * acquire call to holding, or with `cycle` the whole acquire+release. */
void run_contenders(struct run *r, lock_open_fn open, const char *path, int ops,
                    struct result *res, bool cycle);
/* The operations NAME_acquire, _release, _is_held, _path and _free of a
 * lock of the benchmark's own, as NAME_ops. */
#define BENCH_LOCK_OPS(name)                                                                      \
    static const zkl_lock_ops name##_ops = {.version = ZKL_LOCK_OPS_VERSION,                       \
                                            .acquire = name##_acquire,                             \
                                            .release = name##_release,                             \
                                            .is_held = name##_is_held,                             \
                                            .path = name##_path,                                   \
                                            .free = name##_free}
/* zkl_lock_new, or die. */
zkl_lock *lock_new_or_die(const zkl_lock_ops *ops, void *self);

/* ---- the workloads -------------------------------------------------------- */
void lock_open_mutex(struct run *r, int i, const char *path, struct bench_lock *out);
void uncontended_run(struct run *r, const char *path, int ops, struct result *res);
void contended_run(struct run *r, const char *path, int ops, struct result *res);
void semaphore_run(struct run *r, const char *path, int ops, struct result *res);
void rw_run(struct run *r, const char *path, int ops, struct result *res);
void many_run(struct run *r, const char *path, int ops, struct result *res);
void sessions_run(struct run *r, const char *path, int ops, struct result *res);
void elect_run(struct run *r, const char *path, int ops, struct result *res); /* elect.c */
void elect_kill_run(struct run *r, const char *path, int ops, struct result *res); /* elect.c */
/* The leader elect-kill kills (zkl-bench --elect-child SERVERS PATH MS):
 * leads, writes "L" on stdout, waits for its SIGKILL. */
int elect_child(const char *servers, const char *path, int session_ms);
void herd_run(struct run *r, const char *path, int ops, struct result *res);
void queue_run(struct run *r, const char *path, int ops, struct result *res);
zhandle_t *bare_connect(const struct opts *o);
void floor_run(struct run *r, const char *path, int ops, struct result *res);
void chain_run(struct run *r, const char *path, int ops, struct result *res);
void protocol_run(struct run *r, const char *path, int ops, struct result *res);

/* ---- report.c ------------------------------------------------------------ */
/* Run one workload on `path` with `ops` operations into res (res->lat
 * malloc'd: free it). */
void run_once(struct run *r, const struct workload *w, const char *path, int ops,
              struct result *res);
void report(const struct opts *o, const struct workload *w, const struct meter *m,
            struct result *res);
int cmp_i64(const void *a, const void *b);
long long percentile_us(const int64_t *sorted, int n, double p);
void json_num(const char *key, double v, int decimals);
double median(double *v, int n);

/* ---- ab.c ---------------------------------------------------------------- */
int metrics_ab(const struct opts *o, const struct workload *w, int nsessions);

#endif
