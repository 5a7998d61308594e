#!/bin/sh
# Smoke test of tools/zkl-bench: every workload runs briefly against a real
# ZooKeeper and prints one JSON line whose fields are sane. Performance is
# measured by bench/compare.sh, never asserted here.
#
# Always on a ZooKeeper of its own: the request counts it checks are the
# server's, which the other suites of a run in parallel would add to.
set -eu

srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${top_builddir:-.}
if [ -z "${ZKL_BENCH_SERVER:-}" ]; then
    exec env -u ZKL_TEST_HOSTS ZKL_BENCH_SERVER=1 "$srcdir/tests/with-zk.sh" -- "$0" "$@"
fi
bench=$builddir/tools/zkl-bench
[ -x "$bench" ] || { echo "no $bench"; exit 1; }
py=/usr/bin/python3 # Debian's, not a wrapper earlier on PATH
[ -x "$py" ] || py=$(command -v python3 || true)
[ -n "$py" ] || { echo "python3 is needed to read the JSON"; exit 77; }

out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
pass=0
fail=0

# check NAME WORKLOAD MIN_OPS ARGS...: run, then validate the JSON line.
check() {
    name=$1 workload=$2 min_ops=$3
    shift 3
    if ! "$bench" --servers "$ZKL_TEST_HOSTS" --workload "$workload" \
        --path "/zkl-bench-smoke-$$-$name" "$@" >"$out" 2>"$err"; then
        echo "FAIL: $name: zkl-bench exited with an error"
        cat "$err"
        fail=$((fail + 1))
        return 0
    fi
    # The heap meter (zkl-bench-heap.so) sits beside the program in the
    # build tree: a workload that reads the heap must find it and load it.
    # (Under a sanitizer the heap is not counted: zkl-bench says that too.)
    if grep -q 'heap meter' "$err"; then
        echo "FAIL: $name: no heap meter:"
        cat "$err"
        fail=$((fail + 1))
        return 0
    fi
    if "$py" - "$out" "$workload" "$min_ops" <<'EOF'; then
import json, math, sys
path, workload, min_ops = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l for l in open(path).read().splitlines() if l.strip()]
assert len(lines) == 1, "expected one line, got %d" % len(lines)
d = json.loads(lines[0])
def num(k):
    v = d[k]
    assert isinstance(v, (int, float)) and not isinstance(v, bool), "%s: %r" % (k, v)
    assert math.isfinite(v), "%s: %r" % (k, v)
    return v
assert d["impl"] == "zkl", d["impl"]
assert d["workload"] == workload, d["workload"]
assert num("clients") >= 1
assert num("ops") >= min_ops, d["ops"]
assert num("seconds") > 0
assert num("ops_per_sec") > 0
assert 0 <= num("p50_us") <= num("p99_us")
assert num("peak_rss_kb") > 0
assert isinstance(d["prefetch"], bool)
# Server counters: every op sends at least its two writes (a queue's timed
# part is the handoffs alone: each waiter's create came before it).
assert num("zk_requests_per_op") >= 2, d["zk_requests_per_op"]
assert num("zk_writes_per_op") >= (1 if workload == "queue" else 2), d["zk_writes_per_op"]
if workload == "chain":
    # the ideal lock: create, one data watch, delete
    assert 2.9 <= d["zk_requests_per_op"] <= 3.1, d["zk_requests_per_op"]
if workload == "protocol":
    # zkl's protocol: alone, create, own watch, delete, once the first two
    # acquisitions of the path listed (4 requests, and 5: the second sets
    # the watch on the path); contended at most 6 (create, listing, own
    # watch, predecessor's watch, listing again, delete)
    if d["clients"] == 1:
        assert 3 <= d["zk_requests_per_op"] <= 3 + 3.0 / d["ops"] + 0.01, d["zk_requests_per_op"]
    else:
        assert 3 <= d["zk_requests_per_op"] <= 6.05, d["zk_requests_per_op"]
if workload in ("contended", "chain", "protocol"):
    assert num("handoff_us") > 0 and num("release_us") > 0 and num("hold_us") >= 0
