/* A lock server on one thread: a libuv TCP server whose clients send
 *   LOCK <path>\n     answered "OK <path> <token>\n" once held, or "ERR <path> <code>\n"
 *   UNLOCK <path>\n   answered "OK <path>\n" or "ERR <path> <code>\n"
 * Every lock is a zkl asynchronous acquire on one zkl client; results come
 * through the client's event descriptor, polled by the loop, and
 * zkl_client_dispatch runs their callbacks on this same thread. A client
 * that disconnects gives up what it waited for and releases what it held.
 *
 * usage: uv-lock-server HOSTS PORT   (PORT 0: any; "PORT <n>" is printed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <zkl.h>

struct conn;

/* One LOCK of one connection, pending or held. */
struct lockreq {
    struct conn *conn;
    char *path;
    zkl_request *req;
    int held;
    struct lockreq *next;
};

struct conn {
    uv_tcp_t tcp;
    char buf[4096];
    size_t len;
    struct lockreq *locks;
};

static zkl_client *client;
static uv_loop_t *loop;

static void on_written(uv_write_t *w, int status)
{
    (void)status;
    free(w->data);
    free(w);
}

/* Send "WORD PATH[ EXTRA]\n". */
static void reply(struct conn *c, const char *word, const char *path, const char *extra)
{
    char *line = malloc(strlen(word) + strlen(path) + (extra ? strlen(extra) : 0) + 4);
    uv_write_t *w = malloc(sizeof *w);
    if (line == NULL || w == NULL) {
        free(line);
        free(w);
        return;
    }
    int n = sprintf(line, "%s %s%s%s\n", word, path, extra ? " " : "", extra ? extra : "");
    uv_buf_t b = uv_buf_init(line, (unsigned)n);
    w->data = line;
    if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0)
        on_written(w, 0);
}

static void unlink_lock(struct conn *c, struct lockreq *l)
{
    for (struct lockreq **p = &c->locks; *p; p = &(*p)->next)
        if (*p == l) {
            *p = l->next;
            break;
        }
}

static void drop_lock(struct lockreq *l)
{
    zkl_request_free(l->req); /* cancels a pending one, releases a held one */
    free(l->path);
    free(l);
}

/* A LOCK's result, on the loop thread (zkl_client_dispatch). */
static void on_result(zkl_request *r, int result, void *arg)
{
    struct lockreq *l = arg;
    if (result == 0) {
        int64_t token = 0;
        char tok[32];
        l->held = 1;
        (void)zkl_request_token(r, &token);
        snprintf(tok, sizeof tok, "%lld", (long long)token);
        reply(l->conn, "OK", l->path, tok);
        return;
    }
    reply(l->conn, "ERR", l->path, zkl_err_name(result));
    unlink_lock(l->conn, l);
    drop_lock(l);
}

static void do_lock(struct conn *c, const char *path)
{
    zkl_mutex *m;
    int rc = zkl_mutex_new(client, path, &m);
    if (rc != 0) {
        reply(c, "ERR", path, zkl_err_name(rc));
        return;
    }
    struct lockreq *l = calloc(1, sizeof *l);
    if (l == NULL || (l->path = strdup(path)) == NULL) {
        free(l);
        zkl_mutex_free(m);
        reply(c, "ERR", path, "ENOMEM");
        return;
    }
    l->conn = c;
    rc = zkl_mutex_acquire_async(m, 60000, on_result, l, &l->req);
    zkl_mutex_free(m); /* the request does not need it */
    if (rc != 0) {
        reply(c, "ERR", path, zkl_err_name(rc));
        free(l->path);
        free(l);
        return;
    }
    l->next = c->locks;
    c->locks = l;
}

static void do_unlock(struct conn *c, const char *path)
{
    for (struct lockreq *l = c->locks; l; l = l->next) {
        if (l->held && strcmp(l->path, path) == 0) {
            int rc = zkl_request_release(l->req);
            if (rc == 0)
                reply(c, "OK", path, NULL);
            else
                reply(c, "ERR", path, zkl_err_name(rc));
            unlink_lock(c, l);
            drop_lock(l);
            return;
        }
    }
    reply(c, "ERR", path, "ENOTHELD");
}

static void on_line(struct conn *c, char *line)
{
    if (strncmp(line, "LOCK ", 5) == 0)
        do_lock(c, line + 5);
    else if (strncmp(line, "UNLOCK ", 7) == 0)
        do_unlock(c, line + 7);
    else
        reply(c, "ERR", "-", "EINVAL");
}

static void on_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    while (c->locks) {
        struct lockreq *l = c->locks;
        c->locks = l->next;
        drop_lock(l);
    }
    free(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)hint;
    struct conn *c = h->data;
    *b = uv_buf_init(c->buf + c->len, (unsigned)(sizeof c->buf - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    struct conn *c = s->data;
    if (n < 0) {
        uv_close((uv_handle_t *)s, on_closed);
        return;
    }
    c->len += (size_t)n;
    char *start = c->buf, *nl;
    while ((nl = memchr(start, '\n', c->len - (size_t)(start - c->buf))) != NULL) {
        *nl = '\0';
        if (nl > start && nl[-1] == '\r')
            nl[-1] = '\0';
        on_line(c, start);
        start = nl + 1;
    }
    c->len -= (size_t)(start - c->buf);
    memmove(c->buf, start, c->len);
    if (c->len == sizeof c->buf) /* a line too long: drop the client */
        uv_close((uv_handle_t *)s, on_closed);
}

static void on_connection(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    struct conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    uv_tcp_init(loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* The client's descriptor is readable: results are waiting. */
static void on_zkl(uv_poll_t *p, int status, int events)
{
    (void)p, (void)status, (void)events;
    zkl_client_dispatch(client);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s HOSTS PORT\n", argv[0]);
        return 2;
    }
    int rc = zkl_client_open(argv[1], 10000, &client);
    if (rc != 0) {
        fprintf(stderr, "zkl_client_open: %s\n", zkl_strerror(rc));
        return 1;
    }
    int fd;
    if ((rc = zkl_client_event_fd(client, &fd)) != 0) {
        fprintf(stderr, "zkl_client_event_fd: %s\n", zkl_strerror(rc));
        return 1;
    }
    loop = uv_default_loop();
    uv_poll_t poll;
    uv_poll_init(loop, &poll, fd);
    uv_poll_start(&poll, UV_READABLE, on_zkl);

    uv_tcp_t server;
    struct sockaddr_in addr;
    uv_tcp_init(loop, &server);
    uv_ip4_addr("127.0.0.1", atoi(argv[2]), &addr);
    if (uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0) != 0 ||
        uv_listen((uv_stream_t *)&server, 128, on_connection) != 0) {
        fprintf(stderr, "cannot listen on port %s\n", argv[2]);
        return 1;
    }
    struct sockaddr_storage got;
    int len = sizeof got;
    uv_tcp_getsockname(&server, (struct sockaddr *)&got, &len);
    printf("PORT %d\n", ntohs(((struct sockaddr_in *)&got)->sin_port));
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    zkl_client_close(client);
    return 0;
}
