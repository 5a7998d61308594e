/* Tests of the ZooKeeper model itself, without a server: the guarantees of
 * docs/simulation.md, one by one, on small scripted worlds, and seeded
 * random worlds with every fault on, where every request must get exactly
 * one answer, in order, and a seed must replay exactly. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* ---- helpers ------------------------------------------------------------ */

static zsim_world *mkworld(int servers, uint64_t seed)
{
    struct zsim_config c;
    zsim_config_default(&c);
    c.servers = servers;
    c.seed = seed;
    zsim_world *w = NULL;
    ck_assert_int_eq(zsim_world_new(&c, &w), ZSIM_OK);
    return w;
}

/* Runs the world, delivering to nobody else, until s has an item. */
static const struct zsim_item *next_item(zsim_world *w, zsim_session *s)
{
    for (int i = 0; i < 1000000; i++) {
        const struct zsim_item *it = zsim_deliver(s);
        if (it)
            return it;
        if (zsim_internal_step(w) == 0)
            continue;
        int64_t t = zsim_next_timer(w);
        ck_assert_msg(t != INT64_MAX, "nothing more can happen");
        zsim_advance(w, t - zsim_now(w));
    }
    ck_abort_msg("no item came");
    return NULL;
}

static const struct zsim_item *answer(zsim_world *w, zsim_session *s, uint64_t tag)
{
    const struct zsim_item *it = next_item(w, s);
    ck_assert_msg(it->kind == ZSIM_ANSWER, "an answer (tag %" PRIu64 ") was due, not a %s event",
                  tag, zsim_event_name(it->type));
    ck_assert_uint_eq(it->tag, tag);
    return it;
}

static const struct zsim_item *event(zsim_world *w, zsim_session *s, int type, const char *path)
{
    const struct zsim_item *it = next_item(w, s);
    ck_assert_msg(it->kind == ZSIM_WATCH, "a %s event was due, not an answer (tag %" PRIu64 ", %s)",
                  zsim_event_name(type), it->tag, zsim_rc_name(it->rc));
    ck_assert_str_eq(zsim_event_name(it->type), zsim_event_name(type));
    ck_assert_str_eq(it->path, path);
    return it;
}

static void session_event(zsim_world *w, zsim_session *s, int state)
{
    const struct zsim_item *it = next_item(w, s);
    ck_assert_msg(it->kind == ZSIM_SESSION, "a session event was due, not kind %d (rc %s)", it->kind,
                  zsim_rc_name(it->rc));
    ck_assert_str_eq(zsim_state_name(it->state), zsim_state_name(state));
}

static zsim_session *connect_to(zsim_world *w, int server, int timeout_ms, uint64_t watcher)
{
    zsim_session *s = zsim_session_new_hosts(w, timeout_ms, watcher, &server, 1);
    ck_assert_ptr_nonnull(s);
    session_event(w, s, ZSIM_CONNECTED_STATE);
    ck_assert_int_eq(zsim_server(s), server);
    return s;
}

static int create(zsim_world *w, zsim_session *s, const char *path, int mode, char *name)
{
    static uint64_t tag = 1000;
    ck_assert_int_eq(zsim_acreate(s, path, "d", 1, &ZSIM_OPEN_ACL_UNSAFE, mode, ++tag), ZSIM_OK);
    const struct zsim_item *it = answer(w, s, tag);
    if (name && it->rc == ZSIM_OK)
        strcpy(name, it->value);
    return it->rc;
}

static int call_rc(zsim_world *w, zsim_session *s, int rc, uint64_t tag)
{
    ck_assert_int_eq(rc, ZSIM_OK);
    return answer(w, s, tag)->rc;
}

/* Nothing more for s: a sync's answer is the next item. */
static void nothing_more(zsim_world *w, zsim_session *s)
{
    ck_assert_int_eq(zsim_async(s, "/", 999999), ZSIM_OK);
    answer(w, s, 999999);
}

/* ---- nodes ------------------------------------------------------------------ */

