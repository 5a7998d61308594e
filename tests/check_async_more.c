/* What only one recipe's asynchronous acquire does, against a real
 * ZooKeeper (what they all do alike: check_async). The counting semaphore:
 * n leases at once, waiting behind a full semaphore, a limit recorded
 * differently, a limit's write answered after the deadline, a lease behind
 * an earlier one its gate did not count, hundreds of requests over a small
 * limit with the limit checked. The multi-lock:
 * mixed and nested members, all or nothing on timeout and cancel, the
 * refused user lock, the cancellable blocking acquire. The read-write lock and the semaphore-mutex: readers share, a
 * writer waits, an object's own hold and its requests exclude each other.
 * The mutex: thousands of requests on one client (distinct paths, and one
 * path with mutual exclusion checked); the client's calls with bad
 * arguments, and zkl_client_cancel ending requests. Each test checks that
 * no node is left behind. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "async_recipes.h"
#include "front.h"   /* zkl__obj_count */
#include "session.h" /* the seam: struct zkl__zapi */


static void wait_kids_at_least(const char *path, int want)
{
    ck_assert_msg(tu_wait_children_at_least(tu_fixture_zk, path, want, PROMPT_MS),
                  "%s: %d children, wanted %d", path, tu_children(tu_fixture_zk, path), want);
}

static void wait_kids(const char *path, int want)
{
    ck_assert_msg(tu_wait_children(tu_fixture_zk, path, want, PROMPT_MS),
                  "%s has %d children, not %d", path, tu_children(tu_fixture_zk, path), want);
}

static void limit_is(const char *p, const char *want)
{
    char buf[64];
    int len = sizeof buf - 1;
    ck_assert_int_eq(zoo_get(tu_fixture_zk, p, 0, buf, &len, NULL), ZOK);
    buf[len > 0 ? len : 0] = '\0';
    ck_assert_str_eq(buf, want);
}

START_TEST(test_semaphore_grant_many_then_wait_behind_full)
{
    char *p = tu_test_path("sem-grant");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s = tu_test_semaphore(c, p, 3);
    struct res a, b;
    res_init(&a);
    res_init(&b);
    zkl_request *ra, *rb;
    /* The first acquire of a fresh path records the limit. */
    ck_assert_int_eq(zkl_semaphore_acquire_many_async(s, 2, 5000, on_done, &a, &ra), 0);
    ck_assert_int_eq(wait_result(&a), 0);
    limit_is(p, "max_leases=3");
    ck_assert_int_eq(zkl_request_is_held(ra), 1);
    int64_t tok = 0;
    ck_assert_int_eq(zkl_request_token(ra, &tok), 0);
    ck_assert(tok > 0);
    ck_assert_ptr_nonnull(strstr(zkl_request_node(ra), "zkl-lease-x2-"));
    wait_kids(p, 1); /* the lease alone: the gate went */
    /* 2 + 2 > 3: the next one waits at the gate. */
    ck_assert_int_eq(zkl_semaphore_acquire_many_async(s, 2, ZKL_WAIT_FOREVER, on_done, &b, &rb), 0);
    wait_kids_at_least(p, 2);
    ck_assert_int_eq(calls_of(&b), 0);
    /* One lease still fits beside the two. */
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_acquire(s, 0, &l), ZKL_ETIMEDOUT); /* behind b, FIFO */
    ck_assert_int_eq(zkl_request_release(ra), 0);
    ck_assert_int_eq(wait_result(&b), 0);
    int64_t tok2 = 0;
    ck_assert_int_eq(zkl_request_token(rb, &tok2), 0);
    ck_assert(tok2 > tok);
    ck_assert_int_eq(zkl_semaphore_acquire(s, 5000, &l), 0); /* 2 + 1 = 3 */
    ck_assert_int_eq(zkl_lease_release(l), 0);
    ck_assert_int_eq(zkl_request_release(rb), 0);
    wait_kids(p, 0);
    /* Each request is one attempt. */
    zkl_metrics pm = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(c, p, &pm), 0);
    ck_assert_uint_eq(pm.acquired, 3);
    ck_assert_uint_eq(pm.timeouts, 1);
    ck_assert_uint_eq(pm.releases, 3);
    ck_assert_uint_eq(pm.wait.count, 3); /* of the acquired ones */
    ck_assert_uint_ge(pm.handoffs, 1);   /* b waited */
    zkl_request_free(ra);
    zkl_request_free(rb);
}
END_TEST
START_TEST(test_semaphore_limit_mismatch_leaves_nothing)
{
    char *p = tu_test_path("sem-mismatch");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s3 = tu_test_semaphore(c, p, 3), *s4 = tu_test_semaphore(c, p, 4);
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_acquire(s3, 5000, &l), 0);
    struct res a, b;
    res_init(&a);
    res_init(&b);
    zkl_request *ra, *rb;
    ck_assert_int_eq(zkl_semaphore_acquire_async(s4, 5000, on_done, &a, &ra), 0);
    ck_assert_int_eq(wait_result(&a), ZKL_EMISMATCH);
    wait_kids(p, 1);
    ck_assert_int_eq(zkl_lease_release(l), 0);
    wait_kids(p, 0);
    /* Recorded anew behind the object's back. */
    ck_assert_int_eq(zoo_set(tu_fixture_zk, p, "max_leases=5", 12, -1), ZOK);
    ck_assert_int_eq(zkl_semaphore_acquire_async(s3, 5000, on_done, &b, &rb), 0);
    ck_assert_int_eq(wait_result(&b), ZKL_EMISMATCH);
    wait_kids(p, 0);
    limit_is(p, "max_leases=5");
    zkl_metrics pm = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(c, p, &pm), 0);
    ck_assert_uint_eq(pm.failures, 2);
    zkl_request_free(ra);
    zkl_request_free(rb);
}
END_TEST
/* The limit's conditional write, its answer held back by the test: the
 * seam below the session passes the write on and keeps the answer until
 * the test lets it through. */
