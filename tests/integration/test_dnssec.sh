#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resolver.trust_anchor: with the signed root's key, answers from the root
# validate (AD) and insecure delegations still resolve; two anchor files (a
# list, or libunbound's trust-anchor-file as a list in resolver.options) both
# take effect; resolver.options lists reach libunbound; with a wrong key
# nothing validates and resolution fails with SERVFAIL.
. "$(dirname "$0")/lib.sh"
harness_init dnssec
IT_SIGN_ROOT=1
harness_start_all
pd_require_bins

# The root's DNSKEYs, as knotd generated them, are the trust anchor.
for ((i = 0; i < 50; i++)); do
  dig +time=1 +tries=1 +norecurse @"$NET.1" . DNSKEY +noall +answer > "$IT_TMP/root.key" 2>/dev/null
  grep -q DNSKEY "$IT_TMP/root.key" && break
  sleep 0.1
done
grep -q DNSKEY "$IT_TMP/root.key" || die "the signed root published no DNSKEY"

pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "s|^resolver:|resolver:\n  trust_anchor: $IT_TMP/root.key|" "$PD_CONF"
partdns_start "$PD_CONF"
out=$(pd_dig 127.0.9.9 . SOA +dnssec)
assert_contains "root SOA resolves" "status: NOERROR" "$out"
assert_contains "root SOA is validated (AD)" " ad" "$(printf '%s\n' "$out" | grep '^;; flags:')"
assert_contains "with DO the RRSIG comes along" "RRSIG" "$out"
out=$(pd_dig 127.0.9.9 . SOA +noadflag)
assert_not_contains "without DO or AD in the query: no AD (RFC 6840 5.8)" " ad" "$(printf '%s\n' "$out" | grep '^;; flags:')"
assert_not_contains "without DO: no RRSIG (RFC 4035 3.2.1)" "RRSIG" "$out"
assert_contains "without DO: the SOA itself" "SOA" "$(printf '%s\n' "$out" | grep -v '^;')"
pd_stat() { "$PARTDNSCTL_BIN" -c "$PD_CONF" stats | awk -v k="$1" '$1 == k {print $2}'; }
e0=$(pd_stat cache.entries)
m0=$(pd_stat misses)
out=$(pd_dig 127.0.9.9 . NS +dnssec)
assert_contains "NS with DO: RRSIG" "RRSIG" "$out"
out=$(pd_dig 127.0.9.9 . NS)
assert_not_contains "NS without DO, from the same entry: no RRSIG" "RRSIG" "$out"
assert_contains "... but the NS RRset" "NS" "$(printf '%s\n' "$out" | grep -v '^;')"
assert_eq "one cache entry serves DO and non-DO clients" $((e0 + 1)) "$(pd_stat cache.entries)"
assert_eq "... and one miss" $((m0 + 1)) "$(pd_stat misses)"
out=$(pd_dig 127.0.9.9 www.customer.example A +dnssec)
assert_contains "insecure delegation still resolves" "203.0.113.10" "$out"
assert_not_contains "insecure answer has no AD" " ad" "$(printf '%s\n' "$out" | grep '^;; flags:')"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"

# RFC 5011: an auto-trust-anchor-file given through resolver.options, with
# three normal-pool contexts: the first keeps the file up to date, the others
# read it as a plain anchor (one writer); every context validates.
cp "$IT_TMP/root.key" "$IT_TMP/auto.key"
pd_write_conf "$IT_TMP/auto.yaml"
sed -i "s|^resolver:|resolver:\n  threads: 3|" "$PD_CONF"
sed -i "s|options: {|options: { \"auto-trust-anchor-file\": \"$IT_TMP/auto.key\",|" "$PD_CONF"
grep -q "auto-trust-anchor-file" "$PD_CONF" || die "could not add auto-trust-anchor-file"
partdns_start "$PD_CONF"
# names are spread over the contexts by hash: thirty names reach all three
bad=0
for i in $(seq 1 30); do
  out=$(pd_dig 127.0.9.9 "nx$i." A +dnssec)
  grep '^;; flags:' <<<"$out" | grep -q " ad" || bad=$((bad + 1))
