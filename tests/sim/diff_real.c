/* The differential test's backend on a real ZooKeeper: libzookeeper_mt's
 * asynchronous calls, every completion and watcher call written to the
 * session's log on the client's completion thread. A proxied session
 * connects through a zkproxy of its own. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "diff.h"
#include "zkproxy.h"

struct real {
    char host[128];
    zhandle_t *zh[DIFF_SESSIONS];
    struct zkproxy *proxy[DIFF_SESSIONS];
};

/* What a completion needs: where to log, and what the call was. */
struct call {
    struct be *b;
    int s;
    uint64_t tag;
    int req;
    int nops;
    zoo_op_t *ops;
    zoo_op_result_t *results;
    struct Stat *stats;
    char (*names)[256];
};

static struct real *R(struct be *b)
{
    return b->impl;
}

static void stat_from(struct zsim_stat *out, const struct Stat *st)
{
    out->czxid = st->czxid;
    out->mzxid = st->mzxid;
    out->ctime = st->ctime;
    out->mtime = st->mtime;
    out->version = st->version;
    out->cversion = st->cversion;
    out->aversion = st->aversion;
    out->ephemeralOwner = st->ephemeralOwner;
    out->dataLength = st->dataLength;
    out->numChildren = st->numChildren;
    out->pzxid = st->pzxid;
}

static void log_answer(struct call *c, int rc, const char *value, const struct Stat *st,
                       const char *data, int datalen, const struct String_vector *names)
{
    char line[8192];
    struct zsim_stat zs;
    if (st)
        stat_from(&zs, st);
    diff_fmt_answer(c->b, line, sizeof line, c->tag, c->req, rc, value, st ? &zs : NULL, data,
                    datalen, names ? (const char *const *)names->data : NULL,
                    names ? names->count : 0, NULL, 0);
    diff_log_add(c->b, c->s, line);
    free(c);
}

static void done_string_stat(int rc, const char *value, const struct Stat *st, const void *d)
{
    log_answer((struct call *)d, rc, rc == ZOK ? value : NULL, rc == ZOK ? st : NULL, NULL, -1,
               NULL);
}

static void done_void(int rc, const void *d)
{
    log_answer((struct call *)d, rc, NULL, NULL, NULL, -1, NULL);
}

static void done_stat(int rc, const struct Stat *st, const void *d)
{
    log_answer((struct call *)d, rc, NULL, rc == ZOK ? st : NULL, NULL, -1, NULL);
}

static void done_data(int rc, const char *value, int len, const struct Stat *st, const void *d)
{
    log_answer((struct call *)d, rc, NULL, rc == ZOK ? st : NULL, rc == ZOK ? value : NULL,
               rc == ZOK ? len : -1, NULL);
}

static void done_strings(int rc, const struct String_vector *v, const void *d)
{
    log_answer((struct call *)d, rc, NULL, NULL, NULL, -1, rc == ZOK ? v : NULL);
}

static void done_strings_stat(int rc, const struct String_vector *v, const struct Stat *st,
                              const void *d)
{
    log_answer((struct call *)d, rc, NULL, rc == ZOK ? st : NULL, NULL, -1, rc == ZOK ? v : NULL);
}

static void done_string(int rc, const char *value, const void *d)
{
    log_answer((struct call *)d, rc, rc == ZOK ? value : NULL, NULL, NULL, -1, NULL);
}

static void done_multi(int rc, const void *d)
{
    struct call *c = (struct call *)d;
    struct zsim_op_result res[16];
    struct zsim_stat st[16];
    for (int i = 0; i < c->nops; i++) {
        res[i].err = c->results[i].err;
        res[i].value = c->ops[i].type == ZOO_CREATE_OP ? c->results[i].value : NULL;
        res[i].stat = NULL;
        if (c->ops[i].type == ZOO_SETDATA_OP) {
            stat_from(&st[i], &c->stats[i]);
            res[i].stat = &st[i];
        }
    }
    char line[8192];
    diff_fmt_answer(c->b, line, sizeof line, c->tag, c->req, rc, NULL, NULL, NULL, -1, NULL, 0,
                    res, c->nops);
    diff_log_add(c->b, c->s, line);
    free(c->ops);
    free(c->results);
    free(c->stats);
    free(c->names);
    free(c);
}

