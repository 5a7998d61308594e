/* Requests a recipe's calls wait for, and a recipe's own nodes beside its
 * lock queue (lib/kit/request.c, lib/kit/znode.c). Included by internal.h. */
#ifndef ZKL_REQUEST_H
#define ZKL_REQUEST_H

/* ---- requests with a deadline (lib/kit/request.c) -------------------------- */

struct zkl__slot {
    struct zkl__batch *b;
    int rc;
    bool done;
    char *data; /* get: the node's data (NUL-terminated), or NULL */
    int len;
    struct Stat st;
    struct String_vector kids; /* get_children */
};

struct zkl__batch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending;    /* requests sent and not answered */
    bool abandoned; /* the caller left: the last answer frees */
    size_t n;
    struct zkl__slot s[];
};

ZKL__HIDDEN struct zkl__batch *zkl__batch_new(size_t n);
ZKL__HIDDEN void zkl__batch_destroy(struct zkl__batch *b);
/* Completions for zoo_aget / zoo_acreate with a slot as data. */
ZKL__HIDDEN void zkl__get_done(int rc, const char *value, int len, const struct Stat *st,
                               const void *data);
ZKL__HIDDEN void zkl__string_done(int rc, const char *value, const void *data);
/* Take the session's handle for sending (c->hlock held until send_end). */
ZKL__HIDDEN int zkl__send_begin(zkl_client *c, zhandle_t **zh);
ZKL__HIDDEN void zkl__send_end(zkl_client *c, int requests);
/* A new batch of n slots in *b, and the handle to send its requests on, as
 * zkl__send_begin: 0, or ZKL_ENOMEM or zkl__send_begin's code with nothing
 * left to undo. */
ZKL__HIDDEN int zkl__batch_begin(zkl_client *c, size_t n, struct zkl__batch **b, zhandle_t **zh);
/* Count a request as sent (rc ZOK), or record that it could not be. */
ZKL__HIDDEN void zkl__sent(struct zkl__slot *sl, int rc);
/* Wait for every answer, up to the deadline: 0 or ZKL_ETIMEDOUT. */
ZKL__HIDDEN int zkl__batch_wait(struct zkl__batch *b, int64_t deadline);
/* The caller is done with the batch: freed now, or at the last answer. */
ZKL__HIDDEN void zkl__batch_drop(struct zkl__batch *b);
/* One request, waited for: 0 with the answer in *out (a batch to drop), or
 * ZKL_ETIMEDOUT / ZKL_ELOST / ZKL_ECLOSED / ZKL_ENOMEM. */
enum zkl__op { ZKL__OP_GET, ZKL__OP_KIDS, ZKL__OP_CREATE, ZKL__OP_SET };
ZKL__HIDDEN int zkl__call(zkl_client *c, enum zkl__op op, const char *path, const char *data,
                          int mode, int version, int64_t deadline, struct zkl__batch **out);

/* ---- a recipe's own nodes (lib/kit/request.c, lib/kit/znode.c) ----------------- */

/* The deadline for requests a call must see answered: its own, or once
 * that has passed (a try once), the session timeout from now, as the
 * engine bounds a try-once acquire. */
ZKL__HIDDEN int64_t zkl__request_deadline(zkl_client *c, int64_t deadline);
/* Send a read of `path` now, to look at its answer later: a batch to drop,
 * or NULL (no memory). */
ZKL__HIDDEN struct zkl__batch *zkl__get_ahead(zkl_client *c, const char *path);
/* The read's answer, if it is in and found the node: true, with the data
 * (borrowed until the batch is dropped). b may be NULL. */
ZKL__HIDDEN bool zkl__get_peek(struct zkl__batch *b, const char **data, int *len);
/* Read n nodes in one pipelined batch, waited for up to the deadline: 0
 * with the answers in *out (slot i for paths[i]; a batch to drop), or
 * ZKL_ETIMEDOUT / ZKL_ELOST / ZKL_ECLOSED / ZKL_ENOMEM. */
ZKL__HIDDEN int zkl__get_many(zkl_client *c, char *const *paths, size_t n, int64_t deadline,
                              struct zkl__batch **out);
/* One child read by zkl__read_children. */
typedef struct zkl__read {
    char *path;    /* the child's full path */
    char *data;    /* its data, NUL-terminated, len bytes before the NUL */
    int len;
    int tag;       /* what pick() said of its name */
    int64_t czxid; /* its creation's zxid */
    int64_t owner; /* its ephemeral owner's session, 0 if persistent */
} zkl__read;
/* List `dir` and read each child whose name pick() tags with a number
 * above 0, in one pipelined batch, up to the deadline. A child gone since
 * the listing is left out, and a missing `dir` has no children. 0 with *n
 * reads in listing order in *out (free with zkl__reads_free), or a ZKL_E...
 * code. */
ZKL__HIDDEN int zkl__read_children(zkl_client *c, const char *dir, int (*pick)(const char *name),
                                   int64_t deadline, zkl__read **out, size_t *n);
ZKL__HIDDEN void zkl__reads_free(zkl__read *r, size_t n);
/* Create the missing ancestors of `path` (not `path` itself), as the
 * client creates lock parents; answers ignored: the create that follows
 * tells. 0, or why the requests could not be sent or answered. */
ZKL__HIDDEN int zkl__create_ancestors(zkl_client *c, const char *path, int64_t deadline);
/* Make sure the persistent node `path` carries data: create it (and its
 * missing ancestors) with `want` if it is missing, fill it in with `want`,
 * by version, if it has none. 0 with the data it carries then (`want`, or
 * what another client wrote first) in *data (malloc, NUL-terminated) and
 * *len; or a ZKL_E... code. */
ZKL__HIDDEN int zkl__node_fill(zkl_client *c, const char *path, const char *want,
                               int64_t deadline, char **data, int *len);
/* The same, started on the engine (c->mu held; sent on the session's
 * current handle), without creating: a node missing is ZNONODE's code.
 * fn is called once, on ZooKeeper's thread with c->mu held, with 0 and the
 * data the node carries (borrowed for the call), or a ZKL_E... code; or
 * never, after zkl__node_fill_drop. NULL with *err if nothing was sent. */
typedef void (*zkl__fill_fn)(void *arg, int err, const char *data, int len);
struct zkl__fill;
ZKL__HIDDEN struct zkl__fill *zkl__node_fill_start(zkl_client *c, const char *path,
                                                   const char *want, zkl__fill_fn fn, void *arg,
                                                   int *err);
/* The caller no longer wants the answer (c->mu held): fn is not called,
 * and the last answer frees. */
ZKL__HIDDEN void zkl__node_fill_drop(struct zkl__fill *f);
/* The guarded writes of every recipe, for the hold of node n (NULL: none):
 * ZKL_EINVAL for arguments the public calls refuse, ZKL_ENOTHELD without a
 * node, else zkl__node_guarded_multi; set writes `len` bytes of `data` into
 * `path` (any version). */
ZKL__HIDDEN int zkl__node_guarded_ops(zkl__node *n, int count, const zoo_op_t *ops,
                                      zoo_op_result_t *results);
ZKL__HIDDEN int zkl__node_guarded_set(zkl__node *n, const char *path, const void *data, int len);

#endif
