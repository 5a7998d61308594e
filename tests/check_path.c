/* Path checks and node-name parsing: pure functions, no server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "testutil.h"

START_TEST(test_good_paths_are_accepted)
{
    ck_assert_int_eq(zkl__path_check("/a"), 0);
    ck_assert_int_eq(zkl__path_check("/locks/orders"), 0);
    ck_assert_int_eq(zkl__path_check("/a.b/..c/d..."), 0);
    /* Digits, but not ten at the end of a segment below the first. */
    ck_assert_int_eq(zkl__path_check("/0000000000/jobs"), 0);
    ck_assert_int_eq(zkl__path_check("/x/job-000000000"), 0);
    ck_assert_int_eq(zkl__path_check("/x/0000000000a/b"), 0);
    /* Names that end in digits but are no contender's: dates, counters. */
    ck_assert_int_eq(zkl__path_check("/x/2024010112"), 0);
    ck_assert_int_eq(zkl__path_check("/jobs/report-2024010112/y"), 0);
}
END_TEST

/* A segment named like a contender's node: its parent's lock would count
 * it as a contender for ever. */
START_TEST(test_segments_named_like_contender_nodes_are_refused)
{
    const char *bad[] = {"/x/jobs/job-lock-0000000000", "/x/lock-0000000042/y",
                         "/x/_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-lock-0000000001",
                         "/x/__READ__0000000007", "/x/a/latch-0000000003",
                         "/x/3f2a__lock__0000000009"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zkl_last_error_clear();
        ck_assert_msg(zkl__path_check(bad[i]) == ZKL_EINVAL, "accepted %s", bad[i]);
        ck_assert_msg(strstr(zkl_last_error_text(), "contender") != NULL, "%s",
                      zkl_last_error_text());
    }
}
END_TEST

START_TEST(test_bad_paths_are_refused)
{
    const char *bad[] = {NULL, "", "/", "a", "a/b", "/a/", "/a//b", "/a/./b", "/a/../b",
                         "/.", "/..", "/a/.", "/zookeeper", "/zookeeper/x", "/a\001b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(zkl__path_check(bad[i]) == ZKL_EINVAL, "accepted %s",
                      bad[i] ? bad[i] : "NULL");
    char *long_path = malloc(ZKL__MAX_PATH + 2);
    long_path[0] = '/';
    memset(long_path + 1, 'x', ZKL__MAX_PATH);
    long_path[ZKL__MAX_PATH + 1] = '\0';
    ck_assert_int_eq(zkl__path_check(long_path), ZKL_EINVAL);
    long_path[ZKL__MAX_PATH] = '\0';
    ck_assert_int_eq(zkl__path_check(long_path), 0);
    free(long_path);
}
END_TEST

/* What the server refuses in any path, character by character: it decodes
 * UTF-8 as Java does and checks UTF-16 units. */
START_TEST(test_characters_the_server_refuses_are_refused)
{
    const char *bad[] = {
        "/a\x1f", "/a\x7f", "/a\xc2\x80", "/a\xc2\x9f", "/a\xee\x80\x80", "/a\xef\xa3\xbf",
        "/a\xef\xbf\xb0", "/a\xef\xbf\xbf", "/a\xf0\x90\x80\x80", "/a\xf4\x8f\xbf\xbf",
        /* not UTF-8: encoded surrogate, overlongs, beyond U+10FFFF, stray
         * and truncated bytes */
        "/a\xed\xa0\x80", "/a\xc0\xaf", "/a\xc1\xbf", "/a\xe0\x80\xaf", "/a\xf0\x80\x80\xaf",
        "/a\xf4\x90\x80\x80", "/a\xf5\x80\x80\x80", "/a\x80", "/a\xbf", "/a\xc3", "/a\xe4\xb8",
        "/a\xe4\xb8/b", "/a\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(zkl__path_check(bad[i]) == ZKL_EINVAL, "accepted entry %zu", i);
        ck_assert_int_eq(zkl__path_check_server(bad[i], NULL, 0), ZKL_EINVAL);
    }
    const char *good[] = {"/a\x20", "/a~", "/a\xc2\xa0", "/a\xc3\xa9", "/a\xdf\xbf",
                          "/a\xe0\xa0\x80", "/a\xed\x9f\xbf", "/a\xef\xa4\x80",
                          "/a\xef\xbf\xaf"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(zkl__path_check(good[i]) == 0, "refused entry %zu", i);
    /* The server's own rules, for paths that are no lock paths. */
    ck_assert_int_eq(zkl__path_check_server("/", NULL, 0), 0);
    ck_assert_int_eq(zkl__path_check_server("/zookeeper/quota", NULL, 0), 0);
    char why[160];
    ck_assert_int_eq(zkl__path_check_server("/a\xc2\x85", why, sizeof why), ZKL_EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "U+0085"));
}
END_TEST

