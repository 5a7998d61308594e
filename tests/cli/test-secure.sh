#!/usr/bin/env bash
# The zkl command against a ZooKeeper that serves only TLS (with-zk.sh
# --tls-only: a secureClientPort with ssl.clientAuth=need, no plaintext
# port), on a zkl built with TLS (make check-secure):
#   - lock, holders, revoke and break with --tls-ca, --tls-cert and
#     --tls-key, and with ZKL_TLS_* instead;
#   - without TLS, or with a CA that does not vouch for the server, zkl
#     says why and exits in seconds (69, 77);
#   - two certificates share a lock tree through --acl entries;
#   - Apache Curator 5.4 over TLS and zkl over TLS contend on one lock
#     path: no two holders overlap, tokens increase (tests/history-check.py).
# Starts its own server unless ZKL_TEST_TLS_DIR is set.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
if [[ -z ${ZKL_TEST_TLS_DIR:-} ]]; then
    exec "$here/../with-zk.sh" --tls-only -- bash "${BASH_SOURCE[0]}" "$@"
fi
# shellcheck source=tests/cli/wait.sh
. "$here/wait.sh"
ZKL=${ZKL_BIN:-${top_builddir:-.}/tools/zkl}
[[ -x $ZKL ]] || { echo "no zkl binary at $ZKL" >&2; exit 99; }
T=$ZKL_TEST_TLS_DIR
export ZKL_SERVERS=$ZKL_TEST_HOSTS
tls=(--tls-ca "$T/ca.pem" --tls-cert "$T/client.pem" --tls-key "$T/client.key")
tls_b=(--tls-ca "$T/ca.pem" --tls-cert "$T/client-b.pem" --tls-key "$T/client-b.key")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkl-secure.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -KILL "$p" 2>/dev/null
    done
    rm -rf -- "$tmp"
}
trap cleanup EXIT
passed=0
fail() {
    echo "not ok - $*"
    exit 1
}
ok() {
    echo "ok - $*"
    passed=$((passed + 1))
}
p=/zkl-secure/$$

# ---- the command over TLS ------------------------------------------------------------
out=$("$ZKL" lock "${tls[@]}" "$p/x" true 2>&1) || fail "zkl lock over TLS: $out"
out=$("$ZKL" lock "${tls[@]}" "$p/x" -- sh -c 'echo "$ZKL_FENCING_TOKEN"') ||
    fail "zkl lock over TLS with a command: $out"
[[ $out =~ ^[0-9]+$ ]] || fail "no fencing token over TLS: $out"
out=$(ZKL_TLS_CA=$T/ca.pem ZKL_TLS_CERT=$T/client.pem ZKL_TLS_KEY=$T/client.enc.key \
    ZKL_TLS_KEY_PASSWORD_FILE=$T/key.pw "$ZKL" lock "$p/x" true 2>&1) ||
    fail "zkl lock with ZKL_TLS_* and an encrypted key: $out"
ok "zkl lock takes the lock over TLS, from options and from ZKL_TLS_*"

# A holder in hold mode; holders, revoke and break reach it over TLS.
coproc HOLD { exec "$ZKL" lock --revocable "${tls[@]}" "$p/held"; }
hold=$HOLD_PID # bash forgets HOLD_PID once the coprocess ended
pids+=("$hold")
read -r -t 20 node token <&"${HOLD[0]}" || fail "the hold-mode holder did not print its node"
out=$("$ZKL" holders "${tls[@]}" --json "$p/held") || fail "holders over TLS: $out"
[[ $out == *'"holds": true'* && $out == *"${node##*/}"* ]] || fail "holders does not show the holder: $out"
out=$("$ZKL" revoke "${tls[@]}" "$p/held") || fail "revoke over TLS: $out"
wait_for 20 eval '! kill -0 "$hold" 2>/dev/null' || fail "the revocable holder did not let go"
coproc HOLD2 { exec "$ZKL" lock "${tls[@]}" "$p/held"; }
hold=$HOLD2_PID
pids+=("$hold")
read -r -t 20 node token <&"${HOLD2[0]}" || fail "the second holder did not print its node"
out=$("$ZKL" break "${tls[@]}" "$p/held") || fail "break over TLS: $out"
[[ $out == "deleted $node"* ]] || fail "break deleted something else: $out"
st=0
wait_for 20 eval '! kill -0 "$hold" 2>/dev/null' || fail "the broken holder did not notice"
wait "$hold" 2>/dev/null || st=$?
[[ $st == 75 ]] || fail "the broken holder exited $st, not 75"
ok "holders, revoke and break reach a holder over TLS ($token)"

