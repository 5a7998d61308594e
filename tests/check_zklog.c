/* libzookeeper_mt's log is process-wide: by default the first client
 * silences it; a client opened with zkl_client_opts_set_quiet_zk_log(o, 0)
 * leaves the level and the stream the program set. Each test runs in a
 * fresh process (Check's fork mode); the opt-out test comes first, so it
 * also holds when every test shares one process (CK_FORK=no). */
#include <stdio.h>

#include "testutil.h"

/* libzookeeper_mt's current level and stream. Its zookeeper_log.h declares
 * them but includes "zookeeper.h" by a path of its own directory. */
extern ZooLogLevel logLevel;
FILE *zoo_get_log_stream(void);

START_TEST(test_opt_out_leaves_the_programs_log_alone)
{
    FILE *mine = tmpfile();
    ck_assert_ptr_nonnull(mine);
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    zoo_set_log_stream(mine);
    zkl_client_opts *o = NULL;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_quiet_zk_log(o, 0), 0);
    zkl_client *c = NULL;
    int rc = zkl_client_open_opts(tu_hosts(), 10000, o, &c);
    ck_assert_msg(rc == 0, "open: %s", zkl_strerror(rc));
    ck_assert_int_eq(logLevel, ZOO_LOG_LEVEL_WARN);
    ck_assert_ptr_eq(zoo_get_log_stream(), mine);
    zkl_client_close(c);
    ck_assert_int_eq(logLevel, ZOO_LOG_LEVEL_WARN);
    ck_assert_ptr_eq(zoo_get_log_stream(), mine);
    zkl_client_opts_free(o);
    zoo_set_log_stream(NULL);
    fclose(mine);
}
END_TEST

START_TEST(test_default_silences_the_log)
{
    FILE *mine = tmpfile();
    ck_assert_ptr_nonnull(mine);
    zoo_set_debug_level(ZOO_LOG_LEVEL_DEBUG);
    zoo_set_log_stream(mine);
    zkl_client *c = tu_client(10000);
    ck_assert_int_eq(logLevel, ZOO_LOG_LEVEL_ERROR);
    ck_assert_ptr_ne(zoo_get_log_stream(), mine);
    zkl_client_close(c);
    fclose(mine);
}
END_TEST

START_TEST(test_option_needs_an_object)
{
    ck_assert_int_eq(zkl_client_opts_set_quiet_zk_log(NULL, 0), ZKL_EINVAL);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_opt_out_leaves_the_programs_log_alone,
        test_default_silences_the_log,
        test_option_needs_an_object,
        NULL,
    };
    return tu_run_case("zklog", 60, NULL, NULL, tests);
}
