#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# RPZ benchmark (not a test): what a large response policy zone costs.
#
# Usage (as root: the private DNS hierarchy binds port 53 on 127.10.N.x):
#   bench/rpz.sh [BUILD_DIR]            BUILD_DIR defaults to build/
#
# A policy zone of RPZ_RULES (1000000) triggers (exact NXDOMAIN triggers
# under blocked.example, one in 100 a wildcard, one in 100 local data) is
# generated. Each of RPZ_ROUNDS (5) rounds starts partdns twice, without and
# with the zone (the order alternating), and measures:
#   - load: seconds from the start of partdns to its first answer;
#   - memory: VmRSS once warm;
#   - hit cost: server CPU time (all threads, schedstat) per answered query
#     while dnsperf sends RPZ_RATE (20000) qps of 1000 cached names (none of
#     them a trigger: the cost of looking and not finding, which every query
#     pays) for RPZ_SECONDS (5) s.
# Reported: per-round medians of the with/without ratios and their spread;
# then instructions per hit under callgrind (RPZ_CALLGRIND=0 skips it).
# Prints a markdown report on stdout, progress on stderr.
set -u -o pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-$SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac
RULES=${RPZ_RULES:-1000000}
ROUNDS=${RPZ_ROUNDS:-5}
RATE=${RPZ_RATE:-20000}
SECONDS_RUN=${RPZ_SECONDS:-5}

bmsg() { printf '[rpz] %s\n' "$*" >&2; }
bdie() { printf '[rpz] ERROR: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || bdie "run as root"
command -v dnsperf >/dev/null 2>&1 || bdie "dnsperf not installed"
export PARTDNS_BIN=$BUILD_DIR/resolver/partdns PARTDNSCTL_BIN=$BUILD_DIR/tools/ctl/partdnsctl
[ -x "$PARTDNS_BIN" ] || bdie "no $PARTDNS_BIN: build first"
. "$SRC/tests/integration/lib.sh"
. "$SRC/bench/lib.sh"
harness_init bench_rpz
set +e
harness_start_all

bmsg "generating $RULES triggers"
awk -v n="$RULES" 'BEGIN {
  print "$TTL 300"
  print "@ SOA ns.rpz.bench. host.rpz.bench. 1 3600 600 86400 60"
  print "@ NS ns.rpz.bench."
  for (i = 0; i < n; i++) {
    if (i % 100 == 1) printf "*.w%d.blocked.example CNAME .\n", i
    else if (i % 100 == 2) printf "d%d.blocked.example A 192.0.2.%d\n", i, i % 250 + 1
    else printf "b%d.blocked.example CNAME .\n", i
  }
}' > "$IT_TMP/big.zone"
ZONE_BYTES=$(stat -c %s "$IT_TMP/big.zone")

pd_write_conf "$IT_TMP/none.yaml"
sed -i 's|^  allow: \(.*\)|  allow: \1\n  client_exempt: [ 127.0.0.0/8 ]|' "$IT_TMP/none.yaml"
cp "$IT_TMP/none.yaml" "$IT_TMP/rpz.yaml"
printf 'rpz:\n  - { zone: rpz.bench., file: %s }\n' "$IT_TMP/big.zone" >> "$IT_TMP/rpz.yaml"
awk 'BEGIN { for (i = 0; i < 1000; i++) printf "h%d.customer.example A\n", i }' > "$IT_TMP/hits.txt"

rss() { awk '/VmRSS/ {print $2}' "/proc/$PD_PID/status"; }

# run CONF: start, warm, measure; sets LOAD_S RSS_KB CPU_Q QPS
run() {
  local t0 t1 c0 c1 out n
  t0=$(date +%s%N)
  partdns_start "$1"
  t1=$(date +%s%N)
  LOAD_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) / 1e9}')
  dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.9.30 -d "$IT_TMP/hits.txt" -n 2 >/dev/null 2>&1
  RSS_KB=$(rss)
  c0=$(cpu_ns "$PD_PID")
  out=$(dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.9.31 -d "$IT_TMP/hits.txt" -l "$SECONDS_RUN" -Q "$RATE" 2>&1)
  c1=$(cpu_ns "$PD_PID")
  n=$(dp_field "$out" completed)
  QPS=$(dp_field "$out" qps)
  CPU_Q=$(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN {if (n > 0) printf "%.0f", (b - a) / n; else print "nan"}')
  partdns_stop
}

declare -a r_cpu r_load r_rss cpu_none cpu_rpz load_none load_rpz rss_none rss_rpz
for ((r = 0; r < ROUNDS; r++)); do
  order="none rpz"
  [ $((r % 2)) -eq 1 ] && order="rpz none"
  for which in $order; do
    bmsg "round $r: $which"
    run "$IT_TMP/$which.yaml"
    eval "cpu_$which[$r]=\$CPU_Q load_$which[$r]=\$LOAD_S rss_$which[$r]=\$RSS_KB"
    bmsg "  load ${LOAD_S}s rss ${RSS_KB}kB cpu/q ${CPU_Q}ns qps $QPS"
  done
  r_cpu[$r]=$(ratio "${cpu_rpz[$r]}" "${cpu_none[$r]}")
