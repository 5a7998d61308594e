/* Why an open gets no session: libzookeeper_mt retries a refused TLS
 * handshake, or a server that closes every connection, until the session
 * timeout, saying nothing to its caller. When the first session is late,
 * the opener asks the servers itself, once: a TLS handshake with the
 * client's own settings (a server certificate the CA file does not verify,
 * a client certificate the server refuses, a server that does not speak
 * TLS), or, without TLS, one TLS hello (a server that answers in TLS waits
 * for one and closes anything else). SASL credentials the server refused
 * show in the handle's state, which no session event reports. */
#include "config.h" /* HAVE_ZOOKEEPER_INIT_SSL, HAVE_ZOOKEEPER_INIT_SASL */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef HAVE_ZOOKEEPER_INIT_SSL
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#endif

#include "session.h"

#define MS 1000000LL
/* How long the first session may take before the servers are asked, and
 * how long one question may take. */
#define PROBE_AFTER_MS 1000
#define PROBE_STEP_MS 500
#define PROBE_ALL_MS 2000

/* A connected, non-blocking socket to host:port, or -1. */
static int dial(const char *host, const char *port, int64_t until)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int64_t left = (until - zkl__now_ns()) / MS;
        int err = 0;
        socklen_t len = sizeof err;
        if (errno != EINPROGRESS || left <= 0 || poll(&p, 1, (int)left) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

/* Wait until fd is ready for `events` or `until` passed: 1 ready, 0 not. */
static int wait_fd(int fd, short events, int64_t until)
{
    int64_t left = (until - zkl__now_ns()) / MS;
    struct pollfd p = {.fd = fd, .events = events};
    return left > 0 && poll(&p, 1, (int)left) == 1;
}

/* A TLS 1.2 ClientHello of the simplest kind a server answers: two
 * ECDHE/RSA suites, the P-256 group, RSA-SHA256 signatures. The random is
 * fixed: nothing is negotiated, only the first bytes of the answer matter. */
static const unsigned char client_hello[] = {
    0x16, 0x03, 0x01, 0x00, 0x47,                   /* record: handshake, 71 bytes */
    0x01, 0x00, 0x00, 0x43, 0x03, 0x03,             /* ClientHello, 67 bytes, TLS 1.2 */
    'z', 'k', 'l', '-', 'p', 'r', 'o', 'b', 'e', 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* random */
    0x00,                                           /* no session id */
    0x00, 0x04, 0xc0, 0x2f, 0x00, 0x9c,             /* cipher suites */
    0x01, 0x00,                                     /* no compression */
    0x00, 0x16,                                     /* extensions, 22 bytes */
    0x00, 0x0a, 0x00, 0x04, 0x00, 0x02, 0x00, 0x17, /* supported groups: P-256 */
    0x00, 0x0b, 0x00, 0x02, 0x01, 0x00,             /* point formats: uncompressed */
    0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, 0x04, 0x01, /* signatures: RSA PKCS#1 SHA-256 */
};

/* Whether the server on fd answers a TLS hello in TLS (a handshake record
 * or an alert). */
static bool speaks_tls(int fd, int64_t until)
{
    if (send(fd, client_hello, sizeof client_hello, MSG_NOSIGNAL) != (ssize_t)sizeof client_hello)
        return false;
    unsigned char b[2];
    size_t got = 0;
    while (got < 2 && wait_fd(fd, POLLIN, until)) {
        ssize_t r = recv(fd, b + got, 2 - got, 0);
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return got == 2 && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03;
}

#ifdef HAVE_ZOOKEEPER_INIT_SSL
/* One TLS handshake with the client's settings on fd: 0 if nothing is
 * wrong that we can see, else the code and a detail about `server`. */
static int tls_handshake(const struct zkl__secure *sec, int fd, const char *server,
                         int64_t until)
{
    char why[600];
    SSL_CTX *ctx = zkl__secure_tls_ctx(&sec->o, why, sizeof why);
    if (ctx == NULL) { /* the files changed since the open began */
        zkl__detail("zkl_client_open: %s", why);
        return ZKL_EINVAL;
    }
    SSL *ssl = SSL_new(ctx);
    int rc = 0;
    /* OpenSSL writes with write(2): a server that ends the handshake must
     * not raise SIGPIPE in the caller's thread. */
    struct zkl__nopipe np;
    zkl__nopipe_begin(&np);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1)
        goto done;
    ERR_clear_error();
    int r, err;
    for (;;) {
        r = SSL_connect(ssl);
        err = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, r);
        if (err == SSL_ERROR_WANT_READ && wait_fd(fd, POLLIN, until))
            continue;
        if (err == SSL_ERROR_WANT_WRITE && wait_fd(fd, POLLOUT, until))
            continue;
        break;
    }
    if (err == SSL_ERROR_NONE) {
        /* In TLS 1.3 the server judges the client's certificate after the
         * client's handshake is done: its refusal is the first thing read. */
        char b[1];
        int64_t soon = zkl__now_ns() + 200 * MS;
        while (wait_fd(fd, POLLIN, soon < until ? soon : until)) {
            r = SSL_read(ssl, b, sizeof b);
            err = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl, r);
            if (err != SSL_ERROR_WANT_READ)
                break;
        }
        if (err == SSL_ERROR_NONE || err == SSL_ERROR_WANT_READ)
            goto done;
    }
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
        goto done; /* no answer in time: a slow server, nothing certain */
    long v = SSL_get_verify_result(ssl);
    unsigned long e = ERR_peek_last_error();
    int reason = e != 0 ? ERR_GET_REASON(e) : 0;
    const char *rs = e != 0 ? ERR_reason_error_string(e) : NULL;
    if (v != X509_V_OK) {
        zkl__detail("zkl_client_open: TLS: the certificate of the server %s is not trusted by "
                    "the CA file \"%.200s\": %s", server, sec->o.tls_ca,
                    X509_verify_cert_error_string(v));
        rc = ZKL_ENOAUTH;
    } else if (reason >= SSL_AD_REASON_OFFSET) {
        /* An alert from the server. */
        int alert = reason - SSL_AD_REASON_OFFSET;
        bool cert = (alert >= SSL3_AD_BAD_CERTIFICATE && alert <= SSL3_AD_CERTIFICATE_UNKNOWN) ||
                    alert == TLS1_AD_UNKNOWN_CA || alert == TLS13_AD_CERTIFICATE_REQUIRED;
        if (cert && zkl__secure_cert_expired(sec->o.tls_cert))
            zkl__detail("zkl_client_open: TLS: the server %s refused the client certificate "
                        "\"%.200s\": it has expired", server, sec->o.tls_cert);
        else if (cert)
            zkl__detail("zkl_client_open: TLS: the server %s refused the client certificate "
                        "\"%.200s\" (%s)", server, sec->o.tls_cert, rs ? rs : "alert");
        else
            zkl__detail("zkl_client_open: TLS: the server %s refused the handshake (%s)", server,
                        rs ? rs : "alert");
        rc = ZKL_ENOAUTH;
    } else if (err == SSL_ERROR_ZERO_RETURN || err == SSL_ERROR_SYSCALL ||
               reason == SSL_R_UNEXPECTED_EOF_WHILE_READING ||
               reason == SSL_R_WRONG_VERSION_NUMBER ||
               reason == SSL_R_PACKET_LENGTH_TOO_LONG) {
        zkl__detail("zkl_client_open: TLS: the server %s ended the connection in the TLS "
                    "handshake: it does not speak TLS on this port (is it the plaintext "
                    "clientPort instead of the secureClientPort?)", server);
        rc = ZKL_ECONNLOSS;
    }
