/* TLS and SASL against a real ZooKeeper 3.8 (tests/with-zk.sh --tls --sasl:
 * a secureClientPort with ssl.clientAuth=need beside a plaintext port whose
 * server authenticates SASL DIGEST-MD5 users), on a zkl built on a
 * libzookeeper_mt with both (make check-secure):
 *   - every recipe acquires through mutual TLS, and through SASL;
 *   - each way a handshake or a login fails ends the open in seconds with
 *     a code and a text that says what was wrong, whatever the session
 *     timeout;
 *   - identities of both kinds share one lock tree through ACL entries,
 *     and the others are kept out;
 *   - a session re-opened after expiry uses the same credentials;
 *   - a port that drops every TLS handshake never raises SIGPIPE in the
 *     program: the open fails with a reason. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common_recipes.h"
#include "testutil.h"
#include "zkl/zookeeper.h"

/* The long session timeout that a failed open must not wait for. */
#define PATIENT_MS 30000
/* A failed open says why within this (the client asks the servers after
 * about a second), stretched by tu_ms on a slow build, still well short of
 * PATIENT_MS. */
#define CLEAR_IN_MS 6000

static char *file(const char *env, const char *name)
{
    const char *dir = getenv(env);
    ck_assert_msg(dir != NULL, "%s is not set: run under tests/with-zk.sh --tls --sasl", env);
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static const char *secure_hosts(void)
{
    const char *h = getenv("ZKL_TEST_SECURE_HOSTS");
    ck_assert_msg(h != NULL, "ZKL_TEST_SECURE_HOSTS is not set: run under with-zk.sh --tls");
    return h;
}

static void setup(void)
{
    tu_fixture_setup_named("secure");
    /* The servers' superuser removes what the tests protect. */
    const char *super = getenv("ZKL_TEST_SUPER");
    ck_assert_ptr_nonnull(super);
    zoo_add_auth(tu_fixture_zk, "digest", super, (int)strlen(super), NULL, NULL);
    /* The test's root is open: each client's ACL starts below it. */
    int rc = zoo_create(tu_fixture_zk, "/zkl-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    ck_assert(rc == ZOK || rc == ZNODEEXISTS);
    rc = zoo_create(tu_fixture_zk, tu_fixture_root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    ck_assert_int_eq(rc, ZOK);
}

/* Options with the TLS files `cert` (client, client-b, stranger) and CA
 * `ca` (ca, other-ca) of the test's directory; key "enc" uses the
 * encrypted key with `password`. */
static zkl_client_opts *tls_opts(const char *ca, const char *cert, const char *key,
                                 const char *password)
{
    char name[64];
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    snprintf(name, sizeof name, "%s.pem", ca);
    char *caf = file("ZKL_TEST_TLS_DIR", name);
    snprintf(name, sizeof name, "%s.pem", cert);
    char *certf = file("ZKL_TEST_TLS_DIR", name);
    snprintf(name, sizeof name, "%s.key", key);
    char *keyf = file("ZKL_TEST_TLS_DIR", name);
    ck_assert_int_eq(zkl_client_opts_set_tls(o, caf, certf, keyf, password), 0);
    free(caf);
    free(certf);
    free(keyf);
    return o;
}

static zkl_client_opts *sasl_opts(const char *user, const char *pwfile)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    char *pw = file("ZKL_TEST_SASL_DIR", pwfile);
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, "DIGEST-MD5", user, pw), 0);
    free(pw);
    return o;
}

static zkl_client *open_ok(const char *hosts, zkl_client_opts *o)
{
    zkl_client *c = NULL;
    /* Under valgrind (scripts/test.sh runs this suite so, for leaks) a
     * TLS session's heartbeats are slow enough for the loss rule of a
     * short timeout. */
    int rc = zkl_client_open_opts(hosts, tu_under_valgrind() ? 30000 : 10000, o, &c);
    ck_assert_msg(rc == 0, "open: %s: %s", zkl_err_name(rc), zkl_last_error_text());
    zkl_client_opts_free(o);
    return c;
}

