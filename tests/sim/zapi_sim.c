/* The seam below the session (lib/session/zapi.h) over the model of
 * ZooKeeper (zsim.h): a zkl client opened with this table talks to a
 * simulated ensemble, in one thread. Requests go to the model with a tag
 * that names their completion; the driver hands each item the model
 * delivers to zapi_sim_item, which calls the completion or the watchers as
 * libzookeeper_mt would: each completion once, in the session's order; a
 * session event to the default watcher and to every registered one; and
 * at zookeeper_close, every completion still pending with ZCLOSING before
 * the close returns, nothing of the handle after it. A synchronous call
 * sends its request and runs the driver's stepper (zapi_sim_set_stepper)
 * until the answer comes; without a stepper it is not modelled
 * (ZSYSTEMERROR). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zapi_sim.h"

/* A (watcher function, context) pair: the model names it by its tag,
 * the pair's place here plus one. */
struct wpair {
    watcher_fn fn;
    void *ctx;
};

enum rkind { RK_STRING, RK_STRING_STAT, RK_VOID, RK_DATA, RK_STRINGS, RK_STAT, RK_MULTI };

/* A request sent: its tag is its place plus one. */
struct rec {
    struct simh *h;
    enum rkind kind;
    void (*fn)(void);
    const void *data;
    bool done;
    int force_rc; /* non-zero: the answer's code, whatever the model said */
};

/* A handle: what zookeeper_init returned, as the library sees it. */
struct simh {
    zsim_session *s;
    watcher_fn fn;
    void *ctx;
    uint64_t dtag; /* the default watcher's */
    bool closed;
    char refuse[256]; /* deletes under this path are refused (ZNOAUTH) */
    clientid_t cid;
    struct simh *next;
};

static struct {
    zsim_world *w;
    struct wpair *wp;
    size_t nwp, capwp;
    struct rec *recs;
    size_t nrecs, caprecs;
    struct simh *handles;
} S;

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(p, n * size);
    if (q == NULL)
        abort(); /* a test tool: out of memory ends it */
    *cap = n;
    return q;
}

void zapi_sim_begin(zsim_world *w)
{
    zapi_sim_end();
    S.w = w;
}

void zapi_sim_end(void)
{
    while (S.handles) {
        struct simh *h = S.handles;
        S.handles = h->next;
        free(h);
    }
    free(S.wp);
    free(S.recs);
    memset(&S, 0, sizeof S);
}

size_t zapi_sim_pending(void)
{
    size_t n = 0;
    for (size_t i = 0; i < S.nrecs; i++)
        n += !S.recs[i].done;
    return n;
}

zsim_session *zapi_sim_session(zhandle_t *zh)
{
    return ((struct simh *)(void *)zh)->s;
}

static uint64_t watcher_tag(watcher_fn fn, void *ctx)
{
    for (size_t i = 0; i < S.nwp; i++)
        if (S.wp[i].fn == fn && S.wp[i].ctx == ctx)
            return i + 1;
    S.wp = grow(S.wp, &S.capwp, S.nwp + 1, sizeof *S.wp);
    S.wp[S.nwp] = (struct wpair){fn, ctx};
    return ++S.nwp;
}

static void (*observer)(zhandle_t *zh, const char *path, bool watch);

void zapi_sim_set_observer(void (*fn)(zhandle_t *zh, const char *path, bool watch))
{
    observer = fn;
}

/* A request of handle h on path (watch: a data watch on it) is sent. */
static uint64_t rec_new(struct simh *h, enum rkind kind, void (*fn)(void), const void *data,
                        const char *path, bool watch)
{
    if (observer != NULL)
        observer((zhandle_t *)(void *)h, path, watch);
    S.recs = grow(S.recs, &S.caprecs, S.nrecs + 1, sizeof *S.recs);
    S.recs[S.nrecs] = (struct rec){h, kind, fn, data, false, 0};
    return ++S.nrecs;
}

/* A request the model refused at once has no completion to come. */
static int sent(uint64_t tag, int rc)
{
    if (rc != ZOK)
        S.recs[tag - 1].done = true;
    return rc;
}