# ---- failures are said, in seconds ------------------------------------------------------
t0=$(now_ms)
st=0
out=$("$ZKL" lock "$p/x" true 2>&1) || st=$?
took=$(($(now_ms) - t0))
[[ $st == 69 && $out == *"speaks TLS on this port"* ]] || fail "zkl without TLS: $st: $out"
((took < 6000)) || fail "zkl without TLS took $took ms to say so"
t0=$(now_ms)
st=0
out=$("$ZKL" lock --tls-ca "$T/other-ca.pem" --tls-cert "$T/client.pem" --tls-key "$T/client.key" \
    "$p/x" true 2>&1) || st=$?
took=$(($(now_ms) - t0))
[[ $st == 77 && $out == *"is not trusted by the CA file"* ]] || fail "zkl with another CA: $st: $out"
((took < 6000)) || fail "zkl with another CA took $took ms to say so"
st=0
out=$("$ZKL" lock --tls-ca "$T/ca.pem" --tls-cert "$T/client.pem" "$p/x" true 2>&1) || st=$?
[[ $st == 64 && $out == *"--tls-key"* ]] || fail "zkl with half the TLS options: $st: $out"
ok "without TLS, with another CA or half the options, zkl says why (69, 77, 64) in seconds"

# With -n or -w under a second the reason is known in time; an expired
# certificate is called so.
for w in -n "-w 0.5"; do
    st=0
    # shellcheck disable=SC2086
    out=$("$ZKL" lock $w --tls-ca "$T/other-ca.pem" --tls-cert "$T/client.pem" --tls-key "$T/client.key" \
        "$p/x" true 2>&1) || st=$?
    [[ $st == 77 && $out == *"is not trusted by the CA file"* ]] || fail "zkl $w with another CA: $st: $out"
    st=0
    # shellcheck disable=SC2086
    out=$("$ZKL" lock $w --tls-ca "$T/ca.pem" --tls-cert "$T/expired.pem" --tls-key "$T/expired.key" \
        "$p/x" true 2>&1) || st=$?
    [[ $st == 77 && $out == *"expired"* ]] || fail "zkl $w with an expired certificate: $st: $out"
done
# Password files that cannot be read: a status zkl(1) lists, and why.
for f in "$T/no-such.pw" "$T"; do
    st=0
    out=$("$ZKL" lock --tls-ca "$T/ca.pem" --tls-cert "$T/client.pem" --tls-key "$T/client.enc.key" \
        --tls-key-password-file "$f" "$p/x" true 2>&1) || st=$?
    [[ $st == 64 && $out == *"$f"* && ( $out == *"No such file"* || $out == *"Is a directory"* ) ]] ||
        fail "zkl with the key password file $f: $st: $out"
done
ok "with -n and -w 0.5, another CA and an expired certificate say why (77); unreadable password files 64"

# ---- two certificates share a tree -----------------------------------------------------
acl=(--acl "x509:CN=zkl-a,O=zkl-test:rwcda" --acl "x509:CN=zkl-b,O=zkl-test:rwcd")
out=$("$ZKL" lock "${tls[@]}" "${acl[@]}" "$p/shared/lock" true 2>&1) || fail "zkl-a: $out"
out=$("$ZKL" lock "${tls_b[@]}" "${acl[@]}" "$p/shared/lock" true 2>&1) || fail "zkl-b: $out"
st=0
out=$("$ZKL" lock "${tls_b[@]}" --acl "x509:CN=zkl-b,O=zkl-test:rwcda" "$p/only-b/lock" true 2>&1) ||
    fail "zkl-b on its own tree: $out"
