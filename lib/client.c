/* One ZooKeeper session shared by threads and locks: connect, track the
 * session state, route every ZooKeeper callback to the lock-queue engine,
 * re-open after expiry, and tell listeners — on a thread of our own. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "zkl/zookeeper.h"

struct zkl_client_opts {
    int reopen;
    int container_parents;
    char *digest;
    int acl;
    int max_request;
    int quiet_zk_log;
};

struct zkl__listener {
    zkl_state_fn fn;
    void *arg;
    struct zkl__listener *next;
};

/* ---- time ------------------------------------------------------------ */

int64_t zkl__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t zkl__deadline(long timeout_ms)
{
    int64_t now = zkl__now_ns();
    /* A timeout too large to add (LONG_MAX, say) means forever, not a
     * deadline that wrapped into the past. */
    if (timeout_ms < 0 || (int64_t)timeout_ms > (ZKL__NO_DEADLINE - now) / 1000000)
        return ZKL__NO_DEADLINE;
    return now + (int64_t)timeout_ms * 1000000;
}

int zkl__cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return ZKL_ESYS;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc == 0 ? 0 : ZKL_ESYS;
}

int zkl__cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline)
{
    if (deadline == ZKL__NO_DEADLINE) {
        pthread_cond_wait(cv, mu);
        return 0;
    }
    if (zkl__now_ns() >= deadline)
        return ETIMEDOUT;
    struct timespec ts = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
    return pthread_cond_timedwait(cv, mu, &ts) == ETIMEDOUT ? ETIMEDOUT : 0;
}

/* ---- the registry ------------------------------------------------------
 * Node watches outlive the objects that armed them, and a wrapped handle
 * outlives its client, so ZooKeeper callbacks never carry a client pointer:
 * they carry a client id (node watches) or the handle (session events) and
 * look the client up here. Lock order: registry, then c->mu. */

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl_client **reg;
static size_t reg_n, reg_cap;
static uint64_t reg_next_id = 1;

static int reg_add(zkl_client *c)
{
    if (reg_n == reg_cap) {
        size_t cap = reg_cap ? reg_cap * 2 : 8;
        zkl_client **r = realloc(reg, cap * sizeof *r);
        if (r == NULL)
            return ZKL_ENOMEM;
        reg = r;
        reg_cap = cap;
    }
    c->id = reg_next_id++;
    reg[reg_n++] = c;
    return 0;
}

static void reg_remove(zkl_client *c)
{
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < reg_n; i++) {
        if (reg[i] == c) {
            reg[i] = reg[--reg_n];
            break;
        }
    }
    if (reg_n == 0) {
        free(reg);
        reg = NULL;
        reg_cap = 0;
    }
    pthread_mutex_unlock(&reg_mu);
}

/* The client for a handle or an id, returned with c->mu held, or NULL. */
static zkl_client *reg_lock_client(zhandle_t *zh, uint64_t id)
{
    zkl_client *found = NULL;
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < reg_n; i++) {
        if ((zh != NULL && reg[i]->zh == zh) || (id != 0 && reg[i]->id == id)) {
            found = reg[i];
            pthread_mutex_lock(&found->mu);
            break;
        }
    }
    pthread_mutex_unlock(&reg_mu);
    return found;
}

/* ---- state ------------------------------------------------------------ */

static void push_event(zkl_client *c, int state)
{
    c->state = state;
    if (c->ev_tail - c->ev_head < sizeof c->events / sizeof c->events[0])
        c->events[c->ev_tail++ % (sizeof c->events / sizeof c->events[0])] = state;
    pthread_cond_broadcast(&c->cv);
}

