/* Property tests of the recipes' pure decisions: who holds, whom to watch.
 *
 * Thousands of seeded random listings of a lock path — node names of every
 * kind (lock-, __READ__, __WRIT__, zkl-wait-, zkl-lease-, zkl-lease-x<n>-,
 * odd lease kinds, foreign names, names without a sequence, gaps, equal
 * sequences under different prefixes) — go through what the engine does
 * (zkl__entry_parse on each child, sorted by sequence then name as
 * lib/engine/core/decide.c's zkl__decide_contenders() does, then the
 * recipe's policy) and through a small reference model written here from
 * docs/protocol.md alone. The two must agree on the parse, the holder and
 * the watched node.
 *
 * The policies come from the core library's internal interface
 * (lib/kit/kit.h). Seed: CHECK_POLICY_SEED, else fixed;
 * the seed and the case count are printed. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "kit.h"

#define CASES 20000
#define MAXN 16
#define NAMELEN 96

/* ---- a small random source of our own (reproducible everywhere) -------- */

static uint64_t rs;

static uint32_t rnd(void)
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}

static unsigned pick(unsigned n)
{
    return rnd() % n;
}

/* ---- the reference model (docs/protocol.md) ------------------------------ */

struct ref {
    const char *name; /* borrowed from the listing */
    char kind[NAMELEN];
    long long seq;
};

/* A contender ends in at least 10 digits: the last 10 are the
 * sequence. The kind is what lies between the protection prefix
 * "_c_<36-char uuid>-" (if the name has one) and the digits. */
static bool ref_parse(const char *name, struct ref *r)
{
    size_t len = strlen(name);
    if (len < 10)
        return false;
    if (len >= NAMELEN)
        abort(); /* the listings made here are shorter */
    long long seq = 0;
    for (size_t i = len - 10; i < len; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        seq = seq * 10 + (name[i] - '0');
    }
    r->name = name;
    r->seq = seq;
    size_t start = 0;
    if (len >= 50 && strncmp(name, "_c_", 3) == 0 && name[39] == '-')
        start = 40;
    memcpy(r->kind, name + start, len - 10 - start);
    r->kind[len - 10 - start] = '\0';
    return true;
}

static int ref_cmp(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Leases a node stands for: "zkl-lease-" one, "zkl-lease-x<n>-" n
 * (1 <= n <= INT_MAX, decimal digits), any other kind none. */
static long long ref_leases(const char *kind)
{
    if (strcmp(kind, "zkl-lease-") == 0)
        return 1;
    if (strncmp(kind, "zkl-lease-x", 11) != 0)
        return 0;
    const char *p = kind + 11;
    size_t n = strlen(p);
    if (n < 2 || p[n - 1] != '-')
        return 0;
    long long v = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10 + (p[i] - '0');
        if (v > INT_MAX)
            return 0;
    }
    return v >= 1 ? v : 0;
}

enum rkind { R_LOCK, R_WRITE, R_READ, R_READ_DOWNGRADE, R_GATE };

/* Holds? If not, *watch and (gate) *group. */
static bool ref_decide(enum rkind k, const struct ref *cs, size_t n, size_t self, int need,
                       int max, size_t *watch, bool *group)
{
    *group = false;
    switch (k) {
    case R_LOCK:
    case R_WRITE:
        /* first of all nodes, whatever their kind; else the one before */
        if (self == 0)
            return true;
        *watch = self - 1;
        return false;
    case R_READ_DOWNGRADE:
        return true;
    case R_READ: {
        /* no node of another kind before it; else the nearest such node */
        bool found = false;
        for (size_t i = 0; i < self; i++)
            if (strcmp(cs[i].kind, "__READ__") != 0)
                *watch = i, found = true;
        return !found;
    }
    case R_GATE: {
        bool waiter = false;
        for (size_t i = 0; i < self; i++)
            if (strcmp(cs[i].kind, "zkl-wait-") == 0)
                *watch = i, waiter = true;
        if (waiter)
            return false;
        long long used = 0;
        size_t first = n;
        for (size_t i = 0; i < n; i++) {
            long long l = ref_leases(cs[i].kind);
            used += l;
            if (l > 0 && first == n)
                first = i;
        }
        if (first == n || used + need <= max)
            return true;
        *watch = first;
        *group = true;
        return false;
    }
    }
    return false;
}

/* ---- random listings ---------------------------------------------------------- */

