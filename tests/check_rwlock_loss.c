/* The read-write lock's holds lost with their session, against a real
 * ZooKeeper: a thread that downgraded loses both sides, each told once,
 * and its lost write cannot be downgraded from; guarded writes, the multi
 * form included, only while the write lock is held. */
#include <pthread.h>
#include <stdlib.h>

#include "rwlock_util.h"
#include "zkl/zookeeper.h"

/* The sessions are expired by tu_expire_session, at once whatever their
 * timeout: a long one is not lost by itself while a sanitizer run stalls. */
#define EXPIRY_SESSION_MS 20000

/* ---- sessions ------------------------------------------------------------------ */

static bool neither_held(void *arg)
{
    return zkl_rwlock_read_is_held(arg) == 0 && zkl_rwlock_write_is_held(arg) == 0;
}

START_TEST(test_rwlock_session_expiry_is_reported_as_lost_on_both_sides)
{
    struct rwset t;
    rwset_open(&t, "expired", 1, EXPIRY_SESSION_MS);
    zkl_client *c = t.c[0];
    zkl_rwlock *rw = t.rw[0];
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0); /* read depth 2 */
    int64_t old_sid = tu_client_session_id(c);
    tu_expire_session(c);
    ck_assert(tu_wait_until(neither_held, rw, 15000));
    ck_assert_int_eq(tu_rwlock_read_token(rw), ZKL_ELOST);
    ck_assert_int_eq(tu_rwlock_write_token(rw), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 1000), ZKL_ELOST);  /* reentry on a lost hold */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 1000), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ELOST); /* cleared whatever the depth */
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ENOTHELD);
    /* Only the lost write remains: a downgrade from it is refused, since a
     * read node with its old sequence would jump the queue. */
    ck_assert(tu_wait_until(tu_client_connected, c, 15000));
    ck_assert_int_ne(tu_client_session_id(c), old_sid);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 1000), ZKL_ELOST);
    ck_assert_int_eq(tu_children(tu_fixture_zk, t.p), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ENOTHELD);
    /* New work goes on in the new session. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    rwset_close(&t);
}
END_TEST


struct lost_log {
    pthread_mutex_t mu;
    int calls, reads, writes;
    int64_t rtok, wtok;
    zkl_rwlock *rw;
    int wrong_lock;
};

static void on_lost(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    struct lost_log *l = arg;
    pthread_mutex_lock(&l->mu);
    l->calls++;
    if (rw != l->rw)
        l->wrong_lock++;
    if (write)
        l->writes++, l->wtok = token;
    else
        l->reads++, l->rtok = token;
    pthread_mutex_unlock(&l->mu);
}

static bool two_calls(void *arg)
{
    struct lost_log *l = arg;
    pthread_mutex_lock(&l->mu);
    int n = l->calls;
    pthread_mutex_unlock(&l->mu);
    return n >= 2;
}

START_TEST(test_rwlock_lost_fn_reports_each_lost_hold_once)
{
    struct rwset t;
    rwset_open(&t, "lostfn", 1, EXPIRY_SESSION_MS);
    zkl_client *c = t.c[0];
    zkl_rwlock *rw = t.rw[0];
    struct lost_log l = {.mu = PTHREAD_MUTEX_INITIALIZER, .rw = rw};
    ck_assert_int_eq(zkl_rwlock_set_lost_fn(NULL, on_lost, &l), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_set_lost_fn(rw, on_lost, &l), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    int64_t wtok = tu_rwlock_write_token(rw), rtok = tu_rwlock_read_token(rw);
    tu_expire_session(c);
    ck_assert(tu_wait_until(two_calls, &l, 15000));
    ck_assert(tu_wait_until(tu_client_connected, c, 15000));
    pthread_mutex_lock(&l.mu);
    ck_assert_int_eq(l.calls, 2);
    ck_assert_int_eq(l.writes, 1);
    ck_assert_int_eq(l.reads, 1);
    ck_assert_int_eq(l.wtok, wtok);
    ck_assert_int_eq(l.rtok, rtok);
    ck_assert_int_eq(l.wrong_lock, 0);
    pthread_mutex_unlock(&l.mu);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ELOST);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ELOST);
    /* A second expiry with nothing held tells nothing. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    tu_expire_session(c);
    ck_assert(tu_wait_until(tu_client_connected, c, 15000));
    /* Removed, the callback is not called any more. */
    ck_assert_int_eq(zkl_rwlock_set_lost_fn(rw, NULL, NULL), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    tu_expire_session(c);
    ck_assert(tu_wait_until(tu_client_connected, c, 15000));
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ELOST);
    pthread_mutex_lock(&l.mu);
    ck_assert_int_eq(l.calls, 2);
    pthread_mutex_unlock(&l.mu);
    rwset_close(&t);
}
END_TEST


/* ---- guarded writes ------------------------------------------------------------ */

START_TEST(test_rwlock_guarded_set_only_while_the_write_lock_is_held)
{
    char *p = tu_path("guarded");
    char *data = tu_path("data");
    ck_assert_int_eq(zoo_create(tu_fixture_zk, tu_fixture_root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0,
                                NULL, 0) == ZOK ||
                         tu_exists(tu_fixture_zk, tu_fixture_root),
                     1);
    ck_assert_int_eq(
        zoo_create(tu_fixture_zk, data, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, data, "x", 1), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, data, "x", 1), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_set(rw, data, "1", 1), 0);
    char buf[8];
    int len = sizeof buf;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, data, 0, buf, &len, NULL), ZOK);
    ck_assert_int_eq(len, 1);
    ck_assert_int_eq(buf[0], '1');
    /* The multi form: several ops, all or nothing. */
    char *extra = tu_path("extra");
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    zoo_set_op_init(&ops[0], data, "2", 1, -1, NULL);
    zoo_create_op_init(&ops[1], extra, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(rw, 2, ops, res), 0);
    ck_assert(tu_exists(tu_fixture_zk, extra));
    /* A failing op applies nothing. */
    zoo_set_op_init(&ops[0], data, "3", 1, -1, NULL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(rw, 2, ops, res), ZKL_EZK);
    len = sizeof buf;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, data, 0, buf, &len, NULL), ZOK);
    ck_assert_int_eq(buf[0], '2');
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(rw, 0, ops, res), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_guarded_multi(rw, 1, NULL, res), ZKL_EINVAL);
    /* Lost, nothing is written: check_common. */
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    free(extra);
    free(data);
    free(p);
}
END_TEST


int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    const TTest *tests[] = {
        test_rwlock_session_expiry_is_reported_as_lost_on_both_sides,
        test_rwlock_guarded_set_only_while_the_write_lock_is_held,
        test_rwlock_lost_fn_reports_each_lost_hold_once,
        NULL,
    };
    return tu_run_zk_case("rwlock_loss", 120, tests);
}
