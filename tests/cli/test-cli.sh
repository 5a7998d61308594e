#!/usr/bin/env bash
# The zkl command, run as a user would, against a real ZooKeeper.
#
# Uses ZKL_TEST_HOSTS when set (tests/with-zk.sh); otherwise starts its own
# server with tests/with-zk.sh. The binary is $ZKL_BIN, else
# $top_builddir/tools/zkl (make check exports top_builddir).
#
# Arguments: names of tests to run; all by default. Every wait polls a
# condition with a deadline; every process a test starts is killed on exit,
# and each test works under its own lock path.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/cli/common.sh
. "$here/common.sh" cli "$@"
root=/zkl-cli-test/$$
root_cleanup=1
# -n gives connecting one second, which a loaded machine (sanitizers, a
# busy server) can overrun with exit 69: the tests here are about the lock,
# so connecting gets 30 s (--connect-timeout's variable);
# test_nonblock_and_wait_bound_the_connecting runs without it.
export ZKL_CONNECT_TIMEOUT=30

cleanup() {
    kill_jobs
    # Lock parents are containers and go by themselves; a semaphore's node
    # is persistent.
    [[ -z $root_cleanup ]] || python3 "$here/zknode.py" "$ZKL_TEST_HOSTS" deleteall "$root" >/dev/null 2>&1
}

# wait_exit SECONDS PID: wait until PID (a child of this shell) ended and
# set $status to its exit status; 1 if it still runs after SECONDS.
status=
wait_exit() {
    wait_for "$1" gone "$2" || return 1
    wait "$2"
    status=$?
}

# Start zkl in the background; its pid is in $bg. Background jobs of a
# script start with SIGINT ignored: give zkl the default back, as a shell
# prompt would. A test that stops zkl (SIGSTOP) sets `local wrap=(setsid)`
# first: zkl then runs in a session of its own. In the script's process
# group, a stopped zkl is sent SIGHUP and SIGCONT by the kernel if that
# group is left orphaned while zkl is stopped, and zkl passes the SIGHUP on
# to COMMAND: a full run once saw COMMAND end of SIGHUP and zkl run again
# before the test continued it. Across sessions the kernel sends neither.
# (setsid execs zkl: a script's background job leads no process group, so
# it does not fork, and $! is zkl's pid.)
bg=
wrap=()
start_zkl() {
    # Not the write end of a hold-mode test's stdin (fd 7): its end of file
    # must come when the test closes it.
    "${wrap[@]}" env --default-signal=INT "$ZKL" "$@" 7>&- &
    bg=$!
}

contenders_are() { [[ $(contenders "$1") == "$2" ]]; }


# ---- tests -------------------------------------------------------------------

test_exit_status_of_command_is_passed_through() {
    local p=$root/status
    "$ZKL" lock "$p" true || fail "true gave $?"
    "$ZKL" lock "$p" sh -c 'exit 7'
    [[ $? == 7 ]] || fail "exit 7 not passed through"
    "$ZKL" lock "$p" -- sh -c 'kill -KILL $$'
    [[ $? == 137 ]] || fail "a command killed by SIGKILL did not give 137"
    "$ZKL" lock "$p" -c 'exit 3'
    [[ $? == 3 ]] || fail "-c did not run the shell command"
    "$ZKL" lock "$p" "$tmp/no-such-command" 2>/dev/null
    [[ $? == 127 ]] || fail "a missing command did not give 127"
    contenders_are "$p" 0 || fail "a node was left behind"
}

test_child_gets_lock_path_node_and_token() {
    local p=$root/env
    # shellcheck disable=SC2016 # expanded by the command's shell
    "$ZKL" lock "$p" sh -c 'printf "%s\n%s\n%s\n" "$ZKL_LOCK_PATH" "$ZKL_LOCK_NODE" "$ZKL_FENCING_TOKEN"' >"$tmp/env1" ||
        fail "zkl lock failed"
    # shellcheck disable=SC2016 # expanded by the command's shell
    "$ZKL" lock "$p" sh -c 'echo "$ZKL_FENCING_TOKEN"' >"$tmp/env2" || fail "zkl lock failed"
    local lpath node token token2
    { read -r lpath; read -r node; read -r token; } <"$tmp/env1"
    read -r token2 <"$tmp/env2"
    [[ $lpath == "$p" ]] || fail "ZKL_LOCK_PATH is '$lpath'"
    [[ $node =~ ^$p/_c_[0-9a-f-]{36}-lock-[0-9]{10}$ ]] || fail "ZKL_LOCK_NODE is '$node'"
    [[ $token =~ ^[0-9]+$ && $token2 =~ ^[0-9]+$ ]] || fail "ZKL_FENCING_TOKEN is '$token', '$token2'"
    ((token2 > token)) || fail "the next holder's token $token2 is not above $token"
}

# A holder whose command runs until $tmp/$1.stop exists; returns when it
# holds (the command touched $tmp/$1.started). Its pid is in $bg.
start_holder() {
    local name=$1 p=$2
    shift 2
    start_zkl lock "$@" "$p" sh -c "touch '$tmp/$name.started'; while [ ! -e '$tmp/$name.stop' ]; do sleep 0.05; done"
    wait_for 20 test -e "$tmp/$name.started" || fail "holder $name never ran"
}

test_nonblock_and_wait_give_up_when_held() {
    local p=$root/held t0 elapsed
    start_holder h "$p"
    local holder=$bg

    t0=$(now_ms)
    "$ZKL" lock -n "$p" touch "$tmp/ran-n"
    local rc=$?
    elapsed=$(($(now_ms) - t0))
    [[ $rc == 1 ]] || fail "-n gave $rc, not 1"
    ((elapsed < 5000)) || fail "-n took $elapsed ms"

    t0=$(now_ms)
    "$ZKL" lock -w 1.5 "$p" touch "$tmp/ran-w"
    rc=$?
    elapsed=$(($(now_ms) - t0))
    [[ $rc == 1 ]] || fail "-w 1.5 gave $rc, not 1"
    ((elapsed >= 1500 && elapsed < 6500)) || fail "-w 1.5 gave up after $elapsed ms"

    "$ZKL" lock -n -E 42 "$p" touch "$tmp/ran-E"
    rc=$?
    [[ $rc == 42 ]] || fail "-n -E 42 gave $rc"
    # A wait long enough to connect on a loaded machine: --wait bounds the
    # connecting too, and a 69 there would say nothing about the conflict.
    "$ZKL" lock --wait 2 --conflict-exit-code 0 "$p" touch "$tmp/ran-E"
    rc=$?
    [[ $rc == 0 ]] || fail "--conflict-exit-code 0 gave $rc"
    [[ ! -e $tmp/ran-n && ! -e $tmp/ran-w && ! -e $tmp/ran-E ]] || fail "a command ran without the lock"
    contenders_are "$p" 1 || fail "the give-ups left nodes behind"

    touch "$tmp/h.stop"
    wait_exit 20 "$holder" || fail "holder did not end"
    [[ $status == 0 ]] || fail "holder gave $status"
    "$ZKL" lock -n "$p" true || fail "-n on a free lock gave $?"
}

test_verbose_tells_wait_and_token() {
    local p=$root/verbose
    "$ZKL" lock -v "$p" true 2>"$tmp/verbose.err" || fail "zkl lock -v failed"
    grep -Eq "acquired $p .* after [0-9.]+ s: token [0-9]+" "$tmp/verbose.err" ||
        fail "-v said: $(cat "$tmp/verbose.err")"
}

