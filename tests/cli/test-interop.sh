#!/usr/bin/env bash
# zkl revoke against Apache Curator 5.4: a Curator holder made revocable
# (InterProcessMutex.makeRevocable) is asked by `zkl revoke` and lets go,
# after which zkl takes the lock. Skipped (77) without Java and Curator.
# Runs on a server of its own (tests/with-zk.sh) unless ZKL_TEST_HOSTS is set.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
worker=$here/../interop/run-curator-worker.sh
if ! command -v java >/dev/null 2>&1 || ! "$here/../../bench/build-java.sh" --classpath >/dev/null 2>&1; then
    echo "skip: no Java or no Curator jars"
    exit 77
fi
# shellcheck source=tests/cli/common.sh
. "$here/common.sh" interop "$@"
w=
cleanup() {
    [[ -n $w ]] && kill -KILL "$w" 2>/dev/null
}

p=/zkl-interop-revoke/$$
fail() {
    echo "not ok - $*"
    exit 1
}
"$worker" --servers "$ZKL_TEST_HOSTS" \
    --path "$p" --mode revocable --iterations 1 --hold-ms 60000 \
    --counter-file "$tmp/counter" --log-file "$tmp/log" 2>"$tmp/worker.err" &
w=$!
end=$(($(now_ms) + 120000))
until grep -q '^ACQ' "$tmp/log" 2>/dev/null; do
    kill -0 "$w" 2>/dev/null || fail "the Curator worker ended: $(cat "$tmp/worker.err")"
    (($(now_ms) < end)) || fail "the Curator worker never held the lock"
    sleep 0.1
done
# -n with time to connect on a loaded machine: a 69 would say nothing.
"$ZKL" lock -n --connect-timeout 30 "$p" true
rc=$?
[[ $rc == 1 ]] || fail "zkl got the lock beside the Curator holder ($rc)"
"$ZKL" holders --json "$p" | python3 -c '
import json, sys
cs = json.load(sys.stdin)["contenders"]
assert len(cs) == 1 and cs[0]["holds"] and cs[0]["kind"] == "lock-", cs' ||
    fail "holders does not show the Curator holder"
t0=$(now_ms)
"$ZKL" revoke -w 60 "$p" >/dev/null || fail "zkl revoke gave $?"
end=$(($(now_ms) + 20000))
while kill -0 "$w" 2>/dev/null; do
    (($(now_ms) < end)) || fail "the Curator holder did not let go within 20 s"
    sleep 0.05
done
wait "$w"
rc=$?
w=
[[ $rc == 0 ]] || fail "the Curator worker gave $rc: $(cat "$tmp/worker.err")"
grep -q '^REVOKED' "$tmp/log" || fail "the Curator holder never heard the request: $(cat "$tmp/log")"
"$ZKL" lock -w 10 "$p" true || fail "zkl could not take the lock after the revocation ($?)"
echo "ok - zkl revoke made a revocable Curator holder let go ($(($(now_ms) - t0)) ms)"
