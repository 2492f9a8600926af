#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# server.max_udp_size: a UDP reply is at most min(the client's EDNS size,
# max_udp_size), 512 without EDNS, and our OPT advertises max_udp_size.
# With 4096 a client offering 4096 gets a ~2000-byte local answer and the
# ~3100-byte big.customer.example TXT (resolved, so a waiter's reply) whole;
# with the default 1232 both are truncated (TC), and a reload switches.
. "$(dirname "$0")/lib.sh"
harness_init udp_size
harness_start_all
pd_require_bins

write_conf() { # write_conf FILE [MAX_UDP_SIZE]
  pd_write_conf "$1"
  [ -z "${2:-}" ] || sed -i "s|^server:|server:\n  max_udp_size: $2|" "$1"
  local x i
  x=$(printf 'x%.0s' $(seq 240))
  {
    echo "local_zones:"
    echo "  - name: big.example."
    echo "    type: static"
    echo "    data:"
    for i in 1 2 3 4 5 6 7 8; do echo "      - 'txt TXT \"$i$x\"'"; done
  } >> "$1"
}
# size CLIENT NAME TYPE DIG-ARGS...: the reply's size over UDP (dig +ignore: no retry over TCP)
size() { pd_dig "$1" "$2" "$3" +ignore "${@:4}" | sed -n 's/.*MSG SIZE  rcvd: \([0-9]*\).*/\1/p'; }
flags() { pd_dig "$1" "$2" "$3" +ignore "${@:4}" | grep '^;; flags:'; }
udp() { pd_dig "$1" "$2" "$3" +ignore "${@:4}" | sed -n 's/.*; udp: \([0-9]*\).*/\1/p'; }

write_conf "$IT_TMP/partdns.yaml" 4096
grep -q 'max_udp_size: 4096' "$PD_CONF" || die "could not set server.max_udp_size"
partdns_start "$PD_CONF"
n=$(size 127.0.9.9 txt.big.example TXT +bufsize=4096)
assert_lt "max_udp_size 4096, client 4096: the local answer is over 1232 bytes" "$n" 1900
assert_le "... and at most 4096" 4096 "$n"
assert_not_contains "... untruncated (no TC)" " tc" "$(flags 127.0.9.9 txt.big.example TXT +bufsize=4096)"
assert_eq "... our OPT advertises 4096" 4096 "$(udp 127.0.9.9 txt.big.example TXT +bufsize=4096)"
assert_eq "... all 8 records" 8 "$(pd_dig 127.0.9.9 txt.big.example TXT +ignore +bufsize=4096 +noall +answer | grep -c TXT)"
# resolved: the waiter's reply is sized as the query was
assert_eq "a resolved 3100-byte answer over UDP, first asked: all 12 records" 12 \
  "$(pd_dig 127.0.9.9 big.customer.example TXT +ignore +bufsize=4096 +noall +answer | grep -c TXT)"
assert_not_contains "... from the cache too, untruncated" " tc" "$(flags 127.0.9.9 big.customer.example TXT +bufsize=4096)"
# the client's size is the other bound
assert_contains "client 1232: truncated" " tc" "$(flags 127.0.9.9 txt.big.example TXT +bufsize=1232)"
n=$(size 127.0.9.9 txt.big.example TXT +bufsize=1500)
assert_le "client 1500: at most 1500 bytes" 1500 "$n"
assert_contains "without EDNS: 512 bytes, TC" " tc" "$(flags 127.0.9.9 txt.big.example TXT +noedns)"
assert_le "... at most 512 bytes" 512 "$(size 127.0.9.9 txt.big.example TXT +noedns)"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"

# the default, 1232 (DNS Flag Day 2020): a client offering 4096 gets TC
write_conf "$IT_TMP/default.yaml"
partdns_start "$PD_CONF"
assert_contains "default, client 4096: the 2000-byte answer is truncated (TC)" " tc" \
  "$(flags 127.0.9.9 txt.big.example TXT +bufsize=4096)"
assert_le "... at most 1232 bytes" 1232 "$(size 127.0.9.9 txt.big.example TXT +bufsize=4096)"
assert_eq "... our OPT advertises 1232" 1232 "$(udp 127.0.9.9 txt.big.example TXT +bufsize=4096)"
assert_eq "... over TCP it is whole" 8 "$(pd_dig 127.0.9.9 txt.big.example TXT +tcp +noall +answer | grep -c TXT)"
pd_dig 127.0.9.9 big.customer.example TXT +tcp >/dev/null
assert_contains "a cached 3100-byte answer: TC" " tc" "$(flags 127.0.9.9 big.customer.example TXT +bufsize=4096)"
# a reload applies it
write_conf "$IT_TMP/default.yaml" 3000
assert_contains "reload to 3000" "reloaded" "$(pdctl reload 2>&1)"
assert_not_contains "after the reload: the 2000-byte answer fits" " tc" "$(flags 127.0.9.9 txt.big.example TXT +bufsize=4096)"
assert_eq "... our OPT advertises 3000" 3000 "$(udp 127.0.9.9 txt.big.example TXT +bufsize=4096)"
assert_contains "... the 3100-byte one does not" " tc" "$(flags 127.0.9.9 big.customer.example TXT +bufsize=4096)"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"

# out of range: refused with file:line:column and the key
write_conf "$IT_TMP/bad.yaml" 8192
rc=0; out=$("$PARTDNS_BIN" -t -c "$IT_TMP/bad.yaml" 2>&1) || rc=$?
assert_ne "max_udp_size 8192: the config is refused" 0 "$rc"
assert_match "... naming file, line, column and key" "bad.yaml:[0-9]+:[0-9]+: error: out of range 512..4096 \(key 'server.max_udp_size', value '8192'\)" "$out"
it_done
