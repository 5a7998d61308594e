/* What every recipe's asynchronous acquire does alike, tested once over a
 * table of recipes (tests/async_recipes.c): mutex, semaphore-mutex, either
 * side of the read-write lock, a semaphore's lease and a multi-lock.
 * Delivery on the client's thread and by descriptor, cancel at every stage,
 * timeouts, session loss while queued and while held, release from another
 * thread, a request freed in its callback and while pending, a close with
 * requests pending, blocking acquires cancelled one by one with cancel
 * handles, bad arguments. One test case per recipe, named after it; each
 * test checks that no node is left behind. What only one recipe does:
 * check_async_more. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "async_recipes.h"

/* A row's object on client c, and maybe a holder that blocks it on client
 * h (on the lock path, or the member the row names), on one lock path. */
struct line {
    char *p, *bp; /* the lock path, and the one the holder holds */
    zkl_client *h, *c;
    struct aobj hold, obj;
    int wait_nodes; /* a queued request's nodes: a multi-lock holds one
                       member and waits for the next */
    int hold_nodes; /* a held request's */
};

static void line_hold(struct line *t)
{
    const struct arow *r = t->obj.r;
    t->h = tu_client(10000);
    aobj_open(&t->hold, r->blocker, t->h, t->bp);
    aobj_acquire(&t->hold, 5000);
    tu_expect_contenders(t->p, 1);
}

static void line_open(struct line *t, int row, const char *leaf, bool holder)
{
    memset(t, 0, sizeof *t);
    t->p = tu_path(leaf);
    const char *bl = arows[row].blocker_leaf ? arows[row].blocker_leaf : "";
    t->bp = malloc(strlen(t->p) + strlen(bl) + 1);
    ck_assert_ptr_nonnull(t->bp);
    strcat(strcpy(t->bp, t->p), bl);
    t->wait_nodes = row == A_MULTI ? 2 : 1;
    t->hold_nodes = row == A_MULTI ? 3 : 1;
    t->c = tu_client(10000);
    aobj_open(&t->obj, row, t->c, t->p);
    if (holder)
        line_hold(t);
}

static void line_release_holder(struct line *t)
{
    ck_assert_int_eq(t->hold.r->release(&t->hold), 0);
}

/* Free what is left (the client c unless closed already, marked by NULL),
 * and check that nothing stays on the server. */
static void line_close(struct line *t)
{
    tu_expect_contenders(t->p, 0);
    aobj_close(&t->obj);
    if (t->h != NULL) {
        aobj_close(&t->hold);
        zkl_client_close(t->h);
    }
    zkl_client_close(t->c);
    free(t->bp);
    free(t->p);
}

/* A request of `o` whose callback records into `s` (made fresh here):
 * how most tests start one. */
static zkl_request *aobj_start(struct aobj *o, long timeout_ms, struct res *s)
{
    res_init(s);
    zkl_request *r;
    ck_assert_int_eq(o->r->start(o, timeout_ms, on_done, s, &r), 0);
    return r;
}

/* The client's event descriptor: delivery by descriptor from here on. */
static int line_fd(struct line *t)
{
    int fd;
    ck_assert_int_eq(zkl_client_event_fd(t->c, &fd), 0);
    return fd;
}

static void counts_are(struct line *t, const char *path, uint64_t acquired, uint64_t releases)
{
    zkl_metrics pm = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(t->c, path, &pm), 0);
    ck_assert_uint_eq(pm.acquired, acquired);
    ck_assert_uint_eq(pm.releases, releases);
}

/* ---- grant and release ---------------------------------------------------- */

