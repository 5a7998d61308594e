/*
 * zkl — ZooKeeper lock recipes for C.
 *
 * Every contender for a lock creates an ephemeral sequential znode under the
 * lock's path; the lowest sequence holds; each waiter watches only the node
 * ahead of it. A crashed process's nodes vanish with its session.
 *
 * Conventions, for every function below:
 *  - Functions that can fail return 0 (ZKL_OK) or a negative ZKL_E... code;
 *    zkl_strerror() turns a code into a sentence.
 *  - Objects are created by zkl_<type>_new / zkl_client_open and come out
 *    through a last `**out` argument; *out is left untouched on failure.
 *  - zkl_<type>_free(NULL) does nothing.
 *  - Timeouts are in milliseconds: a negative value (ZKL_WAIT_FOREVER) waits
 *    forever, 0 tries once without waiting, a positive value is one deadline
 *    for the whole call, internal retries included. Running out of time is
 *    ZKL_ETIMEDOUT, and it never leaves a node behind on the server. A try
 *    once needs the server's answer: without a connection (at the call, or
 *    lost while it waits for the answer) it returns ZKL_ECONNLOSS as soon as
 *    the client knows, instead of waiting for a reconnect.
 *  - Values other than objects (fencing tokens, the session id) come out
 *    through a last `*out` argument too, with an int code returned.
 *  - Compatibility: within 1.x no function changes its signature or
 *    meaning, and no struct given to the program changes its layout (arrays
 *    of zkl_lease_info and zkl_participant included). A struct that the
 *    program fills in for the library, or that may grow, starts with a
 *    version field (zkl_lock_ops): later versions add fields only at its
 *    end, and read only those of the version the program was built with.
 *  - Queue length: a waiter lists its lock path's children, and a listing
 *    is one response, bounded by the server's jute.maxbuffer (1 MiB by
 *    default; zkl_client_opts_set_max_request tells the client another
 *    value). A queue whose listing would exceed it (about 17,000 Curator-
 *    style nodes at 1 MiB) is refused: every acquire that lists it returns
 *    ZKL_EQUEUE after one listing, with its own node deleted again.
 *
 * Threads. Every call is thread-safe unless this table says otherwise,
 * and the sections below repeat each exception next to its function:
 *
 *   object          shared by threads  a hold belongs to   who may release
 *   --------------  -----------------  ------------------  ----------------
 *   zkl_client      yes                -                   -
 *   zkl_mutex       yes                the calling thread  that thread
 *   zkl_rwlock      yes                the thread, a side  that thread
 *   zkl_multilock   yes                the calling thread  that thread
 *   zkl_semmutex    yes                the object          any thread
 *   zkl_semaphore   yes                its zkl_lease       any thread
 *   zkl_lease       yes (*)            itself              any thread
 *   zkl_request     yes                itself              any thread
 *   zkl_cancel      yes                -                   -
 *   zkl_lock        as the lock behind it
 *
 *   Exceptions:
 *   - zkl_<type>_free: not while another thread uses the object (a free
 *     during another thread's acquire, a call through a freed object and a
 *     double free abort the process with a message). zkl_client_close may
 *     run while other threads wait on the client: their calls return
 *     ZKL_ECLOSED.
 *   - (*) zkl_lease_release: no other call on that lease meanwhile or
 *     after (it frees the lease); its getters are safe among themselves.
 *   - zkl_client_opts, zkl_lock_opts: one thread at a time while being
 *     set; any number of threads may then use them at once.
 *   - zkl_client_cancel: thread-safe, not async-signal-safe.
 *   - Callbacks (state listeners, lost and revoke hooks) run on the
 *     client's own keeper thread, one at a time per client, never on a
 *     ZooKeeper thread and never with a zkl lock held; they must not close
 *     the client. A blocking call made there holds the keeper up (its
 *     keepalives, the requests' deadlines, the other callbacks and the
 *     next session wait for it): give it a short timeout. Between two
 *     sessions an acquire made there fails at once (ZKL_ELOST), where one
 *     on another thread waits for the next session within its timeout:
 *     the keeper opens that session only once the callback returned.
 *   - A request's callback (zkl_request_fn) runs on the keeper thread
 *     too, or, after zkl_client_event_fd, on the thread that calls
 *     zkl_client_dispatch (one dispatch at a time); callbacks still
 *     pending when the client closes run on the closing thread, once a
 *     callback running elsewhere has returned: never two at once.
 *   - zkl_last_zk_error / zkl_last_error_text: per calling thread.
 *   - SIGPIPE: no write of the ZooKeeper client raises it in the program
 *     (a TLS socket is written with write(2)): the threads a client
 *     starts have it blocked, and so has the calling thread of
 *     zkl_client_open(_opts) and zkl_client_close while they may write.
 *
 * fork(). A client and its objects belong to the process that made them.
 * In a child of fork(), every call on an inherited client, lock object,
 * lease or request fails at once with ZKL_EFORK (is_held: 0; a state:
 * ZKL_STATE_CLOSED; zkl_client_handle: NULL), and freeing one (close,
 * free, zkl_lease_release) frees the child's copy of its memory only:
 * nothing is sent, the parent's session and locks are untouched, and no
 * thread of the parent's is waited for. The parent goes on as before; a
 * child opens clients of its own.
 */
#ifndef ZKL_H
#define ZKL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define ZKL_EXPORT __attribute__((visibility("default")))
#define ZKL_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define ZKL_EXPORT
#define ZKL_WARN_UNUSED
#endif

/* ------------------------------------------------------------------------
 * Version
 * ---------------------------------------------------------------------- */
/* ZKL_VERSION_MAJOR, _MINOR, _PATCH and ZKL_VERSION_STRING, of the zkl.h
 * the program is built with (configure writes them). */
#include "zkl/version.h"

/* The version of the library actually linked, e.g. "0.1.0". Never NULL. */
ZKL_EXPORT const char *zkl_version_string(void);

/* ------------------------------------------------------------------------
 * Errors
 *
 * The one list of error codes. Codes are append-only: a code never changes
 * its number or meaning. docs/errors.md says, for each, what to do.
 * ---------------------------------------------------------------------- */
#define ZKL_ERRNO_MAP(X)                                                      \
    X(EINVAL, -1, "invalid argument")                                         \
    X(ENOMEM, -2, "out of memory")                                            \
    X(ETIMEDOUT, -3, "timed out")                                             \
    X(ENOTHELD, -4, "lock not held by the caller")                            \
    X(ELOST, -5, "the lock is lost: its session ended or its node was deleted") \
    X(ECONNLOSS, -6, "connection to ZooKeeper lost")                          \
    X(EDEADLK, -7, "the call would deadlock")                                 \
    X(ECLOSED, -8, "client is closed")                                        \
    X(EZK, -9, "unexpected ZooKeeper error")                                  \
    X(ENOAUTH, -10, "not authorized: refused by the ZooKeeper ACL, or credentials or a TLS certificate not accepted") \
    X(EMISMATCH, -11, "lock parameters disagree with those on the server")    \
    X(EBUSY, -12, "object is in use")                                         \
    X(ESYS, -13, "system call failed")                                        \
    X(ECANCELED, -14, "acquire cancelled")                                    \
    X(ENOCHROOT, -15, "the connect string's chroot does not exist on the server") \
    X(ERESOLVE, -16, "a ZooKeeper server's host name does not resolve")      \
    X(ERANGE, -17, "the buffer is too small for the result")                  \
    X(ENOENT, -18, "no such entry")                                           \
    X(EQUEUE, -19, "the lock's queue is too long: its listing exceeds the server's limit (jute.maxbuffer)") \
    X(ENOTSUP, -20, "not supported by this build of zkl or its ZooKeeper client") \
    X(EFORK, -21, "the object was made before fork(): use it only in the process that made it")

enum {
    ZKL_OK = 0,
#define ZKL_ERR_ENUM_(name, code, msg) ZKL_##name = (code),
    ZKL_ERRNO_MAP(ZKL_ERR_ENUM_)
#undef ZKL_ERR_ENUM_
};

/* A sentence describing `err` (0 or a ZKL_E... code). Never NULL; unknown
 * codes get a generic message. Thread-safe; the string is static. */
ZKL_EXPORT const char *zkl_strerror(int err);

/* The code's name without prefix, e.g. "ETIMEDOUT"; "UNKNOWN" for unknown
 * codes, "OK" for 0. Never NULL. Thread-safe; the string is static. */
ZKL_EXPORT const char *zkl_err_name(int err);

/* Details of the calling thread's latest failure, for messages and logs.
 * Per thread: threads that share a client never see each other's. Only
 * failures that have more to say than their code set them, and a later
 * success does not clear them: read them right after the failing call.
 *
 * zkl_last_zk_error: the ZooKeeper code (ZNONODE, ZNOCHILDRENFOREPHEMERALS,
 * ... of <zookeeper/zookeeper.h>; zerror() names it) behind the latest
 * ZKL_EZK a zkl call returned in this thread, or behind an acquire's
 * ZKL_EINVAL or ZKL_ENOAUTH the server gave (ZINVALIDACL, ZNOCHILDRENFOR-
 * EPHEMERALS, ZNOAUTH); 0 if none yet.
 *
 * zkl_last_error_text: a sentence on the latest failure that had details:
 * which path was refused and why (ZKL_EINVAL), the chroot that does not
 * exist (ZKL_ENOCHROOT), the request over the size limit (ZKL_EINVAL), the
 * ZooKeeper error behind a ZKL_EZK. "" if none yet. Never NULL; valid in
 * this thread until its next zkl call. */
ZKL_EXPORT int zkl_last_zk_error(void);
ZKL_EXPORT const char *zkl_last_error_text(void);
/* Forget the calling thread's details: zkl_last_zk_error() is 0 and
 * zkl_last_error_text() "" until a failure sets them again. Call it before
 * a call whose failure must not be reported with an older failure's
 * details (one without details of its own leaves them in place). */
ZKL_EXPORT void zkl_last_error_clear(void);

#define ZKL_WAIT_FOREVER (-1L)

/* ------------------------------------------------------------------------
 * Client: one ZooKeeper session shared by any number of threads and locks.
 * ---------------------------------------------------------------------- */
typedef struct zkl_client zkl_client;
typedef struct zkl_client_opts zkl_client_opts;
/* The generic lock handle (below), which every recipe can give. */
typedef struct zkl_lock zkl_lock;

/* Session states, as reported by zkl_client_state() and to listeners. */
enum zkl_state {
    ZKL_STATE_CONNECTING = 0,  /* not yet connected the first time */
    ZKL_STATE_CONNECTED = 1,   /* connected with a new session */
    ZKL_STATE_SUSPENDED = 2,   /* connection lost, or no answer from the
                                  server in time; the session may be
                                  alive: a holder cannot be sure it still
                                  holds. See "the loss rule" below: when
                                  it says the server may expire the
                                  session soon, ZKL_STATE_LOST follows
                                  (not for a wrapped handle, see
                                  zkl_client_wrap) */
    ZKL_STATE_RECONNECTED = 3, /* connected again with the same session:
                                  every lock still held is still held */
    ZKL_STATE_LOST = 4,        /* the session expired, or was given up by
                                  the loss rule: every lock it held is
                                  gone (or may be any moment). A new
                                  session follows if the client re-opens
                                  (the default). */
    ZKL_STATE_CLOSED = 5       /* zkl_client_close() was called */
};

/* The loss rule: when a client presumes its session lost.
 *
 * Let S be the send time of the last keepalive of the session whose answer
 * arrived (the server touched the session no earlier than S, and, as the
 * keepalive is a sync, its server was in touch with the leader after S),
 * and T the negotiated session timeout. The leader expires a session T after the
 * last touch it knows of; a follower passes its clients' touches on to the
 * leader only about once a tick, and a tick is at most T/2 (the server
 * grants no less than two ticks), so the leader may count from S - T/2:
 * the earliest moment the session can expire is S + T/2.
 *
 * A client of zkl_client_open presumes the session lost at S + 9T/20, a
 * margin of T/20 (500 ms for 10 s) before that earliest expiry, whether
 * the connection is up or not (a frozen or partitioned server without a TCP
 * reset is noticed as a disconnection only after about 2T/3). It then
 * reports ZKL_STATE_SUSPENDED (if it was connected) and ZKL_STATE_LOST,
 * marks every hold lost, runs the recipes' lost callbacks, and closes the
 * handle so the session cannot come back. To keep S fresh while connected,
 * the client's own thread sends a cheap request (a sync of "/") every
 * T/10. Not a read: a follower answers reads by itself, also while it is
 * cut off from the leader, for up to the ensemble's syncLimit ticks (often
 * more than T), whereas the leader expires the session T after the last
 * touch that reached it; a follower answers a sync only after the leader
 * did. On a healthy connection S is never more than about T/10 old, so a
 * connection loss is waited out for at least about 7T/20 (3.5 s for 10 s)
 * before anything is presumed lost; one that the session survives and that
 * is over sooner loses nothing.
 *
 * So the lost callbacks and ZKL_STATE_LOST come at the latest T/20 before
 * the earliest moment another client can hold the lock, on a machine that
 * runs the client's thread on time. That is no proof: a process that is
 * stopped or starved, or a clock that jumps, can still act on a lock it no
 * longer holds. Fencing tokens (or guarded writes) remain the only proof. */

/* Options for zkl_client_open_opts(). An options object is not shared
 * between threads while it is being set; the client copies what it needs. */
ZKL_EXPORT int zkl_client_opts_new(zkl_client_opts **out);
ZKL_EXPORT void zkl_client_opts_free(zkl_client_opts *o);
/* Re-open a new session by itself after expiry (default 1). With 0 the
 * client stays in ZKL_STATE_LOST and every call returns ZKL_ELOST. */