static const char *const kinds[] = {
    "lock-", "lock-", "__READ__", "__READ__", "__WRIT__", "__WRIT__", "zkl-wait-", "zkl-wait-",
    "zkl-lease-", "zkl-lease-", "zkl-lease-x2-", "zkl-lease-x3-", "zkl-lease-x1-",
    "zkl-lease-x01-", "zkl-lease-x0-", "zkl-lease-x-", "zkl-lease-xab-", "zkl-lease-x2",
    "zkl-lease-x99999999999-", "zkl-lease-x2147483647-", "zkl-lease", "foreign-", "", "x",
    "lock", "__READ", "zkl-wait", "_c_short-lock-",
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static void random_uuid(char out[37])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 36; i++)
        out[i] = (i == 8 || i == 13 || i == 18 || i == 23) ? '-' : hex[pick(16)];
    out[36] = '\0';
}

/* One child name: mostly contenders (protected or not, of any kind, with a
 * sequence from a small range so that equal sequences and gaps occur);
 * sometimes a name with no or a short sequence, or with extra digits. */
static void random_name(char *out, size_t len, long long maxseq)
{
    char uuid[37], prefix[48] = "";
    unsigned form = pick(20);
    if (pick(5) != 0) {
        random_uuid(uuid);
        snprintf(prefix, sizeof prefix, "_c_%s-", uuid);
    }
    const char *kind = kinds[pick(NKINDS)];
    long long seq = (long long)pick((unsigned)maxseq + 1);
    if (pick(50) == 0)
        seq = 9999999999LL - pick(3);
    if (form == 0)
        snprintf(out, len, "%s%s%lld", prefix, kind, seq); /* short or no digits */
    else if (form == 1)
        snprintf(out, len, "%s%s%011lld", prefix, kind, seq); /* 11 digits */
    else if (form == 2)
        snprintf(out, len, "%snot-a-contender", prefix);
    else
        snprintf(out, len, "%s%s%010lld", prefix, kind, seq);
}

/* ---- one case ------------------------------------------------------------------ */

