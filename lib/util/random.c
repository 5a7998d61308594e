/* Randomness from the kernel, for the uuids of contender nodes (the engine
 * core draws them from a generator this seeds). */
#include <errno.h>
#include <sys/random.h>
#include <unistd.h>

#include "util.h"

void zkl__random(void *buf, size_t size)
{
    if (zkl__virtual != NULL) { /* a simulation's seeded stream */
        zkl__virtual->random(zkl__virtual->arg, buf, size);
        return;
    }
    unsigned char *r = buf;
    size_t got = 0;
    while (got < size) {
        ssize_t k = getrandom(r + got, size - got, 0);
        if (k > 0)
            got += (size_t)k;
        else if (k < 0 && errno != EINTR)
            break;
    }
    if (got < size) {
        /* No kernel randomness: still unique enough per process and time. */
        uint64_t x = (uint64_t)zkl__now_ns() ^ ((uint64_t)getpid() << 32);
        for (size_t i = got; i < size; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            r[i] = (unsigned char)x;
        }
    }
}

void zkl__random_uuid(char out[37])
{
    uint8_t r[16];
    zkl__random(r, sizeof r);
    r[6] = (uint8_t)((r[6] & 0x0f) | 0x40); /* version 4 */
    r[8] = (uint8_t)((r[8] & 0x3f) | 0x80); /* variant */
    zkl__uuid_text(r, out);
}