ZKL_EXPORT int zkl_client_opts_set_reopen(zkl_client_opts *o, int on);
/* Create missing lock parents as container nodes (1, default), which the
 * server removes once empty, or as plain persistent nodes (0). */
ZKL_EXPORT int zkl_client_opts_set_container_parents(zkl_client_opts *o, int on);
/* The largest request, in bytes, the servers accept: their jute.maxbuffer
 * (default 0xfffff = 1048575, the servers' default). A server that gets a
 * larger request drops the connection, so zkl refuses a guarded write
 * (zkl_*_guarded_set, zkl_*_guarded_multi) that could exceed it with
 * ZKL_EINVAL, before sending anything. The whole request must fit: zkl
 * counts its data, every path, the ACLs of creates, and a generous 64
 * bytes per op and per request for the rest, so the largest data it lets
 * through is somewhat below the limit. zkl's own node data is small (under
 * 128 bytes, paths at most 1024). The same limit bounds a lock path's
 * listing (a response): an acquire whose listing is larger returns
 * ZKL_EQUEUE (see the top). Set it to a server's larger -Djute.maxbuffer;
 * never above the smallest of the ensemble. Returns 0, ZKL_EINVAL (NULL,
 * bytes < 8192). */
ZKL_EXPORT int zkl_client_opts_set_max_request(zkl_client_opts *o, int bytes);
/* Add digest credentials ("user:password") to every session this client
 * opens (zoo_add_auth with scheme "digest"). The secret is copied and never
 * logged. Returns ZKL_EINVAL for NULL or an empty credential. */
ZKL_EXPORT int zkl_client_opts_set_digest_auth(zkl_client_opts *o,
                                               const char *user_password);
/* The ACL for nodes the client creates (lock parents and contenders):
 * ZKL_ACL_OPEN (world:anyone all, the default) or ZKL_ACL_CREATOR (only the
 * authenticated creator: a client without the same digest credentials can
 * neither list, enqueue under nor delete in a lock path it created; its
 * calls fail with ZKL_ENOAUTH). ZKL_ACL_CREATOR needs digest auth (or TLS
 * or SASL credentials): zkl_client_open_opts refuses it without
 * (ZKL_EINVAL). Parents that exist already keep their ACL. ACL entries
 * (zkl_client_opts_add_acl) take the place of this choice. */
enum zkl_acl { ZKL_ACL_OPEN = 0, ZKL_ACL_CREATOR = 1 };
ZKL_EXPORT int zkl_client_opts_set_acl(zkl_client_opts *o, enum zkl_acl acl);
/* libzookeeper_mt's own log (zoo_set_debug_level, zoo_set_log_stream,
 * zoo_set_log_callback) is process-wide, and at its default level it
 * writes every connect and disconnect to stderr. With 1 (the default), the
 * first client of the process opened this way silences it, once: level
 * ERROR, written to /dev/null (on a descriptor above 2, so that it never
 * takes the number of a standard descriptor the program runs without);
 * or, if the environment variable ZKL_ZK_LOG
 * is "1" at that moment, level INFO on stderr, for debugging. With 0,
 * opening this client leaves the log as the program set it: use it in a
 * program that configures libzookeeper_mt's log itself (a client opened
 * later with the default still silences it). Returns 0, ZKL_EINVAL (NULL). */
ZKL_EXPORT int zkl_client_opts_set_quiet_zk_log(zkl_client_opts *o, int on);
/* Collect the metrics of zkl_client_metrics (1, the default) or not (0:
 * they stay 0, and acquires skip even their clock reads). Returns 0,
 * ZKL_EINVAL (NULL). */
ZKL_EXPORT int zkl_client_opts_set_metrics(zkl_client_opts *o, int on);
/* The most lock paths the client keeps metrics of their own for
 * (zkl_client_path_metrics, the labelled Prometheus series), default 100:
 * the first paths it acquires on, for the client's life. Acquisitions on
 * any other path count in the client's totals only (zkl_client_metrics,
 * the zkl_client_lock_* series), so a program that locks a new path per
 * job or entity does not grow without bound (about 600 bytes and 69 lines
 * of Prometheus text a path). 0 keeps totals only. Returns 0, ZKL_EINVAL
 * (NULL, max_paths < 0). */
ZKL_EXPORT int zkl_client_opts_set_max_metric_paths(zkl_client_opts *o, int max_paths);
/* How long zkl_client_open_opts waits for the first session, in
 * milliseconds, apart from the session timeout it asks for (as Curator's
 * connectionTimeoutMs): a long session timeout need not mean a long wait
 * when no server answers. 0 (the default) waits about one session
 * timeout, as zkl_client_open does. Only the open waits for it: a
 * connection lost later is judged by the session timeout (the loss rule).
 * Returns 0, ZKL_EINVAL (NULL, ms < 0). */
ZKL_EXPORT int zkl_client_opts_set_connect_timeout(zkl_client_opts *o, int ms);

/* Tell a held asynchronous request's loss through its callback (1), or
 * not (0, the default, as in 1.0): with 1, a request delivered held (its
 * callback called with 0) whose hold is lost before it is released (the
 * session ended, someone deleted its node) has its callback called once
 * more, with ZKL_ELOST, through the same path (the client's thread, or
 * zkl_client_dispatch). zkl_request_is_held is 0 from the loss on, and the
 * request is released and freed as before (release says ZKL_ELOST). Not
 * for a client that closes: a close is no loss. Returns 0, ZKL_EINVAL
 * (NULL, or on not 0 or 1). */
ZKL_EXPORT int zkl_client_opts_set_lost_requests(zkl_client_opts *o, int on);
/* Talk to the servers over TLS, and authenticate with a client certificate
 * (mutual TLS): every session the client opens, a re-opened one too,
 * verifies the server's certificate against the CA certificates in
 * `ca_file` and presents the certificate chain in `cert_file` with the
 * private key in `key_file` (PEM files; the key may be encrypted, with
 * `key_password`, else NULL). The servers' address is their
 * secureClientPort. The server knows the session as the certificate's
 * subject (ACL scheme "x509", id e.g. "CN=orders,O=example").
 * The names and the password are copied (zkl wipes its copies of the
 * password when it frees them) and may hold no ',' (libzookeeper_mt
 * separates them with commas). libzookeeper_mt 3.8 as released does not:
 * its zookeeper_init_ssl duplicates the joined "ca,cert,key,password"
 * string and never frees that copy, so each session opened over TLS (the
 * open, and each re-open after an expiry) leaves one copy, password
 * included, in the process's heap for its life. The client that
 * scripts/build-zookeeper-client.sh builds is patched to free that copy,
 * wiped, when the session's handle closes. The
 * files are read when a session is opened, each time, so files replaced on
 * disk count from the next connection. zkl_client_open_opts first loads
 * them and refuses what it cannot use (ZKL_EINVAL, with the file and the
 * reason in zkl_last_error_text()), and a handshake the server or the
 * client refuses ends it within about a second (see zkl_client_open_opts).
 * Returns 0, ZKL_EINVAL (NULL o, a missing or empty file name, a ','),
 * ZKL_ENOMEM, ZKL_ENOTSUP (this zkl was built on a libzookeeper_mt without
 * TLS, as Debian's is: build one with scripts/build-zookeeper-client.sh
 * and configure zkl --with-zookeeper=PREFIX; zkl_last_error_text() says
 * so). A client cannot use TLS and SASL at once (libzookeeper_mt 3.8 has
 * no call for both): zkl_client_open_opts returns ZKL_ENOTSUP then. */
ZKL_EXPORT int zkl_client_opts_set_tls(zkl_client_opts *o, const char *ca_file,
                                       const char *cert_file, const char *key_file,
                                       const char *key_password);
/* Authenticate every session the client opens, a re-opened one too, with
 * SASL: `mechanism` "DIGEST-MD5" (a user of the servers' JAAS
 * configuration: `user` and `password_file` are needed) or "GSSAPI"
 * (Kerberos: the ticket in the credential cache of KRB5CCNAME, for the
 * service principal zookeeper/<the first host name of the connect string>;
 * `user` and `password_file` may be NULL), or another mechanism Cyrus SASL has a
 * plugin for. The password is the first line of `password_file`, read at
 * each authentication, so a changed file counts from the next connection;
 * it is never logged. The server knows the session by its SASL identity
 * (ACL scheme "sasl", id e.g. "orders"). Credentials the server refuses end
 * zkl_client_open_opts with ZKL_ENOAUTH at once. Returns 0, ZKL_EINVAL
 * (NULL o, a mechanism that is no SASL mechanism name, DIGEST-MD5 without
 * a user or a password file), ZKL_ENOMEM, ZKL_ENOTSUP (this zkl was built
 * on a libzookeeper_mt without SASL, as Debian's is: build one with
 * scripts/build-zookeeper-client.sh and configure zkl
 * --with-zookeeper=PREFIX; zkl_last_error_text() says so). */
ZKL_EXPORT int zkl_client_opts_set_sasl(zkl_client_opts *o, const char *mechanism,
                                        const char *user, const char *password_file);
/* Permissions of an ACL entry, ZooKeeper's own bits. */
#define ZKL_PERM_READ 1   /* list a lock path, read a node's data */
#define ZKL_PERM_WRITE 2  /* write a node's data (zkl_revoke writes the holder's) */
#define ZKL_PERM_CREATE 4 /* create children: contend on a lock path */
#define ZKL_PERM_DELETE 8 /* delete children: release, give up, break */
#define ZKL_PERM_ADMIN 16 /* change the ACL */
#define ZKL_PERM_ALL 31
/* Add an entry to the ACL of every node the client creates: lock parents,
 * contender nodes and a semaphore's node. Once one entry is added, these
 * entries are that ACL, in the order added, and zkl_client_opts_set_acl
 * no longer counts. `scheme` is "world" (id "anyone"), "auth" (id "": every
 * identity the session authenticated as), "digest" (id "user:hash", the
 * hash being base64(sha1("user:password")), as ZooKeeper's
 * DigestAuthenticationProvider makes it), "sasl" (id: the SASL identity),
 * "x509" (id: the client certificate's subject) or "ip" (id: an address or
 * a network, "10.0.0.0/8"); `perms` a nonzero combination of ZKL_PERM_*.
 * Like Curator's ACLProvider, one list serves every node; see
 * docs/production.md for several identities sharing one lock tree. A node
 * that exists already keeps its ACL. Entries that leave the client itself
 * without READ, CREATE and DELETE on its lock paths, as far as it knows its
 * own identities (digest and SASL DIGEST-MD5 users, the certificate's
 * subject as the server writes it, RFC 2253), and an "auth" entry without
 * credentials, make zkl_client_open_opts fail with ZKL_EINVAL and a text,
 * before anything is created. Entries it cannot judge (an "ip" address)
 * count as its own: should the server then refuse an acquire's create
 * (blocking or asynchronous, of any recipe, a multi-lock's member, a
 * latch's node), the lock parents that acquire created are deleted again,
 * deepest first, each if still empty, before the call returns or the
 * request's callback runs; a delete a blocking acquire finds refused too
 * is named in zkl_last_error_text().
 * Returns 0, ZKL_EINVAL (NULL, an unknown
 * scheme, an id the scheme cannot hold: a bad address or mask, a SASL id
 * with white space, a subject without TYPE=value parts; perms 0 or out of
 * range; zkl_last_error_text() says which), ZKL_ENOMEM. */
ZKL_EXPORT int zkl_client_opts_add_acl(zkl_client_opts *o, const char *scheme, const char *id,
                                       int perms);

/* The largest session timeout zkl_client_open takes, 2^30 - 1 ms (about
 * 12 days): libzookeeper_mt cannot count a larger one. A server grants at
 * most its maxSessionTimeout (20 ticks, 40 s, by default) whatever is
 * asked. */
#define ZKL_SESSION_TIMEOUT_MAX 1073741823

/* Open a session to `hosts` ("host:port[,host:port...][/chroot]"; an IPv6
 * address without brackets: "::1:2181") and wait until it is connected,
 * for at most about `session_timeout_ms` (1 to ZKL_SESSION_TIMEOUT_MAX;
 * zkl_client_opts_set_connect_timeout bounds the wait apart). Returns 0
 * and a new client in *out (free with zkl_client_close), or ZKL_EINVAL
 * (NULL/empty hosts, a timeout out of range, a malformed host list: an
 * entry without host or port, a port not from 1 to 65535, brackets, a
 * chroot the server would refuse; nothing is sent), ZKL_ERESOLVE (a host
 * name does not resolve), ZKL_ENOMEM, ZKL_ECONNLOSS (no server answered
 * in time), ZKL_ENOAUTH (credentials refused), ZKL_ENOCHROOT (the connect
 * string names a chroot that does not exist on the server: one request
 * checks it), ZKL_ESYS (out of file descriptors, no thread).
 * zkl_last_error_text() then says why, naming the entry, chroot or host
 * (for ZKL_ECONNLOSS: "no server answered at HOSTS within N ms"). `opts`
 * may be NULL for the defaults. Thread-safe.
 * With TLS or SASL options (zkl_client_opts_set_tls, _set_sasl), or
 * without TLS against a server that answers in TLS: files that cannot be
 * loaded are ZKL_EINVAL before anything is sent; TLS and SASL together
 * ZKL_ENOTSUP; credentials the server refuses (SASL) ZKL_ENOAUTH at once.
 * When no session comes within about a second, the client tries one TLS
 * handshake of its own with each server: a server certificate the CA file
 * does not verify, or a client certificate the server refuses, is
 * ZKL_ENOAUTH, and a server that does not speak TLS (with TLS options) or
 * speaks only TLS (without) is ZKL_ECONNLOSS, each at once and with the
 * server and the reason in zkl_last_error_text(), instead of a wait to
 * the end of the connect timeout. */
