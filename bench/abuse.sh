#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Abuse benchmark (not a test): what floods cost partdns, on loopback.
#
# Usage (as root: the private DNS hierarchy binds port 53 on 127.10.N.x):
#   bench/abuse.sh [BUILD_DIR]          BUILD_DIR defaults to build/
#
#   A. dead zone, normal path: ABUSE_N (45000) random names under dead.example
#      (its server never answers) at ABUSE_RATE (15000) qps from one client;
#      a never-asked healthy name is probed every 0.5 s during the flood and for
#      ABUSE_AFTER (60) s after it: its latency and rcode, and partdns' RSS.
#      RSS "warm" is taken after 2000 distinct names have been resolved and the
#      daemon has idled 12 s (so the cache reaper and malloc_trim have run once).
#   B. normal hits during an EDNS-miss flood vs quiet: dnsperf on 1000 cached
#      names for 5 s, alone (before and after) and while nanjing floods fresh flagged names
#      (random names under the flagged cdn.test) at ABUSE_EDNS_RATE (5000) qps;
#      ABUSE_ROUNDS (3) interleaved rounds, the median of per-round ratios;
#      the reference Unbound (2 threads, ratelimit 1000) the same way, in the
#      same rounds, with the fresh names resolved plainly. The flood comes from
#      ABUSE_FLOODER: bench_flood (default; tools/bench/bench_flood.c, one
#      packet every 1/rate s, a few us of CPU each) or dnsperf (~0.3 CPU of its
#      own at 5000 qps, taken from the server on a 2-CPU machine). Each round
#      also records the CPU (in CPUs) of the server, the generator and the GSLB
#      while the hits ran during the flood.
#   C. quiet cities while one floods: nanjing floods a flagged dead zone at
#      ABUSE_RATE; suzhou and wuxi each ask 200 fresh flagged names at 50 qps;
#      the share answered (NOERROR/NXDOMAIN).
#   ABUSE_PARTS (ABC) runs only the parts named, e.g. ABUSE_PARTS=A.
# Prints a markdown report on stdout, progress on stderr.
set -u -o pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-$SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac
N=${ABUSE_N:-45000}
RATE=${ABUSE_RATE:-15000}
AFTER=${ABUSE_AFTER:-60}
EDNS_RATE=${ABUSE_EDNS_RATE:-5000}
ROUNDS=${ABUSE_ROUNDS:-3}
PARTS=${ABUSE_PARTS:-ABC}
FLOODER=${ABUSE_FLOODER:-bench_flood}