static void stat_of(struct Stat *st, const struct zsim_stat *z)
{
    *st = (struct Stat){z->czxid, z->mzxid, z->ctime, z->mtime, z->version, z->cversion,
                        z->aversion, z->ephemeralOwner, z->dataLength, z->numChildren,
                        z->pzxid};
}

static void multi_done(struct rec *r, int rc, const struct zsim_item *it);

/* Call a request's completion with rc and what the answer carries (NULL
 * for none: ZCLOSING, a failure). */
static void complete(struct rec *r, int rc, const struct zsim_item *it)
{
    r->done = true;
    if (r->force_rc != 0 && (rc == ZOK || rc == ZNONODE))
        rc = r->force_rc;
    struct Stat st;
    const struct Stat *stp = NULL;
    if (rc == ZOK && it != NULL && it->stat != NULL) {
        stat_of(&st, it->stat);
        stp = &st;
    }
    const char *value = rc == ZOK && it != NULL ? it->value : NULL;
    switch (r->kind) {
    case RK_STRING:
        ((string_completion_t)r->fn)(rc, value, r->data);
        break;
    case RK_STRING_STAT:
        ((string_stat_completion_t)r->fn)(rc, value, stp, r->data);
        break;
    case RK_VOID:
        ((void_completion_t)r->fn)(rc, r->data);
        break;
    case RK_DATA:
        ((data_completion_t)r->fn)(rc, rc == ZOK && it ? it->data : NULL,
                                   rc == ZOK && it ? it->datalen : -1, stp, r->data);
        break;
    case RK_STRINGS: {
        struct String_vector sv = {0, NULL};
        if (rc == ZOK && it != NULL && it->count > 0) {
            sv.count = it->count;
            sv.data = (char **)(uintptr_t)it->names; /* borrowed, as the C client lends them */
        }
        ((strings_completion_t)r->fn)(rc, rc == ZOK ? &sv : NULL, r->data);
        break;
    }
    case RK_STAT:
        ((stat_completion_t)r->fn)(rc, stp, r->data);
        break;
    case RK_MULTI:
        multi_done(r, rc, it);
        break;
    }
}

static struct simh *handle_of(const zsim_session *s)
{
    for (struct simh *h = S.handles; h; h = h->next)
        if (h->s == s)
            return h;
    return NULL;
}

void zapi_sim_item(const struct zsim_item *it)
{
    struct simh *h = handle_of(it->session);
    if (h == NULL || h->closed)
        return; /* nothing of a closed handle comes after its close */
    zhandle_t *zh = (zhandle_t *)(void *)h;
    switch (it->kind) {
    case ZSIM_ANSWER:
        if (it->tag >= 1 && it->tag <= S.nrecs && !S.recs[it->tag - 1].done)
            complete(&S.recs[it->tag - 1], it->rc, it);
        break;
    case ZSIM_WATCH:
    case ZSIM_SESSION:
        for (int i = 0; i < it->nwatchers; i++) {
            uint64_t t = it->watchers[i];
            if (t < 1 || t > S.nwp)
                continue;
            struct wpair p = S.wp[t - 1];
            p.fn(zh, it->kind == ZSIM_SESSION ? ZOO_SESSION_EVENT : it->type, it->state,
                 it->path ? it->path : "", p.ctx);
            if (h->closed)
                break;
        }
        break;
    case ZSIM_TIMER:
        break;
    }
}

/* ---- the table ---------------------------------------------------------------- */

static struct simh *H(zhandle_t *zh)
{
    return (struct simh *)(void *)zh;
}

static zhandle_t *sim_init(const char *host, watcher_fn fn, int recv_timeout,
                           const clientid_t *clientid, void *context, int flags)
{
    (void)host;
    (void)clientid;
    (void)flags;
    struct simh *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->fn = fn;
    h->ctx = context;
    h->dtag = watcher_tag(fn, context);
    h->s = zsim_session_new(S.w, recv_timeout, h->dtag);
    h->next = S.handles;
    S.handles = h;
    return (zhandle_t *)(void *)h;
}

