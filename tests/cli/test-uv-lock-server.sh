#!/usr/bin/env bash
# examples/uv-lock-server, one thread serving every lock: a few connections
# LOCK and UNLOCK one path many times at once; at most one of them holds at
# a time, tokens grow with each grant, a connection that leaves while it
# waits gives its place up, and no node is left under the path.
# Runs on a server of its own (tests/with-zk.sh) unless ZKL_TEST_HOSTS is set.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
if [[ -z ${ZKL_TEST_HOSTS:-} ]]; then
    exec "$here/../with-zk.sh" -- bash "${BASH_SOURCE[0]}" "$@"
fi
SERVER=${top_builddir:-.}/examples/uv-lock-server
ZKL=${top_builddir:-.}/tools/zkl
[[ -x $SERVER ]] || { echo "no uv-lock-server at $SERVER" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkl-uv.XXXXXX")
srv=
cleanup() {
    [[ -n $srv ]] && kill -KILL "$srv" 2>/dev/null
    rm -rf -- "$tmp"
}
trap cleanup EXIT
. "$here/wait.sh"

"$SERVER" "$ZKL_TEST_HOSTS" 0 >"$tmp/out" 2>"$tmp/err" &
srv=$!
wait_for 20 grep -q '^PORT ' "$tmp/out" || { echo "not ok - the server did not start"; cat "$tmp/err"; exit 1; }
port=$(sed -n 's/^PORT //p' "$tmp/out")
path=/zkl-uv-test/$$

python3 - "$port" "$path" <<'PY'
import socket, sys, threading, time
port, path = int(sys.argv[1]), sys.argv[2]
CONNS, ROUNDS = 6, 15
lock = threading.Lock()
state = {"holder": None, "last": 0, "grants": 0, "errors": []}

def line(f):
    l = f.readline()
    if not l:
        raise RuntimeError("connection closed")
    return l.split()

def worker(i):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(60)
    f = s.makefile("r")
    try:
        for _ in range(ROUNDS):
            s.sendall(("LOCK %s\n" % path).encode())
            w = line(f)
            if w[:2] != ["OK", path]:
                raise RuntimeError("LOCK answered %r" % w)
            tok = int(w[2])
            with lock:
                if state["holder"] is not None:
                    state["errors"].append("%d granted while %d holds" % (i, state["holder"]))
                if tok <= state["last"]:
                    state["errors"].append("token %d after %d" % (tok, state["last"]))
                state["holder"], state["last"] = i, tok
                state["grants"] += 1
            time.sleep(0.002)
            with lock:
                state["holder"] = None
            s.sendall(("UNLOCK %s\n" % path).encode())
            w = line(f)
            if w != ["OK", path]:
                raise RuntimeError("UNLOCK answered %r" % w)
    except Exception as e:
        with lock:
            state["errors"].append("%d: %s" % (i, e))
    s.close()

# A connection that leaves while it waits: its request is given up.
quitter = socket.create_connection(("127.0.0.1", port))
ts = [threading.Thread(target=worker, args=(i,)) for i in range(CONNS)]
for t in ts:
    t.start()
quitter.sendall(("LOCK %s\n" % path).encode())
time.sleep(0.05)
quitter.close()
for t in ts:
    t.join()
# Bad input and an unlock without a hold.
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("r")
s.sendall(b"HELLO\n")
if line(f)[0] != "ERR":
    state["errors"].append("HELLO accepted")
s.sendall(("UNLOCK %s\n" % path).encode())
if line(f) != ["ERR", path, "ENOTHELD"]:
    state["errors"].append("UNLOCK without a hold accepted")
s.close()
for e in state["errors"]:
    print("not ok - " + e)
want = CONNS * ROUNDS
if state["grants"] != want:
    print("not ok - %d grants, wanted %d" % (state["grants"], want))
    sys.exit(1)
print("ok - %d grants, one holder at a time, tokens increasing" % want)
sys.exit(1 if state["errors"] else 0)
PY
rc=$?
# Nothing left under the path: no holder, no waiter.
left() { "$ZKL" holders -S "$ZKL_TEST_HOSTS" "$path" 2>&1 | grep -q ': no contenders$'; }
if ! wait_for 10 left; then
    echo "not ok - nodes left under $path:"
    "$ZKL" holders -S "$ZKL_TEST_HOSTS" "$path"
    rc=1
fi
kill -TERM "$srv" 2>/dev/null
wait "$srv"
srv=
exit $rc
