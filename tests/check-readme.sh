#!/bin/sh
# The README's code compiles against the headers: its complete C program
# (which must match what a user copies, and examples/hello.c), and its C++ example as shown (its
# statements inside a main(), its own #includes and nothing more).
set -eu
src="${top_srcdir:-.}"
# zkl/version.h is written by configure, into the build tree
bld="${top_builddir:-build}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The fenced block of language $1 that follows the heading $2.
block() {
    awk -v lang="$1" -v head="$2" '
        index($0, head) == 1 { found = 1; next }
        found && !inside && $0 == "```" lang { inside = 1; next }
        inside && $0 == "```" { exit }
        inside { print }' "$src/README.md"
}
fail=0
block c "## A complete program" >"$tmp/app.c"
if [ -s "$tmp/app.c" ] &&
    gcc -std=c11 -Wall -Wextra -Werror -I"$bld/include" -I"$src/include" -fsyntax-only "$tmp/app.c"; then
    echo "ok: README's complete program compiles"
else
    echo "FAIL: README's complete program"
    fail=$((fail + 1))
fi
# examples/hello.c is that program, byte for byte.
if cmp -s "$tmp/app.c" "$src/examples/hello.c"; then
    echo "ok: README's complete program is examples/hello.c"
else
    echo "FAIL: README's complete program differs from examples/hello.c:"
    diff "$tmp/app.c" "$src/examples/hello.c" || true
    fail=$((fail + 1))
fi
block cpp "## C++" >"$tmp/snippet.cpp"
{
    grep '^#include' "$tmp/snippet.cpp" || true
    printf 'int main() {\n'
    grep -v '^#include' "$tmp/snippet.cpp" || true
    printf '}\n'
} >"$tmp/app.cpp"
if [ -s "$tmp/snippet.cpp" ] &&
    g++ -std=c++17 -Wall -Wextra -Wno-unused-variable -Werror -I"$bld/include" -I"$src/include" -fsyntax-only \
        "$tmp/app.cpp"; then
    echo "ok: README's C++ example compiles"
else
    echo "FAIL: README's C++ example"
    fail=$((fail + 1))
fi
echo "$((3 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
