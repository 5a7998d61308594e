#!/bin/sh
# The shared library exports the public API and nothing else, every
# function under a ZKL_ version node, and three lists agree with it:
#  - the headers' ZKL_EXPORT declarations;
#  - lib/libzkl.map, the linker's version script (a function it does not
#    name is not exported at all, so a new function is caught here first);
#  - debian/libzkl1.symbols, the Debian package's symbols file;
# and debian/changelog's upstream version is configure.ac's.
# Each disagreement is named with the line that would mend it.
set -eu
src=${top_srcdir:-.}
lib="${top_builddir:-.}/.libs/libzkl.so"
map="$src/lib/libzkl.map"
symbols="$src/debian/libzkl1.symbols"
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
    echo "check-exports: $*"
    fail=1
}

# What the library defines, as NAME@@NODE (the default version) per line;
# readelf rather than nm: nm shows the versions only from binutils 2.37 on.
readelf --dyn-syms -W "$lib" |
    awk '$1 ~ /^[0-9]+:$/ && $5 != "LOCAL" && $7 != "UND" && $8 != "" { print $8 }' |
    sort >"$tmp/defined"
# The version nodes themselves (ZKL_1.0) are the only other entries.
grep -v '^zkl_[a-z]' "$tmp/defined" | grep -v '^ZKL_[0-9.]*$' >"$tmp/x" || true
[ -s "$tmp/x" ] && bad "exported outside the zkl_ API:" $(cat "$tmp/x")
grep '^zkl_' "$tmp/defined" | grep -v '@@ZKL_[0-9][0-9.]*$' >"$tmp/x" || true
[ -s "$tmp/x" ] && bad "exported without a ZKL_ version node:" $(cat "$tmp/x")
grep '^zkl_' "$tmp/defined" | sed 's/@@/ /' | sort >"$tmp/exported"

# The map: "NAME NODE" for each function in a node's global list.
awk '/^ZKL_[0-9.]+ *\{/ { node = $1; sub(/\{$/, "", node); global = 0 }
     /global:/ { global = 1 } /local:/ { global = 0 }
     global && /^[ \t]*zkl_[a-z0-9_]*;/ { n = $1; sub(/;$/, "", n); print n, node }' \
    "$map" | sort >"$tmp/map"
newest=$(grep -o '^ZKL_[0-9.]*' "$map" | tail -n 1)
[ -n "$newest" ] || bad "$map has no ZKL_ node"

# The headers' declarations.
awk '/^ZKL_EXPORT/ { d = ""; on = 1 }
     on { d = d " " $0; if (index($0, ";")) { print d; on = 0 } }' \
    "$src/include/zkl.h" "$src/include/zkl/zookeeper.h" |
    sed -n 's/^[^(]*[ *]\(zkl_[a-z0-9_]*\)(.*/\1/p' | sort -u >"$tmp/declared"

cut -d' ' -f1 "$tmp/map" | sort >"$tmp/map-names"
cut -d' ' -f1 "$tmp/exported" >"$tmp/exported-names"
for f in $(comm -23 "$tmp/declared" "$tmp/map-names"); do
    bad "$f is declared in the headers but $map does not name it (so it is not exported):" \
        "add the line '    $f;' to the $newest node"
done
uniq -d "$tmp/map-names" >"$tmp/x"
[ -s "$tmp/x" ] && bad "$map names these more than once:" $(cat "$tmp/x")
for f in $(comm -13 "$tmp/declared" "$tmp/map-names"); do
    bad "$map names $f, which the headers do not declare"
done
for f in $(comm -13 "$tmp/exported-names" "$tmp/map-names"); do
    bad "$map names $f, which the library does not export (is it defined, with ZKL_EXPORT?)"
done
comm -13 "$tmp/map" "$tmp/exported" >"$tmp/x"
[ -s "$tmp/x" ] && bad "exported under another node than $map says (NAME NODE):" $(cat "$tmp/x")

# The symbols file: " NAME@NODE MINVER" lines; NODE@NODE for each node.
if [ -f "$symbols" ]; then
    sed -n 's/^ \(zkl_[a-z0-9_]*\)@\(ZKL_[0-9.]*\) .*/\1 \2/p' "$symbols" | sort >"$tmp/symbols"
    comm -23 "$tmp/exported" "$tmp/symbols" | while read -r f node; do
        echo "check-exports: $f is exported but $symbols does not list it:" \
            "add the line ' $f@$node VERSION' (VERSION: see the file's head)"
    done >"$tmp/x"
    [ -s "$tmp/x" ] && { cat "$tmp/x"; fail=1; }
    comm -13 "$tmp/exported" "$tmp/symbols" | while read -r f node; do
        echo "check-exports: $symbols lists $f@$node, which the library does not export"
    done >"$tmp/x"
    [ -s "$tmp/x" ] && { cat "$tmp/x"; fail=1; }
    for node in $(cut -d' ' -f2 "$tmp/map" | sort -u); do
        grep -q "^ $node@$node " "$symbols" ||
            bad "$symbols lacks the line ' $node@$node VERSION' for the node $node"
    done
else
    bad "no $symbols"
fi

# The Debian package's version follows the project's (configure.ac's AC_INIT).
pv=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "${top_builddir:-.}/config.h")
dv=$(sed -n '1s/^zkl (\([^)-]*\)-[^)]*).*/\1/p' "$src/debian/changelog")
[ "$pv" = "$dv" ] || bad "debian/changelog's upstream version is '$dv', configure.ac's '$pv':" \
    "add a changelog entry for $pv"

n=$(wc -l <"$tmp/exported")
[ "$n" -gt 10 ] || bad "only $n functions exported"
[ "$fail" -eq 0 ] || exit 1
echo "exported functions: $n, all zkl_, each under its node of $map and in $symbols"
