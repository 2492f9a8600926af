#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# partitions.unmatched naming a partition: clients in no partition are
# treated as that city (its ECS identity, its per-partition cache).
. "$(dirname "$0")/lib.sh"
harness_init unmatched_partition
harness_start_all
pd_require_bins
PD_UNMATCHED=wuxi pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"
assert_eq "an unmatched client gets wuxi's node" "203.0.113.3" "$(dig_a 127.0.9.9 video.customer.example)"
c0=$(gslb_query_count)
assert_eq "a wuxi client shares that cache entry" "203.0.113.3" "$(dig_a 127.0.3.10 video.customer.example)"
assert_eq "no second GSLB query" "$c0" "$(gslb_query_count)"
assert_eq "nanjing keeps its own node" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
stats=$(pdctl stats)
w=$(printf '%s\n' "$stats" | awk '$1 == "partition.wuxi.queries" {print $2}')
c=$(printf '%s\n' "$stats" | awk '$1 == "partition.common.queries" {print $2}')
assert_eq "no query counted under common" 0 "${c:-x}"
assert_lt "unmatched and wuxi clients counted under wuxi ($w)" "${w:-0}" 1
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
