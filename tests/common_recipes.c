/* The rows of check_common: each recipe's constructor, destructor and the
 * operations its zkl_lock handle lacks. */
#include "common_recipes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

int lost_calls(struct lost_log *l)
{
    pthread_mutex_lock(&l->mu);
    int n = l->calls;
    pthread_mutex_unlock(&l->mu);
    return n;
}

int64_t lost_token(struct lost_log *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t t = l->token;
    pthread_mutex_unlock(&l->mu);
    return t;
}

static void lost_record(struct lost_log *l, const void *obj, int write, int64_t token)
{
    pthread_mutex_lock(&l->mu);
    l->calls++;
    l->token = token;
    l->write = write;
    if (obj != l->expect)
        l->wrong_obj++;
    pthread_mutex_unlock(&l->mu);
}

void obj_open(struct obj *o, int row, zkl_client *c, const char *path)
{
    memset(o, 0, sizeof *o);
    o->r = &recipes[row];
    o->c = c;
    o->path = strdup(path);
    ck_assert_ptr_nonnull(o->path);
    o->r->open(o);
    ck_assert_ptr_nonnull(o->lock);
    if (o->self == NULL)
        o->self = o->o;
}

void obj_close(struct obj *o)
{
    zkl_lock_free(o->lock);
    o->r->close(o);
    free(o->sub[0]);
    free(o->sub[1]);
    free(o->path);
}

/* The paths every constructor refuses; with a long one of 1,100 bytes. */
static const char *const zoo_op_path = "/x";

/* ---- mutex, and mutex with prefetch --------------------------------------- */

static void mutex_open(struct obj *o)
{
    zkl_mutex *m;
    bool prefetch = o->r == &recipes[R_PREFETCH];
    ck_assert_int_eq(tu_mutex_new_prefetch(o->c, o->path, prefetch, &m), 0);
    ck_assert_int_eq(zkl_mutex_as_lock(m, &o->lock), 0);
    o->o = m;
}

static void mutex_close(struct obj *o)
{
    zkl_mutex_free(o->o);
}

static void on_mutex_lost(zkl_mutex *m, int64_t token, void *arg)
{
    lost_record(arg, m, -1, token);
}

static int mutex_set_lost(struct obj *o, struct lost_log *l)
{
    return zkl_mutex_set_lost_fn(o->o, l ? on_mutex_lost : NULL, l);
}

static int64_t mutex_token(struct obj *o)
{
    return tu_mutex_token(o->o);
}

static int mutex_guarded(struct obj *o, const char *path, const void *data, int len)
{
    return zkl_mutex_guarded_set(o->o, path, data, len);
}

static const char *mutex_node(struct obj *o)
{
    return zkl_mutex_node(o->o);
}

static int prefetch_try_new(zkl_client *c, const char *path, bool null_out)
{
    zkl_mutex *m = NULL;
    int rc = tu_mutex_new_prefetch(c, path, true, null_out ? NULL : &m);
    if (rc != 0)
        ck_assert_ptr_null(m);
    zkl_mutex_free(m);
    return rc;
}

static int mutex_try_new(zkl_client *c, const char *path, bool null_out)
{
    zkl_mutex *m = NULL;
    int rc = zkl_mutex_new(c, path, null_out ? NULL : &m);
    if (rc != 0)
        ck_assert_ptr_null(m);
    zkl_mutex_free(m);
    return rc;
}

