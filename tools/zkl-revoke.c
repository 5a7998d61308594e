/* zkl revoke: ask a lock's holders to let go, as Curator's revocation does
 * (zkl_revoke), wait for them to do so, and say which did. The request
 * replaces a holder's owner in its node (the protocol's "__REVOKE__"), so a
 * holder that did not let go in time gets its owner back: zkl holders then
 * still names it. Public API only (the node's data through the bridge
 * header). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "zkl/zookeeper.h"

/* How long zkl revoke waits for the holders by default: a zkl lock
 * --revocable holder gives its COMMAND --kill-after (5 s) to end. */
#define DEFAULT_WAIT_MS 10000

struct target {
    char full[2048];
    char *owner; /* the node's data before the request; NULL if unknown */
    size_t owner_len;
    char shown[300];
    bool gone;
};

/* The node's name in NODE (a name, or a full path under `path`), or NULL
 * when NODE is neither. */
static const char *node_name(const char *path, const char *node)
{
    size_t pl = strlen(path);
    if (node[0] == '/')
        return strncmp(node, path, pl) == 0 && node[pl] == '/' && strchr(node + pl + 1, '/') == NULL
                   ? node + pl + 1
                   : NULL;
    return strchr(node, '/') == NULL && node[0] != '\0' ? node : NULL;
}

/* The holder did not let go: put its owner back where the request wrote
 * over it, unless the node changed since (then it is not ours to touch). */
static void restore_owner(zkl_client *c, const struct target *x)
{
    char buf[64];
    int len = (int)sizeof buf;
    struct Stat st;
    zhandle_t *zh;
    if (x->owner == NULL || zkl_client_handle_borrow(c, &zh) != 0)
        return;
    if (zoo_get(zh, x->full, 0, buf, &len, &st) == ZOK &&
        len == (int)strlen(CLI_REVOKE_DATA) && memcmp(buf, CLI_REVOKE_DATA, (size_t)len) == 0)
        (void)zoo_set(zh, x->full, x->owner, (int)x->owner_len, st.version);
    zkl_client_handle_return(c, zh);
}

/* Wait until every target's node is gone, or until `wait_ms` passed. */
static void wait_gone(zkl_client *c, struct target *xs, size_t n, long wait_ms)
{
    int64_t until = cli_now_ms() + wait_ms;
    for (;;) {
        size_t left = 0;
        /* Borrowed for one round only: between sessions there is none,
         * and a loan held for the whole wait would keep an expired
         * session from being replaced. */
        zhandle_t *zh;
        bool lent = zkl_client_handle_borrow(c, &zh) == 0;
        for (size_t i = 0; i < n; i++) {
            struct Stat st;
            if (lent && !xs[i].gone && zoo_exists(zh, xs[i].full, 0, &st) == ZNONODE)
                xs[i].gone = true;
            left += !xs[i].gone;
        }
        if (lent)
            zkl_client_handle_return(c, zh);
        if (left == 0 || cli_now_ms() >= until)
            return;
        usleep(50 * 1000);
    }
}

/* Ask, wait, say; the client is the caller's. */
static int ask_and_wait(zkl_client *c, const struct cli_target *t, const char *want)
{
    zkl_participant *ps;
    size_t n;
    int err = zkl_participants_list(c, t->path, &ps, &n);
    if (err != 0)
        return cli_report(t->path, err);
    struct target *xs = calloc(n ? n : 1, sizeof *xs);
    if (xs == NULL) {
        zkl_participants_free(ps, n);
        cli_err("out of memory");
        return EX_OSERR;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (want != NULL ? strcmp(ps[i].node, want) != 0 : !ps[i].holds)
            continue;
        struct target *x = &xs[k++];
        snprintf(x->full, sizeof x->full, "%s/%s", t->path, ps[i].node);
        snprintf(x->shown, sizeof x->shown, "(unreadable)");
        if (ps[i].readable && !cli_revocation_requested(&ps[i])) {
            cli_printable(ps[i].owner, x->shown, sizeof x->shown);
            if ((x->owner = malloc(ps[i].owner_len + 1)) != NULL) {
                memcpy(x->owner, ps[i].owner, ps[i].owner_len);
                x->owner_len = ps[i].owner_len;
            }
        } else if (ps[i].readable) {
            snprintf(x->shown, sizeof x->shown, "unknown: asked to let go before");
        }
    }
    zkl_participants_free(ps, n);
    int code = 0;
    for (size_t i = 0; i < k && code == 0; i++) {
        err = zkl_revoke(c, t->path, strrchr(xs[i].full, '/') + 1);
        if (err == ZKL_ENOTHELD)
            xs[i].gone = true; /* gone meanwhile */
        else if (err != 0)
            code = cli_report(t->path, err);
    }
    if (code == 0 && k == 0) {
        if (t->node != NULL)
            cli_err("nothing to revoke: %s has no node %s", t->path, t->node);
        else
            cli_err("nothing to revoke: nobody holds %s", t->path);
        code = 1;
    } else if (code == 0 && t->wait_ms == 0) {
        for (size_t i = 0; i < k; i++)
            if (!xs[i].gone)
                printf("asked to let go: %s (owner %s)\n", xs[i].full, xs[i].shown);
    } else if (code == 0) {
        wait_gone(c, xs, k, t->wait_ms);
        for (size_t i = 0; i < k; i++) {
            if (xs[i].gone) {
                printf("let go: %s (owner %s)\n", xs[i].full, xs[i].shown);
                continue;
            }
            restore_owner(c, &xs[i]);
            cli_err("did not let go within %g s: %s (owner %s): it does not act on revocation "
                    "requests (a zkl lock without --revocable?); its owner is back in its node",
                    (double)t->wait_ms / 1000, xs[i].full, xs[i].shown);
            code = 2;
        }
    }
    for (size_t i = 0; i < k; i++)
        free(xs[i].owner);
    free(xs);
    return code;
}

int cli_revoke(int argc, char **argv)
{
    struct cli_target t;
    int rc = cli_parse_target(argc, argv, &t, true, DEFAULT_WAIT_MS);
    if (rc >= 0)
        return rc;
    const char *want = t.node != NULL ? node_name(t.path, t.node) : NULL;
    if (t.node != NULL && want == NULL)
        return cli_usage_error("revoke: NODE '%s' is not a node name or a node of %s", t.node,
                               t.path);
    zkl_client *c;
    if ((rc = cli_connect(t.servers, (int)t.session_ms, &c)) != 0)
        return rc;
    /* No semaphore hears revocation, zkl's or Curator's: asking would only
     * write over the leases' owners. */
    int limit = 0;
    if (zkl_participants_limit(c, t.path, &limit) == 0 && limit > 0) {
        zkl_client_close(c);
        cli_err("%s is a semaphore: its leases cannot be revoked (no semaphore acts on "
                "revocation requests); zkl break deletes them",
                t.path);
        return 2;
    }
    rc = ask_and_wait(c, &t, want);
    zkl_client_close(c);
    return rc;
}
