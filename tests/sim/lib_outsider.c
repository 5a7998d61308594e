/* sim-lib's outsider (another program, an operator) who spoils a lock
 * path the way the model's outsider does (outsider.c: zsim_outsider_random): an ACL
 * on the path that refuses the library's creates, listings or deletes
 * under it, or on a node in its queue, put back 0.1 to 5 s later so that
 * every refused delete goes through in the end; or the path deleted when
 * nothing is queued on it, half the time made again within 2 s (else the
 * library makes it again for its next create). Every choice is the
 * world's generator's, but lout_acl_fault's, which are its caller's. */
#include <stdio.h>
#include <string.h>

#include "lib_outsider.h"

#define MS ((int64_t)1000000)
#define MARRED_MAX 32

static struct {
    zsim_world *w;
    const char *const *acl_dirs, *const *dirs;
    int nacl, ndirs;
    lout_trace_fn trace;
    struct {
        char path[200];
        int64_t until;
    } marred[MARRED_MAX];
    int nmarred;
    int64_t mended_at;  /* the last ACL put back */
    int64_t marred_ns;  /* time some ACL was in effect, up to marred_from */
    int64_t marred_from; /* ... and since then, while one is */
    const char *remake; /* a deleted path made again then */
    int64_t remake_at;
    uint64_t acts;
} O;

/* Each refuses the library something: children's creates and deletes,
 * their deletes, the listing (and a node's data), or everything. */
static const struct zsim_acl acl_read_only[] = {{ZSIM_PERM_READ, "world", "anyone"}};
static const struct zsim_acl acl_no_delete[] = {
    {ZSIM_PERM_ALL & ~ZSIM_PERM_DELETE, "world", "anyone"}};
static const struct zsim_acl acl_no_read[] = {{ZSIM_PERM_ALL & ~ZSIM_PERM_READ, "world", "anyone"}};
static const struct zsim_acl acl_stranger[] = {
    {ZSIM_PERM_ALL, "digest", "stranger:2jmj7l5rSw0yVb/vlWAYkK/YBwk="}};
static const struct zsim_acl_vector acls[] = {
    {1, acl_read_only}, {1, acl_no_delete}, {1, acl_no_read}, {1, acl_stranger}};
static const char *const acl_names[] = {"read only", "no delete", "no read", "a stranger's"};

void lout_begin(zsim_world *w, const char *const *acl_dirs, int nacl, const char *const *dirs,
                int ndirs, lout_trace_fn trace)
{
    memset(&O, 0, sizeof O);
    O.w = w;
    O.acl_dirs = acl_dirs;
    O.nacl = nacl;
    O.dirs = dirs;
    O.ndirs = ndirs;
    O.trace = trace;
}

static void first_kid(void *arg, const char *name)
{
    char *first = arg;
    if (first[0] == '\0' || strcmp(name, first) < 0)
        snprintf(first, 160, "%s", name);
}

static uint64_t world_below(uint64_t n)
{
    return zsim_below(O.w, n);
}

/* An ACL that refuses the library something (what: 2, on the head of
 * the queue; else on the path) on one of dirs, its choices by below. */
static void acl_act(uint64_t what, const char *const *dirs, int ndirs,
                    uint64_t (*below)(uint64_t n))
{
    int64_t now = zsim_now(O.w);
    const char *dir = dirs[below((uint64_t)ndirs)];
    char path[200];
    snprintf(path, sizeof path, "%s", dir);
    if (what == 2) {
        /* the head of its queue (the names sort by sequence but for a
         * wrap: any node of the queue will do) */
        char first[160] = "";
        zsim_truth_children(O.w, dir, first_kid, first);
        if (first[0] == '\0')
            return;
        snprintf(path, sizeof path, "%s/%s", dir, first);
    }
    if (O.nmarred == MARRED_MAX)
        return;
    uint64_t a = below(4);
    int rc = zsim_outsider_set_acl(O.w, path, -1, &acls[a]);
    O.trace("fault: an outsider sets %s's ACL to %s: %s", path, acl_names[a], zsim_rc_name(rc));
    if (rc != ZSIM_OK)
        return;
    if (O.nmarred == 0)
        O.marred_from = now;
    snprintf(O.marred[O.nmarred].path, sizeof O.marred[0].path, "%s", path);
    O.marred[O.nmarred++].until = now + (int64_t)(100 + below(4900)) * MS;
}

void lout_acl_fault(const char *const *dirs, int ndirs, uint64_t (*below)(uint64_t n))
{
    O.acts++;
    acl_act(below(3), dirs, ndirs, below);
}

void lout_fault(void)
{
    int64_t now = zsim_now(O.w);
    uint64_t what = zsim_below(O.w, 4);
    O.acts++;
    if (what == 3) {
        const char *dir = O.dirs[zsim_below(O.w, (uint64_t)O.ndirs)];
        /* the parent, if nothing is under it (else ZNOTEMPTY: nothing) */
        if (O.remake != NULL || zsim_truth_children(O.w, dir, NULL, NULL) != 0)
            return;
        int rc = zsim_outsider_delete(O.w, dir, -1);
        O.trace("fault: an outsider deletes %s: %s", dir, zsim_rc_name(rc));
        if (rc == ZSIM_OK && zsim_below(O.w, 2) == 0) {
            O.remake = dir;
            O.remake_at = now + (int64_t)zsim_below(O.w, 2000) * MS;
        }
        return;
    }
    acl_act(what, O.acl_dirs, O.nacl, world_below);
}

void lout_heal(bool all)
{
    if (O.w == NULL)
        return;
    int64_t now = zsim_now(O.w);
    for (int i = 0; i < O.nmarred;) {
        if (!all && now < O.marred[i].until) {
            i++;
            continue;
        }
        int rc = zsim_outsider_set_acl(O.w, O.marred[i].path, -1, &ZSIM_OPEN_ACL_UNSAFE);
        O.trace("an outsider puts %s's ACL back: %s", O.marred[i].path, zsim_rc_name(rc));
        O.marred[i] = O.marred[--O.nmarred];
        O.mended_at = now;
        if (O.nmarred == 0)
            O.marred_ns += now - O.marred_from;
    }
    if (O.remake != NULL && (all || now >= O.remake_at)) {
        int rc = zsim_outsider_create(O.w, O.remake, "", 0, &ZSIM_OPEN_ACL_UNSAFE,
                                      ZSIM_PERSISTENT, NULL, 0);
        O.trace("an outsider makes %s again: %s", O.remake, zsim_rc_name(rc));
        O.remake = NULL;
    }
}

bool lout_refused(int64_t since)
{
    return O.nmarred > 0 || (O.mended_at != 0 && O.mended_at >= since);
}

int64_t lout_marred_ns(void)
{
    return O.marred_ns + (O.nmarred > 0 ? zsim_now(O.w) - O.marred_from : 0);
}

uint64_t lout_acts(void)
{
    return O.acts;
}
