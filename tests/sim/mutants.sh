#!/bin/sh
# check-sim-mutants: tests/sim/mutants.sh SIM_LOCKS MUTANT...
# Each MUTANT is sim-locks built with one real bug brought back
# (-DZKL_MUTANT=n, Makefile.am); each must be found, a violation reported,
# within SIM_MUTANT_SEEDS schedules (default 100) from seed SIM_SEED
# (default 1), where the real core (SIM_LOCKS) passes every one of them.
# Ends with "mutants: K of N found"; fails unless every one is found.
seeds=${SIM_MUTANT_SEEDS:-100}
seed=${SIM_SEED:-1}
# the mix the census was taken under (SIM_MIX=drawn for the world drawn per schedule)
SIM_MIX=${SIM_MIX:-fixed}
export SIM_MIX
real=$1
shift
if ! out=$(SIM_SEED=$seed SIM_SCHEDULES=$seeds SIM_SHRINK=0 SIM_EVENTS=1000000000 "$real" 2>/dev/null)
then
    printf '%s\n' "$out" | grep '^sim: VIOLATION' | head -n 1
    echo "mutants: the real core fails these schedules: no mutant can be told apart"
    exit 1
fi
found=0
total=0
for prog in "$@"; do
    total=$((total + 1))
    n=${prog##*sim-mutant}
    case $n in
    1) what="a handoff without the own node's watch" ;;
    3) what="the loss told after the next holder may start" ;;
    4) what="a walk-back that trusts a vanished node ahead" ;;
    5) what="a downgrade node with a fresh sequence" ;;
    6) what="an asynchronous multi-lock that stops checking its earlier member" ;;
    7) what="a stalled held node deleted on reconnection, its hold unsaid" ;;
    8) what="a try once that waits out its session timeout" ;;
    *) what="?" ;;
    esac
    out=$(SIM_SEED=$seed SIM_SCHEDULES=$seeds SIM_SHRINK=0 SIM_EVENTS=1000000000 "$prog" 2>/dev/null)
    line=$(printf '%s\n' "$out" | grep '^sim: VIOLATION' | head -n 1)
    if [ -n "$line" ]; then
        found=$((found + 1))
        echo "mutant $n ($what): found: ${line#sim: VIOLATION }"
    else
        echo "mutant $n ($what): NOT found in $seeds schedules from seed $seed"
    fi
done
echo "mutants: $found of $total found"
[ "$found" -eq "$total" ]
