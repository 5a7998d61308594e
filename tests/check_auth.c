/* Digest authentication and ACLs against a real ZooKeeper: a lock path made
 * by a client with credentials and the creator-only ACL is closed to every
 * other identity, with a clear ZKL_ENOAUTH and no hang; the secret shows up
 * nowhere. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

#define SECRET "alice:s3cr3t-Pw-4711"
#define PASSWORD "s3cr3t-Pw-4711"

static const char *self_path; /* this program, for the child of the log test */

static void setup(void)
{
    tu_fixture_setup_named("auth");
    /* With the open ACL, so that the protected nodes of a test start below
     * it and other suites' paths stay open to everyone. */
    tu_mkdirs(tu_fixture_zk, tu_fixture_root);
}

static void teardown(void)
{
    /* The protected nodes can only be removed as their owner. */
    zoo_add_auth(tu_fixture_zk, "digest", SECRET, (int)strlen(SECRET), NULL, NULL);
    tu_fixture_teardown();
}

START_TEST(test_client_without_credentials_gets_enoauth_on_a_protected_lock)
{
    char *p = tu_test_path("protected/lock");
    zkl_client *owner = tu_client_with(SECRET, ZKL_ACL_CREATOR);
    zkl_mutex *mo = tu_test_held_mutex(owner, p);
    const char *node = zkl_mutex_node(mo);
    ck_assert_ptr_nonnull(node);

    /* No credentials, and the wrong ones: refused at once, nothing created. */
    const char *who[] = {NULL, "alice:wrong", "mallory:" PASSWORD};
    for (int i = 0; i < 3; i++) {
        zkl_client *x = tu_client_with(who[i], ZKL_ACL_OPEN);
        zkl_mutex *mx;
        ck_assert_int_eq(zkl_mutex_new(x, p, &mx), 0);
        int64_t t0 = tu_now_ms();
        ck_assert_int_eq(zkl_mutex_acquire(mx, tu_ms(5000)), ZKL_ENOAUTH);
        ck_assert_int_eq(zkl_mutex_acquire(mx, 0), ZKL_ENOAUTH);
        ck_assert_int_eq(zkl_mutex_acquire(mx, ZKL_WAIT_FOREVER), ZKL_ENOAUTH);
        ck_assert_int_lt(tu_now_ms() - t0, tu_ms(3000));
        ck_assert_int_eq(zkl_mutex_is_held(mx), 0);
        ck_assert_int_eq(zkl_mutex_release(mx), ZKL_ENOTHELD);
        /* ... nor may it remove the holder's node. */
        ck_assert_int_eq(zoo_delete(zkl_client_handle(x), node, -1), ZNOAUTH);
        zkl_mutex_free(mx);
        zkl_client_close(x);
    }
    /* The raw test handle has no credentials either: it cannot even look. */
    struct String_vector kids = {0};
    ck_assert_int_eq(zoo_get_children(tu_fixture_zk, p, 0, &kids), ZNOAUTH);

    /* The same identity on another client works, and queues normally. */
    zkl_client *friend = tu_client_with(SECRET, ZKL_ACL_CREATOR);
    zkl_mutex *mf = tu_test_mutex(friend, p);
    ck_assert_int_eq(zkl_mutex_acquire(mf, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_is_held(mo), 1);
    ck_assert_int_eq(zkl_mutex_release(mo), 0);
    ck_assert_int_eq(zkl_mutex_acquire(mf, 5000), 0);
    ck_assert_int_eq(zkl_mutex_release(mf), 0);
    zoo_add_auth(tu_fixture_zk, "digest", SECRET, (int)strlen(SECRET), NULL, NULL);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_client_close(friend);
    zkl_client_close(owner);
}
END_TEST

START_TEST(test_missing_lock_path_under_a_protected_parent_is_enoauth)
{
    /* The owner protects a parent; an outsider's lock path below it does
     * not exist yet, so the outsider would have to create it. */
    char *parent = tu_path("guarded"), *p = tu_path("guarded/app/lock");
    zkl_client *owner = tu_client_with(SECRET, ZKL_ACL_CREATOR);
    ck_assert_int_eq(zoo_create(zkl_client_handle(owner), parent, "", 0, &ZOO_CREATOR_ALL_ACL, 0,
                                NULL, 0),
                     ZOK);
    zkl_client *x = tu_client_with(NULL, ZKL_ACL_OPEN);
    zkl_mutex *mx = tu_test_mutex(x, p);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_mutex_acquire(mx, tu_ms(5000)), ZKL_ENOAUTH);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(3000));
    /* The owner's own lock below it works. */
    zkl_mutex *mo = tu_test_held_mutex(owner, p);
    ck_assert_int_eq(zkl_mutex_release(mo), 0);
    zkl_client_close(x);
    zkl_client_close(owner);
    free(parent);
    free(p);
}
END_TEST

