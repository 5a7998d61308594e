/* The multi-lock: several locks behind generic handles, taken all or
 * nothing, in one canonical order, within one deadline.
 *
 * Members are the leaves: a nested multi-lock's members are copied in at
 * construction, so every lock is taken at the place of its own key and the
 * order is one total order over all keys. That is what keeps two
 * multi-locks from waiting for each other in a cycle, however they nest
 * (ordering a nested multi-lock as one unit, by its smallest key, would
 * not: {{/a,/c},/b} and {/b,/c} would deadlock). */
#include <stdlib.h>
#include <string.h>

#include "kit.h"

struct zkl_multilock {
    size_t n;
    zkl_lock **m;        /* the members in canonical order; none is a
                            multi-lock handle */
    /* Made by zkl_multilock_new: these mutexes and their handles are ours. */
    zkl_mutex **mutexes;
    zkl_lock **handles;
    size_t owned;
    /* Per-thread hold counts of the multi-lock itself (no nodes): the
     * hold is the thread's, so another thread's release cannot release a
     * per-object member (a semaphore-mutex) under the holder's feet. */
    zkl__owner own;
    zkl__holds holds;
};

static int multilock_acquire(void *self, long timeout_ms); /* its handles' (ZKL__LOCK_OPS) */

static bool is_multilock_handle(const zkl_lock *l)
{
    return l->ops.acquire == multilock_acquire;
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
    int rc = zkl__owner_open(&ml->own, NULL, ml, NULL, NULL, false);
    if (rc != 0) {
        free(ml->m);
        free(ml);
        return rc;
    }
    zkl__holds_init(&ml->holds, &ml->own, 0);
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

int zkl_multilock_new_opts(zkl_client *c, const char *const *paths, size_t n,
                           const zkl_lock_opts *opts, zkl_multilock **out)
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
        rc = zkl_mutex_new_opts(c, paths[made], opts, &mutexes[made]);
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

int zkl_multilock_new(zkl_client *c, const char *const *paths, size_t n,
                      zkl_multilock **out)
{
    return zkl_multilock_new_opts(c, paths, n, NULL, out);
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

/* One member's acquire; with a cancel handle, a zkl recipe's cancellable
 * one (as its public call), and the caller's own lock only if the handle
 * has not fired. */
static int member_acquire(zkl_lock *l, long timeout_ms, zkl_cancel *h)
{
    if (h == NULL)
        return l->ops.acquire(l->self, timeout_ms);
    if (l->with != NULL)
        return zkl__kit_obj_acquire_cancellable(l->self, l->with_name, l->with, timeout_ms, h);
    return zkl_cancel_is_fired(h) ? ZKL_ECANCELED : l->ops.acquire(l->self, timeout_ms);
}

static int acquire_with(void *self, long timeout_ms, zkl_cancel *ch)
{
    zkl_multilock *ml = self;
    for (size_t i = 0; i < ml->n; i++) /* a child of fork(): as its members */
        if (ml->m[i]->c != NULL && zkl__kit_forked(ml->m[i]->c))
            return ZKL_EFORK;
    int64_t deadline = zkl__deadline(timeout_ms);
    zkl__hold *h = zkl__holds_find(&ml->holds);
    if (h != NULL) {
        /* Reentry: no member is touched, but none may be entered unless
         * every member is sure to be held. Members are asked without our
         * mutex held: their own locks are never taken inside ours. */
        if (!all_held(ml))
            return ZKL_ELOST;
        zkl__holds_enter(&ml->holds, h);
        return 0;
    }
    /* The record before the members: once they hold, only a member may
     * fail, and giving members back can be refused (below). */
    zkl__hold *rec = zkl__holds_new();
    if (rec == NULL)
        return ZKL_ENOMEM;
    size_t got = 0;
    int rc = 0;
    for (; got < ml->n; got++) {
        zkl_lock *l = ml->m[got];
        /* What is left of the call's one deadline: after it, a member is
         * tried once without waiting. */
        long left = zkl__remaining_ms(timeout_ms, deadline, zkl__now_ns());
        if ((rc = member_acquire(l, left, ch)) != 0)
            break;
    }
    if (rc == 0) {
        zkl__holds_add(&ml->holds, rec, NULL);
        return 0;
    }
    free(rec);
    /* All or nothing: undo what this call took, newest first. Each
     * member's own acquire already removed its node if it failed. */
    int first = rc, kept = 0;
    const char *kept_path = NULL;
    while (got > 0) {
        zkl_lock *l = ml->m[--got];
        int r = l->ops.release(l->self);
        /* A release the server refused (an ACL without DELETE) keeps the
         * member held, as its own release says: the caller must know, or
         * it would never let that member go. */
        if (r != 0 && l->ops.is_held(l->self) && kept == 0) {
            kept = r;
            kept_path = l->ops.path(l->self);
        }
    }
    if (kept != 0) {
        zkl__detail("the acquire failed (%s), and giving back %s failed too (%s): that "
                    "member stays held by this thread until its own release succeeds "
                    "or the client closes",
                    zkl_err_name(first), kept_path, zkl_err_name(kept));
        rc = kept;
    }
    return rc;
}

int zkl_multilock_release(zkl_multilock *ml)
{
    if (ml == NULL)
        return ZKL_EINVAL;
    zkl__hold *h = zkl__holds_find(&ml->holds);
    if (h == NULL)
        return ZKL_ENOTHELD;
    /* Inner releases only count, whatever the members say: a member's
     * is_held may answer 0 while the connection is merely down (the
     * semaphore-mutex does), and ending the hold then would drop locks
     * that the outer levels of the caller still count on. */
    bool last = zkl__holds_leave(&ml->holds, h);
    /* The last one releases every member, whatever fails on the way. */
    return last ? release_all(ml) : 0;
}

int zkl_multilock_is_held(zkl_multilock *ml)
{
    if (ml == NULL)
        return 0;
    return zkl__holds_find(&ml->holds) != NULL && all_held(ml);
}

void zkl_multilock_free(zkl_multilock *ml)
{
    if (ml == NULL)
        return;
    zkl__kit_obj_close(ml, "zkl_multilock_free");
    /* Best effort for the calling thread; other threads' holds of owned
     * mutexes go with zkl_mutex_free. */
    if (zkl__holds_find(&ml->holds) != NULL)
        (void)release_all(ml);
    zkl__holds_drop_all(&ml->holds); /* other threads' counts */
    zkl__owner_done(&ml->own);
    free_owned(ml->mutexes, ml->handles, ml->owned);
    free(ml->m);
    free(ml);
}

/* ---- the multi-lock as a generic lock ------------------------------------ */

static const char *ml_path(void *self)
{
    /* The smallest key: members are sorted. */
    zkl_multilock *ml = self;
    return key_of(ml->m[0]);
}

ZKL__LOCK_OPS(multilock, zkl_multilock_acquire, zkl_multilock_release, zkl_multilock_is_held,
              ml_path);

int zkl_multilock_as_lock(zkl_multilock *ml, zkl_lock **out)
{
    return ml == NULL ? ZKL_EINVAL : zkl_lock_new(&multilock_ops, ml, out);
}

/* ---- misuse checks (lib/front/objects.c) ------------------------------------- */

int zkl_multilock_acquire(zkl_multilock *ml, long timeout_ms)
{
    return zkl__kit_obj_acquire(ml, "zkl_multilock_acquire", acquire_with, timeout_ms);
}

int zkl_multilock_acquire_cancellable(zkl_multilock *ml, long timeout_ms, zkl_cancel *h)
{
    return zkl__kit_obj_acquire_cancellable(ml, "zkl_multilock_acquire_cancellable", acquire_with,
                                        timeout_ms, h);
}

/* ---- asynchronous acquire ------------------------------------------------- */

/* The members' queues, copied: the request outlives the multi-lock. Each
 * member's node is made once the one before it holds, so the order is the
 * blocking acquire's (lib/front/async.c keeps the held ones). */
struct ml_step {
    zkl_client *c;
    size_t n, cur; /* members; the one whose node the request waits on */
    char **dirs;
    const zkl__policy **pols;
    bool *prefetch;
    char **idents; /* NULL entries: the client's */
};

static void ml_step_free(void *ctx)
{
    struct ml_step *st = ctx;
    for (size_t i = 0; i < st->n; i++) {
        free(st->dirs[i]);
        if (st->idents)
            free(st->idents[i]);
    }
    free(st->idents);
    free(st->dirs);
    free(st->pols);
    free(st->prefetch);
    free(st);
}

static int ml_held(void *ctx, zkl_request *r, zkl__node *n, zkl__node **next, bool *counted)
{
    (void)n;
    struct ml_step *st = ctx;
    if (++st->cur == st->n)
        return 0; /* the last member holds: all do */
    zkl__qopts o = {.prefetch = st->prefetch[st->cur], .ident = st->idents[st->cur]};
    int rc = zkl__kit_async_enqueue(r, st->dirs[st->cur], st->pols[st->cur], &o, next);
    if (rc != 0)
        *counted = true; /* the enqueue counted it, on its own path */
    return rc;
}

static const zkl__async_step ml_steps = {ml_held, ml_step_free, true};

static int start_async(zkl_multilock *ml, long timeout_ms, zkl_request_fn fn, void *arg,
                       zkl_request **out)
{
    zkl_client *c = ml->m[0]->c;
    for (size_t i = 0; i < ml->n; i++)
        if (ml->m[i]->pol == NULL || ml->m[i]->c != c)
            return ZKL_EINVAL; /* only blocks, or on another client */
    if (fn == NULL || out == NULL)
        return ZKL_EINVAL;
    struct ml_step *st = calloc(1, sizeof *st);
    if (st == NULL)
        return ZKL_ENOMEM;
    st->c = c;
    st->n = ml->n;
    st->dirs = calloc(ml->n, sizeof *st->dirs);
    st->pols = calloc(ml->n, sizeof *st->pols);
    st->prefetch = calloc(ml->n, sizeof *st->prefetch);
    st->idents = calloc(ml->n, sizeof *st->idents);
    bool ok = st->dirs && st->pols && st->prefetch && st->idents;
    for (size_t i = 0; ok && i < ml->n; i++) {
        ok = (st->dirs[i] = strdup(ml->m[i]->dir)) != NULL &&
             (ml->m[i]->ident == NULL || (st->idents[i] = strdup(ml->m[i]->ident)) != NULL);
        st->pols[i] = ml->m[i]->pol;
        st->prefetch[i] = ml->m[i]->prefetch;
    }
    if (!ok) {
        if (st->dirs == NULL)
            st->n = 0;
        ml_step_free(st);
        return ZKL_ENOMEM;
    }
    zkl__qopts o = {.prefetch = st->prefetch[0], .ident = st->idents[0]};
    int rc = zkl__kit_async_start_steps(c, st->dirs[0], st->pols[0], &o, timeout_ms, &ml_steps, st,
                                    ml->n, fn, arg, out);
    if (rc != 0)
        ml_step_free(st);
    return rc;
}

int zkl_multilock_acquire_async(zkl_multilock *ml, long timeout_ms, zkl_request_fn fn, void *arg,
                                zkl_request **out)
{
    if (ml == NULL)
        return ZKL_EINVAL;
    zkl__kit_obj_enter(ml, "zkl_multilock_acquire_async");
    int rc = start_async(ml, timeout_ms, fn, arg, out);
    zkl__kit_obj_leave(ml);
    return rc;
}
