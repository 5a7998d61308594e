/* Lock metrics against a real ZooKeeper: each counter moves exactly as the
 * attempts say (acquired, timeouts, cancels, losses, handoffs, releases),
 * per lock path apart and in total, histograms count what they should, the
 * Prometheus text says what the structs say, and misuse is refused. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define PROMPT_MS 10000

static zkl_metrics get(zkl_client *c)
{
    zkl_metrics m = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_metrics(c, &m), 0);
    return m;
}

static zkl_metrics get_path(zkl_client *c, const char *path)
{
    zkl_metrics m = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(c, path, &m), 0);
    return m;
}

static uint64_t bucket_sum(const zkl_histogram *h)
{
    uint64_t s = 0;
    for (int i = 0; i < ZKL_HISTOGRAM_BUCKETS; i++)
        s += h->buckets[i];
    return s;
}

/* Lock counters of one struct, all at once. */
static void expect(const zkl_metrics *m, uint64_t acquired, uint64_t timeouts, uint64_t cancels,
                   uint64_t losses, uint64_t handoffs, uint64_t releases)
{
    ck_assert_uint_eq(m->acquired, acquired);
    ck_assert_uint_eq(m->timeouts, timeouts);
    ck_assert_uint_eq(m->cancels, cancels);
    ck_assert_uint_eq(m->losses, losses);
    ck_assert_uint_eq(m->handoffs, handoffs);
    ck_assert_uint_eq(m->releases, releases);
    ck_assert_uint_eq(m->failures, 0);
    ck_assert_uint_eq(m->wait.count, acquired);
    ck_assert_uint_eq(bucket_sum(&m->wait), acquired);
    ck_assert_uint_eq(m->hold.count, releases);
    ck_assert_uint_eq(bucket_sum(&m->hold), releases);
}

static void wait_children(const char *path, int want)
{
    ck_assert_msg(tu_wait_children_at_least(tu_fixture_zk, path, want, PROMPT_MS),
                  "no waiter queued under %s", path);
}

/* Wait until client `c` watches a node of another session under `path`
 * (its own node's watch does not say it waits). */
static void wait_watching(zkl_client *c, const char *path)
{
    int64_t sid = 0;
    ck_assert_int_eq(zkl_client_session_id(c, &sid), 0);
    int64_t end = tu_now_ms() + tu_ms(PROMPT_MS);
    for (;;) {
        struct String_vector kids = {0};
        ck_assert_int_eq(zoo_get_children(tu_fixture_zk, path, 0, &kids), ZOK);
        bool seen = false;
        for (int i = 0; i < kids.count && !seen; i++) {
            char full[512];
            snprintf(full, sizeof full, "%s/%s", path, kids.data[i]);
            struct Stat st;
            seen = zoo_exists(tu_fixture_zk, full, 0, &st) == ZOK && st.ephemeralOwner != sid &&
                   tu_session_watches(full, sid);
        }
        deallocate_String_vector(&kids);
        if (seen)
            return;
        ck_assert_msg(tu_now_ms() < end, "no watch of the waiter's under %s", path);
        usleep(5000);
    }
}

START_TEST(test_acquire_and_release_count_once_each)
{
    char *p = tu_test_path("plain");
    zkl_client *c = tu_test_client(10000);
    zkl_metrics m = {.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(c, p, &m), ZKL_ENOENT);
    zkl_mutex *mx = tu_test_mutex(c, p);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(zkl_mutex_acquire(mx, 5000), 0);
        ck_assert_int_eq(zkl_mutex_acquire(mx, 5000), 0); /* reentry: no attempt */
        ck_assert_int_eq(zkl_mutex_release(mx), 0);
        ck_assert_int_eq(zkl_mutex_release(mx), 0);
    }
    zkl_metrics t = get(c), pm = get_path(c, p);
    expect(&t, 3, 0, 0, 0, 0, 3);
    expect(&pm, 3, 0, 0, 0, 0, 3);
    /* Every lock request was for this path; the client counted them all. */
    ck_assert_uint_gt(pm.requests, 0);
    ck_assert_uint_eq(pm.requests, t.requests);
    ck_assert_uint_ge(t.requests_all, t.requests);
    ck_assert_uint_eq(t.creates, 3);
    ck_assert_uint_eq(t.deletes, 3);
    ck_assert_uint_eq(t.sessions, 1);
    /* Client-wide counters are not a lock path's. */
    ck_assert_uint_eq(pm.creates, 0);
    ck_assert_uint_eq(pm.requests_all, 0);
    zkl_client_stats st;
    ck_assert_int_eq(zkl_client_get_stats(c, &st), 0);
    ck_assert_uint_eq(st.requests, t.requests_all);
    ck_assert_uint_eq(st.creates, t.creates);
}
END_TEST

