/* zkl_participants_list against a real ZooKeeper, for every recipe: who
 * holds and who waits, by node kind, with the owner's identity; and
 * zkl_participants_limit, zkl_revoke. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* A waiter on a thread of its own: acquire (waiting), then release. */
enum wkind { W_MUTEX, W_READ, W_WRITE, W_SEM, W_SEMMUTEX };
struct waiter {
    enum wkind k;
    void *obj;
    int rc;
    pthread_t th;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    zkl_lease *l = NULL;
    switch (w->k) {
    case W_MUTEX:
        if ((w->rc = zkl_mutex_acquire(w->obj, 30000)) == 0)
            w->rc = zkl_mutex_release(w->obj);
        break;
    case W_READ:
        if ((w->rc = zkl_rwlock_read_acquire(w->obj, 30000)) == 0)
            w->rc = zkl_rwlock_read_release(w->obj);
        break;
    case W_WRITE:
        if ((w->rc = zkl_rwlock_write_acquire(w->obj, 30000)) == 0)
            w->rc = zkl_rwlock_write_release(w->obj);
        break;
    case W_SEM:
        if ((w->rc = zkl_semaphore_acquire(w->obj, 30000, &l)) == 0)
            w->rc = zkl_lease_release(l);
        break;
    case W_SEMMUTEX:
        if ((w->rc = zkl_semmutex_acquire(w->obj, 30000)) == 0)
            w->rc = zkl_semmutex_release(w->obj);
        break;
    }
    return NULL;
}

static void start_waiter(struct waiter *w, enum wkind k, void *obj)
{
    w->k = k;
    w->obj = obj;
    w->rc = -100;
    ck_assert_int_eq(pthread_create(&w->th, NULL, waiter_main, w), 0);
}

/* A waiter that is known to wait: its node is there (`nodes` on `path`). */
static void start_waiting(struct waiter *w, enum wkind k, void *obj, const char *path, int nodes)
{
    start_waiter(w, k, obj);
    ck_assert(tu_wait_children(tu_fixture_zk, path, nodes, 10000));
}

static void join_waiter(struct waiter *w)
{
    pthread_join(w->th, NULL);
    ck_assert_int_eq(w->rc, 0);
}

/* The listing as "kind:holds" words, e.g. "lock-:1 lock-:0". */
static void summary(zkl_client *c, const char *path, char *out, size_t sz)
{
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(c, path, &ps, &n), 0);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(out);
        snprintf(out + k, sz - k, "%s%s:%d", i ? " " : "", ps[i].kind, ps[i].holds);
    }
    zkl_participants_free(ps, n);
}

/* The listing of `path` must read `want`. */
static void expect_summary(zkl_client *c, const char *path, const char *want)
{
    char s[512];
    summary(c, path, s, sizeof s);
    ck_assert_str_eq(s, want);
}

static char my_ident[128];

/* "host pid" of this process (Check runs each test in a child). */
static void setup_ident(void)
{
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    snprintf(my_ident, sizeof my_ident, "%s %ld", host, (long)getpid());
}

static void check_owners(zkl_client *c, const char *path, size_t want)
{
    zkl_participant *ps;
    size_t n;
    setup_ident();
    ck_assert_int_eq(zkl_participants_list(c, path, &ps, &n), 0);
    ck_assert_uint_eq(n, want);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(ps[i].readable, 1);
        ck_assert_str_eq(ps[i].owner, my_ident);
        ck_assert_uint_eq(ps[i].owner_len, strlen(my_ident));
        ck_assert_int_gt(ps[i].token, 0);
        ck_assert_int_ne(ps[i].session, 0);
        ck_assert_int_gt(ps[i].ctime_ms, 0);
        ck_assert_int_ge(ps[i].seq, 0);
        if (i > 0 && ps[i].holds == ps[i - 1].holds)
            ck_assert_int_gt(ps[i].seq, ps[i - 1].seq); /* queue order */
    }
    zkl_participants_free(ps, n);
}


START_TEST(test_mutex_holder_then_waiters)
{
    char *p = tu_test_path("mutex");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m = tu_test_mutex(c, p), *w1 = tu_test_mutex(c, p), *w2 = tu_test_mutex(c, p);
    expect_summary(c, p, ""); /* no node yet: nobody */
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    struct waiter a, b;
    start_waiting(&a, W_MUTEX, w1, p, 2);
    start_waiting(&b, W_MUTEX, w2, p, 3);
    expect_summary(c, p, "lock-:1 lock-:0 lock-:0");
    check_owners(c, p, 3);
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(c, p, &ps, &n), 0);
    ck_assert_int_eq(ps[0].token, tu_mutex_token(m));
    ck_assert_str_eq(zkl_mutex_node(m) + strlen(p) + 1, ps[0].node);
    zkl_participants_free(ps, n);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    join_waiter(&a);
    join_waiter(&b);
    expect_summary(c, p, "");
}
END_TEST

