/* An allocation failure anywhere inside an acquire leaves no node behind
 * (zkl.h: on every failure the caller's node is removed). The library's
 * objects are linked into this program with malloc, calloc, realloc and
 * strdup wrapped by the linker (Makefile.am: --wrap), so its allocations,
 * and only its and this program's (not the ZooKeeper client's, a shared
 * library), can be made to fail: the first, then the second, and so on,
 * until an acquire runs through without reaching the failure. After each
 * run, whatever the acquire returned, the lock path holds no node of ours
 * once its requests are answered. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h" /* zkl__hold: the size of a thread's hold record */
#include "testutil.h"
#include "zkl.h"

/* ---- the wrappers ---------------------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);

static atomic_long countdown; /* > 0: the countdown-th allocation from now fails */
static atomic_bool failed;    /* ... and it did */
static atomic_bool one_thread; /* only `counted`'s allocations of `sized` bytes count */
static pthread_t counted;
static size_t sized;

static bool refuse(size_t n)
{
    if (atomic_load(&one_thread) && (n != sized || !pthread_equal(pthread_self(), counted)))
        return false;
    long c = atomic_load(&countdown);
    while (c > 0 && !atomic_compare_exchange_weak(&countdown, &c, c - 1))
        ;
    if (c == 1) {
        atomic_store(&failed, true);
        return true;
    }
    return false;
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
    return refuse(n) ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
    return refuse(n * size) ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    return refuse(n) ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
    return refuse(strlen(s) + 1) ? NULL : __real_strdup(s);
}

static void arm(long nth)
{
    atomic_store(&failed, false);
    atomic_store(&countdown, nth);
}

/* arm(), counting only the calling thread's allocations of `size` bytes:
 * the client's own threads, and other sizes, allocate as ever. */
static void arm_caller(long nth, size_t size)
{
    counted = pthread_self();
    sized = size;
    atomic_store(&one_thread, true);
    arm(nth);
}

/* Disarm; true if the failure was reached. */
static bool disarm(void)
{
    atomic_store(&countdown, 0);
    atomic_store(&one_thread, false);
    return atomic_load(&failed);
}

/* ---- the sweep --------------------------------------------------------------------- */

/* One run of a scenario with the nth allocation failing: returns whether
 * the failure was reached. `others` nodes on the path are not ours. */
typedef bool (*scenario_fn)(zkl_client *c, zkl_client *other, const char *path, long nth);

static struct children_at {
    const char *path;
    int want;
} wait_for;

static bool children_are(void *arg)
{
    struct children_at *w = arg;
    return tu_children(tu_fixture_zk, w->path) == w->want;
}

/* The lock path holds `want` nodes within a few seconds. */
static void settled(const char *path, int want, long nth, const char *what)
{
    wait_for = (struct children_at){path, want};
    ck_assert_msg(tu_wait_until(children_are, &wait_for, 10000),
                  "%s, allocation %ld failing: %d nodes left, %d expected", what, nth,
                  tu_children(tu_fixture_zk, path), want);
}

static void sweep(const char *name, scenario_fn run)
{
    char *p = tu_path(name);
    zkl_client *c = tu_client(10000), *other = tu_client(10000);
    long nth = 1;
    for (; nth < 2000; nth++) {
        if (!run(c, other, p, nth))
            break; /* it ran through: every allocation was tried */
    }
    ck_assert_msg(nth > 3, "%s: only %ld allocations", name, nth - 1);
    fprintf(stderr, "nomem: %s: each of %ld allocations failed in turn, no node left\n", name,
            nth - 1);
    zkl_client_close(other);
    zkl_client_close(c);
    free(p);
}

static bool mutex_alone(zkl_client *c, zkl_client *other, const char *path, long nth)
{
    (void)other;
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, path, &m), 0);
    arm(nth);
    int rc = zkl_mutex_acquire(m, 5000);
    if (rc == 0)
        rc = zkl_mutex_release(m);
    bool hit = disarm();
    (void)rc; /* anything but a node left behind */
    settled(path, 0, nth, "a mutex alone");
    zkl_mutex_free(m);
    return hit;
}

/* An asynchronous acquire. */
static bool mutex_async(zkl_client *c, zkl_client *other, const char *path, long nth)
{
    (void)other;
    struct tu_heard d = {.result = 1};
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, path, &m), 0);
    zkl_request *r = NULL;
    arm(nth); /* no assertion while armed: the test framework allocates for each */
    int rc = zkl_mutex_acquire_async(m, 5000, tu_heard_fn, &d, &r);
    bool told = rc != 0 || tu_wait_until(tu_heard_once, &d, 10000);
    if (rc == 0 && told && tu_heard_result(&d) == 0)
        zkl_request_release(r);
    bool hit = disarm();
    ck_assert_msg(told, "allocation %ld failing: no callback", nth);
    zkl_request_free(r);
    settled(path, 0, nth, "an asynchronous acquire");
    zkl_mutex_free(m);
    return hit;
}

struct waiter {
    zkl_mutex *m;
    int rc;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->rc = zkl_mutex_acquire(w->m, 5000);
    if (w->rc == 0)
        zkl_mutex_release(w->m);
    return NULL;
}

