/* The ACL of the nodes a client creates (zkl_client_opts_add_acl): each
 * entry checked as the server would check it, and the whole list checked
 * against the client's own identities at open, so that a list the server
 * would refuse, or one that shuts the client out of its own lock paths,
 * fails before anything is created. */
#include "config.h" /* HAVE_ZOOKEEPER_INIT_SSL */

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* ---- one entry ------------------------------------------------------------- */

/* "ADDR" or "ADDR/BITS", IPv4 or IPv6, as the ip scheme takes it. */
static bool ip_ok(const char *id)
{
    char addr[64];
    size_t n = strcspn(id, "/");
    if (n == 0 || n >= sizeof addr)
        return false;
    memcpy(addr, id, n);
    addr[n] = '\0';
    unsigned char buf[16];
    int bits;
    if (inet_pton(AF_INET, addr, buf) == 1)
        bits = 32;
    else if (inet_pton(AF_INET6, addr, buf) == 1)
        bits = 128;
    else
        return false;
    if (id[n] == '\0')
        return true;
    const char *m = id + n + 1;
    size_t k = strspn(m, "0123456789");
    return k > 0 && k <= 3 && m[k] == '\0' && atoi(m) <= bits;
}

/* A SASL identity as the server parses it (a Kerberos name: user,
 * user@REALM or service/host@REALM): no white space, at most one '/'
 * before the '@', and nothing of either after it. */
static bool sasl_ok(const char *id)
{
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return false;
    const char *at = strchr(id, '@');
    if (at == NULL)
        return true;
    const char *slash = strchr(id, '/');
    return strpbrk(at + 1, "@/") == NULL && (slash == NULL || strchr(slash + 1, '/') == NULL);
}

/* A distinguished name: TYPE=value parts separated by ',' or '+' (a
 * backslash escapes the next character). */
static bool dn_ok(const char *id)
{
    bool eq = false;
    for (const char *p = id;; p++) {
        if (*p == '\\' && p[1] != '\0') {
            p++;
        } else if (*p == '=') {
            eq = true;
        } else if (*p == ',' || *p == '+' || *p == '\0') {
            if (!eq)
                return false;
            if (*p == '\0')
                return true;
            eq = false;
        }
    }
}