START_TEST(test_semmutex_holder_then_waiter)
{
    char *p = tu_test_path("semmutex");
    zkl_client *c = tu_test_client(10000);
    zkl_semmutex *m = tu_test_semmutex(c, p), *w1 = tu_test_semmutex(c, p);
    ck_assert_int_eq(zkl_semmutex_acquire(m, 5000), 0);
    struct waiter a;
    start_waiting(&a, W_SEMMUTEX, w1, p, 2);
    expect_summary(c, p, "lock-:1 lock-:0");
    check_owners(c, p, 2);
    ck_assert_int_eq(zkl_semmutex_release(m), 0);
    join_waiter(&a);
}
END_TEST

START_TEST(test_rwlock_readers_share_and_queue_behind_a_writer)
{
    char *p = tu_test_path("rwlock");
    zkl_client *c = tu_test_client(10000);
    zkl_rwlock *r1 = tu_test_rwlock(c, p);
    zkl_rwlock *r2 = tu_test_rwlock(c, p);
    zkl_rwlock *w = tu_test_rwlock(c, p);
    zkl_rwlock *r3 = tu_test_rwlock(c, p);
    ck_assert_int_eq(zkl_rwlock_read_acquire(r1, 5000), 0);
    struct waiter a, b, d;
    start_waiter(&a, W_READ, r2); /* holds at once, then releases */
    join_waiter(&a);
    /* Hold a second reader from another thread: a waiter that waits. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(w, 0), ZKL_ETIMEDOUT);
    start_waiting(&b, W_WRITE, w, p, 2);
    start_waiting(&d, W_READ, r3, p, 3);
    expect_summary(c, p, "__READ__:1 __WRIT__:0 __READ__:0");
    check_owners(c, p, 3);
    ck_assert_int_eq(zkl_rwlock_read_release(r1), 0);
    join_waiter(&b);
    join_waiter(&d);
}
END_TEST

START_TEST(test_rwlock_downgrade_holds_both)
{
    char *p = tu_test_path("downgrade");
    zkl_client *c = tu_test_client(10000);
    zkl_rwlock *rw = tu_test_rwlock(c, p), *other = tu_test_rwlock(c, p);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0); /* downgrade */
    struct waiter a;
    start_waiting(&a, W_READ, other, p, 3);
    expect_summary(c, p, "__WRIT__:1 __READ__:1 __READ__:0");
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    join_waiter(&a); /* the later reader gets in beside the downgrade */
    expect_summary(c, p, "__READ__:1");
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
}
END_TEST

START_TEST(test_mutex_and_reader_on_one_path)
{
    char *p = tu_test_path("mixed");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m;
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    struct waiter a;
    start_waiting(&a, W_READ, rw, p, 2);
    expect_summary(c, p, "lock-:1 __READ__:0");
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    join_waiter(&a);
    zkl_rwlock_free(rw);
    zkl_mutex_free(m);
}
END_TEST

