/* A schedule's tape: for each step the seed of the world's choices in it
 * (which item is delivered, which request a server takes, latencies, what
 * the workers do next: the world's generator is seeded anew from it before
 * the step, zsim_reseed) and a fault injected before it. A tape made from
 * a seed alone computes its steps on the fly; a shrunk one lists them:
 * each step keeps the seed it had at its original place, so cutting steps
 * out of a tape leaves the others' choices as they were.
 *
 * Shrinking (tape_shrink): while the violation's kind remains, cut the
 * tape after the violation, remove faults, shorten them, cut out runs of
 * steps (halving their length, as delta debugging does), and silence
 * workers. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

uint64_t drv_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static const char *const fault_names[F_NKINDS] = {
    "none",     "drop",   "link",  "partition", "freeze", "expire", "outsider",
    "retire",   "aim",    "crowd", "pause",     "block",  "late",   "failover",
    "leader-pause", "leader-slow", "unheard"};

const char *fault_name(int kind)
{
    return kind >= 0 && kind < F_NKINDS ? fault_names[kind] : "?";
}

/* Faults per million steps, by kind: the default mix, or one a run sets
 * (tape_set_mix, SIM_MIX). Aimed faults and crowds come only with drawn
 * mixes (drawn_extra), so that a mix named by its factors replays as it
 * did before they existed. */
static const uint32_t default_rate[F_NKINDS] = {0, 400, 250, 120, 100, 60, 2000, 100};
static uint32_t rate[F_NKINDS] = {0, 400, 250, 120, 100, 60, 2000, 100};
static const uint32_t drawn_extra[F_NKINDS] = {
    [F_AIM] = 150,   [F_CROWD] = 8,         [F_PAUSE] = 40,       [F_BLOCK] = 60,
    [F_LATE] = 100,  [F_FAILOVER] = 15,     [F_LEADER_PAUSE] = 25, [F_LEADER_SLOW] = 40,
    [F_UNHEARD] = 60};

/* "drawn" (the default): each schedule draws its mix from its seed, one of
 * these factors over the run's rates (none, drop, link, partition, freeze,
 * expire, outsider, retire, aim, crowd, pause, block, late, failover,
 * leader-pause, leader-slow, unheard): the default, connections dropped
 * twenty times as often, outsiders five times, both, silent links and cut
 * or stopped servers, forced expiries, outsiders aimed at holders and at
 * waiters' predecessors, crowds of hundreds of contenders, time faults of
 * the clients (paused processes, blocked callbacks, late keepers), leader
 * changes (failovers, a leader paused or slow); each with a holder's
 * touches unheard at times (F_UNHEARD). A sixth of the
 * schedules also start every parent's sequence near its 32-bit wrap. */
static bool drawn = true;
static const uint8_t drawn_mix[][F_NKINDS] = {
    {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 20, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 1, 1, 1, 1, 1, 5, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 20, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 1, 8, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 2, 1, 1, 1, 10, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 2, 1, 1, 1, 1, 1, 1, 12, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 1, 1, 1, 1, 1, 1, 1, 2, 12, 1, 1, 1, 1, 1, 1, 1},
    {0, 1, 1, 1, 1, 4, 1, 1, 1, 1, 8, 8, 8, 1, 1, 1, 1},
    {0, 1, 4, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 10, 10, 10, 1},
};

static const uint8_t *drawn_times(uint64_t seed)
{
    return drawn_mix[drawn ? drv_mix(seed ^ 0x313e) % (sizeof drawn_mix / sizeof drawn_mix[0]) : 0];
}

int32_t tape_cversion_start(const struct tape *t)
{
    if (!drawn || drv_mix(t->seed ^ 0x3a9) % 6 != 0)
        return 0;
    return INT32_MAX - (int32_t)(drv_mix(t->seed ^ 0x3aa) % 100);
}

