/* sim-lib: the real library, as a program links it, against the model of
 * ZooKeeper (docs/simulation.md). Each schedule opens real zkl clients
 * over the model's zapi (tests/sim/zapi_sim.c) with no keeper thread and
 * the virtual clock (util.h: zkl__set_virtual), and runs mutexes and
 * semaphores, semaphore-mutexes and read-write locks through the public
 * asynchronous API: one thread, every step
 * chosen from the seed (a world step, a keeper's round, a dispatch, an
 * acquire, release, cancel or free, a fault), so a seed replays exactly.
 *
 *   SIM_SEED       the first schedule's seed (default 1); schedule k has
 *                  seed SIM_SEED + k
 *   SIM_SCHEDULES  schedules (default 30)
 *   SIM_STEPS      driver steps of each schedule before it settles (4,000)
 *   SIM_TRACE=1    a line per event
 *   SIM_EVENTS     ignored (tests/sim/mutants.sh sets it for sim-locks)
 *
 * The invariants, checked after every step against the leader's tree:
 *   holders   per lock path, the believed holds whose node exists: at most
 *             one of a mutex or the semaphore-mutex, at most SEM_MAX leases
 *             of the semaphore, one
 *             writer and then no reader of the read-write lock;
 *   expired   the leader expires no session of a believed hold, unless a
 *             fault forced it;
 *   told      a believed hold whose node is gone is told (its callback
 *             ZKL_ELOST, zkl_request_is_held 0) by the loss rule's time
 *             from the deletion;
 *   token     a mutex's tokens rise, and a read-write lock's are above
 *             every writer's granted before;
 *   twice     one result per request, a second only ZKL_ELOST for a hold;
 *   deadline  a result comes by the deadline (a try once: a session
 *             timeout) and the failed attempt's grace;
 *   orphan    once every request is freed and the faults end, no node of
 *             a live session of ours is left under a lock path;
 *   replay    the first schedule, run twice, takes the same steps.
 * A violation prints a replay line. Ends with
 *   sim: seed S, E events, N schedules, V violations
 * Exit status 0 without violations, 1 with. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "zapi_sim.h"

#define MS ((int64_t)1000000)
#define NCL 3
#define SEM_MAX 2
#define SLACK (50 * MS) /* a keeper's round comes this late at most */

/* What a request acquires: the mutex, a lease of the semaphore, the
 * read or the write lock of the read-write lock. */
enum { L_MUTEX, L_SEM, L_SEMMUTEX, L_READ, L_WRITE, NLOCKS };
static const char *const lock_paths[NLOCKS] = {"/sim/mutex", "/sim/sem", "/sim/semmutex",
                                               "/sim/rw", "/sim/rw"};
static const char *const lock_names[NLOCKS] = {"mutex", "semaphore", "semaphore-mutex",
                                               "read lock", "write lock"};

struct req {
    struct cl *k;
    int id, lock;
    zkl_request *r;
    long timeout_ms;
    int64_t started, bound; /* its result comes by bound (0: no bound) */
    bool done, held, freed;
    int result;
    char node[256];
    int64_t gone_at;    /* a believed hold's node found gone then */
    zsim_session *sess; /* a hold's session */
    int64_t release_at; /* a hold is released then; a failure freed then */
    struct req *next;
};

struct cl {
    int ix;
    zkl_client *c;
    zkl_mutex *m;
    zkl_semaphore *s;
    zkl_rwlock *rw;
    zkl_semmutex *sm;
    int64_t timer_at;
    bool fd_mode;
};

