/* zkl revoke: ask a lock's holder to let go, as Curator's revocation does
 * (zkl_revoke). Only a holder that listens for it lets go. Public API only. */
#include <stdio.h>

#include "cli.h"

int cli_revoke(int argc, char **argv)
{
    struct cli_target t;
    int rc = cli_parse_target(argc, argv, &t);
    if (rc >= 0)
        return rc;
    zkl_client *c;
    if ((rc = cli_connect(t.servers, (int)t.session_ms, &c)) != 0)
        return rc;
    int err = zkl_revoke(c, t.path, t.node);
    zkl_client_close(c);
    if (err == ZKL_ENOTHELD) {
        if (t.node != NULL)
            cli_err("nothing to revoke: %s has no node %s", t.path, t.node);
        else
            cli_err("nothing to revoke: nobody holds %s", t.path);
        return 1;
    }
    if (err == ZKL_EINVAL && t.node != NULL) {
        return cli_usage_error("revoke: NODE '%s' is not a node name or a node of %s", t.node,
                               t.path);
    }
    if (err != 0)
        return cli_report(t.path, err);
    printf("asked the holder%s of %s%s%s to let go\n", t.node ? "" : "s", t.path,
           t.node ? ": " : "", t.node ? t.node : "");
    return 0;
}