static int sim_close(zhandle_t *zh)
{
    struct simh *h = H(zh);
    if (h == NULL || h->closed)
        return ZBADARGUMENTS;
    zsim_close(h->s);
    h->closed = true;
    /* Every completion still pending: ZCLOSING, before the close returns,
     * in the order of the requests. */
    for (size_t i = 0; i < S.nrecs; i++)
        if (S.recs[i].h == h && !S.recs[i].done)
            complete(&S.recs[i], ZCLOSING, NULL);
    return ZOK;
}

static int sim_state(zhandle_t *zh)
{
    struct simh *h = H(zh);
    return h->closed ? 0 : zsim_state(h->s);
}

static const clientid_t *sim_client_id(zhandle_t *zh)
{
    struct simh *h = H(zh);
    h->cid.client_id = zsim_session_id(h->s);
    return &h->cid;
}

static int sim_recv_timeout(zhandle_t *zh)
{
    return zsim_recv_timeout(H(zh)->s);
}

static watcher_fn sim_set_watcher(zhandle_t *zh, watcher_fn fn)
{
    struct simh *h = H(zh);
    (void)fn;
    /* Only a wrapped handle's watcher changes, and a wrapped handle is
     * always libzookeeper_mt's own: nothing to do here. */
    return h->fn;
}

static int sim_resolution_delay(zhandle_t *zh, int delay_ms)
{
    (void)zh;
    (void)delay_ms;
    return ZOK;
}

static int sim_add_auth(zhandle_t *zh, const char *scheme, const char *cert, int cert_len,
                        void_completion_t completion, const void *data)
{
    char buf[512];
    if (cert_len < 0 || (size_t)cert_len >= sizeof buf)
        return ZBADARGUMENTS;
    memcpy(buf, cert, (size_t)cert_len);
    buf[cert_len] = '\0';
    int rc = zsim_add_auth(H(zh)->s, scheme, buf);
    if (rc == ZOK && completion != NULL)
        completion(ZOK, data); /* no AUTH_FAILED in the model */
    return rc;
}

static void sim_debug_level(ZooLogLevel level)
{
    (void)level;
}

static void sim_log_stream(FILE *stream)
{
    (void)stream;
}

/* The model's copy of an ACL list (up to 16 entries, as zkl sends). */
struct zacl {
    struct zsim_acl a[16];
    struct zsim_acl_vector v;
};

static const struct zsim_acl_vector *acl_of(struct zacl *z, const struct ACL_vector *acl)
{
    if (acl == NULL)
        return &ZSIM_OPEN_ACL_UNSAFE;
    int n = acl->count < 16 ? acl->count : 16;
    for (int i = 0; i < n; i++)
        z->a[i] = (struct zsim_acl){acl->data[i].perms, acl->data[i].id.scheme,
                                    acl->data[i].id.id};
    z->v = (struct zsim_acl_vector){n, z->a};
    return &z->v;
}

static int sim_acreate(zhandle_t *zh, const char *path, const char *value, int valuelen,
                       const struct ACL_vector *acl, int mode, string_completion_t completion,
                       const void *data)
{
    struct zacl z;
    uint64_t tag = rec_new(H(zh), RK_STRING, (void (*)(void))completion, data, path, false);
    return sent(tag, zsim_acreate(H(zh)->s, path, value, valuelen, acl_of(&z, acl), mode, tag));
}

static int sim_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                        const struct ACL_vector *acl, int mode,
                        string_stat_completion_t completion, const void *data)
{
    struct zacl z;
    uint64_t tag = rec_new(H(zh), RK_STRING_STAT, (void (*)(void))completion, data, path, false);
    return sent(tag, zsim_acreate(H(zh)->s, path, value, valuelen, acl_of(&z, acl), mode, tag));
}

static int sim_adelete(zhandle_t *zh, const char *path, int version,
                       void_completion_t completion, const void *data)
{
    uint64_t tag = rec_new(H(zh), RK_VOID, (void (*)(void))completion, data, path, false);
    size_t n = strlen(H(zh)->refuse);
    if (n > 0 && strncmp(path, H(zh)->refuse, n) == 0 && path[n] == '/') {
        /* Refused as an ACL without DELETE would: a read of the node takes
         * the delete's place in the session's order, its answer ZNOAUTH. */
        S.recs[tag - 1].force_rc = ZNOAUTH;
        return sent(tag, zsim_aexists(H(zh)->s, path, 0, tag));
    }
    return sent(tag, zsim_adelete(H(zh)->s, path, version, tag));
}