START_TEST(test_a_request_is_held_on_the_client_thread_then_released)
{
    struct line t;
    line_open(&t, _i, "basic", false);
    struct res s;
    zkl_request *r = aobj_start(&t.obj, 5000, &s);
    ck_assert_int_eq(wait_result(&s), 0);
    ck_assert_ptr_eq(s.r, r);
    ck_assert(!pthread_equal(s.thread, pthread_self())); /* the keeper's */
    ck_assert_int_eq(zkl_request_is_held(r), 1);
    int64_t tok = 0;
    ck_assert_int_eq(zkl_request_token(r, &tok), 0);
    ck_assert(tok > 0);
    const char *node = zkl_request_node(r);
    ck_assert_ptr_nonnull(node);
    ck_assert_int_eq(strncmp(node, t.obj.node_path, strlen(t.obj.node_path)), 0);
    tu_expect_contenders(t.p, t.hold_nodes);
    /* Not a thread's or the object's hold: the blocking side knows nothing
     * of it. */
    if (t.obj.lock != NULL) {
        ck_assert_int_eq(zkl_lock_is_held(t.obj.lock), 0);
        ck_assert_int_eq(zkl_lock_release(t.obj.lock), ZKL_ENOTHELD);
    }
    ck_assert_int_eq(zkl_request_cancel(r), ZKL_EBUSY);
    ck_assert_int_eq(zkl_request_release(r), 0);
    ck_assert_int_eq(zkl_request_release(r), ZKL_ENOTHELD); /* twice */
    ck_assert_int_eq(zkl_request_is_held(r), 0);
    ck_assert_int_eq(zkl_request_token(r, &tok), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_request_cancel(r), ZKL_EINVAL);
    tu_expect_contenders(t.p, 0);
    ck_assert_int_eq(calls_of(&s), 1);
    /* The metrics count the request as one attempt, acquired, released
     * (a multi-lock's on each member). */
    for (const char *const *cp = t.obj.counted; *cp != NULL; cp++) {
        zkl_metrics pm = {.version = ZKL_METRICS_VERSION};
        ck_assert_int_eq(zkl_client_path_metrics(t.c, *cp, &pm), 0);
        ck_assert_uint_eq(pm.acquired, 1);
        ck_assert_uint_eq(pm.releases, 1);
        ck_assert_uint_eq(pm.wait.count, 1);
        ck_assert_uint_eq(pm.hold.count, 1);
    }
    zkl_request_free(r);
    line_close(&t);
}
END_TEST

static void *release_main(void *arg)
{
    return (void *)(intptr_t)zkl_request_release(arg);
}

START_TEST(test_a_request_is_released_from_another_thread)
{
    struct line t;
    line_open(&t, _i, "other", false);
    struct res s;
    zkl_request *r = aobj_start(&t.obj, 5000, &s);
    ck_assert_int_eq(wait_result(&s), 0);
    pthread_t th;
    void *rc;
    ck_assert_int_eq(pthread_create(&th, NULL, release_main, r), 0);
    ck_assert_int_eq(pthread_join(th, &rc), 0);
    ck_assert_int_eq((int)(intptr_t)rc, 0);
    tu_expect_contenders(t.p, 0);
    zkl_request_free(r);
    line_close(&t);
}
END_TEST

/* By descriptor: callbacks run in zkl_client_dispatch, on this thread; one
 * that frees its request there releases what it holds. */
START_TEST(test_delivery_by_descriptor_runs_callbacks_in_dispatch)
{
    struct line t;
    line_open(&t, _i, "fd", false);
    int fd, fd2;
    ck_assert_int_eq(zkl_client_event_fd(t.c, &fd), 0);
    ck_assert_int_eq(zkl_client_event_fd(t.c, &fd2), 0);
    ck_assert_int_eq(fd, fd2);
    ck_assert_int_eq(zkl_client_dispatch(t.c), 0); /* nothing yet */
    struct res s, f;
    res_init(&s);
    res_init(&f);
    f.free_in_cb = true;
    zkl_request *r, *rf;
    ck_assert_int_eq(t.obj.r->start(&t.obj, 5000, on_done, &s, &r), 0);
    ck_assert(fd_readable(fd, PROMPT_MS));
    ck_assert_int_eq(calls_of(&s), 0); /* only dispatch runs it */
    ck_assert_int_eq(zkl_client_dispatch(t.c), 1);
    ck_assert_int_eq(calls_of(&s), 1);
    ck_assert_int_eq(s.result, 0);
    ck_assert(pthread_equal(s.thread, pthread_self()));
    ck_assert(!fd_readable(fd, 0));
    zkl_request_free(r); /* held: released */
    tu_expect_contenders(t.p, 0);
    ck_assert_int_eq(t.obj.r->start(&t.obj, 5000, on_done, &f, &rf), 0);
    dispatch_until_called(t.c, fd, &f);
    ck_assert_int_eq(f.result, 0);
    tu_expect_contenders(t.p, 0);
    for (const char *const *cp = t.obj.counted; *cp != NULL; cp++)
        counts_are(&t, *cp, 2, 2);
    line_close(&t);
}
END_TEST

