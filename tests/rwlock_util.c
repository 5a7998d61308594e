/* Helpers of the read-write lock suites (check_rwlock*). */
#include "rwlock_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkl/zookeeper.h"

zkl_client_stats stats_of(zkl_client *c)
{
    zkl_client_stats s;
    ck_assert_int_eq(zkl_client_get_stats(c, &s), 0);
    return s;
}

void wait_children(const char *path, int want)
{
    ck_assert_msg(tu_wait_children(tu_fixture_zk, path, want, 30000), "%s: %d children, want %d",
                  path, tu_children(tu_fixture_zk, path), want);
}

/* The server's 10-digit sequence of a node path. */
const char *seq_of(const char *node)
{
    return node + strlen(node) - 10;
}

static void *bg_main(void *arg)
{
    struct bg *b = arg;
    b->rc = b->write ? zkl_rwlock_write_acquire(b->rw, b->timeout_ms)
                     : zkl_rwlock_read_acquire(b->rw, b->timeout_ms);
    if (b->rc != 0)
        return NULL;
    __atomic_store_n(&b->got, 1, __ATOMIC_SEQ_CST);
    int64_t end = tu_now_ms() + tu_ms(60000);
    while (!__atomic_load_n(&b->release, __ATOMIC_SEQ_CST) && tu_now_ms() < end)
        usleep(1000);
    b->released_rc = b->write ? zkl_rwlock_write_release(b->rw) : zkl_rwlock_read_release(b->rw);
    return NULL;
}

void bg_start(struct bg *b, zkl_rwlock *rw, int write, long timeout_ms)
{
    *b = (struct bg){.rw = rw, .write = write, .timeout_ms = timeout_ms, .rc = 1};
    pthread_create(&b->t, NULL, bg_main, b);
}

bool bg_got(void *arg)
{
    return __atomic_load_n(&((struct bg *)arg)->got, __ATOMIC_SEQ_CST) != 0;
}

void bg_finish(struct bg *b)
{
    __atomic_store_n(&b->release, 1, __ATOMIC_SEQ_CST);
    pthread_join(b->t, NULL);
}

struct req_wait {
    zkl_client *c;
    uint64_t requests;
};

static bool requests_at_least(void *arg)
{
    struct req_wait *r = arg;
    zkl_client_stats s;
    zkl_client_get_stats(r->c, &s);
    return s.requests >= r->requests;
}

/* Wait until a waiter on client c has sent n requests (its create, listing
 * and watch: the watch is sent only after it decided not to hold), and the
 * server has answered them. The counter goes up, under the client's lock,
 * as a request is queued on the handle; one session's requests are served
 * in order, so a round trip queued after them on the same handle returns
 * only once the server has set the watch. */
void wait_requests(zkl_client *c, uint64_t n)
{
    struct req_wait r = {c, n};
    ck_assert_msg(tu_wait_until(requests_at_least, &r, 30000), "client sent %llu requests",
                  (unsigned long long)stats_of(c).requests);
    struct Stat st;
    ck_assert_int_eq(zoo_exists(zkl_client_handle(c), "/", 0, &st), ZOK);
}

/* ---- the sides, and clients on one path ------------------------------------- */

const struct side sides[2] = {
    {"read", "-__READ__", zkl_rwlock_read_acquire, zkl_rwlock_read_release,
     zkl_rwlock_read_is_held, tu_rwlock_read_token, zkl_rwlock_read_node},
    {"write", "-__WRIT__", zkl_rwlock_write_acquire, zkl_rwlock_write_release,
     zkl_rwlock_write_is_held, tu_rwlock_write_token, zkl_rwlock_write_node},
};

void rwset_open(struct rwset *s, const char *leaf, int n, int session_ms)
{
    memset(s, 0, sizeof *s);
    s->p = tu_path(leaf);
    s->n = n;
    for (int i = 0; i < n; i++) {
        s->c[i] = tu_client(session_ms);
        ck_assert_int_eq(zkl_rwlock_new(s->c[i], s->p, &s->rw[i]), 0);
    }
}

void rwset_close(struct rwset *s)
{
    ck_assert_int_eq(tu_children(tu_fixture_zk, s->p), 0);
    for (int i = 0; i < s->n; i++) {
        zkl_rwlock_free(s->rw[i]);
        zkl_client_close(s->c[i]);
    }
    free(s->p);
}
