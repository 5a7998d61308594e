/* Contender node names: Curator's protected names, `_c_<uuid>-<kind><seq>`,
 * parsed and written. Pure. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "names.h"

#define SEQ_DIGITS 10
#define PROTECT_PREFIX "_c_"
#define PROTECT_LEN (3 + 36 + 1) /* "_c_" uuid "-" */

/* Eight characters as one word, the first in the low byte: one load, which
 * the compiler inlines where a shift of each byte would be a call. */
static inline uint64_t word8(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* The first four characters of w (its low half) at p. */
static inline void put4(char *p, uint64_t w)
{
    uint32_t h = (uint32_t)w;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    h = __builtin_bswap32(h);
#endif
    memcpy(p, &h, sizeof h);
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* The high bit of each byte of w (all under 0x80) that is at least c. */
#define AT_LEAST(w, c) (((w) + (0x80 - (c)) * ONES) & HIGHS)

/* The eight lowercase hex digits of four bytes, as one word (the first
 * digit in the low byte): each byte to a lane of two, its nibbles apart,
 * then '0' or 'a' - 10 added to each. Every name written and every watch
 * event compared goes through here. */
static inline uint64_t hex_word(const uint8_t b[4])
{
    uint64_t x = (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 |
                 (uint64_t)b[3] << 24;
    x = (x | x << 16) & 0x0000ffff0000ffffULL;
    x = (x | x << 8) & 0x00ff00ff00ff00ffULL;
    uint64_t n = (x >> 4 & 0x000f000f000f000fULL) | (x & 0x000f000f000f000fULL) << 8;
    uint64_t letter = (n + 6 * ONES) >> 4 & ONES; /* 1 in each byte of 10 or more */
    return n + '0' * ONES + letter * ('a' - '0' - 10);
}

/* A uuid's 32 digits as four words of eight, as the text holds them in
 * 8-4-4-4-12 form: the 4s two by two, the 12 as 4 and 8. */
static inline void text_words(const unsigned char *t, uint64_t w[4])
{
    w[0] = word8(t);
    w[1] = (word8(t + 9) & 0xffffffffu) | (word8(t + 10) & 0xffffffff00000000ULL);
    w[2] = (word8(t + 19) & 0xffffffffu) | (word8(t + 20) & 0xffffffff00000000ULL);
    w[3] = word8(t + 28);
}

void zkl__uuid_text(const uint8_t uuid[16], char out[37])
{
    uint64_t w[4];
    for (size_t i = 0; i < 4; i++)
        w[i] = hex_word(uuid + 4 * i);
    put4(out, w[0]);
    put4(out + 4, w[0] >> 32);
    put4(out + 9, w[1]);
    put4(out + 14, w[1] >> 32);
    put4(out + 19, w[2]);
    put4(out + 24, w[2] >> 32);
    put4(out + 28, w[3]);
    put4(out + 32, w[3] >> 32);
    out[8] = out[13] = out[18] = out[23] = '-';
    out[36] = '\0';
}

/* 00 to 99, two characters each. */
static const char decimal2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

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

/* The value of the ten decimal digits at d into *out: 0, or -1 if one is
 * not a digit. The first eight as one word, two digits to a byte, then four
 * to a half, then all eight: every listing reads each child's sequence. */
static inline int digits10(const char *d, int64_t *out)
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
    uint64_t w[4];
    text_words(t, w);
    for (size_t i = 0; i < 4; i++)
        if (hex8(w[i], out + 4 * i, !lower) != 0)
            return -1;
    return 0;
}

bool zkl__uuid_is(const char *text, const uint8_t uuid[16])
{
    const unsigned char *t = (const unsigned char *)text;
    if (t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-')
        return false;
    uint64_t have[4];
    text_words(t, have);
    for (size_t i = 0; i < 4; i++) {
        /* an uppercase digit taken as its lowercase one, nothing else */
        uint64_t upper = AT_LEAST(have[i], 'A') & ~AT_LEAST(have[i], 'F' + 1);
        if ((have[i] & HIGHS) || (have[i] | upper >> 2) != hex_word(uuid + 4 * i))
            return false;
    }
    return true;
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
