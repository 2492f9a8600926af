#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What each city is steered to, and what the plan is missing:
#   partdnsctl steering: per partition and flagged name, the addresses of the
#   last final answer, the ECS scope echoed, and "ignored" for an authority
#   that does not echo ECS (the customer zone's knotd runs with ECS off);
#   partdnsctl unmatched: query counts of clients in no partition, by /24,
#   busiest first, refused ones too.
. "$(dirname "$0")/lib.sh"
export KNOT_ECS_OFF=customer
harness_init steering
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example >/dev/null
pdctl domain add www.customer.example >/dev/null
# a label may hold any byte: the JSON report must still parse
pdctl domain add 'q"uote.customer.example' >/dev/null
partdns_start "$PD_CONF"

# row PARTITION RULE: that row of partdnsctl steering
row() { pdctl steering | awk -v p="$1" -v r="$2" '$1 == p && $2 == r'; }

assert_eq "nanjing's node" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "suzhou's node" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
assert_eq "www from nanjing" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
r=$(row nanjing video.customer.example.)
assert_contains "steering: nanjing is sent to its node" "nanjing video.customer.example. 203.0.113.1 ecs=echoed" "$r"
assert_match "... with the GSLB's scope" "scope=/[0-9]+ answers=1 echoed=1" "$r"
assert_contains "steering: suzhou to its own" "suzhou video.customer.example. 203.0.113.2 ecs=echoed" \
  "$(row suzhou video.customer.example.)"
assert_contains "steering: the customer zone ignores ECS, and partdns says so" \
  "nanjing www.customer.example. 203.0.113.10 ecs=ignored scope=- answers=1 echoed=0" \
  "$(row nanjing www.customer.example.)"
out=$(pdctl steering --zone cdn.test)
assert_eq "--zone filters by flagged name (cdn.test holds none of them)" "" "$out"
out=$(pdctl steering --zone customer.example)
assert_eq "--zone customer.example: the three rows" 3 "$(printf '%s\n' "$out" | grep -c .)"
assert_contains "--json" '"partition": "nanjing", "rule": "www.customer.example.", "addresses": ["203.0.113.10"], "ecs": "ignored"' \
  "$(pdctl steering --json)"

# a flagged name with a '"' (NXDOMAIN, still a final answer with a row)
pd_dig 127.0.1.10 'q"uote.customer.example' A >/dev/null
pdctl steering --json > "$IT_TMP/steering.json"
log "$(cat "$IT_TMP/steering.json")"
rc=0; /usr/bin/python3 -m json.tool "$IT_TMP/steering.json" > "$IT_TMP/steering.parsed" 2>&1 || rc=$?
assert_eq "--json with a '\"' in a flagged name parses (python3 -m json.tool)" 0 "$rc"
assert_contains "... the name escaped" '"rule": "q\"uote.customer.example."' "$(cat "$IT_TMP/steering.json")"
assert_contains "... and read back as it is" 'q"uote.customer.example.' \
  "$(/usr/bin/python3 -c 'import json,sys; print([r["rule"] for r in json.load(open(sys.argv[1]))["steering"]])' "$IT_TMP/steering.json")"

# clients in no partition: 127.0.9.0/24 asks 3 times, 127.0.8.0/24 once
for i in 1 2 3; do dig_a 127.0.9.$i www.customer.example >/dev/null; done
dig_a 127.0.8.1 www.customer.example >/dev/null
out=$(pdctl unmatched)
assert_eq "unmatched: the busiest network first" "127.0.9.0/24 3" "$(printf '%s\n' "$out" | head -n 1)"
assert_contains "... then the next" "127.0.8.0/24 1" "$out"
assert_eq "... and no partitioned client" "" "$(printf '%s\n' "$out" | grep -E '^127\.0\.[123]\.')"
assert_eq "--top 1" "127.0.9.0/24 3" "$(pdctl unmatched --top 1)"
assert_contains "--json" '{ "network": "127.0.9.0/24", "queries": 3, "error": 0 }' "$(pdctl unmatched --json)"
partdns_stop

# partitions.unmatched: refuse; refused clients are counted too
PD_UNMATCHED=refuse pd_write_conf "$IT_TMP/refuse.yaml"
partdns_start "$IT_TMP/refuse.yaml"
out=$(pd_dig 127.0.7.9 www.customer.example A)
assert_contains "an unmatched client is refused" "status: REFUSED" "$out"
assert_contains "... and counted" "127.0.7.0/24 1" "$(pdctl unmatched)"
partdns_stop
it_done
