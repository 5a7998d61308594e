/* A crash, an assertion or a schedule that runs too long in real time
 * still says which schedule it was and how to replay it: the lines are
 * made before each schedule and written by the signal's handler as they
 * are (write(2) only, which a handler may call). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zsim.h"

static char crash_tail[640];

static void on_fatal(int sig)
{
    static const char *const names[] = {[SIGABRT] = "an abort or assertion",
                                        [SIGSEGV] = "a segmentation fault",
                                        [SIGBUS] = "a bus error",
                                        [SIGFPE] = "an arithmetic fault",
                                        [SIGILL] = "an illegal instruction",
                                        [SIGALRM] = "a timeout: SIM_TIMEOUT",
                                        [SIGTERM] = "killed (SIGTERM)"};
    static const char head[] = "\nsim: CRASH (";
    const char *what = sig < (int)(sizeof names / sizeof names[0]) && names[sig] ? names[sig] : "?";
    ssize_t r = write(STDOUT_FILENO, head, sizeof head - 1);
    r = write(STDOUT_FILENO, what, strlen(what));
    r = write(STDOUT_FILENO, crash_tail, strlen(crash_tail));
    (void)r;
    signal(sig, SIG_DFL);
    raise(sig);
}

void zsim_crash_arm(void)
{
    static const int fatal[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM, SIGTERM};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], on_fatal);
}

void zsim_crash_lines(uint64_t seed, const char *replay)
{
    snprintf(crash_tail, sizeof crash_tail, ") in the schedule of seed %llu\nsim: replay: %s\n",
             (unsigned long long)seed, replay);
}
