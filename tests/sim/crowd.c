/* sim-lib's world beyond its clients: crowds of another program's
 * contenders on a lock path's queue, and the 32-bit wrap of the lock
 * paths' sequence counters (crowd.h, docs/simulation.md).
 *
 * A crowd gives the real library long queues: hundreds of nodes in a
 * listing, a waiter that watches the one just ahead of it among them,
 * and, past the wrap, names the server gives with a negative counter
 * ("lock--2147483648"), which the library must neither hold nor wait on
 * for its own creates, and must order as it documents for others'. */
#include <stdlib.h>
#include <string.h>

#include "crowd.h"

#define CROWD_UUID "0dd0dd00-0000-4000-8000-000000000000"
#define CROWD_MAX 400
#define MS ((int64_t)1000000)

static struct {
    zsim_world *w;
    void (*trace)(const char *fmt, ...);
    uint64_t seed;
    bool on;                     /* crowds come in this schedule */
    int faults, due, k;          /* faults so far; the k-th crowd comes at the due-th */
    int n, next;                 /* the crowd's members made; the next to leave */
    int64_t leave_at;            /* ... leaves then */
    char member[CROWD_MAX][200]; /* their paths, in the order made */
    char wrapped[8][64];         /* the lock paths where a create of ours wrapped */
    int nwrapped;
} C;

/* The run's figures. */
static uint64_t crowds, members, wrap_schedules, wrapped_creates;

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

int32_t crowd_wrap_start(uint64_t seed)
{
    if (mix64(seed ^ 0x3a9) % 6 != 0)
        return 0;
    /* A third within 8, so that the latch's path, with its few creates,
     * passes the wrap too. */
    uint64_t m = mix64(seed ^ 0x3aa);
    return INT32_MAX - (int32_t)(m % 3 == 0 ? m / 3 % 8 : m / 3 % 100);
}

void crowd_begin(zsim_world *w, uint64_t seed, void (*trace)(const char *fmt, ...))
{
    memset(&C, 0, sizeof C);
    C.w = w;
    C.trace = trace;
    C.seed = seed;
    /* Decided from the seed, not drawn from the world's generator: a
     * schedule takes the steps it took before crowds came, until its
     * first crowd comes. */
    C.on = mix64(seed ^ 0xc40d) % 2 == 0;
    C.due = (int)(mix64(seed ^ 0xc40e) % 32);
    wrap_schedules += crowd_wrap_start(seed) != 0;
}

bool seq_wrapped(const char *name)
{
    size_t len = strlen(name);
    return len >= 12 && strspn(name + len - 10, "0123456789") == 10 && name[len - 11] == '-' &&
           (name[len - 12] == '-' || name[len - 12] == '_');
}

/* The newest contender of ours in a queue (its sequence the highest):
 * not a crowd's, not a semaphore's lease (a waiter takes one only once
 * it fits: no more leases than the limit are there), nor a name past the
 * wrap, whose kind it does not show. */
struct newest {
    char name[200];
    int64_t seq;
};

bool crowd_member(const char *path)
{
    return strstr(path, "/_c_" CROWD_UUID "-") != NULL;
}

static void newest_add(void *arg, const char *name)
{
    struct newest *nw = arg;
    size_t len = strlen(name);
    if (len <= 50 || len >= sizeof nw->name || strncmp(name, "_c_", 3) != 0 ||
        strncmp(name + 3, CROWD_UUID, 36) == 0 || strspn(name + len - 10, "0123456789") != 10 ||
        strstr(name + 40, "lease") != NULL || seq_wrapped(name))
        return;
    int64_t seq = strtoll(name + len - 10, NULL, 10);
    if (seq > nw->seq) {
        nw->seq = seq;
        memcpy(nw->name, name, len + 1);
    }
}

static bool join(const char *const *dirs, int n);

bool crowd_join(const char *const *dirs, int n)
{
    if (!C.on || C.next < C.n || C.faults++ < C.due)
        return false;
    return join(dirs, n);
}

