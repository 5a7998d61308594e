#!/bin/sh
# The shared library exports the public API and nothing else.
set -eu
lib="${top_builddir:-.}/.libs/libzkl.so"
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^zkl_[a-z]' || true)
if [ -n "$bad" ]; then
    echo "symbols exported outside the zkl_ API:"
    echo "$bad"
    exit 1
fi
n=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/' | grep -c ' zkl_' || true)
echo "exported symbols: $n, all zkl_"
[ "$n" -gt 10 ]
