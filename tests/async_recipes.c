/* The rows of check_async, and the callback recorder of the asynchronous
 * suites. */
#include "async_recipes.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a request's outcome -------------------------------------------------- */

void res_init(struct res *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
}

void on_done(zkl_request *r, int result, void *arg)
{
    struct res *s = arg;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    s->result = result;
    s->thread = pthread_self();
    s->r = r;
    bool fr = s->free_in_cb;
    pthread_mutex_unlock(&s->mu);
    if (fr)
        zkl_request_free(r); /* a held one is released */
}

int calls_of(struct res *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->calls;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static bool called(void *arg)
{
    return calls_of(arg) > 0;
}

int wait_result(struct res *s)
{
    ck_assert_msg(tu_wait_until(called, s, PROMPT_MS), "no callback");
    pthread_mutex_lock(&s->mu);
    int rc = s->result;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void never(zkl_request *r, int result, void *arg)
{
    (void)r, (void)result, (void)arg;
    ck_abort_msg("no callback for a refused request");
}

bool fd_readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, tu_ms(ms)) == 1;
}

void dispatch_until_called(zkl_client *c, int fd, struct res *s)
{
    int64_t end = tu_now_ms() + tu_ms(PROMPT_MS);
    while (calls_of(s) == 0 && tu_now_ms() < end)
        if (fd_readable(fd, 100))
            ck_assert_int_ge(zkl_client_dispatch(c), 0);
    ck_assert_int_eq(calls_of(s), 1);
}

bool request_not_held(void *r)
{
    return zkl_request_is_held(r) == 0;
}

/* ---- the rows ---------------------------------------------------------------- */

void aobj_open(struct aobj *o, int row, zkl_client *c, const char *path)
{
    memset(o, 0, sizeof *o);
    o->r = &arows[row];
    o->c = c;
    o->path = strdup(path);
    ck_assert_ptr_nonnull(o->path);
    o->counted[0] = o->node_path = o->path;
    o->r->open(o);
}

void aobj_close(struct aobj *o)
{
    zkl_lock_free(o->lock);
    o->r->close(o);
    for (int i = 0; i < 3; i++)
        free(o->sub[i]);
    free(o->path);
}

void aobj_acquire(struct aobj *o, long timeout_ms)
{
    ck_assert_int_eq(o->r->acquire_cancellable(o, timeout_ms, NULL), 0);
}

static int lock_release(struct aobj *o)
{
    return zkl_lock_release(o->lock);
}

/* mutex */

static void mutex_open(struct aobj *o)
{
    ck_assert_int_eq(zkl_mutex_new(o->c, o->path, (zkl_mutex **)&o->o), 0);
    ck_assert_int_eq(zkl_mutex_as_lock(o->o, &o->lock), 0);
}

static void mutex_close(struct aobj *o)
{
    zkl_mutex_free(o->o);
}

static int mutex_start(struct aobj *o, long ms, zkl_request_fn fn, void *arg, zkl_request **out)
{
    return zkl_mutex_acquire_async(o->o, ms, fn, arg, out);
}

static int mutex_cancellable(struct aobj *o, long ms, zkl_cancel *h)
{
    return zkl_mutex_acquire_cancellable(o->o, ms, h);
}

