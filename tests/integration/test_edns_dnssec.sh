#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resolver.trust_anchor with EDNS domains: the EDNS pool validates what it
# fetches per partition.  Secure answers (a CNAME from the signed
# customer.example. into the signed GSLB, whose per-subnet answers mod-geoip
# signs online) get AD for clients that set DO or AD, per partition and from
# the cache; insecure ones (insecure.example.) none; bogus ones SERVFAIL with
# the RFC 8914 EDE that says why, unless the client set CD; a signed NXDOMAIN
# keeps its proof and gets AD.  The zones: lib.sh (IT_SIGN_CHAIN=1) and
# zones/*.zone.in.  First a reference validator (unbound) checks that the
# harness's chain is what this test says it is.
. "$(dirname "$0")/lib.sh"
harness_init edns_dnssec
IT_SIGN_CHAIN=1
harness_start_all
pd_require_bins
harness_root_key "$IT_TMP/root.key"

# OUT, STATUS, FLAGS (the ";; flags:" line) and ADDRS (the answer's A
# records, sorted, space separated) of one dig.
OUT="" STATUS="" FLAGS="" ADDRS=""
parse() {
  OUT=$1
  STATUS=$(sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$OUT" | head -n 1)
  FLAGS=$(grep '^;; flags:' <<<"$OUT" | head -n 1)
  ADDRS=$(awk '$4 == "A" && $1 !~ /^;/ {print $5}' <<<"$OUT" | sort | tr '\n' ' ')
  ADDRS=${ADDRS% }
}
# q CLIENT NAME [DIG-ARGS...]: ask partdns for NAME A.
q() { local c=$1 n=$2; shift 2; parse "$(pd_dig "$c" "$n" A "$@")"; }
# ref NAME [DIG-ARGS...]: ask the reference validator.
ref() { local n=$1; shift; parse "$(dig +time=3 +tries=1 @"$NET.5" "$n" A "$@" 2>&1)"; }
# the AD flag: FLAGS is ";; flags: qr rd ra ad; QUERY: ..."
assert_ad() { assert_match "$1" '^;; flags:[a-z ]* ad[ ;]' "$FLAGS"; }
assert_no_ad() {
  if [ -n "$FLAGS" ] && ! grep -qE '^;; flags:[a-z ]* ad[ ;]' <<<"$FLAGS"; then ok "$1"; else
    fail "$1" "expected flags without ad" "seen: ${FLAGS:-no response}" "$(sed 's/^/  /' <<<"$OUT")"
  fi
}
# assert_ede DESC CODE: dig prints "; EDE: 6 (DNSSEC Bogus): (text)"
assert_ede() { assert_match "$1" "^; EDE: $2( |\$)" "$OUT"; }

# ---- the harness itself: unbound with the same anchor sees the chain as the
# zones' comments say (if this fails, fix lib.sh, not partdns)
IT_UNBOUND_TA=$IT_TMP/root.key harness_start_unbound
ref www.customer.example +dnssec
assert_eq "harness: www.customer.example resolves (unbound)" "NOERROR 203.0.113.10" "$STATUS $ADDRS"
assert_ad "harness: www.customer.example is secure (unbound, AD)"
ref video.customer.example +dnssec +subnet=198.51.100.2/32
assert_eq "harness: the GSLB's per-subnet answer through the CNAME (unbound)" "NOERROR 203.0.113.2" "$STATUS $ADDRS"
assert_ad "harness: mod-geoip's online signature validates (unbound, AD)"
ref nope.customer.example +dnssec
assert_eq "harness: nope.customer.example is NXDOMAIN (unbound)" "NXDOMAIN" "$STATUS"
assert_ad "harness: ... and its NSEC proof validates (unbound, AD)"
ref www.insecure.example +dnssec
assert_eq "harness: www.insecure.example resolves (unbound)" "NOERROR 203.0.113.70" "$STATUS $ADDRS"
assert_no_ad "harness: www.insecure.example is insecure (unbound, no AD)"
ref ok.forged.example +dnssec
assert_eq "harness: ok.forged.example, pre-signed, resolves (unbound)" "NOERROR 192.0.2.2" "$STATUS $ADDRS"
assert_ad "harness: ok.forged.example validates: the zone's keys and DS are good (unbound, AD)"
for row in "www.forged.example 6" "nosig.forged.example 10" "wrongkey.forged.example 9" \
           "www.expired.example 7" "notyet.expired.example 8" "www.stale.example 7"; do
  set -- $row
  ref "$1" +dnssec
  assert_eq "harness: $1 is bogus (unbound)" "SERVFAIL" "$STATUS"
  assert_ede "harness: $1 gets EDE $2 from unbound" "$2"
done
ref www.forged.example +dnssec +cd
assert_eq "harness: www.forged.example with CD=1 (unbound)" "NOERROR 192.0.2.1" "$STATUS $ADDRS"
it_stop_pid "${IT_PIDS[unbound]}" 3
unset "IT_PIDS[unbound]"

# ---- partdns
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "s|^resolver:|resolver:\n  trust_anchor: $IT_TMP/root.key|" "$PD_CONF"
grep -q "trust_anchor: $IT_TMP/root.key" "$PD_CONF" || die "could not set resolver.trust_anchor"
for name in video.customer.example www.customer.example nope.customer.example www.insecure.example \
            www.forged.example nosig.forged.example wrongkey.forged.example \
            www.expired.example notyet.expired.example www.stale.example www.nosuch.example; do
  pdctl domain add "$name" >/dev/null
done
partdns_start "$PD_CONF"

# secure: every partition (and the unmatched "common" one) gets its own
# GSLB node, validated
c0=$(gslb_query_count)
for row in "127.0.1.10 nanjing 203.0.113.1" "127.0.2.10 suzhou 203.0.113.2" \
           "127.0.3.10 wuxi 203.0.113.3" "127.0.9.9 none(common) 203.0.113.100"; do
  set -- $row
  q "$1" video.customer.example +dnssec
  assert_eq "video.customer.example from $1 ($2), DO: its city's node" "NOERROR $3" "$STATUS $ADDRS"
  assert_contains "video.customer.example from $1 ($2): the CNAME" "video.cdn.test." \
    "$(awk '$4 == "CNAME" {print $5}' <<<"$OUT")"
  assert_ad "video.customer.example from $1 ($2), DO: secure (AD)"
done
c1=$(gslb_query_count)
assert_lt "the misses reached the GSLB (query count $c0 -> $c1: the counter works)" "$c1" "$c0"

# the cache: another nanjing client, neither the GSLB nor the customer's
# server is asked again, and the entry is still secure
g0=$(gslb_query_count)
k0=$(knot_query_count customer)
q 127.0.1.11 video.customer.example +dnssec
assert_eq "cache hit from 127.0.1.11 (nanjing), DO: nanjing's node" "NOERROR 203.0.113.1" "$STATUS $ADDRS"
assert_ad "cache hit from 127.0.1.11 (nanjing), DO: still AD"
assert_eq "the cache hit did not reach the GSLB (query count)" "$g0" "$(gslb_query_count)"
assert_eq "the cache hit did not reach the customer's server (query count)" "$k0" "$(knot_query_count customer)"

# AD only for clients that ask for it (RFC 6840 5.7, 5.8)
q 127.0.2.11 video.customer.example +nodnssec +adflag
assert_eq "suzhou, AD=1 without DO: its node" "NOERROR 203.0.113.2" "$STATUS $ADDRS"
assert_ad "suzhou, AD=1 without DO: AD"
q 127.0.3.11 video.customer.example +nodnssec +noadflag
assert_eq "wuxi, neither DO nor AD: its node" "NOERROR 203.0.113.3" "$STATUS $ADDRS"
assert_no_ad "wuxi, neither DO nor AD: no AD"
assert_eq "these were cache hits too (GSLB query count)" "$g0" "$(gslb_query_count)"

# a name directly in the signed zone, and a signed NXDOMAIN
q 127.0.1.10 www.customer.example +dnssec
assert_eq "www.customer.example (flagged), DO" "NOERROR 203.0.113.10" "$STATUS $ADDRS"
assert_ad "www.customer.example (flagged), DO: secure (AD)"
q 127.0.2.10 nope.customer.example +dnssec
assert_eq "nope.customer.example (flagged) in a signed zone: NXDOMAIN" "NXDOMAIN" "$STATUS"
assert_ad "nope.customer.example: the NSEC proof validates (AD)"

# a flagged name whose zone does not exist: the signed TLD's denial, which
# libunbound validated while looking for the zone cut (no ECS query at all)
q 127.0.3.10 www.nosuch.example +dnssec
assert_eq "www.nosuch.example (flagged, no such zone): NXDOMAIN" "NXDOMAIN" "$STATUS"
assert_ad "www.nosuch.example: example.'s denial is validated (AD)"

# insecure: a signed parent proves there is no DS
q 127.0.3.10 www.insecure.example +dnssec
assert_eq "www.insecure.example (flagged), below an insecure delegation" "NOERROR 203.0.113.70" "$STATUS $ADDRS"
assert_no_ad "www.insecure.example: insecure, no AD"

# bogus: SERVFAIL and why, from every partition
for c in 127.0.1.10 127.0.2.10 127.0.3.10 127.0.9.9; do
  q "$c" www.forged.example +dnssec
  assert_eq "www.forged.example (tampered RRSIG) from $c: SERVFAIL" "SERVFAIL" "$STATUS"
  assert_ede "www.forged.example from $c: EDE 6 (DNSSEC Bogus)" 6
  assert_eq "www.forged.example from $c: no data" "" "$ADDRS"
done
for row in "nosig.forged.example 10 RRSIGs Missing" "wrongkey.forged.example 9 DNSKEY Missing" \
           "www.expired.example 7 Signature Expired" "notyet.expired.example 8 Signature Not Yet Valid"; do
  set -- $row
  name=$1 code=$2
  shift 2
  q 127.0.1.10 "$name" +dnssec
  assert_eq "$name: SERVFAIL" "SERVFAIL" "$STATUS"
  assert_ede "$name: EDE $code ($*)" "$code"
done
# the zone's own SOA and NS expired: the zone cut does not validate, and the
# client is told so (not "no reachable authority")
q 127.0.3.10 www.stale.example +dnssec
assert_eq "www.stale.example (every signature expired): SERVFAIL" "SERVFAIL" "$STATUS"
assert_ede "www.stale.example: EDE 7 (Signature Expired) from the zone-cut lookup" 7
q 127.0.2.10 www.expired.example +nodnssec
assert_eq "www.expired.example without DO: SERVFAIL too" "SERVFAIL" "$STATUS"
assert_ede "www.expired.example without DO (EDNS still on): EDE 7" 7
q 127.0.1.10 www.forged.example +noedns
assert_eq "www.forged.example without EDNS: SERVFAIL" "SERVFAIL" "$STATUS"
assert_not_contains "www.forged.example without EDNS: no EDE (no OPT to carry it)" "EDE:" "$OUT"

# CD=1: the data, unvalidated, without AD; validating clients still get SERVFAIL
q 127.0.1.10 www.forged.example +dnssec +cd
assert_eq "www.forged.example with CD=1: the data" "NOERROR 192.0.2.1" "$STATUS $ADDRS"
assert_no_ad "www.forged.example with CD=1: no AD"
q 127.0.1.10 www.forged.example +dnssec
assert_eq "www.forged.example without CD after the CD=1 answer: still SERVFAIL" "SERVFAIL" "$STATUS"
assert_ede "... with EDE 6" 6

# the secure entry is still there and still secure
g0=$(gslb_query_count)
q 127.0.3.12 video.customer.example +dnssec
assert_eq "wuxi again: its node" "NOERROR 203.0.113.3" "$STATUS $ADDRS"
assert_ad "wuxi again: AD"
assert_eq "wuxi again: a cache hit (GSLB query count)" "$g0" "$(gslb_query_count)"
assert_not_contains "no response to a stub carries ECS" "CLIENT-SUBNET" "$OUT"

partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"

# resolver.domain_insecure: a zone the operator vouches for is answered
# without validation and without AD (Unbound's domain-insecure)
partdns_stop
sed -i "s|^resolver:|resolver:\n  domain_insecure: [ forged.example. ]|" "$PD_CONF"
partdns_start "$PD_CONF"
q 127.0.1.10 www.forged.example +dnssec
assert_eq "domain_insecure: the forged zone's data is served" "NOERROR 192.0.2.1" "$STATUS $ADDRS"
assert_no_ad "domain_insecure: ... without AD"
q 127.0.1.10 www.expired.example +dnssec
assert_eq "domain_insecure names one zone: others are still validated" "SERVFAIL" "$STATUS"
it_done
