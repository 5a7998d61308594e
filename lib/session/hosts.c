/* The connect string, checked before libzookeeper_mt sees it: it refuses
 * some malformed lists without saying why, and takes others that can only
 * end in a wait (port 99999 becomes 34463), so every refusal here names
 * the part that is wrong. */
#include <errno.h>
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

int zkl__hosts_check(const char *hosts)
{
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
        zkl__detail("zkl_client_open: bad chroot '%.100s': %s", chroot, why);
        return ZKL_EINVAL;
    }
    return 0;
}
