#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Resolver benchmark: dnsperf cache hits on partdns (common and per-partition) vs Unbound, one server thread.
#
# Usage (as root: the private DNS hierarchy binds port 53 on 127.10.N.x):
#   bench/resolver.sh [BUILD_DIR]          BUILD_DIR defaults to build/
#
# What it does, all on loopback:
#   * starts the integration harness's root, TLD and customer.example knotd
#     (tests/integration/lib.sh, sourced), with BENCH_NAMES extra A records
#     c0..cN-1 and e0..eN-1 in customer.example;
#   * flags e0..eN-1 as EDNS domains (exact), so the two name sets differ only
#     in whether the cache key carries a partition;
#   * starts partdns (server.threads 1, edns.threads 1) and a reference
#     Unbound (num-threads 1, iterator only, same root hints), each pinned to
#     CPU 1 when taskset exists; dnsperf runs on CPU 0;
#   * warms both caches (one pass of each query file; the EDNS file from each
#     of the three partitions) and checks that a second pass is all hits;
#   * runs BENCH_ROUNDS interleaved rounds.  Every round uses one client
#     address (127.0.1.10, 127.0.2.10, 127.0.3.10 in turn: one partition per
#     round, the same source for all three cases) and rotates the order of
#     the cases (so that over 9 rounds each partition meets each order):
#                 ub-common  = Unbound, c-names;
#                 pd-common  = partdns, c-names (not flagged: common cache);
#                 pd-part    = partdns, e-names (flagged: partition cache).
#     Per case: a saturation run (dnsperf -q BENCH_Q for BENCH_SAT_SECS) and
#     a fixed-rate run (-Q BENCH_RATE for BENCH_RATE_SECS) during which the
#     server's CPU time is read from /proc (all threads) and divided by the
#     queries answered;
#   * (BENCH_CALLGRIND=1, valgrind installed) restarts both servers under
#     callgrind and counts the user-space instructions per hit of each case:
#     exact, and deaf to the other load of a shared machine, which makes the
#     wall-clock and CPU-time figures swing by 10-15 % from run to run;
#   * prints a markdown table of medians, spreads and ratios on stdout
#     (progress and per-run lines on stderr), and checks at the end that no
#     query of the measured runs was a cache miss.
#
# Environment knobs (defaults in brackets):
#   BENCH_ROUNDS [9]  BENCH_SAT_SECS [3]  BENCH_RATE [20000]  BENCH_RATE_SECS [3]
#   BENCH_Q [200]  BENCH_NAMES [1000]  BENCH_PIN [1]  BENCH_DNSPERF_OPTS [""]
#   BENCH_RAW [unset: a file to append the per-run lines to]
#   BENCH_CALLGRIND [1: also count instructions per query under callgrind]
#   BENCH_PROFILE [unset: a directory; after the rounds, `perf record` of each
#               case during one more saturation run, and callgrind_annotate
#               output of the callgrind runs, are written there]

set -u -o pipefail

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-$BENCH_SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac

ROUNDS=${BENCH_ROUNDS:-9}
SAT_SECS=${BENCH_SAT_SECS:-3}
RATE=${BENCH_RATE:-20000}
RATE_SECS=${BENCH_RATE_SECS:-3}
OUTSTANDING=${BENCH_Q:-200}
NAMES=${BENCH_NAMES:-1000}
PIN=${BENCH_PIN:-1}
DNSPERF_OPTS=${BENCH_DNSPERF_OPTS:-}
CASES=(ub-common pd-common pd-part)

bmsg() { printf '[bench] %s\n' "$*" >&2; }
bdie() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || bdie "run as root: the DNS hierarchy binds port 53 on 127.10.N.x"
command -v dnsperf >/dev/null 2>&1 || bdie "dnsperf not installed (Debian package dnsperf)"
export PARTDNS_BIN=$BUILD_DIR/resolver/partdns
export PARTDNSCTL_BIN=$BUILD_DIR/tools/ctl/partdnsctl
[ -x "$PARTDNS_BIN" ] || bdie "no $PARTDNS_BIN: build first (cmake --build $BUILD_DIR)"
[ -x "$PARTDNSCTL_BIN" ] || bdie "no $PARTDNSCTL_BIN: build first"
if [ "$PIN" = 1 ] && ! command -v taskset >/dev/null 2>&1; then
  bmsg "taskset not found (util-linux): running unpinned"
  PIN=0
