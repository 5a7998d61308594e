/* sim-lib's quiet faults (tests/sim/quiet.h): what a client may not hear
 * for a while while the rest of the world goes on. */
#include <stdio.h>

#include "quiet.h"

#define MS ((int64_t)1000000)
#define QMAX 8

static struct {
    zsim_world *w;
    void (*trace)(const char *fmt, ...);
    int64_t thaw_at[3];       /* server i thaws then (0: not frozen) */
    int64_t heal_at[QMAX];    /* client i's link heals then (0: whole) */
    zsim_session *link[QMAX]; /* ... on this session */
    unsigned long long freezes, links;
} Q;

void quiet_begin(zsim_world *w, void (*trace)(const char *fmt, ...))
{
    for (int i = 0; i < 3; i++)
        Q.thaw_at[i] = 0;
    for (int i = 0; i < QMAX; i++) {
        Q.heal_at[i] = 0;
        Q.link[i] = NULL;
    }
    Q.w = w;
    Q.trace = trace;
}

int quiet_start(zsim_session *const *sessions, int n)
{
    int64_t now = zsim_now(Q.w);
    if (zsim_below(Q.w, 2) == 0) {
        int srv = 1 + (int)zsim_below(Q.w, 2);
        int64_t len = (1 + (int64_t)zsim_below(Q.w, 6000)) * MS;
        if (Q.thaw_at[srv] != 0)
            return -1;
        if (Q.trace)
            Q.trace("fault: follower %d stands still for %.3f s", srv, (double)len / 1e9);
        zsim_freeze(Q.w, srv, true);
        Q.thaw_at[srv] = now + len;
        Q.freezes++;
        return n;
    }
    int i = (int)zsim_below(Q.w, (uint64_t)n);
    bool to_server = zsim_below(Q.w, 2) == 0; /* what it holds back */
    int64_t len = (1 + (int64_t)zsim_below(Q.w, 8000)) * MS;
    if (i >= QMAX || sessions[i] == NULL || Q.heal_at[i] != 0)
        return -1;
    if (Q.trace)
        Q.trace("fault: client %d's link holds what goes to the %s for %.3f s", i,
                to_server ? "server" : "client", (double)len / 1e9);
    zsim_link_oneway(sessions[i], !to_server, to_server); /* which way is up */
    Q.link[i] = sessions[i];
    Q.heal_at[i] = now + len;
    Q.links++;
    return i;
}

bool quiet_tend(zsim_session *const *sessions, int n, bool all)
{
    int64_t now = zsim_now(Q.w);
    bool ended = false;
    for (int srv = 1; srv < 3; srv++)
        if (Q.thaw_at[srv] != 0 && (all || now >= Q.thaw_at[srv])) {
            if (Q.trace)
                Q.trace("follower %d runs again", srv);
            zsim_freeze(Q.w, srv, false);
            Q.thaw_at[srv] = 0;
            ended = true;
        }
    for (int i = 0; i < n && i < QMAX; i++)
        if (Q.heal_at[i] != 0 && (all || now >= Q.heal_at[i])) {
            if (Q.link[i] == sessions[i]) {
                if (Q.trace)
                    Q.trace("client %d's link passes both ways again", i);
                zsim_link(sessions[i], true);
            }
            Q.heal_at[i] = 0;
            Q.link[i] = NULL;
            ended = true;
        }
    return ended;
}

void quiet_report(FILE *out)
{
    fprintf(out, "sim: %llu followers stood still, %llu links went quiet one way\n", Q.freezes,
            Q.links);
}
