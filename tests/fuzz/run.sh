#!/usr/bin/env bash
# run.sh - build the libFuzzer targets with clang and run each for a while.
#
#   tests/fuzz/run.sh [--seconds S] [--out DIR] [--build BUILD_DIR]
#
# Targets (tests/fuzz/*.c): fuzz_path (zkl__path_check), fuzz_entry
# (zkl__entry_parse), fuzz_listing (sort + each recipe's policy on a fuzzed
# listing). Each is built with -fsanitize=fuzzer,address,undefined from the
# library's sources, started from a small seed corpus, and run for S seconds
# (default 25; -max_total_time). Prints libFuzzer's "Done N runs" line for
# each, then "N passed, F failed" (a crash, a sanitizer report or a broken
# invariant fails its target; the crashing input is kept in DIR).
# Without clang's libFuzzer: prints "fuzz: SKIP ..." and exits 77.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(cd "$here/../.." && pwd -P)
secs=25
out=$top/build/fuzz
build=$top/build # a configured build tree: its include/zkl/version.h
while (($#)); do
    case $1 in
    --seconds) secs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds S] [--out DIR] [--build BUILD_DIR]" >&2; exit 2 ;;
    esac
done
cc=${CLANG:-clang}
if ! command -v "$cc" >/dev/null 2>&1 ||
    ! echo 'int LLVMFuzzerTestOneInput(const char*d,unsigned long n){(void)d;(void)n;return 0;}' |
    "$cc" -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
    echo "fuzz: SKIP: clang with libFuzzer not found (install clang and libclang-rt-14-dev)"
    echo "0 passed, 0 failed, 3 skipped"
    exit 77
fi
mkdir -p "$out"
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -I"$build" -I"$build/include" -I"$top/include" -D_GNU_SOURCE -DTHREADED -std=c11)
# Every source of the library, its folders at any depth (lib/engine/core).
mapfile -t lib < <(find "$top/lib" -name '*.c' | sort)
while IFS= read -r d; do flags+=(-I"$d"); done < <(find "$top/lib" -mindepth 1 -type d | sort)
recipes=("$top"/recipes/*.c)

seed() { # DIR NAME...
    local d=$1
    shift
    mkdir -p "$d"
    local i=0 s
    for s in "$@"; do
        printf '%b' "$s" >"$d/seed$i"
        i=$((i + 1))
    done
}
U=_c_0f0e0d0c-0b0a-4908-8706-050403020100-
seed "$out/corpus_path" "/a" "/locks/orders" "/a/b/c" "/zookeeper/x" "/a/../b" "/a//b" "/x\x01y"
seed "$out/corpus_entry" "lock-0000000001" "${U}__READ__0000000042" "${U}zkl-lease-x3-0000000007" \
    "foo" "_c_short-0000000001" "12345678901"
seed "$out/corpus_listing" \
    "\x00\x09${U}lock-0000000001\n${U/0f/1f}lock-0000000002\nlock-0000000003" \
    "\x06\x11${U}__WRIT__0000000001\n${U/0f/2f}__READ__0000000002\n${U/0f/3f}__READ__0000000002" \
    "\x03\x1a${U}zkl-lease-x2-0000000001\n${U/0f/4f}zkl-wait-0000000002\n${U/0f/5f}zkl-lease-0000000003\nforeign0000000000"

passed=0 failed=0
for t in fuzz_path fuzz_entry fuzz_listing; do
    src=("${lib[@]}" "${recipes[@]}")
    if ! "$cc" "${flags[@]}" -o "$out/$t" "$here/$t.c" "${src[@]}" -lzookeeper_mt -lpthread \
        >"$out/$t.build.log" 2>&1; then
        echo "fuzz: $t: build FAILED"
        tail -n 20 "$out/$t.build.log"
        failed=$((failed + 1))
        continue
    fi
    corpus=$out/corpus_${t#fuzz_}
    rc=0
    (cd "$out" && ASAN_OPTIONS=detect_leaks=1 "./$t" -max_total_time="$secs" -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$out/$t-" "$corpus" >"$out/$t.log" 2>&1) || rc=$?
    done_line=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second\(s\)' "$out/$t.log" | tail -n 1 || true)
    if ((rc == 0)) && [[ -n $done_line ]]; then
        echo "fuzz: $t: $done_line, no crash"
        passed=$((passed + 1))
    else
        echo "fuzz: $t: FAILED (status $rc); log $out/$t.log"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$out/$t.log" | head -n 10 || true
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
((failed == 0))
