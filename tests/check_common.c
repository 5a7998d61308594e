/* What every recipe does alike, tested once over a table of recipes
 * (tests/common_recipes.c): mutex, mutex with prefetch, semaphore-mutex, a
 * semaphore's lease of several, either side of the read-write lock and a
 * multi-lock, each through its zkl_lock handle. One test case per recipe,
 * named after it, so a failure says which recipe broke. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common_recipes.h"
#include "testutil.h"
#include "zkl/zookeeper.h"

/* Long enough that an answer within it cannot come from the session
 * expiring: the cancel or the close itself must have ended the wait (its
 * code says so too: an expiry would be ZKL_ELOST). */
#define WAITER_SESSION_MS 30000
#define PROMPT_MS 10000
/* The sessions of the expiry tests: tu_expire_session ends them at once,
 * whatever their timeout, so a long one costs no time, and a process
 * stalled under valgrind on a loaded machine does not lose one by itself
 * while it acquires. */
#define EXPIRY_SESSION_MS 20000

/* ---- data ------------------------------------------------------------------ */

/* A data node for guarded writes, "0" to begin with. */
static char *make_data_node(void)
{
    char *data = tu_path("data");
    ck_assert(zoo_create(tu_fixture_zk, tu_fixture_root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                         0) == ZOK ||
              tu_exists(tu_fixture_zk, tu_fixture_root));
    ck_assert_int_eq(zoo_create(tu_fixture_zk, data, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                     ZOK);
    return data;
}

static char data_byte(const char *data)
{
    char buf[8];
    int len = sizeof buf;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, data, 0, buf, &len, NULL), ZOK);
    ck_assert_int_eq(len, 1);
    return buf[0];
}

/* ---- waiting ----------------------------------------------------------------- */

static bool not_held(void *arg)
{
    return zkl_lock_is_held(((struct obj *)arg)->lock) == 0;
}

static void wait_lost_calls(struct lost_log *l, int n)
{
    int64_t end = tu_now_ms() + tu_ms(PROMPT_MS);
    while (tu_now_ms() < end && lost_calls(l) < n)
        usleep(2000);
}

/* Most tests are a contest: a hold on client a, of the row that blocks
 * row `row` (a writer for a reader), and a contender of row `row` on
 * client b, on one lock path. */
struct contest {
    char *p;
    zkl_client *a, *b;
    struct obj h, w;
    int base;      /* the holder's nodes */
    int64_t token; /* the holder's token; 0 if the recipe has none */
    struct tu_acquirer wt;
};

static void contest_open(struct contest *t, int row, const char *leaf, int b_session_ms)
{
    t->p = tu_path(leaf);
    t->a = tu_client(10000);
    t->b = tu_client(b_session_ms);
    obj_open(&t->h, recipes[row].blocker, t->a, t->p);
    ck_assert_int_eq(zkl_lock_acquire(t->h.lock, 5000), 0);
    t->base = t->h.r->hold_nodes;
    tu_expect_contenders(t->p, t->base);
    t->token = t->h.r->token ? t->h.r->token(&t->h) : 0;
    obj_open(&t->w, row, t->b, t->p);
}

/* The contender acquires in a thread of its own; returns once it queued. */
static void contest_wait(struct contest *t, long timeout_ms)
{
    tu_acquirer_start(&t->wt, t->w.lock, timeout_ms, false);
    tu_wait_contenders_above(t->p, t->base);
}

/* The holder was not disturbed: it holds with its token and nodes. */
static void contest_holder_untouched(struct contest *t)
{
    ck_assert_int_eq(tu_contenders(t->p), t->base);
    ck_assert_int_eq(zkl_lock_is_held(t->h.lock), 1);
    if (t->h.r->token)
        ck_assert_int_eq(t->h.r->token(&t->h), t->token);
}

/* Free what is left (the contender's object and client unless closed
 * already, marked by NULL), and check that nothing stays on the server. */
static void contest_close(struct contest *t)
{
    tu_expect_contenders(t->p, 0);
    if (t->w.lock != NULL)
        obj_close(&t->w);
    obj_close(&t->h);
    zkl_client_close(t->a);
    zkl_client_close(t->b);
    free(t->p);
}

