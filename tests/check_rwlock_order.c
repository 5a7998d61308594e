/* The read-write lock's queue against a real ZooKeeper: a stream of
 * readers cannot starve a writer, and a waiting reader wakes once per
 * writer ahead of it, watching the right node. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rwlock_util.h"
#include "zkl/zookeeper.h"

/* ---- fairness ---------------------------------------------------------------- */

enum { F_READERS = 4 };

struct stream {
    zkl_client *c;
    zkl_rwlock *rw;
    int *stop;
    int *inside;
    long *acquired; /* read acquisitions completed, all readers */
    int rc;
    pthread_t t;
};

static void *stream_reader(void *arg)
{
    struct stream *r = arg;
    while (!__atomic_load_n(r->stop, __ATOMIC_SEQ_CST)) {
        if (zkl_rwlock_read_acquire(r->rw, 30000) != 0) {
            r->rc = -1;
            return NULL;
        }
        __atomic_add_fetch(r->inside, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(r->acquired, 1, __ATOMIC_SEQ_CST);
        usleep(30000);
        __atomic_sub_fetch(r->inside, 1, __ATOMIC_SEQ_CST);
        if (zkl_rwlock_read_release(r->rw) != 0) {
            r->rc = -2;
            return NULL;
        }
        /* straight back into the queue: the readers overlap all the time */
    }
    return NULL;
}

struct acq_count {
    long *acquired;
    long want;
};

static bool acquired_at_least(void *arg)
{
    struct acq_count *a = arg;
    return __atomic_load_n(a->acquired, __ATOMIC_SEQ_CST) >= a->want;
}

/* A write node is under the lock path (arg). */
static bool writer_queued(void *arg)
{
    struct String_vector kids = {0, NULL};
    bool found = false;
    if (zoo_get_children(tu_fixture_zk, arg, 0, &kids) == ZOK)
        for (int i = 0; i < kids.count && !found; i++)
            found = strstr(kids.data[i], "__WRIT__") != NULL;
    deallocate_String_vector(&kids);
    return found;
}

START_TEST(test_rwlock_writer_is_not_starved_by_a_stream_of_readers)
{
    char *p = tu_path("fair");
    int stop = 0, inside = 0;
    long acquired = 0;
    struct stream r[F_READERS];
    for (int i = 0; i < F_READERS; i++) {
        r[i] = (struct stream){.c = tu_client(10000), .stop = &stop, .inside = &inside,
                               .acquired = &acquired};
        ck_assert_int_eq(zkl_rwlock_new(r[i].c, p, &r[i].rw), 0);
        pthread_create(&r[i].t, NULL, stream_reader, &r[i]);
    }
    struct acq_count ac = {&acquired, 3 * F_READERS};
    ck_assert(tu_wait_until(acquired_at_least, &ac, 30000));

    zkl_client *wc = tu_client(10000);
    zkl_rwlock *w;
    ck_assert_int_eq(zkl_rwlock_new(wc, p, &w), 0);
    struct bg wb;
    bg_start(&wb, w, 1, 20000);
    /* Counted from the moment the writer's node is there, not from the
     * call: reads that start before it reaches the server (a slow machine
     * takes its time) are not the writer's to stop. */
    ck_assert(tu_wait_until(writer_queued, p, 20000));
    long before = __atomic_load_n(&acquired, __ATOMIC_SEQ_CST);
    int64_t t0 = tu_now_ms();
    ck_assert(tu_wait_until(bg_got, &wb, 20000));
    int64_t waited = tu_now_ms() - t0;
    long during = __atomic_load_n(&acquired, __ATOMIC_SEQ_CST) - before;
    ck_assert_int_eq(__atomic_load_n(&inside, __ATOMIC_SEQ_CST), 0);
    /* Hold a while: no reader may come in meanwhile (only a window can
     * show that none does; the readers keep asking all along). */
    usleep((useconds_t)tu_ms(50) * 1000);
    ck_assert_int_eq(__atomic_load_n(&inside, __ATOMIC_SEQ_CST), 0);
    long while_held = __atomic_load_n(&acquired, __ATOMIC_SEQ_CST) - before - during;
    bg_finish(&wb);
    ck_assert_int_eq(wb.rc, 0);
    ck_assert_int_eq(wb.released_rc, 0);
    /* Each reader can complete at most the acquisition it had already
     * started when the writer queued (and one counted late): readers that
     * arrive after the writer wait for it. */
    ck_assert_msg(during <= 2 * F_READERS, "%ld reads completed while the writer waited", during);
    ck_assert_int_eq(while_held, 0);
    ck_assert_msg(waited < tu_ms(10000), "writer waited %lld ms", (long long)waited);
    /* ... and the readers go on afterwards. */
    ac.want = __atomic_load_n(&acquired, __ATOMIC_SEQ_CST) + F_READERS;
    ck_assert(tu_wait_until(acquired_at_least, &ac, 30000));
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < F_READERS; i++) {
        pthread_join(r[i].t, NULL);
        ck_assert_int_eq(r[i].rc, 0);
        zkl_rwlock_free(r[i].rw);
        zkl_client_close(r[i].c);
    }
    fprintf(stderr, "fairness: writer waited %lld ms, %ld reads completed meanwhile\n",
            (long long)waited, during);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    zkl_rwlock_free(w);
    zkl_client_close(wc);
    free(p);
}
END_TEST


