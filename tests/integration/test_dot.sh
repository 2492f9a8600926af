#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# DNS over TLS (server.listen_tls, RFC 7858): answers over kdig +tls, the chain
# validates, ALPN "dot" (a client offering only h2 is refused), RFC 7766
# pipelining out of order, a client that never reads, a ClientHello trickled
# byte by byte (server.tls_handshake_ms), a half-open flood over
# server.tls_max_clients, idle close (server.tcp_idle_ms), and certificate
# rotation by reload without dropping a query (a broken key keeps the old one).
# The clients are kdig, openssl s_client and dotclient.py (Debian's python3 ssl).
. "$(dirname "$0")/lib.sh"
harness_init dot
command -v openssl >/dev/null 2>&1 || skip "openssl not installed (tools/deps.sh installs it)"
[ -x /usr/bin/python3 ] || skip "python3 not installed (tools/deps.sh installs it)"
harness_start_all
pd_require_bins
DOT=(/usr/bin/python3 "$IT_LIB_DIR/dotclient.py" -s "$PD_ADDR" -p 853)
TS=${PARTDNS_TIME_SCALE:-1}   # sanitizer builds: latency bounds scaled (the daemon's own deadlines are not)

# ------------------------------------------------ certificates: a CA, two server pairs, another CA
P=$IT_TMP/pki
mkdir -p "$P"
ec() { printf '%s' "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"; }
# ca NAME: a self-signed EC CA in $P/NAME.{crt,key}
ca() {
  # shellcheck disable=SC2046
  openssl req -x509 $(ec) -days 60 -subj "/CN=partdns test $1" -keyout "$P/$1.key" -out "$P/$1.crt" \
    >/dev/null 2>&1 || die "openssl: CA $1"
}
# leaf NAME CA: an EC server certificate for dns.example.test signed by CA
leaf() {
  # shellcheck disable=SC2046
  openssl req $(ec) -subj "/CN=dns.example.test" -keyout "$P/$1.key" -out "$P/$1.csr" >/dev/null 2>&1 ||
    die "openssl: request $1"
  printf 'subjectAltName = DNS:dns.example.test\nextendedKeyUsage = serverAuth\nbasicConstraints = CA:FALSE\n' \
    > "$P/$1.ext"
  openssl x509 -req -in "$P/$1.csr" -CA "$P/$2.crt" -CAkey "$P/$2.key" -CAcreateserial -days 60 \
    -extfile "$P/$1.ext" -out "$P/$1.crt" >/dev/null 2>&1 || die "openssl: sign $1"
}
ca ca
ca otherca
leaf server1 ca
leaf server2 ca
# the files partdns reads: server1's now, replaced by server2's in the rotation
cp "$P/server1.crt" "$P/tls.crt"
cp "$P/server1.key" "$P/tls.key"
chmod 600 "$P"/*.key
# fp FILE: a certificate's SHA-256 fingerprint, lower-case hex without colons
fp() { openssl x509 -in "$1" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' | tr 'A-F' 'a-f'; }
FP1=$(fp "$P/server1.crt")
FP2=$(fp "$P/server2.crt")
assert_ne "two server certificates with different fingerprints" "$FP1" "$FP2"
assert_contains "the server certificate has the SAN dns.example.test" "DNS:dns.example.test" \
  "$(openssl x509 -in "$P/server1.crt" -noout -ext subjectAltName 2>&1)"

# ------------------------------------------------ partdns with a DoT listener
HANDSHAKE_MS=1000
IDLE_MS=3000
MAX_CLIENTS=50      # per listener thread: 2 threads
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "/^  store:/a\\
  listen_tls: [ \"$PD_ADDR@853\" ]\\
  tls_cert: $P/tls.crt\\
  tls_key: $P/tls.key\\
  tls_handshake_ms: $HANDSHAKE_MS\\
  tls_max_clients: $MAX_CLIENTS\\
  tcp_idle_ms: $IDLE_MS" "$PD_CONF"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"

stat_of() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }
# assert_gt DESC MIN ACTUAL (integers): ACTUAL > MIN
assert_gt() {
  if [[ "$3" =~ ^-?[0-9]+$ ]] && [ "$3" -gt "$2" ]; then ok "$1"; else
    fail "$1" "expected: > $2" "seen:     $3"
  fi
}
ms_now() { echo $(($(date +%s%N) / 1000000)); }
field() { printf '%s\n' "$2" | awk -v k="$1" '$1 == k {print $2}' | head -n 1; }
# kd SRC NAME [KDIG-ARGS...]: kdig over TLS to partdns from SRC, the answer's A records sorted
# ("NO-RESPONSE: kdig's first warning" when kdig fails)
kd() {
  local src=$1 name=$2 out
  shift 2
  out=$(kdig +tls +timeout=$((3 * TS)) +retry=0 -b "$src" @"$PD_ADDR" -p 853 "$name" A +noall +answer "$@" 2>&1) ||
    { echo "NO-RESPONSE: $(printf '%s' "$out" | grep -m 1 -E 'WARNING|ERROR|error' | tr -s ' ')"; return 0; }
  printf '%s\n' "$out" | awk '$4 == "A" {print $5}' | sort
}
# legit SRC: one DoT query timed, "ANSWERED <ms>" or "FAILED <ms>"
legit() {
  local t0 r
  t0=$(ms_now)
  r=$(kd "$1" www.customer.example)
  if [ "$r" = 203.0.113.10 ]; then echo "ANSWERED $(($(ms_now) - t0))"; else echo "FAILED $(($(ms_now) - t0)) $r"; fi
}
# s_fp: the SHA-256 fingerprint of the certificate a new connection is shown
s_fp() {
  openssl s_client -connect "$PD_ADDR:853" -alpn dot -servername dns.example.test </dev/null 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256 2>/dev/null | sed 's/.*=//; s/://g' | tr 'A-F' 'a-f'
}

# ------------------------------------------------ (a) answers, chain, ALPN
dot0=$(stat_of dot)
assert_eq "kdig +tls: a normal name" "203.0.113.10" "$(kd 127.0.1.10 www.customer.example)"
assert_eq "kdig +tls: a flagged name from nanjing, steered" "203.0.113.1" "$(kd 127.0.1.10 video.customer.example)"
assert_eq "kdig +tls: the flagged name from suzhou, its own node" "203.0.113.2" "$(kd 127.0.2.10 video.customer.example)"
assert_eq "kdig +tls: the flagged name from a client in no city, the GSLB's default" "203.0.113.100" \
  "$(kd 127.0.9.10 video.customer.example)"
assert_eq "DoT queries counted by transport (stats dot)" 4 $(($(stat_of dot) - ${dot0:-0}))
assert_eq "kdig +tls-ca +tls-hostname: the chain validates" "203.0.113.10" \
  "$(kd 127.0.1.10 www.customer.example +tls-ca="$P/ca.crt" +tls-hostname=dns.example.test)"
assert_match "... and a wrong hostname does not (kdig does check)" "^NO-RESPONSE" \
  "$(kd 127.0.1.10 www.customer.example +tls-ca="$P/ca.crt" +tls-hostname=other.example.test)"
assert_match "... nor another CA" "^NO-RESPONSE" \
  "$(kd 127.0.1.10 www.customer.example +tls-ca="$P/otherca.crt" +tls-hostname=dns.example.test)"
out=$(openssl s_client -connect "$PD_ADDR:853" -alpn dot -servername dns.example.test </dev/null 2>&1)
assert_contains "openssl s_client -alpn dot: ALPN protocol: dot" "ALPN protocol: dot" "$out"
assert_match "... TLS 1.2 or 1.3" "Protocol *: TLSv1\.[23]|New, TLSv1\.[23]" "$out"
failed0=$(stat_of tls_handshake_failed)
out=$("${DOT[@]}" alpn h2 2>&1)
assert_match "a client offering only ALPN h2: the handshake fails" "^failed " "$out"
out=$(openssl s_client -connect "$PD_ADDR:853" -alpn h2 -servername dns.example.test </dev/null 2>&1)
assert_not_contains "... with openssl s_client too (no ALPN h2 agreed)" "ALPN protocol: h2" "$out"
assert_match "... its handshake fails (no application protocol alert)" "no application protocol|alert number 120|handshake failure" "$out"
assert_gt "... counted (stats tls_handshake_failed)" 0 "$(($(stat_of tls_handshake_failed) - ${failed0:-0}))"
assert_eq "a client offering dot and h2 gets dot" "ok dot" "$("${DOT[@]}" alpn h2 dot 2>&1)"
assert_eq "a client offering no ALPN is served (RFC 7858 does not require it)" "ok None" "$("${DOT[@]}" alpn 2>&1)"

# ------------------------------------------------ (b) pipelining, answers out of order
# Warm some answers; x.dead.example (its server never answers) is resolved in
# about 4 s, the cached ones at once, the uncached ones in a few ms: 20 queries
# in one write, 20 answers matched by ID, the slow one last.
for n in www.customer.example plain.customer.example video.customer.example; do kd 127.0.1.10 "$n" >/dev/null; done
kdig +tls +timeout=3 +retry=0 -b 127.0.1.10 @"$PD_ADDR" -p 853 www.customer.example AAAA >/dev/null 2>&1
kdig +tls +timeout=3 +retry=0 -b 127.0.1.10 @"$PD_ADDR" -p 853 txt.customer.example TXT >/dev/null 2>&1
Q=(x.dead.example/A www.customer.example/A plain.customer.example/A www.customer.example/AAAA
   txt.customer.example/TXT video.customer.example/A a.edge.customer.example/A static.customer.example/A)
for i in $(seq 1 12); do Q+=("nx$i.customer.example/A"); done
"${DOT[@]}" -b 127.0.1.10 pipeline "${Q[@]}" > "$IT_TMP/pipeline.out" 2>&1
pipe=$(cat "$IT_TMP/pipeline.out")
log "pipeline: $(printf '%s' "$pipe" | tr '\n' '|')"
assert_eq "pipelining: 20 queries in one write, 20 answers matched by ID" "20" "$(field matched "$pipe")"
assert_eq "... no answer with an unknown ID or the wrong question" "0" "$(field unexpected "$pipe")"
want=$(cat <<EOF
0 x.dead.example. A SERVFAIL
1 www.customer.example. A NOERROR 203.0.113.10
2 plain.customer.example. A NOERROR 203.0.113.11
3 www.customer.example. AAAA NOERROR 2001:db8::10
4 txt.customer.example. TXT NOERROR partdns integration test
5 video.customer.example. A NOERROR 203.0.113.1
6 a.edge.customer.example. A NOERROR 203.0.113.12
7 static.customer.example. A NOERROR 203.0.113.100
EOF
)
for i in $(seq 1 12); do want+=$'\n'"$((7 + i)) nx$i.customer.example. A NXDOMAIN"; done
assert_eq "... each answer right for its question" "$want" \
  "$(printf '%s\n' "$pipe" | awk '$1 == "answer" {$1 = ""; $NF = ""; sub(/^ /, ""); sub(/ $/, ""); print}' | sort -n)"
assert_eq "... the slow one (x.dead.example) came last: no answer waited behind it" "0" \
  "$(field order "$pipe" | awk -F, '{print $NF}')"

# ------------------------------------------------ (c) a client that never reads
# It writes queries for a 3 KB answer until partdns stops reading them, and
# holds the connection: another client's queries are answered at once.
kdig +tls +timeout=3 +retry=0 -b 127.0.1.10 @"$PD_ADDR" -p 853 big.customer.example TXT >/dev/null 2>&1
"${DOT[@]}" -b 127.0.4.1 nonreader big.customer.example TXT 4 > "$IT_TMP/nonreader.out" 2>&1 &
nr_pid=$!
it_poll 20 yes sh -c "grep -q '^sent' '$IT_TMP/nonreader.out' && echo yes" || true
log "non-reader: $(tr '\n' ' ' < "$IT_TMP/nonreader.out")"
assert_gt "the non-reader wrote more queries than partdns would take (thousands)" 1000 \
  "$(field sent "$(cat "$IT_TMP/nonreader.out")")"
answered=0
for n in 1 2 3 4 5; do
  r=$(legit 127.0.2.10)
  log "DoT query $n beside the non-reader: $r"
  case $r in ANSWERED*) [ "$(echo "$r" | awk '{print $2}')" -gt $((1000 * TS)) ] || answered=$((answered + 1)) ;; esac
done
assert_eq "5 of 5 DoT queries of another client answered within $((TS)) s beside the non-reader" 5 "$answered"
wait "$nr_pid"

# ------------------------------------------------ (d) idle connections close after tcp_idle_ms
out=$("${DOT[@]}" -b 127.0.1.10 idle 10 2>&1)
assert_contains "an idle DoT connection: answered first" "answer NOERROR 203.0.113.10" "$out"
c=$(field closed_ms "$out")
assert_le "... then closed after tcp_idle_ms ($IDLE_MS ms) + $((2 * TS)) s" $((IDLE_MS + 2000 * TS)) "${c:-x}"
assert_gt "... not before tcp_idle_ms (closed_ms >= $((IDLE_MS - 100)))" $((IDLE_MS - 101)) "${c:--1}"

# ------------------------------------------------ (e) a ClientHello trickled one byte every 500 ms
to0=$(stat_of tls_handshake_timeout)
"${DOT[@]}" -b 127.0.4.2 trickle 5 500 $((6 * TS)) > "$IT_TMP/trickle.out" 2>&1 &
tr_pid=$!
sleep 0.3
r=$(legit 127.0.2.10)
assert_match "another client is served while 5 connections trickle their ClientHello" '^ANSWERED' "$r"
wait "$tr_pid"
tr=$(cat "$IT_TMP/trickle.out")
log "trickle: $(printf '%s' "$tr" | tr '\n' '|')"
assert_eq "the 5 tricklers were closed" "closed 5 of 5" "$(printf '%s\n' "$tr" | grep '^closed')"
assert_le "... within tls_handshake_ms ($HANDSHAKE_MS ms) + $((1500 * TS)) ms" $((HANDSHAKE_MS + 1500 * TS)) \
  "$(field max_life_ms "$tr" | sed 's/^-1$/never/')"
assert_gt "... not before tls_handshake_ms (min life > $((HANDSHAKE_MS - 100)) ms)" $((HANDSHAKE_MS - 100)) \
  "$(field min_life_ms "$tr")"
assert_eq "... counted (stats tls_handshake_timeout)" 5 $(($(stat_of tls_handshake_timeout) - ${to0:-0}))

# ------------------------------------------------ (f) a half-open flood over tls_max_clients
# 300 connections from 300 addresses that never send a byte, each reopened
# 1 s after partdns closes it, against 2 x $MAX_CLIENTS slots: the oldest
# are evicted for the new ones (about 200 a second: each lives about half a
# second, less than tls_handshake_ms), and real clients still get in.
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$PD_PID/status" 2>/dev/null; }
rss0=$(rss_kb)
"${DOT[@]}" -b 127.0.5.1 flood 300 4 1000 > "$IT_TMP/flood.out" 2>&1 &
fl_pid=$!
it_poll 10 yes sh -c "grep -q '^up' '$IT_TMP/flood.out' && echo yes" || true
rss_max=$rss0
answered=0
for n in 1 2 3 4 5 6; do
  r=$(legit 127.0.2.10)
  log "DoT query $n during the flood: $r"
  case $r in ANSWERED*) [ "$(echo "$r" | awk '{print $2}')" -gt $((2000 * TS)) ] || answered=$((answered + 1)) ;; esac
  x=$(rss_kb); [ -z "$x" ] || [ "$x" -le "$rss_max" ] || rss_max=$x
  sleep 0.3
done
wait "$fl_pid"
fl=$(cat "$IT_TMP/flood.out")
log "flood: $(printf '%s' "$fl" | tr '\n' ' '); RSS ${rss0} kB -> max ${rss_max} kB"
assert_eq "6 of 6 DoT queries answered within $((2 * TS)) s during a 300-connection half-open flood" 6 "$answered"
assert_eq "the flood's 300 connections were all opened" "up 300" "$(grep '^up' "$IT_TMP/flood.out")"
assert_gt "flood connections were closed by partdns" 300 "$(field closed "$fl")"
assert_lt "... some before tls_handshake_ms: the oldest evicted for new ones" $((HANDSHAKE_MS - 100)) \
  "$(field min_life_ms "$fl")"
assert_lt "RSS grew by less than 64 MB during the flood" 65536 $((rss_max - rss0))
partdns_alive || die "partdns died during the flood" "$(tail -n 20 "$IT_TMP/partdns.log")"

# ------------------------------------------------ (g) certificate rotation by reload
assert_eq "new connections are shown server1's certificate" "$FP1" "$(s_fp)"
rm -f "$IT_TMP/rotate.stop"
"${DOT[@]}" -b 127.0.3.10 rotate "$IT_TMP/rotate.stop" www.customer.example > "$IT_TMP/rotate.out" 2>&1 &
rot_pid=$!
sleep 1
cp "$P/server2.crt" "$P/tls.crt.new" && mv "$P/tls.crt.new" "$P/tls.crt"
cp "$P/server2.key" "$P/tls.key.new" && mv "$P/tls.key.new" "$P/tls.key"
out=$("$PARTDNSCTL_BIN" -c "$PD_CONF" reload 2>&1)
assert_contains "reload with a new certificate and key" "reloaded" "$out"
if it_poll 10 "$FP2" s_fp; then ok "new connections are shown server2's certificate (openssl s_client)"; else
  fail "new connections are shown server2's certificate (openssl s_client)" "seen: $(s_fp)"
fi
sleep 1
touch "$IT_TMP/rotate.stop"
wait "$rot_pid"
rot=$(cat "$IT_TMP/rotate.out")
log "rotation: $(printf '%s' "$rot" | tr '\n' '|')"
assert_gt "the kept connection asked through the rotation" 20 "$(field kept_sent "$rot")"
assert_eq "... and every query of it was answered: the reload dropped no open connection" \
  "$(field kept_sent "$rot")" "$(field kept_answered "$rot")"
assert_gt "new connections were made through the rotation" 10 "$(field fresh_conns "$rot")"
assert_eq "... and every one was answered: no query lost" "$(field fresh_conns "$rot")" "$(field fresh_answered "$rot")"
assert_eq "... no error" "0" "$(field errors "$rot")"
assert_eq "... they saw server1's certificate, then server2's (and nothing else)" "$FP1 $FP2" \
  "$(printf '%s\n' "$rot" | awk '$1 == "fps" {for (i = 2; i <= NF; i++) {split($i, a, ":"); printf "%s%s", (i > 2 ? " " : ""), a[1]}; print ""}')"

# a broken key: the reload says why, naming the file; the previous certificate stays
log_lines=$(wc -l < "$IT_TMP/partdns.log")
printf -- '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n' > "$P/tls.key"
out=$("$PARTDNSCTL_BIN" -c "$PD_CONF" reload 2>&1)
newlog=$(tail -n +$((log_lines + 1)) "$IT_TMP/partdns.log")
log "reload with a broken key: $out"
assert_contains "a broken key: the reload's answer or the log names the key file" "$P/tls.key" "$out
$newlog"
assert_eq "... new connections still get server2's certificate" "$FP2" "$(s_fp)"
assert_eq "... and are answered" "203.0.113.10" "$(kd 127.0.1.10 www.customer.example)"
# the file fixed again (server1 back): a reload takes it
cp "$P/server1.key" "$P/tls.key"
cp "$P/server1.crt" "$P/tls.crt"
assert_contains "fixed files: reload" "reloaded" "$("$PARTDNSCTL_BIN" -c "$PD_CONF" reload 2>&1)"
if it_poll 5 "$FP1" s_fp; then ok "... and new connections get the fixed pair's certificate"; else
  fail "... and new connections get the fixed pair's certificate" "seen: $(s_fp)"
fi

# ------------------------------------------------ still alive, UDP too
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
assert_eq "UDP still answers" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
assert_eq "DoT still answers" "203.0.113.10" "$(kd 127.0.1.10 www.customer.example)"
it_done
