/* Asynchronous acquires and cancel handles against a real ZooKeeper:
 * delivery on the client's thread and by descriptor, cancel at every
 * stage, timeouts, session loss while queued and while held, release from
 * another thread, thousands of requests on one client (distinct paths, and
 * one path with mutual exclusion checked), blocking acquires cancelled one
 * by one, bad arguments, and a close with requests pending. Each test
 * checks that no node is left behind. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define PROMPT_MS 10000

/* One request's outcome, as its callback saw it. */
struct res {
    pthread_mutex_t mu;
    int calls;
    int result;
    pthread_t thread;
    zkl_request *r;
    bool free_in_cb; /* the callback frees its request */
};

static void res_init(struct res *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
}

static void on_done(zkl_request *r, int result, void *arg)
{
    struct res *s = arg;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    s->result = result;
    s->thread = pthread_self();
    s->r = r;
    bool fr = s->free_in_cb;
    pthread_mutex_unlock(&s->mu);
    if (fr)
        zkl_request_free(r);
}

static int calls_of(struct res *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->calls;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static bool called(void *arg)
{
    return calls_of(arg) > 0;
}

/* Wait for the callback, and return its result. */
static int wait_result(struct res *s)
{
    ck_assert_msg(tu_wait_until(called, s, PROMPT_MS), "no callback");
    pthread_mutex_lock(&s->mu);
    int rc = s->result;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static bool fd_readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

struct kids {
    const char *path;
    int want;
};

static bool has_kids(void *arg)
{
    struct kids *k = arg;
    return tu_children(tu_fixture_zk, k->path) >= k->want;
}

static void wait_kids_at_least(const char *path, int want)
{
    struct kids k = {path, want};
    ck_assert_msg(tu_wait_until(has_kids, &k, PROMPT_MS), "%s: %d children, wanted %d", path,
                  tu_children(tu_fixture_zk, path), want);
}

static void wait_kids(const char *path, int want)
{
    ck_assert_msg(tu_wait_children(tu_fixture_zk, path, want, PROMPT_MS),
                  "%s has %d children, not %d", path, tu_children(tu_fixture_zk, path), want);
}

START_TEST(test_held_on_the_client_thread_then_released)
{
    char *p = tu_path("basic");
    zkl_client *c = tu_client(10000);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct res s;
    res_init(&s);
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 5000, on_done, &s, &r), 0);
    ck_assert_int_eq(wait_result(&s), 0);
    ck_assert_ptr_eq(s.r, r);
    ck_assert(!pthread_equal(s.thread, pthread_self())); /* the keeper's */
    ck_assert_int_eq(zkl_request_is_held(r), 1);
    int64_t tok = 0;
    ck_assert_int_eq(zkl_request_token(r, &tok), 0);
    ck_assert(tok > 0);
    ck_assert_ptr_nonnull(zkl_request_node(r));
    ck_assert_int_eq(strncmp(zkl_request_node(r), p, strlen(p)), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    /* Not the thread's hold: the blocking API knows nothing of it. */
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(zkl_mutex_release(m), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_request_cancel(r), ZKL_EBUSY);
    ck_assert_int_eq(zkl_request_release(r), 0);
    ck_assert_int_eq(zkl_request_release(r), ZKL_ENOTHELD); /* twice */
    ck_assert_int_eq(zkl_request_is_held(r), 0);
    ck_assert_int_eq(zkl_request_token(r, &tok), ZKL_ENOTHELD);
    ck_assert_int_eq(zkl_request_cancel(r), ZKL_EINVAL);
    wait_kids(p, 0);
    ck_assert_int_eq(calls_of(&s), 1);
    /* The metrics count the request as one attempt, acquired, released. */
    zkl_metrics pm = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(c, p, &pm), 0);
    ck_assert_uint_eq(pm.acquired, 1);
    ck_assert_uint_eq(pm.releases, 1);
    ck_assert_uint_eq(pm.wait.count, 1);
    ck_assert_uint_eq(pm.hold.count, 1);
    zkl_request_free(r);
    zkl_mutex_free(m);
    zkl_client_close(c);
    free(p);
}
END_TEST

