#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Policy forward falls over to the next target: a target with nothing
# listening (ICMP port unreachable) and one answering REFUSED (an authority
# for other zones) are skipped; the ECS answer comes from the third.
. "$(dirname "$0")/lib.sh"
harness_init forward_failover
harness_start_all
harness_start_unbound
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example --policy forward \
  --forward "$NET.98@53" --forward "$NET.3@53" --forward "$NET.5@53" >/dev/null
partdns_start "$PD_CONF"

assert_eq "customer's server refuses cdn.test names (the REFUSED target)" "REFUSED" \
  "$(dig +time=2 +tries=1 +norecurse @"$NET.3" video.cdn.test A 2>&1 | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')"
assert_eq "nanjing: answer via the third target" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "suzhou: answer via the third target" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
stats=$(pdctl stats)
errs=$(printf '%s\n' "$stats" | awk '$1 == "edns.upstream_queries" {print $2}')
assert_lt "more upstream queries than answers: the first targets were tried ($errs)" "${errs:-0}" 2
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"

# All targets failing gives SERVFAIL, not silence.
pd_write_conf "$IT_TMP/dead.yaml"
rm -rf "$IT_TMP/store"
mkdir -p "$IT_TMP/store"
pdctl domain add video.customer.example --policy forward --forward "$NET.98@53" --forward "$NET.3@53" >/dev/null
partdns_start "$PD_CONF"
assert_eq "every target failing: SERVFAIL" "SERVFAIL" "$(dig_rcode 127.0.1.10 video.customer.example A)"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
