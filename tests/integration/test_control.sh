#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# partdnsctl against the running daemon: live store changes (no signal),
# stats, cache flush, reload, and a failed reload that keeps the running state.
. "$(dirname "$0")/lib.sh"

harness_init control
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"
pid=$PD_PID

assert_eq "nanjing gets its node" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "static is not flagged yet: common answer" "203.0.113.100" "$(dig_a 127.0.1.10 static.customer.example)"

# Live pick-up: a committed store change is seen within a second, no SIGHUP.
pdctl domain add static.customer.example >/dev/null
t0=$(date +%s%N)
got=""
for ((i = 0; i < 30; i++)); do
  got=$(dig_a 127.0.2.10 static.customer.example)
  [ "$got" = 203.0.113.2 ] && break
  sleep 0.05
done
t1=$(date +%s%N)
assert_eq "domain add is live without a signal" "203.0.113.2" "$got"
assert_le "picked up within a second (sanitizer builds: scaled)" $((1000 * ${PARTDNS_TIME_SCALE:-1})) "$(((t1 - t0) / 1000000))"

# Backup and restore: domain import --replace is one committed change, picked
# up live like any other (the store's change counter moves once).
pdctl domain export > "$IT_TMP/backup.txt"
out=$(printf 'video.customer.example\n' | pdctl domain import --replace -)
assert_contains "import --replace says what it did" "(0 added, 0 updated, 1 unchanged, 1 removed)" "$out"
for ((i = 0; i < 30; i++)); do
  got=$(dig_a 127.0.2.10 static.customer.example)
  [ "$got" = 203.0.113.100 ] && break
  sleep 0.05
done
assert_eq "a name import --replace dropped is unflagged live" "203.0.113.100" "$got"
out=$(pdctl domain import --replace "$IT_TMP/backup.txt")
assert_contains "... and the backup restores it" "(1 added, 0 updated, 1 unchanged, 0 removed)" "$out"
for ((i = 0; i < 30; i++)); do
  got=$(dig_a 127.0.2.10 static.customer.example)
  [ "$got" = 203.0.113.2 ] && break
  sleep 0.05
done
assert_eq "... flagged again live" "203.0.113.2" "$got"
assert_match "domain list says who added it" "^static\.customer\.example\. .* $(id -un) " "$(pdctl domain list)"

# the same version and help flags as partdnsctl
assert_match "partdns -V prints the version" "^partdns [0-9]" "$("$PARTDNS_BIN" -V)"
assert_eq "partdns --version too" "$("$PARTDNS_BIN" -V)" "$("$PARTDNS_BIN" --version)"
assert_contains "partdns --help lists -V, --version" "-V, --version" "$("$PARTDNS_BIN" --help)"

# the harness's partitions give no country: partdns -t says what their geofeed rows lack
out=$("$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1)
assert_contains "partdns -t warns of a partition without location" \
  "warning: partition 'nanjing' has a mapped address but no country" "$out"
assert_contains "... and still calls the config OK" "configuration OK" "$out"

# stats
stats=$(pdctl stats)
assert_match "stats: query counter" "^queries [1-9]" "$stats"
assert_match "stats: per partition" "partition.nanjing.queries [1-9]" "$stats"
assert_contains "stats: EDNS domains" "edns_domains 2" "$stats"
assert_match "stats: each pool's counters under its name" "^normal.resolutions [0-9]" "$stats"
assert_match "... the EDNS pool's ECS queries" "^edns.upstream_queries [0-9]" "$stats"
assert_eq "... and no line mixing the pools" "" "$(printf '%s\n' "$stats" | grep -E '^(upstream_|ub_lookups)')"
assert_match "stats: cache lookups named as lookups (a CNAME answer takes two)" "^cache.lookup_hits [0-9]" "$stats"
json=$(pdctl stats --json)
assert_contains "stats --json: partitions array" '"name": "suzhou"' "$json"
assert_contains "stats --json: cache object" '"cache": {' "$json"

# cache flush of one name in one partition: only that entry goes upstream again
dig_a 127.0.2.10 video.customer.example >/dev/null
c0=$(gslb_query_count)
assert_eq "cached: nanjing" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "cached: no GSLB query" "$c0" "$(gslb_query_count)"
out=$(pdctl cache flush video.customer.example --partition nanjing)
assert_match "flush reports entries" "[1-9][0-9]* entries flushed" "$out"
assert_eq "suzhou still cached" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "suzhou: no GSLB query" "$c0" "$(gslb_query_count)"
assert_eq "nanjing after flush" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_lt "nanjing went upstream again" "$(gslb_query_count)" "$c0"

# reload: swap the mapped addresses of nanjing and suzhou
sed -e 's/mapped: 198.51.100.1,/mapped: 198.51.100.9,/' -e 's/mapped: 198.51.100.2,/mapped: 198.51.100.1,/' \
    -e 's/mapped: 198.51.100.9,/mapped: 198.51.100.2,/' "$PD_CONF" > "$IT_TMP/swapped.yaml"
cp "$PD_CONF" "$IT_TMP/orig.yaml"
cp "$IT_TMP/swapped.yaml" "$PD_CONF"
out=$(pdctl reload)
assert_contains "reload answers" "reloaded" "$out"
assert_eq "after reload nanjing speaks as suzhou" "203.0.113.2" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "after reload suzhou speaks as nanjing" "203.0.113.1" "$(dig_a 127.0.2.10 video.customer.example)"

# a broken config: reload fails with file:line:col, the running state stays
printf 'server:\n  threads: many\n' >> "$PD_CONF"
if out=$("$PARTDNSCTL_BIN" -c "$IT_TMP/orig.yaml" reload 2>&1); then
  fail "reload of a broken config succeeded" "$out"
else
  ok "reload of a broken config fails"
fi
assert_match "the error names file:line:col" "partdns.yaml:[0-9]+:[0-9]+: error" "$out"
assert_eq "still serving the previous state" "203.0.113.2" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "same process" "$pid" "$PD_PID"
partdns_alive && ok "alive after a failed reload" || fail "died on a failed reload"

partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
