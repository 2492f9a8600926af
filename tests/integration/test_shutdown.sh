#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Graceful shutdown: SIGTERM and SIGINT end partdns with status 0 within 5 s, even with a resolution in flight.
. "$(dirname "$0")/lib.sh"
harness_init shutdown
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example

for sig in TERM INT; do
  partdns_start "$PD_CONF"
  assert_eq "SIG$sig run: answers first" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
  # a resolution that hangs (dead.example.'s server is silent) and an open TCP client
  dig +time=8 +tries=1 -b 127.0.2.10 @"$PD_ADDR" -p "$PD_PORT" www.dead.example A >/dev/null 2>&1 &
  digpid=$!
  exec 5<>"/dev/tcp/$PD_ADDR/$PD_PORT"
  sleep 0.3
  pid=$PD_PID
  t0=$(date +%s%N)
  kill -"$sig" "$pid"
  it_wait_exit "$pid" 5
  ms=$((($(date +%s%N) - t0) / 1000000))
  PD_PID=""
  assert_eq "SIG$sig: exit status 0" "0" "$IT_STOP_STATUS"
  assert_lt "SIG$sig: exited within 5 s (took $ms ms)" 5000 "$ms"
  exec 5>&-
  kill "$digpid" 2>/dev/null; wait "$digpid" 2>/dev/null
  listening=$( { ss -Hlnu; ss -Hlnt; } | awk '{print $4}' | grep -Fx -e "$PD_ADDR:$PD_PORT" -e "[::1]:$PD_PORT")
  assert_eq "SIG$sig: the port is released" "" "$listening"
done
it_done
