#!/usr/bin/env bash
# with-zk.sh - run a command against a throwaway ZooKeeper.
#
# Usage: with-zk.sh [--nodes N] [--tick MS] [--tls | --tls-only] [--sasl] -- COMMAND [ARGS...]
#
# Starts ZooKeeper (standalone, or an ensemble of N nodes) in a fresh
# temporary directory with zk-harness.sh, runs COMMAND with
#   ZKL_TEST_HOSTS   client connect string, e.g. 127.0.0.1:21811,127.0.0.1:21812
#   ZKL_TEST_ZKDIR   harness directory (for "zk-harness.sh kill-node $ZKL_TEST_ZKDIR 2")
#   ZKL_HARNESS      absolute path of zk-harness.sh
# and, with the security modes of zk-harness.sh (--tls: a TLS port beside the
# plaintext one; --tls-only: TLS only; --sasl: SASL DIGEST-MD5 users):
#   ZKL_TEST_SECURE_HOSTS  connect string of the TLS ports
#   ZKL_TEST_TLS_DIR       the test CA, client certificates and keys
#   ZKL_TEST_SASL_DIR      the users' password files (alice.pw, bob.pw)
#   ZKL_TEST_SUPER         "super:PASSWORD", the servers' superuser (digest)
# in its environment, then stops ZooKeeper and removes the directory, also
# when COMMAND fails or on INT, TERM and HUP.  Exits with COMMAND's status
# (128+signal when interrupted).  If ZooKeeper cannot be started, exits 99
# (the automake "hard error" code) with a message on stderr.
#
# Environment: ZKL_KEEP_ZKDIR=1 keeps the directory (logs, data) afterwards.
# The ZKL_ZK_* variables of zk-harness.sh apply as well.

set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
HARNESS=$HERE/zk-harness.sh

usage() {
    printf 'Usage: %s [--nodes N] [--tick MS] [--tls | --tls-only] [--sasl] -- COMMAND [ARGS...]\n' "$PROG"
}

nodes=1
tick=200
secure=()
while (($#)); do
    case $1 in
    --tls | --tls-only | --sasl)
        secure+=("$1")
        shift
        ;;
    --nodes)
        (($# >= 2)) || { usage >&2; exit 2; }
        nodes=$2
        shift 2
        ;;
    --nodes=*)
        nodes=${1#*=}
        shift
        ;;
    --tick)
        (($# >= 2)) || { usage >&2; exit 2; }
        tick=$2
        shift 2
        ;;
    --tick=*)
        tick=${1#*=}
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    --)
        shift
        break
        ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
done
if (($# == 0)); then
    usage >&2
    exit 2
fi
[[ -x $HARNESS ]] || {
    printf '%s: %s not found or not executable\n' "$PROG" "$HARNESS" >&2
    exit 99
}

zkdir=
child=
child_is_command=
cleaned=

# shellcheck disable=SC2317 # invoked from traps
cleanup() {
    [[ -z $cleaned ]] || return 0
    cleaned=1
    [[ -n $zkdir ]] || return 0
    "$HARNESS" stop "$zkdir" || printf '%s: stopping ZooKeeper in %s failed\n' "$PROG" "$zkdir" >&2
    if [[ ${ZKL_KEEP_ZKDIR:-0} == 1 ]]; then
        printf '%s: keeping %s\n' "$PROG" "$zkdir" >&2
    else
        rm -rf -- "$zkdir"
    fi
}

# shellcheck disable=SC2317 # invoked from traps
on_signal() { # SIGNAME STATUS
    trap '' INT TERM HUP
    if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
        # COMMAND gets the signal we got; the harness start gets TERM, as
        # it runs with SIGINT ignored and stops what it started on TERM.
        if [[ -n $child_is_command ]]; then
            kill -s "$1" "$child" 2>/dev/null || true
        else
            kill -s TERM "$child" 2>/dev/null || true
        fi
        # Give it a moment to exit on its own, then make sure it is gone.
        local n
        for ((n = 0; n < 50; n++)); do
            kill -0 "$child" 2>/dev/null || break
            sleep 0.1
        done
        kill -s KILL "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    cleanup
    exit "$2"
}

trap cleanup EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

zkdir=$(mktemp -d "${TMPDIR:-/tmp}/zkl-zk.XXXXXXXX")

# Start in the background so that signals are handled while starting.
"$HARNESS" start "$zkdir" --nodes "$nodes" --tick "$tick" --owner "$$" "${secure[@]}" >"$zkdir/start.out" &
child=$!
rc=0
wait "$child" || rc=$?
child=
if ((rc != 0)); then
    printf '%s: FAILED to start ZooKeeper (--nodes %s) in %s (status %d)%s\n' "$PROG" "$nodes" "$zkdir" "$rc" \
        "$([[ ${ZKL_KEEP_ZKDIR:-0} == 1 ]] || echo '; ZKL_KEEP_ZKDIR=1 keeps the directory')" >&2
    exit 99
fi
hosts=$(<"$zkdir/hosts")
if [[ -z $hosts ]]; then
    printf '%s: FAILED to start ZooKeeper: empty connect string\n' "$PROG" >&2
    exit 99
fi

export ZKL_TEST_HOSTS=$hosts
export ZKL_TEST_ZKDIR=$zkdir
export ZKL_HARNESS=$HARNESS
if [[ -f $zkdir/secure_hosts ]]; then
    ZKL_TEST_SECURE_HOSTS=$(<"$zkdir/secure_hosts")
    export ZKL_TEST_SECURE_HOSTS ZKL_TEST_TLS_DIR=$zkdir/tls
fi
[[ ! -d $zkdir/sasl ]] || export ZKL_TEST_SASL_DIR=$zkdir/sasl
if [[ -f $zkdir/super ]]; then
    ZKL_TEST_SUPER=$(<"$zkdir/super")
    export ZKL_TEST_SUPER
fi

# Run COMMAND in the background and wait for it, so that a TERM/HUP sent to
# this script is acted on at once (and forwarded) instead of after COMMAND
# ends.  Without job control, bash starts background commands with SIGINT
# and SIGQUIT ignored and stdin on /dev/null; env --default-signal and <&0
# undo that, so COMMAND behaves as if run in the foreground.
if env --default-signal=INT,QUIT true 2>/dev/null; then
    env --default-signal=INT,QUIT -- "$@" <&0 &
else
    "$@" <&0 &
fi
child=$!
child_is_command=1
rc=0
wait "$child" || rc=$?
child=
exit "$rc"
