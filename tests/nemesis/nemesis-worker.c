/* A lock worker for the nemesis (tests/nemesis/nemesis.py): one process, one
 * zkl client, one recipe, a few threads that take the lock again and again,
 * write through fencing tokens to a store that refuses stale tokens, and log
 * every step as one JSON line.
 *
 *   nemesis-worker --kind K --servers S --paths P[,P2] --log L --store-dir D
 *                  --name W [--threads N] [--stop-file F] [--hold-ms MS]
 *                  [--session-ms MS] [--sem-max N] [--uid U] [--long-hold-ms MS]
 *
 * --long-hold-ms: each hold lasts that long more, with a fenced write every
 * 250 ms, and ends early once the lost callback reported it (a holder that
 * partitions and pauses hit while it holds and works).
 *
 * Kinds: mutex, prefetch (zkl_mutex_new_opts with prefetch on), semmutex,
 * sem (one lease of a semaphore of --sem-max leases), read, write (the two
 * sides of a read-write lock), multi (a multi-lock of one mutex per path),
 * elect (a candidate of an election: a zkl_latch per leadership, joined,
 * awaited, led with fenced writes, then closed; "acq" is a leadership, its
 * token the latch's, "lost" the listener's 0 before the close).
 *
 * A latch's close says nothing of whether it led to the end, so before it
 * the worker proves it on a ZooKeeper handle of its own: a sync, then a
 * listing on that connection in which its node (by its token) still leads. Its "rel" then has rc 0 and the time of just before
 * the sync: the node existed after that instant, so no later leader can
 * have begun before it. A leadership it cannot prove ends with rc
 * ZKL_ELOST, as a lock release that found the hold lost.
 * One more kind is not a worker but the command that `zkl lock` runs:
 *   nemesis-worker --kind cli-hold --paths P --log L --store-dir D --name W
 * takes its token from $ZKL_FENCING_TOKEN, logs acq, writes, sleeps, logs
 * rel and exits 0; on SIGTERM (zkl stopping it: the lock is presumed lost)
 * it logs lost and exits 1.
 *
 * Log lines (CLOCK_REALTIME ns, one write(2) each to an O_APPEND file):
 *   {"t":T,"w":W,"pid":P,"th":I,"ev":"acq","kind":K,"path":P,"tok":N}
 *   {... "ev":"write","path":P,"tok":N,"rc":R}    R: 0 accepted, 1 refused
 *   {... "ev":"read","path":P,"tok":N,"fence":F}  a reader saw the store
 *   {... "ev":"rel","tok":N,"rc":R,"done":D}      T: just before the release
 *                                                 call; R: what it returned, D:
 *                                                 when
 *   {... "ev":"lost","tok":N}                     the lost callback ran
 *   {... "ev":"fail","op":O,"rc":R}               an acquire failed
 *   {... "ev":"state","state":S,"sid":X}          the client's state changed
 *                                                 (enum zkl_state)
 * A multi-lock hold logs one acq/write per member path (tokens of its
 * member mutexes) and one rel per member with the multi-lock's result.
 *
 * The worker stops when the stop file exists: every thread releases what
 * it holds and the client is closed, so nothing of it stays on the server. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fenced_store.h"
#include "zkl.h"
#include "zkl/zookeeper.h"

#define MAXP 4


/* The public calls give these values through an out parameter; this
 * worker logs the value, or the negative code, as one number. */
#define VALUE_OF(name, type)                                                     \
    static int64_t value_of_##name(type *o)                                      \
    {                                                                            \
        int64_t v = 0;                                                           \
        int rc = zkl_##name(o, &v);                                              \
        return rc != 0 ? rc : v;                                                 \
    }
VALUE_OF(client_session_id, zkl_client)
VALUE_OF(lease_token, zkl_lease)
VALUE_OF(mutex_token, zkl_mutex)
VALUE_OF(rwlock_read_token, zkl_rwlock)
VALUE_OF(rwlock_write_token, zkl_rwlock)
VALUE_OF(semmutex_token, zkl_semmutex)