static struct {
    pthread_mutex_t mu;
    const char *path;
    stat_completion_t done;
    const void *data;
    bool answered; /* the server's answer came (kept, not passed on) */
    int rc;
    struct Stat st;
} late = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void late_answer(int rc, const struct Stat *st, const void *data)
{
    (void)data;
    pthread_mutex_lock(&late.mu);
    late.rc = rc;
    if (st != NULL)
        late.st = *st;
    late.answered = true;
    pthread_mutex_unlock(&late.mu);
}

static int late_aset(zhandle_t *zh, const char *path, const char *buffer, int buflen, int version,
                     stat_completion_t done, const void *data)
{
    pthread_mutex_lock(&late.mu);
    bool hold = late.path != NULL && strcmp(path, late.path) == 0 && late.done == NULL;
    if (hold) {
        late.done = done;
        late.data = data;
    }
    pthread_mutex_unlock(&late.mu);
    return zkl__zapi_real.aset(zh, path, buffer, buflen, version, hold ? late_answer : done,
                               hold ? NULL : data);
}

static bool late_came(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&late.mu);
    bool came = late.answered;
    pthread_mutex_unlock(&late.mu);
    return came;
}

/* A request's deadline binds the recipe's steps too: a gate that holds
 * while the limit's write waits for its answer ends at the deadline,
 * ZKL_ETIMEDOUT, its gate node deleted, whenever that answer comes. */
START_TEST(test_semaphore_limit_answer_late_times_out_at_the_deadline)
{
    char *p = tu_test_path("sem-late");
    tu_mkdirs(tu_fixture_zk, tu_fixture_root);
    /* there, without a limit: the acquire writes it */
    ck_assert_int_eq(zoo_create(tu_fixture_zk, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                     ZOK);
    struct zkl__zapi z = zkl__zapi_real;
    z.aset = late_aset;
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    zkl__client_opts_set_zapi(o, &z);
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), 0);
    zkl_client_opts_free(o);
    late.path = p;
    zkl_semaphore *s;
    ck_assert_int_eq(zkl_semaphore_new(c, p, 3, &s), 0);
    struct res a;
    res_init(&a);
    zkl_request *ra;
    ck_assert_int_eq(zkl_semaphore_acquire_async(s, 3000, on_done, &a, &ra), 0);
    ck_assert_msg(tu_wait_until(late_came, NULL, PROMPT_MS), "no limit written");
    ck_assert_int_eq(wait_result(&a), ZKL_ETIMEDOUT); /* the answer still held */
    wait_kids(p, 0);
    limit_is(p, "max_leases=3");
    pthread_mutex_lock(&late.mu);
    stat_completion_t done = late.done;
    late.done = NULL;
    late.path = NULL;
    pthread_mutex_unlock(&late.mu);
    done(late.rc, &late.st, late.data); /* the dropped step hears it, alone */
    ck_assert_int_eq(calls_of(&a), 1);
    zkl_request_free(ra);
    zkl_semaphore_free(s);
    zkl_client_close(c);
}
END_TEST

