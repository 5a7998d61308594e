/* The semaphore-mutex against a real ZooKeeper. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

static zhandle_t *zk;
static char *root;

static void setup(void)
{
    zk = tu_zk();
    root = tu_root("semmutex");
}

static void teardown(void)
{
    tu_rmr(zk, root);
    zookeeper_close(zk);
    free(root);
}

static char *lockpath(const char *leaf)
{
    char *p = malloc(strlen(root) + strlen(leaf) + 2);
    sprintf(p, "%s/%s", root, leaf);
    return p;
}

struct path_count {
    const char *path;
    int want;
};

static bool children_are(void *arg)
{
    struct path_count *pc = arg;
    return tu_children(zk, pc->path) == pc->want;
}

/* ---- threads: any may release, none may acquire twice ------------------- */

struct releaser {
    zkl_semmutex *s;
    int held, rc;
    int64_t token;
};

static void *releaser_main(void *arg)
{
    struct releaser *r = arg;
    r->held = zkl_semmutex_is_held(r->s);
    r->token = zkl_semmutex_token(r->s);
    r->rc = zkl_semmutex_release(r->s);
    return NULL;
}

START_TEST(test_semmutex_is_released_by_another_thread)
{
    zkl_client *c = tu_client(10000);
    char *p = lockpath("otherthread");
    zkl_semmutex *s;
    ck_assert_int_eq(zkl_semmutex_new(c, p, &s), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(s, 5000), 0);
    int64_t tok = zkl_semmutex_token(s);
    ck_assert_int_gt(tok, 0);
    struct releaser r = {.s = s};
    pthread_t t;
    pthread_create(&t, NULL, releaser_main, &r);
    pthread_join(t, NULL);
    ck_assert_int_eq(r.held, 1);     /* held by the object, whoever asks */
    ck_assert_int_eq(r.token, tok);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_int_eq(zkl_semmutex_is_held(s), 0);
    ck_assert_int_eq(zkl_semmutex_token(s), ZKL_ENOTHELD);
    ck_assert_int_eq(tu_children(zk, p), 0);
    ck_assert_int_eq(zkl_semmutex_release(s), ZKL_ENOTHELD);
    /* and it can be taken again */
    ck_assert_int_eq(zkl_semmutex_acquire(s, 5000), 0);
    ck_assert_int_gt(zkl_semmutex_token(s), tok);
    ck_assert_int_eq(zkl_semmutex_release(s), 0);
    zkl_semmutex_free(s);
    zkl_client_close(c);
    free(p);
}
END_TEST

struct acquirer {
    zkl_semmutex *s;
    long timeout;
    int rc;
    int64_t t_ms;
};

static void *acquirer_main(void *arg)
{
    struct acquirer *a = arg;
    int64_t t0 = tu_now_ms();
    a->rc = zkl_semmutex_acquire(a->s, a->timeout);
    a->t_ms = tu_now_ms() - t0;
    return NULL;
}

