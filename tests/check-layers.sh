#!/usr/bin/env bash
# The library's layers, read from its object files (nm), not from its
# includes: which file defines each symbol, and which files use it.
#  - no cycle of calls spans two folders (lib/util, lib/session, lib/metrics,
#    lib/engine/core, lib/engine, lib/front, lib/kit, recipes);
#  - no C file sits directly in lib/, and nothing in lib/ uses a symbol
#    defined in recipes/;
#  - the engine's core (lib/engine/core) calls no zoo_*, zookeeper_*,
#    pthread_* or clock_gettime: it does no I/O, takes no lock, reads no clock;
#  - one seam below the session: only lib/session/zapi.c calls zoo_* or
#    zookeeper_* (libzookeeper_mt's functions); every other file goes through
#    its table (lib/session/zapi.h), so that a model can stand in for it;
#  - no C file of lib/ or recipes/ is over 500 lines, and no struct there
#    has more than 5 bool members (a state is a named state, not flags).
# Needs a build: tests/check-layers.sh [BUILD_DIR] (make check passes its own).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=${top_srcdir:-$here/..}
build=${1:-${top_builddir:-$top/build}}
fail=0
bad() {
    echo "check-layers: $*"
    fail=1
}

# The library's objects: libtool puts each beside its source, as
# lib/<folder>/libzklcore_la-<name>.o (under .libs/ for the shared ones).
mapfile -t objs < <(find "$build/lib" "$build/recipes" -name 'libzklcore_la-*.o' -not -path '*/.libs/*' | sort)
if ((${#objs[@]} == 0)); then
    echo "check-layers: no objects under $build (build first)"
    exit 99
fi

for f in "$top"/lib/*.c; do
    [ -e "$f" ] && bad "${f#"$top"/} sits directly in lib/"
done
while IFS= read -r f; do
    n=$(wc -l <"$f")
    ((n <= 500)) || bad "${f#"$top"/} has $n lines (at most 500)"
done < <(find "$top/lib" "$top/recipes" -name '*.c')

python3 - "$top" <<'EOF' || fail=1
import re, sys, pathlib
top = pathlib.Path(sys.argv[1])
ok = True
for f in sorted(list(top.glob('lib/**/*.[ch]')) + list(top.glob('recipes/*.[ch]'))):
    text = re.sub(r'/\*.*?\*/', '', f.read_text(), flags=re.S)
    for m in re.finditer(r'struct\s+(\w+)\s*\{', text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            i += 1
        count = sum(len(d.split(',')) for d in
                    re.findall(r'^\s*bool\s+([^;(]+);', text[m.end():i - 1], flags=re.M))
        if count > 5:
            print(f'check-layers: struct {m.group(1)} ({f.relative_to(top)}) has {count} bool members')
            ok = False
sys.exit(0 if ok else 1)
EOF

# The seam, in the sources too: a call the compiler leaves out (a build
# without TLS or SASL) or a macro makes no symbol, but is a call all the same.
python3 - "$top" <<'EOF' || fail=1
import re, sys, pathlib
top = pathlib.Path(sys.argv[1])
ok = True
for f in sorted(list(top.glob('lib/**/*.[ch]')) + list(top.glob('recipes/*.[ch]'))):
    if f.relative_to(top).as_posix() in ('lib/session/zapi.c', 'lib/session/zapi.h'):
        continue
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), f.read_text(), flags=re.S)
    for no, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r'(?<![\w.>])(zoo_\w+|zookeeper_\w+)\s*\(', line):
            print(f'check-layers: {f.relative_to(top)}:{no} calls {m.group(1)} '
                  '(only lib/session/zapi.c calls libzookeeper_mt)')
            ok = False
sys.exit(0 if ok else 1)
EOF

python3 - "$top" "$build" "${objs[@]}" <<'EOF' || fail=1
import os, re, subprocess, sys
top, build, objs = sys.argv[1], sys.argv[2], sys.argv[3:]
def unit(o):
    rel = os.path.relpath(o, build)
    d, base = os.path.split(rel)
    return os.path.join(d, base[len('libzklcore_la-'):-2] + '.c')
def folder(u):
    return os.path.dirname(u)
defs, uses = {}, {}
for o in objs:
    u = unit(o)
    if not os.path.exists(os.path.join(top, u)):
        continue  # an object left from a source that is gone
    out = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
    uses[u] = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == 'U':
            uses[u].add(parts[1])
        elif len(parts) == 3 and parts[1] in 'TDBR':
            defs[parts[2]] = u
ok = True
# the core's forbidden symbols
for u, syms in uses.items():
    if folder(u) == 'lib/engine/core':
        for s in sorted(syms):
            if re.match(r'(zoo_|zookeeper_|pthread_|clock_gettime$)', s):
                print(f'check-layers: {u} uses {s} (the core does no I/O, takes no lock, reads no clock)')
                ok = False
# the seam: libzookeeper_mt's functions (lowercase; its ZOO_* constants are
# data) are called from zapi.c only
for u, syms in uses.items():
    if u != 'lib/session/zapi.c':
        for s in sorted(syms):
            if re.match(r'(zoo_|zookeeper_)', s):
                print(f'check-layers: {u} calls {s} '
                      '(only lib/session/zapi.c calls libzookeeper_mt)')
                ok = False
# nothing in lib/ uses a recipe's symbol
for u, syms in uses.items():
    if u.startswith('lib/'):
        for s in sorted(syms):
            if defs.get(s, '').startswith('recipes/'):
                print(f'check-layers: {u} uses {s}, defined in {defs[s]}')
                ok = False
# the graph of folders: an edge A -> B when a file of A uses a symbol of B
edges = {}
for u, syms in uses.items():
    for s in syms:
        d = defs.get(s)
        if d is not None and folder(d) != folder(u):
            edges.setdefault(folder(u), {}).setdefault(folder(d), set()).add(f'{u} -> {s} ({d})')
# strongly connected components (Tarjan) over folders
index, low, stack, on, comps, i = {}, {}, [], set(), [], [0]
def strong(v):
    index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
    for w in edges.get(v, {}):
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        comps.append(comp)
for v in sorted(set(folder(u) for u in uses)):
    if v not in index:
        strong(v)
for comp in comps:
    if len(comp) > 1:
        ok = False
        print('check-layers: a cycle spans ' + ', '.join(sorted(comp)) + ':')
        for a in sorted(comp):
            for b in sorted(comp):
                for why in sorted(edges.get(a, {}).get(b, ()))[:4]:
                    print('    ' + why)
order = []
seen = set()
def topo(v):
    if v in seen: return
    seen.add(v)
    for w in sorted(edges.get(v, {})): topo(w)
    order.append(v)
for v in sorted(set(folder(u) for u in uses)): topo(v)
if ok:
    print('check-layers: folders, each using only those after it: ' + ' > '.join(reversed(order)))
sys.exit(0 if ok else 1)
EOF
if ((fail)); then
    echo "check-layers: FAIL"
    exit 1
fi
echo "check-layers: OK"