ZKL_EXPORT int zkl_client_open(const char *hosts, int session_timeout_ms,
                               zkl_client **out) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_client_open_opts(const char *hosts, int session_timeout_ms,
                                    const zkl_client_opts *opts,
                                    zkl_client **out) ZKL_WARN_UNUSED;

/* Close the session (its ephemeral nodes, hence its locks, go at once) and
 * free the client. A call blocked on this client returns ZKL_ECLOSED. Lock
 * objects should be freed first; any still open is safe (reference
 * counted): it keeps the client's memory, not its session, until it is
 * freed, and its calls return ZKL_ECLOSED (its holds went with the
 * session). The last of them frees the client. A lease still out goes with the
 * session too; zkl_lease_release then frees it (ZKL_ECLOSED). NULL does
 * nothing. */
ZKL_EXPORT void zkl_client_close(zkl_client *c);

/* Cancel every acquire on this client, waiting now or called later: each
 * returns ZKL_ECANCELED after removing its node (waiting at most 0.5 s for
 * the server to confirm; the session's end removes it otherwise). An
 * acquire that had already won returns 0 and holds as usual, and so does a
 * thread's reentrant acquire of a lock it holds (it only counts). Releases,
 * tokens and lock-guarded writes work as before, so holders can give their
 * locks back. Cannot be undone: it is for shutting down, or for a waiting
 * command-line tool's Ctrl-C. Returns 0, or ZKL_EINVAL for NULL.
 * Thread-safe; not async-signal-safe (it takes a lock). */
ZKL_EXPORT int zkl_client_cancel(zkl_client *c);

/* The current state. ZKL_STATE_CLOSED for NULL. Thread-safe, cheap. */
ZKL_EXPORT enum zkl_state zkl_client_state(zkl_client *c);

/* The current session id into *out (0 while there is none). Returns 0, or
 * ZKL_EINVAL for NULL (*out unchanged). Thread-safe. */
ZKL_EXPORT int zkl_client_session_id(zkl_client *c, int64_t *out);

/* The session timeout in ms: the one the server granted the latest
 * session (it may differ from the one asked for), or the one asked for
 * before any session. Unlike zoo_recv_timeout(zkl_client_handle(c)) it
 * needs no handle: the client may have closed its handle (a session given
 * up without re-open) or be replacing it. ZKL_EINVAL for NULL.
 * Thread-safe. */
ZKL_EXPORT int zkl_client_session_timeout(zkl_client *c);

/* When the client will presume its session lost by the loss rule (above)
 * unless an answer of the server's comes first: S + 9T/20 for the session
 * open now, as nanoseconds of CLOCK_MONOTONIC, into *out. It moves later
 * with each answered keepalive (about every T/10). For a supervisor that
 * must end the work done under a lock before the server can expire the
 * session even when the holding process is stopped or starved, and so
 * cannot act: it can watch this instant from another process (the guard
 * of `zkl lock` does). *out is 0 when no such instant is pending: no
 * session yet, the session lost or closed, or a wrapped handle (whose
 * owner applies no loss rule). Returns 0, ZKL_EINVAL (NULL), ZKL_EFORK.
 * Thread-safe, cheap. */
ZKL_EXPORT int zkl_client_loss_deadline(zkl_client *c, int64_t *out);

/* A listener gets every state change, in order, on a thread of the
 * client's own (never a ZooKeeper thread, never with a zkl lock held).
 * It must not call zkl_client_close(). Returns 0, ZKL_EINVAL, ZKL_ENOMEM.
 * Remove with the same (fn, arg). Thread-safe. */
typedef void (*zkl_state_fn)(zkl_client *c, enum zkl_state state, void *arg);
ZKL_EXPORT int zkl_client_add_listener(zkl_client *c, zkl_state_fn fn, void *arg);
ZKL_EXPORT int zkl_client_remove_listener(zkl_client *c, zkl_state_fn fn, void *arg);

/* Counters of what the client did, for tests and benchmarks. */
typedef struct zkl_client_stats {
    uint64_t requests;      /* requests sent to ZooKeeper (the client's
                               keepalive of the loss rule not counted) */
    uint64_t creates;       /* contender nodes created */
    uint64_t deletes;       /* contender nodes deleted */
    uint64_t listings;      /* getChildren calls on lock paths */
    uint64_t watch_events;  /* watch events that woke a waiting contender */
    uint64_t sessions;      /* sessions opened (1 + re-opens) */
    uint64_t recovered;     /* creates whose answer was lost (connection
                               loss, a stalled server) and whose node was
                               found again by its uuid */
} zkl_client_stats;
/* Returns 0, ZKL_EINVAL (NULL). Thread-safe. The struct has no version
 * and does not grow: new counters go to zkl_metrics (below), which also
 * carries these. */
ZKL_EXPORT int zkl_client_get_stats(zkl_client *c, zkl_client_stats *out);

/* ------------------------------------------------------------------------
 * Lock options: what a lock object is made with (zkl_mutex_new_opts,
 * zkl_semmutex_new_opts, zkl_multilock_new_opts). The object copies them,
 * so the options may be changed or freed right after. An options object is
 * not shared between threads while it is being set; once set, any number
 * of threads may make locks from it at once.
 *
 * The read-write lock and the counting semaphore take no options in this
 * version: prefetch needs a queue in which each node waits for the one just
 * ahead of it, and theirs are not such chains.
 * ---------------------------------------------------------------------- */
typedef struct zkl_lock_opts zkl_lock_opts;

/* Options with every default. Returns 0 and a new object in *out (free with
 * zkl_lock_opts_free), ZKL_EINVAL (NULL), ZKL_ENOMEM. */
ZKL_EXPORT int zkl_lock_opts_new(zkl_lock_opts **out) ZKL_WARN_UNUSED;
/* NULL does nothing. */
ZKL_EXPORT void zkl_lock_opts_free(zkl_lock_opts *o);

/* Prefetch (default off): a waiter also watches the node two ahead of its
 * own, so that when its turn comes it takes the lock without listing the
 * queue: one more cheap read per acquisition, at most two wake-ups per
 * handoff, and a shorter handoff under contention. Returns 0, or ZKL_EINVAL
 * (NULL, `on` neither 0 nor 1). */
ZKL_EXPORT int zkl_lock_opts_set_prefetch(zkl_lock_opts *o, int on);
/* The id every node of the lock carries as its data instead of the default
 * "host pid" (the bytes of `id`, without its NUL: "" writes none), so that
 * zkl_participants_list, `zkl holders` and Curator's getParticipantNodes
 * name the holder by it; with Curator's LeaderSelector (setId) the id is
 * what getLeader() returns. NULL goes back to the default. `id` is copied.
 * Returns 0, ZKL_EINVAL (NULL o, an id longer than 4096 bytes),
 * ZKL_ENOMEM. */
ZKL_EXPORT int zkl_lock_opts_set_id(zkl_lock_opts *o, const char *id);

/* ------------------------------------------------------------------------
 * Metrics: what the client's locks did, in total and per lock path, for
 * operators. docs/metrics.md lists every metric and its Prometheus name.
 *
 * Counted at the lock queue: every acquire of a recipe that enqueues a node
 * (mutex, semaphore-mutex, read-write lock sides, semaphore leases, each
 * member of a multi-lock) is one attempt on its lock path; a reentrant
 * acquire that only counts up is none. An attempt ends once, as one of:
 * acquired, timeouts, cancels (ZKL_ECANCELED), failures (any other code).
 * Kept in memory for the client's life: the totals, and one small entry
 * per lock path for the first 100 paths used (zkl_client_opts_set_max_
 * metric_paths): other paths count in the totals only. Updated under the
 * lock the client takes anyway, no allocation but a tracked path's first
 * use. zkl_client_opts_set_metrics(o, 0) turns them off: then every
 * counter stays 0 (zkl_client_stats still counts). In a child of fork(),
 * every function here returns ZKL_EFORK for an inherited client.
 * Every function here is thread-safe and reads one consistent snapshot.
 * ---------------------------------------------------------------------- */

/* Log-scale histogram of durations in microseconds. buckets[0] counts
 * values <= 1 us, buckets[i] those in (2^(i-1), 2^i] us, and the last one
 * everything above 2^(ZKL_HISTOGRAM_BUCKETS-2) us (about 67 s). Not
 * cumulative (Prometheus output is). A quantile q lies in the first bucket
 * where the running sum reaches q * count. */
#define ZKL_HISTOGRAM_BUCKETS 28
typedef struct zkl_histogram {
    uint64_t count;  /* observations */
    uint64_t sum_us; /* their sum, in microseconds */
    uint64_t buckets[ZKL_HISTOGRAM_BUCKETS];
} zkl_histogram;

/* Set .version to ZKL_METRICS_VERSION before the call: later versions of
 * zkl add fields only at the end and fill only those of the version a
 * program was built with, so a compiled program keeps working with a newer
 * library. */
#define ZKL_METRICS_VERSION 2u
typedef struct zkl_metrics {
    unsigned version;       /* in: ZKL_METRICS_VERSION of the caller's zkl.h */
    /* Lock counters, of the client or of one lock path. */
    uint64_t acquired;      /* attempts that returned the lock held */
    uint64_t timeouts;      /* attempts that ended in ZKL_ETIMEDOUT */
    uint64_t cancels;       /* attempts that ended in ZKL_ECANCELED */
    uint64_t failures;      /* attempts that ended in any other error */
    uint64_t losses;        /* holds lost while the caller had them (the
                               session ended, or someone deleted the node) */
    uint64_t handoffs;      /* acquired after waiting behind another holder
                               (the rest got the lock at once) */
    uint64_t releases;      /* holds ended (released, given up; a lost hold
                               counts when its owner releases it) */
    uint64_t requests;      /* requests sent for lock queue nodes */
    zkl_histogram wait;     /* acquire call to held, acquired attempts only */
    zkl_histogram hold;     /* held to released, ended holds */
    /* Client-wide only (0 for a lock path): those of zkl_client_stats.
     * requests_all counts every request, lock queues' and others'. */
    uint64_t requests_all, creates, deletes, listings, watch_events, sessions, recovered;
    /* Version 2. Internal errors of the lock engine or of the session: a
     * state change its table forbids. The hold concerned, if any, is told
     * lost (its release says ZKL_ELOST, zkl_last_error_text why). Never
     * expected: report it. */
    uint64_t faults;
} zkl_metrics;

/* The client's totals (over every lock path) in *out. Returns 0,
 * ZKL_EINVAL (NULL, or out->version 0 or newer than this library's). */
ZKL_EXPORT int zkl_client_metrics(zkl_client *c, zkl_metrics *out);

/* The counters of lock path `path` (as given to the recipe) in *out.
 * Returns 0, ZKL_EINVAL (as above), ZKL_ENOENT (no acquire of this client
 * ever used the path, the path came after the client's limit of tracked
 * paths was reached, or metrics are off). */
ZKL_EXPORT int zkl_client_path_metrics(zkl_client *c, const char *path, zkl_metrics *out);

/* The lock paths with counters of their own (at most the limit of
 * zkl_client_opts_set_max_metric_paths), in byte order: a new array of *n new
 * strings in *out (NULL and 0 for none); free with
 * zkl_client_metrics_paths_free. Returns 0, ZKL_EINVAL, ZKL_ENOMEM. */
ZKL_EXPORT int zkl_client_metrics_paths(zkl_client *c, char ***out, size_t *n);
ZKL_EXPORT void zkl_client_metrics_paths_free(char **paths, size_t n);

/* Every metric in the Prometheus text exposition format (version 0.0.4):
 * # HELP and # TYPE lines, lock counters and histograms with a label
 * path="..." per tracked lock path (escaped as the format requires), then
 * the client-wide lock counters and histograms over every path, tracked
 * or not, as families of their own without labels (zkl_client_lock_...,
 * and the gauge zkl_client_lock_paths: how many paths are tracked), and
 * the other client-wide counters. Into buf[0..len-1], NUL-terminated; *needed
 * (if not NULL) gets the length without the NUL. Returns 0, ZKL_ERANGE
 * (len <= the length: buf holds a truncated, NUL-terminated start if len
 * > 0; ask again with *needed + 1 or more, as counters may grow between
 * calls), ZKL_EINVAL (c NULL, buf NULL with len > 0), ZKL_ENOMEM. */
ZKL_EXPORT int zkl_client_metrics_write(zkl_client *c, char *buf, size_t len, size_t *needed);

/* The same text written to `f`. Returns 0, ZKL_EINVAL (NULL), ZKL_ENOMEM,
 * ZKL_ESYS (the write failed). */
ZKL_EXPORT int zkl_client_metrics_fprint(zkl_client *c, FILE *f);

/* ------------------------------------------------------------------------
 * Reentrant mutex (Curator InterProcessMutex protocol: "lock-" nodes).
 *
 * One zkl_mutex may be shared by many threads: each thread's acquisition is
 * its own (its own znode); a thread that holds it may acquire it again, which
 * only counts. The node is deleted when the thread's count returns to 0.
 * ---------------------------------------------------------------------- */
typedef struct zkl_mutex zkl_mutex;

/* A mutex on lock path `path` (absolute, no trailing '/', no empty, "." or
 * ".." segments, at most 1024 bytes), with the options `opts` (NULL for the
 * defaults; see zkl_lock_opts: the mutex copies them). Nothing is sent to
 * the server yet. Returns 0 and a new mutex in *out (free with
 * zkl_mutex_free), ZKL_EINVAL (NULL, bad path), ZKL_ENOMEM, ZKL_ESYS.
 * Thread-safe. */
ZKL_EXPORT int zkl_mutex_new(zkl_client *c, const char *path,
                             zkl_mutex **out) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_mutex_new_opts(zkl_client *c, const char *path, const zkl_lock_opts *opts,
                                  zkl_mutex **out) ZKL_WARN_UNUSED;

