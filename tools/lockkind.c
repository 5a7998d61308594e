/* The lock kinds of `zkl lock`: each recipe's calls under one interface. */
#include "lockkind.h"

static int mutex_create(zkl_client *c, const char *path, long permits, void **out)
{
    (void)permits;
    zkl_mutex *m;
    int rc = zkl_mutex_new(c, path, &m);
    if (rc == 0)
        *out = m;
    return rc;
}

static int mutex_acquire(void *obj, long timeout_ms)
{
    return zkl_mutex_acquire(obj, timeout_ms);
}

static int mutex_release(void *obj)
{
    return zkl_mutex_release(obj);
}

static int64_t mutex_token(void *obj)
{
    return zkl_mutex_token(obj);
}

static const char *mutex_node(void *obj)
{
    return zkl_mutex_node(obj);
}

static void mutex_destroy(void *obj)
{
    zkl_mutex_free(obj);
}

const lockkind lockkind_mutex = {"mutex",     mutex_create, mutex_acquire, mutex_release,
                                 mutex_token, mutex_node,   mutex_destroy};
