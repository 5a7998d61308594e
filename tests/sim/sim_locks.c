/* sim-locks: zkl's engine core, every recipe, against the model of
 * ZooKeeper, schedule after schedule (docs/simulation.md).
 *
 *   SIM_SEED       the first schedule's seed (default 1); schedule k has
 *                  seed SIM_SEED + k, so a violation's seed replays it
 *   SIM_EVENTS     world steps in all (default 1,000,000)
 *   SIM_STEPS      steps of each schedule before its end (default 20,000)
 *   SIM_SCHEDULES  at most this many schedules (default: as SIM_EVENTS says)
 *   SIM_SHRINK     attempts of the shrinker (default 400; 0: none)
 *   SIM_TAPE       replay one tape as printed after a violation, traced
 *   SIM_TRACE=1    trace every schedule (a lot)
 *   SIM_TIMEOUT    seconds of real time a schedule may take (default 120)
 *   SIM_MIX        the faults' mix instead of the default, e.g.
 *                  "drop*20,outsider*4" (factors) or "expire=300" (per
 *                  million steps), or "drawn": each schedule draws one
 *                  from its seed; a replay needs the same SIM_MIX
 *
 * It stops at the first violation: prints it, shrinks its schedule, prints
 * the shortest trace found event by event, and ends, as always, with
 *   sim: seed S, E events, N schedules, V violations
 * Exit status 0 without violations, 1 with. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drv.h"

static long long env_num(const char *name, long long dflt)
{
    const char *s = getenv(name);
    return s && *s ? strtoll(s, NULL, 0) : dflt;
}

/* What the crash lines say to replay schedule `seed`. */
static void crash_lines(uint64_t seed)
{
    const char *mix = getenv("SIM_MIX");
    char replay[512];
    snprintf(replay, sizeof replay, "%s%s%smake check-sim SIM_SEED=%" PRIu64,
             mix && *mix ? "SIM_MIX='" : "", mix && *mix ? mix : "", mix && *mix ? "' " : "",
             seed);
    zsim_crash_lines(seed, replay);
}

static int count_faults(const struct tape *t)
{
    int n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->v[i].fault != F_NONE;
    return n;
}

static void report(const struct tape *failed, const struct violation *v, const struct drv_opts *o)
{
    printf("sim: VIOLATION (%s) in the schedule of seed %" PRIu64 ", step %lld: %s\n",
           violation_names[v->kind], failed->seed, (long long)v->step, v->text);
    struct tape t = *failed;
    t.v = NULL;
    t.explicit_ = false;
    tape_materialize(&t, v->settling ? failed->limit : v->step + 1);
    long long budget = env_num("SIM_SHRINK", 400);
    struct drv_opts quiet = *o;
    quiet.trace = false;
    if (budget > 0) {
        printf("sim: shrinking the schedule (%zu steps, %d faults) ...\n", t.n, count_faults(&t));
        fflush(stdout);
        int tries = tape_shrink(&t, &quiet, v->kind, (int)budget);
        printf("sim: %d runs tried; the shortest failing schedule has %zu steps, %d faults\n",
               tries, t.n, count_faults(&t));
    }
    printf("sim: its trace, event by event:\n");
    struct drv_opts traced = *o;
    traced.trace = true;
    traced.out = stdout;
    struct violation again;
    int64_t events;
    uint64_t acq;
    if (drv_run(&t, &traced, &again, &events, &acq) == 0)
        printf("sim: (the shrunk schedule no longer fails: shrinking is deterministic, "
               "this is a bug of the simulation)\n");
    const char *mix = getenv("SIM_MIX");
    char env[256] = "";
    if (mix && *mix)
        snprintf(env, sizeof env, "SIM_MIX='%s' ", mix);
    printf("sim: replay: %smake check-sim SIM_SEED=%" PRIu64 "   or   %sSIM_TAPE='", env,
           failed->seed, env);
    tape_print(&t, stdout);
    printf("' tests/sim/sim-locks\n");
    tape_free(&t);
}

int main(void)
{
    const char *mix = getenv("SIM_MIX");
    if (tape_set_mix(mix) != 0) {
        fprintf(stderr, "sim: SIM_MIX: not a mix of faults: %s\n", mix);
        return 2;
    }
    uint64_t seed = (uint64_t)env_num("SIM_SEED", 1);
    unsigned timeout = (unsigned)env_num("SIM_TIMEOUT", 120);
    zsim_crash_arm();
    long long target = env_num("SIM_EVENTS", 1000000);
    long long steps = env_num("SIM_STEPS", 20000);
    long long max_sched = env_num("SIM_SCHEDULES", -1);
    struct drv_stats stats = {0};
    struct drv_opts o = {.stats = &stats, .steps = steps, .trace = env_num("SIM_TRACE", 0) != 0,
                         .out = stdout};
    const char *text = getenv("SIM_TAPE");
    if (text && *text) {
        struct tape t;
        if (tape_parse(&t, text) != 0) {
            fprintf(stderr, "sim: SIM_TAPE: not a tape\n");
            return 2;
        }
        o.trace = true;
        struct violation v;
        int64_t events;
        uint64_t acq;
        int bad = drv_run(&t, &o, &v, &events, &acq);
        if (bad)
            printf("sim: VIOLATION (%s) at step %lld: %s\n", violation_names[v.kind],
                   (long long)v.step, v.text);
        printf("sim: seed %" PRIu64 ", %lld events, 1 schedules, %d violations\n", t.seed,
               (long long)events, bad);
        tape_free(&t);
        return bad;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long total = 0, schedules = 0;
    uint64_t acquisitions = 0;
    int violations = 0;
    for (uint64_t k = 0;; k++) {
        if (max_sched >= 0 ? (long long)k >= max_sched : total >= target)
            break;
        struct tape t;
        tape_init(&t, seed + k, steps);
        struct violation v;
        int64_t events;
        uint64_t acq;
        crash_lines(seed + k);
        alarm(timeout);
        int bad = drv_run(&t, &o, &v, &events, &acq);
        alarm(0);
        total += events;
        acquisitions += acq;
        schedules++;
        if (bad) {
            violations++;
            report(&t, &v, &o);
            break;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "sim: %.1f s, %.0f events/s, %" PRIu64 " acquisitions, %.0f virtual s\n",
            sec, (double)total / sec, acquisitions, (double)stats.virtual_ns / SEC);
    printf("sim: seed %" PRIu64 ", %lld events, %lld schedules, %d violations\n", seed, total,
           schedules, violations);
    return violations > 0;
}