/* The end of most contests: the holder was not disturbed; it lets go, and
 * nothing stays. */
static void contest_end(struct contest *t)
{
    contest_holder_untouched(t);
    ck_assert_int_eq(zkl_lock_release(t->h.lock), 0);
    contest_close(t);
}

/* A test's one object of row `row`, on a path and a client of its own (both
 * released after the test); the path is returned. */
static char *solo_open(struct obj *o, int row, const char *leaf, int session_ms)
{
    char *p = tu_test_path(leaf);
    obj_open(o, row, tu_test_client(session_ms), p);
    return p;
}

/* ---- acquire timeout ------------------------------------------------------------- */

START_TEST(test_try_and_timeout_when_held_elsewhere_leave_no_node)
{
    const struct recipe *r = &recipes[_i];
    struct contest t;
    contest_open(&t, _i, "timeout", 10000);
    /* try once */
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_lock_acquire(t.w.lock, 0), ZKL_ETIMEDOUT);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(2000));
    ck_assert_int_eq(tu_contenders(t.p), t.base);
    /* a timeout bounds the call, and its node is gone when it returns (the
     * holder holds on: nothing else could end the wait; the bound stretched
     * for the round trips of its node's create and delete) */
    t0 = tu_now_ms();
    ck_assert_int_eq(zkl_lock_acquire(t.w.lock, 300), ZKL_ETIMEDOUT);
    int64_t took = tu_now_ms() - t0;
    ck_assert_int_ge(took, 290);
    ck_assert_int_lt(took, 300 + tu_ms(2700));
    ck_assert_int_eq(tu_contenders(t.p), t.base);
    ck_assert_int_eq(zkl_lock_is_held(t.w.lock), 0);
    if (r->object_survives_release)
        ck_assert_int_eq(zkl_lock_release(t.w.lock), ZKL_ENOTHELD);
    /* the holder is not disturbed, and the waiter gets in afterwards */
    contest_holder_untouched(&t);
    ck_assert_int_eq(zkl_lock_release(t.h.lock), 0); /* returns once the node is gone */
    ck_assert_int_eq(zkl_lock_acquire(t.w.lock, 0), 0);
    ck_assert_int_eq(zkl_lock_release(t.w.lock), 0);
    contest_close(&t);
}
END_TEST

/* ---- session expiry ------------------------------------------------------------- */

START_TEST(test_session_expiry_loses_the_hold_and_tells_once)
{
    const struct recipe *r = &recipes[_i];
    char *data = make_data_node();
    struct obj o;
    char *p = solo_open(&o, _i, "expired", EXPIRY_SESSION_MS);
    struct lost_log l = {.mu = PTHREAD_MUTEX_INITIALIZER, .expect = o.self};
    if (r->set_lost)
        ck_assert_int_eq(r->set_lost(&o, &l), 0);
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    if (r->reentrant)
        ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0); /* depth 2 */
    int64_t token = r->token ? r->token(&o) : 0;
    if (r->token)
        ck_assert_int_gt(token, 0);
    if (r->guarded_set)
        ck_assert_int_eq(r->guarded_set(&o, data, "1", 1), 0);
    int64_t old_sid = tu_client_session_id(o.c);
    tu_expire_session(o.c);
    ck_assert(tu_wait_until(not_held, &o, 15000));
    if (r->set_lost) {
        wait_lost_calls(&l, 1);
        ck_assert_int_eq(lost_calls(&l), 1);
        ck_assert_int_eq(lost_token(&l), token);
        ck_assert_int_eq(l.wrong_obj, 0);
        ck_assert_int_eq(l.write, r->lost_write);
    }
    if (r->token)
        ck_assert_int_eq(r->token(&o), ZKL_ELOST);
    if (r->guarded_set) {
        ck_assert_int_eq(r->guarded_set(&o, data, "2", 1), ZKL_ELOST);
        ck_assert_int_eq(data_byte(data), '1');
    }
    if (r->lost_refuses_acquire)
        ck_assert_int_eq(zkl_lock_acquire(o.lock, 1000), ZKL_ELOST); /* release it first */
    ck_assert_int_eq(zkl_lock_release(o.lock), ZKL_ELOST); /* clears it, whatever the depth */
    if (r->object_survives_release)
        ck_assert_int_eq(zkl_lock_release(o.lock), ZKL_ENOTHELD);
    /* The client opens a new session by itself; new work goes on. */
    ck_assert(tu_wait_until(tu_client_connected, o.c, 15000));
    ck_assert_int_ne(tu_client_session_id(o.c), old_sid);
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    ck_assert_int_eq(zkl_lock_release(o.lock), 0);
    tu_expect_contenders(p, 0);
    if (r->set_lost) {
        ck_assert_int_eq(lost_calls(&l), 1);
        ck_assert_int_eq(r->set_lost(&o, NULL), 0);
    }
    obj_close(&o);
    free(data);
}
END_TEST

