/* zkl_client_cancel against a real ZooKeeper: one cancel wakes waiting
 * acquires of every recipe at once, each ZKL_ECANCELED with its node gone,
 * and the holds the client already has stay held and release normally.
 * One recipe's waiter and the later acquires, for each recipe:
 * check_common. */
#include <pthread.h>
#include <stdlib.h>

#include "testutil.h"

/* Long enough that an answer within it cannot come from the session
 * expiring: the cancel itself must have ended the wait (its code says so
 * too: an expiry would be ZKL_ELOST). */
#define WAITER_SESSION_MS 30000
#define PROMPT_MS 10000

enum waiter_kind { W_MUTEX, W_SEMAPHORE, W_READ, W_WRITE, W_MULTI };

struct waiter {
    enum waiter_kind kind;
    zkl_client *c;
    const char *path, *path2;
    int rc;
    int64_t returned_ms;
    pthread_t th;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    switch (w->kind) {
    case W_MUTEX: {
        zkl_mutex *m;
        ck_assert_int_eq(zkl_mutex_new(w->c, w->path, &m), 0);
        w->rc = zkl_mutex_acquire(m, ZKL_WAIT_FOREVER);
        if (w->rc == 0)
            zkl_mutex_release(m);
        zkl_mutex_free(m);
        break;
    }
    case W_SEMAPHORE: {
        zkl_semaphore *s;
        zkl_lease *l = NULL;
        ck_assert_int_eq(zkl_semaphore_new(w->c, w->path, 1, &s), 0);
        w->rc = zkl_semaphore_acquire(s, ZKL_WAIT_FOREVER, &l);
        if (w->rc == 0)
            zkl_lease_release(l);
        zkl_semaphore_free(s);
        break;
    }
    case W_READ:
    case W_WRITE: {
        zkl_rwlock *rw;
        ck_assert_int_eq(zkl_rwlock_new(w->c, w->path, &rw), 0);
        if (w->kind == W_READ) {
            w->rc = zkl_rwlock_read_acquire(rw, ZKL_WAIT_FOREVER);
            if (w->rc == 0)
                zkl_rwlock_read_release(rw);
        } else {
            w->rc = zkl_rwlock_write_acquire(rw, ZKL_WAIT_FOREVER);
            if (w->rc == 0)
                zkl_rwlock_write_release(rw);
        }
        zkl_rwlock_free(rw);
        break;
    }
    case W_MULTI: {
        const char *paths[] = {w->path, w->path2};
        zkl_multilock *ml;
        ck_assert_int_eq(zkl_multilock_new(w->c, paths, 2, &ml), 0);
        w->rc = zkl_multilock_acquire(ml, ZKL_WAIT_FOREVER);
        if (w->rc == 0)
            zkl_multilock_release(ml);
        zkl_multilock_free(ml);
        break;
    }
    }
    w->returned_ms = tu_now_ms();
    return NULL;
}

static void start_waiter(struct waiter *w)
{
    w->rc = 1; /* no zkl code */
    ck_assert_int_eq(pthread_create(&w->th, NULL, waiter_main, w), 0);
}

struct above {
    const char *path;
    int base;
};

static bool children_above(void *arg)
{
    struct above *a = arg;
    return tu_children(tu_fixture_zk, a->path) > a->base;
}

/* Wait until `path` has more than `base` children: the waiter queued. */
static void wait_queued(const char *path, int base)
{
    struct above a = {path, base};
    ck_assert_msg(tu_wait_until(children_above, &a, PROMPT_MS), "no waiter queued under %s", path);
}


