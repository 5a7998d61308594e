/* The loss rule and the grace, from a table, without a server
 * (lib/util/loss.h): the one definition the session, the fronts, the
 * tests and the simulation all use. */
#include "loss.h"
#include "testutil.h"

#define MS ((int64_t)1000000)

static const struct {
    int64_t last_ok;  /* send time of the last request answered (ns) */
    int timeout_ms;   /* the session timeout T */
    int64_t after;    /* zkl__loss_after_ns */
    int64_t at;       /* zkl__loss_at */
} rows[] = {
    /* 9T/20 after the send: a twentieth of T before the earliest expiry */
    {1 * MS, 10000, 4500 * MS, 4501 * MS},
    {5000 * MS, 2000, 900 * MS, 5900 * MS},
    {7, 20000, 9000 * MS, 7 + 9000 * MS},
    /* an odd T: rounded down to the millisecond, never later */
    {1000 * MS, 1001, 450 * MS, 1450 * MS},
    {1000 * MS, 19, 8 * MS, 1008 * MS},
    {1000 * MS, 1, 0, 1000 * MS},
    /* nothing answered yet, or no timeout known: no deadline */
    {0, 10000, 4500 * MS, 0},
    {3 * MS, 0, 0, 0},
    {3 * MS, -5, 0, 0},
    /* the largest timeout a server grants fits */
    {INT64_C(1) << 50, 2000000000, 900000000 * MS, (INT64_C(1) << 50) + 900000000 * MS},
};

START_TEST(test_the_loss_rule_tells_a_twentieth_of_t_before_the_earliest_expiry)
{
    ck_assert_int_eq(zkl__loss_after_ns(rows[_i].timeout_ms), rows[_i].after);
    ck_assert_int_eq(zkl__loss_at(rows[_i].last_ok, rows[_i].timeout_ms), rows[_i].at);
    /* before the server's earliest expiry, S + T/2 */
    if (rows[_i].at != 0)
        ck_assert_int_lt(rows[_i].at, rows[_i].last_ok + (int64_t)rows[_i].timeout_ms * MS / 2);
}
END_TEST

START_TEST(test_the_loss_rule_counts_with_the_granted_timeout_once_there_is_one)
{
    ck_assert_int_eq(zkl__loss_timeout_ms(4000, 10000), 4000);
    ck_assert_int_eq(zkl__loss_timeout_ms(40000, 10000), 40000);
    ck_assert_int_eq(zkl__loss_timeout_ms(0, 10000), 10000);
    ck_assert_int_eq(zkl__loss_timeout_ms(-1, 10000), 10000);
    ck_assert_int_eq(zkl__loss_timeout_ms(0, 0), 0);
}
END_TEST

START_TEST(test_the_grace_for_a_failed_attempt_is_half_a_second)
{
    ck_assert_int_eq(ZKL__GRACE_NS, 500 * MS);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("loss");
    TCase *tc = tu_tcase("loss", 10);
    for (int i = 0; i < (int)(sizeof rows / sizeof rows[0]); i++)
        tu_add_row(tc, test_the_loss_rule_tells_a_twentieth_of_t_before_the_earliest_expiry, i);
    tcase_add_test(tc, test_the_loss_rule_counts_with_the_granted_timeout_once_there_is_one);
    tcase_add_test(tc, test_the_grace_for_a_failed_attempt_is_half_a_second);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
