/* Locks against an outsider: another ZooKeeper handle that deletes
 * contender nodes (mid-wait, mid-hold), deletes the whole lock path, or
 * an ACL that refuses a listing, a read or a delete; and session ends
 * that take many holds at once. The invariants checked are the ones a
 * lock exists for: never two holders, a holder that lost its node is told,
 * no node is left behind by a failed call, and no call spins. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

#define SECRET "alice:s3cr3t-Pw-4711"
#define BOB "bob:b0b-Pw-0815"

/* ---- one recipe behind one small interface ------------------------------ */

enum kind { K_MUTEX, K_PREFETCH, K_SEMMUTEX, K_WRITE, K_READ, K_NKINDS };
static const char *const kind_name[] = {"mutex", "prefetch", "semmutex", "write", "read"};

struct rec {
    enum kind k;
    zkl_client *c;
    zkl_mutex *m;
    zkl_semmutex *sm;
    zkl_rwlock *rw;
    pthread_mutex_t mu;
    int lost;        /* lost callbacks (mu) */
    int64_t lost_tok;
};

static void rec_lost(struct rec *r, int64_t token)
{
    pthread_mutex_lock(&r->mu);
    r->lost++;
    r->lost_tok = token;
    pthread_mutex_unlock(&r->mu);
}

static void on_mutex_lost(zkl_mutex *m, int64_t token, void *arg)
{
    (void)m;
    rec_lost(arg, token);
}

static void on_semmutex_lost(zkl_semmutex *s, int64_t token, void *arg)
{
    (void)s;
    rec_lost(arg, token);
}

static void on_rw_lost(zkl_rwlock *rw, int write, int64_t token, void *arg)
{
    (void)rw, (void)write;
    rec_lost(arg, token);
}

static struct rec *rec_new(zkl_client *c, const char *path, enum kind k)
{
    struct rec *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    r->k = k;
    r->c = c;
    pthread_mutex_init(&r->mu, NULL);
    switch (k) {
    case K_MUTEX:
    case K_PREFETCH:
        ck_assert_int_eq(tu_mutex_new_prefetch(c, path, k == K_PREFETCH, &r->m), 0);
        ck_assert_int_eq(zkl_mutex_set_lost_fn(r->m, on_mutex_lost, r), 0);
        break;
    case K_SEMMUTEX:
        ck_assert_int_eq(zkl_semmutex_new(c, path, &r->sm), 0);
        ck_assert_int_eq(zkl_semmutex_set_lost_fn(r->sm, on_semmutex_lost, r), 0);
        break;
    default:
        ck_assert_int_eq(zkl_rwlock_new(c, path, &r->rw), 0);
        ck_assert_int_eq(zkl_rwlock_set_lost_fn(r->rw, on_rw_lost, r), 0);
        break;
    }
    return r;
}

/* For the read-write lock, `write` picks the side of K_READ objects: a test
 * that needs an exclusive competitor uses the write side. */
static int rec_acquire_side(struct rec *r, long ms, bool write)
{
    switch (r->k) {
    case K_MUTEX:
    case K_PREFETCH:
        return zkl_mutex_acquire(r->m, ms);
    case K_SEMMUTEX:
        return zkl_semmutex_acquire(r->sm, ms);
    case K_WRITE:
        return zkl_rwlock_write_acquire(r->rw, ms);
    default:
        return write ? zkl_rwlock_write_acquire(r->rw, ms) : zkl_rwlock_read_acquire(r->rw, ms);
    }
}

static int rec_acquire(struct rec *r, long ms)
{
    return rec_acquire_side(r, ms, false);
}

static int rec_release_side(struct rec *r, bool write)
{
    switch (r->k) {
    case K_MUTEX:
    case K_PREFETCH:
        return zkl_mutex_release(r->m);
    case K_SEMMUTEX:
        return zkl_semmutex_release(r->sm);
    case K_WRITE:
        return zkl_rwlock_write_release(r->rw);
    default:
        return write ? zkl_rwlock_write_release(r->rw) : zkl_rwlock_read_release(r->rw);
    }
}

static int rec_release(struct rec *r)
{
    return rec_release_side(r, false);
}

static int rec_held_side(struct rec *r, bool write)
{
    switch (r->k) {
    case K_MUTEX:
    case K_PREFETCH:
        return zkl_mutex_is_held(r->m);
    case K_SEMMUTEX:
        return zkl_semmutex_is_held(r->sm);
    case K_WRITE:
        return zkl_rwlock_write_is_held(r->rw);
    default:
        return write ? zkl_rwlock_write_is_held(r->rw) : zkl_rwlock_read_is_held(r->rw);
    }
}

static int rec_held(struct rec *r)
{
    return rec_held_side(r, false);
}

static int64_t rec_token(struct rec *r)
{
    switch (r->k) {
    case K_MUTEX:
    case K_PREFETCH:
        return tu_mutex_token(r->m);
    case K_SEMMUTEX:
        return tu_semmutex_token(r->sm);
    case K_WRITE:
        return tu_rwlock_write_token(r->rw);
    default:
        return tu_rwlock_read_token(r->rw);
    }
}

/* A guarded write, where the recipe has one (not the read side). */
static int rec_guarded_set(struct rec *r, const char *path)
{
    switch (r->k) {
    case K_MUTEX:
    case K_PREFETCH:
        return zkl_mutex_guarded_set(r->m, path, "x", 1);
    case K_SEMMUTEX:
        return zkl_semmutex_guarded_set(r->sm, path, "x", 1);
    case K_WRITE:
        return zkl_rwlock_write_guarded_set(r->rw, path, "x", 1);
    default:
        return ZKL_ELOST;
    }
}

