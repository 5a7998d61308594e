#!/bin/sh
# sim-lib's tapes (tests/sim/sim_lib.c, SIM_TAPE): under the default flow
# and under a mix, with and without the program threads, a schedule's
# whole tape ("seed:threads:steps") replays it exactly (the trace of its
# seed's run), a tape's text reads back as itself, and a tape with spans
# of rounds cut and faults left out, as the shrinker makes them, replays
# the same twice, no violation of the real library among them.
#   tests/sim/tape-lib.sh [PROGRAM]
prog=${1:-tests/sim/sim-lib}
[ -x "$prog" ] || { echo "tape: no $prog"; exit 99; }
seed=5
bad=0
fail() {
    echo "tape: $*"
    bad=$((bad + 1))
}
# The trace's lines and the tape read, of SIM_TAPE=$2 under SIM_MIX=$1.
replay() {
    SIM_MIX=$1 SIM_TAPE=$2 "$prog" 2>/dev/null || echo "exit $?"
}
text_of() {
    sed -n 's/^sim: tape of [0-9]* rounds, [0-9]* faults: //p'
}
for mix in fixed 'drop*20,outsider*4'; do
    for th in 0 1; do
        what="SIM_MIX='$mix' SIM_THREADS=$th, seed $seed"
        run=$(SIM_MIX=$mix SIM_SEED=$seed SIM_SCHEDULES=1 SIM_THREADS=$th SIM_TRACE=1 "$prog" \
            2>/dev/null | grep '^\[')
        out=$(replay "$mix" "$seed:$th:4000")
        whole=$(printf '%s\n' "$out" | text_of)
        if [ -z "$whole" ] || printf '%s\n' "$out" | grep -q '^exit'; then
            fail "$what: its whole tape fails or is not printed"
            continue
        fi
        traced=$(printf '%s\n' "$out" | grep '^\[' | grep -v '\] round [0-9]*: its fault')
        [ "$run" = "$traced" ] || fail "$what: its whole tape does not replay it exactly"
        again=$(replay "$mix" "$whole" | text_of)
        [ "$again" = "$whole" ] || fail "$what: its tape reads back as $again"
        # Its first third of rounds and those of its third quarter, every
        # other fault of those.
        rounds=${whole#*:*:*:0-}
        rounds=$((${rounds%%:*} + 1))
        a=$((rounds / 3)) b=$((rounds / 2)) c=$((rounds * 3 / 4))
        faults=$(printf '%s\n' "${whole##*:}" | tr , '\n' |
            awk -F= -v a=$a -v b=$b -v c=$c '($1 < a || ($1 >= b && $1 < c)) && n++ % 2 == 0' |
            paste -sd, -)
        cut="$seed:$th:4000:0-$((a - 1)),$b-$((c - 1)):$faults"
        one=$(replay "$mix" "$cut")
        two=$(replay "$mix" "$cut")
        [ "$(printf '%s\n' "$one" | text_of)" = "$cut" ] ||
            fail "$what: the cut tape reads back as $(printf '%s\n' "$one" | text_of)"
        [ "$one" = "$two" ] || fail "$what: the cut tape $cut replays otherwise the second time"
        printf '%s\n' "$one" | grep -q '^exit' && fail "$what: the cut tape $cut fails"
    done
done
# A tape that names a fault its schedule did not take is refused.
SIM_TAPE="$seed:0:4000:0-9:3=crowd" "$prog" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a tape with a fault its schedule did not take is not refused"
echo "tape: $bad failing"
[ "$bad" -eq 0 ]