/* A lease of someone else's made while the gate holder's own lease was on
 * its way: the seam plants it, with the outsider's handle, just before the
 * holder's create of its lease goes out. Its gate node deleted behind its
 * back, the holder it stands for would have made it so (corpus seed 4142:
 * four leases of three). */
static struct {
    const char *path; /* the semaphore's: its first lease create plants one */
    atomic_int planted;
    atomic_int watched; /* a watch on the planted lease was sent */
    char name[512];     /* the planted lease's path */
} cut_in;

static int cut_in_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                           const struct ACL_vector *acl, int mode, string_stat_completion_t done,
                           const void *data)
{
    size_t pl = cut_in.path ? strlen(cut_in.path) : 0;
    if (pl > 0 && strncmp(path, cut_in.path, pl) == 0 && path[pl] == '/' &&
        strstr(path + pl, "-zkl-lease-") != NULL && atomic_exchange(&cut_in.planted, 1) == 0) {
        char other[512];
        snprintf(other, sizeof other, "%s/_c_00000000-0000-4000-8000-000000000001-zkl-lease-",
                 cut_in.path);
        (void)zoo_create(tu_fixture_zk, other, "", 0, &ZOO_OPEN_ACL_UNSAFE,
                         ZOO_EPHEMERAL | ZOO_SEQUENCE, cut_in.name, sizeof cut_in.name);
    }
    return zkl__zapi_real.acreate2(zh, path, value, valuelen, acl, mode, done, data);
}

/* A waiting node watches the one it waits on: a lease that waits for room
 * watches the first lease ahead of it. The planted lease's name is written
 * before the lease create goes out, whose listing leads to this watch. */
static int cut_in_awget(zhandle_t *zh, const char *path, watcher_fn w, void *wc,
                        data_completion_t done, const void *data)
{
    if (atomic_load(&cut_in.planted) && strcmp(path, cut_in.name) == 0)
        atomic_store(&cut_in.watched, 1);
    return zkl__zapi_real.awget(zh, path, w, wc, done, data);
}

static bool cut_in_watched(void *arg)
{
    (void)arg;
    return atomic_load(&cut_in.watched) != 0;
}

/* A lease holds only while the leases up to it, in sequence order, fit the
 * limit: one that finds an earlier lease it did not count at the gate
 * waits for room (it watches that lease, and has not called back), and
 * leaves nothing behind when it is cancelled. No deadline decides it: on a
 * slow machine one may pass before the lease is even made. */
START_TEST(test_semaphore_lease_behind_an_uncounted_lease_waits_for_room)
{
    char *p = tu_test_path("sem-cut-in");
    struct zkl__zapi z = zkl__zapi_real;
    z.acreate2 = cut_in_acreate2;
    z.awget = cut_in_awget;
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    zkl__client_opts_set_zapi(o, &z);
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), 0);
    zkl_client_opts_free(o);
    cut_in.path = p;
    atomic_store(&cut_in.planted, 0);
    atomic_store(&cut_in.watched, 0);
    zkl_semaphore *s;
    ck_assert_int_eq(zkl_semaphore_new(c, p, 1, &s), 0);
    struct res a, b;
    res_init(&a);
    res_init(&b);
    zkl_request *ra, *rb;
    ck_assert_int_eq(zkl_semaphore_acquire_async(s, tu_ms(60000), on_done, &a, &ra), 0);
    ck_assert_msg(tu_wait_until(cut_in_watched, NULL, PROMPT_MS),
                  "the lease does not wait on the planted one");
    ck_assert_int_eq(calls_of(&a), 0); /* 2 leases of 1: not held */
    ck_assert_int_eq(zkl_request_cancel(ra), 0);
    ck_assert_int_eq(wait_result(&a), ZKL_ECANCELED);
    wait_kids(p, 1); /* the planted lease alone */
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, cut_in.name, -1), ZOK);
    ck_assert_int_eq(zkl_semaphore_acquire_async(s, 5000, on_done, &b, &rb), 0);
    ck_assert_int_eq(wait_result(&b), 0);
    ck_assert_int_eq(zkl_request_release(rb), 0);
    wait_kids(p, 0);
    cut_in.path = NULL;
    zkl_request_free(ra);
    zkl_request_free(rb);
    zkl_semaphore_free(s);
    zkl_client_close(c);
}
END_TEST

/* ---- many requests over a small limit ------------------------------------ */

/* Under valgrind a fifth: memcheck looks for memory errors, not scale. */
#define SEM_ALL 500
#define SEM_MANY (tu_under_valgrind() ? SEM_ALL / 5 : SEM_ALL)
#define SEM_MAX 3

