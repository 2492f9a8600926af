#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The PROXY protocol v2 (server.proxy_from): dnsdist (useProxyProtocol, UDP
# and TCP) and haproxy (send-proxy-v2, DoT passed through) in front of
# partdns; each client is classified by the address the header names (its
# city's steered answer, the per-partition counters, the allow list), not by
# the balancer's. Hostile: a header from a source not in proxy_from, a
# proxy_from source without one, truncated and garbage headers (built by
# hand, proxyclient.py), over UDP and TCP; proxy_from changed by reload.
. "$(dirname "$0")/lib.sh"
harness_init proxy
for b in dnsdist haproxy openssl; do
  command -v "$b" >/dev/null 2>&1 || skip "$b not installed (tools/deps.sh installs it)"
done
[ -x /usr/bin/python3 ] || skip "python3 not installed (tools/deps.sh installs it)"
harness_start_all
pd_require_bins

DNSDIST=$NET.54      # dnsdist listens here (53, UDP and TCP) ...
DNSDIST_SRC=$NET.60  # ... and asks partdns from here
HAPROXY=$NET.55      # haproxy listens here (853, TCP) ...
HAPROXY_SRC=$NET.61  # ... and connects to partdns' DoT port from here
LB=$NET.62           # proxyclient.py's own balancer address (in proxy_from until the reload)
LB2=$NET.63          # ... and the one the reload puts there
PX=(/usr/bin/python3 "$IT_LIB_DIR/proxyclient.py" -s "$PD_ADDR" -p "$PD_PORT")
TS=${PARTDNS_TIME_SCALE:-1}   # sanitizer builds: waits for an answer or a close scaled

# a certificate for the DoT listener (kdig +tls here does not validate: test_dot does)
P=$IT_TMP/pki
mkdir -p "$P"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 60 -subj "/CN=dns.example.test" \
  -addext "subjectAltName = DNS:dns.example.test" -keyout "$P/tls.key" -out "$P/tls.crt" >/dev/null 2>&1 ||
  die "openssl: the DoT certificate"

# the allow list holds the cities' loopback nets and the harness' own, not 127.0.9.0/24
PD_ALLOW="[ 127.0.0.0/24, 127.0.1.0/24, 127.0.2.0/24, 127.0.3.0/24, $NET.0/24 ]" pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "/^  store:/a\\
  listen_tls: [ \"$PD_ADDR@853\" ]\\
  tls_cert: $P/tls.crt\\
  tls_key: $P/tls.key\\
  tcp_idle_ms: 3000\\
  tcp_message_ms: 1000\\
  proxy_from: [ $DNSDIST_SRC/32, $HAPROXY_SRC/32, $LB/32 ]" "$PD_CONF"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"

stat_of() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }
# assert_gt DESC MIN ACTUAL (integers): ACTUAL > MIN
assert_gt() {
  if [[ "$3" =~ ^-?[0-9]+$ ]] && [ "$3" -gt "$2" ]; then ok "$1"; else
    fail "$1" "expected: > $2" "seen:     $3"
  fi
}
# listening PROTO ADDR PORT: "yes" once something listens there (ss -u or -t)
listening() { ss -Hln"$1" 2>/dev/null | awk -v a="$2:$3" '$4 == a {f = 1} END {print f ? "yes" : "no"}'; }
# via_dnsdist SRC NAME [DIG-ARGS...]: the A records dnsdist relays to a client at SRC
# ("NO-RESPONSE" when none comes); +tcp among the args for TCP
via_dnsdist() {
  local src=$1 name=$2 out
  shift 2
  out=$(dig +time=$((2 * TS)) +tries=1 -b "$src" @"$DNSDIST" "$name" A +noall +answer +comments "$@" 2>&1) ||
    { echo "NO-RESPONSE"; return 0; }
  case $out in *'status: REFUSED'*) echo REFUSED; return 0 ;; esac
  printf '%s\n' "$out" | awk '$4 == "A" {print $5}' | sort
}
# via_haproxy SRC NAME: the A records of a DoT query through haproxy (kdig +tls)
via_haproxy() {
  local out
  out=$(kdig +tls +timeout=$((3 * TS)) +retry=0 -b "$1" @"$HAPROXY" -p 853 "$2" A +noall +answer 2>&1) ||
    { echo "NO-RESPONSE"; return 0; }
  printf '%s\n' "$out" | awk '$4 == "A" {print $5}' | sort
}

