#!/usr/bin/env bash
# A connect slower than 9/20 of the session timeout: the session arrives
# already presumed lost by the loss rule (zkl.h), which counts from the
# moment the connecting began, and the client gives it up and closes its
# handle at once. `zkl lock` must then say so and connect again, not use
# the handle it no longer has (it once read the session timeout from it
# and died of SIGSEGV).
#
# The server is reached through tests/nemesis/delay-proxy.py: every chunk
# is held back 3 s until zkl has reported the lost session, then nothing
# is. With --session-timeout 10000 the first connect takes about 6 s (the
# request and its answer each wait): beyond the 4.5 s of the rule, within
# the 10 s zkl_client_open waits, which leaves a loaded machine 4 s. The
# next connect is fast and takes the lock. TRIALS (default 2) rounds.
#
# Uses ZKL_TEST_HOSTS when set (tests/with-zk.sh); otherwise starts its
# own server with tests/with-zk.sh.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/cli/common.sh
. "$here/common.sh" slowconn "$@"
trials=${TRIALS:-2}
proxy= z=
cleanup() {
    [[ -n $z ]] && kill -KILL "$z" 2>/dev/null
    [[ -n $proxy ]] && kill "$proxy" 2>/dev/null
}

server=${ZKL_TEST_HOSTS%%,*}
server=${server%%/*}
# Port 0: the proxy binds a port the kernel gives it and says which.
"$PYTHON3" "$here/../nemesis/delay-proxy.py" --dir "$tmp" --map "z:0:${server%:*}:${server##*:}" \
    >"$tmp/proxy.out" &
proxy=$!
wait_for 20 grep -q '^ready [0-9]' "$tmp/proxy.out" || { echo "not ok - the delay proxy did not start"; exit 1; }
read -r _ port <"$tmp/proxy.out"

failures=0
path=/zkl-slow-connect-$$
for ((t = 1; t <= trials; t++)); do
    echo 3000 >"$tmp/delay-z"
    # Gone before zkl starts: the redirection below truncates it in the
    # child, later than the grep for 'waiting again' may read the last
    # trial's copy.
    rm -f "$tmp/ran" "$tmp/err"
    wait_for 20 grep -qx 3000 "$tmp/applied-z" 2>/dev/null ||
        { echo "not ok - the delay proxy did not take the delay"; exit 1; }
    "$ZKL" lock -v --session-timeout 10000 -w 60 -S "127.0.0.1:$port" "$path" \
        -c "touch '$tmp/ran'" 2>"$tmp/err" &
    z=$!
    # The proxy reads its delay again every 100 ms: any connect after this
    # one is fast.
    wait_for 30 grep -q 'waiting again' "$tmp/err"
    echo 0 >"$tmp/delay-z"
    wait_for 20 grep -qx 0 "$tmp/applied-z" 2>/dev/null
    wait "$z"
    rc=$?
    z=
    if [[ $rc == 0 && -e $tmp/ran ]] && grep -q 'waiting again' "$tmp/err"; then
        echo "ok - trial $t: the session presumed lost on arrival was given up, the next one held the lock"
    else
        echo "not ok - trial $t: zkl exit $rc, command ran: $([[ -e $tmp/ran ]] && echo yes || echo no)"
        sed 's/^/# /' "$tmp/err"
        failures=$((failures + 1))
    fi
done
"$ZKL" holders -S "$ZKL_TEST_HOSTS" "$path" 2>/dev/null | grep -q "no contenders" ||
    { echo "not ok - contenders left on $path"; failures=$((failures + 1)); }
echo "$((trials - failures)) passed, $failures failed"
((failures == 0))