/* ---- wake-ups -------------------------------------------------------------- */

/* A writer W1 holds; a writer W2 queues, then a reader R behind it, which
 * watches W2, the nearest writer ahead. Then one of the writers goes. */
enum { WAKE_HOLDER_GOES, WAKE_QUEUED_WRITER_GOES, WAKE_CASES };
static const char *const wake_case[WAKE_CASES] = {"holder-goes", "queued-writer-goes"};

START_TEST(test_rwlock_reader_wakes_once_per_writer_ahead_that_goes)
{
    struct rwset t;
    rwset_open(&t, wake_case[_i], 3, 10000);
    const char *p = t.p;
    zkl_client *c2 = t.c[1], *c3 = t.c[2];
    zkl_rwlock *w1 = t.rw[0], *w2 = t.rw[1], *r = t.rw[2];
    ck_assert_int_eq(zkl_rwlock_write_acquire(w1, 5000), 0);
    struct bg b2, b3;
    /* Each waiter's create, listing, own-node watch and watch on the node
     * ahead, all served: a writer that goes after this is seen by the
     * watch, never by the watch's own answer. */
    bg_start(&b2, w2, 1, 60000);
    wait_children(p, 2);
    tu_wait_requests(c2, 4);
    bg_start(&b3, r, 0, 60000);
    wait_children(p, 3);
    tu_wait_requests(c3, 4);
    if (_i == WAKE_HOLDER_GOES) {
        /* W1 goes: W2 holds; the reader, watching W2, sleeps on. */
        ck_assert_int_eq(zkl_rwlock_write_release(w1), 0);
        ck_assert(tu_wait_until(bg_got, &b2, 30000));
        ck_assert_int_eq(__atomic_load_n(&b3.got, __ATOMIC_SEQ_CST), 0);
        /* W2 goes: the reader wakes once and holds. */
        bg_finish(&b2);
        ck_assert(tu_wait_until(bg_got, &b3, 30000));
        bg_finish(&b3);
        ck_assert_int_eq(b2.rc, 0);
        ck_assert_int_eq(b3.rc, 0);
        ck_assert_int_eq(tu_stats(c3).watch_events, 1);
        ck_assert_int_eq(tu_stats(c2).watch_events, 1);
    } else {
        /* The queued writer gives up (its client closes): the reader
         * wakes, and watches W1 now. */
        zkl_client_close(c2);
        pthread_join(b2.t, NULL);
        ck_assert_int_eq(b2.rc, ZKL_ECLOSED);
        zkl_rwlock_free(w2);
        t.c[1] = NULL, t.rw[1] = NULL;
        wait_children(p, 2);
        tu_wait_requests(c3, 6); /* listing, new watch */
        ck_assert_int_eq(__atomic_load_n(&b3.got, __ATOMIC_SEQ_CST), 0);
        ck_assert_int_eq(tu_stats(c3).watch_events, 1);
        /* W1 goes: the second and last wake-up. */
        ck_assert_int_eq(zkl_rwlock_write_release(w1), 0);
        ck_assert(tu_wait_until(bg_got, &b3, 30000));
        bg_finish(&b3);
        ck_assert_int_eq(b3.rc, 0);
        ck_assert_int_eq(tu_stats(c3).watch_events, 2);
    }
    rwset_close(&t);
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    Suite *s = suite_create("rwlock_order");
    TCase *tc = tu_tcase("fairness", 120);
    tu_add_fixture(tc, "rwlock");
    tcase_add_test(tc, test_rwlock_writer_is_not_starved_by_a_stream_of_readers);
    suite_add_tcase(s, tc);
    for (int i = 0; i < WAKE_CASES; i++) { /* a test case per case, named after it */
        tc = tu_tcase(wake_case[i], 60);
        tu_add_fixture(tc, "rwlock");
        tu_add_row(tc, test_rwlock_reader_wakes_once_per_writer_ahead_that_goes, i);
        suite_add_tcase(s, tc);
    }
    return tu_run(s);
}
