#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Response policy zones from files: the actions (NXDOMAIN, NODATA,
# PASSTHRU, DROP, local data, a CNAME rewrite to a walled garden), exact,
# wildcard and client-IP triggers, a zone for some partitions only, the order of
# zones, RPZ after local data and before flagged domains, bad records
# skipped and reported, hits counted, a broken file keeping the running
# version on reload, an unknown partition refused.
. "$(dirname "$0")/lib.sh"
harness_init rpz
harness_start_all
pd_require_bins

cat > "$IT_TMP/policy.zone" <<'EOF'
$TTL 300
@                        SOA  ns.rpz.example. host.rpz.example. 1 3600 600 86400 60
@                        NS   ns.rpz.example.
; the customer's real names, overridden
www.customer.example     CNAME .
txt.customer.example     CNAME *.
*.oob.example            CNAME .
plain.customer.example   CNAME rpz-passthru.
big.customer.example     CNAME rpz-drop.
data.customer.example    A    192.0.2.70
data.customer.example    AAAA 2001:db8::70
; a CNAME target: static.customer.example is a CNAME to it
static.cdn.test          CNAME .
ads.test                 CNAME garden.walled.test.
rewrite.test             CNAME plain.customer.example.
steer.test               CNAME video.customer.example.
twice.test               CNAME ads.test.
; client-IP triggers: a quarantined host to the walled garden, an IPv6 client blocked
32.66.1.0.127.rpz-client-ip  CNAME garden.walled.test.
128.1.zz.rpz-client-ip       CNAME .
; bad records: skipped and reported, the rest loads
33.1.0.0.127.rpz-client-ip   CNAME .
32.1.0.0.127.rpz-ip      CNAME .
odd.customer.example     CNAME rpz-something.
EOF
cat > "$IT_TMP/city.zone" <<'EOF'
$TTL 300
@                        SOA  ns.city.rpz. host.city.rpz. 1 3600 600 86400 60
; for suzhou only, before the global zone
video.customer.example   CNAME .
data.customer.example    A    192.0.2.99
EOF
pd_write_conf "$IT_TMP/partdns.yaml"
cat >> "$PD_CONF" <<EOF
local_zones:
  - { name: local.customer.example., type: static, data: [ "@ A 192.0.2.80" ] }
  - { name: walled.test., type: static, data: [ "garden A 192.0.2.88" ] }
rpz:
  - { zone: city.rpz., file: $IT_TMP/city.zone, partitions: [ suzhou ] }
  - { zone: rpz.example., file: $IT_TMP/policy.zone }
  - { zone: 'odd"name.rpz.', file: $IT_TMP/odd.zone }
EOF
# a zone name with a quote (a legal DNS name): the JSON stats must escape it
cat > "$IT_TMP/odd.zone" <<'EOF'
$TTL 300
@                        SOA  ns host 1 3600 600 86400 60
odd.customer.example     CNAME .
EOF
cat >> "$IT_TMP/policy.zone" <<'EOF'
local.customer.example   CNAME .
EOF
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"

k0=$(knot_query_count customer)
assert_eq "NXDOMAIN action over a name that exists" "NXDOMAIN" "$(dig_rcode 127.0.1.10 www.customer.example)"
out=$(pd_dig 127.0.1.10 txt.customer.example TXT)
assert_contains "NODATA action" "status: NOERROR" "$out"
assert_contains "... with nothing in the answer" "ANSWER: 0" "$out"
assert_eq "a wildcard trigger" "NXDOMAIN" "$(dig_rcode 127.0.1.10 a.b.oob.example)"
assert_eq "local data: A" "192.0.2.70" "$(dig_a 127.0.1.10 data.customer.example)"
assert_eq "local data: AAAA" "2001:db8::70" "$(pd_dig 127.0.1.10 data.customer.example AAAA +short)"
# a CNAME rewrite is followed one hop, as BIND does: the client gets the
# target's answer after the CNAME, whether the target is local data, a
# name resolved (a miss, then a hit) or a flagged name steered per city
out=$(pd_dig 127.0.1.10 ads.test A +noall +answer)
assert_match "a CNAME rewrite to the walled garden" \
  '^ads\.test\.[[:space:]]+300[[:space:]]+IN[[:space:]]+CNAME[[:space:]]+garden\.walled\.test\.' "$out"
