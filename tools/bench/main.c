/*
 * zkl-bench — lock benchmark for zkl, on the public API only.
 *
 *   zkl-bench --servers HOST:PORT[,...] --workload W --clients N --ops N
 *             [--warmup N] [--path /bench/x] [--prefetch]
 *             [--read-fraction F] [--permits N] [--session-timeout MS]
 *             [--waiters N] [--async] [--metrics-ab N]
 *
 * Prints one JSON line on stdout (report.c). Workloads:
 *
 *   uncontended  one session, one thread: `ops` acquire+release cycles of
 *                one mutex. Latency = one cycle.
 *   contended    `clients` sessions, one thread each, on one mutex path; the
 *                threads draw tickets until `ops` acquisitions were made;
 *                each acquire is followed at once by a release. Latency =
 *                from calling acquire to holding. Throughput = ops / wall.
 *   semaphore    as contended, on a counting semaphore of --permits leases
 *                (default 2): one lease each, given back at once.
 *   rw           as contended, on a read-write lock: each operation is a
 *                read (with probability --read-fraction, default 0.9) or a
 *                write, acquired and released at once.
 *   many, sessions   many locks held at once (hold.c).
 *   herd, queue      a queue of waiters on one lock (queue.c).
 *   elect        leader election: each leader resigns at once (elect.c).
 *   elect-kill   leader election: a leader's SIGKILL to the next leader
 *                (elect.c; --ops kills, default 5).
 *   floor, chain     the bare ZooKeeper C client's floors (bare.c).
 *   protocol     zkl's node protocol for the mutex on the bare C client,
 *                as contended (protocol.c).
 *
 * contended, chain and protocol add the handoff timeline (runner.c):
 * handoff_us, release_us and hold_us.
 *
 * --prefetch uses zkl_lock_opts_set_prefetch. --metrics-ab N runs the
 * workload N times on sessions with metrics on and N times with metrics off
 * (zkl_client_opts_set_metrics), alternating, and prints the medians of both
 * (throughput, p50, the process's CPU time per operation) and the
 * throughput ratio instead of the usual line (ab.c). --warmup N runs the
 * workload untimed with N operations on PATH/warmup before the timed run on
 * PATH/timed. PATH (default /bench/zkl) is deleted before and after.
 *
 * Exit status: 0, 1 on a failure, 2 on bad usage.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

const char *const zkl_bench_prog = "zkl-bench";

const struct workload zkl_bench_workloads[] = {
    {"uncontended", S_CLIENTS, false, 1, uncontended_run, 0},
    {"contended", S_CLIENTS, false, 8, contended_run, OUT_HANDOFF},
    {"many", S_ONE, false, 1, many_run, OUT_MANY | OUT_TENTHS},
    {"herd", S_CLIENTS_AND_HOLDER, false, 100, herd_run, OUT_WAKEUPS},
    {"floor", S_ONE, true, 1, floor_run, 0},
    {"semaphore", S_CLIENTS, false, 8, semaphore_run, OUT_PERMITS},
    {"rw", S_CLIENTS, false, 8, rw_run, OUT_RW},
    {"chain", S_CLIENTS, true, 8, chain_run, OUT_HANDOFF},
    {"protocol", S_CLIENTS, true, 8, protocol_run, OUT_HANDOFF},
    {"queue", S_CLIENTS, false, 4, queue_run, OUT_WAKEUPS | OUT_QUEUE},
    {"sessions", S_ONE, false, -1, sessions_run, OUT_SESSIONS | OUT_TENTHS},
    {"elect", S_CLIENTS, false, 4, elect_run, 0},
    {"elect-kill", S_ONE, false, 1, elect_kill_run, 0},
};
const int zkl_bench_nworkloads = (int)(sizeof zkl_bench_workloads / sizeof *zkl_bench_workloads);

static void usage(FILE *f)
{
    fprintf(f, "usage: %s --servers HOST:PORT[,...] --workload ", zkl_bench_prog);
    for (int i = 0; i < zkl_bench_nworkloads; i++)
        fprintf(f, "%s%s", i ? "|" : "", zkl_bench_workloads[i].name);
    fprintf(f, "\n"
               "          --clients N --ops N [--warmup N] [--path /bench/x] [--prefetch]\n"
               "          [--permits N] [--read-fraction F] [--session-timeout MS]\n"
               "          [--waiters N]   (queue: N waiters; --ops is ignored)\n"
               "          [--async]       (queue: asynchronous requests, not threads)\n"
               "          [--metrics-ab N] (N passes with metrics on and off, alternating)\n");
}

/* "zkl-bench: WHAT[ OPT][: VALUE]", the usage, and exit 2. */
static _Noreturn void bad_usage(const char *what, const char *opt, const char *value)
{
    fprintf(stderr, "%s: %s%s%s%s%s\n", zkl_bench_prog, what, opt ? " " : "", opt ? opt : "",
            value ? ": " : "", value ? value : "");
    usage(stderr);
    exit(2);
}

static int parse_count(const char *opt, const char *v, int min)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < min || x > 100000000)
        bad_usage("bad value for", opt, v);
    return (int)x;
}