/* The watches world, an eighth of the drawn schedules (the corpus's drawn
 * seeds are not among them): one client starts a swarm of 150 to 450
 * asynchronous acquires, 10 to 30 ms apart, so that a reconnection
 * sends hundreds of its watches again in one setWatches, against servers
 * whose jute.maxbuffer is 8 KiB: a stand-in, at the simulation's scale,
 * for the thousands of watches that fill the default 1 MiB. Connections
 * drop 1,500 times more per million steps, half of the drops the swarm's
 * client's. */
static bool swarm_world(uint64_t seed)
{
    return drawn && drv_mix(seed ^ 0x3ae) % 8 == 0;
}

/* The swarm's size, or 0. */
int tape_swarm(const struct tape *t)
{
    if (!swarm_world(t->seed))
        return 0;
    return 150 + (int)(drv_mix(t->seed ^ 0x3b0) % 301);
}

/* A mix as text: "kind=rate" or "kind*factor", comma-separated, over the
 * default (e.g. "drop*20,outsider*4"), "fixed" (the default mix in every
 * schedule), or "drawn" (per schedule, the default). 0, or -1 for a bad
 * one. */
int tape_set_mix(const char *spec)
{
    memcpy(rate, default_rate, sizeof rate);
    drawn = spec == NULL || *spec == '\0' || strcmp(spec, "drawn") == 0;
    if (drawn || strcmp(spec, "fixed") == 0)
        return 0;
    uint64_t sum = 0;
    for (const char *p = spec; p && *p;) {
        size_t len = strcspn(p, "=*");
        int k = 1;
        while (k < F_NKINDS && (strlen(fault_names[k]) != len || strncmp(p, fault_names[k], len)))
            k++;
        if (k == F_NKINDS || p[len] == '\0')
            return -1;
        char *end;
        unsigned long v = strtoul(p + len + 1, &end, 10);
        if (end == p + len + 1 || (*end != ',' && *end != '\0'))
            return -1;
        rate[k] = p[len] == '=' ? (uint32_t)v : (uint32_t)(default_rate[k] * v);
        p = *end == ',' ? end + 1 : end;
    }
    for (int k = 1; k < F_NKINDS; k++)
        sum += rate[k];
    return sum <= 1000000 ? 0 : -1;
}

static struct tape_step gen(uint64_t seed, int64_t i)
{
    struct tape_step s = {.orig = i};
    s.seed = drv_mix(seed ^ drv_mix((uint64_t)i + 0x51ed));
    uint64_t f = drv_mix(s.seed ^ 0xfa17);
    uint32_t r = (uint32_t)(f % 1000000);
    const uint8_t *times = drawn_times(seed);
    for (int k = 1; k < F_NKINDS; k++) {
        uint32_t p = (rate[k] + (drawn ? drawn_extra[k] : 0)) * times[k];
        if (k == F_DROP && swarm_world(seed))
            p += 1500;
        if (r < p) {
            s.fault = (uint8_t)k;
            break;
        }
        r -= p;
    }
    if (s.fault == F_NONE)
        return s;
    uint64_t g = drv_mix(f);
    s.target = (uint8_t)(g & 0xff);
    s.a = (int8_t)((g >> 8) % 4) - 1;  /* -1: the seed decides, else 0..2 */
    s.b = (int8_t)((g >> 16) % 4) - 1;
    s.len = 1 + (int64_t)((g >> 24) % (uint64_t)(3 * SEC));
    return s;
}

/* Drawn worlds, and mixes that name the unheard fault, ping the followers
 * at a phase of their own against the ticks the leader expires on; the
 * other mixes keep them on the ticks, and replay as before. */
int64_t tape_ping_phase(const struct tape *t, int64_t half_tick)
{
    if ((!drawn && rate[F_UNHEARD] == 0) || half_tick <= 1)
        return 0;
    return (int64_t)(drv_mix(t->seed ^ 0x9a5e) % (uint64_t)half_tick);
}

void tape_init(struct tape *t, uint64_t seed, int64_t steps)
{
    memset(t, 0, sizeof *t);
    t->seed = seed;
    t->limit = steps;
    t->workers = ~(uint64_t)0;
}

