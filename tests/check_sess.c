/* The session as a machine, without a server (lib/session/state.c): its
 * table of legal moves, the one way a session ends, and a forbidden move
 * counted, not aborted. */
#include <stdlib.h>

#include "session.h"
#include "testutil.h"

#define S(s) ZKL_STATE_##s

static const struct {
    int from, to;
    bool legal;
} moves[] = {
    {S(CONNECTING), S(CONNECTED), true},
    {S(CONNECTING), S(LOST), true}, /* expired or refused before the first */
    {S(CONNECTING), S(CLOSED), true},
    {S(CONNECTING), S(SUSPENDED), false},
    {S(CONNECTING), S(RECONNECTED), false},
    {S(CONNECTED), S(SUSPENDED), true},
    {S(CONNECTED), S(CONNECTED), true}, /* a new session at once */
    {S(CONNECTED), S(LOST), true},
    {S(CONNECTED), S(RECONNECTED), false},
    {S(CONNECTED), S(CONNECTING), false},
    {S(SUSPENDED), S(RECONNECTED), true},
    {S(SUSPENDED), S(CONNECTED), true},
    {S(SUSPENDED), S(LOST), true},
    {S(SUSPENDED), S(SUSPENDED), false},
    {S(RECONNECTED), S(SUSPENDED), true},
    {S(RECONNECTED), S(RECONNECTED), false},
    {S(LOST), S(CONNECTED), true},
    {S(LOST), S(LOST), true}, /* the given-up handle's own expiry */
    {S(LOST), S(SUSPENDED), false},
    {S(LOST), S(RECONNECTED), false},
    {S(CLOSED), S(CONNECTED), false},
    {S(CLOSED), S(CLOSED), false},
    {-1, S(CONNECTED), false},
    {S(CONNECTED), 6, false},
};

START_TEST(test_the_session_moves_by_its_table)
{
    ck_assert_int_eq(zkl__sess_legal(moves[_i].from, moves[_i].to), moves[_i].legal);
}
END_TEST

static zkl_client *bare_client(int state)
{
    zkl_client *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->state = state;
    c->gen = 1;
    return c;
}

static void bare_free(zkl_client *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

START_TEST(test_a_lost_session_starts_a_generation_and_clears_the_clocks)
{
    zkl_client *c = bare_client(S(SUSPENDED));
    c->sid = 77;
    c->suspended_ns = 5;
    c->last_ok_ns = 6;
    c->ka_sent_ns = 7;
    zkl__sess_end(c, S(LOST), "a test");
    ck_assert_int_eq(c->state, S(LOST));
    ck_assert_int_eq(c->gen, 2);
    ck_assert_int_eq(c->sid, 0);
    ck_assert_int_eq(c->suspended_ns + c->last_ok_ns + c->ka_sent_ns, 0);
    ck_assert_int_eq(c->faults, 0);
    /* the listeners hear it */
    ck_assert_uint_eq(c->ev_tail - c->ev_head, 1);
    ck_assert_int_eq(c->events[c->ev_head], S(LOST));
    /* a closing client's end is no loss: nothing reset, nothing told */
    c->sid = 78;
    zkl__sess_end(c, S(CLOSED), "a test");
    ck_assert_int_eq(c->state, S(CLOSED));
    ck_assert_int_eq(c->gen, 2);
    ck_assert_int_eq(c->sid, 78);
    ck_assert_uint_eq(c->ev_tail - c->ev_head, 1);
    bare_free(c);
}
END_TEST

START_TEST(test_a_forbidden_move_is_counted_and_carried_out_not_aborted)
{
    zkl_client *c = bare_client(S(CLOSED));
    zkl__sess_move(c, S(CONNECTED), "a test's own");
    ck_assert_int_eq(c->state, S(CONNECTED));
    ck_assert_int_eq(c->faults, 1);
    ck_assert_str_eq(c->fault, "the session moved from CLOSED to CONNECTED (a test's own)");
    zkl__sess_move(c, S(SUSPENDED), "legal");
    ck_assert_int_eq(c->faults, 1);
    bare_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sess");
    TCase *tc = tu_tcase("sess", 10);
    for (int i = 0; i < (int)(sizeof moves / sizeof moves[0]); i++)
        tu_add_row(tc, test_the_session_moves_by_its_table, i);
    tcase_add_test(tc, test_a_lost_session_starts_a_generation_and_clears_the_clocks);
    tcase_add_test(tc, test_a_forbidden_move_is_counted_and_carried_out_not_aborted);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
