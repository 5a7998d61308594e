/* One ZooKeeper session shared by threads and locks (lib/session/): connect,
 * states (a machine: state.c) and listeners, keepalive and the loss rule,
 * re-open after expiry, over the seam to libzookeeper_mt (zapi.h).
 * It knows no locks: the one party that keeps state across it (the
 * lock-queue engine) registers as its listener. */
#ifndef ZKL_SESSION_H
#define ZKL_SESSION_H

#include <signal.h>
#include <zookeeper/zookeeper.h>

#include "util.h"
#include "zapi.h"

/* The default of zkl_client_opts_set_max_request: jute.maxbuffer's. */
#define ZKL__MAX_REQUEST_DEFAULT 0xfffff
#define ZKL__MAX_REQUEST_MIN 8192
/* The default of zkl_client_opts_set_max_metric_paths. */
#define ZKL__METRIC_PATHS_DEFAULT 100

struct zkl_client {
    pthread_mutex_t mu;    /* guards everything below and every node's state */
    pthread_cond_t cv;     /* state changes (open, close, keeper work) */
    pthread_rwlock_t hlock; /* read: using zh from a caller thread; write: swapping it */
    /* libzookeeper_mt, or what stands in its place (lib/session/zapi.h):
     * every call on zh goes through it; set at open, never changed. */
    const struct zkl__zapi *zapi;
    zhandle_t *zh;
    watcher_fn wrapped_prev; /* the user's watcher, for a wrapped handle */
    int owns_zh;
    /* zkl_client_handle_borrow: handles lent out now, and 1 while the one
     * in zh is on its way to be closed (no new loan of it); whoever closes
     * a handle waits, c->mu released, until borrows is 0 (c->cv). */
    int borrows;
    int handle_going;
    uint64_t id;           /* process-unique, the context of node watches */
    char *hosts;
    int timeout_ms;
    int state;             /* enum zkl_state: only zkl__sess_move() writes it */
    int64_t sid;           /* current session id, 0 if none */
    uint64_t gen;          /* session generation: +1 for every new session */
    int auth_failed;
    int need_reopen;
    int closing;
    int cancelled;         /* zkl_client_cancel(): acquires return ZKL_ECANCELED */
    int negotiated_ms;     /* the session timeout the server granted */
    int64_t suspended_ns;  /* when the connection was lost (monotonic), 0 if not */
    /* The loss rule (lib/session/keeper.c, zkl.h): the send time of the last request
     * of this session whose answer arrived (monotonic ns), and the keeper's
     * own keepalive request that keeps it fresh. */
    int64_t last_ok_ns;
    int64_t ka_sent_ns;    /* the keepalive in flight was sent then, 0 if none */
    int64_t ka_next_ns;    /* when the next keepalive is due */
    /* the last keepalives sent, by sequence number modulo 16: their answers
     * carry only the client's id and the number (nothing to free, so an
     * answer a closed handle never delivers leaks nothing) */
    uint64_t ka_seq;
    struct {
        uint64_t seq, gen;
        int64_t sent;
    } ka_ring[16];
    int64_t handle_started_ns; /* when the current handle was created */
    int delivering;        /* the keeper is calling listeners ... */
    uint64_t delivery;     /* ... and this counts the calls it finished */
    /* options */
    int reopen, container_parents;
    char *digest;          /* "user:password", never logged */
    int acl;
    struct ACL_vector acls; /* zkl_client_opts_add_acl's entries (count 0: none) */
    struct zkl__secure *secure; /* TLS and SASL (lib/session/secure.c), or NULL */
    int max_request;       /* bytes: the server's jute.maxbuffer */
    int objects;           /* lock objects open on it (zkl__client_ref) */
    int closed;            /* zkl_client_close ran; the last object frees */
    char ident[96];        /* "host pid", written into contender nodes */
    /* who hears of the session (the lock-queue engine), and its context */
    const struct zkl__session_listener *sl;
    void *sl_ctx;
    /* listeners and the event queue the keeper thread delivers */
    struct zkl__listener *listeners;
    int events[64];
    unsigned ev_head, ev_tail;
    pthread_t keeper;
    int keeper_started;
    zkl_client_stats stats; /* the session's counters; the listener adds its own */
    int metrics_off;       /* the listener keeps no lock metrics */
    int metric_paths;      /* ... and for at most this many lock paths its own */
    int lost_requests;     /* a held asynchronous request's loss is told to its callback */
    unsigned fork_gen;     /* zkl__fork_gen when the client was made */
    uint64_t faults;       /* moves the session's table forbids (zkl__sess_move) */
    char fault[160];       /* the last of them, said in words */
};

