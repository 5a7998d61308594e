/* zkl holders: the contenders of a lock, read from the server, in the order
 * the recipes serve them, with who holds. Reads raw ZooKeeper data through
 * the bridge header; public API only. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "zkl/zookeeper.h"

/* The protection prefix "_c_<36-char uuid>-" every zkl and Curator node
 * starts with (PROTOCOL §2). */
#define PROTECT_LEN 40
#define SEQ_LEN 10

/* The counting semaphore's kinds: a lease ("zkl-lease-", or
 * "zkl-lease-x<n>-" for n at once) holds while it exists; a waiter
 * ("zkl-wait-") waits for room. */
#define LEASE_KIND "zkl-lease-"
#define WAIT_KIND "zkl-wait-"
#define LIMIT_KEY "max_leases="

struct contender {
    char *name;
    char kind[32];
    char seq[SEQ_LEN + 1];
    size_t order; /* position by sequence */
    bool holds;
    int leases; /* a semaphore lease's count, else 0 */
    struct Stat st;
    char data[256];
    int len;
};

static bool is_reader(const struct contender *x)
{
    return strcmp(x->kind, "__READ__") == 0;
}

/* A contender has the 10-digit sequence as the last 10 characters; its
 * kind is what stands between the protection prefix (if any) and them. */
static bool parse_name(const char *name, struct contender *x)
{
    size_t n = strlen(name);
    if (n < SEQ_LEN || strspn(name + n - SEQ_LEN, "0123456789") != SEQ_LEN)
        return false;
    size_t from = 0;
    if (n >= PROTECT_LEN + SEQ_LEN && strncmp(name, "_c_", 3) == 0 && name[PROTECT_LEN - 1] == '-')
        from = PROTECT_LEN;
    size_t k = n - SEQ_LEN - from;
    if (k >= sizeof x->kind)
        k = sizeof x->kind - 1;
    memcpy(x->kind, name + from, k);
    x->kind[k] = '\0';
    memcpy(x->seq, name + n - SEQ_LEN, SEQ_LEN + 1);
    return true;
}

/* By sequence, as the recipes order them; a downgrade's read node carries
 * its writer's sequence and goes right after it. */
static int by_seq(const void *pa, const void *pb)
{
    const struct contender *a = pa, *b = pb;
    int d = strcmp(a->seq, b->seq);
    if (d == 0)
        d = (int)is_reader(a) - (int)is_reader(b);
    return d != 0 ? d : strcmp(a->name, b->name);
}

static int lease_count(const char *kind)
{
    size_t lk = strlen(LEASE_KIND);
    if (strncmp(kind, LEASE_KIND, lk) != 0)
        return 0;
    if (kind[lk] == '\0')
        return 1;
    char *end;
    long n = kind[lk] == 'x' ? strtol(kind + lk + 1, &end, 10) : 0;
    return n >= 1 && n <= 1000000000 && end[0] == '-' && end[1] == '\0' ? (int)n : 0;
}

/* Holders first, then by sequence. */
static int by_state(const void *pa, const void *pb)
{
    const struct contender *a = pa, *b = pb;
    if (a->holds != b->holds)
        return a->holds ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Who holds, by PROTOCOL §4: a reader holds when no node of another kind
 * is ahead of it (a writer it downgraded from has its own sequence); a
 * semaphore's lease holds, its waiters wait; any other node holds when it
 * is first. */
static void mark_holders(struct contender *cs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cs[i].order = i;
        cs[i].leases = lease_count(cs[i].kind);
        if (cs[i].leases > 0 || strcmp(cs[i].kind, WAIT_KIND) == 0) {
            cs[i].holds = cs[i].leases > 0;
            continue;
        }
        if (!is_reader(&cs[i])) {
            cs[i].holds = i == 0;
            continue;
        }
        cs[i].holds = true;
        for (size_t j = 0; j < i; j++)
            if (!is_reader(&cs[j]) && strcmp(cs[j].seq, cs[i].seq) != 0)
                cs[i].holds = false;
    }
}

static int zk_exit(int zrc)
{
    switch (zrc) {
    case ZNOAUTH:
    case ZAUTHFAILED:
        return EX_NOPERM;
    case ZBADARGUMENTS:
        return EX_USAGE;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
        return EX_UNAVAILABLE;
    default:
        return EX_SOFTWARE;
    }
}

/* The contenders of `path`, in order, in a new array. Returns 0 or an exit
 * code after saying why. */