fi
[ "$(nproc)" -ge 2 ] || PIN=0
SERVER_CPU=1
CLIENT_CPU=0

# The harness: private hierarchy, partdns start/stop, EXIT trap that stops
# every daemon in IT_PIDS plus PD_PID and removes IT_TMP.
. "$BENCH_SRC/tests/integration/lib.sh"
harness_init bench_resolver
set +e   # failures are checked explicitly below

# ---------------------------------------------------------------- helpers

. "$BENCH_SRC/bench/lib.sh"

# pin PID: move every thread of PID to the server CPU.
pin() {
  [ "$PIN" = 1 ] || return 0
  taskset -a -p -c "$SERVER_CPU" "$1" >/dev/null || bdie "taskset -p $1 failed"
}

# client CMD...: run a load generator on the client CPU.
client() {
  if [ "$PIN" = 1 ]; then taskset -c "$CLIENT_CPU" "$@"; else "$@"; fi
}


# ---------------------------------------------------------------- set-up

bmsg "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1); load average $(cut -d' ' -f1-3 /proc/loadavg)"
bmsg "pinning: $([ "$PIN" = 1 ] && echo "servers on CPU $SERVER_CPU, dnsperf on CPU $CLIENT_CPU" || echo off); CPU time from /proc/PID/$CPU_SRC"

# The hierarchy, with the benchmark's names appended to the customer zone
# before its server starts.  TTL 1 day: nothing expires during the run.
harness_write_hints
knot_write_conf root "$NET.1" .
knot_write_conf tld "$NET.2" example. test.
knot_write_conf customer "$NET.3" customer.example.
ZONE=$IT_TMP/knot-customer/customer.example.zone
[ -f "$ZONE" ] || bdie "harness layout changed: no $ZONE"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) {
  printf "c%d 86400 A 203.0.113.%d\n", i, 10 + i % 200
  printf "e%d 86400 A 203.0.113.%d\n", i, 10 + i % 200 } }' >> "$ZONE"
knot_start root tld customer

QDIR=$IT_TMP/bench
mkdir -p "$QDIR"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) printf "c%d.customer.example A\n", i }' > "$QDIR/common.txt"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) printf "e%d.customer.example A\n", i }' > "$QDIR/part.txt"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) printf "e%d.customer.example\n", i }' > "$QDIR/domains.txt"

# partdns: one worker thread, one EDNS thread, on NET.53@5301.
PD_THREADS=1 pd_write_conf "$IT_TMP/partdns.yaml"
# dnsperf sends from one address, far over server.client_qps: exempt it. The
# limiter's bucket is still updated on every query, so its cost is measured;
# the exemption check on top of it makes this an upper bound.
sed -i 's|^  allow: \(.*\)|  allow: \1\n  client_exempt: [ 127.0.0.0/8 ]|' "$IT_TMP/partdns.yaml"
grep -q client_exempt "$IT_TMP/partdns.yaml" || bdie "could not exempt the load generator"
# The warm-up asks 1000 flagged names of one zone as fast as it can: lift the
# per-zone upstream rate (edns.zone_qps) that would shed part of it.
sed -i 's/^edns:$/edns:\n  zone_qps: 0/' "$IT_TMP/partdns.yaml"
grep -q 'zone_qps: 0' "$IT_TMP/partdns.yaml" || bdie "could not lift edns.zone_qps"
# The same for the normal pool's warm-up of 1000 names of one zone: libunbound's
# per-zone ratelimit (resolver.zone_qps, split over the resolver.threads
# contexts) and the per-parent in-flight share (resolver.zone_inflight) would
# answer part of the burst SERVFAIL.
sed -i 's/^resolver:$/resolver:\n  zone_qps: 0\n  zone_inflight: 0/' "$IT_TMP/partdns.yaml"
[ "$(grep -c 'zone_qps: 0' "$IT_TMP/partdns.yaml")" -eq 2 ] || bdie "could not lift resolver.zone_qps"
if grep -q '^  threads:' <(sed -n '/^edns:/,/^[a-z]/p' "$IT_TMP/partdns.yaml"); then
  sed -i '/^edns:/,/^[a-z]/s/^  threads:.*/  threads: 1/' "$IT_TMP/partdns.yaml"
