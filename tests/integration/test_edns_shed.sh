#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A random-subdomain flood against a flagged zone is refused by the listeners
# while the EDNS thread says the zone is over edns.zone_qps (no hand-over per
# refused query), and only where the thread would refuse too: a name in a
# zone cut cached below the flooded zone has its own rate and still resolves.
#
# The flagged rule is the whole TLD test. (--subtree --force): the flood asks
# fresh names directly under test. (the TLD's zone, NET.2), and cdn.test. is
# a zone cut below it (the GSLB, NET.4).
. "$(dirname "$0")/lib.sh"
harness_init edns_shed
command -v dnsperf >/dev/null 2>&1 || die "dnsperf not installed (tools/deps.sh installs it)"
harness_start_all
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i -e 's|^edns:|edns:\n  zone_qps: 20\n  threads: 1|' "$PD_CONF"
sed -i 's|^  allow: \(.*\)|  allow: \1\n  client_exempt: [ 127.0.0.0/8 ]|' "$PD_CONF"
pdctl domain add test --subtree --force >/dev/null || die "cannot flag test. --subtree"
partdns_start "$PD_CONF"

stat() { pdctl stats | awk -v k="$1" '$1 == k {print $2}'; }
# flood NAME-PREFIX: 3 s at 500 qps of fresh names directly under test. from nanjing
flood() {
  awk -v p="$1" -v s="$RANDOM" 'BEGIN { srand(s); for (i = 0; i < 1500; i++) printf "%s%d-%d.test A\n", p, i, int(rand() * 1e9) }' \
    > "$IT_TMP/flood-$1.txt"
  dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.1.77 -d "$IT_TMP/flood-$1.txt" -n 1 -Q 500 -t 2 -c 1 -T 1 \
    > "$IT_TMP/flood-$1.out" 2>&1
}

# 1. Nothing cached below test.: the listeners refuse most of the flood.
flood a
limited=$(stat edns.zone_limited) early=$(stat edns.zone_limited_early)
assert_lt "the flood went over edns.zone_qps (edns.zone_limited $limited)" "${limited:-0}" 1000
assert_lt "most of it refused by the listeners, before the hand-over (edns.zone_limited_early $early of $limited)" \
  "${early:-0}" "$(( ${limited:-0} / 2 ))"
codes=$(sed -n 's/^ *Response codes: *//p' "$IT_TMP/flood-a.out")
[[ "$codes" == *SERVFAIL* && "$codes" == *NXDOMAIN* ]] &&
  ok "the flood got NXDOMAIN within the rate and SERVFAIL over it ($codes)" ||
  fail "the flood's answers" "$codes"
ede=$(pd_dig 127.0.1.77 "late$RANDOM.test" A; for i in $(seq 1 40); do pd_dig 127.0.1.77 "late$i-$RANDOM.test" A; done)
[[ "$ede" != *'resolver overloaded'* ]] && ok "no 'overloaded' refusals: the budget never filled" ||
  fail "refused as overloaded" "$ede"

# 2. A cut below the flooded zone (cdn.test., asked once before the flood)
#    has its own rate: its fresh names resolve while test. is flooded.
#    Finding the cut asks test.'s server, whose rate the first flood and the
#    late queries used up: it resolves once that rate has room again (up to
#    5 s; on a fast machine the first try comes too soon).
ans=""
for i in $(seq 1 25); do
  ans=$(dig_a 127.0.2.10 video.cdn.test)
  [ "$ans" = 203.0.113.2 ] && break
  sleep 0.2
done
assert_eq "suzhou's video.cdn.test through the flagged rule, once test.'s rate has room" "203.0.113.2" "$ans"
early0=$(stat edns.zone_limited_early)
flood b &
fl=$!
sleep 1
bad=0
for i in $(seq 1 20); do
  rc=$(pd_dig 127.0.2.10 "fresh$i-$RANDOM.cdn.test" A | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')
  [ "$rc" = NXDOMAIN ] || bad=$((bad + 1))
  sleep 0.05
done
wait "$fl"
assert_eq "fresh names under cdn.test. answered during the flood of test. (not refused for test.'s rate)" 0 "$bad"
early1=$(stat edns.zone_limited_early)
assert_eq "with a cut cached below test., the listeners leave the refusal to the thread" "$early0" "$early1"
limited=$(stat edns.zone_limited)
assert_lt "the second flood was refused by the thread (edns.zone_limited $limited)" "${limited:-0}" 2000

partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
partdns_stop
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
