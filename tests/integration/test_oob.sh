#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Policy iterate for a zone whose nameserver has no glue (named in another
# zone): the EDNS pool resolves the server's address, then sends the ECS query.
. "$(dirname "$0")/lib.sh"
harness_init oob
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add www.oob.example >/dev/null
partdns_start "$PD_CONF"
assert_eq "nanjing resolves the glueless zone's name" "203.0.113.60" "$(dig_a 127.0.1.10 www.oob.example)"
assert_eq "a normal client too" "203.0.113.60" "$(dig_a 127.0.9.9 www.oob.example)"
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  knot_flush customer
  assert_contains "the zone's server got the ECS query" "www.oob.example. A 198.51.100.1/32" "$(knot_queries customer)"
fi
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
