#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Clear outcomes on the EDNS path: ECS only to the zones of a flagged name's
# chain (never root/TLD for a name that does not exist), one GSLB query per
# city per name and one cut lookup per zone, failures remembered with an
# Extended DNS Error (RFC 9520, RFC 8914), ANY (RFC 8482), RD=0 from the
# cache only, and a reload that renumbers partitions keeps every city's answer.
. "$(dirname "$0")/lib.sh"
harness_init integrity
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add cdn.test --subtree
pdctl domain add www.nowhere.test           # a zone that does not exist
pdctl domain add www.dead.example           # a zone whose servers never answer
pdctl domain add edge.customer.example --subtree # a subtree that is not a zone apex
partdns_start "$PD_CONF"
pd_stat() { "$PARTDNSCTL_BIN" -c "$PD_CONF" stats | awk -v k="$1" '$1 == k {print $2}'; }

# --- one GSLB query per city per name; one cut lookup for the zone
[ "$IT_HAVE_DNSTAP" = 1 ] && gslb_flush
for name in video.cdn.test static.cdn.test; do
  for row in "127.0.1.10 203.0.113.1" "127.0.2.10 203.0.113.2" "127.0.3.10 203.0.113.3"; do
    set -- $row
    assert_eq "$name from $1" "$2" "$(dig_a "$1" "$name")"
    assert_eq "$name again from $1 (a hit)" "$2" "$(dig_a "$1" "$name")"
  done
done
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  gslb_flush
  q=$(gslb_queries)
  assert_eq "the GSLB got one ECS query per city per name" 6 \
    "$(printf '%s\n' "$q" | awk '$2 == "A" && $3 != "-"' | wc -l)"
  assert_eq "... each city's mapped /32 for each name, once" \
    "$(printf '%s\n' static.cdn.test video.cdn.test | while read -r n; do for m in 1 2 3; do echo "$n. A 198.51.100.$m/32"; done; done | sort)" \
    "$(printf '%s\n' "$q" | awk '$2 == "A" && $3 != "-" {print $1, $2, $3}' | sort)"
  # the cut of a --subtree rule that is its zone's apex: one NS query, no
  # SOA walk (a qname-minimisation step, the SOA, then the NS)
  assert_eq "the GSLB's only query without ECS: the NS of cdn.test (its cut)" "cdn.test. NS" \
    "$(printf '%s\n' "$q" | awk '$3 == "-" {print $1, $2}')"
else
  log "no dnstap module: GSLB query checks skipped"
fi

# --- a --subtree rule whose name has no NS (not its zone's apex): its NS is
# asked first, then the cut is found from the SOA of the name as before
out=$(pd_dig 127.0.2.10 a.edge.customer.example A)
assert_contains "a.edge.customer.example (subtree without a cut of its own): resolved" \
  "a.edge.customer.example. 300 IN A 203.0.113.12" "$(printf '%s\n' "$out" | tr -s ' \t' ' ')"
assert_contains "... by the EDNS pool, with suzhou's mapped address" "fetched with ECS 198.51.100.2/32" \
  "$(pdctl cache lookup a.edge.customer.example --partition suzhou)"

# --- a flagged name under a zone that does not exist: NXDOMAIN, no ECS above it
[ "$IT_HAVE_DNSTAP" = 1 ] && knot_flush root tld
root0=$( [ "$IT_HAVE_DNSTAP" = 1 ] && knot_mark root || echo 0)
tld0=$( [ "$IT_HAVE_DNSTAP" = 1 ] && knot_mark tld || echo 0)
for c in 127.0.1.10 127.0.2.10; do
  assert_eq "www.nowhere.test from $c: NXDOMAIN" "NXDOMAIN" "$(dig_rcode "$c" www.nowhere.test)"
done
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  knot_flush root tld
  assert_eq "the root got no ECS" "" "$(knot_since root "$root0" | awk '$3 != "-"')"
  assert_eq "the TLD got no ECS" "" "$(knot_since tld "$tld0" | awk '$3 != "-"')"
fi

# --- a dead zone: SERVFAIL with an EDE, then remembered (no new upstream query)
out=$(pd_dig 127.0.1.10 www.dead.example A)
assert_contains "dead zone: SERVFAIL" "status: SERVFAIL" "$out"
assert_contains "dead zone: an Extended DNS Error says why" "EDE: 22" "$out"
up0=$(pd_stat edns.upstream_queries)
t0=$(date +%s%N)
out=$(pd_dig 127.0.1.11 www.dead.example A)
t1=$(date +%s%N)
assert_contains "dead zone again within cache.failure_ttl: SERVFAIL" "status: SERVFAIL" "$out"
assert_contains "... with the EDE" "EDE: 22" "$out"
assert_lt "... answered from the cache at once (ms)" 1000 $(((t1 - t0) / 1000000))
assert_eq "... without asking upstream again" "$up0" "$(pd_stat edns.upstream_queries)"
out=$(pd_dig 127.0.1.12 www.dead.example A +noedns)
assert_not_contains "no EDE to a client without EDNS" "EDE" "$out"

# --- ANY (RFC 8482) and RD=0
out=$(pd_dig 127.0.9.9 www.customer.example ANY)
assert_contains "ANY: NOERROR" "status: NOERROR" "$out"
assert_contains "ANY: one synthesized HINFO" 'HINFO	"RFC8482" ""' "$out"
assert_eq "RD=0, name in cache: answered" "203.0.113.2" "$(dig_a 127.0.2.10 video.cdn.test +norecurse)"
out=$(pd_dig 127.0.9.9 never.customer.example A +norecurse)
assert_contains "RD=0, name not in cache: REFUSED" "status: REFUSED" "$out"
assert_contains "... with EDE 20 (not authoritative)" "EDE: 20" "$out"

# --- a reload that swaps nanjing and suzhou: ids renumbered, answers follow the cities
sed -i -e '/name: nanjing/{h;d}' -e '/name: suzhou/{p;x}' "$PD_CONF"
assert_match "the reload config lists suzhou before nanjing" 'suzhou.*nanjing' \
  "$(grep -o 'name: [a-z]*' "$PD_CONF" | tr '\n' ' ')"
pdctl reload >/dev/null
[ "$IT_HAVE_DNSTAP" = 1 ] && gslb_flush
g0=$( [ "$IT_HAVE_DNSTAP" = 1 ] && knot_mark gslb || echo 0)
for row in "127.0.1.10 203.0.113.1" "127.0.2.10 203.0.113.2" "127.0.3.10 203.0.113.3"; do
  set -- $row
  assert_eq "after the swap, video.cdn.test from $1 is still its own city's node" "$2" "$(dig_a "$1" video.cdn.test)"
done
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  gslb_flush
  assert_eq "wuxi kept its id and identity: its entry survived the reload" "" \
    "$(knot_since gslb "$g0" | awk '$3 == "198.51.100.3/32"')"
fi
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