# ------------------------------------------------ dnsdist and haproxy in front
mkdir -p "$IT_TMP/dnsdist" "$IT_TMP/haproxy"
cat > "$IT_TMP/dnsdist/dnsdist.conf" <<EOF
-- written by test_proxy.sh: UDP and TCP on $DNSDIST:53 to partdns, a PROXY v2 header first
setLocal("$DNSDIST:53")
setACL({"127.0.0.0/8"})
newServer({address="$PD_ADDR:$PD_PORT", useProxyProtocol=true, source="$DNSDIST_SRC", name="partdns"})
-- no health checks: the counters below count the clients' queries alone
getServer(0):setUp()
setSecurityPollSuffix("")
EOF
dnsdist --check-config -C "$IT_TMP/dnsdist/dnsdist.conf" > "$IT_TMP/dnsdist/check.log" 2>&1 ||
  die "dnsdist --check-config" "$(cat "$IT_TMP/dnsdist/check.log")"
dnsdist --supervised --disable-syslog -C "$IT_TMP/dnsdist/dnsdist.conf" > "$IT_TMP/dnsdist/dnsdist.log" 2>&1 &
IT_PIDS[dnsdist]=$!
cat > "$IT_TMP/haproxy/haproxy.cfg" <<EOF
# written by test_proxy.sh: DoT on $HAPROXY:853 passed through to partdns, a PROXY v2 header first
global
  maxconn 200
defaults
  mode tcp
  timeout connect 2s
  timeout client 10s
  timeout server 10s
listen dot
  bind $HAPROXY:853
  server partdns $PD_ADDR:853 send-proxy-v2 source $HAPROXY_SRC
EOF
haproxy -c -f "$IT_TMP/haproxy/haproxy.cfg" > "$IT_TMP/haproxy/check.log" 2>&1 ||
  die "haproxy -c" "$(cat "$IT_TMP/haproxy/check.log")"
haproxy -db -f "$IT_TMP/haproxy/haproxy.cfg" > "$IT_TMP/haproxy/haproxy.log" 2>&1 &
IT_PIDS[haproxy]=$!
it_poll 10 yes listening u "$DNSDIST" 53 || die "dnsdist did not listen on $DNSDIST:53 (UDP)" "$(tail -n 20 "$IT_TMP/dnsdist/dnsdist.log")"
it_poll 10 yes listening t "$DNSDIST" 53 || die "dnsdist did not listen on $DNSDIST:53 (TCP)" "$(tail -n 20 "$IT_TMP/dnsdist/dnsdist.log")"
it_poll 10 yes listening t "$HAPROXY" 853 || die "haproxy did not listen on $HAPROXY:853" "$(tail -n 20 "$IT_TMP/haproxy/haproxy.log")"

# ------------------------------------------------ (a) through dnsdist: each client in its own city
# without the header's address, partdns would see dnsdist's ($NET.60, no city): 203.0.113.100
nj0=$(stat_of partition.nanjing.queries); sz0=$(stat_of partition.suzhou.queries)
px0=$(stat_of proxied)
assert_eq "dnsdist UDP, a nanjing client: nanjing's node" "203.0.113.1" "$(via_dnsdist 127.0.1.10 video.customer.example)"
assert_eq "dnsdist UDP, a suzhou client: suzhou's node" "203.0.113.2" "$(via_dnsdist 127.0.2.10 video.customer.example)"
assert_eq "dnsdist TCP, a nanjing client: nanjing's node" "203.0.113.1" "$(via_dnsdist 127.0.1.11 video.customer.example +tcp)"
assert_eq "dnsdist TCP, a suzhou client: suzhou's node" "203.0.113.2" "$(via_dnsdist 127.0.2.11 video.customer.example +tcp)"
assert_eq "dnsdist TCP, a wuxi client: wuxi's node" "203.0.113.3" "$(via_dnsdist 127.0.3.10 video.customer.example +tcp)"
assert_eq "dnsdist UDP, a normal name" "203.0.113.10" "$(via_dnsdist 127.0.1.10 www.customer.example)"
assert_eq "per-partition counters: nanjing's queries (3 through dnsdist)" 3 $(($(stat_of partition.nanjing.queries) - nj0))
assert_eq "per-partition counters: suzhou's queries (2 through dnsdist)" 2 $(($(stat_of partition.suzhou.queries) - sz0))
assert_eq "queries that came with a PROXY header counted (stats proxied)" 6 $(($(stat_of proxied) - ${px0:-0}))
assert_eq "the allow list applies to the client the header names: 127.0.9.9 through dnsdist is refused" "REFUSED" \
  "$(via_dnsdist 127.0.9.9 www.customer.example)"