else
  sed -i 's/^edns:$/edns:\n  threads: 1/' "$IT_TMP/partdns.yaml"
fi
"$PARTDNS_BIN" -t -c "$IT_TMP/partdns.yaml" >/dev/null 2>&1 ||
  bdie "partdns -t rejects the config: $("$PARTDNS_BIN" -t -c "$IT_TMP/partdns.yaml" 2>&1 | head -n 5)"
pdctl domain import "$QDIR/domains.txt" >/dev/null
partdns_start "$IT_TMP/partdns.yaml"
pin "$PD_PID"

# The reference: Unbound, one thread, the same hints, on NET.54@PD_PORT.
UB_ADDR=$NET.54
UB_DIR=$IT_TMP/unbound-ref
mkdir -p "$UB_DIR"
bench_unbound_conf "$UB_DIR/unbound.conf" 1
unbound -d -c "$UB_DIR/unbound.conf" > "$UB_DIR/stdout.log" 2>&1 &
UB_PID=$!
IT_PIDS[bench-unbound]=$UB_PID
it_wait_dns 5 -p "$PD_PORT" @"$UB_ADDR" localhost. A ||
  bdie "unbound on $UB_ADDR@$PD_PORT did not answer: $(tail -n 5 "$UB_DIR/unbound.log" "$UB_DIR/stdout.log" 2>/dev/null)"
pin "$UB_PID"

# ---------------------------------------------------------------- correctness and warm-up

# Expected answer of cN / eN: 203.0.113.(10 + N % 200).
check_answer() {
  local srv=$1 client=$2 name=$3 want=$4 got
  got=$(dig +time=3 +tries=1 -b "$client" @"$srv" -p "$PD_PORT" "$name" A +short 2>&1)
  [ "$got" = "$want" ] || bdie "$name from $client at $srv: expected $want, got '$got'"
}
for c in 127.0.1.10 127.0.2.10 127.0.3.10; do
  check_answer "$PD_ADDR" "$c" e7.customer.example 203.0.113.17
  check_answer "$PD_ADDR" "$c" c7.customer.example 203.0.113.17
done
check_answer "$UB_ADDR" 127.0.1.10 c7.customer.example 203.0.113.17

pd_stat() { "$PARTDNSCTL_BIN" -c "$PD_CONF" stats 2>/dev/null | awk -v k="$1" '$1 == k {print $2}'; }
ub_stat() { unbound-control -c "$UB_DIR/unbound.conf" stats_noreset 2>/dev/null | awk -F= -v k="$1" '$1 == k {print $2}'; }

# pass SERVER CLIENT FILE: one pass of FILE, dies unless every query is answered NOERROR.
pass() {
  local out n
  n=$(wc -l < "$3")
  out=$(dnsperf -s "$1" -p "$PD_PORT" -a "$2" -d "$3" -n 1 -q 20 -t 5 $DNSPERF_OPTS 2>&1)
  [ "$(dp_field "$out" completed)" = "$n" ] && [ "$(dp_field "$out" codes)" = "NOERROR $n (100.00%)" ] ||
    bdie "warm-up pass of ${3##*/} at $1 from $2 not all NOERROR: $(dp_field "$out" completed) completed, codes $(dp_field "$out" codes)"
}
bmsg "warming the caches ($NAMES c-names on both, $NAMES e-names on partdns from each partition)"
for srv in "$PD_ADDR" "$UB_ADDR"; do pass "$srv" 127.0.1.10 "$QDIR/common.txt"; done
for c in 127.0.1.10 127.0.2.10 127.0.3.10; do pass "$PD_ADDR" "$c" "$QDIR/part.txt"; done
sleep 0.5
pd_miss0=$(pd_stat misses); ub_miss0=$(ub_stat total.num.cachemiss)
pd_edns0=$(pd_stat partition.nanjing.hits)
for srv in "$PD_ADDR" "$UB_ADDR"; do pass "$srv" 127.0.1.10 "$QDIR/common.txt"; done
for c in 127.0.1.10 127.0.2.10 127.0.3.10; do pass "$PD_ADDR" "$c" "$QDIR/part.txt"; done
pd_miss1=$(pd_stat misses); ub_miss1=$(ub_stat total.num.cachemiss)
pd_edns1=$(pd_stat partition.nanjing.hits)
[ -n "$pd_miss0" ] && [ "$pd_miss0" = "$pd_miss1" ] ||
  bdie "partdns cache not warm: misses $pd_miss0 -> $pd_miss1 during a second pass"
