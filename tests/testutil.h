/* Helpers shared by the Check suites: the test ZooKeeper, a unique root
 * znode per test, waits on conditions with deadlines, child processes. */
#ifndef ZKL_TESTUTIL_H
#define ZKL_TESTUTIL_H

#include "config.h" /* ZKL_SRCDIR, ZKL_BUILDDIR: the trees the tests read */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>

#include "zkl.h"

/* The connect string of the test ensemble (ZKL_TEST_HOSTS). Aborts the test
 * loudly if it is not set: suites never pass by skipping. */
const char *tu_hosts(void);
/* A connected client, or the test fails. */
zkl_client *tu_client(int session_timeout_ms);
/* A client with the digest credentials `digest` ("user:password"; NULL for
 * none) whose nodes get the ACL `acl`, opened, or the test fails. */
zkl_client *tu_client_with(const char *digest, enum zkl_acl acl);
/* A raw handle for looking at the server, connected, or the test fails. */
zhandle_t *tu_zk(void);
/* The same to the servers `hosts` only. */
zhandle_t *tu_zk_to(const char *hosts);
/* A fresh root path for one test: /zkl-test/<name>-<pid>-<n>. Malloc'd. */
char *tu_root(const char *name);
/* Delete `path` and everything below it (missing is fine). */
void tu_rmr(zhandle_t *zh, const char *path);
/* Create `path` and its missing ancestors with the open ACL (those there
 * already are fine), or fail the test: a tree for nodes made below it. */
void tu_mkdirs(zhandle_t *zh, const char *path);
/* Number of children of `path`; 0 if it does not exist. */
int tu_children(zhandle_t *zh, const char *path);
/* 1 if `path` exists. */
int tu_exists(zhandle_t *zh, const char *path);
/* How many times slower than a plain build this one runs: 3 under a
 * sanitizer or valgrind, else 1. Deadlines (a bound on failure, never the
 * time a test takes) and test case timeouts stretch by it; session
 * timeouts mostly do not (tests time the server's expiry by them), but a
 * short one given only to be lost soon may (tu_holder_main). */
int tu_slowdown(void);
/* `ms` stretched so. */
int tu_ms(int ms);
/* Poll `cond` until true or tu_ms(`timeout_ms`) passed; returns the last
 * value. */
bool tu_wait_until(bool (*cond)(void *), void *arg, int timeout_ms);
/* A condition for it: the client (arg) is connected, with a new session or
 * its old one. */
bool tu_client_connected(void *c);
/* A round trip on the current session of `c` (an asynchronous exists of "/"
 * on its handle, borrowed, waited for): one session's requests are answered
 * in order, and a watch event before the answers that follow it, and the
 * handle's completion thread runs answers and events in that order, so once
 * this returns, whatever the client sent before has been answered, and zkl
 * has handled every answer and event the server had sent it before (a
 * synchronous call would not say so: its answer is taken on the I/O thread,
 * ahead of what waits for the completion thread). Waits while the client is
 * between sessions, within tu_ms(30 s); the ZooKeeper code of the exists. */
int tu_round_trip(zkl_client *c);
/* tu_round_trip on each of `n` clients, three rounds: everything each was
 * told before has been acted on, a watch event whose handling sends
 * another request (and that one's answer) included. */
void tu_drain(zkl_client *const *cs, int n);
/* The counters of `c`, or the test fails. */
zkl_client_stats tu_stats(zkl_client *c);
/* The counter at `field` (TU_STAT(name)) of `c`. */
#define TU_STAT(name) offsetof(zkl_client_stats, name)
uint64_t tu_stat(zkl_client *c, size_t field);
/* Wait until that counter of `c` is `n` or more, then a round trip: what it
 * counts was sent and has been answered (a waiter's watch, once counted
 * among its requests, is set). Fails the test if not within tu_ms(30 s). */
void tu_wait_stat(zkl_client *c, size_t field, uint64_t n);
/* tu_wait_stat of the requests: a waiter of the lock recipes sends its
 * create, a listing, a watch on its own node and one on the node ahead. */
void tu_wait_requests(zkl_client *c, uint64_t n);
/* A listener's record of a client's state changes, each with its time
 * (tu_now_ms): zkl_client_add_listener(c, tu_states_record, &s), s made
 * with TU_STATES_INIT. */
struct tu_states {
    pthread_mutex_t mu;
    int states[32];
    int64_t at[32];
    int n;
};
#define TU_STATES_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}
void tu_states_record(zkl_client *c, enum zkl_state st, void *arg);
/* When `st` was first recorded at index `from` or later, or -1. */
int64_t tu_states_at(struct tu_states *s, int st, int from);
/* A condition for tu_wait_until: `then` was recorded after a `first`
 * (first -1: at any time). */