static struct {
    const char *kind, *servers, *log, *store_dir, *name, *stop;
    char *paths[MAXP];
    int npaths, threads, hold_ms, long_hold_ms, session_ms, sem_max, uid;
} o = {.threads = 1, .hold_ms = 50, .session_ms = 4000, .sem_max = 3, .uid = -1};

/* Tokens the lost callback reported, so that a long hold stops at once. */
static pthread_mutex_t lost_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t lost_toks[64];
static unsigned lost_n;

static void note_lost(int64_t tok)
{
    pthread_mutex_lock(&lost_mu);
    lost_toks[lost_n++ % 64] = tok;
    pthread_mutex_unlock(&lost_mu);
}

static int was_lost(int64_t tok)
{
    int r = 0;
    pthread_mutex_lock(&lost_mu);
    for (unsigned i = 0; i < 64 && i < lost_n; i++)
        r |= lost_toks[i] == tok;
    pthread_mutex_unlock(&lost_mu);
    return r;
}

static int log_fd = -1;
static zkl_client *client;
static zkl_mutex *mutexes[MAXP];
static zkl_semmutex *semmutex;
static zkl_semaphore *sem;
static zkl_rwlock *rw;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One JSON line: the common fields, then `fmt` (",\"k\":v..."). */
static void logj(int64_t t, int th, const char *ev, const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "{\"t\":%" PRId64 ",\"w\":\"%s\",\"pid\":%ld,\"th\":%d,"
                     "\"ev\":\"%s\"", t, o.name, (long)getpid(), th, ev);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    n += snprintf(line + n, sizeof line - (size_t)n, "}\n");
    if (n > 0 && (size_t)n < sizeof line && write(log_fd, line, (size_t)n) != n)
        _exit(3);
}

/* The store of a lock path: its path with '/' turned into '_'. */
static void store_of(const char *path, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/", o.store_dir);
    for (const char *p = path; *p && (size_t)n + 1 < len; p++)
        out[n++] = *p == '/' ? '_' : *p;
    out[n] = '\0';
    if ((size_t)n + 7 < len)
        strcat(out, ".store");
}

static void fenced_write(int th, const char *path, int64_t tok)
{
    char store[1024], who[64];
    store_of(path, store, sizeof store);
    snprintf(who, sizeof who, "%s/%d", o.name, th);
    int rc = fenced_store_write(store, tok, who, "w");
    logj(now_ns(), th, "write", ",\"path\":\"%s\",\"tok\":%" PRId64 ",\"rc\":%d", path, tok, rc);
}

static void fenced_read(int th, const char *path, int64_t tok)
{
    char store[1024];
    store_of(path, store, sizeof store);
    int64_t f = fenced_store_fence(store);
    logj(now_ns(), th, "read", ",\"path\":\"%s\",\"tok\":%" PRId64 ",\"fence\":%" PRId64, path,
         tok, f);
}

static int stopping(void)
{
    return o.stop && access(o.stop, F_OK) == 0;
}

/* ---- lost callbacks ------------------------------------------------------ */

static void on_mutex_lost(zkl_mutex *m, int64_t tok, void *arg)
{
    (void)m, (void)arg;
    logj(now_ns(), -1, "lost", ",\"tok\":%" PRId64, tok);
    note_lost(tok);
}

static void on_semmutex_lost(zkl_semmutex *s, int64_t tok, void *arg)
{
    (void)s, (void)arg;
    logj(now_ns(), -1, "lost", ",\"tok\":%" PRId64, tok);
    note_lost(tok);
}

static void on_sem_lost(zkl_semaphore *s, int64_t tok, void *arg)
{
    (void)s, (void)arg;
    logj(now_ns(), -1, "lost", ",\"tok\":%" PRId64, tok);
    note_lost(tok);
}

static void on_rw_lost(zkl_rwlock *l, int write, int64_t tok, void *arg)
{
    (void)l, (void)arg, (void)write;
    logj(now_ns(), -1, "lost", ",\"tok\":%" PRId64, tok);
    note_lost(tok);
}

/* Session states, so the history shows suspensions, expiries and reopens. */
static void on_state(zkl_client *c, enum zkl_state st, void *arg)
{
    (void)arg;
    logj(now_ns(), -1, "state", ",\"state\":%d,\"sid\":\"%llx\"", st,
         (unsigned long long)value_of_client_session_id(c));
}

