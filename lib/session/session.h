/* The client's own declarations, shared by lib/session/client.c (the session and
 * its registry), lib/session/keeper.c (the keeper thread and the loss rule) and
 * lib/session/options.c. Nothing else includes it. */
#ifndef ZKL_SESSION_H
#define ZKL_SESSION_H

#include "internal.h"

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
/* 0 if `hosts` is a connect string libzookeeper_mt can use, else
 * ZKL_EINVAL with the reason (lib/session/hosts.c). */
ZKL__HIDDEN int zkl__hosts_check(const char *hosts);
/* fork() (lib/session/fork.c): register the handlers once; the registry's
 * part of them (lib/session/client.c); keep an inherited handle's memory
 * reachable in the child, which may not free it. */
ZKL__HIDDEN void zkl__fork_watch(void);
ZKL__HIDDEN void zkl__registry_fork_prepare(void);
ZKL__HIDDEN void zkl__registry_fork_parent(void);
ZKL__HIDDEN void zkl__registry_fork_child(void);
ZKL__HIDDEN void zkl__fork_keep_handle(zhandle_t *zh);
/* The keeper thread's body (lib/session/keeper.c); its argument is the client. */
ZKL__HIDDEN void *zkl__keeper_main(void *arg);

#endif
