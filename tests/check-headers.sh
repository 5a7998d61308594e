#!/bin/sh
# The public headers compile cleanly as C++17 (zkl.h, zkl.hpp, and the
# bridge zkl/zookeeper.h with -DTHREADED) and zkl.h as C11, with every
# warning an error, under g++/gcc and clang++/clang.
set -eu
inc="${top_srcdir:-.}/include"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
try() { # EXT COMPILER HEADER FLAGS...
    ext=$1 cc=$2 hdr=$3
    shift 3
    n=$((n + 1))
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "FAIL: $cc not found"
        fail=$((fail + 1))
        return
    fi
    printf '#include <%s>\n' "$hdr" >"$tmp/tu.$ext"
    if "$cc" "$@" -I"$inc" -fsyntax-only "$tmp/tu.$ext" 2>"$tmp/err"; then
        echo "ok: $cc $* <$hdr>"
    else
        echo "FAIL: $cc $* <$hdr>"
        cat "$tmp/err"
        fail=$((fail + 1))
    fi
}
cxxflags="-std=c++17 -Wall -Wextra -pedantic -Werror"
for cxx in g++ clang++; do
    # shellcheck disable=SC2086
    {
        try cpp "$cxx" zkl.h $cxxflags
        try cpp "$cxx" zkl.hpp $cxxflags
        try cpp "$cxx" zkl/zookeeper.h $cxxflags -DTHREADED
    }
done
for cc in gcc clang; do
    try c "$cc" zkl.h -std=c11 -Wall -Wextra -pedantic -Werror
done
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