static int rec_lost_calls(struct rec *r, int64_t *tok)
{
    pthread_mutex_lock(&r->mu);
    int n = r->lost;
    if (tok)
        *tok = r->lost_tok;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static void rec_free(struct rec *r)
{
    zkl_mutex_free(r->m);
    zkl_semmutex_free(r->sm);
    zkl_rwlock_free(r->rw);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* ---- helpers ------------------------------------------------------------- */

static uint64_t requests_of(zkl_client *c)
{
    zkl_client_stats st;
    ck_assert_int_eq(zkl_client_get_stats(c, &st), 0);
    return st.requests;
}

static int by_seq(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t lx = strlen(x), ly = strlen(y);
    return strcmp(x + (lx > 10 ? lx - 10 : 0), y + (ly > 10 ? ly - 10 : 0));
}

/* The full path of the child of `dir` at position `idx` in sequence order,
 * malloc'd; NULL if there is none. */
static char *nth_child(const char *dir, int idx)
{
    struct String_vector kids = {0, NULL};
    if (zoo_get_children(tu_fixture_zk, dir, 0, &kids) != ZOK)
        return NULL;
    char *out = NULL;
    if (idx < kids.count) {
        qsort(kids.data, (size_t)kids.count, sizeof *kids.data, by_seq);
        size_t len = strlen(dir) + strlen(kids.data[idx]) + 2;
        out = malloc(len);
        snprintf(out, len, "%s/%s", dir, kids.data[idx]);
    }
    deallocate_String_vector(&kids);
    return out;
}

/* A thread that acquires (the reentrant locks' holds are per thread), says
 * whether it holds, and releases when told to. */
struct waiter {
    struct rec *r;
    long ms;
    bool write;
    int rc;
    int held;         /* is_held right after the acquire */
    int rel_rc;
    atomic_int done;
    atomic_int release; /* 1: release now; 2: just end */
    pthread_t t;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->rc = rec_acquire_side(w->r, w->ms, w->write);
    w->held = rec_held_side(w->r, w->write);
    atomic_store(&w->done, 1);
    if (w->rc != 0)
        return NULL;
    while (atomic_load(&w->release) == 0)
        usleep(1000);
    if (atomic_load(&w->release) == 1)
        w->rel_rc = rec_release_side(w->r, w->write);
    return NULL;
}

static void waiter_start_side(struct waiter *w, struct rec *r, long ms, bool write)
{
    w->r = r;
    w->ms = ms;
    w->write = write;
    w->rc = 1;
    w->held = 0;
    w->rel_rc = 1;
    atomic_store(&w->done, 0);
    atomic_store(&w->release, 0);
    ck_assert_int_eq(pthread_create(&w->t, NULL, waiter_main, w), 0);
}

static void waiter_start(struct waiter *w, struct rec *r, long ms)
{
    waiter_start_side(w, r, ms, false);
}

/* Tell the thread to release (or just to end) and join it. */
static void waiter_finish(struct waiter *w, int how)
{
    atomic_store(&w->release, how);
    pthread_join(w->t, NULL);
}

static bool waiter_done(void *arg)
{
    return atomic_load(&((struct waiter *)arg)->done) != 0;
}

static bool rec_not_held(void *arg)
{
    return rec_held(arg) == 0;
}

static bool rec_told(void *arg)
{
    return rec_lost_calls(arg, NULL) > 0;
}

/* ---- a waiter whose node an outsider deleted ----------------------------- */

/* A holds; B waits behind it; the outsider deletes B's node; A releases.
 * B must not hold on its deleted node: it queues again with a fresh node
 * and holds on that one, and nobody else holds meanwhile. */
static void waiter_node_deleted(enum kind k)
{
    char *p = tu_path(kind_name[k]);
    zkl_client *ca = tu_client(10000), *cb = tu_client(10000), *cc = tu_client(10000);
    struct rec *a = rec_new(ca, p, k), *b = rec_new(cb, p, k), *c = rec_new(cc, p, k);
    ck_assert_int_eq(rec_acquire_side(a, 5000, true), 0);
    struct waiter w;
    waiter_start(&w, b, 20000);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 2, 10000));
    char *bnode = nth_child(p, 1);
    ck_assert_ptr_nonnull(bnode);
    /* B's watches armed (its create, listing and watches each answered
     * before a round trip sent after them), so that the delete below is
     * told by an event. */
    tu_drain(&cb, 1);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, bnode, -1), ZOK);
    /* B queues again behind A: a new node appears. */
    ck_assert(tu_wait_children(tu_fixture_zk, p, 2, 10000));
    char *bnew = nth_child(p, 1);
    ck_assert_ptr_nonnull(bnew);
    ck_assert_str_ne(bnew, bnode);
    ck_assert(!waiter_done(&w));
    ck_assert_int_eq(rec_release_side(a, true), 0);
    ck_assert(tu_wait_until(waiter_done, &w, 15000));
    ck_assert_int_eq(w.rc, 0);
    ck_assert(w.held);
    /* B holds on a node that exists, the only one. */
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert(tu_exists(tu_fixture_zk, bnew));
    /* A third party cannot get in. */
    ck_assert_int_eq(rec_acquire_side(c, 300, true), ZKL_ETIMEDOUT);
    waiter_finish(&w, 1);
    ck_assert_int_eq(w.rel_rc, 0);
    ck_assert_int_eq(rec_acquire_side(c, 5000, true), 0);
    ck_assert_int_eq(rec_release_side(c, true), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    rec_free(a), rec_free(b), rec_free(c);
    zkl_client_close(ca), zkl_client_close(cb), zkl_client_close(cc);
    free(bnode), free(bnew), free(p);
}

START_TEST(test_waiter_whose_node_is_deleted_queues_again_and_never_holds_twice)
{
    waiter_node_deleted((enum kind)_i);
}
END_TEST

/* ---- a holder whose node an outsider deleted ----------------------------- */

static void holder_node_deleted(enum kind k)
{
    char *p = tu_path(kind_name[k]);
    char *target = tu_path("resource");
    ck_assert_int_eq(zoo_create(tu_fixture_zk, target, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                     ZOK);
    zkl_client *ca = tu_client(10000), *cb = tu_client(10000);
    struct rec *a = rec_new(ca, p, k), *b = rec_new(cb, p, k);
    ck_assert_int_eq(rec_acquire(a, 5000), 0);
    int64_t token = rec_token(a);
    ck_assert_int_gt(token, 0);
    char *node = nth_child(p, 0);
    ck_assert_ptr_nonnull(node);
    /* A change of the node's data (here a revocation request, which no
     * public call answers yet) is no loss, and the watch stays on. */
    ck_assert_int_eq(zoo_set(tu_fixture_zk, node, "__REVOKE__", 10, -1), ZOK);
    ck_assert_int_eq(zoo_set(tu_fixture_zk, node, "other", 5, -1), ZOK);
    /* Both events have reached A and been acted on. */
    tu_drain(&ca, 1);
    ck_assert_int_eq(rec_held(a), 1);
    ck_assert_int_eq(rec_lost_calls(a, NULL), 0);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node, -1), ZOK);
    ck_assert(tu_wait_until(rec_not_held, a, 10000));
    ck_assert(tu_wait_until(rec_told, a, 10000));
    int64_t told = 0;
    ck_assert_int_eq(rec_lost_calls(a, &told), 1);
    ck_assert_int_eq(told, token);
    ck_assert_int_eq(rec_guarded_set(a, target), ZKL_ELOST);
    ck_assert_int_eq(rec_release(a), ZKL_ELOST);
    /* The lock is free: another client takes it; and A can again. */
    ck_assert_int_eq(rec_acquire_side(b, 5000, true), 0);
    ck_assert_int_eq(rec_release_side(b, true), 0);
    ck_assert_int_eq(rec_acquire(a, 5000), 0);
    ck_assert_int_eq(rec_release(a), 0);
    ck_assert_int_eq(rec_lost_calls(a, NULL), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    rec_free(a), rec_free(b);
    zkl_client_close(ca), zkl_client_close(cb);
    free(node), free(target), free(p);
}

START_TEST(test_holder_whose_node_is_deleted_is_told_at_once)
{
    holder_node_deleted((enum kind)_i);
}
END_TEST

