/* The session as a machine: its state (enum zkl_state) changes only in
 * zkl__sess_move(), against the table of legal moves below, and a session
 * ends only through zkl__sess_end(): "lost" is entered in one place, with
 * one reset. What the listeners hear is queued here too, for the keeper to
 * deliver (lib/session/keeper.c). */
#include <stdio.h>

#include "session.h"

#define TO(s) (1u << (s))
#define S(s) ZKL_STATE_##s
/* The moves a session may make: bit `to` of legal[from]. A move to the
 * same state is an event of its own (a new session at once, an old
 * handle's expiry after the keeper gave it up), told to the listeners. */
static const unsigned legal[S(CLOSED) + 1] = {
    [S(CONNECTING)] = TO(S(CONNECTED)) | TO(S(LOST)) | TO(S(CLOSED)),
    /* to CONNECTED: a new session without a drop seen in between */
    [S(CONNECTED)] = TO(S(CONNECTED)) | TO(S(SUSPENDED)) | TO(S(LOST)) | TO(S(CLOSED)),
    [S(SUSPENDED)] = TO(S(CONNECTED)) | TO(S(RECONNECTED)) | TO(S(LOST)) | TO(S(CLOSED)),
    [S(RECONNECTED)] = TO(S(CONNECTED)) | TO(S(SUSPENDED)) | TO(S(LOST)) | TO(S(CLOSED)),
    /* to LOST: the given-up handle reports its expiry before the keeper
     * has closed it */
    [S(LOST)] = TO(S(CONNECTED)) | TO(S(LOST)) | TO(S(CLOSED)),
    [S(CLOSED)] = 0,
};

bool zkl__sess_legal(int from, int to)
{
    return from >= 0 && from <= S(CLOSED) && to >= 0 && to <= S(CLOSED) &&
           (legal[from] & TO(to)) != 0;
}

static const char *state_name(int st)
{
    static const char *const names[] = {"CONNECTING", "CONNECTED", "SUSPENDED",
                                        "RECONNECTED", "LOST", "CLOSED"};
    return st >= 0 && st <= S(CLOSED) ? names[st] : "?";
}

void zkl__sess_move(zkl_client *c, int to, const char *why)
{
    int from = c->state;
    if (!zkl__sess_legal(from, to)) {
        /* A bug of zkl's. Never abort the user's process for it: count it
         * (zkl_metrics' faults), and carry the move out, as the session's
         * best idea of where it is. */
        c->faults++;
        snprintf(c->fault, sizeof c->fault, "the session moved from %s to %s (%s)",
                 state_name(from), state_name(to), why);
        if (c->sl)
            c->sl->on_fault(c->sl_ctx);
    }
    c->state = to;
    /* The listeners hear every state but CLOSED: a closing client delivers
     * nothing more. */
    if (to != S(CLOSED) && c->ev_tail - c->ev_head < sizeof c->events / sizeof c->events[0])
        c->events[c->ev_tail++ % (sizeof c->events / sizeof c->events[0])] = to;
    pthread_cond_broadcast(&c->cv);
}

void zkl__sess_end(zkl_client *c, int to, const char *why)
{
    if (to == S(LOST)) {
        /* Every node of the session is gone on the server, or soon will
         * be: bump the generation first so no caller can see a lock as
         * held any more; the loss rule's clocks start again with the next
         * session. */
        c->gen++;
        c->sid = 0;
        c->suspended_ns = 0;
        c->last_ok_ns = 0;
        c->ka_sent_ns = 0;
    }
    zkl__sess_move(c, to, why);
    zkl__client_session_end(c);
}
