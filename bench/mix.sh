#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Miss-path benchmark (issue 8): an 85/15 mix of cache hits and never-asked names, partdns vs Unbound.
#
# Usage (as root: the private DNS hierarchy binds port 53 on 127.10.N.x):
#   bench/mix.sh [BUILD_DIR]               BUILD_DIR defaults to build/; about 10 minutes
#
# What it does, all on loopback:
#   * starts the integration harness's root, TLD and customer.example knotd
#     (tests/integration/lib.sh, sourced), with BENCH_NAMES hot A records
#     c0..cN-1, as many e0..eN-1 (flagged as EDNS domains, never asked: the hot
#     queries go through a non-empty EDNS-domain check, as in bench/resolver.sh)
#     and a wildcard `*.mix.customer.example A`, appended to the customer zone;
#   * the mix: BENCH_MISS_PCT (15) % of the queries are unique names
#     <tag>-<i>.mix.customer.example (tag = thread setting, round, case,
#     measurement), each asked once in the whole run, of either server: real
#     misses that recurse to the customer.example knotd (the delegation is cached
#     by the warm-up), answered NOERROR from the wildcard; the other 85 % are
#     drawn at random from the hot c-names, warmed so they are hits.  Query files
#     are written per run, already shuffled, and sent once (dnsperf -n 1);
#   * two thread settings (BENCH_THREADS):
#       1:   partdns server.threads 1, resolver.threads 1, edns.threads 1, every
#            thread pinned to CPU 1 (taskset -a); Unbound num-threads 1 on CPU 1;
#            dnsperf and the three knotd on CPU 0;
#       all: partdns server.threads = resolver.threads = nproc (edns.threads 1:
#            no flagged name is asked), Unbound num-threads nproc; nothing
#            pinned, so dnsperf and knotd share the CPUs with the server;
#   * both servers get the same root hints.  partdns: the load generator in
#     server.client_exempt (one source address, far over client_qps), and
#     resolver.zone_qps 0 and resolver.zone_inflight 0: every unique name is
#     in one zone, and libunbound's per-zone upstream ratelimit (1000 qps by
#     default) and the per-parent in-flight share (200 per thread) would answer
#     part of them SERVFAIL at once at saturation instead of resolving them.  Unbound: iterator only,
#     so-rcvbuf 4m as in bench/resolver.sh, outgoing-range 8192 (what partdns
#     gives its libunbound), ratelimit 0 (its default, said explicitly),
#     so-reuseport yes, QNAME minimisation on (both servers' default; the
#     shared bench_unbound_conf turns it off, and runs before 2026-12-06 had
#     partdns minimise and Unbound not), and caches as large as partdns' (its
#     default cache.max_bytes, 256 MB: msg-cache-size 85m and rrset-cache-size
#     171m, rrset twice msg as Unbound's tuning guide advises). With Unbound's
#     default 4 MB caches, which runs before 2026-12-06 used, the unique
#     names' entries stay in the CPU's cache for Unbound and go to DRAM for
#     partdns, and some hot names fall out of Unbound's (the counter check at
#     the end shows them); BENCH_UB_OPTS="" gives Unbound its defaults again;
#   * per thread setting: both servers started, warmed (a pass of the hot set,
#     and a second pass checked to be all hits), then BENCH_ROUNDS interleaved
#     rounds; the case order (ub, pd) alternates from round to round and each
#     measurement runs for both cases back to back:
#       fixed rates (BENCH_RATES): dnsperf -Q RATE -v on the mix: server CPU
#         time (/proc/PID/task/*/schedstat, all threads) per answered query,
#         the time its threads waited for a CPU (schedstat's run-queue wait),
#         and the latency of each unique name's answer from dnsperf's per-query
#         lines (p50, p99), and of the hits (p50);
#       saturation, mix: dnsperf -q BENCH_Q: QPS, lost, SERVFAIL;
#       saturation, unique names only: QPS (the miss path's throughput);
#     dnsperf always runs with -c BENCH_CLIENTS sockets (SO_REUSEPORT spreads
#     them over a multi-threaded server's sockets) and one thread;
#   * (BENCH_CALLGRIND=1, valgrind installed) both servers restarted under
#     callgrind with the "1" setting, warmed on 200 hot names; counters zeroed
#     and dumped around: an idle period (BENCH_CG_IDLE_SECS), 200 names × 10
#     passes of hits at 2000 qps and at saturation, and BENCH_CG_MISSES unique
#     names at BENCH_CG_MISS_RATE qps; instructions per query = (instructions
#     of the phase − idle instructions per second × its duration) / answers;
#   * prints a markdown report of medians (min–max) and of per-round ratios
#     on stdout, progress and per-run lines on stderr; checks at the end that
#     the servers' own hit/miss counters match what was sent.
#
# Environment knobs (defaults in brackets):
#   BENCH_ROUNDS [8]  BENCH_THREADS ["1 all"]  BENCH_RATES ["5000 20000"]
#   BENCH_RATE_SECS [4]  BENCH_SAT_SECS [3]  BENCH_Q [500: outstanding at saturation]
#   BENCH_CLIENTS [8]  BENCH_NAMES [1000: hot set]  BENCH_MISS_PCT [15]
#   BENCH_SAT_MAXQPS [200000: sizes the saturation query files; a file that
#               runs out ends its run early, which is reported]
#   BENCH_UB_OPTS ["msg-cache-size: 85m; rrset-cache-size: 171m": more lines
#               for Unbound's server: clause, ';'-separated]
#   BENCH_NICE [0: else the niceness, e.g. -5, given to every thread of both
#               servers, the knotd and dnsperf during the rounds: on a machine
#               shared with other work, a single-threaded server competes with
#               it for its CPU share (see the run-queue wait row of the report)]
#   BENCH_PIN [1]  BENCH_DNSPERF_OPTS [""]  BENCH_LABEL ["": text for the report's build line]
#   BENCH_RAW [unset: a file to append the per-run lines to]
#   BENCH_STRACE [1: syscalls per hit and per miss under strace -c, setting 1]
#   BENCH_PERF [unset: else fix, sat or uniq: a perf record -e cpu-clock -g of
#               both servers during that kind of run, in the kept directory]
#   BENCH_CALLGRIND [1]  BENCH_CG_MISSES [2000]  BENCH_CG_MISS_RATE [200]  BENCH_CG_IDLE_SECS [5]
# A smoke run: BENCH_ROUNDS=1 BENCH_RATE_SECS=2 BENCH_SAT_SECS=2 BENCH_CG_MISSES=500 bench/mix.sh

set -u -o pipefail

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-$BENCH_SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac

