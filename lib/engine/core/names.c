/* A node's names: its own, its peers' and their full paths, made from a
 * uuid, a kind and a sequence; and a watch event's path taken apart once, to
 * be held against each node by comparison. */
#include <string.h>

#include "machine.h"

const char *zkl__cnode_kind(const zkl__cnode *n)
{
    return n->side && n->side->kind_copy ? n->side->kind_copy : n->pol->kind;
}

const char *zkl__core_own(const zkl__cnode *n, char buf[ZKL__NAME_BUF])
{
    if (n->seq < 0)
        return NULL;
    if (n->name != NULL)
        return n->name;
    zkl__name_write(buf, ZKL__NAME_BUF, n->uuid, zkl__cnode_kind(n), n->seq);
    return buf;
}

const char *zkl__core_peer_name(const zkl__cnode *n, const zkl__peer *p, char buf[ZKL__NAME_BUF])
{
    zkl__name_write(buf, ZKL__NAME_BUF, p->uuid, zkl__cnode_kind(n), p->seq);
    return buf;
}

bool zkl__core_peer(const zkl__cnode *n, const char *name, zkl__peer *p)
{
    /* Exactly the name it stands for (zkl__core_peer_name): our kind,
     * lowercase, nothing more; read, not written and compared, as every
     * listing checks each node ahead. */
    int64_t seq;
    if (strlen(name) >= ZKL__NAME_BUF ||
        zkl__name_read(name, zkl__cnode_kind(n), p->uuid, &seq) != 0 || seq > INT32_MAX)
        return false;
    p->seq = (int32_t)seq;
    return true;
}

int32_t zkl__core_seq(const char *name)
{
    zkl__entry e;
    return zkl__entry_parse(name, &e) == 0 && e.seq <= INT32_MAX ? (int32_t)e.seq : -1;
}

const char *zkl__core_full(const zkl__cnode *n, const char *name, char *buf)
{
    size_t dl = n->dir->len, nl = strlen(name);
    if (dl + 1 + nl >= ZKL__MAX_PATH + 96)
        nl = ZKL__MAX_PATH + 96 - dl - 2; /* never: names are bounded */
    memcpy(buf, n->dir->path, dl);
    buf[dl] = '/';
    memcpy(buf + dl + 1, name, nl);
    buf[dl + 1 + nl] = '\0';
    return buf;
}

char *zkl__cnode_path(const zkl__cnode *n, const char *name, char *buf, size_t size)
{
    if (size < ZKL__MAX_PATH + 96)
        return NULL;
    char own[ZKL__NAME_BUF];
    const char *nm = name ? name : zkl__core_own(n, own);
    if (nm == NULL)
        return NULL;
    return (char *)zkl__core_full(n, nm, buf);
}

const char *zkl__cnode_dir(const zkl__cnode *n)
{
    return n->dir->path;
}


/* The target's kind is n's. */
static bool kind_is(const zkl__cnode *n, const struct zkl__target *t)
{
    const char *k = zkl__cnode_kind(n);
    return strncmp(t->kind, k, t->kindlen) == 0 && k[t->kindlen] == '\0';
}

bool zkl__core_is_peer(const zkl__cnode *n, const struct zkl__target *t, const zkl__peer *p)
{
    return t->dir == n->dir && p->seq >= 0 && t->seq == p->seq && kind_is(n, t) &&
           zkl__uuid_is(t->uuid, p->uuid);
}

bool zkl__core_is_own(const zkl__cnode *n, const struct zkl__target *t)
{
    return t->dir == n->dir && n->seq >= 0 && t->seq == n->seq && kind_is(n, t) &&
           zkl__uuid_is(t->uuid, n->uuid);
}

bool zkl__core_is_named(const zkl__cnode *n, const struct zkl__target *t, const char *name)
{
    return name != NULL && t->dir == n->dir && strcmp(t->name, name) == 0;
}

const char *zkl__watch_name(const zkl__cnode *n, int slot, char buf[ZKL__NAME_BUF])
{
    if (n->watch[slot] != NULL)
        return n->watch[slot];
    return slot == 0 && n->wpeer.seq >= 0 ? zkl__core_peer_name(n, &n->wpeer, buf) : NULL;
}

/* The path of the node to create, dir/_c_<uuid>-<kind><seq> (seq "" for
 * the server's), cut as snprintf would cut it: no format, as every
 * acquisition creates one. */
void zkl__cnode_create_path(const zkl__cnode *n, const char *seq, char *path, size_t size)
{
    char uuid[37];
    zkl__uuid_text(n->uuid, uuid);
    const char *parts[] = {n->dir->path, "/_c_", uuid, "-", zkl__cnode_kind(n), seq};
    size_t at = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        size_t len = strlen(parts[i]);
        if (at + len >= size)
            len = size - 1 - at;
        memcpy(path + at, parts[i], len);
        at += len;
    }
    path[at] = '\0';
}