bmsg() { printf '[abuse] %s\n' "$*" >&2; }
bdie() { printf '[abuse] ERROR: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || bdie "run as root"
command -v dnsperf >/dev/null 2>&1 || bdie "dnsperf not installed"
export PARTDNS_BIN=$BUILD_DIR/resolver/partdns PARTDNSCTL_BIN=$BUILD_DIR/tools/ctl/partdnsctl
[ -x "$PARTDNS_BIN" ] || bdie "no $PARTDNS_BIN: build first"
[ "$FLOODER" = dnsperf ] || [ -x "$BUILD_DIR/tools/bench/bench_flood" ] || bdie "no $BUILD_DIR/tools/bench/bench_flood: build first"
. "$SRC/tests/integration/lib.sh"
harness_init bench_abuse
set +e
harness_start_all
pd_write_conf "$IT_TMP/partdns.yaml"
# The load generators send from one address each, far over server.client_qps:
# exempt them, so this measures the resolution pools, not the client limiter.
sed -i 's|^  allow: \(.*\)|  allow: \1\n  client_exempt: [ 127.0.0.0/8 ]|' "$PD_CONF"
grep -q client_exempt "$PD_CONF" || bdie "could not exempt the load generators"
pdctl domain add cdn.test --subtree >/dev/null
partdns_start "$PD_CONF"
rss() { awk '/VmRSS/ {print $2}' "/proc/$PD_PID/status"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
names() {  # names N ZONE PREFIX: N random names
  awk -v n="$1" -v z="$2" -v p="$3" -v s="$RANDOM" 'BEGIN { srand(s); for (i = 0; i < n; i++)
    printf "%s%d-%d.%s A\n", p, i, int(rand() * 1e9), z }'
}
dp() { dnsperf -s "$PD_ADDR" -p "$PD_PORT" "$@" 2>&1; }
probe() {
  local t0 t1 rc
  t0=$(date +%s%N)
  rc=$(dig +time=5 +tries=1 -b 127.0.9.10 @"$PD_ADDR" -p "$PD_PORT" "p$RANDOM$RANDOM.customer.example" A 2>&1 |
       sed -n 's/.*status: \([A-Z]*\),.*/\1/p')
  t1=$(date +%s%N)
  echo "${rc:-TIMEOUT} $(((t1 - t0) / 1000000)) $(rss)"
}

if [[ $PARTS == *A* ]]; then
# ---- A: dead zone on the normal path
bmsg "A: warming with 2000 distinct names"
names 2000 customer.example w > "$IT_TMP/warm.txt"
dp -a 127.0.9.20 -d "$IT_TMP/warm.txt" -n 1 -Q 2000 >/dev/null
sleep 12
RSS_WARM=$(rss)
names "$N" dead.example r > "$IT_TMP/dead.txt"
bmsg "A: flood of $N dead-zone names at $RATE qps; RSS warm $RSS_WARM kB"
dp -a 127.0.9.77 -d "$IT_TMP/dead.txt" -n 1 -Q "$RATE" -q 10000 -t 5 > "$IT_TMP/floodA.txt" &
FL=$!
: > "$IT_TMP/probesA.txt"
while kill -0 "$FL" 2>/dev/null; do probe >> "$IT_TMP/probesA.txt"; sleep 0.5; done
wait "$FL"
RSS_END=$(rss)
RSS_PEAK=$(awk '{print $3}' "$IT_TMP/probesA.txt" | sort -n | tail -n 1)
: > "$IT_TMP/afterA.txt"
for ((i = 0; i < AFTER; i++)); do probe >> "$IT_TMP/afterA.txt"; sleep 1; done
RSS_AFTER=$(rss)
A_BAD=$(cat "$IT_TMP/probesA.txt" "$IT_TMP/afterA.txt" | awk '$1 != "NXDOMAIN"' | wc -l)
A_PROBES=$(cat "$IT_TMP/probesA.txt" "$IT_TMP/afterA.txt" | wc -l)
A_MAX=$(awk '{print $2}' "$IT_TMP/probesA.txt" | sort -n | tail -n 1)
A_MED=$(median $(awk '{print $2}' "$IT_TMP/probesA.txt"))
A_SENT=$(awk '/Queries completed:/ {print $3}' "$IT_TMP/floodA.txt")
A_CODES=$(sed -n 's/^ *Response codes: *//p' "$IT_TMP/floodA.txt")

fi

if [[ $PARTS == *B* ]]; then
# ---- B: normal hits, quiet vs during an EDNS-miss flood; the reference
# Unbound (2 threads, ratelimit = edns.zone_qps) under the same flood of
# fresh names, in the same rounds, order alternating: on a 2-CPU machine the
# flood's generator and knotd take CPU from both alike.
. "$SRC/bench/lib.sh"
UB_ADDR=$NET.54
UB_DIR=$IT_TMP/unbound-ref
mkdir -p "$UB_DIR"
bench_unbound_conf "$UB_DIR/unbound.conf" 2 "so-reuseport: yes" "outgoing-range: 8192" "ratelimit: 1000"
unbound -d -c "$UB_DIR/unbound.conf" >> "$UB_DIR/stdout.log" 2>&1 &
UB_PID=$!
IT_PIDS[bench-unbound]=$UB_PID
it_wait_dns 30 -p "$PD_PORT" @"$UB_ADDR" localhost. A || bdie "unbound did not answer"
bmsg "B: hits quiet vs during an EDNS-miss flood, $ROUNDS rounds, partdns and Unbound"
names 1000 customer.example h > "$IT_TMP/hits.txt"
for a in "$PD_ADDR" "$UB_ADDR"; do
  for i in 1 2; do dnsperf -s "$a" -p "$PD_PORT" -a 127.0.9.30 -d "$IT_TMP/hits.txt" -n 1 >/dev/null 2>&1; done
done
qps() { awk '/Queries per second:/ {print $4}' <<< "$1"; }
# b_flood ADDR: the flood of fresh flagged names from nanjing, for 8 s
b_flood() {
  if [ "$FLOODER" = dnsperf ]; then
    names 100000 cdn.test f > "$IT_TMP/edns.txt"
    exec dnsperf -s "$1" -p "$PD_PORT" -a 127.0.1.77 -d "$IT_TMP/edns.txt" -n 1 -Q "$EDNS_RATE" -l 8 -q 5000
  fi
  exec "$BUILD_DIR/tools/bench/bench_flood" -s "$1" -p "$PD_PORT" -a 127.0.1.77 -z cdn.test -Q "$EDNS_RATE" -l 8
}
# b_round ADDR PID: quiet hit QPS (the mean of one run before the flood and
# one after it: the quiet rate drifts by tens of percent between minutes on a
# shared machine), hit QPS during the flood, and the CPU (in CPUs) the
# server, the flood's generator and the GSLB used while the hits ran in the
# flood ("Q L SERVER GENERATOR GSLB")
b_round() {
  local q q2 l fl c0 c1 g0 g1 k0 k1 t0 t1 kp=${IT_PIDS[gslb]}
  q=$(qps "$(dnsperf -s "$1" -p "$PD_PORT" -a 127.0.9.30 -d "$IT_TMP/hits.txt" -l 5 -q 100 2>&1)")
  b_flood "$1" > "$IT_TMP/floodB.txt" 2>&1 &
  fl=$!
  sleep 1
  c0=$(cpu_ns "$2"); g0=$(cpu_ns "$fl"); k0=$(cpu_ns "$kp"); t0=$(date +%s%N)
  l=$(qps "$(dnsperf -s "$1" -p "$PD_PORT" -a 127.0.9.30 -d "$IT_TMP/hits.txt" -l 5 -q 100 2>&1)")
  c1=$(cpu_ns "$2"); g1=$(cpu_ns "$fl"); k1=$(cpu_ns "$kp"); t1=$(date +%s%N)
  wait "$fl"
  sleep 1
  q2=$(qps "$(dnsperf -s "$1" -p "$PD_PORT" -a 127.0.9.30 -d "$IT_TMP/hits.txt" -l 5 -q 100 2>&1)")
  q=$(awk -v a="$q" -v b="$q2" 'BEGIN { printf "%.0f", (a + b) / 2 }')
  awk -v q="$q" -v l="$l" -v c=$((c1 - c0)) -v g=$((g1 - g0)) -v k=$((k1 - k0)) -v t=$((t1 - t0)) \
    'BEGIN { printf "%s %s %.2f %.2f %.2f\n", q, l, c / t, g / t, k / t }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
declare -a QUIET=() LOUD=() RATIO=() UQUIET=() ULOUD=() URATIO=() CPU=() UCPU=()
for ((r = 0; r < ROUNDS; r++)); do
  for who in $( ((r % 2)) && echo "ub pd" || echo "pd ub"); do
    if [ "$who" = pd ]; then
      read -r q l cs cg ck < <(b_round "$PD_ADDR" "$PD_PID")
      QUIET+=("$q"); LOUD+=("$l"); RATIO+=("$(ratio "$l" "$q")"); CPU+=("$cs/$cg/$ck")
    else
      read -r q l cs cg ck < <(b_round "$UB_ADDR" "$UB_PID")
      UQUIET+=("$q"); ULOUD+=("$l"); URATIO+=("$(ratio "$l" "$q")"); UCPU+=("$cs/$cg/$ck")
    fi
    bmsg "B round $r, $who: quiet $q qps, during the flood $l qps; CPUs server/generator/GSLB $cs/$cg/$ck"
    bmsg "  flood: $(tr '\n' ' ' < "$IT_TMP/floodB.txt" | grep -o 'sent.*\|Response codes:[^%]*%)' | head -1)"
  done
done
it_stop_pid "$UB_PID" 5
unset "IT_PIDS[bench-unbound]"

fi

if [[ $PARTS == *C* ]]; then
# ---- C: quiet cities while nanjing floods a flagged dead zone
bmsg "C: nanjing floods a flagged dead zone; suzhou and wuxi ask fresh flagged names"
pdctl domain add dead.example --subtree >/dev/null
sleep 1.5
names "$N" dead.example c > "$IT_TMP/deadC.txt"
dp -a 127.0.1.78 -d "$IT_TMP/deadC.txt" -n 1 -Q "$RATE" -q 10000 -t 5 > "$IT_TMP/floodC.txt" &
FL=$!
sleep 1
names 200 cdn.test s > "$IT_TMP/sz.txt"
names 200 cdn.test w > "$IT_TMP/wx.txt"
dp -a 127.0.2.10 -d "$IT_TMP/sz.txt" -n 1 -Q 50 -t 5 > "$IT_TMP/sz.out" &
SZ=$!
dp -a 127.0.3.10 -d "$IT_TMP/wx.txt" -n 1 -Q 50 -t 5 > "$IT_TMP/wx.out"
wait "$SZ" "$FL"
ok_share() { awk '/Response codes:/ { for (i = 3; i <= NF; i++) if ($i == "NOERROR" || $i == "NXDOMAIN") ok += $(i + 1) }
  /Queries sent:/ {sent = $3} END {printf "%.1f", 100 * ok / sent}' "$1"; }
C_SZ=$(ok_share "$IT_TMP/sz.out")
C_WX=$(ok_share "$IT_TMP/wx.out")
C_FLOOD=$(sed -n 's/^ *Response codes: *//p' "$IT_TMP/floodC.txt")
fi

cat <<EOF
### Run of $(date -u '+%Y-%m-%d %H:%M') UTC

- command: \`bench/abuse.sh $(basename "$BUILD_DIR")\` (ABUSE_N=$N ABUSE_RATE=$RATE ABUSE_AFTER=$AFTER ABUSE_EDNS_RATE=$EDNS_RATE ABUSE_ROUNDS=$ROUNDS)
- machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); partdns $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null) (server.threads 2, edns.threads 1, load generators in server.client_exempt, defaults otherwise)

EOF
[[ $PARTS == *A* ]] && cat <<EOF
A. Dead zone, normal path ($A_SENT queries answered: $A_CODES)

| never-asked healthy name, during the flood | after it ($AFTER s) | RSS warm | peak | end of flood | $AFTER s later |
|---|---|---|---|---|---|
| median $A_MED ms, slowest $A_MAX ms | $A_BAD of $A_PROBES probes not answered NXDOMAIN (all phases) | $RSS_WARM kB | $RSS_PEAK kB | $RSS_END kB | $RSS_AFTER kB ($(awk -v a="$RSS_AFTER" -v b="$RSS_WARM" 'BEGIN {printf "%.2f", a / b}')× warm) |

EOF
[[ $PARTS == *B* ]] && cat <<EOF
B. Normal hits during an EDNS-miss flood ($EDNS_RATE qps of fresh flagged names from one city)

| server | quiet QPS (per round, mean of before and after) | during the flood | ratio, per-round median (min–max) | CPUs during the flood: server/generator/GSLB (per round) |
|---|---|---|---|---|
| partdns | ${QUIET[*]} | ${LOUD[*]} | $(median "${RATIO[@]}") ($(printf '%s\n' "${RATIO[@]}" | sort -g | head -n 1)–$(printf '%s\n' "${RATIO[@]}" | sort -g | tail -n 1)) | ${CPU[*]} |
| Unbound (2 threads, ratelimit 1000) | ${UQUIET[*]} | ${ULOUD[*]} | $(median "${URATIO[@]}") ($(printf '%s\n' "${URATIO[@]}" | sort -g | head -n 1)–$(printf '%s\n' "${URATIO[@]}" | sort -g | tail -n 1)) | ${UCPU[*]} |

The flood's generator: $FLOODER.

EOF
[[ $PARTS == *C* ]] && cat <<EOF
C. Quiet cities while nanjing floods a flagged dead zone (flood: $C_FLOOD)

| suzhou fresh flagged names answered | wuxi |
|---|---|
| $C_SZ % | $C_WX % |
EOF
true