START_TEST(test_node_names_parse_kind_and_sequence)
{
    zkl__entry e;
    const char *n = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007";
    ck_assert_int_eq(zkl__entry_parse(n, &e), 0);
    ck_assert_int_eq(e.seq, 7);
    ck_assert(zkl__entry_is(&e, "lock-"));
    ck_assert(!zkl__entry_is(&e, "__READ__"));
    ck_assert(zkl__name_has_uuid(n, "53345f98-9423-4e0c-a7b5-9f819e3ec2e1"));
    ck_assert(!zkl__name_has_uuid(n, "63345f98-9423-4e0c-a7b5-9f819e3ec2e1"));
    ck_assert_int_eq(zkl__entry_parse("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__WRIT__2147483647", &e), 0);
    ck_assert_int_eq(e.seq, 2147483647);
    ck_assert(zkl__entry_is(&e, "__WRIT__"));
    /* Unprotected names: the kind is all but the digits. */
    ck_assert_int_eq(zkl__entry_parse("lock-0000000003", &e), 0);
    ck_assert(zkl__entry_is(&e, "lock-"));
    /* Not contenders: no 10-digit suffix. */
    ck_assert_int_eq(zkl__entry_parse("leases", &e), -1);
    ck_assert_int_eq(zkl__entry_parse("lock-12345", &e), 0 - 1);
    /* A non-digit anywhere among the last ten, the neighbours of '0'-'9'
     * and a byte past ASCII among them. */
    for (size_t i = 0; i < 10; i++)
        for (const char *c = "/:a \xff"; *c; c++) {
            char t[] = "lock-0123456789";
            t[5 + i] = *c;
            ck_assert_msg(zkl__entry_parse(t, &e) == -1, "%s", t);
        }
    ck_assert_int_eq(zkl__entry_parse("9876543210", &e), 0);
    ck_assert_int_eq(e.seq, 9876543210LL);
    /* Every byte value in every place of the ten (read eight at once):
     * a digit gives its value there, any other byte no sequence. */
    for (size_t i = 0; i < 10; i++)
        for (int c = 1; c < 256; c++) {
            char t[] = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-9081726354";
            char *d = t + strlen(t) - 10;
            d[i] = (char)c;
            bool digit = c >= '0' && c <= '9';
            long long want = strtoll(d, NULL, 10);
            ck_assert_msg(zkl__entry_parse(t, &e) == (digit ? 0 : -1), "%s", t);
            ck_assert_msg(!digit || e.seq == want, "%s: %lld", t, (long long)e.seq);
            uint8_t u[16];
            int64_t seq = -1;
            ck_assert_msg(zkl__name_read(t, "lock-", u, &seq) == (digit ? 0 : -1), "%s", t);
            ck_assert_msg(!digit || seq == want, "%s: %lld", t, (long long)seq);
        }
}
END_TEST

/* zkl__name_write writes what the format it stands for writes, truncation
 * and out-of-range sequences included. */