START_TEST(test_fd_delivery_runs_callbacks_in_dispatch)
{
    char *p = tu_path("fd");
    zkl_client *c = tu_client(10000);
    int fd, fd2;
    ck_assert_int_eq(zkl_client_event_fd(c, &fd), 0);
    ck_assert_int_eq(zkl_client_event_fd(c, &fd2), 0);
    ck_assert_int_eq(fd, fd2);
    ck_assert_int_eq(zkl_client_dispatch(c), 0); /* nothing yet */
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct res s;
    res_init(&s);
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 5000, on_done, &s, &r), 0);
    ck_assert(fd_readable(fd, PROMPT_MS));
    ck_assert_int_eq(calls_of(&s), 0); /* only dispatch runs it */
    ck_assert_int_eq(zkl_client_dispatch(c), 1);
    ck_assert_int_eq(calls_of(&s), 1);
    ck_assert_int_eq(s.result, 0);
    ck_assert(pthread_equal(s.thread, pthread_self()));
    ck_assert(!fd_readable(fd, 0));
    zkl_request_free(r); /* held: released */
    wait_kids(p, 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* Dispatch until the callback ran. */
static void dispatch_until_called(zkl_client *c, int fd, struct res *s)
{
    int64_t end = tu_now_ms() + PROMPT_MS;
    while (calls_of(s) == 0 && tu_now_ms() < end)
        if (fd_readable(fd, 100))
            ck_assert_int_ge(zkl_client_dispatch(c), 0);
    ck_assert_int_eq(calls_of(s), 1);
}

/* By descriptor, so that no callback can run before the cancel. */
START_TEST(test_cancel_right_after_start)
{
    char *p = tu_path("early");
    zkl_client *c = tu_client(10000);
    int fd;
    ck_assert_int_eq(zkl_client_event_fd(c, &fd), 0);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    for (int i = 0; i < 20; i++) {
        struct res s;
        res_init(&s);
        zkl_request *r;
        ck_assert_int_eq(zkl_mutex_acquire_async(m, 5000, on_done, &s, &r), 0);
        ck_assert_int_eq(zkl_request_cancel(r), 0);
        dispatch_until_called(c, fd, &s);
        ck_assert_int_eq(s.result, ZKL_ECANCELED);
        ck_assert_int_eq(zkl_request_is_held(r), 0);
        ck_assert_int_eq(zkl_request_release(r), ZKL_ENOTHELD);
        zkl_request_free(r);
        ck_assert_int_eq(calls_of(&s), 1);
    }
    wait_kids(p, 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* A holder on another client, and on ours waiter A then B, B watching A:
 * cancelling B (or A) leaves the other in place, which gets the lock. */
START_TEST(test_cancel_while_queued_and_watching)
{
    char *p = tu_path("queued");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_mutex *hm, *m;
    ck_assert_int_eq(zkl_mutex_new(h, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct res a, b;
    res_init(&a);
    res_init(&b);
    zkl_request *ra, *rb;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, on_done, &a, &ra), 0);
    wait_kids_at_least(p, 2);
    ck_assert_int_eq(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, on_done, &b, &rb), 0);
    wait_kids_at_least(p, 3);
    /* B watches A: cancel B. */
    ck_assert_int_eq(zkl_request_cancel(rb), 0);
    ck_assert_int_eq(wait_result(&b), ZKL_ECANCELED);
    wait_kids(p, 2);
    ck_assert_int_eq(calls_of(&a), 0);
    ck_assert_int_eq(zkl_request_cancel(rb), ZKL_EINVAL); /* told already */
    /* A watches the holder: hand over. */
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    ck_assert_int_eq(wait_result(&a), 0);
    ck_assert_int_eq(zkl_request_is_held(ra), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    /* And the other way round: A (queued behind the holder) cancelled. */
    zkl_request_free(ra);
    wait_kids(p, 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    struct res d;
    res_init(&d);
    zkl_request *rd;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, on_done, &d, &rd), 0);
    wait_kids_at_least(p, 2);
    ck_assert_int_eq(zkl_request_cancel(rd), 0);
    ck_assert_int_eq(wait_result(&d), ZKL_ECANCELED);
    wait_kids(p, 1);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    wait_kids(p, 0);
    ck_assert_int_eq(calls_of(&d), 1);
    zkl_request_free(rb);
    zkl_request_free(rd);
    zkl_mutex_free(m);
    zkl_mutex_free(hm);
    zkl_client_close(c);
    zkl_client_close(h);
    free(p);
}
END_TEST

/* Granted, its result waiting for dispatch: a cancel then turns it into
 * ZKL_ECANCELED and deletes the node. */
START_TEST(test_cancel_granted_but_not_delivered)
{
    char *p = tu_path("granted");
    zkl_client *c = tu_client(10000);
    int fd;
    ck_assert_int_eq(zkl_client_event_fd(c, &fd), 0);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct res s;
    res_init(&s);
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 5000, on_done, &s, &r), 0);
    ck_assert(fd_readable(fd, PROMPT_MS)); /* granted, not told */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert_int_eq(zkl_request_is_held(r), 0); /* not until told */
    ck_assert_int_eq(zkl_request_cancel(r), 0);
    ck_assert_int_eq(zkl_request_cancel(r), 0); /* still not told: again 0 */
    /* The descriptor may still show the grant: dispatch until the
     * cancelled result, told once its node is gone, comes. */
    dispatch_until_called(c, fd, &s);
    ck_assert_int_eq(s.result, ZKL_ECANCELED);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(zkl_client_dispatch(c), 0);
    zkl_request_free(r);
    zkl_mutex_free(m);
    zkl_client_close(c);
    free(p);
}
END_TEST