/* Acquire for the calling thread. Returns 0 when held (or when the calling
 * thread already held it: the count goes up), ZKL_ETIMEDOUT, ZKL_ELOST (the
 * session ended while waiting, or the calling thread's hold was already
 * lost: release it first), ZKL_ECLOSED, ZKL_ECANCELED, ZKL_ECONNLOSS (a try
 * once with no connection), ZKL_ENOAUTH, ZKL_EQUEUE (the queue is over the
 * server's limit, see the top), ZKL_EINVAL (NULL), ZKL_ENOMEM, ZKL_EZK. On
 * every failure the caller's node is removed. Thread-safe. */
ZKL_EXPORT int zkl_mutex_acquire(zkl_mutex *m, long timeout_ms) ZKL_WARN_UNUSED;

/* Release one count of the calling thread's hold; the node is deleted when
 * the count reaches 0, and the call returns once the server confirmed it.
 * Returns 0, ZKL_ENOTHELD (the calling thread holds nothing: nothing
 * changes), ZKL_ELOST (the session ended, or someone else deleted the node:
 * the hold is cleared), ZKL_ENOAUTH (the server refused the delete, e.g. an
 * ACL without DELETE: the node stays and the hold STAYS held, with a count
 * of one; fix the ACL and release again, or close the client), ZKL_ENOMEM
 * or ZKL_EZK (the delete could not be sent, e.g. no memory to marshal it:
 * the hold STAYS, as for ZKL_ENOAUTH), ZKL_ECLOSED, ZKL_EINVAL (NULL).
 * Thread-safe. */
ZKL_EXPORT int zkl_mutex_release(zkl_mutex *m);

/* 1 if the calling thread holds the mutex and its hold is not lost, else 0
 * (also for NULL). Once the hold's session is lost (expired, or given up
 * by the loss rule) it is 0 for good and
 * release returns ZKL_ELOST. While the client is suspended it still says 1:
 * the hold is uncertain, not lost (zkl_client_state or a listener tells;
 * work that needs the lock should pause until ZKL_STATE_RECONNECTED). A
 * process that was paused (SIGSTOP, a long stall) may see 1 for the moment
 * its client needs to notice the expiry: protect writes with the fencing
 * token or a guarded write. Cheap: no server traffic. Thread-safe. */
ZKL_EXPORT int zkl_mutex_is_held(zkl_mutex *m);

/* Be told when holds of `m` are lost: after the session of a hold ended
 * (expiry, or given up by the loss rule, see zkl_client_opts: then at the
 * latest T/20 before the earliest moment the server can expire it; no
 * proof, fence writes all the same) or someone else deleted its node,
 * `fn(m, token, arg)` is called once
 * per lost hold, with that hold's fencing token, on the
 * client's keeper thread (never a ZooKeeper thread, never with a zkl lock
 * held). The hold itself stays until its thread releases it (ZKL_ELOST).
 * `fn` may call any zkl function except zkl_client_close; it should return
 * soon (state changes of the client wait for it). NULL removes the
 * callback; once that call returns, `fn` is not running and will not be
 * called. A mutex with a callback must be freed (or the callback removed)
 * before its client is closed. Returns 0, ZKL_EINVAL (m NULL), ZKL_ENOMEM.
 * Thread-safe. */
typedef void (*zkl_mutex_lost_fn)(zkl_mutex *m, int64_t token, void *arg);
ZKL_EXPORT int zkl_mutex_set_lost_fn(zkl_mutex *m, zkl_mutex_lost_fn fn, void *arg);

/* Be told when someone asks a hold of `m` to let go: zkl_revoke(), `zkl
 * revoke`, or Curator's Revoker, each of which writes the ASCII bytes
 * "__REVOKE__" into the hold's node (Curator's revocation protocol). `fn(m, token, arg)` is
 * called once per request, with the token of the hold asked, on the client's
 * keeper thread (never a ZooKeeper thread, never with a zkl lock held).
 * Revocation is cooperative: zkl releases nothing by itself; `fn` tells the
 * holder to finish and release, and should return soon (it must not wait
 * for that release, nor call zkl_client_close). A hold of an object without
 * a callback ignores requests, and so does an asynchronous request's hold
 * (zkl_request(3): it is told of a loss, never of a revocation). NULL
 * removes the callback; once that call returns, `fn` is not running and
 * will not be called. Returns 0 or ZKL_EINVAL (NULL object). Thread-safe. */
typedef void (*zkl_mutex_revoke_fn)(zkl_mutex *m, int64_t token, void *arg);
ZKL_EXPORT int zkl_mutex_set_revoke_fn(zkl_mutex *m, zkl_mutex_revoke_fn fn, void *arg);

/* The fencing token of the calling thread's hold (the czxid of its node)
 * into *out: successive holders of one path get strictly increasing tokens,
 * within one ensemble history: servers that lose their data count from
 * the start again, so a fenced resource that must survive that also keeps
 * the history's identity (docs/failures.md, "When the ensemble loses its
 * data").
 * Returns 0, ZKL_ENOTHELD (the thread holds nothing), ZKL_ELOST (its hold
 * was lost), ZKL_EINVAL (NULL); *out is unchanged on failure. Thread-safe. */
ZKL_EXPORT int zkl_mutex_token(zkl_mutex *m, int64_t *out);

/* The full path of the calling thread's node, or NULL if it holds nothing.
 * Borrowed: valid until the thread releases. Thread-safe. */
ZKL_EXPORT const char *zkl_mutex_node(zkl_mutex *m);

/* Set the data of the existing znode `path` only if the calling thread still
 * holds `m`, atomically on the server (a multi-op that first checks the
 * holder's own node). Returns 0, ZKL_ENOTHELD, ZKL_ELOST (the hold is gone:
 * nothing was written), ZKL_EINVAL (NULL, a path the server refuses, or a
 * request over the limit of zkl_client_opts_set_max_request: nothing is
 * sent, zkl_last_error_text() says why), ZKL_ECONNLOSS (outcome unknown),
 * ZKL_ENOENT (`path` does not exist: nothing was written, the lock is
 * still held), ZKL_EZK (another error of ZooKeeper's: zkl_last_zk_error()
 * says which). The other recipes' guarded writes check the same.
 * Thread-safe. */
ZKL_EXPORT int zkl_mutex_guarded_set(zkl_mutex *m, const char *path,
                                     const void *data, int len);

/* Free the mutex. Holds still open are released (best effort). Must not be
 * called while another thread uses the mutex: a free while another thread
 * acquires through it, a call through a freed mutex and a second free abort
 * the process with a message naming the misuse ("zkl: zkl_mutex_free: the
 * object is still in use ..."), instead of using freed memory (as far as
 * the address was not reused since). NULL does nothing. */
ZKL_EXPORT void zkl_mutex_free(zkl_mutex *m);

/* ------------------------------------------------------------------------
 * Asynchronous acquire, and cancel handles for blocking acquires.
 *
 * For event-loop programs: zkl_mutex_acquire_async (and its kin for the
 * semaphore-mutex and the read-write lock, declared in their sections:
 * zkl_semmutex_acquire_async, zkl_rwlock_read_acquire_async,
 * zkl_rwlock_write_acquire_async) starts an acquire and returns at
 * once; no thread waits for it. Its result comes to a callback, called
 * exactly once per request unless the request is freed first:
 *   0             held: the hold belongs to the REQUEST, not to a thread;
 *                 it is not reentrant with any thread's blocking hold of
 *                 the same lock (a thread that holds a mutex and asks for
 *                 it asynchronously waits behind itself), and any thread
 *                 may release it (zkl_request_release);
 *   ZKL_ETIMEDOUT, ZKL_ECANCELED (zkl_request_cancel, or zkl_client_cancel),
 *   ZKL_ELOST (the session ended while queued), ZKL_ECLOSED (the client
 *   closed), ZKL_ECONNLOSS (a try once with no connection), ZKL_ENOAUTH,
 *   ZKL_ENOMEM, ZKL_EZK: not held, and no node of the attempt is left on
 *   the server (its delete was confirmed, or the session's end takes it).
 * Timeouts are kept by the client's own thread; timeout 0 is a try once
 * (the policy's first answer), below 0 waits for ever.
 * A hold lost later (the session ended, someone deleted the node) is no
 * second callback by default: zkl_request_is_held turns 0 and the client's
 * state listeners hear ZKL_STATE_LOST; release (ZKL_ELOST) and free it
 * then. A client opened with zkl_client_opts_set_lost_requests(o, 1) calls
 * the callback of such a request once more, with ZKL_ELOST, on the same
 * thread as results (and through the event descriptor).
 *
 * Where callbacks run: by default on the client's own thread, the one that
 * calls the state listeners (never a ZooKeeper thread, never with a zkl
 * lock held), one at a time: keep them short, as the same thread keeps
 * the session (re-opens, timeouts). After zkl_client_event_fd they run
 * instead on whichever thread calls zkl_client_dispatch. A callback may
 * call any zkl_request_* function, on its own request too
 * (zkl_request_free included), and start new requests; it must not call
 * zkl_client_close.
 *
 * Closing: zkl_client_close may be called with requests pending. Each one
 * whose callback has not run gets ZKL_ECLOSED, on the closing thread
 * (after a callback that another thread runs at that moment returns),
 * before zkl_client_close returns. Requests need not be freed before the
 * close: the client's memory stays until the last of them is freed, and a
 * held request's release then returns ZKL_ECLOSED (the session's end took
 * the node). Every request must be freed, before or after.
 * ---------------------------------------------------------------------- */
typedef struct zkl_request zkl_request;

/* A request's result: 0 (held) or a ZKL_E... code, as above. `arg` is the
 * one given to the start call. */
typedef void (*zkl_request_fn)(zkl_request *r, int result, void *arg);

/* Start acquiring m asynchronously: the request is independent of m once
 * started (m may be freed first; the request keeps what it needs). Returns
 * 0 with the request in *out (free it with zkl_request_free) and its
 * callback to come; or ZKL_EINVAL (NULL m, fn or out), ZKL_ENOMEM,
 * ZKL_ECLOSED, ZKL_ECANCELED (zkl_client_cancel ran), ZKL_ELOST (the
 * client has no session right now, between a lost one and the next: try
 * again later) with no request and no callback. *out is set before the
 * callback can run. Thread-safe. */
ZKL_EXPORT int zkl_mutex_acquire_async(zkl_mutex *m, long timeout_ms, zkl_request_fn fn,
                                       void *arg, zkl_request **out) ZKL_WARN_UNUSED;


/* Cancel the request, from any thread, at any stage. Returns 0 if its
 * callback has not run yet: it will get ZKL_ECANCELED (also if the lock
 * was already granted but not yet told, or the attempt failed but was not
 * yet told), after the request's node is deleted. Returns ZKL_EBUSY if the
 * callback ran with 0: the request holds, release it; ZKL_EINVAL for NULL
 * or a request whose callback ran with a failure or that was released.
 * Never blocks on the server. Thread-safe. */
ZKL_EXPORT int zkl_request_cancel(zkl_request *r);

/* Release a held request (its callback ran with 0), from any thread. Its
 * node's delete is sent and the call returns at once: the engine finishes
 * the delete (again on reconnect; if the server refuses it, it retries
 * with backoff until the session ends). Returns 0, ZKL_ELOST (the hold was
 * lost: the node is gone), ZKL_ECLOSED, ZKL_ENOTHELD (not held: pending,
 * failed, or released already), ZKL_EINVAL (NULL). Thread-safe. */
ZKL_EXPORT int zkl_request_release(zkl_request *r);

/* 1 while the request holds (its callback ran with 0, not released) and
 * its session is the client's live one, else 0. Thread-safe. */
ZKL_EXPORT int zkl_request_is_held(zkl_request *r);

/* The fencing token of a held request (the czxid of its node) in *out.
 * Returns 0, ZKL_ENOTHELD (not delivered held, or released), ZKL_ELOST,
 * ZKL_EINVAL (NULL). Thread-safe. */
ZKL_EXPORT int zkl_request_token(zkl_request *r, int64_t *out);

/* The full path of a held request's node, borrowed until the request is
 * freed; NULL unless its callback ran with 0. Thread-safe. */
ZKL_EXPORT const char *zkl_request_node(zkl_request *r);

/* Free the request: a pending one is cancelled and its callback never runs
 * (the node is deleted in the background); a held one is released as by
 * zkl_request_release. Never blocks on the server; if another thread runs
 * the request's callback right now, waits until it returned. May be called
 * from the request's own callback (the request goes when the callback
 * returns; do not touch it after). Not twice. NULL does nothing. */
ZKL_EXPORT void zkl_request_free(zkl_request *r);

/* Switch the client to delivery by file descriptor and return it in *fd:
 * it becomes readable (poll/epoll/libuv) while results are waiting; the
 * thread that sees it readable calls zkl_client_dispatch. Cannot be undone;
 * later calls return the same descriptor. The descriptor belongs to the
 * client (closed when the client's memory goes): never close or read it
 * yourself. Returns 0, ZKL_EINVAL (NULL), ZKL_ECLOSED, ZKL_ESYS, ZKL_ENOMEM.
 * Thread-safe. */
ZKL_EXPORT int zkl_client_event_fd(zkl_client *c, int *fd);

/* Run the callbacks of the results waiting (fd delivery), on the calling
 * thread, with no zkl lock held. Returns how many ran (0 or more), or
 * ZKL_EINVAL (NULL, or the client does not deliver by descriptor),
 * ZKL_EBUSY (a dispatch runs already: from a callback, or another thread).
 * Not after zkl_client_close. Thread-safe. */
ZKL_EXPORT int zkl_client_dispatch(zkl_client *c);