/* ---- one hold of each kind -------------------------------------------------- */

static unsigned seed_of(int th)
{
    return (unsigned)getpid() * 2654435761u + (unsigned)th;
}

static void hold_pause(unsigned *rs)
{
    sleep_ms(o.hold_ms / 2 + (long)(rand_r(rs) % (unsigned)(o.hold_ms + 1)));
}

static void log_acq(int th, const char *path, int64_t tok)
{
    logj(now_ns(), th, "acq", ",\"kind\":\"%s\",\"path\":\"%s\",\"tok\":%" PRId64, o.kind, path,
         tok);
}

/* t: just before the release call; "done": when it returned (for a release
 * that found the hold lost, the moment the worker learnt it). */
static void log_rel(int64_t t, int th, int64_t tok, int rc)
{
    logj(t, th, "rel", ",\"tok\":%" PRId64 ",\"rc\":%d,\"done\":%" PRId64, tok, rc, now_ns());
}

static void *run(void *arg)
{
    int th = (int)(intptr_t)arg;
    unsigned rs = seed_of(th);
    zkl_multilock *ml = NULL;
    zkl_lock *handles[MAXP] = {0};
    if (!strcmp(o.kind, "multi")) {
        for (int i = 0; i < o.npaths; i++)
            if (zkl_mutex_as_lock(mutexes[i], &handles[i]) != 0)
                _exit(4);
        if (zkl_multilock_new_locks(handles, (size_t)o.npaths, &ml) != 0)
            _exit(4);
    }
    const char *p0 = o.paths[0];
    while (!stopping()) {
        int rc;
        int64_t tok = 0, t;
        zkl_lease *lease = NULL;
        const char *k = o.kind;
        if (!strcmp(k, "mutex") || !strcmp(k, "prefetch"))
            rc = zkl_mutex_acquire(mutexes[0], 10000);
        else if (!strcmp(k, "semmutex"))
            rc = zkl_semmutex_acquire(semmutex, 10000);
        else if (!strcmp(k, "sem"))
            rc = zkl_semaphore_acquire(sem, 10000, &lease);
        else if (!strcmp(k, "read"))
            rc = zkl_rwlock_read_acquire(rw, 10000);
        else if (!strcmp(k, "write"))
            rc = zkl_rwlock_write_acquire(rw, 10000);
        else
            rc = zkl_multilock_acquire(ml, 10000);
        if (rc != 0) {
            logj(now_ns(), th, "fail", ",\"op\":\"acquire\",\"rc\":%d", rc);
            if (rc != ZKL_ETIMEDOUT)
                sleep_ms(100);
            continue;
        }
        if (!strcmp(k, "multi")) {
            int64_t toks[MAXP];
            for (int i = 0; i < o.npaths; i++) {
                toks[i] = value_of_mutex_token(mutexes[i]);
                log_acq(th, o.paths[i], toks[i]);
            }
            for (int i = 0; i < o.npaths; i++)
                fenced_write(th, o.paths[i], toks[i]);
            hold_pause(&rs);
            for (int i = 0; i < o.npaths; i++)
                fenced_write(th, o.paths[i], toks[i]);
            t = now_ns();
            rc = zkl_multilock_release(ml);
            for (int i = 0; i < o.npaths; i++)
                log_rel(t, th, toks[i], rc);
            continue;
        }
        if (!strcmp(k, "mutex") || !strcmp(k, "prefetch"))
            tok = value_of_mutex_token(mutexes[0]);
        else if (!strcmp(k, "semmutex"))
            tok = value_of_semmutex_token(semmutex);
        else if (!strcmp(k, "sem"))
            tok = value_of_lease_token(lease);
        else if (!strcmp(k, "read"))
            tok = value_of_rwlock_read_token(rw);
        else
            tok = value_of_rwlock_write_token(rw);
        log_acq(th, p0, tok);
        int excl = strcmp(k, "sem") && strcmp(k, "read");
        if (excl)
            fenced_write(th, p0, tok);
        if (o.long_hold_ms > 0) {
            /* A long hold: a fenced write every 250 ms, until its end or
             * until the lost callback reports this hold. */
            for (int ms = 0; ms < o.long_hold_ms && !was_lost(tok) && !stopping(); ms += 50) {
                sleep_ms(50);
                if (excl && ms % 250 == 200)
                    fenced_write(th, p0, tok);
            }
        }
        hold_pause(&rs);
        if (excl)
            fenced_write(th, p0, tok);
        else if (!strcmp(k, "read"))
            fenced_read(th, p0, tok);
        t = now_ns();
        if (!strcmp(k, "mutex") || !strcmp(k, "prefetch"))
            rc = zkl_mutex_release(mutexes[0]);
        else if (!strcmp(k, "semmutex"))
            rc = zkl_semmutex_release(semmutex);
        else if (!strcmp(k, "sem"))
            rc = zkl_lease_release(lease);
        else if (!strcmp(k, "read"))
            rc = zkl_rwlock_read_release(rw);
        else
            rc = zkl_rwlock_write_release(rw);
        log_rel(t, th, tok, rc);
    }
    zkl_multilock_free(ml);
    for (int i = 0; i < MAXP; i++)
        zkl_lock_free(handles[i]);
    return NULL;
}

