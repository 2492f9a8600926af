#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A hostile policy feed (zones/rpz-hostile.zone) and local data of every
# shape: every query they decide, over UDP and TCP, gets a reply or a
# counted drop -- a CNAME to itself, a CNAME loop, a rewrite into a loop,
# a client-IP trigger into one get SERVFAIL; records no reply could carry
# are skipped at load with the zone and owner. No TCP connection is left in
# CLOSE-WAIT, and TCP still serves after more such queries than
# tcp_max_clients. partdnsctl query answers too.
. "$(dirname "$0")/lib.sh"
harness_init rpz_hostile
harness_start_all
pd_require_bins
PD_DIG_TIME=2 # a drop is waited for this long; every other query is answered at once

cp "$PARTDNS_SRC/tests/integration/zones/rpz-hostile.zone" "$IT_TMP/hostile.zone"
pd_write_conf "$IT_TMP/partdns.yaml"
# 4 connections per listener thread: connections a lost reply kept would fill them
sed -i 's|^  user: |  tcp_max_clients: 4\n  user: |' "$PD_CONF"
cat >> "$PD_CONF" <<EOF
local_zones:
  - name: lz.example.
    type: static
    data: [ "garden A 192.0.2.88", "garden AAAA 2001:db8::88", 'garden TXT "local"',
            "alias CNAME garden.lz.example.", "out CNAME www.customer.example.",
            "self CNAME self.lz.example.", "ping CNAME pong.lz.example.", "pong CNAME ping.lz.example." ]
  - { name: nx.example., type: always_nxdomain }
  - { name: customer.example., type: transparent, data: [ "local A 192.0.2.31" ] }
  - { name: redir.example., type: redirect, data: [ "@ A 192.0.2.40" ] }
  - { name: refused.example., type: refuse }
rpz:
  - { zone: rpz.hostile., file: $IT_TMP/hostile.zone }
EOF
grep -q '^  tcp_max_clients: 4$' "$PD_CONF" || die "could not set server.tcp_max_clients"
partdns_start "$PD_CONF"

# stat NAME: a counter of partdnsctl stats
stat() { "$PARTDNSCTL_BIN" -c "$PD_CONF" stats | awk -v n="$1" '$1 == n {print $2}'; }

# status PROTO CLIENT NAME TYPE: the reply's status, or NO-RESPONSE
status() {
  local out
  if ! out=$(pd_dig "$2" "$3" "$4" "+$1"); then echo NO-RESPONSE; return 0; fi
  sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$out" | head -n 1
}

# expect WHAT CLIENT NAME TYPE WANT: over UDP, then TCP, WANT (a status), or
# DROP: no reply, and the drop counted
expect() {
  local what=$1 client=$2 name=$3 type=$4 want=$5 proto d0
  for proto in notcp tcp; do
    if [ "$want" = DROP ]; then
      d0=$(stat dropped)
      assert_eq "$what ($proto): no reply" NO-RESPONSE "$(status "$proto" "$client" "$name" "$type")"
      assert_eq "... counted as dropped" "$((d0 + 1))" "$(stat dropped)"
    else
      assert_eq "$what ($proto)" "$want" "$(status "$proto" "$client" "$name" "$type")"
    fi
  done
}

