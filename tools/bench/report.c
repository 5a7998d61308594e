/* One run of a workload, and its JSON line: the fields of
 * bench/CuratorBench.java and bench/kazoo_bench.py (so that
 * bench/compare.sh can put them side by side) plus zkl's own counters and
 * what the workload adds (its `out` flags). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void run_once(struct run *r, const struct workload *w, const char *path, int ops,
              struct result *res)
{
    memset(res, 0, sizeof *res);
    res->ops = ops;
    res->lat = xcalloc((size_t)ops + (size_t)r->ncs, sizeof *res->lat);
    res->bytes_per_lock = NAN;
    res->rss_bytes_per_lock = NAN;
    res->wakeups_per_handoff = NAN;
    w->run(r, path, ops, res);
}

int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The nearest-rank percentile, in microseconds. */
long long percentile_us(const int64_t *sorted, int n, double p)
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

void json_num(const char *key, double v, int decimals)
{
    if (isnan(v))
        printf(",\"%s\":null", key);
    else
        printf(",\"%s\":%.*f", key, decimals, v);
}

double median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: a few passes */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median latency (µs) of lat[from, from + k), in acquire order. */
static double tenth_p50(const int64_t *lat, size_t from, size_t k)
{
    int64_t *t = xcalloc(k, sizeof *t);
    memcpy(t, lat + from, k * sizeof *t);
    qsort(t, k, sizeof *t, cmp_i64);
    double v = (double)t[k / 2] / 1e3;
    free(t);
    return v;
}

static void report_queue(const struct opts *o, const struct result *res, int n)
{
    printf(",\"waiters\":%d", o->waiters);
    json_num("join_seconds", (double)res->join_ns / 1e9, 3);
    json_num("join_us_per_waiter", (double)res->join_ns / 1e3 / n, 1);
    json_num("join_listings_per_waiter", res->join_listings, 3);
    json_num("bytes_per_waiter", res->bytes_per_waiter, 1);
    json_num("bytes_per_waiter_all", res->bytes_per_waiter_all, 1);
    json_num("listing_bytes", res->listing_bytes, 0);
    printf(",\"async\":%s", o->async ? "true" : "false");
}

void report(const struct opts *o, const struct workload *w, const struct meter *m,
            struct result *res)
{
    int n = res->ops;
    double first_tenth = NAN, last_tenth = NAN;
    if ((w->out & OUT_TENTHS) && n >= 10) {
        size_t k = (size_t)n / 10;
        first_tenth = tenth_p50(res->lat, 0, k);
        last_tenth = tenth_p50(res->lat, (size_t)n - k, k);
    }
    qsort(res->lat, (size_t)n, sizeof *res->lat, cmp_i64);
    double seconds = (double)res->elapsed_ns / 1e9;
    printf("{\"impl\":\"zkl\",\"workload\":\"%s\",\"clients\":%d,\"ops\":%d", o->workload,
           o->clients, n);
    json_num("seconds", seconds, 4);
    json_num("ops_per_sec", seconds > 0 ? n / seconds : 0, 1);
    printf(",\"p50_us\":%lld,\"p99_us\":%lld", percentile_us(res->lat, n, 0.50),
           percentile_us(res->lat, n, 0.99));
    double per_op = NAN, writes = NAN;
    if (m->ok) {
        per_op = (double)(m->packets1 - m->packets0 - m->nservers) / n;
        writes = (double)(m->zxid1 - m->zxid0) / n;
    }
    json_num("zk_requests_per_op", per_op, 3);
    json_num("zk_writes_per_op", writes, 3);
    if (res->has_delta) {
        json_num("client_requests_per_op", (double)res->delta.requests / n, 3);
        json_num("listings_per_op", (double)res->delta.listings / n, 3);
        json_num("watch_events_per_op", (double)res->delta.watch_events / n, 3);
    }
    if (w->out & OUT_MANY) {
        json_num("bytes_per_lock", res->bytes_per_lock, 1);
        json_num("rss_bytes_per_lock", res->rss_bytes_per_lock, 1);
    }
    if (w->out & OUT_SESSIONS) {
        json_num("open_seconds", (double)res->open_ns / 1e9, 3);
        json_num("bytes_per_session", res->bytes_per_session, 1);
        json_num("rss_bytes_per_session", res->rss_per_session, 1);
        json_num("threads_per_session", res->threads_per_session, 2);
    }
    if (w->out & OUT_TENTHS) {
        json_num("first_tenth_p50_us", first_tenth, 1);
        json_num("last_tenth_p50_us", last_tenth, 1);
    }
    if (w->out & OUT_WAKEUPS)
        json_num("wakeups_per_handoff", res->wakeups_per_handoff, 3);
    if ((w->out & OUT_HANDOFF) && res->handoffs > 0) {
        /* The handoff timeline (runner.c), means in µs. */
        json_num("handoff_us", (double)res->gap_ns / 1e3 / (double)res->handoffs, 1);
        json_num("release_us", (double)res->release_ns / 1e3 / n, 1);
        json_num("hold_us", (double)res->hold_ns / 1e3 / n, 1);
    }
    if (w->out & OUT_QUEUE)
        report_queue(o, res, n);
    if (w->out & OUT_PERMITS)
        printf(",\"permits\":%d", o->permits);
    if (w->out & OUT_RW)
        printf(",\"read_fraction\":%.3f,\"reads\":%d", o->read_fraction, res->reads);
    printf(",\"prefetch\":%s,\"peak_rss_kb\":%ld}\n", o->prefetch ? "true" : "false",
           proc_status_kb("VmHWM"));
    fflush(stdout);
}