/* ---- elections ------------------------------------------------------------- */

/* A leadership's state, shared with the latch's listener. */
struct lead {
    pthread_mutex_t mu;
    int64_t tok;  /* the leadership's token, once known; 0: none */
    int closing;  /* the worker closes the latch: its 0 is no loss */
};

static void on_leader(zkl_latch *l, int leader, void *arg)
{
    (void)l;
    struct lead *ld = arg;
    pthread_mutex_lock(&ld->mu);
    int64_t tok = ld->closing ? 0 : ld->tok;
    pthread_mutex_unlock(&ld->mu);
    if (!leader && tok != 0) {
        logj(now_ns(), -1, "lost", ",\"tok\":%" PRId64, tok);
        note_lost(tok);
    }
}

struct sync_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, rc;
};

static void synced(int rc, const char *value, const void *data)
{
    (void)value;
    struct sync_wait *w = (struct sync_wait *)data;
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    w->rc = rc;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* The election's prover: a handle of its own (the client's may be closed
 * and replaced at any moment), one check at a time. */
static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static zhandle_t *probe;

/* The key Curator orders latch children by: after the last "latch-". */
static const char *latch_key(const char *name)
{
    const char *k = name;
    for (const char *p = strstr(name, "latch-"); p != NULL; p = strstr(p + 1, "latch-"))
        k = p + 6;
    return k;
}

/* 0 if, after a sync sent now, a listing of `path` on the same connection
 * shows the node of token `tok` (its czxid) first; else -1. */
