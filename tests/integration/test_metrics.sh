#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# server.metrics: GET /metrics in the Prometheus text format (checked by
# promtool), per-partition counters equal to the queries sent, /health,
# the HTTP limits (methods, bodies, unknown paths), a silent client that
# does not hold up a scrape, and the key noted as a restart key on reload.
. "$(dirname "$0")/lib.sh"

harness_init metrics
command -v curl >/dev/null 2>&1 || { echo "FAIL - curl not installed (tools/deps.sh installs it)"; exit 1; }
command -v promtool >/dev/null 2>&1 || { echo "FAIL - promtool not installed (tools/deps.sh installs prometheus)"; exit 1; }
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"

# A free TCP port on partdns' own address of this harness's network.
MPORT=$(it_free_port "$PD_ADDR" 9153 9199)
MURL=http://$PD_ADDR:$MPORT
sed -i "s|^  control: .*|&\n  metrics: \"$PD_ADDR@$MPORT\"|" "$PD_CONF"
assert_contains "the config names the metrics address" "metrics: \"$PD_ADDR@$MPORT\"" "$(cat "$PD_CONF")"
pdctl domain add video.customer.example >/dev/null

# http_code PATH [CURL-ARGS...]: the status code, 000 when nothing answered in 2 s.
http_code() {
  local path=$1
  shift
  curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$MURL$path" 2>/dev/null
}

# /health from the moment the daemon is launched: refused (000) before the
# socket is bound, 503 before the ready point, 200 after; never an error.
( for ((i = 0; i < 200; i++)); do
    c=$(http_code /health)
    echo "$c"
    [ "$c" = 200 ] && break
    sleep 0.05
  done ) > "$IT_TMP/health.seq" &
poller=$!
partdns_start "$PD_CONF"
wait "$poller"
seq=$(tr '\n' ' ' < "$IT_TMP/health.seq")
log "/health while starting: $seq"
assert_match "/health ends at 200 once ready" "200 $" "$seq"
assert_eq "/health says nothing but refused, 503 or 200 while starting" "" \
  "$(grep -vxE '000|503|200' "$IT_TMP/health.seq")"
assert_eq "/health body" "ready" "$(curl -s --max-time 2 "$MURL/health")"

scrape() { curl -s --max-time 5 "$MURL/metrics"; }
# value METRICS NAME{LABELS}: the sample's value ("" when missing)
value() { printf '%s\n' "$1" | awk -v k="$2" '$1 == k {print $2}'; }

m0=$(scrape)
common0=$(value "$m0" 'partdns_partition_queries_total{partition="common",transport="udp"}')
cnx0=$(value "$m0" 'partdns_partition_responses_total{partition="common",rcode="NXDOMAIN"}')
udp0=$(value "$m0" 'partdns_queries_total{transport="udp"}')
tcp0=$(value "$m0" 'partdns_queries_total{transport="tcp"}')

# Known queries. nanjing: 3 UDP of a normal name (1 miss, 2 hits) and 1 of a
# flagged name (an EDNS resolution with nanjing's ECS); suzhou: the normal
# name once over UDP and twice over TCP (all hits); common (127.0.9.x): 2 UDP.
assert_eq "nanjing: static" "203.0.113.100" "$(dig_a 127.0.1.10 static.customer.example)"
dig_a 127.0.1.11 static.customer.example >/dev/null
dig_a 127.0.1.12 static.customer.example >/dev/null
assert_eq "nanjing: video steered" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
dig_a 127.0.2.10 static.customer.example >/dev/null
assert_eq "suzhou over TCP" "203.0.113.100" "$(dig_a 127.0.2.10 static.customer.example +tcp)"
dig_a 127.0.2.11 static.customer.example +tcp >/dev/null
dig_a 127.0.9.10 static.customer.example >/dev/null
dig_a 127.0.9.11 nope.customer.example >/dev/null

m=$(scrape)
printf '%s\n' "$m" > "$IT_TMP/metrics.txt"
out=$(promtool check metrics < "$IT_TMP/metrics.txt" 2>&1)
st=$?
assert_eq "promtool check metrics: no problem" "0 " "$st $out"
assert_eq "every family has HELP and TYPE" \
  "$(grep -c '^# HELP ' "$IT_TMP/metrics.txt")" "$(grep -c '^# TYPE ' "$IT_TMP/metrics.txt")"