C=127.0.1.10 # nanjing, no client-IP trigger
# the plain actions
expect "NXDOMAIN" $C nx.test A NXDOMAIN
expect "NODATA" $C nodata.test A NOERROR
expect "PASSTHRU: resolved" $C www.customer.example A NOERROR
expect "DROP" $C drop.test A DROP
expect "rpz-tcp-only (not supported, skipped): resolved" $C plain.customer.example A NOERROR
# local data of the policy
expect "policy data: A" $C a.test A NOERROR
expect "policy data: AAAA" $C a.test AAAA NOERROR
expect "policy data: TXT" $C a.test TXT NOERROR
expect "policy data: a type it lacks (NODATA)" $C a.test SRV NOERROR
expect "policy data: MX" $C mx.test MX NOERROR
expect "a rewrite to local data" $C alias.test A NOERROR
expect "a rewrite to a name resolved" $C far.test A NOERROR
expect "a wildcard rewrite" $C x.wild.test A NOERROR
expect "a wildcard NODATA (CNAME *.)" $C x.empty.test A NOERROR
assert_contains "... the rewrite followed to the garden's address" "192.0.2.88" "$(pd_dig $C y.wild.test A +short)"
# answers that cannot be made
expect "a CNAME to itself" $C self.test A SERVFAIL
expect "a CNAME to itself, asked for the CNAME" $C self.test CNAME NOERROR
expect "a wildcard CNAME onto its own name" $C a.loop.test A SERVFAIL
expect "a wildcard rewrite into that loop" $C b.loop.test A SERVFAIL
expect "two rewrites into each other" $C ping.test A SERVFAIL
# a CNAME target's trigger rewriting the name to itself: a resolution, then its cache hit
expect "a target's rewrite back to the query name" $C static.customer.example A SERVFAIL
# skipped at load: resolved as usual (no such name)
expect "a CNAME target past 255 bytes: skipped, resolved" $C long.test A NXDOMAIN
expect "an MX exchange past 255 bytes: skipped, resolved" $C longmx.test MX NXDOMAIN
# client-IP triggers
expect "client-IP: a rewrite" 127.0.1.77 www.customer.example A NOERROR
expect "client-IP: DROP" 127.0.1.78 www.customer.example A DROP
expect "client-IP: a rewrite to a name rewritten to itself" 127.0.1.79 www.customer.example A SERVFAIL
expect "client-IP: NXDOMAIN" 127.0.1.80 www.customer.example A NXDOMAIN
expect "client-IP: a rewrite to the query name itself" 127.0.1.81 loop.cip.test A SERVFAIL
expect "client-IP: a rewrite to a name resolved" 127.0.1.81 other.cip.test A NXDOMAIN

# local data (local_zones) of every shape
expect "local: A" $C garden.lz.example A NOERROR
expect "local: AAAA" $C garden.lz.example AAAA NOERROR
expect "local: TXT" $C garden.lz.example TXT NOERROR
expect "local: a CNAME to local data" $C alias.lz.example A NOERROR
expect "local: a CNAME out of the zone" $C out.lz.example A NOERROR
expect "local: a CNAME to itself" $C self.lz.example A SERVFAIL
expect "local: two CNAMEs to each other (one answered)" $C ping.lz.example A NOERROR
expect "local: no such name" $C none.lz.example A NXDOMAIN
expect "local: always_nxdomain" $C x.nx.example A NXDOMAIN
expect "local: transparent, data" $C local.customer.example A NOERROR
expect "local: redirect" $C any.redir.example A NOERROR
expect "local: refuse" $C x.refused.example A REFUSED

# TCP: no connection left behind, and still serving
close_waits() { ss -Htn state close-wait "( sport = :$PD_PORT )" 2>/dev/null | wc -l; }
if it_poll 3 0 close_waits; then ok "no TCP connection left in CLOSE-WAIT"; else
  fail "no TCP connection left in CLOSE-WAIT" "$(ss -Htn state close-wait "( sport = :$PD_PORT )")"
fi
for i in 1 2 3 4 5 6 7 8 9 10; do status tcp $C self.test A >/dev/null; done
assert_eq "TCP still served after 10 more (tcp_max_clients 4 per thread)" NOERROR "$(status tcp $C a.test A)"
assert_eq "... no TCP connection refused for being full" 0 "$(stat tcp_refused_full)"

# the control socket's query goes the same way
assert_contains "partdnsctl query: a CNAME to itself is SERVFAIL" "rcode SERVFAIL" \
  "$("$PARTDNSCTL_BIN" -c "$PD_CONF" query self.test --partition nanjing 2>&1)"
assert_contains "partdnsctl query: a drop is said" "dropped" \
  "$("$PARTDNSCTL_BIN" -c "$PD_CONF" query drop.test --partition nanjing 2>&1)"

# the load: what no reply could carry, reported with zone and owner
log=$(cat "$IT_TMP/partdns.log")
assert_match "a CNAME target past 255 bytes reported with zone and owner" \
  'rpz rpz\.hostile\.: record at long\.test\.rpz\.hostile\. skipped: CNAME target longer than 255 bytes' "$log"
assert_match "... and an MX exchange" \
  'rpz rpz\.hostile\.: record at longmx\.test\.rpz\.hostile\. skipped: a name in the data longer than 255' "$log"
assert_match "the rest of the zone loaded" 'rpz rpz\.hostile\.: 20 triggers loaded' "$log"
# every path answered on its own: the query path's last-resort exit never had to
assert_eq "no query left unanswered by the query path" 0 "$(stat unanswered)"
if partdns_alive; then ok "partdns still running"; else fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"; fi
it_done