START_TEST(test_timeouts_leave_nothing)
{
    char *p = tu_path("timeout");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_mutex *hm, *m;
    ck_assert_int_eq(zkl_mutex_new(h, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct res s, t;
    res_init(&s);
    res_init(&t);
    zkl_request *r, *r0;
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 300, on_done, &s, &r), 0);
    ck_assert_int_eq(wait_result(&s), ZKL_ETIMEDOUT);
    int64_t took = tu_now_ms() - t0;
    ck_assert_msg(took >= 300 && took < 3000, "timed out after %lld ms", (long long)took);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1); /* its node went first */
    /* A try once behind a holder. */
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 0, on_done, &t, &r0), 0);
    ck_assert_int_eq(wait_result(&t), ZKL_ETIMEDOUT);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    zkl_metrics pm = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(c, p, &pm), 0);
    ck_assert_uint_eq(pm.timeouts, 2);
    ck_assert_uint_eq(pm.acquired, 0);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    wait_kids(p, 0);
    zkl_request_free(r);
    zkl_request_free(r0);
    zkl_mutex_free(m);
    zkl_mutex_free(hm);
    zkl_client_close(c);
    zkl_client_close(h);
    free(p);
}
END_TEST

static bool not_held(void *arg)
{
    return zkl_request_is_held(arg) == 0;
}

START_TEST(test_session_loss_while_queued_and_while_held)
{
    char *p = tu_path("loss"), *q = tu_path("loss-held");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_mutex *hm, *m, *mq;
    ck_assert_int_eq(zkl_mutex_new(h, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_new(c, q, &mq), 0);
    struct res s, k;
    res_init(&s);
    res_init(&k);
    zkl_request *r, *rk;
    ck_assert_int_eq(zkl_mutex_acquire_async(mq, 5000, on_done, &k, &rk), 0);
    ck_assert_int_eq(wait_result(&k), 0);
    ck_assert_int_eq(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, on_done, &s, &r), 0);
    wait_kids_at_least(p, 2);
    tu_expire_session(c);
    ck_assert_int_eq(wait_result(&s), ZKL_ELOST);
    ck_assert(tu_wait_until(not_held, rk, PROMPT_MS));
    int64_t tok;
    ck_assert_int_eq(zkl_request_token(rk, &tok), ZKL_ELOST);
    ck_assert_int_eq(zkl_request_release(rk), ZKL_ELOST);
    ck_assert_int_eq(calls_of(&k), 1);
    wait_kids(p, 1);
    wait_kids(q, 0);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    zkl_request_free(r);
    zkl_request_free(rk);
    zkl_mutex_free(m);
    zkl_mutex_free(mq);
    zkl_mutex_free(hm);
    zkl_client_close(c);
    zkl_client_close(h);
    free(p), free(q);
}
END_TEST

static void *release_main(void *arg)
{
    return (void *)(intptr_t)zkl_request_release(arg);
}

START_TEST(test_release_from_another_thread)
{
    char *p = tu_path("other");
    zkl_client *c = tu_client(10000);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct res s;
    res_init(&s);
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 5000, on_done, &s, &r), 0);
    ck_assert_int_eq(wait_result(&s), 0);
    pthread_t th;
    void *rc;
    ck_assert_int_eq(pthread_create(&th, NULL, release_main, r), 0);
    ck_assert_int_eq(pthread_join(th, &rc), 0);
    ck_assert_int_eq((int)(intptr_t)rc, 0);
    wait_kids(p, 0);
    zkl_request_free(r);
    zkl_mutex_free(m);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* A request freed by its own callback, and one freed while pending (its
 * callback never runs). */
START_TEST(test_free_in_callback_and_while_pending)
{
    char *p = tu_path("free");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_mutex *hm, *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct res s;
    res_init(&s);
    s.free_in_cb = true;
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 5000, on_done, &s, &r), 0);
    ck_assert_int_eq(wait_result(&s), 0);
    wait_kids(p, 0); /* freed held: released */
    ck_assert_int_eq(zkl_mutex_new(h, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    struct res t;
    res_init(&t);
    ck_assert_int_eq(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, on_done, &t, &r), 0);
    wait_kids_at_least(p, 2);
    zkl_request_free(r);
    wait_kids(p, 1);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    wait_kids(p, 0);
    ck_assert_int_eq(calls_of(&t), 0);
    zkl_mutex_free(m);
    zkl_mutex_free(hm);
    zkl_client_close(c);
    zkl_client_close(h);
    free(p);
}
END_TEST

