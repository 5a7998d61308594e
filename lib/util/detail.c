/* What the calling thread's latest failure was about, beyond its code: a
 * sentence (the refused path, the missing chroot, the request over the
 * size limit) and the ZooKeeper code behind a ZKL_EZK. Per thread, so that
 * threads sharing a client never read each other's. */
#include <stdarg.h>
#include <stdio.h>

#include <zookeeper/zookeeper.h>

#include "util.h"

static _Thread_local char tl_text[256];
static _Thread_local int tl_zk;     /* behind the thread's latest ZKL_EZK */
static _Thread_local int tl_mapped; /* the code of the latest zkl__err_from_zk */

void zkl__detail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_text, sizeof tl_text, fmt, ap);
    va_end(ap);
}

void zkl__detail_zk(int rc)
{
    tl_zk = rc;
    zkl__detail("ZooKeeper error %d (%s)", rc, zerror(rc));
}

void zkl__detail_failed(int rc, const char *path)
{
    tl_zk = rc;
    switch (rc) {
    case ZINVALIDACL:
        zkl__detail("the server refused the client's ACL entries for \"%.200s\" (ZooKeeper "
                    "error %d, ZINVALIDACL): a scheme it has no provider for (x509 without "
                    "TLS authentication, sasl without SASL) or an id it cannot parse",
                    path, rc);
        break;
    case ZNOCHILDRENFOREPHEMERALS:
        zkl__detail("\"%.200s\" or one of its parents is an ephemeral node, which can have "
                    "no children (ZooKeeper error %d, ZNOCHILDRENFOREPHEMERALS)", path, rc);
        break;
    case ZNOAUTH:
        zkl__detail("the server's ACL of \"%.200s\" or of a parent refuses this session "
                    "(ZooKeeper error %d, ZNOAUTH)", path, rc);
        break;
    default:
        zkl__detail_zk(rc);
        break;
    }
}

void zkl__detail_queue(const char *path, long children, long limit)
{
    zkl__detail("the lock path \"%.200s\" has %ld children, a listing over the client's request "
                "limit of %ld bytes (the server's jute.maxbuffer): no contender can wait in its "
                "queue; remove the children that are not contenders', or raise the limit",
                path, children, limit);
}

void zkl__note_mapped(int rc)
{
    tl_mapped = rc;
}

int zkl__last_mapped(void)
{
    return tl_mapped;
}

int zkl_last_zk_error(void)
{
    return tl_zk;
}

const char *zkl_last_error_text(void)
{
    return tl_text;
}

void zkl_last_error_clear(void)
{
    tl_text[0] = '\0';
    tl_zk = 0;
}

int zkl__err_from_zk(int rc)
{
    zkl__note_mapped(rc);
    int err = zkl__zk_class(rc);
    if (err == ZKL_EZK)
        zkl__detail_zk(rc);
    return err;
}
