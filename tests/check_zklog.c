/* libzookeeper_mt's log is process-wide: by default the first client
 * silences it; a client opened with zkl_client_opts_set_quiet_zk_log(o, 0)
 * leaves the level and the stream the program set. Each test runs in a
 * fresh process (Check's fork mode); the opt-out test comes first, so it
 * also holds when every test shares one process (CK_FORK=no). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* The worker of the test below, in a fresh process: with descriptors 0, 1
 * and 2 closed, the first client opens its /dev/null for the log above
 * them, so that a later open(), or the program's own output, never lands
 * in it. Exits 0 when so, else the number of the check that failed. */
static int closed_std_worker(const char *hosts)
{
    close(0);
    close(1);
    close(2);
    zkl_client *c = NULL;
    if (zkl_client_open(hosts, 10000, &c) != 0)
        return 10;
    FILE *log = zoo_get_log_stream();
    int rc = log == NULL ? 11 : fileno(log) <= 2 ? 12 : 0;
    for (int fd = 0; fd <= 2 && rc == 0; fd++) {
        char link[64], target[256];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k < 0)
            continue; /* still closed */
        target[k] = '\0';
        if (strcmp(target, "/dev/null") == 0)
            rc = 13 + fd;
    }
    zkl_client_close(c);
    return rc;
}

START_TEST(test_log_stream_never_takes_a_standard_descriptor)
{
    const char *args[] = {"closed-std", tu_hosts(), NULL};
    pid_t pid = tu_spawn_worker(args, -1);
    int st = tu_wait_exit(pid, 30000);
    ck_assert_msg(st == 0, "the worker with fds 0-2 closed gave %d (12: the log on a standard "
                           "descriptor; 13-15: /dev/null on fd 0-2)", st);
}
END_TEST

START_TEST(test_option_needs_an_object)
{
    ck_assert_int_eq(zkl_client_opts_set_quiet_zk_log(NULL, 0), ZKL_EINVAL);
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    if (argc == 4 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "closed-std") == 0)
        return closed_std_worker(argv[3]);
    const TTest *tests[] = {
        test_opt_out_leaves_the_programs_log_alone,
        test_default_silences_the_log,
        test_option_needs_an_object,
        test_log_stream_never_takes_a_standard_descriptor,
        NULL,
    };
    return tu_run_case("zklog", 60, NULL, NULL, tests);
}
