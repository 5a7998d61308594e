/* ACL entries (zkl_client_opts_add_acl) on a real ZooKeeper: the nodes a
 * client creates carry exactly its entries, two identities share one lock
 * tree through them while a third is kept out, and bad entries are refused
 * before anything is sent. Also the TLS and SASL options of a build without
 * them: ZKL_ENOTSUP with a text that names the configure option. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h" /* the seam: struct zkl__zapi */
#include "testutil.h"
#include "zkl/zookeeper.h"

/* base64(sha1("alice:alice-pw")), ZooKeeper's digest of that credential. */
#define ALICE "alice:alice-pw"
#define ALICE_ID "alice:SQICbGEP3vUd4FffsXSLZ8/1XtI="
#define BOB "bob:bob-pw"
#define BOB_ID "bob:EXcpcQQk6JBIDFnxSqkpDLIhkxw="

static void setup(void)
{
    tu_fixture_setup_named("acl");
    /* Alice may read the entries in full (a server shows digest hashes
     * only to those with ADMIN), and delete what the tests leave. */
    zoo_add_auth(tu_fixture_zk, "digest", ALICE, (int)strlen(ALICE), NULL, NULL);
    int rc = zoo_create(tu_fixture_zk, "/zkl-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    ck_assert(rc == ZOK || rc == ZNODEEXISTS);
    rc = zoo_create(tu_fixture_zk, tu_fixture_root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    ck_assert_int_eq(rc, ZOK);
}

static void teardown(void)
{
    tu_fixture_teardown();
}

/* A client authenticated as `digest` whose nodes carry the shared ACL:
 * alice and bob contend (read, create, delete), anyone may look (read).
 * Closed after the test. */
static zkl_client *shared_client(const char *digest)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    if (digest != NULL)
        ck_assert_int_eq(zkl_client_opts_set_digest_auth(o, digest), 0);
    int contend = ZKL_PERM_READ | ZKL_PERM_CREATE | ZKL_PERM_DELETE | ZKL_PERM_WRITE;
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "digest", ALICE_ID, ZKL_PERM_ALL), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "digest", BOB_ID, contend), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "world", "anyone", ZKL_PERM_READ), 0);
    zkl_client *c = NULL;
    int rc = zkl_client_open_opts(tu_hosts(), 10000, o, &c);
    zkl_client_opts_free(o);
    ck_assert_msg(rc == 0, "open: %s", zkl_strerror(rc));
    return tu_test_adopt(c);
}

/* The ACL of `path` as "scheme:id:perms;..." in out. */
static void acl_text(const char *path, char *out, size_t n)
{
    struct ACL_vector v = {0};
    struct Stat st;
    ck_assert_int_eq(zoo_get_acl(tu_fixture_zk, path, &v, &st), ZOK);
    out[0] = '\0';
    for (int32_t i = 0; i < v.count; i++) {
        size_t k = strlen(out);
        snprintf(out + k, n - k, "%s:%s:%d;", v.data[i].id.scheme, v.data[i].id.id,
                 v.data[i].perms);
    }
    deallocate_ACL_vector(&v);
}

START_TEST(test_created_parents_and_contenders_carry_the_acl_entries)
{
    char *p = tu_test_path("app/orders");
    zkl_client *a = shared_client(ALICE);
    zkl_mutex *m = tu_test_held_mutex(a, p);
    const char *want = "digest:" ALICE_ID ":31;digest:" BOB_ID ":15;world:anyone:1;";
    char got[512];
    acl_text(tu_test_path("app"), got, sizeof got);
    ck_assert_str_eq(got, want);
    acl_text(p, got, sizeof got);
    ck_assert_str_eq(got, want);
    acl_text(zkl_mutex_node(m), got, sizeof got);
    ck_assert_str_eq(got, want);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    /* A counting semaphore's own node too. */
    char *sp = tu_test_path("pool");
    zkl_semaphore *s = tu_test_semaphore(a, sp, 2);
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_acquire(s, 5000, &l), 0);
    acl_text(sp, got, sizeof got);
    ck_assert_str_eq(got, want);
    ck_assert_int_eq(zkl_lease_release(l), 0);
}
END_TEST

