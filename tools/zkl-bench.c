/*
 * zkl-bench — lock benchmark for zkl, on the public API only.
 *
 *   zkl-bench --servers HOST:PORT[,...] --workload W --clients N --ops N
 *             [--warmup N] [--path /bench/x] [--prefetch]
 *             [--read-fraction F] [--permits N] [--session-timeout MS]
 *
 * Prints one JSON line on stdout, with the fields of bench/CuratorBench.java
 * and bench/kazoo_bench.py (so that bench/compare.sh can put them side by
 * side) plus zkl's own counters. Workloads:
 *
 *   uncontended  one session, one thread: `ops` acquire+release cycles of
 *                one mutex. Latency = one cycle.
 *   contended    `clients` sessions, one thread each, on one mutex path; the
 *                threads draw tickets until `ops` acquisitions were made;
 *                each acquire is followed at once by a release. Latency =
 *                from calling acquire to holding. Throughput = ops / wall.
 *   many         one session acquires `ops` distinct mutexes (PATH/0, ...),
 *                made before the timed part as every implementation does,
 *                holds them all, then releases them all. Latency = one
 *                acquire. Adds bytes_per_lock (heap in use, all arenas, per
 *                held lock, mutex objects included) and rss_bytes_per_lock.
 *   herd         one holder and `clients` waiters (default 100), each its own
 *                session and thread, queue on one lock; the holder releases
 *                and the lock passes through every waiter. ceil(ops/clients)
 *                rounds; "ops" is the number of handoffs. Latency = from the
 *                previous owner calling release to the next one holding.
 *                Adds wakeups_per_handoff: the waiters' watch_events summed,
 *                divided by the handoffs.
 *   semaphore    as contended, on a counting semaphore of --permits leases
 *                (default 2): `clients` sessions take one lease each and
 *                give it back at once, `ops` leases in all.
 *   rw           as contended, on a read-write lock: each operation is a
 *                read (with probability --read-fraction, default 0.9) or a
 *                write, acquired and released at once.
 *   floor        the bare ZooKeeper C client: an asynchronous create of an
 *                ephemeral sequential node, then its delete, each waited for:
 *                the two writes every acquire+release cycle needs at least.
 *   chain        the ideal contended lock on the bare C client, the
 *                physical limit of a handoff chain: `clients` sessions, one
 *                thread each; a contender creates lock-<seq>, waits with a
 *                data watch (no listing) until lock-<seq-1> is gone, and
 *                deletes its node: 3 requests, 2 writes per acquisition.
 *
 * contended and chain add the handoff timeline, means in µs: handoff_us
 * (from a holder calling release to the next one holding), release_us (the
 * release call: the delete's round trip) and hold_us (holding to calling
 * release). handoff_us + hold_us is one turn of the lock: ops_per_sec is
 * about 1e6 / (handoff_us + hold_us).
 *   queue        --waiters N contenders (threads with small stacks) queue
 *                on one lock behind a holder, spread over `clients` (<= 16,
 *                default 4) sessions; then the lock passes through all of
 *                them. ops = N handoffs; ops_per_sec = handoffs/s once every
 *                waiter joined. Adds join_seconds, join_us_per_waiter,
 *                join_listings_per_waiter, bytes_per_waiter (heap in use per
 *                waiting contender, its mutex object included, stacks not:
 *                what the waiters after each session's first one add, so
 *                that what a lock path costs a session once is not counted
 *                as the waiters'), bytes_per_waiter_all (the same over
 *                every waiter, those costs included),
 *                listing_bytes (one listing of the full queue as the server
 *                sends it) and wakeups_per_handoff.
 *                With --async the waiters are asynchronous requests
 *                (zkl_mutex_acquire_async, one mutex object per session,
 *                released from their callbacks) instead of threads: no
 *                thread per waiter, and bytes_per_waiter is the library's
 *                alone (the request and its node).
 *   sessions     `clients` sessions (default 500) in this one process, each
 *                a zkl client of its own: they are opened (open_seconds,
 *                bytes_per_session, threads_per_session), then each acquires
 *                a lock path of its own and holds it until all hold, then
 *                all release. ops = the sessions; latency = one acquire.
 *
 * many and sessions add first_tenth_p50_us and last_tenth_p50_us: the
 * median acquire latency of the first and of the last tenth of the
 * acquires, i.e. with few and with almost all of them held: what holding
 * more costs each acquire.
 *
 * --prefetch uses zkl_mutex_new2(..., ZKL_MUTEX_PREFETCH, ...).
 * --metrics-ab N runs the workload N times on sessions with metrics on
 * and N times on sessions with metrics off (zkl_client_opts_set_metrics),
 * alternating, and prints the medians of both (throughput, p50) and the
 * throughput ratio instead of the usual line: what collecting costs. It
 * adds the process's CPU time per operation (every thread), which a busy
 * machine disturbs far less than throughput.
 * --warmup N runs the workload untimed with N operations on PATH/warmup
 * before the timed run on PATH/timed. PATH (default /bench/zkl) is deleted
 * before and after.
 *
 * zk_requests_per_op: the servers' zk_packets_received ("mntr"), summed,
 * read just before and after the timed part: (after - before - servers) /
 * ops, as the second reading counts itself. zk_writes_per_op: the growth of
 * the servers' last zxid ("srvr") over the same part, per op: every write
 * the ensemble applied, whoever sent it.
 *
 * Exit status: 0, 1 on a failure, 2 on bad usage.
 */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "zkl.h"
#include "zkl/zookeeper.h"

#include "heapcount.h"

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
    bool async; /* queue: asynchronous requests instead of threads */
    int metrics_ab; /* > 0: that many passes with metrics on and off */
};

struct result {
    int ops;
    int64_t elapsed_ns;
    int64_t *lat; /* ops entries, ns */
    double bytes_per_lock;
    double rss_bytes_per_lock;
    double wakeups_per_handoff;
    zkl_client_stats delta; /* summed over the sessions, over the timed part */
    int reads;              /* rw: how many operations were reads */
    int64_t join_ns;        /* queue: from the first waiter's start until all joined */
    double bytes_per_waiter; /* queue: heap in use per waiting contender
                                beyond the first of each session */
    double bytes_per_waiter_all; /* ... and with the first ones: the lock
                                    path's cost per session included */
    double listing_bytes;   /* queue: one listing of the full queue */
    double join_listings;   /* queue: listings per waiter while joining */
    int64_t open_ns;        /* sessions: opening all of them */
    double bytes_per_session; /* sessions: heap in use per open session */
    double rss_per_session; /* sessions: resident memory per open session */
    double threads_per_session; /* sessions: threads per open session */
    bool has_delta;
    /* contended, chain: the handoff timeline (sums over the timed part) */
    int64_t handoffs, gap_ns, release_ns, hold_ns;
};

static const char *prog = "zkl-bench";

static void die(const char *what, int err)
{
    if (err < 0)
        fprintf(stderr, "%s: %s: %s (%s)\n", prog, what, zkl_strerror(err), zkl_err_name(err));
    else
        fprintf(stderr, "%s: %s\n", prog, what);
    exit(1);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL)
        die("out of memory", 0);
    return p;
}

/* ---- server statistics -------------------------------------------------- */

/* The host:port pairs of --servers, without a chroot. */
static char **server_list(const char *servers, int *count)
{
    char *s = strdup(servers);
    if (s == NULL)
        die("out of memory", 0);
    char *slash = strchr(s, '/');
    if (slash)
        *slash = '\0';
    char **list = NULL;
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        list = realloc(list, (size_t)(n + 1) * sizeof *list);
        if (list == NULL || (list[n] = strdup(tok)) == NULL)
            die("out of memory", 0);
        n++;
    }
    free(s);
    *count = n;
    return list;
}

