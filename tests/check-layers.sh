#!/usr/bin/env bash
# The library's layers, read from its object files (nm: which file defines
# each symbol, and which files use it) and from its sources (what each
# folder includes, what it calls by name):
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
#    has more than 5 bool members (a state is a named state, not flags);
#  - and from the includes: each folder's C files compile with an include
#    path that holds only the headers the folder may include (its own and
#    those of the folders below it; a recipe: the kit's header and the
#    argument types it names, no struct of a layer below the kit), so that
#    a recipe that includes front.h or reads c->field fails to compile;
#  - a recipe calls no internal function (zkl__) of the front ends, the
#    engine, the session or the metrics: it goes through the kit; and
#    calls through the seam's table (->zapi->) stay below the front ends;
#  - a cycle of calls between the files of one folder spans at most the
#    files the folder's bound says (strongly connected components); in
#    lib/engine/core only the files that act may be in one (cnode.c,
#    steps.c, watch.c, act.c): those that decide call none of them.
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
    rel = f.relative_to(top)
    for no, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r'(?<![\w.>])(zoo_\w+|zookeeper_\w+)\s*\(', line):
            print(f'check-layers: {f.relative_to(top)}:{no} calls {m.group(1)} '
                  '(only lib/session/zapi.c calls libzookeeper_mt)')
            ok = False
        if re.search(r'->\s*zapi\s*->', line) and rel.parts[0] == 'recipes' or \
                rel.parts[:2] == ('lib', 'front') and re.search(r'->\s*zapi\s*->', line):
            print(f'check-layers: {rel}:{no} calls through the seam\'s table '
                  '(the front ends and the recipes ask the kit or the engine)')
            ok = False
sys.exit(0 if ok else 1)
EOF

# The includes: each folder's C files, copied out of the tree (so that a
# relative "../engine/engine.h" finds nothing), compiled (syntax only) with
# an include path that holds only the headers the folder may include. The
# folders from the top down; each may include its own headers and those of
# the folders below it, but for the private ones (named with their folder).
python3 - "$top" "$build" <<'EOF' || fail=1
import concurrent.futures, glob, os, shutil, subprocess, sys, tempfile
top, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
order = ['lib/kit', 'lib/front', 'lib/engine', 'lib/session', 'lib/metrics', 'lib/engine/core',
         'lib/util']
private = {'lib/front/async.h': 'lib/front', 'lib/engine/core/machine.h': 'lib/engine/core'}
# A recipe sees the kit's header, the argument types it fills in for the
# layers below (qopts.h, step.h), the policy it defines, and lib/util.
allowed = {'recipes': ['lib/kit/kit.h', 'lib/engine/qopts.h', 'lib/front/step.h',
                       'lib/engine/core/policy.h'] + glob.glob('lib/util/*.h', root_dir=top)}
for i, d in enumerate(order):
    allowed[d] = [h for below in order[i:] for h in glob.glob(below + '/*.h', root_dir=top)
                  if private.get(h, d) == d]
tmp = tempfile.mkdtemp()
jobs = []
try:
    # the public headers, copied too: no path from them leads into the tree
    public = os.path.join(tmp, 'public')
    shutil.copytree(os.path.join(top, 'include'), public, ignore=shutil.ignore_patterns('*.in'))
    shutil.copytree(os.path.join(build, 'include'), public, dirs_exist_ok=True)
    for d, hs in allowed.items():
        inc = os.path.join(tmp, d, 'include')
        src = os.path.join(tmp, d, 'src')
        os.makedirs(inc)
        os.makedirs(src)
        for h in hs + ['config.h']:
            real = os.path.join(build if h == 'config.h' else top, h)
            os.symlink(real, os.path.join(inc, os.path.basename(h)))
        for c in sorted(glob.glob(d + '/*.c', root_dir=top)):
            shutil.copy(os.path.join(top, c), src)
            jobs.append((c, os.path.join(src, os.path.basename(c)), inc))
    def compile(job):
        c, copy, inc = job
        r = subprocess.run([os.environ.get('CC_LAYERS', 'cc'), '-fsyntax-only', '-DHAVE_CONFIG_H',
                            '-D_GNU_SOURCE', '-DTHREADED', '-pthread', '-I' + inc,
                            '-I' + public, copy], capture_output=True, text=True)
        return c, r.returncode, r.stderr
    ok = True
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        for c, rc, err in ex.map(compile, jobs):
            if rc != 0:
                ok = False
                lines = [l for l in err.splitlines() if 'error' in l][:3]
                print(f'check-layers: {c} does not compile with only the headers '
                      f'{os.path.dirname(c)} may include:')
                for l in lines:
                    print('    ' + l.replace(tmp + '/', ''))
finally:
    shutil.rmtree(tmp)
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
# strongly connected components (Tarjan) of the graph `edges` (node ->
# its successors) over `nodes`
def strong_components(nodes, edges):
    index, low, stack, on, comps = {}, {}, [], set(), []
    def strong(v):
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w in sorted(edges.get(v, ())):
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
    for v in nodes:
        if v not in index:
            strong(v)
    return comps
# a recipe's internal calls go to the kit (or to lib/util, the core's
# pure helpers, another recipe); the public API is anyone's
for u, syms in uses.items():
    if folder(u) == 'recipes':
        for s in sorted(syms):
            d = defs.get(s, '')
            if s.startswith('zkl__') and folder(d) in ('lib/front', 'lib/engine', 'lib/session',
                                                      'lib/metrics'):
                print(f'check-layers: {u} calls {s}, defined in {d} (a recipe goes through the kit)')
                ok = False
# cycles inside a folder: the strongly connected components of its files'
# calls, each at most the folder's bound (2 where not named: a pair), and,
# where the folder names them, of those files only
bound = {'lib/engine/core': 4, 'lib/session': 5}
members = {'lib/engine/core': {'cnode.c', 'steps.c', 'watch.c', 'act.c'}}
files = {}
for u, syms in uses.items():
    for s in syms:
        d = defs.get(s)
        if d is not None and d != u and folder(d) == folder(u):
            files.setdefault(u, set()).add(d)
fcomps = strong_components(sorted(uses), files)
largest = {}
for comp in fcomps:
    d = folder(comp[0])
    largest[d] = max(largest.get(d, 1), len(comp))
    if len(comp) > bound.get(d, 2):
        ok = False
        print(f'check-layers: a cycle of {len(comp)} files in {d} (at most {bound.get(d, 2)}): '
              + ', '.join(sorted(os.path.basename(u) for u in comp)))
    stray = sorted(os.path.basename(u) for u in comp
                   if len(comp) > 1 and d in members and os.path.basename(u) not in members[d])
    if stray:
        ok = False
        print(f'check-layers: {", ".join(stray)} in a cycle of calls in {d} '
              f'(only {", ".join(sorted(members[d]))} may be: the others decide or keep, '
              'and call none of them)')
print('check-layers: the largest cycle of files in each folder: '
      + ', '.join(f'{d} {n}' for d, n in sorted(largest.items())))
# the graph of folders: an edge A -> B when a file of A uses a symbol of B
edges = {}
for u, syms in uses.items():
    for s in syms:
        d = defs.get(s)
        if d is not None and folder(d) != folder(u):
            edges.setdefault(folder(u), {}).setdefault(folder(d), set()).add(f'{u} -> {s} ({d})')
comps = strong_components(sorted(set(folder(u) for u in uses)), edges)
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
