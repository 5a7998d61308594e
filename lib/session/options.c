/* Client options (zkl_client_opts_*), the ACL they choose, and the quiet
 * libzookeeper_mt log. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"

/* ---- options ---------------------------------------------------------- */

int zkl_client_opts_new(zkl_client_opts **out)
{
    if (out == NULL)
        return ZKL_EINVAL;
    zkl_client_opts *o = calloc(1, sizeof *o);
    if (o == NULL)
        return ZKL_ENOMEM;
    o->reopen = 1;
    o->container_parents = 1;
    o->acl = ZKL_ACL_OPEN;
    o->max_request = ZKL__MAX_REQUEST_DEFAULT;
    o->quiet_zk_log = 1;
    o->metrics = 1;
    o->metric_paths = ZKL__METRIC_PATHS_DEFAULT;
    *out = o;
    return 0;
}

void zkl_client_opts_free(zkl_client_opts *o)
{
    if (o == NULL)
        return;
    if (o->digest) {
        memset(o->digest, 0, strlen(o->digest));
        free(o->digest);
    }
    free(o);
}

int zkl_client_opts_set_reopen(zkl_client_opts *o, int on)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->reopen = on != 0;
    return 0;
}

int zkl_client_opts_set_container_parents(zkl_client_opts *o, int on)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->container_parents = on != 0;
    return 0;
}

int zkl_client_opts_set_digest_auth(zkl_client_opts *o, const char *user_password)
{
    if (o == NULL || user_password == NULL || strchr(user_password, ':') == NULL ||
        user_password[0] == ':')
        return ZKL_EINVAL;
    char *d = strdup(user_password);
    if (d == NULL)
        return ZKL_ENOMEM;
    if (o->digest) {
        memset(o->digest, 0, strlen(o->digest));
        free(o->digest);
    }
    o->digest = d;
    return 0;
}

int zkl_client_opts_set_acl(zkl_client_opts *o, enum zkl_acl acl)
{
    if (o == NULL || (acl != ZKL_ACL_OPEN && acl != ZKL_ACL_CREATOR))
        return ZKL_EINVAL;
    o->acl = acl;
    return 0;
}

int zkl_client_opts_set_max_request(zkl_client_opts *o, int bytes)
{
    if (o == NULL || bytes < ZKL__MAX_REQUEST_MIN)
        return ZKL_EINVAL;
    o->max_request = bytes;
    return 0;
}

int zkl_client_opts_set_quiet_zk_log(zkl_client_opts *o, int on)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->quiet_zk_log = on != 0;
    return 0;
}

int zkl_client_opts_set_metrics(zkl_client_opts *o, int on)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->metrics = on != 0;
    return 0;
}

int zkl_client_opts_set_max_metric_paths(zkl_client_opts *o, int max_paths)
{
    if (o == NULL || max_paths < 0)
        return ZKL_EINVAL;
    o->metric_paths = max_paths;
    return 0;
}

int zkl_client_opts_set_connect_timeout(zkl_client_opts *o, int ms)
{
    if (o == NULL || ms < 0)
        return ZKL_EINVAL;
    o->connect_ms = ms;
    return 0;
}

const struct ACL_vector *zkl__options_acl(zkl_client *c)
{
    return c->acl == ZKL_ACL_CREATOR ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}

/* libzookeeper_mt logs to stderr at INFO by default: every connect and
 * disconnect. A library should be quiet; ZKL_ZK_LOG=1 brings it back, and
 * zkl_client_opts_set_quiet_zk_log(o, 0) leaves it to the program. */
void zkl__options_log_init(void)
{
    const char *v = getenv("ZKL_ZK_LOG");
    if (v && *v == '1') {
        zoo_set_debug_level(ZOO_LOG_LEVEL_INFO);
        return;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    /* Above descriptor 2: in a program started with stdout closed, the
     * lowest free descriptor is 1, and /dev/null there would swallow the
     * program's own output without an error. */
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int high = fd >= 0 && fd <= 2 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
    if (high != fd && fd >= 0)
        close(fd);
    FILE *devnull = high >= 0 ? fdopen(high, "w") : NULL;
    if (devnull)
        zoo_set_log_stream(devnull); /* kept open for the process's life */
    else if (high >= 0)
        close(high);
}