START_TEST(test_lease_whose_node_is_deleted_is_lost)
{
    char *p = tu_test_path("sem");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s = tu_test_semaphore(c, p, 1);
    zkl_lease *l;
    ck_assert_int_eq(zkl_semaphore_acquire(s, 5000, &l), 0);
    const char *node = zkl_lease_node(l);
    ck_assert_ptr_nonnull(node);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node, -1), ZOK);
    int64_t end = tu_now_ms() + tu_ms(10000);
    while (tu_now_ms() < end && zkl_lease_is_held(l))
        usleep(2000);
    ck_assert_int_eq(zkl_lease_is_held(l), 0);
    ck_assert_int_eq(zkl_lease_release(l), ZKL_ELOST);
    /* Its place is free again. */
    ck_assert_int_eq(zkl_semaphore_acquire(s, 5000, &l), 0);
    ck_assert_int_eq(zkl_lease_release(l), 0);
}
END_TEST

struct sem_waiter {
    zkl_semaphore *s;
    zkl_lease *l;
    int rc;
    atomic_int done;
};

static void *sem_waiter_main(void *arg)
{
    struct sem_waiter *w = arg;
    w->rc = zkl_semaphore_acquire(w->s, 20000, &w->l);
    atomic_store(&w->done, 1);
    return NULL;
}

static bool sem_waiter_done(void *arg)
{
    return atomic_load(&((struct sem_waiter *)arg)->done) != 0;
}

/* The child of `dir` whose name contains `part`, malloc'd, or NULL. */
static char *child_with(const char *dir, const char *part)
{
    struct String_vector kids = {0, NULL};
    if (zoo_get_children(tu_fixture_zk, dir, 0, &kids) != ZOK)
        return NULL;
    char *out = NULL;
    for (int i = 0; i < kids.count && out == NULL; i++) {
        if (strstr(kids.data[i], part)) {
            size_t len = strlen(dir) + strlen(kids.data[i]) + 2;
            out = malloc(len);
            snprintf(out, len, "%s/%s", dir, kids.data[i]);
        }
    }
    deallocate_String_vector(&kids);
    return out;
}

struct named {
    const char *dir, *part;
};

static bool child_appeared(void *arg)
{
    struct named *w = arg;
    char *c = child_with(w->dir, w->part);
    free(c);
    return c != NULL;
}

START_TEST(test_semaphore_waiter_whose_node_is_deleted_queues_again)
{
    char *p = tu_test_path("sem");
    zkl_semaphore *sa = tu_test_semaphore_apart(p, 1), *sb = tu_test_semaphore_apart(p, 1);
    zkl_semaphore *sc = tu_test_semaphore_apart(p, 1);
    zkl_lease *la;
    ck_assert_int_eq(zkl_semaphore_acquire(sa, 5000, &la), 0);
    /* A's own waiter node goes just after its acquire returns: only its
     * lease is left before B comes, so the waiter node found next is B's. */
    ck_assert(tu_wait_children(tu_fixture_zk, p, 1, 10000));
    struct sem_waiter w = {.s = sb};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, sem_waiter_main, &w), 0);
    /* Deleted as soon as it shows: a delete before B watches its node is
     * one of the orders B must survive. */
    struct named gate_of_b = {p, "zkl-wait-"};
    ck_assert_msg(tu_wait_until(child_appeared, &gate_of_b, 10000), "B's waiter node never showed");
    char *gate = child_with(p, "zkl-wait-");
    ck_assert_ptr_nonnull(gate);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, gate, -1), ZOK);
    /* B queues again: a new waiter node. */
    int64_t end = tu_now_ms() + tu_ms(10000);
    char *again = NULL;
    while (tu_now_ms() < end) {
        free(again);
        again = child_with(p, "zkl-wait-");
        if (again != NULL && strcmp(again, gate) != 0)
            break;
        usleep(5000);
    }
    ck_assert_ptr_nonnull(again);
    ck_assert_str_ne(again, gate);
    ck_assert(!sem_waiter_done(&w));
    ck_assert_int_eq(zkl_lease_release(la), 0);
    ck_assert(tu_wait_until(sem_waiter_done, &w, 15000));
    pthread_join(t, NULL);
    ck_assert_int_eq(w.rc, 0);
    ck_assert(zkl_lease_is_held(w.l));
    zkl_lease *lc;
    ck_assert_int_eq(zkl_semaphore_acquire(sc, 300, &lc), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_lease_release(w.l), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(sc, 5000, &lc), 0);
    ck_assert_int_eq(zkl_lease_release(lc), 0);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 5000));
    free(gate), free(again);
}
END_TEST

/* ---- session ends: every hold is told, however many ---------------------- */

struct tally {
    pthread_mutex_t mu;
    int calls[64];
    int64_t tokens[64];
};

static struct tally tally_mx;
static zkl_mutex *tally_objs[64];

static void on_tally_mutex(zkl_mutex *m, int64_t token, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tally_mx.mu);
    for (int i = 0; i < 64; i++) {
        if (tally_objs[i] == m) {
            tally_mx.calls[i]++;
            tally_mx.tokens[i] = token;
        }
    }
    pthread_mutex_unlock(&tally_mx.mu);
}

static int tally_total(struct tally *t, int n)
{
    pthread_mutex_lock(&t->mu);
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += t->calls[i];
    pthread_mutex_unlock(&t->mu);
    return sum;
}

START_TEST(test_expiry_tells_each_of_40_mutexes_once)
{
    enum { N = 40 };
    memset(&tally_mx, 0, sizeof tally_mx);
    pthread_mutex_init(&tally_mx.mu, NULL);
    zkl_client *c = tu_test_client(10000);
    int64_t tokens[N];
    for (int i = 0; i < N; i++) {
        char leaf[32];
        snprintf(leaf, sizeof leaf, "m%d", i);
        char *p = tu_path(leaf);
        ck_assert_int_eq(zkl_mutex_new(c, p, &tally_objs[i]), 0);
        ck_assert_int_eq(zkl_mutex_set_lost_fn(tally_objs[i], on_tally_mutex, NULL), 0);
        ck_assert_int_eq(zkl_mutex_acquire(tally_objs[i], 5000), 0);
        tokens[i] = tu_mutex_token(tally_objs[i]);
        free(p);
    }
    tu_expire_session(c);
    int64_t end = tu_now_ms() + tu_ms(30000);
    while (tu_now_ms() < end && tally_total(&tally_mx, N) < N)
        usleep(5000);
    /* Room for a second, wrong call: its absence can only be shown by
     * waiting a while (the first calls, each counted, make it no empty
     * wait). */
    usleep((useconds_t)tu_ms(200) * 1000);
    for (int i = 0; i < N; i++) {
        pthread_mutex_lock(&tally_mx.mu);
        int calls = tally_mx.calls[i];
        int64_t tok = tally_mx.tokens[i];
        pthread_mutex_unlock(&tally_mx.mu);
        ck_assert_msg(calls == 1, "mutex %d told %d times", i, calls);
        ck_assert_int_eq(tok, tokens[i]);
        ck_assert_int_eq(zkl_mutex_is_held(tally_objs[i]), 0);
        ck_assert_int_eq(zkl_mutex_release(tally_objs[i]), ZKL_ELOST);
        zkl_mutex_free(tally_objs[i]);
        tally_objs[i] = NULL;
    }
}
END_TEST

static struct tally tally_sem;

