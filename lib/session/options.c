/* Client options (zkl_client_opts_*), the ACL they choose, and the quiet
 * libzookeeper_mt log. */
#include "config.h" /* HAVE_ZOOKEEPER_INIT_SSL, HAVE_ZOOKEEPER_INIT_SASL */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"

/* ---- options ---------------------------------------------------------- */

int zkl_client_opts_new(zkl_client_opts **out)
{
    int rc;
    zkl_client_opts *o = zkl__new_zeroed(out != NULL, sizeof *o, &rc);
    if (o == NULL)
        return rc;
    o->reopen = 1;
    o->container_parents = 1;
    o->acl = ZKL_ACL_OPEN;
    o->max_request = ZKL__MAX_REQUEST_DEFAULT;
    o->quiet_zk_log = 1;
    o->metrics = 1;
    o->metric_paths = ZKL__METRIC_PATHS_DEFAULT;
    *out = o;
    return 0;
}

/* An option that is on or off: any nonzero `on` is on. */
static int set_on(zkl_client_opts *o, size_t field, int on)
{
    if (o == NULL)
        return ZKL_EINVAL;
    *(int *)((char *)o + field) = on != 0;
    return 0;
}

void zkl_client_opts_free(zkl_client_opts *o)
{
    if (o == NULL)
        return;
    if (o->digest) {
        memset(o->digest, 0, strlen(o->digest));
        free(o->digest);
    }
    zkl__options_acl_free(&o->acls);
    zkl__secure_opts_clear(&o->sec);
    free(o);
}

int zkl_client_opts_set_reopen(zkl_client_opts *o, int on)
{
    return set_on(o, offsetof(zkl_client_opts, reopen), on);
}

int zkl_client_opts_set_container_parents(zkl_client_opts *o, int on)
{
    return set_on(o, offsetof(zkl_client_opts, container_parents), on);
}

int zkl_client_opts_set_digest_auth(zkl_client_opts *o, const char *user_password)
{
    if (o == NULL || user_password == NULL || strchr(user_password, ':') == NULL ||
        user_password[0] == ':')
        return ZKL_EINVAL;
    char *d = strdup(user_password);
    if (d == NULL)
        return ZKL_ENOMEM;
    if (o->digest) {
        memset(o->digest, 0, strlen(o->digest));
        free(o->digest);
    }
    o->digest = d;
    return 0;
}

int zkl_client_opts_set_acl(zkl_client_opts *o, enum zkl_acl acl)
{
    if (o == NULL || (acl != ZKL_ACL_OPEN && acl != ZKL_ACL_CREATOR))
        return ZKL_EINVAL;
    o->acl = acl;
    return 0;
}

int zkl_client_opts_set_max_request(zkl_client_opts *o, int bytes)
{
    if (o == NULL || bytes < ZKL__MAX_REQUEST_MIN)
        return ZKL_EINVAL;
    o->max_request = bytes;
    return 0;
}

int zkl_client_opts_set_quiet_zk_log(zkl_client_opts *o, int on)
{
    return set_on(o, offsetof(zkl_client_opts, quiet_zk_log), on);
}

int zkl_client_opts_set_metrics(zkl_client_opts *o, int on)
{
    return set_on(o, offsetof(zkl_client_opts, metrics), on);
}

int zkl_client_opts_set_max_metric_paths(zkl_client_opts *o, int max_paths)
{
    if (o == NULL || max_paths < 0)
        return ZKL_EINVAL;
    o->metric_paths = max_paths;
    return 0;
}

int zkl_client_opts_set_connect_timeout(zkl_client_opts *o, int ms)
{
    if (o == NULL || ms < 0)
        return ZKL_EINVAL;
    o->connect_ms = ms;
    return 0;
}

int zkl_client_opts_set_lost_requests(zkl_client_opts *o, int on)
{
    if (o == NULL || (on != 0 && on != 1))
        return ZKL_EINVAL;
    o->lost_requests = on;
    return 0;
}

