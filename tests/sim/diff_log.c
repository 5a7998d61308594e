/* The differential test's log: the line of each callback (answers, watch
 * and session events, refusals), the same for both backends, and how two
 * logs are compared (zxids ranked, the runs the server leaves in any order
 * sorted). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

struct be *diff_be_new(const char *name, const struct be_ops *ops, void *impl)
{
    struct be *b = calloc(1, sizeof *b);
    b->name = name;
    b->ops = ops;
    b->impl = impl;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    return b;
}

void diff_log_add(struct be *b, int s, const char *line)
{
    pthread_mutex_lock(&b->mu);
    if (!b->quiet) {
        struct diff_log *l = &b->log[s];
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 32;
            l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        }
        l->v[l->n++] = strdup(line);
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
}

void diff_log_free(struct diff_log *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static const char *req_name(int req)
{
    static const char *const names[] = {"?",      "CREATE", "DELETE",    "EXISTS", "GET",
                                        "CHILDREN", "CHILDREN2", "SET", "SET_ACL", "SYNC",
                                        "MULTI"};
    return req >= 1 && req <= ZSIM_REQ_MULTI ? names[req] : "?";
}

static void put(char *buf, size_t size, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *n, const char *fmt, ...)
{
    if (*n >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *n, size - *n, fmt, ap);
    va_end(ap);
    if (k > 0)
        *n += (size_t)k;
}

static const char *owner_name(const struct be *b, int64_t owner, char *buf)
{
    if (owner == 0)
        return "none";
    for (int i = 0; i < DIFF_SESSIONS; i++) {
        if (b->ids[i] == owner) {
            sprintf(buf, "s%d", i);
            return buf;
        }
    }
    return "other";
}

static void put_stat(const struct be *b, char *buf, size_t size, size_t *n,
                     const struct zsim_stat *st)
{
    char o[16];
    put(buf, size, n, " {v=%d cv=%d av=%d eph=%s dl=%d nc=%d cz=@%" PRId64 " mz=@%" PRId64
        " pz=@%" PRId64 "}", st->version, st->cversion, st->aversion,
        owner_name(b, st->ephemeralOwner, o), st->dataLength, st->numChildren, st->czxid,
        st->mzxid, st->pzxid);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void diff_fmt_answer(const struct be *b, char *buf, size_t size, uint64_t tag, int req, int rc,
                     const char *value, const struct zsim_stat *stat, const char *data,
                     int datalen, const char *const *names, int count,
                     const struct zsim_op_result *results, int nresults)
{
    size_t n = 0;
    put(buf, size, &n, "A t=%" PRIu64 " %s %s", tag, req_name(req), zsim_rc_name(rc));
    if (value)
        put(buf, size, &n, " v=%s", value);
    if (stat)
        put_stat(b, buf, size, &n, stat);
    if (datalen > 64) {
        put(buf, size, &n, " d=#%d", datalen);
    } else if (data && datalen >= 0) {
        put(buf, size, &n, " d=\"");
        for (int i = 0; i < datalen; i++) {
            unsigned char c = (unsigned char)data[i];
            put(buf, size, &n, c >= 32 && c < 127 && c != '"' ? "%c" : "\\x%02x", c);
        }
        put(buf, size, &n, "\"");
    } else if (req == ZSIM_REQ_GET && rc == ZSIM_OK) {
        put(buf, size, &n, " d=null");
    }
    if (names || req == ZSIM_REQ_CHILDREN || req == ZSIM_REQ_CHILDREN2) {
        if (rc == ZSIM_OK) {
            const char **v = malloc((size_t)(count ? count : 1) * sizeof *v);
            for (int i = 0; i < count; i++)
                v[i] = names[i];
            qsort(v, (size_t)count, sizeof *v, str_cmp);
            put(buf, size, &n, " n=[");
            for (int i = 0; i < count; i++)
                put(buf, size, &n, "%s%s", i ? "," : "", v[i]);
            put(buf, size, &n, "]");
            free(v);
        }
    }
    if (req == ZSIM_REQ_MULTI) {
        put(buf, size, &n, " r=[");
        for (int i = 0; i < nresults; i++) {
            put(buf, size, &n, "%s%s", i ? "," : "", zsim_rc_name(results[i].err));
            /* values and Stats only come with a multi that succeeded */
            if (rc == ZSIM_OK && results[i].value && results[i].value[0])
                put(buf, size, &n, ":%s", results[i].value);
            if (rc == ZSIM_OK && results[i].stat)
                put_stat(b, buf, size, &n, results[i].stat);
        }
        put(buf, size, &n, "]");
    }
}

void diff_fmt_event(char *buf, size_t size, int type, int state, const char *path,
                    uint64_t watcher)
{
    if (type == ZSIM_SESSION_EVENT)
        snprintf(buf, size, "S %s w=%" PRIu64, zsim_state_name(state), watcher);
    else
        snprintf(buf, size, "W %s %s w=%" PRIu64, zsim_event_name(type), path ? path : "",
                 watcher);
}

static int64_t *zx;
static size_t nzx, capzx;

