#!/bin/sh
# The regression corpus (tests/sim/corpus.txt): each schedule that once
# found a bug, replayed alone, without shrinking. Fails on any violation,
# with the seed's replay line.
#   tests/sim/corpus.sh [PROGRAM [CORPUS [KNOB]]]
# The corpus's second column sets KNOB for its line: SIM_MIX (the
# default, sim-locks' fault mix: "-" for the fixed one) or, for sim-lib,
# SIM_THREADS ("-" for both ways).
src=${srcdir:-$(dirname "$0")/../..}
prog=${1:-tests/sim/sim-locks}
corpus=${2:-$src/tests/sim/corpus.txt}
knob=${3:-SIM_MIX}
[ -x "$prog" ] || { echo "corpus: no $prog"; exit 99; }
n=0
bad=0
while read -r seed mix what; do
    case $seed in '' | '#'*) continue ;; esac
    if [ "$mix" = - ]; then
        [ "$knob" = SIM_MIX ] && mix=fixed || mix=
    fi
    n=$((n + 1))
    if ! out=$(env "$knob=$mix" SIM_SEED=$seed SIM_SCHEDULES=1 SIM_SHRINK=0 "$prog" 2>&1); then
        bad=$((bad + 1))
        echo "corpus: seed $seed ($knob=$mix; once $what) fails:"
        printf '%s\n' "$out" | grep -E '^sim: (VIOLATION|CRASH|replay)' | head -n 3
    fi
done <"$corpus"
echo "corpus: $n schedules, $bad failing"
[ "$bad" -eq 0 ]
