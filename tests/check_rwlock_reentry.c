/* The read-write lock's reentrancy against a real ZooKeeper: each side
 * counts a thread's repeated acquires, a writer may downgrade to a read
 * with no writer getting in between, an upgrade is refused at once. */
#include <stdio.h>
#include <string.h>

#include "rwlock_util.h"
#include "zkl/zookeeper.h"

/* ---- downgrade and upgrade ------------------------------------------------- */

START_TEST(test_rwlock_downgrade_keeps_a_queued_writer_out)
{
    struct rwset t;
    rwset_open(&t, "downgrade", 2, 10000);
    const char *p = t.p;
    zkl_client *a = t.c[0], *b = t.c[1];
    zkl_rwlock *ra = t.rw[0], *rb = t.rw[1];
    ck_assert_int_eq(zkl_rwlock_write_acquire(ra, 5000), 0);
    char wnode[512];
    snprintf(wnode, sizeof wnode, "%s", zkl_rwlock_write_node(ra));

    /* Another client queues a writer: its create, listing, own-node watch
     * and watch on ours, all answered. Were the last still in flight, our
     * release could reach the server first: the watch's answer, not its
     * event, would tell the writer. */
    struct bg wb;
    bg_start(&wb, rb, 1, 60000);
    wait_children(p, 2);
    tu_wait_requests(b, 4);

    /* Downgrade: the read is granted at once, next to the writer. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(ra, 0), 0);
    const char *rnode = zkl_rwlock_read_node(ra);
    ck_assert_ptr_nonnull(rnode);
    ck_assert(strstr(rnode, "/_c_") != NULL && strstr(rnode, "-__READ__") != NULL);
    ck_assert_str_eq(seq_of(rnode), seq_of(wnode));
    struct Stat st;
    ck_assert_int_eq(zoo_exists(tu_fixture_zk, rnode, 0, &st), ZOK);
    ck_assert_int_eq(st.ephemeralOwner, tu_client_session_id(a));
    ck_assert_int_eq(tu_rwlock_read_token(ra), st.czxid);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 3);

    /* Release the write: the queued writer wakes, lists, and must go back
     * to waiting, now on the read node. */
    zkl_client_stats s0 = tu_stats(b);
    ck_assert_int_eq(zkl_rwlock_write_release(ra), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(ra), 0);
    tu_wait_requests(b, s0.requests + 2); /* a listing, then a new watch */
    ck_assert_int_eq(__atomic_load_n(&wb.got, __ATOMIC_SEQ_CST), 0);
    ck_assert_int_eq(tu_stats(b).watch_events, s0.watch_events + 1);
    expect_holds(ra, p, 1, 0, 2);

    /* Reading goes on; reentry still counts; then the writer gets in. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(ra, 0), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(ra), 0);
    ck_assert_int_eq(__atomic_load_n(&wb.got, __ATOMIC_SEQ_CST), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(ra), 0);
    ck_assert(tu_wait_until(bg_got, &wb, 30000));
    bg_finish(&wb);
    ck_assert_int_eq(wb.rc, 0);
    ck_assert_int_eq(wb.released_rc, 0);
    rwset_close(&t);
}
END_TEST

START_TEST(test_rwlock_downgrade_then_write_reentry_and_release_in_any_order)
{
    struct rwset t;
    rwset_open(&t, "downgrade2", 1, 10000);
    const char *p = t.p;
    zkl_rwlock *rw = t.rw[0];
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    /* Holding both, the write side is still reentrant. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 0), 0);
    expect_holds(rw, p, 1, 1, 2);
    /* Release the read first this time: the write stays. */
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    expect_holds(rw, p, 0, 1, 1);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    expect_holds(rw, p, 0, 0, 0);
    /* A downgraded read left alone is an ordinary read: upgrade refused. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), ZKL_EDEADLK);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    rwset_close(&t);
}
END_TEST

START_TEST(test_rwlock_upgrade_is_edeadlk_at_once_and_creates_nothing)
{
    struct rwset t;
    rwset_open(&t, "upgrade", 1, 10000);
    const char *p = t.p;
    zkl_client *c = t.c[0];
    zkl_rwlock *rw = t.rw[0];
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0); /* depth 2 */
    zkl_client_stats s0 = tu_stats(c);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, ZKL_WAIT_FOREVER), ZKL_EDEADLK);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 0), ZKL_EDEADLK);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(1000));
    ck_assert_int_eq(tu_stats(c).requests, s0.requests); /* nothing sent */
    expect_holds(rw, p, 1, 0, 1);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 0), ZKL_EDEADLK); /* still reading */
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    /* Read released: writing is allowed again. */
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    rwset_close(&t);
}
END_TEST


START_TEST(test_rwlock_each_side_is_reentrant_without_new_nodes)
{
    const struct side *sd = &sides[_i];
    struct rwset t;
    rwset_open(&t, sd->name, 1, 10000);
    const char *p = t.p;
    zkl_client *c = t.c[0];
    zkl_rwlock *rw = t.rw[0];
    ck_assert_int_eq(sd->is_held(rw), 0);
    ck_assert_int_eq(sd->token(rw), ZKL_ENOTHELD);
    ck_assert_ptr_null(sd->node(rw));
    ck_assert_int_eq(sd->acquire(rw, 5000), 0);
    int64_t tok = sd->token(rw);
    ck_assert_int_gt(tok, 0);
    const char *n = sd->node(rw);
    ck_assert_ptr_nonnull(n);
    ck_assert(strstr(n, sd->kind) != NULL);
    struct Stat st;
    ck_assert_int_eq(zoo_exists(tu_fixture_zk, n, 0, &st), ZOK);
    ck_assert_int_eq(st.czxid, tok);
    zkl_client_stats s0 = tu_stats(c);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(sd->acquire(rw, 5000), 0);
    ck_assert_int_eq(tu_stats(c).requests, s0.requests); /* no server traffic */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(sd->token(rw), tok);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(sd->release(rw), 0);
        ck_assert_int_eq(sd->is_held(rw), 1);
        ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    }
    ck_assert_int_eq(sd->release(rw), 0);
    ck_assert_int_eq(sd->is_held(rw), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(sd->release(rw), ZKL_ENOTHELD);
    rwset_close(&t);
}
END_TEST


int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    Suite *s = suite_create("rwlock_reentry");
    for (int i = 0; i < 2; i++) { /* each side, a test case named after it */
        TCase *tc = tu_tcase(sides[i].name, 60);
        tu_add_fixture(tc, "rwlock");
        tu_add_row(tc, test_rwlock_each_side_is_reentrant_without_new_nodes, i);
        suite_add_tcase(s, tc);
    }
    TCase *tc = tu_tcase("downgrade", 120);
    tu_add_fixture(tc, "rwlock");
    tcase_add_test(tc, test_rwlock_downgrade_keeps_a_queued_writer_out);
    tcase_add_test(tc, test_rwlock_downgrade_then_write_reentry_and_release_in_any_order);
    tcase_add_test(tc, test_rwlock_upgrade_is_edeadlk_at_once_and_creates_nothing);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
