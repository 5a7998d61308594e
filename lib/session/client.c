/* One ZooKeeper session shared by threads and locks: connect, track the
 * session state, route every ZooKeeper callback to the session listener,
 * re-open after expiry, and tell listeners — on a thread of our own. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"
#include "zkl/zookeeper.h"

/* ---- state: the session's events move its machine (state.c) ---------- */

static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)path;
    (void)ctx;
    if (type != ZOO_SESSION_EVENT)
        return;
    zkl_client *c = zkl__registry_find(zh, 0);
    if (c == NULL)
        return;
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    if (state == ZOO_CONNECTED_STATE) {
        const clientid_t *cid = c->zapi->client_id(zh);
        int64_t sid = cid ? cid->client_id : 0;
        c->negotiated_ms = c->zapi->recv_timeout(zh);
        c->suspended_ns = 0;
        if (sid != c->sid) {
            /* A new session: nodes of any earlier one are not ours. */
            if (c->sid != 0)
                c->gen++;
            c->sid = sid;
            c->stats.sessions++;
            /* The server created the session after the handle started. */
            c->last_ok_ns = c->handle_started_ns;
            zkl__sess_move(c, ZKL_STATE_CONNECTED, "a new session");
        } else {
            zkl__sess_move(c,
                           c->state == ZKL_STATE_SUSPENDED ? ZKL_STATE_RECONNECTED
                                                           : ZKL_STATE_CONNECTED,
                           "the session connected again");
        }
        c->ka_next_ns = 0; /* a keepalive at once: its answer renews last_ok_ns */
        pthread_cond_broadcast(&c->cv);
        zkl__client_tell_connected(c, zh);
    } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE ||
               state == ZOO_NOTCONNECTED_STATE) {
        if (c->state != ZKL_STATE_SUSPENDED && c->state != ZKL_STATE_CONNECTING &&
            c->state != ZKL_STATE_LOST) {
            c->suspended_ns = zkl__now_ns(); /* the keeper's give-up clock */
            zkl__sess_move(c, ZKL_STATE_SUSPENDED, "the connection dropped");
            zkl__client_wake_all(c); /* a try once stops waiting */
        }
    } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
        if (state == ZOO_AUTH_FAILED_STATE)
            c->auth_failed = 1;
        /* Every node of the session is gone on the server. */
        zkl__sess_end(c, ZKL_STATE_LOST,
                      state == ZOO_AUTH_FAILED_STATE ? "authentication failed"
                                                     : "the session expired");
        if (c->reopen && c->owns_zh && !c->auth_failed)
            c->need_reopen = 1;
    }
    pthread_mutex_unlock(&c->mu);
}

static void node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    /* A session event is not a handoff: the client's watcher handles it. */
    if (type == ZOO_SESSION_EVENT || path == NULL)
        return;
    zkl_client *c = zkl__registry_find(NULL, (uint64_t)(uintptr_t)ctx);
    if (c == NULL)
        return;
    int64_t now = zkl__now_ns();
    zkl__keeper_give_up_due(c, now); /* as the engine's answers */
    if (!c->closing && c->sl)
        c->sl->on_watch_event(c->sl_ctx, zh, type, path, now);
    pthread_mutex_unlock(&c->mu);
}

watcher_fn zkl__client_watcher_fn(void)
{
    return node_watcher;
}

static void close_handle(zkl_client *c, zhandle_t *zh)
{
    struct zkl__nopipe np;
    zkl__nopipe_begin(&np);
    c->zapi->close(zh);
    zkl__nopipe_end(&np);
}

/* Start a session on a new handle. Registry lock held across init so the
 * first session event finds the client. */
int zkl__client_start_handle(zkl_client *c)
{
    int64_t started = zkl__now_ns();
    zkl__registry_lock();
    errno = 0;
    /* With the client's TLS or SASL settings, the same for a re-opened
     * session as for the first. */
    struct zkl__nopipe np;
    zkl__nopipe_begin(&np);
    zhandle_t *zh =
        zkl__secure_handle(c->zapi, c->secure, c->hosts, session_watcher, c->timeout_ms);
    int init_errno = errno;
    zkl__nopipe_end(&np);
    errno = init_errno;
    if (zh == NULL) {
        int e = errno;
        zkl__registry_unlock();
        return zkl__hosts_init_failed(e);
    }
    /* Resolve host names once per window, not on every poll: measurable on
     * every round trip otherwise. */
    c->zapi->set_servers_resolution_delay(zh, 60000);
    if (c->digest != NULL)
        c->zapi->add_auth(zh, "digest", c->digest, (int)strlen(c->digest), NULL, NULL);
    pthread_mutex_lock(&c->mu);
    c->zh = zh;
    c->handle_started_ns = started;
    pthread_mutex_unlock(&c->mu);
    zkl__registry_unlock();
    return 0;
}