START_TEST(test_two_identities_share_a_tree_and_a_third_is_kept_out)
{
    char *p = tu_test_path("shared/lock");
    zkl_client *a = shared_client(ALICE), *b = shared_client(BOB);
    zkl_mutex *ma = tu_test_mutex(a, p), *mb = tu_test_mutex(b, p);
    /* bob queues behind alice, and gets the lock when she lets go. */
    tu_expect_turns(ma, mb);
    /* Anyone may look: the listing names bob as the holder. */
    zkl_client *x = tu_test_client(10000);
    zkl_participant *ps;
    size_t n;
    ck_assert_int_eq(zkl_participants_list(x, p, &ps, &n), 0);
    ck_assert_int_eq(n, 1);
    ck_assert(ps[0].holds);
    zkl_participants_free(ps, n);
    /* ... but a client without either credential cannot contend, at once,
     * and leaves nothing. */
    zkl_mutex *mx = tu_test_mutex(x, p);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_mutex_acquire(mx, tu_ms(5000)), ZKL_ENOAUTH);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(3000));
    ck_assert_msg(strstr(zkl_last_error_text(), "ZNOAUTH") != NULL &&
                      strstr(zkl_last_error_text(), p) != NULL,
                  "%s", zkl_last_error_text());
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    /* Alice may break bob's hold (DELETE on the lock path); bob hears of it. */
    zhandle_t *zh;
    ck_assert_int_eq(zkl_client_handle_borrow(a, &zh), 0);
    ck_assert_int_eq(zoo_delete(zh, zkl_mutex_node(mb), -1), ZOK);
    zkl_client_handle_return(a, zh);
    ck_assert_int_eq(zkl_mutex_release(mb), ZKL_ELOST);
}
END_TEST

START_TEST(test_bad_acl_entries_are_einval_with_a_reason)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    struct {
        const char *scheme, *id;
        int perms;
    } bad[] = {
        {"digest", "alice:alice-pw", ZKL_PERM_ALL}, /* a password, not its hash */
        {"digest", "SQICbGEP3vUd4FffsXSLZ8/1XtI=", ZKL_PERM_ALL},
        {"world", "everyone", ZKL_PERM_READ},
        {"auth", "alice", ZKL_PERM_ALL},
        {"sasl", "", ZKL_PERM_ALL},
        {"x509", "", ZKL_PERM_ALL},
        {"kerberos", "alice", ZKL_PERM_ALL},
        {"sasl", "alice", 0},
        {"sasl", "alice", 32},
        {"sasl", "alice", -1},
        {"ip", "999.1.1.1", ZKL_PERM_ALL},
        {"ip", "10.0.0.0/33", ZKL_PERM_ALL},
        {"ip", "10.0.0.0/", ZKL_PERM_ALL},
        {"ip", "10.0.0.0/x", ZKL_PERM_ALL},
        {"ip", "example.com", ZKL_PERM_ALL},
        {"ip", "::1/129", ZKL_PERM_ALL},
        {"sasl", "alice smith", ZKL_PERM_ALL},
        {"sasl", "alice@A@B", ZKL_PERM_ALL},
        {"x509", "orders", ZKL_PERM_ALL},
        {"x509", "CN=orders,,O=example", ZKL_PERM_ALL},
        {"digest", "alice:SQICbGEP3vUd4FffsXSLZ8/1XtI", ZKL_PERM_ALL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(zkl_client_opts_add_acl(o, bad[i].scheme, bad[i].id, bad[i].perms),
                         ZKL_EINVAL);
        ck_assert_ptr_nonnull(strstr(zkl_last_error_text(), "zkl_client_opts_add_acl"));
    }
    ck_assert_int_eq(zkl_client_opts_add_acl(NULL, "sasl", "a", 1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, NULL, "a", 1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "sasl", NULL, 1), ZKL_EINVAL);
    /* The good ones of each scheme. */
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "sasl", "alice", ZKL_PERM_ALL), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "x509", "CN=alice,O=zkl-test", ZKL_PERM_ALL), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "digest", ALICE_ID, ZKL_PERM_ALL), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "auth", "", ZKL_PERM_ALL), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "ip", "127.0.0.1", ZKL_PERM_READ), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "ip", "10.0.0.0/8", ZKL_PERM_READ), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "ip", "::1/128", ZKL_PERM_READ), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "sasl", "zk/host@EXAMPLE.COM", ZKL_PERM_ALL), 0);
    zkl_client_opts_free(o);
}
END_TEST