static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)path;
    (void)ctx;
    if (type != ZOO_SESSION_EVENT)
        return;
    zkl_client *c = reg_lock_client(zh, 0);
    if (c == NULL)
        return;
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    if (state == ZOO_CONNECTED_STATE) {
        const clientid_t *cid = zoo_client_id(zh);
        int64_t sid = cid ? cid->client_id : 0;
        c->negotiated_ms = zoo_recv_timeout(zh);
        c->suspended_ns = 0;
        if (sid != c->sid) {
            /* A new session: nodes of any earlier one are not ours. */
            if (c->sid != 0)
                c->gen++;
            c->sid = sid;
            c->stats.sessions++;
            /* The server created the session after the handle started. */
            c->last_ok_ns = c->handle_started_ns;
            push_event(c, ZKL_STATE_CONNECTED);
        } else {
            push_event(c, c->state == ZKL_STATE_SUSPENDED ? ZKL_STATE_RECONNECTED
                                                           : ZKL_STATE_CONNECTED);
        }
        c->ka_next_ns = 0; /* a keepalive at once: its answer renews last_ok_ns */
        pthread_cond_broadcast(&c->cv);
        zkl__queue_on_connected(c, zh);
    } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE ||
               state == ZOO_NOTCONNECTED_STATE) {
        if (c->state != ZKL_STATE_SUSPENDED && c->state != ZKL_STATE_CONNECTING &&
            c->state != ZKL_STATE_LOST) {
            c->suspended_ns = zkl__now_ns(); /* the keeper's give-up clock */
            push_event(c, ZKL_STATE_SUSPENDED);
            zkl__queue_wake_all(c); /* a try once stops waiting */
        }
    } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
        if (state == ZOO_AUTH_FAILED_STATE)
            c->auth_failed = 1;
        /* Every node of the session is gone on the server: bump the
         * generation first so no caller can see a lock as held any more. */
        c->gen++;
        c->sid = 0;
        c->suspended_ns = 0;
        c->last_ok_ns = 0;
        push_event(c, ZKL_STATE_LOST);
        zkl__queue_on_session_end(c);
        if (c->reopen && c->owns_zh && !c->auth_failed)
            c->need_reopen = 1;
    }
    pthread_mutex_unlock(&c->mu);
}

/* The loss rule. The server touched the session no earlier than the send
 * time S of the last request whose answer arrived (c->last_ok_ns). The
 * leader expires a session one timeout T after the last touch it knows of;
 * a follower passes its touches on about once a tick, and a tick is at most
 * T/2 (the server grants no less than two ticks), so the leader may count
 * from as early as S - T/2: the earliest expiry is S + T/2. The client
 * presumes the session lost a twentieth of T before that, at S + 9T/20,
 * connected or not: a server that stopped answering (frozen, partitioned
 * without a reset) is not noticed as a disconnection before 2T/3. Only for
 * a handle of our own: we close it, which keeps the session from coming
 * back. Returns 0 when nothing is pending. */
int64_t zkl__client_loss_at(const zkl_client *c)
{
    if (c->negotiated_ms <= 0 || c->last_ok_ns == 0)
        return 0;
    return c->last_ok_ns + (int64_t)c->negotiated_ms * 9 / 20 * 1000000;
}

static int64_t give_up_at(zkl_client *c)
{
    if (!c->owns_zh || (c->state != ZKL_STATE_SUSPENDED && c->state != ZKL_STATE_CONNECTED &&
                        c->state != ZKL_STATE_RECONNECTED))
        return 0;
    return zkl__client_loss_at(c);
}

/* Declare the session lost (c->mu held): every hold is lost now, and the
 * keeper closes the handle (then re-opens, if configured). A client that
 * still counted as connected passes through SUSPENDED, so listeners see
 * the uncertainty before the loss, as for a dropped connection. */
static void give_up_session(zkl_client *c)
{
    if (c->state != ZKL_STATE_SUSPENDED)
        push_event(c, ZKL_STATE_SUSPENDED);
    c->gen++;
    c->sid = 0;
    c->suspended_ns = 0;
    c->last_ok_ns = 0;
    c->ka_sent_ns = 0;
    push_event(c, ZKL_STATE_LOST);
    zkl__queue_on_session_end(c);
    c->need_reopen = 1;
}