ROUNDS=${BENCH_ROUNDS:-8}
read -r -a TSETS <<< "${BENCH_THREADS:-1 all}"
read -r -a RATES <<< "${BENCH_RATES:-5000 20000}"
RATE_SECS=${BENCH_RATE_SECS:-4}
SAT_SECS=${BENCH_SAT_SECS:-3}
OUTSTANDING=${BENCH_Q:-500}
CLIENTS=${BENCH_CLIENTS:-8}
NAMES=${BENCH_NAMES:-1000}
MISS_PCT=${BENCH_MISS_PCT:-15}
SAT_MAXQPS=${BENCH_SAT_MAXQPS:-200000}
PIN=${BENCH_PIN:-1}
DNSPERF_OPTS=${BENCH_DNSPERF_OPTS:-}
UB_OPTS=${BENCH_UB_OPTS-"msg-cache-size: 85m; rrset-cache-size: 171m"}
NICE=${BENCH_NICE:-0}
CG_MISSES=${BENCH_CG_MISSES:-2000}
CG_MISS_RATE=${BENCH_CG_MISS_RATE:-200}
CG_IDLE_SECS=${BENCH_CG_IDLE_SECS:-5}
CASES=(ub pd)
NCPU=$(nproc)

bmsg() { printf '[mix] %s\n' "$*" >&2; }
bdie() { printf '[mix] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || bdie "run as root: the DNS hierarchy binds port 53 on 127.10.N.x"
command -v dnsperf >/dev/null 2>&1 || bdie "dnsperf not installed (Debian package dnsperf)"
export PARTDNS_BIN=$BUILD_DIR/resolver/partdns
export PARTDNSCTL_BIN=$BUILD_DIR/tools/ctl/partdnsctl
[ -x "$PARTDNS_BIN" ] || bdie "no $PARTDNS_BIN: build first (cmake --build $BUILD_DIR)"
[ -x "$PARTDNSCTL_BIN" ] || bdie "no $PARTDNSCTL_BIN: build first"
for t in "${TSETS[@]}"; do case $t in 1|all) ;; *) bdie "BENCH_THREADS: '1' and/or 'all', not '$t'" ;; esac; done
if [ "$PIN" = 1 ] && ! command -v taskset >/dev/null 2>&1; then
  bmsg "taskset not found (util-linux): running unpinned"
  PIN=0
fi
[ "$NCPU" -ge 2 ] || PIN=0
SERVER_CPU=1
CLIENT_CPU=0
PINNED=0   # 1 while the "1" setting runs pinned

. "$BENCH_SRC/tests/integration/lib.sh"
harness_init bench_mix
set +e   # failures are checked explicitly below

# ---------------------------------------------------------------- helpers

. "$BENCH_SRC/bench/lib.sh"

# pin_to CPUS PID...: every thread of each PID onto CPUS (a taskset list).
pin_to() {
  local cpus=$1 p
  shift
  for p in "$@"; do taskset -a -p -c "$cpus" "$p" >/dev/null || bdie "taskset -p $p failed"; done
}
# renice_all PID...: every thread of each PID to niceness NICE (0: nothing done).
renice_all() {
  [ "$NICE" != 0 ] || return 0
  local p t
  for p in "$@"; do
    for t in /proc/"$p"/task/*; do renice -n "$NICE" -p "${t##*/}" >/dev/null 2>&1; done
  done
}
knot_pids() { local n; for n in root tld customer; do echo "${IT_PIDS[$n]}"; done; }

# client CMD...: a load generator, on the client CPU while the servers are pinned.
client() {
  [ "$NICE" = 0 ] || set -- nice -n "$NICE" "$@"
  if [ "$PINNED" = 1 ]; then taskset -c "$CLIENT_CPU" "$@"; else "$@"; fi
}


# gen_mix FILE N TAG: N queries, MISS_PCT % unique TAG-i.mix names, the rest hot c-names.
gen_mix() {
  awk -v n="$2" -v t="$3" -v h="$NAMES" -v p="$MISS_PCT" -v s="$RANDOM$RANDOM" 'BEGIN { srand(s)
    for (i = 0; i < n; i++)
      if (rand() * 100 < p) printf "%s-%d.mix.customer.example A\n", t, i
      else printf "c%d.customer.example A\n", int(rand() * h) }' > "$1"
}
# gen_unique FILE N TAG: N unique names.
gen_unique() {
  awk -v n="$2" -v t="$3" 'BEGIN { for (i = 0; i < n; i++) printf "%s-%d.mix.customer.example A\n", t, i }' > "$1"
}

# ---------------------------------------------------------------- set-up

bmsg "machine: $NCPU CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1); load average $(cut -d' ' -f1-3 /proc/loadavg)"

harness_write_hints
knot_write_conf root "$NET.1" .
knot_write_conf tld "$NET.2" example. test.
knot_write_conf customer "$NET.3" customer.example.
ZONE=$IT_TMP/knot-customer/customer.example.zone
[ -f "$ZONE" ] || bdie "harness layout changed: no $ZONE"
grep -q '^\*\.mix[[:space:]]' "$ZONE" && bdie "the customer zone already has *.mix"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) {
  printf "c%d 86400 A 203.0.113.%d\n", i, 10 + i % 200
  printf "e%d 86400 A 203.0.113.%d\n", i, 10 + i % 200 }
  printf "*.mix 86400 A 203.0.113.250\n" }' >> "$ZONE"
knot_start root tld customer
[ "$(dig +short +norecurse @"$NET.3" probe-1.mix.customer.example A)" = 203.0.113.250 ] ||
  bdie "knotd does not answer the *.mix wildcard"

QDIR=$IT_TMP/bench
mkdir -p "$QDIR"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) printf "c%d.customer.example A\n", i }' > "$QDIR/hot.txt"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) printf "e%d.customer.example\n", i }' > "$QDIR/domains.txt"

# pd_conf T FILE: partdns config for thread setting T (1 or all).
pd_conf() {
  local n=1
  [ "$1" = 1 ] || n=$NCPU
  PD_THREADS=$n pd_write_conf "$2"
  sed -i 's|^  allow: \(.*\)|  allow: \1\n  client_exempt: [ 127.0.0.0/8 ]|' "$2"
  sed -i "s/^resolver:\$/resolver:\n  threads: $n\n  zone_qps: 0\n  zone_inflight: 0/" "$2"
  if grep -q '^  threads:' <(sed -n '/^edns:/,/^[a-z]/p' "$2"); then
    sed -i '/^edns:/,/^[a-z]/s/^  threads:.*/  threads: 1/' "$2"
  else
    sed -i 's/^edns:$/edns:\n  threads: 1/' "$2"
  fi
  grep -q client_exempt "$2" && grep -q '^  zone_qps: 0' "$2" && grep -q '^  zone_inflight: 0' "$2" && grep -q "^  threads: $n" <(sed -n '/^resolver:/,/^[a-z]/p' "$2") ||
    bdie "could not write the partdns config $2"
  "$PARTDNS_BIN" -t -c "$2" >/dev/null 2>&1 ||
    bdie "partdns -t rejects $2: $("$PARTDNS_BIN" -t -c "$2" 2>&1 | head -n 5)"
}

