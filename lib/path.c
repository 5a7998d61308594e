/* Path checks, joins and node-name parsing: pure functions, no I/O but the
 * random source of zkl__uuid. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "internal.h"

#define SEQ_DIGITS 10
#define PROTECT_PREFIX "_c_"
#define PROTECT_LEN (3 + 36 + 1) /* "_c_" uuid "-" */

int zkl__path_check(const char *path)
{
    if (path == NULL || path[0] != '/' || path[1] == '\0')
        return ZKL_EINVAL;
    size_t len = strlen(path);
    if (len > ZKL__MAX_PATH || path[len - 1] == '/')
        return ZKL_EINVAL;
    /* Walk the segments: none may be empty, "." or "..", nor hold a
     * character ZooKeeper refuses. */
    const char *seg = path + 1;
    for (const char *p = seg;; p++) {
        if (*p == '/' || *p == '\0') {
            size_t n = (size_t)(p - seg);
            if (n == 0 || (n == 1 && seg[0] == '.') ||
                (n == 2 && seg[0] == '.' && seg[1] == '.'))
                return ZKL_EINVAL;
            if (n == 9 && memcmp(seg, "zookeeper", 9) == 0 && seg == path + 1)
                return ZKL_EINVAL; /* the server's own subtree */
            if (*p == '\0')
                break;
            seg = p + 1;
        } else {
            unsigned char ch = (unsigned char)*p;
            if (ch < 0x20 || ch == 0x7f)
                return ZKL_EINVAL;
        }
    }
    return 0;
}

char *zkl__path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (s == NULL)
        return NULL;
    memcpy(s, dir, a);
    s[a] = '/';
    memcpy(s + a + 1, name, b + 1);
    return s;
}

void zkl__uuid(char out[37])
{
    unsigned char r[16];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t k = getrandom(r + got, sizeof r - got, 0);
        if (k > 0)
            got += (size_t)k;
        else if (k < 0 && errno != EINTR)
            break;
    }
    if (got < sizeof r) {
        /* No kernel randomness: still unique enough per process and time. */
        uint64_t x = (uint64_t)zkl__now_ns() ^ ((uint64_t)getpid() << 32);
        for (size_t i = 0; i < sizeof r; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            r[i] = (unsigned char)x;
        }
    }
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* version 4 */
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80); /* variant */
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[r[i] >> 4];
        out[o++] = hex[r[i] & 15];
    }
    out[o] = '\0';
}

int zkl__entry_parse(const char *name, zkl__entry *e)
{
    size_t len = strlen(name);
    if (len < SEQ_DIGITS)
        return -1;
    int64_t seq = 0;
    for (size_t i = len - SEQ_DIGITS; i < len; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        seq = seq * 10 + (name[i] - '0');
    }
    e->name = name;
    e->seq = seq;
    /* The kind sits between the protection prefix (if any) and the digits. */
    if (len >= PROTECT_LEN + SEQ_DIGITS && strncmp(name, PROTECT_PREFIX, 3) == 0 &&
        name[PROTECT_LEN - 1] == '-')
        e->kind = name + PROTECT_LEN;
    else
        e->kind = name;
    return 0;
}

int zkl__entry_is(const zkl__entry *e, const char *kind)
{
    size_t klen = strlen(kind);
    size_t have = strlen(e->name) - SEQ_DIGITS - (size_t)(e->kind - e->name);
    return have == klen && memcmp(e->kind, kind, klen) == 0;
}

int zkl__name_has_uuid(const char *name, const char *uuid)
{
    return strncmp(name, PROTECT_PREFIX, 3) == 0 && strncmp(name + 3, uuid, 36) == 0 &&
           name[PROTECT_LEN - 1] == '-';
}