/* Readers share, a writer waits for them and readers queue behind it; a
 * semaphore-mutex's own hold and its requests exclude each other. */
START_TEST(test_rwlock_and_semmutex_requests)
{
    char *p = tu_path("rw"), *q = tu_path("sm");
    zkl_client *c = tu_client(10000);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, p, &rw), 0);
    struct res r1, r2, w, r3;
    res_init(&r1), res_init(&r2), res_init(&w), res_init(&r3);
    zkl_request *q1, *q2, *qw, *q3;
    ck_assert_int_eq(zkl_rwlock_read_acquire_async(rw, 5000, on_done, &r1, &q1), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire_async(rw, 5000, on_done, &r2, &q2), 0);
    ck_assert_int_eq(wait_result(&r1), 0);
    ck_assert_int_eq(wait_result(&r2), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire_async(rw, ZKL_WAIT_FOREVER, on_done, &w, &qw), 0);
    wait_kids_at_least(p, 3);
    ck_assert_int_eq(zkl_rwlock_read_acquire_async(rw, ZKL_WAIT_FOREVER, on_done, &r3, &q3), 0);
    wait_kids_at_least(p, 4);
    ck_assert_int_eq(zkl_request_release(q1), 0);
    wait_kids(p, 3);
    ck_assert_int_eq(calls_of(&w), 0);
    ck_assert_int_eq(zkl_request_release(q2), 0);
    ck_assert_int_eq(wait_result(&w), 0);
    ck_assert_int_eq(calls_of(&r3), 0);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rw), 0); /* the request's, not the thread's */
    ck_assert_int_eq(zkl_request_release(qw), 0);
    ck_assert_int_eq(wait_result(&r3), 0);
    ck_assert_int_eq(zkl_request_release(q3), 0);
    wait_kids(p, 0);
    zkl_request_free(q1), zkl_request_free(q2), zkl_request_free(qw), zkl_request_free(q3);
    zkl_rwlock_free(rw);

    zkl_semmutex *sm;
    ck_assert_int_eq(zkl_semmutex_new(c, q, &sm), 0);
    ck_assert_int_eq(zkl_semmutex_acquire(sm, 5000), 0);
    struct res t;
    res_init(&t);
    zkl_request *rt;
    ck_assert_int_eq(zkl_semmutex_acquire_async(sm, ZKL_WAIT_FOREVER, on_done, &t, &rt), 0);
    wait_kids_at_least(q, 2);
    ck_assert_int_eq(calls_of(&t), 0);
    ck_assert_int_eq(zkl_semmutex_release(sm), 0);
    ck_assert_int_eq(wait_result(&t), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(sm), 0);
    ck_assert_int_eq(zkl_request_is_held(rt), 1);
    zkl_request_free(rt);
    wait_kids(q, 0);
    ck_assert_int_eq(zkl_semmutex_acquire_async(NULL, 0, on_done, &t, &rt), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_acquire_async(NULL, 0, on_done, &t, &rt), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_acquire_async(NULL, 0, on_done, &t, &rt), ZKL_EINVAL);
    zkl_semmutex_free(sm);
    zkl_client_close(c);
    free(p), free(q);
}
END_TEST

/* ---- many requests on one client ---------------------------------------- */

#define MANY 2000
/* Under valgrind, a tenth on one path: every contender's listing names all
 * the others (n^2 names), which valgrind slows past the session timeout.
 * memcheck looks for memory errors there, not for scale. */
#define MANY_ONE (tu_under_valgrind() ? MANY / 10 : MANY)

struct many {
    atomic_int done;
    atomic_int calls[MANY];
    atomic_int results_ok;
    atomic_int first_err; /* the first failure's code, for the message */
    zkl_request *req[MANY];
    int want; /* requests started, if not MANY */
    /* one path: */
    atomic_int holding;
    atomic_int overlap;
    pthread_mutex_t mu;
    int64_t last_token;
    int bad_order;
};

struct slot {
    struct many *m;
    int i;
};

static void many_distinct_cb(zkl_request *r, int result, void *arg)
{
    (void)r;
    struct slot *s = arg;
    atomic_fetch_add(&s->m->calls[s->i], 1);
    if (result == 0)
        atomic_fetch_add(&s->m->results_ok, 1);
    atomic_fetch_add(&s->m->done, 1);
}

static bool all_done(void *arg)
{
    struct many *m = arg;
    return atomic_load(&m->done) >= (m->want ? m->want : MANY);
}

