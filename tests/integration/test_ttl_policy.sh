#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# TTL policy (cache.min_ttl, cache.max_ttl, cache.max_negative_ttl) as clients see it, and resolver.threads contexts.
. "$(dirname "$0")/lib.sh"
harness_init ttl_policy
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
# customer.example.: records TTL 300, SOA MINIMUM 60. Raise to 400 at least,
# cap at 1000, negative answers at 20; three normal-pool threads (contexts).
sed -i 's/^resolver:$/resolver:\n  threads: 3/' "$PD_CONF"
cat >> "$PD_CONF" <<'YAML'
cache:
  min_ttl: 400
  max_ttl: 1000
  max_negative_ttl: 20
YAML
out=$("$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1); rc=$?
assert_eq "partdns -t accepts the config" "0" "$rc"
partdns_start "$PD_CONF"

ttl=$(dig_ttl 127.0.1.10 www.customer.example A)
assert_eq "a 300 s record raised to cache.min_ttl" "400" "$ttl"
ttl=$(dig_ttl 127.0.1.10 www.customer.example AAAA)
assert_eq "... every type" "400" "$ttl"

out=$(pd_dig 127.0.1.10 nope.customer.example A)
assert_contains "NXDOMAIN" "status: NXDOMAIN" "$out"
neg=$(printf '%s\n' "$out" | awk '/AUTHORITY SECTION/ {a = 1; next} a && $4 == "SOA" {print $2; exit}')
assert_le "negative lifetime capped by cache.max_negative_ttl (SOA MINIMUM is 60)" 20 "${neg:-999}"
assert_lt "... and not zero" "${neg:-0}" 0

# min_ttl does not apply to negative answers (RFC 2308 lifetimes stay short)
out=$(pd_dig 127.0.1.10 www.customer.example TXT)
assert_contains "NODATA" "ANSWER: 0," "$out"
neg=$(printf '%s\n' "$out" | awk '/AUTHORITY SECTION/ {a = 1; next} a && $4 == "SOA" {print $2; exit}')
assert_le "NODATA lifetime capped too" 20 "${neg:-999}"

# every name resolves whichever of the three contexts its hash picks
fails=0
for i in $(seq 1 30); do
  r=$(dig_rcode 127.0.2.10 "n$i.customer.example" A)
  [ "$r" = NXDOMAIN ] || fails=$((fails + 1))
done
assert_eq "30 names over 3 normal-pool contexts: all answered" "0" "$fails"
assert_eq "www again, from the cache" "203.0.113.10" "$(dig_a 127.0.3.10 www.customer.example)"

partdns_stop

# cache.max_ttl reaches libunbound's own cache: once our entry is gone, the
# authority is asked again (libunbound's copy would keep the record's 300 s)
pd_write_conf "$IT_TMP/maxttl.yaml"
printf 'cache:\n  max_ttl: 2\n  prefetch: false\n' >> "$PD_CONF"
partdns_start "$PD_CONF"
assert_eq "max_ttl 2: www resolves" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
c0=$(knot_query_count customer)
sleep 3
assert_eq "... and again after 3 s" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
c1=$(knot_query_count customer)
assert_lt "... asked from the customer's server again, not from libunbound's cache ($c0 -> $c1)" "$c1" "$c0"
partdns_stop
it_done