done:
    zkl__nopipe_end(&np);
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return rc;
}
#endif

/* Ask each server of c->hosts once, until `until`: 0, or the first
 * definite reason why no session can come. */
static int probe_servers(zkl_client *c, int64_t until)
{
    char *list = strdup(c->hosts);
    if (list == NULL)
        return 0;
    list[strcspn(list, "/")] = '\0'; /* the chroot */
    int rc = 0;
    char *save = NULL;
    for (char *h = strtok_r(list, ",", &save); h != NULL && rc == 0 && zkl__now_ns() < until;
         h = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(h, ':');
        if (colon == NULL || h[0] == '[')
            continue; /* an IPv6 literal: not asked */
        char server[300];
        snprintf(server, sizeof server, "%s", h);
        *colon = '\0';
        int64_t step = zkl__now_ns() + PROBE_STEP_MS * MS;
        if (step > until)
            step = until;
        int fd = dial(h, colon + 1, step);
        if (fd < 0)
            continue; /* down, or not there: libzookeeper_mt says no more */
#ifdef HAVE_ZOOKEEPER_INIT_SSL
        if (c->secure != NULL && c->secure->tls_arg != NULL) {
            rc = tls_handshake(c->secure, fd, server, step);
            close(fd);
            continue;
        }
#endif
        if (speaks_tls(fd, step)) {
#ifdef HAVE_ZOOKEEPER_INIT_SSL
            zkl__detail("zkl_client_open: the server %s speaks TLS on this port (a "
                        "secureClientPort): give the client TLS settings "
                        "(zkl_client_opts_set_tls)", server);
#else
            zkl__detail("zkl_client_open: the server %s speaks TLS on this port (a "
                        "secureClientPort), and this zkl was built on a libzookeeper_mt "
                        "without TLS (configure --with-zookeeper=PREFIX, "
                        "scripts/build-zookeeper-client.sh)", server);
#endif
            rc = ZKL_ECONNLOSS;
        }
        close(fd);
    }
    free(list);
    return rc;
}