START_TEST(test_semaphore_leases_hold_and_waiters_wait)
{
    char *p = tu_test_path("sem");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s1, *s2;
    ck_assert_int_eq(zkl_semaphore_new(c, p, 2, &s1), 0);
    ck_assert_int_eq(zkl_semaphore_new(c, p, 2, &s2), 0);
    int lim = -1;
    ck_assert_int_eq(zkl_participants_limit(c, p, &lim), 0);
    zkl_lease *a = NULL, *b = NULL;
    ck_assert_int_eq(zkl_semaphore_acquire(s1, 5000, &a), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(s1, 5000, &b), 0);
    ck_assert_int_eq(zkl_participants_limit(c, p, &lim), 0);
    ck_assert_int_eq(lim, 2);
    struct waiter w;
    start_waiting(&w, W_SEM, s2, p, 3);
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(c, p, &ps, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(ps[0].kind, "zkl-lease-");
    ck_assert_str_eq(ps[1].kind, "zkl-lease-");
    ck_assert_str_eq(ps[2].kind, "zkl-wait-");
    ck_assert_int_eq(ps[0].holds + ps[1].holds + ps[2].holds, 2);
    ck_assert_int_eq(ps[2].holds, 0);
    ck_assert_int_eq(ps[0].leases, 1);
    ck_assert_int_eq(ps[2].leases, 0);
    int64_t tokens[2] = {tu_lease_token(a), tu_lease_token(b)};
    ck_assert((ps[0].token == tokens[0] && ps[1].token == tokens[1]) ||
              (ps[0].token == tokens[1] && ps[1].token == tokens[0]));
    zkl_participants_free(ps, n);
    check_owners(c, p, 3);
    ck_assert_int_eq(zkl_lease_release(a), 0);
    join_waiter(&w);
    ck_assert_int_eq(zkl_lease_release(b), 0);
    zkl_semaphore_free(s2);
    zkl_semaphore_free(s1);
    /* Not a semaphore: no limit. */
    char *q = tu_test_path("nosem");
    ck_assert_int_eq(zkl_participants_limit(c, q, &lim), 0);
    ck_assert_int_eq(lim, 0);
}
END_TEST

/* A lease that the leases ahead of it leave no room for waits, as the
 * semaphore judges it: one made after someone else deleted a gate node
 * behind its holder's back, when the next gate holder counted without the
 * lease ahead. Planted here by hand: a lease of two behind a lease of one,
 * for a limit of two. */
START_TEST(test_semaphore_lease_without_room_is_listed_waiting)
{
    char *p = tu_test_path("semroom");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s;
    ck_assert_int_eq(zkl_semaphore_new(c, p, 2, &s), 0);
    zkl_lease *a = NULL;
    ck_assert_int_eq(zkl_semaphore_acquire(s, 5000, &a), 0);
    int lim = -1;
    ck_assert_int_eq(zkl_participants_limit(c, p, &lim), 0);
    ck_assert_int_eq(lim, 2);
    char planted[512], made[512];
    snprintf(planted, sizeof planted, "%s/_c_0dd0dd00-0000-4000-8000-000000000002-zkl-lease-x2-",
             p);
    ck_assert_int_eq(zoo_create(tu_fixture_zk, planted, "", 0, &ZOO_OPEN_ACL_UNSAFE,
                                ZOO_EPHEMERAL_SEQUENTIAL, made, sizeof made),
                     ZOK);
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(c, p, &ps, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ps[0].leases, 1);
    ck_assert_int_eq(ps[0].holds, 1);
    ck_assert_int_eq(ps[0].token, tu_lease_token(a));
    ck_assert_int_eq(ps[1].leases, 2);
    ck_assert_int_eq(ps[1].holds, 0); /* 1 + 2 leases of 2 */
    zkl_participants_free(ps, n);
    /* The lease ahead gone, the lease of two fits. */
    ck_assert_int_eq(zkl_lease_release(a), 0);
    ck_assert_int_eq(zkl_participants_list(c, p, &ps, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(ps[0].leases, 2);
    ck_assert_int_eq(ps[0].holds, 1);
    zkl_participants_free(ps, n);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, made, -1), ZOK);
    zkl_semaphore_free(s);
}
END_TEST

START_TEST(test_revoke_writes_into_the_holders_node_only)
{
    char *p = tu_test_path("revoke");
    zkl_client *c = tu_test_client(10000);
    ck_assert_int_eq(zkl_revoke(c, p, NULL), ZKL_ENOTHELD);
    zkl_mutex *m = tu_test_mutex(c, p), *w1 = tu_test_mutex(c, p);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    struct waiter a;
    start_waiting(&a, W_MUTEX, w1, p, 2);
    ck_assert_int_eq(zkl_revoke(c, p, NULL), 0);
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(c, p, &ps, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(ps[0].owner, "__REVOKE__");
    setup_ident();
    ck_assert_str_eq(ps[1].owner, my_ident);
    char node[1200];
    snprintf(node, sizeof node, "%s/%s", p, ps[1].node);
    zkl_participants_free(ps, n);
    ck_assert_int_eq(zkl_revoke(c, p, node), 0); /* a full path names one */
    ck_assert_int_eq(zkl_revoke(c, p, "no-such-0000000009"), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_revoke(c, p, "/elsewhere/x"), ZKL_EINVAL);
    ck_assert_int_eq(zkl_revoke(c, p, "a/b"), ZKL_EINVAL);
    ck_assert_int_eq(zkl_revoke(NULL, p, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_revoke(c, "relative", NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    join_waiter(&a);
}
END_TEST

/* ---- the holder's side of revocation ------------------------------------ */

struct revoked {
    pthread_mutex_t mu;
    int calls, write;
    int64_t token;
};

static void note_revoke(struct revoked *r, int write, int64_t token)
{
    pthread_mutex_lock(&r->mu);
    r->calls++;
    r->write = write;
    r->token = token;
    pthread_mutex_unlock(&r->mu);
}

static void on_mutex_revoke(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m;
    note_revoke(arg, -1, token);
}

static void on_semmutex_revoke(zkl_semmutex *s, int64_t token, void *arg)
{
    (void)s;
    note_revoke(arg, -1, token);
}

static void on_rw_revoke(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    (void)rw;
    note_revoke(arg, write, token);
}

static int revoke_calls(struct revoked *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->calls;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static bool revoked_once(void *arg)
{
    return revoke_calls(arg) >= 1;
}

/* Another client asks each kind of holder to let go: the holder's revoke
 * callback hears it once, with the hold's token, and the hold stays until
 * the holder releases (revocation is cooperative). A holder without a
 * callback is not disturbed. */
START_TEST(test_revoke_reaches_the_holders_callback)
{
    char *p = tu_test_path("revoked");
    zkl_client *c = tu_test_client(10000), *other = tu_test_client(10000);
    struct revoked r = {.mu = PTHREAD_MUTEX_INITIALIZER};

    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_set_revoke_fn(m, on_mutex_revoke, &r), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    int64_t tok;
    ck_assert_int_eq(zkl_revoke(other, p, NULL), 0);
    ck_assert(tu_wait_until(revoked_once, &r, 10000));
    tok = tu_mutex_token(m);
    ck_assert_int_eq(r.token, tok);
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(revoke_calls(&r), 1);

    /* no callback: the request changes nothing for the holder */
    ck_assert_int_eq(zkl_mutex_set_revoke_fn(m, NULL, NULL), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_revoke(other, p, NULL), 0);
    ck_assert_int_eq(zkl_mutex_guarded_set(m, p, "x", 1), 0); /* still held, for real */
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(revoke_calls(&r), 1);
    zkl_mutex_free(m);

    zkl_semmutex *sm;
    ck_assert_int_eq(zkl_semmutex_new(c, p, &sm), 0);
    ck_assert_int_eq(zkl_semmutex_set_revoke_fn(sm, on_semmutex_revoke, &r), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(sm, 5000), 0);
    r.calls = 0;
    ck_assert_int_eq(zkl_revoke(other, p, NULL), 0);
    ck_assert(tu_wait_until(revoked_once, &r, 10000));
    ck_assert_int_eq(r.token, tu_semmutex_token(sm));
    ck_assert_int_eq(zkl_semmutex_release(sm), 0);
    zkl_semmutex_free(sm);

    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_set_revoke_fn(rw, on_rw_revoke, &r), 0);
    for (int write = 0; write < 2; write++) {
        ck_assert_int_eq(write ? zkl_rwlock_write_acquire(rw, 5000)
                               : zkl_rwlock_read_acquire(rw, 5000), 0);
        pthread_mutex_lock(&r.mu);
        r.calls = 0;
        pthread_mutex_unlock(&r.mu);
        ck_assert_int_eq(zkl_revoke(other, p, NULL), 0);
        ck_assert(tu_wait_until(revoked_once, &r, 10000));
        ck_assert_int_eq(r.write, write);
        ck_assert_int_eq(write ? zkl_rwlock_write_is_held(rw) : zkl_rwlock_read_is_held(rw), 1);
        ck_assert_int_eq(write ? zkl_rwlock_write_release(rw) : zkl_rwlock_read_release(rw), 0);
    }
    ck_assert_int_eq(zkl_rwlock_set_revoke_fn(NULL, on_rw_revoke, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_set_revoke_fn(NULL, on_mutex_revoke, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_set_revoke_fn(NULL, on_semmutex_revoke, &r), ZKL_EINVAL);
    zkl_rwlock_free(rw);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

/* The one participant of `path` carries `want` (of `len` bytes) as its data. */
static void expect_owner(zkl_client *c, const char *path, const char *want, size_t len)
{
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(c, path, &ps, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(ps[0].owner_len, len);
    ck_assert_int_eq(memcmp(ps[0].owner, want, len), 0);
    zkl_participants_free(ps, n);
}

static int async_result = 1;
static void on_async(zkl_request *r, int result, void *arg)
{
    (void)r, (void)arg;
    __atomic_store_n(&async_result, result, __ATOMIC_SEQ_CST);
}
static bool async_told(void *arg)
{
    (void)arg;
    return __atomic_load_n(&async_result, __ATOMIC_SEQ_CST) != 1;
}

static zkl_lock_opts *opts_with_id(const char *id)
{
    zkl_lock_opts *o;
    ck_assert_int_eq(zkl_lock_opts_new(&o), 0);
    ck_assert_int_eq(zkl_lock_opts_set_id(o, id), 0);
    return o;
}

START_TEST(test_lock_ids_are_the_nodes_data)
{
    char *p = tu_test_path("ids"), *q = tu_test_path("ids2");
    zkl_client *c = tu_test_client(10000);
    zkl_lock_opts *o = opts_with_id("worker-7");
    zkl_mutex *m;
    zkl_semmutex *sm;
    ck_assert_int_eq(zkl_mutex_new_opts(c, p, o, &m), 0);
    ck_assert_int_eq(zkl_lock_opts_set_id(o, ""), 0); /* the copy stays the mutex's */
    ck_assert_int_eq(zkl_semmutex_new_opts(c, q, o, &sm), 0);
    zkl_lock_opts_free(o);

    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    expect_owner(c, p, "worker-7", 8);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 5000, on_async, NULL, &r), 0);
    ck_assert(tu_wait_until(async_told, NULL, 10000));
    ck_assert_int_eq(async_result, 0);
    expect_owner(c, p, "worker-7", 8);
    zkl_request_free(r);
    ck_assert_int_eq(zkl_semmutex_acquire(sm, 5000), 0);
    expect_owner(c, q, "", 0); /* the empty id writes no bytes */
    ck_assert_int_eq(zkl_semmutex_release(sm), 0);
    zkl_semmutex_free(sm);
    zkl_mutex_free(m);

    /* A multi-lock's mutexes, blocking and asynchronous. */
    o = opts_with_id("multi");
    const char *paths[] = {p, q};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_opts(c, paths, 2, o, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    expect_owner(c, p, "multi", 5);
    expect_owner(c, q, "multi", 5);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    async_result = 1;
    ck_assert_int_eq(zkl_multilock_acquire_async(ml, 5000, on_async, NULL, &r), 0);
    ck_assert(tu_wait_until(async_told, NULL, 10000));
    ck_assert_int_eq(async_result, 0);
    expect_owner(c, p, "multi", 5);
    expect_owner(c, q, "multi", 5);
    zkl_request_free(r);
    zkl_multilock_free(ml);

    /* NULL goes back to "host pid". */
    ck_assert_int_eq(zkl_lock_opts_set_id(o, NULL), 0);
    ck_assert_int_eq(zkl_mutex_new_opts(c, p, o, &m), 0);
    zkl_lock_opts_free(o);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    setup_ident();
    expect_owner(c, p, my_ident, strlen(my_ident));
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_mutex_free(m);
}
END_TEST

START_TEST(test_lock_id_bad_input_is_einval)
{
    zkl_lock_opts *o;
    ck_assert_int_eq(zkl_lock_opts_set_id(NULL, "x"), ZKL_EINVAL);
    ck_assert_int_eq(zkl_lock_opts_new(&o), 0);
    char *big = malloc(4098);
    memset(big, 'x', 4097);
    big[4097] = '\0';
    ck_assert_int_eq(zkl_lock_opts_set_id(o, big), ZKL_EINVAL);
    big[4096] = '\0';
    ck_assert_int_eq(zkl_lock_opts_set_id(o, big), 0);
    free(big);
    zkl_lock_opts_free(o);
}
END_TEST

START_TEST(test_bad_input_is_einval)
{
    zkl_client *c = tu_test_client(10000);
    zkl_participant *ps;
    size_t n;
    int lim;
    ck_assert_int_eq(zkl_participants_list(NULL, "/x", &ps, &n), ZKL_EINVAL);
    ck_assert_int_eq(zkl_participants_list(c, "x", &ps, &n), ZKL_EINVAL);
    ck_assert_int_eq(zkl_participants_list(c, "/x/", &ps, &n), ZKL_EINVAL);
    ck_assert_int_eq(zkl_participants_list(c, "/x", NULL, &n), ZKL_EINVAL);
    ck_assert_int_eq(zkl_participants_limit(c, "/x", NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_participants_limit(c, "//", &lim), ZKL_EINVAL);
    zkl_participants_free(NULL, 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_mutex_holder_then_waiters,
        test_semmutex_holder_then_waiter,
        test_rwlock_readers_share_and_queue_behind_a_writer,
        test_rwlock_downgrade_holds_both,
        test_mutex_and_reader_on_one_path,
        test_semaphore_leases_hold_and_waiters_wait,
        test_semaphore_lease_without_room_is_listed_waiting,
        test_revoke_writes_into_the_holders_node_only,
        test_revoke_reaches_the_holders_callback,
        test_lock_ids_are_the_nodes_data,
        test_lock_id_bad_input_is_einval,
        test_bad_input_is_einval,
        NULL,
    };
    return tu_run_zk_case("participants", 120, tests);
}
