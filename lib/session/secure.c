/* TLS and SASL for a session: the client's copy of the settings, the check
 * of its files before anything is sent, the handle made with them, and the
 * SASL credentials handed to Cyrus SASL on libzookeeper_mt's I/O thread.
 * Both exist only on a libzookeeper_mt built with them
 * (scripts/build-zookeeper-client.sh); on Debian's, the options return
 * ZKL_ENOTSUP and a client has no settings here. */
#include "config.h" /* HAVE_ZOOKEEPER_INIT_SSL, HAVE_ZOOKEEPER_INIT_SASL */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef HAVE_ZOOKEEPER_INIT_SASL
#define HAVE_CYRUS_SASL_H 1 /* zookeeper.h then declares zookeeper_init_sasl */
#include <sasl/sasl.h>
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SSL
#define HAVE_OPENSSL_H 1 /* zookeeper.h then declares zookeeper_init_ssl */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#endif

#include "session.h"

static void wipe_free(char *s)
{
    if (s != NULL) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

void zkl__secure_opts_clear(struct zkl__secure_opts *s)
{
    free(s->tls_ca);
    free(s->tls_cert);
    free(s->tls_key);
    wipe_free(s->tls_password);
    free(s->sasl_mech);
    free(s->sasl_user);
    free(s->sasl_password_file);
    *s = (struct zkl__secure_opts){0};
}

/* ---- the TLS files ---------------------------------------------------------- */

/* Whether `path` can be opened for reading; the reason in why if not. */
static bool readable(const char *what, const char *path, char *why, size_t n)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        snprintf(why, n, "cannot read the %s \"%.200s\": %s", what, path, strerror(errno));
        return false;
    }
    /* A directory opens for reading; its read fails (EISDIR). */
    struct stat st;
    bool dir = fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode);
    fclose(f);
    if (dir)
        snprintf(why, n, "cannot read the %s \"%.200s\": %s", what, path, strerror(EISDIR));
    return !dir;
}

#ifdef HAVE_ZOOKEEPER_INIT_SSL
/* The key's password, for OpenSSL: never a prompt on the terminal (its
 * default without one). */
struct pw_ask {
    const char *password;
    bool asked;
};

static int key_password_cb(char *buf, int size, int rwflag, void *arg)
{
    (void)rwflag;
    struct pw_ask *p = arg;
    p->asked = true;
    if (p->password == NULL)
        return 0;
    int n = (int)strlen(p->password);
    if (n > size)
        return 0;
    memcpy(buf, p->password, (size_t)n);
    return n;
}

/* OpenSSL's reason for the last failure in this thread, and an empty queue. */
static const char *ssl_reason(char *buf, size_t n)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
    snprintf(buf, n, "%s", r != NULL ? r : "unknown reason");
    ERR_clear_error();
    return buf;
}

SSL_CTX *zkl__secure_tls_ctx(const struct zkl__secure_opts *s, char *why, size_t n)
{
    char r[128];
    if (!readable("TLS CA file", s->tls_ca, why, n) ||
        !readable("TLS certificate file", s->tls_cert, why, n) ||
        !readable("TLS key file", s->tls_key, why, n))
        return NULL;
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        snprintf(why, n, "cannot make a TLS context: %s", ssl_reason(r, sizeof r));
        return NULL;
    }
    struct pw_ask pw = {s->tls_password, false};
    SSL_CTX_set_default_passwd_cb(ctx, key_password_cb);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, &pw);
    if (SSL_CTX_load_verify_locations(ctx, s->tls_ca, NULL) != 1) {
        snprintf(why, n, "the TLS CA file \"%.200s\" holds no PEM certificate (%s)", s->tls_ca,
                 ssl_reason(r, sizeof r));
    } else if (SSL_CTX_use_certificate_chain_file(ctx, s->tls_cert) != 1) {
        snprintf(why, n, "the TLS certificate file \"%.200s\" holds no PEM certificate (%s)",
                 s->tls_cert, ssl_reason(r, sizeof r));
    } else if (SSL_CTX_use_PrivateKey_file(ctx, s->tls_key, SSL_FILETYPE_PEM) != 1) {
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
            snprintf(why, n, "the TLS key in \"%.200s\" does not belong to the certificate "
                     "in \"%.200s\"", s->tls_key, s->tls_cert);
            ERR_clear_error();
        } else if (pw.asked && s->tls_password == NULL)
            snprintf(why, n, "the TLS key file \"%.200s\" is encrypted and no key password "
                     "was given", s->tls_key);
        else if (pw.asked)
            snprintf(why, n, "the TLS key file \"%.200s\" does not open with the key password "
                     "given (a wrong password?)", s->tls_key);
        else
            snprintf(why, n, "the TLS key file \"%.200s\" holds no PEM private key (%s)",
                     s->tls_key, ssl_reason(r, sizeof r));
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(why, n, "the TLS key in \"%.200s\" does not belong to the certificate in "
                 "\"%.200s\"", s->tls_key, s->tls_cert);
        ERR_clear_error();
    } else {
        /* The context outlives this frame: no callback data left pointing
         * into it. */
        SSL_CTX_set_default_passwd_cb(ctx, NULL);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        return ctx;
    }
    SSL_CTX_free(ctx);
    return NULL;
}

