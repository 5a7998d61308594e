/* The parents a node's create needs: the lock path and its ancestors,
 * created as containers (or persistent nodes) with the client's ACL. The
 * engine's only way to create them, and there for any recipe whose nodes
 * live under a path of their own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void zkl__parents_remove(zkl_client *c, zkl__made *m, int64_t deadline)
{
    if (m->n == 0) {
        zkl__made_free(m);
        return;
    }
    struct zkl__batch *b;
    zhandle_t *zh;
    const char *bad = NULL;
    int bad_rc = 0;
    int err = zkl__batch_begin(c, m->n, &b, &zh);
    if (err == 0) {
        /* Deepest first, pipelined: served in order, each finds its
         * children gone. A parent someone else uses stays (ZNOTEMPTY). */
        for (size_t k = 0; k < m->n; k++)
            zkl__sent(&b->s[k], c->zapi->adelete(zh, m->paths[m->n - 1 - k], -1,
                                                zkl__void_done, &b->s[k]));
        zkl__send_end(c, (int)m->n);
        err = zkl__batch_wait(b, zkl__request_deadline(c, deadline));
        for (size_t k = 0; err == 0 && k < m->n && bad == NULL; k++) {
            int rc = b->s[k].rc;
            if (rc != ZOK && rc != ZNONODE && rc != ZNOTEMPTY) {
                bad = m->paths[m->n - 1 - k];
                bad_rc = rc;
            }
        }
        zkl__batch_drop(b);
    }
    if (err != 0 || bad != NULL) {
        char was[256];
        snprintf(was, sizeof was, "%s", zkl_last_error_text());
        if (bad == NULL)
            zkl__detail("%.150s; the parents it created may stay (delete: %s)", was,
                        zkl_strerror(err));
        else
            zkl__detail("%.150s; the parent \"%.50s\" it created stays (delete refused: "
                        "ZooKeeper error %d)", was, bad, bad_rc);
    }
    zkl__made_free(m);
}

int zkl__acquire_node(zkl_client *c, const char *dir, const zkl__policy *pol,
                      const zkl__qopts *o, int64_t deadline, zkl__node **out)
{
    zkl__made made = {0};
    zkl__qopts q = *o;
    q.made = &made;
    int rc = zkl__wait_acquire(c, dir, pol, &q, deadline, out);
    zkl__parents_remove(c, &made, deadline); /* empty unless refused */
    return rc;
}
