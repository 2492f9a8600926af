#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# EDNS domain, policy forward: ECS queries go to unbound (subnetcache), each city still gets its own node.
. "$(dirname "$0")/lib.sh"
harness_init edns_forward
harness_start_all
harness_start_unbound
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example --policy forward --forward "$NET.5@53"
list=$(pdctl domain list)
assert_contains "domain list shows policy forward" "forward" "$list"
assert_contains "domain list shows the target" "$NET.5" "$list"
partdns_start "$PD_CONF"

all_out=""
c0=$(gslb_query_count)
for row in "127.0.1.10 nanjing 203.0.113.1" "127.0.2.10 suzhou 203.0.113.2" \
           "127.0.3.10 wuxi 203.0.113.3"; do
  set -- $row
  out=$(pd_dig "$1" video.customer.example A)
  all_out+=$out
  assert_eq "video.customer.example from $1 ($2) via unbound" "$3" \
    "$(printf '%s\n' "$out" | awk '$4 == "A" && $1 !~ /^;/ {print $5}' | sort)"
done

# cache hit in partdns' own partition cache: neither unbound nor the GSLB asked
before=$(gslb_query_count)
assert_lt "the misses above reached the GSLB (query count $c0 -> $before: the counter works)" "$before" "$c0"
ub_before=$(unbound-control -c "$IT_TMP/unbound/unbound.conf" stats_noreset 2>/dev/null |
            awk -F= '$1 == "total.num.queries" {print $2}')
for row in "127.0.1.11 203.0.113.1" "127.0.2.11 203.0.113.2" "127.0.3.11 203.0.113.3"; do
  set -- $row
  out=$(pd_dig "$1" video.customer.example A)
  all_out+=$out
  assert_eq "second client $1 (cache hit)" "$2" \
    "$(printf '%s\n' "$out" | awk '$4 == "A" && $1 !~ /^;/ {print $5}')"
done
assert_eq "cache hits do not reach the GSLB" "$before" "$(gslb_query_count)"
ub_after=$(unbound-control -c "$IT_TMP/unbound/unbound.conf" stats_noreset 2>/dev/null |
           awk -F= '$1 == "total.num.queries" {print $2}')
if [ -n "$ub_before" ]; then
  assert_eq "cache hits do not reach unbound" "$ub_before" "$ub_after"
else
  fail "unbound-control stats_noreset gave no total.num.queries"
fi

assert_not_contains "no response to a stub carries ECS (unbound's echo is not passed on)" \
  "CLIENT-SUBNET" "$all_out"
assert_eq "a normal name still resolves (normal pool, not unbound)" "203.0.113.10" \
  "$(dig_a 127.0.1.10 www.customer.example)"

if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  gslb_flush
  g=$(gslb_queries)
  for m in 198.51.100.1/32 198.51.100.2/32 198.51.100.3/32; do
    assert_contains "GSLB got ECS $m (partdns -> unbound -> GSLB)" "video.cdn.test. A $m" "$g"
  done
  assert_eq "GSLB never saw a client address in ECS" "" "$(printf '%s\n' "$g" | awk '$3 ~ /^127\./')"
fi
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
