/* The parents a node's create needs: the lock path and its ancestors,
 * created as containers (or persistent nodes) with the client's ACL. The
 * engine's only way to create them, and there for any recipe whose nodes
 * live under a path of their own. */
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "kit.h"

int zkl__parents_send(zkl_client *c, zhandle_t *zh, const char *path, bool ancestors, bool self,
                      string_completion_t done, const void *data, size_t stride,
                      zkl__parent_sent_fn sent, void *arg)
{
    int mode = c->container_parents ? ZOO_CONTAINER : ZOO_PERSISTENT;
    char *p = strdup(path);
    if (p == NULL)
        return ZKL_ENOMEM;
    size_t i = 0;
    /* Outermost first: each create finds its parent made by the one before
     * (one session's requests are served in order). */
    for (char *s = ancestors ? strchr(p + 1, '/') : NULL; s != NULL || self;
         s = s ? strchr(s + 1, '/') : NULL) {
        if (s)
            *s = '\0';
        int rc = c->zapi->acreate(zh, p, "", 0, zkl__options_acl(c), mode, done,
                                  (const char *)data + i * stride);
        if (sent)
            sent(arg, i, rc);
        i++;
        if (!s)
            break;
        *s = '/';
    }
    free(p);
    return (int)i;
}