assert_eq "... as it is when it asks partdns itself" "REFUSED" "$(dig_rcode 127.0.9.9 www.customer.example)"

# ------------------------------------------------ (b) through haproxy: DoT, TLS passed through
assert_eq "haproxy (DoT), a nanjing client: nanjing's node" "203.0.113.1" "$(via_haproxy 127.0.1.10 video.customer.example)"
assert_eq "haproxy (DoT), a suzhou client: suzhou's node" "203.0.113.2" "$(via_haproxy 127.0.2.10 video.customer.example)"
assert_eq "haproxy (DoT), a client in no city: the GSLB's default" "203.0.113.100" \
  "$(via_haproxy 127.0.0.77 video.customer.example)"
assert_eq "a DoT connection from a proxy_from source without a header is closed" "NO-RESPONSE" \
  "$(kdig +tls +timeout=2 +retry=0 -b "$LB" @"$PD_ADDR" -p 853 www.customer.example A +noall +answer >/dev/null 2>&1 &&
     echo answered || echo NO-RESPONSE)"

# ------------------------------------------------ (c) headers built by hand
# the builder first: a valid header from a proxy_from source is taken, over UDP and TCP
assert_eq "hand-built header from $LB (UDP) naming a suzhou client: suzhou's node" "answer NOERROR 203.0.113.2" \
  "$("${PX[@]}" -b "$LB" --client 127.0.2.10 video.customer.example)"
assert_eq "... over TCP, naming a wuxi client: wuxi's node" "answer NOERROR 203.0.113.3" \
  "$("${PX[@]}" -b "$LB" --tcp --client 127.0.3.10 video.customer.example)"
assert_eq "... the LOCAL command (a balancer's own query): the balancer's address, no city" \
  "answer NOERROR 203.0.113.100" "$("${PX[@]}" -b "$LB" --header local video.customer.example)"
assert_eq "a plain query from 127.0.1.10 (not in proxy_from) is answered" "answer NOERROR 203.0.113.1" \
  "$("${PX[@]}" -b 127.0.1.10 --header none video.customer.example)"

# a header from a source not in proxy_from: dropped / closed, counted
ref0=$(stat_of proxy_refused)
assert_eq "a header from 127.0.1.10 (not in proxy_from) naming suzhou, UDP: no answer" "noanswer" \
  "$("${PX[@]}" -b 127.0.1.10 --client 127.0.2.10 video.customer.example)"
out=$("${PX[@]}" -b 127.0.1.10 --tcp --wait $((3 * TS)) --client 127.0.2.10 video.customer.example)
log "a header over TCP from 127.0.1.10: $out"
assert_match "... TCP: connection closed without an answer" "^closed " "$out"
assert_eq "... both counted (stats proxy_refused)" 2 $(($(stat_of proxy_refused) - ${ref0:-0}))

# a proxy_from source without a header: dropped / closed, counted
ref0=$(stat_of proxy_refused)
assert_eq "a plain query from $LB (in proxy_from), UDP: dropped" "noanswer" \
  "$("${PX[@]}" -b "$LB" --header none video.customer.example)"