/* How many fork()s this process is from the one that started (counted by
 * a pthread_atfork child handler, lib/session/fork.c): a client made before
 * the last fork belongs to the parent, and every call on it, or on an
 * object of it, returns ZKL_EFORK in the child. Written only in a child
 * that is still single-threaded. */
extern unsigned zkl__fork_gen;

/* True if c (not NULL) was made in a parent of this process: its session,
 * threads and nodes are the parent's (lib/session/fork.c). */
static inline bool zkl__forked(const zkl_client *c)
{
    return c->fork_gen != zkl__fork_gen;
}

/* What the session tells the one listener that keeps state across it (the
 * lock-queue engine): the client knows no locks, only these calls. Every
 * call is made with c->mu held. */
typedef struct zkl__session_listener {
    /* A connection (new or the same session again) is up on handle zh. */
    void (*on_connected)(void *ctx, zhandle_t *zh);
    /* The session ended (c->gen moved on), or the client is closing
     * (c->closing): what belonged to it is gone. */
    void (*on_session_end)(void *ctx);
    /* A watch set with zkl__client_watcher_fn() fired on handle zh, at
     * `now` (zkl__now_ns). */
    void (*on_watch_event)(void *ctx, zhandle_t *zh, int type, const char *path, int64_t now);
    /* The keeper's periodic work, on the keeper thread; it may release
     * c->mu meanwhile. Returns when it wants to run again (monotonic ns),
     * 0 for "on a signal of c->cv". */
    int64_t (*on_tick)(void *ctx);
    /* The client's state changed (suspended, cancelled): wake every caller
     * blocked in the listener so that it looks again. */
    void (*wake_all)(void *ctx);
    /* The client closes (after on_session_end): wait until no caller
     * thread is inside the listener any more (c->mu released meanwhile). */
    void (*wait_callers)(void *ctx);
    /* 1 while a request of the listener's is pending, else 0. */
    int (*pending)(void *ctx);
    /* The client's memory goes: free everything, ctx included. */
    void (*drop_all)(void *ctx);
    /* Add the listener's counters to the client's (zkl_client_get_stats). */
    void (*add_stats)(void *ctx, zkl_client_stats *st);
    /* The session made a move its table forbids (a bug of zkl's): count
     * it with the listener's own (zkl_metrics' faults). */
    void (*on_fault)(void *ctx);
} zkl__session_listener;
/* Register `l` with context `ctx` (c->mu held): one listener per client. */
void zkl__client_listen(zkl_client *c, const zkl__session_listener *l, void *ctx);
/* The context `l` was registered with (c->mu held), or NULL. */
void *zkl__client_listener(zkl_client *c, const zkl__session_listener *l);

const struct ACL_vector *zkl__options_acl(zkl_client *c);
/* When the client presumes its session lost by the loss rule (monotonic
 * ns), 0 if not known yet. With c->mu held. */
int64_t zkl__keeper_loss_at(const zkl_client *c);
/* The loss rule applied as an answer or a watch event arrives, before it
 * is acted on (c->mu held): if the rule's instant has passed (a process
 * that stood still hears what came before), the session is given up, as
 * the keeper would on its next round. True then. */
bool zkl__keeper_give_up_due(zkl_client *c, int64_t now);
/* Whether the calling thread is the client's keeper (c->mu held): a
 * callback's call, which must not wait for the keeper. */