test_metrics_file_counts_the_run() {
    local p=$root/metrics
    "$ZKL" lock --metrics "$tmp/metrics.prom" "$p" true || fail "zkl lock --metrics failed"
    grep -qx "zkl_lock_acquired_total{path=\"$p\"} 1" "$tmp/metrics.prom" ||
        fail "no acquisition in: $(head -c 600 "$tmp/metrics.prom")"
    grep -qx "zkl_lock_releases_total{path=\"$p\"} 1" "$tmp/metrics.prom" ||
        fail "no release counted"
    grep -qx "# TYPE zkl_lock_wait_seconds histogram" "$tmp/metrics.prom" || fail "no histogram"
    "$ZKL" lock --metrics - "$p" true 2>"$tmp/metrics.err" || fail "--metrics - failed"
    grep -q "^zkl_lock_wait_seconds_count{path=\"$p\"} 1$" "$tmp/metrics.err" ||
        fail "--metrics - wrote: $(head -c 300 "$tmp/metrics.err")"
}

test_two_processes_never_run_their_commands_at_once() {
    local p=$root/exclusive log=$tmp/exclusive.log i
    local -a ps=()
    for i in 1 2 3 4; do
        # shellcheck disable=SC2016 # expanded by the command's shell
        start_zkl lock "$p" sh -c 'echo "start $1" >>"$2"; sleep 0.2; echo "end $1" >>"$2"' sh "$i" "$log"
        ps+=("$bg")
    done
    for i in "${ps[@]}"; do
        wait_exit 60 "$i" || fail "a zkl lock did not end"
        [[ $status == 0 ]] || fail "a zkl lock gave $status"
    done
    # The log must be start/end pairs of one process each, never interleaved.
    python3 - "$log" <<'EOF' || fail "commands overlapped: $(tr '\n' ' ' <"$log")"
import sys
lines = open(sys.argv[1]).read().split("\n")[:-1]
assert len(lines) == 8, lines
for i in range(0, 8, 2):
    a, b = lines[i].split(), lines[i + 1].split()
    assert a[0] == "start" and b[0] == "end" and a[1] == b[1], lines
EOF
}

test_term_to_zkl_reaches_command_then_lock_is_released() {
    local p=$root/term
    start_zkl lock "$p" sh -c "trap 'touch \"$tmp/term.got\"; exit 5' TERM; touch '$tmp/term.started'; while :; do sleep 0.05; done"
    local z=$bg
    wait_for 20 test -e "$tmp/term.started" || fail "command never ran"
    kill -TERM "$z"
    wait_exit 20 "$z" || fail "zkl did not end after SIGTERM"
    [[ $status == 5 ]] || fail "zkl gave $status, not the command's 5"
    [[ -e $tmp/term.got ]] || fail "the command did not get SIGTERM"
    contenders_are "$p" 0 || fail "the node was left behind"
}

test_ctrl_c_ends_command_and_releases() {
    local p=$root/int
    start_holder int "$p"
    local z=$bg
    kill -INT "$z"
    wait_exit 20 "$z" || fail "zkl did not end after SIGINT"
    [[ $status == 130 ]] || fail "zkl gave $status, not 130"
    contenders_are "$p" 0 || fail "the node was left behind"
}

test_ctrl_c_at_a_terminal_reaches_command_and_zkl_waits_for_it() {
    # At a terminal, Ctrl-C goes to the whole foreground process group:
    # COMMAND gets it from the terminal, zkl does not send it again, and
    # zkl keeps holding the lock while COMMAND runs on. (A second INT sent
    # at once would mostly merge with the first: the log checks only what
    # it can.) Then a SIGTERM sent to zkl alone is passed on.
    python3 - "$ZKL" "$root/tty" "$tmp" <<'EOF' || fail "see above"
import os, pty, signal, sys, time
zkl, path, tmp = sys.argv[1:4]
log, started = tmp + "/tty.log", tmp + "/tty.started"
script = ("trap 'echo INT >>%s' INT; trap 'echo TERM >>%s; exit 5' TERM; touch %s; "
          "while :; do sleep 0.05; done" % (log, log, started))
pid, fd = pty.fork()
if pid == 0:
    os.execv(zkl, [zkl, "lock", path, "sh", "-c", script])

def wait_for(cond, what):
    end = time.monotonic() + 20
    while not cond():
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            sys.exit("timed out waiting for " + what)
        time.sleep(0.05)

def logged():
    try:
        return open(log).read().split()
    except FileNotFoundError:
        return []

wait_for(lambda: os.path.exists(started), "the command to start")
os.write(fd, b"\x03")
wait_for(lambda: "INT" in logged(), "the command to see Ctrl-C")
os.kill(pid, signal.SIGTERM)
end = time.monotonic() + 20
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done == pid:
        break
    if time.monotonic() > end:
        os.kill(pid, signal.SIGKILL)
        sys.exit("zkl did not end")
    try:
        os.read(fd, 4096)  # keep the terminal drained
    except OSError:
        pass
    time.sleep(0.05)
if os.waitstatus_to_exitcode(status) != 5:
    sys.exit("zkl gave %d, not the command's 5" % os.waitstatus_to_exitcode(status))
if logged() != ["INT", "TERM"]:
    sys.exit("the command saw %s, not one INT then TERM" % logged())
EOF
    contenders_are "$root/tty" 0 || fail "the node was left behind"
}

test_signal_while_waiting_leaves_no_node() {
    local p=$root/waiting sig
    start_holder w "$p"
    local holder=$bg
    for sig in TERM INT; do
        # A long session: the node must go at once, not when it expires.
        start_zkl lock --session-timeout 30000 "$p" touch "$tmp/waiter.ran"
        local waiter=$bg
        wait_for 20 contenders_are "$p" 2 || fail "the waiter never queued"
        kill -"$sig" "$waiter"
        wait_exit 10 "$waiter" || fail "a waiter did not stop waiting on SIG$sig"
        local want=$((128 + $(kill -l "$sig")))
        [[ $status == "$want" ]] || fail "a waiter stopped by SIG$sig gave $status, not $want"
        wait_for 5 contenders_are "$p" 1 || fail "the waiter's node outlived it (SIG$sig)"
    done
    [[ ! -e $tmp/waiter.ran ]] || fail "an interrupted waiter ran its command"
    touch "$tmp/w.stop"
    wait_exit 20 "$holder" || fail "holder did not end"
}

test_command_is_terminated_when_the_session_expires() {
    local p=$root/expiry wrap=(setsid)
    # The command records SIGTERM, then keeps running until SIGKILL. While
    # zkl is stopped its guard ends the command, SIGKILL following SIGTERM
    # by a fortieth of the session timeout (100 ms here): the trap runs at
    # once, as the shell waits in `wait`, not after a `sleep` ends.
    start_zkl lock --session-timeout 4000 --kill-after 1 "$p" sh -c "trap ': >\"$tmp/exp.term\"' TERM; touch '$tmp/exp.started'; while :; do sleep 0.05 & wait \$!; done"
    local z=$bg
    wait_for 20 test -e "$tmp/exp.started" || fail "command never ran"
    # Frozen, zkl cannot keep its session: wait until the server expired it.
    kill -STOP "$z"
    wait_for 30 contenders_are "$p" 0 || fail "the session never expired"
    kill -CONT "$z"
    wait_exit 30 "$z" || fail "zkl did not end after its session expired"
    [[ $status == 75 ]] || fail "zkl gave $status, not 75 (lock lost)"
    [[ -e $tmp/exp.term ]] || fail "the command did not get SIGTERM"

    setsid "$ZKL" lock --session-timeout 1000 --kill-after 0 --lost-exit-code 9 "$p" \
        sh -c "touch '$tmp/exp2.started'; while :; do sleep 0.05; done" &
    z=$!
    wait_for 20 test -e "$tmp/exp2.started" || fail "second command never ran"
    kill -STOP "$z"
    wait_for 30 contenders_are "$p" 0 || fail "the second session never expired"
    kill -CONT "$z"
    wait_exit 30 "$z" || fail "zkl did not end after its second session expired"
    [[ $status == 9 ]] || fail "--lost-exit-code 9 gave $status"
}