START_TEST(test_node_names_are_written_as_the_format_writes_them)
{
    static const uint8_t uuid[16] = {0x53, 0x34, 0x5f, 0x98, 0x94, 0x23, 0x4e, 0x0c,
                                     0xa7, 0xb5, 0x9f, 0x81, 0x9e, 0x3e, 0xc2, 0xe1};
    static const char *const kinds[] = {"lock-", "__WRIT__", "", "a-much-longer-kind-than-any-"};
    static const long long seqs[] = {0,  7,  2147483647, 9999999999LL, 10000000000LL,
                                     -1, -2147483647};
    static const size_t sizes[] = {160, 64, 61, 55, 50, 41, 1};
    char fmt[37];
    zkl__uuid_text(uuid, fmt);
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t q = 0; q < sizeof seqs / sizeof *seqs; q++)
            for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
                char want[200], got[200];
                memset(got, 'x', sizeof got);
                snprintf(want, sizes[z], "_c_%s-%s%010lld", fmt, kinds[k], seqs[q]);
                zkl__name_write(got, sizes[z], uuid, kinds[k], seqs[q]);
                ck_assert_str_eq(got, want);
                for (size_t i = strlen(want) + 1; i < sizeof got; i++)
                    ck_assert_int_eq(got[i], 'x'); /* nothing past its end */
            }
    /* The uuid's text as a format writes it, for every byte value in
     * every place. */
    for (unsigned v = 0; v < 256; v++) {
        uint8_t u[16];
        char text[37], want[37];
        for (size_t i = 0; i < 16; i++)
            u[i] = (uint8_t)(v + 37 * i);
        zkl__uuid_text(u, text);
        snprintf(want, sizeof want,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                 u[14], u[15]);
        ck_assert_str_eq(text, want);
    }
    char name[160];
    zkl__name_write(name, sizeof name, uuid, "lock-", 7);
    ck_assert_str_eq(name, "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007");
}
END_TEST

/* zkl__name_read takes exactly the names zkl__name_write writes, and a
 * short text stops at its end; zkl__uuid_is holds a uuid's text in either
 * case against its bytes. */
