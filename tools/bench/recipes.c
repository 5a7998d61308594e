/* zkl's recipes as the runner's contenders, each through its zkl_lock
 * handle: the mutex (uncontended, contended), a lease of a counting
 * semaphore (semaphore) and either side of a read-write lock (rw). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void mutex_free(void *m)
{
    zkl_mutex_free(m);
}

void lock_open_mutex(struct run *r, int i, const char *path, struct bench_lock *out)
{
    zkl_mutex *m = new_mutex(r->cs[i], path, r->o->prefetch);
    int rc = zkl_mutex_as_lock(m, &out->l[0]);
    if (rc != 0)
        die("zkl_mutex_as_lock", rc);
    out->obj = m;
    out->free_obj = mutex_free;
}

/* One session, one thread: acquire+release cycles; latency = one cycle. */
void uncontended_run(struct run *r, const char *path, int ops, struct result *res)
{
    run_contenders(r, lock_open_mutex, path, ops, res, true);
}

void contended_run(struct run *r, const char *path, int ops, struct result *res)
{
    run_contenders(r, lock_open_mutex, path, ops, res, false);
}

/* ---- a lease of a counting semaphore ---------------------------------------
 * The semaphore has no adapter of its own (its holds are leases): this one
 * holds the lease of its latest acquire, one contender per object. */

struct leaser {
    zkl_semaphore *s;
    zkl_lease *l;
    const char *path;
};

static int lease_acquire(void *self, long timeout_ms)
{
    struct leaser *k = self;
    return zkl_semaphore_acquire(k->s, timeout_ms, &k->l);
}

static int lease_release(void *self)
{
    struct leaser *k = self;
    int rc = zkl_lease_release(k->l);
    k->l = NULL;
    return rc;
}

static int lease_is_held(void *self)
{
    return zkl_lease_is_held(((struct leaser *)self)->l);
}

static const char *lease_path(void *self)
{
    return ((struct leaser *)self)->path;
}

static void lease_free(void *self)
{
    struct leaser *k = self;
    zkl_semaphore_free(k->s);
    free(k);
}

BENCH_LOCK_OPS(lease);

static void lock_open_lease(struct run *r, int i, const char *path, struct bench_lock *out)
{
    struct leaser *k = xcalloc(1, sizeof *k);
    char *sem = xcalloc(strlen(path) + 5, 1);
    sprintf(sem, "%s/sem", path);
    int rc = zkl_semaphore_new(r->cs[i], sem, r->o->permits, &k->s);
    free(sem);
    if (rc != 0)
        die("zkl_semaphore_new", rc);
    k->path = path;
    out->l[0] = lock_new_or_die(&lease_ops, k);
}

/* As contended: `clients` sessions take one lease each of --permits and
 * give it back at once. */
void semaphore_run(struct run *r, const char *path, int ops, struct result *res)
{
    run_contenders(r, lock_open_lease, path, ops, res, false);
}

/* ---- a read-write lock ------------------------------------------------------ */

static void rwlock_free(void *rw)
{
    zkl_rwlock_free(rw);
}

static void lock_open_rw(struct run *r, int i, const char *path, struct bench_lock *out)
{
    zkl_rwlock *rw;
    int rc = zkl_rwlock_new(r->cs[i], path, &rw);
    if (rc == 0)
        rc = zkl_rwlock_read_as_lock(rw, &out->l[0]);
    if (rc == 0)
        rc = zkl_rwlock_write_as_lock(rw, &out->l[1]);
    if (rc != 0)
        die("zkl_rwlock_new", rc);
    out->obj = rw;
    out->free_obj = rwlock_free;
}

/* As contended: each operation a read with probability --read-fraction,
 * else a write. */
void rw_run(struct run *r, const char *path, int ops, struct result *res)
{
    run_contenders(r, lock_open_rw, path, ops, res, false);
}