test_command_is_terminated_when_zookeeper_stays_unreachable() {
    # Stopping the shared server would disturb the other tests: this one
    # runs in a second instance of this script, on a server of its own.
    env -u ZKL_TEST_HOSTS ZKL_BIN="$ZKL" bash "$here/test-cli.sh" private_command_ends_when_servers_are_gone \
        >"$tmp/gone.out" 2>&1 || fail "$(grep -v '^ok' "$tmp/gone.out" | tail -n 8)"
}

# Run by the test above, with a server of its own, which it kills.
private_command_ends_when_servers_are_gone() {
    root_cleanup= # the server will be gone: no cleanup there
    start_zkl lock --session-timeout 2000 --kill-after 1 /gone sh -c "trap ': >\"$tmp/gone.term\"; exit 3' TERM; touch '$tmp/gone.started'; while :; do sleep 0.05; done"
    local z=$bg
    wait_for 20 test -e "$tmp/gone.started" || fail "command never ran"
    "$ZKL_HARNESS" kill-node "$ZKL_TEST_ZKDIR" 1 || fail "could not kill the server"
    # With no server to ask, zkl cannot know whether its session lives on:
    # after a third of the session timeout without a connection the server
    # may have expired it, so zkl counts the lock as lost and ends COMMAND.
    wait_exit 30 "$z" || fail "zkl did not end with its server gone"
    [[ $status == 75 ]] || fail "zkl gave $status, not 75 (lock lost)"
    [[ -e $tmp/gone.term ]] || fail "the command did not get SIGTERM"
}

test_waiter_whose_session_expires_queues_again() {
    local p=$root/requeue wrap=(setsid)
    start_holder rq "$p"
    local holder=$bg
    start_zkl lock --session-timeout 1000 "$p" touch "$tmp/rq.ran"
    local z=$bg
    wait_for 20 contenders_are "$p" 2 || fail "the waiter never queued"
    kill -STOP "$z"
    wait_for 30 contenders_are "$p" 1 || fail "the waiter's session never expired"
    kill -CONT "$z"
    wait_for 30 contenders_are "$p" 2 || fail "the waiter did not queue again"
    touch "$tmp/rq.stop"
    wait_exit 30 "$z" || fail "the waiter did not end"
    [[ $status == 0 ]] || fail "the waiter gave $status"
    [[ -e $tmp/rq.ran ]] || fail "the waiter never ran its command"
    wait_exit 20 "$holder" || fail "holder did not end"
}

test_holders_lists_holder_then_waiters_in_order() {
    local p=$root/holders i
    start_holder hl "$p"
    local holder=$bg
    local -a waiters=()
    for i in 1 2 3; do
        start_zkl lock "$p" true
        waiters+=("$bg")
        wait_for 20 contenders_are "$p" $((i + 1)) || fail "waiter $i never queued"
    done
    "$ZKL" holders "$p" >"$tmp/holders.txt" || fail "holders gave $?"
    "$ZKL" holders --json "$p" >"$tmp/holders.json" || fail "holders --json gave $?"
    python3 -m json.tool "$tmp/holders.json" >/dev/null || fail "holders --json is not JSON"
    # Table: a header, the holder, then three waiters.
    [[ $(wc -l <"$tmp/holders.txt") == 5 ]] || fail "table: $(cat "$tmp/holders.txt")"
    [[ $(awk 'NR == 2 {print $2} NR > 2 {print $2}' "$tmp/holders.txt" | tr '\n' ' ') == "holds waits waits waits " ]] ||
        fail "table states: $(cat "$tmp/holders.txt")"
    grep -q "pid $holder\$" <(sed -n 2p "$tmp/holders.txt") || fail "table's first row is not pid $holder"
    python3 - "$tmp/holders.json" "$holder" "${waiters[@]}" <<'EOF' || fail "json: $(cat "$tmp/holders.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
pids = [int(x) for x in sys.argv[2:]]
cs = doc["contenders"]
assert [c["pid"] for c in cs] == pids, (cs, pids)
assert [c["holds"] for c in cs] == [True, False, False, False]
assert [c["seq"] for c in cs] == sorted(c["seq"] for c in cs)
assert all(c["kind"] == "lock-" and c["token"] > 0 and c["age_ms"] >= 0 for c in cs)
assert all(c["owner"].endswith(" %d" % c["pid"]) for c in cs)
EOF
    touch "$tmp/hl.stop"
    for i in "$holder" "${waiters[@]}"; do
        wait_exit 30 "$i" || fail "a process did not end"
        [[ $status == 0 ]] || fail "a process gave $status"
    done
    "$ZKL" holders "$p" | grep -q "no contenders" || fail "holders of a free lock"
    [[ $(contenders "$p") == 0 ]] || fail "--json of a free lock"
}

test_readers_share_and_writers_exclude() {
    local p=$root/rw
    start_holder r1 "$p" -s
    local r1=$bg
    start_holder r2 "$p" --shared
    local r2=$bg
    [[ -e $tmp/r1.started && -e $tmp/r2.started ]] || fail "two readers did not hold at once"
    local rc
    "$ZKL" lock -x -n "$p" touch "$tmp/rw.ran"
    rc=$?
    [[ $rc == 1 ]] || fail "a writer with -n gave $rc while readers held"
    "$ZKL" lock -n "$p" touch "$tmp/rw.ran"
    rc=$?
    [[ $rc == 1 ]] || fail "a plain lock with -n gave $rc while readers held"
    [[ ! -e $tmp/rw.ran ]] || fail "a command ran beside readers"
    # A queued writer holds back later readers.
    start_zkl lock --exclusive "$p" touch "$tmp/rw.writer"
    local w=$bg
    wait_for 20 contenders_are "$p" 3 || fail "the writer never queued"
    "$ZKL" lock -s -n "$p" true
    rc=$?
    [[ $rc == 1 ]] || fail "a reader overtook a queued writer ($rc)"
    "$ZKL" holders --json "$p" >"$tmp/rw.json" || fail "holders gave $?"
    python3 - "$tmp/rw.json" <<'EOF' || fail "json: $(cat "$tmp/rw.json")"
import json, sys
cs = json.load(open(sys.argv[1]))["contenders"]
assert [(c["kind"], c["holds"]) for c in cs] == [("__READ__", True), ("__READ__", True), ("__WRIT__", False)], cs
EOF
    touch "$tmp/r1.stop" "$tmp/r2.stop"
    for rc in "$r1" "$r2" "$w"; do
        wait_exit 30 "$rc" || fail "a process did not end"
        [[ $status == 0 ]] || fail "a process gave $status"
    done
    [[ -e $tmp/rw.writer ]] || fail "the writer never ran"
}