static bool waiting(void *arg)
{
    struct children_at *w = arg;
    return tu_children(tu_fixture_zk, w->path) >= w->want;
}

/* A waiter behind another client's holder, handed the lock. */
static bool mutex_handoff(zkl_client *c, zkl_client *other, const char *path, long nth)
{
    zkl_mutex *h, *m;
    ck_assert_int_eq(zkl_mutex_new(other, path, &h), 0);
    ck_assert_int_eq(zkl_mutex_new(c, path, &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(h, 5000), 0);
    struct waiter w = {m, 0};
    pthread_t t;
    /* No assertion while armed: the test framework allocates for each. */
    arm(nth);
    int started = pthread_create(&t, NULL, waiter_main, &w);
    struct children_at two = {path, 2};
    if (started == 0)
        (void)tu_wait_until(waiting, &two, 2000); /* queued, or failed before */
    int released = zkl_mutex_release(h);
    if (started == 0)
        pthread_join(t, NULL);
    bool hit = disarm();
    ck_assert_int_eq(started, 0);
    ck_assert_int_eq(released, 0);
    settled(path, 0, nth, "a mutex handed off");
    zkl_mutex_free(m);
    zkl_mutex_free(h);
    return hit;
}

/* The write lock, then a downgrade to the read lock. */
static bool rwlock_downgrade(zkl_client *c, zkl_client *other, const char *path, long nth)
{
    (void)other;
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, path, &rw), 0);
    arm(nth);
    if (zkl_rwlock_write_acquire(rw, 5000) == 0) {
        if (zkl_rwlock_read_acquire(rw, 5000) == 0)
            zkl_rwlock_read_release(rw);
        zkl_rwlock_write_release(rw);
    }
    bool hit = disarm();
    settled(path, 0, nth, "a read-write lock's downgrade");
    zkl_rwlock_free(rw);
    return hit;
}

/* A counting semaphore's gate, then its lease. */
static bool semaphore_lease(zkl_client *c, zkl_client *other, const char *path, long nth)
{
    (void)other;
    zkl_semaphore *s;
    ck_assert_int_eq(zkl_semaphore_new(c, path, 2, &s), 0);
    zkl_lease *l = NULL;
    arm(nth);
    if (zkl_semaphore_acquire(s, 5000, &l) == 0)
        zkl_lease_release(l);
    bool hit = disarm();
    settled(path, 0, nth, "a semaphore's lease");
    zkl_semaphore_free(s);
    return hit;
}

/* The locks that keep a record per holding thread: a mutex, a read-write
 * lock's write side, its read side. */
enum kind { MUTEX, WRITE, READ };

/* A handle of a lock of `kind` on `path`; its object in *obj. */
static zkl_lock *lock_of(zkl_client *c, const char *path, enum kind kind, void **obj)
{
    zkl_lock *l = NULL;
    if (kind == MUTEX) {
        zkl_mutex *m;
        ck_assert_int_eq(zkl_mutex_new(c, path, &m), 0);
        ck_assert_int_eq(zkl_mutex_as_lock(m, &l), 0);
        *obj = m;
    } else {
        zkl_rwlock *rw;
        ck_assert_int_eq(zkl_rwlock_new(c, path, &rw), 0);
        ck_assert_int_eq(kind == WRITE ? zkl_rwlock_write_as_lock(rw, &l)
                                       : zkl_rwlock_read_as_lock(rw, &l),
                         0);
        *obj = rw;
    }
    return l;
}

static void lock_drop(zkl_lock *l, enum kind kind, void *obj)
{
    zkl_lock_free(l);
    if (kind == MUTEX)
        zkl_mutex_free(obj);
    else
        zkl_rwlock_free(obj);
}

/* A lock of `kind` on a path whose ACL refuses DELETE, the caller's nth
 * allocation of a thread's hold record's size failing: whatever node the
 * acquire took either holds for the caller or was given up, its delete
 * retried by the client; never held for nobody. Once the ACL allows the
 * delete, another client gets the lock (the write side: readers would
 * share it) without this one doing anything more. Returns whether the
 * failure was reached. */
static bool hold_refused(zkl_client *c, zkl_client *other, const char *path, enum kind kind,
                         long nth)
{
    void *mine, *theirs;
    zkl_lock *l = lock_of(c, path, kind, &mine);
    zkl_lock *o = lock_of(other, path, kind == MUTEX ? MUTEX : WRITE, &theirs);
    tu_guard_path(path, ZOO_PERM_CREATE | ZOO_PERM_READ);
    arm_caller(nth, sizeof(zkl__hold));
    int rc = zkl_lock_acquire(l, 5000);
    bool hit = disarm();
    if (rc == 0) {
        /* It ran through: held, and its release refused until allowed. */
        ck_assert_int_eq(zkl_lock_release(l), ZKL_ENOAUTH);
        tu_guard_path(path, ZOO_PERM_ALL);
        ck_assert_int_eq(zkl_lock_release(l), 0);
    } else {
        ck_assert_msg(hit && rc == ZKL_ENOMEM, "kind %d, allocation %ld failing: %s", kind, nth,
                      zkl_err_name(rc));
        ck_assert_int_eq(zkl_lock_is_held(l), 0);
        ck_assert_int_eq(zkl_lock_release(l), ZKL_ENOTHELD);
        tu_guard_path(path, ZOO_PERM_ALL);
    }
    rc = zkl_lock_acquire(o, tu_ms(10000));
    ck_assert_msg(rc == 0, "kind %d, allocation %ld failing: another client's acquire: %s", kind,
                  nth, zkl_err_name(rc));
    ck_assert_int_eq(zkl_lock_release(o), 0);
    settled(path, 0, nth, "a lock whose delete is refused");
    lock_drop(o, kind == MUTEX ? MUTEX : WRITE, theirs);
    lock_drop(l, kind, mine);
    return hit;
}