static void zxid_collect(const char *line)
{
    for (const char *p = strchr(line, '@'); p; p = strchr(p + 1, '@')) {
        if (nzx == capzx) {
            capzx = capzx ? capzx * 2 : 64;
            zx = realloc(zx, capzx * sizeof *zx);
        }
        zx[nzx++] = strtoll(p + 1, NULL, 10);
    }
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A line with each @zxid replaced by its rank among the run's zxids. */
static char *zxid_rank(const char *line)
{
    char out[8192];
    size_t n = 0;
    for (const char *p = line; *p && n + 32 < sizeof out;) {
        if (*p != '@') {
            out[n++] = *p++;
            continue;
        }
        char *end;
        int64_t v = strtoll(p + 1, &end, 10);
        int64_t *hit = bsearch(&v, zx, nzx, sizeof *zx, i64_cmp);
        n += (size_t)snprintf(out + n, sizeof out - n, "z%d", (int)(hit - zx));
        p = end;
    }
    out[n] = '\0';
    return strdup(out);
}

/* The part of an event line before its watcher. */
static size_t event_key(const char *line)
{
    const char *w = strstr(line, " w=");
    return (line[0] == 'W' || line[0] == 'S') && w ? (size_t)(w - line) : 0;
}

void diff_normalize(struct be *b, struct diff_lines out[DIFF_SESSIONS])
{
    nzx = 0;
    for (int s = 0; s < DIFF_SESSIONS; s++)
        for (int i = 0; i < b->log[s].n; i++)
            zxid_collect(b->log[s].v[i]);
    if (nzx > 0) /* zx is NULL until a zxid was seen */
        qsort(zx, nzx, sizeof *zx, i64_cmp);
    size_t k = 0;
    for (size_t i = 0; i < nzx; i++)
        if (k == 0 || zx[k - 1] != zx[i])
            zx[k++] = zx[i];
    nzx = k;
    for (int s = 0; s < DIFF_SESSIONS; s++) {
        int n = b->log[s].n;
        out[s].n = n;
        out[s].v = calloc((size_t)(n ? n : 1), sizeof *out[s].v);
        for (int i = 0; i < n; i++)
            out[s].v[i] = zxid_rank(b->log[s].v[i]);
        /* the server leaves these runs in any order: sort them */
        for (int i = 0; i < n;) {
            int j = i + 1;
            if (strcmp(out[s].v[i], "M [") == 0) {
                /* a run repeated as often as time allows (a connection
                 * that breaks again at once), to the end: which lines */
                qsort(out[s].v + i + 1, (size_t)(n - i - 1), sizeof *out[s].v, str_cmp);
                int kept = i + 1;
                for (int m = i + 1; m < n; m++) {
                    if (kept > i + 1 && strcmp(out[s].v[kept - 1], out[s].v[m]) == 0)
                        free(out[s].v[m]);
                    else
                        out[s].v[kept++] = out[s].v[m];
                }
                out[s].n = n = kept;
                break;
            }
            if (strcmp(out[s].v[i], "M {") == 0) {
                while (j < n && strcmp(out[s].v[j], "M }") != 0)
                    j++;
                qsort(out[s].v + i + 1, (size_t)(j - i - 1), sizeof *out[s].v, str_cmp);
            } else if (event_key(out[s].v[i])) {
                size_t key = event_key(out[s].v[i]);
                while (j < n && event_key(out[s].v[j]) == key &&
                       strncmp(out[s].v[i], out[s].v[j], key) == 0)
                    j++;
                qsort(out[s].v + i, (size_t)(j - i), sizeof *out[s].v, str_cmp);
            }
            i = j;
        }
    }
}

void diff_lines_free(struct diff_lines l[DIFF_SESSIONS])
{
    for (int s = 0; s < DIFF_SESSIONS; s++) {
        for (int i = 0; i < l[s].n; i++)
            free(l[s].v[i]);
        free(l[s].v);
    }
}

void diff_show(const char *who, const struct diff_lines *l, int at)
{
    fprintf(stderr, "  %s:\n", who);
    for (int i = 0; i < l->n; i++)
        fprintf(stderr, "  %s %3d %s\n", i == at ? ">>" : "  ", i, l->v[i]);
}

/* 0 if equal; else reports the first difference on stderr. */
int diff_compare(const char *name, uint64_t seed, struct diff_lines a[DIFF_SESSIONS],
                   struct diff_lines m[DIFF_SESSIONS])
{
    for (int s = 0; s < DIFF_SESSIONS; s++) {
        int n = a[s].n > m[s].n ? a[s].n : m[s].n;
        for (int i = 0; i < n; i++) {
            const char *x = i < a[s].n ? a[s].v[i] : "(nothing)";
            const char *y = i < m[s].n ? m[s].v[i] : "(nothing)";
            if (strcmp(x, y) != 0) {
                fprintf(stderr, "%s: session %d, line %d: the server and the model (seed %" PRIu64
                        ") differ\n", name, s, i, seed);
                diff_show("server", &a[s], i);
                diff_show("model", &m[s], i);
                return 1;
            }
        }
    }
    return 0;
}