/* Opening with `acl` ("scheme:id:perms" entries, ';' between) and the
 * digest credential `digest` (or NULL): the code, the text in why. */
static int open_with(const char *digest, const char *acl, char *why, size_t n)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    if (digest != NULL)
        ck_assert_int_eq(zkl_client_opts_set_digest_auth(o, digest), 0);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", acl);
    char *save = NULL;
    for (char *e = strtok_r(buf, ";", &save); e != NULL; e = strtok_r(NULL, ";", &save)) {
        char *perm = strrchr(e, ':'), *colon = strchr(e, ':');
        *perm = '\0';
        *colon = '\0';
        ck_assert_int_eq(zkl_client_opts_add_acl(o, e, colon + 1, atoi(perm + 1)), 0);
    }
    zkl_client *c = NULL;
    zkl_last_error_clear();
    int rc = zkl_client_open_opts(tu_hosts(), 10000, o, &c);
    snprintf(why, n, "%s", zkl_last_error_text());
    zkl_client_opts_free(o);
    zkl_client_close(c);
    return rc;
}

START_TEST(test_entries_that_shut_the_client_out_are_refused_at_open)
{
    char why[300];
    /* Read only: no CREATE for its node, no DELETE to remove it. */
    ck_assert_int_eq(open_with(NULL, "world:anyone:1", why, sizeof why), ZKL_EINVAL);
    ck_assert_msg(strstr(why, "without CREATE, DELETE") != NULL, "%s", why);
    /* No DELETE: its release would be refused and its node stay. */
    ck_assert_int_eq(open_with(NULL, "world:anyone:5", why, sizeof why), ZKL_EINVAL);
    ck_assert_msg(strstr(why, "without DELETE") != NULL, "%s", why);
    /* Bob's entry, alice's credential; and no credential at all. */
    ck_assert_int_eq(open_with(ALICE, "digest:" BOB_ID ":31;world:anyone:1", why, sizeof why),
                     ZKL_EINVAL);
    ck_assert_msg(strstr(why, "without CREATE, DELETE") != NULL, "%s", why);
    ck_assert_int_eq(open_with(NULL, "digest:" ALICE_ID ":31", why, sizeof why), ZKL_EINVAL);
    ck_assert_int_eq(open_with(NULL, "x509:CN=orders,O=example:31", why, sizeof why), ZKL_EINVAL);
    ck_assert_int_eq(open_with(NULL, "sasl:orders:31", why, sizeof why), ZKL_EINVAL);
    /* auth:: with no identity: the server would refuse the entry. */
    ck_assert_int_eq(open_with(NULL, "auth::31", why, sizeof why), ZKL_EINVAL);
    ck_assert_msg(strstr(why, "auth::") != NULL, "%s", why);
    /* What is enough: the client's own digest, or an address it may have. */
    ck_assert_int_eq(open_with(ALICE, "digest:" ALICE_ID ":13;world:anyone:1", why, sizeof why), 0);
    ck_assert_int_eq(open_with(ALICE, "auth::31", why, sizeof why), 0);
    ck_assert_int_eq(open_with(NULL, "world:anyone:1;ip:10.9.9.9:31", why, sizeof why), 0);
    /* Nothing was created by any of them. */
    ck_assert_int_eq(tu_children(tu_fixture_zk, tu_fixture_root), 0);
}
END_TEST