/* A cancel handle for blocking acquires: firing it makes the blocking
 * acquires that were given it return ZKL_ECANCELED (after removing their
 * node, as on any failure), now or later, and touches no other waiter of
 * the client. It stays fired. One handle may serve several calls, on
 * several threads and clients. new: 0, ZKL_EINVAL, ZKL_ENOMEM, ZKL_ESYS.
 * fire: 0, ZKL_EINVAL; thread-safe, not async-signal-safe. is_fired: 1 or
 * 0. free: not while a call uses the handle; NULL does nothing. */
typedef struct zkl_cancel zkl_cancel;
ZKL_EXPORT int zkl_cancel_new(zkl_cancel **out) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_cancel_fire(zkl_cancel *h);
ZKL_EXPORT int zkl_cancel_is_fired(zkl_cancel *h);
ZKL_EXPORT void zkl_cancel_free(zkl_cancel *h);

/* zkl_mutex_acquire, ending with ZKL_ECANCELED once `h` fires (at once if
 * it fired already, even for a reentry). h NULL: as zkl_mutex_acquire. A
 * wait for a new session (after one was lost) is not cut short by h; it is
 * bounded by the timeout. Thread-safe. */
ZKL_EXPORT int zkl_mutex_acquire_cancellable(zkl_mutex *m, long timeout_ms,
                                             zkl_cancel *h) ZKL_WARN_UNUSED;


/* ---- semaphore-mutex and counting semaphore ---------------------------- */

/* A semaphore-mutex: a mutex whose hold belongs to the object, not to a
 * thread, and which is not reentrant. It speaks the mutex protocol ("lock-"
 * nodes), so a semaphore-mutex, a zkl_mutex and Curator's InterProcessMutex
 * on one path exclude each other. (Curator's InterProcessSemaphoreMutex
 * keeps its nodes elsewhere and does not.)
 *
 * Threads: any thread may release what another thread acquired through the
 * same object; is_held and token answer for the object, whichever thread
 * asks. A second acquire while the object holds, or while another thread
 * is acquiring through it, could only wait for itself: it returns
 * ZKL_EDEADLK at once. Threads that should exclude each other need one
 * object each. */
typedef struct zkl_semmutex zkl_semmutex;

/* A semaphore-mutex on lock path `path` (the rules of zkl_mutex_new).
 * Nothing is sent to the server yet. Returns 0 and a new object in *out
 * (free with zkl_semmutex_free), ZKL_EINVAL (NULL, bad path), ZKL_ENOMEM,
 * ZKL_ESYS. Thread-safe. */
ZKL_EXPORT int zkl_semmutex_new(zkl_client *c, const char *path,
                                zkl_semmutex **out) ZKL_WARN_UNUSED;
/* The same with lock options (zkl_lock_opts; NULL for the defaults). */
ZKL_EXPORT int zkl_semmutex_new_opts(zkl_client *c, const char *path,
                                     const zkl_lock_opts *opts,
                                     zkl_semmutex **out) ZKL_WARN_UNUSED;

/* Acquire for the object, within one deadline. Returns 0 when held,
 * ZKL_EDEADLK (the object already holds, or another thread is acquiring
 * through it: nothing is sent), ZKL_ETIMEDOUT, ZKL_ELOST (the session ended
 * while waiting, or the object's earlier hold was lost: release it first),
 * ZKL_ECLOSED, ZKL_ECANCELED, ZKL_ECONNLOSS (a try once with no connection),
 * ZKL_ENOAUTH, ZKL_EQUEUE (the queue is over the server's limit, see the
 * top), ZKL_EINVAL (NULL), ZKL_ENOMEM, ZKL_EZK. On every failure the
 * caller's node is removed. Thread-safe. */
ZKL_EXPORT int zkl_semmutex_acquire(zkl_semmutex *s, long timeout_ms) ZKL_WARN_UNUSED;

/* An asynchronous acquire, as zkl_mutex_acquire_async: the request's hold
 * is its own, not the object's (zkl_semmutex_is_held and _release know
 * nothing of it; the two exclude each other on the path). */
ZKL_EXPORT int zkl_semmutex_acquire_async(zkl_semmutex *s, long timeout_ms, zkl_request_fn fn,
                                          void *arg, zkl_request **out) ZKL_WARN_UNUSED;
/* zkl_semmutex_acquire, ending with ZKL_ECANCELED once `h` fires, as
 * zkl_mutex_acquire_cancellable. */
ZKL_EXPORT int zkl_semmutex_acquire_cancellable(zkl_semmutex *s, long timeout_ms,
                                                zkl_cancel *h) ZKL_WARN_UNUSED;

/* Release the object's hold, from any thread; returns once the server
 * confirmed the node's deletion. Returns 0, ZKL_ENOTHELD (the object holds
 * nothing: nothing changes), ZKL_ELOST (the session ended, or someone else
 * deleted the node: the hold is cleared), ZKL_ENOAUTH (the server refused
 * the delete: the node and the hold STAY; release again once allowed, or
 * close the client), ZKL_ENOMEM or ZKL_EZK (the delete could not be sent:
 * the hold STAYS, as for ZKL_ENOAUTH), ZKL_ECLOSED, ZKL_EINVAL (NULL).
 * Thread-safe. */
ZKL_EXPORT int zkl_semmutex_release(zkl_semmutex *s);

/* 1 if the object holds the lock and the hold's session is not known to be
 * lost, else 0 (also for NULL). As for every zkl lock, it stays 1 while the
 * client is suspended (uncertain, not lost: zkl_client_state or a listener
 * tells; the client gives the session up by the loss rule), and is
 * 0 for good once the session is lost. No server traffic. Thread-safe. */
ZKL_EXPORT int zkl_semmutex_is_held(zkl_semmutex *s);

/* Be told when the object's hold is lost: after its session ended (expiry,
 * or given up after a long suspension) or someone else deleted its node,
 * `fn(s, token, arg)` is called once,
 * with the hold's fencing token, on the client's keeper thread (never a
 * ZooKeeper thread, never with a zkl lock held). The hold itself stays
 * until released (ZKL_ELOST). `fn` may call any zkl function except
 * zkl_client_close and zkl_semmutex_free of this object; it should return
 * soon. NULL removes the callback; once that call returns, `fn` is not
 * running and will not be called. Free the object (or remove the callback)
 * before closing its client. Returns 0, ZKL_EINVAL (s NULL), ZKL_ENOMEM.
 * Thread-safe. */
typedef void (*zkl_semmutex_lost_fn)(zkl_semmutex *s, int64_t token, void *arg);
ZKL_EXPORT int zkl_semmutex_set_lost_fn(zkl_semmutex *s, zkl_semmutex_lost_fn fn,
                                        void *arg);

/* Be told when someone asks a hold of `s` to let go: zkl_revoke(), `zkl
 * revoke`, or Curator's Revoker, each of which writes the ASCII bytes
 * "__REVOKE__" into the hold's node (Curator's revocation protocol). `fn(s, token, arg)` is
 * called once per request, with the token of the hold asked, on the client's
 * keeper thread (never a ZooKeeper thread, never with a zkl lock held).
 * Revocation is cooperative: zkl releases nothing by itself; `fn` tells the
 * holder to finish and release, and should return soon (it must not wait
 * for that release, nor call zkl_client_close). A hold of an object without
 * a callback ignores requests, and so does an asynchronous request's hold
 * (zkl_request(3): it is told of a loss, never of a revocation). NULL
 * removes the callback; once that call returns, `fn` is not running and
 * will not be called. Returns 0 or ZKL_EINVAL (NULL object). Thread-safe. */
typedef void (*zkl_semmutex_revoke_fn)(zkl_semmutex *s, int64_t token, void *arg);
ZKL_EXPORT int zkl_semmutex_set_revoke_fn(zkl_semmutex *s, zkl_semmutex_revoke_fn fn,
                                          void *arg);

/* The fencing token of the object's hold (the czxid of its node) into
 * *out: successive holders of one path get strictly increasing tokens.
 * Returns 0, ZKL_ENOTHELD (the object holds nothing), ZKL_ELOST (its hold
 * was lost), ZKL_EINVAL (NULL); *out is unchanged on failure. Thread-safe. */
ZKL_EXPORT int zkl_semmutex_token(zkl_semmutex *s, int64_t *out);

/* Set the data of the existing znode `path` only if the object still holds
 * the lock, atomically on the server (a multi-op that first checks the
 * holder's node). Returns 0, ZKL_ENOTHELD, ZKL_ELOST (the hold is gone:
 * nothing was written), ZKL_EINVAL, ZKL_ECONNLOSS (outcome unknown), ZKL_EZK
 * (e.g. `path` does not exist). A release from another thread waits for a
 * guarded write under way. Thread-safe. */
ZKL_EXPORT int zkl_semmutex_guarded_set(zkl_semmutex *s, const char *path,
                                        const void *data, int len);

/* Free the object; a hold still open is released (best effort). Must not
 * be called while another thread uses the object: a free while another
 * thread acquires through it, a call through a freed object and a second
 * free abort the process with a message naming the misuse (see
 * zkl_mutex_free). NULL does nothing. */
ZKL_EXPORT void zkl_semmutex_free(zkl_semmutex *s);

/* A handle on the semaphore-mutex for the generic lock interface and
 * multi-locks (below): it borrows `s`, its key is the lock path, and its
 * operations are the ones above (held per object). Returns 0 and a new
 * handle in *out (free with zkl_lock_free before the object), ZKL_EINVAL
 * (NULL), ZKL_ENOMEM. Thread-safe. */
ZKL_EXPORT int zkl_semmutex_as_lock(zkl_semmutex *s, zkl_lock **out) ZKL_WARN_UNUSED;

/* A counting semaphore: at most `max_leases` leases held at once, across
 * every process that uses the path (docs/protocol.md, "Counting
 * semaphore").
 *  - Fair: waiters are served in arrival order. A waiter that asks for
 *    several leases is not overtaken by later ones that ask for fewer.
 *  - One wake-up per release: only the head waiter watches the leases, so
 *    a release wakes that one process; handing the head over wakes one more.
 *  - Many at once: zkl_semaphore_acquire_many takes n leases as one node,
 *    all or none; callers asking for several never deadlock on halves.
 *  - The limit is recorded on the server, as the data of the semaphore node
 *    ("max_leases=<n>"), a persistent node that stays when the semaphore is
 *    idle; a participant with another limit gets ZKL_EMISMATCH. To change
 *    the limit, delete that node while nobody uses the semaphore.
 *  - Crash-safe: a lease is an ephemeral node; it goes with its session.
 * A zkl_semaphore may be shared by threads; each acquire makes a lease of
 * its own, which any thread may release. */
typedef struct zkl_semaphore zkl_semaphore;
typedef struct zkl_lease zkl_lease;

/* A semaphore on path `path` (the rules of zkl_mutex_new) with limit
 * `max_leases` >= 1. Nothing is sent to the server yet: each acquire reads
 * the limit recorded on the server, or records it if there is none
 * (creating the node and missing parents), and refuses with ZKL_EMISMATCH
 * if another limit is recorded. Returns 0 and a new semaphore in *out (free
 * with zkl_semaphore_free), ZKL_EINVAL (NULL, bad path, max_leases < 1),
 * ZKL_ENOMEM, ZKL_ESYS. Thread-safe. */
ZKL_EXPORT int zkl_semaphore_new(zkl_client *c, const char *path, int max_leases,
                                 zkl_semaphore **out) ZKL_WARN_UNUSED;

/* Take one lease: zkl_semaphore_acquire_many with n = 1. */
ZKL_EXPORT int zkl_semaphore_acquire(zkl_semaphore *s, long timeout_ms,
                                     zkl_lease **out) ZKL_WARN_UNUSED;

/* Take n leases at once (1 <= n <= max_leases), all or none, within one
 * deadline, in arrival order. Returns 0 and a new lease in *out (give it
 * back with zkl_lease_release), ZKL_EINVAL (NULL, n out of range: nothing is
 * sent), ZKL_ETIMEDOUT, ZKL_EMISMATCH (the limit recorded on the server
 * is not the semaphore's), ZKL_ELOST (the session ended while
 * waiting), ZKL_ECLOSED, ZKL_ECANCELED, ZKL_ECONNLOSS (a try once with no
 * connection), ZKL_ENOAUTH, ZKL_EQUEUE (the queue is over the server's
 * limit, see the top), ZKL_ENOMEM, ZKL_EZK. On every failure no node of the
 * call stays on the server. Thread-safe. */
ZKL_EXPORT int zkl_semaphore_acquire_many(zkl_semaphore *s, int n, long timeout_ms,
                                          zkl_lease **out) ZKL_WARN_UNUSED;
/* zkl_semaphore_acquire_many, ending with ZKL_ECANCELED once `h` fires,
 * as zkl_mutex_acquire_cancellable (h NULL: no handle). */
ZKL_EXPORT int zkl_semaphore_acquire_many_cancellable(zkl_semaphore *s, int n, long timeout_ms,
                                                      zkl_cancel *h,
                                                      zkl_lease **out) ZKL_WARN_UNUSED;

/* Asynchronous acquires of n leases (1 for zkl_semaphore_acquire_async),
 * as zkl_mutex_acquire_async (zkl_request(3)): the callback gets 0 once the
 * n leases are held, as one node, or a failure with no node of the attempt
 * left (its gate node and its lease node alike), ZKL_EMISMATCH included
 * (the semaphore node records another limit). The leases belong to the
 * REQUEST, not to a zkl_lease: zkl_request_release gives them back (from
 * any thread), zkl_request_token and zkl_request_node answer for the lease
 * node; the semaphore's lost callback and zkl_lease_* know nothing of
 * them. The request is independent of s once started (s may be freed
 * first). The limit is checked as by the blocking acquire (recorded if the
 * semaphore node has none), by requests the client's own threads answer:
 * no thread waits. Returns 0 with the request in *out, or ZKL_EINVAL (NULL
 * s, fn or out, n < 1 or n > the limit) and the other codes of
 * zkl_mutex_acquire_async, with no request and no callback. Thread-safe. */
