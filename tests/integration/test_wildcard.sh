#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# server.listen on the wildcard address: every UDP reply leaves from the
# address the client asked (IP_PKTINFO), or the client would drop it.
. "$(dirname "$0")/lib.sh"
harness_init wildcard
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "s|^  listen: .*|  listen: [ \"0.0.0.0@$PD_PORT\" ]|" "$PD_CONF"
assert_contains "the config listens on the wildcard" "0.0.0.0@$PD_PORT" "$(grep 'listen:' "$PD_CONF")"
partdns_start "$PD_CONF"

# dig drops (and reports) a reply from another address than it asked: a
# missing answer here is a reply that left from the wrong source.
ask() {  # ask SERVER CLIENT NAME: the A records
  dig +time=3 +tries=1 -b "$2" @"$1" -p "$PD_PORT" "$3" A +noall +answer 2>&1 | awk '$4 == "A" {print $5}'
}
for server in "$NET.53" "$NET.54" 127.0.0.1 127.0.0.2; do
  assert_eq "a miss asked at $server is answered from $server" "203.0.113.10" \
    "$(ask "$server" 127.0.9.9 www.customer.example)"
  assert_eq "a hit asked at $server is answered from $server" "203.0.113.10" \
    "$(ask "$server" 127.0.9.9 www.customer.example)"
done
for server in "$NET.55" 127.0.0.3; do
  assert_eq "a fresh miss at $server (reply from the waiter path)" "203.0.113.11" \
    "$(ask "$server" 127.0.9.$((RANDOM % 200 + 10)) plain.customer.example)"
  pdctl cache flush plain.customer.example >/dev/null
done
out=$(dig +tcp +time=3 +tries=1 -b 127.0.9.9 @"$NET.56" -p "$PD_PORT" www.customer.example A +noall +answer 2>&1)
assert_contains "TCP at another address answers too" "203.0.113.10" "$out"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