static int read_contenders(zhandle_t *zh, const char *path, struct contender **out, size_t *count,
                           long *max_leases)
{
    struct String_vector kids = {0, NULL};
    *out = NULL;
    *count = 0;
    /* A semaphore records its limit as its node's data. */
    char data[64];
    int len = (int)sizeof data - 1;
    *max_leases = -1;
    int zrc = zoo_get(zh, path, 0, data, &len, NULL);
    if (zrc == ZOK && len > (int)strlen(LIMIT_KEY)) {
        data[len] = '\0';
        if (strncmp(data, LIMIT_KEY, strlen(LIMIT_KEY)) == 0)
            *max_leases = strtol(data + strlen(LIMIT_KEY), NULL, 10);
    }
    if (zrc == ZOK || zrc == ZNONODE)
        zrc = zoo_get_children(zh, path, 0, &kids);
    if (zrc == ZNONODE)
        return 0; /* an emptied container parent: nobody contends */
    if (zrc != ZOK) {
        cli_err("%s: %s", path, zerror(zrc));
        return zk_exit(zrc);
    }
    struct contender *cs = calloc(kids.count > 0 ? (size_t)kids.count : 1, sizeof *cs);
    if (cs == NULL) {
        deallocate_String_vector(&kids);
        cli_err("out of memory");
        return EX_OSERR;
    }
    size_t n = 0;
    int rc = 0;
    for (int i = 0; i < kids.count && rc == 0; i++) {
        struct contender *x = &cs[n];
        if (!parse_name(kids.data[i], x))
            continue; /* not a contender: no sequence */
        char *full;
        if (asprintf(&full, "%s/%s", strcmp(path, "/") == 0 ? "" : path, kids.data[i]) < 0) {
            cli_err("out of memory");
            rc = EX_OSERR;
            break;
        }
        x->len = (int)sizeof x->data;
        zrc = zoo_get(zh, full, 0, x->data, &x->len, &x->st);
        free(full);
        if (zrc == ZNONODE)
            continue; /* released since the listing */
        if (zrc != ZOK) {
            cli_err("%s/%s: %s", path, kids.data[i], zerror(zrc));
            rc = zk_exit(zrc);
            break;
        }
        if (x->len < 0)
            x->len = 0;
        if ((x->name = strdup(kids.data[i])) == NULL) {
            cli_err("out of memory");
            rc = EX_OSERR;
            break;
        }
        n++;
    }
    deallocate_String_vector(&kids);
    if (rc != 0) {
        for (size_t i = 0; i < n; i++)
            free(cs[i].name);
        free(cs);
        return rc;
    }
    qsort(cs, n, sizeof *cs, by_seq);
    mark_holders(cs, n);
    /* A semaphore's leases are not all ahead of its waiters by sequence. */
    qsort(cs, n, sizeof *cs, by_state);
    *out = cs;
    *count = n;
    return 0;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The owner's identity: zkl writes "host pid"; Curator an address. */
static void owner_parts(const struct contender *x, char *host, size_t hostsz, long *pid)
{
    int n = x->len < (int)hostsz - 1 ? x->len : (int)hostsz - 1;
    memcpy(host, x->data, (size_t)n);
    host[n] = '\0';
    *pid = -1;
    char *sp = strrchr(host, ' ');
    if (sp != NULL && sp[1] != '\0' && strspn(sp + 1, "0123456789") == strlen(sp + 1)) {
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

static void print_table(const char *path, const struct contender *cs, size_t n, long max_leases)
{
    if (max_leases > 0) {
        int held = 0;
        for (size_t i = 0; i < n; i++)
            held += cs[i].leases;
        printf("%s: semaphore, %d of %ld leases held\n", path, held, max_leases);
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
        const struct contender *x = &cs[i];
        char owner[sizeof x->data + 1], age[32];
        long pid;
        owner_parts(x, owner, sizeof owner, &pid);
        for (char *p = owner; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
        if (pid >= 0)
            snprintf(owner + strlen(owner), sizeof owner - strlen(owner), " pid %ld", pid);
        print_age(age, sizeof age, now > x->st.ctime ? now - x->st.ctime : 0);
        printf("%-3zu %-5s %-*s %-10s %-20lld %-8s %s\n", i + 1, x->holds ? "holds" : "waits",
               kw, x->kind, x->seq, (long long)x->st.czxid, age, owner);
    }
}

/* A JSON string: bytes outside printable ASCII become \u00XX, so the output
 * is valid whatever the node's data. */
static void json_str(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void print_json(const char *path, const struct contender *cs, size_t n, long max_leases)
{
    int64_t now = wall_ms();
    printf("{\"path\": ");
    json_str(path, strlen(path));
    if (max_leases > 0)
        printf(", \"max_leases\": %ld", max_leases);
    printf(", \"contenders\": [");
    for (size_t i = 0; i < n; i++) {
        const struct contender *x = &cs[i];
        char host[sizeof x->data + 1];
        long pid;
        owner_parts(x, host, sizeof host, &pid);
        printf("%s\n  {\"position\": %zu, \"holds\": %s, \"kind\": ", i ? "," : "", i + 1,
               x->holds ? "true" : "false");
        json_str(x->kind, strlen(x->kind));
        if (x->leases > 0)
            printf(", \"leases\": %d", x->leases);
        printf(", \"seq\": %ld, \"node\": ", strtol(x->seq, NULL, 10));
        json_str(x->name, strlen(x->name));
        printf(", \"token\": %lld, \"session\": \"0x%llx\", \"ctime_ms\": %lld, \"age_ms\": %lld",
               (long long)x->st.czxid, (unsigned long long)x->st.ephemeralOwner,
               (long long)x->st.ctime, (long long)(now > x->st.ctime ? now - x->st.ctime : 0));
        printf(", \"owner\": ");
        json_str(x->data, (size_t)x->len);
        printf(", \"host\": ");
        json_str(host, strlen(host));
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
            fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
            return EX_USAGE;
        }
    }
    if (optind + 1 != argc)
        return cli_usage_error(optind >= argc ? "holders: no PATH" : "holders: one PATH only");
    const char *path = argv[optind];
    if (path[0] != '/')
        return cli_usage_error("holders: PATH must be absolute: '%s'", path);

    zkl_client *cl;
    int rc = cli_connect(cli_servers(servers), (int)session_ms, &cl);
    if (rc != 0)
        return rc;
    struct contender *cs;
    size_t n;
    long max_leases;
    rc = read_contenders(zkl_client_handle(cl), path, &cs, &n, &max_leases);
    zkl_client_close(cl);
    if (rc != 0)
        return rc;
    if (json)
        print_json(path, cs, n, max_leases);
    else
        print_table(path, cs, n, max_leases);
    for (size_t i = 0; i < n; i++)
        free(cs[i].name);
    free(cs);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_err("write error");
        return EX_IOERR;
    }
    return 0;
}