ZKL_EXPORT int zkl_semaphore_acquire_async(zkl_semaphore *s, long timeout_ms,
                                           zkl_request_fn fn, void *arg,
                                           zkl_request **out) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_semaphore_acquire_many_async(zkl_semaphore *s, int n, long timeout_ms,
                                                zkl_request_fn fn, void *arg,
                                                zkl_request **out) ZKL_WARN_UNUSED;

/* The limit the semaphore was opened with, or ZKL_EINVAL for NULL. */
ZKL_EXPORT int zkl_semaphore_max_leases(zkl_semaphore *s);

/* Be told when leases of `s` are lost: after the session of a lease ended
 * (expiry, or given up after a long suspension) or someone else deleted its
 * node, `fn(s, token, arg)` is called once per lost lease, with that lease's fencing token
 * (zkl_lease_token), on the client's keeper thread (never a ZooKeeper
 * thread, never with a zkl lock held). The lease itself stays until it is
 * released (ZKL_ELOST). `fn` may call any zkl function except
 * zkl_client_close and zkl_semaphore_free of this semaphore; it should
 * return soon. NULL removes the callback; once that call returns, `fn` is
 * not running and will not be called. Free the semaphore (or remove the
 * callback) before closing its client. Returns 0, ZKL_EINVAL (s NULL),
 * ZKL_ENOMEM. Thread-safe. */
typedef void (*zkl_semaphore_lost_fn)(zkl_semaphore *s, int64_t token, void *arg);
ZKL_EXPORT int zkl_semaphore_set_lost_fn(zkl_semaphore *s, zkl_semaphore_lost_fn fn,
                                         void *arg);

/* Give the lease back and free it, from any thread; returns once the server
 * confirmed. Returns 0, ZKL_ELOST (the session ended, or someone else
 * deleted the node: the lease was already gone), ZKL_ECLOSED, ZKL_EINVAL
 * (NULL), ZKL_ENOAUTH (the server refused the delete: the lease STAYS held
 * and is not freed; release it again once allowed, or close the client),
 * ZKL_ENOMEM or ZKL_EZK (the delete could not be sent: as for ZKL_ENOAUTH).
 * In every other case the lease is freed. No other call may use the lease
 * meanwhile or after. Release
 * every lease before closing its client (as lock objects are freed first). */
ZKL_EXPORT int zkl_lease_release(zkl_lease *l);

/* 1 if the lease is held and its session is not known to be lost, else 0
 * (also for NULL). Stays 1 while the client is suspended (uncertain, not
 * lost), 0 for good once the session is lost, as for every zkl lock. No
 * server traffic. Thread-safe, except against zkl_lease_release. */
ZKL_EXPORT int zkl_lease_is_held(zkl_lease *l);

/* The lease's fencing token (the czxid of its node) into *out: each lease
 * of a semaphore gets a larger one than every lease granted before it.
 * Returns 0, ZKL_ELOST (the lease was lost), ZKL_EINVAL (NULL); *out is
 * unchanged on failure. */
ZKL_EXPORT int zkl_lease_token(zkl_lease *l, int64_t *out);

/* How many leases `l` stands for (n of zkl_semaphore_acquire_many), or
 * ZKL_EINVAL for NULL. */
ZKL_EXPORT int zkl_lease_count(zkl_lease *l);

/* The full path of the lease's node, borrowed until its release; NULL for
 * NULL. */
ZKL_EXPORT const char *zkl_lease_node(zkl_lease *l);

/* As zkl_mutex_guarded_set, guarded by the lease's node: nothing is written
 * once the lease is lost. Returns 0, ZKL_ELOST, ZKL_EINVAL, ZKL_ECONNLOSS
 * (outcome unknown), ZKL_EZK. */
ZKL_EXPORT int zkl_lease_guarded_set(zkl_lease *l, const char *path, const void *data,
                                     int len);

/* Who holds leases: one entry per lease node, oldest first. */
typedef struct zkl_lease_info {
    const char *node;  /* full path of the lease node */
    const char *owner; /* what the holder wrote: "host pid" for zkl */
    int64_t token;     /* its fencing token (czxid) */
    int64_t session;   /* the holder's session id */
    int count;         /* leases it stands for */
} zkl_lease_info;

/* List the holders of the semaphore's leases, within one deadline: *out gets
 * a new array of *count entries (free it, strings included, with
 * zkl_lease_info_free), a snapshot of the moment. Returns 0, ZKL_EINVAL
 * (NULL), ZKL_ETIMEDOUT, ZKL_ELOST, ZKL_ECLOSED, ZKL_ENOAUTH, ZKL_ENOMEM,
 * ZKL_EZK. Thread-safe. */
ZKL_EXPORT int zkl_semaphore_holders(zkl_semaphore *s, long timeout_ms,
                                     zkl_lease_info **out, int *count) ZKL_WARN_UNUSED;
ZKL_EXPORT void zkl_lease_info_free(zkl_lease_info *info);

/* Free the semaphore. Leases taken through it and not yet released stay
 * valid: release them as usual (the semaphore's memory goes with the last
 * of them); from this call on, no lost callback of the semaphore runs. Must
 * not be called while another thread uses the semaphore: a free while
 * another thread acquires through it, a call through a freed semaphore and
 * a second free abort the process with a message naming the misuse (see
 * zkl_mutex_free). NULL does nothing. */
ZKL_EXPORT void zkl_semaphore_free(zkl_semaphore *s);

/* ---- read-write lock ---------------------------------------------------- */

/* A reentrant read-write lock (Curator InterProcessReadWriteLock protocol:
 * "__READ__" and "__WRIT__" nodes in one queue under the lock path; zkl and
 * Curator processes on one path exclude each other correctly).
 *
 * Any number of readers hold together; a writer holds alone. The queue is
 * fair: a reader that arrives after a queued writer waits for it, so a
 * stream of readers cannot starve a writer. A node of any other kind on the
 * path (e.g. a zkl_mutex's) counts as a writer for the readers.
 *
 * Holds are per thread and per side, each side reentrant like zkl_mutex (a
 * thread's repeated acquires only count; its node goes when the count
 * returns to 0). Reentrancy and downgrade work within one zkl_rwlock
 * object: two objects on one path are two independent contenders, even in
 * one thread.
 *  - Downgrade: a thread that holds the write lock may take the read lock,
 *    then release the write lock and go on reading; no writer can get in
 *    between. The read node then carries the writer's sequence number.
 *  - Upgrade: a thread that holds the read lock but not the write lock gets
 *    ZKL_EDEADLK at once from zkl_rwlock_write_acquire (it could never
 *    succeed: the thread's own read would keep the writer waiting).
 * A zkl_rwlock may be shared by any number of threads.
 * ---------------------------------------------------------------------- */
typedef struct zkl_rwlock zkl_rwlock;

/* A read-write lock on lock path `path` (absolute, no trailing '/', no
 * empty, "." or ".." segments, at most 1024 bytes, not under /zookeeper, no
 * segment below the first named like a contender's node, such as
 * job-lock-0000000000). Nothing is sent to the server yet. Returns 0 and a new lock in
 * *out (free with zkl_rwlock_free), ZKL_EINVAL (NULL, bad path), ZKL_ENOMEM, ZKL_ESYS.
 * Thread-safe. */
ZKL_EXPORT int zkl_rwlock_new(zkl_client *c, const char *path,
                              zkl_rwlock **out) ZKL_WARN_UNUSED;

/* Take the read lock for the calling thread: held once no writer (nor a node
 * of another kind) is ahead in the queue. If the thread already holds the
 * read lock, only its count goes up; if it holds the write lock, the read is
 * granted at once (downgrade). Returns 0, ZKL_ETIMEDOUT, ZKL_ELOST (the
 * session ended while waiting, or the thread's read hold, or the write hold
 * it downgrades from, was lost: release that first), ZKL_ECLOSED,
 * ZKL_ECANCELED, ZKL_ECONNLOSS (a try once with no connection), ZKL_ENOAUTH,
 * ZKL_EQUEUE (the queue is over the server's limit, see the top),
 * ZKL_EINVAL (NULL), ZKL_ENOMEM, ZKL_EZK. On every failure the caller's node
 * is removed. Thread-safe. */
ZKL_EXPORT int zkl_rwlock_read_acquire(zkl_rwlock *rw, long timeout_ms) ZKL_WARN_UNUSED;

/* Release one count of the calling thread's read hold; its node is deleted
 * when the count reaches 0, and the call returns once the server confirmed.
 * Returns 0, ZKL_ENOTHELD (the thread holds no read lock: nothing changes),
 * ZKL_ELOST (the session ended, or someone else deleted the node: the read
 * hold is cleared, whatever its count), ZKL_ENOAUTH (the server refused
 * the delete: the node and the hold STAY, with a count of one; release
 * again once allowed, or close the client), ZKL_ENOMEM or ZKL_EZK (the
 * delete could not be sent: as for ZKL_ENOAUTH), ZKL_ECLOSED, ZKL_EINVAL
 * (NULL). Thread-safe. */
ZKL_EXPORT int zkl_rwlock_read_release(zkl_rwlock *rw);

/* Take the write lock for the calling thread: held once its node is first in
 * the queue. If the thread already holds the write lock, only its count goes
 * up. Returns 0, ZKL_EDEADLK (the thread holds the read lock but not the
 * write lock: nothing was sent, release the read first), ZKL_ETIMEDOUT,
 * ZKL_ELOST (the session ended while waiting, or the thread's write hold was
 * lost: release it first), ZKL_ECLOSED, ZKL_ECANCELED, ZKL_ECONNLOSS (a try
 * once with no connection), ZKL_ENOAUTH, ZKL_EQUEUE (the queue is over the
 * server's limit, see the top), ZKL_EINVAL (NULL), ZKL_ENOMEM, ZKL_EZK. On
 * every failure the caller's node is removed. Thread-safe. */
ZKL_EXPORT int zkl_rwlock_write_acquire(zkl_rwlock *rw, long timeout_ms) ZKL_WARN_UNUSED;

/* Asynchronous acquires of either side, as zkl_mutex_acquire_async. The
 * request's hold is its own: a read request is never a downgrade of a
 * thread's write hold (it queues as any reader, behind that writer). */
ZKL_EXPORT int zkl_rwlock_read_acquire_async(zkl_rwlock *rw, long timeout_ms, zkl_request_fn fn,
                                             void *arg, zkl_request **out) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_rwlock_write_acquire_async(zkl_rwlock *rw, long timeout_ms,
                                              zkl_request_fn fn, void *arg,
                                              zkl_request **out) ZKL_WARN_UNUSED;
/* zkl_rwlock_read_acquire / _write_acquire, ending with ZKL_ECANCELED once
 * `h` fires, as zkl_mutex_acquire_cancellable. */
ZKL_EXPORT int zkl_rwlock_read_acquire_cancellable(zkl_rwlock *rw, long timeout_ms,
                                                   zkl_cancel *h) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_rwlock_write_acquire_cancellable(zkl_rwlock *rw, long timeout_ms,
                                                    zkl_cancel *h) ZKL_WARN_UNUSED;

/* Release one count of the calling thread's write hold, as
 * zkl_rwlock_read_release does for reads. A read hold the thread took while
 * writing (downgrade) stays. Returns 0, ZKL_ENOTHELD, ZKL_ELOST,
 * ZKL_ENOAUTH (the delete was refused: the write hold STAYS, count one),
 * ZKL_ENOMEM or ZKL_EZK (the delete could not be sent: as for ZKL_ENOAUTH),
 * ZKL_ECLOSED, ZKL_EINVAL. Thread-safe. */
ZKL_EXPORT int zkl_rwlock_write_release(zkl_rwlock *rw);

/* 1 if the calling thread holds the read (resp. write) lock and that hold
 * is not lost, else 0 (also for NULL): as zkl_mutex_is_held, it stays 1
 * while the client is suspended (uncertain, not lost) and is 0 for good
 * once the hold's session is lost. No server traffic. Thread-safe. */
ZKL_EXPORT int zkl_rwlock_read_is_held(zkl_rwlock *rw);
ZKL_EXPORT int zkl_rwlock_write_is_held(zkl_rwlock *rw);

/* Be told when holds of `rw` are lost: after the session of a hold ended,
 * or someone else deleted its node, `fn(rw, write, token, arg)` is called once per lost hold (`write` is 1
 * for a write hold, 0 for a read hold; a thread that downgraded loses
 * both), with that hold's fencing token, on the client's keeper thread
 * (never a ZooKeeper thread, never with a zkl lock held). The hold itself
 * stays until its thread releases it (ZKL_ELOST). `fn` may call any zkl
 * function except zkl_client_close and zkl_rwlock_free of this lock; it
 * should return soon. NULL removes the callback; once that call returns,
 * `fn` is not running and will not be called. A lock with a callback must
 * be freed (or the callback removed) before its client is closed. Returns
 * 0, ZKL_EINVAL (rw NULL), ZKL_ENOMEM. Thread-safe. */
typedef void (*zkl_rwlock_lost_fn)(zkl_rwlock *rw, int write, int64_t token, void *arg);
ZKL_EXPORT int zkl_rwlock_set_lost_fn(zkl_rwlock *rw, zkl_rwlock_lost_fn fn, void *arg);

