/* Path checks and joins: what the server refuses in a path, and what zkl
 * refuses in a lock path. Pure, but for the thread's detail text. */
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "util.h"

/* The next UTF-8 character at s: its code point, and its length in *len;
 * -1 for a malformed sequence (a stray continuation byte, a truncated or
 * overlong sequence, an encoded surrogate, beyond U+10FFFF). The server
 * decodes paths as Java does, into U+FFFD for such bytes, and refuses it. */
static long utf8_next(const unsigned char *s, size_t *len)
{
    unsigned char b = s[0];
    long cp;
    size_t n;
    if (b < 0x80)
        return *len = 1, b;
    if (b >= 0xc2 && b <= 0xdf)
        n = 2, cp = b & 0x1f;
    else if (b >= 0xe0 && b <= 0xef)
        n = 3, cp = b & 0x0f;
    else if (b >= 0xf0 && b <= 0xf4)
        n = 4, cp = b & 0x07;
    else
        return *len = 1, -1;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return *len = i, -1;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    *len = n;
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    return cp;
}

/* Whether the server refuses code point cp in a path. It checks the UTF-16
 * units of the path: control characters, the surrogates (hence every
 * character beyond U+FFFF, stored as a pair), the private use area up to
 * U+F8FF, and U+FFF0..U+FFFF. */
static bool refused_char(long cp)
{
    return (cp >= 0x01 && cp <= 0x1f) || (cp >= 0x7f && cp <= 0x9f) ||
           (cp >= 0xd800 && cp <= 0xf8ff) || cp >= 0xfff0;
}

int zkl__path_check_server(const char *path, char *why, size_t whylen)
{
#define REFUSE(...) \
    do { \
        if (why != NULL) \
            snprintf(why, whylen, __VA_ARGS__); \
        return ZKL_EINVAL; \
    } while (0)
    if (path == NULL)
        REFUSE("path is NULL");
    if (path[0] != '/')
        REFUSE("path \"%.64s\" does not start with '/'", path);
    size_t len = strlen(path);
    if (len > 1 && path[len - 1] == '/')
        REFUSE("path \"%.64s\" ends with '/'", path);
    const unsigned char *seg = (const unsigned char *)path + 1;
    for (const unsigned char *p = seg; len > 1;) {
        if (*p == '/' || *p == '\0') {
            size_t n = (size_t)(p - seg);
            if (n == 0)
                REFUSE("path \"%.64s\" has an empty segment at byte %zu", path,
                       (size_t)(p - (const unsigned char *)path));
            if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
                REFUSE("path \"%.64s\" has a \".\" or \"..\" segment", path);
            if (*p == '\0')
                break;
            seg = ++p;
            continue;
        }
        size_t k;
        long cp = utf8_next(p, &k);
        size_t at = (size_t)(p - (const unsigned char *)path);
        if (cp < 0)
            REFUSE("path has a byte sequence that is not UTF-8 at byte %zu (0x%02x)", at, p[0]);
        if (refused_char(cp))
            REFUSE("path has character U+%04lX at byte %zu, which ZooKeeper refuses", (unsigned long)cp,
                   at);
        p += k;
    }
    return 0;
#undef REFUSE
}

/* A segment below the first that ends in ten digits after a contender's
 * kind (lock-, latch-, __READ__, ...) or a protection prefix is named like a
 * contender's node: its parent, as a lock path, would list it as a
 * contender that never leaves, and `zkl break` on the parent would take it
 * for the holder. Other names that end in digits (a date, "/jobs/2024010112")
 * stay valid lock paths. */
static bool contender_like(const char *seg, size_t len)
{
    static const char *const kinds[] = {"lock-", "latch-", "__READ__", "__WRIT__", "zkl-wait-",
                                        "zkl-lease-", "__lock__", "__rlock__"};
    if (len < 10 || strspn(seg + len - 10, "0123456789") < 10)
        return false;
    if (len > 3 && strncmp(seg, "_c_", 3) == 0)
        return true;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t kl = strlen(kinds[i]);
        for (size_t at = 0; at + kl <= len - 10; at++)
            if (strncmp(seg + at, kinds[i], kl) == 0)
                return true;
    }
    return false;
}

static int contender_segment(const char *path, char *why, size_t n)
{
    for (const char *seg = strchr(path + 1, '/'); seg != NULL; seg = strchr(seg + 1, '/')) {
        size_t len = strcspn(seg + 1, "/");
        if (!contender_like(seg + 1, len))
            continue;
        snprintf(why, n, "path segment \"%.*s\" is named like a contender's node: "
                 "its parent's lock would count it as a contender", (int)(len > 80 ? 80 : len),
                 seg + 1);
        return ZKL_EINVAL;
    }
    return 0;
}

int zkl__path_check(const char *path)
{
    char why[160];
    int err = zkl__path_check_server(path, why, sizeof why);
    if (err == 0 && path[1] == '\0')
        err = ZKL_EINVAL, snprintf(why, sizeof why, "a lock path cannot be \"/\"");
    if (err == 0 && strlen(path) > ZKL__MAX_PATH)
        err = ZKL_EINVAL, snprintf(why, sizeof why, "path is longer than %d bytes", ZKL__MAX_PATH);
    if (err == 0 && strncmp(path, "/zookeeper", 10) == 0 && (path[10] == '\0' || path[10] == '/'))
        err = ZKL_EINVAL, snprintf(why, sizeof why, "path is under /zookeeper, the server's own");
    if (err == 0)
        err = contender_segment(path, why, sizeof why);
    if (err != 0)
        zkl__detail("%s", why);
    return err;
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

