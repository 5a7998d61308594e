#!/usr/bin/env bash
# vs-commit.sh - this tree's zkl-bench beside an earlier commit's, on one server.
#
# Usage: bench/vs-commit.sh [--commit REV] [--pairs N] [--clients "8 32"]
#                           [--ops N] [--zkl-bench PATH] [--out FILE] [--same-driver]
#        bench/vs-commit.sh --report FILE...
#
# Builds REV's zkl-bench (default: 1.0.0, d5c6d18) from `git archive` into a
# cache (${XDG_CACHE_HOME:-~/.cache}/zkl/vs-commit/<commit>), starts one
# standalone ZooKeeper through tests/zk-harness.sh, warms it up, then runs
# the contended workload N times (default 7) for each client count, the two
# programs alternating within each pair and the one to go first alternating
# from pair to pair, so that a drift of the server or the machine falls on
# both alike. For each run it records throughput and the client CPU (user +
# system of the benchmark process, from its rusage) per acquisition, and
# prints, per client count, the medians of both and the median of the
# per-pair ratios (this tree / REV), with a 95% interval for the
# throughput's (a bootstrap over the pairs, seeded: the same file prints the
# same interval). Single runs of a few seconds on a shared machine spread
# by several percent, so a ratio near 1 says little without its interval.
# Every run's JSON line goes to FILE (default: a file in the temporary
# folder, named at the end). --report prints that table again for one or
# more such files, their pairs pooled, and runs nothing.
# Everything it starts is stopped on exit, also on failure or Ctrl-C.
#
# The benchmark itself changed since 1.0.0: this tree's zkl-bench goes
# through zkl_lock handles and stamps each handoff (three more clock reads
# and shared atomics per acquisition), which its process's CPU includes.
# (Through 1.2.5 its malloc and free went through the heap meter's
# wrappers in every workload; now only in those that report the heap, into
# which it preloads the meter, not in contended.)
# --same-driver compares the libraries alone: both sides run REV's
# zkl-bench, "new" with this tree's libzkl.so.1 (the build's .libs beside
# --zkl-bench's tools/) in its place, which the frozen ABI allows.
# A benchmark: it reports, it never fails on a figure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(cd "$here/.." && pwd -P)
harness=$top/tests/zk-harness.sh

rev=d5c6d18
pairs=7
clients="8 32"
ops=3000
new_bench=
out=
same_driver=false

usage() {
    sed -n '4,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

python=/usr/bin/python3
[[ -x $python ]] || python=python3

# summary LABEL FILE...: the table of the runs in FILEs, pairs pooled.
summary() {
    local label=$1
    shift
    "$python" - "$label" "$@" <<'EOF'
import json, random, statistics, sys
label, files = sys.argv[1], sys.argv[2:]
runs = [dict(json.loads(l), _file=i) for i, f in enumerate(files) for l in open(f) if l.strip()]
print("%s: contended, medians of paired runs" % label)
print("%8s %14s %14s %8s %17s %14s %14s %8s" % ("clients", "old ops/s", "new ops/s",
      "ratio", "95% interval", "old cpu us/op", "new cpu us/op", "ratio"))
for n in sorted({r["clients"] for r in runs}):
    by = {}
    for r in runs:
        if r["clients"] == n:
            by.setdefault((r["_file"], r["pair"]), {})[r["which"]] = r
    full = [v for v in by.values() if "old" in v and "new" in v]
    if not full:
        continue
    med = lambda k, w: statistics.median(v[w][k] for v in full)
    ratios = [v["new"]["ops_per_sec"] / v["old"]["ops_per_sec"] for v in full]
    tr = statistics.median(ratios)
    cr = statistics.median(v["new"]["cpu_us_per_op"] / v["old"]["cpu_us_per_op"] for v in full)
    rng = random.Random(n)
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(4000))
    print("%8d %14.1f %14.1f %8.3f  [%6.3f, %6.3f] %14.1f %14.1f %8.3f   (%d pairs)" % (
        n, med("ops_per_sec", "old"), med("ops_per_sec", "new"), tr, boot[99], boot[3899],
        med("cpu_us_per_op", "old"), med("cpu_us_per_op", "new"), cr, len(full)))
EOF
}