bool zkl__keeper_is_self(const zkl_client *c);
/* Wait until no delivery of the keeper's (a listener, an owner's hook)
 * that started before this call is running (c->mu held; dropped while it
 * waits). On the keeper itself, at once: it would wait for itself. */
void zkl__keeper_quiesce(zkl_client *c);

/* TLS and SASL settings, as given (lib/session/secure.c). */
struct zkl__secure_opts {
    char *tls_ca, *tls_cert, *tls_key, *tls_password;
    char *sasl_mech, *sasl_user, *sasl_password_file;
};

struct zkl_client_opts {
    int reopen;
    int container_parents;
    char *digest;
    int acl;
    int max_request;
    int quiet_zk_log;
    int metrics;
    int connect_ms; /* zkl_client_open's wait for the first session; 0: the session timeout */
    int metric_paths; /* lock paths with metrics of their own, at most */
    int lost_requests;
    struct ACL_vector acls; /* zkl_client_opts_add_acl's entries */
    struct zkl__secure_opts sec;
    const struct zkl__zapi *zapi; /* NULL: libzookeeper_mt (zkl__zapi_real) */
    int no_keeper; /* no keeper thread: the embedder calls zkl__keeper_step */
};

struct zkl__listener {
    zkl_state_fn fn;
    void *arg;
    struct zkl__listener *next;
};

/* The registry of clients (lib/session/registry.c; lock order: registry,
 * then c->mu). Add gives c its id: 0 or ZKL_ENOMEM. */
void zkl__registry_lock(void);
void zkl__registry_unlock(void);
int zkl__registry_add(zkl_client *c);
void zkl__registry_remove(zkl_client *c);
/* The client of a handle or an id, returned with c->mu held, or NULL. */
zkl_client *zkl__registry_find(zhandle_t *zh, uint64_t id);
/* The client with this id, returned with c->mu held, or NULL. */
zkl_client *zkl__client_lock_id(uint64_t id);
/* Tell the session listener of a new session, or to wake every waiter
 * (c->mu held). */
void zkl__client_tell_connected(zkl_client *c, zhandle_t *zh);
void zkl__client_wake_all(zkl_client *c);
/* How a public call on a client starts: ZKL_EINVAL for a NULL client or
 * when `args_ok` (the call's other arguments) is false, ZKL_EFORK for a
 * client of a parent process (its mutex may be the parent's, held); else 0
 * with c->mu taken, for the caller to unlock. */
int zkl__client_lock(zkl_client *c, bool args_ok);
/* Whether the client's chroot is gone from the server (asked now, from a
 * caller thread, without c->mu): the detail then says so. */
bool zkl__client_chroot_gone(zkl_client *c);
/* The client's counters, the session listener's added (c->mu held). */
void zkl__client_stats(zkl_client *c, zkl_client_stats *st);
/* The session as a machine (lib/session/state.c), c->mu held. Move to
 * state `to` (enum zkl_state), checked against the table of legal moves:
 * a forbidden one is a bug of zkl's, counted (c->faults, the listener's
 * on_fault) with `why` kept in c->fault, never aborted, and carried out.
 * Every state but CLOSED is queued for the listeners. */
bool zkl__sess_legal(int from, int to);
void zkl__sess_move(zkl_client *c, int to, const char *why);
/* The one way a session ends: to ZKL_STATE_LOST (its nodes are gone or
 * presumed so: a new generation, no session id, the loss rule's clocks
 * cleared) or ZKL_STATE_CLOSED (the client closes); then the session
 * listener hears of it. */
void zkl__sess_end(zkl_client *c, int to, const char *why);
/* Tell the session listener the session ended (c->mu held): zkl__sess_end's. */
void zkl__client_session_end(zkl_client *c);
/* Start a session on a new handle (c->hlock held for writing). */
int zkl__client_start_handle(zkl_client *c);
/* Why an open fails (lib/session/hosts.c). Before the session starts:
 * 0, or ZKL_EINVAL with the reason if `hosts` is no connect string
 * libzookeeper_mt can use or the timeout none it can count with. */
