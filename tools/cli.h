/* What the parts of the zkl command share: exit codes, messages, option
 * values, and how a command connects. Public API only. */
#ifndef ZKL_CLI_H
#define ZKL_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sysexits.h>

#include "zkl.h"

/* The servers when neither -S nor ZKL_SERVERS names any. */
#define CLI_DEFAULT_SERVERS "127.0.0.1:2181"
#define CLI_DEFAULT_SESSION_MS 10000

/* Exit codes of zkl's own, besides COMMAND's status and sysexits.h. */
enum {
    CLI_EXIT_CONFLICT = 1,  /* lock not acquired (-n, -w); -E changes it */
    CLI_EXIT_LOST = 75,     /* lock lost while COMMAND ran (EX_TEMPFAIL) */
    CLI_EXIT_NOEXEC = 126,  /* COMMAND found but could not be run */
    CLI_EXIT_NOTFOUND = 127 /* COMMAND not found */
};

/* "zkl", for messages. */
extern const char *cli_prog;

/* Flush stdout: 0, or EX_IOERR after "zkl: write error: REASON". */
int cli_flush_stdout(void);

/* "zkl: <message>\n" on stderr; after cli_errout_start, without waiting
 * for stderr (tools/errout.c). */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on messages go to stderr from a thread of their own: call after
 * loop_open (the thread gets its signal mask). */
void cli_errout_start(void);
/* Write msg[n] to stderr, or have it written. */
void cli_errout_write(const char *msg, size_t n);
/* Wait up to `ms` for the messages to be written (before exiting). */
void cli_errout_flush(long ms);
/* How long zkl waits at its exit for its last messages to reach stderr. */
#define CLI_ERROUT_FLUSH_MS 1000
/* Whether SIGPIPE had its default action when zkl started (zkl ignores it,
 * so that a reader that is gone makes a write fail, not kill zkl; COMMAND
 * gets it as zkl found it). */
extern bool cli_sigpipe_default;
/* A usage error: the message, a pointer to --help, and EX_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Option values. Each returns 0, or -1 after printing why `s` is bad. */
int cli_parse_seconds(const char *opt, const char *s, double *out);
int cli_parse_long(const char *opt, const char *s, long min, long max, long *out);

/* The connect string: `opt` if given, else $ZKL_SERVERS, else the default. */
const char *cli_servers(const char *opt);

/* Open a session to `servers`, with digest credentials from $ZKL_AUTH
 * ("user:password") when set, and the security options (cli_secure,
 * tools/secure.c). The client never re-opens a session by
 * itself: the commands decide what an expiry means. Returns 0, or an exit
 * code after printing why (EX_UNAVAILABLE, EX_NOPERM, EX_USAGE, ...). */
int cli_connect(const char *servers, int session_ms, zkl_client **out);
/* The library's wait for the first session in cli_connect (ms; 0: the
 * session timeout): a caller that bounds connecting itself sets it, so
 * that the library's reasons (a TLS refusal) come within that bound. */
extern long cli_connect_ms;

/* The security options of every command that connects (tools/secure.c):
 * TLS, SASL and ACL entries; their long options go into each command's
 * table (CLI_SECURE_LONGOPTS), and the environment (ZKL_TLS_CA, ...,
 * ZKL_ACL) fills in what the command line leaves out. */
enum {
    CLI_OPT_TLS_CA = 512,
    CLI_OPT_TLS_CERT,
    CLI_OPT_TLS_KEY,
    CLI_OPT_TLS_KEY_PW,
    CLI_OPT_SASL_MECH,
    CLI_OPT_SASL_USER,
    CLI_OPT_SASL_PW,
    CLI_OPT_ACL
};
#define CLI_SECURE_LONGOPTS                                                   \
    {"tls-ca", required_argument, NULL, CLI_OPT_TLS_CA},                      \
        {"tls-cert", required_argument, NULL, CLI_OPT_TLS_CERT},              \
        {"tls-key", required_argument, NULL, CLI_OPT_TLS_KEY},                \
        {"tls-key-password-file", required_argument, NULL, CLI_OPT_TLS_KEY_PW}, \
        {"sasl-mech", required_argument, NULL, CLI_OPT_SASL_MECH},            \
        {"sasl-user", required_argument, NULL, CLI_OPT_SASL_USER},            \
        {"sasl-password-file", required_argument, NULL, CLI_OPT_SASL_PW},     \
        {"acl", required_argument, NULL, CLI_OPT_ACL}