/* A client whose nodes carry world:anyone:`perms` and scheme:id with
 * every permission, closed after the test. */
static zkl_client *world_and(int perms, const char *scheme, const char *id)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, "world", "anyone", perms), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(o, scheme, id, ZKL_PERM_ALL), 0);
    zkl_client *c = NULL;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), 0);
    zkl_client_opts_free(o);
    return tu_test_adopt(c);
}

/* An entry the server has no provider for (x509 on a server without TLS
 * authentication) is refused by it: a named code and a text, and nothing
 * of the attempt stays. */
START_TEST(test_an_acl_the_server_refuses_is_einval_with_a_text)
{
    zkl_client *c = world_and(ZKL_PERM_ALL, "x509", "CN=orders,O=example");
    zkl_mutex *m = tu_test_mutex(c, tu_test_path("refused/lock"));
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), ZKL_EINVAL);
    ck_assert_int_eq(zkl_last_zk_error(), ZINVALIDACL);
    ck_assert_msg(strstr(zkl_last_error_text(), "ACL") != NULL, "%s", zkl_last_error_text());
    ck_assert_int_eq(tu_children(tu_fixture_zk, tu_fixture_root), 0);
}
END_TEST

/* Entries the client cannot judge (an address it does not have) pass the
 * open; the server then refuses the create under the parent the acquire
 * made with them. That parent would shut every later client out: the
 * acquire removes it again, and says why it failed. */
START_TEST(test_a_refused_acquire_removes_the_parents_it_created)
{
    zkl_client *c = world_and(ZKL_PERM_READ, "ip", "10.9.9.9");
    zkl_mutex *m = tu_test_mutex(c, tu_test_path("kept/out/lock"));
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), ZKL_ENOAUTH);
    ck_assert_msg(strstr(zkl_last_error_text(), "ZNOAUTH") != NULL, "%s", zkl_last_error_text());
    ck_assert_msg(strstr(zkl_last_error_text(), "stays") == NULL, "%s", zkl_last_error_text());
    /* Seen by the fixture's own session: nothing of the attempt is left. */
    ck_assert_int_eq(tu_children(tu_fixture_zk, tu_fixture_root), 0);

    /* Under a parent that lets anyone create but not delete, the parent
     * the acquire made cannot go: the text says so. */
    char *pre = tu_test_path("pre");
    char world[] = "world", anyone[] = "anyone", digest[] = "digest", alice[] = ALICE_ID;
    struct ACL entries[] = {
        {ZOO_PERM_READ | ZOO_PERM_CREATE, {world, anyone}},
        {ZOO_PERM_ALL, {digest, alice}},
    };
    struct ACL_vector v = {2, entries};
    ck_assert_int_eq(zoo_create(tu_fixture_zk, pre, "", 0, &v, 0, NULL, 0), ZOK);
    zkl_mutex *under = tu_test_mutex(c, tu_test_path("pre/kept/lock"));
    ck_assert_int_eq(zkl_mutex_acquire(under, 5000), ZKL_ENOAUTH);
    ck_assert_msg(strstr(zkl_last_error_text(), "ZNOAUTH") != NULL &&
                      strstr(zkl_last_error_text(), "stays") != NULL,
                  "%s", zkl_last_error_text());
    ck_assert_int_eq(zkl_last_zk_error(), ZNOAUTH);
    ck_assert_int_eq(tu_children(tu_fixture_zk, pre), 1);
}
END_TEST

/* The asynchronous requests clean up as the blocking acquire does: when
 * the callback hears of the refusal, the parents are gone already. */
