/* Contender node names: Curator's protected names, `_c_<uuid>-<kind><seq>`,
 * parsed and written. Pure. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "names.h"

#define SEQ_DIGITS 10
#define PROTECT_PREFIX "_c_"
#define PROTECT_LEN (3 + 36 + 1) /* "_c_" uuid "-" */

/* Where each byte's two digits go in a uuid's text (the dashes between). */
static const uint8_t text_at[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};

/* Each byte's two digits, by the byte: a table, as every listing writes
 * names back. */
static const char digits2[] =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
    "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
    "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
    "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
    "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
    "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

/* 00 to 99, two characters each. */
static const char decimal2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

void zkl__uuid_text(const uint8_t uuid[16], char out[37])
{
    for (size_t i = 0; i < 16; i++)
        memcpy(out + text_at[i], digits2 + 2 * uuid[i], 2);
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
    /* two decimal digits at a time, from a table */
    for (int i = SEQ_DIGITS - 2; i >= 0; i -= 2, seq /= 100)
        memcpy(d + i, decimal2 + 2 * (seq % 100), 2);
    d[SEQ_DIGITS] = '\0';
}

/* Eight characters as one word, the first in the low byte (one load). */
static uint64_t word8(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
           (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* The high bit of each byte of w (all under 0x80) that is at least c. */
#define AT_LEAST(w, c) (((w) + (0x80 - (c)) * ONES) & HIGHS)

/* The value of the ten decimal digits at d into *out: 0, or -1 if one is
 * not a digit. The first eight as one word, two digits to a byte, then four
 * to a half, then all eight: every listing reads each child's sequence. */
static int digits10(const char *d, int64_t *out)
{
    uint64_t w = word8((const unsigned char *)d);
    if ((w & HIGHS) || (AT_LEAST(w, '0') & ~AT_LEAST(w, '9' + 1)) != HIGHS)
        return -1;
    uint64_t v = w & 0x0f * ONES; /* a digit's value is its low four bits */
    v = (v * 10 + (v >> 8)) & 0x00ff00ff00ff00ffULL;
    v = (v * 100 + (v >> 16)) & 0x0000ffff0000ffffULL;
    v = (v * 10000 + (v >> 32)) & 0xffffffffULL;
    int64_t seq = (int64_t)v;
    for (size_t i = 8; i < SEQ_DIGITS; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -1;
        seq = seq * 10 + (d[i] - '0');
    }
    *out = seq;
    return 0;
}

/* The four bytes that eight hex digits in w stand for, into out: 0, or -1
 * if one is not a digit (an uppercase one unless `upper`). Eight at once
 * in one word: every listing reads each node ahead. */
static int hex8(uint64_t w, uint8_t out[4], bool upper)
{
    if (w & HIGHS)
        return -1;
    uint64_t digit = AT_LEAST(w, '0') & ~AT_LEAST(w, '9' + 1);
    uint64_t letter = AT_LEAST(w, 'a') & ~AT_LEAST(w, 'f' + 1);
    if (upper)
        letter |= AT_LEAST(w, 'A') & ~AT_LEAST(w, 'F' + 1);
    if ((digit | letter) != HIGHS)
        return -1;
    /* a digit's value is its low four bits, a letter's those and nine */
    uint64_t v = (w & 0x0f * ONES) + (letter >> 7) * 9;
    v = (v << 4 | v >> 8) & 0x00ff00ff00ff00ffULL; /* two digits a byte */
    out[0] = (uint8_t)v;
    out[1] = (uint8_t)(v >> 16);
    out[2] = (uint8_t)(v >> 32);
    out[3] = (uint8_t)(v >> 48);
    return 0;
}

/* The uuid's text at text, in either case unless `lower`. The length
 * first, so that a shorter text is never read past its end. */
static int parse_uuid(const char *text, uint8_t out[16], bool lower)
{
    const unsigned char *t = (const unsigned char *)text;
    if (strnlen(text, 36) != 36 || t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-')
        return -1;
    /* 8-4-4-4-12: the 4s two by two, the 12 as 4 and 8 */
    uint64_t w1 = word8(t + 9), w2 = word8(t + 19);
    w1 = (w1 & 0xffffffffu) | (word8(t + 10) & 0xffffffff00000000ULL);
    w2 = (w2 & 0xffffffffu) | (word8(t + 20) & 0xffffffff00000000ULL);
    if (hex8(word8(t), out, !lower) != 0 || hex8(w1, out + 4, !lower) != 0 ||
        hex8(w2, out + 8, !lower) != 0 || hex8(word8(t + 28), out + 12, !lower) != 0)
        return -1;
    return 0;
}

int zkl__uuid_parse(const char *text, uint8_t out[16])
{
    return parse_uuid(text, out, false);
}

int zkl__name_read(const char *name, const char *kind, uint8_t uuid[16], int64_t *seq)
{
    /* The text as written: lowercase digits only. */
    if (strncmp(name, PROTECT_PREFIX, 3) != 0 || parse_uuid(name + 3, uuid, true) != 0 ||
        name[PROTECT_LEN - 1] != '-')
        return -1;
    size_t kl = strlen(kind);
    if (strncmp(name + PROTECT_LEN, kind, kl) != 0)
        return -1;
    const char *d = name + PROTECT_LEN + kl;
    int64_t v;
    /* Exactly ten characters left, before digits10 reads eight at once. */
    if (strnlen(d, SEQ_DIGITS + 1) != SEQ_DIGITS || digits10(d, &v) != 0)
        return -1;
    *seq = v;
    return 0;
}

int zkl__entry_parse(const char *name, zkl__entry *e)
{
    size_t len = strlen(name);
    if (len < SEQ_DIGITS)
        return -1;
    int64_t seq;
    if (digits10(name + len - SEQ_DIGITS, &seq) != 0)
        return -1;
    e->name = name;
    e->seq = seq;
    /* The kind sits between the protection prefix (if any) and the digits. */
    if (len >= PROTECT_LEN + SEQ_DIGITS && name[0] == '_' && name[1] == 'c' && name[2] == '_' &&
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
