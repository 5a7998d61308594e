/* The loss rule, the grace, the keepalive period and the try-once bound,
 * from a table, without a server
 * (lib/util/loss.h): the one definition the session, the fronts, the
 * tests and the simulation all use. */
#include "loss.h"
#include "util.h"
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

/* The keepalive period, T/10, and how long a try once (a deadline not after
 * now) waits for its first answer: T; any other deadline is its own. */
static const struct {
    int64_t deadline, now;
    int timeout_ms;
    int64_t until;
    bool once;
    int64_t keepalive;
} waits[] = {
    {1000 * MS, 1000 * MS, 10000, 11000 * MS, true, 1000 * MS},  /* now: a try once */
    {999 * MS, 1000 * MS, 4000, 5000 * MS, true, 400 * MS},      /* past: a try once */
    {1001 * MS, 1000 * MS, 4000, 1001 * MS, false, 400 * MS},    /* ahead: its own */
    {INT64_MAX, 1000 * MS, 30000, INT64_MAX, false, 3000 * MS},  /* forever */
    {5, 5, 1001, 5 + 1001 * MS, true, 1001 * MS / 10},           /* rounded down to the ns */
    {0, 7, 0, 7, true, 0},                                       /* no timeout known */
};

START_TEST(test_a_try_once_waits_t_for_its_answer_and_the_keepalive_is_every_t_tenth)
{
    bool once = !waits[_i].once;
    ck_assert_int_eq(zkl__wait_until(waits[_i].deadline, waits[_i].now, waits[_i].timeout_ms, &once),
                     waits[_i].until);
    ck_assert_int_eq(once, waits[_i].once);
    ck_assert_int_eq(zkl__wait_until(waits[_i].deadline, waits[_i].now, waits[_i].timeout_ms, NULL),
                     waits[_i].until);
    ck_assert_int_eq(zkl__keepalive_ns(waits[_i].timeout_ms), waits[_i].keepalive);
}
END_TEST

/* What is left of a call's deadline, for the next step of a call made of
 * several: rounded up to the millisecond, 0 (a try once) once past. */
static const struct {
    long timeout_ms;
    int64_t deadline, now;
    long left;
} lefts[] = {
    {1000, 2000 * MS, 1000 * MS, 1000},
    {1000, 2000 * MS, 1000 * MS + 1, 1000}, /* a nanosecond short: still a whole ms */
    {1000, 2000 * MS, 1999 * MS + 1, 1},
    {1000, 2000 * MS, 2000 * MS, 0},
    {1000, 2000 * MS, 3000 * MS, 0},
    {0, 5 * MS, 5 * MS, 0},
    {-1, INT64_MAX, 5 * MS, -1}, /* forever stays forever */
    {-7, 0, 5 * MS, -1},
};

START_TEST(test_what_is_left_of_a_deadline_is_rounded_up_and_zero_once_past)
{
    ck_assert_int_eq(zkl__remaining_ms(lefts[_i].timeout_ms, lefts[_i].deadline, lefts[_i].now),
                     lefts[_i].left);
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
    for (int i = 0; i < (int)(sizeof waits / sizeof waits[0]); i++)
        tu_add_row(tc, test_a_try_once_waits_t_for_its_answer_and_the_keepalive_is_every_t_tenth, i);
    for (int i = 0; i < (int)(sizeof lefts / sizeof lefts[0]); i++)
        tu_add_row(tc, test_what_is_left_of_a_deadline_is_rounded_up_and_zero_once_past, i);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
