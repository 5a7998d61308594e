/* The security options every command that connects takes: TLS, SASL and
 * the ACL of the nodes it creates, from the command line or, in the style
 * of ZKL_AUTH, the environment. Public API only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct cli_secure cli_secure;

/* Each option and its environment variable. */
static const struct {
    int opt;
    const char *name, *env;
} vars[] = {
    {CLI_OPT_TLS_CA, "--tls-ca", "ZKL_TLS_CA"},
    {CLI_OPT_TLS_CERT, "--tls-cert", "ZKL_TLS_CERT"},
    {CLI_OPT_TLS_KEY, "--tls-key", "ZKL_TLS_KEY"},
    {CLI_OPT_TLS_KEY_PW, "--tls-key-password-file", "ZKL_TLS_KEY_PASSWORD_FILE"},
    {CLI_OPT_SASL_MECH, "--sasl-mech", "ZKL_SASL_MECH"},
    {CLI_OPT_SASL_USER, "--sasl-user", "ZKL_SASL_USER"},
    {CLI_OPT_SASL_PW, "--sasl-password-file", "ZKL_SASL_PASSWORD_FILE"},
};

static const char **slot(int opt)
{
    switch (opt) {
    case CLI_OPT_TLS_CA:
        return &cli_secure.tls_ca;
    case CLI_OPT_TLS_CERT:
        return &cli_secure.tls_cert;
    case CLI_OPT_TLS_KEY:
        return &cli_secure.tls_key;
    case CLI_OPT_TLS_KEY_PW:
        return &cli_secure.tls_key_password_file;
    case CLI_OPT_SASL_MECH:
        return &cli_secure.sasl_mech;
    case CLI_OPT_SASL_USER:
        return &cli_secure.sasl_user;
    case CLI_OPT_SASL_PW:
        return &cli_secure.sasl_password_file;
    default:
        return NULL;
    }
}

int cli_secure_option(int opt, const char *arg)
{
    if (opt == CLI_OPT_ACL) {
        if (cli_secure.nacl == sizeof cli_secure.acl / sizeof cli_secure.acl[0]) {
            cli_usage_error("--acl: at most %zu entries",
                            sizeof cli_secure.acl / sizeof cli_secure.acl[0]);
            return -1;
        }
        cli_secure.acl[cli_secure.nacl++] = arg;
        return 1;
    }
    const char **s = slot(opt);
    if (s == NULL)
        return 0;
    *s = arg;
    return 1;
}

/* "SCHEME:ID:PERMS", PERMS of the letters r w c d a (as ZooKeeper's own
 * shell writes them), into the options. 0, or an exit code after saying
 * why not. */
static int add_acl(zkl_client_opts *o, const char *entry, const char *from)
{
    const char *first = strchr(entry, ':'), *last = strrchr(entry, ':');
    char scheme[32], id[1024];
    int perms = 0;
    if (first == NULL || first == last || (size_t)(first - entry) >= sizeof scheme ||
        (size_t)(last - first - 1) >= sizeof id || last[1] == '\0')
        return cli_usage_error("%s '%s': expected SCHEME:ID:PERMS, e.g. sasl:orders:rwcda", from,
                               entry);
    for (const char *p = last + 1; *p; p++) {
        const char *k = strchr("rwcda", *p);
        if (k == NULL)
            return cli_usage_error("%s '%s': PERMS are letters of rwcda (read, write, create, "
                                   "delete, admin)", from, entry);
        perms |= 1 << (k - "rwcda");
    }
    snprintf(scheme, sizeof scheme, "%.*s", (int)(first - entry), entry);
    snprintf(id, sizeof id, "%.*s", (int)(last - first - 1), first + 1);
    int rc = zkl_client_opts_add_acl(o, scheme, id, perms);
    if (rc == ZKL_EINVAL) {
        const char *why = strstr(zkl_last_error_text(), ": ");
        return cli_usage_error("%s '%s'%s", from, entry, why ? why : "");
    }
    if (rc != 0) {
        cli_err("%s: %s", from, zkl_strerror(rc));
        return cli_exit_for(rc);
    }
    return 0;
}