assert_match "... TCP: closed" "^closed " "$("${PX[@]}" -b "$LB" --tcp --header none video.customer.example)"
assert_eq "... both counted (stats proxy_refused)" 2 $(($(stat_of proxy_refused) - ${ref0:-0}))

# truncated and garbage headers from a proxy_from source, all at once (UDP: no
# answer within 2 s; TCP: closed, the ones that stop mid-header within
# tcp_message_ms + 2 s), while others are answered
mkdir -p "$IT_TMP/bad"
ref0=$(stat_of proxy_refused)
bad_pids=()
for k in truncated sigonly badsig version1 badcmd unix shortaddr toolong tlvoverrun garbage text; do
  "${PX[@]}" -b "$LB" --header "$k" --wait 2 video.customer.example > "$IT_TMP/bad/udp-$k" 2>&1 &
  bad_pids+=($!)
  "${PX[@]}" -b "$LB" --tcp --header "$k" --wait $((5 * TS)) video.customer.example > "$IT_TMP/bad/tcp-$k" 2>&1 &
  bad_pids+=($!)
done
sleep 0.3
assert_eq "during the garbage: a nanjing client through dnsdist is answered" "203.0.113.1" \
  "$(via_dnsdist 127.0.1.10 video.customer.example)"
assert_eq "... and one asking partdns itself" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
wait "${bad_pids[@]}"
for k in truncated sigonly badsig version1 badcmd unix shortaddr toolong tlvoverrun garbage text; do
  assert_eq "bad header '$k' from $LB, UDP: dropped" "noanswer" "$(cat "$IT_TMP/bad/udp-$k")"
  assert_match "bad header '$k' from $LB, TCP: closed" "^closed " "$(cat "$IT_TMP/bad/tcp-$k")"
done
partdns_alive || die "partdns died on bad headers" "$(tail -n 20 "$IT_TMP/partdns.log")"
assert_eq "each bad header counted once (stats proxy_refused: 11 datagrams, 11 connections)" 22 \
  $(($(stat_of proxy_refused) - ${ref0:-0}))
assert_eq "after the garbage: dnsdist UDP still steers" "203.0.113.2" "$(via_dnsdist 127.0.2.10 video.customer.example)"
assert_eq "... dnsdist TCP too" "203.0.113.3" "$(via_dnsdist 127.0.3.10 video.customer.example +tcp)"
assert_eq "... haproxy DoT too" "203.0.113.1" "$(via_haproxy 127.0.1.10 video.customer.example)"

# ------------------------------------------------ (d) proxy_from changed by reload (no restart)
up0=$(stat_of uptime); t0=$(date +%s)
sed -i "s|^  proxy_from: .*|  proxy_from: [ $HAPROXY_SRC/32, $LB2/32 ]|" "$PD_CONF"
assert_contains "reload with dnsdist's and $LB's addresses taken out of proxy_from, $LB2 added" "reloaded" \
  "$("$PARTDNSCTL_BIN" -c "$PD_CONF" reload 2>&1)"
ref0=$(stat_of proxy_refused)
assert_eq "dnsdist's headers are refused now (UDP): no answer" "NO-RESPONSE" \
  "$(via_dnsdist 127.0.1.10 video.customer.example)"
assert_gt "... counted (stats proxy_refused)" 0 $(($(stat_of proxy_refused) - ${ref0:-0}))
assert_eq "$LB without a header is a client like any other now (no city)" "answer NOERROR 203.0.113.100" \
  "$("${PX[@]}" -b "$LB" --header none video.customer.example)"
assert_eq "... and its header is refused" "noanswer" "$("${PX[@]}" -b "$LB" --client 127.0.2.10 video.customer.example)"
assert_eq "$LB2's header is taken: the wuxi client it names gets wuxi's node" "answer NOERROR 203.0.113.3" \
  "$("${PX[@]}" -b "$LB2" --client 127.0.3.10 video.customer.example)"
assert_eq "haproxy, still in proxy_from: DoT still steered" "203.0.113.2" "$(via_haproxy 127.0.2.10 video.customer.example)"
assert_gt "no restart: partdns' uptime went on through the reload" $((up0 + $(date +%s) - t0 - 2)) "$(stat_of uptime)"

partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
