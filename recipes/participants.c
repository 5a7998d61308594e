/* Who takes part in a lock path: one listing, then each node's data and
 * stat, with holder and waiter decided by the recipes' own policies. */
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "zkl/zookeeper.h"

#define REVOKE_MESSAGE "__REVOKE__" /* Curator's, as the holder's node data */

/* The recipe whose nodes these are: by kind; a kind no recipe of ours
 * creates is judged as a mutex's node would be (first holds). */
static const zkl__policy *policy_of(const zkl__entry *e)
{
    if (zkl__lease_count(e) > 0)
        return &zkl__lease_policy;
    static const zkl__policy *const known[] = {&zkl__lock_policy, &zkl__read_policy,
                                               &zkl__write_policy, &zkl__gate_policy,
                                               &zkl__latch_policy};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (zkl__entry_is(e, known[i]->kind))
            return known[i];
    return &zkl__lock_policy;
}

/* The recipes' order: by sequence; a downgrade's read node carries its
 * writer's sequence and goes right after it. */
static int by_seq(const void *pa, const void *pb)
{
    const zkl__entry *a = pa, *b = pb;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    int ra = zkl__entry_is(a, zkl__read_policy.kind), rb = zkl__entry_is(b, zkl__read_policy.kind);
    if (ra != rb)
        return ra - rb;
    return strcmp(a->name, b->name);
}

/* Holders first, then the order of the queue. */
static int by_state(const void *pa, const void *pb)
{
    const zkl_participant *a = pa, *b = pb;
    if (a->holds != b->holds)
        return a->holds ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static bool is_downgrade(const zkl__entry *cs, size_t n, size_t i)
{
    if (!zkl__entry_is(&cs[i], zkl__read_policy.kind))
        return false;
    for (size_t j = 0; j < n; j++)
        if (j != i && cs[j].seq == cs[i].seq && zkl__entry_is(&cs[j], zkl__write_policy.kind))
            return true;
    return false;
}

/* Read one node into p (hlock held). ZNONODE: gone since the listing. */
static int read_node(zkl_client *c, zhandle_t *zh, const char *dir, const char *name,
                     zkl_participant *p)
{
    char *full = zkl__path_join(dir, name);
    if (full == NULL)
        return ZSYSTEMERROR;
    char buf[1024];
    int len = (int)sizeof buf;
    struct Stat st;
    int rc = zkl__kit_get(c, zh, full, buf, &len, &st);
    if (rc == ZNOAUTH) {
        /* The ACL refuses the data, not the stat. */
        p->readable = 0;
        rc = zkl__kit_exists(c, zh, full, &st);
        len = 0;
    } else if (rc == ZOK) {
        p->readable = 1;
    }
    free(full);
    if (rc != ZOK)
        return rc;
    if (len < 0)
        len = 0;
    p->owner = malloc((size_t)len + 1);
    if (p->owner == NULL)
        return ZSYSTEMERROR;
    memcpy(p->owner, buf, (size_t)len);
    p->owner[len] = '\0';
    p->owner_len = (size_t)len;
    p->token = st.czxid;
    p->session = st.ephemeralOwner;
    p->ctime_ms = st.ctime;
    return ZOK;
}

void zkl_participants_free(zkl_participant *p, size_t n)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        free(p[i].node);
        free(p[i].owner);
    }
    free(p);
}