/* Send a four-letter word; the whole reply (malloc) or NULL. */
static char *four_letter_word(const char *host_port, const char *word)
{
    char host[256];
    const char *colon = strrchr(host_port, ':');
    const char *port = colon ? colon + 1 : "2181";
    size_t hl = colon ? (size_t)(colon - host_port) : strlen(host_port);
    if (hl >= sizeof host)
        return NULL;
    memcpy(host, host_port, hl);
    host[hl] = '\0';
    if (host[0] == '[' && hl > 1 && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return NULL;
    int fd = -1;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
            continue;
        struct timeval tv = {.tv_sec = 5};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (write(fd, word, strlen(word)) != (ssize_t)strlen(word)) {
        close(fd);
        return NULL;
    }
    for (;;) { /* the server closes after its reply */
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                close(fd);
                return NULL;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The value of "key<ws>value" in a 4lw reply, as an integer (base 0: the
 * zxid of srvr is hexadecimal). */
static bool reply_value(const char *reply, const char *key, int64_t *out)
{
    size_t kl = strlen(key);
    for (const char *line = reply; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (strncmp(line, key, kl) == 0) {
            const char *v = line + kl;
            while (*v == ' ' || *v == '\t' || *v == ':')
                v++;
            char *end;
            errno = 0;
            long long x = strtoll(v, &end, 0);
            if (errno != 0 || end == v)
                return false;
            *out = x;
            return true;
        }
    }
    return false;
}

struct meter {
    char **servers;
    int nservers;
    bool ok;
    int64_t packets0, packets1;
    int64_t zxid0, zxid1;
};

/* Sum of zk_packets_received over the servers, and their highest zxid. */
static bool read_servers(struct meter *m, int64_t *packets, int64_t *zxid, bool packets_first)
{
    int64_t sum = 0, top = 0;
    for (int pass = 0; pass < 2; pass++) {
        bool want_packets = (pass == 0) == packets_first;
        for (int i = 0; i < m->nservers; i++) {
            char *r = four_letter_word(m->servers[i], want_packets ? "mntr" : "srvr");
            int64_t v = 0;
            bool got = r && reply_value(r, want_packets ? "zk_packets_received" : "Zxid", &v);
            free(r);
            if (!got) {
                fprintf(stderr, "%s: no %s from %s (is it whitelisted?)\n", prog,
                        want_packets ? "mntr" : "srvr", m->servers[i]);
                return false;
            }
            if (want_packets)
                sum += v;
            else if (v > top)
                top = v;
        }
    }
    *packets = sum;
    *zxid = top;
    return true;
}

/* srvr outside, mntr inside the bracket: only the second mntr counts. */
static void meter_begin(struct meter *m)
{
    m->ok = read_servers(m, &m->packets0, &m->zxid0, false);
}

static void meter_end(struct meter *m)
{
    if (m->ok)
        m->ok = read_servers(m, &m->packets1, &m->zxid1, true);
}

/* ---- small helpers ------------------------------------------------------ */

static long proc_status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    char line[256];
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
            v = strtol(line + fl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* Heap live in the process (tools/heapcount.c): chunks counted as they are
 * allocated and freed, so glibc's per-thread caches of freed chunks do not
 * count as in use; 0 under a sanitizer's allocator. */
static size_t heap_in_use(void)
{
    return zkl__heapcount_live();
}

static zkl_client *open_client_metrics(const struct opts *o, bool metrics)
{
    zkl_client_opts *co;
    int rc = zkl_client_opts_new(&co);
    if (rc != 0)
        die("zkl_client_opts_new", rc);
    if ((rc = zkl_client_opts_set_metrics(co, metrics)) != 0)
        die("zkl_client_opts_set_metrics", rc);
    zkl_client *c;
    rc = zkl_client_open_opts(o->servers, o->session_timeout_ms, co, &c);
    zkl_client_opts_free(co);
    if (rc != 0)
        die("zkl_client_open", rc);
    return c;
}

static zkl_client *open_client(const struct opts *o)
{
    return open_client_metrics(o, true);
}

static zkl_mutex *new_mutex(zkl_client *c, const char *path, bool prefetch)
{
    zkl_mutex *m;
    zkl_lock_opts *lo;
    int rc = zkl_lock_opts_new(&lo);
    if (rc == 0)
        rc = zkl_lock_opts_set_prefetch(lo, prefetch);
    if (rc == 0)
        rc = zkl_mutex_new_opts(c, path, lo, &m);
    zkl_lock_opts_free(lo);
    if (rc != 0)
        die("zkl_mutex_new_opts", rc);
    return m;
}

/* Create `path` and its ancestors as plain persistent nodes. */
static void ensure_path(zhandle_t *zh, const char *path)
{
    char *p = strdup(path);
    if (p == NULL)
        die("out of memory", 0);
    for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
        if (s)
            *s = '\0';
        int rc = zoo_create(zh, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        if (rc != ZOK && rc != ZNODEEXISTS) {
            fprintf(stderr, "%s: create %s: %s\n", prog, p, zerror(rc));
            exit(1);
        }
        if (!s)
            break;
        *s = '/';
    }
    free(p);
}

static void delete_tree(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &kids);
    if (rc == ZNONODE)
        return;
    if (rc == ZOK) {
        for (int i = 0; i < kids.count; i++) {
            char child[2048];
            snprintf(child, sizeof child, "%s/%s", path, kids.data[i]);
            delete_tree(zh, child);
        }
        deallocate_String_vector(&kids);
    }
    rc = zoo_delete(zh, path, -1);
    if (rc != ZOK && rc != ZNONODE)
        fprintf(stderr, "%s: delete %s: %s\n", prog, path, zerror(rc));
}

static void stats_add(zkl_client_stats *sum, const zkl_client_stats *a, int sign)
{
    sum->requests += (uint64_t)sign * a->requests;
    sum->creates += (uint64_t)sign * a->creates;
    sum->deletes += (uint64_t)sign * a->deletes;
    sum->listings += (uint64_t)sign * a->listings;
    sum->watch_events += (uint64_t)sign * a->watch_events;
    sum->sessions += (uint64_t)sign * a->sessions;
}

static void stats_sum(zkl_client **cs, int n, zkl_client_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++) {
        zkl_client_stats s;
        if (zkl_client_get_stats(cs[i], &s) == 0)
            stats_add(out, &s, 1);
    }
}

/* A start line for worker threads. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready;
    bool open;
};

static void gate_init(struct gate *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->ready = 0;
    g->open = false;
}

static void gate_arrive_and_wait(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->ready++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_wait_ready(struct gate *g, int n)
{
    pthread_mutex_lock(&g->mu);
    while (g->ready < n)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void gate_destroy(struct gate *g)
{
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

static void start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
    /* Small stacks: the herd runs a hundred of these. */
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    int rc = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    if (rc != 0)
        die("pthread_create failed", 0);
}

/* A thread for a queue of thousands: the least stack a blocking acquire
 * needs, so that the waiters' memory is the library's, not their stacks'. */
static void start_thread_small(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    int rc = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    if (rc != 0)
        die("pthread_create failed (raise ulimit -u?)", 0);
}

/* ---- workloads ---------------------------------------------------------- */

struct run {
    const struct opts *o;
    zkl_client **cs; /* sessions: [0] for uncontended/many; all for contended;
                        [0] holder and [1..] waiters for herd */
    int ncs;
    zhandle_t *floor_zh;
    zhandle_t **zhs; /* chain: a bare handle per client */
    int nzhs;
    struct meter *meter; /* NULL for the warm-up */
};

static void run_begin(struct run *r, zkl_client_stats *before)
{
    if (r->cs)
        stats_sum(r->cs, r->ncs, before);
    if (r->meter)
        meter_begin(r->meter);
}

static void run_end(struct run *r, const zkl_client_stats *before, struct result *res)
{
    if (r->meter)
        meter_end(r->meter);
    if (r->cs) {
        stats_sum(r->cs, r->ncs, &res->delta);
        stats_add(&res->delta, before, -1);
        res->has_delta = true;
    }
}

/* The timed part of a many-thread workload: once all n threads wait at the
 * gate, measure from opening it until the last one is done. */
static void run_gated(struct run *r, struct gate *g, pthread_t *ts, int n, struct result *res)
{
    gate_wait_ready(g, n);
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    gate_open(g);
    for (int i = 0; i < n; i++)
        pthread_join(ts[i], NULL);
    res->elapsed_ns = now_ns() - t0;
    run_end(r, &before, res);
}

static void uncontended(struct run *r, const char *path, int ops, struct result *res)
{
    zkl_mutex *m = new_mutex(r->cs[0], path, r->o->prefetch);
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    for (int i = 0; i < ops; i++) {
        int64_t a = now_ns();
        int rc = zkl_mutex_acquire(m, LOCK_TIMEOUT_MS);
        if (rc != 0)
            die("acquire", rc);
        if ((rc = zkl_mutex_release(m)) != 0)
            die("release", rc);
        res->lat[i] = now_ns() - a;
    }
    res->elapsed_ns = now_ns() - t0;
    run_end(r, &before, res);
    zkl_mutex_free(m);
}

/* One lock, one holder at a time: the holder stamps its release before
 * calling it, and the next holder reads the stamp once it holds. A handoff
 * is the gap from one holder calling release to the next one holding: the
 * delete committed, the watch delivered, whatever the next holder's
 * library does then (a listing, for zkl by default), its thread woken. */
struct handoff_clock {
    _Atomic int64_t released_at; /* 0: no release yet */
    _Atomic int64_t handoffs, gap_ns, release_ns, hold_ns;
};

static void clock_held(struct handoff_clock *hc, int64_t now)
{
    int64_t r = atomic_load(&hc->released_at);
    if (r != 0 && now > r) {
        atomic_fetch_add(&hc->handoffs, 1);
        atomic_fetch_add(&hc->gap_ns, now - r);
    }
}

/* Stamps the release (returns the stamp); clock_released adds its time. */
static int64_t clock_releasing(struct handoff_clock *hc, int64_t held_at)
{
    int64_t t = now_ns();
    atomic_fetch_add(&hc->hold_ns, t - held_at);
    atomic_store(&hc->released_at, t);
    return t;
}

static void clock_released(struct handoff_clock *hc, int64_t stamp)
{
    atomic_fetch_add(&hc->release_ns, now_ns() - stamp);
}

static void clock_result(struct handoff_clock *hc, struct result *res)
{
    res->handoffs = atomic_load(&hc->handoffs);
    res->gap_ns = atomic_load(&hc->gap_ns);
    res->release_ns = atomic_load(&hc->release_ns);
    res->hold_ns = atomic_load(&hc->hold_ns);
}

struct contender {
    zkl_mutex *m;
    struct gate *gate;
    atomic_int *tickets;
    int ops;
    int64_t *lat;
    struct handoff_clock *clock;
    int err;
};

static void *contender_main(void *arg)
{
    struct contender *k = arg;
    gate_arrive_and_wait(k->gate);
    for (;;) {
        int t = atomic_fetch_add(k->tickets, 1);
        if (t >= k->ops)
            break;
        int64_t a = now_ns();
        int rc = zkl_mutex_acquire(k->m, LOCK_TIMEOUT_MS);
        if (rc == 0) {
            int64_t held = now_ns();
            k->lat[t] = held - a;
            clock_held(k->clock, held);
            int64_t stamp = clock_releasing(k->clock, held);
            rc = zkl_mutex_release(k->m);
            clock_released(k->clock, stamp);
        }
        if (rc != 0) {
            k->err = rc;
            atomic_store(k->tickets, k->ops); /* stop the others */
            break;
        }
    }
    return NULL;
}

static void contended(struct run *r, const char *path, int ops, struct result *res)
{
    int n = r->ncs;
    struct contender *ks = xcalloc((size_t)n, sizeof *ks);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct gate g;
    gate_init(&g);
    atomic_int tickets;
    atomic_init(&tickets, 0);
    struct handoff_clock hc = {0};
    for (int i = 0; i < n; i++) {
        ks[i] = (struct contender){.m = new_mutex(r->cs[i], path, r->o->prefetch),
                                   .gate = &g,
                                   .tickets = &tickets,
                                   .ops = ops,
                                   .lat = res->lat,
                                   .clock = &hc};
        start_thread(&ts[i], contender_main, &ks[i]);
    }
    run_gated(r, &g, ts, n, res);
    clock_result(&hc, res);
    for (int i = 0; i < n; i++) {
        if (ks[i].err != 0)
            die("contended acquire/release", ks[i].err);
        zkl_mutex_free(ks[i].m);
    }
    gate_destroy(&g);
    free(ks);
    free(ts);
}

static void many(struct run *r, const char *base, int ops, struct result *res)
{
    zkl_mutex **ms = xcalloc((size_t)ops, sizeof *ms);
    char path[1100];
    /* Every implementation makes the lock paths before the timed part, so
     * that all of them time the same work: the acquires and releases. */
    for (int i = 0; i < ops; i++) {
        snprintf(path, sizeof path, "%s/%d", base, i);
        ensure_path(zkl_client_handle(r->cs[0]), path);
    }
    /* Let the allocator settle what the setup left, then measure. */
    malloc_trim(0);
    size_t heap0 = heap_in_use();
    long rss0 = proc_status_kb("VmRSS");
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    for (int i = 0; i < ops; i++) {
        snprintf(path, sizeof path, "%s/%d", base, i);
        ms[i] = new_mutex(r->cs[0], path, r->o->prefetch);
        int64_t a = now_ns();
        int rc = zkl_mutex_acquire(ms[i], LOCK_TIMEOUT_MS);
        if (rc != 0)
            die("acquire", rc);
        res->lat[i] = now_ns() - a;
    }
    int64_t t1 = now_ns();
    size_t heap1 = heap_in_use();
    long rss1 = proc_status_kb("VmRSS");
    int64_t t2 = now_ns();
    for (int i = 0; i < ops; i++) {
        int rc = zkl_mutex_release(ms[i]);
        if (rc != 0)
            die("release", rc);
    }
    int64_t t3 = now_ns();
    res->elapsed_ns = (t1 - t0) + (t3 - t2);
    run_end(r, &before, res);
    for (int i = 0; i < ops; i++)
        zkl_mutex_free(ms[i]);
    free(ms);
    /* The heap reads zero under an allocator of a sanitizer's own: no heap
     * figure then rather than a wrong one. */
    res->bytes_per_lock = heap1 == 0 ? NAN : ((double)heap1 - (double)heap0) / ops;
    res->rss_bytes_per_lock = ((double)rss1 - (double)rss0) * 1024.0 / ops;
}

struct herd_shared {
    _Atomic int64_t last_release; /* when the previous owner called release */
    _Atomic int64_t last_done;
    atomic_int slot;
    int64_t *lat;
};

struct waiter {
    zkl_mutex *m;
    struct herd_shared *sh;
    int err;
};

/* A waiter holds: its wait since the previous release is one handoff. */
static void handoff_seen(struct herd_shared *sh)
{
    sh->lat[atomic_fetch_add(&sh->slot, 1)] = now_ns() - atomic_load(&sh->last_release);
    atomic_store(&sh->last_release, now_ns());
}

/* A waiter is done: the latest such moment ends the timed part. */
static void waiter_done(struct herd_shared *sh)
{
    int64_t done = now_ns();
    int64_t prev = atomic_load(&sh->last_done);
    while (done > prev && !atomic_compare_exchange_weak(&sh->last_done, &prev, done))
        ;
}

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    int rc = zkl_mutex_acquire(w->m, LOCK_TIMEOUT_MS);
    if (rc != 0) {
        w->err = rc;
        return NULL;
    }
    handoff_seen(w->sh);
    rc = zkl_mutex_release(w->m);
    if (rc != 0)
        w->err = rc;
    waiter_done(w->sh);
    return NULL;
}

