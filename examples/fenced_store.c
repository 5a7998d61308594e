/* A fenced file: see fenced_store.h. */
#include "fenced_store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define HEADER_LEN 27 /* "fence " + 20 digits + "\n" */

/* Read the fence from an open, locked store: 0 for an empty file. */
static int64_t read_fence(int fd)
{
    char buf[HEADER_LEN + 1];
    ssize_t n = pread(fd, buf, HEADER_LEN, 0);
    if (n < 0)
        return -errno;
    if (n == 0)
        return 0;
    buf[n] = '\0';
    long long v;
    if (n != HEADER_LEN || sscanf(buf, "fence %20lld", &v) != 1)
        return -EPROTO; /* not a store: never overwrite it */
    return (int64_t)v;
}

int64_t fenced_store_fence(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    int64_t f = flock(fd, LOCK_SH) == 0 ? read_fence(fd) : -errno;
    close(fd);
    return f;
}

static int write_all(int fd, const char *p, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
        if (off >= 0)
            off += n;
    }
    return 0;
}

int fenced_store_write(const char *path, int64_t token, const char *who, const char *data)
{
    if (token <= 0 || who == NULL || data == NULL || strchr(who, ' ') || strchr(who, '\n') ||
        strchr(data, '\n'))
        return -EINVAL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc;
    /* Compare and write as one step: concurrent writers queue here. */
    if (flock(fd, LOCK_EX) != 0) {
        rc = -errno;
        goto out;
    }
    int64_t fence = read_fence(fd);
    if (fence < 0) {
        rc = (int)fence;
        goto out;
    }
    if (token < fence) {
        rc = FENCED_STALE; /* a holder whose lock has passed on */
        goto out;
    }
    char line[4096];
    int len = snprintf(line, sizeof line, "%" PRId64 " %s %s\n", token, who, data);
    if (len < 0 || (size_t)len >= sizeof line) {
        rc = -E2BIG;
        goto out;
    }
    char header[HEADER_LEN + 1];
    snprintf(header, sizeof header, "fence %020" PRId64 "\n", token);
    /* Journal first, then the fence: a crash between leaves the old fence,
     * which is still correct for every token seen before. */
    if (fence == 0 && (rc = write_all(fd, header, HEADER_LEN, 0)) != 0)
        goto out;
    if (lseek(fd, 0, SEEK_END) < 0) {
        rc = -errno;
        goto out;
    }
    if ((rc = write_all(fd, line, (size_t)len, -1)) != 0)
        goto out;
    rc = write_all(fd, header, HEADER_LEN, 0);
out:
    close(fd); /* drops the flock */
    return rc;
}