/* Whether `id` is one the server takes for `scheme`; why not in *why. */
static bool acl_id_ok(const char *scheme, const char *id, const char **why)
{
    if (strcmp(scheme, "world") == 0) {
        *why = "the world scheme's only id is \"anyone\"";
        return strcmp(id, "anyone") == 0;
    }
    if (strcmp(scheme, "auth") == 0) {
        *why = "the auth scheme's id is \"\"";
        return id[0] == '\0';
    }
    if (strcmp(scheme, "digest") == 0) {
        /* user:base64(sha1(user:password)): 28 characters of base64. */
        const char *colon = strchr(id, ':');
        *why = "a digest id is user:hash, the hash base64(sha1(\"user:password\")) of 28 "
               "characters";
        return colon != NULL && colon != id && strchr(colon + 1, ':') == NULL &&
               strlen(colon + 1) == 28 &&
               strspn(colon + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
                   28;
    }
    if (strcmp(scheme, "sasl") == 0) {
        *why = id[0] == '\0' ? "the id is empty"
                             : "a SASL id is a name without white space (user, user@REALM or "
                               "service/host@REALM)";
        return id[0] != '\0' && sasl_ok(id);
    }
    if (strcmp(scheme, "x509") == 0) {
        *why = id[0] == '\0' ? "the id is empty"
                             : "an x509 id is a certificate subject, TYPE=value parts "
                               "separated by ',' (\"CN=orders,O=example\")";
        return id[0] != '\0' && dn_ok(id);
    }
    if (strcmp(scheme, "ip") == 0) {
        *why = id[0] == '\0' ? "the id is empty"
                             : "an ip id is an IPv4 or IPv6 address, or a network ADDRESS/BITS "
                               "(at most 32 bits for IPv4, 128 for IPv6)";
        return id[0] != '\0' && ip_ok(id);
    }
    *why = "unknown scheme (world, auth, digest, sasl, x509 or ip)";
    return false;
}

int zkl_client_opts_add_acl(zkl_client_opts *o, const char *scheme, const char *id, int perms)
{
    if (o == NULL || scheme == NULL || id == NULL)
        return ZKL_EINVAL;
    const char *why = NULL;
    if (!acl_id_ok(scheme, id, &why)) {
        zkl__detail("zkl_client_opts_add_acl: \"%.40s:%.200s\": %s", scheme, id, why);
        return ZKL_EINVAL;
    }
    if (perms <= 0 || perms > ZKL_PERM_ALL) {
        zkl__detail("zkl_client_opts_add_acl: permissions %d: a nonzero combination of "
                    "ZKL_PERM_* (1 to 31)", perms);
        return ZKL_EINVAL;
    }
    struct ACL *d = realloc(o->acls.data, ((size_t)o->acls.count + 1) * sizeof *d);
    if (d == NULL)
        return ZKL_ENOMEM;
    o->acls.data = d;
    struct ACL *a = &d[o->acls.count];
    a->perms = perms;
    a->id.scheme = strdup(scheme);
    a->id.id = strdup(id);
    if (a->id.scheme == NULL || a->id.id == NULL) {
        free(a->id.scheme);
        free(a->id.id);
        return ZKL_ENOMEM;
    }
    o->acls.count++;
    return 0;
}

int zkl__options_acl_copy(struct ACL_vector *dst, const struct ACL_vector *src)
{
    *dst = (struct ACL_vector){0};
    if (src->count == 0)
        return 0;
    if ((dst->data = calloc((size_t)src->count, sizeof *dst->data)) == NULL)
        return ZKL_ENOMEM;
    for (int32_t i = 0; i < src->count; i++, dst->count++) {
        struct ACL *a = &dst->data[i];
        a->perms = src->data[i].perms;
        a->id.scheme = strdup(src->data[i].id.scheme);
        a->id.id = strdup(src->data[i].id.id);
        if (a->id.scheme == NULL || a->id.id == NULL) {
            dst->count++;
            zkl__options_acl_free(dst);
            return ZKL_ENOMEM;
        }
    }
    return 0;
}

void zkl__options_acl_free(struct ACL_vector *v)
{
    for (int32_t i = 0; i < v->count; i++) {
        free(v->data[i].id.scheme);
        free(v->data[i].id.id);
    }
    free(v->data);
    *v = (struct ACL_vector){0};
}

const struct ACL_vector *zkl__options_acl(zkl_client *c)
{
    if (c->acls.count > 0)
        return &c->acls;
    return c->acl == ZKL_ACL_CREATOR ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}


/* ---- the list against the client's own identities ---------------------------- */

/* What an entry grants the client: surely (its own identity), perhaps (an
 * identity the client cannot know it has: an address, a Kerberos
 * principal as the server maps it) or not at all. */
enum grant { GRANT_NO, GRANT_MAYBE, GRANT_YES };

/* The user of "user:..." equal to that of `digest`'s. */
static bool same_user(const char *id, const char *digest)
{
    size_t n = strcspn(id, ":");
    return strncmp(id, digest, n) == 0 && digest[n] == ':';
}

static enum grant grants(const zkl_client_opts *o, const struct ACL *a, const char *subject,
                         bool creds)
{
    const char *scheme = a->id.scheme, *id = a->id.id;
    if (strcmp(scheme, "world") == 0 || strcmp(scheme, "auth") == 0)
        return strcmp(scheme, "world") == 0 || creds ? GRANT_YES : GRANT_NO;
    if (strcmp(scheme, "digest") == 0) /* the hash is not checked here: same user, perhaps */
        return o->digest != NULL && same_user(id, o->digest) ? GRANT_MAYBE : GRANT_NO;
    if (strcmp(scheme, "sasl") == 0) {
        if (o->sec.sasl_mech == NULL)
            return GRANT_NO;
        if (strcmp(o->sec.sasl_mech, "DIGEST-MD5") != 0 || o->sec.sasl_user == NULL)
            return GRANT_MAYBE; /* a principal the server may map */
        return strcmp(id, o->sec.sasl_user) == 0 ? GRANT_YES : GRANT_NO;
    }
    if (strcmp(scheme, "x509") == 0) {
        if (o->sec.tls_ca == NULL)
            return GRANT_NO;
        if (subject == NULL)
            return GRANT_MAYBE;
        return strcmp(id, subject) == 0 ? GRANT_YES : GRANT_NO;
    }
    return GRANT_MAYBE; /* ip: the address the server sees */
}

/* The permissions a contender needs on the nodes it creates: CREATE on a
 * lock path it made (its own node goes there), DELETE on it (the server
 * checks the parent's ACL when a node is deleted: its release) and READ
 * (listing the contenders). */
#define NEEDED (ZKL_PERM_READ | ZKL_PERM_CREATE | ZKL_PERM_DELETE)

static void perm_names(int perms, char *out, size_t n)
{
    static const struct {
        int bit;
        const char *name;
    } names[] = {{ZKL_PERM_READ, "READ"}, {ZKL_PERM_CREATE, "CREATE"}, {ZKL_PERM_DELETE, "DELETE"}};
    out[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (perms & names[i].bit) {
            size_t k = strlen(out);
            snprintf(out + k, n - k, "%s%s", k ? ", " : "", names[i].name);
        }
}

int zkl__acl_check(const zkl_client_opts *o)
{
    bool creds = o->digest != NULL || o->sec.tls_ca != NULL || o->sec.sasl_mech != NULL;
    if (o->acls.count == 0) {
        /* The creator-only ACL names the authenticated identity: without
         * one the server would refuse every create (ZINVALIDACL). */
        if (o->acl == ZKL_ACL_CREATOR && !creds) {
            zkl__detail("zkl_client_open: ZKL_ACL_CREATOR gives the client's own identities, "
                        "and it has none (no digest, TLS or SASL credentials)");
            return ZKL_EINVAL;
        }
        return 0;
    }
    char subject[512];
    bool have_subject = false;
#ifdef HAVE_ZOOKEEPER_INIT_SSL
    if (o->sec.tls_cert != NULL)
        have_subject = zkl__secure_subject(o->sec.tls_cert, subject, sizeof subject);
#endif
    int can = 0;
    bool x509_other = false;
    for (int32_t i = 0; i < o->acls.count; i++) {
        const struct ACL *a = &o->acls.data[i];
        if (strcmp(a->id.scheme, "auth") == 0 && !creds) {
            zkl__detail("zkl_client_open: the ACL entry auth:: gives the client's own "
                        "identities, and it has none (no digest, TLS or SASL credentials): "
                        "the server would refuse it");
            return ZKL_EINVAL;
        }
        enum grant g = grants(o, a, have_subject ? subject : NULL, creds);
        if (g != GRANT_NO)
            can |= a->perms;
        else if (strcmp(a->id.scheme, "x509") == 0 && have_subject)
            x509_other = true;
    }
    if ((can & NEEDED) == NEEDED)
        return 0;
    char missing[64];
    perm_names(NEEDED & ~can, missing, sizeof missing);
    if (x509_other)
        zkl__detail("zkl_client_open: the ACL entries leave this client without %s on the lock "
                    "paths it creates (it needs READ, CREATE and DELETE); its certificate's "
                    "subject, as the server names it (RFC 2253), is \"%.300s\"",
                    missing, subject);
    else
        zkl__detail("zkl_client_open: the ACL entries leave this client without %s on the lock "
                    "paths it creates: it needs READ to list contenders, CREATE for its node "
                    "and DELETE to remove it", missing);
    return ZKL_EINVAL;
}
