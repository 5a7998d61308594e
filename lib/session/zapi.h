/* The seam below the session (lib/session/zapi.c): every call the library
 * makes into libzookeeper_mt goes through one table of these, chosen when
 * a client is opened (zkl_client's zapi). Production uses the real client's
 * table; a model of ZooKeeper (a simulation) can stand in its place, as
 * long as it keeps the real client's contract: the same codes, completions
 * called once each on a thread of its own, watchers as the real one calls
 * them. Only zapi.c calls zoo_* or zookeeper_* (tests/check-layers.sh). Not
 * in the table: zerror() and the jute deallocators, which are pure helpers
 * (a text for a code, freeing what a completion was given). */
#ifndef ZKL_ZAPI_H
#define ZKL_ZAPI_H

#include <stdio.h>
#include <zookeeper/zookeeper.h>

struct zoo_sasl_params; /* zoo_sasl_params_t, where libzookeeper_mt has SASL */

struct zkl__zapi {
    /* ---- handles ---- */
    zhandle_t *(*init)(const char *host, watcher_fn fn, int recv_timeout,
                       const clientid_t *clientid, void *context, int flags);
    /* NULL where this libzookeeper_mt has no TLS, or no SASL (the fields
     * are there either way: every file sees one layout). */
    zhandle_t *(*init_ssl)(const char *host, const char *cert, watcher_fn fn, int recv_timeout,
                           const clientid_t *clientid, void *context, int flags);
    zhandle_t *(*init_sasl)(const char *host, watcher_fn fn, int recv_timeout,
                            const clientid_t *clientid, void *context, int flags,
                            log_callback_fn log_callback, struct zoo_sasl_params *sasl_params);
    int (*close)(zhandle_t *zh);
    int (*state)(zhandle_t *zh);
    const clientid_t *(*client_id)(zhandle_t *zh);
    int (*recv_timeout)(zhandle_t *zh);
    watcher_fn (*set_watcher)(zhandle_t *zh, watcher_fn fn);
    int (*set_servers_resolution_delay)(zhandle_t *zh, int delay_ms);
    int (*add_auth)(zhandle_t *zh, const char *scheme, const char *cert, int cert_len,
                    void_completion_t completion, const void *data);
    /* ---- the process's log ---- */
    void (*set_debug_level)(ZooLogLevel level);
    void (*set_log_stream)(FILE *stream);
    /* ---- asynchronous requests ---- */
    int (*acreate)(zhandle_t *zh, const char *path, const char *value, int valuelen,
                   const struct ACL_vector *acl, int mode, string_completion_t completion,
                   const void *data);
    int (*acreate2)(zhandle_t *zh, const char *path, const char *value, int valuelen,
                    const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
                    const void *data);
    int (*adelete)(zhandle_t *zh, const char *path, int version, void_completion_t completion,
                   const void *data);
    int (*aget)(zhandle_t *zh, const char *path, int watch, data_completion_t completion,
                const void *data);
    int (*awget)(zhandle_t *zh, const char *path, watcher_fn watcher, void *watcher_ctx,
                 data_completion_t completion, const void *data);
    int (*aget_children)(zhandle_t *zh, const char *path, int watch,
                         strings_completion_t completion, const void *data);
    int (*awget_children)(zhandle_t *zh, const char *path, watcher_fn watcher, void *watcher_ctx,
                          strings_completion_t completion, const void *data);
    int (*awexists)(zhandle_t *zh, const char *path, watcher_fn watcher, void *watcher_ctx,
                    stat_completion_t completion, const void *data);
    int (*aset)(zhandle_t *zh, const char *path, const char *buffer, int buflen, int version,
                stat_completion_t completion, const void *data);
    int (*async)(zhandle_t *zh, const char *path, string_completion_t completion,
                 const void *data);
    /* ---- synchronous calls (from a caller's thread, never a completion's) ---- */
    int (*exists)(zhandle_t *zh, const char *path, int watch, struct Stat *stat);
    int (*get)(zhandle_t *zh, const char *path, int watch, char *buffer, int *buffer_len,
               struct Stat *stat);
    int (*set)(zhandle_t *zh, const char *path, const char *buffer, int buflen, int version);
    int (*get_children)(zhandle_t *zh, const char *path, int watch,
                        struct String_vector *strings);
    int (*multi)(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results);
    /* ---- the operations of a multi ---- */
    void (*check_op_init)(zoo_op_t *op, const char *path, int version);
    void (*set_op_init)(zoo_op_t *op, const char *path, const char *buffer, int buflen,
                        int version, struct Stat *stat);
};

/* libzookeeper_mt itself: the table every client uses unless its options
 * name another (zkl__client_opts_set_zapi), and the one of the process-wide
 * calls (the log) and of a wrapped handle, which is always a real one. */
extern const struct zkl__zapi zkl__zapi_real;

#endif
