# shellcheck shell=bash
# Sourced first by the tests/cli scripts that run zkl against a server,
# with the script's arguments:
#   . "$here/common.sh" [--own-server] NAME "$@"
# It is the preamble each of them would write again:
#   - Unless the run names a server (ZKL_TEST_HOSTS, as make check does),
#     the script runs again under tests/with-zk.sh, which starts one and
#     stops it after. With --own-server, always under a server of its own,
#     even inside a run that shares one: for a test that restarts the
#     server or deletes its data.
#   - $ZKL is the zkl under test ($ZKL_BIN, else the build tree's; 99
#     without one), talking to the test server unless told otherwise.
#   - $tmp is a new scratch directory, zkl-NAME.XXXXXX. On exit the
#     script's function cleanup runs, if it has one, then $tmp goes.
#   - Then wait.sh, which must come after $ZKL is set (it looks past
#     libtool's wrapper).

_cli_dir=${BASH_SOURCE[0]%/*}
if [[ $1 == --own-server ]]; then
    shift
    [[ -n ${ZKL_OWN_SERVER:-} ]] || exec env -u ZKL_TEST_HOSTS "$_cli_dir/../with-zk.sh" -- \
        env ZKL_OWN_SERVER=1 bash "$0" "${@:2}"
else
    [[ -n ${ZKL_TEST_HOSTS:-} ]] || exec "$_cli_dir/../with-zk.sh" -- bash "$0" "${@:2}"
fi

ZKL=${ZKL_BIN:-${top_builddir:-.}/tools/zkl}
[[ -x $ZKL ]] || { echo "no zkl binary at $ZKL" >&2; exit 99; }
export ZKL_SERVERS=$ZKL_TEST_HOSTS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkl-$1.XXXXXX")
_cli_exit() {
    ! declare -F cleanup >/dev/null || cleanup
    rm -rf -- "$tmp"
}
trap _cli_exit EXIT

# shellcheck source=tests/cli/wait.sh
. "$_cli_dir/wait.sh"

# The scripts made of test_* functions: fail MESSAGE marks the running
# test failed; run_tests [NAMES...] runs the named ones (default: every
# test_* function), says "ok"/"not ok" for each, and returns 1 if any
# failed.
failures=0
passes=0
fail() {
    echo "not ok - $test_name: $*"
    failures=$((failures + 1))
    test_ok=0
}

run_test() {
    test_name=$1
    test_ok=1
    "$1"
    if ((test_ok)); then
        echo "ok - $test_name"
        passes=$((passes + 1))
    fi
}

run_tests() {
    local t tests=("$@")
    ((${#tests[@]})) || mapfile -t tests < <(declare -F | awk '$3 ~ /^test_/ {print $3}')
    for t in "${tests[@]}"; do
        run_test "$t"
    done
    echo "$passes passed, $failures failed"
    ((failures == 0))
}