START_TEST(test_waiter_gets_elost_on_expiry_and_leaves_no_node)
{
    struct contest t;
    contest_open(&t, _i, "waitexpire", EXPIRY_SESSION_MS);
    contest_wait(&t, 60000);
    tu_expire_session(t.b);
    ck_assert_int_eq(tu_acquirer_join(&t.wt), ZKL_ELOST);
    ck_assert_int_eq(zkl_lock_is_held(t.w.lock), 0);
    contest_end(&t);
}
END_TEST

/* ---- lost callback ------------------------------------------------------------ */

START_TEST(test_lost_callback_is_told_once_per_lost_hold_until_removed)
{
    const struct recipe *r = &recipes[_i];
    struct obj o;
    solo_open(&o, _i, "lostcb", EXPIRY_SESSION_MS);
    struct lost_log l = {.mu = PTHREAD_MUTEX_INITIALIZER, .expect = o.self};
    ck_assert_int_eq(r->set_lost(&o, &l), 0);
    ck_assert_int_eq(r->set_lost(&o, &l), 0); /* replacing is fine */
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    int64_t t1 = r->token(&o);
    tu_expire_session(o.c);
    ck_assert(tu_wait_until(not_held, &o, 30000));
    wait_lost_calls(&l, 1);
    ck_assert_int_eq(lost_calls(&l), 1);
    ck_assert_int_eq(lost_token(&l), t1);
    ck_assert_int_eq(zkl_lock_release(o.lock), ZKL_ELOST);
    /* A hold of the client's next session, lost again: told once more. */
    ck_assert(tu_wait_until(tu_client_connected, o.c, 30000));
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    int64_t t2 = r->token(&o);
    ck_assert_int_gt(t2, t1);
    tu_expire_session(o.c);
    ck_assert(tu_wait_until(not_held, &o, 30000));
    wait_lost_calls(&l, 2);
    ck_assert_int_eq(lost_calls(&l), 2);
    ck_assert_int_eq(lost_token(&l), t2);
    ck_assert_int_eq(l.wrong_obj, 0);
    ck_assert_int_eq(zkl_lock_release(o.lock), ZKL_ELOST);
    /* Removed, the callback is not called any more. */
    ck_assert_int_eq(r->set_lost(&o, NULL), 0);
    ck_assert(tu_wait_until(tu_client_connected, o.c, 30000));
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    tu_expire_session(o.c);
    ck_assert(tu_wait_until(not_held, &o, 30000));
    ck_assert_int_eq(zkl_lock_release(o.lock), ZKL_ELOST);
    ck_assert(tu_wait_until(tu_client_connected, o.c, 30000));
    ck_assert_int_eq(lost_calls(&l), 2);
    obj_close(&o);
}
END_TEST

/* ---- guarded write ------------------------------------------------------------- */

