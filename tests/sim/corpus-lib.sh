#!/bin/sh
# sim-lib's regression corpus (tests/sim/corpus-lib.txt): each schedule
# that once found a bug of the library, replayed alone, without shrinking.
# Fails on any violation, with the seed's replay line.
#   tests/sim/corpus-lib.sh [PROGRAM [CORPUS]]
# The corpus's second column sets SIM_THREADS for its line ("-": both ways).
src=${srcdir:-$(dirname "$0")/../..}
prog=${1:-tests/sim/sim-lib}
corpus=${2:-$src/tests/sim/corpus-lib.txt}
[ -x "$prog" ] || { echo "corpus: no $prog"; exit 99; }
n=0
bad=0
while read -r seed threads what; do
    case $seed in '' | '#'*) continue ;; esac
    [ "$threads" = - ] && threads=
    n=$((n + 1))
    if ! out=$(env SIM_THREADS="$threads" SIM_SEED="$seed" SIM_SCHEDULES=1 SIM_SHRINK=0 \
        "$prog" 2>&1); then
        bad=$((bad + 1))
        echo "corpus: seed $seed (SIM_THREADS=$threads; once $what) fails:"
        printf '%s\n' "$out" | grep -E '^sim: (VIOLATION|CRASH|replay)' | head -n 3
    fi
done <"$corpus"
echo "corpus: $n schedules, $bad failing"
[ "$bad" -eq 0 ]