void zkl__client_opts_set_zapi(zkl_client_opts *o, const struct zkl__zapi *z)
{
    o->zapi = z;
}

void zkl__client_opts_set_no_keeper(zkl_client_opts *o, int on)
{
    o->no_keeper = on != 0;
}

/* ---- TLS and SASL -------------------------------------------------------- */

#if defined(HAVE_ZOOKEEPER_INIT_SSL) || defined(HAVE_ZOOKEEPER_INIT_SASL)
/* Replace *dst by a copy of src (NULL for none); wipe the old if secret. */
static int set_str(char **dst, const char *src, bool secret)
{
    char *d = NULL;
    if (src != NULL && (d = strdup(src)) == NULL)
        return ZKL_ENOMEM;
    if (*dst != NULL && secret)
        memset(*dst, 0, strlen(*dst));
    free(*dst);
    *dst = d;
    return 0;
}
#endif

int zkl_client_opts_set_tls(zkl_client_opts *o, const char *ca_file, const char *cert_file,
                            const char *key_file, const char *key_password)
{
#ifndef HAVE_ZOOKEEPER_INIT_SSL
    (void)o, (void)ca_file, (void)cert_file, (void)key_file, (void)key_password;
    zkl__detail("zkl_client_opts_set_tls: this zkl was built on a libzookeeper_mt without TLS "
                "(Debian's is); build one with scripts/build-zookeeper-client.sh PREFIX and "
                "configure zkl with --with-zookeeper=PREFIX");
    return ZKL_ENOTSUP;
#else
    const char *files[] = {ca_file, cert_file, key_file};
    const char *what[] = {"CA file", "certificate file", "key file"};
    if (o == NULL)
        return ZKL_EINVAL;
    for (int i = 0; i < 3; i++) {
        if (files[i] == NULL || files[i][0] == '\0') {
            zkl__detail("zkl_client_opts_set_tls: no %s (mutual TLS needs a CA file, a "
                        "client certificate and its key)", what[i]);
            return ZKL_EINVAL;
        }
        if (strchr(files[i], ',') != NULL) {
            zkl__detail("zkl_client_opts_set_tls: the %s \"%.200s\" has a ',', which "
                        "libzookeeper_mt cannot take in a file name", what[i], files[i]);
            return ZKL_EINVAL;
        }
    }
    if (key_password != NULL && strchr(key_password, ',') != NULL) {
        zkl__detail("zkl_client_opts_set_tls: the key password has a ',', which "
                    "libzookeeper_mt cannot take");
        return ZKL_EINVAL;
    }
    struct zkl__secure_opts n = {0};
    if (set_str(&n.tls_ca, ca_file, false) != 0 || set_str(&n.tls_cert, cert_file, false) != 0 ||
        set_str(&n.tls_key, key_file, false) != 0 ||
        set_str(&n.tls_password, key_password != NULL && key_password[0] ? key_password : NULL,
                true) != 0) {
        zkl__secure_opts_clear(&n);
        return ZKL_ENOMEM;
    }
    /* Swap in the new TLS settings, keep the SASL ones. */
    struct zkl__secure_opts old = o->sec;
    o->sec.tls_ca = n.tls_ca, o->sec.tls_cert = n.tls_cert;
    o->sec.tls_key = n.tls_key, o->sec.tls_password = n.tls_password;
    old.sasl_mech = old.sasl_user = old.sasl_password_file = NULL;
    zkl__secure_opts_clear(&old);
    return 0;
#endif
}