UB_ADDR=$NET.54
UB_DIR=$IT_TMP/unbound-ref
mkdir -p "$UB_DIR"
# ub_conf T FILE: the reference Unbound's config for thread setting T.
ub_conf() {
  local n=1
  [ "$1" = 1 ] || n=$NCPU
  local extra=()
  mapfile -t extra < <(printf '%s' "$UB_OPTS" | tr ';' '\n' | sed -n 's/^ *\(..*\)$/\1/p')
  bench_unbound_conf "$2" "$n" "so-reuseport: yes" \
    "# what partdns sets on its libunbound context (resolver.zone_qps 0 = ratelimit 0)" \
    "outgoing-range: 8192" "ratelimit: 0" \
    "# both resolve with their defaults: QNAME minimisation on (RFC 9156), as partdns' libunbound" \
    "qname-minimisation: yes" "${extra[@]}"
}

pd_stat() { "$PARTDNSCTL_BIN" -c "$PD_CONF" stats 2>/dev/null | awk -v k="$1" '$1 == k {print $2}'; }
ub_stat() { unbound-control -c "$UB_CONF" stats_noreset 2>/dev/null | awk -F= -v k="$1" '$1 == k {print $2}'; }

UB_PID=""
UB_CONF=""
# ub_start CONF [valgrind args...]: start the reference Unbound.
ub_start() {
  UB_CONF=$1
  shift
  "$@" unbound -d -c "$UB_CONF" >> "$UB_DIR/stdout.log" 2>&1 &
  UB_PID=$!
  IT_PIDS[bench-unbound]=$UB_PID
  it_wait_dns 30 -p "$PD_PORT" @"$UB_ADDR" localhost. A ||
    bdie "unbound on $UB_ADDR@$PD_PORT did not answer: $(tail -n 5 "$UB_DIR/unbound.log" "$UB_DIR/stdout.log" 2>/dev/null)"
}
ub_stop() {
  [ -n "$UB_PID" ] || return 0
  it_stop_pid "$UB_PID" "${1:-5}"
  unset "IT_PIDS[bench-unbound]"
  UB_PID=""
}

# pass SERVER FILE: one pass of FILE, dies unless every query is answered NOERROR.
pass() {
  local out n
  n=$(wc -l < "$2")
  out=$(dnsperf -s "$1" -p "$PD_PORT" -a 127.0.1.10 -d "$2" -n 1 -q 20 -t 5 $DNSPERF_OPTS 2>&1)
  [ "$(dp_field "$out" completed)" = "$n" ] && [ "$(dp_field "$out" codes)" = "NOERROR $n (100.00%)" ] ||
    bdie "pass of ${2##*/} at $1 not all NOERROR: $(dp_field "$out" completed) of $n completed, codes $(dp_field "$out" codes)"
}

# warm HOTFILE: a pass of the hot set on both servers, then a second pass
# that must be all hits.
warm() {
  local f=$1 pm0 pm1 um0 um1
  pass "$PD_ADDR" "$f"; pass "$UB_ADDR" "$f"
  sleep 0.5
  pm0=$(pd_stat misses); um0=$(ub_stat total.num.cachemiss)
  pass "$PD_ADDR" "$f"; pass "$UB_ADDR" "$f"
  pm1=$(pd_stat misses); um1=$(ub_stat total.num.cachemiss)
  [ -n "$pm0" ] && [ "$pm0" = "$pm1" ] || bdie "partdns cache not warm: misses $pm0 -> $pm1 during a second pass"
  [ -n "$um0" ] && [ "$um0" = "$um1" ] || bdie "unbound cache not warm: cachemiss $um0 -> $um1 during a second pass"
}

# pin_and_warm FILE: the "1" setting's pinning for a phase of its own (both
# servers just started), then two passes of FILE on each.
pin_and_warm() {
  if [ "$PIN" = 1 ]; then
    PINNED=1
    pin_to "$CLIENT_CPU" $(knot_pids)
    pin_to "$SERVER_CPU" "$PD_PID" "$UB_PID"
  fi
  pass "$PD_ADDR" "$1"; pass "$UB_ADDR" "$1"
  pass "$PD_ADDR" "$1"; pass "$UB_ADDR" "$1"
}

idle_us_per_s() { local a b; a=$(cpu_ns "$1"); sleep 2; b=$(cpu_ns "$1"); echo $(( (b - a) / 2000 )); }

# ---------------------------------------------------------------- measurement

declare -A V=()        # T|case|metric|round -> value
declare -A SENT_U=()   # T|case -> unique names sent
declare -A CHECK=()    # T -> counter check line
declare -A IDLE=()     # T|case -> idle CPU us/s
declare -A SF=()       # T|case -> SERVFAIL total in the mix and unique runs
declare -A LOSTT=()    # T|case -> lost total
declare -A EOFRUNS=()  # T|case -> saturation runs that ran out of file
declare -A MIXQ=() MIXU=()  # T|case -> mix queries sent, unique names among them