/* The RDN types Java's X500Principal writes by name in RFC 2253 form; a
 * subject with others (written as OIDs there) is not compared here. */
static bool java_names(X509_NAME *name)
{
    static const int known[] = {NID_commonName, NID_countryName, NID_localityName,
                                NID_stateOrProvinceName, NID_organizationName,
                                NID_organizationalUnitName, NID_domainComponent,
                                NID_userId};
    for (int i = 0; i < X509_NAME_entry_count(name); i++) {
        int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(X509_NAME_get_entry(name, i)));
        bool ok = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            ok = ok || nid == known[k];
        if (!ok)
            return false;
    }
    return true;
}

/* The first certificate in cert_file, or NULL. */
static X509 *read_cert(const char *cert_file)
{
    FILE *f = fopen(cert_file, "re");
    if (f == NULL)
        return NULL;
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    ERR_clear_error();
    return x;
}

bool zkl__secure_cert_expired(const char *cert_file)
{
    X509 *x = read_cert(cert_file);
    bool expired = x != NULL && X509_cmp_current_time(X509_get0_notAfter(x)) < 0;
    X509_free(x);
    return expired;
}

bool zkl__secure_subject(const char *cert_file, char *out, size_t n)
{
    X509 *x = read_cert(cert_file);
    if (x == NULL)
        return false;
    bool ok = false;
    BIO *b = BIO_new(BIO_s_mem());
    X509_NAME *name = X509_get_subject_name(x);
    if (b != NULL && name != NULL && java_names(name) &&
        X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253) >= 0) {
        char *p;
        long len = BIO_get_mem_data(b, &p);
        /* Escapes (non-ASCII, special characters) differ between the two
         * writers: such a subject is not compared either. */
        if (len > 0 && (size_t)len < n && memchr(p, '\\', (size_t)len) == NULL) {
            memcpy(out, p, (size_t)len);
            out[len] = '\0';
            ok = true;
        }
    }
    BIO_free(b);
    X509_free(x);
    return ok;
}
#endif

int zkl__secure_check(const struct zkl__secure_opts *s)
{
    char why[600];
    if (s->tls_ca != NULL && s->sasl_mech != NULL) {
        zkl__detail("zkl_client_open: TLS and SASL on one session: libzookeeper_mt 3.8 has no "
                    "call for both (authenticate over TLS with the client certificate, "
                    "scheme x509)");
        return ZKL_ENOTSUP;
    }
#ifdef HAVE_ZOOKEEPER_INIT_SSL
    if (s->tls_ca != NULL) {
        SSL_CTX *ctx = zkl__secure_tls_ctx(s, why, sizeof why);
        if (ctx == NULL) {
            zkl__detail("zkl_client_open: %s", why);
            return ZKL_EINVAL;
        }
        SSL_CTX_free(ctx);
    }
#endif
    if (s->sasl_password_file != NULL &&
        !readable("SASL password file", s->sasl_password_file, why, sizeof why)) {
        zkl__detail("zkl_client_open: %s", why);
        return ZKL_EINVAL;
    }
    return 0;
}

/* ---- SASL credentials ------------------------------------------------------------- */

#ifdef HAVE_ZOOKEEPER_INIT_SASL
/* Cyrus SASL's callbacks: the user (as authentication and authorization
 * name), the realm the server offers, and the password: the first line of
 * the password file, read when asked, on the handle's I/O thread. */
