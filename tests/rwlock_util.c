/* Helpers of the read-write lock suites (check_rwlock*). */
#include "rwlock_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkl/zookeeper.h"

void wait_children(const char *path, int want)
{
    ck_assert_msg(tu_wait_children(tu_fixture_zk, path, want, 30000), "%s: %d children, want %d",
                  path, tu_children(tu_fixture_zk, path), want);
}

void expect_holds(zkl_rwlock *rw, const char *path, int read, int write, int nodes)
{
    int r = zkl_rwlock_read_is_held(rw), w = zkl_rwlock_write_is_held(rw);
    int n = tu_children(tu_fixture_zk, path);
    ck_assert_msg(r == read && w == write && n == nodes,
                  "holds read %d write %d, %d nodes; want %d, %d, %d", r, w, n, read, write, nodes);
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