START_TEST(test_open_acl_lock_works_for_everyone_with_or_without_auth)
{
    char *p = tu_test_path("open");
    zkl_client *a = tu_client_with(SECRET, ZKL_ACL_OPEN), *b = tu_client_with(NULL, ZKL_ACL_OPEN);
    zkl_mutex *ma, *mb;
    ck_assert_int_eq(zkl_mutex_new(a, p, &ma), 0);
    ck_assert_int_eq(zkl_mutex_new(b, p, &mb), 0);
    ck_assert_int_eq(zkl_mutex_acquire(ma, 5000), 0);
    ck_assert_int_eq(zkl_mutex_acquire(mb, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_release(ma), 0);
    ck_assert_int_eq(zkl_mutex_acquire(mb, 5000), 0);
    ck_assert_int_eq(zkl_mutex_release(mb), 0);
    zkl_mutex_free(ma);
    zkl_mutex_free(mb);
    zkl_client_close(a);
    zkl_client_close(b);
}
END_TEST

START_TEST(test_bad_auth_options_are_einval)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_digest_auth(o, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_digest_auth(o, ""), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_digest_auth(o, "nocolon"), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_digest_auth(o, ":pw"), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_digest_auth(NULL, SECRET), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_acl(o, (enum zkl_acl)7), ZKL_EINVAL);
    /* The creator-only ACL names the authenticated identity: without
     * credentials every create would be refused, so the open is. */
    ck_assert_int_eq(zkl_client_opts_set_acl(o, ZKL_ACL_CREATOR), 0);
    zkl_client *c = NULL;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), ZKL_EINVAL);
    ck_assert_ptr_null(c);
    zkl_client_opts_free(o);
}
END_TEST

/* 1 if the file at `path` contains `needle`. */
static int file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char buf[4096];
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f))
        found = strstr(buf, needle) != NULL;
    fclose(f);
    return found;
}

/* The child of the log test, run as a fresh process (this program with
 * --secret-child): libzookeeper_mt's logging on, it takes a protected lock,
 * lets a client without credentials fail on it, prints every message. */
static int secret_child(const char *hosts, const char *p)
{
    zkl_client_opts *o;
    if (zkl_client_opts_new(&o) || zkl_client_opts_set_digest_auth(o, SECRET) ||
        zkl_client_opts_set_acl(o, ZKL_ACL_CREATOR))
        return 2;
    zkl_client *c, *x;
    if (zkl_client_open_opts(hosts, 10000, o, &c) || zkl_client_open(hosts, 10000, &x))
        return 3;
    zkl_client_opts_free(o);
    zkl_mutex *m, *mx;
    if (zkl_mutex_new(c, p, &m) || zkl_mutex_acquire(m, 5000) || zkl_mutex_new(x, p, &mx))
        return 4;
    int rc = zkl_mutex_acquire(mx, 5000);
    fprintf(stderr, "outsider: %s (%s)\n", zkl_strerror(rc), zkl_err_name(rc));
    for (int e = 0; e >= -20; e--)
        fprintf(stderr, "%d %s %s\n", e, zkl_err_name(e), zkl_strerror(e));
    printf("node %s\n", zkl_mutex_node(m));
    fflush(stdout);
    if (rc != ZKL_ENOAUTH || zkl_mutex_release(m))
        return 5;
    zkl_mutex_free(mx);
    zkl_mutex_free(m);
    zkl_client_close(x);
    zkl_client_close(c);
    return 0;
}

START_TEST(test_credentials_never_show_in_nodes_messages_or_logs)
{
    char *p = tu_test_path("secret/lock");
    char logpath[] = "/tmp/zkl-auth-log.XXXXXX";
    int fd = mkstemp(logpath);
    ck_assert_int_ge(fd, 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        dup2(fd, 1);
        setenv("ZKL_ZK_LOG", "1", 1);
        execl(self_path, self_path, "--secret-child", tu_hosts(), p, (char *)NULL);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    close(fd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %d", st);
    ck_assert(file_has(logpath, "outsider: not authorized"));
    ck_assert(file_has(logpath, "node /"));
    ck_assert_msg(!file_has(logpath, PASSWORD), "the password is in the log");
    unlink(logpath);
    /* The data of the lock's nodes carry host and pid only. */
    zkl_client *c = tu_client_with(SECRET, ZKL_ACL_CREATOR);
    zkl_mutex *m = tu_test_held_mutex(c, p);
    char data[256];
    int len = sizeof data - 1;
    ck_assert_int_eq(zoo_get(zkl_client_handle(c), zkl_mutex_node(m), 0, data, &len, NULL), ZOK);
    data[len > 0 ? len : 0] = '\0';
    ck_assert_ptr_null(strstr(data, PASSWORD));
    ck_assert_ptr_null(strstr(data, "alice"));
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_client_close(c);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--secret-child") == 0)
        return secret_child(argv[2], argv[3]);
    self_path = argv[0];
    const TTest *tests[] = {
        test_client_without_credentials_gets_enoauth_on_a_protected_lock,
        test_missing_lock_path_under_a_protected_parent_is_enoauth,
        test_open_acl_lock_works_for_everyone_with_or_without_auth,
        test_bad_auth_options_are_einval,
        test_credentials_never_show_in_nodes_messages_or_logs,
        NULL,
    };
    return tu_run_case("auth", 60, setup, teardown, tests);
}