# run_one T CASE ROUND KIND [RATE]: one dnsperf run.  KIND: fix (mix at RATE,
# per-query lines), sat (mix, saturation), uniq (unique names, saturation).
run_one() {
  local T=$1 cs=$2 r=$3 kind=$4 rate=${5:-} srv pid tag file n_lines out c0 c1 w0 w1 t0 t1
  case $cs in ub) srv=$UB_ADDR; pid=$UB_PID ;; pd) srv=$PD_ADDR; pid=$PD_PID ;; esac
  tag=t$T-r$r-$cs-$kind$rate
  file=$QDIR/q-$tag.txt
  local cl=127.0.$(( (r - 1) % 3 + 1 )).10
  local args=(-s "$srv" -p "$PD_PORT" -a "$cl" -d "$file" -n 1 -c "$CLIENTS" -T 1 -t 5)
  case $kind in
    fix)  n_lines=$(( rate * (RATE_SECS + 1) )); gen_mix "$file" "$n_lines" "$tag"
          args+=(-q "$OUTSTANDING" -Q "$rate" -l "$RATE_SECS" -v) ;;
    sat)  n_lines=$(( SAT_MAXQPS * SAT_SECS )); gen_mix "$file" "$n_lines" "$tag"
          args+=(-q "$OUTSTANDING" -l "$SAT_SECS") ;;
    uniq) n_lines=$(( SAT_MAXQPS * SAT_SECS / 2 )); gen_unique "$file" "$n_lines" "$tag"
          args+=(-q "$OUTSTANDING" -l "$SAT_SECS") ;;
  esac
  local perf_pid=""
  if [ -n "${BENCH_PERF:-}" ] && [ "$kind" = "$BENCH_PERF" ]; then
    perf record -q -e cpu-clock -F 4000 -g -p "$pid" -o "$QDIR/perf-$tag.data" > /dev/null 2>&1 &
    perf_pid=$!
    sleep 0.5
  fi
  c0=$(cpu_ns "$pid"); w0=$(wait_ns "$pid"); u0=$(user_ns "$pid"); t0=$(date +%s%N)
  client dnsperf "${args[@]}" $DNSPERF_OPTS > "$QDIR/out.txt" 2>&1
  t1=$(date +%s%N); c1=$(cpu_ns "$pid"); w1=$(wait_ns "$pid"); u1=$(user_ns "$pid")
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null
    local i
    for ((i = 0; i < 50; i++)); do kill -0 "$perf_pid" 2>/dev/null || break; sleep 0.1; done
    bmsg "perf profile of $tag: $QDIR/perf-$tag.data (PARTDNS_KEEP=1 keeps it)"
  fi
  out=$(grep -v '^> ' "$QDIR/out.txt")
  local sent n lost qps sf us_q busy
  sent=$(dp_field "$out" sent); n=$(dp_field "$out" completed); lost=$(dp_field "$out" lost)
  qps=$(dp_field "$out" qps); sf=$(dp_field "$out" servfail)
  [ -n "$n" ] && [ "$n" -gt 0 ] || bdie "dnsperf ($tag) answered nothing: $(printf '%s' "$out" | tail -n 5)"
  us_q=$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {printf "%.3f", c / n / 1000}')
  busy=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN {printf "%.1f", 100 * c / t}')
  local waitp
  waitp=$(awk -v w=$((w1 - w0)) -v t=$((t1 - t0)) 'BEGIN {printf "%.1f", 100 * w / t}')
  # unique names among the queries sent (the file is sent in order, once)
  local u
  if [ "$kind" = uniq ]; then u=$sent; else u=$(head -n "$sent" "$file" | grep -c '\.mix\.'); fi
  SENT_U[$T|$cs]=$(( ${SENT_U[$T|$cs]:-0} + u ))
  if [ "$kind" != uniq ]; then
    MIXQ[$T|$cs]=$(( ${MIXQ[$T|$cs]:-0} + sent )); MIXU[$T|$cs]=$(( ${MIXU[$T|$cs]:-0} + u ))
  fi
  SF[$T|$cs]=$(( ${SF[$T|$cs]:-0} + sf ))
  LOSTT[$T|$cs]=$(( ${LOSTT[$T|$cs]:-0} + lost ))
  local k=$T\|$cs
  local extra=""
  case $kind in
    fix)
      V[$k|cpu$rate|$r]=$us_q
      V[$k|ucpu$rate|$r]=$(awk -v c=$((u1 - u0)) -v n="$n" 'BEGIN {printf "%.3f", c / n / 1000}')
      V[$k|wait$rate|$r]=$waitp
      V[$k|qps$rate|$r]=$qps
      # per-query lines: "> RCODE NAME TYPE LATENCY"; unique names are the misses
      local lat
      lat=$(awk '$1 == ">" && $3 ~ /\.mix\.customer\.example$/ && $2 != "T" && NF >= 5 {print $5 * 1000}' "$QDIR/out.txt" |
            sort -g | awk '{v[NR] = $1} END { if (NR == 0) { print "nan nan 0"; exit }
              i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999); print v[i50], v[i99], NR }')
      V[$k|p50_$rate|$r]=${lat%% *}
      lat=${lat#* }
      V[$k|p99_$rate|$r]=${lat%% *}
      local hits50
      hits50=$(awk '$1 == ">" && $3 !~ /\.mix\./ && $2 != "T" && NF >= 5 {print $5 * 1000}' "$QDIR/out.txt" | sort -g |
               awk '{v[NR] = $1} END { if (NR) print v[int(NR * 0.5 + 0.999999)]; else print "nan" }')
      V[$k|hit50_$rate|$r]=$hits50
      extra=$(printf 'miss p50 %.3f p99 %.3f ms (%s misses), hit p50 %.3f ms' "${V[$k|p50_$rate|$r]}" "${V[$k|p99_$rate|$r]}" "${lat#* }" "$hits50") ;;
    sat)
      V[$k|satq|$r]=$qps; V[$k|satcpu|$r]=$us_q; V[$k|satwait|$r]=$waitp ;;
    uniq)
      V[$k|uniqq|$r]=$qps; V[$k|uniqcpu|$r]=$us_q; V[$k|uniqwait|$r]=$waitp ;;
  esac
  if [ "$kind" != fix ] && [ "$(dp_field "$out" eof)" -gt 0 ]; then
    EOFRUNS[$k]=$(( ${EOFRUNS[$k]:-0} + 1 ))
    bmsg "note: $tag ran out of query file before ${SAT_SECS}s (raise BENCH_SAT_MAXQPS)"
  fi
  rm -f "$file"
  local line
  line=$(printf 'T=%-3s round %-2s %-2s %-10s sent %7d answered %7d lost %4d SERVFAIL %4d qps %8.0f cpu %6.2f us/q busy %5.1f %% runq-wait %5.1f %% %s' \
    "$T" "$r" "$cs" "$kind$rate" "$sent" "$n" "$lost" "$sf" "$qps" "$us_q" "$busy" "$waitp" "$extra")
  bmsg "$line"
  [ -z "${BENCH_RAW:-}" ] || printf '%s\n' "$line" >> "$BENCH_RAW"
}

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$(date +%s)