/* Open with `o` (freed), expecting `want` soon, with `text` in the reason. */
static void open_fails(const char *hosts, zkl_client_opts *o, int want, const char *text)
{
    zkl_client *c = NULL;
    int64_t t0 = tu_now_ms();
    int rc = zkl_client_open_opts(hosts, PATIENT_MS, o, &c);
    int64_t took = tu_now_ms() - t0;
    zkl_client_opts_free(o);
    ck_assert_ptr_null(c);
    if (tu_under_valgrind() && rc == ZKL_ECONNLOSS)
        return; /* its handshakes too slow to be judged in time: here only for leaks */
    ck_assert_msg(rc == want, "open gave %s, not %s (%s)", zkl_err_name(rc), zkl_err_name(want),
                  zkl_last_error_text());
    if (!tu_under_valgrind())
        ck_assert_msg(took < tu_ms(CLEAR_IN_MS), "the open took %lld ms", (long long)took);
    ck_assert_msg(strstr(zkl_last_error_text(), text) != NULL, "\"%s\" lacks \"%s\"",
                  zkl_last_error_text(), text);
}

/* Every recipe acquires and releases once on client c, each under its own
 * lock path below `leaf`, with a fencing token. */
static void every_recipe_acquires(zkl_client *c, const char *leaf)
{
    for (int row = 0; row < R_COUNT; row++) {
        char sub[128];
        snprintf(sub, sizeof sub, "%s/%s", leaf, recipes[row].name);
        char *p = tu_path(sub);
        struct obj o;
        obj_open(&o, row, c, p);
        int rc = zkl_lock_acquire(o.lock, 5000);
        ck_assert_msg(rc == 0, "%s: %s", recipes[row].name, zkl_strerror(rc));
        ck_assert_int_eq(zkl_lock_is_held(o.lock), 1);
        if (recipes[row].token != NULL)
            ck_assert_int_gt(recipes[row].token(&o), 0);
        ck_assert_int_eq(zkl_lock_release(o.lock), 0);
        obj_close(&o);
        free(p);
    }
}

START_TEST(test_every_recipe_acquires_over_mutual_tls)
{
    zkl_client *c = open_ok(secure_hosts(), tls_opts("ca", "client", "client", NULL));
    every_recipe_acquires(c, "tls");
    zkl_client_close(c);
    /* An encrypted key with its password. */
    c = open_ok(secure_hosts(), tls_opts("ca", "client", "client.enc", "zkl-key-pw"));
    every_recipe_acquires(c, "tls-enc");
    zkl_client_close(c);
}
END_TEST

START_TEST(test_every_recipe_acquires_with_sasl_digest_md5)
{
    zkl_client *c = open_ok(tu_hosts(), sasl_opts("alice", "alice.pw"));
    every_recipe_acquires(c, "sasl");
    zkl_client_close(c);
}
END_TEST

START_TEST(test_tls_failures_end_the_open_in_seconds_with_the_reason)
{
    /* The server's certificate from another CA. */
    open_fails(secure_hosts(), tls_opts("other-ca", "client", "client", NULL), ZKL_ENOAUTH,
               "is not trusted by the CA file");
    /* A client certificate the servers' CA did not sign. */
    open_fails(secure_hosts(), tls_opts("ca", "stranger", "stranger", NULL), ZKL_ENOAUTH,
               "refused the client certificate");
    /* No TLS on the TLS port, and TLS on the plaintext port. */
    open_fails(secure_hosts(), NULL, ZKL_ECONNLOSS, "speaks TLS on this port");
    open_fails(tu_hosts(), tls_opts("ca", "client", "client", NULL), ZKL_ECONNLOSS,
               "does not speak TLS");
    /* Keys that cannot be used: refused before anything is sent. */
    open_fails(secure_hosts(), tls_opts("ca", "client", "client.enc", NULL), ZKL_EINVAL,
               "is encrypted and no key password");
    open_fails(secure_hosts(), tls_opts("ca", "client", "client.enc", "wrong"), ZKL_EINVAL,
               "does not open with the key password");
    open_fails(secure_hosts(), tls_opts("ca", "client", "client-b", NULL), ZKL_EINVAL,
               "does not belong to the certificate");
    open_fails(secure_hosts(), tls_opts("ca", "missing", "client", NULL), ZKL_EINVAL,
               "No such file");
    /* No client certificate: libzookeeper_mt always presents one. */
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_tls(o, "ca.pem", NULL, NULL, NULL), ZKL_EINVAL);
    ck_assert_ptr_nonnull(strstr(zkl_last_error_text(), "no certificate file"));
    ck_assert_int_eq(zkl_client_opts_set_tls(o, "ca.pem", "a,b.pem", "k.pem", NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_tls(o, "ca.pem", "c.pem", "k.pem", "p,w"), ZKL_EINVAL);
    zkl_client_opts_free(o);
}
END_TEST

