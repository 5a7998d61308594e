/* The multi-lock: several locks behind generic handles, taken all or
 * nothing, in one canonical order, within one deadline.
 *
 * Members are the leaves: a nested multi-lock's members are copied in at
 * construction, so every lock is taken at the place of its own key and the
 * order is one total order over all keys. That is what keeps two
 * multi-locks from waiting for each other in a cycle, however they nest
 * (ordering a nested multi-lock as one unit, by its smallest key, would
 * not: {{/a,/c},/b} and {/b,/c} would deadlock). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct zkl_multilock {
    size_t n;
    zkl_lock **m;        /* the members in canonical order; none is a
                            multi-lock handle */
    /* Made by zkl_multilock_new: these mutexes and their handles are ours. */
    zkl_mutex **mutexes;
    zkl_lock **handles;
    size_t owned;
    /* Per-thread hold counts of the multi-lock itself (nodes unused): the
     * hold is the thread's, so another thread's release cannot release a
     * per-object member (a semaphore-mutex) under the holder's feet. */
    zkl__owners owners;
};

static int ml_acquire(void *self, long timeout_ms);

static bool is_multilock_handle(const zkl_lock *l)
{
    return l->ops.acquire == ml_acquire;
}

static const char *key_of(const zkl_lock *l)
{
    return l->ops.path(l->self);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(key_of(*(zkl_lock *const *)a), key_of(*(zkl_lock *const *)b));
}

static int build(zkl_lock *const *locks, size_t n, zkl_multilock **out)
{
    if (locks == NULL || out == NULL || n == 0)
        return ZKL_EINVAL;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (locks[i] == NULL)
            return ZKL_EINVAL;
        if (is_multilock_handle(locks[i])) {
            total += ((zkl_multilock *)locks[i]->self)->n;
        } else {
            const char *k = key_of(locks[i]);
            if (k == NULL || *k == '\0')
                return ZKL_EINVAL;
            total++;
        }
    }
    zkl_multilock *ml = calloc(1, sizeof *ml);
    if (ml == NULL)
        return ZKL_ENOMEM;
    if ((ml->m = calloc(total, sizeof *ml->m)) == NULL) {
        free(ml);
        return ZKL_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_multilock_handle(locks[i])) {
            const zkl_multilock *in = locks[i]->self;
            memcpy(ml->m + k, in->m, in->n * sizeof *ml->m);
            k += in->n;
        } else {
            ml->m[k++] = locks[i];
        }
    }
    ml->n = total;
    qsort(ml->m, total, sizeof *ml->m, by_key);
    /* Equal keys name one lock twice: a thread would wait for itself. */
    for (size_t i = 1; i < total; i++) {
        if (strcmp(key_of(ml->m[i - 1]), key_of(ml->m[i])) == 0) {
            free(ml->m);
            free(ml);
            return ZKL_EINVAL;
        }
    }
    if (zkl__owners_init(&ml->owners) != 0) {
        free(ml->m);
        free(ml);
        return ZKL_ESYS;
    }
    if (zkl__obj_open(NULL, ml) != 0) {
        zkl__owners_destroy(&ml->owners);
        free(ml->m);
        free(ml);
        return ZKL_ENOMEM;
    }
    *out = ml;
    return 0;
}

int zkl_multilock_new_locks(zkl_lock *const *locks, size_t n, zkl_multilock **out)
{
    return build(locks, n, out);
}

static void free_owned(zkl_mutex **mutexes, zkl_lock **handles, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        zkl_lock_free(handles[i]);
        zkl_mutex_free(mutexes[i]);
    }
    free(handles);
    free(mutexes);
}

int zkl_multilock_new(zkl_client *c, const char *const *paths, size_t n,
                      zkl_multilock **out)
{
    if (c == NULL || paths == NULL || out == NULL || n == 0)
        return ZKL_EINVAL;
    zkl_mutex **mutexes = calloc(n, sizeof *mutexes);
    zkl_lock **handles = calloc(n, sizeof *handles);
    if (mutexes == NULL || handles == NULL) {
        free(mutexes);
        free(handles);
        return ZKL_ENOMEM;
    }
    /* Mutexes send nothing until acquired, so a failure here (a bad or a
     * repeated path included) leaves nothing on the server. */
    int rc = 0;
    size_t made = 0;
    for (; made < n && rc == 0; made++) {
        rc = zkl_mutex_new(c, paths[made], &mutexes[made]);
        if (rc == 0 && (rc = zkl_mutex_as_lock(mutexes[made], &handles[made])) != 0)
            zkl_mutex_free(mutexes[made]);
        if (rc != 0)
            mutexes[made] = NULL;
    }
    zkl_multilock *ml = NULL;
    if (rc == 0)
        rc = build(handles, n, &ml);
    if (rc != 0) {
        free_owned(mutexes, handles, made);
        return rc;
    }
    ml->mutexes = mutexes;
    ml->handles = handles;
    ml->owned = n;
    *out = ml;
    return 0;
}

/* What is left of the call's one deadline, in the milliseconds a member's
 * acquire takes. Rounded up, so a member never gets less than what is left;
 * after the deadline a member is tried once without waiting. */
static long remaining_ms(long timeout_ms, int64_t deadline)
{
    if (timeout_ms < 0)
        return ZKL_WAIT_FOREVER;
    int64_t left = deadline - zkl__now_ns();
    if (left <= 0)
        return 0;
    int64_t ms = left / 1000000 + (left % 1000000 != 0);
    return ms > LONG_MAX ? LONG_MAX : (long)ms;
}