struct crowd {
    atomic_int holding, most, done, ok, first_err;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    zkl_request *queue[SEM_ALL]; /* granted, for the releaser */
    int qhead, qtail;
    zkl_request *req[SEM_ALL];
    atomic_int bad_release;
};

static void crowd_cb(zkl_request *r, int result, void *arg)
{
    struct crowd *k = arg;
    if (result != 0) {
        int zero = 0;
        atomic_compare_exchange_strong(&k->first_err, &zero, result);
        atomic_fetch_add(&k->done, 1);
        return;
    }
    int now = atomic_fetch_add(&k->holding, 1) + 1;
    int most = atomic_load(&k->most);
    while (now > most && !atomic_compare_exchange_weak(&k->most, &most, now))
        ;
    atomic_fetch_add(&k->ok, 1);
    /* Every other one releases here; the rest from another thread. */
    if (atomic_load(&k->ok) % 2 == 0) {
        atomic_fetch_sub(&k->holding, 1);
        if (zkl_request_release(r) != 0)
            atomic_fetch_add(&k->bad_release, 1);
        atomic_fetch_add(&k->done, 1);
        return;
    }
    pthread_mutex_lock(&k->mu);
    k->queue[k->qtail++] = r;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

/* A bounded wait: the last grant's signal may come before the check. */
static void cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000;
    ts.tv_sec += ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    pthread_cond_timedwait(cv, mu, &ts);
}