assert_match "... lands on the walled garden's address" \
  'garden\.walled\.test\.[[:space:]]+[0-9]+[[:space:]]+IN[[:space:]]+A[[:space:]]+192\.0\.2\.88' "$out"
assert_eq "policy answers never reached the customer's server" "$k0" "$(knot_query_count customer)"
k1=$(knot_query_count customer)
for round in miss hit; do
  out=$(pd_dig 127.0.1.10 ReWrite.test A +noall +answer)
  assert_match "a rewrite to a name resolved upstream ($round): the CNAME" \
    '^ReWrite\.test\.[[:space:]]+300[[:space:]]+IN[[:space:]]+CNAME[[:space:]]+plain\.customer\.example\.' "$out"
  assert_match "... and the target's address ($round)" \
    'plain\.customer\.example\.[[:space:]]+[0-9]+[[:space:]]+IN[[:space:]]+A[[:space:]]+203\.0\.113\.11' "$out"
done
assert_eq "... the target resolved once (a miss, then a hit)" "$((k1 + 1))" "$(knot_query_count customer)"
assert_contains "a rewrite to a flagged name: steered for the client's city (nanjing)" "203.0.113.1" \
  "$(pd_dig 127.0.1.10 steer.test A +short)"
assert_contains "... and for wuxi" "203.0.113.3" "$(pd_dig 127.0.3.10 steer.test A +short)"
out=$(pd_dig 127.0.1.10 twice.test A +noall +answer)
assert_match "a rewrite to a rewritten name: one hop followed, the second CNAME answered as it stands" \
  'ads\.test\.[[:space:]]+300[[:space:]]+IN[[:space:]]+CNAME[[:space:]]+garden\.walled\.test\.' "$out"
assert_not_contains "... not chased further" "192.0.2.88" "$out"
assert_contains "PASSTHRU: resolved as usual" "203.0.113.11" "$(dig_a 127.0.1.10 plain.customer.example)"

# client-IP triggers: before the zone's QNAME triggers, and for names whose
# cache entry is remembered as matching no QNAME trigger
for i in 1 2 3; do
  assert_eq "a name no trigger matches (hit $i)" "$NET.3" "$(dig_a 127.0.1.10 ns.customer.example)"
done
out=$(pd_dig 127.0.1.66 ns.customer.example A +noall +answer)
assert_match "a client-IP trigger: the quarantined host gets the walled garden for a cached name" \
  '^ns\.customer\.example\.[[:space:]]+300[[:space:]]+IN[[:space:]]+CNAME[[:space:]]+garden\.walled\.test\.' "$out"
assert_match "... and its address (the rewrite followed)" \
  'garden\.walled\.test\.[[:space:]]+[0-9]+[[:space:]]+IN[[:space:]]+A[[:space:]]+192\.0\.2\.88' "$out"
assert_contains "... before the zone's QNAME trigger for the name (NXDOMAIN)" "192.0.2.88" \
  "$(pd_dig 127.0.1.66 www.customer.example A +short)"
assert_eq "... not for its neighbour" "$NET.3" "$(dig_a 127.0.1.67 ns.customer.example)"
assert_eq "an IPv6 client-IP trigger (::1, 128.1.zz)" "NXDOMAIN" "$(dig_rcode ::1 ns.customer.example)"
assert_match "a malformed client-IP trigger reported with zone and owner" \
  'rpz rpz\.example\.: record at 33\.1\.0\.0\.127\.rpz-client-ip\.rpz\.example\. skipped: malformed' \
  "$(cat "$IT_TMP/partdns.log")"
assert_eq "DROP: no reply" "NO-RESPONSE" "$(dig_rcode 127.0.1.10 big.customer.example TXT)"

# per partition, in order; local data first; flagged domains after
assert_eq "suzhou's own zone, first: NXDOMAIN for the flagged name" "NXDOMAIN" \
  "$(dig_rcode 127.0.2.10 video.customer.example)"
