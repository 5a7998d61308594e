#!/usr/bin/env bash
# Run Check suites under valgrind memcheck: any error or definite/indirect
# leak fails. Runs inside tests/with-zk.sh (needs ZKL_TEST_HOSTS).
#   scripts/memcheck.sh BUILD_DIR [SUITE...]   (default: every ZooKeeper suite)
set -euo pipefail
build=$1
shift
suites=("$@")
if ((${#suites[@]} == 0)); then
    suites=($(make -s -C "$build" print-zk-suites))
fi
fail=0
for s in "${suites[@]}"; do
    log=$(mktemp)
    echo "memcheck: $s"
    # CK_FORK=no: every test of the suite in one process, so leaks of any
    # test are seen; libtool's wrapper is bypassed to run the real binary.
    if ! CK_FORK=no CK_DEFAULT_TIMEOUT=300 "$build/libtool" --mode=execute \
        valgrind -q --tool=memcheck --child-silent-after-fork=yes --leak-check=full --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite,indirect --error-exitcode=97 \
        --suppressions="$(dirname "$0")/valgrind.supp" \
        "$build/$s" >"$log" 2>&1; then
        cat "$log"
        echo "memcheck: $s FAILED"
        fail=1
    else
        grep -E '^[0-9]+%: Checks' "$log" || true
    fi
    rm -f "$log"
done
exit $fail