for T in "${TSETS[@]}"; do
  pd_conf "$T" "$IT_TMP/partdns-$T.yaml"
  ub_conf "$T" "$UB_DIR/unbound-$T.conf"
  # the flagged e-names, once (the store outlives the daemons); partdnsctl writes the store
  # itself while no daemon runs, and needs this setting's config to find it (before the first
  # start pdctl had no config, its error counted as a listing, and the first setting ran with no
  # EDNS domains at all)
  PD_CONF=$IT_TMP/partdns-$T.yaml
  flagged() { pdctl domain list | grep -c '^e[0-9]*\.customer\.example\. ' || true; }
  [ "$(flagged)" != 0 ] || pdctl domain import "$QDIR/domains.txt" >/dev/null
  nflag=$(flagged)
  [ "$nflag" = "$NAMES" ] || bdie "the store lists $nflag EDNS domains, not $NAMES"
  if [ "$T" = 1 ] && [ "$PIN" = 1 ]; then
    PINNED=1
    pin_to "$CLIENT_CPU" $(knot_pids)
  else
    PINNED=0
    pin_to "0-$((NCPU - 1))" $(knot_pids)
  fi
  partdns_start "$IT_TMP/partdns-$T.yaml"
  ub_start "$UB_DIR/unbound-$T.conf"
  [ "$PINNED" = 0 ] || pin_to "$SERVER_CPU" "$PD_PID" "$UB_PID"
  bmsg "T=$T: partdns (pid $PD_PID, $(ls /proc/"$PD_PID"/task | wc -l) threads) and unbound (pid $UB_PID) up; $([ "$PINNED" = 1 ] && echo "servers on CPU $SERVER_CPU, dnsperf and knotd on CPU $CLIENT_CPU" || echo unpinned); warming"
  warm "$QDIR/hot.txt"
  [ "$PINNED" = 0 ] || pin_to "$SERVER_CPU" "$PD_PID" "$UB_PID"   # threads started since (libunbound's)
  renice_all "$PD_PID" "$UB_PID" $(knot_pids)
  IDLE[$T|pd]=$(idle_us_per_s "$PD_PID"); IDLE[$T|ub]=$(idle_us_per_s "$UB_PID")
  pq0=$(pd_stat queries); ph0=$(pd_stat hits); pm0=$(pd_stat misses); pc0=$(pd_stat coalesced); ps0=$(pd_stat servfail)
  uq0=$(ub_stat total.num.queries); uh0=$(ub_stat total.num.cachehits); um0=$(ub_stat total.num.cachemiss)
  for ((r = 1; r <= ROUNDS; r++)); do
    if (( r % 2 )); then order=(ub pd); else order=(pd ub); fi
    for rate in "${RATES[@]}"; do
      for cs in "${order[@]}"; do run_one "$T" "$cs" "$r" fix "$rate"; done
    done
    for cs in "${order[@]}"; do run_one "$T" "$cs" "$r" sat; done
    for cs in "${order[@]}"; do run_one "$T" "$cs" "$r" uniq; done
  done
  sleep 1
  pq1=$(pd_stat queries); ph1=$(pd_stat hits); pm1=$(pd_stat misses); pc1=$(pd_stat coalesced); ps1=$(pd_stat servfail)
  uq1=$(ub_stat total.num.queries); uh1=$(ub_stat total.num.cachehits); um1=$(ub_stat total.num.cachemiss)
  same() { [ "$1" = "$2" ] && echo "= unique names sent" || echo "**≠ $2 unique names sent**"; }
  CHECK[$T]="partdns queries +$((pq1 - pq0)), hits +$((ph1 - ph0)), misses +$((pm1 - pm0)) $(same $((pm1 - pm0)) "${SENT_U[$T|pd]}") (coalesced +$((pc1 - pc0)), SERVFAIL +$((ps1 - ps0))); Unbound queries +$((uq1 - uq0)), cache hits +$((uh1 - uh0)), cache misses +$((um1 - um0)) $(same $((um1 - um0)) "${SENT_U[$T|ub]}"); unique share of the mix runs' queries: partdns $(awk -v u="${MIXU[$T|pd]}" -v q="${MIXQ[$T|pd]}" 'BEGIN {printf "%.1f", 100 * u / q}') %, Unbound $(awk -v u="${MIXU[$T|ub]}" -v q="${MIXQ[$T|ub]}" 'BEGIN {printf "%.1f", 100 * u / q}') %"
  bmsg "T=$T counters: ${CHECK[$T]}"
  partdns_stop 10
  ub_stop 10
done
T_MEAS=$(( $(date +%s) - T_START ))
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- callgrind

CG_DONE=0
declare -A CG=()
if [ "${BENCH_CALLGRIND:-1}" = 1 ] && command -v valgrind >/dev/null 2>&1 &&
   command -v callgrind_control >/dev/null 2>&1; then
  CG_NAMES=$(( NAMES < 200 ? NAMES : 200 ))
  CG_PASSES=10
  head -n "$CG_NAMES" "$QDIR/hot.txt" > "$QDIR/cg-hot.txt"
  bmsg "callgrind: both servers under valgrind (setting 1); $CG_NAMES names × $CG_PASSES passes of hits, $CG_MISSES misses at $CG_MISS_RATE qps"
  REAL_PARTDNS=$PARTDNS_BIN
  cat > "$QDIR/partdns-callgrind" <<EOF2
#!/bin/sh
exec valgrind -q --tool=callgrind --callgrind-out-file=$QDIR/cg-pd.out "$REAL_PARTDNS" "\$@"
EOF2
  chmod +x "$QDIR/partdns-callgrind"
  PARTDNS_BIN=$QDIR/partdns-callgrind
  partdns_start "$IT_TMP/partdns-1.yaml"
  PARTDNS_BIN=$REAL_PARTDNS
  ub_start "$UB_DIR/unbound-1.conf" valgrind -q --tool=callgrind --callgrind-out-file="$QDIR/cg-ub.out"
  pin_and_warm "$QDIR/cg-hot.txt"

  # cg_run CASE PHASE: zero, run the phase, dump; prints "instructions seconds answered".
  cg_run() {
    local cs=$1 phase=$2 srv pid out n=0 t0 t1 f
    case $cs in ub) srv=$UB_ADDR; pid=$UB_PID ;; pd) srv=$PD_ADDR; pid=$PD_PID ;; esac
    local args=(-s "$srv" -p "$PD_PORT" -a 127.0.2.10 -c 1 -T 1 -t 5)
    case $phase in
      hitlow) args+=(-d "$QDIR/cg-hot.txt" -n "$CG_PASSES" -q 20 -Q 2000) ;;
      hitsat) args+=(-d "$QDIR/cg-hot.txt" -n "$CG_PASSES" -q 200) ;;
      miss)   gen_unique "$QDIR/cg-miss-$cs.txt" "$CG_MISSES" "cg-$cs"
              args+=(-d "$QDIR/cg-miss-$cs.txt" -n 1 -q 50 -Q "$CG_MISS_RATE") ;;
    esac
    callgrind_control -z "$pid" >/dev/null 2>&1 || bdie "callgrind_control -z $pid failed"
    t0=$(date +%s%N)
    if [ "$phase" = idle ]; then
      sleep "$CG_IDLE_SECS"
    else
      out=$(client dnsperf "${args[@]}" $DNSPERF_OPTS 2>&1)
      n=$(dp_field "$out" completed)
      [ "$(dp_field "$out" codes)" = "NOERROR $n (100.00%)" ] ||
        bdie "callgrind $cs $phase: not all NOERROR: $n answered, $(dp_field "$out" codes)"
    fi
    t1=$(date +%s%N)
    callgrind_control -d "$pid" >/dev/null 2>&1 || bdie "callgrind_control -d $pid failed"
    f=$(ls -t "$QDIR"/cg-$cs.out.* 2>/dev/null | head -n 1)
    [ -n "$f" ] || bdie "callgrind $cs $phase: no dump"
    mv "$f" "$QDIR/cg-$cs-$phase.dump"
    awk -v s="$(( (t1 - t0) / 1000000 ))" -v n="$n" '/^(summary|totals):/ {printf "%s %.3f %s\n", $2, s / 1000, n; exit}' "$QDIR/cg-$cs-$phase.dump"
  }
  for cs in "${CASES[@]}"; do
    m0=$([ "$cs" = pd ] && pd_stat misses || ub_stat total.num.cachemiss)
    for phase in idle hitlow hitsat; do CG[$cs|$phase]=$(cg_run "$cs" "$phase"); done
    m1=$([ "$cs" = pd ] && pd_stat misses || ub_stat total.num.cachemiss)
    CG[$cs|miss]=$(cg_run "$cs" miss)
    m2=$([ "$cs" = pd ] && pd_stat misses || ub_stat total.num.cachemiss)
    [ "$m0" = "$m1" ] || bdie "callgrind $cs: cache misses during the hit phases ($m0 -> $m1)"
    [ $((m2 - m1)) -eq "$CG_MISSES" ] || bmsg "note: callgrind $cs: $((m2 - m1)) cache misses counted for $CG_MISSES unique names"
    CG[$cs|missctr]=$((m2 - m1))
  done
  # per-query instructions net of the idle rate
  for cs in "${CASES[@]}"; do
    read -r ii is _ <<< "${CG[$cs|idle]}"
    CG[$cs|idlerate]=$(awk -v i="$ii" -v s="$is" 'BEGIN {printf "%.0f", i / s}')
    for phase in hitlow hitsat miss; do
      read -r pi ps pn <<< "${CG[$cs|$phase]}"
      CG[$cs|per_$phase]=$(awk -v i="$pi" -v s="$ps" -v n="$pn" -v r="${CG[$cs|idlerate]}" 'BEGIN {printf "%.0f", (i - r * s) / n}')
      CG[$cs|raw_$phase]=$(awk -v i="$pi" -v n="$pn" 'BEGIN {printf "%.0f", i / n}')
    done
    bmsg "callgrind $cs: idle ${CG[$cs|idlerate]} instr/s; per hit ${CG[$cs|per_hitlow]} (2000 qps), ${CG[$cs|per_hitsat]} (saturation); per miss ${CG[$cs|per_miss]} (raw ${CG[$cs|raw_miss]}, ${CG[$cs|miss]})"
  done
  CG_DONE=1
  partdns_stop 20
  ub_stop 20
