/* The smallest complete zkl program: take a lock, use its token, release.
 *   cc hello.c $(pkg-config --cflags --libs zkl) -o hello
 *   ./hello 127.0.0.1:2181 */
#include <stdio.h>
#include <zkl.h>

int main(int argc, char **argv)
{
    const char *hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkl_client *client = NULL;
    int rc = zkl_client_open(hosts, 10000, &client); /* waits until connected */
    if (rc != 0) {
        fprintf(stderr, "connect: %s\n", zkl_strerror(rc));
        return 1;
    }
    zkl_mutex *lock = NULL; /* stays NULL if zkl_mutex_new fails: freeing NULL is a no-op */
    rc = zkl_mutex_new(client, "/locks/orders", &lock);
    if (rc == 0)
        rc = zkl_mutex_acquire(lock, 5000); /* at most 5 s */
    if (rc == 0) {
        /* Pass the token with every write to the protected resource, which
         * refuses tokens lower than the highest it has seen. */
        int64_t token = 0;
        rc = zkl_mutex_token(lock, &token);
        if (rc == 0)
            printf("holding /locks/orders, fencing token %lld\n", (long long)token);
        int rr = zkl_mutex_release(lock);
        if (rc == 0)
            rc = rr;
    }
    if (rc != 0)
        fprintf(stderr, "lock: %s\n", zkl_strerror(rc));
    zkl_mutex_free(lock);
    zkl_client_close(client);
    return rc == 0 ? 0 : 1;
}
