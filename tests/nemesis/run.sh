#!/usr/bin/env bash
# run.sh - the nemesis, in a private network namespace (docs/nemesis.md).
#
#   tests/nemesis/run.sh --build DIR [--seconds S] [--seed N] [--nodes 3|5] [--keep]
#   tests/nemesis/run.sh --scenario follower-cut --build DIR [--trials N] [--keep]
#   tests/nemesis/run.sh --check
#
# The first runs a schedule (nemesis.py); the second one fixed scenario
# (tests/nemesis/follower-cut.py) on the same ensemble and rules.
# Every server, client and proxy of the run lives in a network namespace of
# its own (unshare -n), so the nftables rules that cut links touch nothing
# else on the machine. Without the rights to make one (not root, or
# namespaces refused) the run is skipped: it prints "nemesis: SKIP ..." and
# exits 77 (automake's "skipped"). --check does only these checks, and one
# more that the run would fail late: the workers run under uids of their own
# (62001 and up, nemesis.py), so the checkout must be reachable by them (not
# inside a private folder, as mktemp -d makes); it exits 0, 77 or 2.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
skip() {
    printf 'nemesis: SKIP: %s\n' "$*"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root for a network namespace and nftables"
command -v nft >/dev/null 2>&1 || skip "nft not found (install nftables)"
command -v setpriv >/dev/null 2>&1 || skip "setpriv not found (util-linux)"
unshare -n true 2>/dev/null || skip "unshare -n is not allowed here"
unshare -n sh -c 'nft add table inet probe' 2>/dev/null || skip "nftables does not work in a new namespace"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" -c 'import kazoo' 2>/dev/null || skip "python3-kazoo not installed"
if [ "${1:-}" = --check ]; then
    if ! setpriv --reuid=62001 --regid=62001 --clear-groups test -x "$here/run.sh"; then
        echo "nemesis: its workers (uid 62001 and up) cannot reach $here:" \
            "a folder above it is private; make it searchable (chmod o+x) or clone elsewhere" >&2
        exit 2
    fi
    exit 0
fi
script=nemesis.py
if [ "${1:-}" = --scenario ]; then
    script=$2.py
    shift 2
    [ -f "$here/$script" ] || { echo "nemesis: no scenario $script" >&2; exit 2; }
fi
exec unshare -n -- "$py" "$here/$script" "$@"
