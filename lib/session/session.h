/* The client's own declarations, shared by lib/session/client.c (the session and
 * its registry), lib/session/keeper.c (the keeper thread and the loss rule) and
 * lib/session/options.c. Nothing else includes it. */
#ifndef ZKL_SESSION_H
#define ZKL_SESSION_H

#include "internal.h"

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
    struct ACL_vector acls; /* zkl_client_opts_add_acl's entries */
    struct zkl__secure_opts sec;
};

struct zkl__listener {
    zkl_state_fn fn;
    void *arg;
    struct zkl__listener *next;
};

/* The registry of clients (lock order: registry, then c->mu). */
ZKL__HIDDEN void zkl__registry_lock(void);
ZKL__HIDDEN void zkl__registry_unlock(void);
/* The client with this id, returned with c->mu held, or NULL. */
ZKL__HIDDEN zkl_client *zkl__client_lock_id(uint64_t id);
/* Record a new state and queue it for the listeners (c->mu held). */
ZKL__HIDDEN void zkl__client_push_event(zkl_client *c, int state);
/* Tell the session listener the session ended (c->mu held). */
ZKL__HIDDEN void zkl__client_session_end(zkl_client *c);
/* Start a session on a new handle (c->hlock held for writing). */
ZKL__HIDDEN int zkl__client_start_handle(zkl_client *c);
/* The keeper thread's body (lib/session/keeper.c); its argument is the client. */
ZKL__HIDDEN void *zkl__keeper_main(void *arg);

/* Copy an ACL list (lib/session/options.c): 0 or ZKL_ENOMEM (dst empty). */
ZKL__HIDDEN int zkl__acl_vector_copy(struct ACL_vector *dst, const struct ACL_vector *src);
ZKL__HIDDEN void zkl__acl_vector_free(struct ACL_vector *v);

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
ZKL__HIDDEN void zkl__secure_opts_clear(struct zkl__secure_opts *s);
/* Check settings before a client is made: every file can be loaded, the
 * combination is possible. 0, or ZKL_EINVAL / ZKL_ENOTSUP / ZKL_ENOMEM with
 * a detail. */
ZKL__HIDDEN int zkl__secure_check(const struct zkl__secure_opts *s);
/* The client's copy (NULL and 0 when neither TLS nor SASL is set), or
 * ZKL_ENOMEM. */
ZKL__HIDDEN int zkl__secure_new(const struct zkl__secure_opts *s, struct zkl__secure **out);
ZKL__HIDDEN void zkl__secure_free(struct zkl__secure *sec);
/* A new handle for c->hosts with the client's TLS or SASL settings (sec
 * may be NULL: a plain one), as zookeeper_init would make it. */
ZKL__HIDDEN zhandle_t *zkl__secure_handle(const struct zkl__secure *sec, const char *hosts,
                                          watcher_fn fn, int timeout_ms);
#ifdef HAVE_ZOOKEEPER_INIT_SSL
/* A TLS client context with the settings' CA, certificate and key, which
 * verifies the server: NULL with the reason in why if a file cannot be
 * used. */
struct ssl_ctx_st;
ZKL__HIDDEN struct ssl_ctx_st *zkl__tls_ctx(const struct zkl__secure_opts *s, char *why,
                                            size_t n);
#endif
/* Whether an open whose first session has not come yet should give up
 * (lib/session/probe.c), called without c->mu, `started` when the handle
 * was made: 0 to go on waiting until *next (monotonic ns), or a ZKL_E...
 * code with a detail: SASL credentials refused, or a TLS handshake that
 * cannot succeed, found by one handshake of our own with each server.
 * `*probed` starts false. */
ZKL__HIDDEN int zkl__open_stalled(zkl_client *c, int64_t started, int64_t deadline,
                                  bool *probed, int64_t *next);

#endif
