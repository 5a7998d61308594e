/* The lock kind of `zkl elect`: a latch (leader election, Curator's
 * LeaderLatch) behind the interface of `zkl lock`'s kinds, so that the
 * election runs COMMAND under the same loop, the same supervision and the
 * same exit codes. Public API only. */
#include <stdlib.h>
#include <string.h>

#include "lockkind.h"
#include "lockrun.h"
#include "zkl.h"

/* The latch and the node it leads on, kept for the borrowed answer. */
struct elect {
    zkl_client *c;
    char *path;
    zkl_latch *l;
    char *node;
    bool started;
};

static const char *elect_id; /* --id, or NULL */

void lockkind_latch_id(const char *id)
{
    elect_id = id;
}

static int elect_create(zkl_client *c, const char *path, long permits, void **out)
{
    (void)permits;
    struct elect *e = calloc(1, sizeof *e);
    if (e == NULL || (e->path = strdup(path)) == NULL) {
        free(e);
        return ZKL_ENOMEM;
    }
    e->c = c;
    int rc = zkl_latch_new(c, path, elect_id, &e->l);
    if (rc != 0) {
        free(e->path);
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

/* Another candidate is there already: the first latch node of the path. */
static bool others(struct elect *e)
{
    zkl_participant *ps;
    size_t n;
    if (zkl_participants_list(e->c, e->path, &ps, &n) != 0)
        return false;
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any = any || strcmp(ps[i].kind, "latch-") == 0;
    zkl_participants_free(ps, n);
    return any;
}

/* The node the latch leads on: the first child, of our session. */
static void find_node(struct elect *e)
{
    int64_t sid = 0;
    zkl_participant *ps;
    size_t n;
    free(e->node);
    e->node = NULL;
    if (zkl_client_session_id(e->c, &sid) != 0 ||
        zkl_participants_list(e->c, e->path, &ps, &n) != 0)
        return;
    if (n > 0 && ps[0].holds && ps[0].session == sid) {
        size_t len = strlen(e->path) + strlen(ps[0].node) + 2;
        if ((e->node = malloc(len)) != NULL)
            snprintf(e->node, len, "%s/%s", e->path, ps[0].node);
    }
    zkl_participants_free(ps, n);
}

/* -n (timeout 0) is a try without waiting: with another candidate there,
 * the election is not joined at all; alone, the node's first answer is
 * waited for, up to the session timeout. */
static int elect_acquire(void *obj, long timeout_ms)
{
    struct elect *e = obj;
    if (timeout_ms == 0) {
        if (others(e))
            return ZKL_ETIMEDOUT;
        timeout_ms = zkl_client_session_timeout(e->c);
    }
    if (!e->started) {
        int rc = zkl_latch_start(e->l);
        if (rc != 0)
            return rc;
        e->started = true;
    }
    int rc = zkl_latch_await(e->l, timeout_ms);
    if (rc == 0)
        find_node(e);
    return rc;
}

static int elect_release(void *obj)
{
    struct elect *e = obj;
    return zkl_latch_close(e->l);
}

static int64_t elect_token(void *obj)
{
    int64_t t = 0;
    int rc = zkl_latch_token(((struct elect *)obj)->l, &t);
    return rc != 0 ? rc : t;
}

static const char *elect_node(void *obj)
{
    return ((struct elect *)obj)->node;
}

/* The latch stops leading: COMMAND must end, as for a lost lock. */
static void elect_changed(zkl_latch *l, int leader, void *arg)
{
    (void)l;
    if (!leader)
        loop_notify(*(int *)arg, LOOP_LOST);
}

static int elect_on_lost(void *obj, int *wfd)
{
    return zkl_latch_set_listener(((struct elect *)obj)->l, elect_changed, wfd);
}

static void elect_destroy(void *obj)
{
    struct elect *e = obj;
    zkl_latch_free(e->l);
    free(e->node);
    free(e->path);
    free(e);
}

const lockkind lockkind_latch = {"leader",     elect_create,  elect_acquire,
                                 elect_release, elect_token,  elect_node,
                                 elect_on_lost, NULL,          elect_destroy};