START_TEST(test_guarded_write_only_while_held)
{
    const struct recipe *r = &recipes[_i];
    char *data = make_data_node();
    struct obj o;
    char *p = solo_open(&o, _i, "guarded", 10000);
    /* Before a hold (a lease only exists once granted). */
    if (r->object_survives_release)
        ck_assert_int_eq(r->guarded_set(&o, data, "x", 1), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    ck_assert_int_eq(r->guarded_set(&o, data, "1", 1), 0);
    ck_assert_int_eq(data_byte(data), '1');
    /* Someone else deletes the hold's node: the hold is lost, and the
     * server refuses the write. */
    ck_assert_int_eq(tu_delete_contenders(p), r->hold_nodes);
    ck_assert(tu_wait_until(not_held, &o, 15000));
    ck_assert_int_eq(r->guarded_set(&o, data, "2", 1), ZKL_ELOST);
    ck_assert_int_eq(data_byte(data), '1');
    ck_assert_int_eq(zkl_lock_release(o.lock), ZKL_ELOST);
    if (r->object_survives_release)
        ck_assert_int_eq(r->guarded_set(&o, data, "3", 1), ZKL_ENOTHELD);
    ck_assert_int_eq(data_byte(data), '1');
    obj_close(&o);
    free(data);
}
END_TEST

/* ---- another thread ------------------------------------------------------------ */

struct other {
    struct obj *o;
    const char *data;
    int held, rel, gset;
    int64_t token;
    const char *node;
};

static void *other_main(void *arg)
{
    struct other *t = arg;
    const struct recipe *r = t->o->r;
    t->held = zkl_lock_is_held(t->o->lock);
    t->token = r->token ? r->token(t->o) : 0;
    t->node = r->node ? r->node(t->o) : NULL;
    t->gset = r->guarded_set ? r->guarded_set(t->o, t->data, "t", 1) : 0;
    /* Per object, another thread could release: not here. */
    t->rel = r->per_thread ? zkl_lock_release(t->o->lock) : 0;
    return NULL;
}

START_TEST(test_another_thread_sees_the_hold_as_documented)
{
    const struct recipe *r = &recipes[_i];
    char *data = make_data_node();
    struct obj o;
    char *p = solo_open(&o, _i, "wrongthread", 10000);
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    int64_t token = r->token ? r->token(&o) : 0;
    struct other t = {.o = &o, .data = data};
    pthread_t th;
    pthread_create(&th, NULL, other_main, &t);
    pthread_join(th, NULL);
    if (r->per_thread) {
        /* The hold is the acquiring thread's: nothing changes. */
        ck_assert_int_eq(t.held, 0);
        ck_assert_int_eq(t.rel, ZKL_ENOTHELD);
        if (r->token)
            ck_assert_int_eq(t.token, ZKL_ENOTHELD);
        ck_assert_ptr_null(t.node);
        if (r->guarded_set) {
            ck_assert_int_eq(t.gset, ZKL_ENOTHELD);
            ck_assert_int_eq(data_byte(data), '0');
        }
    } else {
        /* The hold is the object's, whichever thread asks. */
        ck_assert_int_eq(t.held, 1);
        ck_assert_int_eq(t.token, token);
        if (r->node)
            ck_assert_str_eq(t.node, r->node(&o));
        ck_assert_int_eq(t.gset, 0);
        ck_assert_int_eq(data_byte(data), 't');
    }
    ck_assert_int_eq(zkl_lock_is_held(o.lock), 1);
    ck_assert_int_eq(tu_contenders(p), r->hold_nodes);
    ck_assert_int_eq(zkl_lock_release(o.lock), 0);
    tu_expect_contenders(p, 0);
    obj_close(&o);
    free(data);
}
END_TEST

/* ---- cancel --------------------------------------------------------------------- */

START_TEST(test_cancel_wakes_a_waiter_and_later_acquires_send_nothing)
{
    struct contest t;
    contest_open(&t, _i, "cancel", WAITER_SESSION_MS);
    contest_wait(&t, ZKL_WAIT_FOREVER);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_client_cancel(t.b), 0);
    ck_assert_int_eq(tu_acquirer_join(&t.wt), ZKL_ECANCELED);
    ck_assert_int_lt(t.wt.returned_ms - t0, tu_ms(PROMPT_MS));
    /* Its node went before the acquire returned; the holder is untouched. */
    contest_holder_untouched(&t);
    ck_assert_int_eq(zkl_client_state(t.b), ZKL_STATE_CONNECTED);
    /* Later acquires on b fail at once and send nothing, also on a free
     * lock and with no timeout. */
    ck_assert_int_eq(zkl_lock_release(t.h.lock), 0);
    tu_expect_contenders(t.p, 0);
    zkl_client_stats before, after;
    ck_assert_int_eq(zkl_client_get_stats(t.b, &before), 0);
    ck_assert_int_eq(zkl_lock_acquire(t.w.lock, 0), ZKL_ECANCELED);
    ck_assert_int_eq(zkl_lock_acquire(t.w.lock, ZKL_WAIT_FOREVER), ZKL_ECANCELED);
    ck_assert_int_eq(zkl_lock_is_held(t.w.lock), 0);
    if (t.w.r->object_survives_release)
        ck_assert_int_eq(zkl_lock_release(t.w.lock), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_client_get_stats(t.b, &after), 0);
    ck_assert_uint_eq(after.creates, before.creates);
    ck_assert_uint_eq(after.requests, before.requests);
    ck_assert_int_eq(tu_contenders(t.p), 0);
    /* Another client is not affected. */
    ck_assert_int_eq(zkl_lock_acquire(t.h.lock, 0), 0);
    ck_assert_int_eq(zkl_lock_release(t.h.lock), 0);
    contest_close(&t);
}
END_TEST

