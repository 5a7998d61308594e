/* zkl next to Apache Curator on one path, against a real ZooKeeper: the
 * read-write lock next to InterProcessReadWriteLock (readers of both share,
 * writers of both exclude everyone, a downgrade keeps a Curator writer
 * out); zkl latches next to LeaderLatch, and zkl mutexes with ids next to
 * LeaderSelector, in one election. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rwlock_util.h"
#include "zkl/zookeeper.h"

/* ---- next to Curator ------------------------------------------------------------ *
 * Curator workers (tests/interop/CuratorWorker.java, Debian's Curator 5.4)
 * and zkl workers log "ACQ|REL kind id realtime-ns token" lines to one file;
 * intervals [ACQ, REL] lie inside the real holds. */

enum { MAX_KIDS = 16 };
static pid_t kids[MAX_KIDS];
static int nkids;
static char tmpdir[64];

static void interop_setup(void)
{
    tu_fixture_setup_named("rwlock");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zkl-rwlock-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    tu_curator_worker_build();
}

static void interop_teardown(void)
{
    for (int i = 0; i < nkids; i++) {
        if (kids[i] > 0) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
        }
    }
    nkids = 0;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    tu_fixture_teardown();
}

/* A file of the test's directory, its name freed after the test. */
static char *tmpfile_path(const char *name)
{
    char *s = malloc(strlen(tmpdir) + strlen(name) + 2);
    ck_assert_ptr_nonnull(s);
    sprintf(s, "%s/%s", tmpdir, name);
    tu_defer(free, s);
    return s;
}

static pid_t spawn_curator(const char *path, const char *mode, int iters, int hold_ms,
                           const char *log, const char *counter)
{
    char it[16], hold[16];
    snprintf(it, sizeof it, "%d", iters);
    snprintf(hold, sizeof hold, "%d", hold_ms);
    char script[1024];
    snprintf(script, sizeof script, "%s/tests/interop/run-curator-worker.sh", ZKL_SRCDIR);
    const char *hosts = tu_hosts();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", script, "--servers", hosts, "--path", path, "--mode", mode,
              "--iterations", it, "--counter-file", counter, "--log-file", log, "--hold-ms", hold,
              "--acquire-timeout-ms", "45000", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_lt(nkids, MAX_KIDS);
    kids[nkids++] = pid;
    return pid;
}

/* Wait for a child with a deadline; returns its exit status, or -1. */
static int wait_child(pid_t pid, int timeout_ms)
{
    int rc = tu_wait_exit(pid, timeout_ms);
    if (rc >= 0) {
        for (int i = 0; i < nkids; i++)
            if (kids[i] == pid)
                kids[i] = 0;
    }
    return rc < 0 ? -1 : rc;
}

struct iv {
    char kind[8];
    char id[48];
    int64_t acq, rel;
    int zkl;
};

/* Parse a merged log into intervals; returns how many. Each id's lines
 * alternate ACQ, REL. */
static int read_intervals(const char *log, struct iv *out, int max)
{
    FILE *f = fopen(log, "r");
    if (f == NULL)
        return 0;
    int n = 0;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char ev[8], kind[8], id[48];
        long long ns;
        if (sscanf(line, "%7s %7s %47s %lld", ev, kind, id, &ns) != 4)
            ck_abort_msg("bad log line: %s", line);
        if (strcmp(ev, "ACQ") == 0) {
            ck_assert_int_lt(n, max);
            snprintf(out[n].kind, sizeof out[n].kind, "%s", kind);
            snprintf(out[n].id, sizeof out[n].id, "%s", id);
            out[n].acq = ns;
            out[n].rel = -1;
            out[n].zkl = strncmp(id, "zkl-", 4) == 0;
            n++;
        } else {
            int k = n - 1;
            while (k >= 0 && (strcmp(out[k].id, id) != 0 || out[k].rel >= 0))
                k--;
            ck_assert_msg(k >= 0, "REL without ACQ: %s", line);
            out[k].rel = ns;
        }
    }
    fclose(f);
    return n;
}

struct line_wait {
    const char *log, *prefix;
    int want;
};

static bool has_lines(void *arg)
{
    struct line_wait *l = arg;
    return tu_file_lines(l->log, l->prefix) >= l->want;
}

static void log_line(int fd, const char *ev, const char *kind, int64_t ns, int64_t tok)
{
    char line[160];
    int len = snprintf(line, sizeof line, "%s %s zkl-%ld %lld %lld\n", ev, kind, (long)getpid(),
                       (long long)ns, (long long)tok);
    if (write(fd, line, (size_t)len) != len)
        _exit(9);
}

