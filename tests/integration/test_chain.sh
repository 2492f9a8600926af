#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A normal name whose CNAME enters an EDNS domain: the chain is completed
# through the EDNS path for the client's partition and cached per partition;
# ECS goes only to the EDNS domain's servers.
. "$(dirname "$0")/lib.sh"

harness_init chain
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
# Flag the CDN's name only: video.customer.example stays a normal name.
pdctl domain add video.cdn.test >/dev/null
partdns_start "$PD_CONF"

c0=$(gslb_query_count)
assert_eq "nanjing: the chain continues with nanjing's ECS" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "suzhou: its own node" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "wuxi: its own node" "203.0.113.3" "$(dig_a 127.0.3.10 video.customer.example)"
assert_eq "no partition: the common (default) answer" "203.0.113.100" "$(dig_a 127.0.9.9 video.customer.example)"
answer=$(pd_dig 127.0.1.10 video.customer.example A +noall +answer)
assert_match "the reply carries the customer's CNAME" "video.customer.example.*CNAME.*video.cdn.test." "$answer"
assert_not_contains "no ECS in replies" "CLIENT-SUBNET" "$(pd_dig 127.0.2.10 video.customer.example A)"

c1=$(gslb_query_count)
assert_eq "a second nanjing client is a cache hit" "203.0.113.1" "$(dig_a 127.0.1.11 video.customer.example)"
assert_eq "a second suzhou client is a cache hit" "203.0.113.2" "$(dig_a 127.0.2.11 video.customer.example)"
assert_eq "hits do not reach the GSLB" "$c1" "$(gslb_query_count)"
assert_lt "the misses did reach the GSLB" "$c1" "$c0"

if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  knot_flush gslb customer
  assert_eq "the customer's server (a normal name) never saw ECS" "" \
    "$(knot_queries customer | awk '$3 != "-"')"
  assert_eq "the GSLB saw each mapped /32 once for video.cdn.test" \
    "198.51.100.1/32 198.51.100.2/32 198.51.100.3/32" \
    "$(knot_queries gslb | awk '$1 == "video.cdn.test." && $2 == "A" && $3 != "-" {print $3}' | sort | tr '\n' ' ' | sed 's/ $//')"
fi
assert_eq "the flagged name itself works too" "203.0.113.3" "$(dig_a 127.0.3.10 video.cdn.test)"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