START_TEST(test_timeouts_and_a_handoff)
{
    char *p = tu_test_path("contended");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_mutex *ha = tu_test_mutex(a, p), *hb = tu_test_mutex(b, p);
    ck_assert_int_eq(zkl_mutex_acquire(ha, 5000), 0);
    ck_assert_int_eq(zkl_mutex_acquire(hb, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_acquire(hb, 200), ZKL_ETIMEDOUT);
    zkl_metrics mb = get(b);
    expect(&mb, 0, 2, 0, 0, 0, 0);
    /* The timed-out attempt may have left its watch on the holder's node
     * (a watch stays until it fires), which wait_watching would take for
     * the waiter's, before the waiter has even listed. Hold on a fresh
     * node: only the waiter below can watch that one. */
    ck_assert_int_eq(zkl_mutex_release(ha), 0);
    ck_assert_int_eq(zkl_mutex_acquire(ha, 5000), 0);

    zkl_lock *lb;
    ck_assert_int_eq(zkl_mutex_as_lock(hb, &lb), 0);
    struct tu_acquirer w;
    tu_acquirer_start(&w, lb, ZKL_WAIT_FOREVER, true);
    wait_children(p, 2);
    wait_watching(b, p); /* the waiter has seen the holder: it waits */
    ck_assert_int_eq(zkl_mutex_release(ha), 0);
    ck_assert_int_eq(tu_acquirer_join(&w), 0);
    ck_assert_int_eq(w.release_rc, 0);
    zkl_lock_free(lb);

    mb = get(b);
    expect(&mb, 1, 2, 0, 0, 1, 1);
    zkl_metrics pb = get_path(b, p);
    expect(&pb, 1, 2, 0, 0, 1, 1);
    zkl_metrics ma = get(a);
    expect(&ma, 2, 0, 0, 0, 0, 2);
}
END_TEST

START_TEST(test_cancel_counts_waiting_and_later_attempts)
{
    char *p = tu_test_path("cancel");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(30000);
    zkl_mutex *ha = tu_test_held_mutex(a, p), *hb = tu_test_mutex(b, p);
    zkl_lock *lb;
    ck_assert_int_eq(zkl_mutex_as_lock(hb, &lb), 0);
    struct tu_acquirer w;
    tu_acquirer_start(&w, lb, ZKL_WAIT_FOREVER, true);
    wait_children(p, 2);
    ck_assert_int_eq(zkl_client_cancel(b), 0);
    ck_assert_int_eq(tu_acquirer_join(&w), ZKL_ECANCELED);
    zkl_lock_free(lb);
    zkl_metrics mb = get(b);
    expect(&mb, 0, 0, 1, 0, 0, 0);
    /* An acquire on a cancelled client is an attempt too. */
    ck_assert_int_eq(zkl_mutex_acquire(hb, ZKL_WAIT_FOREVER), ZKL_ECANCELED);
    mb = get(b);
    expect(&mb, 0, 0, 2, 0, 0, 0);
    zkl_metrics pb = get_path(b, p);
    expect(&pb, 0, 0, 2, 0, 0, 0);
    ck_assert_int_eq(zkl_mutex_release(ha), 0);
}
END_TEST

static bool lost_one(void *arg)
{
    zkl_metrics m = {.version = ZKL_METRICS_VERSION};
    return zkl_client_metrics(arg, &m) == 0 && m.losses == 1;
}

START_TEST(test_a_hold_lost_with_its_session_counts_once)
{
    char *p = tu_test_path("lost");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *mx = tu_test_held_mutex(c, p);
    tu_expire_session(c);
    ck_assert(tu_wait_until(lost_one, c, 20000));
    ck_assert_int_eq(zkl_mutex_release(mx), ZKL_ELOST);
    zkl_metrics m = get(c);
    expect(&m, 1, 0, 0, 1, 0, 1);
    zkl_metrics pm = get_path(c, p);
    expect(&pm, 1, 0, 0, 1, 0, 1);
}
END_TEST

START_TEST(test_lock_paths_are_counted_apart)
{
    char *p1 = tu_path("one"), *p2 = tu_path("two"), *p3 = tu_path("sem");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m1 = tu_test_mutex(c, p1), *m2 = tu_test_mutex(c, p2);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(zkl_mutex_acquire(m1, 5000), 0);
        ck_assert_int_eq(zkl_mutex_release(m1), 0);
    }
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(zkl_mutex_acquire(m2, 5000), 0);
        ck_assert_int_eq(zkl_mutex_release(m2), 0);
    }
    /* A semaphore's lease is one attempt, its gate none of its own. */
    zkl_semaphore *s;
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_new(c, p3, 2, &s), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(s, 5000, &l), 0);
    ck_assert_int_eq(zkl_lease_release(l), 0);
    zkl_semaphore_free(s);
    /* The gate node goes a moment after the acquire returned: its delete
     * counted before the counters are read one after another. */
    tu_expect_contenders(p3, 0);

    zkl_metrics a = get_path(c, p1), b = get_path(c, p2), d = get_path(c, p3), t = get(c);
    expect(&a, 2, 0, 0, 0, 0, 2);
    expect(&b, 3, 0, 0, 0, 0, 3);
    expect(&d, 1, 0, 0, 0, 0, 1);
    expect(&t, 6, 0, 0, 0, 0, 6);
    ck_assert_uint_eq(a.requests + b.requests + d.requests, t.requests);
    ck_assert_uint_eq(a.wait.sum_us + b.wait.sum_us + d.wait.sum_us, t.wait.sum_us);

    char **paths;
    size_t n;
    ck_assert_int_eq(zkl_client_metrics_paths(c, &paths, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(paths[0], p1); /* byte order: .../one, .../sem, .../two */
    ck_assert_str_eq(paths[1], p3);
    ck_assert_str_eq(paths[2], p2);
    zkl_client_metrics_paths_free(paths, n);
    free(p1), free(p2), free(p3);
}
END_TEST

struct sem_waiter {
    zkl_semaphore *s;
    int rc;
    pthread_t th;
};

static void *sem_waiter_main(void *arg)
{
    struct sem_waiter *w = arg;
    zkl_lease *l;
    w->rc = zkl_semaphore_acquire(w->s, ZKL_WAIT_FOREVER, &l);
    if (w->rc == 0)
        ck_assert_int_eq(zkl_lease_release(l), 0);
    return NULL;
}

START_TEST(test_semaphore_handoff_and_a_wrong_limit)
{
    char *p = tu_test_path("sem");
    zkl_client *a = tu_test_client(10000), *b = tu_test_client(10000);
    zkl_semaphore *sa, *sb;
    zkl_lease *la;
    ck_assert_int_eq(zkl_semaphore_new(a, p, 1, &sa), 0);
    ck_assert_int_eq(zkl_semaphore_new(b, p, 1, &sb), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(sa, 5000, &la), 0);
    struct sem_waiter w = {.s = sb, .rc = 1};
    ck_assert_int_eq(pthread_create(&w.th, NULL, sem_waiter_main, &w), 0);
    /* The waiter watches the lease: it has seen no room, and waits (the
     * holder's gate node may outlive its acquire a moment, so a count of
     * children alone does not say the waiter came). */
    wait_watching(b, p);
    ck_assert_int_eq(zkl_lease_release(la), 0);
    pthread_join(w.th, NULL);
    ck_assert_int_eq(w.rc, 0);
    zkl_metrics mb = get_path(b, p), ma = get_path(a, p);
    expect(&mb, 1, 0, 0, 0, 1, 1); /* the gate waited: a handoff */
    expect(&ma, 1, 0, 0, 0, 0, 1);

    /* The limit recorded anew behind the object's back: the gate is
     * passed, no lease is tried, the attempt is one failure. */
    ck_assert_int_eq(zoo_set(tu_fixture_zk, p, "max_leases=5", 12, -1), ZOK);
    ck_assert_int_eq(zkl_semaphore_acquire(sb, 5000, &la), ZKL_EMISMATCH);
    mb = get_path(b, p);
    ck_assert_uint_eq(mb.failures, 1);
    ck_assert_uint_eq(mb.acquired, 1);
    ck_assert_uint_eq(mb.wait.count, 1);
    zkl_semaphore_free(sa);
    zkl_semaphore_free(sb);
}
END_TEST

START_TEST(test_multilock_members_and_rwlock_sides_count_per_path)
{
    char *p1 = tu_path("m1"), *p2 = tu_path("m2"), *rp = tu_path("rw");
    zkl_client *c = tu_test_client(10000);
    const char *paths[] = {p1, p2};
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new(c, paths, 2, &ml), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0);
    ck_assert_int_eq(zkl_multilock_acquire(ml, 5000), 0); /* reentry: no attempt */
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    ck_assert_int_eq(zkl_multilock_release(ml), 0);
    zkl_multilock_free(ml);
    zkl_rwlock *rw;
    ck_assert_int_eq(zkl_rwlock_new(c, rp, &rw), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    zkl_rwlock_free(rw);
    zkl_metrics a = get_path(c, p1), b = get_path(c, p2), r = get_path(c, rp), t = get(c);
    expect(&a, 1, 0, 0, 0, 0, 1);
    expect(&b, 1, 0, 0, 0, 0, 1);
    expect(&r, 2, 0, 0, 0, 0, 2);
    expect(&t, 4, 0, 0, 0, 0, 4);
    free(p1), free(p2), free(rp);
}
END_TEST

/* The value of sample `name` with label path="<escaped>" (or no label
 * when path is NULL) in Prometheus text; -1 if absent. */
static double sample(const char *text, const char *name, const char *esc_path, const char *le)
{
    char want[2048];
    if (esc_path == NULL)
        snprintf(want, sizeof want, "%s ", name);
    else if (le == NULL)
        snprintf(want, sizeof want, "%s{path=\"%s\"} ", name, esc_path);
    else
        snprintf(want, sizeof want, "%s{path=\"%s\",le=\"%s\"} ", name, esc_path, le);
    size_t wl = strlen(want);
    for (const char *line = text; *line; ) {
        const char *end = strchr(line, '\n');
        ck_assert_msg(end != NULL, "line without newline");
        if (strncmp(line, want, wl) == 0)
            return strtod(line + wl, NULL);
        line = end + 1;
    }
    return -1;
}

static char *render(zkl_client *c)
{
    size_t need = 0;
    ck_assert_int_eq(zkl_client_metrics_write(c, NULL, 0, &need), ZKL_ERANGE);
    char *buf = malloc(need + 1);
    size_t got = 0;
    ck_assert_int_eq(zkl_client_metrics_write(c, buf, need + 1, &got), 0);
    ck_assert_uint_eq(got, need);
    ck_assert_uint_eq(strlen(buf), need);
    return buf;
}

START_TEST(test_prometheus_text_says_what_the_structs_say)
{
    /* A quote and a backslash in the path: the label escapes them. */
    char *p = tu_path("we\"ird\\one"), *q = tu_path("other");
    zkl_client *c = tu_test_client(10000), *a = tu_test_client(10000);
    zkl_mutex *mx = tu_test_mutex(c, p), *mq = tu_test_mutex(c, q), *ma = tu_test_mutex(a, q);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(zkl_mutex_acquire(mx, 5000), 0);
        ck_assert_int_eq(zkl_mutex_release(mx), 0);
    }
    ck_assert_int_eq(zkl_mutex_acquire(ma, 5000), 0);
    ck_assert_int_eq(zkl_mutex_acquire(mq, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_mutex_acquire(mx, 5000), 0); /* held: a hold not ended */
    ck_assert_int_eq(zkl_mutex_release(ma), 0);

    char *text = render(c);
    ck_assert_ptr_nonnull(strstr(text, "# TYPE zkl_lock_acquired_total counter\n"));
    ck_assert_ptr_nonnull(strstr(text, "# HELP zkl_lock_wait_seconds "));
    ck_assert_ptr_nonnull(strstr(text, "# TYPE zkl_lock_wait_seconds histogram\n"));
    ck_assert_ptr_nonnull(strstr(text, "# TYPE zkl_client_requests_total counter\n"));
    /* The escaped label: \" and \\. */
    const char *leaf = strrchr(p, '/');
    char esc[1024];
    snprintf(esc, sizeof esc, "%.*s/we\\\"ird\\\\one", (int)(leaf - p), p);
    ck_assert_ptr_null(strstr(text, p)); /* never unescaped */

    const char *const paths[2] = {p, q};
    const char *const escs[2] = {esc, q};
    for (int i = 0; i < 2; i++) {
        zkl_metrics m = get_path(c, paths[i]);
        const char *e = escs[i];
        ck_assert_double_eq(sample(text, "zkl_lock_acquired_total", e, NULL), (double)m.acquired);
        ck_assert_double_eq(sample(text, "zkl_lock_timeouts_total", e, NULL), (double)m.timeouts);
        ck_assert_double_eq(sample(text, "zkl_lock_cancels_total", e, NULL), (double)m.cancels);
        ck_assert_double_eq(sample(text, "zkl_lock_failures_total", e, NULL), (double)m.failures);
        ck_assert_double_eq(sample(text, "zkl_lock_losses_total", e, NULL), (double)m.losses);
        ck_assert_double_eq(sample(text, "zkl_lock_handoffs_total", e, NULL), (double)m.handoffs);
        ck_assert_double_eq(sample(text, "zkl_lock_releases_total", e, NULL), (double)m.releases);
        ck_assert_double_eq(sample(text, "zkl_lock_requests_total", e, NULL), (double)m.requests);
        ck_assert_double_eq(sample(text, "zkl_lock_wait_seconds_count", e, NULL),
                            (double)m.wait.count);
        ck_assert_double_eq(sample(text, "zkl_lock_hold_seconds_count", e, NULL),
                            (double)m.hold.count);
        ck_assert_double_eq(sample(text, "zkl_lock_wait_seconds_bucket", e, "+Inf"),
                            (double)m.wait.count);
        /* Cumulative buckets: le=2^b us holds the sum of buckets 0..b. */
        uint64_t cum = 0;
        for (int b = 0; b + 1 < ZKL_HISTOGRAM_BUCKETS; b++) {
            cum += m.hold.buckets[b];
            char le[32];
            snprintf(le, sizeof le, "%.9g", (double)((uint64_t)1 << b) / 1e6);
            ck_assert_double_eq(sample(text, "zkl_lock_hold_seconds_bucket", e, le), (double)cum);
        }
        double sum = sample(text, "zkl_lock_wait_seconds_sum", e, NULL);
        ck_assert_double_eq_tol(sum, (double)m.wait.sum_us / 1e6, 1e-6);
    }
    zkl_metrics pm = get_path(c, p), qm = get_path(c, q);
    expect(&pm, 5, 0, 0, 0, 0, 4);
    expect(&qm, 0, 1, 0, 0, 0, 0);
    zkl_metrics t = get(c);
    ck_assert_double_eq(sample(text, "zkl_client_requests_total", NULL, NULL),
                        (double)t.requests_all);
    ck_assert_double_eq(sample(text, "zkl_client_creates_total", NULL, NULL), (double)t.creates);
    ck_assert_double_eq(sample(text, "zkl_client_sessions_total", NULL, NULL), 1.0);
    free(text);

    /* The same text through a FILE. */
    char *mem = NULL;
    size_t memlen = 0;
    FILE *f = open_memstream(&mem, &memlen);
    ck_assert_int_eq(zkl_client_metrics_fprint(c, f), 0);
    fclose(f);
    text = render(c);
    ck_assert_str_eq(mem, text);
    free(text);
    free(mem);

    ck_assert_int_eq(zkl_mutex_release(mx), 0);
    free(p), free(q);
}
END_TEST

START_TEST(test_a_small_buffer_gets_the_needed_size)
{
    char *p = tu_test_path("small");
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *mx = tu_test_held_mutex(c, p);
    ck_assert_int_eq(zkl_mutex_release(mx), 0);
    char small[16];
    size_t need = 0;
    ck_assert_int_eq(zkl_client_metrics_write(c, small, sizeof small, &need), ZKL_ERANGE);
    ck_assert_uint_gt(need, sizeof small);
    ck_assert_uint_eq(strlen(small), sizeof small - 1); /* a terminated start */
    ck_assert_int_eq(strncmp(small, "# HELP ", 7), 0);
    /* Exactly the length leaves no room for the NUL. */
    char *buf = malloc(need + 1);
    size_t got = 0;
    ck_assert_int_eq(zkl_client_metrics_write(c, buf, need, &got), ZKL_ERANGE);
    ck_assert_uint_eq(got, need);
    ck_assert_int_eq(zkl_client_metrics_write(c, buf, need + 1, &got), 0);
    ck_assert_uint_eq(strlen(buf), need);
    free(buf);
}
END_TEST

START_TEST(test_null_arguments_and_versions_are_refused)
{
    zkl_client *c = tu_test_client(10000);
    zkl_metrics m = {.version = ZKL_METRICS_VERSION};
    char buf[8];
    char **paths;
    size_t n;
    ck_assert_int_eq(zkl_client_metrics(NULL, &m), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_metrics(c, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_path_metrics(NULL, "/x", &m), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_path_metrics(c, NULL, &m), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_path_metrics(c, "/x", NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_metrics_paths(NULL, &paths, &n), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_metrics_paths(c, NULL, &n), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_metrics_paths(c, &paths, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_metrics_write(NULL, buf, sizeof buf, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_metrics_write(c, NULL, 8, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_metrics_fprint(NULL, stdout), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_metrics_fprint(c, NULL), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_metrics(NULL, 1), ZKL_EINVAL);
    zkl_client_metrics_paths_free(NULL, 0);
    /* A version this library does not know, or none: refused, untouched. */
    m.version = 0;
    ck_assert_int_eq(zkl_client_metrics(c, &m), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_path_metrics(c, "/x", &m), ZKL_EINVAL);
    m.version = ZKL_METRICS_VERSION + 1;
    m.acquired = 77;
    ck_assert_int_eq(zkl_client_metrics(c, &m), ZKL_EINVAL);
    ck_assert_uint_eq(m.acquired, 77);
    ck_assert_str_eq(zkl_err_name(ZKL_ERANGE), "ERANGE");
    ck_assert_str_eq(zkl_err_name(ZKL_ENOENT), "ENOENT");
}
END_TEST

START_TEST(test_metrics_off_count_nothing)
{
    char *p = tu_test_path("off");
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_metrics(o, 0), 0);
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), 0);
    zkl_client_opts_free(o);
    zkl_mutex *mx = tu_test_held_mutex(c, p);
    ck_assert_int_eq(zkl_mutex_release(mx), 0);
    zkl_metrics m = get(c);
    expect(&m, 0, 0, 0, 0, 0, 0);
    ck_assert_uint_eq(m.requests, 0);
    ck_assert_uint_eq(m.creates, 1); /* the client's own counters still count */
    ck_assert_int_eq(zkl_client_path_metrics(c, p, &m), ZKL_ENOENT);
    char **paths = (char **)&m;
    size_t n = 9;
    ck_assert_int_eq(zkl_client_metrics_paths(c, &paths, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(paths);
    zkl_client_close(c);
}
END_TEST

/* Lines of `text` that start with `prefix`. */
static int lines_with(const char *text, const char *prefix)
{
    int n = 0;
    size_t pl = strlen(prefix);
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        n += strncmp(line, prefix, pl) == 0;
        line = end ? end + 1 : line + strlen(line);
    }
    return n;
}

/* Acquire and release once on each of `n` lock paths leaf<i> of root. */
static void lock_paths(zkl_client *c, const char *leaf, int n)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%d", leaf, i);
        char *p = tu_path(name);
        zkl_mutex *m;
        ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
        ck_assert_int_eq(zkl_mutex_acquire(m, PROMPT_MS), 0);
        ck_assert_int_eq(zkl_mutex_release(m), 0);
        zkl_mutex_free(m);
        free(p);
    }
}

START_TEST(test_paths_beyond_the_cap_count_in_the_totals_only)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_max_metric_paths(o, -1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_max_metric_paths(NULL, 3), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_max_metric_paths(o, 3), 0);
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), 10000, o, &c), 0);
    zkl_client_opts_free(o);
    lock_paths(c, "capped", 5);
    lock_paths(c, "capped", 5); /* again: the first three stay tracked */

    char **paths;
    size_t n;
    ck_assert_int_eq(zkl_client_metrics_paths(c, &paths, &n), 0);
    ck_assert_uint_eq(n, 3);
    zkl_client_metrics_paths_free(paths, n);
    char *first = tu_path("capped0"), *last = tu_path("capped4");
    zkl_metrics m = get_path(c, first);
    expect(&m, 2, 0, 0, 0, 0, 2);
    m = (zkl_metrics){.version = ZKL_METRICS_VERSION};
    ck_assert_int_eq(zkl_client_path_metrics(c, last, &m), ZKL_ENOENT);
    zkl_metrics t = get(c);
    expect(&t, 10, 0, 0, 0, 0, 10); /* every path, tracked or not */

    /* The text: three paths with labels, the client's totals without. */
    char *text = render(c);
    ck_assert_int_eq(lines_with(text, "zkl_lock_acquired_total{path="), 3);
    ck_assert_double_eq(sample(text, "zkl_client_lock_acquired_total", NULL, NULL), 10.0);
    ck_assert_double_eq(sample(text, "zkl_client_lock_releases_total", NULL, NULL), 10.0);
    ck_assert_double_eq(sample(text, "zkl_client_lock_timeouts_total", NULL, NULL), 0.0);
    ck_assert_double_eq(sample(text, "zkl_client_lock_wait_seconds_count", NULL, NULL), 10.0);
    ck_assert_double_eq(sample(text, "zkl_client_lock_hold_seconds_count", NULL, NULL), 10.0);
    ck_assert_ptr_nonnull(strstr(text, "\nzkl_client_lock_wait_seconds_bucket{le=\"+Inf\"} 10\n"));
    ck_assert_ptr_nonnull(strstr(text, "# TYPE zkl_client_lock_hold_seconds histogram\n"));
    ck_assert_double_eq(sample(text, "zkl_client_lock_paths", NULL, NULL), 3.0);
    free(text);
    zkl_client_close(c);
    free(first);
    free(last);
}
END_TEST

