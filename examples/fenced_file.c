/* A fenced resource: append a line to a file that refuses stale lock holders.
 *
 *   fenced_file HOSTS LOCK_PATH STORE_FILE WHO TEXT
 *
 * Takes the zkl mutex LOCK_PATH, then writes TEXT to STORE_FILE together with
 * the hold's fencing token (examples/fenced_store.c). The store remembers the
 * highest token it accepted and refuses lower ones, so a holder that was
 * paused past its session's end — and whose lock was meanwhile taken by a
 * holder with a higher token — cannot overwrite the newer holder's work.
 *
 * Exit status: 0 written, 2 refused as stale, 1 any other error. */
#include <stdio.h>
#include <string.h>
#include <zkl.h>

#include "fenced_store.h"

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s HOSTS LOCK_PATH STORE_FILE WHO TEXT\n", argv[0]);
        return 1;
    }
    const char *hosts = argv[1], *lock_path = argv[2], *store = argv[3];
    zkl_client *client;
    int rc = zkl_client_open(hosts, 10000, &client);
    if (rc != 0) {
        fprintf(stderr, "connect: %s\n", zkl_strerror(rc));
        return 1;
    }
    zkl_mutex *lock = NULL;
    int status = 1;
    rc = zkl_mutex_new(client, lock_path, &lock);
    if (rc == 0)
        rc = zkl_mutex_acquire(lock, 30000);
    if (rc != 0) {
        fprintf(stderr, "lock: %s\n", zkl_strerror(rc));
        goto out;
    }
    /* The token travels with the write; the store decides. Checking
     * zkl_mutex_is_held() first would not be enough: the process can stall
     * between the check and the write. */
    int64_t token = 0;
    int trc = zkl_mutex_token(lock, &token);
    if (trc != 0) {
        fprintf(stderr, "token: %s\n", zkl_strerror(trc));
        goto out;
    }
    int w = fenced_store_write(store, token, argv[4], argv[5]);
    if (w == 0) {
        printf("written with token %lld\n", (long long)token);
        status = 0;
    } else if (w == FENCED_STALE) {
        printf("refused: token %lld is stale (the store has seen %lld)\n", (long long)token,
               (long long)fenced_store_fence(store));
        status = 2;
    } else {
        fprintf(stderr, "store: %s\n", strerror(-w));
    }
    rc = zkl_mutex_release(lock);
    if (rc != 0) {
        fprintf(stderr, "release: %s\n", zkl_strerror(rc));
        status = status == 0 ? 1 : status;
    }
out:
    zkl_mutex_free(lock);
    zkl_client_close(client);
    return status;
}
