#!/usr/bin/env bash
# tests/zk-harness.sh takes its ports from ZKL_ZK_PORTS when set: a server
# started with a range listens inside it, and a malformed range is refused
# before anything starts.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
harness=$here/zk-harness.sh
dir=$(mktemp -d "${TMPDIR:-/tmp}/zkl-harness.XXXXXX")
trap '"$harness" stop "$dir" >/dev/null 2>&1; rm -rf -- "$dir"' EXIT
fail=0 pass=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
no() { echo "not ok - $1"; fail=$((fail + 1)); }

# Above the kernel's ephemeral range, where the harness never looks by
# itself: a port in it comes from the variable.
lo=61100 hi=61199
if hosts=$(ZKL_ZK_PORTS=$lo-$hi "$harness" start "$dir/zk" 2>"$dir/err"); then
    port=${hosts##*:}
    if ((port >= lo && port <= hi)); then
        ok "a server started with ZKL_ZK_PORTS=$lo-$hi listens on $port"
    else
        no "ZKL_ZK_PORTS=$lo-$hi gave port $port"
    fi
    "$harness" stop "$dir/zk"
else
    no "start with ZKL_ZK_PORTS=$lo-$hi failed: $(cat "$dir/err")"
fi

for bad in 61100 61199-61100 abc-def 0-100 61100-70000; do
    if ZKL_ZK_PORTS=$bad "$harness" start "$dir/bad" >/dev/null 2>"$dir/err"; then
        no "ZKL_ZK_PORTS=$bad was accepted"
        "$harness" stop "$dir/bad"
    elif grep -q "ZKL_ZK_PORTS" "$dir/err"; then
        ok "ZKL_ZK_PORTS=$bad is refused with a message"
    else
        no "ZKL_ZK_PORTS=$bad failed without naming the variable: $(cat "$dir/err")"
    fi
done
echo "$pass passed, $fail failed"
((fail == 0))