/* ---- cancel --------------------------------------------------------------- */

/* By descriptor, so that no callback can run before the cancel. */
START_TEST(test_cancel_right_after_start)
{
    struct line t;
    line_open(&t, _i, "early", false);
    int fd = line_fd(&t);
    for (int i = 0; i < 20; i++) {
        struct res s;
        zkl_request *r = aobj_start(&t.obj, 5000, &s);
        ck_assert_int_eq(zkl_request_cancel(r), 0);
        dispatch_until_called(t.c, fd, &s);
        ck_assert_int_eq(s.result, ZKL_ECANCELED);
        ck_assert_int_eq(zkl_request_is_held(r), 0);
        ck_assert_int_eq(zkl_request_release(r), ZKL_ENOTHELD);
        zkl_request_free(r);
        ck_assert_int_eq(calls_of(&s), 1);
    }
    line_close(&t);
}
END_TEST

/* Behind a holder on another client, A then B on ours (B behind A):
 * cancelling B (or A) leaves the other in place, which gets the lock. */
START_TEST(test_cancel_while_queued_and_watching)
{
    struct line t;
    line_open(&t, _i, "queued", true);
    struct res a, b;
    zkl_request *ra = aobj_start(&t.obj, ZKL_WAIT_FOREVER, &a);
    tu_expect_contenders(t.p, 1 + t.wait_nodes);
    zkl_request *rb = aobj_start(&t.obj, ZKL_WAIT_FOREVER, &b);
    tu_expect_contenders(t.p, 2 + t.wait_nodes);
    /* B waits behind A: cancel B. */
    ck_assert_int_eq(zkl_request_cancel(rb), 0);
    ck_assert_int_eq(wait_result(&b), ZKL_ECANCELED);
    tu_expect_contenders(t.p, 1 + t.wait_nodes);
    ck_assert_int_eq(calls_of(&a), 0);
    ck_assert_int_eq(zkl_request_cancel(rb), ZKL_EINVAL); /* told already */
    /* A waits for the holder: hand over. */
    line_release_holder(&t);
    ck_assert_int_eq(wait_result(&a), 0);
    ck_assert_int_eq(zkl_request_is_held(ra), 1);
    tu_expect_contenders(t.p, t.hold_nodes);
    /* And the other way round: A (queued behind the holder) cancelled. */
    zkl_request_free(ra);
    tu_expect_contenders(t.p, 0);
    aobj_acquire(&t.hold, 5000);
    struct res d;
    zkl_request *rd = aobj_start(&t.obj, ZKL_WAIT_FOREVER, &d);
    tu_expect_contenders(t.p, 1 + t.wait_nodes);
    ck_assert_int_eq(zkl_request_cancel(rd), 0);
    ck_assert_int_eq(wait_result(&d), ZKL_ECANCELED);
    tu_expect_contenders(t.p, 1);
    line_release_holder(&t);
    tu_expect_contenders(t.p, 0);
    ck_assert_int_eq(calls_of(&d), 1);
    zkl_request_free(rb);
    zkl_request_free(rd);
    line_close(&t);
}
END_TEST

/* Granted, its result waiting for dispatch: a cancel then turns it into
 * ZKL_ECANCELED and deletes the node. */
START_TEST(test_cancel_granted_but_not_delivered)
{
    struct line t;
    line_open(&t, _i, "granted", false);
    int fd = line_fd(&t);
    struct res s;
    zkl_request *r = aobj_start(&t.obj, 5000, &s);
    ck_assert(fd_readable(fd, PROMPT_MS)); /* granted, not told */
    tu_expect_contenders(t.p, t.hold_nodes);
    ck_assert_int_eq(zkl_request_is_held(r), 0); /* not until told */
    ck_assert_int_eq(zkl_request_cancel(r), 0);
    ck_assert_int_eq(zkl_request_cancel(r), 0); /* still not told: again 0 */
    /* The descriptor may still show the grant: dispatch until the
     * cancelled result, told once its node is gone, comes. */
    dispatch_until_called(t.c, fd, &s);
    ck_assert_int_eq(s.result, ZKL_ECANCELED);
    ck_assert_int_eq(tu_contenders(t.p), 0);
    ck_assert_int_eq(zkl_client_dispatch(t.c), 0);
    zkl_request_free(r);
    line_close(&t);
}
END_TEST