static void mutex_null_calls(void)
{
    zkl_lock *l = NULL;
    ck_assert_int_eq(zkl_mutex_as_lock(NULL, &l), ZKL_EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(zkl_mutex_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_is_held(NULL), 0);
    ck_assert_int_eq(tu_mutex_token(NULL), ZKL_EINVAL);
    ck_assert_ptr_null(zkl_mutex_node(NULL));
    ck_assert_int_eq(zkl_mutex_guarded_set(NULL, zoo_op_path, "", 0), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_set_lost_fn(NULL, on_mutex_lost, NULL), ZKL_EINVAL);
    zkl_mutex_free(NULL);
}

static void mutex_bad_args(struct obj *o)
{
    /* Lock options: only 0 and 1 switch prefetch; NULL everywhere refused. */
    zkl_lock_opts *lo = NULL;
    ck_assert_int_eq(zkl_lock_opts_new(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lock_opts_new(&lo), 0);
    ck_assert_int_eq(zkl_lock_opts_set_prefetch(lo, 2), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lock_opts_set_prefetch(lo, -1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lock_opts_set_prefetch(NULL, 1), ZKL_EINVAL);
    zkl_mutex *m = NULL;
    ck_assert_int_eq(zkl_mutex_new_opts(NULL, o->path, lo, &m), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_new_opts(o->c, "no-slash", lo, &m), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_new_opts(o->c, o->path, lo, NULL), ZKL_EINVAL);
    ck_assert_ptr_null(m);
    zkl_lock_opts_free(lo);
    zkl_lock_opts_free(NULL);
    /* A token needs somewhere to go. */
    int64_t t = 7;
    ck_assert_int_eq(zkl_mutex_token(o->o, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_token(o->o, &t), ZKL_ENOTHELD);
    ck_assert_int_eq(t, 7); /* unchanged on failure */
}

/* ---- semaphore-mutex ------------------------------------------------------ */

static void semmutex_open(struct obj *o)
{
    zkl_semmutex *s;
    ck_assert_int_eq(zkl_semmutex_new(o->c, o->path, &s), 0);
    ck_assert_int_eq(zkl_semmutex_as_lock(s, &o->lock), 0);
    o->o = s;
}

static void semmutex_close(struct obj *o)
{
    zkl_semmutex_free(o->o);
}

static void on_semmutex_lost(zkl_semmutex *s, int64_t token, void *arg)
{
    lost_record(arg, s, -1, token);
}

static int semmutex_set_lost(struct obj *o, struct lost_log *l)
{
    return zkl_semmutex_set_lost_fn(o->o, l ? on_semmutex_lost : NULL, l);
}

static int64_t semmutex_token(struct obj *o)
{
    return tu_semmutex_token(o->o);
}

static int semmutex_guarded(struct obj *o, const char *path, const void *data, int len)
{
    return zkl_semmutex_guarded_set(o->o, path, data, len);
}

static int semmutex_try_new(zkl_client *c, const char *path, bool null_out)
{
    zkl_semmutex *s = NULL;
    int rc = zkl_semmutex_new(c, path, null_out ? NULL : &s);
    if (rc != 0)
        ck_assert_ptr_null(s);
    zkl_semmutex_free(s);
    return rc;
}

static void semmutex_null_calls(void)
{
    zkl_lock *l = NULL;
    ck_assert_int_eq(zkl_semmutex_as_lock(NULL, &l), ZKL_EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(zkl_semmutex_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_is_held(NULL), 0);
    ck_assert_int_eq(tu_semmutex_token(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_guarded_set(NULL, zoo_op_path, "", 0), ZKL_EINVAL);
    zoo_op_t op;
    zoo_set_op_init(&op, zoo_op_path, "", 0, -1, NULL);
    ck_assert_int_eq(zkl_semmutex_guarded_multi(NULL, 1, &op, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_set_lost_fn(NULL, on_semmutex_lost, NULL), ZKL_EINVAL);
    zkl_semmutex_free(NULL);
}

static void semmutex_bad_args(struct obj *o)
{
    zoo_op_t op;
    zoo_set_op_init(&op, zoo_op_path, "", 0, -1, NULL);
    ck_assert_int_eq(zkl_semmutex_guarded_set(o->o, "relative", "", 0), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_guarded_multi(o->o, 0, &op, NULL), ZKL_EINVAL);
}

/* ---- a semaphore's lease of LEASES, of as many ----------------------------- *
 * The semaphore has no zkl_lock adapter: this one is built on zkl_lock_new.
 * Its hold is the lease of the latest acquire. */

struct lease_lock {
    zkl_semaphore *s;
    zkl_lease *l;
    const char *path;
};

static int lease_acquire(void *self, long timeout_ms)
{
    struct lease_lock *ll = self;
    if (ll->l != NULL)
        return ZKL_EDEADLK; /* one lease per contender in these tests */
    return zkl_semaphore_acquire_many(ll->s, LEASES, timeout_ms, &ll->l);
}

static int lease_release(void *self)
{
    struct lease_lock *ll = self;
    if (ll->l == NULL)
        return ZKL_ENOTHELD;
    int rc = zkl_lease_release(ll->l);
    if (rc != ZKL_ENOAUTH) /* every other outcome frees the lease */
        ll->l = NULL;
    return rc;
}

static int lease_is_held(void *self)
{
    return zkl_lease_is_held(((struct lease_lock *)self)->l);
}

static const char *lease_path(void *self)
{
    return ((struct lease_lock *)self)->path;
}

static const zkl_lock_ops lease_ops = {
    .version = ZKL_LOCK_OPS_VERSION,
    .acquire = lease_acquire,
    .release = lease_release,
    .is_held = lease_is_held,
    .path = lease_path,
};

static void lease_open(struct obj *o)
{
    struct lease_lock *ll = calloc(1, sizeof *ll);
    ck_assert_ptr_nonnull(ll);
    ll->path = o->path;
    ck_assert_int_eq(zkl_semaphore_new(o->c, o->path, LEASES, &ll->s), 0);
    ck_assert_int_eq(zkl_lock_new(&lease_ops, ll, &o->lock), 0);
    o->o = ll;
    o->self = ll->s;
}

static void lease_close(struct obj *o)
{
    struct lease_lock *ll = o->o;
    ck_assert_ptr_null(ll->l); /* every test gives its lease back */
    zkl_semaphore_free(ll->s);
    free(ll);
}

static void on_lease_lost(zkl_semaphore *s, int64_t token, void *arg)
{
    lost_record(arg, s, -1, token);
}

static int lease_set_lost(struct obj *o, struct lost_log *l)
{
    struct lease_lock *ll = o->o;
    return zkl_semaphore_set_lost_fn(ll->s, l ? on_lease_lost : NULL, l);
}

static int64_t lease_token(struct obj *o)
{
    struct lease_lock *ll = o->o;
    return ll->l ? tu_lease_token(ll->l) : ZKL_ENOTHELD;
}

static int lease_guarded(struct obj *o, const char *path, const void *data, int len)
{
    struct lease_lock *ll = o->o;
    return ll->l ? zkl_lease_guarded_set(ll->l, path, data, len) : ZKL_ENOTHELD;
}

static const char *lease_node(struct obj *o)
{
    struct lease_lock *ll = o->o;
    return ll->l ? zkl_lease_node(ll->l) : NULL;
}

static int lease_try_new(zkl_client *c, const char *path, bool null_out)
{
    zkl_semaphore *s = NULL;
    int rc = zkl_semaphore_new(c, path, LEASES, null_out ? NULL : &s);
    if (rc != 0)
        ck_assert_ptr_null(s);
    zkl_semaphore_free(s);
    return rc;
}

static void lease_null_calls(void)
{
    zkl_lease *l = NULL;
    ck_assert_int_eq(zkl_semaphore_acquire_many(NULL, 1, 1000, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_acquire(NULL, 1000, &l), ZKL_EINVAL);
    ck_assert_ptr_null(l);
    zkl_lease_info *info;
    int n;
    ck_assert_int_eq(zkl_semaphore_holders(NULL, 1000, &info, &n), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_max_leases(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_set_lost_fn(NULL, on_lease_lost, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lease_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lease_is_held(NULL), 0);
    ck_assert_int_eq(tu_lease_token(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lease_count(NULL), ZKL_EINVAL);
    ck_assert_ptr_null(zkl_lease_node(NULL));
    ck_assert_int_eq(zkl_lease_guarded_set(NULL, zoo_op_path, "", 0), ZKL_EINVAL);
    zoo_op_t op;
    zoo_set_op_init(&op, zoo_op_path, "", 0, -1, NULL);
    ck_assert_int_eq(zkl_lease_guarded_multi(NULL, 1, &op, NULL), ZKL_EINVAL);
    zkl_semaphore_free(NULL);
}

static void lease_bad_args(struct obj *o)
{
    struct lease_lock *ll = o->o;
    zkl_semaphore *other = NULL;
    ck_assert_int_eq(zkl_semaphore_new(o->c, o->path, 0, &other), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_new(o->c, o->path, -3, &other), ZKL_EINVAL);
    ck_assert_ptr_null(other);
    zkl_lease *l = NULL;
    ck_assert_int_eq(zkl_semaphore_acquire_many(ll->s, LEASES + 1, 1000, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_acquire_many(ll->s, 0, 1000, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_acquire_many(ll->s, -1, 1000, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_acquire_many(ll->s, 1, 1000, NULL), ZKL_EINVAL);
    ck_assert_ptr_null(l);
    zkl_lease_info *info;
    int n;
    ck_assert_int_eq(zkl_semaphore_holders(ll->s, 1000, NULL, &n), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_holders(ll->s, 1000, &info, NULL), ZKL_EINVAL);
}

/* ---- read-write lock, either side ------------------------------------------ */

static void rwlock_open(struct obj *o)
{
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(o->c, o->path, &rw), 0);
    if (o->r == &recipes[R_WRITE])
        ck_assert_int_eq(zkl_rwlock_write_as_lock(rw, &o->lock), 0);
    else
        ck_assert_int_eq(zkl_rwlock_read_as_lock(rw, &o->lock), 0);
    o->o = rw;
}

static void rwlock_close(struct obj *o)
{
    zkl_rwlock_free(o->o);
}

static void on_rwlock_lost(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    lost_record(arg, rw, write, token);
}

static int rwlock_set_lost(struct obj *o, struct lost_log *l)
{
    return zkl_rwlock_set_lost_fn(o->o, l ? on_rwlock_lost : NULL, l);
}

static int64_t read_token(struct obj *o)
{
    return tu_rwlock_read_token(o->o);
}

static int64_t write_token(struct obj *o)
{
    return tu_rwlock_write_token(o->o);
}

static int write_guarded(struct obj *o, const char *path, const void *data, int len)
{
    return zkl_rwlock_write_guarded_set(o->o, path, data, len);
}

static const char *read_node(struct obj *o)
{
    return zkl_rwlock_read_node(o->o);
}

static const char *write_node(struct obj *o)
{
    return zkl_rwlock_write_node(o->o);
}

static int rwlock_try_new(zkl_client *c, const char *path, bool null_out)
{
    zkl_rwlock *rw = NULL;
    int rc = zkl_rwlock_new(c, path, null_out ? NULL : &rw);
    if (rc != 0)
        ck_assert_ptr_null(rw);
    zkl_rwlock_free(rw);
    return rc;
}

static void read_null_calls(void)
{
    zkl_lock *l = NULL;
    ck_assert_int_eq(zkl_rwlock_read_as_lock(NULL, &l), ZKL_EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(zkl_rwlock_read_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_is_held(NULL), 0);
    ck_assert_int_eq(tu_rwlock_read_token(NULL), ZKL_EINVAL);
    ck_assert_ptr_null(zkl_rwlock_read_node(NULL));
    ck_assert_int_eq(zkl_rwlock_set_lost_fn(NULL, on_rwlock_lost, NULL), ZKL_EINVAL);
    zkl_rwlock_free(NULL);
}

static void write_null_calls(void)
{
    zkl_lock *l = NULL;
    ck_assert_int_eq(zkl_rwlock_write_as_lock(NULL, &l), ZKL_EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(zkl_rwlock_write_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_is_held(NULL), 0);
    ck_assert_int_eq(tu_rwlock_write_token(NULL), ZKL_EINVAL);
    ck_assert_ptr_null(zkl_rwlock_write_node(NULL));
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(NULL, zoo_op_path, "", 0), ZKL_EINVAL);
    zoo_op_t op;
    zoo_set_op_init(&op, zoo_op_path, "", 0, -1, NULL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(NULL, 1, &op, NULL), ZKL_EINVAL);
    zkl_rwlock_free(NULL);
}

static void write_bad_args(struct obj *o)
{
    /* Refused while nothing is held, before the hold is even looked at. */
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(o->o, "bad", "", 0), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(o->o, zoo_op_path, "", -1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(o->o, zoo_op_path, NULL, 1), ZKL_EINVAL);
}

/* ---- multi-lock of two mutexes, below the lock path ------------------------- */

static void multi_open(struct obj *o)
{
    size_t len = strlen(o->path) + 3;
    for (int i = 0; i < 2; i++) {
        o->sub[i] = malloc(len);
        ck_assert_ptr_nonnull(o->sub[i]);
        snprintf(o->sub[i], len, "%s/%c", o->path, 'a' + i);
    }
    const char *paths[] = {o->sub[0], o->sub[1]};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new(o->c, paths, 2, &ml), 0);
    ck_assert_int_eq(zkl_multilock_as_lock(ml, &o->lock), 0);
    o->o = ml;
}

static void multi_close(struct obj *o)
{
    zkl_multilock_free(o->o);
}

static int multi_try_new(zkl_client *c, const char *path, bool null_out)
{
    /* A good member beside the one tried. */
    const char *paths[] = {"/zkl-test/common-member", path};
    zkl_multilock *ml = NULL;
    int rc = zkl_multilock_new(c, paths, 2, null_out ? NULL : &ml);
    if (rc != 0)
        ck_assert_ptr_null(ml);
    zkl_multilock_free(ml);
    return rc;
}

static void multi_null_calls(void)
{
    zkl_lock *l = NULL;
    ck_assert_int_eq(zkl_multilock_as_lock(NULL, &l), ZKL_EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(zkl_multilock_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_is_held(NULL), 0);
    zkl_multilock_free(NULL);
}

static void no_bad_args(struct obj *o)
{
    (void)o;
}

/* ---- the table ------------------------------------------------------------ */

const struct recipe recipes[R_COUNT] = {
    [R_MUTEX] = {"mutex", R_MUTEX, 1, true, true, true, true, -1, mutex_open, mutex_close,
                 mutex_set_lost, mutex_token, mutex_guarded, mutex_node, mutex_try_new, mutex_null_calls,
                 mutex_bad_args},
    [R_PREFETCH] = {"mutex-prefetch", R_PREFETCH, 1, true, true, true, true, -1, mutex_open,
                    mutex_close, mutex_set_lost, mutex_token, mutex_guarded, mutex_node, prefetch_try_new,
                    mutex_null_calls, mutex_bad_args},
    [R_SEMMUTEX] = {"semmutex", R_SEMMUTEX, 1, false, false, true, true, -1, semmutex_open,
                    semmutex_close, semmutex_set_lost, semmutex_token, semmutex_guarded,
                    NULL, semmutex_try_new, semmutex_null_calls, semmutex_bad_args},
    [R_LEASE] = {"semaphore-lease", R_LEASE, 1, false, false, false, false, -1, lease_open,
                 lease_close, lease_set_lost, lease_token, lease_guarded, lease_node, lease_try_new,
                 lease_null_calls, lease_bad_args},
    /* A reader waits for a writer; its guarded writes are the write side's. */
    [R_READ] = {"rwlock-read", R_WRITE, 1, true, true, true, true, 0, rwlock_open, rwlock_close,
                rwlock_set_lost, read_token, NULL, read_node, rwlock_try_new, read_null_calls,
                no_bad_args},
    [R_WRITE] = {"rwlock-write", R_WRITE, 1, true, true, true, true, 1, rwlock_open,
                 rwlock_close, rwlock_set_lost, write_token, write_guarded, write_node, rwlock_try_new,
                 write_null_calls, write_bad_args},
    /* A multi-lock's release on a lost member is counted like any other:
     * only the last count touches the members, so it is not `reentrant`
     * in the table's sense. */
    [R_MULTI] = {"multilock", R_MULTI, 2, true, false, true, true, -1, multi_open, multi_close,
                 NULL, NULL, NULL, NULL, multi_try_new, multi_null_calls, no_bad_args},
};
