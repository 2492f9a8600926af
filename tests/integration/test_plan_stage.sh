#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Staged rollout of a partition plan: partdnsctl plan stage FILE publishes
# the next plan under /next/ (server.http) while the running plan keeps
# steering; plan activate [--at TIME] makes it live (a reload of that plan:
# classification and the published table change, the serial moves); the
# activated plan survives a restart until the config's include holds it.
# A plan that does not fit the config, or does not raise the serial, is
# refused with nothing staged.
. "$(dirname "$0")/lib.sh"
harness_init plan_stage
harness_start_all
pd_require_bins
command -v curl >/dev/null || die "curl is needed"
HPORT=$(it_free_port "$PD_ADDR" 9250 9299)
URL=http://$PD_ADDR:$HPORT
pd_write_conf "$IT_TMP/partdns.yaml"
# the plan in its own file (a staged plan replaces the include), serial 1
sed -n '/^partitions:/,$p' "$PD_CONF" | tail -n +2 | sed 's/^  //' > "$IT_TMP/plan.yaml"
sed -i '1i serial: 1' "$IT_TMP/plan.yaml"
sed -i '/^partitions:/,$d' "$PD_CONF"
printf 'partitions:\n  include: plan.yaml\n' >> "$PD_CONF"
sed -i "/^server:/a\\  http: \"$PD_ADDR@$HPORT\"" "$PD_CONF"
# plan 2: wuxi's 127.0.3.0/24 moves to nanjing, and a new city
sed -e 's/^serial: 1$/serial: 2/' -e 's|prefixes: \[ 127.0.1.0/24,|prefixes: [ 127.0.1.0/24, 127.0.3.0/25,|' \
  -e 's|prefixes: \[ 127.0.3.0/24,|prefixes: [ 127.0.3.128/25,|' "$IT_TMP/plan.yaml" > "$IT_TMP/plan2.yaml"
echo '  - { name: changzhou, label: Changzhou, mapped: 198.51.100.4, prefixes: [ 10.4.0.0/16 ] }' >> "$IT_TMP/plan2.yaml"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"
field() { pdctl status | awk -v k="$1" '$1 == k {$1 = ""; sub(/^ /, ""); print}'; }
ctl_try() { "$PARTDNSCTL_BIN" -c "$PD_CONF" "$@" 2>&1; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL$1"; }

assert_eq "127.0.3.10 is wuxi's" "203.0.113.3" "$(dig_a 127.0.3.10 video.customer.example)"
assert_eq "nothing staged: /next/ is 404" 404 "$(code /next/mapping.csv)"

# refusals: nothing is staged by them
printf 'serial: 1\nlist: []\n' > "$IT_TMP/same.yaml"
out=$(ctl_try plan stage "$IT_TMP/same.yaml"); st=$?
assert_eq "a plan that does not raise the serial is refused" 1 "$st"
assert_contains "... saying why" "serial" "$out"
sed 's|10.4.0.0/16|10.4.0.0/33|' "$IT_TMP/plan2.yaml" > "$IT_TMP/bad.yaml"
out=$(ctl_try plan stage "$IT_TMP/bad.yaml"); st=$?
assert_eq "a plan with an error is refused" 1 "$st"
assert_match "... naming file:line:col" "bad.yaml:[0-9]+:[0-9]+: error" "$out"
out=$(ctl_try plan activate); st=$?
assert_eq "activate with nothing staged is refused" 1 "$st"
assert_contains "... saying what to do first" "plan stage FILE first" "$out"

# staged by mistake, withdrawn: /next/ empties, nothing else moves
pdctl plan stage "$IT_TMP/plan2.yaml" >/dev/null
for ((i = 0; i < 30; i++)); do [ "$(code /next/mapping.csv)" = 200 ] && break; sleep 0.1; done
assert_eq "a staged plan is published" 200 "$(code /next/mapping.csv)"
assert_contains "plan cancel withdraws it" "withdrawn" "$(pdctl plan cancel)"
for ((i = 0; i < 30; i++)); do [ "$(code /next/mapping.csv)" = 404 ] && break; sleep 0.1; done
assert_eq "... /next/ is 404 again" 404 "$(code /next/mapping.csv)"
assert_eq "... status: nothing staged" "-" "$(field plan_next)"
out=$(ctl_try plan cancel); st=$?
assert_eq "cancel with nothing staged is refused" 1 "$st"

out=$(pdctl plan stage "$IT_TMP/plan2.yaml")
assert_contains "plan stage says what it staged" "staged plan 2 (4 partitions)" "$out"
for ((i = 0; i < 30; i++)); do [ "$(code /next/mapping.csv)" = 200 ] && break; sleep 0.1; done
next=$(curl -s -i --max-time 5 "$URL/next/mapping.csv" | tr -d '\r')
assert_contains "/next/ publishes the staged plan" "2,changzhou,4,Changzhou,198.51.100.4" "$next"
assert_contains "... with its serial as ETag" 'ETag: "2"' "$next"
assert_contains "... and when it goes live: on activation" "X-Partdns-Effective: on activation" "$next"
assert_eq "the live table is still plan 1, without changzhou" "" \
  "$(curl -s --max-time 5 "$URL/mapping.csv" | grep changzhou)"
assert_eq "status: plan 1 live" 1 "$(field plan_serial)"
assert_eq "status: plan 2 staged" "2 on-activation" "$(field plan_next)"
assert_eq "staged is not live: 127.0.3.10 is still wuxi's" "203.0.113.3" "$(dig_a 127.0.3.10 video.customer.example)"

# a time far off first: /next/ and status say when; then "now" takes over
pdctl plan activate --at +3600 >/dev/null
for ((i = 0; i < 40; i++)); do [[ "$(field plan_next)" == "2 at "* ]] && break; sleep 0.1; done
assert_match "status: plan 2 goes live at a time" "^2 at [0-9-]+T[0-9:]+Z$" "$(field plan_next)"
assert_match "... and /next/ says when" "X-Partdns-Effective: [A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT" \
  "$(curl -s -i --max-time 5 "$URL/next/mapping.csv" | tr -d '\r')"
assert_eq "... not live before its time" 1 "$(field plan_serial)"
pdctl plan activate >/dev/null
for ((i = 0; i < 80; i++)); do [ "$(field plan_serial)" = 2 ] && break; sleep 0.1; done
assert_eq "at its time plan 2 is live" 2 "$(field plan_serial)"
assert_eq "... from the store (the config's include still says 1)" store "$(field plan_source)"
assert_eq "... nothing staged any more" "-" "$(field plan_next)"
assert_eq "... 127.0.3.10 classifies as nanjing now" "203.0.113.1" "$(dig_a 127.0.3.10 video.customer.example)"
assert_contains "... the live table has changzhou" "2,changzhou,4" "$(curl -s --max-time 5 "$URL/mapping.csv")"
assert_eq "... and /next/ is empty again" 404 "$(code /next/mapping.csv)"

partdns_stop
partdns_start "$PD_CONF"
assert_eq "after a restart the activated plan still runs" 2 "$(field plan_serial)"
assert_contains "... and the log says the config should hold it" "running the activated plan 2 from the store" \
  "$(cat "$IT_TMP/partdns.log")"
cp "$IT_TMP/plan2.yaml" "$IT_TMP/plan.yaml"
assert_contains "the include now holds plan 2: reload" "reloaded" "$(pdctl reload 2>&1)"
assert_eq "the config is the source again" config "$(field plan_source)"
assert_eq "... with plan 2" 2 "$(field plan_serial)"
assert_eq "plan show: no activated copy left" "config serial=2" "$(pdctl plan show)"
partdns_stop
it_done