void zapi_sim_refuse_deletes(zhandle_t *zh, const char *dir)
{
    snprintf(H(zh)->refuse, sizeof H(zh)->refuse, "%s", dir ? dir : "");
}

static int sim_aget(zhandle_t *zh, const char *path, int watch, data_completion_t completion,
                    const void *data)
{
    uint64_t tag = rec_new(H(zh), RK_DATA, (void (*)(void))completion, data, path, watch != 0);
    return sent(tag, zsim_aget(H(zh)->s, path, watch ? H(zh)->dtag : 0, tag));
}

static int sim_awget(zhandle_t *zh, const char *path, watcher_fn watcher, void *watcher_ctx,
                     data_completion_t completion, const void *data)
{
    uint64_t w = watcher ? watcher_tag(watcher, watcher_ctx) : 0;
    uint64_t tag = rec_new(H(zh), RK_DATA, (void (*)(void))completion, data, path, watcher != NULL);
    return sent(tag, zsim_aget(H(zh)->s, path, w, tag));
}

static int sim_aget_children(zhandle_t *zh, const char *path, int watch,
                             strings_completion_t completion, const void *data)
{
    uint64_t tag = rec_new(H(zh), RK_STRINGS, (void (*)(void))completion, data, path, false);
    return sent(tag, zsim_aget_children(H(zh)->s, path, watch ? H(zh)->dtag : 0, tag));
}

static int sim_awget_children(zhandle_t *zh, const char *path, watcher_fn watcher,
                              void *watcher_ctx, strings_completion_t completion,
                              const void *data)
{
    uint64_t w = watcher ? watcher_tag(watcher, watcher_ctx) : 0;
    uint64_t tag = rec_new(H(zh), RK_STRINGS, (void (*)(void))completion, data, path, false);
    return sent(tag, zsim_aget_children(H(zh)->s, path, w, tag));
}

static int sim_awexists(zhandle_t *zh, const char *path, watcher_fn watcher, void *watcher_ctx,
                        stat_completion_t completion, const void *data)
{
    uint64_t w = watcher ? watcher_tag(watcher, watcher_ctx) : 0;
    uint64_t tag = rec_new(H(zh), RK_STAT, (void (*)(void))completion, data, path, watcher != NULL);
    return sent(tag, zsim_aexists(H(zh)->s, path, w, tag));
}

static int sim_aset(zhandle_t *zh, const char *path, const char *buffer, int buflen, int version,
                    stat_completion_t completion, const void *data)
{
    uint64_t tag = rec_new(H(zh), RK_STAT, (void (*)(void))completion, data, path, false);
    return sent(tag, zsim_aset(H(zh)->s, path, buffer, buflen, version, tag));
}

static int sim_async(zhandle_t *zh, const char *path, string_completion_t completion,
                     const void *data)
{
    uint64_t tag = rec_new(H(zh), RK_STRING, (void (*)(void))completion, data, path, false);
    return sent(tag, zsim_async(H(zh)->s, path, tag));
}

/* ---- synchronous calls: the request, then the world's steps until its answer ---- */

/* What a synchronous call's answer leaves for it (copied from the item,
 * whose pointers go with the next step). */
struct sync {
    bool done;
    int rc;
    struct Stat st;
    bool has_st;
    char *buf;      /* get: the caller's buffer, its room in *len */
    int *len;
    struct String_vector *kids;
    int count;      /* multi: the results' room */
    zoo_op_result_t *results;
    const zoo_op_t *ops;
};

static void (*stepper)(zhandle_t *zh);

void zapi_sim_set_stepper(void (*step)(zhandle_t *zh))
{
    stepper = step;
}

static void sync_stat(int rc, const struct Stat *st, const void *data)
{
    struct sync *y = (struct sync *)(uintptr_t)data;
    y->done = true;
    y->rc = rc;
    if (st != NULL) {
        y->st = *st;
        y->has_st = true;
    }
}