static int count_children(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    if (zoo_get_children(zh, path, 0, &kids) != ZOK)
        return -1;
    int n = kids.count;
    deallocate_String_vector(&kids);
    return n;
}

/* ops here is the number of handoffs wanted; the result's ops is a whole
 * number of rounds. */
static void herd(struct run *r, const char *path, int ops, struct result *res)
{
    int n = r->ncs - 1;
    int rounds = (ops + n - 1) / n;
    zkl_mutex *holder = new_mutex(r->cs[0], path, r->o->prefetch);
    struct waiter *ws = xcalloc((size_t)n, sizeof *ws);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct herd_shared sh;
    atomic_init(&sh.last_release, 0);
    atomic_init(&sh.last_done, 0);
    atomic_init(&sh.slot, 0);
    sh.lat = res->lat;
    for (int i = 0; i < n; i++)
        ws[i] = (struct waiter){.m = new_mutex(r->cs[i + 1], path, r->o->prefetch), .sh = &sh};
    zhandle_t *zh = zkl_client_handle(r->cs[0]);
    int64_t busy = 0;
    zkl_client_stats before;
    run_begin(r, &before);
    for (int round = 0; round < rounds; round++) {
        int rc = zkl_mutex_acquire(holder, LOCK_TIMEOUT_MS);
        if (rc != 0)
            die("herd holder acquire", rc);
        for (int i = 0; i < n; i++)
            start_thread(&ts[i], waiter_main, &ws[i]);
        /* Wait until every waiter's node is in the queue, then a moment
         * more so that every watch is set. */
        int64_t deadline = now_ns() + (int64_t)120 * 1000000000;
        while (count_children(zh, path) < n + 1) {
            if (now_ns() > deadline)
                die("herd waiters did not queue up", 0);
            sleep_ms(5);
        }
        sleep_ms(HERD_SETTLE_MS);
        int64_t t0 = now_ns();
        atomic_store(&sh.last_release, t0);
        if ((rc = zkl_mutex_release(holder)) != 0)
            die("herd holder release", rc);
        for (int i = 0; i < n; i++) {
            pthread_join(ts[i], NULL);
            if (ws[i].err != 0)
                die("herd waiter", ws[i].err);
        }
        busy += atomic_load(&sh.last_done) - t0;
    }
    run_end(r, &before, res);
    res->ops = rounds * n;
    res->elapsed_ns = busy;
    for (int i = 0; i < n; i++)
        zkl_mutex_free(ws[i].m);
    zkl_mutex_free(holder);
    free(ws);
    free(ts);
}