/* ---- timeouts ------------------------------------------------------------ */

/* Cancelled while waiting, timed out, and a try once behind a holder: no
 * node of theirs is left when they are told. */
START_TEST(test_cancel_timeout_and_try_once_leave_nothing)
{
    struct line t;
    line_open(&t, _i, "timeout", true);
    struct res a, s, o;
    zkl_request *ra = aobj_start(&t.obj, ZKL_WAIT_FOREVER, &a);
    tu_expect_contenders(t.p, 1 + t.wait_nodes);
    ck_assert_int_eq(zkl_request_cancel(ra), 0);
    ck_assert_int_eq(wait_result(&a), ZKL_ECANCELED);
    ck_assert_int_eq(tu_contenders(t.p), 1);
    int64_t t0 = tu_now_ms();
    zkl_request *r = aobj_start(&t.obj, 300, &s);
    ck_assert_int_eq(wait_result(&s), ZKL_ETIMEDOUT);
    int64_t took = tu_now_ms() - t0;
    /* the holder holds on: nothing else ends it; the bound stretched for
     * the round trips of its node's create and delete */
    ck_assert_msg(took >= 300 && took < 300 + tu_ms(2700), "timed out after %lld ms",
                  (long long)took);
    ck_assert_int_eq(tu_contenders(t.p), 1); /* its node went first */
    zkl_request *r0 = aobj_start(&t.obj, 0, &o);
    ck_assert_int_eq(wait_result(&o), ZKL_ETIMEDOUT);
    ck_assert_int_eq(tu_contenders(t.p), 1);
    ck_assert_int_eq(zkl_request_release(ra), ZKL_ENOTHELD);
    /* Counted where they waited. */
    zkl_metrics pm = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(t.c, t.bp, &pm), 0);
    ck_assert_uint_eq(pm.cancels, 1);
    ck_assert_uint_eq(pm.timeouts, 2);
    ck_assert_uint_eq(pm.acquired, 0);
    line_release_holder(&t);
    tu_expect_contenders(t.p, 0);
    ck_assert_int_eq(calls_of(&a) + calls_of(&s) + calls_of(&o), 3);
    zkl_request_free(ra);
    zkl_request_free(r);
    zkl_request_free(r0);
    line_close(&t);
}
END_TEST

/* ---- session loss and close -------------------------------------------------- */

START_TEST(test_session_loss_while_queued_and_while_held)
{
    struct line t;
    line_open(&t, _i, "loss", true);
    char *q = tu_path("loss-held");
    struct aobj held;
    aobj_open(&held, _i, t.c, q);
    struct res s, k;
    zkl_request *rk = aobj_start(&held, 5000, &k);
    ck_assert_int_eq(wait_result(&k), 0);
    zkl_request *r = aobj_start(&t.obj, ZKL_WAIT_FOREVER, &s);
    tu_expect_contenders(t.p, 1 + t.wait_nodes);
    tu_expire_session(t.c);
    ck_assert_int_eq(wait_result(&s), ZKL_ELOST);
    ck_assert(tu_wait_until(request_not_held, rk, PROMPT_MS));
    int64_t tok;
    ck_assert_int_eq(zkl_request_token(rk, &tok), ZKL_ELOST);
    ck_assert_int_eq(zkl_request_release(rk), ZKL_ELOST);
    ck_assert_int_eq(calls_of(&k), 1);
    ck_assert_int_eq(calls_of(&s), 1);
    tu_expect_contenders(t.p, 1);
    tu_expect_contenders(q, 0);
    line_release_holder(&t);
    zkl_request_free(r);
    zkl_request_free(rk);
    aobj_close(&held);
    free(q);
    line_close(&t);
}
END_TEST

/* Closing with requests pending: the queued ones hear ZKL_ECLOSED before
 * the close returns (keeper and descriptor delivery alike), the held one
 * releases with ZKL_ECLOSED afterwards; requests outlive their objects and
 * are freed after the close. */
