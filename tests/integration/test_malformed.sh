#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Malformed queries (tests/wire/malformed/) over UDP and TCP: the documented reaction, and the daemon survives.
. "$(dirname "$0")/lib.sh"
harness_init malformed
CORPUS=$PARTDNS_SRC/tests/wire/malformed
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

# the corpus: file, reaction (README.txt columns). One Python process sends
# every file over UDP (unless empty: bash could not send it either) and over
# TCP, and prints "PROTO FILE HEX" per exchange (HEX empty when nothing came
# back within 0.7 s); a fork-per-byte shell loop took two minutes under load.
/usr/bin/python3 - "$PD_ADDR" "$PD_PORT" "$CORPUS" > "$IT_TMP/replies" <<'PYEOF' ||
import os, socket, sys
addr, port, corpus = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def udp(q):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.7)
    try:
        s.sendto(q, (addr, port))
        return s.recv(65535)
    except OSError:
        return b""
    finally:
        s.close()

def tcp(q):
    s = socket.create_connection((addr, port), timeout=2)
    s.settimeout(0.7)
    try:
        s.sendall(len(q).to_bytes(2, "big") + q)
        head = b""
        while len(head) < 2:
            b = s.recv(2 - len(head))
            if not b:
                return b""
            head += b
        n, body = int.from_bytes(head, "big"), b""
        s.settimeout(1)
        while len(body) < n:
            b = s.recv(n - len(body))
            if not b:
                break
            body += b
        return body
    except OSError:
        return b""
    finally:
        s.close()

for line in open(os.path.join(corpus, "README.txt")):
    f = line.split()
    if not f or f[0].startswith("#"):
        continue
    path = os.path.join(corpus, f[0])
    if not os.access(path, os.R_OK):
        continue
    q = open(path, "rb").read()
    if q:
        print("UDP", f[0], udp(q).hex())
    print("TCP", f[0], tcp(q).hex())
    sys.stdout.flush()
PYEOF
  fail "the corpus exchange (python3) failed"
n=0
while read -r file want rest; do
  case $file in ''|'#'*) continue ;; esac
  f=$CORPUS/$file
  [ -r "$f" ] || { fail "README.txt names $file, which is missing"; continue; }
  n=$((n + 1))
  for proto in UDP TCP; do
    [ "$proto" = TCP ] || [ -s "$f" ] || continue
    r=$(awk -v p="$proto" -v f="$file" '$1 == p && $2 == f { print $3; exit }' "$IT_TMP/replies")
    check "$proto" "$f" "$want" "$r"
  done
done < "$CORPUS/README.txt"
partdns_alive || die "partdns died during the corpus" "$(tail -n 20 "$IT_TMP/partdns.log")"
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

# mutations of a valid query
valid='\x5a\x17\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01\x03www\x08customer\x07example\x00\x00\x01\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0c\x00\x08\x00\x08\x00\x01\x20\x00\xc6\x33\x64\x01'
printf "$valid" > "$IT_TMP/valid.bin"
r=$(udp_ask "$IT_TMP/valid.bin")
assert_eq "the unmutated query (with an ECS option) is answered with its ID" "5a17" "${r:0:4}"
# 300 mutants (three random bytes, a quarter of them also cut short), from
# a fixed seed, sent without waiting; the last one sent is kept in a file for
# a report.
/usr/bin/python3 - "$PD_ADDR" "$PD_PORT" "$IT_TMP/valid.bin" "$IT_TMP/m.bin" <<'PYEOF'
import random, socket, sys
addr, port, valid, out = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "rb").read(), sys.argv[4]
rng = random.Random(7871)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(300):
    m = bytearray(valid)
    for _ in range(3):
        m[rng.randrange(len(m))] = rng.randrange(256)
    if rng.randrange(4) == 0:
        m = m[:rng.randrange(len(m))]
    open(out, "wb").write(m)
    if m:
        s.sendto(bytes(m), (addr, port))
PYEOF
if ! partdns_alive; then
  cp "$IT_TMP/m.bin" "${TMPDIR:-/tmp}/partdns-it-crash.bin"
  die "partdns died during the mutations (seed 7871); last packet: ${TMPDIR:-/tmp}/partdns-it-crash.bin"
fi

partdns_alive && ok "partdns still running after the corpus and 300 mutations" ||
  die "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
assert_eq "a normal query over UDP is still answered" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
assert_eq "a normal query over TCP is still answered" "203.0.113.10" "$(dig_a 127.0.2.10 www.customer.example +tcp)"
it_done
