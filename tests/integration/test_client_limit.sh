#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# server.client_qps seen from the operator's side: a client over the limit is
# logged once a minute per client group, naming server.client_qps and
# server.client_exempt; the machine's own loopback is exempt by default, and
# an explicit client_exempt: [] limits it like any other source.
. "$(dirname "$0")/lib.sh"
harness_init client_limit
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"

stat() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }

# burst SOURCE N: N queries for www.customer.example from SOURCE as fast as
# one socket sends them (no waiting for replies), always from one source port
# so the kernel hands them to the same listener thread (the limit and its log
# line are per thread)
burst() {
  /usr/bin/python3 - "$PD_ADDR" "$PD_PORT" "$1" "$2" <<'PYEOF'
import socket, struct, sys
addr, port, src, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((src, 45353))
q = b"".join(bytes([len(l)]) + l.encode() for l in "www.customer.example".split(".")) + b"\0"
for i in range(n):
    s.sendto(struct.pack(">HHHHHH", i & 0xFFFF, 0x0100, 1, 0, 0, 0) + q + b"\0\1\0\1", (addr, port))
PYEOF
}

# the shipped default: loopback exempt, so a burst from the box itself passes
partdns_start "$PD_CONF"
dig_a 127.0.7.7 www.customer.example > /dev/null   # cached: the burst is hits
burst 127.0.7.7 9000
sleep 0.3
assert_eq "a 9000-query burst (over the default 5000 a second) from 127.0.7.7 is not limited by default" "0" "$(stat ratelimited)"
assert_eq "... and nothing is logged about it" "" "$(grep 'over server.client_qps' "$IT_TMP/partdns.log" || true)"
partdns_stop

# client_exempt: [] and a small rate: the loopback is limited, and said so
sed -i 's|^  allow: \(.*\)|  allow: \1\n  client_qps: 50\n  client_exempt: []|' "$PD_CONF"
assert_contains "the test config limits everyone" "client_exempt: []" "$(cat "$PD_CONF")"
skip_lines=$(wc -l < "$IT_TMP/partdns.log")
log_now() { tail -n +$((skip_lines + 1)) "$IT_TMP/partdns.log"; }   # this run's lines
partdns_start "$PD_CONF"
burst 127.0.7.7 400
for ((i = 0; i < 40; i++)); do
  log_now | grep -q 'over server.client_qps' && break
  sleep 0.1
done
lines=$(log_now | grep 'over server.client_qps' || true)
assert_match "a limited client is logged with its address" "client 127\.0\.7\.7 \(group /32\) is over server\.client_qps \(50 a second" "$lines"
assert_contains "... and the line names server.client_exempt" "server.client_exempt" "$lines"
n=$(stat ratelimited)
assert_lt "the limit fired (ratelimited counted)" "${n:-0}" 100
burst 127.0.7.7 400
sleep 0.3
assert_eq "a second burst within the minute logs nothing more" \
  "1" "$(log_now | grep -c 'client 127\.0\.7\.7 .*over server.client_qps')"
burst 127.0.7.8 400
for ((i = 0; i < 40; i++)); do
  log_now | grep -q 'client 127\.0\.7\.8 ' && break
  sleep 0.1
done
assert_contains "another client group gets its own line" "client 127.0.7.8 (group /32)" "$(log_now)"
assert_eq "a query after the bursts is answered" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
