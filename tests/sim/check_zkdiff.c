/* The model kept honest: scripted sequences run on a real ZooKeeper 3.8
 * (through libzookeeper_mt, ZKL_TEST_HOSTS) and on the model (tests/sim),
 * and what each session of the program is told — answers with their codes,
 * names and deterministic Stat fields, watch and session events, and their
 * order — must be the same. The model runs each sequence under three seeds.
 *
 * A session's order is fixed by the server as long as the sequence waits
 * for an answer before it lets another session act, and every session uses
 * the same server (the first of ZKL_TEST_HOSTS): a write's watch events
 * leave before its answer, and the session's next request is taken after.
 * The few runs the server leaves in any order (the deletions of a closed
 * session, the watchers of one event) are compared as sets. Faults go
 * through a TCP proxy per session (tests/sim/zkproxy.c): held links, and
 * resets, so a real client loses its connection and its session the way a
 * simulated one does. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "diff.h"
#include "testutil.h"

#define WAIT_MS 15000
#define SEEDS 3

/* ---- the scenarios' helpers -------------------------------------------------- */

static char *root;

/* root/leaf; eight at a time. */
static const char *P(const char *leaf)
{
    static char ring[8][512];
    static int k;
    char *out = ring[k++ % 8];
    snprintf(out, sizeof ring[0], "%s%s%s", root, *leaf ? "/" : "", leaf);
    return out;
}

static void refused(struct be *b, int s, uint64_t tag, int rc)
{
    if (rc != ZSIM_OK) {
        char line[128];
        snprintf(line, sizeof line, "I t=%" PRIu64 " %s", tag, zsim_rc_name(rc));
        diff_log_add(b, s, line);
    }
}

struct count_arg {
    int s;
    const char *prefix;
    int n;
};

static bool count_is(struct be *b, const void *arg)
{
    const struct count_arg *a = arg;
    size_t k = strlen(a->prefix);
    int seen = 0;
    for (int i = 0; i < b->log[a->s].n; i++)
        seen += strncmp(b->log[a->s].v[i], a->prefix, k) == 0;
    return seen >= a->n;
}

/* Waits until session s has had n lines beginning with prefix; on a
 * timeout it marks the log, and the comparison shows what is missing. */
static void await_n(struct be *b, int s, const char *prefix, int n)
{
    struct count_arg a = {s, prefix, n};
    if (!b->ops->run_until(b, count_is, &a, WAIT_MS)) {
        char line[600];
        snprintf(line, sizeof line, "M no '%s' (x%d) in time", prefix, n);
        diff_log_add(b, s, line);
    }
}

static void await_answer(struct be *b, int s, uint64_t tag)
{
    char prefix[40];
    snprintf(prefix, sizeof prefix, "A t=%" PRIu64 " ", tag);
    await_n(b, s, prefix, 1);
}

static void await_event(struct be *b, int s, const char *type, const char *path)
{
    char prefix[600];
    snprintf(prefix, sizeof prefix, "W %s %s ", type, path);
    await_n(b, s, prefix, 1);
}

static void open_session(struct be *b, int s, int timeout_ms, bool proxied)
{
    b->ops->open(b, s, timeout_ms, proxied);
    await_n(b, s, "S CONNECTED", 1);
    b->ids[s] = b->ops->session_id(b, s);
}

static void mark(struct be *b, int s, const char *text)
{
    char line[256];
    snprintf(line, sizeof line, "M %s", text);
    diff_log_add(b, s, line);
}

/* A session's earlier events are in its log once the answer to a sync of
 * its own is (a server sends a session's events and answers in order). */
static void settle(struct be *b, int s)
{
    refused(b, s, 9000, b->ops->sync(b, s, "/", 9000 + (uint64_t)s));
    await_answer(b, s, 9000 + (uint64_t)s);
}

static void barrier(struct be *b, int n)
{
    for (int s = 0; s < n; s++)
        settle(b, s);
}

/* One request and its answer. */
#define DO(b, s, tag, call)                                                                   \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        refused(b, s, tag, rc_);                                                              \
        if (rc_ == ZSIM_OK)                                                                   \
            await_answer(b, s, tag);                                                          \
    } while (0)

#define CREATE(b, s, tag, leaf, mode)                                                         \
    DO(b, s, tag, b->ops->create(b, s, P(leaf), "d", 1, &ZSIM_OPEN_ACL_UNSAFE, mode, tag))

/* ---- scenarios ---------------------------------------------------------------- */

