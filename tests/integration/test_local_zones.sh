#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# local_zones, global and per partition: Unbound's five behaviours, a city's
# zone winning over the global one, local data before flagged domains, a
# reload that changes the data, and a bad record refused with its position
# (the running data kept).
. "$(dirname "$0")/lib.sh"
harness_init local_zones
harness_start_all
pd_require_bins

write_conf() { # write_conf FILE GLOBAL-WWW-ADDRESS
  pd_write_conf "$1"
  # nanjing has its own lan.example.; wuxi answers video.customer.example itself
  sed -i -e 's|^    - { name: nanjing, \(.*\) }$|    - { name: nanjing, \1, local_zones: [ { name: lan.example., type: static, data: [ "www A 192.0.2.20" ] } ] }|' \
    -e 's|^    - { name: wuxi,    \(.*\) }$|    - { name: wuxi, \1, local_zones: [ { name: video.customer.example., type: static, data: [ "@ A 192.0.2.50" ] } ] }|' \
    "$1"
  cat >> "$1" <<EOF
local_zones:
  - name: lan.example.
    type: static
    data:
      - "www A $2"
      - 'www TXT "global"'
      - "@ SOA ns.lan.example. host.lan.example. 1 3600 600 86400 60"
      - "a.b 300 A 192.0.2.11"
  - { name: www.customer.example., type: always_nxdomain }
  - { name: customer.example., type: transparent, data: [ "plain A 192.0.2.30" ] }
  - { name: walled.example., type: redirect, data: [ "@ 120 A 192.0.2.40" ] }
  - { name: refused.example., type: refuse, data: [ "open A 192.0.2.60" ] }
EOF
}
write_conf "$IT_TMP/partdns.yaml" 192.0.2.10
grep -q 'local_zones: \[ { name: lan.example.' "$PD_CONF" || die "could not give nanjing its local zone"
grep -q 'name: video.customer.example., type: static' "$PD_CONF" || die "could not give wuxi its local zone"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"

# static, global and per city
assert_eq "static: suzhou gets the global data" "192.0.2.10" "$(dig_a 127.0.2.10 www.lan.example)"
assert_eq "static: nanjing's own zone wins" "192.0.2.20" "$(dig_a 127.0.1.10 www.lan.example)"
assert_eq "static: a client in no partition gets the global data" "192.0.2.10" "$(dig_a 127.0.9.9 www.lan.example)"
assert_eq "static: nanjing's zone decides for it: no TXT there" "NOERROR" "$(dig_rcode 127.0.1.10 www.lan.example TXT)"
assert_not_contains "... and no global TXT leaks into it" "global" "$(pd_dig 127.0.1.10 www.lan.example TXT +short)"
assert_contains "static: the global TXT for suzhou" '"global"' "$(pd_dig 127.0.2.10 www.lan.example TXT +short)"
out=$(pd_dig 127.0.2.10 nx.lan.example A)
assert_contains "static: a name without data is NXDOMAIN" "status: NXDOMAIN" "$out"
assert_match "... with the zone's SOA" '^lan\.example\.[[:space:]].*SOA' "$(grep -v '^;' <<<"$out")"
assert_eq "static: a name without the type is NODATA" "NOERROR" "$(dig_rcode 127.0.2.10 www.lan.example AAAA)"
assert_eq "static: an empty non-terminal is NODATA, not NXDOMAIN" "NOERROR" "$(dig_rcode 127.0.2.10 b.lan.example A)"
assert_eq "static: data two labels down" "192.0.2.11" "$(dig_a 127.0.2.10 a.b.lan.example)"
assert_eq "static: the record's own TTL" "300" "$(dig_ttl 127.0.2.10 a.b.lan.example A)"
assert_eq "static: a name answered in the client's case" "WwW.LaN.ExAmPlE." \
  "$(pd_dig 127.0.2.10 WwW.LaN.ExAmPlE A +noall +answer | awk '{print $1}')"

# always_nxdomain over a name that exists; transparent: local data, else resolved
assert_eq "always_nxdomain hides a real name" "NXDOMAIN" "$(dig_rcode 127.0.2.10 www.customer.example)"
assert_eq "transparent: local data" "192.0.2.30" "$(dig_a 127.0.2.10 plain.customer.example)"
assert_eq "transparent: the rest resolves" "NOERROR" "$(dig_rcode 127.0.2.10 txt.customer.example TXT)"
assert_contains "transparent: ... with the authority's data" "partdns integration test" \
  "$(pd_dig 127.0.2.10 txt.customer.example TXT +short)"

# redirect: the apex's data for every name, owned by the name asked
out=$(pd_dig 127.0.2.10 any.thing.walled.example A +noall +answer)
assert_match "redirect: any name gets the apex's A, under its own name" \
  '^any\.thing\.walled\.example\.[[:space:]]+120[[:space:]]+IN[[:space:]]+A[[:space:]]+192\.0\.2\.40$' "$out"
# refuse: data where there is some, REFUSED elsewhere
assert_eq "refuse: local data is served" "192.0.2.60" "$(dig_a 127.0.2.10 open.refused.example)"
assert_eq "refuse: other names REFUSED" "REFUSED" "$(dig_rcode 127.0.2.10 x.refused.example)"

# precedence: local data before a flagged domain, for the city that has it
assert_eq "wuxi's local zone over the flagged name" "192.0.2.50" "$(dig_a 127.0.3.10 video.customer.example)"
assert_eq "nanjing: the flagged name through the GSLB" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
k0=$(knot_query_count customer)
g0=$(gslb_query_count)
for c in 127.0.1.12 127.0.2.12 127.0.3.12; do
  dig_a "$c" plain.customer.example >/dev/null
  dig_rcode "$c" www.customer.example >/dev/null
  dig_rcode "$c" new.walled.example >/dev/null
done
dig_a 127.0.3.13 video.customer.example >/dev/null
assert_eq "local answers never reach the customer's server" "$k0" "$(knot_query_count customer)"
assert_eq "... nor the GSLB (wuxi's local video)" "$g0" "$(gslb_query_count)"
assert_match "stats count local answers" '^local_answers [1-9][0-9]*$' \
  "$("$PARTDNSCTL_BIN" -c "$PD_CONF" stats | grep '^local_answers ')"

# a reload changes the data; a bad record is refused with file:line:column and key
write_conf "$IT_TMP/partdns.yaml" 192.0.2.99
assert_contains "reload" "reloaded" "$(pdctl reload 2>&1)"
assert_eq "after the reload: the new global data" "192.0.2.99" "$(dig_a 127.0.2.10 www.lan.example)"
sed -i 's|      - "www A 192.0.2.99"|      - "www A 192.0.2.999"|' "$PD_CONF"
out=$("$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1)
assert_match "partdns -t: a bad record is an error with file:line:column and key" \
  "partdns.yaml:[0-9]+:[0-9]+: error: not a record in zone-file syntax.*key 'local_zones\[0\]\.data\[0\]'" "$out"
out=$("$PARTDNSCTL_BIN" -c "$PD_CONF" reload 2>&1)
assert_contains "a reload with the bad record fails" "error" "$out"
assert_eq "... and the running data stays" "192.0.2.99" "$(dig_a 127.0.2.10 www.lan.example)"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
