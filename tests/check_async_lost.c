/* A held asynchronous request whose hold is lost, against a real
 * ZooKeeper: someone deletes its node, or its session expires. A client
 * opened with zkl_client_opts_set_lost_requests(o, 1) is told through the
 * request's callback (and event descriptor), once, with ZKL_ELOST; release
 * then says why. A client opened without it is told nothing, as in 1.0:
 * delivery by descriptor proves no callback is due. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zkl/zookeeper.h"

#define PROMPT_MS 10000
/* The sessions are expired by tu_expire_session, at once whatever their
 * timeout: a long one is not lost by itself while a sanitizer run stalls. */
#define SESSION_MS 20000

/* Deliver what the descriptor says is due, within PROMPT_MS: the number of
 * callbacks run. */
static int dispatch(zkl_client *c, int fd, int want)
{
    int ran = 0;
    int64_t end = tu_now_ms() + tu_ms(PROMPT_MS);
    while (ran < want && tu_now_ms() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0)
            ran += zkl_client_dispatch(c);
    }
    return ran;
}

static zkl_client *open_client(int lost_requests)
{
    zkl_client_opts *o;
    zkl_client *c;
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_lost_requests(o, lost_requests), 0);
    ck_assert_int_eq(zkl_client_open_opts(tu_hosts(), SESSION_MS, o, &c), 0);
    zkl_client_opts_free(o);
    return c;
}

/* A request of client c held on `path`, delivered by descriptor. */
static zkl_request *held(zkl_client *c, zkl_mutex *m, int fd, struct tu_heard *t)
{
    zkl_request *r;
    ck_assert_int_eq(zkl_mutex_acquire_async(m, PROMPT_MS, tu_heard_fn, t, &r), 0);
    ck_assert_int_eq(dispatch(c, fd, 1), 1);
    ck_assert_int_eq(tu_heard_result(t), 0);
    ck_assert_int_eq(zkl_request_is_held(r), 1);
    return r;
}

static bool not_held(void *arg)
{
    return zkl_request_is_held(arg) == 0;
}

/* One test's mutex on its own path and client, with a request held on it:
 * each test starts here and differs in how the hold is lost. */
struct held_case {
    char *p;
    zkl_client *c;
    zkl_mutex *m;
    int fd;
    struct tu_heard t;
    zkl_request *r;
};

static void held_case_open(struct held_case *h, const char *leaf, int lost_requests)
{
    h->p = tu_path(leaf);
    h->c = open_client(lost_requests);
    ck_assert_int_eq(zkl_mutex_new(h->c, h->p, &h->m), 0);
    ck_assert_int_eq(zkl_client_event_fd(h->c, &h->fd), 0);
    h->t = (struct tu_heard){0};
    h->r = held(h->c, h->m, h->fd, &h->t);
}

/* Free the request; its node must go promptly; then the rest. */
static void held_case_close(struct held_case *h)
{
    zkl_request_free(h->r);
    ck_assert(tu_wait_children(tu_fixture_zk, h->p, 0, PROMPT_MS));
    zkl_mutex_free(h->m);
    zkl_client_close(h->c);
    free(h->p);
}

START_TEST(test_a_held_request_whose_node_is_deleted_is_told_when_asked_for)
{
    struct held_case h;
    held_case_open(&h, "deleted", 1);
    /* Someone else deletes the node (as `zkl break` does). */
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, zkl_request_node(h.r), -1), ZOK);
    ck_assert_int_eq(dispatch(h.c, h.fd, 1), 1);
    ck_assert_int_eq(tu_heard_calls(&h.t), 2);
    ck_assert_int_eq(tu_heard_result(&h.t), ZKL_ELOST);
    ck_assert_int_eq(zkl_request_is_held(h.r), 0);
    /* Told once: nothing more is due. */
    ck_assert_int_eq(zkl_client_dispatch(h.c), 0);
    ck_assert_int_eq(zkl_request_release(h.r), ZKL_ELOST);
    ck_assert_ptr_nonnull(strstr(zkl_last_error_text(), "deleted by someone else"));
    ck_assert_int_eq(zkl_client_state(h.c), ZKL_STATE_CONNECTED); /* the session lives on */
    held_case_close(&h);
}
END_TEST

START_TEST(test_a_held_request_whose_session_expires_is_told_when_asked_for)
{
    struct held_case h;
    held_case_open(&h, "expired", 1);
    tu_expire_session(h.c);
    ck_assert_int_eq(dispatch(h.c, h.fd, 1), 1);
    ck_assert_int_eq(tu_heard_calls(&h.t), 2);
    ck_assert_int_eq(tu_heard_result(&h.t), ZKL_ELOST);
    ck_assert_int_eq(zkl_request_release(h.r), ZKL_ELOST);
    ck_assert_ptr_nonnull(strstr(zkl_last_error_text(), "session ended"));
    held_case_close(&h);
}
END_TEST

START_TEST(test_a_held_request_loss_is_not_told_by_default)
{
    struct held_case h;
    held_case_open(&h, "quiet", 0);
    ck_assert_int_eq(zoo_delete(tu_fixture_zk, zkl_request_node(h.r), -1), ZOK);
    ck_assert(tu_wait_until(not_held, h.r, PROMPT_MS));
    /* The loss is known; no callback is due for it. */
    ck_assert_int_eq(zkl_client_dispatch(h.c), 0);
    ck_assert_int_eq(tu_heard_calls(&h.t), 1);
    ck_assert_int_eq(zkl_request_release(h.r), ZKL_ELOST);
    zkl_request_free(h.r);
    zkl_mutex_free(h.m);
    zkl_client_close(h.c);
    free(h.p);
}
END_TEST

START_TEST(test_a_held_request_of_a_closing_client_is_not_told_a_loss)
{
    struct held_case h;
    held_case_open(&h, "closing", 1);
    zkl_client_close(h.c);
    ck_assert_int_eq(tu_heard_calls(&h.t), 1);
    ck_assert_int_eq(zkl_request_release(h.r), ZKL_ECLOSED);
    zkl_request_free(h.r);
    zkl_mutex_free(h.m);
    ck_assert(tu_wait_children(tu_fixture_zk, h.p, 0, PROMPT_MS));
    free(h.p);
}
END_TEST

START_TEST(test_lost_requests_option_refuses_bad_arguments)
{
    zkl_client_opts *o;
    ck_assert_int_eq(zkl_client_opts_set_lost_requests(NULL, 1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_new(&o), 0);
    ck_assert_int_eq(zkl_client_opts_set_lost_requests(o, 2), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_lost_requests(o, -1), ZKL_EINVAL);
    ck_assert_int_eq(zkl_client_opts_set_lost_requests(o, 0), 0);
    zkl_client_opts_free(o);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        test_a_held_request_whose_node_is_deleted_is_told_when_asked_for,
        test_a_held_request_whose_session_expires_is_told_when_asked_for,
        test_a_held_request_loss_is_not_told_by_default,
        test_a_held_request_of_a_closing_client_is_not_told_a_loss,
        test_lost_requests_option_refuses_bad_arguments,
        NULL,
    };
    return tu_run_zk_case("async_lost", 60, tests);
}
