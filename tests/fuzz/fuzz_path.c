/* libFuzzer target: zkl__path_check on arbitrary bytes. Invariants: no
 * crash or undefined behaviour, and a path it accepts has the documented
 * shape (absolute, no empty/"."/".." segment, no trailing '/', no control
 * character, at most ZKL__MAX_PATH bytes, not under /zookeeper); and
 * joining a child name to an accepted path gives that path, '/', the name. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kit.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    if (s == NULL)
        return 0;
    if (zkl__path_check(s) == 0) {
        size_t len = strlen(s);
        if (s[0] != '/' || len < 2 || len > ZKL__MAX_PATH || s[len - 1] == '/')
            abort();
        if (strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../"))
            abort();
        if ((len >= 2 && strcmp(s + len - 2, "/.") == 0) ||
            (len >= 3 && strcmp(s + len - 3, "/..") == 0))
            abort();
        if (strcmp(s, "/zookeeper") == 0 || strncmp(s, "/zookeeper/", 11) == 0)
            abort();
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
                abort();
        char *j = zkl__path_join(s, "lock-0000000001");
        if (j == NULL || strncmp(j, s, len) != 0 || j[len] != '/' ||
            strcmp(j + len + 1, "lock-0000000001") != 0)
            abort();
        free(j);
    }
    free(s);
    return 0;
}