START_TEST(test_semmutex_second_acquire_is_edeadlk_at_once)
{
    zkl_client *a = tu_client(10000), *b = tu_client(10000);
    char *p = lockpath("deadlk");
    zkl_semmutex *sa, *sb;
    ck_assert_int_eq(zkl_semmutex_new(a, p, &sa), 0);
    ck_assert_int_eq(zkl_semmutex_new(b, p, &sb), 0);
    /* While the object holds: from the same thread and from another. */
    ck_assert_int_eq(zkl_semmutex_acquire(sa, 5000), 0);
    zkl_client_stats before, after;
    zkl_client_get_stats(a, &before);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_semmutex_acquire(sa, 5000), ZKL_EDEADLK);
    struct acquirer other = {.s = sa, .timeout = 5000};
    pthread_t t;
    pthread_create(&t, NULL, acquirer_main, &other);
    pthread_join(t, NULL);
    ck_assert_int_eq(other.rc, ZKL_EDEADLK);
    ck_assert_int_lt(tu_now_ms() - t0, 1000);
    zkl_client_get_stats(a, &after);
    ck_assert_int_eq(after.requests, before.requests); /* nothing sent */
    ck_assert_int_eq(tu_children(zk, p), 1);
    ck_assert_int_eq(zkl_semmutex_is_held(sa), 1);

    /* While another thread of the object is still waiting for it. */
    struct acquirer waiter = {.s = sb, .timeout = 30000};
    pthread_create(&t, NULL, acquirer_main, &waiter);
    struct path_count two = {p, 2};
    ck_assert(tu_wait_until(children_are, &two, 10000));
    ck_assert_int_eq(zkl_semmutex_acquire(sb, 5000), ZKL_EDEADLK);
    ck_assert_int_eq(zkl_semmutex_release(sb), ZKL_ENOTHELD); /* not held yet */
    ck_assert_int_eq(tu_children(zk, p), 2);
    ck_assert_int_eq(zkl_semmutex_release(sa), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(waiter.rc, 0);
    ck_assert_int_eq(zkl_semmutex_is_held(sb), 1);
    ck_assert_int_eq(zkl_semmutex_release(sb), 0);
    ck_assert_int_eq(tu_children(zk, p), 0);
    zkl_semmutex_free(sa);
    zkl_semmutex_free(sb);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

/* ---- exclusion ------------------------------------------------------------ */

struct excl {
    zkl_semmutex *s;
    zkl_mutex *m;
    int inside, violations, iters;
};

static void enter(struct excl *e)
{
    if (__atomic_add_fetch(&e->inside, 1, __ATOMIC_SEQ_CST) != 1)
        __atomic_add_fetch(&e->violations, 1, __ATOMIC_SEQ_CST);
    usleep(500);
    __atomic_sub_fetch(&e->inside, 1, __ATOMIC_SEQ_CST);
}

static void *semmutex_side(void *arg)
{
    struct excl *e = arg;
    for (int i = 0; i < e->iters; i++) {
        ck_assert_int_eq(zkl_semmutex_acquire(e->s, 30000), 0);
        enter(e);
        ck_assert_int_eq(zkl_semmutex_release(e->s), 0);
    }
    return NULL;
}

static void *mutex_side(void *arg)
{
    struct excl *e = arg;
    for (int i = 0; i < e->iters; i++) {
        ck_assert_int_eq(zkl_mutex_acquire(e->m, 30000), 0);
        enter(e);
        ck_assert_int_eq(zkl_mutex_release(e->m), 0);
    }
    return NULL;
}

START_TEST(test_semmutex_and_mutex_on_one_path_exclude_each_other)
{
    zkl_client *a = tu_client(10000), *b = tu_client(10000);
    char *p = lockpath("mixed");
    struct excl e = {.iters = 25};
    ck_assert_int_eq(zkl_semmutex_new(a, p, &e.s), 0);
    ck_assert_int_eq(zkl_mutex_new(b, p, &e.m), 0);
    /* Plainly: one holds, the other times out. */
    ck_assert_int_eq(zkl_semmutex_acquire(e.s, 5000), 0);
    ck_assert_int_eq(zkl_mutex_acquire(e.m, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_semmutex_release(e.s), 0);
    ck_assert_int_eq(zkl_mutex_acquire(e.m, 5000), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(e.s, 300), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_release(e.m), 0);
    /* And under contention. */
    pthread_t t1, t2;
    pthread_create(&t1, NULL, semmutex_side, &e);
    pthread_create(&t2, NULL, mutex_side, &e);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    ck_assert_int_eq(e.violations, 0);
    ck_assert_int_eq(tu_children(zk, p), 0);
    zkl_semmutex_free(e.s);
    zkl_mutex_free(e.m);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

START_TEST(test_semmutex_node_is_a_lock_node)
{
    zkl_client *c = tu_client(10000);
    char *p = lockpath("protocol");
    zkl_semmutex *s;
    ck_assert_int_eq(zkl_semmutex_new(c, p, &s), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(s, 5000), 0);
    struct String_vector kids = {0};
    ck_assert_int_eq(zoo_get_children(zk, p, 0, &kids), ZOK);
    ck_assert_int_eq(kids.count, 1);
    ck_assert(strncmp(kids.data[0], "_c_", 3) == 0);
    ck_assert(strstr(kids.data[0], "-lock-") != NULL);
    char full[1200];
    snprintf(full, sizeof full, "%s/%s", p, kids.data[0]);
    struct Stat st;
    ck_assert_int_eq(zoo_exists(zk, full, 0, &st), ZOK);
    ck_assert_int_eq(st.czxid, zkl_semmutex_token(s));
    deallocate_String_vector(&kids);
    ck_assert_int_eq(zkl_semmutex_release(s), 0);
    zkl_semmutex_free(s);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* ---- timeouts ------------------------------------------------------------- */

START_TEST(test_semmutex_try_and_timeout_leave_no_node)
{
    zkl_client *a = tu_client(10000), *b = tu_client(10000);
    char *p = lockpath("timeout");
    zkl_semmutex *sa, *sb;
    ck_assert_int_eq(zkl_semmutex_new(a, p, &sa), 0);
    ck_assert_int_eq(zkl_semmutex_new(b, p, &sb), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(sa, 5000), 0);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_semmutex_acquire(sb, 0), ZKL_ETIMEDOUT);
    ck_assert_int_lt(tu_now_ms() - t0, 2000);
    ck_assert_int_eq(tu_children(zk, p), 1);
    t0 = tu_now_ms();
    ck_assert_int_eq(zkl_semmutex_acquire(sb, 300), ZKL_ETIMEDOUT);
    int64_t took = tu_now_ms() - t0;
    ck_assert_int_ge(took, 290);
    ck_assert_int_lt(took, 3000);
    ck_assert_int_eq(tu_children(zk, p), 1);
    ck_assert_int_eq(zkl_semmutex_is_held(sb), 0);
    ck_assert_int_eq(zkl_semmutex_release(sb), ZKL_ENOTHELD);
    /* a failed acquire leaves the object free to try again */
    ck_assert_int_eq(zkl_semmutex_release(sa), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(sb, 0), 0);
    ck_assert_int_eq(zkl_semmutex_release(sb), 0);
    ck_assert_int_eq(tu_children(zk, p), 0);
    zkl_semmutex_free(sa);
    zkl_semmutex_free(sb);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

/* ---- loss ------------------------------------------------------------------ */

static bool not_held(void *arg)
{
    return zkl_semmutex_is_held(arg) == 0;
}

static bool client_connected(void *arg)
{
    int st = zkl_client_state(arg);
    return st == ZKL_STATE_CONNECTED || st == ZKL_STATE_RECONNECTED;
}

START_TEST(test_semmutex_session_expiry_is_reported_as_lost)
{
    char *p = lockpath("expired");
    char *data = lockpath("data");
    ck_assert(zoo_create(zk, root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK ||
              tu_exists(zk, root));
    ck_assert_int_eq(zoo_create(zk, data, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkl_client *c = tu_client(4000);
    zkl_semmutex *s;
    ck_assert_int_eq(zkl_semmutex_new(c, p, &s), 0);
    ck_assert_int_eq(zkl_semmutex_guarded_set(s, data, "x", 1), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_semmutex_acquire(s, 5000), 0);
    ck_assert_int_eq(zkl_semmutex_guarded_set(s, data, "1", 1), 0);
    int64_t old_sid = zkl_client_session_id(c);
    tu_expire_session(c);
    ck_assert(tu_wait_until(not_held, s, 15000));
    ck_assert_int_eq(zkl_semmutex_token(s), ZKL_ELOST);
    ck_assert_int_eq(zkl_semmutex_guarded_set(s, data, "2", 1), ZKL_ELOST);
    char buf[8];
    int len = sizeof buf;
    ck_assert_int_eq(zoo_get(zk, data, 0, buf, &len, NULL), ZOK);
    ck_assert_int_eq(buf[0], '1');
    ck_assert_int_eq(zkl_semmutex_acquire(s, 1000), ZKL_ELOST); /* release it first */
    ck_assert_int_eq(zkl_semmutex_release(s), ZKL_ELOST);
    ck_assert_int_eq(zkl_semmutex_release(s), ZKL_ENOTHELD);
    ck_assert(tu_wait_until(client_connected, c, 15000));
    ck_assert_int_ne(zkl_client_session_id(c), old_sid);
    ck_assert_int_eq(zkl_semmutex_acquire(s, 5000), 0);
    ck_assert_int_eq(zkl_semmutex_release(s), 0);
    ck_assert_int_eq(tu_children(zk, p), 0);
    zkl_semmutex_free(s);
    zkl_client_close(c);
    free(data);
    free(p);
}
END_TEST

START_TEST(test_semmutex_waiter_gets_elost_on_expiry_and_leaves_no_node)
{
    char *p = lockpath("waitexpire");
    zkl_client *a = tu_client(10000), *b = tu_client(4000);
    zkl_semmutex *sa, *sb;
    ck_assert_int_eq(zkl_semmutex_new(a, p, &sa), 0);
    ck_assert_int_eq(zkl_semmutex_new(b, p, &sb), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(sa, 5000), 0);
    struct acquirer w = {.s = sb, .timeout = 60000};
    pthread_t t;
    pthread_create(&t, NULL, acquirer_main, &w);
    struct path_count two = {p, 2};
    ck_assert(tu_wait_until(children_are, &two, 10000));
    tu_expire_session(b);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.rc, ZKL_ELOST);
    ck_assert_int_eq(tu_children(zk, p), 1);
    ck_assert_int_eq(zkl_semmutex_is_held(sb), 0);
    ck_assert_int_eq(zkl_semmutex_release(sa), 0);
    zkl_semmutex_free(sa);
    zkl_semmutex_free(sb);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

/* ---- generic lock interface ------------------------------------------------ */

START_TEST(test_semmutex_as_lock_joins_a_multilock)
{
    zkl_client *c = tu_client(10000), *o = tu_client(10000);
    char *p1 = lockpath("ml-a"), *p2 = lockpath("ml-b");
    zkl_semmutex *s, *other;
    zkl_mutex *m;
    ck_assert_int_eq(zkl_semmutex_new(c, p1, &s), 0);
    ck_assert_int_eq(zkl_semmutex_new(o, p1, &other), 0);
    ck_assert_int_eq(zkl_mutex_new(c, p2, &m), 0);
    zkl_lock *h[2];
    ck_assert_int_eq(zkl_semmutex_as_lock(s, &h[0]), 0);
    ck_assert_int_eq(zkl_mutex_as_lock(m, &h[1]), 0);
    ck_assert_str_eq(zkl_lock_path(h[0]), p1);
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(h, 2, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(s), 1);
    ck_assert_int_eq(zkl_lock_is_held(h[0]), 1);
    ck_assert_int_eq(zkl_semmutex_acquire(other, 200), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(s), 0);
    ck_assert_int_eq(tu_children(zk, p1), 0);
    ck_assert_int_eq(tu_children(zk, p2), 0);
    ck_assert_int_eq(zkl_semmutex_as_lock(NULL, &h[0]), ZKL_EINVAL);
    zkl_multilock_free(ml);
    zkl_lock_free(h[0]);
    zkl_lock_free(h[1]);
    zkl_mutex_free(m);
    zkl_semmutex_free(s);
    zkl_semmutex_free(other);
    zkl_client_close(c);
    zkl_client_close(o);
    free(p1);
    free(p2);
}
END_TEST

/* ---- bad input ---------------------------------------------------------------- */

START_TEST(test_semmutex_bad_input_is_einval_and_creates_nothing)
{
    zkl_client *c = tu_client(10000);
    zkl_semmutex *s = NULL;
    const char *bad[] = {NULL, "", "relative", "/ends/", "/a//b", "/a/./b", "/a/../b", "/zookeeper/x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(zkl_semmutex_new(c, bad[i], &s), ZKL_EINVAL);
        ck_assert_ptr_null(s);
    }
    ck_assert_int_eq(zkl_semmutex_new(NULL, "/x", &s), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_new(c, "/x", NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_acquire(NULL, 10), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_is_held(NULL), 0);
    ck_assert_int_eq(zkl_semmutex_token(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_guarded_set(NULL, "/x", "", 0), ZKL_EINVAL);
    zoo_op_t op;
    zoo_set_op_init(&op, "/x", "", 0, -1, NULL);
    ck_assert_int_eq(zkl_semmutex_guarded_multi(NULL, 1, &op, NULL), ZKL_EINVAL);
    zkl_semmutex_free(NULL);
    char *p = lockpath("bad");
    ck_assert_int_eq(zkl_semmutex_new(c, p, &s), 0);
    ck_assert_int_eq(zkl_semmutex_guarded_set(s, "relative", "", 0), ZKL_EINVAL);
    ck_assert_int_eq(zkl_semmutex_guarded_multi(s, 0, &op, NULL), ZKL_EINVAL);
    zkl_semmutex_free(s);
    ck_assert(!tu_exists(zk, "/ends"));
    ck_assert(!tu_exists(zk, "/a"));
    ck_assert(!tu_exists(zk, "/x"));
    ck_assert(!tu_exists(zk, p));
    zkl_client_close(c);
    free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("semmutex");
    TCase *tc = tu_tcase("semmutex", 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_semmutex_is_released_by_another_thread);
    tcase_add_test(tc, test_semmutex_second_acquire_is_edeadlk_at_once);
    tcase_add_test(tc, test_semmutex_and_mutex_on_one_path_exclude_each_other);
    tcase_add_test(tc, test_semmutex_node_is_a_lock_node);
    tcase_add_test(tc, test_semmutex_try_and_timeout_leave_no_node);
    tcase_add_test(tc, test_semmutex_session_expiry_is_reported_as_lost);
    tcase_add_test(tc, test_semmutex_waiter_gets_elost_on_expiry_and_leaves_no_node);
    tcase_add_test(tc, test_semmutex_as_lock_joins_a_multilock);
    tcase_add_test(tc, test_semmutex_bad_input_is_einval_and_creates_nothing);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
