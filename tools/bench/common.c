/* What every workload of zkl-bench uses: failing loudly, clocks, the
 * process's memory (its heap: meter.c), opening sessions and locks, paths
 * on the server, the clients' counters, threads, and the bracket around a
 * timed part. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

void die(const char *what, int err)
{
    if (err < 0)
        fprintf(stderr, "%s: %s: %s (%s)\n", zkl_bench_prog, what, zkl_strerror(err),
                zkl_err_name(err));
    else
        fprintf(stderr, "%s: %s\n", zkl_bench_prog, what);
    exit(1);
}

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU time of the whole process (every thread: the callers, ZooKeeper's
 * and zkl's), in ns: far steadier than wall time on a busy machine. */
int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL)
        die("out of memory", 0);
    return p;
}

/* A "Field: N kB" (or count) line of /proc/self/status; -1 if missing. */
long proc_status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    char line[256];
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
            v = strtol(line + fl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

zkl_client *open_client_metrics(const struct opts *o, bool metrics)
{
    zkl_client_opts *co;
    int rc = zkl_client_opts_new(&co);
    if (rc != 0)
        die("zkl_client_opts_new", rc);
    if ((rc = zkl_client_opts_set_metrics(co, metrics)) != 0)
        die("zkl_client_opts_set_metrics", rc);
    zkl_client *c;
    rc = zkl_client_open_opts(o->servers, o->session_timeout_ms, co, &c);
    zkl_client_opts_free(co);
    if (rc != 0)
        die("zkl_client_open", rc);
    return c;
}

zkl_client *open_client(const struct opts *o)
{
    return open_client_metrics(o, true);
}

zkl_mutex *new_mutex(zkl_client *c, const char *path, bool prefetch)
{
    zkl_mutex *m;
    zkl_lock_opts *lo;
    int rc = zkl_lock_opts_new(&lo);
    if (rc == 0)
        rc = zkl_lock_opts_set_prefetch(lo, prefetch);
    if (rc == 0)
        rc = zkl_mutex_new_opts(c, path, lo, &m);
    zkl_lock_opts_free(lo);
    if (rc != 0)
        die("zkl_mutex_new_opts", rc);
    return m;
}

/* Create `path` and its ancestors as plain persistent nodes. */
void ensure_path(zhandle_t *zh, const char *path)
{
    char *p = strdup(path);
    if (p == NULL)
        die("out of memory", 0);
    for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
        if (s)
            *s = '\0';
        int rc = zoo_create(zh, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        if (rc != ZOK && rc != ZNODEEXISTS) {
            fprintf(stderr, "%s: create %s: %s\n", zkl_bench_prog, p, zerror(rc));
            exit(1);
        }
        if (!s)
            break;
        *s = '/';
    }
    free(p);
}

void delete_tree(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &kids);
    if (rc == ZNONODE)
        return;
    if (rc == ZOK) {
        for (int i = 0; i < kids.count; i++) {
            char child[2048];
            snprintf(child, sizeof child, "%s/%s", path, kids.data[i]);
            delete_tree(zh, child);
        }
        deallocate_String_vector(&kids);
    }
    rc = zoo_delete(zh, path, -1);
    if (rc != ZOK && rc != ZNONODE)
        fprintf(stderr, "%s: delete %s: %s\n", zkl_bench_prog, path, zerror(rc));
}

zhandle_t *borrow_or_die(zkl_client *c)
{
    zhandle_t *zh = NULL;
    int rc = zkl_client_handle_borrow(c, &zh);
    if (rc != 0)
        die("zkl_client_handle_borrow", rc);
    return zh;
}

void client_ensure_path(zkl_client *c, const char *path)
{
    zhandle_t *zh = borrow_or_die(c);
    ensure_path(zh, path);
    zkl_client_handle_return(c, zh);
}

void client_delete_tree(zkl_client *c, const char *path)
{
    zhandle_t *zh = borrow_or_die(c);
    delete_tree(zh, path);
    zkl_client_handle_return(c, zh);
}

void stats_add(zkl_client_stats *sum, const zkl_client_stats *a, int sign)
{
    sum->requests += (uint64_t)sign * a->requests;
    sum->creates += (uint64_t)sign * a->creates;
    sum->deletes += (uint64_t)sign * a->deletes;
    sum->listings += (uint64_t)sign * a->listings;
    sum->watch_events += (uint64_t)sign * a->watch_events;
    sum->sessions += (uint64_t)sign * a->sessions;
}

void stats_sum(zkl_client **cs, int n, zkl_client_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++) {
        zkl_client_stats s;
        if (zkl_client_get_stats(cs[i], &s) == 0)
            stats_add(out, &s, 1);
    }
}

void start_thread(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stack);
    int rc = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    if (rc != 0)
        die("pthread_create failed (raise ulimit -u?)", 0);
}

void run_begin(struct run *r, zkl_client_stats *before)
{
    if (r->cs)
        stats_sum(r->cs, r->ncs, before);
    if (r->meter)
        meter_begin(r->meter);
}

void run_end(struct run *r, const zkl_client_stats *before, struct result *res)
{
    if (r->meter)
        meter_end(r->meter);
    if (r->cs) {
        stats_sum(r->cs, r->ncs, &res->delta);
        stats_add(&res->delta, before, -1);
        res->has_delta = true;
    }
}
