#!/bin/sh
# check-sim-mutants: tests/sim/mutants.sh SIM_LIB
# Each tests/sim/mutants/NN-name.patch brings back one real bug (its
# "Subject:" line says which). For each, a copy of what sim-lib is built
# from (lib, recipes, include, tests/sim) is patched with patch -p1, the
# files the patch changed (and those including a changed header) are
# compiled with sim-lib's own sources (the real library over the model:
# tests/sim/sim_lib.c), and sim-lib is linked from them ahead of the
# build's own archives, which give everything else. Each mutant must be
# found, a violation reported, within SIM_MUTANT_SEEDS schedules (default
# 800) from seed SIM_SEED (default 1), where the real program (SIM_LIB)
# passes every one of them. A patch that no longer applies or
# builds fails the run. SIM_MUTANTS, a pattern, picks some patches by name
# (default: all). Ends with "mutants: K of N found"; fails unless every one
# is found.
#
# From the Makefile (check-sim-mutants): MUT_SRCDIR (the top source
# folder), MUT_DIR (a scratch folder), MUT_CC, MUT_CPPFLAGS (with
# -I$MUT_SRCDIR/... paths, which are searched in the copy first), MUT_CFLAGS,
# MUT_LDFLAGS, MUT_LIBS (the build's archives, then the libraries),
# MUT_LIB_LDFLAGS (sim-lib's own link flags). A patch's line
# "Program: sim-lib" dates from when a second program ran some of them.
seeds=${SIM_MUTANT_SEEDS:-800}
seed=${SIM_SEED:-1}
# the mix the census was taken under (SIM_MIX=drawn for the world drawn per schedule)
SIM_MIX=${SIM_MIX:-fixed}
export SIM_MIX
real=$1
top=$MUT_SRCDIR                     # as the flags name it (relative, perhaps)
src=$(cd "$top" && pwd) || exit 1   # and where the patches are read from anywhere
work=$MUT_DIR

run_sim() {
    SIM_SEED=$seed SIM_SCHEDULES=$seeds SIM_SHRINK=0 SIM_EVENTS=1000000000 "$1" 2>/dev/null
}

if ! out=$(run_sim "$real"); then
    printf '%s\n' "$out" | grep '^sim: VIOLATION' | head -n 1
    echo "mutants: the real library fails these schedules: no mutant can be told apart"
    exit 1
fi
# What sim-lib is built from, besides the library's archive.
prog=sim-lib
mains="tests/sim/sim_lib.c tests/sim/zapi_sim.c tests/sim/sim_threads.c tests/sim/crowd.c \
    tests/sim/lib_outsider.c tests/sim/quiet.c tests/sim/swarm.c"
ldflags=${MUT_LIB_LDFLAGS-}

# The include flags with the copy's folders searched first.
cppflags() {
    for f in $MUT_CPPFLAGS; do
        case $f in
        "-I$top") printf ' -I%s %s' "$1" "$f" ;;
        "-I$top"/*) printf ' -I%s/%s %s' "$1" "${f#-I"$top"/}" "$f" ;;
        *) printf ' %s' "$f" ;;
        esac
    done
}

# The C files to compile for the changed files $@ (paths in the tree): a
# changed C file, and every C file that includes a changed header, at any
# depth (by name, as the sources include them).
to_compile() {
    seen=" "
    todo="$*"
    while [ -n "$todo" ]; do
        set -- $todo
        todo=
        for f in "$@"; do
            case $seen in *" $f "*) continue ;; esac
            seen="$seen$f "
            case $f in
            *.c) printf '%s\n' "$f" ;;
            *.h)
                base=${f##*/}
                todo="$todo $(cd "$copy" && grep -rlF "#include \"$base\"" lib recipes \
                    tests/sim include | grep '\.[ch]$' | tr '\n' ' ')"
                ;;
            esac
        done
    done
}

rm -rf "$work"
mkdir -p "$work" || exit 1
found=0
total=0
broken=0
for p in "$src"/tests/sim/mutants/${SIM_MUTANTS:-*}.patch; do
    [ -f "$p" ] || continue
    total=$((total + 1))
    name=${p##*/}
    name=${name%.patch}
    what=$(sed -n 's/^Subject: *//p' "$p" | head -n 1)
    [ -n "$what" ] || what=$(head -n 1 "$p")
    copy=$work/$name
    mkdir -p "$copy/tests" &&
        cp -R "$src/lib" "$src/recipes" "$src/include" "$copy/" &&
        cp -R "$src/tests/sim" "$copy/tests/" &&
        chmod -R u+w "$copy" || exit 1
    # Strict: no fuzz, no reversed patch, no backup files.
    if ! log=$(cd "$copy" && patch -p1 -F0 --forward --batch --no-backup-if-mismatch <"$p" 2>&1)
    then
        broken=$((broken + 1))
        echo "mutant $name ($what): FAILED: the patch no longer applies:"
        printf '%s\n' "$log" | sed 's/^/    /'
        continue
    fi
    changed=
    for f in $(sed -n 's/^+++ [^/]*\/\([^	 ]*\).*/\1/p' "$p"); do
        cmp -s "$src/$f" "$copy/$f" || changed="$changed $f"
    done
    if [ -z "$changed" ]; then
        broken=$((broken + 1))
        echo "mutant $name ($what): FAILED: the patch changes nothing"
        continue
    fi
    flags=$(cppflags "$copy")
    objs=
    ok=true
    for c in $mains $(to_compile $changed); do
        # Only what the program links: not the other programs of tests/sim.
        case $c in
        tests/sim/check_*.c | tests/sim/diff_*.c | tests/sim/zkproxy.c | tests/sim/sim_speed.c)
            continue
            ;;
        lib/*.c | recipes/*.c | tests/sim/*.c) ;;
        *) continue ;;
        esac
        o=$copy/obj/$(echo "$c" | tr / _).o
        case " $objs " in *" $o "*) continue ;; esac
        mkdir -p "$copy/obj"
        # shellcheck disable=SC2086
        if ! log=$($MUT_CC $flags $MUT_CFLAGS -c "$copy/$c" -o "$o" 2>&1); then
            ok=false
            echo "mutant $name ($what): FAILED: $c does not compile:"
            printf '%s\n' "$log" | sed 's/^/    /'
            break
        fi
        objs="$objs $o"
    done
    # shellcheck disable=SC2086
    if $ok && ! log=$($MUT_CC $MUT_CFLAGS $MUT_LDFLAGS $ldflags -o "$copy/$prog" $objs $MUT_LIBS 2>&1)
    then
        ok=false
        echo "mutant $name ($what): FAILED: it does not link:"
        printf '%s\n' "$log" | sed 's/^/    /'
    fi
    if ! $ok; then
        broken=$((broken + 1))
        continue
    fi
    out=$(run_sim "$copy/$prog")
    line=$(printf '%s\n' "$out" | grep '^sim: VIOLATION' | head -n 1)
    events=$(printf '%s\n' "$out" | sed -n 's/^sim: seed [0-9]*, \([0-9]*\) events,.*/\1/p')
    if [ -n "$line" ]; then
        found=$((found + 1))
        echo "mutant $name ($what): found after $events events: ${line#sim: VIOLATION }"
        rm -rf "$copy"
    else
        echo "mutant $name ($what): NOT found in $seeds schedules from seed $seed"
    fi
done
if [ "$broken" -gt 0 ]; then
    echo "mutants: $found of $total found, $broken not built"
else
    echo "mutants: $found of $total found"
fi
[ "$total" -gt 0 ] && [ "$found" -eq "$total" ]
