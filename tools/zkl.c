/* zkl — ZooKeeper locks from the shell: the command's entry point, its help
 * and the helpers its commands share. Public API only. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *cli_prog = "zkl";
bool cli_sigpipe_default;

void cli_help(void)
{
    printf(
        "Usage: zkl lock [OPTIONS] PATH [--] COMMAND [ARGS...]\n"
        "       zkl lock [OPTIONS] PATH -c SHELL-COMMAND\n"
        "       zkl lock [OPTIONS] PATH\n"
        "       zkl elect [OPTIONS] [--id ID] PATH [--] COMMAND [ARGS...]\n"
        "       zkl leader [-S HOSTS] [--json] [--watch] PATH\n"
        "       zkl holders [OPTIONS] PATH\n"
        "       zkl break [-S HOSTS] [SECURITY OPTIONS] PATH [NODE]\n"
        "       zkl revoke [-S HOSTS] [SECURITY OPTIONS] [-w SECONDS] PATH [NODE]\n"
        "       zkl --help | --version\n"
        "\n"
        "zkl lock waits for the ZooKeeper lock at PATH, runs COMMAND while it\n"
        "holds it, releases it when COMMAND ends and exits with COMMAND's status\n"
        "(128+N if a signal N ended it). Like flock(1), across machines.\n"
        "Without COMMAND it prints \"NODE TOKEN\" and holds the lock until\n"
        "SIGTERM, SIGINT, SIGHUP or the end of its stdin, then releases (exit 0).\n"
        "zkl break deletes the holder's node (or NODE) and says what it deleted;\n"
        "zkl revoke asks the holder (or NODE) to let go, as Curator's revocation\n"
        "does, and waits up to -w SECONDS (default 10; 0: do not wait) for it:\n"
        "it says which let go, and exits 2 if one did not (its owner is put back\n"
        "in its node). Both exit 1 when nobody holds.\n"
        "\n"
        "Lock options:\n"
        "  -w, --wait, --timeout SECONDS  give up after SECONDS (fractions allowed;\n"
        "                        connecting included)\n"
        "  -n, --nonblock        give up at once if the lock is held (and after a\n"
        "                        second without a server)\n"
        "      --connect-timeout SECONDS  give up connecting after SECONDS (exit 69),\n"
        "                        whatever -n or -w say\n"
        "  -E, --conflict-exit-code CODE  exit code when the lock was not\n"
        "                        acquired (default 1)\n"
        "  -s, --shared          the read side of a read-write lock\n"
        "  -x, --exclusive       the write side of a read-write lock\n"
        "                        (neither: a mutex; a mutex excludes both sides)\n"
        "      --semaphore N     take one of N leases\n"
        "  -c SHELL-COMMAND      run SHELL-COMMAND with /bin/sh -c\n"
        "      --kill-after SECONDS  if the lock is lost, COMMAND gets SIGTERM,\n"
        "                        and SIGKILL SECONDS later (default 5)\n"
        "      --lost-exit-code CODE  exit code when the lock was lost while\n"
        "                        COMMAND ran (default 75)\n"
        "      --revocable       let go when asked (zkl revoke, Curator's\n"
        "                        Revoker): COMMAND gets SIGTERM, then release\n"
        "      --foreground      run COMMAND in zkl's process group and signal its\n"
        "                        pid alone (default: a group of its own, all of\n"
        "                        which is signalled)\n"
        "      --until-signal    hold mode: hold until a signal, whatever stdin\n"
        "                        does (stdin at its end releases at once)\n"
        "  -v, --verbose         say on stderr how long zkl waited and which\n"
        "                        fencing token it got\n"
        "      --metrics FILE    at the end, write the lock metrics in Prometheus\n"
        "                        text to FILE (- for stderr)\n"
        "\n"
        "zkl elect joins the election at PATH (Curator's LeaderLatch protocol)\n"
        "and runs COMMAND while it leads, with the lock options above (not -s, -x,\n"
        "--semaphore, --revocable) and their exit codes; COMMAND also finds the\n"
        "id in ZKL_LEADER_ID. With -n it gives up at once if another candidate\n"
        "is there. It leaves when COMMAND ends.\n"
        "      --id ID           the candidate's id, its node's data (default\n"
        "                        \"host pid\")\n"
        "zkl leader prints the leader's id (exit 1 when there is none);\n"
        "--watch prints one line per change of leader until a signal.\n"
        "\n"
        "Holders and leader options:\n"
        "      --json            JSON instead of text\n"
        "\n"
        "Common options:\n"
        "  -S, --servers HOSTS   ZooKeeper connect string, host:port[,...][/chroot]\n"
        "                        (default $ZKL_SERVERS, else " CLI_DEFAULT_SERVERS ")\n"
        "      --session-timeout MS  session timeout (default %d)\n"
        "      --tls-ca FILE     talk TLS to the servers (their secureClientPort),\n"
        "                        verifying them with the CA certificates in FILE\n"
        "      --tls-cert FILE   the client certificate (chain) to present (PEM)\n"
        "      --tls-key FILE    its private key (PEM)\n"
        "      --tls-key-password-file FILE  the key's password, FILE's first line\n"
        "      --sasl-mech MECH  authenticate with SASL: DIGEST-MD5 or GSSAPI\n"
        "      --sasl-user USER  the SASL user (DIGEST-MD5)\n"
        "      --sasl-password-file FILE  the SASL password, FILE's first line\n"
        "      --acl SCHEME:ID:PERMS  an entry of the ACL of the nodes zkl creates\n"
        "                        (repeat for more; PERMS of rwcda), e.g.\n"
        "                        --acl x509:CN=orders:rwcda --acl world:anyone:r\n"
        "  -h, --help            this help\n"
        "  -V, --version         zkl's version\n"
        "\n"
        "COMMAND's environment adds ZKL_LOCK_PATH (PATH), ZKL_LOCK_NODE (zkl's\n"
        "node) and ZKL_FENCING_TOKEN (that node's czxid: later holders get larger\n"
        "tokens). COMMAND runs in a process group of its own: SIGINT, SIGTERM, SIGHUP\n"
        "and SIGQUIT sent to zkl go on to the whole group, as does the SIGTERM when\n"
        "the lock is lost; the lock is released once COMMAND has ended. If zkl\n"
        "itself dies (SIGKILL, ...), a guard process ends the group. While zkl waits, they make it\n"
        "stop waiting, leaving no node behind; while connecting, they end zkl at\n"
        "once. If the session expires, or may expire any moment (no answer from\n"
        "ZooKeeper for 9/20 of the session timeout), zkl counts the lock as lost\n"
        "and ends COMMAND.\n"
        "\n"
        "Environment: ZKL_SERVERS (connect string), ZKL_AUTH (user:password for\n"
        "digest authentication), and for what the options above leave out:\n"
        "ZKL_TLS_CA, ZKL_TLS_CERT, ZKL_TLS_KEY, ZKL_TLS_KEY_PASSWORD_FILE,\n"
        "ZKL_SASL_MECH, ZKL_SASL_USER, ZKL_SASL_PASSWORD_FILE, and ZKL_ACL\n"
        "(entries separated by ';', when no --acl is given); for lock,\n"
        "ZKL_CONNECT_TIMEOUT (seconds, when no --connect-timeout is given).\n"
        "\n"
        "Exit status:\n"
        "  COMMAND's status, or 128+N if signal N ended COMMAND\n"
        "  1    lock not acquired within -w, or at once with -n (see -E);\n"
        "       break/revoke: nobody holds\n"
        "  2    revoke: a holder did not let go within -w; or a semaphore\n"
        "  64   bad usage\n"
        "  69   ZooKeeper unavailable (no server answered; a host name does not\n"
        "       resolve; session ended while waiting and could not be renewed;\n"
        "       TLS to a port without it, or none to a TLS port); this zkl has\n"
        "       no TLS or SASL (built on a ZooKeeper client without them)\n"
        "  70   internal or unexpected ZooKeeper error\n"
        "  71   system error (out of memory, cannot start a process, ...)\n"
        "  74   cannot write to stdout (\"write error\")\n"
        "  75   lock lost while COMMAND ran: COMMAND was terminated (see\n"
        "       --lost-exit-code)\n"
        "  77   not authorized (ZooKeeper ACL or credentials, a refused TLS\n"
        "       certificate or SASL login, a server the TLS CA does not vouch for)\n"
        "  78   --semaphore N disagrees with the limit recorded on the server\n"
        "  126  COMMAND could not be run; 127 COMMAND not found\n"
        "  128+N  zkl itself was stopped by signal N while waiting\n",
        CLI_DEFAULT_SESSION_MS);
}

static void version(void)
{
    printf("zkl %s (libzkl %s)\n", ZKL_VERSION_STRING, zkl_version_string());
}

/* One write per message: whole lines, even among COMMAND's output. */
static void vmsg(const char *fmt, va_list ap)
{
    char buf[2048];
    int n = snprintf(buf, sizeof buf, "%s: ", cli_prog);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    size_t len = m < 0 ? (size_t)n : (size_t)n + (size_t)m;
    if (len > sizeof buf - 5)
        len = sizeof buf - 5; /* cut: said with "..." */
    if (m >= 0 && (size_t)n + (size_t)m > len) {
        memcpy(buf + len, "...", 3);
        len += 3;
    }
    buf[len++] = '\n';
    cli_errout_write(buf, len);
}

