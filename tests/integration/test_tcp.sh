#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# UDP size limits and TC, TCP answers, several queries on one TCP connection.
. "$(dirname "$0")/lib.sh"
harness_init tcp
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
partdns_start "$PD_CONF"

flags() { printf '%s\n' "$1" | sed -n 's/^;; flags: \([a-z ]*\);.*/\1/p'; }
size() { printf '%s\n' "$1" | sed -n 's/.*MSG SIZE  rcvd: \([0-9]*\).*/\1/p'; }
ntxt() { printf '%s\n' "$1" | awk '$1 == "big.customer.example." && $4 == "TXT"' | grep -c .; }

# full answer over TCP first (this also fills the cache)
out=$(pd_dig 127.0.1.10 big.customer.example TXT +tcp)
assert_eq "big TXT over TCP: all 12 records" "12" "$(ntxt "$out")"
assert_not_contains "big TXT over TCP: no TC" " tc" " $(flags "$out")"
assert_lt "big TXT over TCP: more than 3000 bytes" "$(size "$out")" 3000

# rows: description, dig options; each must come back truncated over UDP
while IFS='|' read -r desc opts limit; do
  [ -n "$desc" ] || continue
  out=$(pd_dig 127.0.2.10 big.customer.example TXT +ignore $opts)
  assert_contains "UDP $desc: TC set" " tc" " $(flags "$out")"
  assert_le "UDP $desc: response fits $limit bytes" "$limit" "$(size "$out")"
  assert_contains "UDP $desc: status NOERROR" "status: NOERROR" "$out"
  assert_contains "UDP $desc: question echoed" "big.customer.example." "$(printf '%s\n' "$out" | sed -n '/QUESTION SECTION/,/^$/p')"
done <<'ROWS'
EDNS buffer 512|+bufsize=512|512
EDNS buffer 1232 (the default)|+bufsize=1232|1232
no EDNS (512 limit)|+noedns|512
ROWS

# dig's default: retries over TCP after TC and gets everything
out=$(pd_dig 127.0.3.10 big.customer.example TXT)
assert_eq "dig default (UDP, then TCP after TC): all 12 records" "12" "$(ntxt "$out")"

# small answers over UDP are not truncated
out=$(pd_dig 127.0.1.10 www.customer.example A +ignore +bufsize=512)
assert_not_contains "small answer over UDP: no TC" " tc" " $(flags "$out")"

# several queries on one TCP connection (dig +keepopen reuses it)
out=$(dig +time="$PD_DIG_TIME" +tries=1 -b 127.0.1.10 @"$PD_ADDR" -p "$PD_PORT" +tcp +keepopen \
      www.customer.example A +noall +answer plain.customer.example A +noall +answer \
      big.customer.example TXT +noall +answer 2>&1)
assert_contains "TCP keepopen: first answer" "203.0.113.10" "$out"
assert_contains "TCP keepopen: second answer" "203.0.113.11" "$out"
assert_eq "TCP keepopen: third answer complete" "12" "$(ntxt "$out")"

# a TCP client that connects and sends nothing must not block others
exec 5<>"/dev/tcp/$PD_ADDR/$PD_PORT"
printf '\x00' >&5      # half a length prefix, then silence
assert_eq "an idle half-open TCP client does not block UDP" "203.0.113.10" "$(dig_a 127.0.2.10 www.customer.example)"
assert_eq "an idle half-open TCP client does not block TCP" "203.0.113.10" "$(dig_a 127.0.2.10 www.customer.example +tcp)"
exec 5>&-
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