static bool all_held(zkl_multilock *ml)
{
    for (size_t i = 0; i < ml->n; i++)
        if (!ml->m[i]->ops.is_held(ml->m[i]->self))
            return false;
    return true;
}

/* Release every member, newest first, past failures; the first error. */
static int release_all(zkl_multilock *ml)
{
    int first = 0;
    for (size_t i = ml->n; i-- > 0;) {
        int rc = ml->m[i]->ops.release(ml->m[i]->self);
        if (rc != 0 && first == 0)
            first = rc;
    }
    return first;
}

/* The calling thread's record. Only the thread itself adds or removes its
 * record, so the pointer stays valid after the mutex is dropped. */
static zkl__hold *my_hold(zkl_multilock *ml)
{
    pthread_mutex_lock(&ml->owners.mu);
    zkl__hold *h = zkl__owners_mine(&ml->owners);
    pthread_mutex_unlock(&ml->owners.mu);
    return h;
}

static int zkl_multilock_acquire_unguarded(zkl_multilock *ml, long timeout_ms)
{
    if (ml == NULL)
        return ZKL_EINVAL;
    int64_t deadline = zkl__deadline(timeout_ms);
    zkl__hold *h = my_hold(ml);
    if (h != NULL) {
        /* Reentry: no member is touched, but none may be entered unless
         * every member is sure to be held. Members are asked without our
         * mutex held: their own locks are never taken inside ours. */
        if (!all_held(ml))
            return ZKL_ELOST;
        pthread_mutex_lock(&ml->owners.mu);
        h->count++;
        pthread_mutex_unlock(&ml->owners.mu);
        return 0;
    }
    size_t got = 0;
    int rc = 0;
    for (; got < ml->n; got++) {
        zkl_lock *l = ml->m[got];
        if ((rc = l->ops.acquire(l->self, remaining_ms(timeout_ms, deadline))) != 0)
            break;
    }
    if (rc == 0) {
        pthread_mutex_lock(&ml->owners.mu);
        rc = zkl__owners_add(&ml->owners, NULL);
        pthread_mutex_unlock(&ml->owners.mu);
    }
    if (rc != 0) {
        /* All or nothing: undo what this call took, newest first. Each
         * member's own acquire already removed its node if it failed. */
        while (got > 0) {
            got--;
            (void)ml->m[got]->ops.release(ml->m[got]->self);
        }
    }
    return rc;
}

int zkl_multilock_release(zkl_multilock *ml)
{
    if (ml == NULL)
        return ZKL_EINVAL;
    zkl__hold *h = my_hold(ml);
    if (h == NULL)
        return ZKL_ENOTHELD;
    /* Inner releases only count, whatever the members say: a member's
     * is_held may answer 0 while the connection is merely down (the
     * semaphore-mutex does), and ending the hold then would drop locks
     * that the outer levels of the caller still count on. */
    pthread_mutex_lock(&ml->owners.mu);
    bool last = h->count <= 1;
    if (last)
        zkl__owners_remove(&ml->owners, h);
    else
        h->count--;
    pthread_mutex_unlock(&ml->owners.mu);
    /* The last one releases every member, whatever fails on the way. */
    return last ? release_all(ml) : 0;
}

int zkl_multilock_is_held(zkl_multilock *ml)
{
    if (ml == NULL)
        return 0;
    return my_hold(ml) != NULL && all_held(ml);
}

void zkl_multilock_free(zkl_multilock *ml)
{
    if (ml == NULL)
        return;
    zkl__obj_close(ml, "zkl_multilock_free");
    /* Best effort for the calling thread; other threads' holds of owned
     * mutexes go with zkl_mutex_free. */
    if (my_hold(ml) != NULL)
        (void)release_all(ml);
    zkl__owners_destroy(&ml->owners);
    free_owned(ml->mutexes, ml->handles, ml->owned);
    free(ml->m);
    free(ml);
}

/* ---- the multi-lock as a generic lock ------------------------------------ */

static int ml_acquire(void *self, long timeout_ms)
{
    return zkl_multilock_acquire(self, timeout_ms);
}

static int ml_release(void *self)
{
    return zkl_multilock_release(self);
}

static int ml_is_held(void *self)
{
    return zkl_multilock_is_held(self);
}

static const char *ml_path(void *self)
{
    /* The smallest key: members are sorted. */
    zkl_multilock *ml = self;
    return key_of(ml->m[0]);
}

static const zkl_lock_ops multilock_ops = {
    .version = ZKL_LOCK_OPS_VERSION,
    .acquire = ml_acquire,
    .release = ml_release,
    .is_held = ml_is_held,
    .path = ml_path,
};

int zkl_multilock_as_lock(zkl_multilock *ml, zkl_lock **out)
{
    if (ml == NULL)
        return ZKL_EINVAL;
    return zkl_lock_new(&multilock_ops, ml, out);
}

/* ---- misuse checks (lib/guard.c) ----------------------------------------- */

int zkl_multilock_acquire(zkl_multilock *ml, long timeout_ms)
{
    if (ml == NULL)
        return ZKL_EINVAL;
    zkl__obj_enter(ml, "zkl_multilock_acquire"); /* a free meanwhile aborts, naming it */
    int rc = zkl_multilock_acquire_unguarded(ml, timeout_ms);
    zkl__obj_leave(ml);
    return rc;
}