START_TEST(test_close_with_requests_pending)
{
    struct line t;
    line_open(&t, _i, "close", true);
    char *q = tu_path("close-held");
    for (int by_fd = 0; by_fd < 2; by_fd++) {
        zkl_client *c = tu_client(10000);
        int fd = -1;
        if (by_fd)
            ck_assert_int_eq(zkl_client_event_fd(c, &fd), 0);
        struct aobj o, oq;
        aobj_open(&o, _i, c, t.p);
        aobj_open(&oq, _i, c, q);
        struct res held, s[3];
        zkl_request *rh = aobj_start(&oq, 5000, &held), *r[3];
        if (by_fd) {
            ck_assert(fd_readable(fd, PROMPT_MS));
            ck_assert_int_eq(zkl_client_dispatch(c), 1);
        }
        ck_assert_int_eq(wait_result(&held), 0);
        for (int i = 0; i < 3; i++)
            r[i] = aobj_start(&o, ZKL_WAIT_FOREVER, &s[i]);
        tu_expect_contenders(t.p, 3 + t.wait_nodes);
        aobj_close(&o); /* requests outlive their objects */
        aobj_close(&oq);
        zkl_client_close(c);
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(calls_of(&s[i]), 1);
            ck_assert_int_eq(s[i].result, ZKL_ECLOSED);
            zkl_request_free(r[i]);
        }
        ck_assert_int_eq(zkl_request_is_held(rh), 0);
        ck_assert_int_eq(zkl_request_release(rh), ZKL_ECLOSED);
        zkl_request_free(rh);
        /* The session's close takes its nodes; if the close cannot reach
         * the server (a loaded machine, a connection just lost), its
         * expiry does: 10 s and a tick later. */
        tu_expect_contenders_within(t.p, 1, 30000);
        tu_expect_contenders_within(q, 0, 30000);
    }
    line_release_holder(&t);
    free(q);
    line_close(&t);
}
END_TEST

/* A request freed by its own callback (held: released), and one freed
 * while pending (its callback never runs). */
START_TEST(test_free_in_callback_and_while_pending)
{
    struct line t;
    line_open(&t, _i, "free", false);
    struct res s;
    res_init(&s);
    s.free_in_cb = true;
    zkl_request *r;
    ck_assert_int_eq(t.obj.r->start(&t.obj, 5000, on_done, &s, &r), 0);
    ck_assert_int_eq(wait_result(&s), 0);
    tu_expect_contenders(t.p, 0); /* freed held: released */
    line_hold(&t);
    struct res w;
    r = aobj_start(&t.obj, ZKL_WAIT_FOREVER, &w);
    tu_expect_contenders(t.p, 1 + t.wait_nodes);
    zkl_request_free(r);
    tu_expect_contenders(t.p, 1);
    line_release_holder(&t);
    tu_expect_contenders(t.p, 0);
    ck_assert_int_eq(calls_of(&w), 0);
    line_close(&t);
}
END_TEST

/* ---- cancel handles of blocking acquires -------------------------------- */

struct bwaiter {
    struct aobj o;
    zkl_cancel *h;
    atomic_int rc, returned;
    int rel_rc;
    pthread_t th;
};

static void *bwaiter_main(void *arg)
{
    struct bwaiter *w = arg;
    int rc = w->o.r->acquire_cancellable(&w->o, ZKL_WAIT_FOREVER, w->h);
    if (rc == 0)
        w->rel_rc = w->o.r->release(&w->o);
    atomic_store(&w->rc, rc);
    atomic_store(&w->returned, 1);
    return NULL;
}

static bool returned(void *arg)
{
    return atomic_load(&((struct bwaiter *)arg)->returned) != 0;
}

/* Two blocked waiters with a handle each (threads on one mutex; objects of
 * their own where a hold is the object's): firing one ends that one, the
 * other waits on and gets its lock. A fired handle ends the next call at
 * once; NULL is no handle. */