static void *releaser_main(void *arg)
{
    struct crowd *k = arg;
    pthread_mutex_lock(&k->mu);
    while (atomic_load(&k->done) < SEM_MANY) {
        if (k->qhead == k->qtail) {
            cond_wait_ms(&k->cv, &k->mu, 50);
            continue;
        }
        zkl_request *r = k->queue[k->qhead++];
        pthread_mutex_unlock(&k->mu);
        /* Counted out before the delete: a new grant comes after it. */
        atomic_fetch_sub(&k->holding, 1);
        if (zkl_request_release(r) != 0)
            atomic_fetch_add(&k->bad_release, 1);
        atomic_fetch_add(&k->done, 1);
        pthread_mutex_lock(&k->mu);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

static bool crowd_done(void *arg)
{
    struct crowd *k = arg;
    return atomic_load(&k->done) >= SEM_MANY;
}

START_TEST(test_semaphore_hundreds_of_requests_never_exceed_the_limit)
{
    char *p = tu_test_path("sem-crowd");
    zkl_client *cs[2] = {tu_client(20000), tu_client(20000)};
    zkl_semaphore *ss[2];
    struct crowd *k = calloc(1, sizeof *k);
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(zkl_semaphore_new(cs[i], p, SEM_MAX, &ss[i]), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, releaser_main, k), 0);
    for (int i = 0; i < SEM_MANY; i++)
        ck_assert_int_eq(
            zkl_semaphore_acquire_async(ss[i % 2], 120000, crowd_cb, k, &k->req[i]), 0);
    ck_assert_msg(tu_wait_until(crowd_done, k, 180000), "%d of %d done",
                  atomic_load(&k->done), SEM_MANY);
    pthread_join(th, NULL);
    ck_assert_msg(atomic_load(&k->ok) == SEM_MANY, "%d held; first failure %s",
                  atomic_load(&k->ok), zkl_err_name(atomic_load(&k->first_err)));
    ck_assert_int_le(atomic_load(&k->most), SEM_MAX);
    ck_assert_int_eq(atomic_load(&k->bad_release), 0);
    for (int i = 0; i < SEM_MANY; i++)
        zkl_request_free(k->req[i]);
    wait_kids(p, 0);
    for (int i = 0; i < 2; i++) {
        zkl_semaphore_free(ss[i]);
        zkl_client_close(cs[i]);
    }
    free(k);
}
END_TEST
/* ---- the multi-lock -------------------------------------------------------- */

struct three {
    char *p[3];
};

static void three_init(struct three *t, const char *leaf)
{
    char buf[64];
    for (int i = 0; i < 3; i++) {
        snprintf(buf, sizeof buf, "%s-%d", leaf, i);
        t->p[i] = tu_path(buf);
    }
}

static void three_free(struct three *t)
{
    for (int i = 0; i < 3; i++)
        free(t->p[i]);
}

static uint64_t path_count(zkl_client *c, const char *p, int what)
{
    zkl_metrics pm = {.version = ZKL_METRICS_VERSION};
    if (zkl_client_path_metrics(c, p, &pm) != 0)
        return 0;
    return what == 0 ? pm.acquired : what == 1 ? pm.releases : what == 2 ? pm.timeouts
                                                                          : pm.cancels;
}

START_TEST(test_multilock_grant_mixed_members_then_release)
{
    struct three t;
    three_init(&t, "ml-grant");
    zkl_client *c = tu_client(10000);
    zkl_mutex *m;
    zkl_semmutex *sm;
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_mutex_new(c, t.p[0], &m), 0);
    ck_assert_int_eq(zkl_semmutex_new(c, t.p[1], &sm), 0);
    ck_assert_int_eq(zkl_rwlock_new(c, t.p[2], &rw), 0);
    zkl_lock *l[3], *inner_h;
    ck_assert_int_eq(zkl_mutex_as_lock(m, &l[0]), 0);
    ck_assert_int_eq(zkl_semmutex_as_lock(sm, &l[1]), 0);
    ck_assert_int_eq(zkl_rwlock_read_as_lock(rw, &l[2]), 0);
    /* A nested multi-lock's members count as the outer one's. */
    zkl_multilock *inner, *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(l + 1, 2, &inner), 0);
    ck_assert_int_eq(zkl_multilock_as_lock(inner, &inner_h), 0);
    zkl_lock *outer[2] = {inner_h, l[0]};
    ck_assert_int_eq(zkl_multilock_new_locks(outer, 2, &ml), 0);
    struct res a;
    res_init(&a);
    zkl_request *r;
    ck_assert_int_eq(zkl_multilock_acquire_async(ml, 5000, on_done, &a, &r), 0);
    ck_assert_int_eq(wait_result(&a), 0);
    ck_assert_int_eq(zkl_request_is_held(r), 1);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tu_children(tu_fixture_zk, t.p[i]), 1);
    ck_assert_int_eq(strncmp(zkl_request_node(r), t.p[2], strlen(t.p[2])), 0); /* the last */
    int64_t tok;
    ck_assert_int_eq(zkl_request_token(r, &tok), 0);
    /* The request's hold, not the thread's nor the objects'. */
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    ck_assert_int_eq(zkl_semmutex_is_held(sm), 0);
    ck_assert_int_eq(zkl_request_release(r), 0);
    for (int i = 0; i < 3; i++) {
        wait_kids(t.p[i], 0);
        ck_assert_uint_eq(path_count(c, t.p[i], 0), 1);
        ck_assert_uint_eq(path_count(c, t.p[i], 1), 1);
    }
    ck_assert_int_eq(calls_of(&a), 1);
    zkl_request_free(r);
    zkl_multilock_free(ml); /* then the handles it borrows */
    zkl_lock_free(inner_h);
    zkl_multilock_free(inner);
    for (int i = 0; i < 3; i++)
        zkl_lock_free(l[i]);
    zkl_rwlock_free(rw);
    zkl_semmutex_free(sm);
    zkl_mutex_free(m);
    zkl_client_close(c);
    three_free(&t);
}
END_TEST
START_TEST(test_multilock_all_or_nothing_on_timeout_and_cancel)
{
    struct three t;
    three_init(&t, "ml-none");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_mutex *hm;
    ck_assert_int_eq(zkl_mutex_new(h, t.p[1], &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0); /* the middle one is taken */
    const char *paths[3] = {t.p[2], t.p[0], t.p[1]};  /* any order given */
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new(c, paths, 3, &ml), 0);
    struct res a, b;
    res_init(&a);
    res_init(&b);
    zkl_request *ra, *rb;
    /* Time enough for the first member on a slow machine (the client
     * makes the parents first): the taken second is what runs out. */
    ck_assert_int_eq(zkl_multilock_acquire_async(ml, 3000, on_done, &a, &ra), 0);
    ck_assert_int_eq(wait_result(&a), ZKL_ETIMEDOUT);
    /* The first was taken, then released; nothing reached the third. */
    wait_kids(t.p[0], 0);
    wait_kids(t.p[1], 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, t.p[2]), 0);
    ck_assert_uint_eq(path_count(c, t.p[0], 0), 1);
    ck_assert_uint_eq(path_count(c, t.p[0], 1), 1);
    ck_assert_uint_eq(path_count(c, t.p[1], 2), 1);
    ck_assert_uint_eq(path_count(c, t.p[2], 0), 0);
    /* Cancelled while the first holds and the second waits. */
    ck_assert_int_eq(zkl_multilock_acquire_async(ml, ZKL_WAIT_FOREVER, on_done, &b, &rb), 0);
    wait_kids_at_least(t.p[1], 2);
    ck_assert_int_eq(tu_children(tu_fixture_zk, t.p[0]), 1);
    ck_assert_int_eq(zkl_request_cancel(rb), 0);
    ck_assert_int_eq(wait_result(&b), ZKL_ECANCELED);
    wait_kids(t.p[0], 0);
    wait_kids(t.p[1], 1);
    ck_assert_int_eq(zkl_request_is_held(rb), 0);
    ck_assert_uint_eq(path_count(c, t.p[1], 3), 1);
    /* Once the holder lets go, all three come. */
    struct res d;
    res_init(&d);
    zkl_request *rd;
    ck_assert_int_eq(zkl_multilock_acquire_async(ml, 5000, on_done, &d, &rd), 0);
    wait_kids_at_least(t.p[1], 2);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    ck_assert_int_eq(wait_result(&d), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tu_children(tu_fixture_zk, t.p[i]), 1);
    zkl_multilock_free(ml); /* the request outlives it */
    ck_assert_int_eq(zkl_request_release(rd), 0);
    for (int i = 0; i < 3; i++)
        wait_kids(t.p[i], 0);
    zkl_request_free(ra);
    zkl_request_free(rb);
    zkl_request_free(rd);
    zkl_mutex_free(hm);
    zkl_client_close(c);
    zkl_client_close(h);
    three_free(&t);
}
END_TEST
struct ulock {
    atomic_int acquires;
    const char *key;
};

