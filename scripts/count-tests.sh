#!/usr/bin/env bash
# Add up the tests of a make check run (and of check-faults, if its log is
# given): Check suites report "Checks: N, Failures: F, Errors: E", the
# script tests "N passed, F failed", other script tests count as one.
#   scripts/count-tests.sh BUILD_DIR [EXTRA_LOG...]
set -euo pipefail
build=$1
shift
passed=0 failed=0 skipped=0
count() {
    local log=$1 line
    if line=$(grep -Eo 'Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1) && [ -n "$line" ]; then
        read -r n f e <<<"$(echo "$line" | tr -dc '0-9 ,' | tr ',' ' ')"
        passed=$((passed + n - f - e)) failed=$((failed + f + e))
    elif line=$(grep -Eo '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1) && [ -n "$line" ]; then
        read -r n f <<<"$(echo "$line" | tr -dc '0-9 ')"
        passed=$((passed + n)) failed=$((failed + f))
        if line=$(grep -Eo '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -n 1); then
            line=${line##*failed, }
            skipped=$((skipped + ${line% skipped}))
        fi
    elif grep -q '^PASS' "$log"; then
        passed=$((passed + 1))
    elif grep -q '^SKIP' "$log"; then
        skipped=$((skipped + 1)) # a test that could not run here (exit 77)
    else
        failed=$((failed + 1))
    fi
}
while IFS= read -r log; do
    count "$log"
done < <(find "$build/tests" -name '*.log' ! -name 'test-suite.log' | sort)
for log in "$@"; do count "$log"; done
if [ "$skipped" -gt 0 ]; then
    echo "zkl: $passed passed, $failed failed, $skipped skipped"
else
    echo "zkl: $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