START_TEST(test_thousands_on_distinct_paths)
{
    zkl_client *c = tu_client(20000);
    zkl_mutex *ms[MANY];
    struct many *mn = calloc(1, sizeof *mn);
    struct slot *sl = calloc(MANY, sizeof *sl);
    char **paths = calloc(MANY, sizeof *paths);
    for (int i = 0; i < MANY; i++) {
        char leaf[32];
        snprintf(leaf, sizeof leaf, "d%d", i);
        paths[i] = tu_path(leaf);
        ck_assert_int_eq(zkl_mutex_new(c, paths[i], &ms[i]), 0);
        sl[i] = (struct slot){mn, i};
    }
    for (int i = 0; i < MANY; i++)
        ck_assert_int_eq(zkl_mutex_acquire_async(ms[i], 60000, many_distinct_cb, &sl[i],
                                                 &mn->req[i]),
                         0);
    ck_assert_msg(tu_wait_until(all_done, mn, 60000), "%d of %d done", atomic_load(&mn->done),
                  MANY);
    ck_assert_int_eq(atomic_load(&mn->results_ok), MANY);
    for (int i = 0; i < MANY; i++) {
        ck_assert_int_eq(atomic_load(&mn->calls[i]), 1);
        ck_assert_int_eq(zkl_request_is_held(mn->req[i]), 1);
        ck_assert_int_eq(zkl_request_release(mn->req[i]), 0);
        zkl_request_free(mn->req[i]);
    }
    for (int i = 0; i < MANY; i++) {
        wait_kids(paths[i], 0);
        zkl_mutex_free(ms[i]);
        free(paths[i]);
    }
    ck_assert_int_eq(atomic_load(&mn->done), MANY); /* exactly once each */
    zkl_client_close(c);
    free(paths);
    free(sl);
    free(mn);
}
END_TEST

static void many_one_cb(zkl_request *r, int result, void *arg)
{
    struct slot *s = arg;
    struct many *m = s->m;
    atomic_fetch_add(&m->calls[s->i], 1);
    int zero = 0;
    if (result != 0)
        atomic_compare_exchange_strong(&m->first_err, &zero, result);
    if (result == 0) {
        if (atomic_fetch_add(&m->holding, 1) != 0)
            atomic_fetch_add(&m->overlap, 1);
        int64_t tok = 0;
        if (zkl_request_token(r, &tok) != 0)
            tok = -1;
        pthread_mutex_lock(&m->mu);
        if (tok <= m->last_token)
            m->bad_order++;
        m->last_token = tok;
        pthread_mutex_unlock(&m->mu);
        atomic_fetch_add(&m->results_ok, 1);
        atomic_fetch_sub(&m->holding, 1);
        if (zkl_request_release(r) != 0)
            atomic_fetch_add(&m->overlap, 1000000);
    }
    atomic_fetch_add(&m->done, 1);
}

/* Two clients, a thousand requests each on one path, each released by its
 * callback: one holder at a time, tokens strictly increasing. */
START_TEST(test_thousands_on_one_path_exclude_each_other)
{
    char *p = tu_path("one");
    zkl_client *cs[2] = {tu_client(20000), tu_client(20000)};
    zkl_mutex *ms[2];
    struct many *mn = calloc(1, sizeof *mn);
    pthread_mutex_init(&mn->mu, NULL);
    struct slot *sl = calloc(MANY, sizeof *sl);
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(zkl_mutex_new(cs[k], p, &ms[k]), 0);
    mn->want = MANY_ONE;
    for (int i = 0; i < MANY_ONE; i++) {
        sl[i] = (struct slot){mn, i};
        ck_assert_int_eq(zkl_mutex_acquire_async(ms[i % 2], 120000, many_one_cb, &sl[i],
                                                 &mn->req[i]),
                         0);
    }
    ck_assert_msg(tu_wait_until(all_done, mn, 120000), "%d of %d done", atomic_load(&mn->done),
                  MANY_ONE);
    ck_assert_msg(atomic_load(&mn->results_ok) == MANY_ONE, "%d of %d held; first failure %s",
                  atomic_load(&mn->results_ok), MANY_ONE,
                  zkl_err_name(atomic_load(&mn->first_err)));
    ck_assert_int_eq(atomic_load(&mn->overlap), 0);
    ck_assert_int_eq(mn->bad_order, 0);
    for (int i = 0; i < MANY_ONE; i++) {
        ck_assert_int_eq(atomic_load(&mn->calls[i]), 1);
        zkl_request_free(mn->req[i]);
    }
    wait_kids(p, 0);
    for (int k = 0; k < 2; k++) {
        zkl_mutex_free(ms[k]);
        zkl_client_close(cs[k]);
    }
    free(sl);
    free(mn);
    free(p);
}
END_TEST

/* ---- cancel handles of blocking acquires -------------------------------- */

