/* The zkl demo: one contender process. Takes the lock at PATH ROUNDS times,
 * and while holding it checks and shows mutual exclusion: it creates a
 * marker file that must not exist (O_EXCL), prints its fencing token, works
 * a little, and removes the marker.
 *   zkl-demo HOSTS PATH ROUNDS MARKER_FILE */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <zkl.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s HOSTS PATH ROUNDS MARKER_FILE\n", argv[0]);
        return 64;
    }
    const char *hosts = argv[1], *path = argv[2], *marker = argv[4];
    int rounds = atoi(argv[3]);
    zkl_client *c;
    int rc = zkl_client_open(hosts, 10000, &c);
    if (rc != 0) {
        fprintf(stderr, "open: %s\n", zkl_strerror(rc));
        return 69;
    }
    zkl_mutex *m;
    if ((rc = zkl_mutex_new(c, path, &m)) != 0) {
        fprintf(stderr, "mutex: %s\n", zkl_strerror(rc));
        return 70;
    }
    int violations = 0;
    for (int i = 0; i < rounds; i++) {
        if ((rc = zkl_mutex_acquire(m, 30000)) != 0) {
            fprintf(stderr, "acquire: %s\n", zkl_strerror(rc));
            return 1;
        }
        int fd = open(marker, O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd < 0) {
            violations++;
            fprintf(stderr, "pid %d: VIOLATION: someone else is inside\n", (int)getpid());
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t token = -1;
        (void)zkl_mutex_token(m, &token); /* held: it has one */
        printf("%lld.%09ld pid %-7d holds %s  token %lld\n", (long long)ts.tv_sec, ts.tv_nsec,
               (int)getpid(), path, (long long)token);
        fflush(stdout);
        usleep(20000 + (unsigned)(rand() % 30000)); /* the critical work */
        if (fd >= 0) {
            close(fd);
            unlink(marker);
        }
        if ((rc = zkl_mutex_release(m)) != 0) {
            fprintf(stderr, "release: %s\n", zkl_strerror(rc));
            return 1;
        }
    }
    zkl_mutex_free(m);
    zkl_client_close(c);
    return violations ? 2 : 0;
}