static void on_tally_lease(zkl_semaphore *s, int64_t token, void *arg)
{
    (void)s, (void)arg;
    pthread_mutex_lock(&tally_sem.mu);
    for (int i = 0; i < 64; i++) {
        if (tally_sem.tokens[i] == token)
            tally_sem.calls[i]++;
    }
    pthread_mutex_unlock(&tally_sem.mu);
}

START_TEST(test_expiry_reports_all_40_leases_of_a_semaphore)
{
    enum { N = 40 };
    memset(&tally_sem, 0, sizeof tally_sem);
    pthread_mutex_init(&tally_sem.mu, NULL);
    char *p = tu_test_path("sem");
    zkl_client *c = tu_test_client(10000);
    zkl_semaphore *s = tu_test_semaphore(c, p, N);
    ck_assert_int_eq(zkl_semaphore_set_lost_fn(s, on_tally_lease, NULL), 0);
    zkl_lease *l[N];
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(zkl_semaphore_acquire(s, 5000, &l[i]), 0);
        pthread_mutex_lock(&tally_sem.mu);
        tally_sem.tokens[i] = tu_lease_token(l[i]);
        pthread_mutex_unlock(&tally_sem.mu);
    }
    tu_expire_session(c);
    int64_t end = tu_now_ms() + tu_ms(30000);
    while (tu_now_ms() < end && tally_total(&tally_sem, N) < N)
        usleep(5000);
    usleep((useconds_t)tu_ms(200) * 1000); /* as above */
    for (int i = 0; i < N; i++) {
        pthread_mutex_lock(&tally_sem.mu);
        int calls = tally_sem.calls[i];
        pthread_mutex_unlock(&tally_sem.mu);
        ck_assert_msg(calls == 1, "lease %d told %d times", i, calls);
        ck_assert_int_eq(zkl_lease_release(l[i]), ZKL_ELOST);
    }
}
END_TEST

/* ---- ACLs that refuse ----------------------------------------------------- */

/* tu_client_with, and connected before the test goes on. */
static zkl_client *client_with(const char *digest, enum zkl_acl acl)
{
    zkl_client *c = tu_client_with(digest, acl);
    int64_t end = tu_now_ms() + tu_ms(10000);
    while (zkl_client_state(c) != ZKL_STATE_CONNECTED && tu_now_ms() < end)
        usleep(2000);
    ck_assert_int_eq(zkl_client_state(c), ZKL_STATE_CONNECTED);
    return c;
}

/* A lock path whose ACL gives everyone `perms`, and alice everything. The
 * outsider (the fixture handle) authenticates as alice, so it can look
 * and clean up. */
static void make_guarded_path(const char *p, int perms)
{
    ck_assert_int_eq(zoo_add_auth(tu_fixture_zk, "digest", SECRET, (int)strlen(SECRET), NULL,
                                  NULL),
                     ZOK);
    ck_assert_int_eq(zoo_create(tu_fixture_zk, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    tu_guard_path(p, perms);
}

static void open_path(const char *p)
{
    ck_assert_int_eq(zoo_set_acl(tu_fixture_zk, p, -1, &ZOO_OPEN_ACL_UNSAFE), ZOK);
}

START_TEST(test_acquire_whose_listing_is_refused_leaves_no_node)
{
    char *p = tu_test_path("noread");
    make_guarded_path(p, ZOO_PERM_CREATE | ZOO_PERM_DELETE);
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m = tu_test_mutex(c, p);
    uint64_t before = requests_of(c);
    ck_assert_int_eq(zkl_mutex_acquire(m, 2000), ZKL_ENOAUTH);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 5000));
    ck_assert_int_lt(requests_of(c) - before, 20);
    /* Again, from a semaphore-mutex and a read-write lock. */
    zkl_semmutex *sm = tu_test_semmutex(c, p);
    ck_assert_int_eq(zkl_semmutex_acquire(sm, 2000), ZKL_ENOAUTH);
    zkl_rwlock *rw = tu_test_rwlock(c, p);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 2000), ZKL_ENOAUTH);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 2000), ZKL_ENOAUTH);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 5000));

    /* Neither READ nor DELETE: the node cannot be deleted at once. The
     * client keeps trying, with backoff (no spinning), and succeeds once
     * the ACL allows it. */
    char *q = tu_path("nothing");
    make_guarded_path(q, ZOO_PERM_CREATE);
    zkl_mutex *mq = tu_test_mutex(c, q);
    ck_assert_int_eq(zkl_mutex_acquire(mq, 2000), ZKL_ENOAUTH);
    ck_assert_int_eq(tu_children(tu_fixture_zk, q), 1);
    before = requests_of(c);
    usleep(1500 * 1000);
    ck_assert_int_lt(requests_of(c) - before, 10);
    tu_guard_path(q, ZOO_PERM_CREATE | ZOO_PERM_DELETE);
    ck_assert(tu_wait_children(tu_fixture_zk, q, 0, 20000));
    free(q);
}
END_TEST

START_TEST(test_release_whose_delete_is_refused_keeps_the_hold)
{
    char *p = tu_test_path("nodelete");
    make_guarded_path(p, ZOO_PERM_CREATE | ZOO_PERM_READ);
    zkl_client *c = tu_test_client(10000);
    zkl_mutex *m = tu_test_held_mutex(c, p);
    ck_assert_int_eq(zkl_mutex_acquire(m, 5000), 0); /* count 2 */
    ck_assert_int_eq(zkl_mutex_release(m), 0);       /* count 1 */
    ck_assert_int_eq(zkl_mutex_release(m), ZKL_ENOAUTH);
    ck_assert_int_eq(zkl_mutex_is_held(m), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    /* Still counted once: once the server allows it, one release does. */
    open_path(p);
    ck_assert_int_eq(zkl_mutex_release(m), 0);
    ck_assert_int_eq(zkl_mutex_is_held(m), 0);
    ck_assert_int_eq(zkl_mutex_release(m), ZKL_ENOTHELD);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);

    /* The semaphore-mutex, both sides of the read-write lock, a lease. */
    tu_guard_path(p, ZOO_PERM_CREATE | ZOO_PERM_READ);
    zkl_semmutex *sm = tu_test_semmutex(c, p);
    ck_assert_int_eq(zkl_semmutex_acquire(sm, 5000), 0);
    ck_assert_int_eq(zkl_semmutex_release(sm), ZKL_ENOAUTH);
    ck_assert_int_eq(zkl_semmutex_is_held(sm), 1);
    /* Between two tries, an outsider removes the node: the hold is lost,
     * and the next release says so. */
    char *node = nth_child(p, 0);
    ck_assert_ptr_nonnull(node);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, node, -1), ZOK);
    int64_t end = tu_now_ms() + tu_ms(10000);
    while (tu_now_ms() < end && zkl_semmutex_is_held(sm))
        usleep(2000);
    ck_assert_int_eq(zkl_semmutex_is_held(sm), 0);
    ck_assert_int_eq(zkl_semmutex_release(sm), ZKL_ELOST);
    ck_assert_int_eq(zkl_semmutex_release(sm), ZKL_ENOTHELD);
    free(node);
    zkl_rwlock *rw = tu_test_rwlock(c, p);
    tu_guard_path(p, ZOO_PERM_CREATE | ZOO_PERM_READ);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0); /* downgrade */
    ck_assert_int_eq(zkl_rwlock_read_release(rw), ZKL_ENOAUTH);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), ZKL_ENOAUTH);
    ck_assert_int_eq(zkl_rwlock_read_is_held(rw), 1);
    ck_assert_int_eq(zkl_rwlock_write_is_held(rw), 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 2);
    open_path(p);
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