struct bwaiter {
    zkl_mutex *m;
    zkl_cancel *h;
    atomic_int rc;
    atomic_int returned;
    pthread_t th;
};

static void *bwaiter_main(void *arg)
{
    struct bwaiter *w = arg;
    int rc = zkl_mutex_acquire_cancellable(w->m, ZKL_WAIT_FOREVER, w->h);
    atomic_store(&w->rc, rc);
    atomic_store(&w->returned, 1);
    if (rc == 0)
        zkl_mutex_release(w->m);
    return NULL;
}

static bool returned(void *arg)
{
    return atomic_load(&((struct bwaiter *)arg)->returned) != 0;
}

START_TEST(test_cancel_handle_ends_one_waiter_only)
{
    char *p = tu_path("handle");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_mutex *hm, *m;
    ck_assert_int_eq(zkl_mutex_new(h, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct bwaiter w[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].m = m;
        ck_assert_int_eq(zkl_cancel_new(&w[i].h), 0);
        ck_assert_int_eq(pthread_create(&w[i].th, NULL, bwaiter_main, &w[i]), 0);
        wait_kids_at_least(p, 2 + i);
    }
    ck_assert_int_eq(zkl_cancel_is_fired(w[0].h), 0);
    ck_assert_int_eq(zkl_cancel_fire(w[0].h), 0);
    ck_assert_int_eq(zkl_cancel_is_fired(w[0].h), 1);
    ck_assert(tu_wait_until(returned, &w[0], PROMPT_MS));
    ck_assert_int_eq(atomic_load(&w[0].rc), ZKL_ECANCELED);
    wait_kids(p, 2); /* its node went; the other waiter's stays */
    ck_assert_int_eq(atomic_load(&w[1].returned), 0);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    ck_assert(tu_wait_until(returned, &w[1], PROMPT_MS));
    ck_assert_int_eq(atomic_load(&w[1].rc), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i].th, NULL);
    wait_kids(p, 0);
    /* A fired handle ends the next call at once; NULL is no handle. */
    ck_assert_int_eq(zkl_mutex_acquire_cancellable(m, 5000, w[0].h), ZKL_ECANCELED);
    ck_assert_int_eq(zkl_mutex_acquire_cancellable(m, 5000, NULL), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    for (int i = 0; i < 2; i++)
        zkl_cancel_free(w[i].h);
    zkl_mutex_free(m);
    zkl_mutex_free(hm);
    zkl_client_close(c);
    zkl_client_close(h);
    free(p);
}
END_TEST

/* A blocked semaphore-mutex waiter and a read-write lock writer, each with
 * a handle; firing one ends that one, the other waits on and gets its
 * lock. */
struct owaiter {
    zkl_semmutex *sm;
    zkl_rwlock *rw;
    zkl_semaphore *sem;
    zkl_cancel *h;
    atomic_int rc, returned;
    pthread_t th;
};

static void *owaiter_main(void *arg)
{
    struct owaiter *w = arg;
    int rc;
    if (w->sem != NULL) {
        zkl_lease *l = NULL;
        rc = zkl_semaphore_acquire_many_cancellable(w->sem, 1, ZKL_WAIT_FOREVER, w->h, &l);
        if (rc == 0)
            zkl_lease_release(l);
    } else if (w->sm != NULL) {
        rc = zkl_semmutex_acquire_cancellable(w->sm, ZKL_WAIT_FOREVER, w->h);
        if (rc == 0)
            zkl_semmutex_release(w->sm);
    } else {
        rc = zkl_rwlock_write_acquire_cancellable(w->rw, ZKL_WAIT_FOREVER, w->h);
        if (rc == 0)
            zkl_rwlock_write_release(w->rw);
    }
    atomic_store(&w->rc, rc);
    atomic_store(&w->returned, 1);
    return NULL;
}

static bool oreturned(void *arg)
{
    return atomic_load(&((struct owaiter *)arg)->returned) != 0;
}

START_TEST(test_cancel_handles_of_other_recipes)
{
    char *p = tu_path("h-sm"), *q = tu_path("h-rw");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_mutex *hp, *hq;
    ck_assert_int_eq(zkl_mutex_new(h, p, &hp), 0);
    ck_assert_int_eq(zkl_mutex_new(h, q, &hq), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hp, 5000), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hq, 5000), 0);
    zkl_semmutex *sm[2];
    zkl_rwlock *rw[2];
    struct owaiter w[4];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(zkl_semmutex_new(c, p, &sm[i]), 0);
        ck_assert_int_eq(zkl_rwlock_new(c, q, &rw[i]), 0);
        w[i].sm = sm[i];
        w[2 + i].rw = rw[i];
    }
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(zkl_cancel_new(&w[i].h), 0);
        ck_assert_int_eq(pthread_create(&w[i].th, NULL, owaiter_main, &w[i]), 0);
        wait_kids_at_least(i < 2 ? p : q, 2 + i % 2);
    }
    ck_assert_int_eq(zkl_cancel_fire(w[0].h), 0);
    ck_assert_int_eq(zkl_cancel_fire(w[2].h), 0);
    ck_assert(tu_wait_until(oreturned, &w[0], PROMPT_MS));
    ck_assert(tu_wait_until(oreturned, &w[2], PROMPT_MS));
    ck_assert_int_eq(atomic_load(&w[0].rc), ZKL_ECANCELED);
    ck_assert_int_eq(atomic_load(&w[2].rc), ZKL_ECANCELED);
    wait_kids(p, 2);
    wait_kids(q, 2);
    ck_assert_int_eq(atomic_load(&w[1].returned), 0);
    ck_assert_int_eq(atomic_load(&w[3].returned), 0);
    ck_assert_int_eq(zkl_mutex_release(hp), 0);
    ck_assert_int_eq(zkl_mutex_release(hq), 0);
    ck_assert(tu_wait_until(oreturned, &w[1], PROMPT_MS));
    ck_assert(tu_wait_until(oreturned, &w[3], PROMPT_MS));
    ck_assert_int_eq(atomic_load(&w[1].rc), 0);
    ck_assert_int_eq(atomic_load(&w[3].rc), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(w[i].th, NULL);
        zkl_cancel_free(w[i].h);
    }
    wait_kids(p, 0);
    wait_kids(q, 0);
    ck_assert_int_eq(zkl_semmutex_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_write_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_rwlock_read_acquire_cancellable(rw[0], 5000, NULL), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rw[0]), 0);
    for (int i = 0; i < 2; i++) {
        zkl_semmutex_free(sm[i]);
        zkl_rwlock_free(rw[i]);
    }
    zkl_mutex_free(hp);
    zkl_mutex_free(hq);
    zkl_client_close(c);
    zkl_client_close(h);
    free(p), free(q);
}
END_TEST