static void parse_value(struct opts *o, const char *a, const char *v)
{
    if (strcmp(a, "--servers") == 0) {
        o->servers = v;
    } else if (strcmp(a, "--workload") == 0) {
        o->workload = v;
    } else if (strcmp(a, "--clients") == 0) {
        o->clients = parse_count(a, v, 1);
    } else if (strcmp(a, "--ops") == 0) {
        o->ops = parse_count(a, v, 1);
    } else if (strcmp(a, "--warmup") == 0) {
        o->warmup = parse_count(a, v, 0);
    } else if (strcmp(a, "--path") == 0) {
        o->path = v;
    } else if (strcmp(a, "--read-fraction") == 0) {
        char *end;
        o->read_fraction = strtod(v, &end);
        if (*end != '\0' || !(o->read_fraction >= 0 && o->read_fraction <= 1))
            bad_usage("bad value for", a, v);
    } else if (strcmp(a, "--permits") == 0) {
        o->permits = parse_count(a, v, 1);
    } else if (strcmp(a, "--waiters") == 0) {
        o->waiters = parse_count(a, v, 1);
    } else if (strcmp(a, "--metrics-ab") == 0) {
        o->metrics_ab = parse_count(a, v, 1);
    } else if (strcmp(a, "--session-timeout") == 0) {
        o->session_timeout_ms = parse_count(a, v, 1000);
    } else {
        bad_usage("unknown option", a, NULL);
    }
}

/* The options, checked, with each workload's defaults filled in. */
static const struct workload *parse(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--prefetch") == 0) {
            o->prefetch = true;
        } else if (strcmp(a, "--async") == 0) {
            o->async = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (i + 1 >= argc) {
            bad_usage("missing value for", a, NULL);
        } else {
            parse_value(o, a, argv[++i]);
        }
    }
    if (o->servers == NULL || o->workload == NULL)
        bad_usage("--servers and --workload are required", NULL, NULL);
    const struct workload *w = NULL;
    for (int i = 0; i < zkl_bench_nworkloads; i++)
        if (strcmp(o->workload, zkl_bench_workloads[i].name) == 0)
            w = &zkl_bench_workloads[i];
    if (w == NULL)
        bad_usage("unknown workload", o->workload, NULL);
    if (o->path[0] != '/' || strlen(o->path) > 900 || o->path[strlen(o->path) - 1] == '/')
        bad_usage("bad --path", o->path, NULL);
    if (o->clients < 0)
        o->clients = w->default_clients;
    if (w->run == queue_run) {
        if (o->clients > 16)
            bad_usage("queue takes at most 16 sessions (--clients)", NULL, NULL);
        o->ops = o->waiters > 0 ? o->waiters : 100;
        o->waiters = o->ops;
        o->warmup = 0; /* the queue is its own warm-up: it lists every join */
    }
    if (w->run == sessions_run) {
        o->ops = o->clients > 0 ? o->clients : 500;
        o->clients = o->ops;
        o->warmup = 0;
    }
    if (w->run == elect_kill_run) {
        o->ops = o->ops > 0 ? o->ops : 5;
        o->warmup = 0;
    }
    if (o->ops < 0)
        o->ops = w->run == many_run ? 1000 : 2000;
    if (o->metrics_ab > 0 && w->bare)
        bad_usage("--metrics-ab needs a zkl workload", NULL, NULL);
    return w;
}

static void open_sessions(struct run *r, const struct workload *w, int n)
{
    if (w->bare) {
        r->zhs = xcalloc((size_t)n, sizeof *r->zhs);
        r->nzhs = n;
        for (int i = 0; i < n; i++)
            r->zhs[i] = bare_connect(r->o);
    } else {
        r->cs = xcalloc((size_t)n, sizeof *r->cs);
        r->ncs = n;
        for (int i = 0; i < n; i++)
            r->cs[i] = open_client(r->o);
    }
}

static void close_sessions(struct run *r)
{
    for (int i = 0; i < r->nzhs; i++)
        zookeeper_close(r->zhs[i]);
    free(r->zhs);
    for (int i = 0; i < r->ncs; i++)
        zkl_client_close(r->cs[i]);
    free(r->cs);
}

/* `path` made (make) or deleted with what is below it: on the first bare
 * handle, or through the first client's session. */
static void admin_tree(const struct run *r, const struct workload *w, const char *path, bool make)
{
    if (w->bare)
        (make ? ensure_path : delete_tree)(r->zhs[0], path);
    else
        (make ? client_ensure_path : client_delete_tree)(r->cs[0], path);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--elect-child") == 0)
        return elect_child(argv[2], argv[3], parse_count("--elect-child", argv[4], 1000));
    struct opts o = {.clients = -1,
                     .ops = -1,
                     .path = "/bench/zkl",
                     .read_fraction = 0.9,
                     .permits = 2,
                     .session_timeout_ms = SESSION_TIMEOUT_MS};
    const struct workload *w = parse(argc, argv, &o);
    /* Only these read the heap; the others run without its meter. */
    if (w->out & (OUT_MANY | OUT_SESSIONS | OUT_QUEUE))
        heap_meter_load(argv);
    int nsessions = w->sessions == S_CLIENTS              ? o.clients
                    : w->sessions == S_CLIENTS_AND_HOLDER ? o.clients + 1
                                                          : 1;
    if (o.metrics_ab > 0)
        return metrics_ab(&o, w, nsessions);
    struct run r = {.o = &o};
    open_sessions(&r, w, nsessions);
    admin_tree(&r, w, o.path, false); /* what a failed run left */
    char sub[1100];
    struct result res;
    if (o.warmup > 0) {
        snprintf(sub, sizeof sub, "%s/warmup", o.path);
        admin_tree(&r, w, sub, true);
        run_once(&r, w, sub, o.warmup, &res);
        free(res.lat);
    }
    struct meter meter = {.ok = false};
    meter.servers = server_list(o.servers, &meter.nservers);
    r.meter = &meter;
    snprintf(sub, sizeof sub, "%s/timed", o.path);
    admin_tree(&r, w, sub, true);
    run_once(&r, w, sub, o.ops, &res);
    admin_tree(&r, w, o.path, false);
    report(&o, w, &meter, &res);
    free(res.lat);
    for (int i = 0; i < meter.nservers; i++)
        free(meter.servers[i]);
    free(meter.servers);
    close_sessions(&r);
    return 0;
}