struct tu_state_wait {
    struct tu_states *s;
    int first, then;
};
bool tu_states_saw(void *w);
/* An asynchronous request's callback that counts its calls and keeps the
 * last result: (..., tu_heard_fn, &h, ...), h a struct tu_heard made zero,
 * read with tu_heard_calls() and tu_heard_result() (fields kept atomically). */
struct tu_heard {
    int calls, result;
};
void tu_heard_fn(zkl_request *r, int result, void *arg);
int tu_heard_calls(struct tu_heard *h);
int tu_heard_result(struct tu_heard *h);
/* A condition for tu_wait_until: h (a struct tu_heard) was called. */
bool tu_heard_once(void *h);
/* Make the server expire the session of `c` (another handle joins the
 * session with its id and password, then closes it). */
void tu_expire_session(zkl_client *c);
/* Make the server expire the session `id` (as tu_expire_session, without
 * waiting for any client to hear of it). */
void tu_expire_id(const clientid_t *id, int timeout_ms);
/* The ZooKeeper harness script: ZKL_HARNESS, else the source tree's. */
const char *tu_harness_path(void);
/* A private server for a test that must break or limit it: the harness
 * starts it in a new directory made from the mkdtemp template `dir`, with
 * `jvm_extra` (ZKL_ZK_JVM_EXTRA; NULL for none), owned by this process so
 * that it stops with it even if the test dies. Its connect string goes to
 * `hosts`; or the test fails. */
void tu_private_zk_start(char *dir, const char *jvm_extra, char *hosts, size_t len);
/* Milliseconds of CLOCK_MONOTONIC, and nanoseconds. */
int64_t tu_now_ms(void);
int64_t tu_mono_ns(void);
/* True under valgrind: suites run smaller there (memcheck looks for memory
 * errors, not scale; hundreds of threads serialized by it starve sessions). */
bool tu_under_valgrind(void);
/* Worker processes: a suite's main() calls tu_main_init() first; then
 * tu_spawn_worker() runs the suite's own binary again as
 * "<self> --worker ARGS...", with stdout on out_fd if out_fd >= 0. A fresh
 * exec, not a bare fork: the suite already runs ZooKeeper threads, and a
 * fork of a threaded process is no place for new ones (ThreadSanitizer). */
void tu_main_init(int argc, char **argv);
pid_t tu_spawn_worker(const char *const *args, int out_fd);
/* Wait for each of `n` workers, however long: every one must exit 0 (a
 * suite's timeout bounds a worker that hangs). */
void tu_workers_join(const pid_t *pids, int n);
/* Run `n` workers of the same `args` at once, and join them so. */
void tu_workers_run(const char *const *args, int n);
/* `n` workers of "<kind> <path> <file>" run at once and joined, <file>
 * naming a new tu_shared_new mapping of `size` bytes they share; returns
 * that mapping, to read what they left (the file is gone by then). */
void *tu_workers_run_shared(const char *kind, const char *path, size_t size, int n);
/* A holder that dies holding: runs the suite's holder worker on `path`
 * (tu_holder_main), reads the token it writes, then kills it with SIGKILL
 * and reaps it. Returns the token (> 0). */
int64_t tu_holder_kill(const char *path);
/* The holder worker of a suite whose main() calls this after
 * tu_main_init(); returns at once anywhere else. In that worker: opens a
 * client of a short session (tu_ms(2 s), so that what it holds goes soon
 * after it is killed), has `take` hold on it at the worker's path (returning 0) and
 * give the hold's token, writes the token (an int64_t) to fd 1 and waits to
 * be killed; exits 2 if the client does not open, 3 if `take` fails, 4 if
 * the write does. */
void tu_holder_main(int argc, char **argv,
                    int (*take)(zkl_client *c, const char *path, int64_t *token));
/* A MAP_SHARED mapping of `size` bytes of `file` (created and zeroed if
 * `create`), shared by a suite and its workers; NULL on failure. */
void *tu_map_shared(const char *file, size_t size, int create);
/* A new file for such state, zero-filled and mapped (or the test fails);
 * its name, for the workers, in `file`. */
void *tu_shared_new(char file[64], size_t size);
/* The fixture of the ZooKeeper suites: before each test a raw handle
 * (tu_fixture_zk) and a fresh root path (tu_fixture_root, tu_root(suite));
 * after it the root's tree is deleted and both are released.
 * tu_add_fixture() sets it on a test case; a suite that needs more around
 * it calls tu_fixture_setup_named()/tu_fixture_teardown() from its own. */