START_TEST(test_sasl_failures_end_the_open_at_once)
{
    open_fails(tu_hosts(), sasl_opts("alice", "wrong.pw"), ZKL_ENOAUTH,
               "refused the DIGEST-MD5 credentials of user \"alice\"");
    zkl_client_opts *o = sasl_opts("alice", "alice.pw");
    char *missing = file("ZKL_TEST_SASL_DIR", "missing.pw");
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, "DIGEST-MD5", "alice", missing), 0);
    free(missing);
    open_fails(tu_hosts(), o, ZKL_EINVAL, "cannot read the SASL password file");
    /* Both at once: libzookeeper_mt has no call for that. */
    o = tls_opts("ca", "client", "client", NULL);
    char *pw = file("ZKL_TEST_SASL_DIR", "alice.pw");
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, "DIGEST-MD5", "alice", pw), 0);
    free(pw);
    open_fails(secure_hosts(), o, ZKL_ENOTSUP, "TLS and SASL");
    /* Bad settings, at once. */
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, "digest md5", "a", "f"), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, "DIGEST-MD5", NULL, "f"), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, "DIGEST-MD5", "a", NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, NULL, "a", "f"), ZKL_EINVAL);
    zkl_client_opts_free(o);
}
END_TEST

/* Entries that leave the client's own certificate or SASL user without
 * CREATE and DELETE are refused at open, before anything is created: an
 * x509 id in another order than the server's RFC 2253 one, another SASL
 * user, a SASL password file that is a directory. */
START_TEST(test_entries_that_shut_out_the_clients_identity_fail_the_open)
{
    zkl_client_opts *o = tls_opts("ca", "client", "client", NULL);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "x509", "O=zkl-test,CN=zkl-a", ZKL_PERM_ALL), 0);
    open_fails(secure_hosts(), o, ZKL_EINVAL, "\"CN=zkl-a,O=zkl-test\"");
    o = sasl_opts("alice", "alice.pw");
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "sasl", "bob", ZKL_PERM_ALL), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "world", "anyone", ZKL_PERM_READ), 0);
    open_fails(tu_hosts(), o, ZKL_EINVAL, "without CREATE, DELETE");
    o = sasl_opts("alice", "alice.pw");
    char *dir = file("ZKL_TEST_SASL_DIR", "");
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, "DIGEST-MD5", "alice", dir), 0);
    free(dir);
    open_fails(tu_hosts(), o, ZKL_EINVAL, "Is a directory");
    /* The subject as the server writes it: the open and an acquire work. */
    o = tls_opts("ca", "client", "client", NULL);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "x509", "CN=zkl-a,O=zkl-test", ZKL_PERM_ALL), 0);
    zkl_client *c = open_ok(secure_hosts(), o);
    char *p = tu_path("own/lock");
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* The ACL of the shared tree: the TLS identity zkl-a and the SASL user bob
 * contend; anyone may look. */
static void shared_acl(zkl_client_opts *o)
{
    int contend = ZKL_PERM_READ | ZKL_PERM_CREATE | ZKL_PERM_DELETE | ZKL_PERM_WRITE;
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "x509", "CN=zkl-a,O=zkl-test", ZKL_PERM_ALL), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "sasl", "bob", contend), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "world", "anyone", ZKL_PERM_READ), 0);
}