static int u_acquire(void *self, long timeout_ms)
{
    (void)timeout_ms;
    atomic_fetch_add(&((struct ulock *)self)->acquires, 1);
    return 0;
}

static int u_release(void *self)
{
    (void)self;
    return 0;
}

static int u_is_held(void *self)
{
    (void)self;
    return 1;
}

static const char *u_path(void *self)
{
    return ((struct ulock *)self)->key;
}

START_TEST(test_multilock_refuses_user_locks_and_two_clients)
{
    char *p = tu_path("ml-user"), *q = tu_path("ml-other");
    zkl_client *c = tu_test_client(10000), *d = tu_test_client(10000);
    zkl_mutex *m = tu_test_mutex(c, p), *md = tu_test_mutex(d, q);
    struct ulock u = {.key = "user-key"};
    const zkl_lock_ops ops = {.version = ZKL_LOCK_OPS_VERSION, .acquire = u_acquire,
                              .release = u_release, .is_held = u_is_held, .path = u_path};
    zkl_lock *l[3];
    ck_assert_int_eq(zkl_mutex_as_lock(m, &l[0]), 0);
    ck_assert_int_eq(zkl_lock_new(&ops, &u, &l[1]), 0);
    ck_assert_int_eq(zkl_mutex_as_lock(md, &l[2]), 0);
    zkl_multilock *mu, *m2;
    ck_assert_int_eq(zkl_multilock_new_locks(l, 2, &mu), 0);
    zkl_lock *two[2] = {l[0], l[2]};
    ck_assert_int_eq(zkl_multilock_new_locks(two, 2, &m2), 0);
    zkl_request *r = NULL;
    ck_assert_int_eq(zkl_multilock_acquire_async(mu, 5000, never, NULL, &r), ZKL_EINVAL);
    ck_assert_int_eq(zkl_multilock_acquire_async(m2, 5000, never, NULL, &r), ZKL_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(atomic_load(&u.acquires), 0);
    ck_assert(!tu_exists(tu_fixture_zk, p));
    ck_assert(!tu_exists(tu_fixture_zk, q));
    /* Blocking, the user's lock is fine. */
    ck_assert_int_eq(zkl_multilock_acquire(mu, 5000), 0);
    ck_assert_int_eq(atomic_load(&u.acquires), 1);
    ck_assert_int_eq(zkl_multilock_release(mu), 0);
    wait_kids(p, 0);
    zkl_multilock_free(mu);
    zkl_multilock_free(m2);
    for (int i = 0; i < 3; i++)
        zkl_lock_free(l[i]);
    free(p), free(q);
}
END_TEST

struct mwaiter {
    zkl_multilock *ml;
    zkl_cancel *h;
    atomic_int rc, returned;
};

static void *mwaiter_main(void *arg)
{
    struct mwaiter *w = arg;
    atomic_store(&w->rc, zkl_multilock_acquire_cancellable(w->ml, ZKL_WAIT_FOREVER, w->h));
    atomic_store(&w->returned, 1);
    return NULL;
}

static bool mreturned(void *arg)
{
    return atomic_load(&((struct mwaiter *)arg)->returned) != 0;
}

START_TEST(test_multilock_cancellable_blocking)
{
    struct three t;
    three_init(&t, "ml-cancel");
    zkl_client *h = tu_client(10000), *c = tu_client(10000);
    zkl_mutex *hm;
    ck_assert_int_eq(zkl_mutex_new(h, t.p[1], &hm), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hm, 5000), 0);
    const char *paths[3] = {t.p[0], t.p[1], t.p[2]};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new(c, paths, 3, &ml), 0);
    struct mwaiter w = {.ml = ml};
    ck_assert_int_eq(zkl_cancel_new(&w.h), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, mwaiter_main, &w), 0);
    wait_kids_at_least(t.p[1], 2);
    ck_assert_int_eq(tu_children(tu_fixture_zk, t.p[0]), 1);
    ck_assert(!mreturned(&w));
    ck_assert_int_eq(zkl_cancel_fire(w.h), 0);
    ck_assert(tu_wait_until(mreturned, &w, PROMPT_MS));
    pthread_join(th, NULL);
    ck_assert_int_eq(atomic_load(&w.rc), ZKL_ECANCELED);
    wait_kids(t.p[0], 0);
    wait_kids(t.p[1], 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, t.p[2]), 0);
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    /* Fired already: refused at once. A NULL handle: as the plain call. */
    ck_assert_int_eq(zkl_multilock_acquire_cancellable(ml, 5000, w.h), ZKL_ECANCELED);
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
    ck_assert_int_eq(zkl_multilock_acquire_cancellable(ml, 5000, NULL), 0);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    for (int i = 0; i < 3; i++)
        wait_kids(t.p[i], 0);
    zkl_cancel_free(w.h);
    zkl_multilock_free(ml);
    zkl_mutex_free(hm);
    zkl_client_close(c);
    zkl_client_close(h);
    three_free(&t);
}
END_TEST
/* ---- the read-write lock and the semaphore-mutex -------------------------- */