/* Be told when someone asks a hold of `rw` (either side) to let go: zkl_revoke(), `zkl
 * revoke`, or Curator's Revoker, each of which writes the ASCII bytes
 * "__REVOKE__" into the hold's node (Curator's revocation protocol). `fn(rw, write, token, arg)` (`write` 1 for a write hold) is
 * called once per request, with the token of the hold asked, on the client's
 * keeper thread (never a ZooKeeper thread, never with a zkl lock held).
 * Revocation is cooperative: zkl releases nothing by itself; `fn` tells the
 * holder to finish and release, and should return soon (it must not wait
 * for that release, nor call zkl_client_close). A hold of an object without
 * a callback ignores requests, and so does an asynchronous request's hold
 * (zkl_request(3): it is told of a loss, never of a revocation). NULL
 * removes the callback; once that call returns, `fn` is not running and
 * will not be called. Returns 0 or ZKL_EINVAL (NULL object). Thread-safe. */
typedef void (*zkl_rwlock_revoke_fn)(zkl_rwlock *rw, int write, int64_t token, void *arg);
ZKL_EXPORT int zkl_rwlock_set_revoke_fn(zkl_rwlock *rw, zkl_rwlock_revoke_fn fn, void *arg);

/* The fencing token of the calling thread's read (resp. write) hold, the
 * czxid of its node, into *out. Successive writers of one path get strictly
 * increasing tokens. Returns 0, ZKL_ENOTHELD (the thread holds nothing on
 * that side), ZKL_ELOST (the hold was lost), ZKL_EINVAL (NULL); *out is
 * unchanged on failure. Thread-safe. */
ZKL_EXPORT int zkl_rwlock_read_token(zkl_rwlock *rw, int64_t *out);
ZKL_EXPORT int zkl_rwlock_write_token(zkl_rwlock *rw, int64_t *out);

/* The full path of the calling thread's read (resp. write) node, or NULL if
 * it holds nothing on that side. Borrowed: valid until the thread releases
 * that side. Thread-safe. */
ZKL_EXPORT const char *zkl_rwlock_read_node(zkl_rwlock *rw);
ZKL_EXPORT const char *zkl_rwlock_write_node(zkl_rwlock *rw);

/* Set the data of the existing znode `path` only if the calling thread
 * still holds the write lock, atomically on the server (a multi-op that
 * first checks the writer's own node). Returns 0, ZKL_ENOTHELD, ZKL_ELOST
 * (the hold is gone: nothing was written), ZKL_EINVAL, ZKL_ECONNLOSS
 * (outcome unknown), ZKL_EZK (e.g. `path` does not exist). Thread-safe. */
ZKL_EXPORT int zkl_rwlock_write_guarded_set(zkl_rwlock *rw, const char *path,
                                            const void *data, int len);

/* Handles on the read side and on the write side for the generic lock
 * interface and multi-locks (below): they borrow `rw`, their operations are
 * the ones above (held per thread), and their key is the lock path, the
 * same for both sides (so the two sides of one lock cannot be members of
 * one multi-lock). Returns 0 and a new handle in *out (free with
 * zkl_lock_free before the lock), ZKL_EINVAL (NULL), ZKL_ENOMEM.
 * Thread-safe. */
ZKL_EXPORT int zkl_rwlock_read_as_lock(zkl_rwlock *rw, zkl_lock **out) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_rwlock_write_as_lock(zkl_rwlock *rw, zkl_lock **out) ZKL_WARN_UNUSED;

/* Free the lock. Holds still open, on either side, are released (best
 * effort). Must not be called while another thread uses the lock: a free
 * while another thread acquires through it, a call through a freed lock and
 * a second free abort the process with a message naming the misuse (see
 * zkl_mutex_free). NULL does nothing. */
ZKL_EXPORT void zkl_rwlock_free(zkl_rwlock *rw);

/* ---- participants of a lock path, revocation ------------------------------ */

/* One contender node of a lock path, as zkl_participants_list reads it. */
typedef struct zkl_participant {
    char *node;       /* the node's name under the lock path */
    char kind[32];    /* its kind, between the protection prefix and the
                         sequence: "lock-" (mutex, semaphore-mutex, Curator's
                         mutex), "__READ__", "__WRIT__" (read-write lock),
                         "zkl-lease-" or "zkl-lease-x<n>-" (a semaphore's
                         lease), "zkl-wait-" (a semaphore's waiter),
                         "latch-" (a latch, Curator's LeaderLatch: holds
                         means leads); another
                         kind is judged as a mutex's node */
    int64_t seq;      /* its 10-digit sequence */
    int holds;        /* 1: holds, by the policy of the recipe of its kind
                         (a semaphore's lease holds while the leases up to
                         it fit the limit it recorded, its waiters wait);
                         0: waits */
    int leases;       /* for a lease node, the leases it stands for; else 0 */
    int64_t token;    /* czxid: the holder's fencing token */
    int64_t session;  /* the owning session (ephemeralOwner) */
    int64_t ctime_ms; /* creation time, ms since the epoch (server's clock) */
    int readable;     /* 1 if the data was read; 0 if the node's ACL refused
                         it (owner is then empty; the rest is from the stat) */
    char *owner;      /* the node's data, the owner's identity (zkl: "host
                         pid", or the id of zkl_lock_opts_set_id; Curator:
                         an address, or a participant's id), NUL-terminated; may hold
                         any bytes: owner_len counts them */
    size_t owner_len;
} zkl_participant;

/* The participants of lock path `path`: one listing, then each node's data
 * and stat, holders first, then waiters in queue order. Children without a
 * 10-digit sequence take no part; a node gone since the listing is left
 * out; a node whose data the ACL refuses is listed with readable 0. Who
 * holds is decided on the listing with the recipes' own policies, so a
 * node between two states (a waiter just woken) may show either. Returns 0
 * with a new array in *out (free with zkl_participants_free) and its length
 * in *n (0 and NULL for a path that does not exist or has no contender),
 * ZKL_EINVAL (NULL, bad path), ZKL_ENOAUTH (the path cannot be listed),
 * ZKL_EQUEUE (its listing is over the client's request limit, children of
 * any name counted: no acquire could wait there; zkl_last_error_text()
 * gives the count), ZKL_ELOST, ZKL_ECLOSED, ZKL_ECONNLOSS, ZKL_ENOMEM,
 * ZKL_EZK. Blocks until
 * the server answers or the connection is lost. Thread-safe. */
ZKL_EXPORT int zkl_participants_list(zkl_client *c, const char *path,
                                     zkl_participant **out, size_t *n) ZKL_WARN_UNUSED;
ZKL_EXPORT void zkl_participants_free(zkl_participant *p, size_t n);

/* The limit a counting semaphore at `path` recorded on the server, in
 * *max_leases, or 0 when `path` records none (no semaphore, or no node).
 * Returns 0, ZKL_EINVAL, ZKL_ENOAUTH, ZKL_ELOST, ZKL_ECLOSED,
 * ZKL_ECONNLOSS, ZKL_EZK. Thread-safe. */
ZKL_EXPORT int zkl_participants_limit(zkl_client *c, const char *path, int *max_leases);

/* Ask the holder of lock path `path` to let go, as Curator's revocation
 * does (wire-compatible: the ASCII bytes "__REVOKE__" become the data of
 * the holder's node; a Curator holder made revocable hears it and
 * releases). `node` names one node (its name, or its full path under
 * `path`); NULL asks every holder (a read lock or semaphore may have
 * several). Only a holder that opted in hears it (a zkl holder through its
 * revoke callback, e.g. zkl_mutex_set_revoke_fn; a Curator holder made
 * revocable); nothing forces it. Returns 0 (asked), ZKL_ENOTHELD (nobody holds, or `node` does
 * not exist), ZKL_EINVAL (NULL, bad path, `node` not under `path`),
 * ZKL_ENOAUTH, ZKL_ELOST, ZKL_ECLOSED, ZKL_ECONNLOSS, ZKL_EZK.
 * Thread-safe. */
ZKL_EXPORT int zkl_revoke(zkl_client *c, const char *path, const char *node);

/* ---- generic lock interface and multi-lock ----------------------------- */

/* A zkl_lock is a handle on any lock, a zkl recipe or one of the caller's
 * own, seen through one small set of operations (zkl_lock_ops). Multi-locks
 * are built from such handles, so a multi-lock may mix mutexes, semaphore-
 * mutexes, either side of read-write locks, other multi-locks and locks
 * that zkl knows nothing about.
 *
 * Ownership:
 *  - A handle made by an adapter (zkl_mutex_as_lock, zkl_multilock_as_lock,
 *    ...) borrows the object behind it: zkl_lock_free frees the handle
 *    only, and the object must outlive the handle.
 *  - A handle made by zkl_lock_new calls ops->free(self), if set, when it
 *    is freed: it may own `self`, or only borrow it (ops->free NULL).
 *  - A multi-lock made by zkl_multilock_new_locks borrows the handles given
 *    to it and the objects behind them. Free in the reverse order of
 *    creation: the multi-lock, then the handles, then the objects.
 * Threads: a handle adds neither state nor locking of its own; what "held"
 * means, and who may release, are those of the lock behind it. */

/* The operations of a lock. Write your own to put any lock behind a
 * zkl_lock; zkl_lock_new copies the struct, so it need not outlive the call.
 * Set .version to ZKL_LOCK_OPS_VERSION: later versions of zkl add fields
 * only at the end and read only those of the version a program was built
 * with, so a compiled program keeps working with a newer library. */
#define ZKL_LOCK_OPS_VERSION 1u
typedef struct zkl_lock_ops {
    /* ZKL_LOCK_OPS_VERSION of the zkl.h the caller was built with. */
    unsigned version;
    /* Take the lock, with zkl's timeout convention (< 0 forever, 0 try once
     * without waiting, > 0 at most that many milliseconds). Return 0 when
     * held, else a negative ZKL_E... code (ZKL_ETIMEDOUT for running out of
     * time), and then the lock must not be held by this call: a multi-lock's
     * all-or-nothing rests on it. Required. */
    int (*acquire)(void *self, long timeout_ms);
    /* Release what one successful acquire took. 0 or a negative ZKL_E...
     * code. Required. */
    int (*release)(void *self);
    /* 1 if held (in the lock's own sense: by the calling thread, or by the
     * object), else 0. Must be cheap and must not block. Required. */
    int (*is_held)(void *self);
    /* The key that orders locks in a multi-lock: for a ZooKeeper lock, its
     * lock path. Non-NULL, non-empty, unchanged for the life of `self`.
     * Every process must give one lock the same key, and two different
     * locks different keys: keys equal means "the same lock". Required. */
    const char *(*path)(void *self);
    /* Called with `self` by zkl_lock_free. Optional (NULL: nothing). */
    void (*free)(void *self);
} zkl_lock_ops;

/* A handle on the caller's own lock `self` (any pointer, NULL included).
 * Returns 0 and a new handle in *out (free with zkl_lock_free), ZKL_EINVAL
 * (ops or out NULL, ops->version 0 or newer than this library's, or a
 * required operation missing), ZKL_ENOMEM. Thread-safe. */
ZKL_EXPORT int zkl_lock_new(const zkl_lock_ops *ops, void *self,
                            zkl_lock **out) ZKL_WARN_UNUSED;

/* Run the operation of the lock behind `l` and return what it returns;
 * ZKL_EINVAL for NULL (zkl_lock_is_held: 0; zkl_lock_path: NULL). The path
 * is borrowed from the lock. Thread-safety is that of the lock. */
ZKL_EXPORT int zkl_lock_acquire(zkl_lock *l, long timeout_ms) ZKL_WARN_UNUSED;
ZKL_EXPORT int zkl_lock_release(zkl_lock *l);
ZKL_EXPORT int zkl_lock_is_held(zkl_lock *l);
ZKL_EXPORT const char *zkl_lock_path(zkl_lock *l);

/* Free the handle (calling ops->free for a handle of zkl_lock_new; an
 * adapter's object is left alone). It releases nothing. Must not be called
 * while the handle is in use, nor while a multi-lock still uses it. NULL
 * does nothing. */
ZKL_EXPORT void zkl_lock_free(zkl_lock *l);

/* The mutex's adapter: a handle, borrowing the mutex, whose operations are
 * the mutex's own (per thread); the key is the lock path. Returns 0 and a
 * new handle in *out (free with zkl_lock_free before the mutex), ZKL_EINVAL
 * (NULL), ZKL_ENOMEM. Thread-safe. The other recipes declare their adapters
 * in their own sections (zkl_semmutex_as_lock, zkl_rwlock_read_as_lock,
 * zkl_rwlock_write_as_lock). */
ZKL_EXPORT int zkl_mutex_as_lock(zkl_mutex *m, zkl_lock **out) ZKL_WARN_UNUSED;

/* A multi-lock: several locks taken and released as one.
 *
 * All or nothing: zkl_multilock_acquire either takes every member or,
 * on any failure or timeout, releases every member it took in that call
 * (in reverse order) before it returns: nothing of the call stays held and
 * no node of it stays on the server.
 *
 * One deadline: the timeout bounds the whole call. Each member gets only
 * the time that remains; a member reached after the deadline is tried once
 * without waiting (as with timeout 0), so the call never waits past it.
 *
 * Canonical order, hence no deadlock between multi-locks: members are
 * acquired in ascending byte order (strcmp) of their keys (zkl_lock_path:
 * the lock path), whatever order they were given in, and released in the
 * reverse order. Two processes taking overlapping sets thus always contend
 * for their first common lock first, and never wait for each other in a
 * cycle. A nested zkl multi-lock is not a unit in that order: its members
 * are taken one by one at the places of their own keys, so multi-locks
 * nested in any way are deadlock-free among themselves too. Limits: a lock
 * of the caller's own that takes several locks inside (zkl cannot see
 * them) is ordered by its one key only, and so is a zkl multi-lock put
 * behind zkl_lock_new rather than zkl_multilock_as_lock; and no order can
 * help a thread that already holds a lock outside the multi-lock while it
 * acquires one.
 *
 * Duplicates are an error: two members with the same key, also across
 * nested multi-locks, give ZKL_EINVAL (they would wait for each other; the
 * read and the write side of one read-write lock share the lock path, so
 * they cannot both be members).
 *
 * Threads: a multi-lock's hold belongs to the calling thread, like a
 * zkl_mutex's: the thread that acquired it must release it, another
 * thread's zkl_multilock_release is ZKL_ENOTHELD and changes nothing. It is
 * reentrant: a thread that holds it may acquire it again, which only counts
 * (no member is touched), and releases as often. One multi-lock object may
 * be shared by threads if every member is per thread (mutexes, read-write
 * lock sides, multi-locks of those); a per-object member (a semaphore-
 * mutex) is held for the whole object, so threads that contend through
 * such a multi-lock need one object each (with members of their own).
 * A thread must not hold a non-reentrant member (a semaphore-mutex) by
 * other means while it acquires the multi-lock.
 * ---------------------------------------------------------------------- */