START_TEST(test_creates_of_every_mode_give_the_servers_names_and_stats)
{
    zsim_world *w = mkworld(1, 1);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    ck_assert_int_eq(zsim_acreate(s, "/p", NULL, -1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, 1),
                     ZSIM_OK);
    const struct zsim_item *it = answer(w, s, 1);
    ck_assert_int_eq(it->rc, ZSIM_OK);
    ck_assert_str_eq(it->value, "/p");
    ck_assert_int_eq(it->stat->version, 0);
    ck_assert_int_eq(it->stat->cversion, 0);
    ck_assert_int_eq(it->stat->numChildren, 0);
    ck_assert_int_eq(it->stat->dataLength, 0);
    ck_assert_int_eq(it->stat->ephemeralOwner, 0);
    ck_assert_int_eq(it->stat->czxid, it->stat->mzxid);
    ck_assert_int_eq(it->stat->czxid, it->stat->pzxid);
    int64_t pz = it->stat->czxid;

    ck_assert_int_eq(zsim_acreate(s, "/p/e", "ab", 2, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_EPHEMERAL, 2),
                     ZSIM_OK);
    it = answer(w, s, 2);
    ck_assert_int_eq(it->stat->ephemeralOwner, zsim_session_id(s));
    ck_assert_int_eq(it->stat->dataLength, 2);
    ck_assert_int_gt(it->stat->czxid, pz);
    char name[64];
    ck_assert_int_eq(create(w, s, "/p/s-", ZSIM_PERSISTENT_SEQUENTIAL, name), ZSIM_OK);
    ck_assert_str_eq(name, "/p/s-0000000001");
    ck_assert_int_eq(create(w, s, "/p/t-", ZSIM_EPHEMERAL_SEQUENTIAL, name), ZSIM_OK);
    ck_assert_str_eq(name, "/p/t-0000000002");
    ck_assert_int_eq(zsim_acreate(s, "/p/c", "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_CONTAINER, 3),
                     ZSIM_OK);
    it = answer(w, s, 3);
    ck_assert_int_eq(it->stat->ephemeralOwner, 0); /* a container's mark is not shown */

    struct zsim_stat st;
    ck_assert_int_eq(zsim_truth_stat(w, "/p", &st), ZSIM_OK);
    ck_assert_int_eq(st.numChildren, 4);
    ck_assert_int_eq(st.cversion, 4);
    ck_assert_int_eq(st.pzxid, it->stat->czxid);
    ck_assert_int_eq(zsim_aget(s, "/p/e", 0, 4), ZSIM_OK);
    it = answer(w, s, 4);
    ck_assert_int_eq(it->datalen, 2);
    ck_assert_int_eq(memcmp(it->data, "ab", 2), 0);
    ck_assert_int_eq(zsim_aget(s, "/p", 0, 5), ZSIM_OK);
    it = answer(w, s, 5);
    ck_assert_int_eq(it->datalen, -1);
    ck_assert_ptr_null(it->data);
    zsim_world_free(w);
}
END_TEST

/* The server stores a parent's cversion as the count of creations, and
 * names sequential nodes by it; it shows clients twice that less the
 * children left, which counts deletions too. */
START_TEST(test_sequence_numbers_count_creations_and_the_cversion_shown_counts_deletions)
{
    zsim_world *w = mkworld(1, 2);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    char name[64];
    create(w, s, "/q", ZSIM_PERSISTENT, NULL);
    for (int i = 0; i < 3; i++)
        create(w, s, "/q/n-", ZSIM_PERSISTENT_SEQUENTIAL, name);
    ck_assert_str_eq(name, "/q/n-0000000002");
    struct zsim_stat before, after;
    zsim_truth_stat(w, "/q", &before);
    ck_assert_int_eq(call_rc(w, s, zsim_adelete(s, "/q/n-0000000002", -1, 7), 7), ZSIM_OK);
    zsim_truth_stat(w, "/q", &after);
    ck_assert_int_eq(after.cversion, before.cversion + 1);
    ck_assert_int_gt(after.pzxid, before.pzxid);
    ck_assert_int_eq(after.numChildren, 2);
    create(w, s, "/q/n-", ZSIM_PERSISTENT_SEQUENTIAL, name);
    ck_assert_str_eq(name, "/q/n-0000000003");
    /* a plain create counts too */
    create(w, s, "/q/plain", ZSIM_PERSISTENT, NULL);
    create(w, s, "/q/m-", ZSIM_EPHEMERAL_SEQUENTIAL, name);
    ck_assert_str_eq(name, "/q/m-0000000005");
    /* a failed create does not */
    ck_assert_int_eq(create(w, s, "/q/plain", ZSIM_PERSISTENT, NULL), ZSIM_NODEEXISTS);
    create(w, s, "/q/m-", ZSIM_EPHEMERAL_SEQUENTIAL, name);
    ck_assert_str_eq(name, "/q/m-0000000006");
    zsim_world_free(w);
}
END_TEST

START_TEST(test_writes_are_refused_with_the_servers_codes)
{
    zsim_world *w = mkworld(1, 3);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    create(w, s, "/r", ZSIM_PERSISTENT, NULL);
    create(w, s, "/r/e", ZSIM_EPHEMERAL, NULL);
    create(w, s, "/r/k", ZSIM_PERSISTENT, NULL);
    create(w, s, "/r/k/x", ZSIM_PERSISTENT, NULL);
    ck_assert_int_eq(create(w, s, "/r", ZSIM_PERSISTENT, NULL), ZSIM_NODEEXISTS);
    ck_assert_int_eq(create(w, s, "/nope/x", ZSIM_PERSISTENT, NULL), ZSIM_NONODE);
    ck_assert_int_eq(create(w, s, "/r/e/x", ZSIM_PERSISTENT, NULL), ZSIM_NOCHILDRENFOREPHEMERALS);
    ck_assert_int_eq(call_rc(w, s, zsim_adelete(s, "/r/k", -1, 1), 1), ZSIM_NOTEMPTY);
    ck_assert_int_eq(call_rc(w, s, zsim_adelete(s, "/r/k/x", 3, 2), 2), ZSIM_BADVERSION);
    ck_assert_int_eq(call_rc(w, s, zsim_aset(s, "/r/k/x", "v", 1, 0, 3), 3), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, s, zsim_aset(s, "/r/k/x", "v", 1, 0, 4), 4), ZSIM_BADVERSION);
    ck_assert_int_eq(call_rc(w, s, zsim_adelete(s, "/r/k/x", 1, 5), 5), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, s, zsim_adelete(s, "/r/k/x", -1, 6), 6), ZSIM_NONODE);
    ck_assert_int_eq(call_rc(w, s, zsim_aset(s, "/r/none", "v", 1, -1, 7), 7), ZSIM_NONODE);
    ck_assert_int_eq(call_rc(w, s, zsim_adelete(s, "/zookeeper", -1, 8), 8), ZSIM_BADARGUMENTS);
    /* the C client refuses bad paths before sending */
    ck_assert_int_eq(zsim_acreate(s, "r", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 9), ZSIM_BADARGUMENTS);
    ck_assert_int_eq(zsim_acreate(s, "/r/", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 9), ZSIM_BADARGUMENTS);
    ck_assert_int_eq(zsim_aexists(s, "/r//x", 0, 9), ZSIM_BADARGUMENTS);
    ck_assert_int_eq(zsim_aget(s, "/r/./x", 0, 9), ZSIM_BADARGUMENTS);
    /* ... but a sequential create may end in '/' */
    char name[64];
    ck_assert_int_eq(create(w, s, "/r/", ZSIM_PERSISTENT_SEQUENTIAL, name), ZSIM_OK);
    ck_assert_str_eq(name, "/r/0000000002"); /* e and k came before */
    /* the server refuses what the C client lets through */
    ck_assert_int_eq(create(w, s, "/r/\x1f", ZSIM_PERSISTENT, NULL), ZSIM_BADARGUMENTS);
    ck_assert_int_eq(create(w, s, "/r/\xff", ZSIM_PERSISTENT, NULL), ZSIM_BADARGUMENTS);
    ck_assert_int_eq(create(w, s, "/r/\xf0\x9f\x98\x80", ZSIM_PERSISTENT, NULL), ZSIM_BADARGUMENTS);
    ck_assert_int_eq(create(w, s, "/r/\xc3\xa9", ZSIM_PERSISTENT, NULL), ZSIM_OK);
    nothing_more(w, s);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_acls_refuse_reads_writes_creates_and_deletes)
{
    zsim_world *w = mkworld(1, 4);
    zsim_session *owner = connect_to(w, 0, 10000, 1);
    zsim_session *other = connect_to(w, 0, 10000, 2);
    ck_assert_int_eq(zsim_add_auth(owner, "digest", "alice:secret"), ZSIM_OK);
    /* "auth" without credentials is refused */
    ck_assert_int_eq(zsim_acreate(other, "/a", "", 0, &ZSIM_CREATOR_ALL_ACL, 0, 1), ZSIM_OK);
    ck_assert_int_eq(answer(w, other, 1)->rc, ZSIM_INVALIDACL);
    ck_assert_int_eq(zsim_acreate(owner, "/a", "x", 1, &ZSIM_CREATOR_ALL_ACL, 0, 2), ZSIM_OK);
    ck_assert_int_eq(answer(w, owner, 2)->rc, ZSIM_OK);
    ck_assert_int_eq(call_rc(w, other, zsim_aget(other, "/a", 0, 3), 3), ZSIM_NOAUTH);
    ck_assert_int_eq(call_rc(w, other, zsim_aget_children(other, "/a", 0, 4), 4), ZSIM_NOAUTH);
    ck_assert_int_eq(call_rc(w, other, zsim_aset(other, "/a", "y", 1, -1, 5), 5), ZSIM_NOAUTH);
    ck_assert_int_eq(call_rc(w, other, zsim_aexists(other, "/a", 0, 6), 6), ZSIM_OK);
    ck_assert_int_eq(create(w, other, "/a/b", ZSIM_PERSISTENT, NULL), ZSIM_NOAUTH);
    ck_assert_int_eq(create(w, owner, "/a/b", ZSIM_PERSISTENT, NULL), ZSIM_OK);
    /* a delete is checked on the parent, before the node is looked at */
    ck_assert_int_eq(call_rc(w, other, zsim_adelete(other, "/a/b", -1, 7), 7), ZSIM_NOAUTH);
    ck_assert_int_eq(call_rc(w, other, zsim_adelete(other, "/a/none", -1, 8), 8), ZSIM_NOAUTH);
    /* the same credentials on another session are the same identity */
    ck_assert_int_eq(zsim_add_auth(other, "digest", "alice:secret"), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, other, zsim_aget(other, "/a", 0, 9), 9), ZSIM_OK);
    /* an explicit digest ACL */
    static const struct zsim_acl bob[] = {{ZSIM_PERM_READ, "digest", "bob:ikIaKsbtGweaHnb/jKn7OHqbunM="}};
    const struct zsim_acl_vector bobv = {1, bob};
    ck_assert_int_eq(zsim_acreate(owner, "/bob", "", 0, &bobv, 0, 10), ZSIM_OK);
    ck_assert_int_eq(answer(w, owner, 10)->rc, ZSIM_OK);
    ck_assert_int_eq(call_rc(w, owner, zsim_aget(owner, "/bob", 0, 11), 11), ZSIM_NOAUTH);
    ck_assert_int_eq(zsim_add_auth(owner, "digest", "bob:pw"), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, owner, zsim_aget(owner, "/bob", 0, 12), 12), ZSIM_OK);
    /* an ACL the server cannot take */
    static const struct zsim_acl bad[] = {{ZSIM_PERM_ALL, "world", "someone"}};
    const struct zsim_acl_vector badv = {1, bad};
    ck_assert_int_eq(zsim_acreate(owner, "/bad", "", 0, &badv, 0, 13), ZSIM_OK);
    ck_assert_int_eq(answer(w, owner, 13)->rc, ZSIM_INVALIDACL);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_digest_identities_are_sha1_in_base64)
{
    char *id = digest_id("alice:secret");
    ck_assert_str_eq(id, "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
    free(id);
    char long_cert[61] = "u:";
    memset(long_cert + 2, 'x', 58);
    long_cert[60] = '\0';
    id = digest_id(long_cert);
    ck_assert_str_eq(id + 2, "thYLkAwvn/WYfZ0W+wt5jrVgVcg=");
    free(id);
    ck_assert_ptr_null(digest_id("nocolon"));
}
END_TEST

START_TEST(test_paths_are_checked_as_the_client_and_the_server_do)
{
    ck_assert(client_path_ok("/", 0));
    ck_assert(!client_path_ok("", 0));
    ck_assert(!client_path_ok("/a/", 0));
    ck_assert(client_path_ok("/a/", ZSIM_EPHEMERAL_SEQUENTIAL));
    ck_assert(!client_path_ok("/a/..", 0));
    ck_assert(client_path_ok("/a/..", ZSIM_PERSISTENT_SEQUENTIAL));
    ck_assert(client_path_ok("/a/\x1f", 0)); /* the C client's off-by-one */
    ck_assert(!server_path_ok("/a/\x1f"));
    ck_assert(!server_path_ok("/a/\x7f"));
    ck_assert(!server_path_ok("/a/\xc2\x80")); /* U+0080 */
    ck_assert(server_path_ok("/a/\xc2\xa0"));
    ck_assert(!server_path_ok("/a/\xee\x80\x80")); /* U+E000, private use */
    ck_assert(!server_path_ok("/a/\xef\xbf\xbf")); /* U+FFFF */
    ck_assert(!server_path_ok("/a/\xc0\xaf"));     /* overlong */
    ck_assert(server_path_ok("/a/b.c"));
    ck_assert(!server_path_ok("/a/."));
}
END_TEST

/* ---- watches ------------------------------------------------------------------ */

START_TEST(test_watches_fire_once_with_the_event_of_their_kind)
{
    zsim_world *w = mkworld(1, 5);
    zsim_session *a = connect_to(w, 0, 10000, 1);
    zsim_session *b = connect_to(w, 0, 10000, 2);
    ck_assert_int_eq(call_rc(w, b, zsim_aexists(b, "/w", 70, 1), 1), ZSIM_NONODE);
    create(w, a, "/w", ZSIM_PERSISTENT, NULL);
    const struct zsim_item *it = event(w, b, ZSIM_CREATED_EVENT, "/w");
    ck_assert_int_eq(it->nwatchers, 1);
    ck_assert_uint_eq(it->watchers[0], 70);
    /* a data watch and an exists watch of one watcher: one call */
    ck_assert_int_eq(call_rc(w, b, zsim_aget(b, "/w", 71, 2), 2), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, b, zsim_aexists(b, "/w", 71, 3), 3), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, b, zsim_aexists(b, "/w", 72, 4), 4), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, a, zsim_aset(a, "/w", "x", 1, -1, 5), 5), ZSIM_OK);
    it = event(w, b, ZSIM_CHANGED_EVENT, "/w");
    ck_assert_int_eq(it->nwatchers, 2);
    ck_assert_uint_eq(it->watchers[0], 71);
    ck_assert_uint_eq(it->watchers[1], 72);
    /* one-shot */
    ck_assert_int_eq(call_rc(w, a, zsim_aset(a, "/w", "y", 1, -1, 6), 6), ZSIM_OK);
    nothing_more(w, b);
    /* child watch; a delete fires the node's data and child watches as one
     * event, and the parent's child watch */
    create(w, a, "/w/c", ZSIM_PERSISTENT, NULL);
    ck_assert_int_eq(call_rc(w, b, zsim_aget_children(b, "/w", 73, 7), 7), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, b, zsim_aget_children(b, "/w/c", 74, 8), 8), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, b, zsim_aget(b, "/w/c", 75, 9), 9), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, a, zsim_adelete(a, "/w/c", -1, 10), 10), ZSIM_OK);
    it = event(w, b, ZSIM_DELETED_EVENT, "/w/c");
    ck_assert_int_eq(it->nwatchers, 2);
    ck_assert_uint_eq(it->watchers[0], 74);
    ck_assert_uint_eq(it->watchers[1], 75);
    it = event(w, b, ZSIM_CHILD_EVENT, "/w");
    ck_assert_uint_eq(it->watchers[0], 73);
    nothing_more(w, b);
    /* no watch set on a node that is not there (get, children) */
    ck_assert_int_eq(call_rc(w, b, zsim_aget(b, "/w/none", 76, 11), 11), ZSIM_NONODE);
    create(w, a, "/w/none", ZSIM_PERSISTENT, NULL);
    nothing_more(w, b);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_a_sessions_own_write_fires_its_watch_before_its_answer)
{
    zsim_world *w = mkworld(3, 6);
    for (int srv = 0; srv < 3; srv++) {
        zsim_session *s = connect_to(w, srv, 10000, 1);
        char path[16];
        snprintf(path, sizeof path, "/own%d", srv);
        ck_assert_int_eq(call_rc(w, s, zsim_aexists(s, path, 5, 1), 1), ZSIM_NONODE);
        ck_assert_int_eq(zsim_acreate(s, path, "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 2), ZSIM_OK);
        event(w, s, ZSIM_CREATED_EVENT, path);
        ck_assert_int_eq(answer(w, s, 2)->rc, ZSIM_OK);
    }
    zsim_world_free(w);
}
END_TEST

START_TEST(test_a_multi_is_all_or_nothing_with_per_op_results)
{
    zsim_world *w = mkworld(1, 7);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    create(w, s, "/m", ZSIM_PERSISTENT, NULL);
    int64_t zxid = zsim_zxid(w, 0);
    struct zsim_op ops[3] = {
        {ZSIM_MOP_CREATE, "/m/a", "1", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, 0},
        {ZSIM_MOP_CHECK, "/m", NULL, 0, NULL, 0, 5},
        {ZSIM_MOP_SET, "/m", "x", 1, NULL, 0, -1}};
    ck_assert_int_eq(zsim_amulti(s, 3, ops, 1), ZSIM_OK);
    const struct zsim_item *it = answer(w, s, 1);
    ck_assert_int_eq(it->rc, ZSIM_BADVERSION);
    ck_assert_int_eq(it->count, 3);
    ck_assert_int_eq(it->results[0].err, ZSIM_OK);
    ck_assert_int_eq(it->results[1].err, ZSIM_BADVERSION);
    ck_assert_int_eq(it->results[2].err, ZSIM_RUNTIMEINCONSISTENCY);
    ck_assert_int_eq(zsim_truth_stat(w, "/m/a", NULL), ZSIM_NONODE);
    ck_assert_int_eq(zsim_zxid(w, 0), zxid + 1); /* a failed multi is a transaction */
    /* ops see the ops before them */
    struct zsim_op ok[4] = {
        {ZSIM_MOP_CREATE, "/m/s-", "1", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT_SEQUENTIAL, 0},
        {ZSIM_MOP_CREATE, "/m/b", "1", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT, 0},
        {ZSIM_MOP_SET, "/m/b", "2", 1, NULL, 0, 0},
        {ZSIM_MOP_CHECK, "/m/b", NULL, 0, NULL, 0, 1}};
    ck_assert_int_eq(zsim_amulti(s, 4, ok, 2), ZSIM_OK);
    it = answer(w, s, 2);
    ck_assert_int_eq(it->rc, ZSIM_OK);
    ck_assert_str_eq(it->results[0].value, "/m/s-0000000000");
    ck_assert_str_eq(it->results[1].value, "/m/b");
    ck_assert_int_eq(it->results[2].stat->version, 1);
    ck_assert_ptr_null(it->results[3].value);
    struct zsim_stat st;
    ck_assert_int_eq(zsim_truth_stat(w, "/m/b", &st), ZSIM_OK);
    ck_assert_int_eq(st.czxid, st.mzxid); /* one zxid for the whole multi */
    zsim_world_free(w);
}
END_TEST

/* ---- servers ------------------------------------------------------------------ */

START_TEST(test_a_follower_lags_and_a_sync_catches_it_up)
{
    zsim_world *w = mkworld(3, 8);
    zsim_session *l = connect_to(w, 0, 10000, 1);
    zsim_session *f = connect_to(w, 1, 10000, 2);
    while (zsim_apply(w, 1) == 0 || zsim_apply(w, 2) == 0)
        ;
    ck_assert_int_eq(zsim_acreate(l, "/lag", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 1), ZSIM_OK);
    ck_assert_int_eq(zsim_take(l), 0);
    ck_assert_int_eq(answer(w, l, 1)->rc, ZSIM_OK);
    /* the follower has not applied it: its reads do not see it */
    ck_assert_int_eq(zsim_aexists(f, "/lag", 0, 2), ZSIM_OK);
    ck_assert_int_eq(zsim_take(f), 0);
    ck_assert_int_eq(zsim_deliver(f)->rc, ZSIM_NONODE);
    ck_assert_int_lt(zsim_zxid(w, 1), zsim_zxid(w, 0));
    /* a sync waits for the follower to catch up */
    ck_assert_int_eq(zsim_async(f, "/", 3), ZSIM_OK);
    ck_assert_int_eq(zsim_aexists(f, "/lag", 0, 4), ZSIM_OK);
    ck_assert_int_eq(zsim_take(f), 0);
    ck_assert_ptr_null(zsim_deliver(f));
    ck_assert_int_eq(zsim_take(f), -1); /* the exists waits behind the sync */
    ck_assert_int_eq(zsim_apply(w, 1), 0);
    const struct zsim_item *it = zsim_deliver(f);
    ck_assert_ptr_nonnull(it);
    ck_assert_uint_eq(it->tag, 3);
    ck_assert_str_eq(it->value, "/");
    ck_assert_int_eq(zsim_take(f), 0);
    ck_assert_int_eq(zsim_deliver(f)->rc, ZSIM_OK);
    /* a follower's own write: answered once it applied it */
    ck_assert_int_eq(zsim_acreate(f, "/lag2", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 5), ZSIM_OK);
    ck_assert_int_eq(zsim_take(f), 0);
    ck_assert_ptr_null(zsim_deliver(f));
    ck_assert_int_eq(zsim_truth_stat(w, "/lag2", NULL), ZSIM_OK);
    ck_assert_int_eq(zsim_apply(w, 1), 0);
    ck_assert_int_eq(zsim_deliver(f)->rc, ZSIM_OK);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_listings_come_in_no_fixed_order)
{
    int orders = 0;
    char first[32] = "";
    for (uint64_t seed = 1; seed <= 8; seed++) {
        zsim_world *w = mkworld(1, seed);
        zsim_session *s = connect_to(w, 0, 10000, 1);
        create(w, s, "/o", ZSIM_PERSISTENT, NULL);
        for (int i = 0; i < 5; i++)
            create(w, s, "/o/n-", ZSIM_PERSISTENT_SEQUENTIAL, NULL);
        ck_assert_int_eq(zsim_aget_children(s, "/o", 0, 1), ZSIM_OK);
        const struct zsim_item *it = answer(w, s, 1);
        ck_assert_int_eq(it->count, 5);
        ck_assert_ptr_null(it->stat);
        if (strcmp(first, it->names[0]) != 0)
            orders++;
        snprintf(first, sizeof first, "%s", it->names[0]);
        zsim_world_free(w);
    }
    ck_assert_int_gt(orders, 2);
}
END_TEST

START_TEST(test_an_empty_container_goes_once_it_had_a_child)
{
    struct zsim_config c;
    zsim_config_default(&c);
    c.servers = 1;
    c.container_check_ns = 5000000000;
    zsim_world *w;
    zsim_world_new(&c, &w);
    zsim_session *s = connect_to(w, 0, 30000, 1);
    ck_assert_int_eq(zsim_acreate(s, "/used", "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_CONTAINER, 1), 0);
    answer(w, s, 1);
    ck_assert_int_eq(zsim_acreate(s, "/unused", "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_CONTAINER, 2), 0);
    answer(w, s, 2);
    create(w, s, "/used/x", ZSIM_EPHEMERAL, NULL);
    ck_assert_int_eq(call_rc(w, s, zsim_aexists(s, "/used", 9, 3), 3), ZSIM_OK);
    zsim_advance(w, 6000000000);
    ck_assert_int_eq(zsim_truth_stat(w, "/used", NULL), ZSIM_OK); /* not empty */
    ck_assert_int_eq(call_rc(w, s, zsim_adelete(s, "/used/x", -1, 4), 4), ZSIM_OK);
    event(w, s, ZSIM_DELETED_EVENT, "/used");
    ck_assert_int_eq(zsim_truth_stat(w, "/used", NULL), ZSIM_NONODE);
    ck_assert_int_eq(zsim_truth_stat(w, "/unused", NULL), ZSIM_OK);
    zsim_world_free(w);
}
END_TEST

/* One server whose jute.maxbuffer is max_buffer. */
static zsim_world *limited_world(int max_buffer)
{
    struct zsim_config c;
    zsim_config_default(&c);
    c.servers = 1;
    c.max_buffer = max_buffer;
    zsim_world *w;
    ck_assert_int_eq(zsim_world_new(&c, &w), ZSIM_OK);
    return w;
}

START_TEST(test_a_request_over_the_size_limit_closes_the_connection)
{
    zsim_world *w = limited_world(1000);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    /* header 8 + path 4+3 + data 4+n + ACL 27 + flags 4 */
    int fits = 1000 - (8 + 7 + 4 + 27 + 4);
    static char data[2000];
    ck_assert_int_eq(zsim_acreate(s, "/ok", data, fits, &ZSIM_OPEN_ACL_UNSAFE, 0, 1), ZSIM_OK);
    ck_assert_int_eq(answer(w, s, 1)->rc, ZSIM_OK);
    ck_assert_int_eq(zsim_acreate(s, "/a1", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 2), ZSIM_OK);
    ck_assert_int_eq(zsim_acreate(s, "/no", data, fits + 1, &ZSIM_OPEN_ACL_UNSAFE, 0, 3), ZSIM_OK);
    ck_assert_int_eq(zsim_acreate(s, "/a2", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 4), ZSIM_OK);
    /* The server read the first before the second's length: it carries
     * the first out, and closes the connection before answering it. */
    ck_assert_int_eq(zsim_take(s), 0);
    session_event(w, s, ZSIM_CONNECTING_STATE);
    ck_assert_int_eq(answer(w, s, 2)->rc, ZSIM_CONNECTIONLOSS);
    ck_assert_int_eq(zsim_truth_stat(w, "/a1", NULL), ZSIM_OK);
    ck_assert_int_eq(answer(w, s, 3)->rc, ZSIM_CONNECTIONLOSS);
    ck_assert_int_eq(answer(w, s, 4)->rc, ZSIM_CONNECTIONLOSS);
    ck_assert_int_eq(zsim_truth_stat(w, "/no", NULL), ZSIM_NONODE);
    ck_assert_int_eq(zsim_truth_stat(w, "/a2", NULL), ZSIM_NONODE);
    session_event(w, s, ZSIM_CONNECTED_STATE);
    zsim_world_free(w);
}
END_TEST

/* The items up to the answer tagged `tag`: its code, and how many times
 * the session connected meanwhile. */
static int answer_after_connects(zsim_world *w, zsim_session *s, uint64_t tag, int *connects)
{
    *connects = 0;
    for (;;) {
        const struct zsim_item *it = next_item(w, s);
        if (it->kind == ZSIM_SESSION && it->state == ZSIM_CONNECTED_STATE)
            ++*connects;
        if (it->kind == ZSIM_ANSWER && it->tag == tag)
            return it->rc;
    }
}

START_TEST(test_watches_set_again_over_the_size_limit_close_every_connection)
{
    zsim_world *w = limited_world(200);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    /* header 8, zxid 8, three counts 12, and 4 + 39 for each path: 200 */
    char path[4][48];
    for (int i = 0; i < 4; i++) {
        snprintf(path[i], sizeof path[i], "/%038d", i);
        ck_assert_int_eq(call_rc(w, s, zsim_aexists(s, path[i], 7, 1 + (uint64_t)i), 1 + (uint64_t)i),
                         ZSIM_NONODE);
    }
    zsim_drop(s, 0, 0);
    int connects;
    ck_assert_int_eq(zsim_async(s, "/", 10), ZSIM_OK);
    ck_assert_int_eq(answer_after_connects(w, s, 10, &connects), ZSIM_OK);
    ck_assert_int_eq(connects, 1);
    /* One more watch, of 4 + 1: the next setWatches is over the limit,
     * and every connection closes on it, the requests behind it lost. */
    ck_assert_int_eq(call_rc(w, s, zsim_aexists(s, "/x", 7, 11), 11), ZSIM_NONODE);
    zsim_drop(s, 0, 0);
    for (uint64_t tag = 20; tag < 23; tag++) {
        ck_assert_int_eq(zsim_async(s, "/", tag), ZSIM_OK);
        ck_assert_int_eq(answer_after_connects(w, s, tag, &connects), ZSIM_CONNECTIONLOSS);
    }
    ck_assert(zsim_session_alive(s)); /* each connection touches it */
    zsim_world_free(w);
}
END_TEST

START_TEST(test_an_answer_over_a_clients_limit_breaks_its_connection)
{
    struct zsim_config c;
    zsim_config_default(&c);
    c.servers = 1;
    c.answer_limit = 200;
    zsim_world *w;
    zsim_world_new(&c, &w);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    create(w, s, "/big", ZSIM_PERSISTENT, NULL);
    for (int i = 0; i < 20; i++)
        create(w, s, "/big/n-", ZSIM_PERSISTENT_SEQUENTIAL, NULL);
    ck_assert_int_eq(zsim_aget_children(s, "/big", 0, 1), ZSIM_OK);
    session_event(w, s, ZSIM_CONNECTING_STATE);
    ck_assert_int_eq(answer(w, s, 1)->rc, ZSIM_CONNECTIONLOSS);
    zsim_world_free(w);
}
END_TEST

/* The checkers' order of latch nodes (zsim_latch_seq): a name past the
 * sequence's 32-bit wrap is no sequence, its last ten digits though they
 * are: "latch--2147483644" sorts before "latch-2147483643". */
START_TEST(test_the_checker_reads_no_sequence_in_a_name_past_the_wrap)
{
    ck_assert_int_eq(zsim_latch_seq("_c_u-latch-2147483646"), 2147483646);
    ck_assert_int_eq(zsim_latch_seq("_c_u-latch-0000000007"), 7);
    ck_assert_int_eq(zsim_latch_seq("_c_u-latch--2147483644"), -1);
    ck_assert_int_eq(zsim_latch_seq("_c_u-latch--999999999"), -1);
    ck_assert_int_eq(zsim_latch_seq("latch"), -1);
    ck_assert_int_eq(zsim_latch_seq("_c_u-latch-000000007"), -1);
    ck_assert_int_eq(zsim_latch_seq("_c_latch-u-latch-0000000042"), 42);
}
END_TEST

/* ---- sessions and faults ------------------------------------------------------ */

START_TEST(test_a_lost_connection_reports_connecting_then_losses_in_order)
{
    zsim_world *w = mkworld(3, 9);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    create(w, s, "/d", ZSIM_PERSISTENT, NULL);
    ck_assert_int_eq(call_rc(w, s, zsim_aget(s, "/d", 55, 1), 1), ZSIM_OK);
    ck_assert_int_eq(zsim_acreate(s, "/d/a", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 2), ZSIM_OK);
    ck_assert_int_eq(zsim_acreate(s, "/d/b", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 3), ZSIM_OK);
    ck_assert_int_eq(zsim_acreate(s, "/d/c", "", 0, &ZSIM_OPEN_ACL_UNSAFE, 0, 4), ZSIM_OK);
    ck_assert_int_eq(zsim_take(s), 0); /* /d/a answered, but the answer is lost */
    zsim_drop(s, 1, 0);                /* /d/b carried out, /d/c not */
    const struct zsim_item *it = next_item(w, s);
    ck_assert_int_eq(it->kind, ZSIM_SESSION);
    ck_assert_int_eq(it->state, ZSIM_CONNECTING_STATE);
    ck_assert_int_eq(it->nwatchers, 2); /* the default watcher and the data watch's */
    ck_assert_uint_eq(it->watchers[0], 1);
    ck_assert_uint_eq(it->watchers[1], 55);
    ck_assert_int_eq(answer(w, s, 2)->rc, ZSIM_CONNECTIONLOSS);
    ck_assert_int_eq(answer(w, s, 3)->rc, ZSIM_CONNECTIONLOSS);
    ck_assert_int_eq(answer(w, s, 4)->rc, ZSIM_CONNECTIONLOSS);
    ck_assert_int_eq(zsim_truth_stat(w, "/d/a", NULL), ZSIM_OK);
    ck_assert_int_eq(zsim_truth_stat(w, "/d/b", NULL), ZSIM_OK);
    ck_assert_int_eq(zsim_truth_stat(w, "/d/c", NULL), ZSIM_NONODE);
    /* a request made while disconnected is sent after the reconnection */
    ck_assert_int_eq(zsim_aexists(s, "/d/c", 0, 5), ZSIM_OK);
    session_event(w, s, ZSIM_CONNECTED_STATE);
    ck_assert_int_eq(answer(w, s, 5)->rc, ZSIM_NONODE);
    ck_assert_int_eq(zsim_session_alive(s), true);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_watches_set_again_on_reconnection_fire_for_what_was_missed)
{
    zsim_world *w = mkworld(1, 10);
    zsim_session *a = connect_to(w, 0, 10000, 1);
    zsim_session *b = connect_to(w, 0, 10000, 2);
    create(w, a, "/x", ZSIM_PERSISTENT, NULL);
    create(w, a, "/y", ZSIM_PERSISTENT, NULL);
    create(w, a, "/z", ZSIM_PERSISTENT, NULL);
    ck_assert_int_eq(call_rc(w, b, zsim_aget(b, "/x", 61, 1), 1), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, b, zsim_aget(b, "/y", 62, 2), 2), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, b, zsim_aexists(b, "/new", 63, 3), 3), ZSIM_NONODE);
    ck_assert_int_eq(call_rc(w, b, zsim_aget_children(b, "/z", 64, 4), 4), ZSIM_OK);
    zsim_link(b, false);
    ck_assert_int_eq(call_rc(w, a, zsim_aset(a, "/x", "1", 1, -1, 5), 5), ZSIM_OK);
    create(w, a, "/new", ZSIM_PERSISTENT, NULL);
    create(w, a, "/z/k", ZSIM_PERSISTENT, NULL);
    zsim_drop(b, 0, 0); /* the events on the silent link are lost with it */
    zsim_link(b, true);
    session_event(w, b, ZSIM_CONNECTING_STATE);
    session_event(w, b, ZSIM_CONNECTED_STATE);
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        const struct zsim_item *it = next_item(w, b);
        ck_assert_int_eq(it->kind, ZSIM_WATCH);
        if (strcmp(it->path, "/x") == 0 && it->type == ZSIM_CHANGED_EVENT)
            seen |= 1;
        else if (strcmp(it->path, "/new") == 0 && it->type == ZSIM_CREATED_EVENT)
            seen |= 2;
        else if (strcmp(it->path, "/z") == 0 && it->type == ZSIM_CHILD_EVENT)
            seen |= 4;
    }
    ck_assert_int_eq(seen, 7);
    /* /y's watch was set again and fires later */
    ck_assert_int_eq(call_rc(w, a, zsim_aset(a, "/y", "1", 1, -1, 6), 6), ZSIM_OK);
    const struct zsim_item *it = event(w, b, ZSIM_CHANGED_EVENT, "/y");
    ck_assert_uint_eq(it->watchers[0], 62);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_an_expired_session_loses_its_ephemerals_and_its_handle)
{
    zsim_world *w = mkworld(3, 11);
    zsim_session *a = connect_to(w, 0, 10000, 1);
    zsim_session *b = connect_to(w, 0, 10000, 2);
    create(w, a, "/e", ZSIM_PERSISTENT, NULL);
    create(w, a, "/e/a", ZSIM_EPHEMERAL, NULL);
    ck_assert_int_eq(call_rc(w, b, zsim_aexists(b, "/e/a", 8, 1), 1), ZSIM_OK);
    ck_assert_int_eq(zsim_aexists(a, "/e", 0, 2), ZSIM_OK);
    zsim_expire(a);
    ck_assert(!zsim_session_alive(a));
    event(w, b, ZSIM_DELETED_EVENT, "/e/a");
    session_event(w, a, ZSIM_CONNECTING_STATE);
    ck_assert_int_eq(answer(w, a, 2)->rc, ZSIM_CONNECTIONLOSS);
    ck_assert_int_eq(zsim_aexists(a, "/e", 0, 3), ZSIM_OK); /* made while disconnected */
    session_event(w, a, ZSIM_EXPIRED_SESSION_STATE);
    ck_assert_int_eq(answer(w, a, 3)->rc, ZSIM_SESSIONEXPIRED);
    ck_assert_int_eq(zsim_aexists(a, "/e", 0, 4), ZSIM_INVALIDSTATE);
    ck_assert_int_eq(zsim_state(a), ZSIM_EXPIRED_SESSION_STATE);
    zsim_world_free(w);
}
END_TEST

/* The leader expires a session one timeout after the last touch it knows
 * of, at the tick boundary after that; the client gives its connection up
 * after 2/3 of the timeout without an answer. */
START_TEST(test_a_silent_session_expires_on_the_leaders_tick)
{
    zsim_world *w = mkworld(1, 12); /* tick 2 s */
    zsim_session *s = connect_to(w, 0, 9000, 1);
    ck_assert_int_eq(zsim_recv_timeout(s), 9000);
    zsim_advance(w, 100000000);
    int64_t cut = zsim_now(w);
    zsim_link(s, false);
    session_event(w, s, ZSIM_CONNECTING_STATE);
    ck_assert_int_le(zsim_now(w) - cut, 6000000000);
    while (zsim_session_alive(s))
        zsim_advance(w, zsim_next_timer(w) - zsim_now(w));
    int64_t expired_at = zsim_now(w);
    ck_assert_int_eq(expired_at % 2000000000, 0);
    ck_assert_int_ge(expired_at, cut - 3000000000 + 9000000000);
    ck_assert_int_le(expired_at, cut + 9000000000 + 2000000000);
    zsim_link(s, true);
    session_event(w, s, ZSIM_EXPIRED_SESSION_STATE);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_the_negotiated_timeout_lies_within_the_servers_bounds)
{
    zsim_world *w = mkworld(1, 13);
    ck_assert_int_eq(zsim_recv_timeout(connect_to(w, 0, 100, 1)), 4000);
    ck_assert_int_eq(zsim_recv_timeout(connect_to(w, 0, 100000, 1)), 40000);
    ck_assert_int_eq(zsim_recv_timeout(connect_to(w, 0, 12345, 1)), 12345);
    zsim_world_free(w);
}
END_TEST

/* Cut from the leader, a follower goes on answering reads and pings from
 * its stale tree while the leader, hearing no touch, expires the session;
 * after syncLimit it drops its clients, who learn of the expiry once it is
 * back. A request that needs the leader hangs, and with it the pings: the
 * client gives up after 2/3 of its timeout. */
START_TEST(test_a_follower_cut_from_the_leader_serves_stale_reads_until_sync_limit)
{
    zsim_world *w = mkworld(3, 14); /* tick 2 s, syncLimit 5 */
    zsim_session *l = connect_to(w, 0, 30000, 1);
    zsim_session *f = connect_to(w, 1, 4000, 2);
    zsim_session *g = connect_to(w, 1, 4000, 3);
    create(w, f, "/cut", ZSIM_EPHEMERAL, NULL);
    int64_t t0 = zsim_now(w);
    zsim_partition(w, 1, true);
    ck_assert_int_eq(call_rc(w, l, zsim_adelete(l, "/cut", -1, 1), 1), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, f, zsim_aexists(f, "/cut", 0, 2), 2), ZSIM_OK); /* stale */
    ck_assert_int_eq(zsim_async(g, "/", 3), ZSIM_OK);
    session_event(w, g, ZSIM_CONNECTING_STATE);
    ck_assert_int_eq(answer(w, g, 3)->rc, ZSIM_OPERATIONTIMEOUT);
    ck_assert_int_le(zsim_now(w) - t0, 2667000000);
    while (zsim_session_alive(f))
        zsim_advance(w, 10000000);
    /* the last touch the leader knows of is the connection's: T (4 s) and
     * at most a tick (2 s) later, give or take the loop's 10 ms */
    ck_assert_int_le(zsim_now(w) - t0, 6010000000);
    ck_assert_int_eq(zsim_state(f), ZSIM_CONNECTED_STATE); /* and it does not know */
    ck_assert_int_eq(call_rc(w, f, zsim_aexists(f, "/cut", 0, 4), 4), ZSIM_OK);
    session_event(w, f, ZSIM_CONNECTING_STATE);
    ck_assert_int_ge(zsim_now(w) - t0, 10000000000);
    zsim_partition(w, 1, false);
    session_event(w, f, ZSIM_EXPIRED_SESSION_STATE);
    zsim_world_free(w);
}
END_TEST

/* A follower cut from the leader right after it answered a session's sync
 * (zsim_cut_after_sync) never passes that touch on: the leader expires
 * the session one timeout after the touch its last ping brought, on its
 * whole ticks, whatever the pings' phase. */
/* Three servers, tick 2 s, syncLimit 5, the leader's pings every second
 * at 1.3 s, 2.3 s, ...; a session of timeout 4 s on server 1. */
static zsim_world *phased_world(uint64_t seed, zsim_session **f)
{
    struct zsim_config c;
    zsim_config_default(&c);
    c.servers = 3;
    c.seed = seed;
    c.ping_phase_ns = 300000000;
    zsim_world *w = NULL;
    ck_assert_int_eq(zsim_world_new(&c, &w), ZSIM_OK);
    *f = connect_to(w, 1, 4000, 2);
    return w;
}

START_TEST(test_a_touch_cut_off_before_the_next_ping_is_never_counted)
{
    zsim_session *f;
    zsim_world *w = phased_world(16, &f);
    zsim_advance(w, 1500000000 - zsim_now(w));
    /* the connection's touch came with the ping at 1.3 s: expiry at 6 s */
    zsim_cut_after_sync(f, 20000000000);
    ck_assert_int_eq(call_rc(w, f, zsim_async(f, "/", 5), 5), ZSIM_OK);
    int64_t synced = zsim_now(w);
    ck_assert_int_lt(synced, 2300000000);
    while (zsim_session_alive(f))
        zsim_advance(w, zsim_next_timer(w) - zsim_now(w));
    /* passed on at 2.3 s, the sync's touch would have kept it to 8 s */
    ck_assert_int_eq(zsim_now(w), 6000000000);
    zsim_world_free(w);
}
END_TEST

/* A follower cut from the leader within its sync limit reads, once back,
 * the pings the leader queued for it meanwhile before the answers they
 * precede, and answers them at once: a sync taken during the cut and
 * answered after the heal is counted from the heal, even when the
 * follower is cut again before the leader's next ping. */
START_TEST(test_the_pings_a_cut_follower_missed_are_answered_at_the_heal)
{
    zsim_session *f;
    zsim_world *w = phased_world(17, &f);
    zsim_advance(w, 1500000000 - zsim_now(w));
    /* the connection's touch came with the ping at 1.3 s: expiry at 6 s */
    zsim_partition(w, 1, true);
    ck_assert_int_eq(zsim_async(f, "/", 5), ZSIM_OK);
    while (zsim_internal_step(w) == 0)
        ;
    zsim_advance(w, 2500000000 - zsim_now(w)); /* past the ping at 2.3 s */
    zsim_cut_after_sync(f, 20000000000);       /* cut again once answered */
    zsim_partition(w, 1, false);
    ck_assert_int_eq(answer(w, f, 5)->rc, ZSIM_OK);
    ck_assert_int_lt(zsim_now(w), 3300000000);
    while (zsim_session_alive(f))
        zsim_advance(w, zsim_next_timer(w) - zsim_now(w));
    /* the touch reached the leader at 2.5 s, not never: expiry at 8 s, not 6 s */
    ck_assert_int_eq(zsim_now(w), 8000000000);
    zsim_world_free(w);
}
END_TEST

/* A leader that stood still past a half tick's ping pings every follower
 * as it runs again (its ping loop's wait ran out meanwhile), after its
 * expirer: the touches a follower took meanwhile count from then, even
 * when the follower is cut for good before the next ping. */
START_TEST(test_a_leader_that_stood_still_past_a_ping_pings_as_it_runs_again)
{
    zsim_session *f;
    zsim_world *w = phased_world(18, &f);
    zsim_advance(w, 1500000000 - zsim_now(w));
    /* the connection's touch came with the ping at 1.3 s: expiry at 6 s */
    zsim_leader_pause(w, 1000000000); /* to 2.5 s: the ping at 2.3 s falls in it */
    ck_assert_int_eq(call_rc(w, f, zsim_aexists(f, "/", 0, 5), 5), ZSIM_OK);
    ck_assert_int_lt(zsim_now(w), 2300000000); /* a read: the follower's touch */
    zsim_advance(w, 2600000000 - zsim_now(w));
    zsim_partition(w, 1, true); /* for good, before the ping at 3.3 s */
    while (zsim_session_alive(f))
        zsim_advance(w, zsim_next_timer(w) - zsim_now(w));
    /* the read's touch came with the ping at 2.5 s: expiry at 8 s, not 6 s */
    ck_assert_int_eq(zsim_now(w), 8000000000);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_a_followers_pings_keep_a_session_alive_through_the_leader)
{
    zsim_world *w = mkworld(3, 15);
    zsim_session *f = connect_to(w, 2, 4000, 2);
    zsim_advance(w, 60000000000);
    ck_assert(zsim_session_alive(f));
    ck_assert_int_eq(zsim_state(f), ZSIM_CONNECTED_STATE);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_a_close_ends_the_session_and_fires_the_watches_of_its_ephemerals)
{
    zsim_world *w = mkworld(3, 16);
    zsim_session *a = connect_to(w, 1, 10000, 1);
    zsim_session *b = connect_to(w, 2, 10000, 2);
    create(w, a, "/c", ZSIM_PERSISTENT, NULL);
    create(w, a, "/c/e1", ZSIM_EPHEMERAL, NULL);
    create(w, a, "/c/e2", ZSIM_EPHEMERAL, NULL);
    ck_assert_int_eq(call_rc(w, b, zsim_async(b, "/", 1), 1), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, b, zsim_aexists(b, "/c/e1", 9, 2), 2), ZSIM_OK);
    ck_assert_int_eq(call_rc(w, b, zsim_aget_children(b, "/c", 9, 3), 3), ZSIM_OK);
    ck_assert_int_eq(zsim_aexists(a, "/c", 0, 4), ZSIM_OK);
    ck_assert_int_eq(zsim_close(a), ZSIM_OK);
    ck_assert_int_eq(answer(w, a, 4)->rc, ZSIM_OK); /* sent before the close */
    while (zsim_state(a) != ZSIM_CLOSED_STATE)
        ck_assert_int_eq(zsim_internal_step(w), 0);
    ck_assert(!zsim_session_alive(a));
    ck_assert_int_eq(zsim_truth_children(w, "/c", NULL, NULL), 0);
    int deleted = 0, child = 0;
    for (int i = 0; i < 2; i++) {
        const struct zsim_item *it = next_item(w, b);
        deleted += it->type == ZSIM_DELETED_EVENT && strcmp(it->path, "/c/e1") == 0;
        child += it->type == ZSIM_CHILD_EVENT && strcmp(it->path, "/c") == 0;
    }
    ck_assert_int_eq(deleted + child, 2);
    ck_assert_int_eq(zsim_aexists(a, "/c", 0, 5), ZSIM_INVALIDSTATE);
    ck_assert_int_eq(zsim_close(a), ZSIM_INVALIDSTATE);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_requests_pending_at_a_close_without_a_connection_get_closing)
{
    zsim_world *w = mkworld(1, 17);
    zsim_session *a = connect_to(w, 0, 10000, 1);
    zsim_link(a, false);
    session_event(w, a, ZSIM_CONNECTING_STATE);
    ck_assert_int_eq(zsim_aexists(a, "/", 0, 1), ZSIM_OK);
    ck_assert_int_eq(zsim_close(a), ZSIM_OK);
    ck_assert_int_eq(answer(w, a, 1)->rc, ZSIM_CLOSING);
    ck_assert(zsim_session_alive(a)); /* the server still has it, until it expires */
    zsim_world_free(w);
}
END_TEST

START_TEST(test_outsiders_change_the_tree_under_the_sessions_watches)
{
    zsim_world *w = mkworld(3, 18);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    create(w, s, "/o", ZSIM_PERSISTENT, NULL);
    create(w, s, "/o/n-0000000000", ZSIM_EPHEMERAL, NULL);
    ck_assert_int_eq(call_rc(w, s, zsim_aexists(s, "/o/n-0000000000", 3, 1), 1), ZSIM_OK);
    ck_assert_int_eq(zsim_outsider_delete(w, "/o/n-0000000000", -1), ZSIM_OK);
    event(w, s, ZSIM_DELETED_EVENT, "/o/n-0000000000");
    char name[64];
    ck_assert_int_eq(zsim_outsider_create(w, "/o/n-", "x", 1, &ZSIM_OPEN_ACL_UNSAFE,
                                          ZSIM_EPHEMERAL_SEQUENTIAL, name, sizeof name),
                     ZSIM_OK);
    ck_assert_str_eq(name, "/o/n-0000000001");
    struct zsim_stat st;
    zsim_truth_stat(w, name, &st);
    ck_assert_int_eq(st.ephemeralOwner, zsim_outsider_id(w));
    ck_assert_int_eq(zsim_outsider_set_acl(w, "/o", -1, &ZSIM_READ_ACL_UNSAFE), ZSIM_OK);
    ck_assert_int_eq(create(w, s, "/o/x", ZSIM_PERSISTENT, NULL), ZSIM_NOAUTH);
    int acted = 0;
    for (int i = 0; i < 100; i++)
        acted += zsim_outsider_random(w) == 0;
    ck_assert_int_gt(acted, 0);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_driver_timers_come_due_in_virtual_time)
{
    zsim_world *w = mkworld(1, 19);
    zsim_timer(w, NULL, 5000000, 42);
    zsim_timer(w, NULL, 3000000, 41);
    zsim_advance(w, 4000000);
    const struct zsim_item *it = zsim_deliver_timer(w);
    ck_assert_ptr_nonnull(it);
    ck_assert_uint_eq(it->tag, 41);
    ck_assert_ptr_null(zsim_deliver_timer(w));
    zsim_advance(w, 1000000);
    ck_assert_uint_eq(zsim_deliver_timer(w)->tag, 42);
    zsim_world_free(w);
}
END_TEST

/* What the leader applies, as zsim_on_change tells it. */
struct changes {
    int n;
    struct zsim_change c[16];
    char path[16][64];
};

static void record_change(void *arg, const struct zsim_change *c)
{
    struct changes *r = arg;
    if (r->n == 16)
        return;
    r->c[r->n] = *c;
    snprintf(r->path[r->n], sizeof r->path[0], "%s", c->path);
    r->c[r->n].path = r->path[r->n];
    r->n++;
}

START_TEST(test_the_leaders_creates_and_deletes_are_told_with_who_asked)
{
    zsim_world *w = mkworld(3, 23);
    struct changes r = {0};
    zsim_on_change(w, record_change, &r);
    zsim_session *s = connect_to(w, 1, 10000, 1);
    char name[64];
    ck_assert_int_eq(create(w, s, "/e", ZSIM_EPHEMERAL, name), ZSIM_OK);
    ck_assert_int_eq(zsim_outsider_create(w, "/o", "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_PERSISTENT,
                                          NULL, 0),
                     ZSIM_OK);
    ck_assert_int_eq(zsim_outsider_delete(w, "/o", -1), ZSIM_OK);
    zsim_expire(s);
    ck_assert_int_eq(r.n, 4);
    ck_assert(r.c[0].created && !r.c[0].closing);
    ck_assert_str_eq(r.c[0].path, "/e");
    ck_assert_int_eq(r.c[0].owner, zsim_session_index(s));
    ck_assert_int_eq(r.c[0].origin, zsim_session_index(s));
    ck_assert(r.c[1].created && r.c[1].owner == -1 && r.c[1].origin == -1);
    ck_assert(!r.c[2].created && !r.c[2].closing && r.c[2].origin == -1);
    ck_assert(!r.c[3].created && r.c[3].closing);
    ck_assert_str_eq(r.c[3].path, "/e");
    ck_assert_int_lt(r.c[0].zxid, r.c[3].zxid);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_an_item_carries_the_zxid_behind_it)
{
    zsim_world *w = mkworld(1, 29);
    zsim_session *a = connect_to(w, 0, 10000, 1), *b = connect_to(w, 0, 10000, 2);
    char name[64];
    ck_assert_int_eq(create(w, a, "/n", ZSIM_PERSISTENT, name), ZSIM_OK);
    ck_assert_int_eq(zsim_aexists(b, "/n", 7, 1), ZSIM_OK);
    const struct zsim_item *it = answer(w, b, 1);
    int64_t seen = it->zxid;
    ck_assert_int_eq(seen, it->stat->czxid);
    ck_assert_int_eq(zsim_adelete(a, "/n", -1, 2), ZSIM_OK);
    int64_t deleted = answer(w, a, 2)->zxid;
    ck_assert_int_gt(deleted, seen);
    it = event(w, b, ZSIM_DELETED_EVENT, "/n");
    ck_assert_int_eq(it->zxid, deleted);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_outsiders_mend_every_acl_they_changed)
{
    zsim_world *w = mkworld(1, 37);
    zsim_session *s = connect_to(w, 0, 10000, 1);
    char name[64];
    ck_assert_int_eq(create(w, s, "/d", ZSIM_PERSISTENT, name), ZSIM_OK);
    ck_assert_int_eq(zsim_outsider_set_acl(w, "/d", -1, &ZSIM_READ_ACL_UNSAFE), ZSIM_OK);
    ck_assert_int_eq(create(w, s, "/d/x", ZSIM_PERSISTENT, name), ZSIM_NOAUTH);
    zsim_outsider_mend(w);
    ck_assert_int_eq(create(w, s, "/d/x", ZSIM_PERSISTENT, name), ZSIM_OK);
    zsim_world_free(w);
}
END_TEST

START_TEST(test_a_reseeded_world_repeats_its_choices)
{
    zsim_world *w = mkworld(1, 31);
    zsim_reseed(w, 77);
    uint64_t a = zsim_rand(w), b = zsim_rand(w);
    zsim_reseed(w, 77);
    ck_assert_uint_eq(zsim_rand(w), a);
    ck_assert_uint_eq(zsim_rand(w), b);
    zsim_world_free(w);
}
END_TEST

/* ---- seeded random worlds --------------------------------------------------- */

#define RSESS 10

struct run {
    zsim_world *w;
    zsim_session *s[RSESS];
    uint64_t next_tag[RSESS];
    long issued[4096], answered[4096];
    uint64_t last_tag[4096];
    uint64_t digest; /* of the trace */
    bool bad;
};

static void digest_line(void *arg, const char *line)
{
    struct run *r = arg;
    r->digest = (r->digest ^ sim_hash(line, strlen(line))) * 1099511628211u;
}

static void run_request(struct run *r, int i)
{
    zsim_world *w = r->w;
    zsim_session *s = r->s[i];
    int x = zsim_session_index(s);
    if (x >= 4096)
        return;
    if (zsim_state(s) == ZSIM_EXPIRED_SESSION_STATE || zsim_state(s) == ZSIM_CLOSED_STATE) {
        r->s[i] = zsim_session_new(w, 2000 + 2000 * (int)zsim_below(w, 5), 100 + (uint64_t)i);
        r->next_tag[i] = 1;
        return;
    }
    if (r->issued[x] - r->answered[x] > 20)
        return;
    static const char *const paths[] = {"/l", "/l/a", "/l/b", "/l/a/x", "/l/c-"};
    const char *p = paths[zsim_below(w, 5)];
    uint64_t tag = r->next_tag[i];
    int rc;
    switch (zsim_below(w, 10)) {
    case 0:
        rc = zsim_acreate(s, p, "d", 1, &ZSIM_OPEN_ACL_UNSAFE, (int)zsim_below(w, 5), tag);
        break;
    case 1:
        rc = zsim_adelete(s, p, -1, tag);
        break;
    case 2:
        rc = zsim_aexists(s, p, 7, tag);
        break;
    case 3:
        rc = zsim_aget(s, p, 8, tag);
        break;
    case 4:
        rc = zsim_aget_children(s, p, 9, tag);
        break;
    case 5:
        rc = zsim_aset(s, p, "e", 1, -1, tag);
        break;
    case 6:
        rc = zsim_async(s, "/", tag);
        break;
    case 7: {
        struct zsim_op ops[2] = {
            {ZSIM_MOP_CHECK, "/l", NULL, 0, NULL, 0, -1},
            {ZSIM_MOP_CREATE, "/l/m-", "z", 1, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_EPHEMERAL_SEQUENTIAL, 0}};
        rc = zsim_amulti(s, 2, ops, tag);
        break;
    }
    case 8:
        if (zsim_below(w, 40) == 0) {
            zsim_close(s);
            return;
        }
        /* fall through */
    default:
        rc = zsim_aget_children2(s, "/l", 0, tag);
        break;
    }
    if (rc == ZSIM_OK) {
        r->issued[x]++;
        r->next_tag[i]++;
    }
}

/* Sessions doing random work on a small tree with every fault on: each
 * request is answered exactly once, in the order of the session's requests. */
static void random_run(struct run *r, uint64_t seed, long steps)
{
    memset(r, 0, sizeof *r);
    struct zsim_config c;
    zsim_config_default(&c);
    c.seed = seed;
    c.tick_ns = 500000000;
    c.container_check_ns = 3000000000;
    c.p_drop = 300;
    c.p_link = 150;
    c.p_partition = 100;
    c.p_freeze = 100;
    c.p_expire = 50;
    c.p_outsider = 400;
    c.outsider_root = "/l";
    ck_assert_int_eq(zsim_world_new(&c, &r->w), ZSIM_OK);
    zsim_world *w = r->w;
    zsim_trace(w, digest_line, r);
    for (int i = 0; i < RSESS; i++) {
        r->s[i] = zsim_session_new(w, 2000 + 1000 * (i % 5), 100 + (uint64_t)i);
        r->next_tag[i] = 1;
    }
    for (long n = 0; n < steps; n++) {
        const struct zsim_item *it;
        int rc = zsim_step(w, &it);
        ck_assert_int_ge(rc, 0);
        if (rc == 1 && it->kind == ZSIM_ANSWER) {
            int x = zsim_session_index(it->session);
            ck_assert_msg(it->tag > r->last_tag[x], "seed %" PRIu64 ": session %d: answer %" PRIu64
                          " after %" PRIu64, seed, x, it->tag, r->last_tag[x]);
            r->last_tag[x] = it->tag;
            r->answered[x]++;
        }
        int i = (int)zsim_below(w, RSESS * 3);
        if (i < RSESS)
            run_request(r, i);
    }
    for (int i = 0; i < RSESS; i++)
        zsim_close(r->s[i]);
    for (long n = 0; n < 10000000; n++) {
        const struct zsim_item *it;
        int rc = zsim_step(w, &it);
        if (rc == 1 && it->kind == ZSIM_ANSWER)
            r->answered[zsim_session_index(it->session)]++;
        bool busy = false;
        for (int i = 0; i < RSESS; i++)
            busy |= zsim_state(r->s[i]) != ZSIM_CLOSED_STATE &&
                    zsim_state(r->s[i]) != ZSIM_EXPIRED_SESSION_STATE;
        zsim_session *d[1];
        if (!busy && zsim_deliverable(w, d, 1) == 0)
            break;
    }
    for (int x = 0; x < 4096; x++)
        ck_assert_msg(r->issued[x] == r->answered[x],
                      "seed %" PRIu64 ": session %d: %ld requests, %ld answers", seed, x,
                      r->issued[x], r->answered[x]);
}

START_TEST(test_every_request_is_answered_once_and_in_order_under_faults)
{
    static struct run r;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        random_run(&r, seed * 7919, 60000);
        struct zsim_counts k;
        zsim_counts(r.w, &k);
        ck_assert_uint_gt(k.delivered, 10000);
        ck_assert_uint_gt(k.drops + k.links + k.partitions + k.freezes + k.expiries, 0);
        zsim_world_free(r.w);
    }
}
END_TEST