bool crowd_join_now(const char *const *dirs, int n)
{
    return C.next >= C.n && join(dirs, n);
}

static bool join(const char *const *dirs, int n)
{
    /* Its queue and size from the seed too; none there of ours: at the
     * next fault. */
    uint64_t r = mix64(C.seed ^ mix64(0xc40f + (uint64_t)C.k));
    const char *dir = dirs[r % (uint64_t)n];
    struct newest nw = {"", -1};
    zsim_truth_children(C.w, dir, newest_add, &nw);
    if (nw.seq < 0)
        return false;
    char path[200];
    size_t len = strlen(nw.name);
    snprintf(path, sizeof path, "%s/_c_" CROWD_UUID "-%.*s", dir, (int)(len - 50), nw.name + 40);
    int many = 100 + (int)(r / (uint64_t)n % (CROWD_MAX - 100 + 1));
    /* The next comes 1 to 32 faults after this one's last member left. */
    C.k++;
    C.faults = 0;
    C.due = 1 + (int)(r >> 40) % 32;
    C.n = C.next = 0;
    while (C.n < many &&
           zsim_outsider_create(C.w, path, "", 0, &ZSIM_OPEN_ACL_UNSAFE, ZSIM_EPHEMERAL_SEQUENTIAL,
                                C.member[C.n], sizeof C.member[C.n]) == ZSIM_OK)
        C.n++;
    C.leave_at = zsim_now(C.w) + 50 * MS;
    zsim_timer(C.w, NULL, C.leave_at, 0);
    crowds++;
    members += (uint64_t)C.n;
    if (C.trace != NULL)
        C.trace("fault: a crowd of %d contenders in the protocol of %s joins %s (the last %s)", C.n,
                nw.name, dir, C.n > 0 ? strrchr(C.member[C.n - 1], '/') + 1 : "none");
    return true;
}

void crowd_tend(bool all)
{
    if (C.next >= C.n || (!all && zsim_now(C.w) < C.leave_at))
        return;
    if (all && C.trace != NULL)
        C.trace("the crowd's last %d contenders leave at once", C.n - C.next);
    /* The next that is still there (an outsider may have deleted some,
     * or its session ended, taking them all). */
    while (C.next < C.n)
        if (zsim_outsider_delete(C.w, C.member[C.next++], -1) == ZSIM_OK && !all)
            break;
    C.leave_at = zsim_now(C.w) + 1 + (int64_t)zsim_below(C.w, 20 * MS);
    if (C.next < C.n)
        zsim_timer(C.w, NULL, C.leave_at, 0);
}

void wrap_note(const struct zsim_change *ch)
{
    if (!ch->created || ch->origin < 0 || !seq_wrapped(ch->path))
        return;
    wrapped_creates++;
    if (C.trace != NULL)
        C.trace("the leader names a create of session %d past the wrap: %s", ch->origin, ch->path);
    const char *slash = strrchr(ch->path, '/');
    size_t dl = (size_t)(slash - ch->path);
    if (dl >= sizeof C.wrapped[0])
        return;
    for (int i = 0; i < C.nwrapped; i++)
        if (strlen(C.wrapped[i]) == dl && strncmp(C.wrapped[i], ch->path, dl) == 0)
            return;
    if (C.nwrapped < (int)(sizeof C.wrapped / sizeof C.wrapped[0])) {
        memcpy(C.wrapped[C.nwrapped], ch->path, dl);
        C.wrapped[C.nwrapped++][dl] = '\0';
    }
}

bool wrap_seen(const char *dir)
{
    for (int i = 0; i < C.nwrapped; i++)
        if (strcmp(C.wrapped[i], dir) == 0)
            return true;
    return false;
}

void crowd_report(FILE *out)
{
    fprintf(out, "sim-lib: %llu crowds of %llu contenders in all, %llu runs of a schedule near the "
            "sequence's wrap, %llu creates of ours given a name past it\n",
            (unsigned long long)crowds, (unsigned long long)members,
            (unsigned long long)wrap_schedules, (unsigned long long)wrapped_creates);
}
