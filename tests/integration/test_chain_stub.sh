#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The normal pool stops at a flagged subtree: a normal name that CNAMEs into
# `cdn.test --subtree`, asked by the cities' clients, never reaches the GSLB
# without ECS (the normal pool's stub context holds cdn.test. as an empty
# zone; the chain is continued per city through the EDNS pool). A client of
# no partition still gets the whole answer (the name resolved again without
# stubs), and a change of flags rebuilds the stub context.
. "$(dirname "$0")/lib.sh"

harness_init chain_stub
harness_start_hierarchy
knot_write_conf gslb "$NET.4" cdn.test. viacdn.example. # the CDN's server hosts a customer's zone too
knot_start gslb
pd_require_bins
[ "$IT_HAVE_DNSTAP" = 1 ] || skip "knotd has no dnstap module: the GSLB's queries cannot be read"
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add cdn.test --subtree >/dev/null
partdns_start "$PD_CONF" # the stub contexts are made before the listeners start

# GSLB queries without ECS logged after MARK (knot_mark gslb), as "NAME TYPE"
# lines; gslb_flush first, in this shell (it restarts the GSLB)
noecs_since() { knot_since gslb "$1" | awk '$3 == "-" {print $1, $2}' | sort | uniq; }

gslb_flush
m=$(knot_mark gslb)
assert_eq "nanjing: video.customer.example steered" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "suzhou: its own node" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "wuxi: static.customer.example steered" "203.0.113.3" "$(dig_a 127.0.3.10 static.customer.example)"
answer=$(pd_dig 127.0.1.11 video.customer.example A +noall +answer)
assert_match "the reply carries the customer's CNAME" "video.customer.example.*CNAME.*video.cdn.test." "$answer"
gslb_flush
assert_eq "the GSLB's only query without ECS: the cut (cdn.test NS), none for the CNAMEs' targets" \
  "cdn.test. NS" "$(noecs_since "$m")"
m=$(knot_mark gslb)

# a client of no partition needs the whole answer: the name again, without stubs
assert_eq "no partition: the common answer" "203.0.113.100" "$(dig_a 127.0.9.9 video.customer.example)"
gslb_flush
assert_eq "... asked of the GSLB without ECS" "video.cdn.test. A" "$(noecs_since "$m")"
m=$(knot_mark gslb)
assert_eq "... then a hit for the next such client" "203.0.113.100" "$(dig_a 127.0.9.10 video.customer.example)"
assert_eq "nanjing still steered" "203.0.113.1" "$(dig_a 127.0.1.12 video.customer.example)"
gslb_flush
assert_eq "no GSLB query for those" "" "$(knot_since gslb "$m")"

# a zone whose only nameserver is under the flagged subtree (no glue): the
# stub context cannot reach it, the plain one answers
assert_eq "nanjing: www.viacdn.example (served by ns.cdn.test) resolves" "203.0.113.70" \
  "$(dig_a 127.0.1.20 www.viacdn.example)"
assert_eq "... asked again in the plain context (normal.stub_retries)" 1 \
  "$("$PARTDNSCTL_BIN" -c "$PD_CONF" stats | awk '$1 == "normal.stub_retries" {print $2}')"

# unflagged: the chain is a normal name's again, resolved whole
pdctl domain del cdn.test >/dev/null
it_poll 5 203.0.113.100 dig_a 127.0.1.13 video.customer.example ||
  fail "after domain del: nanjing gets the common answer"
assert_eq "after domain del: nanjing gets the common answer" "203.0.113.100" "$(dig_a 127.0.1.13 video.customer.example)"

# flagged again: a new stub context; a name not asked before stops at cdn.test. again
pdctl domain add cdn.test --subtree >/dev/null
it_poll 5 203.0.113.1 dig_a 127.0.1.14 video.cdn.test || fail "after domain add: the flag is live"
sleep 0.5 # the stub context follows within a tick (100 ms) of the new flags
gslb_flush
m=$(knot_mark gslb)
assert_eq "flagged again: nanjing's static.customer.example steered" "203.0.113.1" \
  "$(dig_a 127.0.1.15 static.customer.example)"
gslb_flush
assert_eq "... and its target not asked without ECS" "" "$(noecs_since "$m" | grep -v '^cdn.test. NS$')"
assert_eq "partdns still running" 1 "$(partdns_alive && echo 1)"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