/* ---- keepalive -----------------------------------------------------------
 * libzookeeper_mt's pings are invisible to us, so the keeper sends a cheap
 * request of its own (an exists on "/") every T/10 while connected; its
 * answer moves c->last_ok_ns to its send time. */

/* The completion's data: the client's id and the keepalive's number. */
#define KA_SEQ_BITS 24
#define KA_SEQ_MASK ((UINT64_C(1) << KA_SEQ_BITS) - 1)

static void keepalive_done(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    uint64_t word = (uint64_t)(uintptr_t)data;
    uint64_t seq = word & KA_SEQ_MASK;
    zkl_client *c = reg_lock_client(NULL, word >> KA_SEQ_BITS);
    if (c == NULL)
        return;
    unsigned slot = (unsigned)(seq % 16);
    if ((c->ka_ring[slot].seq & KA_SEQ_MASK) == seq && c->ka_ring[slot].sent != 0) {
        int64_t sent = c->ka_ring[slot].sent;
        uint64_t gen = c->ka_ring[slot].gen;
        c->ka_ring[slot].sent = 0;
        if (c->ka_sent_ns == sent)
            c->ka_sent_ns = 0;
        /* Any answer of the server's is a touch; a system error (connection
         * loss, closing) is none. */
        if (gen == c->gen && c->sid != 0 && (rc == ZOK || rc == ZNONODE) && sent > c->last_ok_ns)
            c->last_ok_ns = sent;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Send a keepalive if one is due (c->mu held; dropped and taken again). */
static void keepalive_maybe_send(zkl_client *c)
{
    int64_t now = zkl__now_ns();
    if (c->closing || c->need_reopen || c->negotiated_ms <= 0 || now < c->ka_next_ns ||
        (c->state != ZKL_STATE_CONNECTED && c->state != ZKL_STATE_RECONNECTED))
        return;
    int64_t every = (int64_t)c->negotiated_ms * 1000000 / 10;
    c->ka_next_ns = now + every;
    /* One in flight at a time; one that was never answered within a whole
     * period is forgotten (its answer, if any, still counts). */
    if (c->ka_sent_ns != 0 && now - c->ka_sent_ns < every)
        return;
    if (c->id > (UINT64_MAX >> KA_SEQ_BITS))
        return; /* ids that do not fit: no keepalive (never in practice) */
    uint64_t seq = ++c->ka_seq & KA_SEQ_MASK;
    unsigned slot = (unsigned)(seq % 16);
    c->ka_ring[slot].seq = seq;
    c->ka_ring[slot].gen = c->gen;
    c->ka_ring[slot].sent = now;
    c->ka_sent_ns = now;
    const void *data = (const void *)(uintptr_t)((c->id << KA_SEQ_BITS) | seq);
    pthread_mutex_unlock(&c->mu);
    pthread_rwlock_rdlock(&c->hlock);
    int rc = c->zh != NULL ? zoo_aexists(c->zh, "/", 0, keepalive_done, data) : ZINVALIDSTATE;
    pthread_rwlock_unlock(&c->hlock);
    pthread_mutex_lock(&c->mu);
    /* Not counted in stats.requests: those are the recipes' own. */
    if (rc != ZOK) {
        if (c->ka_sent_ns == now)
            c->ka_sent_ns = 0;
        c->ka_ring[slot].sent = 0;
    }
}

static void node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    /* A session event is not a handoff: the client's watcher handles it. */
    if (type == ZOO_SESSION_EVENT || path == NULL)
        return;
    zkl_client *c = reg_lock_client(NULL, (uint64_t)(uintptr_t)ctx);
    if (c == NULL)
        return;
    if (!c->closing)
        zkl__queue_watch_event(c, zh, type, path);
    pthread_mutex_unlock(&c->mu);
}

watcher_fn zkl__node_watcher_fn(void)
{
    return node_watcher;
}

/* Start a session on a new handle. Registry lock held across init so the
 * first session event finds the client. */
static int start_handle(zkl_client *c)
{
    int64_t started = zkl__now_ns();
    pthread_mutex_lock(&reg_mu);
    zhandle_t *zh = zookeeper_init(c->hosts, session_watcher, c->timeout_ms, NULL, NULL, 0);
    if (zh == NULL) {
        pthread_mutex_unlock(&reg_mu);
        return errno == ENOMEM ? ZKL_ENOMEM : ZKL_EINVAL;
    }
    /* Resolve host names once per window, not on every poll: measurable on
     * every round trip otherwise. */
    zoo_set_servers_resolution_delay(zh, 60000);
    if (c->digest != NULL)
        zoo_add_auth(zh, "digest", c->digest, (int)strlen(c->digest), NULL, NULL);
    pthread_mutex_lock(&c->mu);
    c->zh = zh;
    c->handle_started_ns = started;
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&reg_mu);
    return 0;
}