done
assert_eq "auto-trust-anchor-file over 3 contexts: denials from the signed root validate in every context" 0 "$bad"
for ((i = 0; i < 50; i++)); do grep -q "autotrust" "$IT_TMP/auto.key" && break; sleep 0.1; done
assert_eq "the anchor file is maintained: RFC 5011 state written (by its one owner)" "; autotrust trust anchor file" \
  "$(head -n 1 "$IT_TMP/auto.key")"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"

# Two anchor files, both read: the root's key (the root validates) and a DS
# for customer.example., which is unsigned (its names become bogus instead of
# insecure). The list form, then libunbound's own trust-anchor-file given as a
# list in resolver.options.
echo "customer.example. 3600 IN DS 12345 13 2 $(printf '%064d' 7)" > "$IT_TMP/customer.ds"
for form in "trust_anchor: [ $IT_TMP/root.key, $IT_TMP/customer.ds ]" \
            "options: { \"trust-anchor-file\": [ \"$IT_TMP/root.key\", \"$IT_TMP/customer.ds\" ] }"; do
  pd_write_conf "$IT_TMP/two.yaml"
  case $form in
    trust_anchor:*) sed -i "s|^resolver:|resolver:\n  $form|" "$PD_CONF" ;;
    *) sed -i "s|options: {|options: { \"trust-anchor-file\": [ \"$IT_TMP/root.key\", \"$IT_TMP/customer.ds\" ],|" "$PD_CONF" ;;
  esac
  grep -q "customer.ds" "$PD_CONF" || die "could not write the two anchors ($form)"
  partdns_start "$PD_CONF"
  out=$(pd_dig 127.0.9.9 . SOA +dnssec)
  assert_contains "two anchors (${form%%:*}): the root's validates (AD)" " ad" "$(printf '%s\n' "$out" | grep '^;; flags:')"
  assert_eq "two anchors (${form%%:*}): the second one too: unsigned customer.example. is bogus under it" "SERVFAIL" \
    "$(dig_rcode 127.0.9.9 www.customer.example A)"
  assert_contains "... (CD=1 still gets the data)" "203.0.113.10" "$(pd_dig 127.0.9.9 www.customer.example A +cd)"
  partdns_stop
  assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
done

# resolver.options lists: every local-zone and local-data value reaches libunbound, in order
pd_write_conf "$IT_TMP/lists.yaml"
sed -i 's|"local-zone": "test. transparent"|"local-zone": [ "test. transparent", "lan.example. static" ], "local-data": [ "a.lan.example. A 192.0.2.1", "b.lan.example. A 192.0.2.2" ]|' "$PD_CONF"
grep -q '"local-data": \[' "$PD_CONF" || die "could not write the option lists"
partdns_start "$PD_CONF"
assert_eq "options lists: the first local-data" "192.0.2.1" "$(dig_a 127.0.9.9 a.lan.example)"
assert_eq "options lists: the second local-data" "192.0.2.2" "$(dig_a 127.0.9.9 b.lan.example)"
assert_eq "options lists: the second local-zone (static: NXDOMAIN for the rest)" "NXDOMAIN" "$(dig_rcode 127.0.9.9 c.lan.example)"
assert_eq "options lists: the first local-zone still lets test. through (else built-in NXDOMAIN)" "NOERROR" \
  "$(dig_rcode 127.0.9.9 video.cdn.test)"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"

# A wrong key: change the key material of every DNSKEY.
awk '$4 == "DNSKEY" { $NF = "AAAA" substr($NF, 5) } { print }' "$IT_TMP/root.key" > "$IT_TMP/wrong.key"
pd_write_conf "$IT_TMP/wrong.yaml"
sed -i "s|^resolver:|resolver:\n  trust_anchor: $IT_TMP/wrong.key|" "$PD_CONF"
partdns_start "$PD_CONF"
assert_eq "a wrong anchor: the root does not validate" "SERVFAIL" "$(dig_rcode 127.0.9.9 . SOA)"
assert_eq "a wrong anchor: nothing below it either" "SERVFAIL" "$(dig_rcode 127.0.9.9 www.customer.example A)"
out=$(pd_dig 127.0.9.9 www.customer.example A +cd)
assert_contains "CD=1 (checking disabled) still gets the data" "203.0.113.10" "$out"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
