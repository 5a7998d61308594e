#!/usr/bin/env bash
# Fencing tokens are ordered within one ensemble history only. A server
# restarted with its data gone (every server of an ensemble, or a new
# ensemble on the old addresses) counts transactions from the start again:
# a holder of the old history is told its lock is lost (exit 75), and the
# next holder's token can be lower than tokens handed out before. This test
# shows it on a real server, as docs/failures.md ("When the ensemble loses
# its data") describes, so that the documentation stays true.
#
# Runs on a private standalone server (its data is deleted under a holder),
# started by tests/with-zk.sh.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/cli/common.sh
. "$here/common.sh" --own-server lost-ensemble "$@"
z=
cleanup() {
    [[ -n $z ]] && kill -KILL "$z" 2>/dev/null
}
failures=0
fail() { echo "not ok - $*"; failures=$((failures + 1)); }

# Tokens of the first history: a few holders in turn.
last=0
for i in 1 2 3 4 5; do
    # shellcheck disable=SC2016 # expanded by the command's shell
    t=$("$ZKL" lock /fenced sh -c 'echo "$ZKL_FENCING_TOKEN"') || fail "holder $i gave $?"
    ((t > last)) || fail "token $t of holder $i is not above $last"
    last=$t
done

# A holder while the server loses its data.
"$ZKL" lock --session-timeout 4000 /fenced sh -c "touch '$tmp/started'; sleep 600" 2>"$tmp/err" &
z=$!
wait_for 20 test -e "$tmp/started" || fail "the holder never started"
"$ZKL_HARNESS" kill-node "$ZKL_TEST_ZKDIR" 1 || { echo "not ok - cannot kill the server"; exit 1; }
rm -rf -- "$ZKL_TEST_ZKDIR"/node1/data/version-2
"$ZKL_HARNESS" start-node "$ZKL_TEST_ZKDIR" 1 >/dev/null 2>&1 ||
    { echo "not ok - cannot restart the server"; exit 1; }
wait_for 30 bash -c "! kill -0 $z 2>/dev/null" || fail "the holder of the lost history did not end"
wait "$z"
rc=$?
z=
[[ $rc == 75 ]] && echo "ok - the holder of the lost history was told its lock is lost (exit 75)" ||
    fail "the holder of the lost history gave $rc: $(cat "$tmp/err")"

# The next holder, in the new history: a lower token.
# shellcheck disable=SC2016 # expanded by the command's shell
t=$("$ZKL" lock -w 30 /fenced sh -c 'echo "$ZKL_FENCING_TOKEN"') || fail "the next holder gave $?"
if [[ $t =~ ^[0-9]+$ ]] && ((t < last)); then
    echo "ok - the next holder's token $t is below the $last of the lost history: fence with the ensemble's identity"
else
    fail "the next holder's token is '$t', not below $last (docs/failures.md says it is)"
fi
((failures == 0))