/* The keeper thread: re-opens after expiry and delivers state changes to
 * listeners, so neither happens on a ZooKeeper thread. */
static void *keeper_main(void *arg)
{
    zkl_client *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->closing && !c->need_reopen && c->ev_head == c->ev_tail) {
            /* The engine's hooks and retries (may release c->mu). */
            int64_t work = zkl__queue_keeper(c);
            if (c->closing || c->need_reopen || c->ev_head != c->ev_tail ||
                c->notify_head != NULL)
                continue;
            if (c->owns_zh)
                keepalive_maybe_send(c);
            if (c->closing || c->need_reopen || c->ev_head != c->ev_tail)
                break;
            int64_t at = give_up_at(c);
            if (at != 0 && zkl__now_ns() >= at) {
                give_up_session(c);
                break;
            }
            int64_t wake = at;
            if (c->owns_zh && c->negotiated_ms > 0 &&
                (c->state == ZKL_STATE_CONNECTED || c->state == ZKL_STATE_RECONNECTED) &&
                (wake == 0 || c->ka_next_ns < wake))
                wake = c->ka_next_ns;
            if (work != 0 && (wake == 0 || work < wake))
                wake = work;
            if (wake == 0)
                pthread_cond_wait(&c->cv, &c->mu);
            else
                zkl__cond_wait(&c->cv, &c->mu, wake);
        }
        while (c->ev_head != c->ev_tail) {
            int st = c->events[c->ev_head++ % (sizeof c->events / sizeof c->events[0])];
            /* Snapshot the listeners, call them unlocked: all of them,
             * however many (a small array on the stack covers most). */
            struct zkl__listener few[16], *snap = few;
            size_t k = 0, total = 0;
            for (struct zkl__listener *l = c->listeners; l; l = l->next)
                total++;
            if (total > 16 && (snap = malloc(total * sizeof *snap)) == NULL) {
                snap = few;
                total = 16; /* out of memory: the first 16 still hear */
            }
            for (struct zkl__listener *l = c->listeners; l && k < total; l = l->next)
                snap[k++] = *l;
            c->delivering = 1;
            pthread_mutex_unlock(&c->mu);
            for (size_t i = 0; i < k; i++)
                snap[i].fn(c, st, snap[i].arg);
            if (snap != few)
                free(snap);
            pthread_mutex_lock(&c->mu);
            c->delivering = 0;
            c->delivery++;
            pthread_cond_broadcast(&c->cv); /* for zkl_client_remove_listener */
        }
        if (c->closing)
            break;
        if (c->need_reopen) {
            c->need_reopen = 0;
            zhandle_t *old = c->zh;
            pthread_mutex_unlock(&c->mu);
            pthread_rwlock_wrlock(&c->hlock);
            pthread_mutex_lock(&reg_mu);
            pthread_mutex_lock(&c->mu);
            c->zh = NULL; /* stop routing the old handle's events here */
            if (c->sid != 0) {
                /* The old handle got its session back after we gave up on
                 * it: closing the handle ends that session too. */
                c->gen++;
                c->sid = 0;
                push_event(c, ZKL_STATE_LOST);
                zkl__queue_on_session_end(c);
            }
            pthread_mutex_unlock(&c->mu);
            pthread_mutex_unlock(&reg_mu);
            zookeeper_close(old);
            /* Without re-open the client stays lost, with no handle. */
            int rc = c->reopen ? start_handle(c) : 0;
            pthread_rwlock_unlock(&c->hlock);
            pthread_mutex_lock(&c->mu);
            if (rc != 0)
                c->need_reopen = 1; /* try again on the next wake-up */
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- options ---------------------------------------------------------- */

int zkl_client_opts_new(zkl_client_opts **out)
{
    if (out == NULL)
        return ZKL_EINVAL;
    zkl_client_opts *o = calloc(1, sizeof *o);
    if (o == NULL)
        return ZKL_ENOMEM;
    o->reopen = 1;
    o->container_parents = 1;
    o->acl = ZKL_ACL_OPEN;
    o->max_request = ZKL__MAX_REQUEST_DEFAULT;
    o->quiet_zk_log = 1;
    *out = o;
    return 0;
}

void zkl_client_opts_free(zkl_client_opts *o)
{
    if (o == NULL)
        return;
    if (o->digest) {
        memset(o->digest, 0, strlen(o->digest));
        free(o->digest);
    }
    free(o);
}

int zkl_client_opts_set_reopen(zkl_client_opts *o, int on)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->reopen = on != 0;
    return 0;
}

