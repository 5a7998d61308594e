#!/usr/bin/env bash
# zk-harness.sh - run throwaway ZooKeeper servers (standalone or a small
# ensemble) on 127.0.0.1 for tests and benchmarks.
#
# Usage:
#   zk-harness.sh start DIR [--nodes N] [--tick MS] [--owner PID]
#                 [--tls | --tls-only] [--sasl]
#   zk-harness.sh stop DIR
#   zk-harness.sh stop-node|kill-node|start-node|pause-node|resume-node DIR I
#   zk-harness.sh leader DIR
#   zk-harness.sh wait-ready DIR [SECONDS]
#   zk-harness.sh hosts DIR
#   zk-harness.sh host DIR I
#   zk-harness.sh mntr DIR I
#   zk-harness.sh packets DIR
#   zk-harness.sh status DIR
#
# Run "zk-harness.sh help" for details.  Nodes are numbered 1..N.
#
# Layout of DIR:
#   DIR/nodes             number of nodes
#   DIR/hosts             client connect string (the TLS ports with --tls-only)
#   DIR/secure            the security modes started with (tls, tls-only, sasl)
#   DIR/secure_hosts      connect string of the TLS ports (--tls, --tls-only)
#   DIR/super             "super:PASSWORD": digest credential of the servers'
#                         superuser (--tls, --tls-only, --sasl)
#   DIR/tls/              the test CA, the servers' keystores, client certificates
#                         and keys (see make_tls_files)
#   DIR/sasl/             the JAAS file of the servers' DIGEST-MD5 users, and a
#                         password file per user (see make_sasl_files)
#   DIR/ports.lease       ports reserved for this DIR (released by stop)
#   DIR/watchdog.pid      pid of the owner watchdog (start --owner)
#   DIR/nodeI/zoo.cfg     server configuration
#   DIR/nodeI/ports       "CLIENT QUORUM ELECTION SECURE" ports of node I
#   DIR/nodeI/data/       snapshots, transaction logs, myid
#   DIR/nodeI/server.log  server log (stdout+stderr of the JVM)
#   DIR/nodeI/pid         pid of the JVM of node I while it runs
#
# Environment:
#   ZKL_JAVA               java binary (default: java from PATH, else /usr/bin/java)
#   ZKL_ZK_CLASSPATH       server classpath (default: Debian jars in /usr/share/java)
#   ZKL_ZK_JVM_FLAGS       replaces the default JVM flags
#   ZKL_ZK_JVM_EXTRA       appended to the JVM flags (whitespace separated)
#   ZKL_ZK_LOG_LEVEL       server log level: error|warn|info|debug (default warn)
#   ZKL_ZK_FORCESYNC       yes|no: fsync the transaction log (default no)
#   ZKL_ZK_START_TIMEOUT   seconds to wait for the servers in start/start-node (60)
#   ZKL_ZK_PORT_DIR        directory of the cross-instance port reservations
#                          (default /tmp/zkl-zk-harness-ports.UID)
#   ZKL_ZK_PORTS           LO-HI: draw every port from LO..HI (1024..65535);
#                          default: 10000 up to the kernel's ephemeral range

set -euo pipefail

