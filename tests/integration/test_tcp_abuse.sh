#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# TCP under abuse (tcpabuse.c): a pipeliner that never reads (server.tcp_out_max, idle close),
# tricklers (server.tcp_message_ms, eviction of the longest idle at tcp_max_clients), one
# address holding many connections (server.tcp_max_per_client, counted across threads).
. "$(dirname "$0")/lib.sh"
harness_init tcp_abuse
harness_start_all
pd_require_bins
TCPABUSE=${TCPABUSE_BIN:-$PARTDNS_SRC/build/tests/integration/tcpabuse}
[ -x "$TCPABUSE" ] || die "tcpabuse not found: $TCPABUSE (build target tcpabuse, or set TCPABUSE_BIN)"

# small TCP limits, so that a few hundred connections reach them: 2 threads x 20.
# The pipeliner's address is exempt from the query rate (server.client_qps, which
# would refuse most of its queries with small replies): what is tested here is the
# TCP output cap, which must hold for an exempt forwarder too.
IDLE_MS=5000
MESSAGE_MS=1000
PER_CLIENT=4
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "/^  store:/a\\
  tcp_idle_ms: $IDLE_MS\\
  tcp_max_clients: 20\\
  tcp_message_ms: $MESSAGE_MS\\
  tcp_max_per_client: $PER_CLIENT\\
  client_exempt: [ 127.0.4.0/24 ]" "$PD_CONF"
partdns_start "$PD_CONF"

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$PD_PID/status" 2>/dev/null; }
stat_of() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }
field() { printf '%s\n' "$2" | awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' | head -n 1; }
# assert_gt DESC MIN ACTUAL (integers): ACTUAL > MIN
assert_gt() {
  if [[ "$3" =~ ^-?[0-9]+$ ]] && [ "$3" -gt "$2" ]; then ok "$1"; else
    fail "$1" "expected: > $2" "seen:     $3"
  fi
}
ms_now() { echo $(($(date +%s%N) / 1000000)); }

# a TCP query from a well-behaved client: "ANSWERED <ms>" or "FAILED <ms>"
legit_tcp() {
  local t0 out
  t0=$(ms_now)
  out=$(dig +time=3 +tries=1 -b "$1" @"$PD_ADDR" -p "$PD_PORT" www.customer.example A +tcp +noall +answer 2>&1)
  if awk '$4 == "A" {print $5}' <<<"$out" | grep -qx 203.0.113.10; then
    echo "ANSWERED $(($(ms_now) - t0))"
  else
    echo "FAILED $(($(ms_now) - t0))"
  fi
}

# ------------------------------------------------ (a) a pipeliner that never reads
# Each query asks for a ~3 KB TXT answer from the cache: without a cap on queued
# replies, 200k of them would queue ~600 MB. Once partdns stops reading, the kernel's
# buffers stop the client (about 100k queries a connection); partdns closes the
# connection after tcp_idle_ms and the pipeliner goes on with a new one.
out=$(pd_dig 127.0.1.10 big.customer.example TXT +tcp +noall +answer)
assert_eq "cache warmed with big TXT" "12" "$(printf '%s\n' "$out" | awk '$4 == "TXT"' | grep -c .)"
rss0=$(rss_kb)
"$TCPABUSE" -b 127.0.4.1 -d 20 -q big.customer.example -y TXT pipeline "$PD_ADDR" "$PD_PORT" 200000 \
  > "$IT_TMP/pipeline.out" 2>&1 &
pipe_pid=$!
rss_max=$rss0
legit=""
for ((i = 0; i < 260; i++)); do
  kill -0 "$pipe_pid" 2>/dev/null || break
  r=$(rss_kb); [ -z "$r" ] || [ "$r" -le "$rss_max" ] || rss_max=$r
  # a normal TCP client, 2 s into the flood
  [ "$i" -ne 10 ] || legit=$(legit_tcp 127.0.2.10)
  sleep 0.1
done
wait "$pipe_pid"
pipe=$(cat "$IT_TMP/pipeline.out")
log "pipeliner: $(printf '%s' "$pipe" | tr '\n' ' '); RSS ${rss0} kB -> max ${rss_max} kB"
assert_le "the pipeliner pushed 200k queries" 200000 "$(printf '%s\n' "$pipe" | awk '$1 == "sent" {print $2}')"
assert_lt "RSS grew by less than 64 MB while one client pipelined 200k queries without reading" \
  65536 $((rss_max - rss0))
assert_match "a normal TCP query was answered during the pipeline" '^ANSWERED' "$legit"
closed_ms=$(printf '%s\n' "$pipe" | awk '$1 == "closed_ms" {print $2}')
# it stops taking replies at once: closed after tcp_idle_ms, the sweep runs once a second
assert_lt "the pipeliner, which takes no replies, was closed after tcp_idle_ms ($IDLE_MS ms) + slack" \
  $((IDLE_MS + 4000)) "$( [ "${closed_ms:--1}" -ge 0 ] && echo "$closed_ms" || echo never)"
assert_gt "reading paused at least once (stats tcp_paused)" 0 "$(stat_of tcp_paused)"
assert_gt "idle connections closed (stats tcp_idle_closed)" 0 "$(stat_of tcp_idle_closed)"

# ------------------------------------------------ (b) tricklers fill every slot
# 100 connections from 100 addresses (more than 2 threads x 20 slots), one byte a
# second each, reopened 100 ms after they are closed: legitimate clients still get in and answered.
"$TCPABUSE" -b 127.0.5.1 trickle "$PD_ADDR" "$PD_PORT" 100 12 > "$IT_TMP/trickle.out" 2>&1 &
trickle_pid=$!
sleep 3
answered=0
for n in 1 2 3 4 5; do
  r=$(legit_tcp 127.0.2.10)
  log "legitimate TCP query $n during the trickle: $r"
  case $r in ANSWERED*) [ "${r#ANSWERED }" -gt 3000 ] || answered=$((answered + 1)) ;; esac
  sleep 0.5