START_TEST(test_a_seed_replays_exactly)
{
    static struct run a, b;
    random_run(&a, 77, 40000);
    random_run(&b, 77, 40000);
    ck_assert_uint_eq(a.digest, b.digest);
    ck_assert_int_eq(zsim_now(a.w), zsim_now(b.w));
    ck_assert_int_eq(zsim_zxid(a.w, 0), zsim_zxid(b.w, 0));
    zsim_world_free(a.w);
    zsim_world_free(b.w);
    random_run(&b, 78, 40000);
    ck_assert_uint_ne(a.digest, b.digest);
    zsim_world_free(b.w);
}
END_TEST

static Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("nodes");
    tcase_add_test(tc, test_creates_of_every_mode_give_the_servers_names_and_stats);
    tcase_add_test(tc, test_sequence_numbers_count_creations_and_the_cversion_shown_counts_deletions);
    tcase_add_test(tc, test_writes_are_refused_with_the_servers_codes);
    tcase_add_test(tc, test_acls_refuse_reads_writes_creates_and_deletes);
    tcase_add_test(tc, test_digest_identities_are_sha1_in_base64);
    tcase_add_test(tc, test_paths_are_checked_as_the_client_and_the_server_do);
    tcase_add_test(tc, test_a_multi_is_all_or_nothing_with_per_op_results);
    tcase_add_test(tc, test_listings_come_in_no_fixed_order);
    tcase_add_test(tc, test_an_empty_container_goes_once_it_had_a_child);
    suite_add_tcase(s, tc);
    tc = tcase_create("watches");
    tcase_add_test(tc, test_watches_fire_once_with_the_event_of_their_kind);
    tcase_add_test(tc, test_a_sessions_own_write_fires_its_watch_before_its_answer);
    tcase_add_test(tc, test_watches_set_again_on_reconnection_fire_for_what_was_missed);
    suite_add_tcase(s, tc);
    tc = tcase_create("servers");
    tcase_add_test(tc, test_a_follower_lags_and_a_sync_catches_it_up);
    tcase_add_test(tc, test_a_request_over_the_size_limit_closes_the_connection);
    tcase_add_test(tc, test_watches_set_again_over_the_size_limit_close_every_connection);
    tcase_add_test(tc, test_the_checker_reads_no_sequence_in_a_name_past_the_wrap);
    tcase_add_test(tc, test_an_answer_over_a_clients_limit_breaks_its_connection);
    tcase_add_test(tc, test_a_follower_cut_from_the_leader_serves_stale_reads_until_sync_limit);
    tcase_add_test(tc, test_a_followers_pings_keep_a_session_alive_through_the_leader);
    suite_add_tcase(s, tc);
    tc = tcase_create("sessions");
    tcase_add_test(tc, test_a_lost_connection_reports_connecting_then_losses_in_order);
    tcase_add_test(tc, test_an_expired_session_loses_its_ephemerals_and_its_handle);
    tcase_add_test(tc, test_a_silent_session_expires_on_the_leaders_tick);
    tcase_add_test(tc, test_a_touch_cut_off_before_the_next_ping_is_never_counted);
    tcase_add_test(tc, test_the_pings_a_cut_follower_missed_are_answered_at_the_heal);
    tcase_add_test(tc, test_a_leader_that_stood_still_past_a_ping_pings_as_it_runs_again);
    tcase_add_test(tc, test_the_negotiated_timeout_lies_within_the_servers_bounds);
    tcase_add_test(tc, test_a_close_ends_the_session_and_fires_the_watches_of_its_ephemerals);
    tcase_add_test(tc, test_requests_pending_at_a_close_without_a_connection_get_closing);
    tcase_add_test(tc, test_outsiders_change_the_tree_under_the_sessions_watches);
    tcase_add_test(tc, test_driver_timers_come_due_in_virtual_time);
    tcase_add_test(tc, test_the_leaders_creates_and_deletes_are_told_with_who_asked);
    tcase_add_test(tc, test_an_item_carries_the_zxid_behind_it);
    tcase_add_test(tc, test_a_reseeded_world_repeats_its_choices);
    tcase_add_test(tc, test_outsiders_mend_every_acl_they_changed);
    suite_add_tcase(s, tc);
    tc = tcase_create("random");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_request_is_answered_once_and_in_order_under_faults);
    tcase_add_test(tc, test_a_seed_replays_exactly);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sim_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
