#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# partdnsctl partition failover / failback: one city's flagged queries carry
# its standby identity (another partition's, or an address CDNs know)
# instead of its own, live, for that city only; its cached flagged answers
# go at each switch; the switch is kept in the store, so a restart keeps
# it; status says who is on standby. Mistakes are refused with a hint.
. "$(dirname "$0")/lib.sh"
harness_init failover
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i 's/{ name: nanjing, label: Nanjing,/{ name: nanjing, label: Nanjing, standby: suzhou,/' "$PD_CONF"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"

# ctl_try ARGS: partdnsctl that may fail (pdctl dies on failure)
ctl_try() { "$PARTDNSCTL_BIN" -c "$PD_CONF" "$@" 2>&1; }
# wait_answer CLIENT WANT: the daemon follows the store within a second
wait_answer() {
  local i got
  for ((i = 0; i < 40; i++)); do
    got=$(dig_a "$1" video.customer.example)
    [ "$got" = "$2" ] && break
    sleep 0.1
  done
  printf '%s\n' "$got"
}

assert_eq "nanjing on its own identity" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "suzhou" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "wuxi" "203.0.113.3" "$(dig_a 127.0.3.10 video.customer.example)"
assert_eq "status: nobody on standby" "standby -" "$(pdctl status | grep '^standby ')"

out=$(pdctl partition failover nanjing)
assert_contains "failover says what it did" "nanjing: on standby (suzhou)" "$out"
assert_eq "nanjing is steered as suzhou now" "203.0.113.2" "$(wait_answer 127.0.1.10 203.0.113.2)"
assert_eq "suzhou unchanged" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "wuxi unchanged" "203.0.113.3" "$(dig_a 127.0.3.10 video.customer.example)"
assert_eq "status: nanjing on standby as suzhou" "standby nanjing>suzhou" "$(pdctl status | grep '^standby ')"
assert_contains "cache lookup shows the standby ECS the answer was fetched with" "198.51.100.2" \
  "$(pdctl cache lookup video.customer.example --partition nanjing)"
assert_contains "the published table does not change (CDNs know the standby identity)" \
  "nanjing,1,Nanjing,198.51.100.1" "$(pdctl mapping export)"

# kept in the store: a restart keeps it
partdns_stop
partdns_start "$PD_CONF"
assert_eq "after a restart nanjing is still on standby" "203.0.113.2" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "suzhou after the restart (now cached)" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"

# another target, by address: the switch drops the cached standby answer
c0=$(gslb_query_count)
pdctl partition failover nanjing --to 198.51.100.3 >/dev/null
assert_eq "failover --to an address: nanjing steered as that address" "203.0.113.3" \
  "$(wait_answer 127.0.1.10 203.0.113.3)"
assert_lt "... a new answer from the GSLB, not the cached one" "$(gslb_query_count)" "$c0"
c1=$(gslb_query_count)
pdctl partition failback nanjing >/dev/null
assert_eq "failback: nanjing on its own identity again" "203.0.113.1" "$(wait_answer 127.0.1.10 203.0.113.1)"
assert_lt "... asked anew" "$(gslb_query_count)" "$c1"
assert_eq "status: nobody on standby again" "standby -" "$(pdctl status | grep '^standby ')"
c2=$(gslb_query_count)
assert_eq "suzhou's cached answer survived nanjing's switches" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "... from the cache" "$c2" "$(gslb_query_count)"

# mistakes
out=$(ctl_try partition failover wuxi); st=$?
assert_eq "a partition without a standby key and no --to: refused" 1 "$st"
assert_contains "... with a hint" "has no standby (set partitions.list[].standby in the config, or give --to" "$out"
out=$(ctl_try partition failover nanjing --to nanjing); st=$?
assert_eq "standing by for itself: refused" 1 "$st"
out=$(ctl_try partition failover nanjing --to 10.0.0.1); st=$?
assert_eq "a private address: refused" 1 "$st"
assert_contains "... saying what would do" "global unicast address CDNs know" "$out"
out=$(ctl_try partition failover hangzhou); st=$?
assert_eq "an unknown partition: refused" 1 "$st"
out=$(ctl_try partition failback suzhou); st=$?
assert_eq "failback of a partition not failed over: refused" 1 "$st"
assert_contains "... saying so" "'suzhou' is not failed over" "$out"

# the config's standby key is checked
sed 's/standby: suzhou,/standby: nanjing,/' "$PD_CONF" > "$IT_TMP/self.yaml"
assert_contains "partdns -t: a partition standing by for itself is an error" \
  "a partition cannot stand by for itself" "$("$PARTDNS_BIN" -t -c "$IT_TMP/self.yaml" 2>&1)"
partdns_stop
it_done
