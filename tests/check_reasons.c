/* Failures that say why (zkl_last_error_text), against a real ZooKeeper
 * and real processes: what zkl_client_open refuses at once (a session
 * timeout of 2^30 ms or more made libzookeeper_mt retry for ever; port
 * 99999 was taken and waited on), running out of descriptors, no server
 * at all, the connect timeout, and a guarded write to a missing node. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

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
        ck_assert_msg(ms < tu_ms(2000), "%d ms was refused only after %lld ms", too_long[i],
                      (long long)ms);
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

static const struct {
    const char *hosts, *says;
} malformed[] = {
    {"[::1]:2400", "::1:2400"},               /* brackets: libzookeeper_mt wants none */
    {"127.0.0.1:0", "port 0"},
    {"127.0.0.1:99999", "port 99999"},        /* it took it, as 34463 */
    {"127.0.0.1:65536", "port 65536"},
    {"127.0.0.1:2400//x", "//x"},
    {"127.0.0.1:2400/x/", "/x/"},
    {"127.0.0.1", "no port"},
    {"127.0.0.1:", "no port"},
    {":2181", "no host"},
    {"127.0.0.1:21x81", "21x81"},
    {"127.0.0.1:2181,localhost", "localhost"},
};

START_TEST(test_malformed_host_lists_are_refused_at_once_with_a_reason)
{
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        int64_t ms;
        int rc = open_timed(malformed[i].hosts, 5000, &ms);
        ck_assert_msg(rc == ZKL_EINVAL, "'%s': %s", malformed[i].hosts, zkl_strerror(rc));
        /* at once: well before the 5 s it was given to connect */
        ck_assert_msg(ms < tu_ms(1000), "'%s' took %lld ms", malformed[i].hosts, (long long)ms);
        const char *why = zkl_last_error_text();
        ck_assert_msg(strstr(why, malformed[i].says) != NULL, "'%s': text '%s' lacks '%s'",
                      malformed[i].hosts, why, malformed[i].says);
    }
}
END_TEST

START_TEST(test_no_server_at_all_says_no_server_answered)
{
    int64_t ms;
    ck_assert_int_eq(open_timed("127.0.0.1:1", 1500, &ms), ZKL_ECONNLOSS);
    ck_assert_msg(strstr(zkl_last_error_text(), "no server answered at 127.0.0.1:1") != NULL,
                  "text: %s", zkl_last_error_text());
}
END_TEST

START_TEST(test_connect_timeout_bounds_the_open_apart_from_the_session_timeout)
{
    zkl_client_opts *o = NULL;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_connect_timeout(o, -1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_connect_timeout(NULL, 500), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_connect_timeout(o, 500), 0);
    zkl_client *c = NULL;
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_client_open_opts("127.0.0.1:1", 30000, o, &c), ZKL_ECONNLOSS);
    int64_t ms = tu_now_ms() - t0;
    /* (well before the 30 s session timeout, on a slow build too) */
    ck_assert_msg(ms >= 450 && ms < 500 + tu_ms(2500),
                  "a 500 ms connect timeout gave up after %lld ms", (long long)ms);
    ck_assert_msg(strstr(zkl_last_error_text(), "within 500 ms") != NULL, "text: %s",
                  zkl_last_error_text());
    /* A server that answers is waited for as usual, within a bound sized
     * for a loaded machine (500 ms to connect and start a session is not). */
    ck_assert_int_eq(zkl_client_opts_set_connect_timeout(o, tu_ms(10000)), 0);
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 30000, o, &c), 0);
    ck_assert_int_eq(zkl_client_session_timeout(c), 30000);
    zkl_client_close(c);
    /* 0: the session timeout again, the default. */
    ck_assert_int_eq(zkl_client_opts_set_connect_timeout(o, 0), 0);
    t0 = tu_now_ms();
    ck_assert_int_eq(zkl_client_open_opts("127.0.0.1:1", 1200, o, &c), ZKL_ECONNLOSS);
    ms = tu_now_ms() - t0;
    ck_assert_msg(ms >= 1100 && ms < 1200 + tu_ms(2800), "the default gave up after %lld ms",
                  (long long)ms);
    zkl_client_opts_free(o);
}
END_TEST

/* Worker: with no descriptor left, the open fails as a system error that
 * names the cause. Exits 0 when so. */
static int no_fds_worker(const char *hosts)
{
    int open = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return 10;
    while (readdir(d) != NULL)
        open++;
    closedir(d);
    /* Counted: ".", "..", and the listing's own descriptor, now closed. */
    struct rlimit rl, was;
    if (getrlimit(RLIMIT_NOFILE, &was) != 0)
        return 11;
    rl = was;
    rl.rlim_cur = (rlim_t)(open - 3);
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 12;
    zkl_client *c = NULL;
    int rc = zkl_client_open(hosts, 10000, &c);
    /* The limit goes back before anything else runs: the leak checker of a
     * sanitizer build opens /proc files at exit and dies without one. */
    if (setrlimit(RLIMIT_NOFILE, &was) != 0)
        return 12;
    if (rc == 0) {
        zkl_client_close(c);
        return 13;
    }
    if (rc != ZKL_ESYS) {
        fprintf(stderr, "open gave %s: %s\n", zkl_err_name(rc), zkl_last_error_text());
        return 14;
    }
    if (strstr(zkl_last_error_text(), "descriptors") == NULL) {
        fprintf(stderr, "text: %s\n", zkl_last_error_text());
        return 15;
    }
    return 0;
}

START_TEST(test_out_of_descriptors_is_esys_and_says_so)
{
    const char *args[] = {"no-fds", tu_hosts(), NULL};
    pid_t pid = tu_spawn_worker(args, -1);
    int st = tu_wait_exit(pid, 30000);
    ck_assert_msg(st == 0, "the worker without descriptors gave %d (14: another code, 15: "
                           "no word of descriptors)", st);
}
END_TEST

START_TEST(test_guarded_set_of_a_missing_node_is_enoent)
{
    char *target = tu_test_path("missing");
    zkl_mutex *m = tu_test_holder(tu_test_path("lock"));
    int rc = zkl_mutex_guarded_set(m, target, "x", 1);
    ck_assert_msg(rc == ZKL_ENOENT, "guarded set of a missing node: %s", zkl_err_name(rc));
    ck_assert_msg(strstr(zkl_last_error_text(), target) != NULL, "text: %s", zkl_last_error_text());
    ck_assert_int_eq(tu_exists(tu_fixture_zk, target), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    if (argc == 4 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "no-fds") == 0)
        return no_fds_worker(argv[3]);
    const TTest *tests[] = {
        test_session_timeouts_libzookeeper_cannot_count_are_refused_at_once,
        test_malformed_host_lists_are_refused_at_once_with_a_reason,
        test_no_server_at_all_says_no_server_answered,
        test_connect_timeout_bounds_the_open_apart_from_the_session_timeout,
        test_out_of_descriptors_is_esys_and_says_so,
        test_guarded_set_of_a_missing_node_is_enoent,
        NULL,
    };
    return tu_run_zk_case("reasons", 60, tests);
}
