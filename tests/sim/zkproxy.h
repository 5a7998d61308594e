/* A TCP proxy on loopback between one ZooKeeper client and its server, with
 * a thread of its own, so that a test can do to a real client's connection
 * what the model does to a simulated one: hold either direction (bytes wait
 * in the kernel, unread), and reset every connection (what was held is
 * lost). A connection made while a direction is held is accepted and
 * connected upstream, and hangs like a silent link. */
#ifndef ZKPROXY_H
#define ZKPROXY_H

#include <stdbool.h>

struct zkproxy;

/* Listens on 127.0.0.1 (a free port) and forwards to upstream
 * ("host:port"). NULL on failure. */
struct zkproxy *zkproxy_start(const char *upstream);
/* "127.0.0.1:PORT", for zookeeper_init. */
const char *zkproxy_address(const struct zkproxy *p);
/* Forward the client's bytes to the server, and the server's to the client. */
void zkproxy_set(struct zkproxy *p, bool to_server, bool to_client);
/* Close every connection now; new ones are taken as before. */
void zkproxy_reset(struct zkproxy *p);
/* Stop the thread, close everything, free p (NULL does nothing). */
void zkproxy_stop(struct zkproxy *p);

#endif