int zkl_client_opts_set_sasl(zkl_client_opts *o, const char *mechanism, const char *user,
                             const char *password_file)
{
#ifndef HAVE_ZOOKEEPER_INIT_SASL
    (void)o, (void)mechanism, (void)user, (void)password_file;
    zkl__detail("zkl_client_opts_set_sasl: this zkl was built on a libzookeeper_mt without SASL "
                "(Debian's is); build one with scripts/build-zookeeper-client.sh PREFIX and "
                "configure zkl with --with-zookeeper=PREFIX");
    return ZKL_ENOTSUP;
#else
    if (o == NULL || mechanism == NULL)
        return ZKL_EINVAL;
    /* SASL mechanism names: 1 to 20 of A-Z, 0-9, '-' and '_' (RFC 4422). */
    size_t n = strlen(mechanism);
    if (n == 0 || n > 20 || strspn(mechanism, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != n) {
        zkl__detail("zkl_client_opts_set_sasl: \"%.40s\" is no SASL mechanism name (e.g. "
                    "DIGEST-MD5, GSSAPI)", mechanism);
        return ZKL_EINVAL;
    }
    if (strcmp(mechanism, "DIGEST-MD5") == 0 &&
        (user == NULL || user[0] == '\0' || password_file == NULL || password_file[0] == '\0')) {
        zkl__detail("zkl_client_opts_set_sasl: DIGEST-MD5 needs a user and a password file");
        return ZKL_EINVAL;
    }
    struct zkl__secure_opts s = {0};
    if (set_str(&s.sasl_mech, mechanism, false) != 0 ||
        set_str(&s.sasl_user, user != NULL && user[0] ? user : NULL, false) != 0 ||
        set_str(&s.sasl_password_file, password_file != NULL && password_file[0] ? password_file
                                                                                : NULL,
                false) != 0) {
        zkl__secure_opts_clear(&s);
        return ZKL_ENOMEM;
    }
    struct zkl__secure_opts old = o->sec;
    o->sec.sasl_mech = s.sasl_mech, o->sec.sasl_user = s.sasl_user;
    o->sec.sasl_password_file = s.sasl_password_file;
    old.tls_ca = old.tls_cert = old.tls_key = old.tls_password = NULL;
    zkl__secure_opts_clear(&old);
    return 0;
#endif
}

int zkl__options_check(const zkl_client_opts *o)
{
    /* TLS and SASL files that cannot be used: refused before anything is
     * sent, not retried by libzookeeper_mt until the session timeout. Then
     * the ACL, which may need the certificate's subject. */
    int rc = zkl__secure_check(&o->sec);
    return rc != 0 ? rc : zkl__acl_check(o);
}

int zkl__options_copy(zkl_client *c, const zkl_client_opts *o)
{
    if (zkl__options_acl_copy(&c->acls, &o->acls) != 0)
        return ZKL_ENOMEM;
    return zkl__secure_new(&o->sec, &c->secure);
}

void zkl__options_drop(zkl_client *c)
{
    zkl__options_acl_free(&c->acls);
    zkl__secure_free(c->secure);
    c->secure = NULL;
}

/* libzookeeper_mt logs to stderr at INFO by default: every connect and
 * disconnect. A library should be quiet; ZKL_ZK_LOG=1 brings it back, and
 * zkl_client_opts_set_quiet_zk_log(o, 0) leaves it to the program. The log
 * is the process's, not a client's: set through the real table. */
void zkl__options_log_init(void)
{
    const char *v = getenv("ZKL_ZK_LOG");
    if (v && *v == '1') {
        zkl__zapi_real.set_debug_level(ZOO_LOG_LEVEL_INFO);
        return;
    }
    zkl__zapi_real.set_debug_level(ZOO_LOG_LEVEL_ERROR);
    /* Above descriptor 2: in a program started with stdout closed, the
     * lowest free descriptor is 1, and /dev/null there would swallow the
     * program's own output without an error. */
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int high = fd >= 0 && fd <= 2 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
    if (high != fd && fd >= 0)
        close(fd);
    FILE *devnull = high >= 0 ? fdopen(high, "w") : NULL;
    if (devnull)
        zkl__zapi_real.set_log_stream(devnull); /* kept open for the process's life */
    else if (high >= 0)
        close(high);
}
