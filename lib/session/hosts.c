/* Why an open fails. The connect string and the session timeout are
 * checked before libzookeeper_mt sees them: it refuses some malformed
 * lists without saying why, and takes others that can only end in a wait
 * (port 99999 becomes 34463, a timeout from 2^30 ms on overflows as it
 * connects), so every refusal here names the part that is wrong; and what
 * it refuses itself is explained after. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* Why `entry` (one host:port of the list, `len` bytes) is no server
 * address libzookeeper_mt can use, into why[]; 0 if it is one. */
static int entry_check(const char *entry, size_t len, char *why, size_t whylen)
{
    char e[300];
    if (len >= sizeof e)
        len = sizeof e - 1;
    memcpy(e, entry, len);
    e[len] = '\0';
    if (len == 0)
        return 0; /* an empty entry ("a:1,,b:2") is skipped */
    if (e[0] == '[') {
        /* "[::1]:2181" is written "::1:2181" here. */
        char *close = strchr(e, ']');
        int inner = close ? (int)(close - e - 1) : (int)len - 1;
        snprintf(why, whylen, "'%.100s': libzookeeper_mt takes an IPv6 address without "
                              "brackets: '%.*s%.20s'",
                 e, inner % 100, e + 1, close ? close + 1 : ":PORT");
        return ZKL_EINVAL;
    }
    char *colon = strrchr(e, ':');
    if (colon == NULL || colon[1] == '\0') {
        snprintf(why, whylen, "'%.100s' has no port (host:port)", e);
        return ZKL_EINVAL;
    }
    if (colon == e) {
        snprintf(why, whylen, "'%.100s' has no host (host:port)", e);
        return ZKL_EINVAL;
    }
    /* As libzookeeper_mt reads it (base 0), bounded as a port is. */
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 0);
    if (*end != '\0' || end == colon + 1 || errno != 0) {
        snprintf(why, whylen, "'%.100s': '%.20s' is not a port number", e, colon + 1);
        return ZKL_EINVAL;
    }
    if (port < 1 || port > 65535) {
        snprintf(why, whylen, "'%.100s': port %.20s is not from 1 to 65535", e, colon + 1);
        return ZKL_EINVAL;
    }
    return 0;
}

int zkl__hosts_check(const char *hosts, int session_timeout_ms)
{
    if (hosts == NULL || hosts[0] == '\0') {
        zkl__detail("zkl_client_open: no hosts given");
        return ZKL_EINVAL;
    }
    /* libzookeeper_mt doubles the timeout in an int while it connects: from
     * 2^30 on, that overflows and it retries for ever. */
    if (session_timeout_ms <= 0 || session_timeout_ms > ZKL_SESSION_TIMEOUT_MAX) {
        zkl__detail("zkl_client_open: session timeout %d ms: it must be 1 to %d ms "
                    "(the server grants at most its maxSessionTimeout, 40 s by default)",
                    session_timeout_ms, ZKL_SESSION_TIMEOUT_MAX);
        return ZKL_EINVAL;
    }
    char why[240];
    const char *chroot = strchr(hosts, '/');
    size_t list = chroot ? (size_t)(chroot - hosts) : strlen(hosts);
    for (size_t at = 0; at <= list;) {
        size_t n = strcspn(hosts + at, ",/");
        if (at + n > list)
            n = list - at;
        if (entry_check(hosts + at, n, why, sizeof why) != 0) {
            zkl__detail("zkl_client_open: bad server list: %s", why);
            return ZKL_EINVAL;
        }
        at += n + 1;
    }
    if (list == 0 || strspn(hosts, ",") == list) {
        zkl__detail("zkl_client_open: bad server list '%.120s': no server in it", hosts);
        return ZKL_EINVAL;
    }
    /* "/" alone is no chroot; any other must be a path the server takes. */
    if (chroot != NULL && chroot[1] != '\0' &&
        zkl__path_check_server(chroot, why, sizeof why) != 0) {
        zkl__detail("zkl_client_open: bad chroot '%.100s' in '%.150s': %s", chroot, hosts, why);
        return ZKL_EINVAL;
    }
    return 0;
}

/* What zookeeper_init's failure with errno `e` means. Its own checks of
 * the host list (EINVAL, ENOENT: a name it could not look up) come after
 * zkl__hosts_check's, so they are left to zkl__hosts_start_failed. */
int zkl__hosts_init_failed(int e)
{
    switch (e) {
    case ENOMEM:
        return ZKL_ENOMEM;
    case EINVAL:
    case ENOENT:
        return ZKL_EINVAL;
    case EMFILE:
    case ENFILE:
        zkl__detail("cannot start a ZooKeeper session: out of file descriptors (%s)",
                    strerror(e));
        return ZKL_ESYS;
    default:
        zkl__detail("cannot start a ZooKeeper session: %s", e ? strerror(e) : "unknown error");
        return ZKL_ESYS;
    }
}

/* ZKL_ERESOLVE if a host name of `hosts` does not resolve, else 0 (other
 * problems are libzookeeper_mt's to report). libzookeeper_mt would fail
 * with EINVAL, as for a malformed list. */
static int hosts_resolve(const char *hosts)
{
    char *list = strdup(hosts);
    if (list == NULL)
        return ZKL_ENOMEM;
    char *slash = strchr(list, '/');
    if (slash != NULL)
        *slash = '\0'; /* the chroot */
    int rc = 0;
    char *save = NULL;
    for (char *h = strtok_r(list, ",", &save); h != NULL && rc == 0;
         h = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(h, ':');
        if (colon == NULL || h[0] == '[')
            continue; /* malformed, or an IPv6 literal: nothing to resolve */
        *colon = '\0';
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
        int g = getaddrinfo(h, NULL, &hints, &res);
        if (g == 0)
            freeaddrinfo(res);
        else if (g == EAI_NONAME || g == EAI_AGAIN || g == EAI_FAIL
#ifdef EAI_NODATA
                 || g == EAI_NODATA
#endif
        )
            rc = ZKL_ERESOLVE;
    }
    free(list);
    return rc;
}

int zkl__hosts_start_failed(const char *hosts, int rc)
{
    if (rc == ZKL_EINVAL && hosts_resolve(hosts) == ZKL_ERESOLVE)
        rc = ZKL_ERESOLVE;
    if (rc == ZKL_EINVAL)
        zkl__detail("zkl_client_open: libzookeeper_mt refused the server list '%.150s'", hosts);
    else if (rc == ZKL_ESYS) {
        char why[200];
        snprintf(why, sizeof why, "%s", zkl_last_error_text());
        zkl__detail("zkl_client_open: %s", why);
    }
    return rc;
}

void zkl__hosts_wait_failed(const char *hosts, int rc, int connect_ms)
{
    if (zkl_last_error_text()[0] != '\0')
        return; /* the probe found the reason (lib/session/probe.c) */
    if (rc == ZKL_ECONNLOSS)
        zkl__detail("zkl_client_open: no server answered at %.150s within %d ms", hosts,
                    connect_ms);
    else if (rc == ZKL_ENOAUTH)
        zkl__detail("zkl_client_open: the server refused the credentials");
}
