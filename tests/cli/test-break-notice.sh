#!/usr/bin/env bash
# A `zkl lock` holder whose node `zkl break` deleted notices: it ends
# COMMAND and exits 75, while its session lives on. Needs the lock-queue
# engine to watch each holder's own node; not in make check until it does.
# Runs on a server of its own (tests/with-zk.sh) unless ZKL_TEST_HOSTS is set.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/cli/common.sh
. "$here/common.sh" break "$@"
cleanup() { kill_jobs; }

failures=0
fail() {
    echo "not ok - $*"
    failures=$((failures + 1))
}

# noticed PID [WHAT]: the holder PID, its node broken, ended within 10 s
# and gave 75 (each mode of zkl lock is checked the same way); 1 if it
# still runs.
noticed() {
    if ! wait_for 10 gone "$1"; then
        fail "the broken holder${2:-} did not notice within 10 s"
        return 1
    fi
    wait "$1"
    local rc=$?
    [[ $rc == 75 ]] || fail "the broken holder${2:-} gave $rc, not 75"
    return 0
}

# With a COMMAND: SIGTERM to it, exit 75.
p=/zkl-break-notice/$$
"$ZKL" lock "$p" sh -c "trap 'touch \"$tmp/term\"; exit 0' TERM; touch '$tmp/started'; while :; do sleep 0.05; done" &
z=$!
wait_for 20 test -e "$tmp/started" || fail "the command never started"
"$ZKL" break "$p" >/dev/null || fail "break gave $?"
if noticed "$z"; then
    [[ -e $tmp/term ]] || fail "the command did not get SIGTERM"
fi

# Hold mode: exit 75.
mkfifo "$tmp/in"
"$ZKL" lock "$p" <"$tmp/in" >"$tmp/out" &
z=$!
exec 7>"$tmp/in"
wait_for 20 test -s "$tmp/out" || fail "hold mode printed nothing"
"$ZKL" break "$p" >/dev/null || fail "break gave $?"
noticed "$z" " (hold mode)"
exec 7>&-
((failures == 0)) && echo "ok - a broken holder notices and exits 75"
((failures == 0))