PROG=${0##*/}
SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/${BASH_SOURCE[0]##*/}

JAVA_BIN=${ZKL_JAVA:-$(command -v java 2>/dev/null || echo /usr/bin/java)}
JAR_DIR=/usr/share/java
DEFAULT_CLASSPATH="$JAR_DIR/zookeeper.jar:$JAR_DIR/slf4j-simple.jar"
ZK_CLASSPATH=${ZKL_ZK_CLASSPATH:-$DEFAULT_CLASSPATH}
DEFAULT_JVM_FLAGS="-Xms32m -Xmx256m -Xss512k -XX:+UseSerialGC -XX:-UsePerfData -XX:+ExitOnOutOfMemoryError -Djava.net.preferIPv4Stack=true -Djava.awt.headless=true"
LOG_LEVEL=${ZKL_ZK_LOG_LEVEL:-warn}
FORCE_SYNC=${ZKL_ZK_FORCESYNC:-no}
START_TIMEOUT=${ZKL_ZK_START_TIMEOUT:-60}
PORT_DIR=${ZKL_ZK_PORT_DIR:-/tmp/zkl-zk-harness-ports.$(id -u)}
MAX_START_ATTEMPTS=4
MAIN_CLASS=org.apache.zookeeper.server.quorum.QuorumPeerMain

DIR=
NODES=
SECURE=

die() {
    printf '%s: %s\n' "$PROG" "$*" >&2
    exit 1
}

note() {
    printf '%s: %s\n' "$PROG" "$*" >&2
}

usage() {
    cat <<EOF
Usage:
  $PROG start DIR [--nodes N] [--tick MS] [--owner PID]
        Create config and data under DIR (created if missing), start N
        servers (N=1 standalone, default; 3 or 5 ensemble) on free ports of
        127.0.0.1, wait until all serve with exactly one leader, write the
        connect string to DIR/hosts and print it.  tickTime defaults to
        200 ms.  With --owner, a watchdog stops the servers when process PID
        exits.  On failure: print the log tails, stop everything, exit 1.
        --tls: each server also serves TLS on a secureClientPort (Netty,
        ssl.clientAuth=need, keystores made with openssl and keytool under
        DIR/tls); DIR/secure_hosts names those ports.  --tls-only: TLS
        only, no plaintext port (DIR/hosts names the TLS ports).  --sasl:
        the servers authenticate SASL DIGEST-MD5 users alice and bob (their
        passwords in DIR/sasl/USER.pw).  Each of them adds a superuser
        (digest credential in DIR/super) to clean up what tests protect.
  $PROG stop DIR              stop all servers of DIR (idempotent)
  $PROG stop-node DIR I       stop node I (SIGTERM, SIGKILL after 5 s)
  $PROG kill-node DIR I       SIGKILL node I
  $PROG start-node DIR I      start node I again and wait until it serves
  $PROG pause-node DIR I      SIGSTOP node I
  $PROG resume-node DIR I     SIGCONT node I
  $PROG leader DIR            print the index of the leader (or standalone node)
  $PROG wait-ready DIR [SECS] wait until every running node serves and there is
                              exactly one leader (default 60 s)
  $PROG hosts DIR             print the client connect string
  $PROG host DIR I            print 127.0.0.1:PORT of node I
  $PROG mntr DIR I            print the raw mntr output of node I
  $PROG packets DIR           print the sum of zk_packets_received over all
                              running nodes (each query itself adds 1 per node)
  $PROG status DIR            print one line per node: index, port, pid, state
EOF
}

is_uint() {
    [[ $1 =~ ^[0-9]+$ ]]
}

# ---------------------------------------------------------------------------
# Four-letter words over bash's /dev/tcp (no nc needed).  The timeout guards
# against paused (SIGSTOPped) servers, which accept but never answer.
fourlw() { # PORT WORD [TIMEOUT]
    if [[ $SECURE == *tls-only* ]]; then
        # The only port speaks TLS, with a client certificate.
        printf '%s' "$2" | timeout "${3:-3}" openssl s_client -quiet -connect "127.0.0.1:$1" \
            -cert "$DIR/tls/client.pem" -key "$DIR/tls/client.key" \
            -CAfile "$DIR/tls/ca.pem" 2>/dev/null
        return
    fi
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout "${3:-3}" bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "%s" "$2" >&3
        cat <&3' fourlw "$1" "$2" 2>/dev/null
}

# Prints the server mode (standalone|leader|follower|observer) of a port, or
# nothing if the server does not serve requests.
server_mode() { # PORT
    local out line
    out=$(fourlw "$1" srvr 2) || return 0
    while IFS= read -r line; do
        if [[ $line == Mode:* ]]; then
            line=${line#Mode:}
            printf '%s' "${line// /}"
            return 0
        fi
    done <<<"$out"
}

server_zxid() { # PORT -> zxid as decimal, or empty
    local out line
    out=$(fourlw "$1" srvr 2) || return 0
    while IFS= read -r line; do
        if [[ $line == Zxid:* ]]; then
            line=${line#Zxid:}
            line=${line// /}
            printf '%d' "$((line))"
            return 0
        fi
    done <<<"$out"
}

# ---------------------------------------------------------------------------
# Processes.  Every JVM carries -Dzkl.harness.dir=DIR and
# -Dzkl.harness.node=DIR/nodeI so that it can be found again even with a
# stale pid file.

# Succeeds if process PID is alive (not a zombie) and has ARG in argv.
pid_has_arg() { # PID ARG
    local -a argv
    local a
    [[ -r /proc/$1/cmdline ]] || return 1
    mapfile -d '' -t argv 2>/dev/null </proc/"$1"/cmdline || return 1
    for a in "${argv[@]}"; do
        [[ $a == "$2" ]] && return 0
    done
    return 1
}

proc_state() { # PID -> single state letter (R, S, T, Z, ...) or empty
    local stat
    { read -r stat </proc/"$1"/stat; } 2>/dev/null || return 0
    stat=${stat##*) }
    printf '%s' "${stat%% *}"
}

pid_alive() { # PID
    local s
    s=$(proc_state "$1")
    [[ -n $s && $s != Z && $s != X ]]
}

pids_with_arg() { # ARG -> pids, one per line
    local d pid
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [[ $pid == "$$" || $pid == "${BASHPID:-$$}" ]] && continue
        if pid_has_arg "$pid" "$1" && pid_alive "$pid"; then
            printf '%s\n' "$pid"
        fi
    done
}

node_marker() { # I
    printf '%s' "-Dzkl.harness.node=$DIR/node$1"
}

# Prints the pid of the running JVM of node I; fails if it does not run.
node_pid() { # I
    local i=$1 pid="" marker
    marker=$(node_marker "$i")
    if [[ -r $DIR/node$i/pid ]]; then
        read -r pid <"$DIR/node$i/pid" || true
    fi
    if [[ -n $pid ]] && pid_has_arg "$pid" "$marker" && pid_alive "$pid"; then
        printf '%s' "$pid"
        return 0
    fi
    pid=$(pids_with_arg "$marker" | head -n 1)
    [[ -n $pid ]] || return 1
    printf '%s\n' "$pid" >"$DIR/node$i/pid" 2>/dev/null || true
    printf '%s' "$pid"
}

# Sends SIG to the process group of PID when PID leads its own group (the
# JVMs are started with setsid), else to PID alone.
signal_pid() { # SIG PID
    local stat pgid
    { read -r stat </proc/"$2"/stat; } 2>/dev/null || return 0
    stat=${stat##*) }
    read -r _ _ pgid _ <<<"$stat"
    if [[ $pgid == "$2" ]]; then
        kill -s "$1" -- "-$2" 2>/dev/null || kill -s "$1" "$2" 2>/dev/null || true
    else
        kill -s "$1" "$2" 2>/dev/null || true
    fi
}

# Waits until all PIDs are gone; returns 1 if some remain after SECS.
wait_gone() { # SECS PID...
    local secs=$1 deadline p left
    shift
    deadline=$((SECONDS + secs))
    while :; do
        left=0
        for p in "$@"; do
            pid_alive "$p" && left=1
        done
        ((left)) || return 0
        ((SECONDS < deadline)) || return 1
        sleep 0.05
    done
}

# Graceful stop of PIDs: SIGCONT (they may be paused) + SIGTERM, then SIGKILL.
terminate_pids() { # PID...
    local p
    (($#)) || return 0
    for p in "$@"; do
        signal_pid CONT "$p"
        signal_pid TERM "$p"
    done
    wait_gone 5 "$@" && return 0
    for p in "$@"; do
        signal_pid KILL "$p"
    done
    wait_gone 10 "$@" && return 0
    note "processes still alive after SIGKILL: $*"
    return 1
}

kill_pids() { # PID...
    local p
    (($#)) || return 0
    for p in "$@"; do
        signal_pid KILL "$p"
    done
    wait_gone 10 "$@" || {
        note "processes still alive after SIGKILL: $*"
        return 1
    }
}

# ---------------------------------------------------------------------------
# State of DIR

set_dir() { # DIR [create]
    [[ -n ${1:-} ]] || {
        usage >&2
        exit 2
    }
    if [[ ${2:-} == create ]]; then
        mkdir -p -- "$1" || die "cannot create $1"
    fi
    if [[ -d $1 ]]; then
        DIR=$(cd -- "$1" && pwd -P)
    else
        DIR=$1
        [[ $DIR == /* ]] || DIR=$PWD/$DIR
    fi
}

load_dir() {
    [[ -r $DIR/nodes ]] || die "$DIR is not a harness directory (no $DIR/nodes; run start first)"
    read -r NODES <"$DIR/nodes"
    is_uint "$NODES" || die "corrupt $DIR/nodes"
    SECURE=
    [[ ! -r $DIR/secure ]] || read -r SECURE <"$DIR/secure" || true
}

check_index() { # I
    if ! is_uint "$1" || (($1 < 1 || $1 > NODES)); then
        die "node index must be in 1..$NODES, got '$1'"
    fi
}

node_port() { # I -> client port
    local c _q _e
    read -r c _q _e <"$DIR/node$1/ports" || die "cannot read $DIR/node$1/ports"
    printf '%s' "$c"
}

node_secure_port() { # I -> TLS port (0: none)
    local _c _q _e t
    read -r _c _q _e t <"$DIR/node$1/ports" || die "cannot read $DIR/node$1/ports"
    printf '%s' "${t:-0}"
}

secure_connect_string() {
    local i s=""
    for ((i = 1; i <= NODES; i++)); do
        s+="${s:+,}127.0.0.1:$(node_secure_port "$i")"
    done
    printf '%s' "$s"
}

connect_string() {
    local i s=""
    for ((i = 1; i <= NODES; i++)); do
        s+="${s:+,}127.0.0.1:$(node_port "$i")"
    done
    printf '%s' "$s"
}

print_log_tails() {
    local i f
    for ((i = 1; i <= NODES; i++)); do
        f=$DIR/node$i/server.log
        [[ -f $f ]] || continue
        printf '\n----- %s (last 40 lines) -----\n' "$f" >&2
        tail -n 40 -- "$f" >&2 || true
    done
    printf -- '-----\n' >&2
}

# ---------------------------------------------------------------------------
# Port selection.  Ports are drawn at random from ZKL_ZK_PORTS, or below the
# kernel's ephemeral range, skipping ports that appear in /proc/net/tcp{,6} in any state and
# ports reserved by other harness directories.  Reservations live in
# PORT_DIR (one file per port naming its owner DIR) and are taken under
# flock, so parallel starts do not pick the same ports; they stay valid
# until the owner is stopped, which also protects quorum ports that only
# the current leader binds.

port_range() { # -> "LO HI"
    local elo=32768 ehi=60999
    if [[ -n ${ZKL_ZK_PORTS:-} ]]; then
        if [[ $ZKL_ZK_PORTS =~ ^([0-9]{1,5})-([0-9]{1,5})$ ]] &&
            ((10#${BASH_REMATCH[1]} >= 1024 && 10#${BASH_REMATCH[1]} < 10#${BASH_REMATCH[2]} &&
                10#${BASH_REMATCH[2]} <= 65535)); then
            printf '%d %d' "$((10#${BASH_REMATCH[1]}))" "$((10#${BASH_REMATCH[2]}))"
            return 0
        fi
        die "ZKL_ZK_PORTS='$ZKL_ZK_PORTS' is not a range LO-HI of ports with 1024 <= LO < HI <= 65535"
    fi
    if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
        read -r elo ehi </proc/sys/net/ipv4/ip_local_port_range || true
    fi
    if ((elo - 1 >= 12000)); then
        printf '%d %d' 10000 "$((elo - 1))"
    elif ((ehi + 1 <= 63000)); then
        printf '%d %d' "$((ehi + 1))" 65000
    else
        printf '%d %d' 10000 65000
    fi
}

reservation_valid() { # FILE
    local owner="" mtime
    { read -r owner <"$1"; } 2>/dev/null || true
    if [[ -z $owner ]]; then
        # Being written right now, or garbage: honour it for a minute.
        mtime=$(stat -c %Y -- "$1" 2>/dev/null) || return 1
        (($(date +%s) - mtime < 60))
        return
    fi
    [[ -f $owner/ports.lease ]] || return 1
    grep -qx -- "${1##*/}" "$owner/ports.lease" 2>/dev/null
}

release_ports() {
    local p owner
    [[ -f $DIR/ports.lease ]] || return 0
    while read -r p; do
        [[ -n $p ]] || continue
        owner=""
        { read -r owner <"$PORT_DIR/$p"; } 2>/dev/null || true
        [[ $owner == "$DIR" ]] && rm -f -- "$PORT_DIR/$p"
    done <"$DIR/ports.lease"
    rm -f -- "$DIR/ports.lease"
}

# Reserves COUNT free ports and stores them in the array PICKED.
PICKED=()
pick_ports() { # COUNT
    local count=$1 lo hi span f p local_addr tries=0 lockfd
    local -A busy=()
    read -r lo hi <<<"$(port_range)"
    span=$((hi - lo + 1))
    mkdir -p -- "$PORT_DIR" 2>/dev/null || true
    [[ -d $PORT_DIR && -w $PORT_DIR ]] || die "port reservation directory $PORT_DIR is not writable"
    exec {lockfd}>>"$PORT_DIR/.lock"
    flock -w 30 "$lockfd" || die "cannot lock $PORT_DIR/.lock"

    for f in /proc/net/tcp /proc/net/tcp6; do
        [[ -r $f ]] || continue
        while read -r _ local_addr _; do
            [[ $local_addr == *:* ]] || continue
            busy[$((16#${local_addr##*:}))]=1
        done <"$f"
    done
    for f in "$PORT_DIR"/[0-9]*; do
        [[ -e $f ]] || continue
        if reservation_valid "$f"; then
            busy[${f##*/}]=1
        else
            rm -f -- "$f"
        fi
    done

    PICKED=()
    while ((${#PICKED[@]} < count)); do
        ((++tries < 100000)) || die "no free ports found in $lo..$hi"
        p=$((lo + (RANDOM * 32768 + RANDOM) % span))
        [[ -n ${busy[$p]:-} ]] && continue
        busy[$p]=1
        PICKED+=("$p")
    done
    for p in "${PICKED[@]}"; do
        printf '%s\n' "$DIR" >"$PORT_DIR/$p"
        printf '%s\n' "$p" >>"$DIR/ports.lease"
    done
    exec {lockfd}>&-
}

# ---------------------------------------------------------------------------
# Configuration and launch

write_configs() { # TICK
    local tick=$1 i j nd init_limit sync_limit
    init_limit=$(((10000 + tick - 1) / tick))
    sync_limit=$(((5000 + tick - 1) / tick))
    ((init_limit >= 5)) || init_limit=5
    ((sync_limit >= 2)) || sync_limit=2
    local -a cports=() qports=() eports=() sports=()
    local base=$((NODES == 1 ? 1 : 3 * NODES)) tls=0
    [[ $SECURE != *tls* ]] || tls=1
    pick_ports $((base + tls * NODES))
    for ((i = 1; i <= NODES; i++)); do
        cports[i]=${PICKED[i - 1]}
        if ((NODES > 1)); then
            qports[i]=${PICKED[NODES + i - 1]}
            eports[i]=${PICKED[2 * NODES + i - 1]}
        else
            qports[i]=0
            eports[i]=0
        fi
        sports[i]=0
        ((!tls)) || sports[i]=${PICKED[base + i - 1]}
        # TLS only: the one client port is the TLS port.
        [[ $SECURE != *tls-only* ]] || cports[i]=${sports[i]}
    done
    for ((i = 1; i <= NODES; i++)); do
        nd=$DIR/node$i
        rm -rf -- "$nd/data"
        mkdir -p -- "$nd/data"
        printf '%s\n' "$i" >"$nd/data/myid"
        printf '%s %s %s %s\n' "${cports[i]}" "${qports[i]}" "${eports[i]}" "${sports[i]}" >"$nd/ports"
        {
            printf '# Generated by %s\n' "$PROG"
            printf 'tickTime=%s\n' "$tick"
            printf 'initLimit=%s\n' "$init_limit"
            printf 'syncLimit=%s\n' "$sync_limit"
            printf 'minSessionTimeout=%s\n' "$((2 * tick))"
            printf 'maxSessionTimeout=60000\n'
            printf 'dataDir=%s\n' "$nd/data"
            if [[ $SECURE != *tls-only* ]]; then
                printf 'clientPort=%s\n' "${cports[i]}"
                printf 'clientPortAddress=127.0.0.1\n'
            fi
            secure_config "${sports[i]}"
            printf 'maxClientCnxns=0\n'
            printf '4lw.commands.whitelist=*\n'
            printf 'admin.enableServer=false\n'
            printf 'autopurge.purgeInterval=0\n'
            printf 'forceSync=%s\n' "$FORCE_SYNC"
            printf 'preAllocSize=16384\n'
            printf 'standaloneEnabled=true\n'
            printf 'reconfigEnabled=false\n'
            if ((NODES > 1)); then
                for ((j = 1; j <= NODES; j++)); do
                    printf 'server.%d=127.0.0.1:%s:%s\n' "$j" "${qports[j]}" "${eports[j]}"
                done
            fi
        } >"$nd/zoo.cfg"
    done
}

# ---------------------------------------------------------------------------
# TLS and SASL (start --tls, --tls-only, --sasl)

# zoo.cfg lines of the security modes for a node with TLS port SPORT.
secure_config() { # SPORT
    if [[ $SECURE == *tls* ]]; then
        printf 'secureClientPort=%s\n' "$1"
        printf 'secureClientPortAddress=127.0.0.1\n'
        printf 'serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n'
        printf 'ssl.keyStore.location=%s\n' "$DIR/tls/server.p12"
        printf 'ssl.keyStore.password=zkl-test-store\n'
        printf 'ssl.trustStore.location=%s\n' "$DIR/tls/trust.p12"
        printf 'ssl.trustStore.password=zkl-test-store\n'
        printf 'ssl.clientAuth=need\n'
        printf 'authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n'
    fi
    if [[ $SECURE == *sasl* ]]; then
        printf 'authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n'
    fi
}

# A certificate NAME.pem with key NAME.key, for SUBJECT, signed by CA
# (ca or other-ca), valid for 127.0.0.1 and localhost, for DAYS (7; 0: it
# expires as it is made).
make_cert() { # NAME SUBJECT CA [DAYS]
    local t=$DIR/tls
    openssl req -newkey rsa:2048 -nodes -keyout "$t/$1.key" -out "$t/$1.csr" -subj "$2" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$t/$1.ext"
    openssl x509 -req -in "$t/$1.csr" -CA "$t/$3.pem" -CAkey "$t/$3.key" -CAcreateserial \
        -out "$t/$1.pem" -days "${4:-7}" -extfile "$t/$1.ext" 2>/dev/null
    rm -f -- "$t/$1.csr" "$t/$1.ext"
}

# DIR/tls: the test CA (ca.pem) and a second, unrelated one (other-ca.pem);
# the servers' keystore (server.p12, CN=localhost) and truststore
# (trust.p12: ca.pem), store password "zkl-test-store"; client
# certificates of ca.pem: client (CN=zkl-a,O=zkl-test) and client-b
# (CN=zkl-b,O=zkl-test), expired (CN=zkl-old, expired), client.enc.key (client.key encrypted with the
# password in key.pw); stranger (CN=mallory) of other-ca.pem; and for Java
# clients client.p12 (client's key and certificate) with trust.p12.
make_tls_files() {
    local t=$DIR/tls ca
    mkdir -p -- "$t"
    for ca in ca other-ca; do
        openssl req -x509 -newkey rsa:2048 -nodes -keyout "$t/$ca.key" -out "$t/$ca.pem" \
            -days 7 -subj "/O=zkl-test/CN=zkl test $ca" 2>/dev/null ||
            die "openssl cannot make a CA"
    done
    make_cert server "/O=zkl-test/CN=localhost" ca
    make_cert client "/O=zkl-test/CN=zkl-a" ca
    make_cert client-b "/O=zkl-test/CN=zkl-b" ca
    make_cert stranger "/CN=mallory" other-ca
    make_cert expired "/O=zkl-test/CN=zkl-old" ca 0
    printf 'zkl-key-pw\n' >"$t/key.pw"
    openssl pkey -in "$t/client.key" -aes256 -passout pass:zkl-key-pw -out "$t/client.enc.key"
    openssl pkcs12 -export -in "$t/server.pem" -inkey "$t/server.key" -certfile "$t/ca.pem" \
        -name server -out "$t/server.p12" -passout pass:zkl-test-store
    openssl pkcs12 -export -in "$t/client.pem" -inkey "$t/client.key" -certfile "$t/ca.pem" \
        -name client -out "$t/client.p12" -passout pass:zkl-test-store
    keytool -importcert -noprompt -alias ca -file "$t/ca.pem" -keystore "$t/trust.p12" \
        -storetype PKCS12 -storepass zkl-test-store >/dev/null 2>&1 ||
        die "keytool cannot make the truststore"
}

# DIR/sasl: the JAAS file of the servers (DIGEST-MD5 users alice and bob)
# and USER.pw, the first line of which is USER's password.
make_sasl_files() {
    local s=$DIR/sasl
    mkdir -p -- "$s"
    printf 'alice-pw\n' >"$s/alice.pw"
    printf 'bob-pw\n' >"$s/bob.pw"
    printf 'wrong-pw\n' >"$s/wrong.pw"
    cat >"$s/jaas.conf" <<'JAAS'
Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_alice="alice-pw"
  user_bob="bob-pw";
};
JAAS
}

# DIR/super: a digest credential the servers treat as their superuser.
make_super() {
    local pw hash
    pw=super-$RANDOM$RANDOM
    hash=$(printf '%s' "super:$pw" | openssl dgst -binary -sha1 | base64)
    printf 'super:%s\n' "$pw" >"$DIR/super"
    printf 'super:%s\n' "$hash" >"$DIR/super.digest"
}

launch_node() { # I
    local i=$1 nd c q e
    local -a jvm_flags extra=()
    nd=$DIR/node$i
    read -r c q e _s <"$nd/ports"
    read -r -a jvm_flags <<<"${ZKL_ZK_JVM_FLAGS:-$DEFAULT_JVM_FLAGS}"
    if [[ -n ${ZKL_ZK_JVM_EXTRA:-} ]]; then
        read -r -a extra <<<"$ZKL_ZK_JVM_EXTRA"
    fi
    local cp=$ZK_CLASSPATH super
    if [[ -n $SECURE ]]; then
        read -r super <"$DIR/super.digest"
        extra+=("-Dzookeeper.DigestAuthenticationProvider.superDigest=$super")
    fi
    # The TLS port is Netty's: the jars zookeeper.jar's manifest leaves out.
    [[ $SECURE != *tls* ]] ||
        cp+=":$JAR_DIR/netty-codec.jar:$JAR_DIR/netty-resolver.jar:$JAR_DIR/netty-transport-native-unix-common.jar"
    [[ $SECURE != *sasl* ]] || extra+=("-Djava.security.auth.login.config=$DIR/sasl/jaas.conf")
    printf '===== %s: starting node %d (client %s, quorum %s, election %s) at %s\n' \
        "$PROG" "$i" "$c" "$q" "$e" "$(date '+%Y-%m-%d %H:%M:%S')" >>"$nd/server.log"
    # setsid: own session and process group, so terminal signals aimed at
    # the caller do not hit the server and the group can be signalled.
    setsid "$JAVA_BIN" "${jvm_flags[@]}" "${extra[@]}" \
        "-Dzkl.harness.dir=$DIR" "$(node_marker "$i")" \
        "-Dzookeeper.log.dir=$nd" \
        -Dzookeeper.admin.enableServer=false \
        -Dzookeeper.jmx.log4j.disable=true \
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=$LOG_LEVEL" \
        -Dorg.slf4j.simpleLogger.showDateTime=true \
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS" \
        -Dorg.slf4j.simpleLogger.showShortLogName=true \
        -cp "$cp" "$MAIN_CLASS" "$nd/zoo.cfg" \
        </dev/null >>"$nd/server.log" 2>&1 &
    printf '%s\n' "$!" >"$nd/pid"
}

BIND_ERRORS='BindException|Address already in use|failed to initialize any of the following sockets|Unable to bind'

log_has_bind_error() { # I
    grep -Eq -- "$BIND_ERRORS" "$DIR/node$1/server.log" 2>/dev/null
}

any_bind_error() {
    local i
    for ((i = 1; i <= NODES; i++)); do
        log_has_bind_error "$i" && return 0
    done
    return 1
}

# One probe of all nodes.  Sets READY_MSG.  Returns 0 when ready.
#   mode "all":     every node must run and serve, exactly one leader
#   mode "running": nodes that are not running or are paused are ignored
READY_MSG=
probe_ready() { # all|running
    local want=$1 i pid st mode leaders=0 serving=0 running=0 bad=0
    READY_MSG=
    for ((i = 1; i <= NODES; i++)); do
        if ! pid=$(node_pid "$i"); then
            READY_MSG+=" node$i=down"
            [[ $want == all ]] && bad=1
            continue
        fi
        st=$(proc_state "$pid")
        if [[ $st == T || $st == t ]]; then
            READY_MSG+=" node$i=paused"
            [[ $want == all ]] && bad=1
            continue
        fi
        running=$((running + 1))
        mode=$(server_mode "$(node_port "$i")")
        READY_MSG+=" node$i=${mode:-not-serving}"
        case $mode in
        leader | standalone)
            leaders=$((leaders + 1))
            serving=$((serving + 1))
            ;;
        follower | observer) serving=$((serving + 1)) ;;
        *) bad=1 ;;
        esac
    done
    ((!bad && running > 0 && serving == running && leaders == 1))
}

# Whether the server answering on the client port of node I is really node I
# (and not some other server that already had the port): 0 it is, 1 another
# server answered, 2 no answer (yet: a loaded machine can take longer than
# the probe's timeout, which says nothing about whose port it is).
node_owns_port() { # I
    local out line
    out=$(fourlw "$(node_port "$1")" conf 3) || return 2
    [[ -n $out ]] || return 2
    while IFS= read -r line; do
        [[ $line == "dataDir=$DIR/node$1/data/version-2" ]] && return 0
    done <<<"$out"
    return 1
}

# Succeeds while the process launch_node started for node I is alive, even
# before it has become the JVM: between fork and exec its command line is
# still the shell's, so node_pid cannot find it yet by its marker.
node_launching() { # I
    local pid=""
    [[ -r $DIR/node$1/pid ]] || return 1
    read -r pid <"$DIR/node$1/pid" || return 1
    [[ -n $pid ]] && pid_alive "$pid"
}

# Returns 0 when ready, 1 on timeout, 2 on a port conflict (worth retrying
# with other ports), 3 when a node died for another reason.
wait_start() { # SECS
    local deadline=$((SECONDS + $1)) i next_grep=$SECONDS owned rc
    while :; do
        if probe_ready all; then
            owned=yes
            for ((i = 1; i <= NODES; i++)); do
                rc=0
                node_owns_port "$i" || rc=$?
                if ((rc == 1)); then
                    note "client port of node $i is answered by another server"
                    return 2
                fi
                ((rc == 0)) || owned=no
            done
            [[ $owned == no ]] || return 0
        fi
        for ((i = 1; i <= NODES; i++)); do
            if ! node_pid "$i" >/dev/null && ! node_launching "$i"; then
                if any_bind_error; then
                    note "node $i could not bind a port"
                    return 2
                fi
                note "node $i exited during start-up"
                return 3
            fi
        done
        if ((SECONDS >= next_grep)); then
            for ((i = 1; i <= NODES; i++)); do
                if log_has_bind_error "$i"; then
                    note "node $i could not bind a port"
                    return 2
                fi
            done
            next_grep=$((SECONDS + 1))
        fi
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

stop_all_nodes() {
    local -a pids=()
    mapfile -t pids < <(pids_with_arg "-Dzkl.harness.dir=$DIR")
    terminate_pids "${pids[@]}" || true
    rm -f -- "$DIR"/node*/pid
}

# ---------------------------------------------------------------------------
# Commands

cmd_start() {
    local dirarg="" nodes=1 tick=200 owner="" attempt rc i secure=""
    while (($#)); do
        case $1 in
        --tls | --tls-only | --sasl)
            secure+="${secure:+ }${1#--}"
            shift
            ;;
        --nodes)
            nodes=${2:?--nodes needs a value}
            shift 2
            ;;
        --nodes=*)
            nodes=${1#*=}
            shift
            ;;
        --tick)
            tick=${2:?--tick needs a value}
            shift 2
            ;;
        --tick=*)
            tick=${1#*=}
            shift
            ;;
        --owner)
            owner=${2:?--owner needs a value}
            shift 2
            ;;
        --owner=*)
            owner=${1#*=}
            shift
            ;;
        -*) die "start: unknown option $1" ;;
        *)
            [[ -z $dirarg ]] || die "start: unexpected argument $1"
            dirarg=$1
            shift
            ;;
        esac
    done
    if ! is_uint "$nodes" || ((nodes < 1 || nodes > 9)); then
        die "--nodes must be 1..9 (1, 3 or 5 are sensible), got '$nodes'"
    fi
    if ! is_uint "$tick" || ((tick < 10)); then
        die "--tick must be an integer >= 10 (ms), got '$tick'"
    fi
    [[ -z $owner ]] || is_uint "$owner" || die "--owner must be a pid, got '$owner'"
    port_range >/dev/null # a bad ZKL_ZK_PORTS is refused before anything starts
    set_dir "$dirarg" create

    if [[ -n $(pids_with_arg "-Dzkl.harness.dir=$DIR") ]]; then
        die "servers of $DIR are already running; stop them first"
    fi
    command -v "$JAVA_BIN" >/dev/null 2>&1 || die "java not found ($JAVA_BIN)"
    if [[ -z ${ZKL_ZK_CLASSPATH:-} ]]; then
        for i in "$JAR_DIR/zookeeper.jar" "$JAR_DIR/slf4j-simple.jar"; do
            [[ -r $i ]] || die "missing $i (install the zookeeper and libslf4j-java packages or set ZKL_ZK_CLASSPATH)"
        done
    fi

    # Clean up after ourselves if interrupted half-way.
    trap 'stop_all_nodes; release_ports; exit 130' INT
    trap 'stop_all_nodes; release_ports; exit 143' TERM
    trap 'stop_all_nodes; release_ports; exit 129' HUP

    [[ $secure != *tls*tls* ]] || die "--tls and --tls-only exclude each other"
    release_ports
    rm -f -- "$DIR/hosts" "$DIR/secure_hosts" "$DIR/secure" "$DIR/super" "$DIR/super.digest"
    NODES=$nodes
    SECURE=$secure
    printf '%s\n' "$nodes" >"$DIR/nodes"
    rm -rf -- "$DIR"/node[0-9]* "$DIR/tls" "$DIR/sasl"
    if [[ -n $SECURE ]]; then
        command -v openssl >/dev/null || die "--$SECURE needs openssl"
        printf '%s\n' "$SECURE" >"$DIR/secure"
        make_super
        [[ $SECURE != *tls* ]] || make_tls_files
        [[ $SECURE != *sasl* ]] || make_sasl_files
    fi

    for ((attempt = 1; attempt <= MAX_START_ATTEMPTS; attempt++)); do
        write_configs "$tick"
        for ((i = 1; i <= NODES; i++)); do
            launch_node "$i"
        done
        rc=0
        wait_start "$START_TIMEOUT" || rc=$?
        if ((rc == 0)); then
            break
        fi
        if ((rc == 2 && attempt < MAX_START_ATTEMPTS)); then
            note "port conflict, retrying with other ports (attempt $((attempt + 1))/$MAX_START_ATTEMPTS)"
            stop_all_nodes
            release_ports
            for ((i = 1; i <= NODES; i++)); do
                mv -f -- "$DIR/node$i/server.log" "$DIR/node$i/server.log.attempt$attempt" 2>/dev/null || true
            done
            continue
        fi
        if ((rc == 1)); then
            note "ZooKeeper did not become ready within ${START_TIMEOUT}s:$READY_MSG"
        else
            note "ZooKeeper failed to start:$READY_MSG"
        fi
        print_log_tails
        stop_all_nodes
        release_ports
        exit 1
    done

    connect_string >"$DIR/hosts"
    printf '\n' >>"$DIR/hosts"
    if [[ $SECURE == *tls* ]]; then
        secure_connect_string >"$DIR/secure_hosts"
        printf '\n' >>"$DIR/secure_hosts"
    fi

    if [[ -n $owner ]]; then
        setsid bash "$SELF" __watch "$DIR" "$owner" </dev/null >/dev/null 2>&1 &
        printf '%s\n' "$!" >"$DIR/watchdog.pid"
    fi
    trap - INT TERM HUP
    cat -- "$DIR/hosts"
}

# Watchdog: stops the servers of DIR once OWNER has exited.
cmd___watch() {
    set_dir "$1"
    local owner=$2
    trap '' INT HUP
    while kill -0 "$owner" 2>/dev/null && [[ -e $DIR/nodes ]]; do
        sleep 1
    done
    if ! kill -0 "$owner" 2>/dev/null; then
        WATCHDOG_SELF=1 cmd_stop "$DIR"
    fi
}

cmd_stop() {
    set_dir "${1:-}"
    local wpid=""
    if [[ -r $DIR/watchdog.pid && -z ${WATCHDOG_SELF:-} ]]; then
        read -r wpid <"$DIR/watchdog.pid" || true
        if [[ -n $wpid ]] && pid_has_arg "$wpid" __watch && pid_has_arg "$wpid" "$DIR"; then
            kill -s TERM "$wpid" 2>/dev/null || true
            wait_gone 5 "$wpid" || kill -s KILL "$wpid" 2>/dev/null || true
        fi
    fi
    rm -f -- "$DIR/watchdog.pid" 2>/dev/null || true
    stop_all_nodes
    # A watchdog found by the sweep (stale pid file).
    if [[ -z ${WATCHDOG_SELF:-} ]]; then
        local p
        local -a wpids=()
        mapfile -t wpids < <(pids_with_arg __watch)
        for p in "${wpids[@]}"; do
            if pid_has_arg "$p" "$DIR"; then
                kill -s TERM "$p" 2>/dev/null || true
            fi
        done
    fi
    if [[ -d $DIR ]]; then
        release_ports
    fi
    return 0
}

node_cmd_setup() { # DIR I
    set_dir "${1:-}"
    load_dir
    [[ -n ${2:-} ]] || die "missing node index"
    check_index "$2"
}

cmd_stop_node() {
    node_cmd_setup "$@"
    local pid
    if pid=$(node_pid "$2"); then
        terminate_pids "$pid"
    fi
    rm -f -- "$DIR/node$2/pid"
}

cmd_kill_node() {
    node_cmd_setup "$@"
    local pid
    if pid=$(node_pid "$2"); then
        kill_pids "$pid"
    fi
    rm -f -- "$DIR/node$2/pid"
}

cmd_start_node() {
    node_cmd_setup "$@"
    local i=$2 pid deadline mode port rc
    port=$(node_port "$i")
    if ! pid=$(node_pid "$i"); then
        launch_node "$i"
    else
        signal_pid CONT "$pid"
    fi
    deadline=$((SECONDS + START_TIMEOUT))
    while :; do
        mode=$(server_mode "$port")
        case $mode in
        leader | follower | observer | standalone)
            rc=0
            node_owns_port "$i" || rc=$?
            ((rc != 0)) || return 0
            if ((rc == 1)); then
                note "client port $port of node $i is answered by another server"
                break
            fi
            ;;
        esac
        if ! node_pid "$i" >/dev/null && ! node_launching "$i"; then
            note "node $i exited during start-up"
            break
        fi
        if ((SECONDS >= deadline)); then
            note "node $i did not serve within ${START_TIMEOUT}s"
            break
        fi
        sleep 0.1
    done
    printf '\n----- %s (last 40 lines) -----\n' "$DIR/node$i/server.log" >&2
    tail -n 40 -- "$DIR/node$i/server.log" >&2 || true
    exit 1
}

cmd_pause_node() {
    node_cmd_setup "$@"
    local pid i
    pid=$(node_pid "$2") || die "node $2 is not running"
    signal_pid STOP "$pid"
    # Return once it is stopped: a request sent after this must not be
    # answered (a signal is delivered to a busy process a moment later).
    for ((i = 0; i < 100; i++)); do
        [[ $(proc_state "$pid") == [Tt] ]] && return 0
        sleep 0.02
    done
    die "node $2 did not stop"
}

cmd_resume_node() {
    node_cmd_setup "$@"
    local pid
    pid=$(node_pid "$2") || die "node $2 is not running"
    signal_pid CONT "$pid"
}

cmd_leader() {
    set_dir "${1:-}"
    load_dir
    local i pid st mode best="" best_zxid=-1 zxid
    for ((i = 1; i <= NODES; i++)); do
        pid=$(node_pid "$i") || continue
        st=$(proc_state "$pid")
        [[ $st == T || $st == t ]] && continue
        mode=$(server_mode "$(node_port "$i")")
        if [[ $mode == leader || $mode == standalone ]]; then
            # Several nodes may briefly claim leadership (e.g. a resumed old
            # leader); the one with the newest epoch/zxid is the real one.
            zxid=$(server_zxid "$(node_port "$i")")
            zxid=${zxid:-0}
            if ((zxid > best_zxid)); then
                best=$i
                best_zxid=$zxid
            fi
        fi
    done
    [[ -n $best ]] || die "no leader in $DIR"
    printf '%s\n' "$best"
}

cmd_wait_ready() {
    set_dir "${1:-}"
    load_dir
    local secs=${2:-60} deadline
    is_uint "$secs" || die "wait-ready: SECONDS must be an integer"
    deadline=$((SECONDS + secs))
    while :; do
        probe_ready running && return 0
        if ((SECONDS >= deadline)); then
            note "not ready after ${secs}s:$READY_MSG"
            return 1
        fi
        sleep 0.1
    done
}

cmd_hosts() {
    set_dir "${1:-}"
    load_dir
    connect_string
    printf '\n'
}

cmd_host() {
    node_cmd_setup "$@"
    printf '127.0.0.1:%s\n' "$(node_port "$2")"
}

cmd_mntr() {
    node_cmd_setup "$@"
    local out
    out=$(fourlw "$(node_port "$2")" mntr 5) || out=""
    [[ -n $out ]] || die "node $2 does not answer mntr"
    printf '%s\n' "$out"
}

cmd_packets() {
    set_dir "${1:-}"
    load_dir
    local i pid st out line sum=0 answered=0
    for ((i = 1; i <= NODES; i++)); do
        pid=$(node_pid "$i") || continue
        st=$(proc_state "$pid")
        [[ $st == T || $st == t ]] && continue
        out=$(fourlw "$(node_port "$i")" mntr 5) || continue
        while IFS=$'\t ' read -r key value; do
            if [[ $key == zk_packets_received ]] && is_uint "$value"; then
                sum=$((sum + value))
                answered=$((answered + 1))
            fi
        done <<<"$out"
    done
    ((answered > 0)) || die "no node of $DIR answers mntr"
    printf '%s\n' "$sum"
}

cmd_status() {
    set_dir "${1:-}"
    load_dir
    local i pid st mode
    for ((i = 1; i <= NODES; i++)); do
        if pid=$(node_pid "$i"); then
            st=$(proc_state "$pid")
            if [[ $st == T || $st == t ]]; then
                mode=paused
            else
                mode=$(server_mode "$(node_port "$i")")
                mode=${mode:-not-serving}
            fi
        else
            pid=-
            mode=down
        fi
        printf '%s 127.0.0.1:%s %s %s\n' "$i" "$(node_port "$i")" "$pid" "$mode"
    done
}

main() {
    local cmd=${1:-}
    (($#)) && shift
    case $cmd in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    stop-node) cmd_stop_node "$@" ;;
    kill-node) cmd_kill_node "$@" ;;
    start-node) cmd_start_node "$@" ;;
    pause-node) cmd_pause_node "$@" ;;
    resume-node) cmd_resume_node "$@" ;;
    leader) cmd_leader "$@" ;;
    wait-ready) cmd_wait_ready "$@" ;;
    hosts) cmd_hosts "$@" ;;
    host) cmd_host "$@" ;;
    mntr) cmd_mntr "$@" ;;
    packets) cmd_packets "$@" ;;
    status) cmd_status "$@" ;;
    __watch) cmd___watch "$@" ;;
    help | -h | --help) usage ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
}

main "$@"
