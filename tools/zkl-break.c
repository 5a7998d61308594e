/* zkl break: delete a lock's holder node (or a named node) on the server,
 * for an operator whose holder is stuck. The holder's session lives on; a
 * holder that watches its own node hears of it and stops. Public API only
 * (the delete through the bridge header). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zkl/zookeeper.h"

/* Delete `name` under `path`; prints what it deleted. 0, 1 if the node is
 * not there, 2 if it is no contender's (said so), or an exit code after
 * saying why. */
static int delete_one(zkl_client *c, const char *path, const zkl_participant *x)
{
    char full[2048];
    snprintf(full, sizeof full, "%s/%s", path, x->node);
    /* Only a contender's node, which is ephemeral: a persistent child named
     * like one (a lock path of its own, data) is no holder. Deleted at the
     * version seen, so that what is deleted is what was checked. */
    struct Stat st;
    zhandle_t *zh;
    int err = zkl_client_handle_borrow(c, &zh); /* the keeper closes no borrowed handle */
    if (err != 0)
        return cli_report(path, err);
    int zrc = zoo_exists(zh, full, 0, &st);
    if (zrc == ZOK && st.ephemeralOwner != 0)
        zrc = zoo_delete(zh, full, st.version);
    zkl_client_handle_return(c, zh);
    if (zrc == ZOK && st.ephemeralOwner == 0) {
        char shown[2048];
        cli_printable(full, shown, sizeof shown);
        cli_err("not deleting %s: a persistent node, not a contender's (contenders' nodes are "
                "ephemeral)", shown);
        return 2;
    }
    if (zrc == ZNONODE)
        return 1;
    if (zrc != ZOK) {
        cli_err("cannot delete %s: %s", full, zerror(zrc));
        return zrc == ZNOAUTH ? EX_NOPERM
               : zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT ? EX_UNAVAILABLE
                                                                    : EX_SOFTWARE;
    }
    char owner[300] = "(unreadable)";
    if (x->readable)
        cli_printable(x->owner, owner, sizeof owner);
    printf("deleted %s (%s, token %lld, owner %s)\n", full, x->holds ? "holder" : "waiter",
           (long long)x->token, owner);
    return 0;
}

int cli_break(int argc, char **argv)
{
    struct cli_target t;
    int rc = cli_parse_target(argc, argv, &t, false, 0);
    if (rc >= 0)
        return rc;
    zkl_client *c;
    if ((rc = cli_connect(t.servers, (int)t.session_ms, &c)) != 0)
        return rc;
    zkl_participant *ps;
    size_t n;
    int err = zkl_participants_list(c, t.path, &ps, &n);
    if (err != 0) {
        zkl_client_close(c);
        return cli_report(t.path, err);
    }
    /* The named node (a name or a full path), or every holder. */
    const char *want = t.node;
    if (want != NULL && want[0] == '/') {
        size_t pl = strlen(t.path);
        want = strncmp(want, t.path, pl) == 0 && want[pl] == '/' ? want + pl + 1 : "";
    }
    int deleted = 0, skipped = 0, code = 0;
    for (size_t i = 0; i < n && code == 0; i++) {
        if (want != NULL ? strcmp(ps[i].node, want) != 0 : !ps[i].holds)
            continue;
        int r = delete_one(c, t.path, &ps[i]);
        if (r == 0)
            deleted++;
        else if (r == 2)
            skipped++;
        else if (r != 1)
            code = r;
    }
    zkl_participants_free(ps, n);
    zkl_client_close(c);
    if (code != 0)
        return code;
    if (deleted == 0) {
        if (skipped > 0)
            return 1; /* said why */
        if (t.node != NULL)
            cli_err("nothing to break: %s has no node %s", t.path, t.node);
        else
            cli_err("nothing to break: nobody holds %s", t.path);
        return 1;
    }
    return cli_flush_stdout();
}
