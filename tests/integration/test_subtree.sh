#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `domain add customer.example --subtree` flags every name below it; plain A names still resolve.
. "$(dirname "$0")/lib.sh"
harness_init subtree
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add customer.example --subtree
assert_contains "domain list shows subtree" "subtree" "$(pdctl domain list)"
partdns_start "$PD_CONF"

all_out=""
for name in video.customer.example static.customer.example; do
  for row in "127.0.1.10 nanjing 203.0.113.1" "127.0.2.10 suzhou 203.0.113.2" \
             "127.0.3.10 wuxi 203.0.113.3"; do
    set -- $row
    out=$(pd_dig "$1" "$name" A)
    all_out+=$out
    assert_eq "$name from $1 ($2): flagged by the subtree" "$3" \
      "$(printf '%s\n' "$out" | awk '$4 == "A" && $1 !~ /^;/ {print $5}' | sort)"
  done
done
# names in the subtree that are not CNAMEs into the CDN: same answer everywhere
for c in 127.0.1.10 127.0.2.10 127.0.3.10 127.0.9.9; do
  assert_eq "www.customer.example A from $c" "203.0.113.10" "$(dig_a "$c" www.customer.example)"
  assert_eq "plain.customer.example A from $c" "203.0.113.11" "$(dig_a "$c" plain.customer.example)"
done
out=$(pd_dig 127.0.2.10 www.customer.example AAAA +noall +answer)
all_out+=$out
assert_eq "www.customer.example AAAA (suzhou)" "2001:db8::10" "$(printf '%s\n' "$out" | awk '$4 == "AAAA" {print $5}')"
assert_eq "the apex itself is in the subtree and answers" "NOERROR" "$(dig_rcode 127.0.1.10 customer.example SOA)"
assert_eq "NXDOMAIN inside the subtree" "NXDOMAIN" "$(dig_rcode 127.0.3.10 nope.customer.example A)"
# outside the subtree: a cdn.test name asked directly is not flagged
assert_eq "video.cdn.test asked directly (not flagged) gets the default" "203.0.113.100" \
  "$(dig_a 127.0.1.10 video.cdn.test)"
assert_not_contains "no response to a stub carries ECS" "CLIENT-SUBNET" "$all_out"

if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  knot_flush gslb root tld
  assert_eq "root never got ECS" "" "$(knot_queries root | awk '$3 != "-"')"
  assert_eq "TLD never got ECS" "" "$(knot_queries tld | awk '$3 != "-"')"
  assert_eq "GSLB never saw a client address in ECS" "" "$(gslb_queries | awk '$3 ~ /^127\./')"
fi
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