static int sasl_user_cb(void *ctx, int id, const char **result, unsigned *len)
{
    const struct zkl__secure *sec = ctx;
    if (result == NULL || (id != SASL_CB_USER && id != SASL_CB_AUTHNAME))
        return SASL_BADPARAM;
    *result = sec->o.sasl_user != NULL ? sec->o.sasl_user : "";
    if (len != NULL)
        *len = (unsigned)strlen(*result);
    return SASL_OK;
}

static int sasl_realm_cb(void *ctx, int id, const char **avail, const char **result)
{
    (void)ctx, (void)id;
    *result = avail != NULL ? avail[0] : NULL;
    return SASL_OK;
}

static int sasl_pass_cb(sasl_conn_t *conn, void *ctx, int id, sasl_secret_t **out)
{
    struct zkl__secure *sec = ctx;
    if (conn == NULL || out == NULL || id != SASL_CB_PASS || sec->o.sasl_password_file == NULL)
        return SASL_BADPARAM;
    char buf[1024];
    FILE *f = fopen(sec->o.sasl_password_file, "re");
    if (f == NULL)
        return SASL_FAIL;
    bool got = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!got)
        return SASL_FAIL;
    size_t n = strcspn(buf, "\r\n");
    sasl_secret_t *x = malloc(sizeof *x + n);
    if (x == NULL) {
        memset(buf, 0, sizeof buf);
        return SASL_NOMEM;
    }
    x->len = n;
    memcpy(x->data, buf, n);
    x->data[n] = '\0';
    memset(buf, 0, sizeof buf);
    /* Cyrus SASL uses the secret until the exchange ends: keep the last. */
    pthread_mutex_lock(&sec->mu);
    sasl_secret_t *old = sec->sasl_secret;
    sec->sasl_secret = x;
    pthread_mutex_unlock(&sec->mu);
    if (old != NULL) {
        memset(old->data, 0, old->len);
        free(old);
    }
    *out = x;
    return SASL_OK;
}

/* Cyrus SASL's options: DIGEST-MD5's reauthentication off. With it, a
 * second exchange in the process (another client, or a re-opened session)
 * would start from the state cached by an earlier one, a first message
 * that libzookeeper_mt drops (its note on JDK-6682540); without it, every
 * exchange is a full one, as the server expects. */
static int sasl_getopt_cb(void *ctx, const char *plugin, const char *option, const char **result,
                          unsigned *len)
{
    (void)ctx, (void)plugin;
    if (option == NULL || result == NULL || strcmp(option, "reauth_timeout") != 0)
        return SASL_FAIL;
    *result = "0";
    if (len != NULL)
        *len = 1;
    return SASL_OK;
}

typedef int (*sasl_fn)(void);

static int sasl_callbacks_new(struct zkl__secure *sec)
{
    sasl_callback_t *cb = calloc(6, sizeof *cb);
    if (cb == NULL)
        return ZKL_ENOMEM;
    cb[0] = (sasl_callback_t){SASL_CB_USER, (sasl_fn)(void (*)(void))sasl_user_cb, sec};
    cb[1] = (sasl_callback_t){SASL_CB_AUTHNAME, (sasl_fn)(void (*)(void))sasl_user_cb, sec};
    cb[2] = (sasl_callback_t){SASL_CB_GETREALM, (sasl_fn)(void (*)(void))sasl_realm_cb, sec};
    cb[3] = (sasl_callback_t){SASL_CB_PASS, (sasl_fn)(void (*)(void))sasl_pass_cb, sec};
    cb[4] = (sasl_callback_t){SASL_CB_GETOPT, (sasl_fn)(void (*)(void))sasl_getopt_cb, sec};
    cb[5] = (sasl_callback_t){SASL_CB_LIST_END, NULL, NULL};
    sec->sasl_callbacks = cb;
    return 0;
}

/* Cyrus SASL's client side is set up once per process; libzookeeper_mt
 * leaves that to its callers. */
static pthread_once_t sasl_once = PTHREAD_ONCE_INIT;
static int sasl_init_rc;
static void sasl_init(void)
{
    sasl_init_rc = sasl_client_init(NULL);
}
#endif

/* ---- the client's copy ------------------------------------------------------------- */

static int dup_opt(char **dst, const char *src)
{
    if (src == NULL)
        return 0;
    return (*dst = strdup(src)) == NULL ? ZKL_ENOMEM : 0;
}

