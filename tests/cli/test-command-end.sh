#!/usr/bin/env bash
# COMMAND never runs beside the next holder's, whatever happens to zkl:
#   - the lock is lost while zkl's stderr is a pipe whose reader is gone,
#     or a full pipe whose reader stalls: COMMAND is ended all the same
#     (zkl signals first and never waits for its messages, and a broken
#     stderr does not kill it);
#   - zkl is killed (SIGKILL, or a signal it does not handle): COMMAND's
#     whole process group ends well before the session can expire;
#   - zkl lock or zkl elect is stopped (SIGSTOP) past its session's end:
#     COMMAND's group is told (SIGTERM) and ended before the next holder
#     or leader starts, and zkl, continued, exits 75;
#   - hold mode whose stdout's reader is gone exits 74 and leaves no node.
# The proof each time is the next holder's: when it acquires, its COMMAND
# looks whether the first COMMAND (or a process it started) still runs.
# On a server of its own, which one test pauses.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/cli/common.sh
. "$here/common.sh" --own-server command-end "$@"
export ZKL_CONNECT_TIMEOUT=30
root=/zkl-command-end/$$
paused=
cleanup() {
    [[ -z $paused ]] || "$ZKL_HARNESS" resume-node "$ZKL_TEST_ZKDIR" 1
    kill_jobs
    # The first holders' processes, if a test failed and left them.
    local f ps
    for f in "$tmp"/*.pids; do
        [[ -e $f ]] || continue
        read -ra ps <"$f"
        kill -KILL "${ps[@]}" 2>/dev/null
    done
}

# The first holder's COMMAND: it writes its pid and a grandchild's (a
# process it started, in its group) into $tmp/NAME.pids, then runs until
# ended. Extra shell text comes first (e.g. to fill stderr).
first_command() {
    # shellcheck disable=SC2016 # expanded by the command's shell
    printf '%s sleep 1000 & echo "$$ $!" >"%s.tmp"; mv "%s.tmp" "%s"; wait' \
        "${2:-}" "$tmp/$1.pids" "$tmp/$1.pids" "$tmp/$1.pids"
}

# The next holder's COMMAND: it writes "overlap" into $tmp/NAME.result if
# a process of $tmp/NAME.pids still runs (a zombie does not), else "ok";
# and into $tmp/NAME.sig the signal that ended the first COMMAND's shell,
# if it is a zombie still (its parent, zkl, stopped): field 52 of its
# stat, its status as waitpid would report it.
next_command() {
    # shellcheck disable=SC2016 # expanded by the command's shell
    printf 'r=ok; for p in $(cat "%s"); do s=$(sed "s/.*) //" /proc/$p/stat 2>/dev/null | cut -c1); [ -n "$s" ] && [ "$s" != Z ] && r="overlap $p"; done; echo "$r" >"%s"; set -- $(cat "%s"); set -- $(sed "s/.*) //" /proc/$1/stat 2>/dev/null); [ "${1:-}" = Z ] && echo $((${50} & 127)) >"%s"; true' \
        "$tmp/$1.pids" "$tmp/$1.result" "$tmp/$1.pids" "$tmp/$1.sig"
}

# next_holder_saw NAME PATH [KIND]: run the next holder of PATH (zkl KIND,
# lock by default; waiting up to 60 s) and check what it saw.
next_holder_saw() {
    "$ZKL" "${3:-lock}" -w 60 "$2" sh -c "$(next_command "$1")" || fail "the next holder gave $?"
    [[ $(cat "$tmp/$1.result" 2>/dev/null) == ok ]] ||
        fail "the next holder saw the first COMMAND run on: $(cat "$tmp/$1.result" 2>/dev/null)"
}

# lost_with_stderr NAME HOW: the server freezes under a holder whose
# stderr is broken (HOW: gone, full); zkl counts the lock as lost by the
# loss rule, and must end COMMAND before its session can expire.
lost_with_stderr() {
    local name=$1 how=$2 p=$root/$1 fifo=$tmp/$1.fifo rw w
    mkfifo "$fifo"
    exec {rw}<>"$fifo" # a reader that never reads, and a writer
    exec {w}>"$fifo"
    local fill=
    if [[ $how == gone ]]; then
        exec {rw}>&- # the reader is gone
    else
        # COMMAND fills the pipe first, from a process that then blocks.
        fill='(head -c 200000 /dev/zero >&2) &'
    fi
    "$ZKL" lock --session-timeout 4000 --kill-after 0.5 "$p" sh -c "$(first_command "$name" "$fill")" \
        2>&"$w" &
    local z=$!
    exec {w}>&-
    wait_for 20 test -s "$tmp/$name.pids" || fail "the first COMMAND never started"
    "$ZKL_HARNESS" pause-node "$ZKL_TEST_ZKDIR" 1 && paused=1
    # No answer for 9/20 of the session timeout: the lock counts as lost.
    wait_for 30 gone "$z" || fail "zkl did not end after the server froze"
    wait "$z"
    local rc=$?
    "$ZKL_HARNESS" resume-node "$ZKL_TEST_ZKDIR" 1 && paused=
    [[ $rc == 75 ]] || fail "zkl gave $rc, not 75 (lost)"
    next_holder_saw "$name" "$p"
    [[ $how == gone ]] || exec {rw}>&-
}

test_lost_lock_ends_command_when_stderr_has_no_reader() {
    lost_with_stderr nostderr gone
}

test_lost_lock_ends_command_when_stderr_is_full() {
    lost_with_stderr fullstderr full
}

# killed_zkl NAME SIGNAL: zkl dies of SIGNAL while COMMAND runs, and a
# next holder waits; COMMAND's group ends within a twentieth of the
# session timeout, before the server may expire the session.
killed_zkl() {
    local name=$1 sig=$2 p=$root/$1
    env --default-signal "$ZKL" lock --session-timeout 6000 "$p" sh -c "$(first_command "$name")" &
    local z=$!
    wait_for 20 test -s "$tmp/$name.pids" || fail "the first COMMAND never started"
    kill -"$sig" "$z"
    wait_for 10 gone "$z" || fail "zkl did not die of SIG$sig"
    next_holder_saw "$name" "$p"
}

test_command_ends_when_zkl_is_killed() {
    killed_zkl kill KILL
}

test_command_ends_when_zkl_dies_of_sigusr1_or_sigalrm() {
    killed_zkl usr1 USR1
    killed_zkl alrm ALRM
}

# stopped_zkl KIND NAME: `zkl KIND` (lock or elect) is stopped
# while COMMAND runs, and stays stopped past its session's end while the
# next holder waits. zkl's guard ends COMMAND's group (SIGTERM first)
# before the server can give the lock to the next holder; continued, zkl
# says the lock was lost (75). SIGTERM first shows in how COMMAND's shell
# ended: it does not handle SIGTERM, so the kernel ends it of that signal
# as it is sent, whether or not the shell runs again before the SIGKILL
# that follows (a trap's note would need the shell to run within T/40).
stopped_zkl() {
    local kind=$1 name=$2 p=$root/$2
    # In a session of its own (test-cli.sh's start_zkl says why).
    setsid "$ZKL" "$kind" --session-timeout 4000 "$p" sh -c "$(first_command "$name")" \
        2>"$tmp/$name.err" &
    local z=$!
    wait_for 20 test -s "$tmp/$name.pids" || fail "the first COMMAND never started"
    kill -STOP "$z"
    next_holder_saw "$name" "$p" "$kind"
    kill -CONT "$z"
    wait_for 20 gone "$z" || fail "zkl did not end once continued"
    wait "$z"
    local rc=$?
    [[ $rc == 75 ]] || fail "zkl gave $rc, not 75 (lost): $(cat "$tmp/$name.err")"
    [[ $(cat "$tmp/$name.sig" 2>/dev/null) == 15 ]] ||
        fail "COMMAND was not ended by SIGTERM first (its shell's signal: $(cat "$tmp/$name.sig" 2>/dev/null))"
}

test_command_ends_when_zkl_lock_is_stopped_past_its_session() {
    stopped_zkl lock stop-lock
}

test_command_ends_when_zkl_elect_is_stopped_past_its_session() {
    stopped_zkl elect stop-elect
}

# --foreground: COMMAND, in zkl's group, ends too.
test_foreground_command_ends_when_zkl_is_killed() {
    local p=$root/fg
    # shellcheck disable=SC2016 # expanded by the command's shell
    "$ZKL" lock --foreground --session-timeout 6000 "$p" sh -c \
        'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; while :; do sleep 0.05; done' "$tmp/fg.pids" &
    local z=$!
    wait_for 20 test -s "$tmp/fg.pids" || fail "the first COMMAND never started"
    kill -KILL "$z"
    next_holder_saw fg "$p"
}

# Hold mode whose stdout cannot be written: 74, and the node is gone when
# zkl exits (not a session timeout later).
test_hold_mode_into_a_pipe_without_reader_exits_74_and_releases() {
    local p=$root/hold fifo=$tmp/hold.fifo rw w
    mkfifo "$fifo"
    exec {rw}<>"$fifo"
    exec {w}>"$fifo"
    exec {rw}>&-
    "$ZKL" lock --until-signal --session-timeout 30000 "$p" 1>&"$w" 2>"$tmp/hold.err"
    local rc=$?
    exec {w}>&-
    [[ $rc == 74 ]] || fail "hold mode gave $rc, not 74: $(cat "$tmp/hold.err")"
    [[ $(grep -c "write error" "$tmp/hold.err") == 1 ]] ||
        fail "hold mode said: $(cat "$tmp/hold.err")"
    [[ $(contenders "$p") == 0 ]] || fail "its node outlived it"
}

run_tests "$@"