/* The first line of `file`, without its end of line, into buf. A file
 * that cannot be read (missing, a directory) is bad usage, as the other
 * files of the TLS options are (64). */
static int read_first_line(const char *what, const char *file, char *buf, size_t n)
{
    FILE *f = fopen(file, "re");
    if (f == NULL) {
        cli_err("%s '%s': %s", what, file, strerror(errno));
        return EX_USAGE;
    }
    errno = 0;
    if (fgets(buf, (int)n, f) == NULL) {
        buf[0] = '\0';
        if (ferror(f)) { /* e.g. EISDIR: not an empty password */
            cli_err("%s '%s': %s", what, file, strerror(errno ? errno : EIO));
            fclose(f);
            return EX_USAGE;
        }
    }
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}

int cli_secure_apply(zkl_client_opts *o)
{
    /* The environment fills in what the command line left out. */
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char **s = slot(vars[i].opt);
        const char *env = getenv(vars[i].env);
        if (*s == NULL && env != NULL && *env != '\0')
            *s = env;
    }
    const struct cli_secure *c = &cli_secure;
    int rc;
    if (c->tls_ca != NULL || c->tls_cert != NULL || c->tls_key != NULL ||
        c->tls_key_password_file != NULL) {
        if (c->tls_ca == NULL || c->tls_cert == NULL || c->tls_key == NULL)
            return cli_usage_error("TLS needs --tls-ca, --tls-cert and --tls-key (or ZKL_TLS_CA, "
                                   "ZKL_TLS_CERT and ZKL_TLS_KEY) together");
        char pw[1024] = "";
        if (c->tls_key_password_file != NULL &&
            (rc = read_first_line("--tls-key-password-file", c->tls_key_password_file, pw,
                                  sizeof pw)) != 0)
            return rc;
        rc = zkl_client_opts_set_tls(o, c->tls_ca, c->tls_cert, c->tls_key, pw[0] ? pw : NULL);
        memset(pw, 0, sizeof pw);
        if (rc == ZKL_ENOTSUP) {
            cli_err("--tls-ca: %s", zkl_last_error_text());
            return EX_UNAVAILABLE;
        }
        if (rc != 0)
            return cli_usage_error("%s", zkl_last_error_text());
    }
    if (c->sasl_mech != NULL || c->sasl_user != NULL || c->sasl_password_file != NULL) {
        if (c->sasl_mech == NULL)
            return cli_usage_error("--sasl-user and --sasl-password-file need --sasl-mech "
                                   "(or ZKL_SASL_MECH)");
        rc = zkl_client_opts_set_sasl(o, c->sasl_mech, c->sasl_user, c->sasl_password_file);
        if (rc == ZKL_ENOTSUP) {
            cli_err("--sasl-mech: %s", zkl_last_error_text());
            return EX_UNAVAILABLE;
        }
        if (rc != 0)
            return cli_usage_error("%s", zkl_last_error_text());
    }
    for (int i = 0; i < c->nacl; i++)
        if ((rc = add_acl(o, c->acl[i], "--acl")) != 0)
            return rc;
    /* ZKL_ACL: entries separated by ';', when no --acl was given. */
    const char *env = getenv("ZKL_ACL");
    if (c->nacl == 0 && env != NULL && *env != '\0') {
        char *list = strdup(env), *save = NULL;
        if (list == NULL) {
            cli_err("out of memory");
            return EX_OSERR;
        }
        rc = 0;
        for (char *e = strtok_r(list, ";", &save); e != NULL && rc == 0;
             e = strtok_r(NULL, ";", &save))
            rc = add_acl(o, e, "ZKL_ACL");
        free(list);
        if (rc != 0)
            return rc;
    }
    return 0;
}
