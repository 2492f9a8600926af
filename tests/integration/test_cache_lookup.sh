#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# partdnsctl cache lookup: what the cache holds for a name, per city, as a
# client of that city would be answered; the identity that fetched it.
# partdnsctl query: resolve as a client of a city would, through the real
# query path.
. "$(dirname "$0")/lib.sh"
harness_init cache_lookup
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.cdn.test
partdns_start "$PD_CONF"

assert_eq "nanjing's node" "203.0.113.1" "$(dig_a 127.0.1.10 video.cdn.test)"
assert_eq "suzhou's node" "203.0.113.2" "$(dig_a 127.0.2.10 video.cdn.test)"
stat() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }
n0=$(stat normal.resolutions)
pd_dig 127.0.9.9 static.customer.example A >/dev/null
assert_eq "two cities' flagged misses: edns.resolutions 2 (each counted once)" 2 "$(stat edns.resolutions)"
assert_eq "one normal miss: normal.resolutions +1" $((n0 + 1)) "$(stat normal.resolutions)"

# expected failures: partdnsctl itself (pdctl stops the test on any failure)
ctl() { "$PARTDNSCTL_BIN" -c "$PD_CONF" "$@"; }
out=$(pdctl cache lookup video.cdn.test --partition nanjing)
log "$out"
assert_contains "nanjing's entry is its own, fetched with its mapped address" "fetched with ECS 198.51.100.1/32" "$out"
assert_contains "... with nanjing's answer" "203.0.113.1" "$out"
assert_not_contains "... and not suzhou's" "203.0.113.2" "$out"
assert_contains "... its age and TTL" "s left of" "$out"
out=$(pdctl cache lookup video.cdn.test --type A --partition suzhou)
assert_contains "suzhou's entry: suzhou's node" "203.0.113.2" "$out"
assert_contains "... fetched with suzhou's mapped address" "198.51.100.2/32" "$out"
out=$(pdctl cache lookup video.cdn.test --partition wuxi)
assert_contains "wuxi never asked: not cached" "not cached" "$out"
out=$(pdctl cache lookup video.cdn.test --type AAAA --partition nanjing)
assert_contains "another type: not cached" "not cached" "$out"
out=$(pdctl cache lookup static.customer.example --partition nanjing)
assert_contains "a name not flagged: the common cache, whatever the city" "the common cache" "$out"
assert_contains "... with its record" "static.customer.example." "$out"
out=$(pdctl cache lookup static.customer.example)
assert_contains "without --partition: the common cache" "the common cache" "$out"

rc=0; out=$(ctl cache lookup video.cdn.test --partition atlantis 2>&1) || rc=$?
assert_eq "an unknown partition is an error (exit 1)" "1" "$rc"
assert_contains "... naming it" "no partition 'atlantis'" "$out"
rc=0; out=$(ctl cache lookup 'bad..name' 2>&1) || rc=$?
assert_eq "a bad name is an error (exit 1)" "1" "$rc"
rc=0; out=$(ctl cache lookup video.cdn.test --type 'A B' 2>&1) || rc=$?
assert_eq "a type with a space is a usage error (exit 2)" "2" "$rc"
rc=0; out=$(ctl cache lookup video.cdn.test --type NOSUCHTYPE 2>&1) || rc=$?
assert_eq "an unknown type is an error (exit 1)" "1" "$rc"
assert_contains "... naming it" "unknown type 'NOSUCHTYPE'" "$out"
# query: as a client of wuxi, which never asked: resolved through the EDNS pool with wuxi's identity
out=$(pdctl query video.cdn.test --partition wuxi)
log "$out"
assert_contains "query as wuxi: resolved" "resolved in" "$out"
assert_contains "... wuxi's node" "203.0.113.3" "$out"
assert_contains "... from wuxi's first prefix" "(127.0.3.0)" "$out"
assert_contains "and now wuxi's entry is cached, fetched with wuxi's mapped address" "198.51.100.3/32" \
  "$(pdctl cache lookup video.cdn.test --partition wuxi)"
out=$(pdctl query video.cdn.test --partition nanjing)
assert_contains "query as nanjing: from the cache" "from the cache" "$out"
assert_contains "... nanjing's node" "203.0.113.1" "$out"
out=$(pdctl query "q$RANDOM.dead.example" --partition suzhou)
assert_contains "a name whose server never answers: SERVFAIL" "rcode SERVFAIL" "$out"
assert_contains "... with the Extended DNS Error" "EDE " "$out"
rc=0; out=$(ctl query video.cdn.test 2>&1) || rc=$?
assert_eq "query without --partition is a usage error (exit 2)" "2" "$rc"
rc=0; out=$(ctl query video.cdn.test --partition atlantis 2>&1) || rc=$?
assert_eq "query as an unknown partition is an error (exit 1)" "1" "$rc"
partdns_alive && ok "partdns still running" || fail "partdns died"
it_done