static void sync_data(int rc, const char *value, int len, const struct Stat *st,
                      const void *data)
{
    struct sync *y = (struct sync *)(uintptr_t)data;
    sync_stat(rc, st, data);
    if (rc == ZOK && y->len != NULL) {
        int room = *y->len;
        int n = len < 0 ? -1 : len < room ? len : room;
        if (n > 0 && y->buf != NULL)
            memcpy(y->buf, value, (size_t)n);
        *y->len = n;
    }
}

static void sync_strings(int rc, const struct String_vector *sv, const void *data)
{
    struct sync *y = (struct sync *)(uintptr_t)data;
    y->done = true;
    y->rc = rc;
    if (rc != ZOK || sv == NULL || y->kids == NULL)
        return;
    /* The caller frees it with deallocate_String_vector: malloc'd, as the
     * C client's are. */
    y->kids->count = sv->count;
    y->kids->data = sv->count > 0 ? calloc((size_t)sv->count, sizeof(char *)) : NULL;
    if (sv->count > 0 && y->kids->data == NULL)
        abort();
    for (int i = 0; i < sv->count; i++)
        if ((y->kids->data[i] = strdup(sv->data[i])) == NULL)
            abort();
}

/* Step the world until the request y waits for (on handle zh), sent with
 * code rc, is answered; its code. Without a stepper (none set), not modelled. */
static int sync_wait(zhandle_t *zh, struct sync *y, int rc)
{
    if (rc != ZOK)
        return rc;
    for (long i = 0; !y->done; i++) {
        if (i > 5000000)
            abort(); /* no answer ever: the model or the driver is stuck */
        stepper(zh);
    }
    return y->rc;
}

static int sim_exists(zhandle_t *zh, const char *path, int watch, struct Stat *stat)
{
    (void)watch; /* the library's synchronous calls set no watch */
    if (stepper == NULL)
        return ZSYSTEMERROR;
    struct sync y = {0};
    uint64_t tag = rec_new(H(zh), RK_STAT, (void (*)(void))sync_stat, &y, path, false);
    int rc = sync_wait(zh, &y, sent(tag, zsim_aexists(H(zh)->s, path, 0, tag)));
    if (stat != NULL && y.has_st)
        *stat = y.st;
    return rc;
}

static int sim_get(zhandle_t *zh, const char *path, int watch, char *buffer, int *buffer_len,
                   struct Stat *stat)
{
    (void)watch;
    if (stepper == NULL)
        return ZSYSTEMERROR;
    struct sync y = {.buf = buffer, .len = buffer_len};
    uint64_t tag = rec_new(H(zh), RK_DATA, (void (*)(void))sync_data, &y, path, false);
    int rc = sync_wait(zh, &y, sent(tag, zsim_aget(H(zh)->s, path, 0, tag)));
    if (stat != NULL && y.has_st)
        *stat = y.st;
    return rc;
}

static int sim_set(zhandle_t *zh, const char *path, const char *buffer, int buflen, int version)
{
    if (stepper == NULL)
        return ZSYSTEMERROR;
    struct sync y = {0};
    uint64_t tag = rec_new(H(zh), RK_STAT, (void (*)(void))sync_stat, &y, path, false);
    return sync_wait(zh, &y, sent(tag, zsim_aset(H(zh)->s, path, buffer, buflen, version, tag)));
}

static int sim_get_children(zhandle_t *zh, const char *path, int watch,
                            struct String_vector *strings)
{
    (void)watch;
    if (stepper == NULL)
        return ZSYSTEMERROR;
    struct sync y = {.kids = strings};
    if (strings != NULL)
        *strings = (struct String_vector){0, NULL};
    uint64_t tag = rec_new(H(zh), RK_STRINGS, (void (*)(void))sync_strings, &y, path, false);
    return sync_wait(zh, &y, sent(tag, zsim_aget_children(H(zh)->s, path, 0, tag)));
}

