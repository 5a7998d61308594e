/* Program threads under a scheduler, one running at a time (sim_threads.h).
 *
 * The baton is `turn`, under one mutex: the index of the thread that may
 * run (SIMT_MAX: a thread that is not a program thread, the scheduler's;
 * a program thread could run others the same way). Whoever gives a
 * program thread the baton is
 * recorded (`back`): the baton returns there when the thread parks or
 * its job ends. Every other thread sleeps on the baton's condition
 * variable meanwhile, so only one thread runs at any time. */
#include <stdlib.h>

#include "sim_threads.h"

enum { IDLE, RUNNING, PARKED };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    int turn;
    struct {
        pthread_t tid;
        int state, back;
        simt_job *fn;
        void *arg;
        pthread_cond_t *wait_cv; /* a parked thread's */
        int64_t deadline;
        bool signalled;
    } t[SIMT_MAX];
} B = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, SIMT_MAX, {{0}}};

static _Thread_local int self = -1;

/* The real functions behind the link's --wrap: the baton's own signals go
 * there directly. */
int __real_pthread_cond_signal(pthread_cond_t *cv);
int __real_pthread_cond_broadcast(pthread_cond_t *cv);
int __wrap_pthread_cond_signal(pthread_cond_t *cv);
int __wrap_pthread_cond_broadcast(pthread_cond_t *cv);
int __real_pthread_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu);
int __wrap_pthread_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu);

/* The scheduler's plain waits on this mutex run this instead (simt_stall). */
static pthread_mutex_t *stall_mu;
static void (*stall_fn)(void);

/* A parked thread whose condition variable is signalled may go on. Only
 * the baton's holder runs, so the parked threads' records are its to
 * read and mark. (A signal marks every thread parked on cv: waking more
 * than one is a spurious wake-up for the others, which POSIX allows.) */
void simt_wake(pthread_cond_t *cv)
{
    for (int i = 0; i < B.n; i++)
        if (B.t[i].state == PARKED && B.t[i].wait_cv == cv)
            B.t[i].signalled = true;
}

int __wrap_pthread_cond_signal(pthread_cond_t *cv)
{
    simt_wake(cv);
    return __real_pthread_cond_signal(cv);
}

int __wrap_pthread_cond_broadcast(pthread_cond_t *cv)
{
    simt_wake(cv);
    return __real_pthread_cond_broadcast(cv);
}

void simt_stall(pthread_mutex_t *mu, void (*fn)(void))
{
    stall_mu = mu;
    stall_fn = fn;
}

int __wrap_pthread_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu)
{
    if (self >= 0 || mu != stall_mu || stall_fn == NULL)
        return __real_pthread_cond_wait(cv, mu);
    /* A wake-up at once, after a step: spurious, as POSIX allows, and the
     * caller's loop looks at its condition again. */
    pthread_mutex_unlock(mu);
    stall_fn();
    pthread_mutex_lock(mu);
    return 0;
}

static int me(void)
{
    return self >= 0 ? self : SIMT_MAX;
}

/* With B.mu held: give the baton to `to`, and wait until it comes back to
 * the caller (`from`). */
static void hand(int from, int to)
{
    B.turn = to;
    __real_pthread_cond_broadcast(&B.cv);
    while (B.turn != from)
        pthread_cond_wait(&B.cv, &B.mu);
}

static void *program_thread(void *arg)
{
    self = (int)(intptr_t)arg;
    pthread_mutex_lock(&B.mu);
    for (;;) {
        while (B.turn != self)
            pthread_cond_wait(&B.cv, &B.mu);
        simt_job *fn = B.t[self].fn;
        void *a = B.t[self].arg;
        pthread_mutex_unlock(&B.mu);
        fn(a);
        pthread_mutex_lock(&B.mu);
        B.t[self].state = IDLE;
        B.t[self].fn = NULL;
        B.turn = B.t[self].back;
        __real_pthread_cond_broadcast(&B.cv);
    }
    return NULL;
}

void simt_init(int n)
{
    if (n > SIMT_MAX)
        abort();
    pthread_mutex_lock(&B.mu);
    for (; B.n < n; B.n++) {
        B.t[B.n].state = IDLE;
        if (pthread_create(&B.t[B.n].tid, NULL, program_thread, (void *)(intptr_t)B.n) != 0)
            abort(); /* a test tool: no thread, no run */
    }
    pthread_mutex_unlock(&B.mu);
}

int simt_self(void)
{
    return self;
}

bool simt_busy(int t)
{
    return B.t[t].state != IDLE;
}

bool simt_parked(int t)
{
    return B.t[t].state == PARKED;
}

bool simt_ready(int t, int64_t now)
{
    return B.t[t].state == PARKED && (B.t[t].signalled || now >= B.t[t].deadline);
}

int64_t simt_deadline(int t)
{
    return B.t[t].deadline;
}

void simt_start(int t, simt_job *fn, void *arg)
{
    pthread_mutex_lock(&B.mu);
    if (B.t[t].state != IDLE || t == self)
        abort();
    B.t[t].state = RUNNING;
    B.t[t].fn = fn;
    B.t[t].arg = arg;
    B.t[t].back = me();
    hand(me(), t);
    pthread_mutex_unlock(&B.mu);
}

void simt_resume(int t)
{
    pthread_mutex_lock(&B.mu);
    if (B.t[t].state != PARKED)
        abort();
    B.t[t].state = RUNNING;
    B.t[t].back = me();
    hand(me(), t);
    pthread_mutex_unlock(&B.mu);
}

void simt_park(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline)
{
    if (self < 0)
        abort();
    B.t[self].wait_cv = cv;
    B.t[self].deadline = deadline;
    B.t[self].signalled = false;
    if (mu != NULL)
        pthread_mutex_unlock(mu);
    pthread_mutex_lock(&B.mu);
    B.t[self].state = PARKED;
    hand(self, B.t[self].back);
    pthread_mutex_unlock(&B.mu);
    B.t[self].wait_cv = NULL;
    if (mu != NULL)
        pthread_mutex_lock(mu);
}
