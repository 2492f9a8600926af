#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Dead authorities cost nothing lasting: a flood of random names under a zone
# whose server never answers, on the normal path and on the EDNS path from one
# city, must not stop healthy names (normal, and flagged in the other cities)
# from resolving quickly, during the flood and after it.
. "$(dirname "$0")/lib.sh"
harness_init abuse
harness_start_all
pd_require_bins
command -v dnsperf >/dev/null 2>&1 || skip "dnsperf not installed"
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add cdn.test --subtree
partdns_start "$PD_CONF"

N=${ABUSE_N:-3000}
RATE=${ABUSE_RATE:-3000}

# probe CLIENT NAME: "RCODE MS" of one query, 3 s at most
probe() {
  local t0 t1 rc
  t0=$(date +%s%N)
  rc=$(dig +time=3 +tries=1 -b "$1" @"$PD_ADDR" -p "$PD_PORT" "$2" A 2>&1 | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')
  t1=$(date +%s%N)
  echo "${rc:-TIMEOUT} $(((t1 - t0) / 1000000))"
}

# flood CLIENT ZONE: N random names under ZONE at RATE, in the background (pid in FLOOD_PID)
flood() {
  awk -v n="$N" -v z="$2" -v s="$RANDOM" 'BEGIN { srand(s); for (i = 0; i < n; i++)
    printf "r%d-%d.%s A\n", i, int(rand() * 1e9), z }' > "$IT_TMP/flood.txt"
  dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a "$1" -d "$IT_TMP/flood.txt" -n 1 -Q "$RATE" -q 5000 -t 5 \
    > "$IT_TMP/dnsperf.log" 2>&1 &
  FLOOD_PID=$!
}

# probes_during CLIENT SUFFIX: probe fresh names CLIENT-side every 0.3 s while
# the flood runs and for 3 s after; prints one "RCODE MS" line per probe
probes_during() {
  local end=0 i=0
  while kill -0 "$FLOOD_PID" 2>/dev/null || [ "$end" -lt 10 ]; do
    kill -0 "$FLOOD_PID" 2>/dev/null || end=$((end + 1))
    probe "$1" "p$i-$RANDOM.$2"
    i=$((i + 1))
    sleep 0.3
  done
}

# --- the normal path: random names under dead.example (its server is silent)
flood 127.0.9.77 dead.example
out=$(probes_during 127.0.9.10 customer.example)
wait "$FLOOD_PID"
log "normal-path probes: $(printf '%s\n' "$out" | awk '{print $1}' | sort | uniq -c | tr '\n' ' ')"
assert_eq "every never-asked healthy name resolved during and after the flood" "" \
  "$(printf '%s\n' "$out" | awk '$1 != "NXDOMAIN"')"
assert_le "... each within 2 s (ms, slowest)" 2000 "$(printf '%s\n' "$out" | sort -k2 -n | tail -n 1 | awk '{print $2}')"

# --- the EDNS path: nanjing floods a flagged dead zone; suzhou and wuxi keep resolving flagged names
pdctl domain add dead.example --subtree
sleep 1.5   # the store change is picked up within a second
flood 127.0.1.77 dead.example
out_sz=$(probes_during 127.0.2.10 cdn.test)
wait "$FLOOD_PID"
out_wx=$(for i in 1 2 3 4 5; do probe 127.0.3.10 "q$i-$RANDOM.cdn.test"; done)
log "flagged probes (suzhou): $(printf '%s\n' "$out_sz" | awk '{print $1}' | sort | uniq -c | tr '\n' ' ')"
assert_eq "suzhou's never-asked flagged names resolved while nanjing flooded a dead flagged zone" "" \
  "$(printf '%s\n' "$out_sz" | awk '$1 != "NXDOMAIN"')"
assert_le "... each within 2 s (ms, slowest)" 2000 "$(printf '%s\n' "$out_sz" | sort -k2 -n | tail -n 1 | awk '{print $2}')"
assert_eq "wuxi's flagged names resolve after the flood" "" "$(printf '%s\n' "$out_wx" | awk '$1 != "NXDOMAIN"')"
assert_eq "nanjing's own healthy flagged names resolve after the flood" "203.0.113.1" "$(dig_a 127.0.1.10 video.cdn.test)"
# the dead zone's server is now known to be down: a new name there fails at once, with the reason.
# When its backoff has just run out, one query is the probe and waits for the
# timeout (on a loaded machine the flood can end right then): the next fails at once.
pd_dig 127.0.1.11 "late0-$RANDOM.dead.example" A >/dev/null
t0=$(date +%s%N)
out=$(pd_dig 127.0.1.11 "late-$RANDOM.dead.example" A)
t1=$(date +%s%N)
assert_contains "a new dead-zone name from nanjing: SERVFAIL" "status: SERVFAIL" "$out"
# dig's own query time: a loaded box slows dig's start-up, not the answer; a wait for the dead server would take
# edns.timeout_ms (1500)
qt=$(printf '%s\n' "$out" | awk '/Query time:/ {print $4}')
assert_lt "... at once: the server is known to be down (ms, dig's query time; $((t1 / 1000000 - t0 / 1000000)) wall)" 1000 "${qt:-99999}"
assert_contains "... saying the zone's servers are down" "EDE: 22" "$out"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
