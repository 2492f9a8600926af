#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Malformed queries (tests/resolver/malformed/) over UDP and TCP: the documented reaction, and the daemon survives.
. "$(dirname "$0")/lib.sh"
harness_init malformed
CORPUS=$PARTDNS_SRC/tests/resolver/malformed
[ -r "$CORPUS/README.txt" ] || { fail "no malformed corpus at $CORPUS"; it_done; }
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
partdns_start "$PD_CONF"

# hex FILE...: the bytes of stdin as one lowercase hex string
hex() { od -An -tx1 -v | tr -d ' \n'; }

# udp_ask FILE: send FILE as one datagram (from 127.0.0.1), print the reply as hex
udp_ask() {
  exec 3<>"/dev/udp/$PD_ADDR/$PD_PORT" || return 1
  cat "$1" >&3
  timeout 0.7 dd bs=65535 count=1 status=none <&3 2>/dev/null | hex
  exec 3>&-
}

# tcp_ask FILE: send FILE length-prefixed on a new connection, print the reply
# (without its length prefix) as hex; empty when the server sends nothing.
tcp_ask() {
  local len hi lo rlen
  len=$(stat -c %s "$1")
  exec 4<>"/dev/tcp/$PD_ADDR/$PD_PORT" || return 1
  printf -v hi '\\x%02x' $((len >> 8)); printf -v lo '\\x%02x' $((len & 255))
  { printf "$hi$lo"; cat "$1"; } >&4 2>/dev/null
  rlen=$(timeout 0.7 dd bs=1 count=2 status=none <&4 2>/dev/null | hex)
  if [ ${#rlen} -eq 4 ]; then
    timeout 1 dd bs=$((16#$rlen)) count=1 iflag=fullblock status=none <&4 2>/dev/null | hex
  fi
  exec 4>&-
}

# check PROTO FILE REACTION REPLY-HEX: the reply matches README.txt's reaction
check() {
  local proto=$1 f=$2 want=$3 r=$4 what
  what="$proto $(basename "$f") ($want)"
  local q; q=$(hex < "$f")
  if [ "$want" = DROP ]; then
    assert_eq "$what: no reply" "" "$r"
    return
  fi
  if [ ${#r} -lt 24 ]; then
    fail "$what: a reply" "expected: a DNS header or more" "seen:     '${r}'"
    return
  fi
  local id=${r:0:4} b2=$((16#${r:4:2})) b3=$((16#${r:6:2})) qd=${r:8:4}
  local got_rcode=$((b3 & 15)) qr=$((b2 >> 7)) opcode=$(((b2 >> 3) & 15))
  local q_opcode=$(((16#${q:4:2} >> 3) & 15))
  local detail="reply: id $id qr $qr opcode $opcode rcode $got_rcode qdcount $qd"
  case $want in
    FORMERR) [ "$id" = 5a17 ] && [ $qr = 1 ] && [ $got_rcode = 1 ] ;;
    NOTIMP) [ "$id" = 5a17 ] && [ $qr = 1 ] && [ $got_rcode = 4 ] && [ "$qd" = 0000 ] && [ $opcode = $q_opcode ] ;;
    REFUSED) [ "$id" = 5a17 ] && [ $qr = 1 ] && [ $got_rcode = 5 ] && [ "$qd" = 0001 ] && [ $opcode = $q_opcode ] ;;
    # OPT: owner root (00), type 41 (0029), class = size, TTL's first byte = extended rcode 1
    BADVERS) [ "$id" = 5a17 ] && [ $qr = 1 ] && [ $got_rcode = 0 ] &&
             grep -qE '000029[0-9a-f]{4}01' <<<"$r" ;;
    *) fail "$what: unknown reaction in README.txt"; return ;;
  esac
  if [ $? -eq 0 ]; then ok "$what"; else
    fail "$what" "expected: id 5a17, qr 1, $want" "seen:     $detail" "bytes:    ${r:0:120}"
  fi
}

# the corpus: file, reaction (README.txt columns)
n=0
while read -r file want rest; do
  case $file in ''|'#'*) continue ;; esac
  f=$CORPUS/$file
  [ -r "$f" ] || { fail "README.txt names $file, which is missing"; continue; }
  n=$((n + 1))
  if [ -s "$f" ]; then
    check UDP "$f" "$want" "$(udp_ask "$f")"
  fi   # an empty file sends no datagram from bash; TCP sends a zero length
  check TCP "$f" "$want" "$(tcp_ask "$f")"
  partdns_alive || die "partdns died on $file" "$(tail -n 20 "$IT_TMP/partdns.log")"
done < "$CORPUS/README.txt"
assert_lt "README.txt lists the corpus (more than 10 files)" "$n" 10
assert_eq "every .bin file is listed in README.txt" "" \
  "$(cd "$CORPUS" && for f in *.bin; do grep -q "^$f " README.txt || echo "$f"; done)"

# the same, fired without waiting for replies, 5 times over
for i in 1 2 3 4 5; do
  for f in "$CORPUS"/*.bin; do
    [ -s "$f" ] || continue
    exec 3<>"/dev/udp/$PD_ADDR/$PD_PORT"; cat "$f" >&3; exec 3>&-
  done
done

# mutations of a valid query: deterministic (bash's RANDOM with a fixed seed)
valid='\x5a\x17\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01\x03www\x08customer\x07example\x00\x00\x01\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0c\x00\x08\x00\x08\x00\x01\x20\x00\xc6\x33\x64\x01'
printf "$valid" > "$IT_TMP/valid.bin"
r=$(udp_ask "$IT_TMP/valid.bin")
assert_eq "the unmutated query (with an ECS option) is answered with its ID" "5a17" "${r:0:4}"
RANDOM=7871
vlen=$(stat -c %s "$IT_TMP/valid.bin")
for i in $(seq 1 300); do
  cp "$IT_TMP/valid.bin" "$IT_TMP/m.bin"
  for k in 1 2 3; do
    off=$((RANDOM % vlen)); val=$((RANDOM % 256))
    printf "\\x$(printf %02x $val)" | dd of="$IT_TMP/m.bin" bs=1 seek=$off conv=notrunc status=none
  done
  # sometimes cut it short
  [ $((RANDOM % 4)) -ne 0 ] || truncate -s $((RANDOM % vlen)) "$IT_TMP/m.bin"
  exec 3<>"/dev/udp/$PD_ADDR/$PD_PORT"; cat "$IT_TMP/m.bin" >&3; exec 3>&-
  if [ $((i % 50)) -eq 0 ] && ! partdns_alive; then
    cp "$IT_TMP/m.bin" "${TMPDIR:-/tmp}/partdns-it-crash.bin"
    die "partdns died during mutation $i (seed 7871); last packet: ${TMPDIR:-/tmp}/partdns-it-crash.bin"
  fi
done

partdns_alive && ok "partdns still running after the corpus and 300 mutations" ||
  die "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
assert_eq "a normal query over UDP is still answered" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
assert_eq "a normal query over TCP is still answered" "203.0.113.10" "$(dig_a 127.0.2.10 www.customer.example +tcp)"
it_done