/* The counting semaphore: one of two gate waiters cancelled. */
START_TEST(test_cancel_handle_of_a_semaphore_waiter)
{
    char *p = tu_path("h-sem");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_semaphore *hs, *cs;
    zkl_lease *hl;
    ck_assert_int_eq(zkl_semaphore_new(h, p, 1, &hs), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(hs, 5000, &hl), 0);
    ck_assert_int_eq(zkl_semaphore_new(c, p, 1, &cs), 0);
    struct owaiter w[2];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 2; i++) {
        w[i].sem = cs;
        ck_assert_int_eq(zkl_cancel_new(&w[i].h), 0);
        ck_assert_int_eq(pthread_create(&w[i].th, NULL, owaiter_main, &w[i]), 0);
        wait_kids_at_least(p, 2 + i);
    }
    ck_assert_int_eq(zkl_cancel_fire(w[1].h), 0);
    ck_assert(tu_wait_until(oreturned, &w[1], PROMPT_MS));
    ck_assert_int_eq(atomic_load(&w[1].rc), ZKL_ECANCELED);
    wait_kids(p, 2);
    ck_assert_int_eq(atomic_load(&w[0].returned), 0);
    ck_assert_int_eq(zkl_lease_release(hl), 0);
    ck_assert(tu_wait_until(oreturned, &w[0], PROMPT_MS));
    ck_assert_int_eq(atomic_load(&w[0].rc), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i].th, NULL);
        zkl_cancel_free(w[i].h);
    }
    wait_kids(p, 0);
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_acquire_many_cancellable(NULL, 1, 0, NULL, &l), ZKL_EINVAL);
    zkl_semaphore_free(cs);
    zkl_semaphore_free(hs);
    zkl_client_close(c);
    zkl_client_close(h);
    free(p);
}
END_TEST

static void never(zkl_request *r, int result, void *arg)
{
    (void)r, (void)result, (void)arg;
}

