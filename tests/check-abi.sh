#!/bin/sh
# The library keeps the ABI of 1.0.0, checked two ways:
#  - every prototype of 1.0.0's headers (tests/abi/zkl-1.0.0.prototypes) is
#    still in the headers, unchanged;
#  - libabigail's abidiff compares the built libzkl.so with
#    tests/abi/libzkl-1.0.0.abi (scripts/abi-baseline.sh wrote it from the
#    1.0.0 release) and fails on a function of 1.0.0 removed or moved off its
#    version node, or a change to its type or to a public type it reaches.
#    (abidiff ties a function's type to its symbol only where the symbol's
#    own compilation unit comes first, so the prototypes are checked too.)
# Added functions and what abidiff counts harmless are shown and pass. The
# abidiff part is skipped, with a message, only where abidiff is missing.
set -eu
src=${top_srcdir:-.}
build=${top_builddir:-.}
lib="$build/.libs/libzkl.so"
baseline="$src/tests/abi/libzkl-1.0.0.abi"
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
[ -f "$baseline" ] || { echo "no $baseline"; exit 1; }
fail=0
protos="$src/tests/abi/zkl-1.0.0.prototypes"
[ -f "$protos" ] || { echo "no $protos"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The declarations, one a line, whitespace collapsed (as tests/check-man.sh).
awk '/^ZKL_EXPORT/ { d = ""; on = 1 }
     on { d = d " " $0; if (index($0, ";")) { print d; on = 0 } }' \
    "$src/include/zkl.h" "$src/include/zkl/zookeeper.h" |
    sed -e 's/ZKL_EXPORT //' -e 's/ ZKL_WARN_UNUSED//' -e 's/[[:space:]][[:space:]]*/ /g' \
        -e 's/^ //' -e 's/( /(/g' -e 's/ )/)/g' | sort >"$tmp/now"
sort "$protos" | comm -23 - "$tmp/now" >"$tmp/gone"
if [ -s "$tmp/gone" ]; then
    echo "check-abi: FAIL: these prototypes of 1.0.0 are gone or changed in the headers:"
    sed 's/^/  /' "$tmp/gone"
    echo "  A function of 1.0.0 keeps its type: add a new function instead."
    fail=1
fi
if ! command -v abidiff >/dev/null 2>&1; then
    echo "check-abi: SKIP: abidiff not found (Debian: abigail-tools, which scripts/deps.sh" \
        "installs); the prototypes were checked"
    [ "$fail" -eq 0 ] || exit 1
    exit 77
fi
# Without debug information only the functions' presence can be compared.
if ! readelf -S -W "$lib" | grep -q '\.debug_info'; then
    echo "check-abi: note: $lib has no debug information (built without -g):" \
        "functions are compared by name only, not by type"
fi
rc=0
abidiff --headers-dir2 "$src/include" --headers-dir2 "$build/include" \
    "$baseline" "$lib" >"$tmp/report" 2>&1 || rc=$?
cat "$tmp/report"
# abidiff's status is a bit set: 1 an error, 2 a usage error, 4 a change,
# 8 an incompatible change (a function removed). A changed type is only 4:
# the summaries' counts of removed and changed say what broke.
if [ $((rc & 3)) -ne 0 ]; then
    echo "check-abi: abidiff failed (status $rc)"
    exit 1
fi
broken=$(sed -n 's/^\(Functions\|Variables\) changes summary: \([0-9]*\) Removed, \([0-9]*\) Changed.*/\2 \3/p' \
    "$tmp/report" | awk '{ n += $1 + $2 } END { print n + 0 }')
if [ $((rc & 8)) -ne 0 ] || [ "$broken" -ne 0 ]; then
    echo "check-abi: FAIL: the library breaks the ABI of 1.0.0 (above)."
    echo "  A function of 1.0.0 may not go or change its type: add a new function instead."
    fail=1
fi
[ "$fail" -eq 0 ] || exit 1
echo "check-abi: every function of 1.0.0 is there with its type"