void cli_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
    return EX_USAGE;
}

int cli_parse_seconds(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* Plain decimals only: strtod would also read hex, exponents, "inf"
     * and "nan". The bound keeps milliseconds far from overflowing. */
    if (errno != 0 || end == s || *end != '\0' || strspn(s, "0123456789.") != strlen(s) ||
        v > 1e9) {
        cli_usage_error("%s: '%s' is not a number of seconds", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_long(const char *opt, const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        cli_usage_error("%s: '%s' is not a whole number from %ld to %ld", opt, s, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

const char *cli_servers(const char *opt)
{
    if (opt != NULL)
        return opt;
    const char *env = getenv("ZKL_SERVERS");
    return env != NULL && *env != '\0' ? env : CLI_DEFAULT_SERVERS;
}

int cli_exit_for(int err)
{
    switch (err) {
    case ZKL_EINVAL:
        return EX_USAGE;
    case ZKL_ECONNLOSS:
    case ZKL_ELOST:
    case ZKL_ETIMEDOUT:
        return EX_UNAVAILABLE;
    case ZKL_ENOAUTH:
        return EX_NOPERM;
    case ZKL_EMISMATCH:
        return EX_CONFIG;
    case ZKL_EQUEUE:
        return EX_PROTOCOL; /* the listing exceeds what a request may carry */
    case ZKL_ENOMEM:
    case ZKL_ESYS:
        return EX_OSERR;
    default:
        return EX_SOFTWARE;
    }
}

/* The first host of `servers` whose name does not resolve, copied into
 * `out`; false if every one resolves. */
static bool unresolved_host(const char *servers, char *out, size_t sz)
{
    char list[1024];
    snprintf(list, sizeof list, "%s", servers);
    list[strcspn(list, "/")] = '\0';
    char *save = NULL;
    for (char *h = strtok_r(list, ",", &save); h != NULL; h = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(h, ':');
        if (colon == NULL || h[0] == '[')
            continue;
        *colon = '\0';
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
        if (getaddrinfo(h, NULL, &hints, &res) != 0) {
            snprintf(out, sz, "%s", h);
            return true;
        }
        freeaddrinfo(res);
    }
    return false;
}

long cli_connect_ms;

int cli_connect(const char *servers, int session_ms, zkl_client **out)
{
    zkl_client_opts *o;
    int rc = zkl_client_opts_new(&o);
    if (rc == 0)
        rc = zkl_client_opts_set_reopen(o, 0);
    if (rc == 0 && cli_connect_ms > 0)
        rc = zkl_client_opts_set_connect_timeout(o, (int)cli_connect_ms);
    const char *auth = getenv("ZKL_AUTH");
    if (rc == 0 && auth != NULL && *auth != '\0' &&
        zkl_client_opts_set_digest_auth(o, auth) == ZKL_EINVAL) {
        zkl_client_opts_free(o);
        /* The credential itself is never printed. */
        return cli_usage_error("ZKL_AUTH must be user:password (a user name, a colon, a password)");
    }
    if (rc == 0) {
        int code = cli_secure_apply(o);
        if (code != 0) {
            zkl_client_opts_free(o);
            return code;
        }
        rc = zkl_client_open_opts(servers, session_ms, o, out);
    }
    zkl_client_opts_free(o);
    /* The library's reason, without the name of its call. */
    const char *why = zkl_last_error_text();
    if (strncmp(why, "zkl_client_open: ", 17) == 0)
        why += 17;
    char host[256];
    /* What the library found out (which file, which server, why), if
     * anything, is said as it is. */
    const char *detail = zkl_last_error_text();
    static const char silent[] = "zkl_client_open: no server answered at ";
    if (rc == ZKL_ECONNLOSS && cli_connect_ms > 0 && strncmp(detail, silent, sizeof silent - 1) == 0) {
        /* The wait the caller bounded, said as its own watch says it
         * (zkl lock's connect_bounded): either may end first. */
        cli_err("no ZooKeeper server answered at %s within %g s", servers,
                (double)cli_connect_ms / 1000);
        return EX_UNAVAILABLE;
    }
    if (rc != 0 && rc != ZKL_ERESOLVE && strncmp(detail, "zkl_client_open: ", 17) == 0) {
        cli_err("%s", detail + 17);
        return rc == ZKL_EINVAL ? EX_USAGE : rc == ZKL_ENOTSUP ? EX_UNAVAILABLE : cli_exit_for(rc);
    }
    switch (rc) {
    case 0:
        return 0;
    case ZKL_ERESOLVE:
        if (unresolved_host(servers, host, sizeof host))
            cli_err("ZooKeeper host '%s' does not resolve (in '%s')", host, servers);
        else
            cli_err("a ZooKeeper host in '%s' does not resolve", servers);
        return EX_UNAVAILABLE;
    case ZKL_EINVAL:
        if (*why != '\0')
            return cli_usage_error("%s (in '%s')", why, servers);
        return cli_usage_error("bad server list '%s': expected host:port[,host:port...][/chroot]",
                               servers);
    case ZKL_ECONNLOSS:
        cli_err("no ZooKeeper server answered at %s", servers);
        return EX_UNAVAILABLE;
    case ZKL_ENOAUTH:
        cli_err("ZooKeeper refused the credentials%s",
                getenv("ZKL_AUTH") != NULL ? " in ZKL_AUTH" : "");
        return EX_NOPERM;
    default:
        cli_err("cannot connect to %s: %s", servers, *why != '\0' ? why : zkl_strerror(rc));
        return cli_exit_for(rc);
    }
}

int cli_one_path(const char *cmd, int argc, char **argv, int first, const char **path)
{
    if (first >= argc)
        return cli_usage_error("%s: no PATH", cmd);
    if (first + 1 < argc)
        return cli_usage_error("%s: one PATH only", cmd);
    const char *why = cli_path_problem(argv[first]);
    if (why != NULL) {
        char shown[1100];
        cli_printable(argv[first], shown, sizeof shown);
        return cli_usage_error("%s: bad PATH '%s': %s", cmd, shown, why);
    }
    *path = argv[first];
    return 0;
}

const char *cli_path_problem(const char *path)
{
    size_t len = strlen(path);
    if (len == 0)
        return "it is empty";
    if (path[0] != '/')
        return "it is not absolute (it must start with '/')";
    if (len == 1)
        return "it is the root, '/'";
    if (len > 1024)
        return "it is longer than 1024 bytes";
    if (path[len - 1] == '/')
        return "it ends in '/'";
    if (strstr(path, "//") != NULL)
        return "it has an empty segment ('//')";
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return "it holds a control character";
    if (strncmp(path, "/zookeeper", 10) == 0 && (path[10] == '/' || path[10] == '\0'))
        return "it is under /zookeeper, the server's own subtree";
    const char *seg = path;
    while ((seg = strchr(seg, '/')) != NULL) {
        seg++;
        size_t n = strcspn(seg, "/");
        if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return "it has a '.' or '..' segment";
    }
    return NULL;
}

int cli_report(const char *path, int err)
{
    const char *why;
    char shown[1100];
    cli_printable(path, shown, sizeof shown);
    if (err == ZKL_EINVAL && (why = cli_path_problem(path)) != NULL)
        return cli_usage_error("bad PATH '%s': %s", shown, why);
    /* The library's reason, when it has one (a character the server
     * refuses, a segment named like a contender's node, an ACL). */
    why = zkl_last_error_text();
    if (err == ZKL_EINVAL && strncmp(why, "path", 4) == 0)
        return cli_usage_error("bad PATH '%s': %s", shown, why);
    if (*why != '\0' && err != ZKL_ETIMEDOUT)
        cli_err("%s: %s: %s", shown, zkl_strerror(err), why);
    else
        cli_err("%s: %s", shown, zkl_strerror(err));
    return cli_exit_for(err);
}

void cli_printable(const char *in, char *out, size_t sz)
{
    size_t k = 0;
    for (; *in && k + 1 < sz; in++)
        out[k++] = (unsigned char)*in < 0x20 || *in == 0x7f ? '?' : *in;
    out[k] = '\0';
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t need;
    unsigned min;
    unsigned cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        need = 2, min = 0x80, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        need = 3, min = 0x800, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        need = 4, min = 0x10000, cp = s[0] & 0x07;
    else
        return 0;
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return need;
}

bool cli_json_str(FILE *f, const char *s, size_t n)
{
    bool replaced = false;
    const unsigned char *u = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char ch = u[i];
        size_t k;
        if (ch == '"' || ch == '\\') {
            fprintf(f, "\\%c", ch);
            i++;
        } else if (ch >= 0x20 && ch < 0x7f) {
            fputc(ch, f);
            i++;
        } else if (ch >= 0x80 && (k = utf8_len(u + i, n - i)) > 0) {
            fwrite(u + i, 1, k, f); /* valid UTF-8 passes through */
            i += k;
        } else if (ch < 0x80) {
            fprintf(f, "\\u%04x", ch); /* control characters, DEL */
            i++;
        } else {
            /* Not part of valid UTF-8: \u00XX would read as U+00XX, a
             * character the data does not hold. */
            fputs("\\ufffd", f);
            replaced = true;
            i++;
        }
    }
    fputc('"', f);
    return replaced;
}

bool cli_revocation_requested(const zkl_participant *x)
{
    return x->readable && x->owner_len == strlen(CLI_REVOKE_DATA) &&
           memcmp(x->owner, CLI_REVOKE_DATA, x->owner_len) == 0;
}

int cli_parse_target(int argc, char **argv, struct cli_target *t, bool wait, long wait_ms)
{
    enum { OPT_SESSION = 256 };
    static const struct option longopts[] = {
        {"servers", required_argument, NULL, 'S'},
        {"session-timeout", required_argument, NULL, OPT_SESSION},
        {"wait", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        CLI_SECURE_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    const char *servers = NULL;
    *t = (struct cli_target){.session_ms = CLI_DEFAULT_SESSION_MS, .wait_ms = wait_ms};
    double secs;
    int c;
    while ((c = getopt_long(argc, argv, wait ? "S:w:h" : "S:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'S':
            servers = optarg;
            break;
        case 'w':
            if (!wait)
                return cli_usage_error("%s: no -w (--wait)", argv[0]);
            if (cli_parse_seconds("-w", optarg, &secs) != 0)
                return EX_USAGE;
            t->wait_ms = (long)ceil(secs * 1000);
            break;
        case OPT_SESSION:
            if (cli_parse_long("--session-timeout", optarg, 1, 3600000, &t->session_ms) != 0)
                return EX_USAGE;
            break;
        case 'h':
            cli_help();
            return 0;
        default:
            if (cli_secure_option(c, optarg) > 0)
                break;
            fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
            return EX_USAGE;
        }
    }
    if (optind >= argc)
        return cli_usage_error("%s: no PATH", argv[0]);
    if (argc - optind > 2)
        return cli_usage_error("%s: PATH and at most one NODE", argv[0]);
    t->path = argv[optind];
    t->node = optind + 1 < argc ? argv[optind + 1] : NULL;
    const char *why = cli_path_problem(t->path);
    if (why != NULL)
        return cli_usage_error("%s: bad PATH '%s': %s", argv[0], t->path, why);
    t->servers = cli_servers(servers);
    return -1;
}

int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A standard descriptor zkl was started without is held by a /dev/null
 * opened the other way round: writes to stdout and stderr, and reads from
 * stdin, fail with EBADF as on the closed descriptor, and no descriptor
 * the ZooKeeper client opens (its socket, its pipes) can take the number
 * and receive what zkl prints. Close-on-exec: COMMAND gets them closed,
 * as zkl did. */
static void hold_closed_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int got = open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
        if (got >= 0 && got != fd) /* fd was not the lowest free one: never here */
            close(got);
    }
}

int cli_flush_stdout(void)
{
    static bool said; /* a command's flush and finish()'s: one message */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (!said)
            cli_err("write error: %s", strerror(errno ? errno : EIO));
        said = true;
        return EX_IOERR;
    }
    return 0;
}

/* What the command printed must have reached stdout, as coreutils
 * require: a write error turns an exit code of 0 into 74. */
static int finish(int rc)
{
    errno = 0;
    int out = cli_flush_stdout();
    return rc == 0 ? out : rc;
}

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    /* Only zkl's own options come before the command's name. */
    int c;
    while ((c = getopt_long(argc, argv, "+hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            cli_help();
            return 0;
        case 'V':
            version();
            return 0;
        default:
            fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
            return EX_USAGE;
        }
    }
    if (optind >= argc)
        return cli_usage_error("no command: 'lock', 'elect', 'leader', 'holders', 'break' or 'revoke'");
    const char *cmd = argv[optind];
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    optind = 0; /* full reset of getopt for the command's own options */
    if (strcmp(cmd, "lock") == 0)
        return cli_lock(sub_argc, sub_argv);
    if (strcmp(cmd, "holders") == 0)
        return cli_holders(sub_argc, sub_argv);
    if (strcmp(cmd, "elect") == 0)
        return cli_elect(sub_argc, sub_argv);
    if (strcmp(cmd, "leader") == 0)
        return cli_leader(sub_argc, sub_argv);
    if (strcmp(cmd, "break") == 0)
        return cli_break(sub_argc, sub_argv);
    if (strcmp(cmd, "revoke") == 0)
        return cli_revoke(sub_argc, sub_argv);
    if (strcmp(cmd, "help") == 0) {
        cli_help();
        return 0;
    }
    return cli_usage_error("unknown command '%s': 'lock', 'elect', 'leader', 'holders', 'break' or 'revoke'", cmd);
}

int cli_other_option(int c, int opt_session, long *session_ms)
{
    if (c == opt_session)
        return cli_parse_long("--session-timeout", optarg, 1, 3600000, session_ms) != 0 ? EX_USAGE
                                                                                       : -1;
    if (c == 'h') {
        cli_help();
        return 0;
    }
    if (cli_secure_option(c, optarg) > 0)
        return -1;
    fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
    return EX_USAGE;
}

int main(int argc, char **argv)
{
    hold_closed_std_fds();
    /* A reader that is gone (stdout or stderr into a pipe) makes a write
     * fail (EPIPE: "write error", 74), not kill zkl while it holds a lock
     * or runs COMMAND. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    if (sigaction(SIGPIPE, &ign, &old) == 0)
        cli_sigpipe_default = old.sa_handler != SIG_IGN;
    int rc = finish(run(argc, argv));
    cli_errout_flush(CLI_ERROUT_FLUSH_MS);
    return rc;
}
