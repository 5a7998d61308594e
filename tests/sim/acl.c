/* ACLs as the server checks them (checkACL) and stores them (fixupACL), the
 * identities a session gathers, and digest identities, which need SHA-1 and
 * base64 (written here from FIPS 180-1 and RFC 4648). */
#include "sim.h"

static const struct zsim_acl open_ents[] = {{ZSIM_PERM_ALL, "world", "anyone"}};
static const struct zsim_acl read_ents[] = {{ZSIM_PERM_READ, "world", "anyone"}};
static const struct zsim_acl creator_ents[] = {{ZSIM_PERM_ALL, "auth", ""}};
const struct zsim_acl_vector ZSIM_OPEN_ACL_UNSAFE = {1, open_ents};
const struct zsim_acl_vector ZSIM_READ_ACL_UNSAFE = {1, read_ents};
const struct zsim_acl_vector ZSIM_CREATOR_ALL_ACL = {1, creator_ents};

/* ---- SHA-1 ------------------------------------------------------------- */

static uint32_t rol(uint32_t x, int k)
{
    return (x << k) | (x >> (32 - k));
}

static void sha1_block(uint32_t h[5], const unsigned char *p)
{
    uint32_t w[80];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
    for (int t = 16; t < 80; t++)
        w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20)
            f = (b & c) | (~b & d), k = 0x5a827999u;
        else if (t < 40)
            f = b ^ c ^ d, k = 0x6ed9eba1u;
        else if (t < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdcu;
        else
            f = b ^ c ^ d, k = 0xca62c1d6u;
        uint32_t tmp = rol(a, 5) + f + e + k + w[t];
        e = d, d = c, c = rol(b, 30), b = a, a = tmp;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static void sha1(const void *msg, size_t n, unsigned char out[20])
{
    uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
    const unsigned char *p = msg;
    size_t left = n;
    for (; left >= 64; p += 64, left -= 64)
        sha1_block(h, p);
    unsigned char last[128] = {0};
    memcpy(last, p, left);
    last[left] = 0x80;
    size_t len = left + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        last[len - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha1_block(h, last);
    if (len == 128)
        sha1_block(h, last + 64);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (unsigned char)(h[i] >> (24 - 8 * j));
}

static void base64(const unsigned char *in, size_t n, char *out)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        out[o++] = i + 1 < n ? abc[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? abc[v & 63] : '=';
    }
    out[o] = '\0';
}

/* DigestAuthenticationProvider.generateDigest: the user name, then the
 * base64 of SHA-1 over the whole "user:password". */
char *digest_id(const char *cert)
{
    const char *colon = strchr(cert, ':');
    if (colon == NULL || colon == cert)
        return NULL;
    unsigned char d[20];
    sha1(cert, strlen(cert), d);
    size_t ulen = (size_t)(colon - cert);
    char *id = sim_alloc(ulen + 1 + 29);
    memcpy(id, cert, ulen + 1);
    base64(d, sizeof d, id + ulen + 1);
    return id;
}

/* ---- identities ------------------------------------------------------------ */

void idents_add(struct idents *ids, const char *scheme, const char *id)
{
    for (int i = 0; i < ids->n; i++)
        if (strcmp(ids->v[i].scheme, scheme) == 0 && strcmp(ids->v[i].id, id) == 0)
            return;
    if (ids->n >= ids->cap) {
        ids->cap = ids->cap ? ids->cap * 2 : 4;
        ids->v = sim_grow(ids->v, (size_t)ids->cap * sizeof *ids->v);
    }
    ids->v[ids->n].scheme = sim_strdup(scheme);
    ids->v[ids->n].id = sim_strdup(id);
    ids->n++;
}

void idents_free(struct idents *ids)
{
    for (int i = 0; i < ids->n; i++) {
        free(ids->v[i].scheme);
        free(ids->v[i].id);
    }
    free(ids->v);
    memset(ids, 0, sizeof *ids);
}

/* ---- the intern table -------------------------------------------------------- */

static uint64_t acl_hash(const struct acl_ent *e, int n)
{
    uint64_t h = sim_hash((const char *)&n, sizeof n);
    for (int i = 0; i < n; i++) {
        h = h * 31 + (uint64_t)e[i].perms;
        h = h * 31 + sim_hash(e[i].scheme, strlen(e[i].scheme));
        h = h * 31 + sim_hash(e[i].id, strlen(e[i].id));
    }
    return h;
}

static bool acl_same(const struct acl_list *a, const struct acl_ent *e, int n)
{
    if (a->n != n)
        return false;
    for (int i = 0; i < n; i++)
        if (a->e[i].perms != e[i].perms || strcmp(a->e[i].scheme, e[i].scheme) != 0 ||
            strcmp(a->e[i].id, e[i].id) != 0)
            return false;
    return true;
}

struct acl_key {
    const struct acl_ent *e;
    int n;
};

static bool acl_is(const void *p, const void *key, size_t unused)
{
    const struct acl_key *k = key;
    return acl_same(p, k->e, k->n);
}

struct acl_list *acl_intern(struct acl_table *t, const struct acl_ent *e, int n)
{
    uint64_t h = acl_hash(e, n);
    struct acl_key key = {e, n};
    struct acl_list *a = ptab_find(&t->map, h, acl_is, &key, 0);
    if (a)
        return a;
    a = sim_alloc(sizeof *a + (size_t)n * sizeof a->e[0]);
    a->hash = h;
    a->n = n;
    for (int i = 0; i < n; i++) {
        a->e[i].perms = e[i].perms;
        a->e[i].scheme = sim_strdup(e[i].scheme);
        a->e[i].id = sim_strdup(e[i].id);
    }
    ptab_put(&t->map, h, a);
    return a;
}

void acl_table_free(struct acl_table *t)
{
    PTAB_EACH(&t->map, i)
    {
        struct acl_list *a = t->map.tab[i].p;
        for (int k = 0; k < a->n; k++) {
            free(a->e[k].scheme);
            free(a->e[k].id);
        }
        free(a);
    }
    ptab_free(&t->map);
}

/* ---- what the server checks and stores ------------------------------------- */

bool acl_allows(const struct acl_list *a, int perm, const struct idents *ids)
{
    if (a == NULL || a->n == 0)
        return true;
    for (int k = 0; k < ids->n; k++) /* the server's superuser */
        if (strcmp(ids->v[k].scheme, "super") == 0)
            return true;
    for (int i = 0; i < a->n; i++) {
        const struct acl_ent *e = &a->e[i];
        if ((e->perms & perm) == 0)
            continue;
        if (strcmp(e->scheme, "world") == 0 && strcmp(e->id, "anyone") == 0)
            return true;
        for (int k = 0; k < ids->n; k++)
            if (strcmp(ids->v[k].scheme, e->scheme) == 0 && strcmp(ids->v[k].id, e->id) == 0)
                return true;
    }
    return false;
}

static bool ip_valid(const char *id)
{
    int parts = 0, digits = 0;
    for (const char *p = id;; p++) {
        if (*p >= '0' && *p <= '9' && digits < 3) {
            digits++;
        } else if ((*p == '.' || *p == '\0') && digits > 0) {
            parts++;
            digits = 0;
            if (*p == '\0')
                return parts == 4;
        } else {
            return false;
        }
    }
}

/* DigestAuthenticationProvider.isValid: Java's id.split(":") has two
 * parts (split drops trailing empty parts). */
static bool digest_valid(const char *id)
{
    int parts = 0, pending_empty = 0;
    const char *start = id;
    for (const char *p = id;; p++) {
        if (*p != ':' && *p != '\0')
            continue;
        if (p == start) {
            pending_empty++;
        } else {
            parts += pending_empty + 1;
            pending_empty = 0;
        }
        if (*p == '\0')
            break;
        start = p + 1;
    }
    return parts == 2;
}

/* fixupACL: no ACL is refused; duplicates go; "auth" becomes each digest
 * identity of the session (none: refused); a digest id must read
 * "user:hash"; world only with "anyone". */
struct acl_list *acl_fixup(struct acl_table *t, const struct zsim_acl_vector *v,
                           const struct idents *ids)
{
    if (v == NULL || v->count <= 0 || v->data == NULL)
        return NULL;
    struct acl_ent small[8] = {{0}}, *e = small;
    size_t cap = 8, n = 0;
    for (int i = 0; i < v->count; i++) {
        const struct zsim_acl *a = &v->data[i];
        if (a->scheme == NULL || a->id == NULL)
            goto invalid;
        int nexp = 0;
        const struct ident *exp[16];
        if (strcmp(a->scheme, "world") == 0) {
            if (strcmp(a->id, "anyone") != 0)
                goto invalid;
        } else if (strcmp(a->scheme, "auth") == 0) {
            for (int k = 0; k < ids->n && nexp < 16; k++)
                if (strcmp(ids->v[k].scheme, "digest") == 0)
                    exp[nexp++] = &ids->v[k];
            if (nexp == 0)
                goto invalid;
        } else if (strcmp(a->scheme, "digest") == 0) {
            if (!digest_valid(a->id))
                goto invalid;
        } else if (strcmp(a->scheme, "ip") == 0) {
            if (!ip_valid(a->id))
                goto invalid;
        } else {
            goto invalid;
        }
        for (int k = 0; k < (nexp ? nexp : 1); k++) {
            struct acl_ent x = {a->perms, (char *)(nexp ? exp[k]->scheme : a->scheme),
                                (char *)(nexp ? exp[k]->id : a->id)};
            bool dup = false;
            for (size_t m = 0; m < n && !dup; m++)
                dup = e[m].perms == x.perms && strcmp(e[m].scheme, x.scheme) == 0 &&
                      strcmp(e[m].id, x.id) == 0;
            if (dup)
                continue;
            if (n == cap) {
                cap *= 2;
                if (e == small) {
                    e = sim_grow(NULL, cap * sizeof *e);
                    memcpy(e, small, sizeof small);
                } else {
                    e = sim_grow(e, cap * sizeof *e);
                }
            }
            e[n++] = x;
        }
    }
    struct acl_list *out = acl_intern(t, e, (int)n);
    if (e != small)
        free(e);
    return out;
invalid:
    if (e != small)
        free(e);
    return NULL;
}