extern zhandle_t *tu_fixture_zk;
extern char *tu_fixture_root;
void tu_fixture_setup_named(const char *suite);
void tu_fixture_teardown(void);
void tu_add_fixture(TCase *tc, const char *suite);
/* "<tu_fixture_root>/<leaf>", malloc'd. */
char *tu_path(const char *leaf);
/* An ACL on `path`, set through tu_fixture_zk: everyone gets `perms`, and
 * the identities that handle authenticated as (a digest added to it)
 * everything, so it can still look and clean up. */
void tu_guard_path(const char *path, int perms);
/* What one test makes and needs no more at its end: released after it by
 * the fixture's teardown, in the reverse order of their making (a failed
 * test's process ends at once; its session goes with it). */
void tu_defer(void (*fn)(void *), void *arg);
/* tu_path, freed after the test. */
char *tu_test_path(const char *leaf);
/* tu_client, closed after the test. */
zkl_client *tu_test_client(int session_timeout_ms);
/* A client the test opened its own way, closed after the test; c back. */
zkl_client *tu_test_adopt(zkl_client *c);
/* A mutex on c and path (made, or the test fails), freed after the test. */
zkl_mutex *tu_test_mutex(zkl_client *c, const char *path);
/* tu_test_mutex, acquired (within 10 s, or the test fails). */
zkl_mutex *tu_test_held_mutex(zkl_client *c, const char *path);
/* A mutex held on a client of its own (tu_test_client(10000)): a holder
 * that others queue behind. */
zkl_mutex *tu_test_holder(const char *path);
/* A read-write lock and a semaphore each on a client of its own
 * (tu_test_client(10000)): contenders of separate sessions. */
zkl_rwlock *tu_test_rwlock_apart(const char *path);
zkl_semaphore *tu_test_semaphore_apart(const char *path, int limit);
/* Two mutexes on one path, of two clients, take turns: `first` acquires,
 * `second` cannot at once, and gets the lock with a larger token when
 * `first` lets go (it holds at the end); or the test fails. */
void tu_expect_turns(zkl_mutex *first, zkl_mutex *second);
/* The same for the other recipes. */
zkl_rwlock *tu_test_rwlock(zkl_client *c, const char *path);
zkl_semmutex *tu_test_semmutex(zkl_client *c, const char *path);
zkl_semaphore *tu_test_semaphore(zkl_client *c, const char *path, int limit);
/* Wait until `path` has exactly `want` children; false if it has not
 * within tu_ms(`timeout_ms`). */
bool tu_wait_children(zhandle_t *zh, const char *path, int want, int timeout_ms);
/* Children of `path` whose name contains `part`, and a wait until there
 * are exactly `want` of them (false if not within tu_ms(timeout_ms)). */
int tu_children_named(zhandle_t *zh, const char *path, const char *part);
bool tu_wait_children_named(zhandle_t *zh, const char *path, const char *part, int want,
                            int timeout_ms);
/* The same for `want` children or more: waiters queued behind others. */
bool tu_wait_children_at_least(zhandle_t *zh, const char *path, int want, int timeout_ms);
/* Ephemeral nodes at or below `path` (tu_fixture_zk): contenders, whatever
 * a recipe's layout (a semaphore's node and a multi-lock's member paths are
 * persistent). */
int tu_contenders(const char *path);
/* Delete them, as someone else would; returns how many went. */
int tu_delete_contenders(const char *path);
/* Wait until there are `want` of them (a semaphore's gate node goes a
 * moment after its acquire returns), or more than `base`; or fail the
 * test. */
void tu_expect_contenders(const char *path, int want);
void tu_wait_contenders_above(const char *path, int base);
/* tu_expect_contenders within timeout_ms rather than 10 s. */
void tu_expect_contenders_within(const char *path, int want, int timeout_ms);
/* Whether session `session` has a watch on `path` at any server of
 * tu_hosts() (the four-letter command wchp): a waiter is known to wait
 * once its watch is set, which a listing of the lock path cannot show. */
bool tu_session_watches(const char *path, int64_t session);
/* A server's ("host:port") answer to a four-letter command ("conf",
 * "wchp"), malloc'd; NULL if none. */
char *tu_four_letters(const char *host, const char *cmd);
/* Wait until it does; false if not within `timeout_ms`. */
bool tu_wait_session_watches(const char *path, int64_t session, int timeout_ms);
/* What contenders of one lock share to show that it excludes, threads or
 * processes alike (plain fields: it may live in a tu_map_shared mapping):
 * how many are inside right now, two at once being a violation; a counter
 * each holder reads and writes back non-atomically, right only if holds
 * never overlap; and the holders' tokens, which must rise. */
struct tu_arena {
    int inside;
    int violations;
    long counter;       /* written only under the lock */
    int64_t last_token; /* idem */
    int token_errors;   /* idem */
};
/* A holder comes in, and goes. */
void tu_arena_enter(struct tu_arena *a);
void tu_arena_leave(struct tu_arena *a);
/* A holder's token, to be above the one before. */
void tu_arena_token(struct tu_arena *a, int64_t token);
/* For interop runs whose workers log "ACQ|REL kind id realtime-ns token":
 * CLOCK_REALTIME in ns, comparable across processes on one machine. */