static int still_leads(const char *path, int64_t tok)
{
    pthread_mutex_lock(&probe_mu);
    if (probe != NULL && zoo_state(probe) == ZOO_EXPIRED_SESSION_STATE) {
        zookeeper_close(probe);
        probe = NULL;
    }
    if (probe == NULL)
        probe = zookeeper_init(o.servers, NULL, o.session_ms, NULL, NULL, 0);
    int ok = -1;
    /* Freed only once answered: a late answer must find it. */
    struct sync_wait *w = calloc(1, sizeof *w);
    if (probe == NULL || w == NULL) {
        free(w);
        goto out;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (zoo_async(probe, path, synced, w) != ZOK) {
        free(w);
        goto out;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&w->mu);
    while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
        ;
    int done = w->done, rc = w->rc;
    pthread_mutex_unlock(&w->mu);
    if (!done)
        goto out; /* w stays for the answer that may yet come */
    free(w);
    struct String_vector kids = {0, NULL};
    if (rc != ZOK || zoo_get_children(probe, path, 0, &kids) != ZOK)
        goto out;
    const char *first = NULL;
    for (int i = 0; i < kids.count; i++)
        if (first == NULL || strcmp(latch_key(kids.data[i]), latch_key(first)) < 0)
            first = kids.data[i];
    char full[1024];
    struct Stat st;
    if (first != NULL && snprintf(full, sizeof full, "%s/%s", path, first) < (int)sizeof full &&
        zoo_exists(probe, full, 0, &st) == ZOK && st.czxid == tok)
        ok = 0;
    deallocate_String_vector(&kids);
out:
    pthread_mutex_unlock(&probe_mu);
    return ok;
}

static void *run_elect(void *arg)
{
    int th = (int)(intptr_t)arg;
    unsigned rs = seed_of(th);
    const char *p0 = o.paths[0];
    char id[64];
    snprintf(id, sizeof id, "%s/%d", o.name, th);
    while (!stopping()) {
        struct lead ld = {.mu = PTHREAD_MUTEX_INITIALIZER};
        zkl_latch *l = NULL;
        int rc = zkl_latch_new(client, p0, id, &l);
        if (rc == 0)
            rc = zkl_latch_set_listener(l, on_leader, &ld);
        if (rc == 0)
            rc = zkl_latch_start(l);
        if (rc == 0)
            rc = zkl_latch_await(l, 10000);
        int64_t tok = 0;
        if (rc == 0)
            rc = zkl_latch_token(l, &tok);
        if (rc != 0) {
            logj(now_ns(), th, "fail", ",\"op\":\"acquire\",\"rc\":%d", rc);
            zkl_latch_free(l);
            if (rc != ZKL_ETIMEDOUT)
                sleep_ms(100);
            continue;
        }
        pthread_mutex_lock(&ld.mu);
        ld.tok = tok;
        pthread_mutex_unlock(&ld.mu);
        log_acq(th, p0, tok);
        fenced_write(th, p0, tok);
        for (int ms = 0; ms < o.long_hold_ms && !was_lost(tok) && !stopping(); ms += 50) {
            sleep_ms(50);
            if (ms % 250 == 200)
                fenced_write(th, p0, tok);
        }
        hold_pause(&rs);
        fenced_write(th, p0, tok);
        int64_t t = now_ns();
        rc = still_leads(p0, tok) == 0 ? 0 : ZKL_ELOST;
        pthread_mutex_lock(&ld.mu);
        ld.closing = 1;
        pthread_mutex_unlock(&ld.mu);
        zkl_latch_free(l);
        log_rel(t, th, tok, rc);
    }
    return NULL;
}

/* ---- the command of `zkl lock` ---------------------------------------------- */

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
    (void)sig;
    got_term = 1;
}