/* A multi-lock whose second member times out gives back the first; when
 * the server refuses that delete, the first stays held (as its own release
 * says) and the acquire must say so, not report the time-out as if nothing
 * were left. */
START_TEST(test_multilock_whose_undo_is_refused_says_what_stays_held)
{
    char *a = tu_test_path("ml-a-nodelete"), *b = tu_test_path("ml-b-taken");
    make_guarded_path(a, ZOO_PERM_CREATE | ZOO_PERM_READ);
    zkl_client *c = tu_test_client(10000), *other = tu_test_client(10000);
    zkl_mutex *hb = tu_test_held_mutex(other, b);
    zkl_mutex *ma = tu_test_mutex(c, a), *mb = tu_test_mutex(c, b);
    zkl_lock *ls[2];
    ck_assert_int_eq(zkl_mutex_as_lock(ma, &ls[0]), 0);
    ck_assert_int_eq(zkl_mutex_as_lock(mb, &ls[1]), 0);
    zkl_multilock *ml;
    ck_assert_int_eq(zkl_multilock_new_locks(ls, 2, &ml), 0);
    /* Long enough for the first member to be granted on a slow machine:
     * only the second may run out of time. */
    ck_assert_int_eq(zkl_multilock_acquire(ml, 3000), ZKL_ENOAUTH);
    ck_assert_msg(strstr(zkl_last_error_text(), a) != NULL &&
                      strstr(zkl_last_error_text(), "stays held") != NULL,
                  "%s", zkl_last_error_text());
    ck_assert_int_eq(zkl_multilock_is_held(ml), 0);
    ck_assert_int_eq(zkl_mutex_is_held(ma), 1);
    ck_assert_int_eq(zkl_mutex_is_held(mb), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, a), 1);
    ck_assert(tu_wait_children(tu_fixture_zk, b, 1, 10000)); /* the other client's */
    /* Once the server allows it, the member's own release lets it go. */
    open_path(a);
    ck_assert_int_eq(zkl_mutex_release(ma), 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, a), 0);
    ck_assert_int_eq(zkl_mutex_release(hb), 0);
    zkl_multilock_free(ml);
    zkl_lock_free(ls[0]);
    zkl_lock_free(ls[1]);
}
END_TEST

START_TEST(test_waiter_that_may_not_read_its_predecessor_waits_quietly)
{
    char *p = tu_test_path("creator");
    ck_assert_int_eq(zoo_create(tu_fixture_zk, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkl_client *ca = client_with(SECRET, ZKL_ACL_CREATOR);
    zkl_client *cb = client_with(BOB, ZKL_ACL_CREATOR);
    zkl_mutex *a, *b;
    ck_assert_int_eq(zkl_mutex_new(ca, p, &a), 0);
    ck_assert_int_eq(zkl_mutex_new(cb, p, &b), 0);
    ck_assert_int_eq(zkl_mutex_acquire(a, 5000), 0);
    uint64_t before = requests_of(cb);
    int64_t t0 = tu_now_ms();
    ck_assert_int_eq(zkl_mutex_acquire(b, 2000), ZKL_ETIMEDOUT);
    ck_assert_int_ge(tu_now_ms() - t0, 1900);
    uint64_t sent = requests_of(cb) - before;
    ck_assert_msg(sent < 20, "%llu requests over a 2 s wait", (unsigned long long)sent);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 1, 5000));
    /* And it does get the lock when the holder goes. */
    struct rec rb = {.k = K_MUTEX, .m = b};
    struct waiter w;
    waiter_start(&w, &rb, 20000);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 2, 5000));
    tu_drain(&cb, 1); /* its watch armed: the release is told by an event */
    ck_assert_int_eq(zkl_mutex_release(a), 0);
    ck_assert(tu_wait_until(waiter_done, &w, 15000));
    ck_assert_int_eq(w.rc, 0);
    waiter_finish(&w, 1);
    ck_assert_int_eq(w.rel_rc, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_mutex_free(a);
    zkl_mutex_free(b);
    zkl_client_close(ca);
    zkl_client_close(cb);
}
END_TEST

/* The same behind a semaphore's gate, whose waiter watches a group of
 * nodes: it waits quietly on the lock path's children, gets a lease once
 * the holder goes, and its client closes at once (no request it counts on
 * is left unanswered). */
/* The crowd's acquisitions went past `base`. */
struct acquired_since {
    atomic_int *acquired;
    int base;
};

static bool acquired_again(void *arg)
{
    struct acquired_since *a = arg;
    return atomic_load(a->acquired) > a->base;
}