[ -n "$ub_miss0" ] && [ "$ub_miss0" = "$ub_miss1" ] ||
  bdie "unbound cache not warm: cachemiss $ub_miss0 -> $ub_miss1 during a second pass"
[ -n "$pd_edns0" ] && [ $((pd_edns1 - pd_edns0)) -ge "$NAMES" ] ||
  bdie "partdns: nanjing partition hits $pd_edns0 -> $pd_edns1, expected +$NAMES (e-names not per partition?)"
SIZES=$(dp_field "$(dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.1.10 -d "$QDIR/common.txt" -n 1 $DNSPERF_OPTS 2>&1)" sizes)
UB_SIZES=$(dp_field "$(dnsperf -s "$UB_ADDR" -p "$PD_PORT" -a 127.0.1.10 -d "$QDIR/common.txt" -n 1 $DNSPERF_OPTS 2>&1)" sizes)
bmsg "warm: a second pass was all hits (partdns misses $pd_miss1, unbound cachemiss $ub_miss1)"
bmsg "packet sizes: partdns $SIZES; unbound $UB_SIZES"

idle_us_per_s() { local a b; a=$(cpu_ns "$1"); sleep 2; b=$(cpu_ns "$1"); echo $(( (b - a) / 2000 )); }
PD_IDLE=$(idle_us_per_s "$PD_PID"); UB_IDLE=$(idle_us_per_s "$UB_PID")
bmsg "idle CPU: partdns $PD_IDLE us/s, unbound $UB_IDLE us/s"

# ---------------------------------------------------------------- measurement

declare -A SAT=() SATCPU=() SATBUSY=() SATCAP=() FIX=() LOST=()

