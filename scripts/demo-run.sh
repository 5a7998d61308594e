#!/usr/bin/env bash
# Runs inside tests/with-zk.sh: ZKL_TEST_HOSTS names the ensemble.
set -euo pipefail
build=$1
procs=${ZKL_DEMO_PROCS:-4}
rounds=${ZKL_DEMO_ROUNDS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "ZooKeeper ensemble: $ZKL_TEST_HOSTS"
echo "$procs processes take /demo/lock $rounds times each:"
pids=()
for _ in $(seq "$procs"); do
    "$build/examples/zkl-demo" "$ZKL_TEST_HOSTS" /demo/lock "$rounds" "$work/inside" >>"$work/log" &
    pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
sort -n "$work/log" | cut -d' ' -f2-
# The tokens, in the order the holders held, must strictly increase.
if sort -n "$work/log" | awk '{t=$7; if (NR > 1 && t <= last) bad=1; last=t} END {exit bad}'; then
    echo "OK: $((procs * rounds)) holds, tokens strictly increasing, no overlap seen"
else
    echo "FAILED: tokens did not increase"
    status=1
fi
exit $status
