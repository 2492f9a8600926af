#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Prefetch: a hot flagged name is refreshed at the GSLB, with its city's ECS, before it expires and without a
# client ever missing; with cache.prefetch false the same name expires under its clients.
. "$(dirname "$0")/lib.sh"
harness_init prefetch
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
# the GSLB's answers (TTL 60) live 20 s here: prefetch when 2 s or less are left
cat >> "$PD_CONF" <<'EOF'
cache:
  max_ttl: 20
  prefetch: true
EOF
pdctl domain add video.cdn.test >/dev/null
partdns_start "$PD_CONF"

stat() { "$PARTDNSCTL_BIN" -c "$PD_CONF" stats | awk -v k="$1" '$1 == k {print $2}'; }

# hot CLIENT NODE MAX_S STOP: ask for video.cdn.test from CLIENT every 0.4 s, for at most
# MAX_S seconds after its first (warming) answer, until STOP says so.  Each
# answer must be NODE.  Sets LOG ("seconds ttl gslb-count misses" per answer),
# G0 and M0 (GSLB count and partdns misses after the warming answer).
hot() {
  local client=$1 node=$2 max=$3 stop=$4 t0 now out ttl a g m bad=""
  out=$(pd_dig "$client" video.cdn.test A +noall +answer)
  assert_eq "warming answer from $client: its city's node" "$node" "$(printf '%s\n' "$out" | awk '$4 == "A" {print $5}')"
  t0=$(date +%s%N)
  G0=$(gslb_query_count)
  M0=$(stat misses)
  LOG=""
  while :; do
    sleep 0.4
    out=$(pd_dig "$client" video.cdn.test A +noall +answer)
    now=$(date +%s%N)
    ttl=$(printf '%s\n' "$out" | awk '$4 == "A" {print $2}')
    a=$(printf '%s\n' "$out" | awk '$4 == "A" {print $5}')
    [ "$a" = "$node" ] || bad+="$(((now - t0) / 1000000)) ms: '$a' "
    g=$(gslb_query_count)
    m=$(stat misses)
    LOG+="$(((now - t0) / 1000000)) ${ttl:--} $g $m"$'\n'
    "$stop" "$ttl" "$g" "$m" && break
    [ $(((now - t0) / 1000000000)) -lt "$max" ] || break
  done
  assert_eq "every answer to $client was its city's node" "" "$bad"
}

# prefetch on: stop 2 s after the GSLB was asked again (the TTL is up again by then)
REFRESHED_AT=""
after_refresh() {
  if [ -z "$REFRESHED_AT" ]; then
    [ "$2" -gt "$G0" ] && REFRESHED_AT=$(date +%s)
    return 1
  fi
  [ $(($(date +%s) - REFRESHED_AT)) -ge 2 ]
}
hot 127.0.1.10 203.0.113.1 26 after_refresh
log "prefetch on (nanjing):"$'\n'"$LOG"
read -r _ _ g1 m1 <<<"$(printf '%s' "$LOG" | tail -n 1)"
assert_lt "the GSLB was asked again within one lifetime (count $G0 -> $g1)" "$g1" "$G0"
assert_eq "no client missed: every answer came from the cache (partdns misses)" "$M0" "$m1"
assert_lt "the refresh was a prefetch (stats prefetches)" "$(stat prefetches)" 0
# the TTL went down into the last tenth and then up to a fresh lifetime, never past 0
assert_eq "the TTL counted down to the last tenth, then was fresh again" "yes" \
  "$(printf '%s' "$LOG" | awk '$2 != "-" { if ($2 <= 2) low = 1; else if (low && $2 >= 15) up = 1 } END { print (low && up) ? "yes" : "no" }')"
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  knot_flush gslb
  assert_eq "the GSLB got video.cdn.test twice, both times with nanjing's ECS" "2" \
    "$(gslb_queries | grep -c '^video\.cdn\.test\. A 198\.51\.100\.1/32$')"
  assert_eq "and never with another city's ECS" "" \
    "$(gslb_queries | awk '$1 == "video.cdn.test." && $3 != "-" && $3 != "198.51.100.1/32"')"
else
  log "knot-module-dnstap missing: ECS of the refresh not checked"
fi

# prefetch off (reload): suzhou's entry expires under its clients, the GSLB is asked only by a miss
sed -i 's/^  prefetch: true$/  prefetch: false/' "$PD_CONF"
assert_contains "reload with cache.prefetch false" "reloaded" "$(pdctl reload)"
p0=$(stat prefetches)
missed() { [ "$3" -gt "$M0" ]; }
hot 127.0.2.10 203.0.113.2 26 missed
log "prefetch off (suzhou):"$'\n'"$LOG"
read -r _ _ g1 m1 <<<"$(printf '%s' "$LOG" | tail -n 1)"
assert_lt "without prefetch the entry expired: a client missed (partdns misses $M0 -> $m1)" "$m1" "$M0"
assert_eq "the GSLB was not asked before that miss" "" \
  "$(printf '%s' "$LOG" | awk -v g0="$G0" -v m0="$M0" '$3 > g0 && $4 == m0')"
assert_eq "no prefetch was started" "$p0" "$(stat prefetches)"

partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