fi

# ---------------------------------------------------------------- syscalls

# Where the kernel half of a query's CPU goes: at fixed rates each query is a
# wake-up, and both servers spend more time in the kernel than in user space.
ST_DONE=0
declare -A ST=()
if [ "${BENCH_STRACE:-1}" = 1 ] && command -v strace >/dev/null 2>&1; then
  [ -f "$IT_TMP/partdns-1.yaml" ] || pd_conf 1 "$IT_TMP/partdns-1.yaml"
  [ -f "$UB_DIR/unbound-1.conf" ] || ub_conf 1 "$UB_DIR/unbound-1.conf"
  ST_NAMES=$(( NAMES < 200 ? NAMES : 200 ))
  head -n "$ST_NAMES" "$QDIR/hot.txt" > "$QDIR/st-hot.txt"
  bmsg "strace: syscalls per query (setting 1); $ST_NAMES names × 10 passes of hits at 2000 qps, $CG_MISSES misses at $CG_MISS_RATE qps"
  partdns_start "$IT_TMP/partdns-1.yaml"
  ub_start "$UB_DIR/unbound-1.conf"
  pin_and_warm "$QDIR/st-hot.txt"
  # st_run CASE PHASE: the phase under strace -c; prints the answers and leaves the table in st-CASE-PHASE.txt.
  st_run() {
    local cs=$1 phase=$2 srv pid out n sp i
    case $cs in ub) srv=$UB_ADDR; pid=$UB_PID ;; pd) srv=$PD_ADDR; pid=$PD_PID ;; esac
    local args=(-s "$srv" -p "$PD_PORT" -a 127.0.2.10 -c 1 -T 1 -t 5)
    case $phase in
      hit)  args+=(-d "$QDIR/st-hot.txt" -n 10 -q 20 -Q 2000) ;;
      miss) gen_unique "$QDIR/st-miss-$cs.txt" "$CG_MISSES" "st-$cs"
            args+=(-d "$QDIR/st-miss-$cs.txt" -n 1 -q 50 -Q "$CG_MISS_RATE") ;;
    esac
    strace -f -c -q -o "$QDIR/st-$cs-$phase.txt" -p "$pid" 2>/dev/null &
    sp=$!
    sleep 1   # attached to every thread
    out=$(client dnsperf "${args[@]}" $DNSPERF_OPTS 2>&1)
    n=$(dp_field "$out" completed)
    kill -INT "$sp" 2>/dev/null
    for ((i = 0; i < 50; i++)); do kill -0 "$sp" 2>/dev/null || break; sleep 0.1; done
    [ "$(dp_field "$out" codes)" = "NOERROR $n (100.00%)" ] ||
      bdie "strace $cs $phase: not all NOERROR: $n answered, $(dp_field "$out" codes)"
    echo "$n"
  }
  # st_calls FILE N: "total|name count, ..." per query, the busiest syscalls first.
  st_calls() {
    awk -v n="$2" 'NF >= 5 && $NF ~ /^[a-z_0-9]+$/ && $NF != "total" && $4 ~ /^[0-9]+$/ {
        s += $4; printf "%s %.2f\n", $NF, $4 / n }
      END { printf "total %.2f\n", s / n }' "$1" | sort -k2,2gr |
      awk '{ if ($1 == "total") t = $2; else if ($2 >= 0.01) l = l sprintf("%s%s %s", l == "" ? "" : ", ", $1, $2) }
           END { printf "%s|%s\n", t, l }'
  }
  for cs in "${CASES[@]}"; do
    for phase in hit miss; do
      n=$(st_run "$cs" "$phase")
      r=$(st_calls "$QDIR/st-$cs-$phase.txt" "$n")
      ST[$cs|$phase|total]=${r%%|*}
      ST[$cs|$phase|list]=${r#*|}
      bmsg "strace $cs $phase: ${ST[$cs|$phase|total]} syscalls per query: ${ST[$cs|$phase|list]}"
    done
  done
  ST_DONE=1
  partdns_stop 20
  ub_stop 20
fi
T_TOTAL=$(( $(date +%s) - T_START ))

# ---------------------------------------------------------------- report

vals() { local r; for ((r = 1; r <= ROUNDS; r++)); do printf '%s\n' "${V[$1|$2|$3|$r]:-}"; done; }
# cell T CASE METRIC FORMAT: median (min–max) over the rounds.
cell() {
  local v
  mapfile -t v < <(vals "$1" "$2" "$3")
  if [ "$ROUNDS" = 1 ]; then fmt "${v[0]}" "$4"; return; fi
  printf '%s (%s–%s)' "$(fmt "$(median "${v[@]}")" "$4")" "$(fmt "$(minimum "${v[@]}")" "$4")" "$(fmt "$(maximum "${v[@]}")" "$4")"
}
# pratios T METRIC: per-round ratios partdns / Unbound.
pratios() { local r; for ((r = 1; r <= ROUNDS; r++)); do ratio "${V[$1|pd|$2|$r]:-}" "${V[$1|ub|$2|$r]:-}"; echo; done; }
# rcell T METRIC: median (min–max) of the per-round ratios partdns / Unbound.
rcell() {
  local p
  mapfile -t p < <(pratios "$1" "$2")
  if [ "$ROUNDS" = 1 ]; then fmt "${p[0]}" %.2f; return; fi
  printf '%s (%s–%s)' "$(fmt "$(median "${p[@]}")" %.2f)" "$(fmt "$(minimum "${p[@]}")" %.2f)" "$(fmt "$(maximum "${p[@]}")" %.2f)"
}
rmed() { local p; mapfile -t p < <(pratios "$1" "$2"); median "${p[@]}"; }
# scale CASE METRIC: all/1 — ratio of the medians, then round r of "all" over round r of "1" (not simultaneous).
scale_med() {
  local a b
  mapfile -t a < <(vals all "$1" "$2"); mapfile -t b < <(vals 1 "$1" "$2")
  ratio "$(median "${a[@]}")" "$(median "${b[@]}")"
}
scale_cell() {
  local r p=()
  for ((r = 1; r <= ROUNDS; r++)); do p+=("$(ratio "${V[all|$1|$2|$r]:-}" "${V[1|$1|$2|$r]:-}")"); done
  if [ "$ROUNDS" = 1 ]; then fmt "$(scale_med "$1" "$2")" %.2f; return; fi
  printf '%s (%s–%s)' "$(fmt "$(scale_med "$1" "$2")" %.2f)" "$(fmt "$(minimum "${p[@]}")" %.2f)" "$(fmt "$(maximum "${p[@]}")" %.2f)"
}
verdict() { awk -v x="$1" -v op="$2" -v lim="$3" 'BEGIN { if (x == "nan" || x == "") { print "–"; exit }
  ok = (op == "<=") ? (x <= lim) : (x >= lim); print ok ? "yes" : "**no**" }'; }
tname() { [ "$1" = 1 ] && echo "1 thread" || echo "all cores ($NCPU threads)"; }
HAVE1=0; HAVEALL=0
for T in "${TSETS[@]}"; do [ "$T" = 1 ] && HAVE1=1; [ "$T" = all ] && HAVEALL=1; done

SRCDIR=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
if [ -n "$SRCDIR" ] && git -C "$SRCDIR" rev-parse --short HEAD >/dev/null 2>&1; then
  BUILT="git $(git -C "$SRCDIR" rev-parse --short HEAD)$([ -z "$(git -C "$SRCDIR" status --porcelain -- resolver 2>/dev/null)" ] || echo ", resolver/ modified")"
else
  BUILT="source ${SRCDIR:-unknown}"
fi
RATE_LIST=$(printf '%s ' "${RATES[@]}"); RATE_LIST=${RATE_LIST% }

cat <<EOF

### Run of $DATE

- command: \`bench/mix.sh ${1:-build}\` (BENCH_ROUNDS=$ROUNDS BENCH_THREADS="${TSETS[*]}" BENCH_RATES="$RATE_LIST" BENCH_RATE_SECS=$RATE_SECS BENCH_SAT_SECS=$SAT_SECS BENCH_Q=$OUTSTANDING BENCH_CLIENTS=$CLIENTS BENCH_NAMES=$NAMES BENCH_MISS_PCT=$MISS_PCT${DNSPERF_OPTS:+ BENCH_DNSPERF_OPTS=\"$DNSPERF_OPTS\"}${UB_OPTS:+ BENCH_UB_OPTS=\"$UB_OPTS\"}$([ "$NICE" = 0 ] || echo " BENCH_NICE=$NICE")); ${T_MEAS} s of rounds, $T_TOTAL s with callgrind
- machine: $NCPU CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(uname -r); load average $LOAD0 before, $LOAD1 after
- $("$PARTDNS_BIN" -v 2>/dev/null | head -n 1) ($BUILT${BTYPE:+, $BTYPE}${BENCH_LABEL:+; $BENCH_LABEL}); Unbound $(unbound -V 2>/dev/null | sed -n "s/^Version //p") (module-config iterator); dnsperf $(dnsperf -h 2>&1 | sed -n "s/^Version //p") (\`-c $CLIENTS -T 1\`), knotd $(knotd -V 2>/dev/null | awk '{print $NF}')
- 1 thread: partdns server/resolver/edns.threads 1/1/1 and Unbound num-threads 1, each pinned to CPU $SERVER_CPU; dnsperf and knotd on CPU $CLIENT_CPU$([ "$PIN" = 1 ] || echo " (pinning was off)"). All cores: partdns server.threads = resolver.threads = $NCPU (edns.threads 1), Unbound num-threads $NCPU; nothing pinned: dnsperf and knotd share the $NCPU CPUs with the server
- the mix: $MISS_PCT % never-asked names under a wildcard of the customer zone (one upstream query each), the rest $NAMES hot names (cache hits); fixed rates $RATE_LIST qps for ${RATE_SECS} s (\`-Q\`, \`-q $OUTSTANDING\`, \`-v\`: miss latency from the per-query lines of the unique names); saturation \`-q $OUTSTANDING -l $SAT_SECS\`, mix and unique names only; $ROUNDS rounds, case order alternating; server CPU and run-queue wait (time its threads were runnable but not running, summed over threads) from /proc/PID/task/*/$CPU_SRC; $([ "$NICE" = 0 ] && echo "default niceness (other work on the machine competes on equal terms)" || echo "servers, knotd and dnsperf at niceness $NICE")
EOF
for T in "${TSETS[@]}"; do
  cat <<EOF

**$(tname "$T")** — medians over $ROUNDS rounds (min–max); ratio = median (min–max) of the per-round ratios partdns / Unbound.  Idle CPU: partdns ${IDLE[$T|pd]} µs/s, Unbound ${IDLE[$T|ub]} µs/s.

| measure | Unbound | partdns | partdns / Unbound |
|---|---|---|---|
EOF
  for rate in "${RATES[@]}"; do
    printf '| server CPU µs/query, mix at %s qps | %s | %s | %s |\n' "$rate" "$(cell "$T" ub "cpu$rate" %.2f)" "$(cell "$T" pd "cpu$rate" %.2f)" "$(rcell "$T" "cpu$rate")"
    printf '| ... of it in user space (utime, 10 ms ticks) | %s | %s | %s |\n' "$(cell "$T" ub "ucpu$rate" %.2f)" "$(cell "$T" pd "ucpu$rate" %.2f)" "$(rcell "$T" "ucpu$rate")"
    printf '| miss latency p50 ms, mix at %s qps | %s | %s | %s |\n' "$rate" "$(cell "$T" ub "p50_$rate" %.3f)" "$(cell "$T" pd "p50_$rate" %.3f)" "$(rcell "$T" "p50_$rate")"
    printf '| miss latency p99 ms, mix at %s qps | %s | %s | %s |\n' "$rate" "$(cell "$T" ub "p99_$rate" %.3f)" "$(cell "$T" pd "p99_$rate" %.3f)" "$(rcell "$T" "p99_$rate")"
    printf '| hit latency p50 ms, mix at %s qps | %s | %s | %s |\n' "$rate" "$(cell "$T" ub "hit50_$rate" %.3f)" "$(cell "$T" pd "hit50_$rate" %.3f)" "$(rcell "$T" "hit50_$rate")"
    printf '| server threads waiting for a CPU, %% of the run, mix at %s qps | %s | %s | |\n' "$rate" "$(cell "$T" ub "wait$rate" %.1f)" "$(cell "$T" pd "wait$rate" %.1f)"
  done
  printf '| saturation QPS, mix | %s | %s | %s |\n' "$(cell "$T" ub satq %.0f)" "$(cell "$T" pd satq %.0f)" "$(rcell "$T" satq)"
  printf '| server CPU µs/query at saturation, mix | %s | %s | %s |\n' "$(cell "$T" ub satcpu %.2f)" "$(cell "$T" pd satcpu %.2f)" "$(rcell "$T" satcpu)"
  printf '| saturation QPS, unique names only | %s | %s | %s |\n' "$(cell "$T" ub uniqq %.0f)" "$(cell "$T" pd uniqq %.0f)" "$(rcell "$T" uniqq)"
  printf '| server CPU µs/query at saturation, unique only | %s | %s | %s |\n' "$(cell "$T" ub uniqcpu %.2f)" "$(cell "$T" pd uniqcpu %.2f)" "$(rcell "$T" uniqcpu)"
  printf '| lost / SERVFAIL, all runs | %s / %s | %s / %s | |\n' "${LOSTT[$T|ub]:-0}" "${SF[$T|ub]:-0}" "${LOSTT[$T|pd]:-0}" "${SF[$T|pd]:-0}"
  printf '\nCounters over the rounds: %s.\n' "${CHECK[$T]}"
  [ -z "${EOFRUNS[$T|ub]:-}${EOFRUNS[$T|pd]:-}" ] ||
    printf 'Saturation runs that ran out of query file (shorter runs, QPS still valid): Unbound %s, partdns %s.\n' "${EOFRUNS[$T|ub]:-0}" "${EOFRUNS[$T|pd]:-0}"
done

if [ "$HAVE1" = 1 ] && [ "$HAVEALL" = 1 ]; then
  cat <<EOF

**Scaling**, saturation QPS all cores ($NCPU threads) / 1 thread: ratio of the medians (min–max of round r over round r, which ran minutes apart):

| load | Unbound | partdns |
|---|---|---|
| unique names only (miss-heavy) | $(scale_cell ub uniqq) | $(scale_cell pd uniqq) |
| the mix | $(scale_cell ub satq) | $(scale_cell pd satq) |
EOF
fi

if [ "$CG_DONE" = 1 ]; then
  cat <<EOF

**Instructions per query** (callgrind, 1-thread setting, whole process, user space only; minus the idle rate × the phase's duration; hits: $CG_NAMES names × $CG_PASSES passes from 127.0.2.10; misses: $CG_MISSES unique names at $CG_MISS_RATE qps, one upstream query each):

| case | idle, instr/s | per hit at 2000 qps | per hit at saturation | per miss | partdns cache misses counted |
|---|---|---|---|---|---|
| Unbound | ${CG[ub|idlerate]} | ${CG[ub|per_hitlow]} | ${CG[ub|per_hitsat]} | ${CG[ub|per_miss]} | (Unbound cachemiss +${CG[ub|missctr]}) |
| partdns | ${CG[pd|idlerate]} | ${CG[pd|per_hitlow]} | ${CG[pd|per_hitsat]} | ${CG[pd|per_miss]} | +${CG[pd|missctr]} |
| partdns / Unbound | | $(ratio "${CG[pd|per_hitlow]}" "${CG[ub|per_hitlow]}") | $(ratio "${CG[pd|per_hitsat]}" "${CG[ub|per_hitsat]}") | $(ratio "${CG[pd|per_miss]}" "${CG[ub|per_miss]}") | |
EOF
fi

if [ "$ST_DONE" = 1 ]; then
  cat <<EOF

**Syscalls per query** (strace -f -c on the whole process, 1-thread setting; hits: $ST_NAMES names × 10 passes at 2000 qps; misses: $CG_MISSES unique names at $CG_MISS_RATE qps; a miss's row counts everything its query and its upstream answer cost):

| case | per hit | per miss | a miss's syscalls, busiest first |
|---|---|---|---|
| Unbound | ${ST[ub|hit|total]} | ${ST[ub|miss|total]} | ${ST[ub|miss|list]} |
| partdns | ${ST[pd|hit|total]} | ${ST[pd|miss|total]} | ${ST[pd|miss|list]} |
EOF
fi

# the issue's targets, judged on the figures above
{
  echo
  echo "**Targets** (issue 8):"
  echo
  echo "| target | measured | met |"
  echo "|---|---|---|"
  if [ "$HAVE1" = 1 ]; then
    for rate in "${RATES[@]}"; do
      x=$(rmed 1 "cpu$rate")
      printf '| 1 thread: CPU per query on the mix ≤ 0.8× Unbound (at %s qps) | %s | %s |\n' "$rate" "$(fmt "$x" %.2f)" "$(verdict "$x" '<=' 0.8)"
    done
    for rate in "${RATES[@]}"; do
      x=$(rmed 1 "p50_$rate")
      mapfile -t wu < <(vals 1 ub "wait$rate"); mapfile -t wp < <(vals 1 pd "wait$rate")
      printf '| 1 thread: miss latency p50 ≤ Unbound (at %s qps) | %s× (threads waiting for a CPU: Unbound %s %%, partdns %s %%) | %s |\n' "$rate" \
        "$(fmt "$x" %.2f)" "$(fmt "$(median "${wu[@]}")" %.0f)" "$(fmt "$(median "${wp[@]}")" %.0f)" "$(verdict "$x" '<=' 1)"
    done
  fi
  if [ "$CG_DONE" = 1 ]; then
    x=$(ratio "${CG[pd|per_miss]}" "${CG[ub|per_miss]}")
    printf '| instructions per miss ≤ 1.1× Unbound | %s | %s |\n' "$x" "$(verdict "$x" '<=' 1.1)"
    x=$(ratio "${CG[pd|per_hitlow]}" "${CG[ub|per_hitlow]}"); y=$(ratio "${CG[pd|per_hitsat]}" "${CG[ub|per_hitsat]}")
    printf '| instructions per hit ≤ 0.4× Unbound (2000 qps / saturation) | %s / %s | %s / %s |\n' "$x" "$y" "$(verdict "$x" '<=' 0.4)" "$(verdict "$y" '<=' 0.4)"
  fi
  if [ "$HAVE1" = 1 ] && [ "$HAVEALL" = 1 ]; then
    sa=$(scale_med pd uniqq); sb=$(scale_med ub uniqq)
    printf '| scaling of the miss-heavy saturation QPS, %s threads / 1, ≥ Unbound'"'"'s | partdns %s, Unbound %s | %s |\n' "$NCPU" "$sa" "$sb" \
      "$(verdict "$(ratio "$sa" "$sb")" '>=' 1)"
  fi
}