/* ---- closed client ------------------------------------------------------------- */

START_TEST(test_closing_the_client_wakes_a_waiter_with_eclosed)
{
    struct contest t;
    contest_open(&t, _i, "closed", WAITER_SESSION_MS);
    contest_wait(&t, ZKL_WAIT_FOREVER);
    int64_t t0 = tu_now_ms();
    zkl_client_close(t.b);
    t.b = NULL;
    ck_assert_int_eq(tu_acquirer_join(&t.wt), ZKL_ECLOSED);
    ck_assert_int_lt(t.wt.returned_ms - t0, tu_ms(PROMPT_MS));
    ck_assert_int_eq(tu_contenders(t.p), t.base);
    /* The object outlives its client: its calls say so, and it may be
     * freed. */
    ck_assert_int_eq(zkl_lock_acquire(t.w.lock, 0), ZKL_ECLOSED);
    ck_assert_int_eq(zkl_lock_is_held(t.w.lock), 0);
    obj_close(&t.w);
    t.w.lock = NULL;
    contest_end(&t);
}
END_TEST

START_TEST(test_closing_the_client_ends_its_holds)
{
    const struct recipe *r = &recipes[_i];
    char *p = tu_test_path("closedhold");
    zkl_client *c = tu_client(10000);
    struct obj o;
    obj_open(&o, _i, c, p);
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    zkl_client_close(c);
    /* The session's nodes went with it. */
    tu_expect_contenders(p, 0);
    ck_assert_int_eq(zkl_lock_is_held(o.lock), 0);
    if (r->token)
        ck_assert_int_eq(r->token(&o), ZKL_ELOST);
    if (r->lost_refuses_acquire)
        ck_assert_int_eq(zkl_lock_acquire(o.lock, 1000), ZKL_ELOST); /* release it first */
    ck_assert_int_eq(zkl_lock_release(o.lock), ZKL_ECLOSED);
    obj_close(&o); /* the last object frees the client */
}
END_TEST

/* ---- bad input ---------------------------------------------------------------- */

