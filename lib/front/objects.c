/* Lock objects' lifetimes: a table of the open ones, with the calls in
 * progress through each. Misuse the header forbids (freeing an object
 * while another thread still calls through it, a call through an object
 * already freed, freeing twice) stops the process with a message naming
 * it, instead of running on into freed memory. And a client closed while
 * objects are still open keeps its memory until the last of them goes, so
 * freeing them after the close is safe. */
#include <stdio.h>
#include <stdlib.h>

#include "front.h"

struct entry {
    const void *obj;
    int users; /* calls in progress through obj */
    zkl_client *c;          /* the object's client, or NULL */
    pthread_mutex_t *mu;    /* the object's own mutex, or NULL */
    struct entry *next;
};

/* Chained hash table of the open objects, grown as it fills so that a
 * lookup stays O(1) with a hundred thousand locks open; guarded by g_mu. */
#define MIN_BUCKETS 1024
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry **table;
static size_t nbuckets, nentries;

static size_t hash(const void *obj)
{
    uintptr_t h = (uintptr_t)obj;
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15u;
    return (size_t)(h >> 20);
}

static struct entry **slot(const void *obj)
{
    if (table == NULL)
        return NULL;
    struct entry **p = &table[hash(obj) & (nbuckets - 1)];
    while (*p && (*p)->obj != obj)
        p = &(*p)->next;
    return p;
}

/* The entry of obj, NULL if it is not open. */
static struct entry *find(const void *obj)
{
    struct entry **p = slot(obj);
    return p ? *p : NULL;
}

/* Double the table (or make the first) once it averages two entries a
 * bucket. A failed allocation keeps the old table: slower, still right. */
static void grow(void)
{
    if (table != NULL && nentries < 2 * nbuckets)
        return;
    size_t n = table ? 2 * nbuckets : MIN_BUCKETS;
    struct entry **t = calloc(n, sizeof *t);
    if (t == NULL)
        return;
    for (size_t i = 0; i < nbuckets; i++) {
        while (table[i]) {
            struct entry *e = table[i];
            table[i] = e->next;
            size_t k = hash(e->obj) & (n - 1);
            e->next = t[k];
            t[k] = e;
        }
    }
    free(table);
    table = t;
    nbuckets = n;
}

static void die(const char *fn, const char *what)
{
    fprintf(stderr, "zkl: %s: %s\n", fn, what);
    fflush(stderr); /* stderr may have been made buffered */
    abort();
}

static void die_in_use(const char *fn, int users)
{
    char msg[160];
    snprintf(msg, sizeof msg,
             "the object is still in use by %d call(s) of other threads (e.g. an acquire): "
             "free it only after they returned",
             users);
    die(fn, msg);
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static void fork_hooks(void)
{
    zkl__fork_set_hooks(fork_prepare, fork_parent, fork_child);
}

void zkl__front_fork_watch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fork_hooks);
    zkl__fork_watch();
}

int zkl__obj_open(zkl_client *c, const void *obj)
{
    if (c != NULL && zkl__forked(c))
        return ZKL_EFORK;
    zkl__front_fork_watch(); /* before the first object is in the table */
    struct entry *e = malloc(sizeof *e);
    if (e == NULL)
        return ZKL_ENOMEM;
    e->obj = obj;
    e->users = 0;
    e->c = c;
    e->mu = NULL;
    pthread_mutex_lock(&g_mu);
    grow();
    if (table == NULL) {
        pthread_mutex_unlock(&g_mu);
        free(e);
        return ZKL_ENOMEM;
    }
    struct entry **p = slot(obj);
    e->next = *p; /* *p is NULL: a new object has a new address */
    *p = e;
    nentries++;
    pthread_mutex_unlock(&g_mu);
    if (c != NULL)
        zkl__client_ref(c);
    return 0;
}

void zkl__obj_set_mutex(const void *obj, pthread_mutex_t *mu)
{
    pthread_mutex_lock(&g_mu);
    struct entry *e = find(obj);
    if (e != NULL)
        e->mu = mu;
    pthread_mutex_unlock(&g_mu);
}