/* The Curator writer queued under `p` waits on our read: its watch on our
 * read node is set, so it listed, found the read ahead and decided to wait
 * (Curator watches only when it does not hold); nothing but an event on
 * that node can let it in. Then no "ACQ write" may be in `log`. */
static void curator_writer_waits_on_our_read(const char *p, zkl_rwlock *rw, const char *log)
{
    struct String_vector kids_now = {0};
    ck_assert_int_eq(zoo_get_children(tu_fixture_zk, p, 0, &kids_now), ZOK);
    int64_t owner = 0;
    for (int i = 0; i < kids_now.count && owner == 0; i++) {
        if (strstr(kids_now.data[i], "__WRIT__") == NULL)
            continue;
        char full[512];
        snprintf(full, sizeof full, "%s/%s", p, kids_now.data[i]);
        struct Stat st;
        if (zoo_exists(tu_fixture_zk, full, 0, &st) == ZOK)
            owner = st.ephemeralOwner;
    }
    deallocate_String_vector(&kids_now);
    ck_assert_msg(owner != 0, "no writer's node under %s", p);
    ck_assert_msg(tu_wait_session_watches(zkl_rwlock_read_node(rw), owner, 60000),
                  "the Curator writer does not watch our read");
    ck_assert_int_eq(tu_file_lines(log, "ACQ write"), 0);
}

START_TEST(test_rwlock_curator_readers_share_with_zkl_readers_and_its_writers_wait)
{
    char *p = tu_test_path("curator-share");
    char *log = tmpfile_path("share.log"), *cnt = tmpfile_path("counter");
    zkl_rwlock *rw = tu_test_rwlock_apart(p);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 5000), 0);
    /* A Curator reader gets in next to ours, and leaves. */
    pid_t cr = spawn_curator(p, "read", 1, 1, log, cnt);
    ck_assert_int_eq(wait_child(cr, 60000), 0);
    ck_assert_int_eq(tu_file_lines(log, "ACQ read"), 1);
    /* A Curator writer queues behind our read, and stays out. */
    pid_t cw = spawn_curator(p, "write", 1, 1, log, cnt);
    wait_children(p, 2);
    curator_writer_waits_on_our_read(p, rw, log);
    int64_t released = tu_realtime_ns();
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(wait_child(cw, 60000), 0);
    struct iv ivs[8];
    int n = read_intervals(log, ivs, 8);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(ivs[1].kind, "write");
    ck_assert_int_gt(ivs[1].acq, released);
    ck_assert_int_eq(tu_counter_read(cnt), 1);
    /* A Curator writer holds: our reader waits for it. */
    pid_t cw2 = spawn_curator(p, "write", 1, 3000, log, cnt);
    struct line_wait lw = {log, "ACQ write", 2};
    ck_assert(tu_wait_until(has_lines, &lw, 60000));
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 0), ZKL_ETIMEDOUT);
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 30000), 0);
    int64_t got = tu_realtime_ns();
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(wait_child(cw2, 60000), 0);
    n = read_intervals(log, ivs, 8);
    ck_assert_int_eq(n, 3);
    ck_assert_int_lt(ivs[2].rel, got);
    ck_assert_int_eq(tu_counter_read(cnt), 2);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

START_TEST(test_rwlock_downgrade_keeps_a_queued_curator_writer_out)
{
    char *p = tu_test_path("curator-downgrade");
    char *log = tmpfile_path("downgrade.log"), *cnt = tmpfile_path("counter");
    zkl_rwlock *rw = tu_test_rwlock_apart(p);
    ck_assert_int_eq(zkl_rwlock_write_acquire(rw, 5000), 0);
    /* Behind our writer: a Curator reader, then a Curator writer. */
    pid_t cr = spawn_curator(p, "read", 1, 200, log, cnt);
    wait_children(p, 2);
    pid_t cw = spawn_curator(p, "write", 1, 1, log, cnt);
    wait_children(p, 3);
    /* Downgrade, then release the write. */
    ck_assert_int_eq(zkl_rwlock_read_acquire(rw, 0), 0);
    ck_assert_int_eq(zkl_rwlock_write_release(rw), 0);
    /* The Curator reader, ahead of the writer, joins our read ... */
    struct line_wait lw = {log, "ACQ read", 1};
    ck_assert(tu_wait_until(has_lines, &lw, 60000));
    ck_assert_int_eq(wait_child(cr, 60000), 0);
    /* ... the Curator writer stays out while we read. */
    curator_writer_waits_on_our_read(p, rw, log);
    ck_assert_int_eq(zkl_rwlock_read_is_held(rw), 1);
    int64_t released = tu_realtime_ns();
    ck_assert_int_eq(zkl_rwlock_read_release(rw), 0);
    ck_assert_int_eq(wait_child(cw, 60000), 0);
    struct iv ivs[4];
    ck_assert_int_eq(read_intervals(log, ivs, 4), 2);
    ck_assert_str_eq(ivs[1].kind, "write");
    ck_assert_int_gt(ivs[1].acq, released);
    ck_assert_int_gt(ivs[1].acq, ivs[0].rel);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}
