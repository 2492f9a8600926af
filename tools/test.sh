#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test command: install dependencies, build (warnings as errors), run every
# test; then build the Debian package, install it, run it and purge it
# (tests/package/test_package.sh); then the same tests under ASan+UBSan; then
# build the libFuzzer targets and give each a short run.
# Usage: tools/test.sh [--quick] (quick: first build and its tests only)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
JOBS=$(nproc)

tools/deps.sh

step() { printf '\n=== %s ===\n' "$*"; }

step "build (gcc, -Werror)"
cmake -S "$SRC" -B build-ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWERROR=ON >/dev/null
cmake --build build-ci -j "$JOBS"
step "tests (gcc build)"
(cd build-ci && ctest --output-on-failure -j "$JOBS" --timeout 300)

if [ "${1:-}" = "--quick" ]; then
  exit 0
fi

# Not a ctest: it installs the .deb into this system (and purges it), runs
# the installed daemon as its unit would in a private network namespace.
step "Debian package (tools/package.sh, apt-get install, run as installed, purge)"
tests/package/test_package.sh build-pkg

step "build (ASan+UBSan)"
cmake -S "$SRC" -B build-asan -DCMAKE_BUILD_TYPE=Debug -DWERROR=ON \
  -DSANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$JOBS"
step "tests (ASan+UBSan build)"
# libunbound/ldns are not instrumented; leaks in them are not ours to fix.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$SRC/tests/lsan.supp
(cd build-asan && ctest --output-on-failure -j "$JOBS" --timeout 600)

step "fuzz targets (clang, libFuzzer, short runs)"
CC=clang cmake -S "$SRC" -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUZZ=ON \
  -DSANITIZE=address,undefined -DBUILD_TESTING=ON >/dev/null
cmake --build build-fuzz -j "$JOBS"
# Each target with its own corpus (listed by CMake), copied so the fuzzer's
# finds stay out of the tree.
while read -r bin corpus; do
  if [ ! -x "$bin" ] || [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
    echo "fuzz target $bin: missing binary or empty corpus $corpus" >&2
    exit 1
  fi
  work=$(mktemp -d)
  cp -r "$corpus"/. "$work"/
  echo "fuzzing $(basename "$bin") for 20 s (corpus $corpus)"
  "$bin" -max_total_time=20 -print_final_stats=0 "$work" 2>&1 | tail -2
  rm -rf "$work"
done < build-fuzz/fuzz-targets.txt
echo "all tests passed"
