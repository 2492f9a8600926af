#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SIGHUP re-reads the domain store: a name flagged (or unflagged) while running switches paths, same process.
. "$(dirname "$0")/lib.sh"
harness_init sighup
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
partdns_start "$PD_CONF"
pid=$PD_PID

assert_eq "nothing flagged: nanjing gets the default node" "203.0.113.100" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "nothing flagged: suzhou gets the default node (common cache)" "203.0.113.100" "$(dig_a 127.0.2.10 video.customer.example)"

# wait_for CLIENT WANT: poll up to 3 s for CLIENT's answer to become WANT
wait_for() {
  local i got
  for ((i = 0; i < 30; i++)); do
    got=$(dig_a "$1" video.customer.example)
    [ "$got" = "$2" ] && break
    sleep 0.1
  done
  printf '%s' "$got"
}

pdctl domain add video.customer.example
kill -HUP "$PD_PID"
assert_eq "after domain add + SIGHUP: nanjing gets its node" "203.0.113.1" "$(wait_for 127.0.1.10 203.0.113.1)"
assert_eq "after domain add + SIGHUP: suzhou gets its node" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "after domain add + SIGHUP: wuxi gets its node" "203.0.113.3" "$(dig_a 127.0.3.10 video.customer.example)"
assert_eq "after domain add + SIGHUP: no partition gets the default" "203.0.113.100" "$(dig_a 127.0.9.9 video.customer.example)"
assert_eq "a normal name is unaffected" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"

pdctl domain del video.customer.example
kill -HUP "$PD_PID"
assert_eq "after domain del + SIGHUP: nanjing back to the common answer" "203.0.113.100" "$(wait_for 127.0.1.10 203.0.113.100)"

# a HUP storm does not kill it
for i in 1 2 3 4 5; do kill -HUP "$PD_PID"; done
sleep 0.5
partdns_alive && ok "partdns survives SIGHUPs" || fail "partdns died on SIGHUP" "$(tail -n 20 "$IT_TMP/partdns.log")"
assert_eq "same process throughout (no restart)" "$pid" "$PD_PID"
assert_eq "answers after the HUP storm" "203.0.113.10" "$(dig_a 127.0.2.10 www.customer.example)"
it_done
