/* The public calls that read a client's lock metrics and counters: the
 * engine keeps them, the metrics layer copies and formats them. */
#include <stdlib.h>
#include <string.h>

#include "front.h"

static bool version_ok(const zkl_metrics *out)
{
    return out->version >= 1 && out->version <= ZKL_METRICS_VERSION;
}

/* How much of a zkl_metrics each version has: the library writes no byte
 * past the end of the caller's version (a later version's struct is
 * longer). */
static size_t version_size(unsigned v)
{
    if (v == 1)
        return offsetof(zkl_metrics, recovered) + sizeof(uint64_t);
    return offsetof(zkl_metrics, faults) + sizeof(uint64_t);
}

static void fill(zkl_metrics *out, const struct zkl__lockm *k, const zkl_client_stats *st)
{
    zkl_metrics m;
    memset(&m, 0, sizeof m);
    m.version = out->version;
    if (k) {
#define COPY_LOCK(field, help) m.field = k->field;
        ZKL__LOCK_COUNTERS(COPY_LOCK)
#undef COPY_LOCK
        m.wait = k->wait;
        m.hold = k->hold;
    }
    if (st) {
#define COPY_CLIENT(field, mfield, help) m.mfield = st->field;
        ZKL__CLIENT_COUNTERS(COPY_CLIENT)
#undef COPY_CLIENT
    }
    memcpy(out, &m, version_size(out->version));
}

static struct zkl__metrics *metrics_of(zkl_client *c)
{
    struct zkl__engine *e = zkl__engine_find(c);
    return e ? e->metrics : NULL;
}

int zkl_client_metrics(zkl_client *c, zkl_metrics *out)
{
    int rc = zkl__client_lock(c, out != NULL && version_ok(out));
    if (rc != 0)
        return rc;
    zkl_client_stats st;
    struct zkl__lockm k;
    zkl__client_stats(c, &st);
    fill(out, zkl__metrics_total(metrics_of(c), &k) ? &k : NULL, &st);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int zkl_client_path_metrics(zkl_client *c, const char *path, zkl_metrics *out)
{
    int rc = zkl__client_lock(c, path != NULL && out != NULL && version_ok(out));
    if (rc != 0)
        return rc;
    struct zkl__lockm k;
    bool found = zkl__metrics_path(metrics_of(c), path, &k);
    if (found)
        fill(out, &k, NULL);
    pthread_mutex_unlock(&c->mu);
    return found ? 0 : ZKL_ENOENT;
}

/* The client's counters (its totals: `total` may be NULL; false in *has
 * without any yet) and every lock path's, copied at one moment. */
static int snapshot(zkl_client *c, zkl_client_stats *st, struct zkl__lockm *total, bool *has,
                    struct zkl__path_snap **v, size_t *n)
{
    int err = zkl__client_lock(c, true); /* the public calls checked their arguments */
    if (err != 0)
        return err;
    if (st)
        zkl__client_stats(c, st);
    if (total)
        *has = zkl__metrics_total(metrics_of(c), total);
    err = zkl__metrics_snapshot(metrics_of(c), v, n);
    pthread_mutex_unlock(&c->mu);
    return err;
}

int zkl_client_metrics_paths(zkl_client *c, char ***out, size_t *n)
{
    if (c == NULL || out == NULL || n == NULL)
        return ZKL_EINVAL;
    struct zkl__path_snap *v;
    size_t k;
    int err = snapshot(c, NULL, NULL, NULL, &v, &k);
    if (err != 0)
        return err;
    char **r = k ? calloc(k, sizeof *r) : NULL;
    if (k && r == NULL) {
        zkl__metrics_snapshot_free(v, k);
        return ZKL_ENOMEM;
    }
    for (size_t i = 0; i < k; i++) {
        r[i] = v[i].path; /* moved out of the snapshot */
        v[i].path = NULL;
    }
    zkl__metrics_snapshot_free(v, k);
    *out = r;
    *n = k;
    return 0;
}

void zkl_client_metrics_paths_free(char **paths, size_t n)
{
    for (size_t i = 0; paths != NULL && i < n; i++)
        free(paths[i]);
    free(paths);
}

/* The Prometheus text, formatted without the client's lock. */
static int text(zkl_client *c, char *buf, size_t len, size_t *pos, FILE *f)
{
    zkl_client_stats st;
    struct zkl__lockm total;
    bool has = false;
    struct zkl__path_snap *v;
    size_t n;
    int err = snapshot(c, &st, &total, &has, &v, &n);
    if (err != 0)
        return err;
    err = zkl__metrics_text(&st, has ? &total : NULL, v, n, buf, len, pos, f);
    zkl__metrics_snapshot_free(v, n);
    return err;
}

int zkl_client_metrics_write(zkl_client *c, char *buf, size_t len, size_t *needed)
{
    if (c == NULL || (buf == NULL && len > 0))
        return ZKL_EINVAL;
    size_t pos = 0;
    int err = text(c, buf, len, &pos, NULL);
    if (err != 0)
        return err;
    if (needed)
        *needed = pos;
    if (len > 0 && pos >= len)
        buf[len - 1] = '\0';
    return pos < len ? 0 : ZKL_ERANGE;
}

int zkl_client_metrics_fprint(zkl_client *c, FILE *f)
{
    if (c == NULL || f == NULL)
        return ZKL_EINVAL;
    int err = text(c, NULL, 0, NULL, f);
    if (err != 0)
        return err;
    return fflush(f) != 0 ? ZKL_ESYS : 0;
}
