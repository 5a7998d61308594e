/* The lock kinds of `zkl lock`: each recipe's calls under one interface. */
#include <stdlib.h>

#include "lockkind.h"
#include "lockrun.h"

static void tell_lost(void *wfd)
{
    loop_notify(*(int *)wfd, LOOP_LOST);
}

static int mutex_create(zkl_client *c, const char *path, long permits, void **out)
{
    (void)permits;
    zkl_mutex *m;
    int rc = zkl_mutex_new(c, path, &m);
    if (rc == 0)
        *out = m;
    return rc;
}

static int mutex_acquire(void *obj, long timeout_ms)
{
    return zkl_mutex_acquire(obj, timeout_ms);
}

static int mutex_release(void *obj)
{
    return zkl_mutex_release(obj);
}

static int64_t mutex_token(void *obj)
{
    int64_t t = 0;
    int rc = zkl_mutex_token(obj, &t);
    return rc != 0 ? rc : t;
}

static const char *mutex_node(void *obj)
{
    return zkl_mutex_node(obj);
}

static void mutex_lost(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m, (void)token;
    tell_lost(arg);
}

static int mutex_on_lost(void *obj, int *wfd)
{
    return zkl_mutex_set_lost_fn(obj, mutex_lost, wfd);
}

static void mutex_revoked(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m, (void)token;
    loop_notify(*(int *)arg, LOOP_REVOKE);
}

static int mutex_on_revoke(void *obj, int *wfd)
{
    return zkl_mutex_set_revoke_fn(obj, mutex_revoked, wfd);
}

static void mutex_destroy(void *obj)
{
    zkl_mutex_free(obj);
}

const lockkind lockkind_mutex = {"mutex",       mutex_create,  mutex_acquire,
                                 mutex_release, mutex_token,   mutex_node,
                                 mutex_on_lost, mutex_on_revoke, mutex_destroy};

/* ---- read-write lock: one side each ---------------------------------------- */

static int rw_create(zkl_client *c, const char *path, long permits, void **out)
{
    (void)permits;
    zkl_rwlock *rw;
    int rc = zkl_rwlock_new(c, path, &rw);
    if (rc == 0)
        *out = rw;
    return rc;
}

static int read_acquire(void *obj, long timeout_ms)
{
    return zkl_rwlock_read_acquire(obj, timeout_ms);
}

static int read_release(void *obj)
{
    return zkl_rwlock_read_release(obj);
}

static int64_t read_token(void *obj)
{
    int64_t t = 0;
    int rc = zkl_rwlock_read_token(obj, &t);
    return rc != 0 ? rc : t;
}

static const char *read_node(void *obj)
{
    return zkl_rwlock_read_node(obj);
}

static int write_acquire(void *obj, long timeout_ms)
{
    return zkl_rwlock_write_acquire(obj, timeout_ms);
}

static int write_release(void *obj)
{
    return zkl_rwlock_write_release(obj);
}

static int64_t write_token(void *obj)
{
    int64_t t = 0;
    int rc = zkl_rwlock_write_token(obj, &t);
    return rc != 0 ? rc : t;
}

static const char *write_node(void *obj)
{
    return zkl_rwlock_write_node(obj);
}

static void rw_lost(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    (void)rw, (void)write, (void)token;
    tell_lost(arg); /* zkl holds one side only */
}

static int rw_on_lost(void *obj, int *wfd)
{
    return zkl_rwlock_set_lost_fn(obj, rw_lost, wfd);
}

static void rw_revoked(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    (void)rw, (void)write, (void)token;
    loop_notify(*(int *)arg, LOOP_REVOKE);
}

static int rw_on_revoke(void *obj, int *wfd)
{
    return zkl_rwlock_set_revoke_fn(obj, rw_revoked, wfd);
}

static void rw_destroy(void *obj)
{
    zkl_rwlock_free(obj);
}

const lockkind lockkind_read = {"read",     rw_create,  read_acquire, read_release, read_token,
                                read_node, rw_on_lost, rw_on_revoke, rw_destroy};
const lockkind lockkind_write = {"write",       rw_create,
                                 write_acquire, write_release, write_token,
                                 write_node, rw_on_lost, rw_on_revoke, rw_destroy};

/* ---- counting semaphore: one lease ------------------------------------------ */

struct sem {
    zkl_semaphore *s;
    zkl_lease *lease;
};

static int sem_create(zkl_client *c, const char *path, long permits, void **out)
{
    struct sem *x = calloc(1, sizeof *x);
    if (x == NULL)
        return ZKL_ENOMEM;
    int rc = zkl_semaphore_new(c, path, (int)permits, &x->s);
    if (rc != 0) {
        free(x);
        return rc;
    }
    *out = x;
    return 0;
}

static int sem_acquire(void *obj, long timeout_ms)
{
    struct sem *x = obj;
    return zkl_semaphore_acquire(x->s, timeout_ms, &x->lease);
}

static int sem_release(void *obj)
{
    struct sem *x = obj;
    int rc = zkl_lease_release(x->lease); /* frees the lease in every case */
    x->lease = NULL;
    return rc;
}

static int64_t sem_token(void *obj)
{
    int64_t t = 0;
    int rc = zkl_lease_token(((struct sem *)obj)->lease, &t);
    return rc != 0 ? rc : t;
}

static const char *sem_node(void *obj)
{
    return zkl_lease_node(((struct sem *)obj)->lease);
}

static void sem_lost(zkl_semaphore *s, int64_t token, void *arg)
{
    (void)s, (void)token;
    tell_lost(arg);
}

static int sem_on_lost(void *obj, int *wfd)
{
    return zkl_semaphore_set_lost_fn(((struct sem *)obj)->s, sem_lost, wfd);
}

static void sem_destroy(void *obj)
{
    struct sem *x = obj;
    /* Every lease was released by now, so the semaphore is free to go. */
    (void)zkl_semaphore_free(x->s);
    free(x);
}

const lockkind lockkind_semaphore = {"semaphore", sem_create, sem_acquire, sem_release, sem_token,
                                     sem_node,    sem_on_lost, NULL,       sem_destroy};