START_TEST(test_node_names_are_read_back_exactly)
{
    uint8_t u[16], want[16] = {0x53, 0x34, 0x5f, 0x98, 0x94, 0x23, 0x4e, 0x0c,
                               0xa7, 0xb5, 0x9f, 0x81, 0x9e, 0x3e, 0xc2, 0xe1};
    int64_t seq = -5;
    ck_assert_int_eq(zkl__name_read("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007",
                                    "lock-", u, &seq), 0);
    ck_assert_int_eq(seq, 7);
    ck_assert_mem_eq(u, want, 16);
    ck_assert_int_eq(zkl__name_read("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-9999999999",
                                    "lock-", u, &seq), 0);
    ck_assert_int_eq(seq, 9999999999LL);
    static const char *const bad[] = {
        "_c_53345F98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007", /* uppercase */
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-00000000070", /* 11 digits */
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-000000007",   /* 9 digits */
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock--000000007",
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lockx0000000007",
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__READ__0000000007",
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1x-lock-0000000007",
        "_c_53345f98x9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007",
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e-lock-0000000007",
        "_d_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007",
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000",         /* short */
        "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-",
        "lock-0000000007",
        "_c_5334",
        "",
    };
    /* Each on the heap, its size exactly its length: a read past the end
     * of a short name is caught by the sanitizers' run. */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *b = strdup(bad[i]);
        ck_assert_ptr_nonnull(b);
        ck_assert_msg(zkl__name_read(b, "lock-", u, &seq) != 0, "%s", bad[i]);
        free(b);
    }
    /* A watch event's uuid, compared with a node's: either case, and no
     * other text. Each on the heap, 36 bytes or 37. */
    static const struct {
        const char *text;
        bool is;
    } uuids[] = {
        {"53345f98-9423-4e0c-a7b5-9f819e3ec2e1", true},
        {"53345F98-9423-4E0C-A7B5-9F819E3EC2E1", true},
        {"53345f98-9423-4e0c-a7b5-9f819e3ec2e", false}, /* 35 and its NUL */
        {"53345f98+9423-4e0c-a7b5-9f819e3ec2e1", false},
        {"53345f98-9423-4e0c-a7b5-9f819e3ec2eg", false},
        {"53345f98-9423-4e0c-a7b5-9f819e3ec2e2", false},
        {"63345f98-9423-4e0c-a7b5-9f819e3ec2e1", false},
    };
    for (size_t i = 0; i < sizeof uuids / sizeof *uuids; i++) {
        char *b = strdup(uuids[i].text);
        ck_assert_ptr_nonnull(b);
        ck_assert_msg(zkl__uuid_is(b, want) == uuids[i].is, "%s", b);
        free(b);
    }
    /* Any one character wrong, wherever it is: a digit that is none or
     * another, a dash that is a digit; an uppercase digit matches in an
     * event's path, and is refused in a name read from a listing. */
    for (size_t i = 0; i < 36; i++) {
        char t[37] = "53345f98-9423-4e0c-a7b5-9f819e3ec2e1", n[60];
        bool dash = t[i] == '-';
        /* the neighbours of each range of digits, the letters that fold to
         * one, and bytes past ASCII */
        static const char nondigits[] = "/:@G`g -\x80\xff\x01\x10\x0d";
        char other[2] = {t[i] == '0' ? '1' : '0', '\0'};
        for (const char *c = dash ? "0aA" : nondigits; *c; c++) {
            t[i] = *c;
            ck_assert_msg(!zkl__uuid_is(t, want), "%s", t);
        }
        if (!dash) {
            t[i] = other[0];
            ck_assert_msg(!zkl__uuid_is(t, want), "%s", t);
        }
        strcpy(t, "53345f98-9423-4e0c-a7b5-9f819e3ec2e1");
        if (!dash && t[i] >= 'a') {
            t[i] = (char)(t[i] - 'a' + 'A');
            ck_assert_msg(zkl__uuid_is(t, want), "%s", t);
            snprintf(n, sizeof n, "_c_%s-lock-0000000007", t);
            ck_assert_msg(zkl__name_read(n, "lock-", u, &seq) != 0, "%s", n);
        }
    }
    /* Every byte value in every place, against the text as written. */
    for (unsigned v = 0; v < 256; v++) {
        uint8_t a[16];
        char text[37];
        for (size_t i = 0; i < 16; i++)
            a[i] = (uint8_t)(v + 37 * i);
        zkl__uuid_text(a, text);
        ck_assert_msg(zkl__uuid_is(text, a), "%s", text);
        for (size_t i = 0; i < 36; i++)
            if (text[i] >= 'a')
                text[i] = (char)(text[i] - 'a' + 'A');
        ck_assert_msg(zkl__uuid_is(text, a), "%s", text);
        a[v % 16] ^= 1;
        ck_assert_msg(!zkl__uuid_is(text, a), "%s", text);
    }
}
END_TEST

START_TEST(test_uuids_are_fresh_and_well_formed)
{
    char a[37], b[37];
    zkl__random_uuid(a);
    zkl__random_uuid(b);
    ck_assert_int_eq(strlen(a), 36);
    ck_assert_str_ne(a, b);
    ck_assert(a[8] == '-' && a[13] == '-' && a[18] == '-' && a[23] == '-');
    ck_assert(a[14] == '4');
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_good_paths_are_accepted,
        test_bad_paths_are_refused,
        test_segments_named_like_contender_nodes_are_refused,
        test_characters_the_server_refuses_are_refused,
        test_node_names_parse_kind_and_sequence,
        test_node_names_are_written_as_the_format_writes_them,
        test_node_names_are_read_back_exactly,
        test_uuids_are_fresh_and_well_formed,
        NULL,
    };
    return tu_run_case("path", 10, NULL, NULL, tests);
}