static int cli_hold(void)
{
    const char *e = getenv("ZKL_FENCING_TOKEN");
    if (e == NULL)
        return 2;
    int64_t tok = strtoll(e, NULL, 10);
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    log_acq(0, o.paths[0], tok);
    fenced_write(0, o.paths[0], tok);
    /* Sleep in small steps so that SIGTERM is seen at once. */
    for (int i = 0; i < o.hold_ms && !got_term; i += 5)
        sleep_ms(5);
    if (got_term) {
        logj(now_ns(), 0, "lost", ",\"tok\":%" PRId64, tok);
        return 1;
    }
    fenced_write(0, o.paths[0], tok);
    log_rel(now_ns(), 0, tok, 0);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: nemesis-worker --kind K --servers S --paths P[,P] --log L "
                    "--store-dir D --name W [--threads N] [--stop-file F] [--hold-ms MS] "
                    "[--session-ms MS] [--sem-max N] [--uid U]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    char *paths = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--kind"))
            o.kind = v;
        else if (!strcmp(k, "--servers"))
            o.servers = v;
        else if (!strcmp(k, "--paths"))
            paths = strdup(v);
        else if (!strcmp(k, "--log"))
            o.log = v;
        else if (!strcmp(k, "--store-dir"))
            o.store_dir = v;
        else if (!strcmp(k, "--name"))
            o.name = v;
        else if (!strcmp(k, "--stop-file"))
            o.stop = v;
        else if (!strcmp(k, "--threads"))
            o.threads = atoi(v);
        else if (!strcmp(k, "--hold-ms"))
            o.hold_ms = atoi(v);
        else if (!strcmp(k, "--long-hold-ms"))
            o.long_hold_ms = atoi(v);
        else if (!strcmp(k, "--session-ms"))
            o.session_ms = atoi(v);
        else if (!strcmp(k, "--sem-max"))
            o.sem_max = atoi(v);
        else if (!strcmp(k, "--uid"))
            o.uid = atoi(v);
        else
            usage();
    }
    if (!o.kind || !paths || !o.log || !o.store_dir || !o.name || o.threads < 1 || o.threads > 16)
        usage();
    for (char *s = strtok(paths, ","); s && o.npaths < MAXP; s = strtok(NULL, ","))
        o.paths[o.npaths++] = s;
    log_fd = open(o.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (log_fd < 0)
        return 3;
    /* A uid of its own: the nemesis cuts this worker's connections by it. */
    if (o.uid >= 0 && (setgid((gid_t)o.uid) != 0 || setuid((uid_t)o.uid) != 0))
        return 3;
    if (!strcmp(o.kind, "cli-hold"))
        return cli_hold();
    if (!o.servers)
        usage();
    int rc = zkl_client_open(o.servers, o.session_ms, &client);
    for (int i = 0; rc != 0 && i < 100 && !stopping(); i++) {
        sleep_ms(200); /* started during a fault: try again */
        rc = zkl_client_open(o.servers, o.session_ms, &client);
    }
    if (rc != 0) {
        logj(now_ns(), -1, "fail", ",\"op\":\"open\",\"rc\":%d", rc);
        return 1;
    }
    zkl_client_add_listener(client, on_state, NULL);
    const char *k = o.kind;
    if (!strcmp(k, "mutex") || !strcmp(k, "prefetch") || !strcmp(k, "multi")) {
        int n = strcmp(k, "multi") ? 1 : o.npaths;
        for (int i = 0; i < n; i++) {
            zkl_lock_opts *lo = NULL;
            rc = zkl_lock_opts_new(&lo);
            if (rc == 0)
                rc = zkl_lock_opts_set_prefetch(lo, strcmp(k, "prefetch") == 0);
            if (rc == 0)
                rc = zkl_mutex_new_opts(client, o.paths[i], lo, &mutexes[i]);
            zkl_lock_opts_free(lo);
            if (rc == 0)
                rc = zkl_mutex_set_lost_fn(mutexes[i], on_mutex_lost, NULL);
            if (rc != 0)
                break;
        }
    } else if (!strcmp(k, "semmutex")) {
        if ((rc = zkl_semmutex_new(client, o.paths[0], &semmutex)) == 0)
            rc = zkl_semmutex_set_lost_fn(semmutex, on_semmutex_lost, NULL);
    } else if (!strcmp(k, "sem")) {
        rc = ZKL_ELOST;
        for (int i = 0; i < 100 && rc != 0 && rc != ZKL_EMISMATCH && !stopping(); i++) {
            rc = zkl_semaphore_new(client, o.paths[0], o.sem_max, &sem);
            if (rc != 0)
                sleep_ms(200);
        }
        if (rc == 0)
            rc = zkl_semaphore_set_lost_fn(sem, on_sem_lost, NULL);
    } else if (!strcmp(k, "read") || !strcmp(k, "write")) {
        if ((rc = zkl_rwlock_new(client, o.paths[0], &rw)) == 0)
            rc = zkl_rwlock_set_lost_fn(rw, on_rw_lost, NULL);
    } else if (strcmp(k, "elect")) {
        usage();
    }
    if (rc != 0) {
        logj(now_ns(), -1, "fail", ",\"op\":\"new\",\"rc\":%d", rc);
        return 1;
    }
    pthread_t t[16];
    for (int i = 0; i < o.threads; i++)
        pthread_create(&t[i], NULL, strcmp(k, "elect") ? run : run_elect, (void *)(intptr_t)i);
    for (int i = 0; i < o.threads; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < MAXP; i++)
        zkl_mutex_free(mutexes[i]);
    zkl_semmutex_free(semmutex);
    zkl_semaphore_free(sem);
    zkl_rwlock_free(rw);
    if (probe != NULL)
        zookeeper_close(probe);
    zkl_client_close(client);
    logj(now_ns(), -1, "exit", "");
    free(paths);
    return 0;
}
