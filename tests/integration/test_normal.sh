#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Normal resolution: A/AAAA/TXT, NXDOMAIN + negative caching, NODATA, SERVFAIL, REFUSED by ACL and by unmatched: refuse.
. "$(dirname "$0")/lib.sh"
harness_init normal
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
out=$("$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1); rc=$?
assert_eq "partdns -t accepts the harness config" "0" "$rc"
partdns_start "$PD_CONF"

# rows: client, name, type, expected answer data (sorted, space separated)
while read -r client name type want; do
  [ -n "$client" ] || continue
  [[ $client != *:* ]] || [ "$IT_HAVE_IPV6" = 1 ] || continue
  want=${want//@NET@/$NET}
  got=$(pd_dig "$client" "$name" "$type" +noall +answer | awk -v t="$type" '$4 == t {$1=$2=$3=$4=""; sub(/^ +/, ""); print}' | sort | tr '\n' ' ')
  assert_eq "$name $type from $client" "$want " "$got"
done <<'ROWS'
127.0.1.10 www.customer.example A 203.0.113.10
127.0.2.10 www.customer.example AAAA 2001:db8::10
127.0.9.9 www.customer.example A 203.0.113.10
127.0.3.10 plain.customer.example A 203.0.113.11
127.0.1.10 txt.customer.example TXT "partdns integration test"
127.0.1.10 video.customer.example CNAME video.cdn.test.
127.0.2.10 ns.cdn.test A @NET@.4
::1 www.customer.example AAAA 2001:db8::10
ROWS

# NXDOMAIN with the SOA in the authority section, then from the cache
c0=$(knot_query_count customer)
out=$(pd_dig 127.0.1.10 nope.customer.example A)
assert_contains "nope.customer.example: NXDOMAIN" "status: NXDOMAIN" "$out"
soa=$(printf '%s\n' "$out" | awk '/AUTHORITY SECTION/ {a = 1; next} a && $4 == "SOA" {print; exit}')
assert_contains "NXDOMAIN carries customer.example's SOA in authority" "customer.example." "$soa"
ttl1=$(printf '%s\n' "$soa" | awk '{print $2}')
assert_le "negative TTL <= SOA minimum (60)" 60 "${ttl1:-999}"
before=$(knot_query_count customer)
assert_lt "the first NXDOMAIN reached the customer server (count $c0 -> $before)" "$before" "$c0"
sleep 1.2
out=$(pd_dig 127.0.2.10 nope.customer.example A)
assert_contains "nope.customer.example again (other client): NXDOMAIN" "status: NXDOMAIN" "$out"
ttl2=$(printf '%s\n' "$out" | awk '/AUTHORITY SECTION/ {a = 1; next} a && $4 == "SOA" {print $2; exit}')
assert_eq "negative answer came from the cache: customer server not asked again" "$before" "$(knot_query_count customer)"
assert_lt "negative TTL counts down ($ttl1 -> $ttl2)" "${ttl1:-0}" "${ttl2:-999}"
# NXDOMAIN below a name that exists (RFC 8020 is allowed, the rcode is what matters)
assert_eq "a.b.nope.customer.example: NXDOMAIN" "NXDOMAIN" "$(dig_rcode 127.0.1.10 a.b.nope.customer.example A)"

# NODATA: the name exists, the type does not
out=$(pd_dig 127.0.1.10 www.customer.example TXT)
assert_contains "www.customer.example TXT: NOERROR" "status: NOERROR" "$out"
assert_contains "NODATA: empty answer" "ANSWER: 0," "$out"
assert_contains "NODATA: SOA in authority" "SOA" "$(printf '%s\n' "$out" | sed -n '/AUTHORITY SECTION/,$p')"

# SERVFAIL: dead.example.'s only server does not answer
t0=$(date +%s%N)
rc=$(PD_DIG_TIME=10 dig_rcode 127.0.1.10 www.dead.example A)
ms=$((($(date +%s%N) - t0) / 1000000))
assert_eq "www.dead.example: SERVFAIL" "SERVFAIL" "$rc"
assert_lt "SERVFAIL within 10 s (took $ms ms)" 10000 "$ms"
# the failure must not stop other names
assert_eq "www.customer.example still resolves after the failure" "203.0.113.10" "$(dig_a 127.0.3.10 www.customer.example)"
assert_eq "a query with no question type known to us (TYPE65280) is answered" "NOERROR" \
  "$(dig_rcode 127.0.1.10 www.customer.example TYPE65280)"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
partdns_stop

# ACL: allow covers 127.0.0.0-127.0.3.255 only
PD_ALLOW='[ 127.0.0.0/22, "::1/128" ]' pd_write_conf "$IT_TMP/acl.yaml"
partdns_start "$PD_CONF"
assert_eq "client 127.0.4.1 outside allow: REFUSED" "REFUSED" "$(dig_rcode 127.0.4.1 www.customer.example A)"
assert_eq "client 127.0.4.1 outside allow: REFUSED over TCP too" "REFUSED" "$(dig_rcode 127.0.4.1 www.customer.example A +tcp)"
assert_eq "client 127.0.3.10 inside allow: answered" "203.0.113.10" "$(dig_a 127.0.3.10 www.customer.example)"
partdns_stop

# unmatched: refuse
PD_UNMATCHED=refuse pd_write_conf "$IT_TMP/refuse.yaml"
partdns_start "$PD_CONF"
assert_eq "unmatched client 127.0.9.9 with unmatched: refuse: REFUSED" "REFUSED" "$(dig_rcode 127.0.9.9 www.customer.example A)"
assert_eq "nanjing client still answered" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
partdns_stop
assert_eq "partdns exits 0 on SIGTERM" "0" "$PD_EXIT_STATUS"
it_done
