#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# partitions.serial versions the partition plan for CDNs: every export
# carries it, partdnsctl status and /metrics show the running one, and a
# reload is refused when the plan changed but the serial did not, when the
# serial goes back, or when it disappears; the running plan stays. Moving
# prefixes around inside a partition is no change.
. "$(dirname "$0")/lib.sh"
harness_init plan_serial
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i '/^partitions:/a\  serial: 2026120301' "$PD_CONF"
MPORT=$(it_free_port "$PD_ADDR" 9153 9199)
sed -i "/^server:/a\\  metrics: \"$PD_ADDR@$MPORT\"" "$PD_CONF"
cp "$PD_CONF" "$IT_TMP/orig.yaml"

field() { printf '%s\n' "$1" | awk -v k="$2" '$1 == k {print $2}'; }
# partdnsctl that may fail (pdctl dies on failure)
ctl_try() { "$PARTDNSCTL_BIN" -c "$PD_CONF" "$@" 2>&1; }

csv=$(pdctl mapping export --format csv)
assert_eq "the CSV export carries the serial in every row" "2026120301 2026120301 2026120301" \
  "$(printf '%s\n' "$csv" | awk -F, 'NR > 1 {printf "%s%s", sep, $1; sep = " "}')"
assert_contains "the JSON export too" '"serial": "2026120301"' "$(pdctl mapping export --format json)"
assert_contains "the geofeed too" "# partdns geofeed serial=2026120301" "$(pdctl mapping export --format geofeed 2>/dev/null)"

partdns_start "$PD_CONF"
st=$(pdctl status)
assert_eq "status: the running plan serial" 2026120301 "$(field "$st" plan_serial)"
assert_eq "status: the version partdns -V prints" "$("$PARTDNS_BIN" -V | awk '{print $2}')" "$(field "$st" version)"
assert_eq "status: the config file" "$PD_CONF" "$(field "$st" config)"
assert_eq "status: 3 partitions" 3 "$(field "$st" partitions)"
assert_eq "status: no reload yet" "-" "$(field "$st" last_reload)"
digest=$(field "$st" plan_digest)
assert_contains "status --json" '"plan_serial": 2026120301,' "$(pdctl status --json)"
assert_contains "/metrics: partdns_plan_serial" "partdns_plan_serial 2026120301" \
  "$(curl -s "http://$PD_ADDR:$MPORT/metrics")"

# nanjing gets 10.9.0.0/16; the serial stays: refused, nothing changes
sed -i 's|prefixes: \[ 127.0.1.0/24, 10.1.0.0/16, 100.64.1.0/24 \]|prefixes: [ 127.0.1.0/24, 10.1.0.0/16, 100.64.1.0/24, 10.9.0.0/16 ]|' "$PD_CONF"
out=$(ctl_try reload); rc=$?
assert_eq "a changed plan under the same serial: reload fails" 1 "$((rc != 0))"
assert_contains "... saying why and what to do" "partitions.serial is still 2026120301: raise it (e.g. to 2026120302)" "$out"
st=$(pdctl status)
assert_eq "... the running plan keeps its serial" 2026120301 "$(field "$st" plan_serial)"
assert_eq "... and its content" "$digest" "$(field "$st" plan_digest)"
assert_eq "... status counts the failed reload" "1 failed" "$(field "$st" reload_failures) $(field "$st" last_reload_result)"

# the same change with a new serial: accepted
sed -i 's/^  serial: 2026120301$/  serial: 2026120302/' "$PD_CONF"
assert_contains "the same change under a new serial reloads" "reloaded" "$(pdctl reload 2>&1)"
st=$(pdctl status)
assert_eq "status: the new serial is live" 2026120302 "$(field "$st" plan_serial)"
assert_ne "... with the new content" "$digest" "$(field "$st" plan_digest)"
assert_eq "... the reload counted as ok" "2 ok" "$(field "$st" reloads) $(field "$st" last_reload_result)"
digest=$(field "$st" plan_digest)

# prefixes in another order: the same plan, no new serial needed
sed -i 's|prefixes: \[ 127.0.1.0/24, 10.1.0.0/16, 100.64.1.0/24, 10.9.0.0/16 \]|prefixes: [ 10.9.0.0/16, 100.64.1.0/24, 127.0.1.0/24, 10.1.0.0/16 ]|' "$PD_CONF"
assert_contains "prefixes reordered within a partition: the same plan, reload accepted" "reloaded" "$(pdctl reload 2>&1)"
assert_eq "... with the same content digest" "$digest" "$(field "$(pdctl status)" plan_digest)"

# backwards, or gone: refused
sed -i 's/^  serial: 2026120302$/  serial: 2026120300/' "$PD_CONF"
assert_contains "a serial that goes back is refused" "went back from 2026120302 to 2026120300" "$(ctl_try reload)"
sed -i '/^  serial: 2026120300$/d' "$PD_CONF"
assert_contains "a serial that disappears is refused" "partitions.serial was 2026120302 and is gone" "$(ctl_try reload)"
assert_eq "the running plan is still 2026120302" 2026120302 "$(field "$(pdctl status)" plan_serial)"

# in the include file instead, and not in both
cat > "$IT_TMP/parts.yaml" <<'YEOF'
serial: 7
list:
  - { name: nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24 ] }
YEOF
printf 'server:\n  listen: [ "127.0.0.1@5399" ]\npartitions:\n  include: parts.yaml\n' > "$IT_TMP/inc.yaml"
assert_contains "the serial may live in the include file" '"serial": "7"' \
  "$("$PARTDNSCTL_BIN" -c "$IT_TMP/inc.yaml" mapping export --format json 2>&1)"
printf 'server:\n  listen: [ "127.0.0.1@5399" ]\npartitions:\n  serial: 8\n  include: parts.yaml\n' > "$IT_TMP/both.yaml"
out=$("$PARTDNS_BIN" -t -c "$IT_TMP/both.yaml" 2>&1)
assert_contains "... but not in both" "parts.yaml:1:9: error: serial is given in both the config and the partitions include" "$out"
partdns_stop
it_done
