/* The differential test's backend on the model: a standalone server
 * configured as the test harness configures the real one (tick, session
 * timeout bounds, read from it), every item delivered at once and written to its
 * session's log the way the C client would call back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

struct model {
    zsim_world *w;
    zsim_session *s[DIFF_SESSIONS];
};

static struct model *M(struct be *b)
{
    return b->impl;
}

static void log_item(struct be *b, int s, const struct zsim_item *it)
{
    char line[8192];
    if (it->kind == ZSIM_ANSWER) {
        diff_fmt_answer(b, line, sizeof line, it->tag, it->req, it->rc, it->value, it->stat,
                        it->data, it->datalen, it->names, it->count, it->results,
                        it->req == ZSIM_REQ_MULTI ? it->count : 0);
        diff_log_add(b, s, line);
        return;
    }
    for (int i = 0; i < it->nwatchers; i++) {
        diff_fmt_event(line, sizeof line, it->type, it->state, it->path, it->watchers[i]);
        diff_log_add(b, s, line);
    }
}

static void deliver_all(struct be *b)
{
    struct model *m = M(b);
    for (int s = 0; s < DIFF_SESSIONS; s++) {
        const struct zsim_item *it;
        while (m->s[s] && (it = zsim_deliver(m->s[s])) != NULL)
            log_item(b, s, it);
    }
}

static bool model_run_until(struct be *b, bool (*cond)(struct be *, const void *),
                            const void *arg, int ms)
{
    zsim_world *w = M(b)->w;
    int64_t end = zsim_now(w) + (int64_t)ms * 1000000;
    for (;;) {
        deliver_all(b);
        if (cond(b, arg))
            return true;
        if (zsim_internal_step(w) == 0)
            continue;
        int64_t t = zsim_next_timer(w);
        if (t > end)
            return false;
        zsim_advance(w, t - zsim_now(w));
    }
}

static void model_open(struct be *b, int s, int timeout_ms, bool proxied)
{
    M(b)->s[s] = zsim_session_new(M(b)->w, timeout_ms, DIFF_DEFAULT_WATCHER);
}

static int model_create(struct be *b, int s, const char *path, const char *data, int len,
                        const struct zsim_acl_vector *acl, int mode, uint64_t tag)
{
    return zsim_acreate(M(b)->s[s], path, data, len, acl, mode, tag);
}

static int model_del(struct be *b, int s, const char *path, int version, uint64_t tag)
{
    return zsim_adelete(M(b)->s[s], path, version, tag);
}

static int model_exists(struct be *b, int s, const char *path, uint64_t w, uint64_t tag)
{
    return zsim_aexists(M(b)->s[s], path, w, tag);
}

static int model_get(struct be *b, int s, const char *path, uint64_t w, uint64_t tag)
{
    return zsim_aget(M(b)->s[s], path, w, tag);
}

static int model_children(struct be *b, int s, const char *path, uint64_t w, bool stat,
                          uint64_t tag)
{
    return stat ? zsim_aget_children2(M(b)->s[s], path, w, tag)
                : zsim_aget_children(M(b)->s[s], path, w, tag);
}

static int model_set(struct be *b, int s, const char *path, const char *data, int len,
                     int version, uint64_t tag)
{
    return zsim_aset(M(b)->s[s], path, data, len, version, tag);
}

static int model_sync(struct be *b, int s, const char *path, uint64_t tag)
{
    return zsim_async(M(b)->s[s], path, tag);
}

static int model_multi(struct be *b, int s, int n, const struct zsim_op *ops, uint64_t tag)
{
    return zsim_amulti(M(b)->s[s], n, ops, tag);
}

static void model_auth(struct be *b, int s, const char *cert)
{
    zsim_add_auth(M(b)->s[s], "digest", cert);
}

static bool closed(struct be *b, const void *arg)
{
    return zsim_state(M(b)->s[*(const int *)arg]) == ZSIM_CLOSED_STATE;
}

/* zookeeper_close returns once the close is done, its callbacks made. */
static void model_close(struct be *b, int s)
{
    zsim_close(M(b)->s[s]);
    model_run_until(b, closed, &s, 10000);
    deliver_all(b);
}

static void model_link(struct be *b, int s, bool to_server, bool to_client)
{
    zsim_link_oneway(M(b)->s[s], to_server, to_client);
}

/* What the server had received it has carried out by the time a test
 * resets a connection (the test waits for that); the reset loses only what
 * is on the link. */
static void model_reset(struct be *b, int s)
{
    do
        deliver_all(b);
    while (zsim_internal_step(M(b)->w) == 0);
    zsim_drop(M(b)->s[s], 0, -2);
}

static int64_t model_session_id(struct be *b, int s)
{
    return M(b)->s[s] ? zsim_session_id(M(b)->s[s]) : 0;
}

static void model_finish(struct be *b)
{
    zsim_world_free(M(b)->w);
    free(M(b));
}

static const struct be_ops model_ops = {
    model_open,  model_create, model_del,   model_exists,     model_get,        model_children,
    model_set,   model_sync,   model_multi, model_auth,       model_close,      model_link,
    model_reset, model_run_until, model_session_id, model_finish,
};

struct be *diff_model_new(uint64_t seed, int64_t tick_ns, int32_t min_timeout_ms,
                          int32_t max_timeout_ms)
{
    struct model *m = calloc(1, sizeof *m);
    struct zsim_config c;
    zsim_config_default(&c);
    c.seed = seed;
    c.servers = 1;
    c.tick_ns = tick_ns;
    c.min_timeout_ms = min_timeout_ms;
    c.max_timeout_ms = max_timeout_ms;
    c.latency_ns = 200000;
    if (zsim_world_new(&c, &m->w) != ZSIM_OK) {
        free(m);
        return NULL;
    }
    return diff_be_new("model", &model_ops, m);
}

/* The model's tree needs the scenario's root, as the server has it. */
void diff_model_mkpath(struct be *b, const char *path)
{
    char buf[512];
    for (const char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
        size_t n = p ? (size_t)(p - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s", (int)n, path);
        zsim_outsider_create(M(b)->w, buf, "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, NULL, 0);
        if (p == NULL)
            break;
    }
}