int zkl_participants_list(zkl_client *c, const char *path, zkl_participant **out, size_t *n)
{
    if (c == NULL || path == NULL || out == NULL || n == NULL || zkl__path_check(path) != 0)
        return ZKL_EINVAL;
    zhandle_t *zh;
    int berr = zkl__send_begin(c, &zh);
    if (berr != 0)
        return berr;
    struct String_vector kids = {0, NULL};
    int rc = zkl__kit_children(c, zh, path, &kids);
    if (rc == ZNONODE) {
        /* An emptied container parent: nobody takes part. */
        zkl__send_end(c, 1);
        *out = NULL;
        *n = 0;
        return 0;
    }
    if (rc != ZOK) {
        zkl__send_end(c, 1);
        return zkl__err_from_zk(rc);
    }
    /* A listing no contender could wait on (acquires fail with
     * ZKL_EQUEUE): said so, not "nobody takes part". */
    long bytes = 4;
    for (int32_t i = 0; i < kids.count; i++)
        bytes += 4 + (long)strlen(kids.data[i]);
    if (bytes > zkl__kit_max_request(c)) {
        zkl__send_end(c, 1);
        zkl__detail_queue(path, (long)kids.count, (long)zkl__kit_max_request(c));
        deallocate_String_vector(&kids);
        return ZKL_EQUEUE;
    }
    size_t k = kids.count > 0 ? (size_t)kids.count : 0;
    zkl__entry *cs = calloc(k ? k : 1, sizeof *cs);
    zkl_participant *ps = calloc(k ? k : 1, sizeof *ps);
    int err = cs == NULL || ps == NULL ? ZKL_ENOMEM : 0;
    size_t m = 0;
    for (size_t i = 0; i < k && err == 0; i++)
        if (zkl__entry_parse(kids.data[i], &cs[m]) == 0)
            m++; /* a child without a sequence takes no part */
    /* A semaphore's lease holds while the leases up to it fit the limit
     * the semaphore recorded (lease_holds): a lease made after someone
     * else deleted a gate node behind its holder's back waits for room.
     * A limit that cannot be read (none recorded, the read refused, or the
     * path deleted since the listing) leaves gate.max 0, and every lease
     * is listed as holding: the listing reports, it decides nothing, and a
     * failure here would hide the nodes it did read. */
    struct zkl__gate_arg gate = {0, 0};
    int sent = 0;
    for (size_t i = 0; i < m && err == 0 && sent == 0; i++)
        if (zkl__lease_count(&cs[i]) > 0) {
            char buf[128];
            int len = (int)sizeof buf;
            sent = 1;
            if (zkl__kit_get(c, zh, path, buf, &len, NULL) == ZOK)
                gate.max = zkl__semaphore_parse_limit(buf, len < 0 ? 0 : len);
        }
    if (err == 0) {
        qsort(cs, m, sizeof *cs, by_seq);
        /* Decide on the listing as it was, before any node is read. */
        for (size_t i = 0; i < m; i++) {
            zkl_participant *p = &ps[i];
            const zkl__policy *pol = policy_of(&cs[i]);
            size_t watch = 0;
            bool down = is_downgrade(cs, m, i);
            /* A gate node waits for room; only a lease holds a lease. */
            const void *arg = pol == &zkl__read_policy                     ? (const void *)&down
                              : pol == &zkl__lease_policy && gate.max > 0 ? (const void *)&gate
                                                                          : NULL;
            p->holds = pol == &zkl__gate_policy ? 0 : pol->holds(cs, m, i, &watch, arg);
            p->leases = zkl__lease_count(&cs[i]);
            p->seq = cs[i].seq;
            size_t kl = strlen(cs[i].name) - 10 - (size_t)(cs[i].kind - cs[i].name);
            if (kl >= sizeof p->kind)
                kl = sizeof p->kind - 1;
            memcpy(p->kind, cs[i].kind, kl);
            p->kind[kl] = '\0';
            if ((p->node = strdup(cs[i].name)) == NULL)
                err = ZKL_ENOMEM;
        }
    }
    size_t have = 0;
    for (size_t i = 0; i < m && err == 0; i++) {
        int zrc = read_node(c, zh, path, ps[i].node, &ps[i]);
        if (zrc == ZNONODE) {
            free(ps[i].node); /* gone since the listing */
            continue;
        }
        if (zrc == ZSYSTEMERROR)
            err = ZKL_ENOMEM;
        else if (zrc != ZOK)
            err = zkl__err_from_zk(zrc);
        if (err == 0)
            ps[have++] = ps[i];
        else
            free(ps[i].node);
        if (err != 0)
            for (size_t j = i + 1; j < m; j++)
                free(ps[j].node);
    }
    zkl__send_end(c, 1 + sent + (int)m);
    deallocate_String_vector(&kids);
    free(cs);
    if (err != 0) {
        zkl_participants_free(ps, have);
        return err;
    }
    qsort(ps, have, sizeof *ps, by_state);
    *out = ps;
    *n = have;
    return 0;
}

int zkl_participants_limit(zkl_client *c, const char *path, int *max_leases)
{
    if (c == NULL || path == NULL || max_leases == NULL || zkl__path_check(path) != 0)
        return ZKL_EINVAL;
    zhandle_t *zh;
    int berr = zkl__send_begin(c, &zh);
    if (berr != 0)
        return berr;
    char buf[128];
    int len = (int)sizeof buf;
    int rc = zkl__kit_get(c, zh, path, buf, &len, NULL);
    zkl__send_end(c, 1);
    if (rc == ZNONODE) {
        *max_leases = 0;
        return 0;
    }
    if (rc != ZOK)
        return zkl__err_from_zk(rc);
    int v = zkl__semaphore_parse_limit(buf, len < 0 ? 0 : len);
    *max_leases = v > 0 ? v : 0;
    return 0;
}

/* The node `node` names under `path`: a name, or a full path below it. */
static const char *child_name(const char *path, const char *node)
{
    size_t pl = strlen(path);
    if (node[0] != '/')
        return strchr(node, '/') == NULL && node[0] != '\0' ? node : NULL;
    if (strncmp(node, path, pl) != 0 || node[pl] != '/' || strchr(node + pl + 1, '/') != NULL ||
        node[pl + 1] == '\0')
        return NULL;
    return node + pl + 1;
}

static int revoke_one(zkl_client *c, zhandle_t *zh, const char *path, const char *name)
{
    char *full = zkl__path_join(path, name);
    if (full == NULL)
        return ZKL_ENOMEM;
    int rc = zkl__kit_set(c, zh, full, REVOKE_MESSAGE, (int)strlen(REVOKE_MESSAGE));
    free(full);
    return rc == ZNONODE ? ZKL_ENOTHELD : zkl__err_from_zk(rc);
}

int zkl_revoke(zkl_client *c, const char *path, const char *node)
{
    if (c == NULL || path == NULL || zkl__path_check(path) != 0)
        return ZKL_EINVAL;
    const char *name = NULL;
    if (node != NULL && (name = child_name(path, node)) == NULL)
        return ZKL_EINVAL;
    zkl_participant *ps = NULL;
    size_t n = 0;
    if (name == NULL) {
        int rc = zkl_participants_list(c, path, &ps, &n);
        if (rc != 0)
            return rc;
    }
    zhandle_t *zh;
    int berr = zkl__send_begin(c, &zh);
    if (berr != 0) {
        zkl_participants_free(ps, n);
        return berr;
    }
    int rc = ZKL_ENOTHELD, sent = 0;
    if (name != NULL) {
        rc = revoke_one(c, zh, path, name);
        sent = 1;
    } else {
        /* Every holder: holders come first in the listing. */
        for (size_t i = 0; i < n && ps[i].holds; i++, sent++) {
            int r = revoke_one(c, zh, path, ps[i].node);
            if (rc == ZKL_ENOTHELD || (rc == 0 && r != ZKL_ENOTHELD))
                rc = r;
        }
    }
    zkl__send_end(c, sent);
    zkl_participants_free(ps, n);
    return rc;
}