START_TEST(test_a_tls_and_a_sasl_identity_share_a_tree_and_others_are_kept_out)
{
    char *p = tu_path("shared/orders");
    zkl_client_opts *oa = tls_opts("ca", "client", "client", NULL);
    zkl_client_opts *ob = sasl_opts("bob", "bob.pw");
    shared_acl(oa);
    shared_acl(ob);
    zkl_client *a = open_ok(secure_hosts(), oa), *b = open_ok(tu_hosts(), ob);
    zkl_mutex *ma, *mb;
    ck_assert_int_eq(zkl_mutex_new(a, p, &ma), 0);
    ck_assert_int_eq(zkl_mutex_new(b, p, &mb), 0);
    tu_expect_turns(ma, mb);
    /* The tree carries exactly the entries (as the superuser sees them). */
    struct ACL_vector v = {0};
    struct Stat st;
    ck_assert_int_eq(zoo_get_acl(tu_fixture_zk, p, &v, &st), ZOK);
    ck_assert_int_eq(v.count, 3);
    ck_assert_str_eq(v.data[0].id.scheme, "x509");
    ck_assert_str_eq(v.data[0].id.id, "CN=zkl-a,O=zkl-test");
    ck_assert_str_eq(v.data[1].id.id, "bob");
    deallocate_ACL_vector(&v);
    /* Another certificate of the same CA, and another SASL user: in, but
     * not allowed to contend. */
    zkl_client *others[] = {open_ok(secure_hosts(), tls_opts("ca", "client-b", "client-b", NULL)),
                            open_ok(tu_hosts(), sasl_opts("alice", "alice.pw"))};
    for (int i = 0; i < 2; i++) {
        zkl_mutex *mx;
        ck_assert_int_eq(zkl_mutex_new(others[i], p, &mx), 0);
        int64_t t0 = tu_now_ms();
        ck_assert_int_eq(zkl_mutex_acquire(mx, tu_ms(5000)), ZKL_ENOAUTH);
        ck_assert_int_lt(tu_now_ms() - t0, tu_ms(3000));
        /* Looking is allowed: one holder, bob. */
        zkl_participant *ps;
        size_t n;
        ck_assert_int_eq(zkl_participants_list(others[i], p, &ps, &n), 0);
        ck_assert_int_eq(n, 1);
        ck_assert(ps[0].holds);
        zkl_participants_free(ps, n);
        zkl_mutex_free(mx);
        zkl_client_close(others[i]);
    }
    ck_assert_int_eq(zkl_mutex_release(mb), 0);
    zkl_mutex_free(ma);
    zkl_mutex_free(mb);
    zkl_client_close(a);
    zkl_client_close(b);
    free(p);
}
END_TEST

static bool has_new_session(void *arg)
{
    void **a = arg;
    int64_t sid = tu_client_session_id(a[0]);
    return zkl_client_state(a[0]) == ZKL_STATE_CONNECTED && sid != 0 && sid != *(int64_t *)a[1];
}

/* A lock path only `o`'s identity may use: re-opened sessions of a client
 * keep using it, so they authenticated the same way. */
static void reopen_keeps_credentials(const char *hosts, zkl_client_opts *o, const char *scheme,
                                     const char *id, const char *leaf)
{
    ck_assert_int_eq(zkl_client_opts_add_acl(o, scheme, id, ZKL_PERM_ALL), 0);
    zkl_client *c = open_ok(hosts, o);
    char *p = tu_path(leaf);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    int64_t sid = tu_client_session_id(c);
    tu_expire_session(c);
    void *arg[] = {c, &sid};
    ck_assert_msg(tu_wait_until(has_new_session, arg, 20000), "no new session");
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
    free(p);
}

START_TEST(test_a_reopened_session_has_the_same_tls_and_sasl_credentials)
{
    reopen_keeps_credentials(tu_hosts(), sasl_opts("alice", "alice.pw"), "sasl", "alice",
                             "reopen-sasl");
    reopen_keeps_credentials(secure_hosts(), tls_opts("ca", "client", "client", NULL), "x509",
                             "CN=zkl-a,O=zkl-test", "reopen-tls");
}
END_TEST

/* ---- a port that drops handshakes ------------------------------------------- */

/* A listener on a loopback port that accepts and closes at once, as a
 * server without TLS support on its TLS port may; OpenSSL writes with
 * write(2), and a write after the server's reset raises SIGPIPE. */
