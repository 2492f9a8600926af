#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# DNS over HTTPS (server.listen_https, RFC 8484): kdig +https (HTTP/2 POST and
# GET), curl over HTTP/2 and HTTP/1.1, Cache-Control from the answer's TTL, a
# flagged name steered by the DoH client's own city, the HTTP errors (404,
# 405, 400, 415, 413) that never hang, X-Forwarded-For believed from a
# balancer of server.proxy_from only, and the DDR answer (server.ddr) naming
# the DoT and DoH listeners.
. "$(dirname "$0")/lib.sh"
harness_init doh
command -v openssl >/dev/null 2>&1 || skip "openssl not installed (tools/deps.sh installs it)"
command -v curl >/dev/null 2>&1 || skip "curl not installed (tools/deps.sh installs it)"
harness_start_all
pd_require_bins

# a self-signed certificate for dns.example.test
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj "/CN=dns.example.test" \
  -addext "subjectAltName=DNS:dns.example.test" -keyout "$IT_TMP/tls.key" -out "$IT_TMP/tls.crt" >/dev/null 2>&1 ||
  die "openssl: certificate"
BALANCER=127.0.9.9
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "/^  store:/a\\
  listen_tls: [ \"$PD_ADDR@853\" ]\\
  listen_https: [ \"$PD_ADDR@443\" ]\\
  tls_cert: $IT_TMP/tls.crt\\
  tls_key: $IT_TMP/tls.key\\
  proxy_from: [ $BALANCER/32 ]\\
  ddr: true" "$PD_CONF"
out=$("$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1)
assert_contains "partdns -t names the certificate and its expiry" "TLS certificate for dns.example.test, valid until" "$out"
partdns_start "$PD_CONF"
pdctl domain add video.customer.example >/dev/null

DOH=(/usr/bin/python3 "$IT_LIB_DIR/dohclient.py" -s "$PD_ADDR" -p 443)
# b64q NAME: the A query for NAME (ID 0, no EDNS) as GET's dns= parameter
b64q() { /usr/bin/python3 -c '
import base64, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import dnsmsg
print(base64.urlsafe_b64encode(dnsmsg.query(0, sys.argv[2], "A", edns=False)).decode().rstrip("="))' "$IT_LIB_DIR" "$1"; }
URL="https://$PD_ADDR/dns-query"

# ------------------------------------------------ HTTP/2: kdig and curl
out=$(kdig +https +timeout=5 @"$PD_ADDR" -p 443 www.customer.example A 2>&1)
assert_contains "kdig +https (HTTP/2 POST): a session" "HTTP/2-POST" "$out"
assert_contains "kdig +https: the answer" "203.0.113.10" "$out"
out=$(kdig +https-get +timeout=5 @"$PD_ADDR" -p 443 plain.customer.example A 2>&1)
assert_contains "kdig +https-get (HTTP/2 GET): the answer" "203.0.113.11" "$out"
# the cached TTL first: it only counts down, so the DoH reply's max-age, read after, is at most it
ttl=$(pd_dig 127.0.1.10 www.customer.example A +noall +answer | awk '$4 == "A" {print $2}' | head -n 1)
hdrs=$(curl -sk --http2 -D - -o "$IT_TMP/r.bin" "$URL?dns=$(b64q www.customer.example)")
assert_contains "curl --http2 GET: 200" "HTTP/2 200" "$hdrs"
assert_contains "... application/dns-message" "content-type: application/dns-message" "$hdrs"
age=$(printf '%s\n' "$hdrs" | tr -d '\r' | sed -n 's/^cache-control: max-age=//p')
assert_le "... Cache-Control max-age at most the answer's TTL ($ttl)" "${ttl:-0}" "${age:-99999999}"
assert_gt "... and more than 0" 0 "${age:-0}"

# ------------------------------------------------ HTTP/1.1, and a client's city
out=$("${DOH[@]}" -b 127.0.1.10 www.customer.example)
assert_contains "HTTP/1.1 POST: 200" "200" "$(printf '%s\n' "$out" | head -n 1)"
assert_contains "HTTP/1.1 POST: the answer" "A 203.0.113.10" "$out"
nanjing=$(dig_a 127.0.1.10 video.customer.example)
wuxi=$(dig_a 127.0.3.10 video.customer.example)
assert_ne "nanjing and wuxi get different nodes over UDP" "$nanjing" "$wuxi"
out=$(curl -sk --http2 --interface 127.0.1.10 -o "$IT_TMP/v.bin" -w '%{http_code}' "$URL?dns=$(b64q video.customer.example)")
assert_eq "a flagged name over DoH: 200" "200" "$out"
assert_contains "... steered to the DoH client's own city (nanjing)" "A $nanjing" \
  "$("${DOH[@]}" -b 127.0.1.10 video.customer.example)"

# ------------------------------------------------ X-Forwarded-For: from a balancer of server.proxy_from only
out=$("${DOH[@]}" -b "$BALANCER" --proxy-local --xff 127.0.1.10 video.customer.example)
assert_contains "X-Forwarded-For from the balancer (after its PROXY v2 header): nanjing's node" "A $nanjing" "$out"
out=$("${DOH[@]}" -b 127.0.3.10 --xff 127.0.1.10 video.customer.example)
assert_contains "X-Forwarded-For from anyone else is ignored: wuxi's own node" "A $wuxi" "$out"

# ------------------------------------------------ HTTP errors, each answered at once
code() { curl -sk --max-time 5 -o /dev/null -w '%{http_code}' "$@"; }
assert_eq "another path: 404" "404" "$(code --http2 "https://$PD_ADDR/other?dns=$(b64q www.customer.example)")"
assert_eq "PUT: 405" "405" "$(code --http2 -X PUT --data-binary x "$URL")"
assert_eq "bad base64url: 400" "400" "$(code --http2 "$URL?dns=%%%%")"
assert_eq "no dns parameter: 400" "400" "$(code --http2 "$URL?x=1")"
assert_eq "POST text/plain: 415" "415" "$(code --http2 -H 'content-type: text/plain' --data-binary x "$URL")"
head -c 70000 /dev/zero > "$IT_TMP/big.bin"
assert_eq "POST over 65535 bytes: 413" "413" \
  "$(code --http2 -H 'content-type: application/dns-message' --data-binary @"$IT_TMP/big.bin" "$URL")"
assert_eq "HTTP/1.1 PUT: 405" "405" "$("${DOH[@]}" --method PUT www.customer.example | head -n 1)"
assert_eq "HTTP/1.1 bad base64url: 400" "400" \
  "$("${DOH[@]}" --method GET --raw-dns 'a*b' www.customer.example | head -n 1)"

# ------------------------------------------------ DDR
out=$(pd_dig 127.0.1.10 _dns.resolver.arpa SVCB +noall +answer)
assert_contains "DDR: the DoT listener" "alpn=\"dot\"" "$out"
assert_contains "DDR: the DoH listener (port 443: the default, not written)" "alpn=\"h2\" ipv4hint=$PD_ADDR" "$out"
assert_contains "... dohpath" "/dns-query{?dns}" "$out"
assert_contains "... the name on the certificate" "dns.example.test." "$out"

stat_of() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }
assert_gt "stats: doh queries counted" 5 "$(stat_of doh)"
assert_gt "stats: TLS handshakes counted" 5 "$(stat_of tls_handshakes)"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