assert_eq "no sample outside a declared family" "" "$(awk '
  /^# TYPE / {fam[$3] = 1; next} /^#/ {next}
  { n = $1; sub(/\{.*/, "", n); b = n; sub(/_(bucket|sum|count)$/, "", b); if (!(n in fam) && !(b in fam)) print n }' "$IT_TMP/metrics.txt")"
assert_match "content type is the text format 0.0.4" "text/plain; version=0.0.4" \
  "$(curl -s -I --max-time 2 "$MURL/metrics" | tr -d '\r')"

assert_eq "nanjing UDP queries" 4 "$(value "$m" 'partdns_partition_queries_total{partition="nanjing",transport="udp"}')"
assert_eq "nanjing TCP queries" 0 "$(value "$m" 'partdns_partition_queries_total{partition="nanjing",transport="tcp"}')"
assert_eq "nanjing hits" 2 "$(value "$m" 'partdns_partition_cache_hits_total{partition="nanjing"}')"
assert_eq "nanjing misses" 2 "$(value "$m" 'partdns_partition_cache_misses_total{partition="nanjing"}')"
assert_eq "nanjing ECS resolutions" 1 "$(value "$m" 'partdns_partition_ecs_resolutions_total{partition="nanjing"}')"
assert_eq "suzhou UDP queries" 1 "$(value "$m" 'partdns_partition_queries_total{partition="suzhou",transport="udp"}')"
assert_eq "suzhou TCP queries" 2 "$(value "$m" 'partdns_partition_queries_total{partition="suzhou",transport="tcp"}')"
assert_eq "suzhou hits" 3 "$(value "$m" 'partdns_partition_cache_hits_total{partition="suzhou"}')"
assert_eq "suzhou misses" 0 "$(value "$m" 'partdns_partition_cache_misses_total{partition="suzhou"}')"
assert_lt "nanjing's steered answer is in its own part of the cache (entries)" \
  "$(value "$m" 'partdns_partition_cache_entries{partition="nanjing"}')" 0
assert_lt "... (bytes)" "$(value "$m" 'partdns_partition_cache_bytes{partition="nanjing"}')" 0
assert_eq "dnstap is off: no frame dropped" 0 "$(value "$m" 'partdns_dnstap_dropped_total')"
assert_eq "no zone here needs the stub context's retry" 0 "$(value "$m" 'partdns_stub_retries_total')"
assert_eq "suzhou asked no flagged name: nothing under its keys" 0 \
  "$(value "$m" 'partdns_partition_cache_entries{partition="suzhou"}')"
assert_eq "the partitions' entries add up to the cache's" "$(value "$m" 'partdns_cache_entries')" \
  "$(printf '%s\n' "$m" | awk '/^partdns_partition_cache_entries\{/ {n += $2} END {print n + 0}')"
assert_eq "nanjing NOERROR replies" 4 "$(value "$m" 'partdns_partition_responses_total{partition="nanjing",rcode="NOERROR"}')"
assert_eq "suzhou NOERROR replies" 3 "$(value "$m" 'partdns_partition_responses_total{partition="suzhou",rcode="NOERROR"}')"
assert_eq "suzhou: no NXDOMAIN" 0 "$(value "$m" 'partdns_partition_responses_total{partition="suzhou",rcode="NXDOMAIN"}')"
assert_eq "common NXDOMAIN replies: 1 more" $((cnx0 + 1)) \
  "$(value "$m" 'partdns_partition_responses_total{partition="common",rcode="NXDOMAIN"}')"
assert_eq "wuxi: nothing" 0 "$(value "$m" 'partdns_partition_queries_total{partition="wuxi",transport="udp"}')"
assert_eq "common UDP queries: 2 more" $((common0 + 2)) \
  "$(value "$m" 'partdns_partition_queries_total{partition="common",transport="udp"}')"
assert_eq "all UDP queries: 7 more" $((udp0 + 7)) "$(value "$m" 'partdns_queries_total{transport="udp"}')"
assert_eq "all TCP queries: 2 more" $((tcp0 + 2)) "$(value "$m" 'partdns_queries_total{transport="tcp"}')"
assert_match "an ECS query was sent" '^[1-9]' "$(value "$m" partdns_ecs_queries_sent_total)"
assert_match "NXDOMAIN counted" '^[1-9]' "$(value "$m" 'partdns_responses_total{rcode="NXDOMAIN"}')"
assert_match "in flight is a gauge per pool" '^partdns_inflight\{pool="edns"\} 0$' "$m"
assert_match "cache entries" '^[1-9]' "$(value "$m" partdns_cache_entries)"

# Histograms: cumulative buckets, +Inf = _count, and something observed.
hist_check() { # NAME LABELS-PREFIX: "ok" or what is wrong
  printf '%s\n' "$m" | awk -v n="$1" -v l="$2" '
    index($1, n "_bucket{" l) == 1 { if ($2 + 0 < prev) bad = bad " not cumulative at " $1; prev = $2 + 0; last = $2 + 0; nb++ }
    $1 == n "_count" || $1 == n "_count{" substr(l, 1, length(l) - 1) "}" { cnt = $2 + 0 }
    END { if (nb != 16) bad = bad " " nb " buckets"; if (last != cnt) bad = bad " +Inf " last " != count " cnt;
          if (cnt == 0) bad = bad " nothing observed"; print bad == "" ? "ok" : bad }'
}
assert_eq "response histogram" ok "$(hist_check partdns_response_seconds '')"
assert_eq "normal-pool latency histogram" ok "$(hist_check partdns_upstream_latency_seconds 'pool="normal",')"
assert_eq "EDNS-pool latency histogram" ok "$(hist_check partdns_upstream_latency_seconds 'pool="edns",')"

# The same counters partdnsctl stats reads (one set of counters, two views).
stats=$(pdctl stats)
assert_eq "stats and metrics agree: nanjing hits" "$(printf '%s\n' "$stats" | awk '$1 == "partition.nanjing.hits" {print $2}')" \
  "$(value "$m" 'partdns_partition_cache_hits_total{partition="nanjing"}')"

# HTTP limits.
assert_eq "HEAD /metrics" 200 "$(http_code /metrics -I)"
assert_eq "POST is 405" 405 "$(http_code /metrics -X POST)"
assert_match "405 says Allow" '^Allow: GET, HEAD' "$(curl -s -i --max-time 2 -X DELETE "$MURL/metrics" | tr -d '\r')"
assert_eq "a GET with a body is refused" 400 "$(http_code /metrics -X GET --data-binary 'x=1')"
assert_eq "unknown path is 404" 404 "$(http_code /nope)"

# Silent clients: 6 connections from 127.0.0.1 that never send a byte; a
# scrape beside them (also from another source address) is served at once.
for fd in 20 21 22 23 24 25; do eval "exec $fd<>/dev/tcp/$PD_ADDR/$MPORT" || fail "silent connection $fd"; done
t0=$(date +%s%N)
code=$(http_code /metrics)
t1=$(date +%s%N)
assert_eq "scrape beside silent clients" 200 "$code"
assert_le "and within 1 s" 1000 "$(((t1 - t0) / 1000000))"
assert_eq "scrape from another address too" 200 "$(http_code /metrics --interface 127.0.0.2)"
# the connection timeout (5 s) closes them: a read sees EOF
t0=$(date +%s)
timeout 10 cat <&20 >/dev/null
t1=$(date +%s)
assert_le "a silent client is closed within the timeout" 8 $((t1 - t0))
for fd in 20 21 22 23 24 25; do eval "exec $fd>&-"; done

# server.metrics needs a restart: a reload says so and keeps serving.
sed -i "s|metrics: \"$PD_ADDR@$MPORT\"|metrics: \"$PD_ADDR@$((MPORT + 1))\"|" "$PD_CONF"
out=$("$PARTDNSCTL_BIN" -c "$PD_CONF" reload 2>&1)
assert_contains "reload notes server.metrics" "server.metrics changed; it takes effect at the next restart" "$out"
assert_eq "still served on the old address" 200 "$(http_code /health)"

partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
assert_eq "after the stop nothing answers" 000 "$(http_code /health)"
it_done
