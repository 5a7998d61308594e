/* Which client a ZooKeeper callback is for, and the one party that listens
 * to a client's session (the lock-queue engine). */
#include <stdlib.h>

#include "session.h"

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

int zkl__registry_add(zkl_client *c)
{
    pthread_mutex_lock(&reg_mu);
    int rc = reg_add(c);
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

void zkl__registry_remove(zkl_client *c)
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

void zkl__registry_lock(void)
{
    pthread_mutex_lock(&reg_mu);
}

void zkl__registry_unlock(void)
{
    pthread_mutex_unlock(&reg_mu);
}

zkl_client *zkl__registry_find(zhandle_t *zh, uint64_t id)
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

zkl_client *zkl__client_lock_id(uint64_t id)
{
    return zkl__registry_find(NULL, id);
}

/* ---- the listener ------------------------------------------------------
 * The one party that keeps state across the session (the lock-queue
 * engine) registers here; every call below is made with c->mu held, and is
 * a no-op until something registered. */

void zkl__client_listen(zkl_client *c, const zkl__session_listener *l, void *ctx)
{
    c->sl = l;
    c->sl_ctx = ctx;
}

void *zkl__client_listener(zkl_client *c, const zkl__session_listener *l)
{
    return c->sl == l ? c->sl_ctx : NULL;
}

void zkl__client_tell_connected(zkl_client *c, zhandle_t *zh)
{
    if (c->sl)
        c->sl->on_connected(c->sl_ctx, zh);
}

void zkl__client_session_end(zkl_client *c)
{
    if (c->sl)
        c->sl->on_session_end(c->sl_ctx);
}

void zkl__client_wake_all(zkl_client *c)
{
    if (c->sl)
        c->sl->wake_all(c->sl_ctx);
}