/* ---- semaphore: contended leases ---- */

struct leaser {
    zkl_semaphore *s;
    struct gate *gate;
    atomic_int *tickets;
    int ops;
    int64_t *lat;
    int err;
};

static void *leaser_main(void *arg)
{
    struct leaser *k = arg;
    gate_arrive_and_wait(k->gate);
    for (;;) {
        int t = atomic_fetch_add(k->tickets, 1);
        if (t >= k->ops)
            break;
        int64_t a = now_ns();
        zkl_lease *l = NULL;
        int rc = zkl_semaphore_acquire(k->s, LOCK_TIMEOUT_MS, &l);
        if (rc == 0) {
            k->lat[t] = now_ns() - a;
            rc = zkl_lease_release(l);
        }
        if (rc != 0) {
            k->err = rc;
            atomic_store(k->tickets, k->ops);
            break;
        }
    }
    return NULL;
}

static void semaphore_run(struct run *r, const char *path, int ops, struct result *res)
{
    int n = r->ncs;
    struct leaser *ks = xcalloc((size_t)n, sizeof *ks);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct gate g;
    gate_init(&g);
    atomic_int tickets;
    atomic_init(&tickets, 0);
    char sem[1100];
    snprintf(sem, sizeof sem, "%s/sem", path);
    for (int i = 0; i < n; i++) {
        int rc = zkl_semaphore_new(r->cs[i], sem, r->o->permits, &ks[i].s);
        if (rc != 0)
            die("zkl_semaphore_new", rc);
        ks[i].gate = &g;
        ks[i].tickets = &tickets;
        ks[i].ops = ops;
        ks[i].lat = res->lat;
        start_thread(&ts[i], leaser_main, &ks[i]);
    }
    run_gated(r, &g, ts, n, res);
    for (int i = 0; i < n; i++) {
        if (ks[i].err != 0)
            die("semaphore acquire/release", ks[i].err);
        zkl_semaphore_free(ks[i].s);
    }
    gate_destroy(&g);
    free(ks);
    free(ts);
}

/* ---- rw: a read-write lock under a read/write mix ---- */

struct rwer {
    zkl_rwlock *rw;
    struct gate *gate;
    atomic_int *tickets;
    atomic_int *reads;
    int ops;
    double read_fraction;
    uint64_t rng;
    int64_t *lat;
    int err;
};

static double next_unit(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return (double)(*x >> 11) / 9007199254740992.0;
}

static void *rwer_main(void *arg)
{
    struct rwer *k = arg;
    gate_arrive_and_wait(k->gate);
    for (;;) {
        int t = atomic_fetch_add(k->tickets, 1);
        if (t >= k->ops)
            break;
        bool read = next_unit(&k->rng) < k->read_fraction;
        int64_t a = now_ns();
        int rc = read ? zkl_rwlock_read_acquire(k->rw, LOCK_TIMEOUT_MS)
                      : zkl_rwlock_write_acquire(k->rw, LOCK_TIMEOUT_MS);
        if (rc == 0) {
            k->lat[t] = now_ns() - a;
            rc = read ? zkl_rwlock_read_release(k->rw) : zkl_rwlock_write_release(k->rw);
            if (read)
                atomic_fetch_add(k->reads, 1);
        }
        if (rc != 0) {
            k->err = rc;
            atomic_store(k->tickets, k->ops);
            break;
        }
    }
    return NULL;
}

static void rw_run(struct run *r, const char *path, int ops, struct result *res)
{
    int n = r->ncs;
    struct rwer *ks = xcalloc((size_t)n, sizeof *ks);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct gate g;
    gate_init(&g);
    atomic_int tickets, reads;
    atomic_init(&tickets, 0);
    atomic_init(&reads, 0);
    for (int i = 0; i < n; i++) {
        int rc = zkl_rwlock_new(r->cs[i], path, &ks[i].rw);
        if (rc != 0)
            die("zkl_rwlock_new", rc);
        ks[i].gate = &g;
        ks[i].tickets = &tickets;
        ks[i].reads = &reads;
        ks[i].ops = ops;
        ks[i].read_fraction = r->o->read_fraction;
        ks[i].rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
        ks[i].lat = res->lat;
        start_thread(&ts[i], rwer_main, &ks[i]);
    }
    run_gated(r, &g, ts, n, res);
    for (int i = 0; i < n; i++) {
        if (ks[i].err != 0)
            die("rw acquire/release", ks[i].err);
        zkl_rwlock_free(ks[i].rw);
    }
    res->reads = atomic_load(&reads);
    gate_destroy(&g);
    free(ks);
    free(ts);
}

/* ---- chain: the ideal lock on the bare C client ------------------------- */

/* Each contender creates PATH/lock-<seq>, waits (a data watch, no listing)
 * until lock-<seq-1> is gone, holds, and deletes its node: 3 requests and 2
 * writes per acquisition. Correct only without failures (a node's
 * predecessor being gone then means every earlier node is gone), which is
 * all a benchmark needs: the rate at which a handoff chain can run. */
struct chainer {
    zhandle_t *zh;
    const char *dir;
    struct gate *gate;
    atomic_int *tickets;
    int ops;
    int64_t *lat;
    struct handoff_clock *clock;
    int err;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool gone;
};

static void chain_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)state, (void)path;
    struct chainer *k = ctx;
    if (type != ZOO_DELETED_EVENT)
        return;
    pthread_mutex_lock(&k->mu);
    k->gone = true;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static int chain_acquire(struct chainer *k, char *name, size_t cap)
{
    char prefix[1100], pred[1200], buf[64];
    snprintf(prefix, sizeof prefix, "%s/lock-", k->dir);
    int rc = zoo_create(k->zh, prefix, "c", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                        name, (int)cap);
    if (rc != ZOK)
        return rc;
    long seq = strtol(name + strlen(name) - 10, NULL, 10);
    if (seq == 0)
        return ZOK;
    snprintf(pred, sizeof pred, "%s%010ld", prefix, seq - 1);
    pthread_mutex_lock(&k->mu);
    k->gone = false;
    pthread_mutex_unlock(&k->mu);
    int len = (int)sizeof buf;
    rc = zoo_wget(k->zh, pred, chain_watcher, k, buf, &len, NULL);
    if (rc == ZNONODE)
        return ZOK;
    if (rc != ZOK)
        return rc;
    pthread_mutex_lock(&k->mu);
    while (!k->gone)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    return ZOK;
}

static void *chainer_main(void *arg)
{
    struct chainer *k = arg;
    char name[1100];
    gate_arrive_and_wait(k->gate);
    for (;;) {
        int t = atomic_fetch_add(k->tickets, 1);
        if (t >= k->ops)
            break;
        int64_t a = now_ns();
        int rc = chain_acquire(k, name, sizeof name);
        if (rc == ZOK) {
            int64_t held = now_ns();
            k->lat[t] = held - a;
            clock_held(k->clock, held);
            int64_t stamp = clock_releasing(k->clock, held);
            rc = zoo_delete(k->zh, name, -1);
            clock_released(k->clock, stamp);
        }
        if (rc != ZOK) {
            k->err = rc;
            atomic_store(k->tickets, k->ops);
            break;
        }
    }
    return NULL;
}

