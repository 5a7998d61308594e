#!/bin/sh
# The section-3 pages match the API: every function that libzkl.so exports
# and the headers declare has a page (a family page's NAME, or a link page
# to one), no page names a function that is gone, each function's SYNOPSIS
# shows the header's prototype, Makefile.am installs every page, and every
# page renders without a warning.
set -eu
src=${top_srcdir:-.}
build=${top_builddir:-.}
lib="$build/.libs/libzkl.so"
mandir="$src/docs/man"
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
[ -d "$mandir/man3" ] || { echo "no $mandir/man3"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
    echo "check-man: $*"
    fail=1
}

# The headers' declarations, one a line, as a man page shows them: without
# the export and warning macros, whitespace collapsed.
awk '/^ZKL_EXPORT/ { d = ""; on = 1 }
     on { d = d " " $0; if (index($0, ";")) { print d; on = 0 } }' \
    "$src/include/zkl.h" "$src/include/zkl/zookeeper.h" |
    sed -e 's/ZKL_EXPORT //' -e 's/ ZKL_WARN_UNUSED//' -e 's/[[:space:]][[:space:]]*/ /g' \
        -e 's/^ //' -e 's/( /(/g' -e 's/ )/)/g' >"$tmp/protos"
sed 's/^[^(]*[ *]\(zkl_[a-z0-9_]*\)(.*/\1/' "$tmp/protos" | sort >"$tmp/declared"
# (nm shows a versioned function as NAME@@ZKL_1.0: the node is cut off.)
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ { sub(/@.*/, "", $3); print $3 }' | sort >"$tmp/exported"

comm -13 "$tmp/declared" "$tmp/exported" >"$tmp/x"
[ -s "$tmp/x" ] && bad "exported but not declared in the headers:" $(cat "$tmp/x")
comm -23 "$tmp/declared" "$tmp/exported" >"$tmp/x"
[ -s "$tmp/x" ] && bad "declared in the headers but not exported:" $(cat "$tmp/x")
sort -u "$tmp/declared" "$tmp/exported" >"$tmp/api"

# A page's NAME entries; a link page (".so man3/X.3") gives its target's.
# (Shell builtins where a loop runs once per page or function: a process
# each would be some thousand of them.)
names() {
    sed -n '/^\.SH NAME/{n;p;q;}' "$1" | sed 's/ \\-.*//' | tr ',' ' '
}
api=" $(tr '\n' ' ' <"$tmp/api")"

# Each family page names existing functions ($fam_PAGE: its NAME entries);
# each link page names an API function (or the overview's alias) and points
# at a page that exists, which lists it.
: >"$tmp/documented"
families=
for page in "$mandir"/man3/*.3; do
    base=${page##*/}
    base=${base%.3}
    IFS= read -r first <"$page" || true
    case $first in .so*) continue ;; esac
    families="$families $base"
    n=$(names "$page")
    [ -n "$n" ] || bad "$base.3 has no NAME entries"
    eval "fam_$base=\" \$n \""
    for f in $n; do
        case $f in
        zkl_*)
            case "$api " in
            *" $f "*) echo "$f $base" >>"$tmp/documented" ;;
            *) bad "$base.3 documents $f, which libzkl does not have" ;;
            esac
            ;;
        esac
    done