START_TEST(test_semaphore_waiter_that_may_not_read_the_holders_waits_quietly)
{
    char *p = tu_test_path("semcreator");
    ck_assert_int_eq(zoo_create(tu_fixture_zk, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkl_client *ca = client_with(SECRET, ZKL_ACL_CREATOR);
    zkl_client *cb = client_with(BOB, ZKL_ACL_CREATOR);
    zkl_semaphore *a, *b;
    ck_assert_int_eq(zkl_semaphore_new(ca, p, 1, &a), 0);
    ck_assert_int_eq(zkl_semaphore_new(cb, p, 1, &b), 0);
    zkl_lease *la, *lb = NULL;
    ck_assert_int_eq(zkl_semaphore_acquire(a, 5000, &la), 0);
    uint64_t before = requests_of(cb);
    ck_assert_int_eq(zkl_semaphore_acquire(b, 2000, &lb), ZKL_ETIMEDOUT);
    uint64_t sent = requests_of(cb) - before;
    ck_assert_msg(sent < 40, "%llu requests over a 2 s wait", (unsigned long long)sent);
    /* Twice: the second wait re-arms its watches on a node known unreadable. */
    ck_assert_int_eq(zkl_semaphore_acquire(b, 1000, &lb), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_lease_release(la), 0);
    ck_assert_int_eq(zkl_semaphore_acquire(b, 15000, &lb), 0);
    ck_assert_int_eq(zkl_lease_release(lb), 0);
    zkl_semaphore_free(a);
    zkl_semaphore_free(b);
    zkl_client_close(ca);
    int64_t t0 = tu_now_ms();
    zkl_client_close(cb);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(2000));
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

/* ---- the whole lock path deleted while in use ------------------------------ */

/* Holds whose release returned 0: their node existed from the acquire to
 * the release (a node never comes back), so they really held all along.
 * No two of them may overlap in time. */
struct history {
    pthread_mutex_t mu;
    int n;
    int64_t from[4096], to[4096];
};

static void history_add(struct history *h, int64_t from, int64_t to)
{
    pthread_mutex_lock(&h->mu);
    if (h->n < 4096) {
        h->from[h->n] = from;
        h->to[h->n] = to;
        h->n++;
    }
    pthread_mutex_unlock(&h->mu);
}

static int history_overlaps(struct history *h)
{
    int bad = 0;
    for (int i = 0; i < h->n; i++)
        for (int j = i + 1; j < h->n; j++)
            if (h->from[i] < h->to[j] && h->from[j] < h->to[i])
                bad++;
    return bad;
}

struct crowd {
    struct rec *r;
    struct history *h;
    atomic_int *acquired;
    atomic_int *stop;
};

static void *crowd_main(void *arg)
{
    struct crowd *k = arg;
    while (!atomic_load(k->stop)) {
        if (rec_acquire_side(k->r, 300, true) != 0)
            continue;
        int64_t from = tu_mono_ns();
        atomic_fetch_add(k->acquired, 1);
        usleep(20 * 1000);
        int64_t to = tu_mono_ns();
        if (rec_release_side(k->r, true) == 0)
            history_add(k->h, from, to);
    }
    return NULL;
}

/* The outsider deletes every child, then the path, as an operator would. */
static void wipe(const char *p)
{
    tu_rmr(tu_fixture_zk, p);
}

static void lock_path_deleted(enum kind k)
{
    enum { N = 4 };
    char *p = tu_path(kind_name[k]);
    zkl_client *c[N];
    struct rec *r[N];
    for (int i = 0; i < N; i++) {
        c[i] = tu_client(10000);
        r[i] = rec_new(c[i], p, k);
    }
    /* 0 holds; 1 and 2 wait; then the outsider wipes the path. */
    ck_assert_int_eq(rec_acquire_side(r[0], 5000, true), 0);
    struct waiter w[2];
    waiter_start_side(&w[0], r[1], 20000, true);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 2, 5000));
    waiter_start_side(&w[1], r[2], 20000, true);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 3, 5000));
    tu_drain(&c[1], 2); /* both waiters' watches armed before the wipe */
    wipe(p);
    /* The holder is told. */
    ck_assert(tu_wait_until(rec_told, r[0], 10000));
    ck_assert_int_eq(rec_held_side(r[0], true), 0);
    ck_assert_int_eq(rec_release_side(r[0], true), ZKL_ELOST);
    /* The waiters queue again: each gets the lock in turn (one may have
     * held for a moment between the deletes of the node ahead and its
     * own, and been told at once). Never two real holds at once. */
    struct history h = {.n = 0};
    pthread_mutex_init(&h.mu, NULL);
    for (int round = 0; round < 2; round++) {
        /* Until one that was not looked at yet is done (none left, as
         * when both were done in the first round: on at once). */
        int64_t end = tu_now_ms() + tu_ms(15000);
        while (tu_now_ms() < end &&
               (atomic_load(&w[0].release) == 0 || atomic_load(&w[1].release) == 0) &&
               !(waiter_done(&w[0]) && atomic_load(&w[0].release) == 0) &&
               !(waiter_done(&w[1]) && atomic_load(&w[1].release) == 0))
            usleep(2000);
        usleep((useconds_t)tu_ms(100) * 1000); /* the other may finish too */
        for (int i = 0; i < 2; i++) {
            if (!waiter_done(&w[i]) || atomic_load(&w[i].release) != 0)
                continue;
            ck_assert_int_eq(w[i].rc, 0);
            if (!w[i].held) {
                /* Granted between the outsider's deletes of the node
                 * ahead and of its own, and told of the loss before it
                 * looked (a slow machine widens that gap): no hold. */
                waiter_finish(&w[i], 1);
                ck_assert_int_eq(w[i].rel_rc, ZKL_ELOST);
                continue;
            }
            int64_t from = tu_mono_ns();
            /* Nobody else gets in while it really holds, newcomers
             * included. */
            int nrc = rec_acquire_side(r[3], 200, true);
            waiter_finish(&w[i], 1);
            if (w[i].rel_rc == 0) {
                history_add(&h, from, tu_mono_ns());
                ck_assert_int_eq(nrc, ZKL_ETIMEDOUT);
            } else {
                ck_assert_int_eq(w[i].rel_rc, ZKL_ELOST);
            }
            if (nrc == 0)
                ck_assert_int_eq(rec_release_side(r[3], true), 0);
        }
    }
    ck_assert(waiter_done(&w[0]) && waiter_done(&w[1]));
    ck_assert_int_eq(history_overlaps(&h), 0);
    /* (Each waiter may have been first for a moment between two of the
     * outsider's deletes, and lost that hold at once: ZKL_ELOST.) */
    ck_assert_int_eq(rec_acquire_side(r[3], 5000, true), 0);
    ck_assert_int_eq(rec_release_side(r[3], true), 0);

    /* Under churn: all four contend while the outsider wipes the path a
     * few times. */
    h.n = 0;
    atomic_int acquired = 0, stop = 0;
    struct crowd cr[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        cr[i] = (struct crowd){r[i], &h, &acquired, &stop};
        ck_assert_int_eq(pthread_create(&t[i], NULL, crowd_main, &cr[i]), 0);
    }
    for (int round = 0; round < 3; round++) {
        usleep(300 * 1000);
        wipe(p);
    }
    /* After the last wipe someone gets in again (a slow machine may take
     * its time). */
    int base = atomic_load(&acquired);
    struct acquired_since since = {&acquired, base};
    ck_assert(tu_wait_until(acquired_again, &since, 20000));
    atomic_store(&stop, 1);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(history_overlaps(&h), 0);
    ck_assert_int_gt(atomic_load(&acquired), 0);
    ck_assert_int_gt(h.n, 0);
    ck_assert(tu_wait_children(tu_fixture_zk, p, 0, 5000));
    pthread_mutex_destroy(&h.mu);
    for (int i = 0; i < N; i++) {
        rec_free(r[i]);
        zkl_client_close(c[i]);
    }
    free(p);
}

START_TEST(test_lock_path_deleted_in_use_never_two_holders)
{
    lock_path_deleted((enum kind)_i);
}
END_TEST

/* ---- a create whose answer was lost, and a node planted with its uuid ---- */

/* A TCP proxy between the client and the server that can swallow what the
 * server sends (a create is applied, its answer never arrives) and cut the
 * connection (the client reconnects with the same session and recovers).
 * Swallowing lasts until the cut: the server may answer after the test sees
 * the node, and that answer must not get through. */
struct proxy {
    int lfd, port;
    struct sockaddr_in server;
    atomic_int swallow, cut, stop;
    atomic_int deletes; /* the client's delete requests passed on */
    pthread_t t;
};

/* The client's side of the stream, cut into frames: a 4-byte length, then
 * (after the first frame, the connect) the xid and the request's type. */
enum { WIRE_DELETE = 2 }; /* the delete's type on the wire */
struct frames {
    unsigned char head[12];
    int have;        /* bytes of head read */
    uint32_t left;   /* bytes of the frame's body still to skip */
    bool connected;  /* the connect frame went by */
};

