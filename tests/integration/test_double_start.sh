#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A second partdns on an address already served is refused with a clear
# error; --takeover shares it on purpose (an upgrade without downtime), and
# the control socket follows the new daemon.
. "$(dirname "$0")/lib.sh"
harness_init double_start
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
partdns_start "$PD_CONF"
first=$PD_PID
assert_eq "the first daemon answers" "203.0.113.10" "$(dig_a 127.0.9.9 www.customer.example)"

# an accidental second start
out=$(timeout 20 "$PARTDNS_BIN" -c "$PD_CONF" 2>&1)
st=$?
assert_eq "a second instance exits with status 1" 1 "$st"
assert_contains "... saying the address is in use" "is in use (another partdns?)" "$out"
assert_contains "... and how to take over on purpose" "--takeover" "$out"
assert_eq "the first daemon still answers" "203.0.113.10" "$(dig_a 127.0.9.9 www.customer.example)"

# a deliberate hand-over
"$PARTDNS_BIN" -c "$PD_CONF" --takeover >> "$IT_TMP/partdns2.log" 2>&1 &
second=$!
IT_PIDS[second]=$second
for ((i = 0; i < 200; i++)); do
  grep -q "ready:" "$IT_TMP/partdns2.log" 2>/dev/null && break
  sleep 0.05
done
assert_contains "--takeover: the new daemon starts" "ready:" "$(cat "$IT_TMP/partdns2.log")"
kill -TERM "$first"
it_wait_exit "$first" 10
assert_eq "the old daemon stops cleanly" 0 "$IT_STOP_STATUS"
PD_PID=$second
unset "IT_PIDS[second]"
for i in 1 2 3 4 5; do
  assert_eq "the new daemon answers after the old one left ($i)" "203.0.113.10" "$(dig_a 127.0.9.9 www.customer.example)"
done
assert_contains "partdnsctl reaches the new daemon (the old one did not remove its socket)" "uptime" \
  "$("$PARTDNSCTL_BIN" -c "$PD_CONF" stats 2>&1)"
partdns_alive && ok "the new daemon is running" || fail "the new daemon died" "$(tail -n 20 "$IT_TMP/partdns2.log")"
it_done
