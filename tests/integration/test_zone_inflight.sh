#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resolver.zone_inflight: a random-subdomain flood of a zone whose server never
# answers holds at most zone_inflight lookups per resolver thread; the rest
# fail at once with a reason, nothing waits in libunbound for them, and names
# under other parents keep resolving.
. "$(dirname "$0")/lib.sh"
harness_init zone_inflight
harness_start_all
pd_require_bins
command -v dnsperf >/dev/null 2>&1 || skip "dnsperf not installed"
pd_write_conf "$IT_TMP/partdns.yaml"
# one resolver thread and a small share, so the count is exact
sed -i 's/^resolver:$/resolver:\n  threads: 1\n  zone_inflight: 4/' "$PD_CONF"
grep -q '^  zone_inflight: 4' "$PD_CONF" || die "could not set resolver.zone_inflight"
partdns_start "$PD_CONF"
stat() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }

awk -v s="$RANDOM" 'BEGIN { srand(s); for (i = 0; i < 400; i++) printf "r%d-%d.dead.example A\n", i, int(rand() * 1e9) }' \
  > "$IT_TMP/flood.txt"
dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.9.77 -d "$IT_TMP/flood.txt" -n 1 -Q 1000 -q 1000 -t 5 \
  > "$IT_TMP/dnsperf.log" 2>&1 &
FLOOD_PID=$!
sleep 0.2
out=$(pd_dig 127.0.9.10 "healthy-$RANDOM.customer.example" A)
assert_contains "a name under another parent resolves during the flood" "status: NXDOMAIN" "$out"
wait "$FLOOD_PID"

lookups=$(stat normal.lookups)
limited=$(stat normal.zone_limited)
log "ub_lookups $lookups, zone_limited $limited"
assert_lt "most of the flood was turned away at once (zone_limited > 299)" "$limited" 299
# The four that went to libunbound are still there (the deadline is 4 s, and
# libunbound keeps trying after it): a new name under the dead zone fails at once.
t0=$(date +%s%N)
out=$(pd_dig 127.0.9.11 "late-$RANDOM.dead.example" A)
t1=$(date +%s%N)
assert_contains "a new name under the crowded zone: SERVFAIL" "status: SERVFAIL" "$out"
assert_contains "... saying why" "zone over resolver.zone_inflight" "$out"
assert_lt "... at once (ms)" 1000 $(((t1 - t0) / 1000000))
assert_eq "... without a lookup in libunbound" "$lookups" "$(stat normal.lookups)"
out=$(pd_dig 127.0.9.10 "sibling-$RANDOM.customer.example" A)
assert_contains "names under other parents still resolve" "status: NXDOMAIN" "$out"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