void zkl__obj_enter(const void *obj, const char *fn)
{
    pthread_mutex_lock(&g_mu);
    struct entry *e = find(obj);
    if (e == NULL)
        die(fn, "not an open lock object (freed already?)");
    e->users++;
    pthread_mutex_unlock(&g_mu);
}

void zkl__obj_leave(const void *obj)
{
    pthread_mutex_lock(&g_mu);
    struct entry *e = find(obj);
    if (e != NULL)
        e->users--;
    pthread_mutex_unlock(&g_mu);
}

/* `acquire` through the open object obj; a free meanwhile aborts, naming fn. */
static int acquire_in(void *obj, const char *fn, zkl__acquire_fn acquire, long timeout_ms,
                      zkl_cancel *h)
{
    zkl__obj_enter(obj, fn);
    int rc = acquire(obj, timeout_ms, h);
    zkl__obj_leave(obj);
    return rc;
}

int zkl__obj_acquire(void *obj, const char *fn, zkl__acquire_fn acquire, long timeout_ms)
{
    if (obj == NULL)
        return ZKL_EINVAL;
    pthread_mutex_lock(&g_mu);
    struct entry *e = find(obj);
    bool inherited = e != NULL && e->c != NULL && zkl__forked(e->c);
    pthread_mutex_unlock(&g_mu);
    if (inherited)
        return ZKL_EFORK;
    return acquire_in(obj, fn, acquire, timeout_ms, NULL);
}

int zkl__obj_acquire_cancellable(void *obj, const char *fn, zkl__acquire_fn acquire,
                                 long timeout_ms, zkl_cancel *h)
{
    if (obj == NULL)
        return ZKL_EINVAL;
    if (h != NULL && zkl_cancel_is_fired(h))
        return ZKL_ECANCELED;
    return acquire_in(obj, fn, acquire, timeout_ms, h);
}

static void drop(struct entry **p)
{
    struct entry *e = *p;
    *p = e->next;
    free(e);
    if (--nentries == 0) { /* nothing open: nothing kept either */
        free(table);
        table = NULL;
        nbuckets = 0;
    }
}

void zkl__obj_close(const void *obj, const char *fn)
{
    pthread_mutex_lock(&g_mu);
    struct entry **p = slot(obj);
    if (p == NULL || *p == NULL)
        die(fn, "not an open lock object (freed twice?)");
    /* In a child of fork(), the calls in progress are the parent's threads',
     * which the child does not have. */
    if ((*p)->users > 0 && !((*p)->c != NULL && zkl__forked((*p)->c)))
        die_in_use(fn, (*p)->users);
    drop(p);
    pthread_mutex_unlock(&g_mu);
}

size_t zkl__obj_count(void)
{
    pthread_mutex_lock(&g_mu);
    size_t n = nentries;
    pthread_mutex_unlock(&g_mu);
    return n;
}

void zkl__obj_done(zkl_client *c)
{
    if (c != NULL)
        zkl__client_unref(c);
}

/* ---- fork() ---------------------------------------------------------------------
 * The forking thread takes every cancel handle's mutex, the table's and
 * every object's, in the order of the code that nests them (a handle's and
 * the table's alone; an object's before its client's, which
 * lib/session/fork.c takes after these: it calls these hooks). The child,
 * the only thread then, starts them afresh rather than unlock what its
 * parent's thread locked. */

static void each_object_mutex(int (*op)(pthread_mutex_t *mu))
{
    for (size_t i = 0; i < nbuckets; i++)
        for (struct entry *e = table[i]; e; e = e->next)
            if (e->mu != NULL)
                op(e->mu);
}

static int reinit(pthread_mutex_t *mu)
{
    return pthread_mutex_init(mu, NULL);
}

static void fork_prepare(void)
{
    zkl__cancel_fork_prepare();
    pthread_mutex_lock(&g_mu);
    each_object_mutex(pthread_mutex_lock);
}

static void fork_parent(void)
{
    each_object_mutex(pthread_mutex_unlock);
    pthread_mutex_unlock(&g_mu);
    zkl__cancel_fork_parent();
}

static void fork_child(void)
{
    each_object_mutex(reinit);
    pthread_mutex_init(&g_mu, NULL);
    zkl__cancel_fork_child();
}