done
if [ "$ROUNDS" -gt 0 ]; then
  loaded=$(grep -o 'rpz rpz.bench.: [0-9]* triggers loaded' "$IT_TMP/partdns.log" | tail -n 1)
  rss_delta=$(( $(median "${rss_rpz[@]}") - $(median "${rss_none[@]}") ))
  echo "### Run of $(date -u '+%Y-%m-%d %H:%M') UTC"
  echo
  echo "- command: \`bench/rpz.sh $(basename "$BUILD_DIR")\` (RPZ_RULES=$RULES RPZ_ROUNDS=$ROUNDS RPZ_RATE=$RATE RPZ_SECONDS=$SECONDS_RUN)"
  echo "- machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); partdns $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)"
  echo "- zone: $RULES records, $((ZONE_BYTES / 1048576)) MiB; ${loaded:-?}"
  echo
  echo "| | without RPZ | with RPZ | ratio, per-round median (min–max) |"
  echo "|---|---|---|---|"
  echo "| CPU per hit (ns, median) | $(median "${cpu_none[@]}") | $(median "${cpu_rpz[@]}") | $(median "${r_cpu[@]}") ($(minimum "${r_cpu[@]}")–$(maximum "${r_cpu[@]}")) |"
  echo "| start to first answer (s, median) | $(median "${load_none[@]}") | $(median "${load_rpz[@]}") | |"
  echo "| VmRSS warm (kB, median) | $(median "${rss_none[@]}") | $(median "${rss_rpz[@]}") | +$rss_delta kB, $(awk -v d="$rss_delta" -v n="$RULES" 'BEGIN {printf "%.0f", d * 1024 / n}') bytes per trigger |"
  echo
  echo "Per round, CPU per hit (ns) without / with: $(for ((r = 0; r < ROUNDS; r++)); do printf '%s/%s ' "${cpu_none[$r]}" "${cpu_rpz[$r]}"; done)"
fi

# Instructions per hit, which the timing above cannot resolve: partdns under
# callgrind collecting inside query_process only (the whole of a query's
# processing, from the packet to the reply), a smaller zone (the probes cost
# the same whatever the zone's size), 1000 misses to warm then RPZ_CG_PASSES
# passes of the 1000 names as hits.
if [ "${RPZ_CALLGRIND:-1}" = 1 ] && command -v callgrind_control >/dev/null 2>&1; then
  CG_RULES=${RPZ_CG_RULES:-20000}
  CG_PASSES=${RPZ_CG_PASSES:-20}
  head -n $((CG_RULES + 2)) "$IT_TMP/big.zone" > "$IT_TMP/cg.zone"
  cp "$IT_TMP/none.yaml" "$IT_TMP/cgrpz.yaml"
  printf 'rpz:\n  - { zone: rpz.bench., file: %s }\n' "$IT_TMP/cg.zone" >> "$IT_TMP/cgrpz.yaml"
  REAL_PARTDNS=$PARTDNS_BIN
  declare -A cg=()
  for which in none cgrpz; do
    bmsg "callgrind: $which"
    cat > "$IT_TMP/partdns-cg" <<EOF2
#!/bin/sh
exec valgrind -q --tool=callgrind --toggle-collect=query_process --callgrind-out-file=$IT_TMP/cg-$which.out "$REAL_PARTDNS" "\$@"
EOF2
    chmod +x "$IT_TMP/partdns-cg"
    PARTDNS_BIN=$IT_TMP/partdns-cg
    partdns_start "$IT_TMP/$which.yaml"
    PARTDNS_BIN=$REAL_PARTDNS
    dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.9.30 -d "$IT_TMP/hits.txt" -n 1 -q 20 >/dev/null 2>&1
    callgrind_control -z "$PD_PID" >/dev/null 2>&1 || bdie "callgrind_control -z failed"
    out=$(dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.9.31 -d "$IT_TMP/hits.txt" -n "$CG_PASSES" -q 20 2>&1)
    n=$(dp_field "$out" completed)
    callgrind_control -d "$PD_PID" >/dev/null 2>&1 || bdie "callgrind_control -d failed"
    f=$(ls -t "$IT_TMP"/cg-$which.out.* | head -n 1)
    cg[$which]=$(awk -v n="$n" '/^(summary|totals):/ {printf "%.0f", $2 / n; exit}' "$f")
    partdns_stop 20
  done
  echo
  echo "Callgrind (\`--toggle-collect=query_process\`, a $CG_RULES-trigger zone, $((CG_PASSES * 1000)) hits): instructions per hit without RPZ ${cg[none]}, with RPZ ${cg[cgrpz]} ($(awk -v a="${cg[cgrpz]}" -v b="${cg[none]}" 'BEGIN {printf "%+.1f %%", (a - b) * 100 / b}'))."
fi
