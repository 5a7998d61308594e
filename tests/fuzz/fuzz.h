/* What the libFuzzer targets share. */
#ifndef ZKL_FUZZ_H
#define ZKL_FUZZ_H

#include <stdlib.h>
#include <string.h>

/* The input as a new C string, for the functions under test take one: the
 * bytes and a NUL after them (a NUL among them ends the string early);
 * NULL when out of memory. The caller frees it. */
static inline char *fuzz_cstr(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