/* Whether the open should stop waiting, without c->mu: 0 to go on until
 * *next, or the code (with a detail) that says why no session can come. */
static int open_stalled(zkl_client *c, int64_t started, int64_t deadline, bool *probed,
                        int64_t *next)
{
    int64_t now = zkl__now_ns();
    bool sasl = false;
#ifdef HAVE_ZOOKEEPER_INIT_SASL
    sasl = c->secure != NULL && c->secure->o.sasl_mech != NULL;
    if (sasl && c->zapi->state(c->zh) == ZOO_AUTH_FAILED_STATE) {
        const struct zkl__secure_opts *o = &c->secure->o;
        if (strcmp(o->sasl_mech, "DIGEST-MD5") == 0)
            zkl__detail("zkl_client_open: SASL: the server refused the DIGEST-MD5 credentials "
                        "of user \"%.100s\" (a wrong password, an unknown user, or no SASL "
                        "on the server)", o->sasl_user ? o->sasl_user : "");
        else
            zkl__detail("zkl_client_open: SASL: %s authentication failed (for GSSAPI: no valid "
                        "ticket in the credential cache of KRB5CCNAME, no service principal "
                        "zookeeper/<the first host of the connect string>, or the server "
                        "refused it)", o->sasl_mech);
        return ZKL_ENOAUTH;
    }
#endif
    /* A session timeout shorter than the wait before asking: ask sooner. */
    int64_t after = (int64_t)PROBE_AFTER_MS * MS;
    if ((int64_t)c->timeout_ms * MS / 3 < after)
        after = (int64_t)c->timeout_ms * MS / 3;
    /* A short wait (zkl -n, -w under a second): ask halfway, so that the
     * reason (a CA that does not verify the server, a refused certificate)
     * is known before the wait ends. */
    if ((deadline - started) / 2 < after)
        after = (deadline - started) / 2;
    if (!*probed && now >= started + after) {
        *probed = true;
        int64_t until = now + PROBE_ALL_MS * MS;
        int rc = probe_servers(c, until < deadline ? until : deadline);
        if (rc != 0)
            return rc;
        now = zkl__now_ns();
    }
    *next = sasl ? now + 50 * MS : *probed ? ZKL__NO_DEADLINE : started + after;
    return 0;
}

int zkl__probe_first_session(zkl_client *c, int64_t deadline)
{
    int64_t started = c->handle_started_ns, next = 0;
    bool probed = false;
    int stalled = 0;
    while (c->state == ZKL_STATE_CONNECTING && !c->auth_failed && stalled == 0) {
        if (zkl__now_ns() >= next) {
            pthread_mutex_unlock(&c->mu);
            stalled = open_stalled(c, started, deadline, &probed, &next);
            pthread_mutex_lock(&c->mu);
            continue;
        }
        if (zkl__cond_wait(&c->cv, &c->mu, next < deadline ? next : deadline) != 0 &&
            zkl__now_ns() >= deadline)
            break;
    }
    if (stalled != 0)
        return stalled;
    if (c->auth_failed)
        return ZKL_ENOAUTH;
    return c->state == ZKL_STATE_CONNECTED ? 0 : ZKL_ECONNLOSS;
}