# run_case CASE ROUND CLIENT MODE: one dnsperf run; records into the arrays.
# shellcheck disable=SC2034  # the arrays are read through namerefs (vals, paired)
run_case() {
  local case=$1 round=$2 cl=$3 mode=$4 srv pid file out c0 c1 t0 t1 n lost qps
  case $case in
    ub-common) srv=$UB_ADDR; pid=$UB_PID; file=$QDIR/common.txt ;;
    pd-common) srv=$PD_ADDR; pid=$PD_PID; file=$QDIR/common.txt ;;
    pd-part)   srv=$PD_ADDR; pid=$PD_PID; file=$QDIR/part.txt ;;
  esac
  local args=(-s "$srv" -p "$PD_PORT" -a "$cl" -d "$file" -c 1 -T 1 -q "$OUTSTANDING" -t 2)
  if [ "$mode" = sat ]; then args+=(-l "$SAT_SECS"); else args+=(-l "$RATE_SECS" -Q "$RATE"); fi
  c0=$(cpu_ns "$pid"); t0=$(date +%s%N)
  out=$(client dnsperf "${args[@]}" $DNSPERF_OPTS 2>&1)
  t1=$(date +%s%N); c1=$(cpu_ns "$pid")
  n=$(dp_field "$out" completed); lost=$(dp_field "$out" lost); qps=$(dp_field "$out" qps)
  [ -n "$n" ] && [ "$n" -gt 0 ] || bdie "dnsperf ($case, $mode) answered nothing: $(printf '%s' "$out" | tail -n 5)"
  case $(dp_field "$out" codes) in
    "NOERROR $n (100.00%)") ;;
    *) bdie "dnsperf ($case, $mode): not all NOERROR: $(dp_field "$out" codes)" ;;
  esac
  local us_q busy
  us_q=$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {printf "%.3f", c / n / 1000}')
  busy=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN {printf "%.1f", 100 * c / t}')
  local key=$case.$round
  [ "$round" = perf ] || LOST[$key.$mode]=$lost
  if [ "$round" = perf ]; then
    :
  elif [ "$mode" = sat ]; then
    SAT[$key]=$qps; SATCPU[$key]=$us_q; SATBUSY[$key]=$busy
    SATCAP[$key]=$(awk -v u="$us_q" 'BEGIN {printf "%.0f", 1000000 / u}')
  else
    FIX[$key]=$us_q
  fi
  local line
  line=$(printf 'round %-4s %-9s %-4s client %-10s answered %7d lost %3d qps %9.0f server-cpu %6.3f us/q (busy %5.1f %%)' \
    "$round" "$case" "$mode" "$cl" "$n" "$lost" "$qps" "$us_q" "$busy")
  bmsg "$line"
  [ -z "${BENCH_RAW:-}" ] || printf '%s\n' "$line" >> "$BENCH_RAW"
}

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
bmsg "$ROUNDS rounds: saturation ${SAT_SECS}s -q $OUTSTANDING, fixed rate $RATE qps for ${RATE_SECS}s"
for ((r = 1; r <= ROUNDS; r++)); do
  cl=127.0.$(( (r - 1) % 3 + 1 )).10
  # rotate the order of the cases from round to round, and again every
  # three rounds, so that each partition meets each order (over 9 rounds)
  shift_by=$(( (r - 1) + (r - 1) / 3 ))
  order=()
  for ((i = 0; i < ${#CASES[@]}; i++)); do order+=("${CASES[$(( (i + shift_by) % ${#CASES[@]} ))]}"); done
  for cs in "${order[@]}"; do run_case "$cs" "$r" "$cl" sat; done
  for cs in "${order[@]}"; do run_case "$cs" "$r" "$cl" fix; done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# Were the measured runs hits only?
pd_miss2=$(pd_stat misses); ub_miss2=$(ub_stat total.num.cachemiss)
HITS_ONLY="partdns misses +$((pd_miss2 - pd_miss1)), unbound cache misses +$((ub_miss2 - ub_miss1)) during the measured runs"
bmsg "$HITS_ONLY"

# Optional profile: one more saturation run per case under perf record.
if [ -n "${BENCH_PROFILE:-}" ] && command -v perf >/dev/null 2>&1; then
  mkdir -p "$BENCH_PROFILE"
  for cs in "${CASES[@]}"; do
    case $cs in ub-*) pid=$UB_PID ;; *) pid=$PD_PID ;; esac
    perf record -q -g -p "$pid" -o "$BENCH_PROFILE/$cs.data" -- sleep "$SAT_SECS" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 0.3
    run_case "$cs" perf 127.0.1.10 sat
    wait "$perf_pid"
    perf report -i "$BENCH_PROFILE/$cs.data" --no-children --sort symbol --stdio 2>/dev/null |
      grep -v '^#' | grep '%' | head -n 40 > "$BENCH_PROFILE/$cs.top.txt"
    bmsg "perf profile of $cs: $BENCH_PROFILE/$cs.top.txt"
  done
fi

# Instructions per query (callgrind): user-space instructions of the whole
# server process, exact and immune to the other load on the machine; the
# kernel's share (syscalls, loopback) is not in it.  Both servers restart
# under valgrind, are warmed on a CG_NAMES subset, then for each case the
# counters are zeroed, CG_PASSES passes are sent, and the counters dumped.
CG_DONE=0
declare -A CG_LOW=() CG_SAT=()
if [ "${BENCH_CALLGRIND:-1}" = 1 ] && command -v valgrind >/dev/null 2>&1 &&
   command -v callgrind_control >/dev/null 2>&1; then
  CG_NAMES=$(( NAMES < 200 ? NAMES : 200 ))
  CG_PASSES=10
  head -n "$CG_NAMES" "$QDIR/common.txt" > "$QDIR/cg-common.txt"
  head -n "$CG_NAMES" "$QDIR/part.txt" > "$QDIR/cg-part.txt"
  bmsg "callgrind: restarting both servers under valgrind ($CG_NAMES names, $CG_PASSES passes per case)"
  partdns_stop
  it_stop_pid "$UB_PID" 5
  unset "IT_PIDS[bench-unbound]"
  REAL_PARTDNS=$PARTDNS_BIN
  cat > "$QDIR/partdns-callgrind" <<EOF2
#!/bin/sh
exec valgrind -q --tool=callgrind --callgrind-out-file=$QDIR/cg-partdns.out "$REAL_PARTDNS" "\$@"
EOF2
  chmod +x "$QDIR/partdns-callgrind"
  PARTDNS_BIN=$QDIR/partdns-callgrind
  partdns_start "$IT_TMP/partdns.yaml"
  PARTDNS_BIN=$REAL_PARTDNS
  pin "$PD_PID"
  valgrind -q --tool=callgrind --callgrind-out-file="$QDIR/cg-unbound.out" \
    unbound -d -c "$UB_DIR/unbound.conf" > "$UB_DIR/stdout-callgrind.log" 2>&1 &
  UB_PID=$!
  IT_PIDS[bench-unbound]=$UB_PID
  it_wait_dns 30 -p "$PD_PORT" @"$UB_ADDR" localhost. A || bdie "unbound under valgrind did not answer"
  pin "$UB_PID"
  pass "$PD_ADDR" 127.0.1.10 "$QDIR/cg-common.txt"
  pass "$UB_ADDR" 127.0.1.10 "$QDIR/cg-common.txt"
  for c in 127.0.1.10 127.0.2.10 127.0.3.10; do pass "$PD_ADDR" "$c" "$QDIR/cg-part.txt"; done
  cg_miss0=$(pd_stat misses)

  # cg_run CASE MODE: zero, CG_PASSES passes (low: 2000 qps, one query per
  # wake-up; sat: -q OUTSTANDING, the slowed server sees full batches), dump;
  # prints instructions per query.
  cg_run() {
    local case=$1 mode=$2 srv pid file out n tag
    case $case in
      ub-common) srv=$UB_ADDR; pid=$UB_PID; file=$QDIR/cg-common.txt; tag=unbound ;;
      pd-common) srv=$PD_ADDR; pid=$PD_PID; file=$QDIR/cg-common.txt; tag=partdns ;;
      pd-part)   srv=$PD_ADDR; pid=$PD_PID; file=$QDIR/cg-part.txt; tag=partdns ;;
    esac
    local args=(-s "$srv" -p "$PD_PORT" -a 127.0.2.10 -d "$file" -n "$CG_PASSES" -c 1 -T 1 -t 5)
    if [ "$mode" = low ]; then args+=(-q 20 -Q 2000); else args+=(-q "$OUTSTANDING"); fi
    callgrind_control -z "$pid" >/dev/null 2>&1 || bdie "callgrind_control -z $pid failed"
    out=$(client dnsperf "${args[@]}" $DNSPERF_OPTS 2>&1)
    callgrind_control -d "$pid" >/dev/null 2>&1 || bdie "callgrind_control -d $pid failed"
    n=$(dp_field "$out" completed)
    local f
    f=$(ls -t "$QDIR"/cg-$tag.out.* 2>/dev/null | head -n 1)
    [ -n "$f" ] && [ -n "$n" ] && [ "$n" -gt 0 ] || bdie "callgrind run $case $mode: no dump or no answers"
    awk -v n="$n" '/^(summary|totals):/ {printf "%.0f\n", $2 / n; exit}' "$f"
    cp "$f" "$QDIR/cg-$case-$mode.out"
  }
  for mode in low sat; do
    for cs in "${CASES[@]}"; do
      if [ "$mode" = low ]; then CG_LOW[$cs]=$(cg_run "$cs" "$mode"); else CG_SAT[$cs]=$(cg_run "$cs" "$mode"); fi
    done
  done
  for cs in "${CASES[@]}"; do
    [[ "${CG_LOW[$cs]}" =~ ^[0-9]+$ && "${CG_SAT[$cs]}" =~ ^[0-9]+$ ]] || bdie "callgrind run of $cs failed"
  done
  for cs in "${CASES[@]}"; do bmsg "callgrind $cs: ${CG_LOW[$cs]} instructions/query at 2000 qps, ${CG_SAT[$cs]} under saturation"; done
  [ "$(pd_stat misses)" = "$cg_miss0" ] || bdie "partdns missed the cache during the callgrind runs"
  CG_DONE=1
  # stop them here, with time for valgrind to exit cleanly (its vgdb FIFOs in /tmp)
  partdns_stop 20
  it_stop_pid "$UB_PID" 20
  unset "IT_PIDS[bench-unbound]"
  if [ -n "${BENCH_PROFILE:-}" ]; then
    mkdir -p "$BENCH_PROFILE"
    for cs in "${CASES[@]}"; do
      for mode in low sat; do
        callgrind_annotate --inclusive=no "$QDIR/cg-$cs-$mode.out" 2>/dev/null | head -n 60 > "$BENCH_PROFILE/callgrind-$cs-$mode.txt"
        cp "$QDIR/cg-$cs-$mode.out" "$BENCH_PROFILE/"
      done
    done
    bmsg "callgrind profiles in $BENCH_PROFILE"
  fi
