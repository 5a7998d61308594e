#!/usr/bin/env bash
# A `zkl lock` holder whose node `zkl break` deleted notices: it ends
# COMMAND and exits 75, while its session lives on. Needs the lock-queue
# engine to watch each holder's own node; not in make check until it does.
# Runs on a server of its own (tests/with-zk.sh) unless ZKL_TEST_HOSTS is set.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
if [[ -z ${ZKL_TEST_HOSTS:-} ]]; then
    exec "$here/../with-zk.sh" -- bash "${BASH_SOURCE[0]}" "$@"
fi
ZKL=${ZKL_BIN:-${top_builddir:-.}/tools/zkl}
[[ -x $ZKL ]] || { echo "no zkl binary at $ZKL" >&2; exit 99; }
export ZKL_SERVERS=$ZKL_TEST_HOSTS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkl-break.XXXXXX")
cleanup() {
    kill_jobs
    rm -rf -- "$tmp"
}
trap cleanup EXIT

. "$here/wait.sh"

failures=0
fail() {
    echo "not ok - $*"
    failures=$((failures + 1))
}

# With a COMMAND: SIGTERM to it, exit 75.
p=/zkl-break-notice/$$
"$ZKL" lock "$p" sh -c "trap 'touch \"$tmp/term\"; exit 0' TERM; touch '$tmp/started'; while :; do sleep 0.05; done" &
z=$!
wait_for 20 test -e "$tmp/started" || fail "the command never started"
"$ZKL" break "$p" >/dev/null || fail "break gave $?"
end=$(($(now_ms) + 10000))
while kill -0 "$z" 2>/dev/null && (($(now_ms) < end)); do nap 0.05; done
if kill -0 "$z" 2>/dev/null; then
    fail "the broken holder did not notice within 10 s"
else
    wait "$z"
    rc=$?
    [[ $rc == 75 ]] || fail "the broken holder gave $rc, not 75"
    [[ -e $tmp/term ]] || fail "the command did not get SIGTERM"
fi

# Hold mode: exit 75.
mkfifo "$tmp/in"
"$ZKL" lock "$p" <"$tmp/in" >"$tmp/out" &
z=$!
exec 7>"$tmp/in"
wait_for 20 test -s "$tmp/out" || fail "hold mode printed nothing"
"$ZKL" break "$p" >/dev/null || fail "break gave $?"
end=$(($(now_ms) + 10000))
while kill -0 "$z" 2>/dev/null && (($(now_ms) < end)); do nap 0.05; done
if kill -0 "$z" 2>/dev/null; then
    fail "the broken holder (hold mode) did not notice within 10 s"
else
    wait "$z"
    rc=$?
    [[ $rc == 75 ]] || fail "the broken holder (hold mode) gave $rc, not 75"
fi
exec 7>&-
((failures == 0)) && echo "ok - a broken holder notices and exits 75"
((failures == 0))
