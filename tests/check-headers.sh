#!/bin/sh
# The public headers compile cleanly as C++17 (zkl.h, zkl.hpp, and the
# bridge zkl/zookeeper.h with -DTHREADED) and zkl.h as C11 and as pedantic
# C99, with every warning an error, under g++/gcc and clang++/clang; and
# zkl.h under clang's -Weverything, in C and in C++ (less C++98
# compatibility, which a C++17 program does not ask for).
set -eu
inc="${top_srcdir:-.}/include"
# zkl/version.h is written by configure, into the build tree
binc="${top_builddir:-build}/include"
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
    if "$cc" "$@" -I"$binc" -I"$inc" -fsyntax-only "$tmp/tu.$ext" 2>"$tmp/err"; then
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
    try c "$cc" zkl.h -std=c99 -Wall -Wextra -pedantic -Werror
done
try c clang zkl.h -std=c99 -Weverything -Werror
try cpp clang++ zkl.h -std=c++17 -Weverything -Werror -Wno-c++98-compat -Wno-c++98-compat-pedantic
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
