/* Contender node names (lib/util/names.c): Curator's protected names,
 * `_c_<uuid>-<kind><seq>`. Pure. */
#ifndef ZKL_NAMES_H
#define ZKL_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One child of a lock path, parsed. */
typedef struct zkl__entry {
    const char *name; /* borrowed from the listing */
    const char *kind; /* points into name: start of the kind */
    int64_t seq;      /* the trailing 10 digits */
} zkl__entry;

/* Parse `name`: 0 and e filled if it ends in a 10-digit sequence, else -1. */
int zkl__entry_parse(const char *name, zkl__entry *e);
/* 1 if entry e is of kind `kind` (e.g. "lock-"). */
int zkl__entry_is(const zkl__entry *e, const char *kind);
/* 1 if the child `name` carries `uuid` (36 characters) in its protection prefix. */
int zkl__name_has_uuid(const char *name, const char *uuid);
/* The text of a 16-byte uuid: 36 characters and a NUL. */
void zkl__uuid_text(const uint8_t uuid[16], char out[37]);
/* Whether the 36 characters at text are uuid's text (hex digits in
 * 8-4-4-4-12 form) in either case. All 36 bytes are read (the caller
 * knows the text is that long). Compared, not parsed: a watch event's path is held
 * against a node's uuid only when its sequence is the node's. */
bool zkl__uuid_is(const char *text, const uint8_t uuid[16]);
/* A contender node's name into buf (size bytes): exactly what
 * snprintf(buf, size, "_c_%s-%s%010lld", <uuid's text>, kind, seq) writes,
 * truncation included, without the cost of a format (every listing writes
 * one per node ahead). */
void zkl__name_write(char *buf, size_t size, const uint8_t uuid[16], const char *kind,
                     long long seq);
/* The uuid and sequence of `name` if it is exactly a name zkl__name_write
 * writes with room for it: "_c_", a uuid's text in lowercase, "-", kind and
 * 10 digits. 0, or -1 if it is not such a name. */
int zkl__name_read(const char *name, const char *kind, uint8_t uuid[16], int64_t *seq);

#endif