fi

# ---------------------------------------------------------------- report

# vals ARRAY CASE: the per-round values of one case.
vals() {
  local -n arr=$1
  local r
  for ((r = 1; r <= ROUNDS; r++)); do printf '%s\n' "${arr[$2.$r]}"; done
}
# paired ARRAY A B: per-round ratios A/B (same round: same client, same minute).
paired() {
  local -n arr=$1
  local r
  for ((r = 1; r <= ROUNDS; r++)); do ratio "${arr[$2.$r]}" "${arr[$3.$r]}"; echo; done
}
# cell ARRAY CASE FORMAT: "median (min-max)".
cell() {
  local v
  mapfile -t v < <(vals "$1" "$2")
  printf '%s (%s–%s)' "$(fmt "$(median "${v[@]}")" "$3")" "$(fmt "$(minimum "${v[@]}")" "$3")" "$(fmt "$(maximum "${v[@]}")" "$3")"
}
# rcell ARRAY A B: ratio of medians, and the median and range of the paired ratios.
rcell() {
  local a b p
  mapfile -t a < <(vals "$1" "$2")
  mapfile -t b < <(vals "$1" "$3")
  mapfile -t p < <(paired "$1" "$2" "$3")
  printf '%s (per round: median %s, %s–%s)' "$(ratio "$(median "${a[@]}")" "$(median "${b[@]}")")" \
    "$(fmt "$(median "${p[@]}")" %.3f)" "$(fmt "$(minimum "${p[@]}")" %.3f)" "$(fmt "$(maximum "${p[@]}")" %.3f)"
}
label() {
  case $1 in
    ub-common) echo "Unbound, common names" ;;
    pd-common) echo "partdns, common names" ;;
    pd-part)   echo "partdns, partitioned names" ;;
  esac
}
lost_total() {
  local k s=0
  for k in "${!LOST[@]}"; do
    case $k in "$1".*.*) s=$((s + ${LOST[$k]:-0})) ;; esac
  done
  echo "$s"
}