int zkl__secure_new(const struct zkl__secure_opts *s, struct zkl__secure **out)
{
    *out = NULL;
    if (s->tls_ca == NULL && s->sasl_mech == NULL)
        return 0;
    struct zkl__secure *sec = calloc(1, sizeof *sec);
    if (sec == NULL || pthread_mutex_init(&sec->mu, NULL) != 0) {
        free(sec);
        return ZKL_ENOMEM;
    }
    int rc = 0;
    const char *const from[] = {s->tls_ca, s->tls_cert, s->tls_key, s->tls_password,
                                s->sasl_mech, s->sasl_user, s->sasl_password_file};
    char **const to[] = {&sec->o.tls_ca, &sec->o.tls_cert, &sec->o.tls_key,
                         &sec->o.tls_password, &sec->o.sasl_mech, &sec->o.sasl_user,
                         &sec->o.sasl_password_file};
    for (size_t i = 0; i < sizeof from / sizeof from[0] && rc == 0; i++)
        rc = dup_opt(to[i], from[i]);
    if (rc == 0 && s->tls_ca != NULL) {
        /* zookeeper_init_ssl's one argument: the names (and the password)
         * separated by commas, as zkl_client_opts_set_tls ensured they can be. */
        size_t n = strlen(s->tls_ca) + strlen(s->tls_cert) + strlen(s->tls_key) +
                   (s->tls_password ? strlen(s->tls_password) : 0) + 4;
        if ((sec->tls_arg = malloc(n)) == NULL)
            rc = ZKL_ENOMEM;
        else
            snprintf(sec->tls_arg, n, "%s,%s,%s%s%s", s->tls_ca, s->tls_cert, s->tls_key,
                     s->tls_password ? "," : "", s->tls_password ? s->tls_password : "");
    }
#ifdef HAVE_ZOOKEEPER_INIT_SASL
    if (rc == 0 && s->sasl_mech != NULL)
        rc = sasl_callbacks_new(sec);
#endif
    if (rc != 0) {
        zkl__secure_free(sec);
        return rc;
    }
    *out = sec;
    return 0;
}

void zkl__secure_free(struct zkl__secure *sec)
{
    if (sec == NULL)
        return;
    zkl__secure_opts_clear(&sec->o);
    wipe_free(sec->tls_arg);
#ifdef HAVE_ZOOKEEPER_INIT_SASL
    sasl_secret_t *x = sec->sasl_secret;
    if (x != NULL) {
        memset(x->data, 0, x->len);
        free(x);
    }
#endif
    free(sec->sasl_callbacks);
    pthread_mutex_destroy(&sec->mu);
    free(sec);
}

/* ---- the handle ------------------------------------------------------------------ */

zhandle_t *zkl__secure_handle(const struct zkl__zapi *z, const struct zkl__secure *sec,
                              const char *hosts, watcher_fn fn, int timeout_ms)
{
#ifdef HAVE_ZOOKEEPER_INIT_SSL
    if (sec != NULL && sec->tls_arg != NULL)
        return z->init_ssl(hosts, sec->tls_arg, fn, timeout_ms, NULL, NULL, 0);
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SASL
    if (sec != NULL && sec->o.sasl_mech != NULL) {
        pthread_once(&sasl_once, sasl_init);
        if (sasl_init_rc != SASL_OK) {
            errno = EINVAL;
            return NULL;
        }
        /* The server's name in the exchange: for DIGEST-MD5 the one
         * ZooKeeper's servers expect ("zk-sasl-md5"); for the others (the
         * service principal zookeeper/<host> of Kerberos) the first host
         * of the connect string: libzookeeper_mt takes one name for every
         * server, and without one it would use the address it connected
         * to, in digits. */
        char host[256] = "";
        if (strcmp(sec->o.sasl_mech, "DIGEST-MD5") == 0)
            snprintf(host, sizeof host, "zk-sasl-md5");
        else if (hosts[0] != '[')
            snprintf(host, sizeof host, "%.*s", (int)strcspn(hosts, ":,/"), hosts);
        zoo_sasl_params_t params = {
            .service = "zookeeper",
            .host = host[0] != '\0' ? host : NULL,
            .mechlist = sec->o.sasl_mech,
            .callbacks = sec->sasl_callbacks,
        };
        return z->init_sasl(hosts, fn, timeout_ms, NULL, NULL, 0, NULL, &params);
    }
#endif
    (void)sec;
    return z->init(hosts, fn, timeout_ms, NULL, NULL, 0);
}
