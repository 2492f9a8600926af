#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A reload keeps what did not change. Partitions are known by name: when the
# list is reordered, a partition removed and a prefix moved, the cities that
# kept their name and mapped address keep their cached answers (the GSLB is
# not asked again), classification follows the new prefixes at once, the
# removed city's answers go, and a city whose mapped address changed loses
# its answers (and only it).
. "$(dirname "$0")/lib.sh"
harness_init reload_keep
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"

for row in "127.0.1.10 203.0.113.1" "127.0.2.10 203.0.113.2" "127.0.3.10 203.0.113.3"; do
  set -- $row
  assert_eq "video.customer.example from $1 before the reload" "$2" "$(dig_a "$1" video.customer.example)"
done
c0=$(gslb_query_count)

# suzhou first now, nanjing second (ids swap), wuxi gone, 10.3.0.0/16 moves to nanjing
sed -i '/^partitions:/,$d' "$PD_CONF"
cat >> "$PD_CONF" <<'YEOF'
partitions:
  unmatched: common
  list:
    - { name: suzhou,  label: Suzhou,  mapped: 198.51.100.2, prefixes: [ 127.0.2.0/24, 10.2.0.0/16, 100.64.2.0/24 ] }
    - { name: nanjing, label: Nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24, 10.1.0.0/16, 100.64.1.0/24, 127.0.3.0/25 ] }
YEOF
assert_contains "reload" "reloaded" "$(pdctl reload 2>&1)"
assert_contains "the log counts the kept and the dropped answers" \
  "cache entries of changed or removed partitions dropped" "$(grep 'reloaded' "$IT_TMP/partdns.log" | tail -n 1)"
assert_eq "partition ids changed: suzhou is 1 now" "suzhou 1" \
  "$(pdctl partition list | awk '$1 == "suzhou" {print $1, $2}')"
assert_contains "nanjing's cached answer followed it to its new id" "203.0.113.1" \
  "$(pdctl cache lookup video.customer.example --partition nanjing)"
assert_eq "nanjing, renumbered: the same answer" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "suzhou, renumbered: the same answer" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "... both from the cache: the GSLB was not asked" "$c0" "$(gslb_query_count)"
assert_eq "a moved prefix classifies at once: 127.0.3.10 is nanjing's now (and a hit)" "203.0.113.1" \
  "$(dig_a 127.0.3.10 video.customer.example)"
assert_eq "... still no GSLB query" "$c0" "$(gslb_query_count)"
assert_eq "wuxi is gone: 127.0.3.200 is unmatched (common, no ECS)" "203.0.113.100" \
  "$(dig_a 127.0.3.200 video.customer.example)"

# suzhou's mapped address changes: its answers go, nanjing's stay
sed -i 's/mapped: 198.51.100.2,/mapped: 198.51.100.22,/' "$PD_CONF"
assert_contains "reload" "reloaded" "$(pdctl reload 2>&1)"
c1=$(gslb_query_count)
assert_eq "nanjing kept its answer" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "... from the cache" "$c1" "$(gslb_query_count)"
dig_a 127.0.2.10 video.customer.example >/dev/null
assert_lt "suzhou, with a new identity, asked the GSLB again" "$(gslb_query_count)" "$c1"
partdns_stop
assert_eq "partdns exits 0" 0 "$PD_EXIT_STATUS"
it_done
