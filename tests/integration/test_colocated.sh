#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The normal pool colocated with the listeners (server.threads == resolver.threads):
# each listener resolves its own misses in its own loop, libunbound's timers
# included; the control socket's queries still reach a pool thread's queue.
# Apart (resolver.threads != server.threads), the pool's own threads do it all.
. "$(dirname "$0")/lib.sh"
harness_init colocated
harness_start_all
pd_require_bins

stat() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }

# start SERVER_THREADS RESOLVER_THREADS NAME
start() {
  PD_THREADS=$1 pd_write_conf "$IT_TMP/$3.yaml"
  sed -i "s|^resolver:$|resolver:\n  threads: $2|" "$PD_CONF"
  partdns_start "$PD_CONF"
}

# misses TAG: 24 never-asked names from 12 clients (spread over the listeners); prints how many were NXDOMAIN
misses() {
  local i n=0
  for ((i = 0; i < 24; i++)); do
    [ "$(dig_rcode "127.0.1.$((10 + i % 12))" "q$i-$1.customer.example" A)" = NXDOMAIN ] && n=$((n + 1))
  done
  echo "$n"
}

start 2 2 colocated
assert_eq "colocated: 24 misses answered (NXDOMAIN)" 24 "$(misses colo)"
assert_eq "colocated: a name that exists resolves" "203.0.113.10" "$(dig_a 127.0.3.10 www.customer.example)"
lookups=$(stat normal.lookups); here=$(stat normal.started_here)
log "colocated: lookups $lookups, started_here $here"
assert_le "colocated: every miss went to libunbound ($lookups lookups)" "${lookups:-0}" 24
assert_eq "colocated: ... each started by the listener that read it" "$lookups" "$here"
# the control thread is no listener: its query goes through a pool thread's queue
out=$(pdctl query q-ctl.customer.example --partition wuxi)
assert_contains "colocated: the control socket's query is resolved" "resolved in" "$out"
assert_contains "... NXDOMAIN" "NXDOMAIN" "$out"
assert_eq "colocated: ... through the queue, not started here" "$((lookups + 1)) $here" \
  "$(stat normal.lookups) $(stat normal.started_here)"
# a silent authority: libunbound's timers and the 4 s deadline run in the
# listener's loop, and the listener keeps answering hits meanwhile
t0=$(date +%s%N)
PD_DIG_TIME=10 dig_rcode 127.0.1.10 "q$RANDOM.dead.example" A > "$IT_TMP/dead.rcode" &
dead=$!
sleep 0.3
t1=$(date +%s%N)
assert_eq "colocated: a hit while a lookup waits on a silent server" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
hit_ms=$((($(date +%s%N) - t1) / 1000000))
# well under the 4 s the silent lookup waits (dig's own start is in the figure,
# and a loaded CI box runs other tests at once)
assert_lt "... answered before the lookup's deadline (took $hit_ms ms)" 2500 "$hit_ms"
wait "$dead"
ms=$((($(date +%s%N) - t0) / 1000000))
assert_eq "colocated: the silent server's name fails: SERVFAIL" SERVFAIL "$(cat "$IT_TMP/dead.rcode")"
assert_lt "... within 10 s (took $ms ms)" 10000 "$ms"
partdns_alive && ok "colocated: partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
partdns_stop

start 2 1 apart
assert_eq "apart: 24 misses answered (NXDOMAIN)" 24 "$(misses apart)"
lookups=$(stat normal.lookups)
assert_le "apart: every miss went to libunbound ($lookups lookups)" "${lookups:-0}" 24
assert_eq "apart: none started by a listener" 0 "$(stat normal.started_here)"
partdns_stop
it_done