START_TEST(test_bad_arguments)
{
    char *p = tu_path("bad");
    zkl_client *c = tu_client(10000);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    zkl_request *r;
    int fd;
    int64_t tok;
    ck_assert_int_eq(zkl_mutex_acquire_async(NULL, 0, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 0, NULL, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 0, never, NULL, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_request_cancel(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_request_release(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_request_is_held(NULL), 0);
    ck_assert_int_eq(zkl_request_token(NULL, &tok), ZKL_EINVAL);
    ck_assert_ptr_null(zkl_request_node(NULL));
    zkl_request_free(NULL);
    ck_assert_int_eq(zkl_client_event_fd(NULL, &fd), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_event_fd(c, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_dispatch(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_dispatch(c), ZKL_EINVAL); /* not by fd */
    ck_assert_int_eq(zkl_cancel_new(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_cancel_fire(NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_cancel_is_fired(NULL), 0);
    zkl_cancel_free(NULL);
    ck_assert_int_eq(zkl_mutex_acquire_cancellable(NULL, 0, NULL), ZKL_EINVAL);
    ck_assert_int_eq(tu_exists(tu_fixture_zk, p), 0); /* nothing was sent */
    /* zkl_client_cancel ends requests too, and refuses new ones. */
    struct res s;
    res_init(&s);
    zkl_mutex *hm;
    zkl_client *h = tu_client(10000);
    ck_assert_int_eq(zkl_mutex_new(h, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    ck_assert_int_eq(zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, on_done, &s, &r), 0);
    wait_kids_at_least(p, 2);
    ck_assert_int_eq(zkl_client_cancel(c), 0);
    ck_assert_int_eq(wait_result(&s), ZKL_ECANCELED);
    wait_kids(p, 1);
    zkl_request *r2;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, 0, never, NULL, &r2), ZKL_ECANCELED);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    zkl_request_free(r);
    zkl_mutex_free(hm);
    zkl_mutex_free(m);
    zkl_client_close(h);
    zkl_client_close(c);
    free(p);
}
END_TEST

/* Closing with requests pending: the queued ones hear ZKL_ECLOSED before
 * the close returns (keeper and descriptor delivery alike), the held one
 * releases with ZKL_ECLOSED afterwards; freed after the close. */
START_TEST(test_close_with_requests_pending)
{
    char *p = tu_path("close"), *q = tu_path("close-held");
    zkl_client *h = tu_client(10000);
    zkl_mutex *hm;
    ck_assert_int_eq(zkl_mutex_new(h, p, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    for (int by_fd = 0; by_fd < 2; by_fd++) {
        zkl_client *c = tu_client(10000);
        int fd = -1;
        if (by_fd)
            ck_assert_int_eq(zkl_client_event_fd(c, &fd), 0);
        zkl_mutex *m, *mq;
        ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
        ck_assert_int_eq(zkl_mutex_new(c, q, &mq), 0);
        struct res held, s[3];
        res_init(&held);
        zkl_request *rh, *r[3];
        ck_assert_int_eq(zkl_mutex_acquire_async(mq, 5000, on_done, &held, &rh), 0);
        if (by_fd) {
            ck_assert(fd_readable(fd, PROMPT_MS));
            ck_assert_int_eq(zkl_client_dispatch(c), 1);
        }
        ck_assert_int_eq(wait_result(&held), 0);
        for (int i = 0; i < 3; i++) {
            res_init(&s[i]);
            ck_assert_int_eq(
                zkl_mutex_acquire_async(m, ZKL_WAIT_FOREVER, on_done, &s[i], &r[i]), 0);
        }
        wait_kids_at_least(p, 4);
        zkl_mutex_free(m); /* requests outlive their mutex */
        zkl_mutex_free(mq);
        zkl_client_close(c);
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(calls_of(&s[i]), 1);
            ck_assert_int_eq(s[i].result, ZKL_ECLOSED);
            zkl_request_free(r[i]);
        }
        ck_assert_int_eq(zkl_request_is_held(rh), 0);
        ck_assert_int_eq(zkl_request_release(rh), ZKL_ECLOSED);
        zkl_request_free(rh);
        wait_kids(p, 1);
        wait_kids(q, 0);
    }
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    zkl_mutex_free(hm);
    zkl_client_close(h);
    free(p), free(q);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("async");
    TCase *tc = tu_tcase("async", 240);
    tu_add_fixture(tc, "async");
    tcase_add_test(tc, test_held_on_the_client_thread_then_released);
    tcase_add_test(tc, test_fd_delivery_runs_callbacks_in_dispatch);
    tcase_add_test(tc, test_cancel_right_after_start);
    tcase_add_test(tc, test_cancel_while_queued_and_watching);
    tcase_add_test(tc, test_cancel_granted_but_not_delivered);
    tcase_add_test(tc, test_timeouts_leave_nothing);
    tcase_add_test(tc, test_session_loss_while_queued_and_while_held);
    tcase_add_test(tc, test_release_from_another_thread);
    tcase_add_test(tc, test_free_in_callback_and_while_pending);
    tcase_add_test(tc, test_rwlock_and_semmutex_requests);
    tcase_add_test(tc, test_thousands_on_distinct_paths);
    tcase_add_test(tc, test_thousands_on_one_path_exclude_each_other);
    tcase_add_test(tc, test_cancel_handle_ends_one_waiter_only);
    tcase_add_test(tc, test_cancel_handles_of_other_recipes);
    tcase_add_test(tc, test_cancel_handle_of_a_semaphore_waiter);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_close_with_requests_pending);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