if [[ ${1-} == --report ]]; then
    shift
    (($#)) || { usage >&2; exit 2; }
    for f in "$@"; do
        [[ -r $f ]] || { echo "vs-commit.sh: cannot read $f" >&2; exit 1; }
    done
    summary "this tree against the earlier commit ($# file(s), pairs pooled)" "$@"
    exit 0
fi

while (($#)); do
    case $1 in
    --commit) rev=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --zkl-bench) new_bench=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --same-driver) same_driver=true; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
[[ $pairs =~ ^[1-9][0-9]*$ && $ops =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
for n in $clients; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
done

note() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ -z $new_bench ]]; then
    for c in ./tools/zkl-bench "$top/build/tools/zkl-bench"; do
        [[ -x $c ]] && { new_bench=$c; break; }
    done
fi
[[ -n $new_bench && -x $new_bench ]] || {
    echo "vs-commit.sh: no zkl-bench for this tree: build it and pass --zkl-bench PATH" >&2
    exit 1
}
new_bench=$(cd "$(dirname "$new_bench")" && pwd -P)/$(basename "$new_bench")

commit=$(git -C "$top" rev-parse --verify "$rev^{commit}") || {
    echo "vs-commit.sh: no commit $rev in $top" >&2
    exit 1
}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/zkl/vs-commit/$commit
old_bench=$cache/build/tools/zkl-bench
if [[ ! -x $old_bench ]]; then
    note "building zkl-bench of ${commit:0:12} in $cache"
    rm -rf "$cache"
    mkdir -p "$cache/src"
    git -C "$top" archive "$commit" | tar -x -C "$cache/src"
    # Built as configure sets it up by default (-O2), as this tree's build
    # is; only the benchmark and the library it links.
    if ! (cd "$cache/src" && autoreconf -fi && mkdir -p "$cache/build" && cd "$cache/build" &&
        "$cache/src/configure" -q && make -s -j"$(nproc)" tools/zkl-bench) >"$cache/build.log" 2>&1; then
        echo "vs-commit.sh: building ${commit:0:12} failed; see $cache/build.log" >&2
        rm -rf "$cache/build"
        exit 1
    fi
fi

# --same-driver: REV's benchmark program itself (not libtool's wrapper,
# which would put REV's library first), once with each library.
old_lib=$cache/build/.libs
new_lib=
if $same_driver; then
    new_lib=$(cd "$(dirname "$new_bench")/../.libs" 2>/dev/null && pwd -P) || new_lib=
    [[ -n $new_lib && -e $new_lib/libzkl.so.1 ]] || {
        echo "vs-commit.sh: --same-driver: no libzkl.so.1 in $(dirname "$new_bench")/../.libs" >&2
        exit 1
    }
    old_bench=$cache/build/tools/.libs/zkl-bench
    [[ -x $old_bench ]] || { echo "vs-commit.sh: no $old_bench" >&2; exit 1; }
    new_bench=$old_bench
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/zkl-vs.XXXXXX")
zkdir=$work/zk
[[ -n $out ]] || out=${TMPDIR:-/tmp}/zkl-vs-$(date +%Y%m%d-%H%M%S).jsonl
: >"$out"
child=

cleanup() {
    trap '' INT TERM HUP
    if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
        kill -TERM "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    if [[ -d $zkdir ]]; then
        "$harness" stop "$zkdir" >/dev/null 2>&1 || echo "vs-commit.sh: stopping ZooKeeper failed" >&2
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

note "starting ZooKeeper"
"$harness" start "$zkdir" --tick 2000 --owner $$ >/dev/null
servers=$(<"$zkdir/hosts")

# with_lib old|new COMMAND...: COMMAND, with that side's library under
# --same-driver.
with_lib() {
    local which=$1
    shift
    if ! $same_driver; then
        "$@"
    elif [[ $which == new ]]; then
        LD_LIBRARY_PATH=$new_lib "$@"
    else
        LD_LIBRARY_PATH=$old_lib "$@"
    fi
}

# run WHICH PROGRAM CLIENTS PAIR: one contended run under a small wrapper
# that adds the child's CPU time (rusage) to its JSON line.
run() {
    local which=$1 prog=$2 n=$3 pair=$4 rc=0
    with_lib "$which" timeout --kill-after=10 600 "$python" -c '
import json, os, resource, subprocess, sys
which, pair, prog = sys.argv[1], int(sys.argv[2]), sys.argv[3]
p = subprocess.run([prog] + sys.argv[4:], stdout=subprocess.PIPE, check=True)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
d = json.loads(p.stdout.decode().strip().splitlines()[-1])
cpu = ru.ru_utime + ru.ru_stime
d.update(which=which, pair=pair, cpu_s=round(cpu, 4),
         cpu_us_per_op=round(cpu * 1e6 / max(1, d["ops"]), 2))
print(json.dumps(d))' "$which" "$pair" "$prog" --servers "$servers" \
        --path "/bench/vs-$which" --workload contended --clients "$n" \
        --ops "$ops" >>"$out" 2>"$work/err" &
    child=$!
    wait "$child" || rc=$?
    child=
    if ((rc != 0)); then
        note "FAILED: $which, $n clients (status $rc): $(tail -n 3 "$work/err" | tr '\n' ' ')"
        return 1
    fi
}

note "warming the server up"
for which in old new; do
    prog=$old_bench
    [[ $which == new ]] && prog=$new_bench
    with_lib "$which" "$prog" --servers "$servers" --path /bench/warm \
        --workload floor --ops 15000 >/dev/null
    with_lib "$which" "$prog" --servers "$servers" --path /bench/warm \
        --workload contended --clients 8 --ops 8000 >/dev/null
done

for n in $clients; do
    for ((p = 1; p <= pairs; p++)); do
        if ((p % 2)); then
            run old "$old_bench" "$n" "$p" && run new "$new_bench" "$n" "$p"
        else
            run new "$new_bench" "$n" "$p" && run old "$old_bench" "$n" "$p"
        fi
        note "$n clients, pair $p of $pairs done"
    done
done

driver=
$same_driver && driver=" (libraries only: both run ${commit:0:12}'s zkl-bench)"
summary "this tree against ${commit:0:12}$driver" "$out"
note "every run: $out"
