#!/usr/bin/env bash
# compare.sh - zkl beside Apache Curator 5.4 and kazoo, on one ZooKeeper.
#
# Usage: bench/compare.sh [--nodes 1|3] [--passes N] [--quick]
#                         [--zkl-bench PATH] [--out DIR] [--only zkl]
#                         [--long-queues]   (queues of 20,000 waiters too)
#                         [--scale]         (100,000 locks, 500 sessions too)
#
# Starts its own ZooKeeper (standalone by default, a 3-node ensemble with
# --nodes 3) through tests/zk-harness.sh, warms the server up (a fresh
# ZooKeeper JVM gets about twice as fast over its first tens of thousands of
# requests), then runs tools/zkl-bench, bench/run-curator.sh and
# bench/kazoo_bench.py through the same command line for every case below,
# PASSES times, with the order of the implementations rotated from one pass
# to the next, and zkl against its protocol in alternating pairs.
# bench/summarize.py then writes, in DIR (default
# bench/results, or bench/results/Nnode for an ensemble of N):
#   latest.md       medians over the passes, ratios zkl/Curator and
#                   zkl/kazoo, and which targets are met
#   latest.jsonl    every run's JSON line, with "case" and "pass" added
#   throughput.svg  contended throughput against the number of clients
# Everything it starts (ZooKeeper, benchmark processes) is stopped on exit,
# also on failure or Ctrl-C. A full run takes about 5 minutes on 2 cores;
# --quick (one pass, fewer operations) about 2.
#
# Environment: ZKL_BENCH (the zkl-bench program, as --zkl-bench).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(cd "$here/.." && pwd -P)
harness=$top/tests/zk-harness.sh

nodes=1
passes=5
quick=no
out=$here/results
only=
long_queues=no
scale=no
zkl_bench=${ZKL_BENCH:-}

usage() {
    sed -n '2,4p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while (($#)); do
    case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    --quick) quick=yes; shift ;;
    --zkl-bench) zkl_bench=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --long-queues) long_queues=yes; shift ;;
    --scale) scale=yes; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