static int sim_multi(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results)
{
    if (stepper == NULL)
        return ZSYSTEMERROR;
    if (count < 1 || count > 16)
        return ZBADARGUMENTS;
    struct zsim_op z[16];
    struct zacl acls[16];
    for (int i = 0; i < count; i++) {
        const zoo_op_t *o = &ops[i];
        switch (o->type) {
        case ZOO_CREATE_OP:
            z[i] = (struct zsim_op){ZSIM_MOP_CREATE, o->create_op.path, o->create_op.data,
                                    o->create_op.datalen, acl_of(&acls[i], o->create_op.acl),
                                    o->create_op.flags, -1};
            break;
        case ZOO_DELETE_OP:
            z[i] = (struct zsim_op){ZSIM_MOP_DELETE, o->delete_op.path, NULL, -1, NULL, 0,
                                    o->delete_op.version};
            break;
        case ZOO_SETDATA_OP:
            z[i] = (struct zsim_op){ZSIM_MOP_SET, o->set_op.path, o->set_op.data,
                                    o->set_op.datalen, NULL, 0, o->set_op.version};
            break;
        case ZOO_CHECK_OP:
            z[i] = (struct zsim_op){ZSIM_MOP_CHECK, o->check_op.path, NULL, -1, NULL, 0,
                                    o->check_op.version};
            break;
        default:
            return ZBADARGUMENTS;
        }
    }
    struct sync y = {.count = count, .results = results, .ops = ops};
    uint64_t tag = rec_new(H(zh), RK_MULTI, NULL, &y, z[0].path, false);
    return sync_wait(zh, &y, sent(tag, zsim_amulti(H(zh)->s, count, z, tag)));
}

/* A multi's answer: each op's code, a set's Stat where its op asks. */
static void multi_done(struct rec *r, int rc, const struct zsim_item *it)
{
    struct sync *y = (struct sync *)(uintptr_t)r->data;
    y->done = true;
    y->rc = rc;
    for (int i = 0; i < y->count && y->results != NULL; i++) {
        const struct zsim_op_result *z = it != NULL && i < it->count && it->results != NULL
                                             ? &it->results[i] : NULL;
        y->results[i] = (zoo_op_result_t){z != NULL ? z->err : rc, NULL, 0, NULL};
        if (z != NULL && z->stat != NULL && y->ops[i].type == ZOO_SETDATA_OP &&
            y->ops[i].set_op.stat != NULL) {
            stat_of(y->ops[i].set_op.stat, z->stat);
            y->results[i].stat = y->ops[i].set_op.stat;
        }
    }
}

static void sim_check_op_init(zoo_op_t *op, const char *path, int version)
{
    memset(op, 0, sizeof *op);
    op->type = ZOO_CHECK_OP;
    op->check_op.path = path;
    op->check_op.version = version;
}

static void sim_set_op_init(zoo_op_t *op, const char *path, const char *buffer, int buflen,
                            int version, struct Stat *stat)
{
    memset(op, 0, sizeof *op);
    op->type = ZOO_SETDATA_OP;
    op->set_op.path = path;
    op->set_op.data = buffer;
    op->set_op.datalen = buflen;
    op->set_op.version = version;
    op->set_op.stat = stat;
}

const struct zkl__zapi zapi_sim = {
    .init = sim_init,
    .close = sim_close,
    .state = sim_state,
    .client_id = sim_client_id,
    .recv_timeout = sim_recv_timeout,
    .set_watcher = sim_set_watcher,
    .set_servers_resolution_delay = sim_resolution_delay,
    .add_auth = sim_add_auth,
    .set_debug_level = sim_debug_level,
    .set_log_stream = sim_log_stream,
    .acreate = sim_acreate,
    .acreate2 = sim_acreate2,
    .adelete = sim_adelete,
    .aget = sim_aget,
    .awget = sim_awget,
    .aget_children = sim_aget_children,
    .awget_children = sim_awget_children,
    .awexists = sim_awexists,
    .aset = sim_aset,
    .async = sim_async,
    .exists = sim_exists,
    .get = sim_get,
    .set = sim_set,
    .get_children = sim_get_children,
    .multi = sim_multi,
    .check_op_init = sim_check_op_init,
    .set_op_init = sim_set_op_init,
};
