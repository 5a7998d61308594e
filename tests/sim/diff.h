/* The differential test's two backends — the real ZooKeeper through
 * libzookeeper_mt (diff_real.c) and the model (diff_model.c) — behind one
 * interface, and the log both write: one line per callback the program
 * would get, per session, in the order it gets them.
 *
 * Lines:
 *   A t=TAG REQ RC [v=VALUE] [{STAT}] [d=DATA] [n=[NAMES]] [r=[RESULTS]]
 *   W TYPE PATH w=WATCHER        a watch event, once per watcher called
 *   S STATE w=WATCHER            a session event, once per watcher called
 *   I t=TAG RC                   a request refused at once
 *   M TEXT                       a mark of the scenario's ({ and } bound a
 *                                run whose order the server does not fix)
 * Children are listed sorted, zxids as @N (ranked when compared), an
 * ephemeral owner as none, s<i> (the scenario's session i) or other. */
#ifndef ZSIM_DIFF_H
#define ZSIM_DIFF_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "zsim.h"

#define DIFF_SESSIONS 6
#define DIFF_DEFAULT_WATCHER 1 /* the tag of a session's default watcher */

struct diff_log {
    char **v;
    int n, cap;
};

struct be;
struct be_ops {
    /* Starts session s connecting (directly, or through a proxy of its own
     * when proxied). */
    void (*open)(struct be *b, int s, int timeout_ms, bool proxied);
    int (*create)(struct be *b, int s, const char *path, const char *data, int len,
                  const struct zsim_acl_vector *acl, int mode, uint64_t tag);
    int (*del)(struct be *b, int s, const char *path, int version, uint64_t tag);
    int (*exists)(struct be *b, int s, const char *path, uint64_t watcher, uint64_t tag);
    int (*get)(struct be *b, int s, const char *path, uint64_t watcher, uint64_t tag);
    int (*children)(struct be *b, int s, const char *path, uint64_t watcher, bool stat,
                    uint64_t tag);
    int (*set)(struct be *b, int s, const char *path, const char *data, int len, int version,
               uint64_t tag);
    int (*sync)(struct be *b, int s, const char *path, uint64_t tag);
    int (*multi)(struct be *b, int s, int n, const struct zsim_op *ops, uint64_t tag);
    void (*auth)(struct be *b, int s, const char *cert);
    /* Closes s (blocking, as zookeeper_close). */
    void (*close)(struct be *b, int s);
    /* The proxied session's link: either direction held or let through. */
    void (*link)(struct be *b, int s, bool to_server, bool to_client);
    /* The proxied session's connection is reset. */
    void (*reset)(struct be *b, int s);
    /* Runs (or waits) until cond holds, for at most ms (the model counts
     * virtual time); false if it did not. cond is called with the logs
     * stable. */
    bool (*run_until)(struct be *b, bool (*cond)(struct be *b, const void *arg), const void *arg,
                      int ms);
    int64_t (*session_id)(struct be *b, int s);
    /* Frees what the backend made (sessions closed, proxies stopped). */
    void (*finish)(struct be *b);
};

struct be {
    const char *name;
    const struct be_ops *ops;
    struct diff_log log[DIFF_SESSIONS];
    int64_t ids[DIFF_SESSIONS];
    bool quiet; /* cleaning up: log nothing */
    pthread_mutex_t mu; /* the real backend's callbacks write from their thread */
    pthread_cond_t cv;
    void *impl;
};

/* A new backend around impl: the model and the server differ only in
 * their ops and what impl holds. */
struct be *diff_be_new(const char *name, const struct be_ops *ops, void *impl);
/* Appends a line to session s's log (under b->mu) and wakes waiters. */
void diff_log_add(struct be *b, int s, const char *line);
void diff_log_free(struct diff_log *l);
/* The line of an answer, written into buf. */
void diff_fmt_answer(const struct be *b, char *buf, size_t size, uint64_t tag, int req, int rc,
                     const char *value, const struct zsim_stat *stat, const char *data,
                     int datalen, const char *const *names, int count,
                     const struct zsim_op_result *results, int nresults);
void diff_fmt_event(char *buf, size_t size, int type, int state, const char *path,
                    uint64_t watcher);

/* A backend's logs made comparable: zxids ranked, the runs the server
 * leaves in any order sorted. */
struct diff_lines {
    char **v;
    int n;
};
void diff_normalize(struct be *b, struct diff_lines out[DIFF_SESSIONS]);
void diff_lines_free(struct diff_lines l[DIFF_SESSIONS]);
/* 0 if the server's and the model's lines are the same; else 1, with the
 * first difference and both logs on stderr. */
int diff_compare(const char *name, uint64_t seed, struct diff_lines a[DIFF_SESSIONS],
                 struct diff_lines m[DIFF_SESSIONS]);
/* One session's lines on stderr, line `at` marked (-1: none). */
void diff_show(const char *who, const struct diff_lines *l, int at);

struct be *diff_real_new(const char *host);
struct be *diff_model_new(uint64_t seed, int64_t tick_ns, int32_t min_timeout_ms,
                          int32_t max_timeout_ms);
/* Makes path and its parents in the model's tree (the scenario's root). */
void diff_model_mkpath(struct be *b, const char *path);

#endif
