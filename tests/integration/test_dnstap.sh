#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# server.dnstap: client queries and replies (UDP, TCP) and the EDNS pool's own upstream queries, with the
# mapped ECS inside, as an independent reader (BIND's dnstap-read) decodes them; a reader that goes away
# and comes back, or never reads, costs no answer and no shutdown.
. "$(dirname "$0")/lib.sh"
harness_init dnstap
for b in fstrm_capture dnstap-read; do
  command -v "$b" >/dev/null 2>&1 || die "$b not installed (tools/deps.sh installs fstrm-bin, bind9-dnsutils)"
done
harness_start_all
pd_require_bins

SOCK=$IT_TMP/dnstap.sock
CAP_PID=""

# capture_start FILE: fstrm_capture on SOCK into FILE, wait for its socket.
capture_start() {
  rm -f "$SOCK"
  fstrm_capture -t protobuf:dnstap.Dnstap -u "$SOCK" -w "$1" >> "$IT_TMP/capture.log" 2>&1 &
  CAP_PID=$!
  IT_PIDS[capture]=$CAP_PID
  local i
  for ((i = 0; i < 100; i++)); do
    [ -S "$SOCK" ] && return 0
    sleep 0.05
  done
  die "fstrm_capture did not make $SOCK within 5 s" "$(tail -n 5 "$IT_TMP/capture.log")"
}

# capture_stop: SIGINT makes fstrm_capture close its file cleanly.
capture_stop() {
  [ -n "$CAP_PID" ] || return 0
  kill -INT "$CAP_PID" 2>/dev/null
  it_wait_exit "$CAP_PID" 5
  unset "IT_PIDS[capture]"
  CAP_PID=""
}