cat <<EOF

### Run of $DATE

- command: \`bench/resolver.sh ${1:-build}\` (BENCH_ROUNDS=$ROUNDS BENCH_SAT_SECS=$SAT_SECS BENCH_RATE=$RATE BENCH_RATE_SECS=$RATE_SECS BENCH_Q=$OUTSTANDING BENCH_NAMES=$NAMES${DNSPERF_OPTS:+ BENCH_DNSPERF_OPTS="$DNSPERF_OPTS"})
- machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(uname -r); load average $LOAD0 before, $LOAD1 after
- $("$PARTDNS_BIN" -v 2>/dev/null | head -n 1) (git $(git -C "$BENCH_SRC" rev-parse --short HEAD 2>/dev/null)$([ -z "$(git -C "$BENCH_SRC" status --porcelain -- resolver 2>/dev/null)" ] || echo ", resolver/ modified")) (server.threads 1, edns.threads 1); Unbound $(unbound -V 2>/dev/null | sed -n "s/^Version //p") (num-threads 1, module-config iterator); dnsperf $(dnsperf -h 2>&1 | sed -n "s/^Version //p")
- pinning: $([ "$PIN" = 1 ] && echo "servers on CPU $SERVER_CPU, dnsperf on CPU $CLIENT_CPU (taskset)" || echo none); server CPU time from /proc/PID/$CPU_SRC (all threads)
- saturation: \`dnsperf -c 1 -T 1 -q $OUTSTANDING -l $SAT_SECS\`; fixed rate: \`dnsperf -c 1 -T 1 -q $OUTSTANDING -Q $RATE -l $RATE_SECS\`; $ROUNDS interleaved rounds, client 127.0.{1,2,3}.10 by turns
- query sets: $NAMES A names each; c-names not flagged, e-names flagged (exact) — same zone, same length, same answers; response sizes: partdns $SIZES / unbound $UB_SIZES
- hits only: $HITS_ONLY; idle CPU partdns $PD_IDLE µs/s, unbound $UB_IDLE µs/s

| case | saturation QPS (client-bound) | server busy at saturation, % | server CPU µs/query at saturation | = QPS per server core | server CPU µs/query at $RATE qps | lost |
|---|---|---|---|---|---|---|
EOF
for cs in "${CASES[@]}"; do
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$(label "$cs")" "$(cell SAT "$cs" %.0f)" "$(cell SATBUSY "$cs" %.0f)" \
    "$(cell SATCPU "$cs" %.2f)" "$(cell SATCAP "$cs" %.0f)" "$(cell FIX "$cs" %.2f)" "$(lost_total "$cs")"
done
cat <<EOF

Medians over $ROUNDS rounds (min–max).  Ratios: ratio of the medians, then the median and range of the per-round ratios.

| ratio | saturation QPS | QPS per server core | CPU µs/query at $RATE qps |
|---|---|---|---|
| partdns / Unbound, common names (aim: ≥ 1, ≥ 1, ≤ 1) | $(rcell SAT pd-common ub-common) | $(rcell SATCAP pd-common ub-common) | $(rcell FIX pd-common ub-common) |
| partdns partitioned / common (aim: CPU ≤ 1.05) | $(rcell SAT pd-part pd-common) | $(rcell SATCAP pd-part pd-common) | $(rcell FIX pd-part pd-common) |
EOF
if [ "$CG_DONE" = 1 ]; then
  cat <<EOF

User-space instructions per query (callgrind, whole process, $CG_NAMES names × $CG_PASSES passes, client 127.0.2.10; exact, not affected by other load; kernel work not included):

| case | at 2000 qps (one query per wake-up) | under saturation (batches) |
|---|---|---|
EOF
  for cs in "${CASES[@]}"; do
    printf '| %s | %s | %s |\n' "$(label "$cs")" "${CG_LOW[$cs]}" "${CG_SAT[$cs]}"
  done
  printf '| partdns / Unbound, common | %s | %s |\n' "$(ratio "${CG_LOW[pd-common]}" "${CG_LOW[ub-common]}")" \
    "$(ratio "${CG_SAT[pd-common]}" "${CG_SAT[ub-common]}")"
  printf '| partdns partitioned / common | %s | %s |\n' "$(ratio "${CG_LOW[pd-part]}" "${CG_LOW[pd-common]}")" \
    "$(ratio "${CG_SAT[pd-part]}" "${CG_SAT[pd-common]}")"
fi
