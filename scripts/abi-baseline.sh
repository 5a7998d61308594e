#!/usr/bin/env bash
# Write the ABI baseline of a release: build libzkl.so of REF (a commit or
# tag) apart, with configure's defaults (-g -O2), and describe its exported
# functions and the public types they reach with libabigail's abidw; and
# the prototypes of its headers, one a line, beside it.
#   scripts/abi-baseline.sh REF DIR/libzkl-X.Y.Z.abi    (writes DIR/zkl-X.Y.Z.prototypes too)
# tests/check-abi.sh compares every build with the baseline of 1.0.0.
set -euo pipefail
ref=$1
out=$(realpath -m "$2")
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
command -v abidw >/dev/null || { echo "abi-baseline: no abidw (scripts/deps.sh installs abigail-tools)" >&2; exit 1; }
work=$(mktemp -d)
trap 'git -C "$top" worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$top" worktree add --detach "$work/src" "$ref" >/dev/null
cd "$work/src"
autoreconf -fi >/dev/null 2>&1
mkdir b && cd b
../configure -q CFLAGS='-g -O2'
make -s -j"$(nproc)" libzkl.la >/dev/null
# A release from before lib/libzkl.map exported its functions unversioned:
# link it again with today's map, so that its functions carry the node they
# have had since (ZKL_1.0). abidiff compares the types of functions only
# when both sides are versioned, and a function moved to another node then
# shows as one removed.
if [ ! -f ../lib/libzkl.map ]; then
    soname=$(readelf -d .libs/libzkl.so | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    # shellcheck disable=SC2046
    gcc -shared -o .libs/libzkl-versioned.so -Wl,-soname,"$soname" \
        -Wl,--whole-archive .libs/libzklcore.a -Wl,--no-whole-archive \
        -Wl,--version-script="$top/lib/libzkl.map" \
        $(sed -n 's/^ZK_LIBS = //p' Makefile) -pthread
    rm .libs/libzkl.so
    mv .libs/libzkl-versioned.so .libs/libzkl.so
fi
# No paths of this machine in the file: only the ABI.
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --drop-private-types \
    --headers-dir ../include --headers-dir include --out-file "$out" .libs/libzkl.so
protos=$(dirname "$out")/$(basename "$out" .abi | sed 's/^lib//').prototypes
awk '/^ZKL_EXPORT/ { d = ""; on = 1 }
     on { d = d " " $0; if (index($0, ";")) { print d; on = 0 } }' ../include/zkl.h ../include/zkl/zookeeper.h |
    sed -e 's/ZKL_EXPORT //' -e 's/ ZKL_WARN_UNUSED//' -e 's/[[:space:]][[:space:]]*/ /g' \
        -e 's/^ //' -e 's/( /(/g' -e 's/ )/)/g' | sort >"$protos"
echo "abi-baseline: $protos ($(wc -l <"$protos") prototypes)"
echo "abi-baseline: $out ($(grep -c "<elf-symbol name='zkl_" "$out") functions)"