END_TEST

enum { MIX_CURATOR_W = 2, MIX_CURATOR_R = 2, MIX_ZKL_W = 2, MIX_ZKL_R = 2, MIX_MAXIV = 2000 };

/* A zkl process of the mixed run: loops until the Curator workers are all
 * done (and at least `min` times), so both run side by side throughout. */
static int zkl_mixed_worker(const char *p, int write, int min, const int *stop, const char *log,
                            const char *cnt)
{
    zkl_client *c = NULL;
    zkl_rwlock *rw;
    const char *hosts = getenv("ZKL_TEST_HOSTS");
    if (hosts == NULL || zkl_client_open(hosts, 10000, &c) != 0 || zkl_rwlock_new(c, p, &rw) != 0)
        return 2;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return 3;
    for (int i = 0; i < min || !__atomic_load_n(stop, __ATOMIC_SEQ_CST); i++) {
        int rc = write ? zkl_rwlock_write_acquire(rw, 45000) : zkl_rwlock_read_acquire(rw, 45000);
        if (rc != 0)
            return 4;
        const char *kind = write ? "write" : "read";
        int64_t tok = write ? tu_rwlock_write_token(rw) : tu_rwlock_read_token(rw);
        log_line(fd, "ACQ", kind, tu_realtime_ns(), tok);
        long v = tu_counter_read(cnt);
        usleep(write ? 3000 : 8000);
        if (write && tu_counter_write(cnt, v + 1) != 0)
            return 5;
        log_line(fd, "REL", kind, tu_realtime_ns(), tok);
        rc = write ? zkl_rwlock_write_release(rw) : zkl_rwlock_read_release(rw);
        if (rc != 0)
            return 6;
    }
    close(fd);
    zkl_rwlock_free(rw);
    zkl_client_close(c);
    return 0;
}

/* Worker "mixed PATH STOPFILE WRITE MIN LOG COUNTER". */
static int mixed_worker(char **args)
{
    int *stop = tu_map_shared(args[1], sizeof *stop, 0);
    if (stop == NULL)
        return 2;
    int rc = zkl_mixed_worker(args[0], atoi(args[2]), atoi(args[3]), stop, args[4], args[5]);
    munmap(stop, sizeof *stop);
    return rc;
}

static int iv_cmp(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    return x->acq < y->acq ? -1 : x->acq > y->acq;
}