void tape_free(struct tape *t)
{
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

struct tape_step tape_at(const struct tape *t, int64_t i, bool *end)
{
    if (t->explicit_) {
        *end = i >= (int64_t)t->n;
        return *end ? (struct tape_step){0} : t->v[i];
    }
    *end = i >= t->limit;
    return *end ? (struct tape_step){0} : gen(t->seed, i);
}

void tape_materialize(struct tape *t, int64_t steps)
{
    if (t->explicit_) {
        if ((int64_t)t->n > steps)
            t->n = (size_t)steps;
        return;
    }
    t->v = malloc((size_t)(steps > 0 ? steps : 1) * sizeof *t->v);
    if (t->v == NULL)
        abort();
    for (int64_t i = 0; i < steps; i++)
        t->v[i] = gen(t->seed, i);
    t->n = t->cap = (size_t)steps;
    t->explicit_ = true;
}

static void copy(struct tape *to, const struct tape *from)
{
    *to = *from;
    to->v = malloc((from->n ? from->n : 1) * sizeof *to->v);
    if (to->v == NULL)
        abort();
    memcpy(to->v, from->v, from->n * sizeof *to->v);
    to->cap = from->n;
}

/* ---- shrinking ----------------------------------------------------------------------- */

struct shrink {
    struct tape *best;
    const struct drv_opts *o;
    int kind;
    int budget, tries;
};

/* Does t still fail with the same kind of violation? If so it becomes the
 * best, cut after its violation. */
static bool still(struct shrink *sh, struct tape *t)
{
    if (sh->tries >= sh->budget)
        return false;
    sh->tries++;
    struct violation v;
    int64_t events;
    uint64_t acq;
    if (drv_run(t, sh->o, &v, &events, &acq) == 0 || v.kind != sh->kind)
        return false;
    if (!v.settling && v.step + 1 < (int64_t)t->n)
        t->n = (size_t)(v.step + 1);
    tape_free(sh->best);
    *sh->best = *t;
    return true;
}

static bool try_without(struct shrink *sh, size_t from, size_t len)
{
    struct tape t;
    copy(&t, sh->best);
    memmove(t.v + from, t.v + from + len, (t.n - from - len) * sizeof *t.v);
    t.n -= len;
    if (still(sh, &t))
        return true;
    tape_free(&t);
    return false;
}

static bool try_fault(struct shrink *sh, size_t i, uint8_t fault, int64_t len)
{
    struct tape t;
    copy(&t, sh->best);
    t.v[i].fault = fault;
    t.v[i].len = len;
    if (still(sh, &t))
        return true;
    tape_free(&t);
    return false;
}

static bool try_workers(struct shrink *sh, uint64_t mask)
{
    struct tape t;
    copy(&t, sh->best);
    t.workers = mask;
    if (still(sh, &t))
        return true;
    tape_free(&t);
    return false;
}

/* Remove the faults of [from, to) of the list of fault steps at once. */
static bool try_faults(struct shrink *sh, const size_t *at, size_t from, size_t to)
{
    struct tape t;
    copy(&t, sh->best);
    for (size_t k = from; k < to; k++)
        if (at[k] < t.n)
            t.v[at[k]].fault = F_NONE;
    if (still(sh, &t))
        return true;
    tape_free(&t);
    return false;
}

/* The faults, halving the groups removed at once (delta debugging). */
static bool shrink_faults(struct shrink *sh)
{
    bool progress = false;
    size_t *at = malloc((sh->best->n ? sh->best->n : 1) * sizeof *at), n = 0;
    if (at == NULL)
        abort();
    for (size_t i = 0; i < sh->best->n; i++)
        if (sh->best->v[i].fault != F_NONE)
            at[n++] = i;
    for (size_t len = n; len >= 1 && sh->tries < sh->budget; len /= 2) {
        for (size_t from = 0; from < n && sh->tries < sh->budget; from += len) {
            size_t to = from + len < n ? from + len : n;
            bool any = false;
            for (size_t k = from; k < to; k++)
                any |= at[k] < sh->best->n && sh->best->v[at[k]].fault != F_NONE;
            if (any && try_faults(sh, at, from, to))
                progress = true;
        }
    }
    free(at);
    return progress;
}

int tape_shrink(struct tape *t, const struct drv_opts *o, int kind, int budget)
{
    struct shrink sh = {t, o, kind, budget, 0};
    bool progress = true;
    while (progress && sh.tries < sh.budget) {
        progress = false;
        /* whole clients' workers, then single workers */
        for (int c = 0; c < DRV_CLIENTS && sh.tries < sh.budget; c++) {
            uint64_t group = (((uint64_t)1 << DRV_WORKERS) - 1) << (c * DRV_WORKERS);
            if ((t->workers & group) && try_workers(&sh, t->workers & ~group))
                progress = true;
        }
        for (int b = 0; b < DRV_CLIENTS * DRV_WORKERS && sh.tries < sh.budget; b++) {
            uint64_t bit = (uint64_t)1 << b;
            if ((t->workers & bit) && try_workers(&sh, t->workers & ~bit))
                progress = true;
        }
        progress |= shrink_faults(&sh);
        /* runs of steps, longest first */
        for (size_t len = t->n / 2; len >= 1 && sh.tries < sh.budget; len /= 2) {
            for (size_t from = 0; from + len <= t->n && sh.tries < sh.budget;) {
                if (try_without(&sh, from, len))
                    progress = true;
                else
                    from += len;
            }
        }
        /* what faults remain, shorter */
        for (size_t i = 0; i < t->n && sh.tries < sh.budget; i++)
            while (t->v[i].fault != F_NONE && t->v[i].len > 10 * MS &&
                   try_fault(&sh, i, t->v[i].fault, t->v[i].len / 2))
                progress = true;
    }
    return sh.tries;
}

/* ---- a tape as text: the seed, the workers, the steps kept, the faults changed -------- */

void tape_print(const struct tape *t, FILE *out)
{
    fprintf(out, "%llu:%llx:", (unsigned long long)t->seed, (unsigned long long)t->workers);
    for (size_t i = 0; i < t->n;) {
        size_t j = i;
        while (j + 1 < t->n && t->v[j + 1].orig == t->v[j].orig + 1)
            j++;
        fprintf(out, "%s%lld", i ? "," : "", (long long)t->v[i].orig);
        if (j > i)
            fprintf(out, "-%lld", (long long)t->v[j].orig);
        i = j + 1;
    }
    for (size_t i = 0; i < t->n; i++) {
        struct tape_step g = gen(t->seed, t->v[i].orig);
        if (g.fault != t->v[i].fault || g.len != t->v[i].len)
            fprintf(out, ";%lld=%d/%lld", (long long)t->v[i].orig, t->v[i].fault,
                    (long long)t->v[i].len);
    }
}

int tape_parse(struct tape *t, const char *text)
{
    char *end;
    unsigned long long seed = strtoull(text, &end, 10);
    if (*end != ':')
        return -1;
    tape_init(t, seed, 0);
    t->workers = strtoull(end + 1, &end, 16);
    if (*end != ':')
        return -1;
    t->explicit_ = true;
    const char *p = end + 1;
    while (*p && *p != ';') {
        long long a = strtoll(p, &end, 10), b = a;
        if (end == p)
            return -1;
        if (*end == '-')
            b = strtoll(end + 1, &end, 10);
        for (long long i = a; i <= b; i++) {
            if (t->n == t->cap) {
                t->cap = t->cap ? 2 * t->cap : 1024;
                t->v = realloc(t->v, t->cap * sizeof *t->v);
                if (t->v == NULL)
                    abort();
            }
            t->v[t->n++] = gen(t->seed, i);
        }
        p = *end == ',' ? end + 1 : end;
    }
    while (*p == ';') {
        long long at = strtoll(p + 1, &end, 10);
        int kind = 0;
        long long len = 0;
        if (sscanf(end, "=%d/%lld", &kind, &len) != 2)
            return -1;
        for (size_t i = 0; i < t->n; i++)
            if (t->v[i].orig == at) {
                t->v[i].fault = (uint8_t)kind;
                t->v[i].len = len;
            }
        p = strchr(end, ';') ? strchr(end, ';') : end + strlen(end);
    }
    return 0;
}
