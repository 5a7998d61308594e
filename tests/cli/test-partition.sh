#!/usr/bin/env bash
# A partition without a reset: on a 3-node ensemble, a `zkl lock` holder
# connected to one follower only, that follower frozen (SIGSTOP) just after
# the holder's traffic reached it, while a second `zkl lock` waits on the
# other two servers. The holder's COMMAND must have stopped before the
# waiter's COMMAND starts. Both write realtime timestamps (ms) into files;
# the leader's expiry of the holder's session is read from its log. Prints
# the margins of each trial.
#
# Runs on a private ensemble (tests/with-zk.sh --nodes 3); TRIALS trials
# (default 2).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
if [[ -z ${ZKL_PARTITION_INNER:-} ]]; then
    exec env -u ZKL_TEST_HOSTS ZKL_ZK_LOG_LEVEL=info "$here/../with-zk.sh" --nodes 3 -- \
        env ZKL_PARTITION_INNER=1 bash "${BASH_SOURCE[0]}" "$@"
fi

ZKL=${ZKL_BIN:-${top_builddir:-.}/tools/zkl}
[[ -x $ZKL ]] || { echo "no zkl binary at $ZKL" >&2; exit 99; }
H=$ZKL_HARNESS
D=$ZKL_TEST_ZKDIR
trials=${TRIALS:-2}
session_ms=6000
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkl-partition.XXXXXX")
paused=
cleanup() {
    [[ -n $paused ]] && "$H" resume-node "$D" "$paused" >/dev/null 2>&1
    kill_jobs
    rm -rf -- "$tmp"
}
trap cleanup EXIT

. "$here/wait.sh"

packets() { # node index: zk_packets_received of that node
    "$H" mntr "$D" "$1" 2>/dev/null | awk '$1 == "zk_packets_received" {print $2}'
}

contenders_are() { [[ $(contenders -S "$1" "$2" 2>/dev/null) == "$3" ]]; }

failures=0
for ((t = 1; t <= trials; t++)); do
    "$H" wait-ready "$D" 60 >/dev/null 2>&1 || { echo "not ok - the ensemble is not ready"; exit 1; }
    leader=$("$H" leader "$D")
    f=1
    [[ $f == "$leader" ]] && f=2
    others=
    for i in 1 2 3; do
        [[ $i == "$f" ]] || others+=${others:+,}$("$H" host "$D" "$i")
    done
    fhost=$("$H" host "$D" "$f")
    p=/partition/$$-$t
    rm -f "$tmp"/*
    # The holder: on the follower only. Its command notes when it started
    # and when SIGTERM stopped it.
    "$ZKL" lock --session-timeout $session_ms -S "$fhost" "$p" sh -c "
        trap 'date +%s%3N >\"$tmp/holder.stop\"; exit 0' TERM
        date +%s%3N >'$tmp/holder.start'
        while :; do sleep 0.02; done" 2>"$tmp/holder.err" &
    holder=$!
    wait_for 30 test -e "$tmp/holder.start" || { echo "not ok - the holder never started"; exit 1; }
    "$ZKL" lock --session-timeout $session_ms -S "$others" "$p" sh -c "date +%s%3N >'$tmp/waiter.start'" \
        2>"$tmp/waiter.err" &
    waiter=$!
    wait_for 30 contenders_are "$others" "$p" 2 || { echo "not ok - the waiter never queued"; exit 1; }
    session=$("$ZKL" holders -S "$others" --json "$p" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["contenders"][0]["session"])')
    # Freeze the follower right after a packet of the holder's reached it
    # (each mntr query counts one itself).
    # Bounded, and only while the holder runs: a holder that has ended
    # sends nothing, and the loop would wait for ever.
    a=$(packets "$f")
    end=$(($(now_ms) + 30000))
    while kill -0 "$holder" 2>/dev/null && (($(now_ms) < end)); do
        b=$(packets "$f")
        ((b - a > 1)) && break
        a=$b
    done
    kill -0 "$holder" 2>/dev/null && (($(now_ms) < end)) ||
        { echo "not ok - trial $t: no packet of the holder reached node $f ($(cat "$tmp/holder.err"))"; exit 1; }
    cut=$(now_ms)
    "$H" pause-node "$D" "$f"
    paused=$f
    wait_for 60 test -e "$tmp/waiter.start" || { echo "not ok - trial $t: the waiter never ran"; failures=$((failures + 1)); }
    end=$(($(now_ms) + 20000))
    while kill -0 "$holder" 2>/dev/null && (($(now_ms) < end)); do nap 0.05; done
    wait "$holder"
    hrc=$?
    wait "$waiter"
    wrc=$?
    "$H" resume-node "$D" "$f"
    paused=
    stop=$(cat "$tmp/holder.stop" 2>/dev/null || echo "")
    start=$(cat "$tmp/waiter.start" 2>/dev/null || echo "")
    # The leader's expiry of the holder's session, from its log.
    expiry=$(python3 - "$D/node$leader/server.log" "$session" <<'PY'
import datetime, re, sys
sid = sys.argv[2]
for line in open(sys.argv[1], errors="replace"):
    if "Expiring session " + sid in line:
        m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})", line)
        if m:
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")
            print(int(t.timestamp() * 1000) + int(m.group(2)))
PY
)
    expiry=${expiry##*$'\n'}
    if [[ -z $stop || -z $start ]]; then
        echo "not ok - trial $t: holder stop '$stop', waiter start '$start' (holder exit $hrc): $(cat "$tmp/holder.err")"
        failures=$((failures + 1))
        continue
    fi
    msg="holder stopped $((stop - cut)) ms after the cut, waiter started $((start - cut)) ms after"
    msg+=", margin $((start - stop)) ms"
    [[ -n $expiry ]] && msg+="; leader expired the session $((expiry - cut)) ms after the cut ($((expiry - stop)) ms after the holder stopped)"
    if ((stop < start)) && [[ $hrc == 75 && $wrc == 0 ]]; then
        echo "ok - trial $t: $msg"
    else
        echo "not ok - trial $t: $msg; holder exit $hrc, waiter exit $wrc"
        failures=$((failures + 1))
    fi
done
((failures == 0))
