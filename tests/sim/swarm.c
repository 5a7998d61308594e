/* sim-lib's watches world (swarm.h, docs/simulation.md): servers whose jute.maxbuffer is 8 KiB, and one client
 * that starts a swarm of 150 to 450 asynchronous acquires of the mutexes
 * and the read-write lock, 10 to 30 ms apart, holding up to 400 ms, so
 * that its queues grow to hundreds of waiters and its watches to hundreds
 * of paths; connections drop 1,500 more times per million steps, half of
 * the drops the swarm's client's. Its setWatches then passes the limit, as
 * thousands of watches pass the default 1 MiB: every reconnection is
 * closed at once, until the loss rule gives the session up and the client
 * opens a new one.
 *
 * Every choice comes from a generator of its own seeded from the
 * schedule's seed, never the world's: the other schedules take the steps
 * they took before it came. */
#include <string.h>

#include "swarm.h"

#define MS ((int64_t)1000000)

static struct {
    zsim_world *w;
    void (*trace)(const char *fmt, ...);
    uint64_t rng;
    int client, left, nclients;
    int64_t next_at;
} S;

static uint64_t requests, drops, worlds, closed;

/* The model's line for a setWatches: one over the limit is counted (and
 * traced); the server closes its connection. */
static void world_line(void *arg, const char *line)
{
    (void)arg;
    if (strstr(line, "sends its watches again") == NULL)
        return;
    closed += strstr(line, "over the size limit") != NULL;
    if (S.trace)
        S.trace("world: %s", line);
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static uint64_t draw(uint64_t n)
{
    S.rng = mix64(S.rng);
    return S.rng % n;
}

/* An eighth of the seeds: not those at which the mutants are found
 * (docs/simulation.md), whose schedules stay as they were. */
static bool swarm_world(uint64_t seed)
{
    return mix64(seed ^ 0x5a5d) % 8 == 0;
}

int32_t swarm_max_buffer(uint64_t seed)
{
    return swarm_world(seed) ? 8 * 1024 : 0;
}

void swarm_begin(zsim_world *w, uint64_t seed, int nclients,
                 void (*trace)(const char *fmt, ...))
{
    memset(&S, 0, sizeof S);
    S.w = w;
    S.trace = trace;
    S.nclients = nclients;
    S.client = -1;
    S.rng = mix64(seed ^ 0x5a5e);
    if (!swarm_world(seed))
        return;
    worlds++;
    zsim_trace(w, world_line, NULL);
    S.client = (int)draw((uint64_t)nclients);
    S.left = 150 + (int)draw(301);
    S.next_at = (int64_t)draw(2000) * MS;
    if (trace)
        trace("world: client %d starts a swarm of %d requests; jute.maxbuffer 8192", S.client,
              S.left);
}

int swarm_client(void)
{
    return S.client;
}

bool swarm_next(int *kind, long *timeout_ms, int64_t *hold_ns)
{
    if (S.left == 0 || zsim_now(S.w) < S.next_at)
        return false;
    *kind = (int)draw(4);
    *timeout_ms = draw(3) == 0 ? -1 : 1000 + (long)draw(29001);
    *hold_ns = (int64_t)draw(401) * MS;
    S.left--;
    S.next_at = zsim_now(S.w) + (int64_t)(10 + draw(21)) * MS;
    if (S.left > 0) /* time stops there: the next comes on its time */
        zsim_timer(S.w, NULL, S.next_at, 0);
    requests++;
    return true;
}

int swarm_drop(void)
{
    if (S.client < 0 || draw(1000000) >= 1500)
        return -1;
    drops++;
    return draw(2) == 0 ? S.client : (int)draw((uint64_t)S.nclients);
}

void swarm_report(FILE *out)
{
    fprintf(out, "sim: %llu watches worlds, %llu swarm requests, %llu drops of theirs, %llu "
            "setWatches over the limit\n", (unsigned long long)worlds,
            (unsigned long long)requests, (unsigned long long)drops,
            (unsigned long long)closed);
}