test_plain_lock_and_reader_exclude_each_other() {
    local p=$root/mixed rc
    start_holder m "$p"
    local m=$bg
    "$ZKL" lock -s -n "$p" true
    rc=$?
    [[ $rc == 1 ]] || fail "a reader with -n gave $rc while a plain lock held"
    touch "$tmp/m.stop"
    wait_exit 20 "$m" || fail "holder did not end"
    start_holder mr "$p" -s
    local r=$bg
    "$ZKL" lock -n "$p" true
    rc=$?
    [[ $rc == 1 ]] || fail "a plain lock with -n gave $rc while a reader held"
    touch "$tmp/mr.stop"
    wait_exit 20 "$r" || fail "reader did not end"
    "$ZKL" lock -n "$p" true || fail "a plain lock on the free path gave $?"
}

test_semaphore_admits_n_at_once() {
    local p=$root/sem rc
    start_holder s1 "$p" --semaphore 2
    local s1=$bg
    start_holder s2 "$p" --semaphore 2
    local s2=$bg
    [[ -e $tmp/s1.started && -e $tmp/s2.started ]] || fail "two leases were not held at once"
    "$ZKL" lock --semaphore 2 -n "$p" touch "$tmp/s3.ran"
    rc=$?
    [[ $rc == 1 ]] || fail "a third lease with -n gave $rc"
    [[ ! -e $tmp/s3.ran ]] || fail "a third command ran"
    "$ZKL" lock --semaphore 3 -n "$p" true 2>/dev/null
    rc=$?
    [[ $rc == 78 ]] || fail "another limit gave $rc, not 78"
    start_zkl lock --semaphore 2 "$p" touch "$tmp/s3.ran"
    local s3=$bg
    wait_for 20 contenders_are "$p" 3 || fail "the third never queued"
    "$ZKL" holders "$p" | grep -q "2 of 2 leases held" || fail "holders: $("$ZKL" holders "$p")"
    "$ZKL" holders --json "$p" >"$tmp/sem.json" || fail "holders gave $?"
    python3 - "$tmp/sem.json" "$s1" "$s2" "$s3" <<'EOF' || fail "json: $(cat "$tmp/sem.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["max_leases"] == 2
cs = doc["contenders"]
assert [c["holds"] for c in cs] == [True, True, False], cs
assert [c["pid"] for c in cs] == [int(x) for x in sys.argv[2:]], cs
assert [c.get("leases") for c in cs[:2]] == [1, 1], cs
EOF
    touch "$tmp/s1.stop"
    wait_for 20 test -e "$tmp/s3.ran" || fail "the third never ran after a lease was given back"
    touch "$tmp/s2.stop"
    for rc in "$s1" "$s2" "$s3"; do
        wait_exit 30 "$rc" || fail "a process did not end"
        [[ $status == 0 ]] || fail "a process gave $status"
    done
}

test_unavailable_servers_give_69() {
    local rc
    "$ZKL" lock -S 127.0.0.1:1 --session-timeout 1000 /x true 2>"$tmp/unavail.err"
    rc=$?
    [[ $rc == 69 ]] || fail "lock gave $rc, not 69"
    "$ZKL" holders -S 127.0.0.1:1 --session-timeout 1000 /x 2>/dev/null
    rc=$?
    [[ $rc == 69 ]] || fail "holders gave $rc, not 69"
    grep -q "^zkl: " "$tmp/unavail.err" || fail "no message"
}