struct cli_secure {
    const char *tls_ca, *tls_cert, *tls_key, *tls_key_password_file;
    const char *sasl_mech, *sasl_user, *sasl_password_file;
    const char *acl[32];
    int nacl;
};
extern struct cli_secure cli_secure;
/* Take option `opt` (getopt_long's value) with `arg`: 1 if it is one of
 * them, 0 if not, -1 after saying why it is bad. */
int cli_secure_option(int opt, const char *arg);
/* Put the options (and the environment's) into `o`: 0, or an exit code
 * after saying why not. */
int cli_secure_apply(zkl_client_opts *o);

/* The exit code for a zkl error of zkl's own making or the server's. */
int cli_exit_for(int err);

/* Why `path` is no lock path zkl accepts, or NULL. */
const char *cli_path_problem(const char *path);
/* The one PATH operand of `cmd` (argv[first], the last): 0 and *path, or
 * EX_USAGE after saying what is wrong (none, more than one, a bad path,
 * shown with its control characters as '?'). */
int cli_one_path(const char *cmd, int argc, char **argv, int first, const char **path);
/* Say what `err` from a call on lock path `path` means (for ZKL_EINVAL:
 * what is wrong with the path) and return its exit code. */
int cli_report(const char *path, int err);
/* `in` with control characters as '?', into out[sz]. */
void cli_printable(const char *in, char *out, size_t sz);
/* s[0..n-1] as a JSON string: valid UTF-8 passes through; control
 * characters and DEL become \u00XX; each byte that is not part of valid
 * UTF-8 becomes \ufffd, the replacement character, never a character of
 * its own. Returns true if any byte was replaced (the caller then gives
 * the bytes another way). */
bool cli_json_str(FILE *f, const char *s, size_t n);

/* The data a revocation request (zkl revoke, Curator's Revoker) writes
 * into a holder's node, in place of its owner, and whether x holds it. */
#define CLI_REVOKE_DATA "__REVOKE__"
bool cli_revocation_requested(const zkl_participant *x);

/* The arguments of break and revoke: [-S HOSTS] [--session-timeout MS]
 * [-w SECONDS (revoke only: wait)] PATH [NODE]. cli_parse_target returns -1
 * when parsed, else an exit code after saying why (0 after --help). */
struct cli_target {
    const char *servers;
    long session_ms;
    const char *path;
    const char *node; /* NULL if not given */
    long wait_ms;     /* -w, if `wait` was asked for */
};
int cli_parse_target(int argc, char **argv, struct cli_target *t, bool wait, long wait_ms);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t cli_now_ms(void);

/* Note the descriptors zkl inherited; later, mark every other one
 * close-on-exec, so that only the inherited ones reach COMMAND. */
void cli_fds_note_inherited(void);
void cli_fds_close_on_exec_new(void);

/* The commands; argv[0] is the command's name. */
int cli_lock(int argc, char **argv);
int cli_elect(int argc, char **argv);
/* The options every command shares, for a getopt_long loop's default
 * case: --session-timeout (its value `opt_session`) into *session_ms, -h,
 * the security options. -1 when handled (go on), else the exit code to
 * return (0 after -h; EX_USAGE after saying why). */
int cli_other_option(int c, int opt_session, long *session_ms);
int cli_leader(int argc, char **argv);
int cli_holders(int argc, char **argv);
int cli_break(int argc, char **argv);
int cli_revoke(int argc, char **argv);

/* The whole help text, as `zkl --help` prints it. */
void cli_help(void);

#endif
