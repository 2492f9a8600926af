#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Harness self-test: the private hierarchy, the ECS GSLB and unbound answer as the other tests assume.
. "$(dirname "$0")/lib.sh"
harness_init harness

t0=$(date +%s%N)
harness_start_all
harness_start_unbound
ms=$((($(date +%s%N) - t0) / 1000000))
# generous: a loaded 2-core CI box running other tests at once (the figure is printed)
assert_lt "hierarchy + GSLB + unbound up in < 20 s (took $ms ms)" 20000 "$ms"

# a ARGS...: the A records of a dig answer, sorted
a() { dig +time=2 +tries=1 "$@" A +noall +answer 2>&1 | awk '$4 == "A" {print $5}' | sort; }

# the hierarchy, server by server
assert_contains "root delegates example. to ns.nic.example." "ns.nic.example." \
  "$(dig +time=2 +tries=1 +norecurse @$NET.1 www.customer.example A)"
assert_contains "root delegates test. to ns.nic.test." "ns.nic.test." \
  "$(dig +time=2 +tries=1 +norecurse @$NET.1 video.cdn.test A)"
assert_contains "example. delegates customer.example. with glue" "$NET.3" \
  "$(dig +time=2 +tries=1 +norecurse @$NET.2 www.customer.example A)"
assert_contains "test. delegates cdn.test. with glue" "$NET.4" \
  "$(dig +time=2 +tries=1 +norecurse @$NET.2 video.cdn.test A)"
assert_eq "customer: www A" "203.0.113.10" "$(a @$NET.3 www.customer.example)"
assert_eq "customer: www AAAA" "2001:db8::10" \
  "$(dig +time=2 +tries=1 @$NET.3 www.customer.example AAAA +short)"
assert_eq "customer: video is a CNAME into the CDN" "video.cdn.test." \
  "$(dig +time=2 +tries=1 @$NET.3 video.customer.example CNAME +short)"
assert_eq "customer: NXDOMAIN for a missing name" "NXDOMAIN" \
  "$(dig +time=2 +tries=1 @$NET.3 nope.customer.example A | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')"
soa_min=$(dig +time=2 +tries=1 @$NET.3 customer.example SOA +short | awk '{print $7}')
assert_eq "customer: SOA minimum 60" "60" "$soa_min"
big=$(dig +time=2 +tries=1 +tcp @$NET.3 big.customer.example TXT +noall +answer | grep -c 'TXT')
assert_eq "customer: big TXT RRset has 12 records over TCP" "12" "$big"
big_bytes=$(dig +time=2 +tries=1 +tcp @$NET.3 big.customer.example TXT | sed -n 's/.*MSG SIZE  rcvd: \([0-9]*\).*/\1/p')
assert_lt "customer: big TXT response is > 3000 bytes (more than any UDP buffer we use)" "$big_bytes" 3000
assert_contains "customer: big TXT over UDP with a 512 B buffer is truncated" " tc" \
  "$(dig +time=2 +tries=1 +ignore +bufsize=512 @$NET.3 big.customer.example TXT | grep 'flags:')"

# the GSLB: one answer per mapped /32, the default otherwise
for row in "198.51.100.1/32 203.0.113.1 nanjing" "198.51.100.2/32 203.0.113.2 suzhou" \
           "198.51.100.3/32 203.0.113.3 wuxi" "198.51.100.9/32 203.0.113.100 unmapped-/32" \
           "127.0.1.10/32 203.0.113.100 client-address"; do
  set -- $row
  assert_eq "GSLB: video.cdn.test with ECS $1 ($3)" "$2" "$(a @$NET.4 video.cdn.test +subnet=$1)"
  assert_eq "GSLB: static.cdn.test with ECS $1 ($3)" "$2" "$(a @$NET.4 static.cdn.test +subnet=$1)"