# Without TLS and SASL in the build (Debian's libzookeeper_mt), their
# options are refused with the way to get them (69); with them, files that
# do not exist are bad usage (64). Nothing is sent either way.
test_tls_and_sasl_options_need_a_build_with_them() {
    local rc cmd
    for cmd in "lock /x true" "holders /x" "break /x" "revoke /x"; do
        # shellcheck disable=SC2086 # cmd is the command and its arguments
        "$ZKL" ${cmd%% *} --tls-ca "$tmp/no-ca.pem" --tls-cert "$tmp/no.pem" --tls-key "$tmp/no.key" \
            ${cmd#* } 2>"$tmp/tls.err"
        rc=$?
        if grep -q "without TLS" "$tmp/tls.err"; then
            [[ $rc == 69 ]] || fail "$cmd with TLS options gave $rc, not 69"
            grep -q -- "--with-zookeeper" "$tmp/tls.err" || fail "no way out: $(cat "$tmp/tls.err")"
        else
            [[ $rc == 64 ]] || fail "$cmd with missing TLS files gave $rc: $(cat "$tmp/tls.err")"
        fi
        ZKL_SASL_MECH=DIGEST-MD5 ZKL_SASL_USER=u ZKL_SASL_PASSWORD_FILE=$tmp/no.pw \
            "$ZKL" ${cmd%% *} ${cmd#* } 2>"$tmp/sasl.err"
        rc=$?
        if grep -q "without SASL" "$tmp/sasl.err"; then
            [[ $rc == 69 ]] || fail "$cmd with ZKL_SASL_* gave $rc, not 69"
        else
            [[ $rc == 64 ]] || fail "$cmd with a missing password file gave $rc: $(cat "$tmp/sasl.err")"
        fi
    done
    "$ZKL" lock --acl "sasl:alice:rwxyz" /x true 2>"$tmp/acl.err"
    rc=$?
    [[ $rc == 64 ]] && grep -q "rwcda" "$tmp/acl.err" || fail "a bad --acl gave $rc: $(cat "$tmp/acl.err")"
    # Entries that would shut zkl out of its own lock path, or that the
    # server refuses: said before anything is created.
    local acl
    for acl in "world:anyone:rc:DELETE" "world:anyone:r:CREATE" "ip:999.1.1.1:rwcda:address" \
        "auth::rwcda:credentials" "sasl:alice smith:rwcda:white space"; do
        "$ZKL" lock --acl "${acl%:*}" "$root/acl/lock" true 2>"$tmp/acl.err"
        rc=$?
        [[ $rc == 64 ]] && grep -q "${acl##*:}" "$tmp/acl.err" ||
            fail "--acl ${acl%:*} gave $rc: $(cat "$tmp/acl.err")"
    done
}

test_paths_say_why_and_break_leaves_persistent_nodes() {
    local rc p bad
    # A segment named like a contender's node, and characters the server
    # refuses: refused with the reason, before or after connecting.
    for bad in "$root/cn/jobs/job-lock-0000000000:contender" $'/x/\xf0\x9f\x94\x92:U+1F512' \
        $'/x/\xef\xbf\xbf:U+FFFF' $'/x/\xc0\xaf:not UTF-8' $'/x/\xed\xa0\x80:not UTF-8'; do
        for cmd in lock holders; do
            if [[ $cmd == lock ]]; then
                "$ZKL" lock "${bad%:*}" true 2>"$tmp/path.err"
            else
                "$ZKL" holders "${bad%:*}" 2>"$tmp/path.err"
            fi
            rc=$?
            [[ $rc == 64 ]] && grep -q "${bad##*:}" "$tmp/path.err" ||
                fail "$cmd ${bad%:*} gave $rc: $(cat "$tmp/path.err")"
        done
    done
    # A persistent child named like a contender is no holder to break.
    p=$root/cn2
    for n in /zkl-cli-test "$root" "$p" "$p/job-lock-0000000000"; do
        python3 "$here/zknode.py" "$ZKL_TEST_HOSTS" create "$n" "" >/dev/null 2>&1
    done
    "$ZKL" break "$p" >"$tmp/break.out" 2>"$tmp/break.err"
    rc=$?
    [[ $rc == 1 ]] && grep -q "persistent" "$tmp/break.err" ||
        fail "break of a persistent child gave $rc: $(cat "$tmp/break.out" "$tmp/break.err")"
    python3 "$here/zknode.py" "$ZKL_TEST_HOSTS" set "$p/job-lock-0000000000" "" ||
        fail "break deleted a persistent node"
}

test_bad_usage_gives_64_and_a_short_message() {
    local -a cases=(
        ""
        "frob"
        "lock"
        "lock relative true"
        "lock -w abc /x true"
        "lock -w -1 /x true"
        "lock -n -w 1 /x true"
        "lock --connect-timeout 0 /x true"
        "lock --connect-timeout abc /x true"
        "lock -E 256 /x true"
        "lock --session-timeout 0 /x true"
        "lock --no-such-option /x true"
        "lock /x -c"
        "lock -s -x /x true"
        "holders"
        "holders a"
        "holders /x /y"
        "lock /a//b true"
        "holders /zookeeper/x"
        "break"
        "break relative"
        "break /x n1 n2"
        "revoke"
        "revoke /x/"
    )
    local args rc
    for args in "${cases[@]}"; do
        # shellcheck disable=SC2086 # word splitting is wanted here
        "$ZKL" $args >"$tmp/usage.out" 2>"$tmp/usage.err"
        rc=$?
        [[ $rc == 64 ]] || fail "'zkl $args' gave $rc"
        [[ -s $tmp/usage.err && $(wc -l <"$tmp/usage.err") -le 3 && ! -s $tmp/usage.out ]] ||
            fail "'zkl $args' said: $(cat "$tmp/usage.out" "$tmp/usage.err")"
    done
    # Into a file: grep -q would stop reading early, and with pipefail
    # zkl's SIGPIPE on the rest of a help longer than a pipe write fails.
    "$ZKL" --help >"$tmp/help.txt" && grep -q "Exit status" "$tmp/help.txt" || fail "--help"
    "$ZKL" --version | grep -Eq "^zkl [0-9]+\.[0-9]+\.[0-9]+" || fail "--version"
}

# ---- COMMAND's process group ---------------------------------------------------

# start_family NAME ARGS...: `zkl lock ARGS... sh -c` whose shell starts a
# grandchild (sleep), writes its pid to $tmp/NAME.gc and waits for it, as
# a wrapper script does. The zkl's pid is in $bg, the grandchild's in $gc.
gc=
start_family() {
    local name=$1
    shift
    # shellcheck disable=SC2016 # expanded by the command's shell
    start_zkl lock "$@" sh -c 'sleep 1000 & echo $! >"$0"; wait' "$tmp/$name.gc"
    wait_for 20 test -s "$tmp/$name.gc" || fail "$name: the grandchild never started"
    read -r gc <"$tmp/$name.gc"
    pids+=("$gc")
}
alive() { kill -0 "$1" 2>/dev/null; }
dead() { ! alive "$1"; }

test_loss_revocation_and_signals_reach_commands_children() {
    local p=$root/family
    start_family lost "$p"
    local z=$bg
    "$ZKL" break "$p" >/dev/null || fail "break gave $?"
    wait_exit 20 "$z" || fail "zkl did not end after the break"
    [[ $status == 75 ]] || fail "zkl gave $status after the break, not 75"
    wait_for 10 dead "$gc" || fail "the grandchild outlived the lost lock"

    start_family term "$p"
    z=$bg
    kill -TERM "$z"
    wait_exit 20 "$z" || fail "zkl did not end after SIGTERM"
    wait_for 10 dead "$gc" || fail "the grandchild outlived a SIGTERM sent to zkl"

    start_family revoked --revocable "$p"
    z=$bg
    "$ZKL" revoke -w 60 "$p" >/dev/null || fail "revoke gave $?"
    wait_exit 20 "$z" || fail "zkl did not end after the revocation"
    wait_for 10 dead "$gc" || fail "the grandchild outlived the revocation"
    contenders_are "$p" 0 || fail "a node was left behind"

    # --foreground: COMMAND stays in zkl's process group, and only its own
    # process is signalled.
    start_family fg --foreground "$p"
    z=$bg
    "$ZKL" break "$p" >/dev/null || fail "break gave $?"
    wait_exit 20 "$z" || fail "zkl --foreground did not end after the break"
    [[ $status == 75 ]] || fail "zkl --foreground gave $status, not 75"
    alive "$gc" || fail "--foreground signalled the grandchild too"
    kill -KILL "$gc" 2>/dev/null
}

# ---- hold mode -------------------------------------------------------------

# Start `zkl lock ARGS` in hold mode with stdin from fifo $tmp/$1.in (fd 7
# of this shell writes into it) and stdout into $tmp/$1.out; returns once
# zkl printed its line. Its pid is in $bg.
start_hold() {
    local name=$1
    shift
    mkfifo "$tmp/$name.in"
    "${wrap[@]}" env --default-signal=INT "$ZKL" lock "$@" <"$tmp/$name.in" >"$tmp/$name.out" &
    bg=$!
    exec 7>"$tmp/$name.in"
    wait_for 20 test -s "$tmp/$name.out" || fail "hold mode printed nothing"
}

test_hold_mode_prints_node_and_token_and_holds_until_stdin_ends() {
    local p=$root/hold node token rc
    start_hold hold "$p"
    local z=$bg
    read -r node token <"$tmp/hold.out"
    [[ $node =~ ^$p/_c_[0-9a-f-]{36}-lock-[0-9]{10}$ ]] || fail "node is '$node'"
    [[ $token =~ ^[0-9]+$ ]] || fail "token is '$token'"
    [[ $(wc -l <"$tmp/hold.out") == 1 ]] || fail "more than one line: $(cat "$tmp/hold.out")"
    "$ZKL" lock -n "$p" true
    rc=$?
    [[ $rc == 1 ]] || fail "the lock was not held in hold mode ($rc)"
    "$ZKL" holders --json "$p" >"$tmp/hold.json"
    python3 - "$tmp/hold.json" "$node" "$token" <<'PY' || fail "holders: $(cat "$tmp/hold.json")"
import json, sys
cs = json.load(open(sys.argv[1]))["contenders"]
assert len(cs) == 1 and cs[0]["holds"], cs
assert sys.argv[2].endswith("/" + cs[0]["node"]) and cs[0]["token"] == int(sys.argv[3]), cs
PY
    kill -0 "$z" 2>/dev/null || fail "zkl ended while stdin was open"
    exec 7>&- # end of stdin: release
    wait_exit 20 "$z" || fail "zkl did not end at the end of its stdin"
    [[ $status == 0 ]] || fail "hold mode gave $status at the end of stdin"
    contenders_are "$p" 0 || fail "the node was left behind"
}

# Hold mode with stdin at its end from the start (/dev/null, as for `zkl
# lock PATH &` in a script) releases at once, as before, but says so; with
# --until-signal it holds until a signal whatever stdin does.
test_hold_mode_with_stdin_at_its_end_warns_and_until_signal_holds() {
    local p=$root/holdnull rc
    "$ZKL" lock "$p" </dev/null >"$tmp/hn.out" 2>"$tmp/hn.err"
    rc=$?
    [[ $rc == 0 ]] || fail "hold mode on /dev/null gave $rc"
    grep -q "standard input is at its end" "$tmp/hn.err" && grep -q -- "--until-signal" "$tmp/hn.err" ||
        fail "no warning: $(cat "$tmp/hn.err")"
    contenders_are "$p" 0 || fail "the node was left behind"
    # The background job of a script gets /dev/null as its stdin too.
    bash -c '"$1" lock "$2" & wait' sh "$ZKL" "$p" >/dev/null 2>"$tmp/hn.err"
    grep -q "standard input is at its end" "$tmp/hn.err" || fail "background job: $(cat "$tmp/hn.err")"
    # A pipe a coprocess writes into is no warning.
    echo | "$ZKL" lock "$p" >/dev/null 2>"$tmp/hn.err"
    [[ ! -s $tmp/hn.err ]] || fail "a pipe was warned about: $(cat "$tmp/hn.err")"

    # The redirections truncate in the child: without this the wait below
    # could read the last run's output.
    rm -f "$tmp/hn.out" "$tmp/hn.err"
    env --default-signal=INT "$ZKL" lock --until-signal "$p" </dev/null >"$tmp/hn.out" 2>"$tmp/hn.err" &
    local z=$!
    pids+=("$z")
    wait_for 20 test -s "$tmp/hn.out" || fail "--until-signal printed nothing"
    local end=$(($(now_ms) + 500))
    while (($(now_ms) < end)); do
        kill -0 "$z" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$z" 2>/dev/null || fail "--until-signal on /dev/null did not hold"
    contenders_are "$p" 1 || fail "--until-signal holds no node"
    [[ ! -s $tmp/hn.err ]] || fail "--until-signal warned: $(cat "$tmp/hn.err")"
    kill -TERM "$z"
    wait_exit 20 "$z" || fail "--until-signal did not end on SIGTERM"
    [[ $status == 0 ]] || fail "--until-signal gave $status on SIGTERM"
    contenders_are "$p" 0 || fail "--until-signal left its node"
    "$ZKL" lock --until-signal "$p" true 2>/dev/null
    rc=$?
    [[ $rc == 64 ]] || fail "--until-signal with a COMMAND gave $rc, not 64"
}

test_hold_mode_releases_on_term_int_and_hup() {
    local p=$root/holdsig sig
    for sig in TERM INT HUP; do
        start_hold "hs$sig" "$p"
        local z=$bg
        kill -"$sig" "$z"
        wait_exit 20 "$z" || fail "hold mode did not end on SIG$sig"
        [[ $status == 0 ]] || fail "hold mode gave $status on SIG$sig"
        exec 7>&-
        contenders_are "$p" 0 || fail "the node was left behind (SIG$sig)"
    done
}

test_hold_mode_exits_75_when_the_lock_is_lost() {
    local p=$root/holdlost wrap=(setsid)
    start_hold hl --session-timeout 1000 "$p"
    local z=$bg
    kill -STOP "$z"
    wait_for 30 contenders_are "$p" 0 || fail "the session never expired"
    kill -CONT "$z"
    wait_exit 30 "$z" || fail "hold mode did not end after its session expired"
    [[ $status == 75 ]] || fail "hold mode gave $status, not 75"
    exec 7>&-
}

# ---- connecting --------------------------------------------------------------

# unavailable_within MS WHAT COMMAND...: COMMAND (a zkl lock against no
# server) exits 69 within MS ms; its stderr is in $tmp/conn.err.
unavailable_within() {
    local ms=$1 what=$2 t0 rc elapsed
    shift 2
    t0=$(now_ms)
    "$@" 2>"$tmp/conn.err"
    rc=$?
    elapsed=$(($(now_ms) - t0))
    [[ $rc == 69 ]] || fail "$what gave $rc, not 69"
    ((elapsed < ms)) || fail "$what took $elapsed ms"
}

test_nonblock_and_wait_bound_the_connecting() {
    local hosts rc
    # Refused at once, and (if routed at all) an address that never answers.
    for hosts in 127.0.0.1:1 192.0.2.1:2181; do
        # Unbounded, zkl would try for a session timeout (10 s) and more:
        # the limits below leave a loaded machine room and still catch that.
        unavailable_within 5000 "-n against $hosts" \
            env -u ZKL_CONNECT_TIMEOUT "$ZKL" lock -n -S "$hosts" /x true
        grep -q "$hosts" "$tmp/conn.err" || fail "no message naming $hosts: $(cat "$tmp/conn.err")"
        unavailable_within 6000 "-w 1.5 against $hosts" \
            env -u ZKL_CONNECT_TIMEOUT "$ZKL" lock -w 1.5 -S "$hosts" /x true
        # --connect-timeout bounds connecting alone, within a long -w too,
        # and ZKL_CONNECT_TIMEOUT stands in for it.
        unavailable_within 5000 "--connect-timeout 0.5 against $hosts" \
            "$ZKL" lock --connect-timeout 0.5 -S "$hosts" /x true
        grep -q "within 0.5 s" "$tmp/conn.err" || fail "message: $(cat "$tmp/conn.err")"
        unavailable_within 5000 "ZKL_CONNECT_TIMEOUT=0.5 -w 60 against $hosts" \
            env ZKL_CONNECT_TIMEOUT=0.5 "$ZKL" lock -w 60 -S "$hosts" /x true
    done
    # With a server that answers, -n with a long connect bound is -n.
    local p=$root/connect-n
    start_holder cn "$p"
    local holder=$bg
    "$ZKL" lock -n --connect-timeout 30 "$p" true
    rc=$?
    [[ $rc == 1 ]] || fail "-n --connect-timeout 30 on a held lock gave $rc, not 1"
    touch "$tmp/cn.stop"
    wait_exit 20 "$holder" || fail "holder did not end"
    "$ZKL" lock -n --connect-timeout 30 "$p" true || fail "-n --connect-timeout 30 on a free lock gave $?"
}

threads_of() { [[ $(awk '/^Threads:/ {print $2}' "/proc/$1/status" 2>/dev/null) -ge $2 ]]; }

test_a_signal_while_connecting_ends_zkl_at_once() {
    local sig want
    for sig in INT TERM; do
        start_zkl lock -S 192.0.2.1:2181,127.0.0.1:1 /x true
        local z=$bg
        # Connecting: the connector thread runs beside the main thread.
        wait_for 10 threads_of "$z" 2 || fail "zkl never started connecting"
        kill -"$sig" "$z"
        wait_exit 5 "$z" || fail "zkl still waits 5 s after SIG$sig while connecting"
        want=$((128 + $(kill -l "$sig")))
        [[ $status == "$want" ]] || fail "SIG$sig while connecting gave $status, not $want"
    done
}

# ---- break and revoke --------------------------------------------------------------

test_break_deletes_the_holders_node_and_lets_the_next_in() {
    local p=$root/break rc
    start_holder bk "$p"
    local holder=$bg
    start_zkl lock "$p" touch "$tmp/bk.next"
    local waiter=$bg
    wait_for 20 contenders_are "$p" 2 || fail "the waiter never queued"
    "$ZKL" holders --json "$p" >"$tmp/bk.json"
    local node
    node=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["contenders"][0]["node"])' "$tmp/bk.json")
    "$ZKL" break "$p" >"$tmp/bk.out" 2>"$tmp/bk.err"
    rc=$?
    [[ $rc == 0 ]] || fail "break gave $rc: $(cat "$tmp/bk.err")"
    grep -q "^deleted $p/$node (holder, token [0-9]*, owner .* $holder)\$" "$tmp/bk.out" ||
        fail "break said: $(cat "$tmp/bk.out")"
    wait_exit 20 "$waiter" || fail "the waiter did not get the lock after the break"
    [[ $status == 0 && -e $tmp/bk.next ]] || fail "the waiter gave $status"
    contenders_are "$p" 0 || fail "nodes left after the break"
    "$ZKL" break "$p" 2>"$tmp/bk.err"
    rc=$?
    [[ $rc == 1 ]] || fail "break of a free lock gave $rc, not 1"
    grep -q "nothing to break" "$tmp/bk.err" || fail "break said: $(cat "$tmp/bk.err")"
    touch "$tmp/bk.stop"
    wait_exit 20 "$holder" || fail "the broken holder did not end"
}

test_break_of_a_named_node() {
    local p=$root/breaknode rc node token
    start_hold bn "$p"
    local z=$bg
    read -r node token <"$tmp/bn.out"
    "$ZKL" break "$p" "$p/no-such-node-0000000001" 2>/dev/null
    rc=$?
    [[ $rc == 1 ]] || fail "break of a missing node gave $rc, not 1"
    contenders_are "$p" 1 || fail "a missing node's break deleted something"
    "$ZKL" break "$p" "$node" >"$tmp/bn.out2" || fail "break of $node gave $?"
    grep -q "^deleted $node (holder, token $token," "$tmp/bn.out2" || fail "break said: $(cat "$tmp/bn.out2")"
    contenders_are "$p" 0 || fail "the named node is still there"
    exec 7>&-
    wait_exit 20 "$z" || fail "the broken holder did not end"
}

test_revoke_says_whether_the_holder_let_go_and_keeps_the_owner() {
    local p=$root/revoke rc node token
    "$ZKL" revoke "$p" 2>"$tmp/rv.err"
    rc=$?
    [[ $rc == 1 ]] || fail "revoke of a free lock gave $rc, not 1"
    grep -q "nothing to revoke" "$tmp/rv.err" || fail "revoke said: $(cat "$tmp/rv.err")"
    start_hold rv "$p"
    local z=$bg
    read -r node token <"$tmp/rv.out"
    start_zkl lock "$p" true
    local waiter=$bg
    wait_for 20 contenders_are "$p" 2 || fail "the waiter never queued"
    # A holder that does not listen: told so, and its owner stays visible.
    "$ZKL" revoke -w 1 "$p" >"$tmp/rv.out2" 2>"$tmp/rv.err"
    rc=$?
    [[ $rc == 2 ]] || fail "revoke of a holder that did not let go gave $rc, not 2"
    grep -q "did not let go within 1 s: $node" "$tmp/rv.err" || fail "revoke said: $(cat "$tmp/rv.err")"
    "$ZKL" holders --json "$p" >"$tmp/rv.json"
    python3 - "$tmp/rv.json" "$z" <<'PY' || fail "holders after revoke: $(cat "$tmp/rv.json")"
import json, sys
cs = json.load(open(sys.argv[1]))["contenders"]
assert [c["holds"] for c in cs] == [True, False], cs
assert cs[0]["pid"] == int(sys.argv[2]), cs              # the owner, restored
assert not cs[0].get("revocation_requested"), cs
PY
    # -w 0: ask and go; the request stays in the node, and holders says so.
    "$ZKL" revoke -w 0 "$p" "$node" >"$tmp/rv.out3" || fail "revoke -w 0 gave $?"
    grep -q "asked" "$tmp/rv.out3" || fail "revoke -w 0 said: $(cat "$tmp/rv.out3")"
    "$ZKL" holders --json "$p" >"$tmp/rv.json"
    python3 - "$tmp/rv.json" <<'PY' || fail "holders after revoke -w 0: $(cat "$tmp/rv.json")"
import json, sys
cs = json.load(open(sys.argv[1]))["contenders"]
assert cs[0]["revocation_requested"] is True and cs[0]["owner"] == "__REVOKE__", cs
assert not cs[1].get("revocation_requested"), cs     # the waiter is not asked
PY
    "$ZKL" holders "$p" | sed -n 2p | grep -q "asked to let go" || fail "table: $("$ZKL" holders "$p")"
    "$ZKL" revoke "$p" "other/x" 2>/dev/null
    rc=$?
    [[ $rc == 64 ]] || fail "revoke of a node not under PATH gave $rc"
    exec 7>&-
    wait_exit 20 "$z" || fail "the holder did not end"
    wait_exit 20 "$waiter" || fail "the waiter did not end"

    # A holder that listens lets go, and revoke says so.
    start_zkl lock --revocable "$p" sleep 60
    local r=$bg
    wait_for 20 contenders_are "$p" 1 || fail "the revocable holder never held"
    "$ZKL" revoke -w 60 "$p" >"$tmp/rv.out4" 2>"$tmp/rv.err"
    rc=$?
    [[ $rc == 0 ]] || fail "revoke of a revocable holder gave $rc: $(cat "$tmp/rv.err")"
    grep -q "^let go: $p/" "$tmp/rv.out4" || fail "revoke said: $(cat "$tmp/rv.out4")"
    wait_exit 20 "$r" || fail "the revocable holder did not end"

    # A semaphore's leases cannot be revoked: said at once, nothing written.
    local sp=$root/revoke-sem
    start_holder rs "$sp" --semaphore 2
    local h=$bg
    "$ZKL" revoke "$sp" 2>"$tmp/rv.err"
    rc=$?
    [[ $rc == 2 ]] || fail "revoke of a semaphore gave $rc, not 2"
    grep -q "semaphore" "$tmp/rv.err" || fail "revoke of a semaphore said: $(cat "$tmp/rv.err")"
    "$ZKL" holders --json "$sp" | python3 -c 'import json,sys; cs=json.load(sys.stdin)["contenders"]; assert cs[0]["owner"] != "__REVOKE__", cs' ||
        fail "the lease's owner was overwritten"
    touch "$tmp/rs.stop"
    wait_exit 20 "$h" || fail "the lease holder did not end"
}

# ---- messages ------------------------------------------------------------------

test_verbose_conflict_names_the_holder() {
    local p=$root/vconflict rc
    start_holder vc "$p"
    local holder=$bg
    "$ZKL" lock -v -n "$p" true 2>"$tmp/vc.err"
    rc=$?
    [[ $rc == 1 ]] || fail "-n gave $rc"
    grep -q "$p is held by .* $holder (node .*, token [0-9]*)" "$tmp/vc.err" ||
        fail "-v said: $(cat "$tmp/vc.err")"
    touch "$tmp/vc.stop"
    wait_exit 20 "$holder" || fail "holder did not end"
}

test_errors_say_what_was_wrong() {
    local rc
    ZKL_AUTH=secretnocolon "$ZKL" holders /x >/dev/null 2>"$tmp/m.err"
    rc=$?
    [[ $rc == 64 ]] || fail "a malformed ZKL_AUTH gave $rc"
    grep -q "ZKL_AUTH must be user:password" "$tmp/m.err" || fail "ZKL_AUTH: $(cat "$tmp/m.err")"
    ! grep -q secretnocolon "$tmp/m.err" || fail "the credential was printed"
    "$ZKL" lock -S no-such-host.invalid:2181 /x true 2>"$tmp/m.err"
    rc=$?
    [[ $rc == 69 ]] || fail "an unresolvable host gave $rc, not 69"
    grep -q "host 'no-such-host.invalid' does not resolve" "$tmp/m.err" || fail "resolve: $(cat "$tmp/m.err")"
    "$ZKL" lock /a/./b true 2>"$tmp/m.err"
    rc=$?
    [[ $rc == 64 ]] || fail "a bad PATH gave $rc"
    grep -q "bad PATH '/a/./b': it has a '.' or '..' segment" "$tmp/m.err" || fail "path: $(cat "$tmp/m.err")"
    local p=$root/semlimit
    start_holder sl "$p" --semaphore 2
    local h=$bg
    "$ZKL" lock --semaphore 3 -n "$p" true 2>"$tmp/m.err"
    rc=$?
    [[ $rc == 78 ]] || fail "another limit gave $rc"
    grep -q "limit on the server is 2" "$tmp/m.err" || fail "limit: $(cat "$tmp/m.err")"
    touch "$tmp/sl.stop"
    wait_exit 20 "$h" || fail "holder did not end"
}

test_holders_json_passes_utf8_and_marks_unreadable_nodes() {
    local p=$root/json zk=$here/zknode.py
    python3 "$zk" "$ZKL_TEST_HOSTS" create "/zkl-cli-test" "" >/dev/null 2>&1
    python3 "$zk" "$ZKL_TEST_HOSTS" create "$root" "" >/dev/null 2>&1
    python3 "$zk" "$ZKL_TEST_HOSTS" create "$p" "" >/dev/null || fail "cannot create $p"
    local a=_c_00000000-0000-4000-8000-000000000001-lock-0000000001
    local b=_c_00000000-0000-4000-8000-000000000002-lock-0000000002
    # "héllo ✓ " + an invalid byte 0xff + a control byte 0x01 + " 42"
    python3 "$zk" "$ZKL_TEST_HOSTS" create "$p/$a" "68c3a96c6c6f20e29c9320ff01203432" >/dev/null ||
        fail "cannot create $a"
    python3 "$zk" "$ZKL_TEST_HOSTS" create "$p/$b" "736563726574" unreadable >/dev/null ||
        fail "cannot create $b"
    "$ZKL" holders --json "$p" >"$tmp/u.json" || fail "holders --json gave $?"
    python3 -m json.tool "$tmp/u.json" >/dev/null || fail "not JSON: $(cat "$tmp/u.json")"
    grep -q 'héllo ✓ \\ufffd\\u0001 42' "$tmp/u.json" || fail "UTF-8 not passed through: $(cat "$tmp/u.json")"
    python3 - "$tmp/u.json" <<'PY' || fail "json: $(cat "$tmp/u.json")"
import json, sys
cs = json.load(open(sys.argv[1], encoding="utf-8"))["contenders"]
assert [c["holds"] for c in cs] == [True, False], cs
# The byte that is not UTF-8 shows as U+FFFD, never as a character it is
# not, and owner_hex gives every byte as it is.
assert cs[0]["owner"] == "h\u00e9llo \u2713 \ufffd\u0001 42" and cs[0]["readable"], cs
assert cs[0]["owner_hex"] == "68c3a96c6c6f20e29c9320ff01203432", cs
assert cs[0]["pid"] == 42 and cs[0]["host"] == "h\u00e9llo \u2713 \ufffd\u0001", cs
assert "owner_hex" not in cs[1], cs
assert cs[1]["readable"] is False and cs[1]["owner"] is None and cs[1]["token"] > 0, cs
PY
    "$ZKL" holders "$p" >"$tmp/u.txt" || fail "holders gave $?"
    grep -q "unreadable" "$tmp/u.txt" || fail "table: $(cat "$tmp/u.txt")"
    python3 "$zk" "$ZKL_TEST_HOSTS" delete "$p/$a"
    python3 "$zk" "$ZKL_TEST_HOSTS" delete "$p/$b"
    python3 "$zk" "$ZKL_TEST_HOSTS" delete "$p"
}

# A --semaphore N that disagrees with the limit on the server is 78 at
# once, however zkl waits and whoever waits in the semaphore's gate.
test_semaphore_limit_mismatch_is_78_with_waiters_too() {
    local p=$root/semgate rc args t0
    start_holder g1 "$p" --semaphore 2
    local g1=$bg
    start_holder g2 "$p" --semaphore 2
    local g2=$bg
    start_zkl lock --semaphore 2 "$p" true
    local g3=$bg
    wait_for 20 contenders_are "$p" 3 || fail "the third never queued"
    for args in "-n" "-w 10" ""; do
        t0=$(now_ms)
        # shellcheck disable=SC2086 # word splitting is wanted here
        timeout 20 "$ZKL" lock --semaphore 3 $args "$p" touch "$tmp/gate.ran" 2>"$tmp/gate.err"
        rc=$?
        [[ $rc == 78 ]] || fail "--semaphore 3 ${args:-(blocking)} with a waiter in the gate gave $rc"
        # A zkl that waited first would take 10 s or more.
        (($(now_ms) - t0 < 8000)) || fail "--semaphore 3 ${args:-(blocking)} took $(($(now_ms) - t0)) ms"
        grep -q "limit on the server is 2" "$tmp/gate.err" || fail "said: $(cat "$tmp/gate.err")"
    done
    [[ ! -e $tmp/gate.ran ]] || fail "a command ran with the wrong limit"
    contenders_are "$p" 3 || fail "the refused attempts left nodes"
    touch "$tmp/g1.stop" "$tmp/g2.stop"
    for rc in "$g1" "$g2" "$g3"; do
        wait_exit 30 "$rc" || fail "a process did not end"
    done
}

# A server list zkl cannot use is refused at once, naming what is wrong.
test_bad_server_lists_say_what_is_wrong() {
    local hosts rc t0
    for hosts in 127.0.0.1:99999 127.0.0.1:0 '[::1]:2181' 127.0.0.1 127.0.0.1:2181//x; do
        t0=$(now_ms)
        "$ZKL" lock -S "$hosts" /x true 2>"$tmp/bs.err"
        rc=$?
        [[ $rc == 64 ]] || fail "-S $hosts gave $rc, not 64"
        (($(now_ms) - t0 < 2000)) || fail "-S $hosts was refused only after $(($(now_ms) - t0)) ms"
        grep -qF "'$hosts'" "$tmp/bs.err" || fail "-S $hosts: $(cat "$tmp/bs.err")"
    done
    grep -q "port 2181//x\|chroot '//x'" "$tmp/bs.err" || fail "chroot: $(cat "$tmp/bs.err")"
}

# With stdout closed, output that cannot be written is an error (74, "write
# error"), as in coreutils; a command that writes nothing of its own (lock
# with COMMAND) is not disturbed.
test_output_to_a_closed_stdout_is_an_error() {
    local p=$root/closedout rc
    "$ZKL" holders "$p" >&- 2>"$tmp/co.err"
    rc=$?
    [[ $rc == 74 ]] || fail "holders >&- gave $rc, not 74"
    grep -q "^zkl: write error" "$tmp/co.err" || fail "holders >&- said: $(cat "$tmp/co.err")"
    "$ZKL" --version >&- 2>/dev/null
    rc=$?
    [[ $rc == 74 ]] || fail "--version >&- gave $rc, not 74"
    "$ZKL" lock "$p" </dev/null >&- 2>"$tmp/co.err"
    rc=$?
    [[ $rc == 74 ]] || fail "hold mode >&- gave $rc, not 74: $(cat "$tmp/co.err")"
    contenders_are "$p" 0 || fail "hold mode with stdout closed left its node"
    "$ZKL" lock "$p" sh -c 'exit 3' >&-
    rc=$?
    [[ $rc == 3 ]] || fail "lock COMMAND >&- gave $rc, not COMMAND's 3"
    start_holder co "$p"
    local h=$bg
    "$ZKL" break "$p" >&- 2>"$tmp/co.err"
    rc=$?
    [[ $rc == 74 ]] || fail "break >&- gave $rc, not 74: $(cat "$tmp/co.err")"
    # One message, with the true reason.
    "$ZKL" holders "$p" >&- 2>"$tmp/co.err"
    rc=$?
    [[ $rc == 74 && $(wc -l <"$tmp/co.err") == 1 ]] && grep -q "Bad file descriptor" "$tmp/co.err" ||
        fail "holders >&- gave $rc: $(cat "$tmp/co.err")"
    touch "$tmp/co.stop"
    wait_exit 20 "$h" || fail "holder did not end"
}

# Arguments: the tests to run (default: all).
run_tests "$@"