static void chain_run(struct run *r, const char *dir, int ops, struct result *res)
{
    int n = r->nzhs;
    ensure_path(r->zhs[0], dir);
    struct chainer *ks = xcalloc((size_t)n, sizeof *ks);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct gate g;
    gate_init(&g);
    atomic_int tickets;
    atomic_init(&tickets, 0);
    struct handoff_clock hc = {0};
    for (int i = 0; i < n; i++) {
        ks[i] = (struct chainer){.zh = r->zhs[i],
                                 .dir = dir,
                                 .gate = &g,
                                 .tickets = &tickets,
                                 .ops = ops,
                                 .lat = res->lat,
                                 .clock = &hc};
        pthread_mutex_init(&ks[i].mu, NULL);
        pthread_cond_init(&ks[i].cv, NULL);
        start_thread(&ts[i], chainer_main, &ks[i]);
    }
    run_gated(r, &g, ts, n, res);
    clock_result(&hc, res);
    for (int i = 0; i < n; i++) {
        if (ks[i].err != 0) {
            fprintf(stderr, "%s: chain: %s\n", prog, zerror(ks[i].err));
            exit(1);
        }
        pthread_cond_destroy(&ks[i].cv);
        pthread_mutex_destroy(&ks[i].mu);
    }
    gate_destroy(&g);
    free(ks);
    free(ts);
}

/* ---- queue: one lock, a long queue of waiters ---------------------------- */

/* --waiters N threads (small stacks) queue on one lock behind a holder,
 * spread over the sessions round-robin; once all N nodes are on the server
 * the holder releases and the lock passes through every waiter. ops = N
 * handoffs; throughput = handoffs / (last waiter done - holder's release). */
struct queuer {
    zkl_mutex *m;
    struct herd_shared *sh;
    int err;
};

static void *queuer_main(void *arg)
{
    struct queuer *w = arg;
    int rc = zkl_mutex_acquire(w->m, LOCK_TIMEOUT_MS * 10);
    if (rc == 0) {
        handoff_seen(w->sh);
        rc = zkl_mutex_release(w->m);
    }
    w->err = rc;
    waiter_done(w->sh);
    return NULL;
}

/* The number of children from the path's stat: no listing of a long queue. */
static int count_children_stat(zhandle_t *zh, const char *path)
{
    struct Stat st;
    return zoo_exists(zh, path, 0, &st) == ZOK ? st.numChildren : -1;
}

/* The bytes of one listing of `path` as the server sends it: a count, then
 * each name with its length. */
static long listing_bytes(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    if (zoo_get_children(zh, path, 0, &kids) != ZOK)
        return -1;
    long b = 4;
    for (int i = 0; i < kids.count; i++)
        b += 4 + (long)strlen(kids.data[i]);
    deallocate_String_vector(&kids);
    return b;
}

/* --async: a waiter is a request; its callback (on the client's keeper
 * thread) records the handoff and releases at once. */
struct aqueuer {
    zkl_request *req;
    struct herd_shared *sh;
    _Atomic int *done;
    int err;
};

static void aqueuer_cb(zkl_request *req, int result, void *arg)
{
    struct aqueuer *w = arg;
    if (result == 0) {
        handoff_seen(w->sh);
        result = zkl_request_release(req);
    }
    w->err = result;
    waiter_done(w->sh);
    atomic_fetch_add(w->done, 1);
}

/* Wait until the queue's clients are quiet: no request sent and the heap
 * steady (within 1%) over three samples 100 ms apart, at most 60 s. Every
 * node being on the server is not enough: the last waiters' listings may
 * still be on their way (16 sessions, 590 KB each at 10,000 waiters), and
 * the heap they take for a moment is not the waiters'. Returns the heap in
 * use then. */
static size_t wait_quiet(zkl_client **cs, int ncs)
{
    int64_t deadline = now_ns() + (int64_t)60 * 1000000000;
    zkl_client_stats a, b;
    stats_sum(cs, ncs, &a);
    size_t h0 = heap_in_use();
    for (int calm = 0; calm < 3 && now_ns() < deadline;) {
        sleep_ms(100);
        stats_sum(cs, ncs, &b);
        size_t h1 = heap_in_use();
        double d = (double)h1 - (double)h0;
        calm = b.requests == a.requests && (d < 0 ? -d : d) <= 0.01 * (double)h0 ? calm + 1 : 0;
        a = b;
        h0 = h1;
    }
    return h0;
}

/* Wait until the clients' deletes answered since `before` reach `want`
 * (zkl_client_stats counts a delete at its answer). */
static void wait_deletes(struct run *r, const zkl_client_stats *before, uint64_t want)
{
    int64_t deadline = now_ns() + (int64_t)60 * 1000000000;
    zkl_client_stats now;
    for (stats_sum(r->cs, r->ncs, &now); now.deletes - before->deletes < want;
         stats_sum(r->cs, r->ncs, &now)) {
        if (now_ns() > deadline)
            die("queue deletes were not answered", 0);
        sleep_ms(1);
    }
}

/* Wait until `path` has `want` children (the queue's nodes, from the path's
 * stat: no listing of a long queue). */
static void wait_children(zhandle_t *zh, const char *path, int want)
{
    int64_t deadline = now_ns() + (int64_t)600 * 1000000000;
    while (count_children_stat(zh, path) < want) {
        if (now_ns() > deadline)
            die("queue waiters did not join", 0);
        sleep_ms(5);
    }
}

static void queue_run(struct run *r, const char *path, int ops, struct result *res)
{
    int n = ops, s = r->ncs;
    zhandle_t *zh = zkl_client_handle(r->cs[0]);
    zkl_mutex *holder = new_mutex(r->cs[0], path, r->o->prefetch);
    int rc = zkl_mutex_acquire(holder, LOCK_TIMEOUT_MS);
    if (rc != 0)
        die("queue holder acquire", rc);
    struct queuer *ws = xcalloc((size_t)n, sizeof *ws);
    pthread_t *ts = xcalloc((size_t)n, sizeof *ts);
    struct herd_shared sh;
    atomic_init(&sh.last_release, 0);
    atomic_init(&sh.last_done, 0);
    atomic_init(&sh.slot, 0);
    sh.lat = res->lat;
    malloc_trim(0);
    size_t heap0 = heap_in_use();
    zkl_client_stats before;
    stats_sum(r->cs, r->ncs, &before);
    bool async = r->o->async;
    zkl_mutex **ams = async ? xcalloc((size_t)s, sizeof *ams) : NULL;
    struct aqueuer *as = async ? xcalloc((size_t)n, sizeof *as) : NULL;
    _Atomic int adone;
    atomic_init(&adone, 0);
    for (int i = 0; async && i < s; i++)
        ams[i] = new_mutex(r->cs[i], path, r->o->prefetch);
    int64_t j0 = now_ns(), first_ns = 0;
    size_t heap_first = 0;
    for (int i = 0; i < n; i++) {
        if (i == s && n > 2 * s) {
            /* One waiter per session has joined: what a lock path costs each
             * session once (its metrics, its shared listing) is allocated
             * now, so what the rest add is the cost of a waiter alone. Not
             * timed as joining. */
            int64_t f0 = now_ns();
            wait_children(zh, path, s + 1);
            heap_first = wait_quiet(r->cs, r->ncs);
            first_ns = now_ns() - f0;
        }
        if (async) {
            as[i] = (struct aqueuer){.sh = &sh, .done = &adone};
            if ((rc = zkl_mutex_acquire_async(ams[i % s], LOCK_TIMEOUT_MS * 10, aqueuer_cb,
                                              &as[i], &as[i].req)) != 0)
                die("queue zkl_mutex_acquire_async", rc);
            continue;
        }
        ws[i] = (struct queuer){.m = new_mutex(r->cs[i % s], path, r->o->prefetch), .sh = &sh};
        start_thread_small(&ts[i], queuer_main, &ws[i]);
    }
    wait_children(zh, path, n + 1);
    res->join_ns = now_ns() - j0 - first_ns;
    /* Every node is on the server; let the last listings be answered and
     * the last watches be set. */
    size_t heap1 = wait_quiet(r->cs, r->ncs);
    res->bytes_per_waiter_all = heap1 == 0 ? NAN : ((double)heap1 - (double)heap0) / n;
    res->bytes_per_waiter = heap_first == 0 ? res->bytes_per_waiter_all
                                            : ((double)heap1 - (double)heap_first) / (n - s);
    res->listing_bytes = (double)listing_bytes(zh, path);
    zkl_client_stats joined;
    stats_sum(r->cs, r->ncs, &joined);
    res->join_listings = (double)(joined.listings - before.listings) / n;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    atomic_store(&sh.last_release, t0);
    if ((rc = zkl_mutex_release(holder)) != 0)
        die("queue holder release", rc);
    if (async) {
        int64_t end = now_ns() + (int64_t)LOCK_TIMEOUT_MS * 10 * 1000000;
        while (atomic_load(&adone) < n) {
            if (now_ns() > end)
                die("queue requests did not finish", 0);
            sleep_ms(5);
        }
        for (int i = 0; i < n; i++)
            if (as[i].err != 0)
                die("queue request", as[i].err);
    }
    for (int i = 0; !async && i < n; i++) {
        pthread_join(ts[i], NULL);
        if (ws[i].err != 0)
            die("queue waiter", ws[i].err);
    }
    res->elapsed_ns = atomic_load(&sh.last_done) - t0;
    /* A release returns before its delete is answered: wait for the last
     * ones (the holder's and every waiter's), so that the server's request
     * count of this phase has them all. */
    wait_deletes(r, &before, (uint64_t)n + 1);
    run_end(r, &before, res);
    /* run_begin above re-read `before`: the delta is the handoff phase. */
    res->wakeups_per_handoff = (double)res->delta.watch_events / n;
    for (int i = 0; !async && i < n; i++)
        zkl_mutex_free(ws[i].m);
    for (int i = 0; async && i < n; i++)
        zkl_request_free(as[i].req);
    for (int i = 0; async && i < s; i++)
        zkl_mutex_free(ams[i]);
    free(ams);
    free(as);
    zkl_mutex_free(holder);
    free(ws);
    free(ts);
}

