#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# edns.trusted_ecs: a trusted frontend's ECS classifies (private and CGNAT prefixes too) and is echoed; others' ECS is ignored.
. "$(dirname "$0")/lib.sh"
harness_init trusted_ecs
harness_start_all
pd_require_bins
PD_TRUSTED_ECS='[ 127.0.0.200/32 ]' pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add video.customer.example
partdns_start "$PD_CONF"

ecs_of() { printf '%s\n' "$1" | sed -n 's/.*CLIENT-SUBNET: \([^ ]*\).*/\1/p'; }
a_of() { printf '%s\n' "$1" | awk '$4 == "A" && $1 !~ /^;/ {print $5}' | sort | tr '\n' ' '; }

# rows: source, ECS sent, expected node, ECS echo expected (ADDR/SOURCE, or - for none), why
while IFS='|' read -r src ecs want echo why; do
  [ -n "$src" ] || continue
  opt=""; [ "$ecs" = - ] || opt="+subnet=$ecs"
  out=$(pd_dig "$src" video.customer.example A $opt)
  assert_eq "$why: answer" "$want " "$(a_of "$out")"
  got=$(ecs_of "$out")
  if [ "$echo" = - ]; then
    assert_eq "$why: no ECS in the response" "" "$got"
  else
    # RFC 7871 7.2: FAMILY, SOURCE PREFIX-LENGTH and ADDRESS as sent; any SCOPE
    assert_eq "$why: ECS echoed (address/source)" "$echo" "$(printf '%s' "$got" | cut -d/ -f1-2)"
  fi
done <<'ROWS'
127.0.0.200|10.1.2.3/32|203.0.113.1|10.1.2.3/32|trusted, ECS in nanjing's private 10.1/16
127.0.0.200|10.2.0.0/16|203.0.113.2|10.2.0.0/16|trusted, ECS = suzhou's whole private /16
127.0.0.200|100.64.1.7/32|203.0.113.1|100.64.1.7/32|trusted, ECS in nanjing's CGNAT 100.64.1/24
127.0.0.200|10.3.9.0/24|203.0.113.3|10.3.9.0/24|trusted, ECS /24 in wuxi's 10.3/16
127.0.0.200|127.0.2.10/32|203.0.113.2|127.0.2.10/32|trusted, ECS = a suzhou loopback client
127.0.0.200|192.0.2.1/32|203.0.113.100|192.0.2.1/32|trusted, ECS in no partition (unmatched: common)
127.0.0.200|-|203.0.113.100|-|trusted source without ECS: classified by its own address
127.0.9.9|10.1.2.3/32|203.0.113.100|-|untrusted client (no partition): ECS ignored, never echoed
127.0.2.10|10.1.2.3/32|203.0.113.2|-|untrusted suzhou client claiming nanjing: its own city
127.0.3.10|10.1.0.0/16|203.0.113.3|-|untrusted wuxi client claiming nanjing /16: its own city
ROWS

# a normal name through a trusted frontend: answered, ECS still echoed
out=$(pd_dig 127.0.0.200 www.customer.example A +subnet=10.1.2.3/32)
assert_eq "trusted, normal name: answer" "203.0.113.10 " "$(a_of "$out")"
assert_eq "trusted, normal name: ECS echoed" "10.1.2.3/32" "$(ecs_of "$out" | cut -d/ -f1-2)"

if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  knot_flush gslb customer
  g=$(gslb_queries)
  assert_eq "GSLB saw only mapped /32s (never 10.x, 100.64.x, 127.x or 192.0.2.x)" "" \
    "$(printf '%s\n' "$g" | awk '$3 != "-" && $3 !~ /^198\.51\.100\.[123]\/32$/')"
  assert_eq "customer server saw only mapped /32s" "" \
    "$(knot_queries customer | awk '$3 != "-" && $3 !~ /^198\.51\.100\.[123]\/32$/')"
fi
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