/* ---- open / close ----------------------------------------------------- */

static zkl_client *client_alloc(const zkl_client_opts *o)
{
    zkl_client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    if (pthread_mutex_init(&c->mu, NULL) != 0)
        goto fail_mu;
    if (zkl__cond_init(&c->cv) != 0)
        goto fail_cv;
    if (pthread_rwlock_init(&c->hlock, NULL) != 0)
        goto fail_rw;
    c->reopen = o ? o->reopen : 1;
    c->container_parents = o ? o->container_parents : 1;
    c->acl = o ? o->acl : ZKL_ACL_OPEN;
    c->max_request = o ? o->max_request : ZKL__MAX_REQUEST_DEFAULT;
    c->metrics_off = o ? !o->metrics : 0;
    c->metric_paths = o ? o->metric_paths : ZKL__METRIC_PATHS_DEFAULT;
    c->lost_requests = o ? o->lost_requests : 0;
    c->zapi = o && o->zapi ? o->zapi : &zkl__zapi_real;
    if (o && zkl__options_copy(c, o) != 0) {
        zkl__options_drop(c);
        goto fail_dg;
    }
    if (o && o->digest && (c->digest = strdup(o->digest)) == NULL) {
        zkl__options_drop(c);
        goto fail_dg;
    }
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    snprintf(c->ident, sizeof c->ident, "%s %ld", host, (long)getpid());
    c->fork_gen = zkl__fork_gen;
    c->state = ZKL_STATE_CONNECTING;
    c->gen = 1;
    return c;
fail_dg:
    pthread_rwlock_destroy(&c->hlock);
fail_rw:
    pthread_cond_destroy(&c->cv);
fail_cv:
    pthread_mutex_destroy(&c->mu);
fail_mu:
    free(c);
    return NULL;
}