START_TEST(test_rwlock_mixed_curator_and_zkl_run_never_overlaps_a_writer)
{
    char *p = tu_test_path("curator-mixed");
    char *log = tmpfile_path("mixed.log"), *cnt = tmpfile_path("counter");
    char *stopfile = tmpfile_path("stop");
    int *stop = tu_map_shared(stopfile, sizeof *stop, 1);
    ck_assert_ptr_nonnull(stop);
    enum { CW_ITER = 12, CR_ITER = 20 };
    pid_t cur[MIX_CURATOR_W + MIX_CURATOR_R];
    for (int i = 0; i < MIX_CURATOR_W + MIX_CURATOR_R; i++) {
        int w = i < MIX_CURATOR_W;
        cur[i] = spawn_curator(p, w ? "write" : "read", w ? CW_ITER : CR_ITER, w ? 3 : 8, log, cnt);
    }
    for (int i = 0; i < MIX_ZKL_W + MIX_ZKL_R; i++) {
        const char *args[] = {"mixed", p, stopfile, i < MIX_ZKL_W ? "1" : "0", "5", log, cnt, NULL};
        kids[nkids++] = tu_spawn_worker(args, -1);
    }
    for (int i = 0; i < MIX_CURATOR_W + MIX_CURATOR_R; i++)
        ck_assert_msg(wait_child(cur[i], 90000) == 0, "Curator worker %d failed", i);
    __atomic_store_n(stop, 1, __ATOMIC_SEQ_CST);
    for (int i = MIX_CURATOR_W + MIX_CURATOR_R; i < nkids; i++)
        if (kids[i] > 0)
            ck_assert_msg(wait_child(kids[i], 60000) == 0, "zkl worker failed");

    static struct iv ivs[MIX_MAXIV];
    int n = read_intervals(log, ivs, MIX_MAXIV);
    qsort(ivs, (size_t)n, sizeof ivs[0], iv_cmp);
    int writes = 0, zkl_n = 0, cur_n = 0, max_readers = 0, mixed_readers = 0;
    int64_t zkl_first = INT64_MAX, zkl_last = 0, cur_first = INT64_MAX, cur_last = 0;
    for (int i = 0; i < n; i++) {
        struct iv *a = &ivs[i];
        ck_assert_msg(a->rel >= a->acq, "%s %s never released", a->kind, a->id);
        int w = strcmp(a->kind, "write") == 0;
        writes += w;
        if (a->zkl) {
            zkl_n++;
            zkl_first = a->acq < zkl_first ? a->acq : zkl_first;
            zkl_last = a->rel > zkl_last ? a->rel : zkl_last;
        } else {
            cur_n++;
            cur_first = a->acq < cur_first ? a->acq : cur_first;
            cur_last = a->rel > cur_last ? a->rel : cur_last;
        }
        int readers = 1;
        for (int j = 0; j < n; j++) {
            struct iv *b = &ivs[j];
            if (j == i || b->acq >= a->rel || b->rel <= a->acq)
                continue; /* no overlap */
            int bw = strcmp(b->kind, "write") == 0;
            ck_assert_msg(!w && !bw, "%s %s [%lld, %lld] overlaps %s %s [%lld, %lld]", a->kind,
                          a->id, (long long)a->acq, (long long)a->rel, b->kind, b->id,
                          (long long)b->acq, (long long)b->rel);
            if (b->acq <= a->acq && b->rel > a->acq)
                readers++; /* inside when a came in */
            if (a->zkl != b->zkl)
                mixed_readers++;
        }
        if (!w && readers > max_readers)
            max_readers = readers;
    }
    fprintf(stderr,
            "mixed run: %d intervals (%d zkl, %d Curator), %d writes, max %d readers at once, "
            "%d zkl/Curator reader overlaps\n",
            n, zkl_n, cur_n, writes, max_readers, mixed_readers / 2);
    ck_assert_int_eq(cur_n, MIX_CURATOR_W * CW_ITER + MIX_CURATOR_R * CR_ITER);
    ck_assert_int_ge(zkl_n, (MIX_ZKL_W + MIX_ZKL_R) * 5);
    /* Both ran side by side. */
    ck_assert(zkl_first < cur_last && cur_first < zkl_last);
    /* Every write was a read-modify-write of the counter: none was lost. */
    ck_assert_int_eq(tu_counter_read(cnt), writes);
    ck_assert_int_ge(max_readers, 2);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
    munmap(stop, sizeof *stop);
}
END_TEST


/* ---- elections: LeaderLatch, LeaderSelector ------------------------------------ */

/* Worker "elect KIND PATH ITERS LOG COUNTER ID": ITERS leaderships through a
 * zkl latch (KIND "latch") or a zkl mutex with the id as its data ("mutex",
 * next to LeaderSelector), each a read-modify-write of the counter. */
