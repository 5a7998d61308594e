/* The error list: every code has a message, a name, and an entry in
 * docs/errors.md that says what to do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h" /* PACKAGE_VERSION: configure.ac's version */
#include "testutil.h"

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

START_TEST(test_every_code_has_a_message_and_a_name)
{
#define CHECK_ONE(name, code, msg)                                          \
    ck_assert_str_eq(zkl_strerror(ZKL_##name), msg);                        \
    ck_assert_str_eq(zkl_err_name(ZKL_##name), #name);                      \
    ck_assert_int_lt(ZKL_##name, 0);
    ZKL_ERRNO_MAP(CHECK_ONE)
#undef CHECK_ONE
    ck_assert_str_eq(zkl_err_name(0), "OK");
    ck_assert_ptr_nonnull(zkl_strerror(-9999));
    ck_assert_str_eq(zkl_err_name(12345), "UNKNOWN");
    /* One version: configure.ac's, in the header and in the library. */
    ck_assert_str_eq(ZKL_VERSION_STRING, PACKAGE_VERSION);
    ck_assert_str_eq(zkl_version_string(), PACKAGE_VERSION);
    char parts[32];
    snprintf(parts, sizeof parts, "%d.%d.%d", ZKL_VERSION_MAJOR, ZKL_VERSION_MINOR,
             ZKL_VERSION_PATCH);
    ck_assert_str_eq(parts, PACKAGE_VERSION);
}
END_TEST

START_TEST(test_every_code_is_documented)
{
    char *doc = read_file(ZKL_SRCDIR "/docs/errors.md");
    char want[64];
#define CHECK_DOC(name, code, msg)                                          \
    snprintf(want, sizeof want, "## ZKL_%s (%d)", #name, code);             \
    ck_assert_msg(strstr(doc, want) != NULL, "docs/errors.md lacks '%s'", want);
    ZKL_ERRNO_MAP(CHECK_DOC)
#undef CHECK_DOC
    free(doc);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_every_code_has_a_message_and_a_name,
        test_every_code_is_documented,
        NULL,
    };
    return tu_run_case("errors", 10, NULL, NULL, tests);
}
