#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Memory per normal-pool context: partdns RSS with resolver.threads 1, 2, 4,
# at start and after the same misses (names under three zones of the private
# hierarchy), so the cost of a libunbound context beyond the first shows.
#
# Usage (as root: the hierarchy binds port 53 on 127.10.N.x):
#   bench/contexts.sh [BUILD_DIR]            BUILD_DIR defaults to build/
# Knobs: CTX_THREADS ["1 2 4"], CTX_NAMES [300 per zone]
set -u -o pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-$SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac
export PARTDNS_BIN=$BUILD_DIR/resolver/partdns PARTDNSCTL_BIN=$BUILD_DIR/tools/ctl/partdnsctl PARTDNS_SRC=$SRC
. "$SRC/tests/integration/lib.sh"
harness_init bench_contexts
set +e
command -v dnsperf >/dev/null || die "dnsperf not installed"
harness_start_all
pd_require_bins
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
echo "| resolver.threads | RSS at start (KB) | RSS after $((3 * ${CTX_NAMES:-300})) misses (KB) |"
echo "|---|---|---|"
for n in ${CTX_THREADS:-1 2 4}; do
  pd_write_conf "$IT_TMP/partdns-$n.yaml"
  sed -i "s/^resolver:\$/resolver:\n  threads: $n/" "$PD_CONF"
  partdns_start "$PD_CONF"
  sleep 1
  r0=$(rss "$PD_PID")
  for i in $(seq 1 "${CTX_NAMES:-300}"); do
    echo "m$n-$i.customer.example A"; echo "x$n-$i.cdn.test A"; echo "y$n-$i.example A"
  done > "$IT_TMP/q.txt"
  dnsperf -s "$PD_ADDR" -p "$PD_PORT" -d "$IT_TMP/q.txt" -n 1 -q 20 >/dev/null 2>&1
  sleep 1
  echo "| $n | $r0 | $(rss "$PD_PID") |"
  partdns_stop
done
exit 0
