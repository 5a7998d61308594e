/* Contender node names: Curator's protected names, `_c_<uuid>-<kind><seq>`,
 * parsed and written. Pure. */
#include <string.h>

#include "names.h"

#define SEQ_DIGITS 10
#define PROTECT_PREFIX "_c_"
#define PROTECT_LEN (3 + 36 + 1) /* "_c_" uuid "-" */

void zkl__uuid_text(const uint8_t uuid[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[uuid[i] >> 4];
        out[o++] = hex[uuid[i] & 15];
    }
    out[o] = '\0';
}

int zkl__uuid_parse(const char *text, uint8_t out[16])
{
    size_t k = 0;
    for (size_t i = 0; i < 36; i++) {
        char c = text[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return -1;
            continue;
        }
        unsigned v;
        if (c >= '0' && c <= '9')
            v = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v = (unsigned)(c - 'A' + 10);
        else
            return -1;
        out[k / 2] = (uint8_t)(k % 2 ? (out[k / 2] | v) : (v << 4));
        k++;
    }
    return 0;
}

int zkl__entry_parse(const char *name, zkl__entry *e)
{
    size_t len = strlen(name);
    if (len < SEQ_DIGITS)
        return -1;
    int64_t seq = 0;
    for (size_t i = len - SEQ_DIGITS; i < len; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        seq = seq * 10 + (name[i] - '0');
    }
    e->name = name;
    e->seq = seq;
    /* The kind sits between the protection prefix (if any) and the digits. */
    if (len >= PROTECT_LEN + SEQ_DIGITS && strncmp(name, PROTECT_PREFIX, 3) == 0 &&
        name[PROTECT_LEN - 1] == '-')
        e->kind = name + PROTECT_LEN;
    else
        e->kind = name;
    return 0;
}

int zkl__entry_is(const zkl__entry *e, const char *kind)
{
    size_t klen = strlen(kind);
    size_t have = strlen(e->name) - SEQ_DIGITS - (size_t)(e->kind - e->name);
    return have == klen && memcmp(e->kind, kind, klen) == 0;
}

int zkl__name_has_uuid(const char *name, const char *uuid)
{
    return strncmp(name, PROTECT_PREFIX, 3) == 0 && strncmp(name + 3, uuid, 36) == 0 &&
           name[PROTECT_LEN - 1] == '-';
}