/* The floor: bare asynchronous create + delete with the C client. */
struct floor_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
    char name[1100];
};

static void floor_created(int rc, const char *name, const void *data)
{
    struct floor_wait *w = (struct floor_wait *)data;
    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    if (rc == ZOK)
        snprintf(w->name, sizeof w->name, "%s", name);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void floor_deleted(int rc, const void *data)
{
    struct floor_wait *w = (struct floor_wait *)data;
    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int floor_await(struct floor_wait *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    w->done = false;
    int rc = w->rc;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static void floor_run(struct run *r, const char *dir, int ops, struct result *res)
{
    zhandle_t *zh = r->floor_zh;
    ensure_path(zh, dir);
    char prefix[1100];
    snprintf(prefix, sizeof prefix, "%s/n-", dir);
    static const char data[] = "zkl-bench floor";
    struct floor_wait w = {.done = false};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t0 = now_ns();
    for (int i = 0; i < ops; i++) {
        int64_t a = now_ns();
        int rc = zoo_acreate(zh, prefix, data, (int)sizeof data - 1, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL_SEQUENTIAL, floor_created, &w);
        if (rc == ZOK)
            rc = floor_await(&w);
        if (rc == ZOK) {
            rc = zoo_adelete(zh, w.name, -1, floor_deleted, &w);
            if (rc == ZOK)
                rc = floor_await(&w);
        }
        if (rc != ZOK) {
            fprintf(stderr, "%s: floor: %s\n", prog, zerror(rc));
            exit(1);
        }
        res->lat[i] = now_ns() - a;
    }
    res->elapsed_ns = now_ns() - t0;
    run_end(r, &before, res);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
}

static void floor_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

static zhandle_t *floor_connect(const struct opts *o)
{
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = zookeeper_init(o->servers, floor_watcher, o->session_timeout_ms, NULL, NULL, 0);
    if (zh == NULL)
        die("zookeeper_init failed", 0);
    zoo_set_servers_resolution_delay(zh, 60000);
    int64_t deadline = now_ns() + (int64_t)o->session_timeout_ms * 1000000;
    while (zoo_state(zh) != ZOO_CONNECTED_STATE) {
        if (now_ns() > deadline)
            die("floor: no connection", 0);
        sleep_ms(2);
    }
    return zh;
}

/* Threads of this process, from /proc/self/status. */
static long thread_count(void)
{
    return proc_status_kb("Threads");
}

static void sessions_run(struct run *r, const char *base, int ops, struct result *res)
{
    zkl_client **cs = xcalloc((size_t)ops, sizeof *cs);
    zkl_mutex **ms = xcalloc((size_t)ops, sizeof *ms);
    char path[1100];
    for (int i = 0; i < ops; i++) {
        snprintf(path, sizeof path, "%s/%d", base, i);
        ensure_path(zkl_client_handle(r->cs[0]), path);
    }
    malloc_trim(0);
    size_t heap0 = heap_in_use();
    long rss0 = proc_status_kb("VmRSS"), th0 = thread_count();
    int64_t t0 = now_ns();
    for (int i = 0; i < ops; i++)
        cs[i] = open_client(r->o);
    res->open_ns = now_ns() - t0;
    size_t heap1 = heap_in_use();
    long rss1 = proc_status_kb("VmRSS"), th1 = thread_count();
    for (int i = 0; i < ops; i++) {
        snprintf(path, sizeof path, "%s/%d", base, i);
        ms[i] = new_mutex(cs[i], path, r->o->prefetch);
    }
    /* The timed part counts the requests of the sessions made here. */
    zkl_client **keep = r->cs;
    int nkeep = r->ncs;
    r->cs = cs;
    r->ncs = ops;
    zkl_client_stats before;
    run_begin(r, &before);
    int64_t t1 = now_ns();
    for (int i = 0; i < ops; i++) {
        int64_t a = now_ns();
        int rc = zkl_mutex_acquire(ms[i], LOCK_TIMEOUT_MS);
        if (rc != 0)
            die("acquire", rc);
        res->lat[i] = now_ns() - a;
    }
    for (int i = 0; i < ops; i++) {
        int rc = zkl_mutex_release(ms[i]);
        if (rc != 0)
            die("release", rc);
    }
    res->elapsed_ns = now_ns() - t1;
    run_end(r, &before, res);
    r->cs = keep;
    r->ncs = nkeep;
    for (int i = 0; i < ops; i++) {
        zkl_mutex_free(ms[i]);
        zkl_client_close(cs[i]);
    }
    free(ms);
    free(cs);
    res->bytes_per_session = heap1 == 0 ? NAN : ((double)heap1 - (double)heap0) / ops;
    res->rss_per_session = ((double)rss1 - (double)rss0) * 1024.0 / ops;
    res->threads_per_session = (double)(th1 - th0) / ops;
}

/* ---- driver ------------------------------------------------------------- */

enum workload {
    W_UNCONTENDED,
    W_CONTENDED,
    W_MANY,
    W_HERD,
    W_FLOOR,
    W_SEMAPHORE,
    W_RW,
    W_CHAIN,
    W_QUEUE,
    W_SESSIONS
};

static const char *const workload_names[] = {"uncontended", "contended", "many",
                                             "herd",        "floor",     "semaphore",
                                             "rw",          "chain",     "queue",
                                             "sessions"};

static void run_once(struct run *r, enum workload w, const char *path, int ops,
                     struct result *res)
{
    memset(res, 0, sizeof *res);
    res->ops = ops;
    res->lat = xcalloc((size_t)ops + (size_t)r->ncs, sizeof *res->lat);
    res->bytes_per_lock = NAN;
    res->rss_bytes_per_lock = NAN;
    res->wakeups_per_handoff = NAN;
    switch (w) {
    case W_UNCONTENDED:
        uncontended(r, path, ops, res);
        break;
    case W_CONTENDED:
        contended(r, path, ops, res);
        break;
    case W_MANY:
        many(r, path, ops, res);
        break;
    case W_HERD:
        herd(r, path, ops, res);
        break;
    case W_FLOOR:
        floor_run(r, path, ops, res);
        break;
    case W_SEMAPHORE:
        semaphore_run(r, path, ops, res);
        break;
    case W_RW:
        rw_run(r, path, ops, res);
        break;
    case W_CHAIN:
        chain_run(r, path, ops, res);
        break;
    case W_QUEUE:
        queue_run(r, path, ops, res);
        break;
    case W_SESSIONS:
        sessions_run(r, path, ops, res);
        break;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The nearest-rank percentile, in microseconds. */
static long long percentile_us(const int64_t *sorted, int n, double p)
{
    if (n <= 0)
        return 0;
    int idx = (int)ceil(p * n) - 1;
    if (idx < 0)
        idx = 0;
    if (idx >= n)
        idx = n - 1;
    return llround((double)sorted[idx] / 1000.0);
}

static void json_num(const char *key, double v, int decimals)
{
    if (isnan(v))
        printf(",\"%s\":null", key);
    else
        printf(",\"%s\":%.*f", key, decimals, v);
}

/* CPU time of the whole process (every thread: the callers, ZooKeeper's
 * and zkl's), in ns: far steadier than wall time on a busy machine. */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: a few passes */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --metrics-ab N: the workload N times on sessions that collect metrics
 * and N times on sessions that do not, alternating (which goes first
 * alternates too, so drift over the run hits both alike); one JSON line
 * with the medians and their ratio. */
static int metrics_ab(const struct opts *o, enum workload w, int nsessions)
{
    struct run on = {.o = o}, off = {.o = o};
    on.cs = xcalloc((size_t)nsessions, sizeof *on.cs);
    off.cs = xcalloc((size_t)nsessions, sizeof *off.cs);
    on.ncs = off.ncs = nsessions;
    for (int i = 0; i < nsessions; i++) {
        on.cs[i] = open_client_metrics(o, true);
        off.cs[i] = open_client_metrics(o, false);
    }
    zhandle_t *admin = zkl_client_handle(on.cs[0]);
    delete_tree(admin, o->path);
    int n = o->metrics_ab;
    double *tput[2] = {xcalloc((size_t)n, sizeof(double)), xcalloc((size_t)n, sizeof(double))};
    double *p50[2] = {xcalloc((size_t)n, sizeof(double)), xcalloc((size_t)n, sizeof(double))};
    double *cpu[2] = {xcalloc((size_t)n, sizeof(double)), xcalloc((size_t)n, sizeof(double))};
    char sub[1100];
    struct result res;
    if (o->warmup > 0) {
        for (int k = 0; k < 2; k++) {
            snprintf(sub, sizeof sub, "%s/warmup%d", o->path, k);
            ensure_path(admin, sub);
            run_once(k == 0 ? &on : &off, w, sub, o->warmup, &res);
            free(res.lat);
        }
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < 2; j++) {
            int k = (i + j) % 2; /* 0: metrics on, 1: off */
            snprintf(sub, sizeof sub, "%s/pass%d-%d", o->path, i, k);
            ensure_path(admin, sub);
            int64_t c0 = cpu_ns();
            run_once(k == 0 ? &on : &off, w, sub, o->ops, &res);
            cpu[k][i] = (double)(cpu_ns() - c0) / 1e3 / res.ops;
            qsort(res.lat, (size_t)res.ops, sizeof *res.lat, cmp_i64);
            tput[k][i] = res.ops / ((double)res.elapsed_ns / 1e9);
            p50[k][i] = (double)percentile_us(res.lat, res.ops, 0.50);
            fprintf(stderr, "%s: pass %d metrics %s: %.1f ops/s, p50 %.0f us, cpu %.2f us/op\n",
                    prog, i, k == 0 ? "on" : "off", tput[k][i], p50[k][i], cpu[k][i]);
            free(res.lat);
        }
    }
    delete_tree(admin, o->path);
    /* Each pass's on/off pair ran back to back: the median of their ratios
     * is the least disturbed by a machine whose load drifts. */
    double *pair = xcalloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++)
        pair[i] = tput[0][i] / tput[1][i];
    double pair_ratio = median(pair, n);
    free(pair);
    double ton = median(tput[0], n), toff = median(tput[1], n); /* sorts them */
    double pon = median(p50[0], n), poff = median(p50[1], n);
    double con = median(cpu[0], n), coff = median(cpu[1], n);
    printf("{\"impl\":\"zkl\",\"workload\":\"%s\",\"clients\":%d,\"ops\":%d,"
           "\"metrics_ab_passes\":%d",
           o->workload, o->clients, o->ops, n);
    json_num("on_ops_per_sec_median", ton, 1);
    json_num("off_ops_per_sec_median", toff, 1);
    json_num("throughput_ratio_on_off", ton / toff, 4);
    json_num("metrics_cost_pct", (1 - ton / toff) * 100, 2);
    json_num("paired_throughput_ratio_median", pair_ratio, 4);
    json_num("on_p50_us_median", pon, 1);
    json_num("off_p50_us_median", poff, 1);
    json_num("on_cpu_us_per_op_median", con, 2);
    json_num("off_cpu_us_per_op_median", coff, 2);
    json_num("cpu_ratio_on_off", con / coff, 4);
    printf("}\n");
    fflush(stdout);
    for (int k = 0; k < 2; k++) {
        free(tput[k]);
        free(p50[k]);
        free(cpu[k]);
    }
    for (int i = 0; i < nsessions; i++) {
        zkl_client_close(on.cs[i]);
        zkl_client_close(off.cs[i]);
    }
    free(on.cs);
    free(off.cs);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s --servers HOST:PORT[,...] --workload "
            "uncontended|contended|many|herd|floor|semaphore|rw|chain|queue|sessions\n"
            "          --clients N --ops N [--warmup N] [--path /bench/x] [--prefetch]\n"
            "          [--permits N] [--read-fraction F] [--session-timeout MS]\n"
            "          [--waiters N]   (queue: N waiters; --ops is ignored)\n"
            "          [--async]       (queue: asynchronous requests, not threads)\n"
            "          [--metrics-ab N] (N passes with metrics on and off, alternating)\n",
            prog);
}

static int parse_count(const char *opt, const char *v, int min)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < min || x > 100000000) {
        fprintf(stderr, "%s: bad value for %s: %s\n", prog, opt, v);
        usage(stderr);
        exit(2);
    }
    return (int)x;
}