START_TEST(test_a_cancel_handle_ends_one_waiter_only)
{
    struct line t;
    line_open(&t, _i, "handle", true);
    int fire = t.obj.r->fire_later ? 1 : 0;
    struct bwaiter w[2];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 2; i++) {
        w[i].o = t.obj;
        if (i > 0 && _i != A_MUTEX)
            aobj_open(&w[i].o, _i, t.c, t.p);
        ck_assert_int_eq(zkl_cancel_new(&w[i].h), 0);
        ck_assert_int_eq(pthread_create(&w[i].th, NULL, bwaiter_main, &w[i]), 0);
        tu_expect_contenders(t.p, 1 + t.wait_nodes + i);
    }
    ck_assert_int_eq(zkl_cancel_is_fired(w[fire].h), 0);
    ck_assert_int_eq(zkl_cancel_fire(w[fire].h), 0);
    ck_assert_int_eq(zkl_cancel_is_fired(w[fire].h), 1);
    ck_assert(tu_wait_until(returned, &w[fire], PROMPT_MS));
    ck_assert_int_eq(atomic_load(&w[fire].rc), ZKL_ECANCELED);
    tu_expect_contenders(t.p, 1 + t.wait_nodes); /* its nodes went; the other's stay */
    ck_assert_int_eq(atomic_load(&w[1 - fire].returned), 0);
    line_release_holder(&t);
    ck_assert(tu_wait_until(returned, &w[1 - fire], PROMPT_MS));
    ck_assert_int_eq(atomic_load(&w[1 - fire].rc), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i].th, NULL);
        ck_assert_int_eq(w[i].rel_rc, 0);
    }
    tu_expect_contenders(t.p, 0);
    struct aobj *o = &w[fire].o;
    ck_assert_int_eq(o->r->acquire_cancellable(o, 5000, w[fire].h), ZKL_ECANCELED);
    ck_assert_int_eq(o->r->acquire_cancellable(o, 5000, NULL), 0);
    ck_assert_int_eq(o->r->release(o), 0);
    ck_assert_int_eq(tu_contenders(t.p), 0);
    for (int i = 0; i < 2; i++) {
        zkl_cancel_free(w[i].h);
        if (i > 0 && _i != A_MUTEX)
            aobj_close(&w[i].o);
    }
    t.obj = w[0].o;
    line_close(&t);
}
END_TEST

/* ---- bad arguments ------------------------------------------------------- */

START_TEST(test_bad_arguments_are_einval_and_send_nothing)
{
    struct line t;
    line_open(&t, _i, "bad", false);
    zkl_client_stats before, after;
    ck_assert_int_eq(zkl_client_get_stats(t.c, &before), 0);
    t.obj.r->null_calls();
    zkl_request *r = NULL;
    ck_assert_int_eq(t.obj.r->start(&t.obj, 0, NULL, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(t.obj.r->start(&t.obj, 0, never, NULL, NULL), ZKL_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(zkl_client_get_stats(t.c, &after), 0);
    ck_assert_uint_eq(after.requests, before.requests); /* nothing was sent */
    ck_assert_int_eq(tu_contenders(t.p), 0);
    line_close(&t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("async");
    for (int i = 0; i < A_COUNT; i++) {
        TCase *tc = tu_tcase(arows[i].name, 120);
        tu_add_fixture(tc, "async");
        tu_add_row(tc, test_a_request_is_held_on_the_client_thread_then_released, i);
        tu_add_row(tc, test_a_request_is_released_from_another_thread, i);
        tu_add_row(tc, test_delivery_by_descriptor_runs_callbacks_in_dispatch, i);
        tu_add_row(tc, test_cancel_right_after_start, i);
        tu_add_row(tc, test_cancel_while_queued_and_watching, i);
        tu_add_row(tc, test_cancel_granted_but_not_delivered, i);
        tu_add_row(tc, test_cancel_timeout_and_try_once_leave_nothing, i);
        tu_add_row(tc, test_session_loss_while_queued_and_while_held, i);
        tu_add_row(tc, test_close_with_requests_pending, i);
        tu_add_row(tc, test_free_in_callback_and_while_pending, i);
        tu_add_row(tc, test_a_cancel_handle_ends_one_waiter_only, i);
        tu_add_row(tc, test_bad_arguments_are_einval_and_send_nothing, i);
        suite_add_tcase(s, tc);
    }
    return tu_run(s);
}