/* Readers share, a writer waits for them and readers queue behind it; a
 * semaphore-mutex's own hold and its requests exclude each other. */
START_TEST(test_rwlock_and_semmutex_requests)
{
    char *p = tu_path("rw"), *q = tu_path("sm");
    zkl_client *c = tu_test_client(10000);
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

    zkl_semmutex *sm = tu_test_semmutex(c, q);
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
    free(p), free(q);
}
END_TEST
/* ---- the mutex: many requests on one client ---------------------------------- */

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
    zkl_client *c = tu_test_client(20000);
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
    char *p = tu_test_path("one");
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
}
END_TEST
/* ---- the client's calls ---------------------------------------------------- */

static void count_cb(zkl_request *r, int result, void *arg)
{
    (void)r, (void)result;
    atomic_fetch_add((atomic_int *)arg, 1);
}

static bool count_reached(void *arg)
{
    return atomic_load((atomic_int *)arg) >= 20;
}

/* A freed request is no longer registered as an open object: none is left
 * behind (which grew the table by one per request, and, once a lock object
 * came at a freed request's address, could make its free abort as "still
 * in use"). */
START_TEST(test_freed_requests_are_forgotten)
{
    zkl_client *c = tu_test_client(20000);
    char *p = tu_path("forget");
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    size_t before = zkl__obj_count();
    atomic_int done = 0;
    zkl_request *rs[20];
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(zkl_mutex_acquire_async(m, 0, count_cb, &done, &rs[i]), 0);
    ck_assert(tu_wait_until(count_reached, &done, 60000));
    for (int i = 0; i < 20; i++) {
        if (zkl_request_is_held(rs[i]))
            ck_assert_int_eq(zkl_request_release(rs[i]), 0);
        zkl_request_free(rs[i]);
    }
    ck_assert_uint_eq(zkl__obj_count(), before);
    wait_kids(p, 0);
    zkl_mutex_free(m);
    ck_assert_uint_eq(zkl__obj_count(), before - 1);
    free(p);
}
END_TEST

START_TEST(test_bad_arguments)
{
    char *p = tu_test_path("bad");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m = tu_test_mutex(c, p);
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
    zkl_client *h = tu_test_client(10000);
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
}
END_TEST

/* ---- callbacks one at a time ---------------------------------------------- */

/* Counts the callbacks in and out: one that finds another inside is an
 * overlap. The first stays inside until the close has begun, and then a
 * while longer, for another to come in if the library lets it. */
