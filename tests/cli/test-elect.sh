#!/usr/bin/env bash
# zkl elect and zkl leader, run as a user would: one candidate leads and
# runs COMMAND with its id and token in the environment, the next leads
# when it leaves, a leader whose node is deleted has COMMAND's whole group
# ended (exit 75), -n gives up at once, zkl leader names the leader (exit 1
# without one) and --watch prints each change.
# Runs on a server of its own (tests/with-zk.sh) unless ZKL_TEST_HOSTS is set.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/cli/common.sh
. "$here/common.sh" elect "$@"
cleanup() { kill_jobs; }
pass=0 failed=0
ok() { echo "ok - $*"; pass=$((pass + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }

p=/zkl-elect-test/$$
leader_is() { [[ $("$ZKL" leader "$p" 2>/dev/null) == "$1" ]]; }
count_is() { [[ $(contenders "$p") == "$1" ]]; }
lines() { [[ -f $1 ]] && (($(wc -l <"$1") >= $2)); }
# --watch has printed this leader (it prints a leader it lists while that one leads).
watched() { grep -qx "$1" "$tmp/watch.out"; }

# COMMAND: log "ID TOKEN", then wait for its stop file; exit 3.
run() {
    "$ZKL" elect --id "$1" "$p" sh -c \
        'echo "$ZKL_LEADER_ID $ZKL_FENCING_TOKEN" >>"$0"; while [ ! -e "$1" ]; do sleep 0.05; done; exit 3' \
        "$tmp/log" "$tmp/stop-$1" 2>"$tmp/err-$1" &
}

"$ZKL" leader "$p" >"$tmp/none.out" 2>/dev/null
rc=$?
[[ $rc == 1 && $(cat "$tmp/none.out") == "(no leader)" ]] && ok "zkl leader without a leader: exit 1" ||
    not_ok "zkl leader without a leader: exit $rc, $(cat "$tmp/none.out")"

"$ZKL" leader --watch "$p" >"$tmp/watch.out" 2>&1 &
watcher=$!
run alpha
a=$!
wait_for 20 lines "$tmp/log" 1 || not_ok "alpha never led"
run beta
b=$!
wait_for 10 count_is 2 || not_ok "beta never joined"
read -r id1 t1 <"$tmp/log"
if [[ $id1 == alpha && $t1 -gt 0 ]] && leader_is alpha &&
    "$ZKL" holders "$p" | grep -q "latch-" &&
    "$ZKL" leader --json "$p" | grep -q '"id": "alpha"'; then
    ok "one leads, with ZKL_LEADER_ID and ZKL_FENCING_TOKEN; zkl leader and holders name it"
else
    not_ok "first leader: $(cat "$tmp/log"); leader $("$ZKL" leader "$p")"
fi

"$ZKL" elect -n "$p" true 2>/dev/null
rc=$?
[[ $rc == 1 ]] && ok "elect -n with another candidate there: exit 1 at once" || not_ok "elect -n: exit $rc"

wait_for 20 watched alpha
touch "$tmp/stop-alpha"
wait_for 15 gone "$a"
wait "$a"
rc=$?
wait_for 20 lines "$tmp/log" 2
read -r id2 t2 < <(sed -n 2p "$tmp/log")
if [[ $rc == 3 && $id2 == beta && $t2 -gt $t1 ]] && wait_for 10 leader_is beta; then
    ok "the leader leaves with COMMAND's status (3), the next leads with a larger token"
else
    not_ok "handover: exit $rc, log $(cat "$tmp/log")"
fi

# Its node deleted: COMMAND's whole group ends, zkl elect exits 75.
wait_for 20 watched beta
touch "$tmp/stop-beta" # beta's COMMAND was already waiting: stop it first
wait "$b"
"$ZKL" elect --id gamma "$p" sh -c 'sleep 300 & echo $! >"$0"; wait' "$tmp/gamma.pid" \
    2>"$tmp/err-gamma" &
g=$!
wait_for 20 test -s "$tmp/gamma.pid" || not_ok "gamma never led"
wait_for 20 watched gamma
"$ZKL" break "$p" >/dev/null
if wait_for 20 gone "$g"; then
    wait "$g"
    rc=$?
    kid=$(cat "$tmp/gamma.pid")
    wait_for 10 gone "$kid"
    if [[ $rc == 75 ]] && gone "$kid"; then
        ok "a leader whose node was deleted ends COMMAND's group and exits 75"
    else
        not_ok "deleted node: exit $rc, child $(gone "$kid" && echo gone || echo alive)"
    fi
else
    not_ok "deleted node: zkl elect still runs: $(cat "$tmp/err-gamma")"
fi

# --watch saw alpha, beta, gamma (and no leader between some of them).
kill -TERM "$watcher"
wait "$watcher"
rc=$?
if [[ $rc == 0 ]] && grep -qx alpha "$tmp/watch.out" && grep -qx beta "$tmp/watch.out" &&
    grep -qx gamma "$tmp/watch.out"; then
    ok "zkl leader --watch prints each new leader, exits 0 on SIGTERM"
else
    not_ok "--watch: exit $rc: $(tr '\n' '|' <"$tmp/watch.out")"
fi

"$ZKL" lock --id x "$p" true 2>/dev/null
rc=$?
"$ZKL" elect -s "$p" true 2>/dev/null
rc2=$?
[[ $rc == 64 && $rc2 == 64 ]] && ok "--id is elect's, -s is lock's: usage errors" ||
    not_ok "usage: lock --id $rc, elect -s $rc2"
# A foreign child first by its sequence but without "latch-" in its name
# goes behind the candidates, as for Curator: one leads, zkl leader names it.
f=/zkl-elect-foreign$$
python3 "$here/zknode.py" "$ZKL_SERVERS" create "$f" 00 >/dev/null &&
    python3 "$here/zknode.py" "$ZKL_SERVERS" create "$f/lock-0000000000" 00 >/dev/null ||
    not_ok "cannot make $f"
"$ZKL" elect --id solo "$f" sh -c 'touch "$0"; while [ ! -e "$1" ]; do sleep 0.05; done' \
    "$tmp/solo-led" "$tmp/solo-stop" 2>"$tmp/err-solo" &
s=$!
if wait_for 20 test -e "$tmp/solo-led" && [[ $("$ZKL" leader "$f" 2>&1) == solo ]]; then
    ok "a foreign child first by sequence goes behind the candidates"
else
    not_ok "foreign child: led $(test -e "$tmp/solo-led" && echo yes || echo no)," \
        "leader $("$ZKL" leader "$f" 2>&1)"
fi
touch "$tmp/solo-stop"
wait "$s"
python3 "$here/zknode.py" "$ZKL_SERVERS" deleteall "$f"

# A path whose listing exceeds the request limit (1 MiB by default): 11
# children with names of 100,000 bytes. zkl holders and zkl leader say so
# and exit 76, as zkl lock would.
big=/zkl-elect-big$$
long=$(printf 'x%.0s' $(seq 100000))
python3 "$here/zknode.py" "$ZKL_SERVERS" create "$big" 00 >/dev/null || not_ok "cannot make $big"
for i in $(seq 11); do
    python3 "$here/zknode.py" "$ZKL_SERVERS" create "$big/$i$long" 00 >/dev/null ||
        not_ok "cannot make a child of $big"
done
for cmd in holders leader; do
    out=$("$ZKL" "$cmd" "$big" 2>&1)
    rc=$?
    [[ $rc == 76 && $out == *jute.maxbuffer* ]] && ok "$cmd on a queue over the limit: exit 76" ||
        not_ok "$cmd on a queue over the limit: exit $rc: ${out:0:200}"
done
python3 "$here/zknode.py" "$ZKL_SERVERS" deleteall "$big"

# zkl leader and zkl holders take exactly one PATH, and say a bad one
# alike, its control characters shown as '?'.
for cmd in leader holders; do
    out1=$("$ZKL" "$cmd" /a /b 2>&1)
    r1=$?
    out2=$("$ZKL" "$cmd" $'/a\001' 2>&1)
    r2=$?
    out3=$("$ZKL" "$cmd" 2>&1)
    r3=$?
    if [[ $r1 == 64 && $r2 == 64 && $r3 == 64 && $out1 == *"$cmd: one PATH only"* &&
        $out2 == *"$cmd: bad PATH '/a?'"* && $out3 == *"$cmd: no PATH"* ]]; then
        ok "$cmd: one PATH, said alike"
    else
        not_ok "$cmd: $r1 $r2 $r3: $out1 | $out2 | $out3"
    fi
done
wait_for 10 count_is 0 || not_ok "nodes left under $p"

echo "$pass passed, $failed failed"
((failed == 0))