int zkl__hosts_check(const char *hosts, int session_timeout_ms);
/* zookeeper_init failed with errno `e`: the code, with a text for ZKL_ESYS. */
int zkl__hosts_init_failed(int e);
/* zkl__client_start_handle failed with rc: the code the open returns
 * (ZKL_ERESOLVE for a name that does not resolve), with its text. */
int zkl__hosts_start_failed(const char *hosts, int rc);
/* No first session within connect_ms (rc: ZKL_ECONNLOSS, ZKL_ENOAUTH): its
 * text, unless the servers were asked and one said why. */
void zkl__hosts_wait_failed(const char *hosts, int rc, int connect_ms);
/* fork() (lib/session/fork.c): register the handlers once; the registry's
 * part of them (lib/session/registry.c); keep an inherited handle's memory
 * reachable in the child, which may not free it. A layer above (the lock
 * objects, lib/front/objects.c) adds its own part: its prepare runs before
 * the session's (its mutexes come first in the lock order), its parent
 * and child after. */
void zkl__fork_watch(void);
void zkl__fork_set_hooks(void (*prepare)(void), void (*parent)(void), void (*child)(void));
void zkl__registry_fork_prepare(void);
void zkl__registry_fork_parent(void);
void zkl__registry_fork_child(void);
void zkl__fork_keep_handle(zhandle_t *zh);
/* The keeper thread's body (lib/session/keeper.c); its argument is the client. */
void *zkl__keeper_main(void *arg);
/* One round of the keeper's work (c->mu held; dropped and taken again
 * meanwhile): 1 when more is at hand now, 0 when it waits for a signal of
 * c->cv or until *wake (monotonic ns; 0: no time), -1 once the client
 * closes. The thread loops on it; a client opened without the thread
 * (zkl__client_opts_set_no_keeper) has its embedder call it instead. */
int zkl__keeper_step(zkl_client *c, int64_t *wake);

/* Lock objects still open keep a closed client's memory (lib/front/objects.c
 * counts them): the last one to go frees it. */
void zkl__client_ref(zkl_client *c);
void zkl__client_unref(zkl_client *c);
/* zkl_client_close ran: 1 if lock objects are still open (the last one to
 * go frees the client), else 0. */
int zkl__client_mark_closed(zkl_client *c);
/* The client's memory goes (its listener's first). */
void zkl__client_free(zkl_client *c);
/* The client's end in a child of fork(): its memory only, without a word
 * to the server, a signal to the parent's threads or a wait for them. */
void zkl__client_forget(zkl_client *c);
/* The watcher for node watches: it hands their events to the listener's
 * on_watch_event. Its context is (void *)c->id. */
watcher_fn zkl__client_watcher_fn(void);
/* The seam the clients opened with these options use (lib/session/zapi.h):
 * NULL (the default) for libzookeeper_mt. For tests and the simulation. */
void zkl__client_opts_set_zapi(zkl_client_opts *o, const struct zkl__zapi *z);
/* Clients opened with these options start no keeper thread: whoever opened
 * them runs its rounds (zkl__keeper_step), in one thread with everything
 * else, on the virtual clock (util.h: zkl__set_virtual). For the simulation. */
void zkl__client_opts_set_no_keeper(zkl_client_opts *o, int on);
/* Quiet libzookeeper_mt's log, once per process (lib/session/options.c). */
void zkl__options_log_init(void);

/* What zkl_client_open_opts refuses in options before it makes anything
 * (lib/session/options.c): 0, or a ZKL_E... code (with a detail). */
int zkl__options_check(const zkl_client_opts *o);
/* The client's copy of the options' ACL entries and TLS and SASL settings
 * (0 or ZKL_ENOMEM), and what frees it (also after a failed copy). */
