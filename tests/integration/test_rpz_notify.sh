#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# NOTIFY (RFC 1996) for a policy zone: knotd, the zone's primary, sends a
# NOTIFY to partdns (from its own address) when the zone changes; partdns'
# refresh is an hour, so only the NOTIFY explains a change applied within
# seconds. A NOTIFY from anyone else, for a zone that is not ours or for
# another type than SOA is refused and brings no check; a flood of NOTIFYs
# from the primary's
# address costs at most one serial check per zone every few seconds.
. "$(dirname "$0")/lib.sh"
harness_init rpz_notify
harness_start_all
pd_require_bins

SECRET=$(head -c 32 /dev/urandom | base64)
dir=$IT_TMP/knot-rpz
mkdir -p "$dir"
write_zone() { # write_zone SERIAL [EXTRA-LINE]
  {
    echo '$TTL 60'
    echo "@ SOA ns.rpz.primary. host.rpz.primary. $1 3600 600 86400 60"
    echo '@ NS ns.rpz.primary.'
    echo 'ns A 192.0.2.53'
    echo 'www.customer.example CNAME .'
    [ -z "${2:-}" ] || echo "$2"
  } > "$dir/rpz.primary.zone"
}
write_zone 1
it_rpz_primary "$dir" "$SECRET" "$PD_ADDR@$PD_PORT" # NOTIFYs to partdns

pd_write_conf "$IT_TMP/partdns.yaml"
cat >> "$PD_CONF" <<EOF
rpz:
  - zone: rpz.primary.
    file: $IT_TMP/rpz.primary.copy
    primary: "$NET.7@53"
    tsig: { name: xfr., algorithm: hmac-sha256, secret: "$SECRET" }
    refresh: 3600
EOF
partdns_start "$PD_CONF"
it_poll 15 NXDOMAIN dig_rcode 127.0.1.10 www.customer.example && ok "the policy is transferred at start" ||
  fail "the policy is transferred at start" "$(grep rpz "$IT_TMP/partdns.log" | tail -n 5)"
assert_eq "a name without a trigger resolves" "203.0.113.11" "$(dig_a 127.0.1.10 plain.customer.example)"

# notify_from SOURCE ZONE: dig's NOTIFY to partdns from SOURCE; prints the status
notify_from() {
  dig +time=2 +tries=1 +opcode=notify -b "$1" @"$PD_ADDR" -p "$PD_PORT" "$2" SOA 2>/dev/null |
    sed -n 's/.*opcode: \([A-Z]*\), status: \([A-Z]*\),.*/\1 \2/p' | head -n 1
}

# the zone changes; knotd notifies; partdns checks at once (its refresh is an hour)
write_zone 2 'plain.customer.example CNAME .'
knotc -c "$dir/knot.conf" zone-reload rpz.primary. >/dev/null 2>&1
it_poll 20 NXDOMAIN dig_rcode 127.0.2.10 plain.customer.example &&
  ok "a change at the primary is applied within seconds, though the refresh is an hour (NOTIFY)" ||
  fail "a change at the primary is applied within seconds (NOTIFY)" "$(grep rpz "$IT_TMP/partdns.log" | tail -n 5)" \
    "$(grep -i notify "$dir/knotd.log" | tail -n 5)"
assert_match "... knotd's NOTIFY was answered" 'notify, outgoing, remote '"$PD_ADDR@$PD_PORT"'.*serial 2' \
  "$(cat "$dir/knotd.log")"
assert_match "... partdns says why it checked" 'rpz rpz\.primary\.: NOTIFY from the primary' \
  "$(cat "$IT_TMP/partdns.log")"
assert_match "... and took the change by IXFR" 'rpz rpz\.primary\.: IXFR from [0-9.]+@53: serial 1 -> 2' \
  "$(cat "$IT_TMP/partdns.log")"
assert_eq "the primary's NOTIFY is answered (NOERROR)" "NOTIFY NOERROR" "$(notify_from "$NET.7" rpz.primary.)"

# NOTIFYs that are not the primary's: refused, and no check follows
sleep 6 # past the gap after the last check: a NOTIFY taken now would log a check
checks0=$(grep -c 'NOTIFY from the primary' "$IT_TMP/partdns.log")
assert_eq "a NOTIFY from a client's address is refused" "NOTIFY REFUSED" "$(notify_from 127.0.1.10 rpz.primary.)"
assert_eq "a NOTIFY for a zone that is not ours is refused" "NOTIFY REFUSED" \
  "$(notify_from "$NET.7" customer.example.)"
assert_eq "a NOTIFY for another type than SOA is refused" "NOTIFY REFUSED" \
  "$(dig +time=2 +tries=1 +opcode=notify -b "$NET.7" @"$PD_ADDR" -p "$PD_PORT" rpz.primary. A 2>/dev/null |
     sed -n 's/.*opcode: \([A-Z]*\), status: \([A-Z]*\),.*/\1 \2/p' | head -n 1)"
sleep 2
assert_eq "... no check followed them" "$checks0" "$(grep -c 'NOTIFY from the primary' "$IT_TMP/partdns.log")"

# a flood of NOTIFYs from the primary's address (forged or not): at most one check every 5 s
t0=$(date +%s)
flood=()
for i in $(seq 1 60); do
  dig +time=1 +tries=1 +opcode=notify -b "$NET.7" @"$PD_ADDR" -p "$PD_PORT" rpz.primary. SOA >/dev/null 2>&1 &
  flood+=($!)
  sleep 0.05
done
wait "${flood[@]}" # not a bare wait: knotd and partdns are this shell's jobs too
t1=$(date +%s)
sleep 1
# each line logged is a check planned: one at once, then one 5 s after the last
checks=$(( $(grep -c 'NOTIFY from the primary' "$IT_TMP/partdns.log") - checks0 ))
max=$(( (t1 - t0) / 5 + 2 ))
[ "$checks" -ge 1 ] && [ "$checks" -le "$max" ] &&
  ok "60 NOTIFYs in $((t1 - t0)) s: $checks serial checks planned (at most $max)" ||
  fail "60 NOTIFYs in $((t1 - t0)) s: $checks serial checks planned (at most $max)" \
    "$(grep 'NOTIFY from the primary' "$IT_TMP/partdns.log")"
assert_eq "... the policy is as it was" "NXDOMAIN" "$(dig_rcode 127.0.3.10 plain.customer.example)"
assert_match "stats count the NOTIFYs" '^notifies ([6-9][0-9]|[1-9][0-9][0-9]+)$' \
  "$("$PARTDNSCTL_BIN" -c "$PD_CONF" stats | grep '^notifies ')"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