/* The handle's context: its session's index and the backend, so that the
 * watcher finds both; the default watcher is called with it as its ctx. */
struct ctx {
    int index;
    struct be *b;
};
static struct ctx contexts[DIFF_SESSIONS];

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    struct ctx *c = (struct ctx *)zoo_get_context(zh);
    uint64_t tag = ctx == (void *)c ? DIFF_DEFAULT_WATCHER : (uint64_t)(uintptr_t)ctx;
    char line[1024];
    diff_fmt_event(line, sizeof line, type, state, path, tag);
    diff_log_add(c->b, c->index, line);
}

static struct call *call_new(struct be *b, int s, uint64_t tag, int req)
{
    struct call *c = calloc(1, sizeof *c);
    c->b = b;
    c->s = s;
    c->tag = tag;
    c->req = req;
    return c;
}

/* The completion is not called when a call is refused: free its context. */
static int issued(int rc, struct call *c)
{
    if (rc != ZOK) {
        free(c->ops);
        free(c->results);
        free(c->stats);
        free(c->names);
        free(c);
    }
    return rc;
}

static struct ACL_vector *acl_to(const struct zsim_acl_vector *v, struct ACL_vector *out,
                                 struct ACL *buf)
{
    if (v == NULL)
        return NULL;
    for (int i = 0; i < v->count; i++) {
        buf[i].perms = v->data[i].perms;
        buf[i].id.scheme = (char *)v->data[i].scheme;
        buf[i].id.id = (char *)v->data[i].id;
    }
    out->count = v->count;
    out->data = buf;
    return out;
}

static void real_open(struct be *b, int s, int timeout_ms, bool proxied)
{
    struct real *r = R(b);
    const char *host = r->host;
    if (proxied) {
        r->proxy[s] = zkproxy_start(r->host);
        host = zkproxy_address(r->proxy[s]);
    }
    contexts[s].index = s;
    contexts[s].b = b;
    r->zh[s] = zookeeper_init(host, watcher, timeout_ms, NULL, &contexts[s], 0);
}

static watcher_fn wfn(uint64_t watcher_tag)
{
    return watcher_tag ? watcher : NULL;
}

static int real_create(struct be *b, int s, const char *path, const char *data, int len,
                       const struct zsim_acl_vector *acl, int mode, uint64_t tag)
{
    struct ACL_vector v = {0, NULL}, *vp;
    struct ACL buf[8];
    vp = acl_to(acl, &v, buf);
    struct call *c = call_new(b, s, tag, ZSIM_REQ_CREATE);
    return issued(zoo_acreate2(R(b)->zh[s], path, data, len, vp ? vp : &v, mode,
                               done_string_stat, c),
                  c);
}

static int real_del(struct be *b, int s, const char *path, int version, uint64_t tag)
{
    struct call *c = call_new(b, s, tag, ZSIM_REQ_DELETE);
    return issued(zoo_adelete(R(b)->zh[s], path, version, done_void, c), c);
}

static int real_exists(struct be *b, int s, const char *path, uint64_t w, uint64_t tag)
{
    struct call *c = call_new(b, s, tag, ZSIM_REQ_EXISTS);
    return issued(zoo_awexists(R(b)->zh[s], path, wfn(w), (void *)(uintptr_t)w, done_stat, c), c);
}

static int real_get(struct be *b, int s, const char *path, uint64_t w, uint64_t tag)
{
    struct call *c = call_new(b, s, tag, ZSIM_REQ_GET);
    return issued(zoo_awget(R(b)->zh[s], path, wfn(w), (void *)(uintptr_t)w, done_data, c), c);
}

static int real_children(struct be *b, int s, const char *path, uint64_t w, bool stat,
                         uint64_t tag)
{
    struct call *c = call_new(b, s, tag, stat ? ZSIM_REQ_CHILDREN2 : ZSIM_REQ_CHILDREN);
    if (stat)
        return issued(zoo_awget_children2(R(b)->zh[s], path, wfn(w), (void *)(uintptr_t)w,
                                          done_strings_stat, c),
                      c);
    return issued(zoo_awget_children(R(b)->zh[s], path, wfn(w), (void *)(uintptr_t)w,
                                     done_strings, c),
                  c);
}

