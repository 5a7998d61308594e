# Sourced by the tests/cli scripts: the clock and a bounded wait.

# In a build tree $ZKL is libtool's wrapper script for the program (its
# library is not installed), which starts half a dozen processes on every
# call, and the waits call zkl every 50 ms. libtool's execute mode names the
# program itself and the library path it needs: zkl is called directly.
if [ -n "${ZKL:-}" ] && [ -x "${top_builddir:-}/libtool" ]; then
    if _run=$("$top_builddir/libtool" --mode=execute sh -c \
        'printf "%s\n%s\n" "$0" "${LD_LIBRARY_PATH:-}"' "$ZKL" 2>/dev/null); then
        { IFS= read -r _prog; IFS= read -r _libs; } <<<"$_run"
        if [ -x "$_prog" ]; then
            ZKL=$_prog
            [ -z "$_libs" ] || export LD_LIBRARY_PATH=$_libs
        fi
    fi
fi

# python3 is Debian's (scripts/deps.sh installs it), not a wrapper that
# comes first on PATH (a version manager's shim starts a shell and more
# each time).
if [ -x /usr/bin/python3 ]; then
    python3() { /usr/bin/python3 "$@"; }
fi

# Realtime in ms.
now_ms() {
    local t=${EPOCHREALTIME//[.,]/}
    echo $((t / 1000))
}

# gone PID: the process has ended.
gone() { ! kill -0 "$1" 2>/dev/null; }

# nap SECONDS: sleep without starting a process (a read that times out on
# a pipe that stays empty: this shell holds its only write end).
exec {nap_fd}<> <(:)
nap() {
    read -rt "$1" -u "$nap_fd" _ || :
}

# wait_for SECONDS COMMAND...: poll COMMAND every 50 ms until it succeeds;
# 1 if it did not within SECONDS. (The clock read in place: $(now_ms) would
# fork.)
wait_for() {
    local t=${EPOCHREALTIME//[.,]/}
    local end=$((t / 1000 + $1 * 1000))
    shift
    until "$@"; do
        t=${EPOCHREALTIME//[.,]/}
        ((t / 1000 < end)) || return 1
        nap 0.05
    done
}

# contenders [ZKL HOLDERS OPTIONS...] PATH: the number of contenders of PATH
# by `$ZKL holders --json` (a line each); nothing and status 1 if it fails.
# Counted without a JSON parser: the waits call it every 50 ms.
contenders() {
    local out
    out=$("$ZKL" holders --json "$@") || return 1
    printf '%s\n' "$out" | grep -c '"position": '
}

# kill_jobs: SIGKILL to this shell's background jobs that still run. Never
# to a pid recorded when the job started: once that job was waited for, the
# pid may be another process's (pids wrap around: 32768 here, and a run
# starts tens of thousands of processes).
kill_jobs() {
    local p
    for p in $(jobs -rp); do
        kill -KILL "$p" 2>/dev/null
    done
}