struct dropper {
    int fd;
    int port;
    atomic_bool stop;
    pthread_t th;
};

static void *dropper_main(void *arg)
{
    const struct dropper *d = arg; /* read only: the starter owns it */
    while (!atomic_load(&d->stop)) {
        int c = accept(d->fd, NULL, NULL);
        if (c >= 0)
            close(c);
    }
    return NULL;
}

static void dropper_start(struct dropper *d)
{
    d->fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(d->fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(d->fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(d->fd, 64), 0);
    ck_assert_int_eq(getsockname(d->fd, (struct sockaddr *)&a, &len), 0);
    d->port = ntohs(a.sin_port);
    atomic_store(&d->stop, false);
    ck_assert_int_eq(pthread_create(&d->th, NULL, dropper_main, d), 0);
}

static void dropper_stop(struct dropper *d)
{
    atomic_store(&d->stop, true);
    shutdown(d->fd, SHUT_RDWR); /* wakes the accept */
    pthread_join(d->th, NULL);
    close(d->fd);
}

/* SIGPIPEs delivered to the program: counted, not fatal, so that the test
 * can say what happened. */
static atomic_int sigpipes;

static void on_sigpipe(int sig)
{
    (void)sig;
    atomic_fetch_add(&sigpipes, 1);
}

START_TEST(test_a_port_that_drops_tls_handshakes_raises_no_sigpipe)
{
    struct sigaction sa = {.sa_handler = on_sigpipe}, old;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGPIPE, &sa, &old), 0);
    struct dropper d;
    dropper_start(&d);
    char hosts[600];
    /* Alone, the open fails with the reason; beside a server that speaks
     * TLS, the session may come from that one. Either way no write of
     * the client's (its threads, or the opening thread's probe) raises
     * SIGPIPE. */
    for (int i = 0; i < 4; i++) {
        snprintf(hosts, sizeof hosts, "127.0.0.1:%d", d.port);
        open_fails(hosts, tls_opts("ca", "client", "client", NULL), ZKL_ECONNLOSS,
                   "ended the connection in the TLS handshake");
        snprintf(hosts, sizeof hosts, "127.0.0.1:%d,%s", d.port, secure_hosts());
        zkl_client *c = NULL;
        zkl_client_opts *o = tls_opts("ca", "client", "client", NULL);
        int rc = zkl_client_open_opts(hosts, 10000, o, &c);
        zkl_client_opts_free(o);
        ck_assert_msg(rc == 0 || rc == ZKL_ECONNLOSS, "open gave %s (%s)", zkl_err_name(rc),
                      zkl_last_error_text());
        zkl_client_close(c);
    }
    dropper_stop(&d);
    sigaction(SIGPIPE, &old, NULL);
    ck_assert_msg(atomic_load(&sigpipes) == 0, "%d SIGPIPEs were raised in the program",
                  atomic_load(&sigpipes));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("secure");
    TCase *tc = tu_tcase("secure", 120);
    tcase_add_checked_fixture(tc, setup, tu_fixture_teardown);
    tcase_add_test(tc, test_every_recipe_acquires_over_mutual_tls);
    tcase_add_test(tc, test_every_recipe_acquires_with_sasl_digest_md5);
    tcase_add_test(tc, test_tls_failures_end_the_open_in_seconds_with_the_reason);
    tcase_add_test(tc, test_sasl_failures_end_the_open_at_once);
    tcase_add_test(tc, test_entries_that_shut_out_the_clients_identity_fail_the_open);
    tcase_add_test(tc, test_a_tls_and_a_sasl_identity_share_a_tree_and_others_are_kept_out);
    tcase_add_test(tc, test_a_port_that_drops_tls_handshakes_raises_no_sigpipe);
    suite_add_tcase(s, tc);
    TCase *tr = tu_tcase("reopen", 120);
    tcase_add_checked_fixture(tr, setup, tu_fixture_teardown);
    tcase_add_test(tr, test_a_reopened_session_has_the_same_tls_and_sasl_credentials);
    suite_add_tcase(s, tr);
    return tu_run(s);
}
