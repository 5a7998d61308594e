/* File descriptors that libraries open behind zkl's back (ZooKeeper's
 * socket and wake-up pipes, a log stream) must not reach COMMAND: it could
 * keep them open long after zkl is gone. Those zkl itself inherited are
 * COMMAND's to inherit too, as with any command that runs another. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

#define MAX_TRACKED 65536

static unsigned char inherited[MAX_TRACKED / 8];

/* Call `fn` for every open descriptor. */
static void each_fd(void (*fn)(int fd))
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        /* No /proc: try the low numbers, where descriptors are given out. */
        for (int fd = 0; fd < 1024; fd++)
            if (fcntl(fd, F_GETFD) >= 0)
                fn(fd);
        return;
    }
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int fd = atoi(e->d_name);
        if (fd != self)
            fn(fd);
    }
    closedir(d);
}

static void note(int fd)
{
    if (fd >= 0 && fd < MAX_TRACKED)
        inherited[fd / 8] |= (unsigned char)(1u << (fd % 8));
}

static void mark_cloexec(int fd)
{
    if (fd >= MAX_TRACKED || (inherited[fd / 8] & (1u << (fd % 8))) != 0)
        return;
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0)
        fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void cli_fds_note_inherited(void)
{
    each_fd(note);
}

/* A descriptor a library opens between this call and the spawn can still
 * leak; the ZooKeeper client only opens one when it reconnects. */
void cli_fds_close_on_exec_new(void)
{
    each_fd(mark_cloexec);
}