static int engine_cmp(const void *a, const void *b)
{
    /* lib/engine/core/decide.c's entry order: sequence, then name */
    const zkl__entry *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

static const char *kind_of(enum rkind k)
{
    switch (k) {
    case R_LOCK:
        return "lock-";
    case R_WRITE:
        return "__WRIT__";
    case R_READ:
    case R_READ_DOWNGRADE:
        return "__READ__";
    case R_GATE:
        return "zkl-wait-";
    }
    return "";
}

static long cases_run, cases_decided;

static void one_case(enum rkind k, uint64_t case_no)
{
    char names[MAXN + 1][NAMELEN];
    size_t n = 1 + pick(MAXN);
    long long maxseq = pick(2) ? (long long)n + 2 : 4 * (long long)n;
    for (size_t i = 0; i < n; i++) {
    again:
        random_name(names[i], NAMELEN, maxseq);
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                goto again; /* children of one parent have distinct names */
    }
    /* Our own node: of the recipe's kind, protected, with a sequence. */
    char uuid[37];
    random_uuid(uuid);
    snprintf(names[n], NAMELEN, "_c_%s-%s%010lld", uuid, kind_of(k),
             (long long)pick((unsigned)maxseq + 1));
    n++;

    /* The engine's side. */
    zkl__entry es[MAXN + 1];
    struct ref rf[MAXN + 1];
    size_t ke = 0, kr = 0;
    for (size_t i = 0; i < n; i++) {
        zkl__entry e;
        struct ref r;
        int ok = zkl__entry_parse(names[i], &e) == 0;
        bool rok = ref_parse(names[i], &r);
        ck_assert_msg(ok == rok, "case %llu: parse of \"%s\": engine %d, model %d",
                      (unsigned long long)case_no, names[i], ok, rok);
        if (!ok)
            continue;
        ck_assert_msg(e.seq == r.seq, "case %llu: seq of %s", (unsigned long long)case_no,
                      names[i]);
        ck_assert_msg(zkl__entry_is(&e, r.kind), "case %llu: kind of \"%s\" is not \"%s\"",
                      (unsigned long long)case_no, names[i], r.kind);
        es[ke++] = e;
        rf[kr++] = r;
    }
    qsort(es, ke, sizeof es[0], engine_cmp);
    qsort(rf, kr, sizeof rf[0], ref_cmp);
    size_t self = ke;
    for (size_t i = 0; i < ke; i++) {
        ck_assert_str_eq(es[i].name, rf[i].name);
        if (strcmp(es[i].name, names[n - 1]) == 0)
            self = i;
    }
    ck_assert_msg(self < ke, "case %llu: own node not found", (unsigned long long)case_no);

    int max = 1 + (int)pick(4), need = 1 + (int)pick((unsigned)max);
    struct zkl__gate_arg ga = {max, need};
    bool downgrade = k == R_READ_DOWNGRADE;
    const zkl__policy *pol = k == R_LOCK    ? &zkl__lock_policy
                             : k == R_WRITE ? &zkl__write_policy
                             : k == R_GATE  ? &zkl__gate_policy
                                            : &zkl__read_policy;
    const void *arg = k == R_GATE ? (const void *)&ga : (const void *)&downgrade;
    size_t w = (size_t)-1, rw = (size_t)-2;
    bool group = false;
    bool holds = pol->holds(es, ke, self, &w, arg);
    bool rholds = ref_decide(k, rf, kr, self, need, max, &rw, &group);
    ck_assert_msg(holds == rholds, "case %llu (%s, self %zu of %zu): engine holds=%d, model %d",
                  (unsigned long long)case_no, kind_of(k), self, ke, holds, rholds);
    if (!holds) {
        ck_assert_msg(w == rw, "case %llu (%s): engine watches %zu, model %zu",
                      (unsigned long long)case_no, kind_of(k), w, rw);
        bool g = pol->watch_group && pol->watch_group(&es[w], arg);
        ck_assert_msg(g == group, "case %llu: watch group %d, model %d",
                      (unsigned long long)case_no, g, group);
        /* Outside a watch group, a waiter only ever watches a node ahead. */
        if (!g)
            ck_assert_uint_lt(w, self);
    } else {
        cases_decided++;
    }
    cases_run++;
}

static uint64_t seed(void)
{
    const char *s = getenv("CHECK_POLICY_SEED");
    return s && *s ? strtoull(s, NULL, 0) : 0x5eed2026ULL;
}

static void run_kind(enum rkind k)
{
    uint64_t base = seed();
    for (uint64_t i = 0; i < CASES; i++) {
        rs = (base + i) * 0x9e3779b97f4a7c15ULL | 1; /* case i replays alone */
        one_case(k, i);
    }
}

START_TEST(test_mutex_policy_matches_model)
{
    run_kind(R_LOCK);
}
END_TEST

START_TEST(test_write_policy_matches_model)
{
    run_kind(R_WRITE);
}
END_TEST

START_TEST(test_read_policy_matches_model)
{
    run_kind(R_READ);
}
END_TEST

START_TEST(test_downgrade_reader_always_holds)
{
    run_kind(R_READ_DOWNGRADE);
}
END_TEST

START_TEST(test_semaphore_gate_policy_matches_model)
{
    run_kind(R_GATE);
}
END_TEST

/* A long listing is never sorted (zkl__decide_nearest): the m nearest
 * nodes ahead of our own, picked in one pass, must be the m just before it
 * in the fully sorted listing, in the same order, with the count of those
 * left out and of all contenders the same as the sort gives. Listings of
 * up to 400 children in the server's unordered order, with every kind of
 * name random_name makes (equal sequences under other prefixes
 * included), some children skipped as already seen gone, and m from 0 to
 * 20. */
#define LONGN 400

static bool skip_marked(const char *name, const void *arg)
{
    const char *const *marked = arg;
    for (size_t i = 0; marked[i]; i++)
        if (marked[i] == name)
            return true;
    return false;
}

static void one_long_case(uint64_t case_no)
{
    static char names[LONGN + 1][NAMELEN];
    char *ptrs[LONGN + 1];
    size_t n = 1 + pick(LONGN);
    long long maxseq = pick(2) ? (long long)n + 2 : 4 * (long long)n;
    for (size_t i = 0; i < n; i++) {
        random_name(names[i], NAMELEN, maxseq);
        ptrs[i] = names[i];
    }
    char uuid[37];
    random_uuid(uuid);
    const char *own = names[n];
    snprintf(names[n], NAMELEN, "_c_%s-lock-%010lld", uuid, (long long)pick((unsigned)maxseq + 1));
    if (pick(8) != 0) { /* sometimes ours is missing */
        size_t at = pick((unsigned)n + 1); /* where the server lists ours */
        memmove(ptrs + at + 1, ptrs + at, (n - at) * sizeof *ptrs);
        ptrs[at] = names[n];
        n++;
    }
    /* Nodes already seen gone (never our own). */
    const char *marked[4] = {NULL};
    for (int i = 0, j = 0; i < 3 && pick(3) == 0; i++) {
        const char *x = ptrs[pick((unsigned)n)];
        if (x != own)
            marked[j++] = x;
    }
    struct String_vector kids = {(int32_t)n, ptrs};

    /* The sort: what zkl__node_decide does with a short listing. */
    static zkl__entry all[LONGN + 1];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (zkl__entry_parse(ptrs[i], &all[k]) == 0 && !skip_marked(ptrs[i], marked))
            k++;
    qsort(all, k, sizeof all[0], engine_cmp);
    zkl__entry me;
    ck_assert_int_eq(zkl__entry_parse(own, &me), 0);
    size_t self = k;
    for (size_t i = 0; i < k; i++)
        if (engine_cmp(&all[i], &me) >= 0 && self == k)
            self = i; /* ours, or where it would stand */

    size_t m = pick(21), s_self = 9999, older = 9999, total = 9999;
    zkl__entry cs[22];
    size_t got = zkl__decide_nearest(&kids, &me, m, marked[0] ? skip_marked : NULL, marked, cs,
                                      &s_self, &older, &total);
    size_t keep = self < m ? self : m;
    ck_assert_msg(total == k, "case %llu: %zu contenders counted, sort has %zu",
                  (unsigned long long)case_no, total, k);
    ck_assert_msg(s_self == keep && older == self - keep,
                  "case %llu: self %zu older %zu, sort: %zu ahead, m %zu",
                  (unsigned long long)case_no, s_self, older, self, m);
    bool in_sort = self < k && strcmp(all[self].name, me.name) == 0;
    ck_assert_uint_eq(got, keep + (in_sort ? 1 : 0));
    for (size_t i = 0; i < keep; i++)
        ck_assert_msg(strcmp(cs[i].name, all[self - keep + i].name) == 0,
                      "case %llu: entry %zu is %s, sort has %s", (unsigned long long)case_no, i,
                      cs[i].name, all[self - keep + i].name);
    if (in_sort)
        ck_assert_str_eq(cs[keep].name, me.name);
    /* And the mutex policy decides on the kept ones as on the whole. */
    if (in_sort && m > 0) {
        size_t w1 = 0, w2 = 0;
        bool h1 = zkl__lock_policy.holds(all, k, self, &w1, NULL);
        bool h2 = zkl__lock_policy.holds(cs, got, s_self, &w2, NULL);
        ck_assert_int_eq(h1, h2);
        if (!h1)
            ck_assert_str_eq(all[w1].name, cs[w2].name);
    }
    cases_run++;
}

START_TEST(test_nearest_pick_matches_the_sorted_listing)
{
    uint64_t base = seed();
    for (uint64_t i = 0; i < CASES / 4; i++) {
        rs = (base + i) * 0x9e3779b97f4a7c15ULL | 1;
        one_long_case(i);
    }
}
END_TEST

START_TEST(test_lease_policy_holds_at_once)
{
    zkl__entry e;
    ck_assert_int_eq(zkl__entry_parse("_c_x-zkl-lease-0000000001", &e), 0);
    size_t w = 7;
    ck_assert(zkl__lease_policy.holds(&e, 1, 0, &w, NULL));
    ck_assert_uint_eq(w, 7);
}
END_TEST

int main(void)
{
    printf("check_policy: seed 0x%llx (CHECK_POLICY_SEED), %d cases per policy\n",
           (unsigned long long)seed(), CASES);
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_mutex_policy_matches_model);
    tcase_add_test(tc, test_write_policy_matches_model);
    tcase_add_test(tc, test_read_policy_matches_model);
    tcase_add_test(tc, test_downgrade_reader_always_holds);
    tcase_add_test(tc, test_semaphore_gate_policy_matches_model);
    tcase_add_test(tc, test_lease_policy_holds_at_once);
    tcase_add_test(tc, test_nearest_pick_matches_the_sorted_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    printf("check_policy: %ld cases decided by both, %ld of them holding\n", cases_run,
           cases_decided);
    return failed == 0 ? 0 : 1;
}