typedef struct zkl_multilock zkl_multilock;

/* A multi-lock of one new reentrant mutex (zkl_mutex) per path of
 * paths[0..n-1], on client `c`. The mutexes belong to the multi-lock and
 * go with it. Nothing is sent to the server yet. Returns 0 and a new
 * multi-lock in *out (free with zkl_multilock_free), ZKL_EINVAL (c, paths
 * or out NULL, n == 0, a NULL entry, a path zkl_mutex_new refuses, a path
 * given twice: nothing is created), ZKL_ENOMEM, ZKL_ESYS. Thread-safe. */
ZKL_EXPORT int zkl_multilock_new(zkl_client *c, const char *const *paths, size_t n,
                                 zkl_multilock **out) ZKL_WARN_UNUSED;
/* The same, each mutex made with the lock options `opts` (zkl_lock_opts;
 * NULL for the defaults). */
ZKL_EXPORT int zkl_multilock_new_opts(zkl_client *c, const char *const *paths, size_t n,
                                      const zkl_lock_opts *opts,
                                      zkl_multilock **out) ZKL_WARN_UNUSED;

/* A multi-lock of the locks behind handles locks[0..n-1], any mix of
 * kinds. A handle of another multi-lock (zkl_multilock_as_lock) brings in
 * that multi-lock's members, which are then ordered one by one (see above).
 * The multi-lock borrows the handles and the objects behind them: they
 * must outlive it (a nested multi-lock too), and the caller frees them
 * after it. Returns 0 and a new multi-lock in *out (free with
 * zkl_multilock_free), ZKL_EINVAL (locks or out NULL, n == 0, a NULL
 * entry, a key NULL or empty, two members with the same key), ZKL_ENOMEM,
 * ZKL_ESYS. Nothing is acquired. Thread-safe. */
ZKL_EXPORT int zkl_multilock_new_locks(zkl_lock *const *locks, size_t n,
                                       zkl_multilock **out) ZKL_WARN_UNUSED;

/* Acquire every member for the calling thread, in the canonical order,
 * within one deadline (see above); all or nothing. If the calling thread
 * already holds the multi-lock, only its count goes up. Returns 0 when every
 * member is held, or the first member's failure with nothing of the call
 * left held: ZKL_ETIMEDOUT, ZKL_ELOST (a session ended while waiting; or, on
 * reentry, a member of the thread's hold no longer reports itself held, i.e.
 * it was lost, or for a semaphore-mutex the connection is down: the count is
 * unchanged, release when done), ZKL_ECLOSED, ZKL_ECANCELED, ZKL_ECONNLOSS
 * (a try once with no connection), ZKL_ENOAUTH, ZKL_EDEADLK (e.g. a write
 * side whose read side the thread holds, or a semaphore-mutex whose object
 * already holds), ZKL_ENOMEM, ZKL_EZK, or any code a member of the caller's
 * own returns; ZKL_EINVAL for NULL. One exception to "nothing left held":
 * a member whose release fails and leaves it held (the server refused its
 * delete) stays held by the thread, and the call returns that release's
 * code (e.g. ZKL_ENOAUTH), naming the member in zkl_last_error_text; it is
 * let go by its own release once that succeeds, or when the client closes.
 * Thread-safe. */
ZKL_EXPORT int zkl_multilock_acquire(zkl_multilock *ml, long timeout_ms) ZKL_WARN_UNUSED;

/* zkl_multilock_acquire, ending with ZKL_ECANCELED once `h` fires (at once
 * if it fired already, even for a reentry), the members taken released, as
 * on any failure. A zkl recipe member's wait ends when h fires; a member
 * that is the caller's own lock (zkl_lock_new) is not asked once h fired,
 * but its own wait is not cut short. h NULL: as zkl_multilock_acquire.
 * Thread-safe. */
ZKL_EXPORT int zkl_multilock_acquire_cancellable(zkl_multilock *ml, long timeout_ms,
                                                 zkl_cancel *h) ZKL_WARN_UNUSED;

/* An asynchronous acquire of every member (zkl_request(3)): one request,
 * its members queued one after the other in the multi-lock's order, each
 * once the one before it holds, within the one timeout; the callback runs
 * once, with 0 when all are held, or with the failure of one, the members
 * taken released and no node of the attempt left. The hold belongs to the
 * request (not to a thread, not reentrant with the multi-lock's blocking
 * hold): zkl_request_release releases every member, zkl_request_is_held is
 * 1 while all hold, and zkl_request_token and _node answer for the last
 * member (the largest key). The request is independent of ml once started.
 * Every member must be a zkl recipe's handle (zkl_mutex_as_lock,
 * zkl_semmutex_as_lock, zkl_rwlock_read_as_lock, zkl_rwlock_write_as_lock,
 * or a multi-lock of those) on one client: a member that is the caller's
 * own lock (zkl_lock_new), whose acquire can only block, or members on two
 * clients are ZKL_EINVAL, with nothing sent. Other returns as
 * zkl_mutex_acquire_async. Thread-safe. */
ZKL_EXPORT int zkl_multilock_acquire_async(zkl_multilock *ml, long timeout_ms,
                                           zkl_request_fn fn, void *arg,
                                           zkl_request **out) ZKL_WARN_UNUSED;

/* Release one count of the calling thread's hold; only the last one
 * touches the members (a lost member is reported then, and by
 * zkl_multilock_is_held at any time). The last release releases every
 * member, in reverse canonical order; a member's failure does not stop the
 * others. Returns 0, the first member error met (e.g. ZKL_ELOST for a
 * member lost with its session; the hold is over all the same),
 * ZKL_ENOTHELD (the calling thread holds nothing: nothing changes),
 * ZKL_EINVAL (NULL). Thread-safe. */
ZKL_EXPORT int zkl_multilock_release(zkl_multilock *ml);

/* 1 if the calling thread holds the multi-lock (acquired through this
 * object) and every member still reports itself held, else 0 (also for
 * NULL). Holding the members by other means, e.g. through an outer
 * multi-lock, does not count. No server traffic. Thread-safe. */
ZKL_EXPORT int zkl_multilock_is_held(zkl_multilock *ml);

/* A handle on the multi-lock, borrowing it, to nest it in another
 * multi-lock or use it generically. Its key is the smallest key of the
 * members. Returns 0 and a new handle in *out (free with zkl_lock_free
 * before the multi-lock), ZKL_EINVAL (NULL), ZKL_ENOMEM. Thread-safe. */
ZKL_EXPORT int zkl_multilock_as_lock(zkl_multilock *ml, zkl_lock **out) ZKL_WARN_UNUSED;

/* Free the multi-lock. If the calling thread still holds it, its members
 * are released first (best effort); the mutexes of zkl_multilock_new are
 * freed, which releases what other threads still held through them.
 * Borrowed handles and objects are left alone. Must not be called while
 * another thread uses the multi-lock: a free while another thread acquires
 * through it, a call through a freed multi-lock and a second free abort the
 * process with a message naming the misuse (see zkl_mutex_free). NULL does
 * nothing. */
ZKL_EXPORT void zkl_multilock_free(zkl_multilock *ml);

/* ---- leader election ------------------------------------------------------
 * A latch is a candidate in the election on a path, speaking Curator's
 * LeaderLatch protocol: its node is PATH/_c_<uuid>-latch-<10 digits>
 * (ephemeral sequential, under container parents like the locks' nodes)
 * with the candidate's id as data, never written after it is made. The
 * first child of PATH leads (Curator's order: by the sequence; children of
 * other kinds take part); a follower watches only the node just before
 * its own. Curator's LeaderLatch and zkl latches take part in one election.
 *
 * Leadership is lost, and zkl_latch_is_leader turns 0, by the loss rule of
 * the locks (see "the loss rule" above): before the server can expire the
 * session. The latch leads only on a node whose ephemeral owner is the
 * client's current session. After a lost session it takes part again by
 * itself, with a new node of the client's next session; after its node
 * is deleted by someone else, at once. Each leadership's token (the czxid
 * of its node) is larger than every earlier leadership's of the path.
 *
 * The latch works on the client's asynchronous requests (zkl_request(3)):
 * its listener is called where request callbacks run, on the client's own
 * thread, or, after zkl_client_event_fd, on the thread that calls
 * zkl_client_dispatch, which is all an event loop needs. A leadership
 * begins when its callback runs: with delivery by descriptor, await and
 * is_leader see it once zkl_client_dispatch ran it (a lost one ends at
 * once, before it is told).
 * Thread safety: a latch may be used by several threads at once, except
 * that zkl_latch_free must be its last call.
 * ---------------------------------------------------------------------- */
typedef struct zkl_latch zkl_latch;

/* A latch on the election `path` with `id` as its node's data (copied; NULL
 * for the client's "host pid", "" for no bytes; at most 4096 bytes). It
 * takes no part until zkl_latch_start. Returns 0 and a new latch in *out
 * (free with zkl_latch_free), ZKL_EINVAL (NULL c or out, a malformed path,
 * an id too long), ZKL_ECLOSED, ZKL_ENOMEM, ZKL_ESYS. Thread-safe. */
ZKL_EXPORT int zkl_latch_new(zkl_client *c, const char *path, const char *id,
                             zkl_latch **out) ZKL_WARN_UNUSED;
/* Join the election: the node's create is sent and the call returns at
 * once; leadership comes later (zkl_latch_await, the listener). Returns 0,
 * ZKL_EINVAL (NULL), ZKL_EBUSY (started already), ZKL_ECLOSED (the latch
 * or the client is closed), ZKL_ENOMEM. A client between sessions is no
 * failure: the latch joins on the next one. Thread-safe. */
ZKL_EXPORT int zkl_latch_start(zkl_latch *l);
/* Wait until the latch leads, up to timeout_ms (below 0: for ever; 0: no
 * wait). Returns 0 (leading), ZKL_ETIMEDOUT, ZKL_ECLOSED (the latch was
 * closed), ZKL_EINVAL (NULL, not started), ZKL_ELOST (the client is between
 * sessions: the latch joins the next one by itself, if the client opens
 * one; wait again), or what ended its taking part
 * for good: ZKL_ENOAUTH (the ACL refuses its node or the listing),
 * ZKL_ECLOSED (the client closed), ZKL_ECANCELED (zkl_client_cancel),
 * ZKL_ENOMEM, ZKL_EZK, ZKL_EQUEUE. Thread-safe. */
ZKL_EXPORT int zkl_latch_await(zkl_latch *l, long timeout_ms);
/* 1 while the latch leads and its session is the client's live one (it
 * may be uncertain while the client is suspended, as a lock's hold), else
 * 0 (NULL too). No server traffic. Thread-safe. */
ZKL_EXPORT int zkl_latch_is_leader(zkl_latch *l);
/* Called with 1 when the latch becomes leader and with 0 when it stops
 * leading for any reason (its close, its node deleted by someone else, the
 * loss rule, its session's end): once per change, one call at a time,
 * where the client runs request callbacks (see above), except the 0 of
 * zkl_latch_close, on the closing thread before the close returns. */
typedef void (*zkl_latch_fn)(zkl_latch *l, int leader, void *arg);
/* Set the listener (fn NULL: none). Once this returns, the old listener is
 * not running and will not be called. The listener may call zkl_latch_
 * is_leader, _token and _await with timeout 0, not zkl_latch_close,
 * zkl_latch_free or zkl_latch_set_listener. Returns 0, ZKL_EINVAL (NULL
 * l), ZKL_EFORK (in a child of fork()). Thread-safe. */
ZKL_EXPORT int zkl_latch_set_listener(zkl_latch *l, zkl_latch_fn fn, void *arg);
/* The fencing token of the current leadership (its node's czxid) in *out.
 * Returns 0, ZKL_ENOTHELD (not leading), ZKL_ELOST (the leadership was
 * lost and the listener is yet to hear it), ZKL_EINVAL (NULL).
 * Thread-safe. */
ZKL_EXPORT int zkl_latch_token(zkl_latch *l, int64_t *out);
/* Leave the election: a waiting latch's node is deleted, a leader's too
 * (the listener hears 0 first), and the call returns once the server
 * confirmed, up to about the session timeout. Returns 0; ZKL_ECLOSED
 * (closed already); ZKL_EINVAL (NULL); ZKL_ECONNLOSS or ZKL_ETIMEDOUT (no
 * confirmation in time: the client deletes the node on reconnect, or the
 * session's end takes it); ZKL_ENOAUTH (the ACL refuses the delete: the
 * client keeps trying until the session ends). A closed latch takes no
 * part again. Not from the listener. Thread-safe. */
ZKL_EXPORT int zkl_latch_close(zkl_latch *l);
/* Close the latch (as zkl_latch_close, the result ignored) and free it.
 * Its last call: a call through a freed latch and a second free abort the
 * process with a message naming the misuse (see zkl_mutex_free). NULL does
 * nothing. */
ZKL_EXPORT void zkl_latch_free(zkl_latch *l);

#ifdef __cplusplus
}
#endif
#endif /* ZKL_H */