done
assert_eq "5 of 5 legitimate TCP queries answered within 3 s among 100 tricklers" 5 "$answered"
wait "$trickle_pid"
trickle=$(cat "$IT_TMP/trickle.out")
log "trickle: $trickle"
assert_gt "tricklers' connections were closed" 100 "$(field closed "$trickle")"
assert_le "no trickled connection lived past 2 x tcp_message_ms + 1 s" $((2 * MESSAGE_MS + 1000)) \
  "$(field max_life_ms "$trickle")"
assert_gt "longest-idle connections evicted for new ones (stats tcp_evicted)" 0 "$(stat_of tcp_evicted)"

# Fewer tricklers than slots (nothing is evicted): the message deadline alone cuts them,
# long before tcp_idle_ms.
"$TCPABUSE" -b 127.0.5.1 trickle "$PD_ADDR" "$PD_PORT" 10 7 > "$IT_TMP/trickle2.out" 2>&1 &
trickle_pid=$!
evicted0=$(stat_of tcp_evicted)
wait "$trickle_pid"
trickle=$(cat "$IT_TMP/trickle2.out")
log "trickle (10): $trickle"
assert_gt "10 tricklers were each cut at least once" 9 "$(field closed "$trickle")"
assert_le "... within 2 x tcp_message_ms + 1 s of connecting" $((2 * MESSAGE_MS + 1000)) \
  "$(field max_life_ms "$trickle")"
assert_eq "... by the message deadline, not by eviction" "$evicted0" "$(stat_of tcp_evicted)"
assert_gt "slow messages cut (stats tcp_slow_closed)" 0 "$(stat_of tcp_slow_closed)"

# ------------------------------------------------ (c) one address, many connections
refused0=$(stat_of tcp_refused_client)
"$TCPABUSE" -b 127.0.6.1 -d 6 hold "$PD_ADDR" "$PD_PORT" 10 > "$IT_TMP/hold.out" 2>&1 &
hold_pid=$!
for ((i = 0; i < 50; i++)); do
  [ -s "$IT_TMP/hold.out" ] && break
  sleep 0.1
done
hold=$(head -n 1 "$IT_TMP/hold.out")
log "hold: $hold"
# the limit holds across both threads (SO_REUSEPORT spreads the 10 over them)
assert_eq "one address holding 10 connections keeps tcp_max_per_client ($PER_CLIENT), the rest closed at once" \
  "open $PER_CLIENT closed $((10 - PER_CLIENT))" "$hold"
assert_eq "... counted as refused (stats tcp_refused_client)" $((10 - PER_CLIENT)) \
  $(($(stat_of tcp_refused_client) - refused0))
assert_match "another address is answered over TCP meanwhile" '^ANSWERED' "$(legit_tcp 127.0.2.10)"
assert_match "the holding address is not (its TCP slots are used up)" '^FAILED' "$(legit_tcp 127.0.6.1)"
assert_eq "... but still over UDP" "203.0.113.10" "$(dig_a 127.0.6.1 www.customer.example)"
wait "$hold_pid"

# ------------------------------------------------ (d) still alive
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
assert_match "TCP answers after the abuse" '^ANSWERED' "$(legit_tcp 127.0.1.10)"
it_done