static int real_set(struct be *b, int s, const char *path, const char *data, int len,
                    int version, uint64_t tag)
{
    struct call *c = call_new(b, s, tag, ZSIM_REQ_SET);
    return issued(zoo_aset(R(b)->zh[s], path, data, len, version, done_stat, c), c);
}

static int real_sync(struct be *b, int s, const char *path, uint64_t tag)
{
    struct call *c = call_new(b, s, tag, ZSIM_REQ_SYNC);
    return issued(zoo_async(R(b)->zh[s], path, done_string, c), c);
}

static int real_multi(struct be *b, int s, int n, const struct zsim_op *ops, uint64_t tag)
{
    struct call *c = call_new(b, s, tag, ZSIM_REQ_MULTI);
    c->nops = n;
    c->ops = calloc((size_t)(n ? n : 1), sizeof *c->ops);
    c->results = calloc((size_t)(n ? n : 1), sizeof *c->results);
    c->stats = calloc((size_t)(n ? n : 1), sizeof *c->stats);
    c->names = calloc((size_t)(n ? n : 1), sizeof *c->names);
    struct ACL_vector v[16];
    struct ACL buf[16][8];
    for (int i = 0; i < n && i < 16; i++) {
        const struct zsim_op *o = &ops[i];
        switch (o->type) {
        case ZSIM_MOP_CREATE:
            zoo_create_op_init(&c->ops[i], o->path, o->data, o->len, acl_to(o->acl, &v[i], buf[i]),
                               o->mode, c->names[i], sizeof c->names[i]);
            break;
        case ZSIM_MOP_DELETE:
            zoo_delete_op_init(&c->ops[i], o->path, o->version);
            break;
        case ZSIM_MOP_SET:
            zoo_set_op_init(&c->ops[i], o->path, o->data, o->len, o->version, &c->stats[i]);
            break;
        default:
            zoo_check_op_init(&c->ops[i], o->path, o->version);
            break;
        }
    }
    return issued(zoo_amulti(R(b)->zh[s], n, c->ops, c->results, done_multi, c), c);
}

static void real_auth(struct be *b, int s, const char *cert)
{
    zoo_add_auth(R(b)->zh[s], "digest", cert, (int)strlen(cert), NULL, NULL);
}

static void real_close(struct be *b, int s)
{
    struct real *r = R(b);
    if (r->zh[s])
        zookeeper_close(r->zh[s]);
    r->zh[s] = NULL;
}

static void real_link(struct be *b, int s, bool to_server, bool to_client)
{
    zkproxy_set(R(b)->proxy[s], to_server, to_client);
}

static void real_reset(struct be *b, int s)
{
    zkproxy_reset(R(b)->proxy[s]);
}

static bool real_run_until(struct be *b, bool (*cond)(struct be *, const void *), const void *arg,
                           int ms)
{
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += ms / 1000;
    end.tv_nsec += (long)(ms % 1000) * 1000000;
    if (end.tv_nsec >= 1000000000) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&b->mu);
    bool ok;
    while (!(ok = cond(b, arg)))
        if (pthread_cond_timedwait(&b->cv, &b->mu, &end) != 0) {
            ok = cond(b, arg);
            break;
        }
    pthread_mutex_unlock(&b->mu);
    return ok;
}

static int64_t real_session_id(struct be *b, int s)
{
    const clientid_t *id = R(b)->zh[s] ? zoo_client_id(R(b)->zh[s]) : NULL;
    return id ? id->client_id : 0;
}

static void real_finish(struct be *b)
{
    struct real *r = R(b);
    pthread_mutex_lock(&b->mu);
    b->quiet = true;
    pthread_mutex_unlock(&b->mu);
    for (int s = 0; s < DIFF_SESSIONS; s++) {
        if (r->zh[s])
            zookeeper_close(r->zh[s]);
        zkproxy_stop(r->proxy[s]);
    }
    free(r);
}

static const struct be_ops real_ops = {
    real_open, real_create, real_del,  real_exists, real_get,   real_children,  real_set,
    real_sync, real_multi,  real_auth, real_close,  real_link,  real_reset,     real_run_until,
    real_session_id, real_finish,
};

struct be *diff_real_new(const char *host)
{
    struct real *r = calloc(1, sizeof *r);
    snprintf(r->host, sizeof r->host, "%s", host);
    return diff_be_new("server", &real_ops, r);
}