done
assert_eq "GSLB: no ECS gets the default" "203.0.113.100" "$(a @$NET.4 video.cdn.test)"
assert_contains "GSLB: echoes ECS with scope /32 for a mapped /32" "CLIENT-SUBNET: 198.51.100.2/32/32" \
  "$(dig +time=2 +tries=1 @$NET.4 video.cdn.test +subnet=198.51.100.2/32)"

# the GSLB's query counter and query log
before=$(gslb_query_count)
dig +time=2 +tries=1 @$NET.4 static.cdn.test +subnet=198.51.100.3/32 >/dev/null
dig +time=2 +tries=1 @$NET.4 static.cdn.test >/dev/null
assert_eq "GSLB: query count moves by 2 after 2 queries" "$((before + 2))" "$(gslb_query_count)"
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  gslb_flush
  q=$(gslb_queries)
  mark=$(printf '%s\n' "$q" | wc -l)
  assert_contains "GSLB log: has the ECS query" "static.cdn.test. A 198.51.100.3/32" "$q"
  assert_contains "GSLB log: has the query without ECS" "static.cdn.test. A -" "$q"
  assert_contains "GSLB log: has the client-address ECS sent above" "video.cdn.test. A 127.0.1.10/32" "$q"
  assert_eq "GSLB log: one line per query sent (14 above)" "14" \
    "$(printf '%s\n' "$q" | grep -c 'cdn\.test\. A ')"
  assert_eq "GSLB: count carried over the restart of gslb_flush" "$((before + 2))" "$(gslb_query_count)"
  assert_eq "GSLB: answers after gslb_flush" "203.0.113.1" "$(a @$NET.4 video.cdn.test +subnet=198.51.100.1/32)"
else
  log "knot-module-dnstap missing: GSLB query-log checks not made"
fi

# unbound: a recursor with subnetcache that forwards the client's ECS
assert_eq "unbound: www.customer.example" "203.0.113.10" "$(a @$NET.5 www.customer.example)"
for row in "198.51.100.1/32 203.0.113.1" "198.51.100.2/32 203.0.113.2" "198.51.100.3/32 203.0.113.3"; do
  set -- $row
  assert_eq "unbound: video.customer.example with ECS $1" "$2" "$(a @$NET.5 video.customer.example +subnet=$1)"
done
assert_eq "unbound: again with ECS 198.51.100.2/32 (from its subnet cache)" "203.0.113.2" \
  "$(a @$NET.5 video.customer.example +subnet=198.51.100.2/32)"
assert_eq "unbound: a test. name asked directly (local-zone nodefault)" "203.0.113.100" "$(a @$NET.5 static.cdn.test)"
assert_contains "unbound: follows the CNAME chain" "video.cdn.test." \
  "$(dig +time=2 +tries=1 @$NET.5 video.customer.example +subnet=198.51.100.2/32 +noall +answer)"
dig +time=1 +tries=1 @$NET.99 www.dead.example A >/dev/null 2>&1
assert_eq "nothing answers on $NET.99 (dead.example.'s server)" "9" "$?"
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  gslb_flush
  seen=$(gslb_queries | tail -n +$((mark + 1)) | awk '$1 == "video.cdn.test." && $3 ~ /^198\.51\.100\./ {print $3}' | sort -u | tr '\n' ' ')
  assert_eq "GSLB log: unbound sent each mapped /32" "198.51.100.1/32 198.51.100.2/32 198.51.100.3/32 " "$seen"
  knot_flush root tld customer
  # client-subnet-always-forward: yes passes a client's ECS to every server,
  # root included: a positive control that the root and TLD logs catch ECS
  assert_contains "root log shows the ECS unbound sent it" " 198.51.100." "$(knot_queries root)"
  assert_contains "TLD log shows the ECS unbound sent it" " 198.51.100." "$(knot_queries tld)"
  assert_contains "the customer server logged unbound's query" "video.customer.example. A" "$(knot_queries customer)"
fi
it_done
