/* Refusing, before anything is sent, what the server would refuse in a
 * guarded write: a path it does not accept, and a request over its size
 * limit. A server that gets a packet larger than its jute.maxbuffer drops
 * the connection: the writer hears "outcome unknown" and every lock of the
 * client goes through SUSPENDED, for a request that could never succeed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/proto.h>

#include "engine.h"

/* Bytes we count for everything of a request but its strings and data: a
 * multi-op's header (8), each op's header (9) and fixed fields (at most 16)
 * and the closing header (9) take less. */
#define OP_OVERHEAD 64
#define REQ_OVERHEAD 64

static long acl_size(const struct ACL_vector *acl)
{
    long n = 4;
    for (int i = 0; acl != NULL && i < acl->count; i++)
        n += 4 + 4 + (long)strlen(acl->data[i].id.scheme) + 4 + (long)strlen(acl->data[i].id.id);
    return n;
}

static int path_ok(const char *path, int i, bool sequential)
{
    char why[160];
    int err;
    size_t len = path ? strlen(path) : 0;
    if (sequential && len > 1 && path[len - 1] == '/') {
        /* The server names the node: "dir/" + the sequence number. */
        char *full = malloc(len + 2);
        if (full == NULL)
            return ZKL_ENOMEM;
        memcpy(full, path, len);
        memcpy(full + len, "0", 2);
        err = zkl__path_check_server(full, why, sizeof why);
        free(full);
    } else {
        err = zkl__path_check_server(path, why, sizeof why);
    }
    if (err != 0)
        zkl__detail("op %d: %s", i, why);
    return err;
}

int zkl__validate_ops(zkl_client *c, const char *guard, int count, const zoo_op_t *ops)
{
    long total = REQ_OVERHEAD + OP_OVERHEAD + 4 + (long)strlen(guard);
    for (int i = 0; i < count; i++) {
        const zoo_op_t *op = &ops[i];
        const char *path;
        long data = 0;
        bool seq = false;
        switch (op->type) {
        case ZOO_CREATE_OP:
        case ZOO_CREATE2_OP:
        case ZOO_CREATE_CONTAINER_OP:
        case ZOO_CREATE_TTL_OP:
            path = op->create_op.path;
            data = op->create_op.datalen > 0 ? op->create_op.datalen : 0;
            data += acl_size(op->create_op.acl) + 8;
            seq = (op->create_op.flags & ZOO_SEQUENCE) != 0;
            break;
        case ZOO_DELETE_OP:
            path = op->delete_op.path;
            break;
        case ZOO_SETDATA_OP:
            path = op->set_op.path;
            data = op->set_op.datalen > 0 ? op->set_op.datalen : 0;
            break;
        case ZOO_CHECK_OP:
            path = op->check_op.path;
            break;
        default:
            zkl__detail("op %d: type %d is no write a multi-op can carry", i, op->type);
            return ZKL_EINVAL;
        }
        int err = path_ok(path, i, seq);
        if (err != 0)
            return err;
        total += OP_OVERHEAD + 4 + (long)strlen(path) + 4 + data;
    }
    pthread_mutex_lock(&c->mu);
    long max = c->max_request;
    pthread_mutex_unlock(&c->mu);
    if (total > max) {
        zkl__detail("the request would take up to %ld bytes, over the server's limit of %ld "
                    "(jute.maxbuffer; zkl_client_opts_set_max_request)",
                    total, max);
        return ZKL_EINVAL;
    }
    return 0;
}