static int elect_worker(char **a)
{
    zkl_client *c = NULL;
    const char *hosts = getenv("ZKL_TEST_HOSTS");
    int fd = open(a[3], O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (hosts == NULL || fd < 0 || zkl_client_open(hosts, 10000, &c) != 0)
        return 2;
    bool latch = strcmp(a[0], "latch") == 0;
    zkl_lock_opts *o = NULL;
    zkl_mutex *m = NULL;
    if (!latch && (zkl_lock_opts_new(&o) != 0 || zkl_lock_opts_set_id(o, a[5]) != 0 ||
                   zkl_mutex_new_opts(c, a[1], o, &m) != 0))
        return 3;
    zkl_lock_opts_free(o);
    for (int i = 0; i < atoi(a[2]); i++) {
        zkl_latch *l = NULL;
        int64_t tok = 0;
        if (latch ? zkl_latch_new(c, a[1], a[5], &l) != 0 || zkl_latch_start(l) != 0 ||
                        zkl_latch_await(l, 60000) != 0 || zkl_latch_token(l, &tok) != 0
                  : zkl_mutex_acquire(m, 60000) != 0 || zkl_mutex_token(m, &tok) != 0)
            return 4;
        log_line(fd, "ACQ", a[0], tu_realtime_ns(), tok);
        long v = tu_counter_read(a[4]);
        usleep(3000);
        if (tu_counter_write(a[4], v + 1) != 0)
            return 5;
        log_line(fd, "REL", a[0], tu_realtime_ns(), tok);
        if (latch ? zkl_latch_close(l) != 0 : zkl_mutex_release(m) != 0)
            return 6;
        zkl_latch_free(l);
    }
    zkl_mutex_free(m);
    zkl_client_close(c);
    close(fd);
    return 0;
}

/* Curator and zkl candidates, `per` leaderships each, on one path: the
 * leaders never overlap, the counter only leaders bump is exact, and every
 * candidate led in turn. */
static void election_run(const char *leaf, const char *curator_mode, const char *zkl_kind)
{
    char *p = tu_test_path(leaf);
    char *log = tmpfile_path("elect.log"), *cnt = tmpfile_path("elect-counter");
    enum { CUR = 2, ZKL = 2, PER = 5 };
    pid_t cur[CUR], zk[ZKL];
    for (int i = 0; i < CUR; i++)
        cur[i] = spawn_curator(p, curator_mode, PER, 3, log, cnt);
    for (int i = 0; i < ZKL; i++) {
        char id[32];
        snprintf(id, sizeof id, "zkl-candidate-%d", i);
        const char *args[] = {"elect", zkl_kind, p, "5", log, cnt, id, NULL};
        zk[i] = kids[nkids++] = tu_spawn_worker(args, -1);
    }
    for (int i = 0; i < CUR; i++)
        ck_assert_msg(wait_child(cur[i], 120000) == 0, "Curator candidate %d failed", i);
    for (int i = 0; i < ZKL; i++)
        ck_assert_msg(wait_child(zk[i], 120000) == 0, "zkl candidate %d failed", i);
    static struct iv ivs[64];
    int n = read_intervals(log, ivs, 64);
    qsort(ivs, (size_t)n, sizeof ivs[0], iv_cmp);
    int zkl_n = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_msg(ivs[i].rel >= ivs[i].acq, "%s never stepped down", ivs[i].id);
        if (i > 0)
            ck_assert_msg(ivs[i].acq > ivs[i - 1].rel, "%s %s overlaps %s %s", ivs[i].kind,
                          ivs[i].id, ivs[i - 1].kind, ivs[i - 1].id);
        zkl_n += ivs[i].zkl;
    }
    ck_assert_int_eq(n, (CUR + ZKL) * PER); /* every candidate led, each time */
    ck_assert_int_eq(zkl_n, ZKL * PER);
    ck_assert_int_eq(tu_counter_read(cnt), n);
    ck_assert_int_eq(tu_children(tu_fixture_zk, p), 0);
}

START_TEST(test_curator_leader_latches_and_zkl_latches_share_one_election)
{
    election_run("curator-latch", "latch", "latch");
}
END_TEST

START_TEST(test_curator_leader_selectors_and_zkl_mutexes_with_ids_take_turns)
{
    election_run("curator-select", "select", "mutex");
}
END_TEST

/* Curator's getLeader() names a zkl leader by its id. */
START_TEST(test_curator_names_the_zkl_leader_by_its_id)
{
    char *p = tu_test_path("curator-names");
    char *log = tmpfile_path("leader.log"), *cnt = tmpfile_path("unused");
    zkl_client *c = tu_test_client(10000);
    zkl_latch *l;
    ck_assert_int_eq(zkl_latch_new(c, p, "orders-7", &l), 0);
    ck_assert_int_eq(zkl_latch_start(l), 0);
    ck_assert_int_eq(zkl_latch_await(l, 20000), 0);
    ck_assert_int_eq(wait_child(spawn_curator(p, "leader", 1, 0, log, cnt), 60000), 0);
    FILE *f = fopen(log, "r");
    ck_assert_ptr_nonnull(f);
    char line[128] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    ck_assert_str_eq(line, "LEADER orders-7\n");
    zkl_latch_free(l);
}
END_TEST

int main(int argc, char **argv)
{
    tu_main_init(argc, argv);
    if (argc == 9 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "elect") == 0)
        return elect_worker(argv + 3);
    if (argc == 9 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "mixed") == 0)
        return mixed_worker(argv + 3);
    const TTest *tests[] = {
        test_rwlock_curator_readers_share_with_zkl_readers_and_its_writers_wait,
        test_rwlock_downgrade_keeps_a_queued_curator_writer_out,
        test_rwlock_mixed_curator_and_zkl_run_never_overlaps_a_writer,
        test_curator_leader_latches_and_zkl_latches_share_one_election,
        test_curator_leader_selectors_and_zkl_mutexes_with_ids_take_turns,
        test_curator_names_the_zkl_leader_by_its_id,
        NULL,
    };
    return tu_run_case("rwlock_interop", 150, interop_setup, interop_teardown, tests);
}
