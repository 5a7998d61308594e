/* The order of a leader latch's nodes as the checkers read it. */
#include <string.h>
#include <stdlib.h>

#include "zsim.h"

/* The sequence after a name's last "latch-": exactly ten digits, or -1.
 * A name past the 32-bit wrap ("latch--2147483644") has no sequence,
 * though it ends in ten digits: its text after "latch-" sorts before
 * every sequence's. */
int64_t zsim_latch_seq(const char *name)
{
    const char *p = NULL;
    for (const char *q = strstr(name, "latch-"); q != NULL; q = strstr(q + 1, "latch-"))
        p = q + 6;
    if (p == NULL || strlen(p) != 10 || strspn(p, "0123456789") != 10)
        return -1;
    return strtoll(p, NULL, 10);
}

/* What Curator's latch orders a node by: the text after the name's last
 * "latch-", compared as strings (NULL without one). A name past the wrap
 * has "-2147483648" and the like, which sort before every sequence. */
const char *zsim_latch_key(const char *name)
{
    const char *p = NULL;
    for (const char *q = strstr(name, "latch-"); q != NULL; q = strstr(q + 1, "latch-"))
        p = q + 6;
    return p;
}
