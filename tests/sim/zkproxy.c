/* The proxy of zkproxy.h: one thread polls the listening socket, a wake-up
 * pipe and each connection's sockets, reading only from the directions that
 * forward, so held bytes stay in the kernel. */
#include "zkproxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXCONN 32

struct zkproxy {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t done; /* a reset was carried out */
    int listen_fd, wake[2];
    struct sockaddr_in upstream;
    char address[32];
    bool to_server, to_client, reset, stop;
    int client[MAXCONN], server[MAXCONN]; /* -1: free */
};

static void wake(struct zkproxy *p)
{
    char c = 1;
    ssize_t n = write(p->wake[1], &c, 1);
    (void)n;
}

static void close_pair(struct zkproxy *p, int i)
{
    close(p->client[i]);
    close(p->server[i]);
    p->client[i] = p->server[i] = -1;
}

/* Copies what is there from one socket to the other; false when either
 * side is done. */
static bool pump(int from, int to)
{
    char buf[65536];
    ssize_t n = recv(from, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        return false;
    for (ssize_t off = 0; n > 0 && off < n;) {
        ssize_t k = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        off += k;
    }
    return true;
}

static void accept_one(struct zkproxy *p)
{
    int c = accept(p->listen_fd, NULL, NULL);
    if (c < 0)
        return;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&p->upstream, sizeof p->upstream) != 0) {
        close(c);
        if (s >= 0)
            close(s);
        return;
    }
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (int i = 0; i < MAXCONN; i++) {
        if (p->client[i] < 0) {
            p->client[i] = c;
            p->server[i] = s;
            return;
        }
    }
    close(c);
    close(s);
}

static void *proxy_main(void *arg)
{
    struct zkproxy *p = arg;
    for (;;) {
        struct pollfd fds[2 + 2 * MAXCONN];
        int slot[2 + 2 * MAXCONN];
        int n = 0;
        pthread_mutex_lock(&p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        if (p->reset) {
            for (int i = 0; i < MAXCONN; i++)
                if (p->client[i] >= 0)
                    close_pair(p, i);
            p->reset = false;
            pthread_cond_broadcast(&p->done);
        }
        bool up = p->to_server, down = p->to_client;
        pthread_mutex_unlock(&p->mu);
        fds[n] = (struct pollfd){p->wake[0], POLLIN, 0};
        slot[n++] = -1;
        fds[n] = (struct pollfd){p->listen_fd, POLLIN, 0};
        slot[n++] = -2;
        for (int i = 0; i < MAXCONN; i++) {
            if (p->client[i] < 0)
                continue;
            if (up) {
                fds[n] = (struct pollfd){p->client[i], POLLIN, 0};
                slot[n++] = i;
            }
            if (down) {
                fds[n] = (struct pollfd){p->server[i], POLLIN, 0};
                slot[n++] = MAXCONN + i;
            }
        }
        if (poll(fds, (nfds_t)n, -1) < 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (fds[k].revents == 0)
                continue;
            if (slot[k] == -1) {
                char buf[64];
                ssize_t r = read(p->wake[0], buf, sizeof buf);
                (void)r;
            } else if (slot[k] == -2) {
                accept_one(p);
            } else {
                int i = slot[k] % MAXCONN;
                if (p->client[i] < 0)
                    continue;
                bool ok = slot[k] < MAXCONN ? pump(p->client[i], p->server[i])
                                            : pump(p->server[i], p->client[i]);
                if (!ok)
                    close_pair(p, i);
            }
        }
    }
    for (int i = 0; i < MAXCONN; i++)
        if (p->client[i] >= 0)
            close_pair(p, i);
    return NULL;
}

struct zkproxy *zkproxy_start(const char *upstream)
{
    struct zkproxy *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    char host[64];
    const char *colon = strrchr(upstream, ':');
    size_t hl = colon ? (size_t)(colon - upstream) : 0;
    if (colon == NULL || hl >= sizeof host) {
        free(p);
        return NULL;
    }
    memcpy(host, upstream, hl);
    host[hl] = '\0';
    p->upstream.sin_family = AF_INET;
    p->upstream.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &p->upstream.sin_addr) != 1) {
        free(p);
        return NULL;
    }
    for (int i = 0; i < MAXCONN; i++)
        p->client[i] = p->server[i] = -1;
    p->to_server = p->to_client = true;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->done, NULL);
    p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->listen_fd, 16) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0 || pipe(p->wake) != 0) {
        if (p->listen_fd >= 0)
            close(p->listen_fd);
        free(p);
        return NULL;
    }
    snprintf(p->address, sizeof p->address, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        close(p->listen_fd);
        close(p->wake[0]);
        close(p->wake[1]);
        free(p);
        return NULL;
    }
    return p;
}

const char *zkproxy_address(const struct zkproxy *p)
{
    return p->address;
}

void zkproxy_set(struct zkproxy *p, bool to_server, bool to_client)
{
    pthread_mutex_lock(&p->mu);
    p->to_server = to_server;
    p->to_client = to_client;
    pthread_mutex_unlock(&p->mu);
    wake(p);
}

void zkproxy_reset(struct zkproxy *p)
{
    pthread_mutex_lock(&p->mu);
    p->reset = true;
    pthread_mutex_unlock(&p->mu);
    wake(p);
    pthread_mutex_lock(&p->mu);
    while (p->reset)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void zkproxy_stop(struct zkproxy *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_mutex_unlock(&p->mu);
    wake(p);
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->done);
    free(p);
}