START_TEST(test_the_default_cap_bounds_the_paths_tracked)
{
    zkl_client *c = tu_client(10000);
    lock_paths(c, "many", 130);
    char **paths;
    size_t n;
    ck_assert_int_eq(zkl_client_metrics_paths(c, &paths, &n), 0);
    ck_assert_uint_eq(n, 100);
    zkl_client_metrics_paths_free(paths, n);
    zkl_metrics t = get(c);
    ck_assert_uint_eq(t.acquired, 130);
    char *text = render(c);
    ck_assert_int_eq(lines_with(text, "zkl_lock_acquired_total{path="), 100);
    free(text);
    zkl_client_close(c);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_acquire_and_release_count_once_each,
        test_timeouts_and_a_handoff,
        test_cancel_counts_waiting_and_later_attempts,
        test_a_hold_lost_with_its_session_counts_once,
        test_lock_paths_are_counted_apart,
        test_semaphore_handoff_and_a_wrong_limit,
        test_multilock_members_and_rwlock_sides_count_per_path,
        test_prometheus_text_says_what_the_structs_say,
        test_a_small_buffer_gets_the_needed_size,
        test_null_arguments_and_versions_are_refused,
        test_metrics_off_count_nothing,
        test_paths_beyond_the_cap_count_in_the_totals_only,
        test_the_default_cap_bounds_the_paths_tracked,
        NULL,
    };
    return tu_run_zk_case("metrics", 120, tests);
}
