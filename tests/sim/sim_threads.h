/* Program threads under a scheduler, one running at a time (sim-lib:
 * docs/simulation.md). Each program thread is a real pthread, so that
 * pthread_self(), thread-local data and the library's per-thread holds
 * work as in a program; a baton says which thread runs, and only its
 * holder ever runs. The scheduler (the thread that calls simt_start and
 * simt_resume, normally the main one) hands a program thread a job or
 * resumes it; the thread runs until its job ends or it parks in the
 * library's wait (simt_park, from the virtual clock's wait hook), and the
 * baton comes back. The library's pthread_cond_signal and
 * pthread_cond_broadcast are wrapped (the link's --wrap) so that a parked
 * thread knows when its condition variable was signalled. Nothing here
 * chooses: which thread runs when is the caller's choice, from its seed. */
#ifndef ZKL_SIM_THREADS_H
#define ZKL_SIM_THREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SIMT_MAX 16

typedef void simt_job(void *arg);

/* Start n program threads (at most SIMT_MAX), once per process; later
 * calls with the same n do nothing. */
void simt_init(int n);
/* The calling thread's index, or -1 for a thread that is not a program
 * thread (the scheduler's). */
int simt_self(void);
/* Whether program thread t has a job (running, or parked in a wait). */
bool simt_busy(int t);
/* Whether t is parked in a wait. */
bool simt_parked(int t);
/* Whether parked thread t's wait may end at time now: its condition
 * variable was signalled since it parked, or its deadline passed. (A
 * resumed thread whose condition does not hold waits again: a spurious
 * wake-up, which every wait of the library allows.) */
bool simt_ready(int t, int64_t now);
/* The deadline of parked thread t's wait. */
int64_t simt_deadline(int t);
/* Give idle thread t the job fn(arg) and run it until the job ends or the
 * thread parks. */
void simt_start(int t, simt_job *fn, void *arg);
/* Run parked thread t until it parks again or its job ends. */
void simt_resume(int t);
/* In a program thread: wait on cv as pthread_cond_timedwait would (mu
 * released meanwhile, held again on return; none if NULL), the baton
 * going back to whoever ran this thread until it is resumed. The caller
 * tells whether the deadline passed. */
void simt_park(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline);
/* The threads parked on cv may go on, as if it were signalled (cv NULL:
 * those parked on none). */
void simt_wake(pthread_cond_t *cv);
/* A plain pthread_cond_wait of the scheduler's on mu (the link wraps it
 * too), which waits for program threads to leave the library (as
 * zkl_client_close does for the callers inside), runs fn with mu released
 * and returns at once instead: a spurious wake-up, with a step in which
 * the threads it waits for run. mu NULL: none. */
void simt_stall(pthread_mutex_t *mu, void (*fn)(void));

#endif
