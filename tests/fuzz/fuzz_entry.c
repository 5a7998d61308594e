/* libFuzzer target: zkl__entry_parse on arbitrary node names. Invariants:
 * no crash or undefined behaviour; a parsed name ends in 10 digits that
 * give its sequence; its kind lies inside the name, before the digits, and
 * zkl__entry_is agrees with it; a name with a protection prefix has the
 * kind right after it; zkl__name_has_uuid finds the uuid it was built with. */
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
    size_t len = strlen(s);
    zkl__entry e;
    if (zkl__entry_parse(s, &e) == 0) {
        if (len < 10 || e.name != s || e.kind < s || e.kind > s + len - 10)
            abort();
        int64_t seq = 0;
        for (size_t i = len - 10; i < len; i++) {
            if (s[i] < '0' || s[i] > '9')
                abort();
            seq = seq * 10 + (s[i] - '0');
        }
        if (seq != e.seq || seq < 0 || seq > 9999999999LL)
            abort();
        size_t klen = (size_t)(s + len - 10 - e.kind);
        char *kind = strndup(e.kind, klen);
        if (kind == NULL || !zkl__entry_is(&e, kind))
            abort();
        if (e.kind != s && (e.kind != s + 40 || strncmp(s, "_c_", 3) != 0 || s[39] != '-'))
            abort();
        free(kind);
    } else {
        int digits = 0;
        for (size_t i = len >= 10 ? len - 10 : 0; i < len; i++)
            digits += s[i] >= '0' && s[i] <= '9';
        if (len >= 10 && digits == 10)
            abort(); /* 10 trailing digits must parse */
    }
    /* A protected name made from this input finds its uuid again. */
    char uuid[37];
    zkl__random_uuid(uuid);
    char *name = malloc(len + 64);
    if (name) {
        strcpy(name, "_c_");
        strcat(name, uuid);
        strcat(name, "-");
        strcat(name, s);
        if (!zkl__name_has_uuid(name, uuid))
            abort();
        free(name);
    }
    free(s);
    return 0;
}