int zkl__options_copy(zkl_client *c, const zkl_client_opts *o);
void zkl__options_drop(zkl_client *c);
/* Copy an ACL list (lib/session/options.c): 0 or ZKL_ENOMEM (dst empty). */
int zkl__options_acl_copy(struct ACL_vector *dst, const struct ACL_vector *src);
void zkl__options_acl_free(struct ACL_vector *v);

/* ---- TLS and SASL (lib/session/secure.c) ---------------------------------- */

/* The client's copy of them, and what its handles use. */
struct zkl__secure {
    struct zkl__secure_opts o;
    char *tls_arg;        /* "ca,cert,key[,password]" for zookeeper_init_ssl */
    pthread_mutex_t mu;   /* guards sasl_secret: the handle's I/O thread asks */
    void *sasl_secret;    /* sasl_secret_t: the password read last, wiped */
    void *sasl_callbacks; /* sasl_callback_t[], shared by every handle */
};

/* Free what the settings hold, wiping the secret. */
void zkl__secure_opts_clear(struct zkl__secure_opts *s);
/* Check settings before a client is made: every file can be loaded, the
 * combination is possible. 0, or ZKL_EINVAL / ZKL_ENOTSUP / ZKL_ENOMEM with
 * a detail. */
int zkl__secure_check(const struct zkl__secure_opts *s);
/* The client's copy (NULL and 0 when neither TLS nor SASL is set), or
 * ZKL_ENOMEM. */
int zkl__secure_new(const struct zkl__secure_opts *s, struct zkl__secure **out);
void zkl__secure_free(struct zkl__secure *sec);
/* A new handle for c->hosts with the client's TLS or SASL settings (sec
 * may be NULL: a plain one), as zookeeper_init would make it. */
zhandle_t *zkl__secure_handle(const struct zkl__zapi *z, const struct zkl__secure *sec,
                              const char *hosts, watcher_fn fn, int timeout_ms);
#ifdef HAVE_ZOOKEEPER_INIT_SSL
/* A TLS client context with the settings' CA, certificate and key, which
 * verifies the server: NULL with the reason in why if a file cannot be
 * used. */
struct ssl_ctx_st;
struct ssl_ctx_st *zkl__secure_tls_ctx(const struct zkl__secure_opts *s, char *why, size_t n);
/* The subject of the certificate in cert_file as ZooKeeper's x509 scheme
 * names it (Java's RFC 2253 form, "CN=orders,O=example"), in out: false if
 * it cannot be read or is not one written alike by OpenSSL and Java. */
bool zkl__secure_subject(const char *cert_file, char *out, size_t n);
/* Whether the (first) certificate in cert_file is past its notAfter. */
bool zkl__secure_cert_expired(const char *cert_file);
#endif
/* SIGPIPE blocked in the calling thread between begin and end, for a call
 * that may write to a TLS socket or start the threads that will (a
 * SIGPIPE raised meanwhile is taken away): lib/session/client.c. */
struct zkl__nopipe {
    sigset_t old;
    bool pending; /* SIGPIPE was pending before: not ours to take */
};
void zkl__nopipe_begin(struct zkl__nopipe *np);
void zkl__nopipe_end(struct zkl__nopipe *np);

/* The client's ACL entries checked at open (lib/session/acl.c): one the
 * server would refuse (auth:: with no credentials), or a list that leaves
 * the client without READ, CREATE or DELETE on its own lock paths as far
 * as it can know its identities: ZKL_EINVAL with a detail. */
int zkl__acl_check(const zkl_client_opts *o);
/* Wait for the first session of a new client (lib/session/probe.c), c->mu
 * held (released while waiting), until `deadline` (monotonic ns): 0 once
 * connected, or ZKL_ECONNLOSS (none in time), ZKL_ENOAUTH (credentials
 * refused), or sooner, with a detail, what the servers say when the session
 * is late: SASL credentials refused (in the handle's state, which no event
 * reports), a TLS handshake that cannot succeed (one of our own with each
 * server), a TLS port for a client without TLS. */
int zkl__probe_first_session(zkl_client *c, int64_t deadline);

#endif