static void sc_creates(struct be *b)
{
    open_session(b, 0, 10000, false);
    DO(b, 0, 1, b->ops->create(b, 0, P("p"), "x", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, 1));
    DO(b, 0, 2, b->ops->create(b, 0, P("p/e"), "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_EPHEMERAL, 2));
    CREATE(b, 0, 3, "p/s-", ZSIM_PERSISTENT_SEQUENTIAL);
    CREATE(b, 0, 4, "p/s-", ZSIM_PERSISTENT_SEQUENTIAL);
    CREATE(b, 0, 5, "p/t-", ZSIM_EPHEMERAL_SEQUENTIAL);
    CREATE(b, 0, 6, "p/c", ZSIM_CONTAINER);
    DO(b, 0, 7, b->ops->create(b, 0, P("p/n"), NULL, -1, &ZSIM_OPEN_ACL_UNSAFE, 0, 7));
    DO(b, 0, 8, b->ops->get(b, 0, P("p/n"), 0, 8));
    DO(b, 0, 9, b->ops->get(b, 0, P("p/e"), 0, 9));
    DO(b, 0, 10, b->ops->get(b, 0, P("p"), 0, 10));
    DO(b, 0, 11, b->ops->exists(b, 0, P("p"), 0, 11));
    DO(b, 0, 12, b->ops->children(b, 0, P("p"), 0, true, 12));
    CREATE(b, 0, 13, "p", ZSIM_PERSISTENT);
    CREATE(b, 0, 14, "none/x", ZSIM_PERSISTENT);
    CREATE(b, 0, 15, "p/e/x", ZSIM_PERSISTENT);
    CREATE(b, 0, 16, "p/c/", ZSIM_PERSISTENT);        /* refused by the client */
    CREATE(b, 0, 17, "p/\x1f", ZSIM_PERSISTENT);      /* ... by the server */
    CREATE(b, 0, 18, "p/\xc3\xa9", ZSIM_PERSISTENT);   /* é is fine */
    CREATE(b, 0, 19, "p/c/", ZSIM_EPHEMERAL_SEQUENTIAL); /* a sequence after '/' */
    static const struct zsim_acl someone[] = {{ZSIM_PERM_ALL, "world", "someone"}};
    static const struct zsim_acl_vector bad = {1, someone};
    DO(b, 0, 20, b->ops->create(b, 0, P("p/bad"), "", 0, &bad, 0, 20));
    DO(b, 0, 21, b->ops->create(b, 0, P("p/bad"), "", 0, &ZSIM_CREATOR_ALL_ACL, 0, 21));
    DO(b, 0, 22, b->ops->children(b, 0, P("p/c"), 0, false, 22));
    barrier(b, 1);
}

static void sc_sequence(struct be *b)
{
    open_session(b, 0, 10000, false);
    CREATE(b, 0, 1, "q", ZSIM_PERSISTENT);
    CREATE(b, 0, 2, "q/n-", ZSIM_PERSISTENT_SEQUENTIAL);
    CREATE(b, 0, 3, "q/n-", ZSIM_EPHEMERAL_SEQUENTIAL);
    CREATE(b, 0, 4, "q/n-", ZSIM_PERSISTENT_SEQUENTIAL);
    DO(b, 0, 5, b->ops->del(b, 0, P("q/n-0000000001"), -1, 5));
    DO(b, 0, 6, b->ops->exists(b, 0, P("q"), 0, 6));
    CREATE(b, 0, 7, "q/n-", ZSIM_PERSISTENT_SEQUENTIAL);
    CREATE(b, 0, 8, "q/plain", ZSIM_PERSISTENT);
    CREATE(b, 0, 9, "q/n-", ZSIM_PERSISTENT_SEQUENTIAL);
    CREATE(b, 0, 10, "q/plain", ZSIM_PERSISTENT); /* refused: no count */
    CREATE(b, 0, 11, "q/n-", ZSIM_PERSISTENT_SEQUENTIAL);
    DO(b, 0, 12, b->ops->exists(b, 0, P("q"), 0, 12));
    static const char *const kids[] = {"q/n-0000000000", "q/n-0000000002", "q/n-0000000003",
                                       "q/plain", "q/n-0000000005", "q/n-0000000006"};
    for (int i = 0; i < 6; i++)
        DO(b, 0, 20 + (uint64_t)i, b->ops->del(b, 0, P(kids[i]), -1, 20 + (uint64_t)i));
    DO(b, 0, 30, b->ops->exists(b, 0, P("q"), 0, 30));
    CREATE(b, 0, 31, "q/n-", ZSIM_PERSISTENT_SEQUENTIAL);
    DO(b, 0, 32, b->ops->del(b, 0, P("q/n-0000000007"), -1, 32));
    DO(b, 0, 33, b->ops->del(b, 0, P("q"), -1, 33));
    CREATE(b, 0, 34, "q", ZSIM_PERSISTENT);
    CREATE(b, 0, 35, "q/n-", ZSIM_PERSISTENT_SEQUENTIAL); /* a new parent counts from 0 */
    barrier(b, 1);
}

static void sc_versions(struct be *b)
{
    open_session(b, 0, 10000, false);
    CREATE(b, 0, 1, "r", ZSIM_PERSISTENT);
    CREATE(b, 0, 2, "r/k", ZSIM_PERSISTENT);
    DO(b, 0, 3, b->ops->set(b, 0, P("r/k"), "v1", 2, 0, 3));
    DO(b, 0, 4, b->ops->set(b, 0, P("r/k"), "v2", 2, 0, 4));
    DO(b, 0, 5, b->ops->del(b, 0, P("r/k"), 0, 5));
    DO(b, 0, 6, b->ops->del(b, 0, P("r/k"), 1, 6));
    CREATE(b, 0, 7, "r/k", ZSIM_PERSISTENT);
    CREATE(b, 0, 8, "r/k/x", ZSIM_PERSISTENT);
    DO(b, 0, 9, b->ops->del(b, 0, P("r/k"), -1, 9));
    DO(b, 0, 10, b->ops->del(b, 0, P("r/missing"), -1, 10));
    DO(b, 0, 11, b->ops->set(b, 0, P("r/missing"), "x", 1, -1, 11));
    DO(b, 0, 12, b->ops->set(b, 0, P("r/k/x"), NULL, -1, 5, 12));
    DO(b, 0, 13, b->ops->set(b, 0, P("r/k/x"), NULL, -1, -1, 13));
    DO(b, 0, 14, b->ops->get(b, 0, P("r/k/x"), 0, 14));
    DO(b, 0, 15, b->ops->del(b, 0, "/zookeeper", -1, 15));
    DO(b, 0, 16, b->ops->exists(b, 0, P("r"), 0, 16));
    barrier(b, 1);
}

static void sc_watches(struct be *b)
{
    open_session(b, 0, 10000, false);
    open_session(b, 1, 10000, false);
    DO(b, 1, 1, b->ops->exists(b, 1, P("w"), 70, 1));
    CREATE(b, 0, 2, "w", ZSIM_PERSISTENT);
    DO(b, 1, 3, b->ops->get(b, 1, P("w"), 71, 3));
    DO(b, 1, 4, b->ops->exists(b, 1, P("w"), 71, 4)); /* the same watcher again */
    DO(b, 1, 5, b->ops->exists(b, 1, P("w"), 72, 5));
    DO(b, 0, 6, b->ops->set(b, 0, P("w"), "1", 1, -1, 6));
    DO(b, 0, 7, b->ops->set(b, 0, P("w"), "2", 1, -1, 7)); /* one-shot: no event */
    CREATE(b, 0, 8, "w/c", ZSIM_PERSISTENT);
    DO(b, 1, 9, b->ops->children(b, 1, P("w"), 73, false, 9));
    DO(b, 1, 10, b->ops->children(b, 1, P("w/c"), 74, true, 10));
    DO(b, 1, 11, b->ops->get(b, 1, P("w/c"), 75, 11));
    DO(b, 0, 12, b->ops->del(b, 0, P("w/c"), -1, 12));
    DO(b, 1, 13, b->ops->get(b, 1, P("w/none"), 76, 13)); /* no node, no watch */
    CREATE(b, 0, 14, "w/none", ZSIM_PERSISTENT);
    DO(b, 1, 15, b->ops->children(b, 1, P("w/none/x"), 77, false, 15));
    /* a session's own write: its event before its answer */
    DO(b, 1, 16, b->ops->exists(b, 1, P("w/own"), 78, 16));
    CREATE(b, 1, 17, "w/own", ZSIM_EPHEMERAL);
    DO(b, 1, 18, b->ops->children(b, 1, P("w"), 79, false, 18));
    DO(b, 1, 19, b->ops->get(b, 1, P("w/own"), 80, 19));
    DO(b, 1, 20, b->ops->del(b, 1, P("w/own"), -1, 20));
    DO(b, 1, 21, b->ops->exists(b, 1, P("w/none"), 81, 21));
    DO(b, 0, 22, b->ops->del(b, 0, P("w/none"), -1, 22));
    barrier(b, 2);
}

static void sc_multi(struct be *b)
{
    open_session(b, 0, 10000, false);
    open_session(b, 1, 10000, false);
    CREATE(b, 0, 1, "m", ZSIM_PERSISTENT);
    char a[512], m[512], s_[512], mb[512], zz[512];
    snprintf(a, sizeof a, "%s", P("m/a"));
    snprintf(m, sizeof m, "%s", P("m"));
    snprintf(s_, sizeof s_, "%s", P("m/s-"));
    snprintf(mb, sizeof mb, "%s", P("m/b"));
    snprintf(zz, sizeof zz, "%s", P("m/zz"));
    struct zsim_op fail_check[3] = {
        {ZSIM_MOP_CREATE, a, "1", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, 0},
        {ZSIM_MOP_CHECK, m, NULL, 0, NULL, 0, 5},
        {ZSIM_MOP_SET, m, "x", 1, NULL, 0, -1}};
    DO(b, 0, 2, b->ops->multi(b, 0, 3, fail_check, 2));
    DO(b, 0, 3, b->ops->exists(b, 0, a, 0, 3));
    struct zsim_op first_fails[2] = {{ZSIM_MOP_CHECK, zz, NULL, 0, NULL, 0, -1},
                                     {ZSIM_MOP_CREATE, a, "1", 1, &ZSIM_OPEN_ACL_UNSAFE, 0, 0}};
    DO(b, 0, 4, b->ops->multi(b, 0, 2, first_fails, 4));
    DO(b, 1, 5, b->ops->exists(b, 1, mb, 82, 5));
    DO(b, 1, 6, b->ops->children(b, 1, m, 83, false, 6));
    struct zsim_op ok[6] = {
        {ZSIM_MOP_CHECK, m, NULL, 0, NULL, 0, 0},
        {ZSIM_MOP_CREATE, s_, "1", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT_SEQUENTIAL, 0},
        {ZSIM_MOP_CREATE, mb, "1", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, 0},
        {ZSIM_MOP_SET, mb, "2", 1, NULL, 0, 0},
        {ZSIM_MOP_CHECK, mb, NULL, 0, NULL, 0, 1},
        {ZSIM_MOP_SET, m, "3", 1, NULL, 0, 0}};
    DO(b, 0, 7, b->ops->multi(b, 0, 6, ok, 7));
    struct zsim_op del[2] = {{ZSIM_MOP_DELETE, mb, NULL, 0, NULL, 0, 1},
                             {ZSIM_MOP_DELETE, zz, NULL, 0, NULL, 0, -1}};
    DO(b, 0, 8, b->ops->multi(b, 0, 2, del, 8));
    DO(b, 0, 9, b->ops->multi(b, 0, 0, NULL, 9));
    DO(b, 0, 10, b->ops->children(b, 0, m, 0, true, 10));
    barrier(b, 2);
}

static void sc_close(struct be *b)
{
    open_session(b, 0, 10000, false);
    open_session(b, 1, 10000, false);
    CREATE(b, 0, 1, "c", ZSIM_PERSISTENT);
    CREATE(b, 0, 2, "c/e1", ZSIM_EPHEMERAL);
    CREATE(b, 0, 3, "c/e2", ZSIM_EPHEMERAL_SEQUENTIAL);
    DO(b, 1, 4, b->ops->exists(b, 1, P("c/e1"), 90, 4));
    DO(b, 1, 5, b->ops->get(b, 1, P("c/e20000000001"), 91, 5));
    DO(b, 1, 6, b->ops->children(b, 1, P("c"), 92, false, 6));
    mark(b, 1, "{");
    b->ops->close(b, 0);
    await_event(b, 1, "DELETED", P("c/e1"));
    await_event(b, 1, "DELETED", P("c/e20000000001"));
    await_event(b, 1, "CHILD", P("c"));
    mark(b, 1, "}");
    DO(b, 1, 7, b->ops->children(b, 1, P("c"), 0, true, 7));
    settle(b, 1);
}

/* The session's link goes silent: its client gives the connection up after
 * 2/3 of its timeout, the server expires it after the timeout, and once the
 * link is back the client hears that it expired. */
static void sc_expiry(struct be *b)
{
    /* a short timeout, longer under valgrind, whose slowness would look
     * like a silent link */
    open_session(b, 0, tu_under_valgrind() ? 8000 : 1000, true);
    open_session(b, 1, 10000, false);
    CREATE(b, 0, 1, "x", ZSIM_PERSISTENT);
    CREATE(b, 0, 2, "x/ea", ZSIM_EPHEMERAL);
    DO(b, 0, 3, b->ops->get(b, 0, P("x"), 93, 3));
    DO(b, 1, 4, b->ops->exists(b, 1, P("x/ea"), 94, 4));
    b->ops->link(b, 0, false, false);
    refused(b, 0, 5, b->ops->exists(b, 0, P("x"), 0, 5));
    await_answer(b, 0, 5);
    /* made while disconnected: a connection attempt that hangs fails it */
    refused(b, 0, 7, b->ops->exists(b, 0, P("x"), 0, 7));
    await_answer(b, 0, 7);
    await_event(b, 1, "DELETED", P("x/ea"));
    /* ... and the attempt that finds the session expired. (A request made
     * just before the link comes back is left out: the real client fails
     * it with CONNECTIONLOSS or SESSIONEXPIRED, as a connection attempt
     * still hanging or the next one answers first: a race, not a rule.) */
    b->ops->link(b, 0, true, true);
    await_n(b, 0, "S EXPIRED", 2); /* the default watcher and the data watch's */
    refused(b, 0, 6, b->ops->exists(b, 0, P("x"), 0, 6));
    settle(b, 1);
}

/* A write reaches the server but its answer is lost with the connection;
 * the watches the client had are set again on reconnection, and those on
 * what changed meanwhile fire. */
static void sc_reconnect(struct be *b)
{
    open_session(b, 0, 10000, true);
    open_session(b, 1, 10000, false);
    CREATE(b, 0, 1, "y", ZSIM_PERSISTENT);
    CREATE(b, 0, 2, "y/k", ZSIM_PERSISTENT);
    DO(b, 0, 3, b->ops->get(b, 0, P("y"), 95, 3));
    DO(b, 0, 4, b->ops->exists(b, 0, P("y2"), 96, 4));
    DO(b, 0, 5, b->ops->children(b, 0, P("y/k"), 97, false, 5));
    DO(b, 0, 6, b->ops->exists(b, 0, P("y/k"), 98, 6));
    CREATE(b, 0, 13, "y/d", ZSIM_PERSISTENT);
    DO(b, 0, 14, b->ops->get(b, 0, P("y/d"), 100, 14));
    DO(b, 0, 15, b->ops->children(b, 0, P("y/d"), 101, false, 15));
    DO(b, 1, 7, b->ops->get(b, 1, P("y"), 99, 7));
    b->ops->link(b, 0, true, false);
    refused(b, 0, 8, b->ops->set(b, 0, P("y"), "1", 1, -1, 8));
    await_event(b, 1, "CHANGED", P("y"));
    CREATE(b, 1, 9, "y2", ZSIM_PERSISTENT);
    CREATE(b, 1, 10, "y/k/c", ZSIM_PERSISTENT);
    DO(b, 1, 16, b->ops->del(b, 1, P("y/d"), -1, 16));
    b->ops->reset(b, 0);
    await_answer(b, 0, 8);
    /* The reconnection and the events it brings, in any order within: a
     * slow caller (valgrind) would mark the region's start after the first
     * events had come. */
    mark(b, 0, "{");
    b->ops->link(b, 0, true, true);
    /* once at the start, then to the default watcher and the six others */
    await_n(b, 0, "S CONNECTED", 8);
    await_event(b, 0, "CHANGED", P("y"));
    await_event(b, 0, "CREATED", P("y2"));
    await_event(b, 0, "CHILD", P("y/k"));
    /* y/d is in the data and the child lists: two events, one call each */
    await_n(b, 0, "W DELETED", 2);
    mark(b, 0, "}");
    DO(b, 0, 11, b->ops->get(b, 0, P("y"), 0, 11));
    DO(b, 1, 12, b->ops->set(b, 1, P("y/k"), "2", 1, -1, 12)); /* the exists watch, set again */
    barrier(b, 2);
}

/* The C client sets every watch again in one setWatches: past
 * jute.maxbuffer (here a thousand exists watches on paths of a thousand
 * bytes), the server closes each reconnection as it reads its length,
 * and the requests behind it fail; the session lives on. */
static void sc_setwatches_limit(struct be *b)
{
    open_session(b, 0, 10000, true);
    static char path[1001];
    size_t r = strlen(root);
    ck_assert_uint_lt(r, 900);
    memcpy(path, root, r);
    memset(path + r, 'w', 1000 - r);
    path[r] = '/';
    for (int i = 0; i < 1048; i++) { /* 8 + 8 + 3 * 4 + 1048 * (4 + 1000) */
        for (int k = 0, v = i; k < 4; k++, v /= 10)
            path[999 - k] = (char)('0' + v % 10);
        DO(b, 0, 100 + (uint64_t)i, b->ops->exists(b, 0, path, 97, 100 + (uint64_t)i));
    }
    /* what follows, as often as the connection breaks: which lines */
    mark(b, 0, "[");
    b->ops->reset(b, 0);
    for (uint64_t tag = 20; tag < 22; tag++) {
        refused(b, 0, tag, b->ops->sync(b, 0, "/", tag));
        await_answer(b, 0, tag);
    }
}

/* jute.maxbuffer: a request of exactly the servers' limit is taken, one
 * byte more closes the connection. */
static void sc_size_limit(struct be *b)
{
    open_session(b, 0, 10000, false);
    static char data[0x100000];
    const char *path = P("big");
    int fits = 0xfffff - (8 + 4 + (int)strlen(path) + 4 + 27 + 4);
    DO(b, 0, 1, b->ops->create(b, 0, path, data, fits, &ZSIM_OPEN_ACL_UNSAFE, 0, 1));
    DO(b, 0, 2, b->ops->del(b, 0, path, -1, 2));
    DO(b, 0, 3, b->ops->create(b, 0, path, data, fits + 1, &ZSIM_OPEN_ACL_UNSAFE, 0, 3));
    await_n(b, 0, "S CONNECTED", 2);
    DO(b, 0, 4, b->ops->exists(b, 0, path, 0, 4));
    barrier(b, 1);
}

static void sc_acls(struct be *b)
{
    open_session(b, 0, 10000, false);
    open_session(b, 1, 10000, false);
    b->ops->auth(b, 0, "alice:secret");
    DO(b, 0, 1, b->ops->create(b, 0, P("acl"), "x", 1, &ZSIM_CREATOR_ALL_ACL, 0, 1));
    DO(b, 1, 2, b->ops->get(b, 1, P("acl"), 0, 2));
    DO(b, 1, 3, b->ops->children(b, 1, P("acl"), 0, false, 3));
    DO(b, 1, 4, b->ops->set(b, 1, P("acl"), "y", 1, -1, 4));
    DO(b, 1, 5, b->ops->exists(b, 1, P("acl"), 0, 5));
    CREATE(b, 1, 6, "acl/x", ZSIM_PERSISTENT);
    DO(b, 1, 7, b->ops->del(b, 1, P("acl/x"), -1, 7));
    CREATE(b, 0, 8, "acl/x", ZSIM_PERSISTENT);
    DO(b, 1, 9, b->ops->del(b, 1, P("acl/x"), -1, 9));
    b->ops->auth(b, 1, "alice:secret");
    DO(b, 1, 10, b->ops->get(b, 1, P("acl"), 0, 10));
    DO(b, 0, 11, b->ops->create(b, 0, P("ro"), "", 0, &ZSIM_READ_ACL_UNSAFE, 0, 11));
    CREATE(b, 0, 12, "ro/x", ZSIM_PERSISTENT);
    DO(b, 0, 13, b->ops->set(b, 0, P("ro"), "z", 1, -1, 13));
    DO(b, 0, 14, b->ops->get(b, 0, P("ro"), 0, 14));
    static const struct zsim_acl bob[] = {{ZSIM_PERM_READ, "digest", "bob:ikIaKsbtGweaHnb/jKn7OHqbunM="}};
    static const struct zsim_acl_vector bobv = {1, bob};
    DO(b, 0, 15, b->ops->create(b, 0, P("dg"), "b", 1, &bobv, 0, 15));
    DO(b, 0, 16, b->ops->get(b, 0, P("dg"), 0, 16));
    b->ops->auth(b, 0, "bob:pw");
    DO(b, 0, 17, b->ops->get(b, 0, P("dg"), 0, 17));
    DO(b, 0, 18, b->ops->del(b, 0, P("dg"), -1, 18));
    DO(b, 0, 19, b->ops->del(b, 0, P("ro"), -1, 19));
    DO(b, 0, 20, b->ops->del(b, 0, P("acl/x"), -1, 20));
    DO(b, 0, 21, b->ops->del(b, 0, P("acl"), -1, 21));
    barrier(b, 2);
}

static void make_root(const char *path)
{
    zhandle_t *zh = tu_zk();
    char buf[512];
    for (const char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
        size_t n = p ? (size_t)(p - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s", (int)n, path);
        int rc = zoo_create(zh, buf, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        ck_assert_msg(rc == ZOK || rc == ZNODEEXISTS, "create %s: %s", buf, zerror(rc));
        if (p == NULL)
            break;
    }
    zookeeper_close(zh);
}

static void drop_root(const char *path)
{
    zhandle_t *zh = tu_zk();
    tu_rmr(zh, path);
    zookeeper_close(zh);
}

static char first_host[128];
static int64_t tick_ns;
static int32_t min_timeout, max_timeout;

static int64_t conf_value(const char *conf, const char *key)
{
    const char *p = strstr(conf, key);
    ck_assert_msg(p != NULL, "the server's conf has no %s", key);
    return strtoll(p + strlen(key), NULL, 10);
}

/* The test server's tick and session timeout bounds, from its conf. */
static void learn_server(void)
{
    if (tick_ns)
        return;
    const char *hosts = tu_hosts();
    size_t n = strcspn(hosts, ",");
    snprintf(first_host, sizeof first_host, "%.*s", (int)n, hosts);
    char *conf = tu_four_letters(first_host, "conf");
    ck_assert_msg(conf != NULL, "no conf from %s", first_host);
    tick_ns = conf_value(conf, "tickTime=") * 1000000;
    min_timeout = (int32_t)conf_value(conf, "minSessionTimeout=");
    max_timeout = (int32_t)conf_value(conf, "maxSessionTimeout=");
    free(conf);
}

static void run_diff(const char *name, void (*scenario)(struct be *))
{
    learn_server();
    root = tu_root(name);
    make_root(root);
    struct be *real = diff_real_new(first_host);
    scenario(real);
    struct diff_lines rl[DIFF_SESSIONS];
    pthread_mutex_lock(&real->mu);
    real->quiet = true; /* what the closes below say is not compared */
    pthread_mutex_unlock(&real->mu);
    diff_normalize(real, rl);
    if (getenv("ZKDIFF_SHOW")) /* what the server told each session */
        for (int s = 0; s < DIFF_SESSIONS; s++)
            if (rl[s].n)
                diff_show(name, &rl[s], -1);
    real->ops->finish(real);
    drop_root(root);
    int failed = 0;
    for (uint64_t seed = 1; seed <= SEEDS && !failed; seed++) {
        struct be *model = diff_model_new(seed, tick_ns, min_timeout, max_timeout);
        ck_assert_ptr_nonnull(model);
        diff_model_mkpath(model, root);
        scenario(model);
        struct diff_lines ml[DIFF_SESSIONS];
        diff_normalize(model, ml);
        failed = diff_compare(name, seed, rl, ml);
        diff_lines_free(ml);
        for (int s = 0; s < DIFF_SESSIONS; s++)
            diff_log_free(&model->log[s]);
        model->ops->finish(model);
        free(model);
    }
    diff_lines_free(rl);
    for (int s = 0; s < DIFF_SESSIONS; s++)
        diff_log_free(&real->log[s]);
    free(real);
    free(root);
    ck_assert_msg(!failed, "%s: the model and the server disagree (see above)", name);
}

/* ---- the suite -------------------------------------------------------------------- */

START_TEST(test_the_models_values_are_the_c_clients)
{
    #define SAME_CODE(x) _Static_assert((int)ZSIM_##x == (int)Z##x, #x)
    SAME_CODE(NONODE);
    SAME_CODE(NOAUTH);
    SAME_CODE(BADVERSION);
    SAME_CODE(NODEEXISTS);
    SAME_CODE(NOTEMPTY);
    SAME_CODE(SESSIONEXPIRED);
    SAME_CODE(INVALIDACL);
    SAME_CODE(CLOSING);
    SAME_CODE(CONNECTIONLOSS);
    SAME_CODE(OPERATIONTIMEOUT);
    SAME_CODE(BADARGUMENTS);
    SAME_CODE(INVALIDSTATE);
    SAME_CODE(RUNTIMEINCONSISTENCY);
    SAME_CODE(NOCHILDRENFOREPHEMERALS);
    SAME_CODE(AUTHFAILED);
    SAME_CODE(MARSHALLINGERROR);
#undef SAME_CODE
    ck_assert_int_eq(ZSIM_CREATED_EVENT, ZOO_CREATED_EVENT);
    ck_assert_int_eq(ZSIM_DELETED_EVENT, ZOO_DELETED_EVENT);
    ck_assert_int_eq(ZSIM_CHANGED_EVENT, ZOO_CHANGED_EVENT);
    ck_assert_int_eq(ZSIM_CHILD_EVENT, ZOO_CHILD_EVENT);
    ck_assert_int_eq(ZSIM_SESSION_EVENT, ZOO_SESSION_EVENT);
    ck_assert_int_eq(ZSIM_CONNECTING_STATE, ZOO_CONNECTING_STATE);
    ck_assert_int_eq(ZSIM_CONNECTED_STATE, ZOO_CONNECTED_STATE);
    ck_assert_int_eq(ZSIM_EXPIRED_SESSION_STATE, ZOO_EXPIRED_SESSION_STATE);
    ck_assert_int_eq(ZSIM_AUTH_FAILED_STATE, ZOO_AUTH_FAILED_STATE);
    ck_assert_int_eq(ZSIM_PERSISTENT, ZOO_PERSISTENT);
    ck_assert_int_eq(ZSIM_EPHEMERAL, ZOO_EPHEMERAL);
    ck_assert_int_eq(ZSIM_PERSISTENT_SEQUENTIAL, ZOO_PERSISTENT_SEQUENTIAL);
    ck_assert_int_eq(ZSIM_EPHEMERAL_SEQUENTIAL, ZOO_EPHEMERAL_SEQUENTIAL);
    ck_assert_int_eq(ZSIM_CONTAINER, ZOO_CONTAINER);
    ck_assert_int_eq(ZSIM_MOP_CREATE, ZOO_CREATE_OP);
    ck_assert_int_eq(ZSIM_MOP_DELETE, ZOO_DELETE_OP);
    ck_assert_int_eq(ZSIM_MOP_SET, ZOO_SETDATA_OP);
    ck_assert_int_eq(ZSIM_MOP_CHECK, ZOO_CHECK_OP);
}
END_TEST

#define DIFF_TEST(fn, scenario)                                                              \
    START_TEST(fn)                                                                           \
    {                                                                                        \
        run_diff(#scenario, scenario);                                                       \
    }                                                                                        \
    END_TEST

DIFF_TEST(test_creates_of_every_mode_agree, sc_creates)
DIFF_TEST(test_sequence_numbers_after_deletes_agree, sc_sequence)
DIFF_TEST(test_deletes_and_sets_with_versions_agree, sc_versions)
DIFF_TEST(test_watches_of_every_kind_and_their_order_agree, sc_watches)
DIFF_TEST(test_multi_with_failing_ops_agrees, sc_multi)
DIFF_TEST(test_a_session_close_agrees, sc_close)
DIFF_TEST(test_a_session_expiry_agrees, sc_expiry)
DIFF_TEST(test_a_lost_answer_and_watches_set_again_agree, sc_reconnect)
DIFF_TEST(test_the_request_size_limit_agrees, sc_size_limit)
DIFF_TEST(test_watches_set_again_over_the_size_limit_agree, sc_setwatches_limit)
DIFF_TEST(test_acl_refusals_agree, sc_acls)

int main(void)
{
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) /* the clients log every connection the faults break */
        zoo_set_log_stream(devnull);
    Suite *s = suite_create("zkdiff");
    TCase *tc = tu_tcase("diff", 120);
    tcase_add_test(tc, test_the_models_values_are_the_c_clients);
    tcase_add_test(tc, test_creates_of_every_mode_agree);
    tcase_add_test(tc, test_sequence_numbers_after_deletes_agree);
    tcase_add_test(tc, test_deletes_and_sets_with_versions_agree);
    tcase_add_test(tc, test_watches_of_every_kind_and_their_order_agree);
    tcase_add_test(tc, test_multi_with_failing_ops_agrees);
    tcase_add_test(tc, test_a_session_close_agrees);
    tcase_add_test(tc, test_a_session_expiry_agrees);
    tcase_add_test(tc, test_a_lost_answer_and_watches_set_again_agree);
    tcase_add_test(tc, test_the_request_size_limit_agrees);
    tcase_add_test(tc, test_watches_set_again_over_the_size_limit_agree);
    tcase_add_test(tc, test_acl_refusals_agree);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
