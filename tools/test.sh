#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test command: install dependencies, build (warnings as errors), run every
# test; then build the Debian package, install it, run it and purge it
# (tests/package/test_package.sh); then the same tests under ASan+UBSan; then
# build the libFuzzer targets and give each a short run (tools/fuzz.sh runs
# them for longer).
# Usage: tools/test.sh [--quick] (quick: first build and its tests only)
# Tests run in parallel, three times as many as cores: most integration tests wait
# on servers and timers, not on a CPU (tests/integration/CMakeLists.txt keeps
# the flooding ones apart). PARTDNS_TEST_JOBS overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
JOBS=$(nproc)
TEST_JOBS=${PARTDNS_TEST_JOBS:-$((JOBS * 3))}

tools/deps.sh

step() { printf '\n=== %s (at %d s) ===\n' "$*" "$SECONDS"; }

step "build (gcc, -Werror)"
cmake -S "$SRC" -B build-ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWERROR=ON >/dev/null
cmake --build build-ci -j "$JOBS"
step "tests (gcc build)"
(cd build-ci && ctest --output-on-failure -j "$TEST_JOBS" --timeout 300)

if [ "${1:-}" = "--quick" ]; then
  exit 0
fi

# Not a ctest: it installs the .deb into this system (and purges it), runs
# the installed daemon as its unit would in a private network namespace.
step "Debian package (tools/package.sh, apt-get install, run as installed, purge)"
tests/package/test_package.sh build-pkg

step "build (ASan+UBSan)"
# -O1, as AddressSanitizer's documentation advises: the tests then take a
# quarter less CPU for a few more seconds of compiling (bench/RESULTS.md)
cmake -S "$SRC" -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DWERROR=ON \
  -DSANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$JOBS"
step "tests (ASan+UBSan build)"
# libunbound/ldns are not instrumented; leaks in them are not ours to fix.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$SRC/tests/lsan.supp
# The lint checks (layers, the reference, metrics against stats) read the
# sources and objects, not the running code: the first pass ran them.
(cd build-asan && ctest --output-on-failure -j "$TEST_JOBS" --timeout 1200 -LE lint)

step "fuzz targets (clang, libFuzzer, short runs)"
PARTDNS_FUZZ_SECONDS=${PARTDNS_FUZZ_SECONDS:-3} tools/fuzz.sh build-fuzz
echo "all tests passed in $SECONDS s"
