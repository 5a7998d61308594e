/* Contender node names: Curator's protected names, `_c_<uuid>-<kind><seq>`,
 * parsed and written. Pure. */
#include <stdio.h>
#include <string.h>

#include "names.h"

#define SEQ_DIGITS 10
#define PROTECT_PREFIX "_c_"
#define PROTECT_LEN (3 + 36 + 1) /* "_c_" uuid "-" */

/* Where each byte's two digits go in a uuid's text (the dashes between). */
static const uint8_t text_at[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};

void zkl__uuid_text(const uint8_t uuid[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < 16; i++) {
        out[text_at[i]] = hex[uuid[i] >> 4];
        out[text_at[i] + 1] = hex[uuid[i] & 15];
    }
    out[8] = out[13] = out[18] = out[23] = '-';
    out[36] = '\0';
}

void zkl__name_write(char *buf, size_t size, const uint8_t uuid[16], const char *kind,
                     long long seq)
{
    size_t kl = strlen(kind);
    if (seq < 0 || seq > 9999999999LL || PROTECT_LEN + kl + SEQ_DIGITS >= size) {
        /* a sign, more digits or no room: the format's own rules */
        char text[37];
        zkl__uuid_text(uuid, text);
        snprintf(buf, size, "%s%s-%s%010lld", PROTECT_PREFIX, text, kind, seq);
        return;
    }
    memcpy(buf, PROTECT_PREFIX, 3);
    zkl__uuid_text(uuid, buf + 3);
    buf[PROTECT_LEN - 1] = '-';
    memcpy(buf + PROTECT_LEN, kind, kl);
    char *d = buf + PROTECT_LEN + kl;
    for (int i = SEQ_DIGITS - 1; i >= 0; i--, seq /= 10)
        d[i] = (char)('0' + seq % 10);
    d[SEQ_DIGITS] = '\0';
}

/* A hex digit's value plus one (0: not a digit), UPPER for an uppercase one. */
#define UPPER 0x20
static const uint8_t hex_digit[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
    ['f'] = 16, ['A'] = UPPER | 11, ['B'] = UPPER | 12, ['C'] = UPPER | 13, ['D'] = UPPER | 14,
    ['E'] = UPPER | 15, ['F'] = UPPER | 16};

/* The uuid's text at text, refusing digits with a bit of `refuse` set. In
 * order, so that a shorter text stops at its end. */
static int parse_uuid(const char *text, uint8_t out[16], unsigned refuse)
{
    for (size_t i = 0; i < 16; i++) {
        const unsigned char *d = (const unsigned char *)text + text_at[i];
        if ((i == 4 || i == 6 || i == 8 || i == 10) && d[-1] != '-')
            return -1;
        unsigned hi = hex_digit[d[0]];
        if (hi == 0 || (hi & refuse))
            return -1;
        unsigned lo = hex_digit[d[1]];
        if (lo == 0 || (lo & refuse))
            return -1;
        out[i] = (uint8_t)((((hi & 31) - 1) << 4) | ((lo & 31) - 1));
    }
    return 0;
}

int zkl__uuid_parse(const char *text, uint8_t out[16])
{
    return parse_uuid(text, out, 0);
}

int zkl__name_read(const char *name, const char *kind, uint8_t uuid[16], int64_t *seq)
{
    /* The text as written: lowercase digits only. */
    if (strncmp(name, PROTECT_PREFIX, 3) != 0 || parse_uuid(name + 3, uuid, UPPER) != 0 ||
        name[PROTECT_LEN - 1] != '-')
        return -1;
    size_t kl = strlen(kind);
    if (strncmp(name + PROTECT_LEN, kind, kl) != 0)
        return -1;
    const char *d = name + PROTECT_LEN + kl;
    int64_t v = 0;
    for (size_t i = 0; i < SEQ_DIGITS; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -1;
        v = v * 10 + (d[i] - '0');
    }
    if (d[SEQ_DIGITS] != '\0')
        return -1;
    *seq = v;
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
