/* Which clients this process has, and who still uses a closed one's
 * memory: the registry that ZooKeeper callbacks find their client in, the
 * count of lock objects that keep a client's memory, and the part of both
 * that fork() must leave whole. */
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

int zkl__registry_add(zkl_client *c)
{
    zkl__fork_watch();
    int rc = 0;
    pthread_mutex_lock(&reg_mu);
    if (reg_n == reg_cap) {
        size_t cap = reg_cap ? reg_cap * 2 : 8;
        zkl_client **r = realloc(reg, cap * sizeof *r);
        if (r == NULL) {
            rc = ZKL_ENOMEM;
            goto out;
        }
        reg = r;
        reg_cap = cap;
    }
    c->id = reg_next_id++;
    reg[reg_n++] = c;
out:
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

zkl_client *zkl__registry_lock_client(zhandle_t *zh, uint64_t id)
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
    return zkl__registry_lock_client(NULL, id);
}

/* ---- lock objects keep a closed client's memory ------------------------- */

static pthread_mutex_t users_mu = PTHREAD_MUTEX_INITIALIZER;

void zkl__client_ref(zkl_client *c)
{
    pthread_mutex_lock(&users_mu);
    c->objects++;
    pthread_mutex_unlock(&users_mu);
}

void zkl__client_unref(zkl_client *c)
{
    pthread_mutex_lock(&users_mu);
    bool last = --c->objects == 0 && c->closed;
    pthread_mutex_unlock(&users_mu);
    if (last)
        zkl__client_free(c);
}

int zkl__client_mark_closed(zkl_client *c)
{
    pthread_mutex_lock(&users_mu);
    c->closed = 1;
    int left = c->objects > 0;
    pthread_mutex_unlock(&users_mu);
    return left;
}

void zkl__client_forget(zkl_client *c)
{
    zkl__registry_remove(c);
    if (zkl__client_mark_closed(c))
        return; /* lock objects still open: the last one to go frees it */
    zkl__client_free(c);
}

/* ---- fork() (lib/session/fork.c) ------------------------------------------
 * The forking thread holds the registry, every client's c->mu and the
 * references' mutex, in the lock order, so that the child finds each of
 * them unlocked and what they guard whole. */

void zkl__registry_fork_prepare(void)
{
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < reg_n; i++)
        pthread_mutex_lock(&reg[i]->mu);
    pthread_mutex_lock(&users_mu);
}

void zkl__registry_fork_parent(void)
{
    pthread_mutex_unlock(&users_mu);
    for (size_t i = reg_n; i-- > 0;)
        pthread_mutex_unlock(&reg[i]->mu);
    pthread_mutex_unlock(&reg_mu);
}

void zkl__registry_fork_child(void)
{
    pthread_mutex_init(&users_mu, NULL);
    for (size_t i = 0; i < reg_n; i++)
        pthread_mutex_init(&reg[i]->mu, NULL);
    pthread_mutex_init(&reg_mu, NULL);
}
