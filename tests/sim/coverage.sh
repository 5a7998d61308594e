#!/bin/sh
# check-sim-coverage: tests/sim/coverage.sh [BUILD_DIR]
# How much of the library above the engine sim-lib runs: sim-lib is built
# with --coverage in BUILD_DIR (default: sim-coverage in the current
# folder; configured there the first time, apart from the build's own
# objects), run with its default seed and schedules (SIM_SEED,
# SIM_SCHEDULES, SIM_STEPS as for sim-lib), and gcov counts the lines of
# lib/session, lib/front, lib/kit and recipes/ it executed. Prints a line
# per folder and the total:
#   coverage: lib/session  1234 of 2345 lines (52.6%)
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-$PWD/sim-coverage}
mkdir -p "$b"
b=$(cd "$b" && pwd)
cd "$b"
if [ ! -f Makefile ]; then
    "$src/configure" -q CFLAGS="-O0 -g --coverage" LDFLAGS="--coverage" >/dev/null
fi
make -s -j2 tests/sim/sim-lib >/dev/null
find . -name '*.gcda' -exec rm -f {} +
if ! ./tests/sim/sim-lib >sim-lib.out 2>&1; then
    grep '^sim:' sim-lib.out || true
    echo "coverage: sim-lib failed; the figures count the run up to its violation"
fi
grep '^sim: seed' sim-lib.out || true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
total_run=0
total_all=0
for dir in lib/session lib/front lib/kit recipes; do
    run=0
    all=0
    for note in $(find "$dir" -name 'libzklcore_la-*.gcno' ! -path '*/.libs/*' | sort); do
        # libtool's PIC objects (.libs/) are the archive's, where there are two
        lib=$(dirname "$note")/.libs/${note##*/}
        [ -f "$lib" ] && note=$lib
        # gcov -n: the summary alone, no .gcov files; its "Lines executed:P% of N"
        # per source. Only the folder's own sources count (not headers).
        out=$(cd "$tmp" && gcov -n -o "$b/$(dirname "$note")" "$b/$note" 2>/dev/null) || continue
        set -- $(printf '%s\n' "$out" | awk -v d="$src/$dir/" '
            /^File / { f = $2; gsub(/\x27/, "", f); ok = index(f, d) == 1 && f ~ /\.c$/ }
            /^Lines executed:/ && ok {
                split($0, a, /[:% ]+/); p = a[3]; n = a[5]
                r += int(p * n / 100 + 0.5); t += n; ok = 0
            }
            END { printf "%d %d\n", r, t }')
        run=$((run + $1))
        all=$((all + $2))
    done
    awk -v d="$dir" -v r="$run" -v t="$all" \
        'BEGIN { printf "coverage: %-12s %5d of %5d lines (%.1f%%)\n", d, r, t, t ? 100 * r / t : 0 }'
    total_run=$((total_run + run))
    total_all=$((total_all + all))
done
awk -v r="$total_run" -v t="$total_all" \
    'BEGIN { printf "coverage: %-12s %5d of %5d lines (%.1f%%)\n", "all four", r, t, t ? 100 * r / t : 0 }'
