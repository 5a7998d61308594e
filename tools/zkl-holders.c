/* zkl holders: the participants of a lock, as zkl_participants_list reads
 * them (who holds is the library's call, by the recipes' own policies):
 * a table, or JSON. Public API only. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The owner's identity: zkl writes "host pid"; Curator an address. */
static void owner_parts(const zkl_participant *x, char *host, size_t hostsz, long *pid)
{
    size_t n = x->owner_len < hostsz - 1 ? x->owner_len : hostsz - 1;
    memcpy(host, x->owner, n);
    host[n] = '\0';
    *pid = -1;
    char *sp = strrchr(host, ' ');
    if (sp != NULL && sp[1] != '\0' && strspn(sp + 1, "0123456789") == strlen(sp + 1) &&
        strlen(sp + 1) < 10) {
        *pid = strtol(sp + 1, NULL, 10);
        *sp = '\0';
    }
}

static void print_age(char *buf, size_t sz, int64_t ms)
{
    int64_t s = ms / 1000;
    if (s < 60)
        snprintf(buf, sz, "%.1fs", (double)ms / 1000);
    else if (s < 3600)
        snprintf(buf, sz, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400)
        snprintf(buf, sz, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
    else
        snprintf(buf, sz, "%lldd%02lldh", (long long)(s / 86400), (long long)(s / 3600 % 24));
}

static void print_table(const char *path, const zkl_participant *cs, size_t n, int max_leases)
{
    if (max_leases > 0) {
        int held = 0;
        for (size_t i = 0; i < n; i++)
            held += cs[i].holds ? cs[i].leases : 0;
        printf("%s: semaphore, %d of %d leases held\n", path, held, max_leases);
    }
    if (n == 0) {
        printf("%s: no contenders\n", path);
        return;
    }
    int64_t now = wall_ms();
    int kw = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(cs[i].kind) > kw)
            kw = (int)strlen(cs[i].kind);
    printf("%-3s %-5s %-*s %-10s %-20s %-8s %s\n", "#", "STATE", kw, "KIND", "SEQ", "TOKEN",
           "AGE", "OWNER");
    for (size_t i = 0; i < n; i++) {
        const zkl_participant *x = &cs[i];
        char owner[300], age[32];
        if (!x->readable) {
            snprintf(owner, sizeof owner, "(unreadable: the node's ACL refuses its data)");
        } else if (cli_revocation_requested(x)) {
            snprintf(owner, sizeof owner, "(asked to let go: __REVOKE__ replaced its owner)");
        } else {
            long pid;
            char host[256];
            owner_parts(x, host, sizeof host, &pid);
            cli_printable(host, owner, sizeof owner);
            if (pid >= 0)
                snprintf(owner + strlen(owner), sizeof owner - strlen(owner), " pid %ld", pid);
        }
        print_age(age, sizeof age, now > x->ctime_ms ? now - x->ctime_ms : 0);
        printf("%-3zu %-5s %-*s %010lld %-20lld %-8s %s\n", i + 1, x->holds ? "holds" : "waits",
               kw, x->kind, (long long)x->seq, (long long)x->token, age, owner);
    }
}

static void print_json(const char *path, const zkl_participant *cs, size_t n, int max_leases)
{
    int64_t now = wall_ms();
    printf("{\"path\": ");
    cli_json_str(stdout, path, strlen(path));
    if (max_leases > 0)
        printf(", \"max_leases\": %d", max_leases);
    printf(", \"contenders\": [");
    for (size_t i = 0; i < n; i++) {
        const zkl_participant *x = &cs[i];
        printf("%s\n  {\"position\": %zu, \"holds\": %s, \"kind\": ", i ? "," : "", i + 1,
               x->holds ? "true" : "false");
        cli_json_str(stdout, x->kind, strlen(x->kind));
        if (x->leases > 0)
            printf(", \"leases\": %d", x->leases);
        printf(", \"seq\": %lld, \"node\": ", (long long)x->seq);
        cli_json_str(stdout, x->node, strlen(x->node));
        printf(", \"token\": %lld, \"session\": \"0x%llx\", \"ctime_ms\": %lld, \"age_ms\": %lld",
               (long long)x->token, (unsigned long long)x->session, (long long)x->ctime_ms,
               (long long)(now > x->ctime_ms ? now - x->ctime_ms : 0));
        printf(", \"readable\": %s", x->readable ? "true" : "false");
        if (!x->readable) {
            printf(", \"owner\": null, \"host\": null, \"pid\": null}");
            continue;
        }
        char host[256];
        long pid;
        owner_parts(x, host, sizeof host, &pid);
        printf(", \"owner\": ");
        if (cli_json_str(stdout, x->owner, x->owner_len)) {
            /* Bytes that are not UTF-8 were replaced: here is each one. */
            printf(", \"owner_hex\": \"");
            for (size_t k = 0; k < x->owner_len; k++)
                printf("%02x", (unsigned char)x->owner[k]);
            printf("\"");
        }
        if (cli_revocation_requested(x))
            printf(", \"revocation_requested\": true");
        printf(", \"host\": ");
        cli_json_str(stdout, host, strlen(host));
        if (pid >= 0)
            printf(", \"pid\": %ld}", pid);
        else
            printf(", \"pid\": null}");
    }
    printf("%s]}\n", n ? "\n" : "");
}

int cli_holders(int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_SESSION };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"servers", required_argument, NULL, 'S'},
        {"session-timeout", required_argument, NULL, OPT_SESSION},
        {"help", no_argument, NULL, 'h'},
        CLI_SECURE_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    const char *servers = NULL;
    bool json = false;
    long session_ms = CLI_DEFAULT_SESSION_MS;
    int c;
    while ((c = getopt_long(argc, argv, "S:h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_JSON:
            json = true;
            break;
        case 'S':
            servers = optarg;
            break;
        case OPT_SESSION:
            if (cli_parse_long("--session-timeout", optarg, 1, 3600000, &session_ms) != 0)
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
    const char *path;
    int rc = cli_one_path("holders", argc, argv, optind, &path);
    if (rc != 0)
        return rc;

    zkl_client *cl;
    rc = cli_connect(cli_servers(servers), (int)session_ms, &cl);
    if (rc != 0)
        return rc;
    zkl_participant *cs;
    size_t n;
    int max_leases = 0;
    int err = zkl_participants_list(cl, path, &cs, &n);
    if (err == 0 && (err = zkl_participants_limit(cl, path, &max_leases)) != 0)
        zkl_participants_free(cs, n);
    zkl_client_close(cl);
    if (err != 0)
        return cli_report(path, err);
    if (json)
        print_json(path, cs, n, max_leases);
    else
        print_table(path, cs, n, max_leases);
    zkl_participants_free(cs, n);
    return cli_flush_stdout();
}