int zkl_client_opts_set_container_parents(zkl_client_opts *o, int on)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->container_parents = on != 0;
    return 0;
}

int zkl_client_opts_set_digest_auth(zkl_client_opts *o, const char *user_password)
{
    if (o == NULL || user_password == NULL || strchr(user_password, ':') == NULL ||
        user_password[0] == ':')
        return ZKL_EINVAL;
    char *d = strdup(user_password);
    if (d == NULL)
        return ZKL_ENOMEM;
    if (o->digest) {
        memset(o->digest, 0, strlen(o->digest));
        free(o->digest);
    }
    o->digest = d;
    return 0;
}

int zkl_client_opts_set_acl(zkl_client_opts *o, int acl)
{
    if (o == NULL || (acl != ZKL_ACL_OPEN && acl != ZKL_ACL_CREATOR))
        return ZKL_EINVAL;
    o->acl = acl;
    return 0;
}

int zkl_client_opts_set_max_request(zkl_client_opts *o, int bytes)
{
    if (o == NULL || bytes < ZKL__MAX_REQUEST_MIN)
        return ZKL_EINVAL;
    o->max_request = bytes;
    return 0;
}

int zkl_client_opts_set_quiet_zk_log(zkl_client_opts *o, int on)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->quiet_zk_log = on != 0;
    return 0;
}