if workload not in ("floor", "chain", "protocol"):
    assert num("client_requests_per_op") >= 2
    assert num("listings_per_op") >= 0  # an acquire alone may send none
    assert num("watch_events_per_op") >= 0
if workload == "many":
    # null when the heap cannot be read (an allocator of a sanitizer's own)
    assert d["bytes_per_lock"] is None or num("bytes_per_lock") > 0
    num("rss_bytes_per_lock")
if workload == "semaphore":
    assert num("permits") >= 1
if workload == "rw":
    assert 0 <= num("read_fraction") <= 1
    assert 0 <= num("reads") <= d["ops"]
if workload in ("herd", "queue"):
    assert num("wakeups_per_handoff") > 0
if workload == "queue":
    assert d["waiters"] == d["ops"], (d["waiters"], d["ops"])
    assert num("join_seconds") > 0 and num("join_us_per_waiter") > 0
    assert num("join_listings_per_waiter") >= 0
    assert d["bytes_per_waiter"] is None or num("bytes_per_waiter") > 0
    assert d["bytes_per_waiter_all"] is None or num("bytes_per_waiter_all") > 0
    assert d["async"] in (True, False)
    assert num("listing_bytes") > 4 * d["waiters"]
EOF
        pass=$((pass + 1))
    else
        echo "FAIL: $name: bad output:"
        cat "$out"
        fail=$((fail + 1))
    fi
}

check uncontended uncontended 20 --clients 1 --ops 20 --warmup 5
check contended contended 40 --clients 3 --ops 40 --warmup 6
check contended-prefetch contended 40 --clients 3 --ops 40 --prefetch
check many many 25 --clients 1 --ops 25 --warmup 5
check herd herd 5 --clients 5 --ops 5
check herd-prefetch herd 5 --clients 5 --ops 5 --prefetch
check floor floor 20 --clients 1 --ops 20 --warmup 5
check semaphore semaphore 30 --clients 3 --ops 30 --permits 2 --warmup 3
check rw rw 40 --clients 3 --ops 40 --read-fraction 0.75 --warmup 4
check chain chain 40 --clients 3 --ops 40 --warmup 5
check protocol protocol 40 --clients 3 --ops 40 --warmup 5
check protocol-alone protocol 20 --clients 1 --ops 20 --warmup 5
check queue queue 30 --clients 3 --waiters 30
check queue-async queue 30 --clients 3 --waiters 30 --async
check elect elect 20 --clients 3 --ops 20 --warmup 3
check elect-kill elect-kill 1 --ops 1 --session-timeout 2000

# A meter that did not load (ZKL_BENCH_METER set: zkl-bench took itself for
# the process it ran again with the module preloaded): the heap figures are
# null, zkl-bench says so, and the workload runs all the same.
rc=0
ZKL_BENCH_METER='' "$bench" --servers "$ZKL_TEST_HOSTS" --workload many --ops 5 \
    --path "/zkl-bench-smoke-$$-nometer" >"$out" 2>"$err" || rc=$?
if [ "$rc" -eq 0 ] && grep -q 'heap figures are null' "$err" &&
    "$py" -c 'import json, sys; d = json.loads(open(sys.argv[1]).read()); assert d["bytes_per_lock"] is None and d["ops"] == 5' "$out"; then
    pass=$((pass + 1))
else
    echo "FAIL: zkl-bench without its heap meter: status $rc"
    cat "$out" "$err"
    fail=$((fail + 1))
fi

# Bad usage is status 2 and prints nothing on stdout.
for args in "--workload nonsense --servers $ZKL_TEST_HOSTS" "--servers $ZKL_TEST_HOSTS" \
    "--workload many --servers $ZKL_TEST_HOSTS --ops 0" \
    "--workload queue --servers $ZKL_TEST_HOSTS --clients 17"; do
    rc=0
    # shellcheck disable=SC2086 # word splitting wanted
    "$bench" $args >"$out" 2>/dev/null || rc=$?
    if [ "$rc" -eq 2 ] && [ ! -s "$out" ]; then
        pass=$((pass + 1))
    else
        echo "FAIL: zkl-bench $args: status $rc (want 2)"
        fail=$((fail + 1))
    fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