struct overlap {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inside, calls, overlaps;
    bool closing; /* the test is about to close the client */
};

#define OVERLAP_WINDOW_MS 100

static void overlap_cb(zkl_request *r, int result, void *arg)
{
    (void)r;
    (void)result;
    struct overlap *o = arg;
    pthread_mutex_lock(&o->mu);
    if (o->inside++ > 0)
        o->overlaps++;
    if (o->calls++ == 0) {
        pthread_cond_broadcast(&o->cv);
        while (!o->closing)
            pthread_cond_wait(&o->cv, &o->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += OVERLAP_WINDOW_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        while (o->calls == 1 && pthread_cond_timedwait(&o->cv, &o->mu, &until) == 0)
            ;
    }
    o->inside--;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

struct dispatcher {
    zkl_client *c;
    int fd;
    struct overlap *o;
};

/* Dispatch until the first callback has run. */
static void *dispatcher_main(void *arg)
{
    struct dispatcher *d = arg;
    for (;;) {
        pthread_mutex_lock(&d->o->mu);
        int calls = d->o->calls;
        pthread_mutex_unlock(&d->o->mu);
        if (calls > 0 || !fd_readable(d->fd, PROMPT_MS))
            break;
        (void)zkl_client_dispatch(d->c);
    }
    return NULL;
}

/* zkl_client_close while another thread is inside zkl_client_dispatch,
 * running a callback: the close's own callbacks (ZKL_ECLOSED for what is
 * pending) wait for it, as callbacks run one at a time. */
START_TEST(test_close_during_a_dispatch_runs_no_callback_beside_it)
{
    char *held = tu_test_path("overlap-held");
    zkl_mutex *hm = tu_test_holder(held);
    int64_t end = tu_now_ms() + 20000;
    for (int i = 0; i < 20 && tu_now_ms() < end; i++) {
        char leaf[32];
        snprintf(leaf, sizeof leaf, "overlap-%d", i);
        char *p = tu_path(leaf);
        struct overlap o = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
        zkl_client *c = tu_client(10000);
        int fd;
        ck_assert_int_eq(zkl_client_event_fd(c, &fd), 0);
        zkl_mutex *waits, *gets;
        ck_assert_int_eq(zkl_mutex_new(c, held, &waits), 0);
        ck_assert_int_eq(zkl_mutex_new(c, p, &gets), 0);
        zkl_request *rw, *rg;
        ck_assert_int_eq(zkl_mutex_acquire_async(waits, ZKL_WAIT_FOREVER, overlap_cb, &o, &rw), 0);
        wait_kids_at_least(held, 2);
        ck_assert_int_eq(zkl_mutex_acquire_async(gets, ZKL_WAIT_FOREVER, overlap_cb, &o, &rg), 0);
        struct dispatcher d = {c, fd, &o};
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, dispatcher_main, &d), 0);
        pthread_mutex_lock(&o.mu);
        while (o.calls == 0)
            pthread_cond_wait(&o.cv, &o.mu); /* the dispatcher's deadline bounds it */
        o.closing = true;
        pthread_cond_broadcast(&o.cv);
        pthread_mutex_unlock(&o.mu);
        zkl_client_close(c);
        pthread_join(th, NULL);
        ck_assert_msg(o.overlaps == 0, "round %d: two callbacks ran at once", i);
        ck_assert_int_eq(o.calls, 2);
        zkl_request_free(rg);
        zkl_request_free(rw);
        zkl_mutex_free(gets);
        zkl_mutex_free(waits);
        free(p);
    }
    ck_assert_int_eq(zkl_mutex_release(hm), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_semaphore_grant_many_then_wait_behind_full,
        test_semaphore_limit_mismatch_leaves_nothing,
        test_semaphore_limit_answer_late_times_out_at_the_deadline,
        test_semaphore_lease_behind_an_uncounted_lease_waits_for_room,
        test_semaphore_hundreds_of_requests_never_exceed_the_limit,
        test_multilock_grant_mixed_members_then_release,
        test_multilock_all_or_nothing_on_timeout_and_cancel,
        test_multilock_refuses_user_locks_and_two_clients,
        test_multilock_cancellable_blocking,
        test_rwlock_and_semmutex_requests,
        test_thousands_on_distinct_paths,
        test_thousands_on_one_path_exclude_each_other,
        test_freed_requests_are_forgotten,
        test_bad_arguments,
        test_close_during_a_dispatch_runs_no_callback_beside_it,
        NULL,
    };
    return tu_run_zk_case("async_more", 300, tests);
}
