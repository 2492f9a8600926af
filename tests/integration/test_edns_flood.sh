#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A flood of EDNS misses that never resolve (a flagged zone whose server is
# silent) must not slow normal resolution: the EDNS pool has its own threads
# and sockets, and past edns.max_inflight the excess gets SERVFAIL at once.
. "$(dirname "$0")/lib.sh"
harness_init edns_flood
command -v dnsperf >/dev/null 2>&1 || die "dnsperf not installed (tools/deps.sh installs it)"
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i -e 's|^edns:|edns:\n  max_inflight: 50|' -e 's|timeout_ms: 1500|timeout_ms: 2000|' "$PD_CONF"
pdctl domain add dead.example --subtree >/dev/null
partdns_start "$PD_CONF"

# 3 s of 600 qps of distinct flagged names from nanjing: every one a miss
# that waits for a server that never answers.
for ((i = 0; i < 2000; i++)); do echo "n$i.dead.example A"; done > "$IT_TMP/flood.txt"
dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.1.10 -d "$IT_TMP/flood.txt" -l 4 -Q 600 -t 2 -c 1 -T 1 \
  > "$IT_TMP/dnsperf.txt" 2>&1 &
flood=$!
sleep 1

# Meanwhile, normal misses (each name new, so each goes upstream) stay fast.
slow=0 bad=0 worst=0
for ((i = 0; i < 20; i++)); do
  out=$(pd_dig 127.0.2.10 "nx$i.customer.example" A)
  ms=$(printf '%s\n' "$out" | sed -n 's/^;; Query time: \([0-9]*\) msec/\1/p')
  [[ "$out" == *'status: NXDOMAIN'* ]] || bad=$((bad + 1))
  [ -n "$ms" ] || ms=99999
  [ "$ms" -le 1000 ] || slow=$((slow + 1))
  [ "$ms" -le "$worst" ] || worst=$ms
  sleep 0.05
done
assert_eq "normal misses during the flood all answered NXDOMAIN" 0 "$bad"
assert_eq "normal misses during the flood under 1 s (the EDNS timeout is 2 s) (worst $worst ms)" 0 "$slow"
assert_eq "a cached normal name during the flood" "203.0.113.10" "$(dig_a 127.0.2.10 www.customer.example)"
wait "$flood"

stats=$(pdctl stats)
over=$(printf '%s\n' "$stats" | awk '$1 == "overload" {print $2}')
assert_lt "past edns.max_inflight the excess was refused at once (overload $over)" "${over:-0}" 0
infl=$(printf '%s\n' "$stats" | awk '$1 == "edns.inflight" {print $2}')
assert_le "in-flight EDNS resolutions never above the cap ($infl)" 50 "${infl:-999}"
sleep 3.5
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
