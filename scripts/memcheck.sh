#!/usr/bin/env bash
# Run Check suites under valgrind memcheck: any memory error (in the suite's
# process or a child it forks) or any definite/indirect leak of the suite's
# process fails. Runs inside tests/with-zk.sh (needs ZKL_TEST_HOSTS).
#   scripts/memcheck.sh BUILD_DIR [SUITE...]   (default: every ZooKeeper suite and the core's)
set -euo pipefail
build=$1
shift
suites=("$@")
if ((${#suites[@]} == 0)); then
    read -r -a suites <<<"$(make -s -C "$build" print-memcheck-suites)"
fi
supp="$(cd "$(dirname "$0")" && pwd -P)/valgrind.supp"
# MEMCHECK_JOBS suites at a time (default: twice the cores): most of a
# suite's time is waiting for the server.
jobs=${MEMCHECK_JOBS:-$(($(nproc) * 2))}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# check_one SUITE: run it under valgrind; its report goes to stdout, and
# $results/<n>.failed marks a failure.
check_one() {
    local s=$1 logs pid rc main leaks
    logs=$(mktemp -d)
    echo "memcheck: $s"
    # CK_FORK=no: every test of the suite in one process, so a leak of any
    # test is seen. Children forked by a test (worker processes) are checked
    # for memory errors, not for leaks: they exit without unwinding the
    # parent's state they inherited. libtool's wrapper execs the real binary,
    # so $! is the suite's own process.
    # --run-libc-freeres=no: at exit valgrind calls the C library's
    # __libc_freeres, in a forked child too, where a lock that another thread
    # of the parent held at the fork (the resolver's, say) stays locked: the
    # child would hang at its exit. The C library's own memory is reachable
    # anyway; leaks of the code under test are found as before.
    CK_FORK=no CK_DEFAULT_TIMEOUT=300 "$build/libtool" --mode=execute \
        valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
        --run-libc-freeres=no \
        --errors-for-leak-kinds=none --error-exitcode=97 --suppressions="$supp" \
        --log-file="$logs/vg.%p" "$build/$s" >"$logs/out" 2>&1 &
    pid=$!
    rc=0
    wait "$pid" || rc=$?
    main="$logs/vg.$pid"
    leaks=$(grep -E '(definitely|indirectly) lost: [1-9]' "$main" || true)
    if [ "$rc" -ne 0 ] || [ -n "$leaks" ] || ! grep -q 'ERROR SUMMARY: 0 errors' "$main" 2>/dev/null; then
        # Marked first: under set -e, a report that is missing (a suite
        # that could not even start) must not end this function unmarked.
        : >"$results/${s//\//_}.failed"
        cat "$logs/out" || true
        cat "$main" 2>/dev/null || echo "memcheck: no valgrind report for $s"
        grep -l 'ERROR SUMMARY: [1-9]' "$logs"/vg.* 2>/dev/null | xargs -r cat || true
        echo "memcheck: $s FAILED (exit $rc)"
    else
        grep -E '^[0-9]+%: Checks' "$logs/out" || true
        grep -E 'definitely lost|All heap blocks were freed' "$main" || true
    fi
    rm -rf "$logs"
}

# Side by side; each suite's report printed whole once it is done.
n=0
for s in "${suites[@]}"; do
    n=$((n + 1))
    check_one "$s" >"$results/$n.out" 2>&1 &
    while (($(jobs -rp | wc -l) >= jobs)); do
        wait -n || true
    done
done
wait
for ((i = 1; i <= n; i++)); do
    cat "$results/$i.out"
done
fail=0
compgen -G "$results/*.failed" >/dev/null && fail=1
exit $fail