START_TEST(test_bad_input_is_einval_and_creates_nothing)
{
    const struct recipe *r = &recipes[_i];
    zkl_client *c = tu_test_client(10000);
    const char *bad[] = {NULL,     "",        "relative",     "/ends/",    "/a//b",
                         "/a/./b", "/a/../b", "/zookeeper/x", "/zookeeper"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(r->try_new(c, bad[i], false) == ZKL_EINVAL, "path '%s'",
                      bad[i] ? bad[i] : "(null)");
    char longp[1100];
    longp[0] = '/';
    memset(longp + 1, 'a', sizeof longp - 2);
    longp[sizeof longp - 1] = '\0';
    ck_assert_int_eq(r->try_new(c, longp, false), ZKL_EINVAL);
    char *p = tu_test_path("bad");
    ck_assert_int_eq(r->try_new(NULL, p, false), ZKL_EINVAL);
    ck_assert_int_eq(r->try_new(c, p, true), ZKL_EINVAL);
    r->null_calls();
    zkl_lock_free(NULL);
    /* Nothing reached the server. */
    zkl_client_stats st;
    ck_assert_int_eq(zkl_client_get_stats(c, &st), 0);
    ck_assert_uint_eq(st.requests, 0);
    ck_assert_uint_eq(st.creates, 0);
    ck_assert(!tu_exists(tu_fixture_zk, "/ends"));
    ck_assert(!tu_exists(tu_fixture_zk, "/a"));
    ck_assert(!tu_exists(tu_fixture_zk, "/relative"));
    ck_assert(!tu_exists(tu_fixture_zk, "/x"));
    ck_assert(!tu_exists(tu_fixture_zk, p));
    /* A good object, bad arguments: refused before anything is sent. */
    struct obj o;
    obj_open(&o, _i, c, p);
    zkl_client_stats before, after;
    ck_assert_int_eq(zkl_client_get_stats(c, &before), 0);
    r->bad_args(&o);
    ck_assert_int_eq(zkl_client_get_stats(c, &after), 0);
    ck_assert_uint_eq(after.requests, before.requests);
    ck_assert_int_eq(tu_contenders(p), 0);
    /* A second release is refused and changes nothing. */
    ck_assert_int_eq(zkl_lock_acquire(o.lock, 5000), 0);
    ck_assert_int_eq(zkl_lock_release(o.lock), 0);
    if (r->object_survives_release)
        ck_assert_int_eq(zkl_lock_release(o.lock), ZKL_ENOTHELD);
    tu_expect_contenders(p, 0);
    obj_close(&o);
}
END_TEST

START_TEST(test_client_bad_input_is_einval)
{
    zkl_client *bc = NULL;
    ck_assert_int_eq(zkl_client_open(NULL, 1000, &bc), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_open("", 1000, &bc), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_open(tu_hosts(), 0, &bc), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_open(tu_hosts(), 1000, NULL), ZKL_EINVAL);
    ck_assert_ptr_null(bc);
    zkl_client_close(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tu_tcase("client", 30);
    tu_add_fixture(tc, "common");
    tcase_add_test(tc, test_client_bad_input_is_einval);
    suite_add_tcase(s, tc);
    for (int i = 0; i < R_COUNT; i++) {
        const struct recipe *r = &recipes[i];
        tc = tu_tcase(r->name, 120);
        tu_add_fixture(tc, "common");
        tu_add_row(tc, test_try_and_timeout_when_held_elsewhere_leave_no_node, i);
        tu_add_row(tc, test_session_expiry_loses_the_hold_and_tells_once, i);
        tu_add_row(tc, test_waiter_gets_elost_on_expiry_and_leaves_no_node, i);
        if (r->set_lost) /* a multi-lock has none: its members have theirs */
            tu_add_row(tc, test_lost_callback_is_told_once_per_lost_hold_until_removed, i);
        if (r->guarded_set) /* a reader's guarded writes are the writer's */
            tu_add_row(tc, test_guarded_write_only_while_held, i);
        tu_add_row(tc, test_another_thread_sees_the_hold_as_documented, i);
        tu_add_row(tc, test_cancel_wakes_a_waiter_and_later_acquires_send_nothing, i);
        tu_add_row(tc, test_closing_the_client_wakes_a_waiter_with_eclosed, i);
        if (i != R_LEASE) /* leases are released before their client closes */
            tu_add_row(tc, test_closing_the_client_ends_its_holds, i);
        tu_add_row(tc, test_bad_input_is_einval_and_creates_nothing, i);
        suite_add_tcase(s, tc);
    }
    return tu_run(s);
}
