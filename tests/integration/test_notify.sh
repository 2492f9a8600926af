#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The systemd readiness protocol (Type=notify): partdns says READY=1 (with
# its MAINPID) only once it answers, RELOADING=1 then READY=1 around a
# SIGHUP reload, and STOPPING=1 when it stops. A socat datagram socket plays
# systemd's NOTIFY_SOCKET.
. "$(dirname "$0")/lib.sh"
harness_init notify
harness_start_all
pd_require_bins
command -v socat >/dev/null || die "socat is needed"
SOCK=$IT_TMP/notify.sock
OUT=$IT_TMP/notify.out
socat -u "UNIX-RECV:$SOCK,unlink-early" "OPEN:$OUT,creat,append" &
IT_PIDS[socat]=$!
for ((i = 0; i < 100; i++)); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || die "socat did not create $SOCK"

# datagrams arrive without separators: list the states in order
states() { grep -ao 'READY=1\|RELOADING=1\|STOPPING=1' "$OUT" 2>/dev/null | tr '\n' ' '; }
wait_states() {
  local want=$1 i
  for ((i = 0; i < 200; i++)); do [ "$(states)" = "$want" ] && return 0; sleep 0.05; done
  return 1
}

pd_write_conf "$IT_TMP/partdns.yaml"
NOTIFY_SOCKET=$SOCK partdns_start "$PD_CONF"
wait_states "READY=1 " || true
assert_eq "READY=1 once it answers" "READY=1 " "$(states)"
assert_contains "... with the daemon's pid as MAINPID" "MAINPID=$PD_PID" "$(tr -d '\0' < "$OUT")"
kill -HUP "$PD_PID"
wait_states "READY=1 RELOADING=1 READY=1 " || true
assert_eq "a SIGHUP reload: RELOADING=1, then READY=1 when done" "READY=1 RELOADING=1 READY=1 " "$(states)"
partdns_stop
assert_eq "STOPPING=1 when it stops" "READY=1 RELOADING=1 READY=1 STOPPING=1 " "$(states)"

# a config that fails to start never says READY=1
: > "$OUT"
PD_USER='""' pd_write_conf "$IT_TMP/bad.yaml"
NOTIFY_SOCKET=$SOCK timeout 20 "$PARTDNS_BIN" -c "$IT_TMP/bad.yaml" > /dev/null 2>&1
sleep 0.2
assert_eq "a start that fails says nothing ready" "" "$(states)"
it_done
