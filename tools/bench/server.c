/* The servers' own counters, read with four-letter words around a timed
 * part: zk_packets_received ("mntr"), summed over the servers, and the
 * highest last zxid ("srvr").
 *
 * zk_requests_per_op: (after - before - servers) / ops, as the second
 * reading counts itself. zk_writes_per_op: the growth of the zxid over the
 * same part, per op: every write the ensemble applied, whoever sent it. */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench.h"

/* The host:port pairs of --servers, without a chroot. */
char **server_list(const char *servers, int *count)
{
    char *s = strdup(servers);
    if (s == NULL)
        die("out of memory", 0);
    char *slash = strchr(s, '/');
    if (slash)
        *slash = '\0';
    char **list = NULL;
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        list = realloc(list, (size_t)(n + 1) * sizeof *list);
        if (list == NULL || (list[n] = strdup(tok)) == NULL)
            die("out of memory", 0);
        n++;
    }
    free(s);
    *count = n;
    return list;
}

/* Send a four-letter word; the whole reply (malloc) or NULL. */
static char *four_letter_word(const char *host_port, const char *word)
{
    char host[256];
    const char *colon = strrchr(host_port, ':');
    const char *port = colon ? colon + 1 : "2181";
    size_t hl = colon ? (size_t)(colon - host_port) : strlen(host_port);
    if (hl >= sizeof host)
        return NULL;
    memcpy(host, host_port, hl);
    host[hl] = '\0';
    if (host[0] == '[' && hl > 1 && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return NULL;
    int fd = -1;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
            continue;
        struct timeval tv = {.tv_sec = 5};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (write(fd, word, strlen(word)) != (ssize_t)strlen(word)) {
        close(fd);
        return NULL;
    }
    for (;;) { /* the server closes after its reply */
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                close(fd);
                return NULL;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The value of "key<ws>value" in a 4lw reply, as an integer (base 0: the
 * zxid of srvr is hexadecimal). */
static bool reply_value(const char *reply, const char *key, int64_t *out)
{
    size_t kl = strlen(key);
    for (const char *line = reply; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (strncmp(line, key, kl) == 0) {
            const char *v = line + kl;
            while (*v == ' ' || *v == '\t' || *v == ':')
                v++;
            char *end;
            errno = 0;
            long long x = strtoll(v, &end, 0);
            if (errno != 0 || end == v)
                return false;
            *out = x;
            return true;
        }
    }
    return false;
}


/* Sum of zk_packets_received over the servers, and their highest zxid. */
static bool read_servers(struct meter *m, int64_t *packets, int64_t *zxid, bool packets_first)
{
    int64_t sum = 0, top = 0;
    for (int pass = 0; pass < 2; pass++) {
        bool want_packets = (pass == 0) == packets_first;
        for (int i = 0; i < m->nservers; i++) {
            char *r = four_letter_word(m->servers[i], want_packets ? "mntr" : "srvr");
            int64_t v = 0;
            bool got = r && reply_value(r, want_packets ? "zk_packets_received" : "Zxid", &v);
            free(r);
            if (!got) {
                fprintf(stderr, "%s: no %s from %s (is it whitelisted?)\n", zkl_bench_prog,
                        want_packets ? "mntr" : "srvr", m->servers[i]);
                return false;
            }
            if (want_packets)
                sum += v;
            else if (v > top)
                top = v;
        }
    }
    *packets = sum;
    *zxid = top;
    return true;
}

/* srvr outside, mntr inside the bracket: only the second mntr counts. */
void meter_begin(struct meter *m)
{
    m->ok = read_servers(m, &m->packets0, &m->zxid0, false);
}

void meter_end(struct meter *m)
{
    if (m->ok)
        m->ok = read_servers(m, &m->packets1, &m->zxid1, true);
}