out=$("$ZKL" lock -w 30 "${tls[@]}" "$p/only-b/lock" true 2>&1) || st=$?
[[ $st == 77 ]] || fail "zkl-a took a lock only zkl-b may take: $st: $out"
out=$(ZKL_ACL="x509:CN=zkl-a,O=zkl-test:rwcda;world:anyone:r" "$ZKL" lock "${tls[@]}" "$p/env/lock" true 2>&1) ||
    fail "ZKL_ACL: $out"
st=0
out=$("$ZKL" lock -w 30 "${tls_b[@]}" "$p/env/lock" true 2>&1) || st=$?
[[ $st == 77 ]] || fail "zkl-b took a lock of ZKL_ACL's tree: $st: $out"
ok "two certificates share a tree by --acl; a third identity's tree and ZKL_ACL's keep the other out"

# ---- Curator over TLS and zkl over TLS on one lock path -------------------------------
worker=$here/../interop/run-curator-worker.sh
if ! command -v java >/dev/null 2>&1 || ! "$here/../../bench/build-java.sh" --classpath >/dev/null 2>&1; then
    fail "no Java or no Curator jars (scripts/deps.sh installs them)"
fi
lp=$p/interop
iters=12
# The client's TLS is Netty's: the jars zookeeper.jar's manifest leaves out.
export ZKL_JAVA_CP=/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar:/usr/share/java/netty-transport-native-unix-common.jar
export ZKL_JAVA_OPTS="-Dzookeeper.client.secure=true
 -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty
 -Dzookeeper.ssl.keyStore.location=$T/client.p12 -Dzookeeper.ssl.keyStore.password=zkl-test-store
 -Dzookeeper.ssl.trustStore.location=$T/trust.p12 -Dzookeeper.ssl.trustStore.password=zkl-test-store"
"$worker" --servers "$ZKL_TEST_HOSTS" --path "$lp" --mode mutex --iterations "$iters" --hold-ms 2 \
    --counter-file "$tmp/counter" --log-file "$tmp/log" >"$tmp/worker.out" 2>&1 &
cw=$!
pids+=("$cw")
# zkl's holders log as the Curator worker does (ACQ/REL, realtime ns, token).
cat >"$tmp/step.sh" <<'EOF'
log=$1 counter=$2
t=${EPOCHREALTIME//[.,]/}
printf 'ACQ mutex %s/1 %s000 %s\n' "$$" "$t" "$ZKL_FENCING_TOKEN" >>"$log"
n=$(cat "$counter" 2>/dev/null)
sleep 0.002
echo $((${n:-0} + 1)) >"$counter"
t=${EPOCHREALTIME//[.,]/}
printf 'REL mutex %s/1 %s000 %s\n' "$$" "$t" "$ZKL_FENCING_TOKEN" >>"$log"
EOF
for ((i = 0; i < 2; i++)); do
    (for ((k = 0; k < iters; k++)); do
        "$ZKL" lock "${tls[@]}" "$lp" bash "$tmp/step.sh" "$tmp/log" "$tmp/counter" ||
            exit 1
    done) &
    pids+=("$!")
done
st=0
for pid in "${pids[@]: -2}"; do
    wait "$pid" || st=1
done
[[ $st == 0 ]] || fail "a zkl loop over TLS failed"
wait "$cw" || fail "the Curator worker over TLS failed: $(tail -n 20 "$tmp/worker.out")"
n=$(cat "$tmp/counter")
[[ $n == $((3 * iters)) ]] || fail "the counter is $n, not $((3 * iters)): two holders overlapped"
out=$(python3 "$here/../history-check.py" "$tmp/log") || fail "history: $out"
grep -q "^ACQ mutex [0-9]*/[0-9]* " "$tmp/log" || fail "no Curator line in the history"
ok "Curator 5.4 over TLS and zkl over TLS take turns on one lock path ($out)"

echo "$passed passed, 0 failed"
