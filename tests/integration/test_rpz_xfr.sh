#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A policy zone from its primary: knotd serves rpz.primary. to transfers
# signed with a TSIG key only; partdns transfers it (AXFR, a few thousand
# records: many messages, each one's TSIG verified), applies it, follows a
# change of the zone within its refresh by IXFR (knotd keeps the zone file's
# differences in its journal: zonefile-load: difference), a rule added and
# one removed, refuses nothing it did not get (a wrong key transfers nothing
# and is logged), and serves the last good copy after a restart while the
# primary is down.
. "$(dirname "$0")/lib.sh"
harness_init rpz_xfr
harness_start_all
pd_require_bins

SECRET=$(head -c 32 /dev/urandom | base64)
WRONG=$(head -c 32 /dev/urandom | base64)
dir=$IT_TMP/knot-rpz
mkdir -p "$dir"
BULK=3000   # rules besides the ones the test looks at: an AXFR of many messages
write_zone() { # write_zone SERIAL [EXTRA-LINE] (WWW=0: without www.customer.example's rule)
  {
    echo '$TTL 60'
    echo "@ SOA ns.rpz.primary. host.rpz.primary. $1 1 1 86400 60"
    echo '@ NS ns.rpz.primary.'
    echo 'ns A 192.0.2.53'
    [ "${WWW:-1}" = 0 ] || echo 'www.customer.example CNAME .'
    [ -z "${2:-}" ] || echo "$2"
    seq 1 "$BULK" | sed 's/.*/bulk&.example CNAME ./'
  } > "$dir/rpz.primary.zone"
}
write_zone 1
it_rpz_primary "$dir" "$SECRET"
assert_eq "the primary refuses a transfer without the key" "1" \
  "$(dig +time=2 +tries=1 @"$NET.7" rpz.primary. AXFR 2>&1 | grep -c 'Transfer failed')"

pd_write_conf "$IT_TMP/partdns.yaml"
cat >> "$PD_CONF" <<EOF
rpz:
  - zone: rpz.primary.
    file: $IT_TMP/rpz.primary.copy
    primary: "$NET.7@53"
    tsig: { name: xfr., algorithm: hmac-sha256, secret: "$SECRET" }
    refresh: 1
  - zone: rpz.primary.wrongkey.
    file: $IT_TMP/wrongkey.copy
    primary: "$NET.7@53"
    tsig: { name: xfr., secret: "$WRONG" }
    refresh: 1
EOF
partdns_start "$PD_CONF"

it_poll 15 NXDOMAIN dig_rcode 127.0.1.10 www.customer.example && ok "the transferred policy applies (AXFR with TSIG)" ||
  fail "the transferred policy applies (AXFR with TSIG)" "$(grep rpz "$IT_TMP/partdns.log" | tail -n 5)"
assert_match "the transfer is logged" 'rpz rpz\.primary\.: [0-9]+ records transferred from .*\(AXFR\), serial 1' \
  "$(cat "$IT_TMP/partdns.log")"
assert_eq "the copy is kept on disk" "1" "$(grep -c 'www.customer.example.rpz.primary.' "$IT_TMP/rpz.primary.copy")"
assert_eq "... all of it" "$((BULK + 1))" "$(grep -c 'CNAME' "$IT_TMP/rpz.primary.copy")"
assert_match "knotd sent it in more than one message" 'AXFR, outgoing, .*finished, .*, ([2-9]|[1-9][0-9]+) messages' \
  "$(cat "$dir/knotd.log")"
assert_eq "a name without a trigger resolves" "203.0.113.11" "$(dig_a 127.0.1.10 plain.customer.example)"

# reload_primary: knotd reads the edited zone file, its differences into the journal
reload_primary() {
  knotc -c "$dir/knot.conf" zone-reload rpz.primary. >/dev/null 2>&1 ||
    knotc -c "$dir/knot.conf" reload >/dev/null 2>&1
}

# the zone changes at the primary: partdns follows within its refresh, by IXFR
write_zone 2 'plain.customer.example CNAME .'
reload_primary
it_poll 15 NXDOMAIN dig_rcode 127.0.2.10 plain.customer.example && ok "a rule added at the primary is applied (new serial)" ||
  fail "a rule added at the primary is applied (new serial)" "$(grep rpz "$IT_TMP/partdns.log" | tail -n 5)"
assert_match "... it came by IXFR (knotd's log)" 'IXFR, outgoing, .*started, serial 1 -> 2' "$(cat "$dir/knotd.log")"
assert_match "... it came by IXFR (partdns' log)" \
  'rpz rpz\.primary\.: IXFR from [0-9.]+@53: serial 1 -> 2, 0 records deleted, 1 added' "$(cat "$IT_TMP/partdns.log")"
assert_eq "... the copy holds the rule" "1" "$(grep -c '^plain.customer.example.rpz.primary.' "$IT_TMP/rpz.primary.copy")"
assert_eq "... and the rest of the zone" "$((BULK + 2))" "$(grep -c 'CNAME' "$IT_TMP/rpz.primary.copy")"

# a rule removed at the primary: by IXFR too, and www resolves again
WWW=0 write_zone 3 'plain.customer.example CNAME .'
reload_primary
it_poll 15 NOERROR dig_rcode 127.0.3.10 www.customer.example && ok "a rule removed at the primary is removed (IXFR)" ||
  fail "a rule removed at the primary is removed (IXFR)" "$(grep rpz "$IT_TMP/partdns.log" | tail -n 5)"
assert_match "... by IXFR (knotd's log)" 'IXFR, outgoing, .*started, serial 2 -> 3' "$(cat "$dir/knotd.log")"
assert_match "... by IXFR (partdns' log)" \
  'rpz rpz\.primary\.: IXFR from [0-9.]+@53: serial 2 -> 3, 1 records deleted, 0 added' "$(cat "$IT_TMP/partdns.log")"
assert_eq "... the other rules stay" "NXDOMAIN" "$(dig_rcode 127.0.1.10 plain.customer.example)"
assert_eq "... bulk ones too" "NXDOMAIN" "$(dig_rcode 127.0.1.10 bulk2999.example)"
assert_eq "... no AXFR after the first" "1" "$(grep -c 'AXFR, outgoing, .*started' "$dir/knotd.log")"

# the wrong key: nothing transferred, said so, no file
assert_match "a transfer with the wrong key fails and says so" \
  'rpz rpz\.primary\.wrongkey\.: SOA query to .* failed: (REFUSED|NOTAUTH)' "$(cat "$IT_TMP/partdns.log")"
[ ! -e "$IT_TMP/wrongkey.copy" ] && ok "... and writes no copy" || fail "... and writes no copy"

# the primary goes away; a restart serves the last good copy
it_stop_pid "${IT_PIDS[rpz]}" 3
unset "IT_PIDS[rpz]"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
partdns_start "$PD_CONF"
assert_eq "after a restart without the primary: the copy's policy" "NXDOMAIN" \
  "$(dig_rcode 127.0.3.10 plain.customer.example)"
assert_eq "... as the last IXFR left it" "NOERROR" "$(dig_rcode 127.0.3.10 www.customer.example)"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