START_TEST(test_a_refused_async_acquire_removes_the_parents_it_created)
{
    zkl_client *c = world_and(ZKL_PERM_READ, "ip", "10.9.9.9");
    zkl_mutex *m = tu_test_mutex(c, tu_test_path("async/out/lock"));
    struct tu_heard h = {0};
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 5000, tu_heard_fn, &h, &r), 0);
    ck_assert(tu_wait_until(tu_heard_once, &h, 20000));
    ck_assert_int_eq(tu_heard_result(&h), ZKL_ENOAUTH);
    ck_assert_int_eq(tu_children(tu_fixture_zk, tu_fixture_root), 0);
    zkl_request_free(r);
}
END_TEST

/* A multi-lock whose first member holds (its lock path exists, open to
 * all) and whose second is refused: the first is given back, and the
 * parents the second made go before the callback hears. */
START_TEST(test_a_refused_multilock_member_removes_the_parents_it_created)
{
    char *ml = tu_test_path("ml"), *first = tu_test_path("ml/first");
    char *second = tu_test_path("ml/second/lock");
    ck_assert_int_eq(zoo_create(tu_fixture_zk, ml, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    ck_assert_int_eq(zoo_create(tu_fixture_zk, first, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                     ZOK);
    zkl_client *c = world_and(ZKL_PERM_READ, "ip", "10.9.9.9");
    const char *paths[] = {first, second};
    zkl_multilock *l;
    ck_assert_int_eq(zkl_multilock_new(c, paths, 2, &l), 0);
    struct tu_heard h = {0};
    zkl_request *r;
    ck_assert_int_eq(zkl_multilock_acquire_async(l, 5000, tu_heard_fn, &h, &r), 0);
    ck_assert(tu_wait_until(tu_heard_once, &h, 20000));
    ck_assert_int_eq(tu_heard_result(&h), ZKL_ENOAUTH);
    ck_assert_int_eq(tu_children(tu_fixture_zk, ml), 1); /* "first" only */
    ck_assert(tu_wait_children(tu_fixture_zk, first, 0, 20000));
    zkl_request_free(r);
    zkl_multilock_free(l);
}
END_TEST

/* A latch refused its node: await says so, with nothing left behind. */
START_TEST(test_a_refused_latch_removes_the_parents_it_created)
{
    zkl_client *c = world_and(ZKL_PERM_READ, "ip", "10.9.9.9");
    zkl_latch *l;
    ck_assert_int_eq(zkl_latch_new(c, tu_test_path("latch/out/election"), "a", &l), 0);
    ck_assert_int_eq(zkl_latch_start(l), 0);
    ck_assert_int_eq(zkl_latch_await(l, 20000), ZKL_ENOAUTH);
    ck_assert_int_eq(tu_children(tu_fixture_zk, tu_fixture_root), 0);
    zkl_latch_free(l);
}
END_TEST

/* An outsider that creates a node under the parent the refused acquire
 * made, before that acquire deletes it: the delete is refused as not
 * empty, the parent stays, the acquire fails for its own reason only. The
 * order is made, not raced for: the client's table (the seam below the
 * session) lets the outsider (the fixture, authenticated as alice) create
 * its node under the parent just before it sends the parent's delete. */
static struct {
    const char *parent; /* the delete to hold back */
    char child[256];    /* the outsider's node under it */
    int created;        /* the outsider's create's answer */
    int deletes;        /* the parent's deletes sent */
} outsider;

static int outsider_first_adelete(zhandle_t *zh, const char *path, int version,
                                  void_completion_t done, const void *data)
{
    /* Sent with the client's lock held, maybe on its completion thread: a
     * blocking call on another handle waits for nothing of this one's. */
    if (strcmp(path, outsider.parent) == 0 &&
        __atomic_fetch_add(&outsider.deletes, 1, __ATOMIC_SEQ_CST) == 0)
        __atomic_store_n(&outsider.created,
                         zoo_create(tu_fixture_zk, outsider.child, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0,
                                    NULL, 0),
                         __ATOMIC_SEQ_CST);
    return zkl__zapi_real.adelete(zh, path, version, done, data);
}

START_TEST(test_a_parent_an_outsider_uses_meanwhile_stays)
{
    /* The outsider may create under the parents; the client may not. */
    struct zkl__zapi z = zkl__zapi_real;
    z.adelete = outsider_first_adelete;
    zkl_client_opts *co;
    ck_assert_int_eq(zkl_client_opts_new(&co), 0);
    zkl__client_opts_set_zapi(co, &z);
    ck_assert_int_eq(zkl_client_opts_add_acl(co, "world", "anyone", ZKL_PERM_READ), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(co, "ip", "10.9.9.9", ZKL_PERM_ALL), 0);
    ck_assert_int_eq(zkl_client_opts_add_acl(co, "digest", ALICE_ID, ZKL_PERM_ALL), 0);
    zkl_client *c = NULL;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, co, &c), 0);
    zkl_client_opts_free(co);
    char *p = tu_path("race/lock");
    char *dir = tu_path("race"); /* made; the server refuses the create below it */
    outsider.parent = dir;
    outsider.created = 1;
    snprintf(outsider.child, sizeof outsider.child, "%s/outsider", dir);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), ZKL_ENOAUTH);
    ck_assert_int_eq(zkl_last_zk_error(), ZNOAUTH);
    ck_assert_msg(strstr(zkl_last_error_text(), "stays") == NULL, "%s", zkl_last_error_text());
    zkl_mutex_free(m);
    /* The outsider came first; the one delete, refused, was not tried
     * again, and its node and the parent stay. */
    ck_assert_int_eq(__atomic_load_n(&outsider.created, __ATOMIC_SEQ_CST), ZOK);
    ck_assert_int_eq(__atomic_load_n(&outsider.deletes, __ATOMIC_SEQ_CST), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, dir), 1);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, outsider.child, -1), ZOK);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, dir, -1), ZOK);
    ck_assert_int_eq(tu_children(tu_fixture_zk, tu_fixture_root), 0);
    zkl_client_close(c);
    free(dir);
    free(p);
}
END_TEST