const struct ACL_vector *zkl__client_acl(zkl_client *c)
{
    return c->acl == ZKL_ACL_CREATOR ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
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
    if (o && o->digest && (c->digest = strdup(o->digest)) == NULL)
        goto fail_dg;
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    snprintf(c->ident, sizeof c->ident, "%s %ld", host, (long)getpid());
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
    while (c->listeners) {
        struct zkl__listener *l = c->listeners;
        c->listeners = l->next;
        free(l);
    }
    if (c->digest) {
        memset(c->digest, 0, strlen(c->digest));
        free(c->digest);
    }
    free(c->hosts);
    pthread_rwlock_destroy(&c->hlock);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static int client_register(zkl_client *c)
{
    pthread_mutex_lock(&reg_mu);
    int rc = reg_add(c);
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

static int start_keeper(zkl_client *c)
{
    if (pthread_create(&c->keeper, NULL, keeper_main, c) != 0)
        return ZKL_ESYS;
    c->keeper_started = 1;
    return 0;
}

/* A chroot that does not exist is no error to the server: every request
 * under it fails, and an acquire would retry creating its lock path until
 * it gave up. Ask once, at open. */
static int check_chroot(zkl_client *c)
{
    const char *root = strchr(c->hosts, '/');
    if (root == NULL || root[1] == '\0')
        return 0;
    struct Stat st;
    pthread_mutex_lock(&c->mu);
    c->stats.requests++;
    pthread_mutex_unlock(&c->mu);
    int rc = zoo_exists(c->zh, "/", 0, &st); /* the handle prefixes the chroot */
    if (rc == ZOK)
        return 0;
    if (rc == ZNONODE) {
        zkl__detail("zkl_client_open: the chroot \"%.200s\" does not exist on the server", root);
        return ZKL_ENOCHROOT;
    }
    int err = zkl__err_from_zk(rc);
    zkl__detail("zkl_client_open: could not check the chroot \"%.200s\": ZooKeeper error %d (%s)",
                root, rc, zerror(rc));
    return err;
}

/* ZKL_ERESOLVE if a host name of `hosts` does not resolve, else 0 (other
 * problems are libzookeeper_mt's to report). libzookeeper_mt would fail
 * with EINVAL, as for a malformed list. */
static int hosts_resolve(const char *hosts)
{
    char *list = strdup(hosts);
    if (list == NULL)
        return ZKL_ENOMEM;
    char *slash = strchr(list, '/');
    if (slash != NULL)
        *slash = '\0'; /* the chroot */
    int rc = 0;
    char *save = NULL;
    for (char *h = strtok_r(list, ",", &save); h != NULL && rc == 0;
         h = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(h, ':');
        if (colon == NULL || h[0] == '[')
            continue; /* malformed, or an IPv6 literal: nothing to resolve */
        *colon = '\0';
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
        int g = getaddrinfo(h, NULL, &hints, &res);
        if (g == 0)
            freeaddrinfo(res);
        else if (g == EAI_NONAME || g == EAI_AGAIN || g == EAI_FAIL
#ifdef EAI_NODATA
                 || g == EAI_NODATA
#endif
        )
            rc = ZKL_ERESOLVE;
    }
    free(list);
    return rc;
}

int zkl_client_open(const char *hosts, int session_timeout_ms, zkl_client **out)
{
    return zkl_client_open_opts(hosts, session_timeout_ms, NULL, out);
}

int zkl_client_open_opts(const char *hosts, int session_timeout_ms, const zkl_client_opts *opts,
                         zkl_client **out)
{
    if (hosts == NULL || hosts[0] == '\0' || session_timeout_ms <= 0 || out == NULL)
        return ZKL_EINVAL;
    /* The creator-only ACL names the authenticated identity: without one
     * the server would refuse every create (ZINVALIDACL). */
    if (opts != NULL && opts->acl == ZKL_ACL_CREATOR && opts->digest == NULL)
        return ZKL_EINVAL;
    /* The log is the process's: silence it once, unless this client's
     * program asked to keep its own settings. */
    static pthread_once_t quiet = PTHREAD_ONCE_INIT;
    if (opts == NULL || opts->quiet_zk_log)
        pthread_once(&quiet, zkl__zk_log_init);
    zkl_client *c = client_alloc(opts);
    if (c == NULL)
        return ZKL_ENOMEM;
    c->owns_zh = 1;
    c->timeout_ms = session_timeout_ms;
    int rc = ZKL_ENOMEM;
    if ((c->hosts = strdup(hosts)) == NULL)
        goto fail;
    if ((rc = client_register(c)) != 0)
        goto fail;
    if ((rc = start_handle(c)) != 0) {
        if (rc == ZKL_EINVAL && hosts_resolve(hosts) == ZKL_ERESOLVE)
            rc = ZKL_ERESOLVE;
        goto fail_reg;
    }
    /* Wait for the first session; about one session timeout, as
     * libzookeeper_mt tries the servers in turn. */
    int64_t deadline = zkl__now_ns() + (int64_t)session_timeout_ms * 1000000;
    pthread_mutex_lock(&c->mu);
    while (c->state == ZKL_STATE_CONNECTING && !c->auth_failed &&
           zkl__cond_wait(&c->cv, &c->mu, deadline) == 0)
        ;
    int ok = c->state == ZKL_STATE_CONNECTED && !c->auth_failed;
    rc = c->auth_failed ? ZKL_ENOAUTH : ZKL_ECONNLOSS;
    c->ev_head = c->ev_tail; /* listeners come later: nothing to deliver */
    pthread_mutex_unlock(&c->mu);
    if (!ok)
        goto fail_zh;
    if ((rc = check_chroot(c)) != 0)
        goto fail_zh;
    if ((rc = start_keeper(c)) != 0)
        goto fail_zh;
    *out = c;
    return 0;
fail_zh:
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    pthread_mutex_unlock(&c->mu);
    reg_remove(c);
    zookeeper_close(c->zh);
    client_destroy(c);
    return rc;
fail_reg:
    reg_remove(c);
fail:
    client_destroy(c);
    return rc;
}

int zkl_client_wrap(zhandle_t *zh, zkl_client **out)
{
    if (zh == NULL || out == NULL)
        return ZKL_EINVAL;
    int st = zoo_state(zh);
    if (st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE)
        return ZKL_ELOST;
    zkl_client *c = client_alloc(NULL);
    if (c == NULL)
        return ZKL_ENOMEM;
    c->reopen = 0; /* the handle is the caller's: we never replace it */
    c->timeout_ms = zoo_recv_timeout(zh);
    int rc = client_register(c);
    if (rc != 0) {
        client_destroy(c);
        return rc;
    }
    pthread_mutex_lock(&reg_mu);
    pthread_mutex_lock(&c->mu);
    c->zh = zh;
    c->wrapped_prev = zoo_set_watcher(zh, session_watcher);
    if (zoo_state(zh) == ZOO_CONNECTED_STATE) {
        const clientid_t *cid = zoo_client_id(zh);
        c->sid = cid ? cid->client_id : 0;
        c->state = ZKL_STATE_CONNECTED;
        c->stats.sessions = 1;
    }
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&reg_mu);
    if ((rc = start_keeper(c)) != 0) {
        zoo_set_watcher(zh, c->wrapped_prev);
        reg_remove(c);
        client_destroy(c);
        return rc;
    }
    *out = c;
    return 0;
}

int zkl_client_cancel(zkl_client *c)
{
    if (c == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&c->mu);
    c->cancelled = 1;
    zkl__queue_wake_all(c); /* each waiter sees the flag and leaves */
    pthread_mutex_unlock(&c->mu);
    return 0;
}

zhandle_t *zkl_client_handle(zkl_client *c)
{
    if (c == NULL)
        return NULL;
    pthread_mutex_lock(&c->mu);
    zhandle_t *zh = c->zh;
    pthread_mutex_unlock(&c->mu);
    return zh;
}

void zkl_client_close(zkl_client *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    c->state = ZKL_STATE_CLOSED;
    zkl__queue_on_session_end(c); /* wakes every blocked caller */
    pthread_cond_broadcast(&c->cv);
    /* ... and they return ZKL_ECLOSED promptly: wait until the last one
     * is out, as they still touch the client and their nodes. */
    while (c->inside > 0)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    if (c->keeper_started)
        pthread_join(c->keeper, NULL);
    reg_remove(c);
    pthread_rwlock_wrlock(&c->hlock);
    if (c->owns_zh) {
        /* Completions still pending are called with ZCLOSING, and free
         * the nodes that only they kept alive. */
        if (c->zh != NULL)
            zookeeper_close(c->zh);
    } else {
        zoo_set_watcher(c->zh, c->wrapped_prev);
        /* The caller's handle lives on: wait until no request of ours is
         * pending, as each completion refers to one of our nodes. */
        pthread_mutex_lock(&c->mu);
        while (zkl__queue_pending(c))
            pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
    }
    pthread_rwlock_unlock(&c->hlock);
    /* Lock objects still open keep their nodes and the client's memory
     * until the last of them is freed (their calls return ZKL_ECLOSED). */
    if (zkl__client_closed(c))
        return;
    zkl__client_free(c);
}

void zkl__client_free(zkl_client *c)
{
    pthread_mutex_lock(&c->mu);
    zkl__queue_drop_all(c);
    pthread_mutex_unlock(&c->mu);
    client_destroy(c);
}

int zkl_client_state(zkl_client *c)
{
    if (c == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&c->mu);
    int st = c->state;
    pthread_mutex_unlock(&c->mu);
    return st;
}

int64_t zkl_client_session_id(zkl_client *c)
{
    if (c == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&c->mu);
    int64_t sid = c->sid;
    pthread_mutex_unlock(&c->mu);
    return sid;
}

int zkl_client_get_stats(zkl_client *c, zkl_client_stats *out)
{
    if (c == NULL || out == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int zkl_client_add_listener(zkl_client *c, zkl_state_fn fn, void *arg)
{
    if (c == NULL || fn == NULL)
        return ZKL_EINVAL;
    struct zkl__listener *l = malloc(sizeof *l);
    if (l == NULL)
        return ZKL_ENOMEM;
    l->fn = fn;
    l->arg = arg;
    pthread_mutex_lock(&c->mu);
    l->next = c->listeners;
    c->listeners = l;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int zkl_client_remove_listener(zkl_client *c, zkl_state_fn fn, void *arg)
{
    if (c == NULL || fn == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&c->mu);
    for (struct zkl__listener **p = &c->listeners; *p; p = &(*p)->next) {
        if ((*p)->fn == fn && (*p)->arg == arg) {
            struct zkl__listener *l = *p;
            *p = l->next;
            free(l);
            /* The keeper calls a snapshot of the listeners: once this
             * returns, the removed one is not running and never will, so
             * its arg may be freed. (From a listener itself, no wait.) */
            if (c->keeper_started && !pthread_equal(pthread_self(), c->keeper)) {
                uint64_t seen = c->delivery;
                while (c->delivering && c->delivery == seen)
                    pthread_cond_wait(&c->cv, &c->mu);
            }
            pthread_mutex_unlock(&c->mu);
            return 0;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return ZKL_EINVAL;
}

/* libzookeeper_mt logs to stderr at INFO by default: every connect and
 * disconnect. A library should be quiet; ZKL_ZK_LOG=1 brings it back, and
 * zkl_client_opts_set_quiet_zk_log(o, 0) leaves it to the program. */
void zkl__zk_log_init(void)
{
    const char *v = getenv("ZKL_ZK_LOG");
    if (v && *v == '1') {
        zoo_set_debug_level(ZOO_LOG_LEVEL_INFO);
        return;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    FILE *devnull = fopen("/dev/null", "we");
    if (devnull)
        zoo_set_log_stream(devnull); /* kept open for the process's life */
}

int zkl__err_from_zk(int rc)
{
    zkl__note_mapped(rc);
    switch (rc) {
    case ZOK:
        return 0;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
        return ZKL_ECONNLOSS;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZCLOSING:
    case ZSESSIONMOVED:
        return ZKL_ELOST;
    case ZNOAUTH:
    case ZAUTHFAILED:
        return ZKL_ENOAUTH;
    case ZBADARGUMENTS:
        return ZKL_EINVAL;
    case ZSYSTEMERROR:
        return ZKL_ESYS;
    default:
        zkl__detail_zk(rc);
        return ZKL_EZK;
    }
}
