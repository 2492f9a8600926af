#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Policy forward: a target that swallows queries (never answers) times out
# after edns.timeout_ms and the next target answers; only silent targets
# give SERVFAIL within the resolution deadline, never silence.
. "$(dirname "$0")/lib.sh"
harness_init forward_timeout
[ -x "$BLACKHOLE_BIN" ] || die "blackhole helper not built: $BLACKHOLE_BIN"
harness_start_all
harness_start_unbound
pd_require_bins
"$BLACKHOLE_BIN" "$NET.97" 53 "$IT_TMP/blackhole.count" &
IT_PIDS[blackhole]=$!
sleep 0.2
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i 's|timeout_ms: 1500|timeout_ms: 400|' "$PD_CONF"
pdctl domain add video.customer.example --policy forward --forward "$NET.97@53" --forward "$NET.5@53" >/dev/null
partdns_start "$PD_CONF"

t0=$(date +%s%N)
got=$(dig_a 127.0.1.10 video.customer.example)
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
assert_eq "nanjing: answered by the second target after the first timed out" "203.0.113.1" "$got"
assert_le "the silent target cost about one timeout (${ms} ms)" 2500 "$ms"
assert_lt "the silent target cost at least the timeout (${ms} ms)" "$ms" 399
assert_lt "the silent target did receive the query" "$(cat "$IT_TMP/blackhole.count" 2>/dev/null || echo 0)" 0
timeouts=$(pdctl stats | awk '$1 == "edns.upstream_timeouts" {print $2}')
assert_lt "the timeout was counted ($timeouts)" "${timeouts:-0}" 0
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"

pd_write_conf "$IT_TMP/silent.yaml"
sed -i 's|timeout_ms: 1500|timeout_ms: 300|' "$PD_CONF"
rm -rf "$IT_TMP/store"; mkdir -p "$IT_TMP/store"
pdctl domain add video.customer.example --policy forward --forward "$NET.97@53" >/dev/null
partdns_start "$PD_CONF"
t0=$(date +%s%N)
rc=$(PD_DIG_TIME=5 dig_rcode 127.0.1.10 video.customer.example A)
t1=$(date +%s%N)
assert_eq "only a silent target: SERVFAIL, not silence" "SERVFAIL" "$rc"
assert_le "within the resolution deadline ($(((t1 - t0) / 1000000)) ms)" 3000 "$(((t1 - t0) / 1000000))"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
