#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resolver.forward_zones: a zone no root delegates to resolves through its
# configured server; without the setting it does not exist.
. "$(dirname "$0")/lib.sh"
harness_init forward_zones
harness_start_all
knot_write_conf corp "$NET.6" corp.internal.
knot_start corp
pd_require_bins

pd_write_conf "$IT_TMP/plain.yaml"
partdns_start "$PD_CONF"
assert_eq "without forward_zones: NXDOMAIN from the root" "NXDOMAIN" "$(dig_rcode 127.0.9.9 www.corp.internal A)"
partdns_stop

pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "s|^resolver:|resolver:\n  forward_zones: [ { name: corp.internal., servers: [ \"$NET.6@53\" ] } ]|" "$PD_CONF"
partdns_start "$PD_CONF"
assert_eq "with forward_zones: the corp server answers" "203.0.113.50" "$(dig_a 127.0.9.9 www.corp.internal)"
assert_eq "other names still recurse" "203.0.113.10" "$(dig_a 127.0.9.9 www.customer.example)"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