int64_t tu_realtime_ns(void);
/* The integer in `path` (0 if missing or empty), and writing it back: the
 * non-atomic read-modify-write a lock must protect. */
long tu_counter_read(const char *path);
int tu_counter_write(const char *path, long v);
/* How many lines of the file `path` start with `prefix` (0 if it is
 * missing): a worker's log. */
int tu_file_lines(const char *path, const char *prefix);
/* Wait up to tu_ms(timeout_ms) for child `pid`: its exit status (128+signal if
 * killed), or -1 if it is still running, -2 if it is not our child. */
int tu_wait_exit(pid_t pid, int timeout_ms);
/* The Curator worker of the interop tests (tests/interop) compiled once,
 * before a test starts several, and small JVMs for it (ZKL_JAVA_OPTS, if
 * unset: two cores are shared with the server and zkl); or the test
 * fails. */
void tu_curator_worker_build(void);
/* A Suite runner that fails on any failure: main() of every suite. */
int tu_run(Suite *s);
/* A test case with a timeout large enough for ZooKeeper work
 * (timeout_s, stretched by tu_slowdown()). */
TCase *tu_tcase(const char *name, int timeout_s);
/* The main() of a suite of one test case, both named `suite`: the tests of
 * the NULL-terminated list in it, each with the ZooKeeper fixture
 * (tu_add_fixture under the suite's name); run as tu_run does. */
int tu_run_zk_case(const char *suite, int timeout_s, const TTest *const *tests);
/* The same with the suite's own checked fixture, or none (NULL). */
int tu_run_case(const char *suite, int timeout_s, void (*setup)(void), void (*teardown)(void),
                const TTest *const *tests);
/* Adds `test` to `tc` for row i of a suite's table alone (_i in the test),
 * so that its result carries the row's test case name. */
void tu_add_row(TCase *tc, const TTest *test, int i);


/* An acquire of a recipe's generic handle (zkl_mutex_as_lock, ...) in a
 * thread of its own: its code and how long it took, once joined. With
 * `release`, a lock got is released by that thread (a mutex's hold is its
 * thread's), with the code in release_rc. */
struct tu_acquirer {
    zkl_lock *l;
    long timeout_ms;
    bool release;
    int rc, release_rc;
    int64_t took_ms, returned_ms; /* returned_ms: tu_now_ms() then */
    int got; /* set (atomically: tu_acquirer_got) once the acquire returned 0 */
    pthread_t t;
};
void tu_acquirer_start(struct tu_acquirer *a, zkl_lock *l, long timeout_ms, bool release);
/* Join it; its code. */
int tu_acquirer_join(struct tu_acquirer *a);
/* Whether it got the lock (readable while it runs). */
bool tu_acquirer_got(struct tu_acquirer *a);

/* The public token and session-id calls give a value through an out
 * parameter; tests compare the value, or the code, in one expression. */
static inline int64_t tu_value(int rc, const int64_t *v)
{
    return rc != 0 ? rc : *v;
}
/* The wrappers, each the same around its own call. */
#define TU_VALUE_GETTER(name, type, call)                                                          \
    static inline int64_t name(type *o)                                                            \
    {                                                                                              \
        int64_t v = 0;                                                                             \
        int rc = call(o, &v);                                                                      \
        return tu_value(rc, &v);                                                                   \
    }
TU_VALUE_GETTER(tu_mutex_token, zkl_mutex, zkl_mutex_token)
TU_VALUE_GETTER(tu_semmutex_token, zkl_semmutex, zkl_semmutex_token)
TU_VALUE_GETTER(tu_rwlock_read_token, zkl_rwlock, zkl_rwlock_read_token)
TU_VALUE_GETTER(tu_rwlock_write_token, zkl_rwlock, zkl_rwlock_write_token)
TU_VALUE_GETTER(tu_lease_token, zkl_lease, zkl_lease_token)
TU_VALUE_GETTER(tu_client_session_id, zkl_client, zkl_client_session_id)

/* A mutex with prefetch on or off, through the lock options. */
static inline int tu_mutex_new_prefetch(zkl_client *c, const char *path, bool prefetch,
                                        zkl_mutex **out)
{
    zkl_lock_opts *o = NULL;
    int rc = zkl_lock_opts_new(&o);
    if (rc == 0)
        rc = zkl_lock_opts_set_prefetch(o, prefetch ? 1 : 0);
    if (rc == 0)
        rc = zkl_mutex_new_opts(c, path, o, out);
    zkl_lock_opts_free(o);
    return rc;
}

#endif
