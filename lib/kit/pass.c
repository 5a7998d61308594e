/* The calls a recipe makes into the front ends, the engine and the session,
 * passed on unchanged: a recipe sees the kit's header only (kit.h), and its
 * object file names no function of a layer below the kit
 * (tests/check-layers.sh). */
#include "front.h"
#include "kit.h"

void zkl__kit_obj_enter(const void *obj, const char *fn)
{
    zkl__obj_enter(obj, fn);
}

void zkl__kit_obj_leave(const void *obj)
{
    zkl__obj_leave(obj);
}

void zkl__kit_obj_close(const void *obj, const char *fn)
{
    zkl__obj_close(obj, fn);
}

int zkl__kit_obj_acquire(void *obj, const char *fn, zkl__acquire_fn acquire, long timeout_ms)
{
    return zkl__obj_acquire(obj, fn, acquire, timeout_ms);
}

int zkl__kit_obj_acquire_cancellable(void *obj, const char *fn, zkl__acquire_fn acquire,
                                     long timeout_ms, zkl_cancel *h)
{
    return zkl__obj_acquire_cancellable(obj, fn, acquire, timeout_ms, h);
}

int zkl__kit_wait_acquire(zkl_client *c, const char *dir, const zkl__policy *pol,
                          const zkl__qopts *o, long timeout_ms, zkl__node **out)
{
    return zkl__wait_acquire(c, dir, pol, o, timeout_ms, out);
}

int zkl__kit_wait_release(zkl__node *n)
{
    return zkl__wait_release(n);
}

void zkl__kit_wait_leave(zkl__node *n)
{
    zkl__wait_leave(n);
}

int zkl__kit_wait_request(zkl_client *c, const char *dir, long timeout_ms, zkl_cancel *h,
                          zkl__start_fn start, void *ctx, zkl__node **out)
{
    return zkl__wait_request(c, dir, timeout_ms, h, start, ctx, out);
}

int zkl__kit_async_start(zkl_client *c, const char *dir, const zkl__policy *pol,
                         const zkl__qopts *o, long timeout_ms, zkl_request_fn fn, void *arg,
                         zkl_request **out)
{
    return zkl__async_start(c, dir, pol, o, timeout_ms, fn, arg, out);
}

int zkl__kit_async_start_steps(zkl_client *c, const char *dir, const zkl__policy *pol,
                               const zkl__qopts *o, long timeout_ms, const zkl__async_step *step,
                               void *ctx, size_t nodes, zkl_request_fn fn, void *arg,
                               zkl_request **out)
{
    return zkl__async_start_steps(c, dir, pol, o, timeout_ms, step, ctx, nodes, fn, arg, out);
}

int zkl__kit_async_enqueue(zkl_request *r, const char *dir, const zkl__policy *pol,
                           const zkl__qopts *o, zkl__node **out)
{
    return zkl__async_enqueue(r, dir, pol, o, out);
}

void zkl__kit_async_poke(zkl_request *r)
{
    zkl__async_poke(r);
}

bool zkl__kit_request_on_session(zkl_request *r)
{
    return zkl__request_on_session(r);
}

bool zkl__kit_request_session_refused(zkl_request *r)
{
    return zkl__request_session_refused(r);
}

bool zkl__kit_request_wait_settled(zkl_request *r, int64_t deadline)
{
    return zkl__request_wait_settled(r, deadline);
}

int zkl__kit_node_held(const zkl__node *n)
{
    return zkl__node_held(n);
}

int64_t zkl__kit_node_token(const zkl__node *n)
{
    return zkl__node_token(n);
}

const char *zkl__kit_node_path(const zkl__node *n)
{
    return zkl__node_path(n);
}

zkl_client *zkl__kit_node_client(const zkl__node *n)
{
    return zkl__node_client(n);
}

bool zkl__kit_forked(const zkl_client *c)
{
    return zkl__forked(c);
}

int zkl__kit_get(zkl_client *c, zhandle_t *zh, const char *path, char *buf, int *len,
                 struct Stat *st)
{
    return c->zapi->get(zh, path, 0, buf, len, st);
}

int zkl__kit_exists(zkl_client *c, zhandle_t *zh, const char *path, struct Stat *st)
{
    return c->zapi->exists(zh, path, 0, st);
}

int zkl__kit_children(zkl_client *c, zhandle_t *zh, const char *path, struct String_vector *kids)
{
    return c->zapi->get_children(zh, path, 0, kids);
}

int zkl__kit_set(zkl_client *c, zhandle_t *zh, const char *path, const char *data, int len)
{
    return c->zapi->set(zh, path, data, len, -1);
}

int zkl__kit_max_request(const zkl_client *c)
{
    return c->max_request;
}
