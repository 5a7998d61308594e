/* The client's metrics as Prometheus text (exposition format 0.0.4), into
 * a caller's buffer or a FILE, made from one snapshot without holding the
 * client's lock while formatting. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* Where the text goes: a buffer (counting what does not fit) or a FILE. */
struct sink {
    char *buf;
    size_t len, pos;
    FILE *f;
    bool failed;
};

static void put(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct sink *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (s->f != NULL) {
        if (vfprintf(s->f, fmt, ap) < 0)
            s->failed = true;
    } else {
        size_t room = s->pos < s->len ? s->len - s->pos : 0;
        int k = vsnprintf(room ? s->buf + s->pos : NULL, room, fmt, ap);
        if (k < 0)
            s->failed = true;
        else
            s->pos += (size_t)k;
    }
    va_end(ap);
}

/* A label value: backslash, double quote and newline escaped. */
static void put_label(struct sink *s, const char *v)
{
    for (const char *p = v; *p; p++) {
        if (*p == '\\')
            put(s, "\\\\");
        else if (*p == '"')
            put(s, "\\\"");
        else if (*p == '\n')
            put(s, "\\n");
        else
            put(s, "%c", *p);
    }
}

static void head(struct sink *s, const char *name, const char *type, const char *help)
{
    put(s, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct counter {
    const char *name, *help;
    size_t off; /* of the uint64_t in struct zkl__lockm */
};

#define LOCKC(field, help) {"zkl_lock_" #field "_total", help, offsetof(struct zkl__lockm, field)},
static const struct counter lock_counters[] = {ZKL__LOCK_COUNTERS(LOCKC)};
#undef LOCKC

#define STATC(field, mfield, help)                                                                 \
    {"zkl_client_" #field "_total", help, offsetof(zkl_client_stats, field)},
static const struct counter client_counters[] = {ZKL__CLIENT_COUNTERS(STATC)};
#undef STATC

static uint64_t at(const void *base, size_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)base + off, sizeof v);
    return v;
}

/* One histogram's samples: with a path label, or without (path NULL). */
static void histogram_samples(struct sink *s, const char *name, const char *path,
                              const zkl_histogram *h)
{
    uint64_t cum = 0;
    for (unsigned b = 0; b < ZKL_HISTOGRAM_BUCKETS; b++) {
        cum += h->buckets[b];
        put(s, "%s_bucket{", name);
        if (path) {
            put(s, "path=\"");
            put_label(s, path);
            put(s, "\",");
        }
        if (b + 1 < ZKL_HISTOGRAM_BUCKETS)
            put(s, "le=\"%.9g\"} %llu\n", (double)((uint64_t)1 << b) / 1e6,
                (unsigned long long)cum);
        else
            put(s, "le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    if (path) {
        put(s, "%s_sum{path=\"", name);
        put_label(s, path);
        put(s, "\"} %.6f\n", (double)h->sum_us / 1e6);
        put(s, "%s_count{path=\"", name);
        put_label(s, path);
        put(s, "\"} %llu\n", (unsigned long long)h->count);
    } else {
        put(s, "%s_sum %.6f\n", name, (double)h->sum_us / 1e6);
        put(s, "%s_count %llu\n", name, (unsigned long long)h->count);
    }
}

static void histogram(struct sink *s, const char *name, const char *help,
                      const struct zkl__path_snap *v, size_t n, bool hold)
{
    head(s, name, "histogram", help);
    for (size_t i = 0; i < n; i++)
        histogram_samples(s, name, v[i].path, hold ? &v[i].k.hold : &v[i].k.wait);
}

/* The client's lock counters over every path, tracked or not: families of
 * their own ("zkl_client_lock_..."), without labels, so that summing a
 * per-path family never counts a total twice. */
static void totals(struct sink *s, const struct zkl__lockm *t, size_t tracked)
{
    char name[96], help[192];
    for (size_t j = 0; j < sizeof lock_counters / sizeof lock_counters[0]; j++) {
        const struct counter *k = &lock_counters[j];
        snprintf(name, sizeof name, "zkl_client_%s", k->name + 4); /* after "zkl_" */
        snprintf(help, sizeof help, "Over every lock path: %s", k->help);
        head(s, name, "counter", help);
        put(s, "%s %llu\n", name, (unsigned long long)at(t, k->off));
    }
    head(s, "zkl_client_lock_wait_seconds", "histogram",
         "Over every lock path: time from an acquire call to the lock held.");
    histogram_samples(s, "zkl_client_lock_wait_seconds", NULL, &t->wait);
    head(s, "zkl_client_lock_hold_seconds", "histogram",
         "Over every lock path: time from the lock held to its release.");
    histogram_samples(s, "zkl_client_lock_hold_seconds", NULL, &t->hold);
    head(s, "zkl_client_lock_paths", "gauge",
         "Lock paths with metrics of their own (at most the client's limit).");
    put(s, "zkl_client_lock_paths %zu\n", tracked);
}

int zkl__metrics_text(const zkl_client_stats *st, const struct zkl__lockm *total,
                      const struct zkl__path_snap *v, size_t n, char *buf, size_t len,
                      size_t *pos, FILE *f)
{
    static const struct zkl__lockm none;
    struct sink sk = {.buf = buf, .len = len, .f = f}, *s = &sk;
    for (size_t j = 0; j < sizeof lock_counters / sizeof lock_counters[0]; j++) {
        const struct counter *k = &lock_counters[j];
        head(s, k->name, "counter", k->help);
        for (size_t i = 0; i < n; i++) {
            put(s, "%s{path=\"", k->name);
            put_label(s, v[i].path);
            put(s, "\"} %llu\n", (unsigned long long)at(&v[i].k, k->off));
        }
    }
    histogram(s, "zkl_lock_wait_seconds", "Time from an acquire call to the lock held.", v, n,
              false);
    histogram(s, "zkl_lock_hold_seconds", "Time from the lock held to its release.", v, n, true);
    totals(s, total ? total : &none, n);
    for (size_t j = 0; j < sizeof client_counters / sizeof client_counters[0]; j++) {
        const struct counter *k = &client_counters[j];
        head(s, k->name, "counter", k->help);
        put(s, "%s %llu\n", k->name, (unsigned long long)at(st, k->off));
    }
    if (pos != NULL)
        *pos = sk.pos;
    if (sk.failed)
        return f != NULL ? ZKL_ESYS : ZKL_ENOMEM;
    return 0;
}
