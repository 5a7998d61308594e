#!/usr/bin/env bash
# The holder's side of revocation: a `zkl lock --revocable` holder lets go
# when `zkl revoke` asks (COMMAND ends, the lock is released; in hold mode
# zkl releases and exits 0), a holder without --revocable does not (revoke
# exits 2), and a
# zkl holder lets go when Curator 5.4's Revoker asks (skipped without Java).
# Runs on a server of its own (tests/with-zk.sh) unless ZKL_TEST_HOSTS is set.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/cli/common.sh
. "$here/common.sh" revoke "$@"
cleanup() { kill_jobs; }
pass=0 failed=0 skipped=0
ok() { echo "ok - $*"; pass=$((pass + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }

held() { "$ZKL" holders "$1" 2>/dev/null | grep -q holds; }

base=/zkl-revoke-test/$$

# 1. COMMAND mode, for a mutex and both sides of a read-write lock.
for mode in "" -x -s; do
    p=$base/cmd$mode
    "$ZKL" lock $mode --revocable "$p" sh -c 'echo started >"$0"; exec sleep 60' "$tmp/started$mode" \
        2>"$tmp/err$mode" &
    z=$!
    if ! wait_for 20 held "$p"; then not_ok "--revocable $mode: never held"; continue; fi
    wait_for 10 test -s "$tmp/started$mode"
    "$ZKL" revoke "$p" >/dev/null || not_ok "zkl revoke $mode gave $?"
    if wait_for 15 gone "$z"; then
        wait "$z"
        rc=$?
        n=$(contenders "$p")
        if [[ $rc == 143 && $n == 0 ]] && grep -q "release requested" "$tmp/err$mode"; then
            ok "zkl lock --revocable ${mode:-(mutex)}: COMMAND ended by SIGTERM (exit $rc), lock released"
        else
            not_ok "--revocable $mode: exit $rc, $n nodes left: $(cat "$tmp/err$mode")"
        fi
    else
        not_ok "--revocable $mode: did not let go within 15 s"
    fi
done

# 2. Hold mode: releases and exits 0. Its stdin stays open (a FIFO this
# shell holds): the end of stdin would release too. Not a pipe from a
# process: `wait` would wait for that one as well.
p=$base/hold
mkfifo "$tmp/hold.in"
"$ZKL" lock --revocable "$p" <"$tmp/hold.in" >"$tmp/hold.out" 2>"$tmp/hold.err" &
z=$!
exec 7>"$tmp/hold.in"
if wait_for 20 held "$p"; then
    "$ZKL" revoke "$p" >/dev/null
    if wait_for 15 gone "$z"; then
        wait "$z"
        rc=$?
        [[ $rc == 0 && $(contenders "$p") == 0 ]] && ok "hold mode --revocable: released, exit 0" ||
            not_ok "hold mode --revocable: exit $rc: $(cat "$tmp/hold.err")"
    else
        not_ok "hold mode --revocable: did not let go"
    fi
else
    not_ok "hold mode --revocable: never held"
fi
exec 7>&-

# 3. Without --revocable the request changes nothing, and zkl revoke says
# so (exit 2) after giving the holder the time the revocable ones needed.
p=$base/stubborn
"$ZKL" lock "$p" sleep 60 2>/dev/null &
z=$!
if wait_for 20 held "$p"; then
    "$ZKL" revoke -w 2 "$p" >/dev/null 2>"$tmp/stubborn.err"
    rc=$?
    if [[ $rc == 2 ]] && kill -0 "$z" 2>/dev/null && held "$p" &&
        grep -q "did not let go" "$tmp/stubborn.err"; then
        ok "a holder without --revocable keeps the lock, and zkl revoke says so (exit 2)"
    else
        not_ok "a holder without --revocable: revoke gave $rc: $(cat "$tmp/stubborn.err")"
    fi
    kill -TERM "$z"
    wait "$z" 2>/dev/null
else
    not_ok "stubborn holder never held"
fi

# 4. --revocable is refused with --semaphore.
"$ZKL" lock --semaphore 2 --revocable "$base/sem" true 2>/dev/null
rc=$?
[[ $rc == 64 ]] && ok "--revocable with --semaphore is bad usage (64)" ||
    not_ok "--revocable --semaphore gave $rc"

# 5. Curator's Revoker asks a zkl holder.
worker=$here/../interop/run-curator-worker.sh
if command -v java >/dev/null 2>&1 && "$here/../../bench/build-java.sh" --classpath >/dev/null 2>&1; then
    p=$base/curator
    "$ZKL" lock --revocable "$p" sleep 60 2>"$tmp/cur.err" &
    z=$!
    if wait_for 20 held "$p"; then
        t0=$(now_ms)
        if "$worker" --servers "$ZKL_TEST_HOSTS" --path "$p" --mode revoker --iterations 0 \
            --counter-file "$tmp/c" --log-file "$tmp/cur.log" 2>"$tmp/worker.err" &&
            wait_for 15 gone "$z"; then
            wait "$z"
            rc=$?
            [[ $rc == 143 && $(contenders "$p") == 0 ]] &&
                ok "Curator's Revoker made a zkl holder let go ($(($(now_ms) - t0)) ms, exit $rc)" ||
                not_ok "after Curator's Revoker: exit $rc: $(cat "$tmp/cur.err")"
        else
            not_ok "Curator's Revoker: the zkl holder did not let go: $(cat "$tmp/worker.err")"
        fi
    else
        not_ok "zkl holder for Curator never held"
    fi
else
    echo "skip - no Java or no Curator jars: Curator's Revoker not tried"
    skipped=$((skipped + 1))
fi

echo "$pass passed, $failed failed"
((failed == 0))
