#!/usr/bin/env bash
# SASL GSSAPI (Kerberos) against a local MIT KDC (Debian's krb5-kdc) and a
# ZooKeeper 3.8 whose JAAS login is the service principal
# zookeeper/localhost, on a zkl built with SASL (make check-secure):
#   - zkl takes a mutex, both sides of a read-write lock and a semaphore
#     lease with alice's ticket;
#   - the lock tree of alice's ACL keeps bob out (77), and without a ticket
#     zkl says why in seconds (77).
# Starts its KDC and its server (tests/with-zk.sh) itself.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/cli/wait.sh
. "$here/wait.sh"
ZKL=${ZKL_BIN:-${top_builddir:-.}/tools/zkl}
[[ -x $ZKL ]] || { echo "no zkl binary at $ZKL" >&2; exit 99; }
fail() {
    echo "not ok - $*"
    exit 1
}

if [[ -z ${ZKL_TEST_KDC:-} ]]; then
    for b in krb5kdc kdb5_util kadmin.local kinit; do
        command -v "$b" >/dev/null || PATH=$PATH:/usr/sbin command -v "$b" >/dev/null ||
            fail "no $b (scripts/deps.sh installs krb5-kdc, krb5-admin-server, krb5-user)"
    done
    export PATH=$PATH:/usr/sbin
    kdc=$(mktemp -d "${TMPDIR:-/tmp}/zkl-kdc.XXXXXX")
    kpid=
    cleanup() {
        [[ -z $kpid ]] || kill -TERM "$kpid" 2>/dev/null
        [[ -z $kpid ]] || wait "$kpid" 2>/dev/null
        rm -rf -- "$kdc"
    }
    trap cleanup EXIT
    # A free port for the KDC (TCP and UDP), below the kernel's range for
    # outgoing connections: a port of that range found free now could be
    # given to a connection before krb5kdc binds it. The server's harness
    # picks its ports later and passes over the ones that listen.
    port=$(python3 - <<'PY'
import random, socket
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(1000):
    p = random.randint(10000, lo - 1)
    try:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            with socket.socket(socket.AF_INET, kind) as s:
                s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break
PY
)
    [[ -n $port ]] || fail "no free port for the KDC"
    cat >"$kdc/krb5.conf" <<EOF
[libdefaults]
  default_realm = ZKL.TEST
  dns_lookup_kdc = false
  dns_lookup_realm = false
  rdns = false
  dns_canonicalize_hostname = false
  udp_preference_limit = 1
[realms]
  ZKL.TEST = {
    kdc = 127.0.0.1:$port
  }
EOF
    cat >"$kdc/kdc.conf" <<EOF
[kdcdefaults]
  kdc_ports = $port
  kdc_tcp_ports = $port
[realms]
  ZKL.TEST = {
    database_name = $kdc/principal
    key_stash_file = $kdc/stash
    acl_file = $kdc/kadm5.acl
  }
[logging]
  kdc = FILE:$kdc/kdc.log
EOF
    : >"$kdc/kadm5.acl"
    export KRB5_CONFIG=$kdc/krb5.conf KRB5_KDC_PROFILE=$kdc/kdc.conf
    kdb5_util create -s -r ZKL.TEST -P "kdc-$RANDOM$RANDOM" >"$kdc/setup.log" 2>&1 ||
        fail "kdb5_util: $(cat "$kdc/setup.log")"
    for p in zookeeper/localhost alice bob; do
        kadmin.local -q "addprinc -randkey $p" >>"$kdc/setup.log" 2>&1 &&
            kadmin.local -q "ktadd -k $kdc/${p%%/*}.keytab $p" >>"$kdc/setup.log" 2>&1 ||
            fail "kadmin.local $p: $(cat "$kdc/setup.log")"
    done
    krb5kdc -n >"$kdc/kdc.out" 2>&1 &
    kpid=$!
    KRB5CCNAME=FILE:$kdc/probe.cc wait_for 10 kinit -k -t "$kdc/alice.keytab" alice 2>/dev/null ||
        fail "the KDC did not answer: $(cat "$kdc/kdc.out" "$kdc/kdc.log" 2>/dev/null)"
    cat >"$kdc/jaas.conf" <<EOF
Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="$kdc/zookeeper.keytab"
  storeKey=true
  useTicketCache=false
  principal="zookeeper/localhost@ZKL.TEST";
};
EOF
    sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
    export ZKL_ZK_JVM_EXTRA="-Djava.security.krb5.conf=$kdc/krb5.conf -Djava.security.auth.login.config=$kdc/jaas.conf -Dzookeeper.authProvider.sasl=$sasl"
    ZKL_TEST_KDC=$kdc "$here/../with-zk.sh" -- bash "${BASH_SOURCE[0]}" "$@"
    exit
fi

kdc=$ZKL_TEST_KDC
# The service principal is zookeeper/<the connect string's first host>.
servers=localhost:${ZKL_TEST_HOSTS##*:}
export ZKL_SERVERS=$servers ZKL_SASL_MECH=GSSAPI
passed=0
ok() {
    echo "ok - $*"
    passed=$((passed + 1))
}
p=/zkl-gssapi/$$
for u in alice bob; do
    KRB5CCNAME=FILE:$kdc/$u.cc kinit -k -t "$kdc/$u.keytab" "$u" || fail "kinit $u"
done
alice=(env KRB5CCNAME=FILE:$kdc/alice.cc "$ZKL")
acl=(--acl "sasl:alice@ZKL.TEST:rwcda" --acl "world:anyone:r")
for kind in "" -s -x "--semaphore 2"; do
    # shellcheck disable=SC2086 # kind is zero, one or two words
    out=$("${alice[@]}" lock $kind "${acl[@]}" "$p/lock" -- sh -c 'echo "$ZKL_FENCING_TOKEN"' 2>&1) ||
        fail "zkl lock ${kind:-(mutex)} with GSSAPI: $out"
    [[ $out =~ ^[0-9]+$ ]] || fail "no token with GSSAPI: $out"
done
ok "alice takes a mutex, a read and a write lock and a semaphore lease with Kerberos"

st=0
out=$(KRB5CCNAME=FILE:$kdc/bob.cc "$ZKL" lock -w 30 "$p/lock" true 2>&1) || st=$?
[[ $st == 77 ]] || fail "bob took alice's lock: $st: $out"
t0=$(now_ms)
st=0
out=$(KRB5CCNAME=FILE:$kdc/nobody.cc "$ZKL" lock "$p/lock" true 2>&1) || st=$?
took=$(($(now_ms) - t0))
[[ $st == 77 && $out == *"GSSAPI authentication failed"* ]] || fail "without a ticket: $st: $out"
((took < 6000)) || fail "without a ticket zkl took $took ms to say so"
ok "bob is kept out of alice's tree (77); without a ticket zkl says why in $took ms (77)"
echo "$passed passed, 0 failed"