START_TEST(test_tls_and_sasl_settings_without_support_are_enotsup)
{
#if defined(HAVE_ZOOKEEPER_INIT_SSL) || defined(HAVE_ZOOKEEPER_INIT_SASL)
    /* A build on a client with TLS and SASL: check_secure tests them. */
    ck_assert_int_eq(zkl_client_opts_set_tls(NULL, "a", "b", "c", NULL), ZKL_EINVAL);
#else
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_tls(o, "ca.pem", "c.pem", "c.key", NULL), ZKL_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(zkl_last_error_text(), "--with-zookeeper"));
    ck_assert_int_eq(zkl_client_opts_set_sasl(o, "DIGEST-MD5", "alice", "pw"), ZKL_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(zkl_last_error_text(), "--with-zookeeper"));
    /* The options are as before: the client opens without either. */
    zkl_client *c = NULL;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), 0);
    zkl_client_close(c);
    zkl_client_opts_free(o);
#endif
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_created_parents_and_contenders_carry_the_acl_entries,
        test_two_identities_share_a_tree_and_a_third_is_kept_out,
        test_bad_acl_entries_are_einval_with_a_reason,
        test_entries_that_shut_the_client_out_are_refused_at_open,
        test_an_acl_the_server_refuses_is_einval_with_a_text,
        test_a_refused_acquire_removes_the_parents_it_created,
        test_a_refused_async_acquire_removes_the_parents_it_created,
        test_a_refused_multilock_member_removes_the_parents_it_created,
        test_a_refused_latch_removes_the_parents_it_created,
        test_a_parent_an_outsider_uses_meanwhile_stays,
        test_tls_and_sasl_settings_without_support_are_enotsup,
        NULL,
    };
    return tu_run_case("acl", 60, setup, teardown, tests);
}
