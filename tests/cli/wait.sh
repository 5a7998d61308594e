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