static uint32_t be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void frames_scan(struct proxy *px, struct frames *f, const unsigned char *p, size_t k)
{
    while (k > 0) {
        if (f->left > 0) {
            size_t n = k < f->left ? k : f->left;
            p += n;
            k -= n;
            f->left -= (uint32_t)n;
            continue;
        }
        int want = f->connected ? 12 : 4;
        while (f->have < want && k > 0) {
            f->head[f->have++] = *p++;
            k--;
        }
        if (f->have < want)
            return;
        uint32_t len = be32(f->head);
        if (f->connected && be32(f->head + 8) == WIRE_DELETE)
            atomic_fetch_add(&px->deletes, 1);
        f->left = len - (uint32_t)(want - 4);
        f->have = 0;
        f->connected = true;
    }
}

static void proxy_pump(struct proxy *px, int a)
{
    int b = socket(AF_INET, SOCK_STREAM, 0);
    if (b < 0 || connect(b, (struct sockaddr *)&px->server, sizeof px->server) != 0) {
        if (b >= 0)
            close(b);
        close(a);
        return;
    }
    char buf[65536];
    struct frames f = {.have = 0};
    while (!atomic_load(&px->stop) && !atomic_load(&px->cut)) {
        struct pollfd fds[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
        if (poll(fds, 2, 20) <= 0)
            continue;
        if (fds[0].revents) {
            ssize_t k = read(a, buf, sizeof buf);
            if (k <= 0 || write(b, buf, (size_t)k) != k)
                break;
            frames_scan(px, &f, (const unsigned char *)buf, (size_t)k);
        }
        if (fds[1].revents) {
            ssize_t k = read(b, buf, sizeof buf);
            if (k <= 0)
                break;
            if (!atomic_load(&px->swallow) && write(a, buf, (size_t)k) != k)
                break;
        }
    }
    close(a);
    close(b);
    /* Swallowing ends with the connection it was for: whatever the server
     * sent on it, read or not yet, is gone with it. */
    atomic_store(&px->swallow, 0);
    atomic_store(&px->cut, 0);
}

static void *proxy_main(void *arg)
{
    struct proxy *px = arg;
    while (!atomic_load(&px->stop)) {
        struct pollfd pf = {.fd = px->lfd, .events = POLLIN};
        if (poll(&pf, 1, 20) <= 0)
            continue;
        int a = accept(px->lfd, NULL, NULL);
        if (a >= 0)
            proxy_pump(px, a);
    }
    return NULL;
}

static void proxy_start(struct proxy *px)
{
    memset(px, 0, sizeof *px);
    /* the first server of the test's connect string */
    char host[256];
    snprintf(host, sizeof host, "%s", tu_hosts());
    char *comma = strchr(host, ',');
    if (comma)
        *comma = '\0';
    char *colon = strrchr(host, ':');
    ck_assert_ptr_nonnull(colon);
    *colon = '\0';
    px->server.sin_family = AF_INET;
    px->server.sin_port = htons((uint16_t)atoi(colon + 1));
    ck_assert_int_eq(inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1",
                               &px->server.sin_addr), 1);
    px->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in me = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof me;
    ck_assert_int_eq(bind(px->lfd, (struct sockaddr *)&me, sizeof me), 0);
    ck_assert_int_eq(listen(px->lfd, 4), 0);
    ck_assert_int_eq(getsockname(px->lfd, (struct sockaddr *)&me, &len), 0);
    px->port = ntohs(me.sin_port);
    ck_assert_int_eq(pthread_create(&px->t, NULL, proxy_main, px), 0);
}

static void proxy_stop(struct proxy *px)
{
    atomic_store(&px->stop, 1);
    pthread_join(px->t, NULL);
    close(px->lfd);
}

/* A client whose connection goes through a new proxy px. Its session of
 * 40 s: while answers are swallowed the loss rule runs (9/20 of the
 * session timeout after the last answer the client presumes its session
 * gone), and a slow (sanitized, loaded) machine has 18 s for what takes
 * well under one. */
static zkl_client *proxy_client(struct proxy *px)
{
    proxy_start(px);
    char hosts[64];
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d", px->port);
    zkl_client *c;
    ck_assert_int_eq(zkl_client_open(hosts, 40000, &c), 0);
    return c;
}

static uint64_t recovered_of(zkl_client *c)
{
    zkl_client_stats st;
    ck_assert_int_eq(zkl_client_get_stats(c, &st), 0);
    return st.recovered;
}

static uint64_t sessions_of(zkl_client *c)
{
    zkl_client_stats st;
    ck_assert_int_eq(zkl_client_get_stats(c, &st), 0);
    return st.sessions;
}

/* Recovered, or the session it would recover in is gone. */
static bool recovered_or_ended(void *arg)
{
    return recovered_of(arg) > 0 || sessions_of(arg) > 1;
}

/* The client's create is applied but its answer is lost; meanwhile the
 * outsider plants a node that carries the same uuid and sorts ahead of
 * ours. On reconnecting, the recovery must adopt our node (owned by our
 * session), not the planted one: it neither fails with ZKL_ELOST nor
 * leaves our node behind, and it waits behind the planted node like
 * behind any contender. */