done
for page in "$mandir"/man3/*.3; do
    base=${page##*/}
    base=${base%.3}
    IFS= read -r first <"$page" || true
    case $first in .so\ man3/*) t=${first#.so man3/} ;; *) continue ;; esac
    lines=0
    while IFS= read -r line || [ -n "$line" ]; do lines=$((lines + 1)); done <"$page"
    if [ "$lines" -ne 1 ]; then
        bad "$base.3: a link page holds its .so line only"
    elif [ ! -f "$mandir/man3/$t" ]; then
        bad "$base.3 links to a missing page man3/$t"
        continue
    fi
    [ "$base" != libzkl ] || continue
    case "$api " in
    *" $base "*) ;;
    *) bad "$base.3 is a link page for a function libzkl does not have" ;;
    esac
    eval "listed=\${fam_${t%.3}:-}"
    case "$listed" in
    *" $base "*) ;;
    *) bad "$base.3 links to $t, whose NAME does not list $base" ;;
    esac
done

# Each function: a page of its own name (so that `man FUNCTION` finds it),
# and a family page that lists it.
documented=" $(cut -d' ' -f1 "$tmp/documented" | tr '\n' ' ')"
while read -r f; do
    [ -f "$mandir/man3/$f.3" ] || bad "no man page $f.3 (a link page: .so man3/FAMILY.3)"
    case "$documented " in
    *" $f "*) ;;
    *) bad "$f is in no page's NAME section" ;;
    esac
done <"$tmp/api"

# Makefile.am installs every page, and names none that is missing.
sed -n 's,.*\(docs/man/man3/[A-Za-z0-9_]*\.3\).*,\1,p' "$src/Makefile.am" | sort -u >"$tmp/listed"
(cd "$src" && ls docs/man/man3/*.3) | sort >"$tmp/present"
comm -13 "$tmp/listed" "$tmp/present" >"$tmp/x"
[ -s "$tmp/x" ] && bad "pages not installed by Makefile.am:" $(cat "$tmp/x")
comm -23 "$tmp/listed" "$tmp/present" >"$tmp/x"
[ -s "$tmp/x" ] && bad "Makefile.am lists missing pages:" $(cat "$tmp/x")

# Rendering: no warning from groff or man (a link page renders as its
# target, checked above), and each function's SYNOPSIS shows its prototype
# exactly as the header declares it.
if command -v groff >/dev/null 2>&1; then
    for fam in $families; do
        rel=man3/$fam.3
        w=$(cd "$mandir" && groff -t -man -Tutf8 -ww -z "$rel" 2>&1) || true
        [ -z "$w" ] || bad "groff warns about $rel: $w"
        if command -v man >/dev/null 2>&1; then
            w=$(cd "$mandir" && man --warnings -l "$rel" 2>&1 >/dev/null) || true
            [ -z "$w" ] || bad "man warns about $rel: $w"
        fi
    done
    for fam in $families; do
        (cd "$mandir" && groff -t -man -Tascii -P-c -P-b -P-o -P-u "man3/$fam.3" 2>/dev/null) |
            sed -n '/^SYNOPSIS/,/^[A-Z]/p' | tr '\n' ' ' |
            sed -e 's/[[:space:]][[:space:]]*/ /g' -e 's/( /(/g' -e 's/ )/)/g' >"$tmp/syn-$fam"
    done
    # Each documented function's prototype (its first, as the header
    # declares it) in its family page's SYNOPSIS.
    checked=$(awk -v dir="$tmp" '
        FNR == NR {
            name = $0
            sub(/\(.*/, "", name)
            sub(/.*[ *]/, "", name)
            if (!(name in proto))
                proto[name] = $0
            next
        }
        {
            f = $1; fam = $2
            if (!(fam in syn)) {
                syn[fam] = ""
                while ((getline line < (dir "/syn-" fam)) > 0)
                    syn[fam] = syn[fam] line
                close(dir "/syn-" fam)
            }
            if ((f in proto) && index(syn[fam], proto[f]) == 0)
                printf "%s.3'"'"'s SYNOPSIS does not show: %s\n", fam, proto[f] > (dir "/nosyn")
            n++
        }
        END { print n + 0 }' "$tmp/protos" "$tmp/documented")
    if [ -s "$tmp/nosyn" ]; then
        while IFS= read -r line; do bad "$line"; done <"$tmp/nosyn"
    fi
else
    echo "check-man: groff not found: rendering and SYNOPSIS not checked"
    checked=0
fi

[ "$fail" -eq 0 ] || exit 1
echo "man pages: $(wc -l <"$tmp/api") functions, each with a page;" \
    "$(ls "$mandir"/man3/*.3 | wc -l) pages, those with text render cleanly;" \
    "$checked prototypes match"