# tap_lines FILE: one line per dnstap message:
#   TYPE PROTO QUERY_ADDR RESPONSE_ADDR RESPONSE_PORT QNAME ECS IDENTITY VERSION
# from dnstap-read -y (YAML), ECS as ADDR/SOURCE or "-".
tap_lines() {
  dnstap-read -y "$1" 2>/dev/null | awk '
    function emit() {
      if (type != "") print type, proto, qa, ra, rp, qn, ecs, id, ver
      type = ""; proto = "-"; qa = "-"; ra = "-"; rp = "-"; qn = "-"; ecs = "-"; id = "-"; ver = "-"
    }
    BEGIN { emit() }
    /^---/                       { emit(); next }
    /^identity: /                { id = $2; next }
    /^version: /                 { ver = $2 "_" $3; next }
    /^  type: /                  { type = $2; next }
    /^  socket_protocol: /       { proto = $2; next }
    /^  query_address: /         { qa = $2; gsub(/"/, "", qa); next }
    /^  response_address: /      { ra = $2; gsub(/"/, "", ra); next }
    /^  response_port: /         { rp = $2; next }
    /^      - \x27/ && qn == "-" { qn = $2; sub(/^\x27/, "", qn); next }
    /CLIENT-SUBNET: /            { e = $0; sub(/.*CLIENT-SUBNET: */, "", e); split(e, p, "/"); ecs = p[1] "/" p[2]; next }
    END { emit() }'
}

pd_write_conf "$IT_TMP/partdns.yaml"
# server.dnstap: the capture's socket
sed -i "/^server:/a\\  dnstap: $SOCK" "$PD_CONF"
pdctl domain add cdn.test --subtree

capture_start "$IT_TMP/tap1.fstrm"
partdns_start "$PD_CONF"

# a normal name and a flagged one from a nanjing client (mapped 198.51.100.1), over UDP; the flagged one
# again over TCP (a cache hit)
assert_eq "www.customer.example (normal) from nanjing" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
assert_eq "video.cdn.test (flagged) from nanjing" "203.0.113.1" "$(dig_a 127.0.1.10 video.cdn.test)"
assert_eq "video.cdn.test over TCP from nanjing" "203.0.113.1" "$(dig_a 127.0.1.11 video.cdn.test +tcp)"
assert_eq "every thread (dnstap's writer too) blocks the signals the daemon waits for" ok \
  "$(pd_threads_block_signals "$PD_PID")"
stats=$(pdctl stats)
assert_match "stats count dnstap_dropped (none dropped with a reader)" "^dnstap_dropped 0$" "$stats"

partdns_stop
assert_eq "partdns exits 0 after logging to dnstap" "0" "$PD_EXIT_STATUS"
capture_stop
[ -s "$IT_TMP/tap1.fstrm" ] || die "the capture file is empty" "$(tail -n 5 "$IT_TMP/capture.log")"
t=$(tap_lines "$IT_TMP/tap1.fstrm")
log "dnstap messages:"
printf '%s\n' "$t" | sed 's/^/#   /' >&2

# TYPE PROTO QUERY_ADDR RESPONSE_ADDR RESPONSE_PORT QNAME ECS IDENTITY VERSION
for name in www.customer.example. video.cdn.test.; do
  assert_eq "CLIENT_QUERY for $name from the client (127.0.1.10) to the listener over UDP" "1" \
    "$(printf '%s\n' "$t" | awk -v n="$name" -v l="$PD_ADDR" -v p="$PD_PORT" \
        '$1 == "CLIENT_QUERY" && $2 == "UDP" && $3 == "127.0.1.10" && $4 == l && $5 == p && $6 == n' | wc -l)"
  assert_eq "CLIENT_RESPONSE for $name to the client (127.0.1.10) from the listener over UDP" "1" \
    "$(printf '%s\n' "$t" | awk -v n="$name" -v l="$PD_ADDR" -v p="$PD_PORT" \
        '$1 == "CLIENT_RESPONSE" && $2 == "UDP" && $3 == "127.0.1.10" && $4 == l && $5 == p && $6 == n' | wc -l)"
done
assert_eq "CLIENT_QUERY and CLIENT_RESPONSE over TCP for video.cdn.test from 127.0.1.11" "CLIENT_QUERY CLIENT_RESPONSE" \
  "$(printf '%s\n' "$t" | awk -v l="$PD_ADDR" -v p="$PD_PORT" \
      '$2 == "TCP" && $3 == "127.0.1.11" && $4 == l && $5 == p && $6 == "video.cdn.test." {print $1}' | xargs)"
assert_eq "no client message carries ECS" "" \
  "$(printf '%s\n' "$t" | awk '$1 ~ /^CLIENT_/ && $7 != "-"')"

rq=$(printf '%s\n' "$t" | awk '$1 == "RESOLVER_QUERY"')
assert_match "RESOLVER_QUERY for video.cdn.test to the GSLB ($NET.4@53) with ECS 198.51.100.1/32" \
  "^RESOLVER_QUERY UDP [^ ]+ ${NET//./\\.}\\.4 53 video\\.cdn\\.test\\. 198\\.51\\.100\\.1/32 " "$rq"
assert_eq "every RESOLVER_QUERY carries nanjing's mapped address as ECS, nothing else" "" \
  "$(printf '%s\n' "$rq" | awk '$7 != "198.51.100.1/32"')"
assert_eq "no RESOLVER_QUERY names a client address (127.0.1.x) in ECS" "" \
  "$(printf '%s\n' "$rq" | awk '$7 ~ /^127\./')"
# the RESOLVER_QUERY messages whole, as dnstap-read prints them
rqtext=$(dnstap-read -y "$IT_TMP/tap1.fstrm" | awk 'BEGIN { RS = "\n---\n" } /\n  type: RESOLVER_QUERY\n/')
assert_contains "the RESOLVER_QUERY message itself holds the ECS option" "CLIENT-SUBNET: 198.51.100.1/32" "$rqtext"
assert_not_contains "no client address (127.0.1.x) anywhere in a RESOLVER_QUERY" "127.0.1." "$rqtext"
assert_match "RESOLVER_RESPONSE for video.cdn.test from the GSLB, echoing the mapped ECS" \
  "^RESOLVER_RESPONSE UDP [^ ]+ ${NET//./\\.}\\.4 53 video\\.cdn\\.test\\. 198\\.51\\.100\\.1/32 " \
  "$(printf '%s\n' "$t" | awk '$1 == "RESOLVER_RESPONSE"')"
assert_eq "the normal pool (libunbound) logs no upstream query: www.customer.example has none" "" \
  "$(printf '%s\n' "$t" | awk '$1 ~ /^RESOLVER_/ && $6 == "www.customer.example."')"
assert_eq "identity is the host name, version partdns's" "$(hostname) partdns_" \
  "$(printf '%s\n' "$t" | awk 'NR == 1 {sub(/_.*/, "_", $9); print $8, $9}')"

# the reader goes away, then comes back: partdns answers meanwhile and reconnects (fstrm, 1 s)
capture_start "$IT_TMP/tap2.fstrm"
partdns_start "$PD_CONF"
assert_eq "a query with the reader up" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
capture_stop
assert_eq "answers go on with the reader gone" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
sleep 0.5
assert_eq "... and on" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
capture_start "$IT_TMP/tap3.fstrm"
seen=""
for ((i = 0; i < 10; i++)); do
  sleep 0.5
  dig_a 127.0.1.10 back.customer.example >/dev/null
done
partdns_stop
assert_eq "partdns exits 0 after its reader went away and came back" "0" "$PD_EXIT_STATUS"
capture_stop
seen=$(tap_lines "$IT_TMP/tap3.fstrm" | awk '$1 == "CLIENT_QUERY" && $6 == "back.customer.example."' | wc -l)
assert_lt "the new reader gets the queries asked after it came back (seen $seen)" "$seen" 0

# a reader that accepts and never reads (nor answers fstrm's handshake): nothing waits for it
rm -f "$SOCK"
socat UNIX-LISTEN:"$SOCK",fork SYSTEM:'sleep 60' > /dev/null 2>&1 &
IT_PIDS[deaf]=$!
for ((i = 0; i < 100; i++)); do [ -S "$SOCK" ] && break; sleep 0.05; done
partdns_start "$PD_CONF"
for c in 127.0.1.10 127.0.2.10; do
  assert_eq "answers with a reader that never reads ($c)" "203.0.113.10" "$(dig_a "$c" www.customer.example)"
done
partdns_stop 8
assert_eq "partdns stops with a reader that never reads" "0" "$PD_EXIT_STATUS"
assert_le "... within 4 s (stopped in $PD_STOP_MS ms)" 4000 "$PD_STOP_MS"
it_done
