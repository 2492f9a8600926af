#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Policy zones from a hostile primary (xfrprimary.c, TSIG by ldns): each zone
# transfers well once (serial 1), then its serial 2 comes wrong one way. A
# bad, missing or partial signature refuses the transfer (no AXFR instead:
# the primary is not to be trusted), the last good copy stays and is
# served, and the log says why, once; an IXFR that cannot be applied
# (a deletion of a record we never had, differences from another serial,
# NOTIMP, a malformed message) is logged and replaced by an AXFR; an
# unsigned message between signed ones (RFC 8945 5.3.1) is taken.
. "$(dirname "$0")/lib.sh"
harness_init rpz_xfr_hostile
harness_start_all
pd_require_bins

bin=${XFRPRIMARY_BIN:-$PARTDNS_SRC/build/tests/integration/xfrprimary}
[ -x "$bin" ] || die "xfrprimary not found: $bin (build target xfrprimary, or set XFRPRIMARY_BIN)"
SECRET=$(head -c 32 /dev/urandom | base64)
"$bin" "$NET.8" 53 xfr. "$SECRET" > "$IT_TMP/xfrprimary.log" 2>&1 &
IT_PIDS[xfrprimary]=$!
it_wait_dns 5 +tcp @"$NET.8" probe.xfr. SOA || die "xfrprimary did not answer" "$(cat "$IT_TMP/xfrprimary.log")"

MODES="badsig nosig lastunsigned gap baddel badchain notimp trunc"
pd_write_conf "$IT_TMP/partdns.yaml"
{
  echo "rpz:"
  for m in $MODES; do
    cat <<EOF2
  - zone: $m.xfr.
    file: $IT_TMP/$m.copy
    primary: "$NET.8@53"
    tsig: { name: xfr., algorithm: hmac-sha256, secret: "$SECRET" }
    refresh: 1
EOF2
  done
} >> "$PD_CONF"
partdns_start "$PD_CONF"

pdlog() { cat "$IT_TMP/partdns.log"; }

for m in $MODES; do
  it_poll 15 192.0.2.1 dig_a 127.0.1.10 "v1.$m.example" && ok "$m: the first transfer applies" ||
    fail "$m: the first transfer applies" "$(grep "rpz $m" "$IT_TMP/partdns.log" | tail -n 5)"
done

# serial 2 by another way than the primary's misbehaving one
for m in gap baddel badchain notimp trunc; do
  it_poll 15 192.0.2.2 dig_a 127.0.2.10 "v2.$m.example" && ok "$m: serial 2 applies" ||
    fail "$m: serial 2 applies" "$(grep "rpz $m" "$IT_TMP/partdns.log" | tail -n 5)"
done
assert_match "gap: an unsigned message between signed ones is taken" \
  'rpz gap\.xfr\.: 5 records transferred from .* \(IXFR answered with the whole zone\), serial 2' "$(pdlog)"
assert_match "baddel: the IXFR is not applied, and the log says why" \
  'rpz baddel\.xfr\.: IXFR from .* not used \(deletes gone\.baddel\.example\.baddel\.xfr\. A, which our copy does not have\): AXFR instead' \
  "$(pdlog)"
assert_match "badchain: the IXFR is not applied, and the log says why" \
  'rpz badchain\.xfr\.: IXFR from .* not used \(the differences start at serial 7, not at ours \(1\)\): AXFR instead' "$(pdlog)"
assert_match "notimp: the refusal is logged, AXFR instead" \
  'rpz notimp\.xfr\.: .* answers IXFR with NOTIMPL: AXFR instead' "$(pdlog)"
assert_match "trunc: a malformed IXFR reply is logged, AXFR instead" \
  'rpz trunc\.xfr\.: IXFR from .* not used \(message 1 is malformed\): AXFR instead' "$(pdlog)"
for m in baddel badchain notimp trunc; do
  assert_match "$m: serial 2 came by AXFR" "rpz $m\\.xfr\\.: 5 records transferred from .* \\(AXFR\\), serial 2" "$(pdlog)"
done

xfr_tmp_state() { [ -e "$1" ] && echo present || echo gone; }

# the bad signatures: give them a few more tries (refresh 1 s), then look
sleep 4
for m in badsig nosig lastunsigned; do
  assert_eq "$m: the last good copy is still served" "192.0.2.1" "$(dig_a 127.0.3.10 "v1.$m.example")"
  assert_ne "$m: serial 2 is not taken" "192.0.2.2" "$(dig_a 127.0.3.10 "v2.$m.example")"
  assert_match "$m: the copy on disk is still serial 1" 'SOA.* 1 1 1 86400 60' "$(cat "$IT_TMP/$m.copy")"
  # a retry (refresh 1 s) writes FILE.xfr while it runs; what matters is
  # that a failed one does not leave it behind
  it_poll 3 gone xfr_tmp_state "$IT_TMP/$m.copy.xfr" && ok "$m: no half-written copy left" ||
    fail "$m: no half-written copy left"
done
assert_match "badsig: refused, and the log says why" \
  'rpz badsig\.xfr\.: IXFR from .* failed: TSIG: a wrong TSIG signature \(message 2\); the last good copy stays' "$(pdlog)"
assert_match "nosig: refused, and the log says why" \
  'rpz nosig\.xfr\.: IXFR from .* failed: TSIG: the reply is not signed; the last good copy stays' "$(pdlog)"
assert_match "lastunsigned: refused, and the log says why" \
  'rpz lastunsigned\.xfr\.: IXFR from .* failed: TSIG: the last message is not signed; the last good copy stays' "$(pdlog)"
tries=$(grep -c 'query badsig.xfr. type 251' "$IT_TMP/xfrprimary.log")
assert_lt "badsig: tried again (IXFR queries)" "$tries" 1
assert_eq "badsig: the same failure is logged once, not per try" "1" \
  "$(grep -c 'rpz badsig\.xfr\.: IXFR from .* failed' "$IT_TMP/partdns.log")"
assert_not_contains "a refused signature does not fall back to AXFR" "rpz badsig.xfr.: IXFR from" \
  "$(grep 'AXFR instead' "$IT_TMP/partdns.log")"

assert_eq "partdns keeps resolving" "203.0.113.10" "$(dig_a 127.0.1.10 www.customer.example)"
partdns_alive && ok "partdns still running" || fail "partdns died" "$(tail -n 20 "$IT_TMP/partdns.log")"
it_done