static struct {
    zsim_world *w;
    uint64_t seed;
    int64_t step, steps;
    bool trace, settling;
    struct cl cl[NCL];
    struct req *reqs;
    int ids;
    int64_t max_token, max_write; /* the mutex's, the write lock's largest */
    uint64_t hash;
    int64_t events;
    uint64_t acquisitions;
    bool violated;
    char vtext[600];
    int64_t link_heal[NCL];
    zsim_session *forced[64]; /* sessions a fault expired */
    int nforced;
} R;

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
    if (!R.trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("[%6" PRId64 " %9.3f] ", R.step, (double)zsim_now(R.w) / 1e9);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

static void violation(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(const char *kind, const char *fmt, ...)
{
    if (R.violated)
        return;
    R.violated = true;
    char text[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(R.vtext, sizeof R.vtext, "(%s) in the schedule of seed %" PRIu64 ", step %" PRId64
             ": %s", kind, R.seed, R.step, text);
}

static void mix(uint64_t x)
{
    R.hash = (R.hash ^ x) * 0x100000001b3u;
}

/* ---- virtual time: the library's clock, waits and randomness --------------------- */

static void world_step(void);

static int64_t v_now(void *arg)
{
    (void)arg;
    return zsim_now(R.w);
}

/* A wait (the open's, for its first session): the world goes on meanwhile. */
static int v_wait(void *arg, pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline)
{
    (void)arg;
    (void)cv;
    if (zsim_now(R.w) >= deadline)
        return ETIMEDOUT;
    pthread_mutex_unlock(mu);
    world_step();
    pthread_mutex_lock(mu);
    return zsim_now(R.w) >= deadline ? ETIMEDOUT : 0;
}

static void v_random(void *arg, void *buf, size_t size)
{
    (void)arg;
    unsigned char *p = buf;
    for (size_t i = 0; i < size; i++)
        p[i] = (unsigned char)zsim_rand(R.w);
}

static const struct zkl__virtual virt = {v_now, v_wait, v_random, NULL};

/* ---- the world and the keepers --------------------------------------------------- */

static void world_step(void)
{
    const struct zsim_item *it;
    int rc = zsim_step(R.w, &it);
    R.events++;
    if (rc != 1 || it->kind == ZSIM_TIMER)
        return; /* a keeper's timer: every keeper runs after each step */
    mix((uint64_t)it->kind << 56 ^ it->tag << 8 ^ (uint64_t)(uint32_t)it->rc ^
        (uint64_t)zsim_now(R.w) << 20 ^ (uint64_t)zsim_session_index(it->session) << 40);
    trace("item %s s%d tag %" PRIu64 " rc %s %s%s", it->kind == ZSIM_ANSWER ? "answer"
          : it->kind == ZSIM_WATCH ? "watch" : "session", zsim_session_index(it->session),
          it->tag, zsim_rc_name(it->rc),
          it->kind == ZSIM_SESSION ? zsim_state_name(it->state) : "",
          it->kind == ZSIM_WATCH ? it->path : "");
    zapi_sim_item(it);
}

/* The keeper's rounds until it waits, and a timer for when it wakes. */
static void keeper(struct cl *k)
{
    zkl_client *c = k->c;
    int64_t wake = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < 1000; i++) {
        int r = zkl__keeper_step(c, &wake);
        if (r < 0)
            wake = 0;
        if (r <= 0)
            break;
    }
    pthread_mutex_unlock(&c->mu);
    if (k->fd_mode)
        (void)zkl_client_dispatch(c);
    if (wake != 0 && wake != k->timer_at && wake > zsim_now(R.w)) {
        trace("client %d: the keeper wakes at %.3f", k->ix, (double)wake / 1e9);
        zsim_timer(R.w, NULL, wake, (uint64_t)k->ix + 1);
        k->timer_at = wake;
    }
}

static zsim_session *session_of(struct cl *k)
{
    /* The handle the client uses now: the model's session behind it. */
    return k->c->zh != NULL ? zapi_sim_session(k->c->zh) : NULL;
}

/* ---- requests --------------------------------------------------------------------- */

static void check_expired(const struct req *q);

static void on_result(zkl_request *r, int result, void *arg)
{
    (void)r;
    struct req *q = arg;
    int64_t now = zsim_now(R.w);
    mix((uint64_t)q->id << 32 ^ (uint32_t)result);
    trace("client %d: request %d (%s): result %s", q->k->ix, q->id, lock_names[q->lock],
          zkl_strerror(result));
    if (q->done) {
        if (result != ZKL_ELOST || q->result != 0)
            violation("twice", "request %d: a second result %s after %s", q->id,
                      zkl_strerror(result), zkl_strerror(q->result));
        q->held = false; /* told */
        return;
    }
    q->done = true;
    q->result = result;
    if (q->bound != 0 && now > q->bound)
        violation("deadline", "request %d (timeout %ld ms) ended %.3f s after its start, bound "
                  "%.3f s", q->id, q->timeout_ms, (double)(now - q->started) / 1e9,
                  (double)(q->bound - q->started) / 1e9);
    if (result != 0) {
        q->release_at = now;
        return;
    }
    R.acquisitions++;
    q->held = true;
    q->sess = session_of(q->k);
    const char *node = zkl_request_node(q->r);
    snprintf(q->node, sizeof q->node, "%s", node ? node : "");
    int64_t token = 0;
    if (zkl_request_token(q->r, &token) != 0)
        violation("token", "request %d: held, but no token", q->id);
    /* A hold granted on a node already gone (its session expired before
     * the client heard) is in the loss window from the start: its token
     * orders nothing. */
    if (zsim_truth_stat(R.w, q->node, NULL) != ZSIM_OK) {
        q->gone_at = now;
        check_expired(q);
    } else if (q->lock == L_MUTEX) {
        if (token <= R.max_token)
            violation("token", "request %d: token %" PRId64 " not above %" PRId64, q->id, token,
                      R.max_token);
        if (token > R.max_token)
            R.max_token = token;
    } else if (q->lock == L_READ || q->lock == L_WRITE) {
        /* Above every write lock's granted before, a reader's too. */
        if (token <= R.max_write)
            violation("token", "request %d (%s): token %" PRId64 " not above %" PRId64
                      " of a write lock before it", q->id, lock_names[q->lock], token,
                      R.max_write);
        if (q->lock == L_WRITE && token > R.max_write)
            R.max_write = token;
    }
    q->release_at = now + (int64_t)zsim_below(R.w, 3000) * MS;
}

static void start_request(struct cl *k)
{
    int n = 0;
    for (struct req *q = R.reqs; q; q = q->next)
        n += q->k == k;
    if (n >= 3)
        return;
    struct req *q = calloc(1, sizeof *q);
    if (q == NULL)
        abort();
    q->k = k;
    q->id = ++R.ids;
    q->lock = (int)zsim_below(R.w, NLOCKS);
    uint64_t t = zsim_below(R.w, 10);
    q->timeout_ms = t == 0 ? 0 : t == 1 ? -1 : (long)(100 + zsim_below(R.w, 4000));
    q->started = zsim_now(R.w);
    if (q->timeout_ms > 0)
        q->bound = q->started + q->timeout_ms * MS + ZKL__GRACE_NS + SLACK;
    else if (q->timeout_ms == 0)
        q->bound = q->started + (int64_t)k->c->timeout_ms * MS + ZKL__GRACE_NS + SLACK;
    int rc = ZKL_EINVAL;
    switch (q->lock) {
    case L_MUTEX:
        rc = zkl_mutex_acquire_async(k->m, q->timeout_ms, on_result, q, &q->r);
        break;
    case L_SEM:
        rc = zkl_semaphore_acquire_async(k->s, q->timeout_ms, on_result, q, &q->r);
        break;
    case L_SEMMUTEX:
        rc = zkl_semmutex_acquire_async(k->sm, q->timeout_ms, on_result, q, &q->r);
        break;
    case L_READ:
        rc = zkl_rwlock_read_acquire_async(k->rw, q->timeout_ms, on_result, q, &q->r);
        break;
    case L_WRITE:
        rc = zkl_rwlock_write_acquire_async(k->rw, q->timeout_ms, on_result, q, &q->r);
        break;
    }
    mix((uint64_t)q->id << 32 ^ (uint32_t)rc ^ 0x5a5a);
    trace("client %d: request %d on the %s, timeout %ld ms: %s", k->ix, q->id, lock_names[q->lock],
          q->timeout_ms, zkl_strerror(rc));
    if (rc != 0) {
        free(q);
        return;
    }
    q->next = R.reqs;
    R.reqs = q;
}

static void free_request(struct req *q)
{
    trace("client %d: request %d freed", q->k->ix, q->id);
    q->held = false;
    q->freed = true;
    zkl_request_free(q->r);
    for (struct req **p = &R.reqs; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    free(q);
}

/* What the program does with its requests now: release holds whose time
 * came, free what ended, now and then cancel or free a pending one. */
static void tend_requests(bool all)
{
    int64_t now = zsim_now(R.w);
    for (struct req *q = R.reqs, *next; q; q = next) {
        next = q->next;
        if (q->done && q->result == 0 && (all || now >= q->release_at)) {
            q->held = false; /* the release call ends the belief */
            int rc = zkl_request_release(q->r);
            trace("client %d: request %d released: %s", q->k->ix, q->id, zkl_strerror(rc));
            free_request(q);
        } else if (q->done && (all || now >= q->release_at)) {
            free_request(q);
        } else if (!q->done && all) {
            free_request(q);
        } else if (!q->done && zsim_below(R.w, 2000) == 0) {
            int rc = zkl_request_cancel(q->r);
            trace("client %d: request %d cancelled: %s", q->k->ix, q->id, zkl_strerror(rc));
        } else if (!q->done && zsim_below(R.w, 4000) == 0) {
            free_request(q);
        }
    }
}

/* ---- faults ---------------------------------------------------------------------- */

static void fault(void)
{
    struct cl *k = &R.cl[zsim_below(R.w, NCL)];
    zsim_session *s = session_of(k);
    if (s == NULL)
        return;
    switch (zsim_below(R.w, 4)) {
    case 0:
        trace("fault: client %d's connection drops", k->ix);
        zsim_drop(s, -1, -1);
        break;
    case 1:
        trace("fault: client %d's session expires", k->ix);
        if (R.nforced < (int)(sizeof R.forced / sizeof R.forced[0]))
            R.forced[R.nforced++] = s;
        else
            break; /* no more: the expired check would not know it forced */
        zsim_expire(s);
        break;
    case 2:
        if (R.link_heal[k->ix] == 0) {
            trace("fault: client %d's link goes silent", k->ix);
            zsim_link(s, false);
            R.link_heal[k->ix] = zsim_now(R.w) + (int64_t)zsim_below(R.w, 8000) * MS;
        }
        break;
    case 3:
        trace("fault: a follower is cut off for a while");
        zsim_partition(R.w, 1 + (int)zsim_below(R.w, 2), true);
        break;
    }
}

static void heal(bool all)
{
    int64_t now = zsim_now(R.w);
    for (int i = 0; i < NCL; i++)
        if (R.link_heal[i] != 0 && (all || now >= R.link_heal[i])) {
            zsim_session *s = session_of(&R.cl[i]);
            if (s != NULL)
                zsim_link(s, true);
            R.link_heal[i] = 0;
        }
    if (all || zsim_below(R.w, 3000) == 0)
        for (int sv = 1; sv < 3; sv++)
            zsim_partition(R.w, sv, false);
}

/* ---- the invariants --------------------------------------------------------------- */

/* A believed hold's node is gone: not by its session's expiry, unless a
 * fault forced that (the loss rule presumes the loss before the earliest
 * expiry). */
static void check_expired(const struct req *q)
{
    if (q->sess == NULL || zsim_session_alive(q->sess))
        return;
    for (int i = 0; i < R.nforced; i++)
        if (R.forced[i] == q->sess)
            return;
    violation("expired", "request %d: the leader expired its session while its hold was "
              "believed (node %s)", q->id, q->node);
}

static void check(void)
{
    int64_t now = zsim_now(R.w);
    int live[NLOCKS] = {0};
    for (struct req *q = R.reqs; q; q = q->next) {
        if (!q->done && q->bound != 0 && now > q->bound)
            violation("deadline", "request %d (timeout %ld ms) has no result %.3f s after its "
                      "start", q->id, q->timeout_ms, (double)(now - q->started) / 1e9);
        if (!q->held)
            continue;
        if (!zkl_request_is_held(q->r)) {
            q->held = false; /* told: the library says it holds no more */
            continue;
        }
        if (q->gone_at == 0 && zsim_truth_stat(R.w, q->node, NULL) != ZSIM_OK) {
            q->gone_at = now;
            trace("the leader has no node %s of request %d, believed held", q->node, q->id);
            check_expired(q);
        }
        if (q->gone_at == 0) {
            live[q->lock]++;
            continue;
        }
        zkl_client *c = q->k->c;
        int t = c->negotiated_ms > 0 ? c->negotiated_ms : c->timeout_ms;
        if (now > q->gone_at + zkl__loss_after_ns(t) + SLACK)
            violation("told", "request %d: its node %s is gone since %.3f s, still believed held",
                      q->id, q->node, (double)q->gone_at / 1e9);
    }
    if (live[L_MUTEX] > 1)
        violation("holders", "%d holders of the mutex %s", live[L_MUTEX], lock_paths[L_MUTEX]);
    if (live[L_SEM] > SEM_MAX)
        violation("holders", "%d leases of the semaphore %s (at most %d)", live[L_SEM],
                  lock_paths[L_SEM], SEM_MAX);
    if (live[L_SEMMUTEX] > 1)
        violation("holders", "%d holders of the semaphore-mutex %s", live[L_SEMMUTEX],
                  lock_paths[L_SEMMUTEX]);
    if (live[L_WRITE] > 1 || (live[L_WRITE] > 0 && live[L_READ] > 0))
        violation("holders", "%d writers and %d readers hold %s", live[L_WRITE], live[L_READ],
                  lock_paths[L_WRITE]);
}

struct orphan_arg {
    const char *path;
    int found;
    char name[440];
};

static void orphan_child(void *arg, const char *name)
{
    struct orphan_arg *o = arg;
    char path[400];
    snprintf(path, sizeof path, "%s/%s", o->path, name);
    struct zsim_stat st;
    if (zsim_truth_stat(R.w, path, &st) != ZSIM_OK || st.ephemeralOwner == 0)
        return;
    for (int i = 0; i < NCL; i++) {
        zsim_session *s = session_of(&R.cl[i]);
        if (s != NULL && zsim_session_alive(s) && zsim_session_id(s) == st.ephemeralOwner) {
            o->found++;
            snprintf(o->name, sizeof o->name, "%s (client %d)", path, i);
        }
    }
}

static void check_orphans(void)
{
    for (int l = 0; l < L_WRITE; l++) {
        struct orphan_arg o = {lock_paths[l], 0, ""};
        zsim_truth_children(R.w, lock_paths[l], orphan_child, &o);
        if (o.found > 0)
            violation("orphan", "%d nodes of live sessions left under %s, such as %s", o.found,
                      lock_paths[l], o.name);
    }
}

/* ---- one schedule ----------------------------------------------------------------- */

static void one_step(void)
{
    uint64_t r = zsim_below(R.w, 1000);
    if (!R.settling && r < 40)
        start_request(&R.cl[zsim_below(R.w, NCL)]);
    else if (!R.settling && r < 43)
        fault();
    else
        world_step();
    heal(false);
    for (int i = 0; i < NCL; i++)
        keeper(&R.cl[i]);
    tend_requests(false);
    check();
}

static int open_client(struct cl *k, int ix)
{
    k->ix = ix;
    zkl_client_opts *o;
    if (zkl_client_opts_new(&o) != 0)
        return -1;
    zkl__client_opts_set_zapi(o, &zapi_sim);
    zkl__client_opts_set_no_keeper(o, 1);
    int rc = zkl_client_opts_set_lost_requests(o, 1);
    if (rc == 0)
        rc = zkl_client_opts_set_connect_timeout(o, 60000);
    if (rc == 0)
        rc = zkl_client_open_opts("127.0.0.1:2181", 6000 + 2000 * ix, o, &k->c);
    zkl_client_opts_free(o);
    if (rc != 0) {
        fprintf(stderr, "sim: client %d: zkl_client_open: %s\n", ix, zkl_strerror(rc));
        return -1;
    }
    k->fd_mode = ix == 0; /* one client delivers by descriptor and dispatch */
    int fd;
    if (k->fd_mode && zkl_client_event_fd(k->c, &fd) != 0)
        return -1;
    if (zkl_mutex_new(k->c, lock_paths[L_MUTEX], &k->m) != 0 ||
        zkl_semaphore_new(k->c, lock_paths[L_SEM], SEM_MAX, &k->s) != 0 ||
        zkl_rwlock_new(k->c, lock_paths[L_READ], &k->rw) != 0 ||
        zkl_semmutex_new(k->c, lock_paths[L_SEMMUTEX], &k->sm) != 0)
        return -1;
    return 0;
}

/* Runs the schedule of `seed`: 1 on a violation (R.vtext), 0 if none; the
 * hash of its steps in *hash. */
static int run(uint64_t seed, int64_t steps, bool tr, uint64_t *hash)
{
    memset(&R, 0, sizeof R);
    R.seed = seed;
    R.steps = steps;
    R.trace = tr;
    R.hash = 0xcbf29ce484222325u;
    struct zsim_config cfg;
    zsim_config_default(&cfg);
    cfg.seed = seed;
    if (zsim_world_new(&cfg, &R.w) != 0)
        abort();
    zapi_sim_begin(R.w);
    zkl__set_virtual(&virt);
    for (int i = 0; i < NCL; i++)
        if (open_client(&R.cl[i], i) != 0) {
            violation("open", "client %d could not open", i);
            goto end;
        }
    for (R.step = 0; R.step < steps && !R.violated; R.step++)
        one_step();
    /* Settle: the faults end, every request is freed, time goes on. */
    R.settling = true;
    heal(true);
    tend_requests(true);
    int64_t until = zsim_now(R.w) + 30000 * MS;
    while (!R.violated && zsim_now(R.w) < until) {
        one_step();
        R.step++;
    }
    if (!R.violated)
        check_orphans();
end:
    while (R.reqs)
        free_request(R.reqs);
    for (int i = 0; i < NCL; i++) {
        struct cl *k = &R.cl[i];
        if (k->c == NULL)
            continue;
        zkl_mutex_free(k->m);
        zkl_semaphore_free(k->s);
        zkl_rwlock_free(k->rw);
        zkl_semmutex_free(k->sm);
        zkl_client_close(k->c);
    }
    zkl__set_virtual(NULL);
    zapi_sim_end();
    zsim_world_free(R.w);
    *hash = R.hash;
    return R.violated;
}

static long long env_num(const char *name, long long dflt)
{
    const char *s = getenv(name);
    return s && *s ? strtoll(s, NULL, 0) : dflt;
}

int main(void)
{
    uint64_t seed = (uint64_t)env_num("SIM_SEED", 1);
    long long schedules = env_num("SIM_SCHEDULES", 30);
    int64_t steps = env_num("SIM_STEPS", 4000);
    bool tr = env_num("SIM_TRACE", 0) != 0;
    int violations = 0;
    long long done = 0;
    int64_t events = 0;
    uint64_t acq = 0;
    for (long long k = 0; k < schedules && violations == 0; k++) {
        uint64_t h1, h2;
        int bad = run(seed + (uint64_t)k, steps, tr, &h1);
        events += R.events;
        acq += R.acquisitions;
        done++;
        if (!bad && k == 0) {
            /* The same seed again, in the same process (other addresses,
             * other client ids): the same steps. */
            bad = run(seed, steps, false, &h2);
            if (!bad && h1 != h2) {
                bad = 1;
                snprintf(R.vtext, sizeof R.vtext, "(replay) the schedule of seed %" PRIu64
                         " took other steps when run again", seed);
            }
        }
        if (bad) {
            violations++;
            printf("sim: VIOLATION %s\n", R.vtext);
            printf("sim: replay: SIM_SEED=%" PRIu64 " SIM_SCHEDULES=1 SIM_TRACE=1 "
                   "tests/sim/sim-lib\n", seed + (uint64_t)k);
        }
    }
    fprintf(stderr, "sim-lib: %" PRIu64 " acquisitions\n", acq);
    printf("sim: seed %" PRIu64 ", %" PRId64 " events, %lld schedules, %d violations\n", seed,
           events, done, violations);
    return violations > 0;
}
