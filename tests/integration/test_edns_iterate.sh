#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# EDNS domain, policy iterate: one CDN node per city, per-partition cache, no ECS to stubs, root or TLD.
. "$(dirname "$0")/lib.sh"
harness_init edns_iterate
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example
assert_contains "domain list shows the exact flag" "video.customer.example" "$(pdctl domain list)"
partdns_start "$PD_CONF"

all_out=""   # every response to a stub, to check for ECS at the end
c0=$(gslb_query_count)

# client, its partition, the node its city's GSLB answer names
for row in "127.0.1.10 nanjing 203.0.113.1" "127.0.2.10 suzhou 203.0.113.2" \
           "127.0.3.10 wuxi 203.0.113.3" "127.0.9.9 none(common) 203.0.113.100"; do
  set -- $row
  out=$(pd_dig "$1" video.customer.example A)
  all_out+=$out
  assert_eq "video.customer.example from $1 ($2)" "$3" \
    "$(printf '%s\n' "$out" | awk '$4 == "A" && $1 !~ /^;/ {print $5}' | sort)"
  assert_contains "answer from $1 ($2) carries the CNAME" "video.cdn.test." \
    "$(printf '%s\n' "$out" | awk '$4 == "CNAME" {print $5}')"
  assert_eq "status for $1 ($2)" "NOERROR" "$(printf '%s\n' "$out" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')"
done
# an IPv6 client: ::1 is in wuxi; wuxi has no mapped6, so its IPv4 mapped address goes out
if [ "$IT_HAVE_IPV6" = 1 ]; then
  out=$(pd_dig ::1 video.customer.example A)
  all_out+=$out
  assert_eq "video.customer.example from ::1 (wuxi, over IPv6)" "203.0.113.3" \
    "$(printf '%s\n' "$out" | awk '$4 == "A" && $1 !~ /^;/ {print $5}')"
else
  log "no ::1 on lo: IPv6 client check not made"
fi

# cache hit: another nanjing client, the GSLB is not asked again
before=$(gslb_query_count)
assert_lt "the misses above reached the GSLB (query count $c0 -> $before: the counter works)" "$before" "$c0"
ttl1=$(dig_ttl 127.0.1.10 video.customer.example A)
sleep 2
out=$(pd_dig 127.0.1.11 video.customer.example A)
all_out+=$out
assert_eq "second nanjing client (127.0.1.11) gets nanjing's node" "203.0.113.1" \
  "$(printf '%s\n' "$out" | awk '$4 == "A" && $1 !~ /^;/ {print $5}')"
ttl2=$(printf '%s\n' "$out" | awk '$4 == "A" && $1 !~ /^;/ {print $2}')
assert_eq "nanjing cache hits do not reach the GSLB (query count)" "$before" "$(gslb_query_count)"
assert_lt "TTL counts down in the cache (2 s later: $ttl1 -> $ttl2)" "${ttl1:-0}" "${ttl2:-999999}"
assert_le "cached TTL not above the GSLB's 60 s" 60 "${ttl1:-999999}"
# the other cities still have their own entries
for row in "127.0.2.11 203.0.113.2" "127.0.3.11 203.0.113.3"; do
  set -- $row
  assert_eq "cache hit from $1 keeps its city's node" "$2" "$(dig_a "$1" video.customer.example)"
done
assert_eq "cache hits in suzhou and wuxi do not reach the GSLB either" "$before" "$(gslb_query_count)"

# a name that is not flagged: one common answer, resolved once upstream
for c in 127.0.1.10 127.0.2.10 127.0.3.10 127.0.9.9; do
  out=$(pd_dig "$c" static.customer.example A)
  all_out+=$out
  assert_eq "static.customer.example (not flagged) from $c: the default node" "203.0.113.100" \
    "$(printf '%s\n' "$out" | awk '$4 == "A" && $1 !~ /^;/ {print $5}')"
done

assert_not_contains "no response to a stub carries ECS" "CLIENT-SUBNET" "$all_out"

# what the authorities saw (dnstap logs)
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  knot_flush gslb root tld customer
  g=$(gslb_queries)
  for m in 198.51.100.1/32 198.51.100.2/32 198.51.100.3/32; do
    assert_eq "GSLB got video.cdn.test A with ECS $m exactly once" "1" \
      "$(printf '%s\n' "$g" | grep -c "^video\.cdn\.test\. A $m$")"
  done
  assert_eq "GSLB never saw a client address (127.x) in ECS" "" \
    "$(printf '%s\n' "$g" | awk '$3 ~ /^127\./')"
  assert_eq "every ECS the GSLB saw is a mapped /32 (or none)" "" \
    "$(printf '%s\n' "$g" | awk '$3 != "-" && $3 !~ /^198\.51\.100\.[123]\/32$/')"
  assert_eq "static.cdn.test (not flagged) reached the GSLB once" "1" \
    "$(printf '%s\n' "$g" | grep -c '^static\.cdn\.test\. A ')"
  assert_eq "static.cdn.test (not flagged) was asked without ECS" "static.cdn.test. A -" \
    "$(printf '%s\n' "$g" | grep '^static\.cdn\.test\. A ')"
  assert_eq "root never got ECS" "" "$(knot_queries root | awk '$3 != "-"')"
  assert_eq "TLD never got ECS" "" "$(knot_queries tld | awk '$3 != "-"')"
  c=$(knot_queries customer)
  for m in 198.51.100.1/32 198.51.100.2/32 198.51.100.3/32; do
    assert_contains "customer server got video.customer.example with ECS $m (ECS on every hop)" \
      "video.customer.example. A $m" "$c"
  done
  assert_eq "customer server got static.customer.example (not flagged) without ECS" "" \
    "$(printf '%s\n' "$c" | awk '$1 == "static.customer.example." && $3 != "-"')"
else
  log "knot-module-dnstap missing: ECS-on-the-wire checks not made"
fi

partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