START_TEST(test_recovery_adopts_only_its_own_node_not_a_planted_one)
{
    char *p = tu_test_path("planted");
    ck_assert_int_eq(zoo_create(tu_fixture_zk, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    /* Push the path's counter on, so that a node can be planted ahead. */
    char bump[1100], made[1100];
    snprintf(bump, sizeof bump, "%s/x-", p);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(zoo_create(tu_fixture_zk, bump, "", 0, &ZOO_OPEN_ACL_UNSAFE,
                                    ZOO_SEQUENCE, made, (int)sizeof made), ZOK);
        ck_assert_int_eq(zoo_delete(tu_fixture_zk, made, -1), ZOK);
    }
    /* Were the session presumed gone, there would be nothing to recover. */
    struct proxy px;
    zkl_client *c = proxy_client(&px);
    int64_t sid = tu_client_session_id(c);
    struct rec *r = rec_new(c, p, K_MUTEX);

    atomic_store(&px.swallow, 1);
    struct waiter w;
    waiter_start(&w, r, 60000);
    struct named mine = {p, "_c_"};
    ck_assert_msg(tu_wait_until(child_appeared, &mine, 10000), "the create was not applied");
    char *real = child_with(p, "_c_");
    const char *name = strrchr(real, '/') + 1; /* _c_<uuid>-lock-0000000002 */
    ck_assert_int_eq((int)strlen(name), 3 + 36 + 6 + 10);
    char planted[1100];
    snprintf(planted, sizeof planted, "%s/_c_%.36s-lock-0000000001", p, name + 3);
    ck_assert_int_eq(zoo_create(tu_fixture_zk, planted, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                     ZOK);
    /* The answer is lost for good: cut the connection while still
     * swallowing (the answer may not have reached the proxy yet when the
     * node shows); the client comes back with the same session and looks
     * for its node. */
    atomic_store(&px.cut, 1);
    ck_assert_msg(tu_wait_until(recovered_or_ended, c, 15000), "no recovery in 15 s");
    ck_assert_msg(tu_client_session_id(c) == sid && recovered_of(c) > 0,
                  "the session did not survive the lost answer (%d sessions, %d recovered)",
                  (int)sessions_of(c), (int)recovered_of(c));
    /* Both nodes still there; the waiter waits behind the planted one. */
    ck_assert(tu_exists(tu_fixture_zk, real));
    ck_assert(tu_exists(tu_fixture_zk, planted));
    ck_assert_int_eq(atomic_load(&w.done), 0);
    ck_assert_int_eq(rec_lost_calls(r, NULL), 0);
    /* The planted node goes: the waiter holds on its own, real node. */
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, planted, -1), ZOK);
    ck_assert(tu_wait_until(waiter_done, &w, 10000));
    ck_assert_int_eq(w.rc, 0);
    ck_assert_int_eq(w.held, 1);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    ck_assert(tu_exists(tu_fixture_zk, real));
    waiter_finish(&w, 1);
    ck_assert_int_eq(w.rel_rc, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    rec_free(r);
    zkl_client_close(c);
    proxy_stop(&px);
    free(real);
}
END_TEST

/* A release whose answer is lost (the connection cut before it came) is
 * sent again on the next connection. Refused there too (an ACL without
 * DELETE), it must say so and keep the hold, as a first refusal does, not
 * wait for a delete the ACL will never allow. The holder's thread runs the
 * steps the test allows it, one phase at a time: holds are per thread. */
struct stepper {
    zkl_mutex *m;
    atomic_int phase, go;
    int rc_first, held_after, rc_second;
};

static void *stepper_main(void *arg)
{
    struct stepper *t = arg;
    if (zkl_mutex_acquire(t->m, 10000) != 0) {
        atomic_store(&t->phase, -1);
        return NULL;
    }
    atomic_store(&t->phase, 1);
    while (atomic_load(&t->go) < 1)
        usleep(1000);
    t->rc_first = zkl_mutex_release(t->m);
    t->held_after = zkl_mutex_is_held(t->m);
    atomic_store(&t->phase, 2);
    while (atomic_load(&t->go) < 2)
        usleep(1000);
    t->rc_second = zkl_mutex_release(t->m);
    atomic_store(&t->phase, 3);
    return NULL;
}

struct phase_of {
    struct stepper *t;
    int at_least;
};

static bool phase_reached(void *arg)
{
    struct phase_of *p = arg;
    int ph = atomic_load(&p->t->phase);
    return ph < 0 || ph >= p->at_least;
}

static bool delete_passed(void *arg)
{
    return atomic_load(&((struct proxy *)arg)->deletes) > 0;
}

START_TEST(test_release_whose_answer_is_lost_then_refused_keeps_the_hold)
{
    char *p = tu_test_path("lostrefused");
    make_guarded_path(p, ZOO_PERM_CREATE | ZOO_PERM_READ);
    struct proxy px;
    zkl_client *c = proxy_client(&px);
    int64_t sid = tu_client_session_id(c);
    zkl_mutex *m;
    ck_assert_int_eq(zkl_mutex_new(c, p, &m), 0);
    struct stepper t = {.m = m};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, stepper_main, &t), 0);
    struct phase_of held = {&t, 1}, released = {&t, 2}, done = {&t, 3};
    ck_assert(tu_wait_until(phase_reached, &held, 20000));
    ck_assert_int_eq(atomic_load(&t.phase), 1);
    /* The delete goes out with its answer swallowed; then the connection
     * is cut, and with it the answer. */
    atomic_store(&px.swallow, 1);
    atomic_store(&t.go, 1);
    /* The delete itself, read off the wire: a keepalive sent meanwhile
     * must not start the cut before it. */
    ck_assert_msg(tu_wait_until(delete_passed, &px, 10000), "the release sent no delete");
    atomic_store(&px.cut, 1);
    bool answered = tu_wait_until(phase_reached, &released, 20000);
    if (!answered)
        open_path(p); /* let a release that waits on end, so its thread can be joined */
    ck_assert(tu_wait_until(phase_reached, &released, 60000));
    ck_assert_msg(answered, "the release still waits after the delete was refused again");
    ck_assert_int_eq(t.rc_first, ZKL_ENOAUTH);
    ck_assert_int_eq(t.held_after, 1);
    ck_assert(tu_client_session_id(c) == sid);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 1);
    /* Once the server allows it, the one count left is released. */
    open_path(p);
    atomic_store(&t.go, 2);
    ck_assert(tu_wait_until(phase_reached, &done, 20000));
    pthread_join(th, NULL);
    ck_assert_int_eq(t.rc_second, 0);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_mutex_free(m);
    zkl_client_close(c);
    proxy_stop(&px);
}
END_TEST

/* The root exists (with the open ACL) so tests can make nodes below it. */
static void setup(void)
{
    tu_fixture_setup_named("hostile");
    tu_mkdirs(tu_fixture_zk, tu_fixture_root);
}

static void teardown(void)
{
    /* Guarded paths can only be cleaned up as alice. */
    zoo_add_auth(tu_fixture_zk, "digest", SECRET, (int)strlen(SECRET), NULL, NULL);
    tu_fixture_teardown();
}

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    const char *names[] = {"expiry", "waiter", "holder", "acl", "path"};
    TCase *tc[5];
    for (int i = 0; i < 5; i++) {
        tc[i] = tu_tcase(names[i], 120);
        tcase_add_checked_fixture(tc[i], setup, teardown);
        suite_add_tcase(s, tc[i]);
    }
    tcase_add_test(tc[0], test_expiry_tells_each_of_40_mutexes_once);
    tcase_add_test(tc[0], test_expiry_reports_all_40_leases_of_a_semaphore);
    tcase_add_loop_test(tc[1], test_waiter_whose_node_is_deleted_queues_again_and_never_holds_twice,
                        0, K_NKINDS);
    tcase_add_test(tc[1], test_semaphore_waiter_whose_node_is_deleted_queues_again);
    tcase_add_loop_test(tc[2], test_holder_whose_node_is_deleted_is_told_at_once, 0, K_NKINDS);
    tcase_add_test(tc[2], test_lease_whose_node_is_deleted_is_lost);
    tcase_add_test(tc[3], test_acquire_whose_listing_is_refused_leaves_no_node);
    tcase_add_test(tc[3], test_release_whose_delete_is_refused_keeps_the_hold);
    tcase_add_test(tc[3], test_multilock_whose_undo_is_refused_says_what_stays_held);
    tcase_add_test(tc[3], test_waiter_that_may_not_read_its_predecessor_waits_quietly);
    tcase_add_test(tc[3], test_semaphore_waiter_that_may_not_read_the_holders_waits_quietly);
    tcase_add_test(tc[1], test_recovery_adopts_only_its_own_node_not_a_planted_one);
    tcase_add_test(tc[3], test_release_whose_answer_is_lost_then_refused_keeps_the_hold);
    tcase_add_loop_test(tc[4], test_lock_path_deleted_in_use_never_two_holders, 0, K_NKINDS);
    return s;
}

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    return tu_run(hostile_suite());
}