assert_eq "... nanjing still steered through the GSLB" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "the first zone that matches decides (suzhou)" "192.0.2.99" "$(dig_a 127.0.2.10 data.customer.example)"
assert_eq "... the global zone for the others (wuxi)" "192.0.2.70" "$(dig_a 127.0.3.10 data.customer.example)"
# a trigger for a CNAME target: the answer's chain is checked, from a
# resolution and from the cache
assert_eq "a CNAME target's trigger applies (resolved)" "NXDOMAIN" "$(dig_rcode 127.0.1.10 static.customer.example)"
assert_eq "... and from the cache" "NXDOMAIN" "$(dig_rcode 127.0.1.11 static.customer.example)"
assert_eq "local data before RPZ" "192.0.2.80" "$(dig_a 127.0.1.10 local.customer.example)"

# reporting and counting
assert_match "an unsupported trigger reported with zone and owner" \
  'rpz rpz\.example\.: record at 32\.1\.0\.0\.127\.rpz-ip\.rpz\.example\. skipped' "$(cat "$IT_TMP/partdns.log")"
assert_match "an unknown action reported" \
  'rpz rpz\.example\.: record at odd\.customer\.example\.rpz\.example\. skipped: unknown' "$(cat "$IT_TMP/partdns.log")"
stats=$("$PARTDNSCTL_BIN" -c "$PD_CONF" stats)
assert_match "hits per zone" '^rpz\.rpz\.example\.\.hits [1-9]' "$stats"
assert_match "hits per zone and partition" '^rpz\.city\.rpz\.\.partition\.suzhou [1-9]' "$stats"
assert_match "rules per zone: 14 of 18 records are triggers" '^rpz\.rpz\.example\.\.rules 14$' "$stats"
zones=$(pdctl stats --json | python3 -c 'import json, sys; print(" ".join(z["zone"] for z in json.load(sys.stdin)["rpz"]))' 2>&1)
assert_eq "stats --json is JSON, a quote in a zone name escaped" 'city.rpz. rpz.example. odd"name.rpz.' "$zones"

# a reload with a broken file keeps the running version; a fixed one is read
printf 'www.customer.example CNAME rpz-passthru.\nbad.customer.example A not-an-address\n' > "$IT_TMP/policy.zone.new"
cp "$IT_TMP/policy.zone" "$IT_TMP/policy.zone.good"
{ head -n 3 "$IT_TMP/policy.zone.good"; cat "$IT_TMP/policy.zone.new"; } > "$IT_TMP/policy.zone"
assert_contains "reload" "reloaded" "$(pdctl reload 2>&1)"
assert_eq "a zone file that does not parse: the running version stays" "NXDOMAIN" \
  "$(dig_rcode 127.0.3.10 www.customer.example)"
assert_match "... and the error names the file and line" "rpz rpz\\.example\\.: .*policy\\.zone:5" \
  "$(cat "$IT_TMP/partdns.log")"
{ head -n 3 "$IT_TMP/policy.zone.good"; echo 'www.customer.example CNAME rpz-passthru.'; } > "$IT_TMP/policy.zone"
assert_contains "reload" "reloaded" "$(pdctl reload 2>&1)"
assert_eq "a changed file is read again: PASSTHRU now" "203.0.113.10" "$(dig_a 127.0.3.10 www.customer.example)"

# a cached name that matched nothing is remembered as such (its hits skip
# the policy) only until the policy changes, and only when no zone, for
# any partition, has a trigger for it
for i in 1 2 3; do dig_a 127.0.3.10 plain.customer.example >/dev/null; done
echo 'plain.customer.example CNAME .' >> "$IT_TMP/city.zone"
assert_contains "reload" "reloaded" "$(pdctl reload 2>&1)"
assert_eq "a new trigger for a cached, checked name applies (suzhou)" "NXDOMAIN" \
  "$(dig_rcode 127.0.2.10 plain.customer.example)"
for i in 1 2 3; do
  assert_eq "... not for wuxi, whose zone has no trigger (hit $i)" "203.0.113.11" "$(dig_a 127.0.3.10 plain.customer.example)"
done
assert_eq "... and still for suzhou after wuxi's hits" "NXDOMAIN" "$(dig_rcode 127.0.2.10 plain.customer.example)"

# the config: a partition that is not in the plan
sed -i 's|partitions: \[ suzhou \]|partitions: [ suzhou, hangzhou ]|' "$PD_CONF"
out=$("$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1)
assert_match "an unknown partition is a config error with its key" \
  "error: no such partition in this plan .*key 'rpz\[0\]\.partitions\[1\]', value 'hangzhou'" "$out"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
