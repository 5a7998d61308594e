/* The one mapping from ZooKeeper's return codes to ZKL_E... codes: pure
 * (lib/util/detail.c's zkl__err_from_zk also notes the code for the
 * calling thread). */
#include <zookeeper/zookeeper.h>

#include "util.h"

/* One class per code. ZSESSIONMOVED is a connection error, not a lost
 * session: the server refuses a request that arrives on a connection the
 * session has since left for another server. The session, and every node
 * and hold of it, lives on; only that request's outcome has to be looked
 * up again. Calling it a loss would make a holder give up a lock it still
 * holds, and the engine drop a node that still exists (an orphan). */
int zkl__zk_class(int rc)
{
    switch (rc) {
    case ZOK:
        return 0;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT: /* the server stalled the request (ZOOKEEPER-4537) */
    case ZSESSIONMOVED:
        return ZKL_ECONNLOSS;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZCLOSING:
        return ZKL_ELOST;
    case ZNOAUTH:
    case ZAUTHFAILED:
        return ZKL_ENOAUTH;
    case ZBADARGUMENTS:
    case ZINVALIDACL:              /* the client's ACL entries: fix the options */
    case ZNOCHILDRENFOREPHEMERALS: /* the lock path: fix the path */
        return ZKL_EINVAL;
    case ZSYSTEMERROR:
        return ZKL_ESYS;
    default:
        return ZKL_EZK;
    }
}

bool zkl__zk_conn_error(int rc)
{
    return zkl__zk_class(rc) == ZKL_ECONNLOSS;
}

bool zkl__zk_session_error(int rc)
{
    return zkl__zk_class(rc) == ZKL_ELOST;
}
