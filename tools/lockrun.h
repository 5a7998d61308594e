/* The parts of `zkl lock` that run COMMAND: the event loop its main thread
 * waits in, and COMMAND's life under the lock. Public API only. */
#ifndef ZKL_CLI_LOCKRUN_H
#define ZKL_CLI_LOCKRUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zkl.h"

/* ---- the event loop (tools/loop.c) ---------------------------------------
 *
 * The main thread takes every decision in one poll() loop over a signalfd
 * and a pipe: signals, the client's state changes (loop_on_state, a client
 * listener, writes them into the pipe from the client's own thread) and the
 * lock thread's news (LOOP_NEWS) all arrive there. */

/* What the lock thread writes into the pipe; state changes are written as
 * their enum zkl_state value, all smaller. */
#define LOOP_NEWS 100
/* What the stdin reader of hold mode writes at end of file. */
#define LOOP_EOF 101
/* What a recipe's lost callback writes: a hold of ours is lost. */
#define LOOP_LOST 102
/* What a recipe's revoke callback writes: someone asks our hold to let go. */
#define LOOP_REVOKE 103

enum { EV_NONE, EV_SIGNAL, EV_STATE, EV_NEWS, EV_EOF, EV_LOST, EV_REVOKE };

struct event {
    int type;
    int sig;      /* EV_SIGNAL */
    int32_t code; /* EV_SIGNAL: si_code; SI_KERNEL for a terminal's signal */
    int state;    /* EV_STATE */
};

struct loop {
    int sfd;      /* signalfd of SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD */
    int rfd, wfd; /* the pipe */
    unsigned char buf[64];
    size_t head, tail;
    sigset_t orig; /* the mask zkl started with, for COMMAND */
};

/* Block the signals zkl reads (in every thread: call before any thread
 * starts) and open the loop; messages go to stderr without waiting from
 * now on (cli_errout_start). Returns 0, or EX_OSERR after saying why. */
int loop_open(struct loop *l);
void loop_close(struct loop *l);
/* Write one byte into the pipe; callable from any thread. */
void loop_notify(int wfd, unsigned char b);
/* A client listener: arg is a pointer to the pipe's write end. */
void loop_on_state(zkl_client *c, enum zkl_state state, void *arg);
/* The next event, or EV_NONE once `deadline` (ms of cli_now_ms, -1 for
 * none) passed. The pipe's bytes come before signals. */
void loop_next(struct loop *l, int64_t deadline, struct event *ev);
/* Forget what is in the pipe: the news of a session that is closed. */
void loop_drain(struct loop *l);
/* The earlier of two deadlines, -1 standing for none. */
int64_t loop_earliest(int64_t a, int64_t b);

/* ---- COMMAND's guard (tools/guard.c) --------------------------------------
 *
 * COMMAND must end with zkl, whatever ends zkl (SIGKILL, the OOM killer, a
 * signal zkl does not handle): a lock whose session expires is given to the
 * next holder. The guard is a process of zkl's that ends COMMAND when zkl
 * is gone and had not stood it down, or when a deadline zkl gave it passed
 * (zkl stopped or starved while its session may expire). */

struct guard {
    pid_t pid;  /* the guard; with `group`, also COMMAND's process group */
    int fd;     /* zkl's end of the socket whose end of file the guard waits for */
    bool group; /* COMMAND joins the guard's process group */
};

/* Start the guard before COMMAND. With `group` it leads a new process group
 * for COMMAND to join (g->pid), all of which it ends; else it ends the pid
 * guard_watch names. Once zkl is gone: SIGTERM (SIGKILL if grace_ms is 0),
 * then SIGKILL grace_ms later. Returns 0, or EX_OSERR after saying why. */
int guard_start(struct guard *g, bool group, long grace_ms);
/* Without `group`: the process to end (COMMAND, in zkl's group). */
void guard_watch(struct guard *g, pid_t pid);
/* Unless renewed first, SIGTERM at term_ns and SIGKILL at kill_ns (both
 * of CLOCK_MONOTONIC; SIGKILL at once if kill_ns <= term_ns), whether or
 * not zkl is still there: for a zkl that is stopped or starved while its
 * session is lost. term_ns 0 takes the deadline back. */
void guard_deadline(struct guard *g, int64_t term_ns, int64_t kill_ns);
/* Stand the guard down and reap it: call before COMMAND is reaped, so that
 * the guard never signals a process id that was given to another. */
void guard_stop(struct guard *g);

/* ---- COMMAND (tools/command.c) ------------------------------------------ */

struct command {
    char **argv;       /* NULL-terminated */
    const char *path;  /* the lock's path */
    const char *node;  /* our node */
    int64_t token;     /* its fencing token */
    long kill_after_ms; /* from SIGTERM to SIGKILL once the lock is lost */
    bool foreground;    /* --foreground: in zkl's process group, signalled alone */
};

/* Run COMMAND while the lock is held and wait for its end, passing signals
 * on, and ending COMMAND if the lock is lost (*lost is then set) or its
 * release is asked for (EV_REVOKE, only with --revocable). COMMAND runs in
 * a process group of its own, which every signal goes to, so that the
 * processes it starts end with it (as timeout(1) does); at a terminal
 * whose foreground job zkl leads, the group gets the terminal while it
 * runs. With cmd->foreground it stays in zkl's group and is signalled
 * alone. A guard (above) ends COMMAND if zkl dies while it runs. Returns
 * COMMAND's exit code (128+N for signal N), or an exit code of zkl's when
 * it could not be started. */
int command_run(const struct command *cmd, struct loop *l, zkl_client *c, bool *lost);

#endif
