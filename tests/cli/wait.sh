# Sourced by the tests/cli scripts: the clock and a bounded wait.

# Realtime in ms.
now_ms() {
    local t=${EPOCHREALTIME//[.,]/}
    echo $((t / 1000))
}

# wait_for SECONDS COMMAND...: poll COMMAND every 50 ms until it succeeds;
# 1 if it did not within SECONDS.
wait_for() {
    local end=$(($(now_ms) + $1 * 1000))
    shift
    until "$@"; do
        (($(now_ms) < end)) || return 1
        sleep 0.05
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
