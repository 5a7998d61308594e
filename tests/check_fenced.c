/* The fenced resource example (examples/fenced_store.c, examples/fenced_file.c):
 * the store refuses tokens lower than the highest it accepted, and the
 * example program writes with real fencing tokens from a real ZooKeeper. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fenced_store.h"
#include "testutil.h"


static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/zkl-fenced.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *store_path(void)
{
    char *p = malloc(strlen(dir) + 16);
    sprintf(p, "%s/store", dir);
    return p;
}

START_TEST(test_store_refuses_lower_tokens_and_accepts_equal_or_higher)
{
    char *s = store_path();
    ck_assert_int_eq(fenced_store_fence(s), 0);
    ck_assert_int_eq(fenced_store_write(s, 10, "a", "one"), 0);
    ck_assert_int_eq(fenced_store_write(s, 10, "a", "two"), 0); /* same holder again */
    ck_assert_int_eq(fenced_store_write(s, 12, "b", "three"), 0);
    ck_assert_int_eq(fenced_store_write(s, 11, "a", "late"), FENCED_STALE);
    ck_assert_int_eq(fenced_store_write(s, 10, "a", "later"), FENCED_STALE);
    ck_assert_int_eq(fenced_store_fence(s), 12);
    ck_assert_int_eq(fenced_store_write(s, 0, "a", "x"), -EINVAL);
    ck_assert_int_eq(fenced_store_write(s, 13, "a b", "x"), -EINVAL);
    /* The journal holds the three accepted writes, in order. */
    FILE *f = fopen(s, "r");
    ck_assert_ptr_nonnull(f);
    char line[128];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert(strncmp(line, "fence 000", 9) == 0);
    const char *want[] = {"10 a one\n", "10 a two\n", "12 b three\n"};
    for (int i = 0; i < 3; i++) {
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
        ck_assert_str_eq(line, want[i]);
    }
    ck_assert_ptr_null(fgets(line, sizeof line, f));
    fclose(f);
    free(s);
}
END_TEST

struct racer {
    const char *path;
    int64_t token;
    int accepted;
};

static void *racer_main(void *arg)
{
    struct racer *r = arg;
    for (int i = 0; i < 50; i++)
        r->accepted += fenced_store_write(r->path, r->token + i * 2, "r", "x") == 0;
    return NULL;
}

START_TEST(test_store_journal_tokens_never_decrease_under_concurrent_writers)
{
    char *s = store_path();
    struct racer a = {s, 1, 0}, b = {s, 2, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, racer_main, &a);
    pthread_create(&tb, NULL, racer_main, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    FILE *f = fopen(s, "r");
    char line[128];
    long long last = 0, t;
    int n = 0;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    while (fgets(line, sizeof line, f)) {
        ck_assert_int_eq(sscanf(line, "%lld", &t), 1);
        ck_assert_int_ge(t, last);
        last = t;
        n++;
    }
    fclose(f);
    ck_assert_int_eq(n, a.accepted + b.accepted);
    ck_assert_int_eq(fenced_store_fence(s), last);
    free(s);
}
END_TEST

static int run_example(const char *store, const char *lock, const char *who)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s/examples/fenced_file' '%s' '%s' '%s' %s hello >/dev/null",
             ZKL_BUILDDIR, tu_hosts(), lock, store, who);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_example_program_writes_with_increasing_tokens)
{
    char *s = store_path();
    char lock[128];
    snprintf(lock, sizeof lock, "/zkl-test/fenced-%ld", (long)getpid());
    ck_assert_int_eq(run_example(s, lock, "first"), 0);
    int64_t f1 = fenced_store_fence(s);
    ck_assert_int_gt(f1, 0);
    ck_assert_int_eq(run_example(s, lock, "second"), 0);
    int64_t f2 = fenced_store_fence(s);
    ck_assert_int_gt(f2, f1); /* the later holder's token is higher */
    /* A write with the first holder's token is refused now. */
    ck_assert_int_eq(fenced_store_write(s, f1, "first", "stale"), FENCED_STALE);
    ck_assert_int_eq(fenced_store_fence(s), f2);
    zhandle_t *zk = tu_zk();
    tu_rmr(zk, lock);
    zookeeper_close(zk);
    free(s);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_store_refuses_lower_tokens_and_accepts_equal_or_higher,
        test_store_journal_tokens_never_decrease_under_concurrent_writers,
        test_example_program_writes_with_increasing_tokens,
        NULL,
    };
    return tu_run_case("fenced", 60, setup, teardown, tests);
}
