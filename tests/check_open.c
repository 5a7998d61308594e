/* zkl_client_open against a real ZooKeeper and a real process: what it
 * refuses at once, and that every failure says why (zkl_last_error_text).
 * Each case would otherwise end in a wait: a session timeout of 2^30 ms
 * or more made libzookeeper_mt retry for ever. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* Opens `hosts` with `timeout_ms`; returns the code and the time it took
 * in *ms; a client that opened is closed again. */
static int open_timed(const char *hosts, int timeout_ms, int64_t *ms)
{
    int64_t t0 = tu_now_ms();
    zkl_client *c = NULL;
    int rc = zkl_client_open(hosts, timeout_ms, &c);
    *ms = tu_now_ms() - t0;
    if (rc == 0)
        zkl_client_close(c);
    else
        ck_assert_ptr_null(c);
    return rc;
}

START_TEST(test_session_timeouts_libzookeeper_cannot_count_are_refused_at_once)
{
    int64_t ms;
    const int too_long[] = {1 << 30, (1 << 30) + 1, 2147483647};
    for (size_t i = 0; i < sizeof too_long / sizeof too_long[0]; i++) {
        int rc = open_timed(tu_hosts(), too_long[i], &ms);
        ck_assert_msg(rc == ZKL_EINVAL, "%d ms: %s", too_long[i], zkl_strerror(rc));
        ck_assert_msg(ms < 2000, "%d ms was refused only after %lld ms", too_long[i], (long long)ms);
        ck_assert_msg(strstr(zkl_last_error_text(), "1073741823") != NULL, "text: %s",
                      zkl_last_error_text());
    }
    /* The largest it takes: the server grants what it allows. */
    zkl_client *c = NULL;
    ck_assert_int_eq(zkl_client_open(tu_hosts(), (1 << 30) - 1, &c), 0);
    int granted = zkl_client_session_timeout(c);
    ck_assert_msg(granted > 0 && granted <= 60000, "granted %d", granted);
    zkl_client_close(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("open");
    TCase *tc = tu_tcase("open", 60);
    tcase_add_test(tc, test_session_timeouts_libzookeeper_cannot_count_are_refused_at_once);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