static void client_destroy(zkl_client *c)
{
    /* In a child of fork(), the parent's threads may still wait on c->cv or
     * hold c->hlock: no destroy may wait for them. The handle is theirs. */
    bool inherited = zkl__forked(c);
    if (inherited && c->owns_zh && c->zh != NULL)
        zkl__fork_keep_handle(c->zh);
    while (c->listeners) {
        struct zkl__listener *l = c->listeners;
        c->listeners = l->next;
        free(l);
    }
    if (c->digest) {
        memset(c->digest, 0, strlen(c->digest));
        free(c->digest);
    }
    zkl__options_drop(c);
    free(c->hosts);
    if (!inherited) {
        pthread_rwlock_destroy(&c->hlock);
        pthread_cond_destroy(&c->cv);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static int start_keeper(zkl_client *c)
{
    /* The keeper closes and opens handles: SIGPIPE blocked for good. */
    struct zkl__nopipe np;
    zkl__nopipe_begin(&np);
    int rc = pthread_create(&c->keeper, NULL, zkl__keeper_main, c);
    zkl__nopipe_end(&np);
    if (rc != 0)
        return ZKL_ESYS;
    c->keeper_started = 1;
    return 0;
}

/* A chroot that does not exist is no error to the server: every request
 * under it fails, and an acquire would retry creating its lock path until
 * it gave up. Ask once, at open; and again when an acquire could make no
 * parent (the chroot deleted since), on the handle of the moment. */
static int check_chroot(zkl_client *c, zhandle_t *zh, bool at_open)
{
    const char *root = strchr(c->hosts, '/');
    if (root == NULL || root[1] == '\0')
        return 0;
    struct Stat st;
    pthread_mutex_lock(&c->mu);
    c->stats.requests++;
    pthread_mutex_unlock(&c->mu);
    int rc = c->zapi->exists(zh, "/", 0, &st); /* the handle prefixes the chroot */
    if (rc == ZOK)
        return 0;
    if (rc == ZNONODE) {
        if (at_open)
            zkl__detail("zkl_client_open: the chroot \"%.200s\" does not exist on the server",
                        root);
        else
            zkl__detail("the chroot \"%.200s\" no longer exists on the server (deleted since "
                        "the client opened)", root);
        return ZKL_ENOCHROOT;
    }
    int err = zkl__err_from_zk(rc);
    zkl__detail("zkl_client_open: could not check the chroot \"%.200s\": ZooKeeper error %d (%s)",
                root, rc, zerror(rc));
    return err;
}

bool zkl__client_chroot_gone(zkl_client *c)
{
    if (strchr(c->hosts, '/') == NULL)
        return false;
    pthread_rwlock_rdlock(&c->hlock); /* the keeper swaps no handle meanwhile */
    pthread_mutex_lock(&c->mu);
    zhandle_t *zh = c->closing ? NULL : c->zh;
    pthread_mutex_unlock(&c->mu);
    char keep[256];
    snprintf(keep, sizeof keep, "%s", zkl_last_error_text());
    bool gone = zh != NULL && check_chroot(c, zh, false) == ZKL_ENOCHROOT;
    if (!gone) /* the failure's own text stays */
        zkl__detail("%s", keep);
    pthread_rwlock_unlock(&c->hlock);
    return gone;
}

int zkl_client_open(const char *hosts, int session_timeout_ms, zkl_client **out)
{
    return zkl_client_open_opts(hosts, session_timeout_ms, NULL, out);
}

int zkl_client_open_opts(const char *hosts, int session_timeout_ms, const zkl_client_opts *opts,
                         zkl_client **out)
{
    if (out == NULL) {
        zkl__detail("zkl_client_open: out is NULL");
        return ZKL_EINVAL;
    }
    int rc = zkl__hosts_check(hosts, session_timeout_ms);
    if (rc == 0 && opts != NULL)
        rc = zkl__options_check(opts);
    if (rc != 0)
        return rc;
    /* The log is the process's: silence it once, unless this client's
     * program asked to keep its own settings. */
    static pthread_once_t quiet = PTHREAD_ONCE_INIT;
    if (opts == NULL || opts->quiet_zk_log)
        pthread_once(&quiet, zkl__options_log_init);
    zkl_client *c = client_alloc(opts);
    if (c == NULL)
        return ZKL_ENOMEM;
    c->owns_zh = 1;
    c->timeout_ms = session_timeout_ms;
    rc = ZKL_ENOMEM;
    if ((c->hosts = strdup(hosts)) == NULL)
        goto fail;
    if ((rc = zkl__registry_add(c)) != 0)
        goto fail;
    if ((rc = zkl__client_start_handle(c)) != 0) {
        rc = zkl__hosts_start_failed(hosts, rc);
        goto fail_reg;
    }
    /* Wait for the first session: the connect timeout, by default about
     * one session timeout, as libzookeeper_mt tries the servers in turn,
     * unless the servers say sooner why none can come (lib/session/probe.c). */
    int connect_ms = opts != NULL && opts->connect_ms > 0 ? opts->connect_ms : session_timeout_ms;
    int64_t deadline = zkl__now_ns() + (int64_t)connect_ms * 1000000;
    zkl_last_error_clear(); /* the probe's reasons, if it finds one */
    pthread_mutex_lock(&c->mu);
    rc = zkl__probe_first_session(c, deadline);
    c->ev_head = c->ev_tail; /* listeners come later: nothing to deliver */
    pthread_mutex_unlock(&c->mu);
    if (rc != 0) {
        zkl__hosts_wait_failed(hosts, rc, connect_ms);
        goto fail_zh;
    }
    if ((rc = check_chroot(c, c->zh, true)) != 0)
        goto fail_zh;
    if ((opts == NULL || !opts->no_keeper) && (rc = start_keeper(c)) != 0)
        goto fail_zh;
    *out = c;
    return 0;
fail_zh:
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    pthread_mutex_unlock(&c->mu);
    zkl__registry_remove(c);
    close_handle(c, c->zh);
    client_destroy(c);
    return rc;
fail_reg:
    zkl__registry_remove(c);
fail:
    client_destroy(c);
    return rc;
}

int zkl_client_wrap(zhandle_t *zh, zkl_client **out)
{
    if (zh == NULL || out == NULL)
        return ZKL_EINVAL;
    /* The caller's handle is libzookeeper_mt's own: the real table. */
    int st = zkl__zapi_real.state(zh);
    if (st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE)
        return ZKL_ELOST;
    zkl_client *c = client_alloc(NULL);
    if (c == NULL)
        return ZKL_ENOMEM;
    c->reopen = 0; /* the handle is the caller's: we never replace it */
    c->timeout_ms = c->zapi->recv_timeout(zh);
    int rc = zkl__registry_add(c);
    if (rc != 0) {
        client_destroy(c);
        return rc;
    }
    zkl__registry_lock();
    pthread_mutex_lock(&c->mu);
    c->zh = zh;
    c->wrapped_prev = c->zapi->set_watcher(zh, session_watcher);
    if (c->zapi->state(zh) == ZOO_CONNECTED_STATE) {
        const clientid_t *cid = c->zapi->client_id(zh);
        c->sid = cid ? cid->client_id : 0;
        zkl__sess_move(c, ZKL_STATE_CONNECTED, "a wrapped handle's session");
        c->ev_head = c->ev_tail; /* listeners come later: nothing to deliver */
        c->stats.sessions = 1;
    }
    pthread_mutex_unlock(&c->mu);
    zkl__registry_unlock();
    if ((rc = start_keeper(c)) != 0) {
        c->zapi->set_watcher(zh, c->wrapped_prev);
        zkl__registry_remove(c);
        client_destroy(c);
        return rc;
    }
    *out = c;
    return 0;
}

int zkl__client_lock(zkl_client *c, bool args_ok)
{
    if (c == NULL || !args_ok)
        return ZKL_EINVAL;
    if (zkl__forked(c))
        return ZKL_EFORK;
    pthread_mutex_lock(&c->mu);
    return 0;
}

int zkl_client_cancel(zkl_client *c)
{
    int rc = zkl__client_lock(c, true);
    if (rc != 0)
        return rc;
    c->cancelled = 1;
    zkl__client_wake_all(c); /* each waiter sees the flag and leaves */
    pthread_mutex_unlock(&c->mu);
    return 0;
}

zhandle_t *zkl_client_handle(zkl_client *c)
{
    if (c == NULL || zkl__forked(c))
        return NULL;
    pthread_mutex_lock(&c->mu);
    zhandle_t *zh = c->zh;
    pthread_mutex_unlock(&c->mu);
    return zh;
}

int zkl_client_handle_borrow(zkl_client *c, zhandle_t **out)
{
    if (out != NULL)
        *out = NULL;
    int rc = zkl__client_lock(c, out != NULL);
    if (rc != 0)
        return rc;
    if (c->closing)
        rc = ZKL_ECLOSED;
    else if (c->zh == NULL || c->handle_going)
        rc = ZKL_ELOST;
    else {
        c->borrows++;
        *out = c->zh;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void zkl_client_handle_return(zkl_client *c, zhandle_t *zh)
{
    if (c == NULL || zh == NULL || zkl__forked(c))
        return;
    pthread_mutex_lock(&c->mu);
    if (c->borrows > 0 && --c->borrows == 0)
        pthread_cond_broadcast(&c->cv); /* a closer waits for the last one */
    pthread_mutex_unlock(&c->mu);
}

void zkl_client_close(zkl_client *c)
{
    if (c == NULL)
        return;
    if (zkl__forked(c)) {
        zkl__client_forget(c);
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    zkl__sess_end(c, ZKL_STATE_CLOSED, "the client closes"); /* wakes every blocked caller */
    pthread_cond_broadcast(&c->cv);
    /* ... and they return ZKL_ECLOSED promptly: wait until the last one
     * is out, as they still touch the client and their nodes. */
    if (c->sl)
        c->sl->wait_callers(c->sl_ctx);
    pthread_mutex_unlock(&c->mu);
    if (c->keeper_started)
        pthread_join(c->keeper, NULL);
    zkl__registry_remove(c);
    /* Every borrowed handle comes back first: the loan is of the client's
     * memory as much as of the handle. */
    pthread_mutex_lock(&c->mu);
    while (c->borrows > 0)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    pthread_rwlock_wrlock(&c->hlock);
    if (c->owns_zh) {
        /* Completions still pending are called with ZCLOSING, and free
         * the nodes that only they kept alive. */
        if (c->zh != NULL)
            close_handle(c, c->zh);
    } else {
        c->zapi->set_watcher(c->zh, c->wrapped_prev);
        /* The caller's handle lives on: wait until no request of ours is
         * pending, as each completion refers to one of our nodes. */
        pthread_mutex_lock(&c->mu);
        while (c->sl && c->sl->pending(c->sl_ctx))
            pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
    }
    pthread_rwlock_unlock(&c->hlock);
    /* Lock objects still open keep their nodes and the client's memory
     * until the last of them is freed (their calls return ZKL_ECLOSED). */
    if (zkl__client_mark_closed(c))
        return;
    zkl__client_free(c);
}

void zkl__client_free(zkl_client *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->sl)
        c->sl->drop_all(c->sl_ctx);
    c->sl = NULL;
    pthread_mutex_unlock(&c->mu);
    client_destroy(c);
}
