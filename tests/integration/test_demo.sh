#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs tools/demo/run end to end and checks it shows three cities getting three distinct CDN nodes.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root"
for b in knotd knotc unbound; do command -v "$b" >/dev/null 2>&1 || skip "$b not installed"; done
IT_NAME=demo
out=$(bash "$PARTDNS_SRC/tools/demo/run" 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/# demo: /'
assert_eq "the demo exits 0" "0" "$rc"
result=$(printf '%s\n' "$out" | grep '^RESULT:')
assert_contains "nanjing's node" "nanjing=203.0.113.1 " "$result"
assert_contains "suzhou's node" "suzhou=203.0.113.2 " "$result"
assert_contains "wuxi's node" "wuxi=203.0.113.3 " "$result"
assert_contains "the normal name" "www=203.0.113.10 " "$result"
assert_eq "three distinct addresses for video.customer.example in the dig lines" "3" \
  "$(printf '%s\n' "$out" | awk '$1 == "video.cdn.test." && $4 == "A" {print $5}' | sort -u | grep -c .)"
wd=$(printf '%s\n' "$out" | sed -n 's/^(work dir: \([^,]*\),.*/\1/p')
assert_ne "the demo names its work dir" "" "$wd"
[ -z "$wd" ] || { [ ! -e "$wd" ] && ok "the demo removed its work dir" || fail "the demo left $wd behind"; }
it_done
