#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build the libFuzzer targets (clang, ASan+UBSan) and run each on a copy of
# its corpus. tools/test.sh gives each 3 s as a smoke test (17 targets); a real campaign
# is this script on its own, e.g. PARTDNS_FUZZ_SECONDS=600 tools/fuzz.sh.
# Usage: tools/fuzz.sh [BUILD_DIR] [TARGET_NAME_SUBSTRING]
# A find (a crash, a leak, a timeout) fails the run with libFuzzer's report
# and leaves the input in the current directory (crash-*, leak-*, timeout-*);
# new inputs the fuzzer finds stay in the temporary copy, not in the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
BUILD=${1:-build-fuzz}
FILTER=${2:-}
SECONDS_EACH=${PARTDNS_FUZZ_SECONDS:-60}

CC=clang cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUZZ=ON \
  -DSANITIZE=address,undefined -DBUILD_TESTING=ON >/dev/null
# only the fuzz targets (and the libraries they link): the daemon and the
# tests of this configuration are not run
mapfile -t targets < <(awk '{ n = $1; sub(/.*\//, "", n); print n }' "$BUILD/fuzz-targets.txt")
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets in $BUILD/fuzz-targets.txt" >&2; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# fuzz_one BIN CORPUS: fuzz a copy of the corpus; on a finding, the report
# (the sanitizer's stack, the input written and its base64) and status 1.
fuzz_one() {
  local bin=$1 corpus=$2 work log
  work=$(mktemp -d)
  cp -r "$corpus"/. "$work"/
  echo "fuzzing $(basename "$bin") for $SECONDS_EACH s (corpus $corpus)"
  log=$work.log
  if ! "$bin" -max_total_time="$SECONDS_EACH" -print_final_stats=0 "$work" > "$log" 2>&1; then
    grep -v -e '^#[0-9]*[[:space:]]*\(NEW\|REDUCE\|pulse\)' "$log" | tail -n 80
    rm -rf "$work" "$log"
    echo "fuzz target $(basename "$bin") failed; the input is in $(pwd)" >&2
    return 1
  fi
  tail -n 1 "$log"
  rm -rf "$work" "$log"
}

# One target per core at a time (each is one process on one core); each
# one's lines are printed when it ends, whole.
JOBS=${PARTDNS_FUZZ_JOBS:-$(nproc)}
outs=$(mktemp -d)
n=0 running=0 fail=0
while read -r bin corpus; do
  [ -z "$FILTER" ] || [[ "$(basename "$bin")" == *"$FILTER"* ]] || continue
  if [ ! -x "$bin" ] || [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
    echo "fuzz target $bin: missing binary or empty corpus $corpus" >&2
    exit 1
  fi
  out=$outs/$(printf '%03d' "$n")
  ( rc=0; fuzz_one "$bin" "$corpus" > "$out" 2>&1 || rc=$?; cat "$out"; exit "$rc" ) &
  n=$((n + 1)) running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || fail=1
    running=$((running - 1))
  fi
done < "$BUILD/fuzz-targets.txt"
while [ "$running" -gt 0 ]; do
  wait -n || fail=1
  running=$((running - 1))
done
rm -rf "$outs"
[ "$fail" = 0 ] || { echo "a fuzz target failed (report above)" >&2; exit 1; }
[ "$n" -gt 0 ] || { echo "no fuzz target matched '$FILTER'" >&2; exit 1; }
echo "$n fuzz target(s) ran for $SECONDS_EACH s each"