int main(int argc, char **argv)
{
    struct opts o = {.clients = -1,
                     .ops = -1,
                     .path = "/bench/zkl",
                     .read_fraction = 0.9,
                     .permits = 2,
                     .session_timeout_ms = SESSION_TIMEOUT_MS};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--prefetch") == 0) {
            o.prefetch = true;
            continue;
        }
        if (strcmp(a, "--async") == 0) {
            o.async = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: missing value for %s\n", prog, a);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        if (strcmp(a, "--servers") == 0)
            o.servers = v;
        else if (strcmp(a, "--workload") == 0)
            o.workload = v;
        else if (strcmp(a, "--clients") == 0)
            o.clients = parse_count(a, v, 1);
        else if (strcmp(a, "--ops") == 0)
            o.ops = parse_count(a, v, 1);
        else if (strcmp(a, "--warmup") == 0)
            o.warmup = parse_count(a, v, 0);
        else if (strcmp(a, "--path") == 0)
            o.path = v;
        else if (strcmp(a, "--read-fraction") == 0) {
            char *end;
            o.read_fraction = strtod(v, &end);
            if (*end != '\0' || !(o.read_fraction >= 0 && o.read_fraction <= 1)) {
                fprintf(stderr, "%s: bad value for %s: %s\n", prog, a, v);
                usage(stderr);
                return 2;
            }
        } else if (strcmp(a, "--permits") == 0)
            o.permits = parse_count(a, v, 1);
        else if (strcmp(a, "--waiters") == 0)
            o.waiters = parse_count(a, v, 1);
        else if (strcmp(a, "--metrics-ab") == 0)
            o.metrics_ab = parse_count(a, v, 1);
        else if (strcmp(a, "--session-timeout") == 0)
            o.session_timeout_ms = parse_count(a, v, 1000);
        else {
            fprintf(stderr, "%s: unknown option %s\n", prog, a);
            usage(stderr);
            return 2;
        }
    }
    if (o.servers == NULL || o.workload == NULL) {
        fprintf(stderr, "%s: --servers and --workload are required\n", prog);
        usage(stderr);
        return 2;
    }
    int w = -1;
    for (int i = 0; i < (int)(sizeof workload_names / sizeof *workload_names); i++)
        if (strcmp(o.workload, workload_names[i]) == 0)
            w = i;
    if (w < 0) {
        fprintf(stderr, "%s: unknown workload %s\n", prog, o.workload);
        usage(stderr);
        return 2;
    }
    if (o.path[0] != '/' || strlen(o.path) > 900 || o.path[strlen(o.path) - 1] == '/') {
        fprintf(stderr, "%s: bad --path %s\n", prog, o.path);
        return 2;
    }
    bool threaded = w == W_CONTENDED || w == W_SEMAPHORE || w == W_RW || w == W_CHAIN;
    if (o.clients < 0)
        o.clients = w == W_HERD ? 100 : w == W_QUEUE ? 4 : threaded ? 8 : 1;
    if (w == W_QUEUE && o.clients > 16) {
        fprintf(stderr, "%s: queue takes at most 16 sessions (--clients)\n", prog);
        return 2;
    }
    if (w == W_QUEUE) {
        o.ops = o.waiters > 0 ? o.waiters : 100;
        o.waiters = o.ops;
        o.warmup = 0; /* the queue is its own warm-up: it lists every join */
    }
    if (w == W_SESSIONS) {
        o.ops = o.clients > 0 ? o.clients : 500;
        o.clients = o.ops;
        o.warmup = 0;
    }
    if (o.ops < 0)
        o.ops = w == W_MANY ? 1000 : 2000;

    /* Sessions: contended one per client; herd a holder plus the waiters;
     * the floor and the chain bare handles; queue --clients; the others one. */
    struct run r = {.o = &o};
    int nsessions = threaded || w == W_QUEUE ? o.clients : w == W_HERD ? o.clients + 1 : 1;
    if (o.metrics_ab > 0) {
        if (w == W_FLOOR || w == W_CHAIN) {
            fprintf(stderr, "%s: --metrics-ab needs a zkl workload\n", prog);
            return 2;
        }
        return metrics_ab(&o, (enum workload)w, nsessions);
    }
    zhandle_t *admin;
    if (w == W_FLOOR) {
        r.floor_zh = floor_connect(&o);
        admin = r.floor_zh;
    } else if (w == W_CHAIN) {
        r.zhs = xcalloc((size_t)nsessions, sizeof *r.zhs);
        r.nzhs = nsessions;
        for (int i = 0; i < nsessions; i++)
            r.zhs[i] = floor_connect(&o);
        admin = r.zhs[0];
    } else {
        r.cs = xcalloc((size_t)nsessions, sizeof *r.cs);
        r.ncs = nsessions;
        for (int i = 0; i < nsessions; i++)
            r.cs[i] = open_client(&o);
        admin = zkl_client_handle(r.cs[0]);
    }
    delete_tree(admin, o.path); /* what a failed run left */

    char sub[1100];
    struct result res;
    if (o.warmup > 0) {
        snprintf(sub, sizeof sub, "%s/warmup", o.path);
        ensure_path(admin, sub);
        run_once(&r, (enum workload)w, sub, o.warmup, &res);
        free(res.lat);
    }
    struct meter meter = {.servers = NULL};
    meter.servers = server_list(o.servers, &meter.nservers);
    r.meter = &meter;
    snprintf(sub, sizeof sub, "%s/timed", o.path);
    ensure_path(admin, sub);
    run_once(&r, (enum workload)w, sub, o.ops, &res);
    delete_tree(admin, o.path);

    if (w == W_HERD && res.has_delta) {
        /* The holder's session counts no watch event: it never waits. */
        res.wakeups_per_handoff = (double)res.delta.watch_events / res.ops;
    }

    double first_tenth = NAN, last_tenth = NAN;
    if ((w == W_MANY || w == W_SESSIONS) && res.ops >= 10) {
        /* In acquire order still: the first and the last tenth. */
        size_t k = (size_t)res.ops / 10;
        int64_t *t = xcalloc(k, sizeof *t);
        memcpy(t, res.lat, k * sizeof *t);
        qsort(t, k, sizeof *t, cmp_i64);
        first_tenth = (double)t[k / 2] / 1e3;
        memcpy(t, res.lat + res.ops - k, k * sizeof *t);
        qsort(t, k, sizeof *t, cmp_i64);
        last_tenth = (double)t[k / 2] / 1e3;
        free(t);
    }
    qsort(res.lat, (size_t)res.ops, sizeof *res.lat, cmp_i64);
    double seconds = (double)res.elapsed_ns / 1e9;
    int n = res.ops;
    printf("{\"impl\":\"zkl\",\"workload\":\"%s\",\"clients\":%d,\"ops\":%d", o.workload,
           o.clients, n);
    json_num("seconds", seconds, 4);
    json_num("ops_per_sec", seconds > 0 ? n / seconds : 0, 1);
    printf(",\"p50_us\":%lld,\"p99_us\":%lld", percentile_us(res.lat, n, 0.50),
           percentile_us(res.lat, n, 0.99));
    double per_op = NAN, writes = NAN;
    if (meter.ok) {
        per_op = (double)(meter.packets1 - meter.packets0 - meter.nservers) / n;
        writes = (double)(meter.zxid1 - meter.zxid0) / n;
    }
    json_num("zk_requests_per_op", per_op, 3);
    json_num("zk_writes_per_op", writes, 3);
    if (res.has_delta) {
        json_num("client_requests_per_op", (double)res.delta.requests / n, 3);
        json_num("listings_per_op", (double)res.delta.listings / n, 3);
        json_num("watch_events_per_op", (double)res.delta.watch_events / n, 3);
    }
    if (w == W_MANY) {
        json_num("bytes_per_lock", res.bytes_per_lock, 1);
        json_num("rss_bytes_per_lock", res.rss_bytes_per_lock, 1);
    }
    if (w == W_SESSIONS) {
        json_num("open_seconds", (double)res.open_ns / 1e9, 3);
        json_num("bytes_per_session", res.bytes_per_session, 1);
        json_num("rss_bytes_per_session", res.rss_per_session, 1);
        json_num("threads_per_session", res.threads_per_session, 2);
    }
    if (w == W_MANY || w == W_SESSIONS) {
        json_num("first_tenth_p50_us", first_tenth, 1);
        json_num("last_tenth_p50_us", last_tenth, 1);
    }
    if (w == W_HERD || w == W_QUEUE)
        json_num("wakeups_per_handoff", res.wakeups_per_handoff, 3);
    if ((w == W_CONTENDED || w == W_CHAIN) && res.handoffs > 0) {
        /* The handoff timeline, means in µs: from a holder calling release
         * to the next one holding (handoff), the release call itself
         * (release: the delete's round trip), and from holding to calling
         * release (hold: the benchmark's own work in between). */
        json_num("handoff_us", (double)res.gap_ns / 1e3 / (double)res.handoffs, 1);
        json_num("release_us", (double)res.release_ns / 1e3 / n, 1);
        json_num("hold_us", (double)res.hold_ns / 1e3 / n, 1);
    }
    if (w == W_QUEUE) {
        printf(",\"waiters\":%d", o.waiters);
        json_num("join_seconds", (double)res.join_ns / 1e9, 3);
        json_num("join_us_per_waiter", (double)res.join_ns / 1e3 / n, 1);
        json_num("join_listings_per_waiter", res.join_listings, 3);
        json_num("bytes_per_waiter", res.bytes_per_waiter, 1);
        json_num("bytes_per_waiter_all", res.bytes_per_waiter_all, 1);
        json_num("listing_bytes", res.listing_bytes, 0);
        printf(",\"async\":%s", o.async ? "true" : "false");
    }
    if (w == W_SEMAPHORE)
        printf(",\"permits\":%d", o.permits);
    if (w == W_RW)
        printf(",\"read_fraction\":%.3f,\"reads\":%d", o.read_fraction, res.reads);
    printf(",\"prefetch\":%s,\"peak_rss_kb\":%ld}\n", o.prefetch ? "true" : "false",
           proc_status_kb("VmHWM"));
    fflush(stdout);

    free(res.lat);
    for (int i = 0; i < meter.nservers; i++)
        free(meter.servers[i]);
    free(meter.servers);
    if (r.floor_zh)
        zookeeper_close(r.floor_zh);
    for (int i = 0; i < r.nzhs; i++)
        zookeeper_close(r.zhs[i]);
    free(r.zhs);
    for (int i = 0; i < r.ncs; i++)
        zkl_client_close(r.cs[i]);
    free(r.cs);
    return 0;
}
