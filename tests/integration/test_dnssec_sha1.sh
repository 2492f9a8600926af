#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SHA-1 in DNSSEC (docs/operations.md, "SHA-1"): partdns validates an RSASHA1
# zone and takes SHA-1 DS anchors as libunbound does, with no filter of its
# own; when a key has DS records of both digests only the SHA-256 ones count
# (RFC 4509 §3). Two zones signed offline by ldns-signzone (RSASHA1 and
# RSASHA256) on knotd at NET.8, reached through resolver.forward_zones, asked
# through the normal pool and, flagged, through the EDNS pool.
. "$(dirname "$0")/lib.sh"
harness_init dnssec_sha1
for b in ldns-keygen ldns-signzone ldns-key2ds; do
  command -v "$b" >/dev/null 2>&1 || skip "$b not installed (tools/deps.sh installs it)"
done
harness_start_all
pd_require_bins

# the two zones, signed offline; knotd serves them as they are
knot_write_conf sha1 "$NET.8" rsasha1.test. rsasha256.test.
dir=$IT_TMP/knot-sha1
mkdir -p "$dir/keys"
now=$(date +%s)
for z in rsasha1 rsasha256; do
  alg=RSASHA256; [ $z = rsasha1 ] && alg=RSASHA1
  echo "e A 203.0.113.82" >> "$dir/$z.test.zone"
  k=$(cd "$dir/keys" && ldns-keygen -a $alg -b 2048 -k $z.test. 2>&1) || die "ldns-keygen $alg failed" "$k"
  ldns-signzone -i $((now - 3600)) -e $((now + 30 * 86400)) -f "$dir/keys/$z.signed" "$dir/$z.test.zone" "$dir/keys/$k" ||
    die "ldns-signzone $z failed"
  cp "$dir/keys/$z.signed" "$dir/$z.test.zone"
  cp "$dir/keys/$k.key" "$IT_TMP/$z.dnskey"
  ldns-key2ds -n -1 "$dir/keys/$k.key" > "$IT_TMP/$z.ds1"
  ldns-key2ds -n -2 "$dir/keys/$k.key" > "$IT_TMP/$z.ds2"
done
grep -q ' 5 1 ' "$IT_TMP/rsasha1.ds1" || die "no SHA-1 DS of the RSASHA1 key" "$(cat "$IT_TMP/rsasha1.ds1")"
knot_start sha1

# a DS line of ZONE's key with digest type DIGEST and a wrong digest
wrong() { awk -v d="$2" '$4 == "DS" && $7 == d { $NF = (d == 1 ? sprintf("%040d", 0) : sprintf("%064d", 0)); print }' "$IT_TMP/$1.ds$2"; }

NCONF=0
# check NAME ZONE WANT ANCHOR-FILE...: partdns with those anchors; both pools say WANT (AD or SERVFAIL)
check() {
  local name=$1 zone=$2 want=$3 f out flags
  shift 3
  NCONF=$((NCONF + 1))
  pd_write_conf "$IT_TMP/anchors$NCONF.yaml"
  local list
  list=$(printf '%s, ' "$@"); list=${list%, }
  sed -i "s|^resolver:|resolver:\n  trust_anchor: [ $list ]\n  forward_zones:\n    - { name: rsasha1.test., servers: [ \"$NET.8\" ] }\n    - { name: rsasha256.test., servers: [ \"$NET.8\" ] }|" "$PD_CONF"
  sed -i "s|^edns:|edns:\n  forward: [ \"$NET.8\" ]|; s|^  policy: .*|  policy: forward|" "$PD_CONF"
  partdns_start "$PD_CONF"
  pdctl domain add "e.$zone" >/dev/null 2>&1 || true
  for c in "127.0.9.9 www normal" "127.0.1.10 e EDNS"; do
    set -- $c
    out=$(pd_dig "$1" "$2.$zone" A +dnssec)
    flags=$(grep '^;; flags:' <<<"$out")
    if [ "$want" = AD ]; then
      assert_match "$name, $3 pool: $2.$zone validates (AD)" '^;; flags:[a-z ]* ad[ ;]' "$flags"
    else
      assert_contains "$name, $3 pool: $2.$zone is bogus" "status: SERVFAIL" "$out"
    fi
  done
  partdns_stop
  assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
}
check "RSASHA1 DNSKEY anchor" rsasha1.test AD "$IT_TMP/rsasha1.dnskey"
check "RSASHA1 key, SHA-1 DS" rsasha1.test AD "$IT_TMP/rsasha1.ds1"
check "RSASHA1 key, SHA-256 DS" rsasha1.test AD "$IT_TMP/rsasha1.ds2"
check "RSASHA256 key, SHA-1 DS" rsasha256.test AD "$IT_TMP/rsasha256.ds1"
wrong rsasha256 1 > "$IT_TMP/w1.ds"
grep -q "DS [0-9]* 8 1 0000" "$IT_TMP/w1.ds" || die "no wrong SHA-1 DS" "$(cat "$IT_TMP/w1.ds")"
check "SHA-1 DS wrong, SHA-256 DS right: the SHA-1 one is not used" rsasha256.test AD "$IT_TMP/w1.ds" "$IT_TMP/rsasha256.ds2"
wrong rsasha1 2 > "$IT_TMP/w2.ds"
grep -q "DS [0-9]* 5 2 0000" "$IT_TMP/w2.ds" || die "no wrong SHA-256 DS" "$(cat "$IT_TMP/w2.ds")"
# in one file, as in two
cat "$IT_TMP/rsasha1.ds1" "$IT_TMP/w2.ds" > "$IT_TMP/both.ds"
check "one file, SHA-1 DS right, SHA-256 DS wrong: bogus" rsasha1.test SERVFAIL "$IT_TMP/both.ds"
check "SHA-1 DS right, SHA-256 DS wrong: bogus (RFC 4509)" rsasha1.test SERVFAIL "$IT_TMP/rsasha1.ds1" "$IT_TMP/w2.ds"
it_done