/* A multi-lock of one mutex on a path whose ACL refuses DELETE, the
 * caller's nth allocation of a hold record's size failing (the member's,
 * the multi-lock's own): a failing acquire returns ZKL_ENOMEM and leaves
 * nothing held, neither the multi-lock nor its member. Returns whether
 * the failure was reached. */
static bool multilock_refused(zkl_client *c, zkl_client *other, const char *path, long nth)
{
    void *mine, *theirs;
    zkl_lock *member = lock_of(c, path, MUTEX, &mine);
    zkl_lock *o = lock_of(other, path, MUTEX, &theirs);
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(&member, 1, &ml), 0);
    tu_guard_path(path, ZOO_PERM_CREATE | ZOO_PERM_READ);
    arm_caller(nth, sizeof(zkl__hold));
    int rc = zkl_multilock_acquire(ml, 5000);
    bool hit = disarm();
    if (rc != 0) {
        ck_assert_msg(hit && rc == ZKL_ENOMEM, "allocation %ld failing: %s", nth,
                      zkl_err_name(rc));
        ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
        ck_assert_int_eq(zkl_lock_is_held(member), 0);
    }
    tu_guard_path(path, ZOO_PERM_ALL);
    if (rc == 0)
        ck_assert_int_eq(zkl_multilock_release(ml), 0);
    rc = zkl_lock_acquire(o, tu_ms(10000));
    ck_assert_msg(rc == 0, "allocation %ld failing: another client's acquire: %s", nth,
                  zkl_err_name(rc));
    ck_assert_int_eq(zkl_lock_release(o), 0);
    settled(path, 0, nth, "a multi-lock whose delete is refused");
    zkl_multilock_free(ml);
    lock_drop(o, MUTEX, theirs);
    lock_drop(member, MUTEX, mine);
    return hit;
}

START_TEST(test_no_memory_in_a_mutex_acquire_alone_leaves_no_node)
{
    sweep("alone", mutex_alone);
}
END_TEST

START_TEST(test_no_memory_in_a_handoff_leaves_no_node)
{
    sweep("handoff", mutex_handoff);
}
END_TEST

START_TEST(test_no_memory_for_a_hold_with_the_delete_refused_leaves_no_node_held)
{
    /* The fixture's handle may set the ACL back (the auth entry). */
    ck_assert_int_eq(zoo_add_auth(tu_fixture_zk, "digest", "nomem:pw", 8, NULL, NULL), ZOK);
    char *p = tu_path("refused");
    tu_mkdirs(tu_fixture_zk, p);
    zkl_client *c = tu_client(10000), *other = tu_client(10000);
    for (enum kind kind = MUTEX; kind <= READ; kind++) {
        long nth = 1;
        while (nth < 100 && hold_refused(c, other, p, kind, nth))
            nth++;
        ck_assert_msg(nth > 1, "kind %d: no allocation of a hold record's size", kind);
    }
    long nth = 1;
    while (nth < 100 && multilock_refused(c, other, p, nth))
        nth++;
    ck_assert_msg(nth > 2, "a multi-lock: %ld allocations of a hold record's size", nth - 1);
    zkl_client_close(other);
    zkl_client_close(c);
    free(p);
}
END_TEST

START_TEST(test_no_memory_in_a_read_write_downgrade_leaves_no_node)
{
    sweep("downgrade", rwlock_downgrade);
}
END_TEST

START_TEST(test_no_memory_in_a_semaphore_lease_leaves_no_node)
{
    sweep("lease", semaphore_lease);
}
END_TEST

START_TEST(test_no_memory_in_an_asynchronous_acquire_leaves_no_node)
{
    sweep("async", mutex_async);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_no_memory_in_a_mutex_acquire_alone_leaves_no_node,
        test_no_memory_in_a_handoff_leaves_no_node,
        test_no_memory_for_a_hold_with_the_delete_refused_leaves_no_node_held,
        test_no_memory_in_a_read_write_downgrade_leaves_no_node,
        test_no_memory_in_a_semaphore_lease_leaves_no_node,
        test_no_memory_in_an_asynchronous_acquire_leaves_no_node,
        NULL,
    };
    return tu_run_zk_case("nomem", 600, tests);
}