START_TEST(test_cancel_wakes_waiters_of_every_recipe_at_once)
{
    char *pm = tu_path("mutex"), *ps = tu_path("sem"), *pr = tu_path("rw-read"),
         *pw = tu_path("rw-write"), *m1 = tu_path("multi-1"), *m2 = tu_path("multi-2");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(WAITER_SESSION_MS);

    /* a holds everything the waiters want. */
    zkl_mutex *hm, *hm2;
    zkl_semaphore *hs;
    zkl_lease *lease;
    zkl_rwlock *hr, *hw;
    ck_assert_int_eq(zkl_mutex_new(a, pm, &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    ck_assert_int_eq(zkl_semaphore_new(a, ps, 1, &hs), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(hs, 5000, &lease), 0);
    ck_assert_int_eq(zkl_rwlock_new(a, pr, &hr), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(hr, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_new(a, pw, &hw), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(hw, 5000), 0);
    ck_assert_int_eq(zkl_mutex_new(a, m2, &hm2), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm2, 5000), 0);
    const char *paths[] = {pm, ps, pr, pw, m1, m2};
    int base[6];
    for (int i = 0; i < 6; i++)
        base[i] = tu_children(tu_fixture_zk, paths[i]);

    struct waiter w[] = {
        {.kind = W_MUTEX, .c = b, .path = pm},
        {.kind = W_SEMAPHORE, .c = b, .path = ps},
        {.kind = W_READ, .c = b, .path = pr},
        {.kind = W_WRITE, .c = b, .path = pw},
        {.kind = W_MULTI, .c = b, .path = m1, .path2 = m2},
    };
    for (int i = 0; i < 5; i++)
        start_waiter(&w[i]);
    wait_queued(pm, base[0]);
    wait_queued(ps, base[1]);
    wait_queued(pr, base[2]);
    wait_queued(pw, base[3]);
    wait_queued(m2, base[5]); /* the multi-lock holds m1 and waits on m2 */
    ck_assert_int_eq(tu_children(tu_fixture_zk, m1), 1);

    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_client_cancel(b), 0);
    for (int i = 0; i < 5; i++) {
        pthread_join(w[i].th, NULL);
        ck_assert_msg(w[i].rc == ZKL_ECANCELED, "waiter %d returned %d", i, w[i].rc);
        ck_assert_int_lt(w[i].returned_ms - t0, tu_ms(PROMPT_MS));
    }
    /* Nothing of b's stays: every path is back to a's nodes only, and the
     * multi-lock gave m1 back. */
    for (int i = 0; i < 6; i++)
        ck_assert_msg(tu_wait_children(tu_fixture_zk, paths[i], base[i], PROMPT_MS),
                      "%s has %d children, not %d", paths[i], tu_children(tu_fixture_zk, paths[i]),
                      base[i]);
    ck_assert_int_eq(tu_children(tu_fixture_zk, m1), 0);

    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    ck_assert_int_eq(zkl_lease_release(lease), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(hr), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(hw), 0);
    ck_assert_int_eq(zkl_mutex_release(hm2), 0);
    zkl_mutex_free(hm);
    zkl_mutex_free(hm2);
    zkl_semaphore_free(hs);
    zkl_rwlock_free(hr);
    zkl_rwlock_free(hw);
    free(pm), free(ps), free(pr), free(pw), free(m1), free(m2);
}
END_TEST

START_TEST(test_cancel_leaves_holds_in_place_and_they_release)
{
    char *p = tu_path("held"), *q = tu_path("rw");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m;
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_new(c, q, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    int64_t token = tu_mutex_token(m);

    ck_assert_int_eq(zkl_client_cancel(c), 0);
    ck_assert_int_eq(zkl_client_cancel(c), 0); /* twice is harmless */
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(tu_mutex_token(m), token);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rw), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    /* Guarded writes still work for a holder, and so does reentry (it
     * only counts, nothing is sent). */
    ck_assert_int_eq(zkl_mutex_guarded_set(m, p, "x", 1), 0);
    ck_assert_int_eq(zkl_mutex_acquire(m, 0), 0);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);

    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, q), 0);
    ck_assert_int_eq(zkl_mutex_release(m), ZKL_ENOTHELD);
    zkl_mutex_free(m);
    zkl_rwlock_free(rw);
    free(p), free(q);
}
END_TEST

START_TEST(test_cancel_of_null_is_einval)
{
    ck_assert_int_eq(zkl_client_cancel(NULL), ZKL_EINVAL);
    ck_assert_str_eq(zkl_err_name(ZKL_ECANCELED), "ECANCELED");
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_cancel_wakes_waiters_of_every_recipe_at_once,
        test_cancel_leaves_holds_in_place_and_they_release,
        test_cancel_of_null_is_einval,
        NULL,
    };
    return tu_run_zk_case("cancel", 90, tests);
}