static void mutex_null_calls(void)
{
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(NULL, 0, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
}

/* semaphore-mutex */

static void semmutex_open(struct aobj *o)
{
    ck_assert_int_eq(zkl_semmutex_new(o->c, o->path, (zkl_semmutex **)&o->o), 0);
    ck_assert_int_eq(zkl_semmutex_as_lock(o->o, &o->lock), 0);
}

static void semmutex_close(struct aobj *o)
{
    zkl_semmutex_free(o->o);
}

static int semmutex_start(struct aobj *o, long ms, zkl_request_fn fn, void *arg,
                          zkl_request **out)
{
    return zkl_semmutex_acquire_async(o->o, ms, fn, arg, out);
}

static int semmutex_cancellable(struct aobj *o, long ms, zkl_cancel *h)
{
    return zkl_semmutex_acquire_cancellable(o->o, ms, h);
}

static void semmutex_null_calls(void)
{
    zkl_request *r;
    ck_assert_int_eq(zkl_semmutex_acquire_async(NULL, 0, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
}

/* either side of a read-write lock */

static void rwlock_open(struct aobj *o)
{
    ck_assert_int_eq(zkl_rwlock_new(o->c, o->path, (zkl_rwlock **)&o->o), 0);
    if (o->r == &arows[A_WRITE])
        ck_assert_int_eq(zkl_rwlock_write_as_lock(o->o, &o->lock), 0);
    else
        ck_assert_int_eq(zkl_rwlock_read_as_lock(o->o, &o->lock), 0);
}

static void rwlock_close(struct aobj *o)
{
    zkl_rwlock_free(o->o);
}

static int read_start(struct aobj *o, long ms, zkl_request_fn fn, void *arg, zkl_request **out)
{
    return zkl_rwlock_read_acquire_async(o->o, ms, fn, arg, out);
}

static int write_start(struct aobj *o, long ms, zkl_request_fn fn, void *arg, zkl_request **out)
{
    return zkl_rwlock_write_acquire_async(o->o, ms, fn, arg, out);
}

static int read_cancellable(struct aobj *o, long ms, zkl_cancel *h)
{
    return zkl_rwlock_read_acquire_cancellable(o->o, ms, h);
}

static int write_cancellable(struct aobj *o, long ms, zkl_cancel *h)
{
    return zkl_rwlock_write_acquire_cancellable(o->o, ms, h);
}

static void rwlock_null_calls(void)
{
    zkl_request *r;
    ck_assert_int_eq(zkl_rwlock_read_acquire_async(NULL, 0, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_acquire_async(NULL, 0, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
}

/* a lease of a counting semaphore of one */

static void lease_open(struct aobj *o)
{
    ck_assert_int_eq(zkl_semaphore_new(o->c, o->path, 1, (zkl_semaphore **)&o->o), 0);
}

static void lease_close(struct aobj *o)
{
    ck_assert_ptr_null(o->lease); /* every test gives its lease back */
    zkl_semaphore_free(o->o);
}

static int lease_start(struct aobj *o, long ms, zkl_request_fn fn, void *arg, zkl_request **out)
{
    return zkl_semaphore_acquire_async(o->o, ms, fn, arg, out);
}

static int lease_cancellable(struct aobj *o, long ms, zkl_cancel *h)
{
    ck_assert_ptr_null(o->lease);
    return zkl_semaphore_acquire_many_cancellable(o->o, 1, ms, h, &o->lease);
}

static int lease_release(struct aobj *o)
{
    int rc = zkl_lease_release(o->lease);
    o->lease = NULL;
    return rc;
}

static void lease_null_calls(void)
{
    zkl_request *r;
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_acquire_async(NULL, 0, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_acquire_many_async(NULL, 1, 0, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semaphore_acquire_many_cancellable(NULL, 1, 0, NULL, &l), ZKL_EINVAL);
}

/* a multi-lock of three mutexes, below the lock path */

static void multi_open(struct aobj *o)
{
    size_t len = strlen(o->path) + 3;
    for (int i = 0; i < 3; i++) {
        o->sub[i] = malloc(len);
        ck_assert_ptr_nonnull(o->sub[i]);
        snprintf(o->sub[i], len, "%s/%d", o->path, i);
        o->counted[i] = o->sub[i];
    }
    o->node_path = o->sub[2];
    const char *paths[3] = {o->sub[2], o->sub[0], o->sub[1]}; /* any order given */
    ck_assert_int_eq(zkl_multilock_new(o->c, paths, 3, (zkl_multilock **)&o->o), 0);
    ck_assert_int_eq(zkl_multilock_as_lock(o->o, &o->lock), 0);
}

static void multi_close(struct aobj *o)
{
    zkl_multilock_free(o->o);
}

static int multi_start(struct aobj *o, long ms, zkl_request_fn fn, void *arg, zkl_request **out)
{
    return zkl_multilock_acquire_async(o->o, ms, fn, arg, out);
}

static int multi_cancellable(struct aobj *o, long ms, zkl_cancel *h)
{
    return zkl_multilock_acquire_cancellable(o->o, ms, h);
}

static void multi_null_calls(void)
{
    zkl_request *r;
    ck_assert_int_eq(zkl_multilock_acquire_async(NULL, 0, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
}

/* ---- the table ------------------------------------------------------------ */

const struct arow arows[A_COUNT] = {
    [A_MUTEX] = {"mutex", A_MUTEX, NULL, false, mutex_open, mutex_close, mutex_start,
                 mutex_cancellable, lock_release, mutex_null_calls},
    [A_SEMMUTEX] = {"semmutex", A_SEMMUTEX, NULL, false, semmutex_open, semmutex_close,
                    semmutex_start, semmutex_cancellable, lock_release, semmutex_null_calls},
    /* A reader waits for a writer, a writer for a reader. */
    [A_READ] = {"rwlock-read", A_WRITE, NULL, false, rwlock_open, rwlock_close, read_start,
                read_cancellable, lock_release, rwlock_null_calls},
    [A_WRITE] = {"rwlock-write", A_READ, NULL, false, rwlock_open, rwlock_close, write_start,
                 write_cancellable, lock_release, rwlock_null_calls},
    [A_LEASE] = {"semaphore-lease", A_LEASE, NULL, true, lease_open, lease_close, lease_start,
                 lease_cancellable, lease_release, lease_null_calls},
    /* A mutex on the middle member: the first is taken, the second waits. */
    [A_MULTI] = {"multilock", A_MUTEX, "/1", false, multi_open, multi_close, multi_start,
                 multi_cancellable, lock_release, multi_null_calls},
};