[[ $nodes =~ ^[0-9]+$ && $passes =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
# An ensemble's report goes beside the standalone one, not over it.
((nodes > 1)) && [[ $out == "$here/results" ]] && out=$here/results/${nodes}node

if [[ -z $zkl_bench ]]; then
    for c in ./tools/zkl-bench "$top/build/tools/zkl-bench"; do
        if [[ -x $c ]]; then
            zkl_bench=$c
            break
        fi
    done
fi
[[ -n $zkl_bench && -x $zkl_bench ]] || {
    echo "compare.sh: no zkl-bench: build it (make) and pass --zkl-bench PATH" >&2
    exit 1
}
zkl_bench=$(cd "$(dirname "$zkl_bench")" && pwd -P)/$(basename "$zkl_bench")
python=/usr/bin/python3
[[ -x $python ]] || python=python3

impls=(zkl curator kazoo)
if [[ -n $only ]]; then
    impls=("$only")
fi

mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/zkl-compare.XXXXXX")
zkdir=$work/zk
raw=$work/runs.jsonl
: >"$raw"
child=

cleanup() {
    trap '' INT TERM HUP
    if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
        kill -TERM "$child" 2>/dev/null || true
        sleep 1
        kill -KILL "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    if [[ -d $zkdir ]]; then
        "$harness" stop "$zkdir" >/dev/null 2>&1 || echo "compare.sh: stopping ZooKeeper failed" >&2
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

note() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

note "starting ZooKeeper (--nodes $nodes)"
# tickTime 2000 (the server default): the 30 s sessions of the benchmarks
# are granted as asked.
"$harness" start "$zkdir" --nodes "$nodes" --tick 2000 --owner $$ >/dev/null
servers=$(<"$zkdir/hosts")
note "servers $servers"

# Compile the Java benchmark before anything is timed.
if [[ " ${impls[*]} " == *" curator "* ]]; then
    "$here/build-java.sh" --cached "$here/CuratorBench.java" >/dev/null
fi

# run IMPL CASE PASS TIMEOUT ARGS...: one benchmark process; its JSON line,
# tagged, goes to $raw. A failed run is reported and left out.
run() {
    local impl=$1 case=$2 pass=$3 limit=$4 line rc=0
    shift 4
    local -a cmd
    case $impl in
    zkl | zkl-prefetch | zkl-async | protocol) cmd=("$zkl_bench") ;;
    curator) cmd=("$here/run-curator.sh") ;;
    kazoo) cmd=("$python" "$here/kazoo_bench.py") ;;
    esac
    [[ $impl == zkl-prefetch ]] && set -- "$@" --prefetch
    [[ $impl == zkl-async ]] && set -- "$@" --async
    timeout --kill-after=10 "$limit" "${cmd[@]}" --servers "$servers" \
        --path "/bench/$impl" "$@" >"$work/out" 2>"$work/err" &
    child=$!
    wait "$child" || rc=$?
    child=
    line=$(tail -n 1 "$work/out")
    if ((rc != 0)) || [[ $line != \{* ]]; then
        note "FAILED: $impl $case (status $rc): $(tail -n 3 "$work/err" | tr '\n' ' ')"
        return 0
    fi
    printf '%s\n' "$line" | "$python" -c '
import json, sys
d = json.loads(sys.stdin.read())
d["impl"], d["case"], d["pass"] = sys.argv[1], sys.argv[2], int(sys.argv[3])
print(json.dumps(d))' "$impl" "$case" "$pass" >>"$raw"
    note "$(printf '%-13s %-16s %s' "$impl" "$case" "$("$python" -c '
import json, sys
d = json.loads(sys.argv[1])
if "metrics_ab_passes" in d:
    print("metrics on %.1f / off %.1f ops/s, paired ratio %.4f, cpu ratio %.4f" % (d["on_ops_per_sec_median"], d["off_ops_per_sec_median"], d["paired_throughput_ratio_median"], d["cpu_ratio_on_off"]))
else:
    print("%8.1f ops/s  p50 %6d us  p99 %6d us  req/op %s" % (d["ops_per_sec"], d["p50_us"], d["p99_us"], d.get("zk_requests_per_op")))' "$line")")"
}

# Operation counts: (full, quick).
if [[ $quick == yes ]]; then
    passes=1
    n_unc=1000 n_con=1000 n_many=500 n_floor=1000 n_herd=100 n_point=500
else
    n_unc=2000 n_con=2000 n_many=1000 n_floor=2000 n_herd=100 n_point=1000
fi

note "warming the server up"
warm() {
    timeout --kill-after=10 300 "$zkl_bench" --servers "$servers" --path /bench/warm "$@" \
        >/dev/null 2>"$work/err" || note "warm-up run failed: $(tail -n 2 "$work/err" | tr '\n' ' ')"
}
warm --workload floor --ops 15000
warm --workload contended --clients 8 --ops 8000
warm --workload many --ops 2000

# The cases: name, workload, clients, ops, warm-up ops, implementations.
# "all" is zkl, Curator and kazoo; zkl-prefetch is zkl with --prefetch.
cases=(
    "uncontended     uncontended 1  $n_unc   1000 all"
    "floor           floor       1  $n_floor 500  zkl"
    "chain-8         chain       8  $n_con   500  zkl"
    "chain-32        chain       32 $n_con   500  zkl"
    "contended-8     contended   8  $n_con   500  all+prefetch"
    "contended-32    contended   32 $n_con   500  all+prefetch"
    "many            many        1  $n_many  300  all"
    "contended-1     contended   1  $n_point 200  all+prefetch"
    "contended-2     contended   2  $n_point 200  all+prefetch"
    "contended-4     contended   4  $n_point 200  all+prefetch"
    "contended-16    contended   16 $n_point 300  all+prefetch"
)

for ((p = 1; p <= passes; p++)); do
    note "pass $p of $passes"
    # Rotate the order of the implementations from pass to pass.
    k=$(((p - 1) % 3))
    order=("${impls[@]:k}" "${impls[@]:0:k}")
    for c in "${cases[@]}"; do
        read -r name workload clients ops warm which <<<"$c"
        for impl in "${order[@]}"; do
            list=()
            if [[ $which == zkl ]]; then
                [[ $impl == zkl ]] && list=(zkl)
            else
                list=("$impl")
                [[ $which == all+prefetch && $impl == zkl ]] && list+=(zkl-prefetch)
            fi
            for i in "${list[@]}"; do
                run "$i" "$name" "$p" 300 --workload "$workload" --clients "$clients" \
                    --ops "$ops" --warmup "$warm"
            done
        done
    done
done

# zkl against its own protocol written on the bare client (the protocol
# workload: the same requests, none of the library), at 8 and 32 clients:
# back-to-back pairs, which one goes first alternating from pair to pair, so
# that a machine whose load drifts disturbs both alike. The report gives
# zkl's share of the protocol (medians, and the median of the pairs' ratios)
# and the protocol's share of the chain floor.
if [[ " ${impls[*]} " == *" zkl "* ]]; then
    pairs=$passes
    [[ $quick == yes ]] && pairs=3
    for n in 8 32; do
        note "zkl against its protocol, $n clients, $pairs pairs"
        for ((p = 1; p <= pairs; p++)); do
            order=(zkl protocol)
            ((p % 2 == 0)) && order=(protocol zkl)
            for i in "${order[@]}"; do
                w=contended
                [[ $i == protocol ]] && w=protocol
                run "$i" "versus-$n" "$p" 300 --workload "$w" --clients "$n" --ops "$n_con" \
                    --warmup 500
            done
        done
    done
fi

# Once: the herd (wake-ups per handoff behind 100 waiters), and zkl's memory
# with 10,000 locks held by one client.
note "herd, 100 waiters"
for impl in "${impls[@]}"; do
    list=("$impl")
    [[ $impl == zkl ]] && list+=(zkl-prefetch)
    for i in "${list[@]}"; do
        run "$i" herd-100 1 300 --workload herd --clients 100 --ops "$n_herd"
    done
done
# Once: what collecting lock metrics costs zkl, sessions with metrics on and
# off in alternating back-to-back passes (the report checks it under 2%).
if [[ " ${impls[*]} " == *" zkl "* ]]; then
    ab=5
    [[ $quick == yes ]] && ab=3
    note "zkl: metrics on and off, $ab passes each"
    run zkl metrics-uncontended 1 600 --workload uncontended --clients 1 --ops "$n_unc" \
        --warmup 500 --metrics-ab "$ab"
    run zkl metrics-contended-8 1 600 --workload contended --clients 8 --ops "$n_con" \
        --warmup 300 --metrics-ab "$ab"
fi
# Once: leader election, zkl and Curator's LeaderLatch side by side (kazoo
# has no such benchmark): leadership changes when each leader resigns at
# once, and the time from a leader's SIGKILL to the next leader, which the
# server's expiry of the dead session (4 s here) dominates.
for impl in "${impls[@]}"; do
    [[ $impl == zkl || $impl == curator ]] || continue
    note "$impl: elections"
    run "$impl" elect-3 1 300 --workload elect --clients 3 --ops 300 --warmup 50
    run "$impl" elect-kill 1 300 --workload elect-kill --ops 5 --session-timeout 4000
done
if [[ " ${impls[*]} " == *" zkl "* ]]; then
    note "zkl: 10,000 locks held"
    run zkl many-10000 1 300 --workload many --clients 1 --ops 10000
fi
# With --scale, once: 100,000 locks held by one client, and 500 sessions in
# one process (memory, and what holding more costs an acquire).
if [[ $scale == yes && " ${impls[*]} " == *" zkl "* ]]; then
    note "zkl: 100,000 locks held"
    run zkl many-100000 1 1500 --workload many --clients 1 --ops 100000
    note "zkl: 500 sessions in one process"
    run zkl sessions-500 1 600 --workload sessions --clients 500
fi

# Long queues: N waiters on one lock over 16 sessions, then the lock passes
# through all of them (handoffs/s once every waiter joined). An
# implementation that cannot serve a length is reported as failed there.
queue_lengths=(100 1000 10000)
[[ $quick == yes ]] && queue_lengths=(100 1000)
[[ $long_queues == yes ]] && queue_lengths+=(20000)
# zkl runs twice: with a thread per waiter as the others do, and with
# asynchronous requests (zkl-async: no thread per waiter, so its heap per
# waiter is the library's alone).
for n in "${queue_lengths[@]}"; do
    for impl in "${impls[@]}"; do
        list=("$impl")
        [[ $impl == zkl ]] && list+=(zkl-async)
        for i in "${list[@]}"; do
            note "$i: a queue of $n waiters"
            run "$i" "queue-$n" 1 420 --workload queue --clients 16 --waiters "$n"
        done
    done
done

cp "$raw" "$out/latest.jsonl"
"$python" "$here/summarize.py" --nodes "$nodes" --passes "$passes" \
    --md "$out/latest.md" --chart "$out/throughput.svg" "$out/latest.jsonl"
note "wrote $out/latest.md"
