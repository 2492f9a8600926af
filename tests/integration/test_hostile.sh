#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A lying authority behind an EDNS domain (hostile.c): forged records, foreign ECS, loops, bad wire, TC, silence.
#
# hostile.example. is delegated to hostile.c, which lies in a different way
# under each name (see the top of hostile.c).  It is flagged --subtree
# (policy iterate), and fwd.hostile.example exactly with policy forward to
# the same server.  What clients must get: the true data only -- nothing
# from another zone, no AD, no TTL above the zone's -- or a clear SERVFAIL
# (with an Extended DNS Error when they sent EDNS) within 10 s; and no lie
# may reach the cache that later answers for the names it forged.
. "$(dirname "$0")/lib.sh"
harness_init hostile
harness_start_all
hostile_start
pd_require_bins
pd_write_conf "$IT_TMP/partdns.yaml"
pdctl domain add hostile.example --subtree >/dev/null
pdctl domain add fwd.hostile.example --policy forward --forward "$NET.6" >/dev/null
assert_match "hostile.example is flagged as a subtree" 'hostile\.example.*subtree' "$(pdctl domain list)"
partdns_start "$PD_CONF"
pd_pid=$PD_PID

PD_DIG_TIME=10     # generous: a SERVFAIL must come within 10 s, dig waits that long
NJ=127.0.1.10      # partition nanjing
SZ=127.0.2.10      # partition suzhou
COMMON=127.0.0.10  # in no partition: unmatched, common
# www.customer.example's true address: the one its zone file gives
TRUE_WWW=$(awk '$1 == "www" && $2 == "A" {print $3}' "$IT_LIB_DIR/zones/customer.example.zone.in")
ZONE=hostile.example

OUT=""        # the last reply, dig's full output
MS=0          # how long it took, in ms
OUT_SHOWN=0   # the last reply was printed under a failed check already

# ask CLIENT NAME TYPE [DIG-ARGS...]: dig at partdns from CLIENT; sets OUT and MS.
ask() {
  local client=$1 name=$2 type=$3 t0 t1
  shift 3
  OUT_SHOWN=0
  if ! partdns_alive; then
    OUT="NO-RESPONSE: partdns is not running"
    MS=0
    return
  fi
  t0=$(date +%s%N)
  OUT=$(pd_dig "$client" "$name" "$type" "$@") || OUT+=$'\nNO-RESPONSE'
  t1=$(date +%s%N)
  MS=$(((t1 - t0) / 1000000))
}

# ask_direct NAME TYPE [DIG-ARGS...]: dig at the hostile server itself (ECS as partdns sends it).
ask_direct() {
  local name=$1 type=$2
  shift 2
  OUT_SHOWN=0
  OUT=$(dig +time=3 +tries=1 +norecurse +subnet=198.51.100.1/32 @"$NET.6" "$name" "$type" "$@" 2>&1) ||
    OUT+=$'\nNO-RESPONSE'
  MS=0
}

# expect DESC CMD...: a check on OUT; on failure the reply is shown (once per reply).
expect() {
  local desc=$1
  shift
  if "$@"; then
    ok "$desc"
  elif [ "$OUT_SHOWN" = 1 ]; then
    fail "$desc" "(reply above)"
  else
    OUT_SHOWN=1
    fail "$desc" "reply ($MS ms):" \
      "$(printf '%s\n' "$OUT" | grep -v -e '^$' -e '^; <<>>' -e '^;; global options' -e '^;; Query time' \
           -e '^;; WHEN' -e '^;; MSG SIZE' | sed 's/^/  /')"
  fi
}

# The parts of OUT.
rcode_of() {
  local r
  r=$(printf '%s\n' "$OUT" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p' | head -n 1)
  echo "${r:-NO-RESPONSE}"
}
header_flags() { printf '%s\n' "$OUT" | sed -n 's/^;; flags: \([a-z ]*\);.*/\1/p' | head -n 1; }
# section NAME: the records of ;; NAME SECTION: (ANSWER, AUTHORITY, ADDITIONAL)
section() {
  printf '%s\n' "$OUT" | awk -v s=";; $1 SECTION:" '
    $0 == s { on = 1; next }
    /^;; [A-Z]+ SECTION:/ || /^$/ { on = 0 }
    on && !/^;/'
}
all_records() { section ANSWER; section AUTHORITY; section ADDITIONAL; }
# answer_normal: the answer section as "owner TYPE rdata" lines, names in lower case
answer_normal() { section ANSWER | awk '{print tolower($1), $4, ($4 == "CNAME" ? tolower($5) : $5)}'; }

# The conditions expect takes.
is_rcode() { [ "$(rcode_of)" = "$1" ]; }
# has_rr OWNER TYPE RDATA: the answer section holds that record (names with their final dot)
has_rr() { answer_normal | grep -qxF -- "$1 $2 $3"; }
answer_is() { [ "$(answer_normal)" = "$1" ]; }
answer_a_is() { [ "$(section ANSWER | awk '$4 == "A" {print $5}' | sort | tr '\n' ' ')" = "$1 " ]; }
lacks() { ! grep -qiF -- "$1" <<<"$OUT"; }
flag_set() { [[ " $(header_flags) " == *" $1 "* ]]; }
flag_clear() { [ -n "$(header_flags)" ] && ! flag_set "$1"; }
has_ede() { grep -qE '^; EDE: [0-9]+' <<<"$OUT"; }
ttls_at_most() {
  local max
  max=$(all_records | awk 'BEGIN {m = 0} $2 > m {m = $2} END {print m}')
  [ -n "$(all_records)" ] && [ "$max" -le "$1" ]
}
within_ms() { [ "$MS" -lt "$1" ]; }

# servfail_case DESC CLIENT NAME [DIG-ARGS...]: SERVFAIL with an EDE (dig sends EDNS).
servfail_case() {
  local desc=$1 client=$2 name=$3
  shift 3
  ask "$client" "$name" A "$@"
  expect "$desc: SERVFAIL" is_rcode SERVFAIL
  expect "$desc: the SERVFAIL carries an Extended DNS Error (the client sent EDNS)" has_ede
}

# ---------------------------------------------------------------- the liar lies
# (checked at the server itself, so that the checks on partdns below are not vacuous)
ask_direct "poison.$ZONE" A
expect "premise: hostile's poison reply forges www.customer.example A 6.6.6.6" \
  has_rr www.customer.example. A 6.6.6.6
expect "premise: hostile's poison reply sets AD" flag_set ad
ask_direct "ecs.$ZONE" A
expect "premise: hostile's ecs reply carries someone else's ECS" \
  grep -qF 'CLIENT-SUBNET: 203.0.113.99/32/32' <<<"$OUT"
ask_direct "fwd.$ZONE" A +recurse
expect "premise: hostile's fwd reply holds the true chain (www.customer.example A $TRUE_WWW)" \
  has_rr www.customer.example. A "$TRUE_WWW"
expect "premise: hostile's fwd reply adds www.victim.test A 6.6.6.6" has_rr www.victim.test. A 6.6.6.6

# ---------------------------------------------------------------- good: the control
for c in "$NJ nanjing" "$SZ suzhou"; do
  read -r client city <<<"$c"
  ask "$client" "good.$ZONE" A
  expect "good from $city: NOERROR" is_rcode NOERROR
  expect "good from $city: A 192.0.2.7" answer_a_is 192.0.2.7
done

# ---------------------------------------------------------------- poison
# The CNAME is the zone's to give; the A of www.customer.example is not: it
# must come from customer.example's own server.
for c in "$NJ nanjing" "$SZ suzhou"; do
  read -r client city <<<"$c"
  ask "$client" "poison.$ZONE" A
  expect "poison from $city: NOERROR" is_rcode NOERROR
  expect "poison from $city: answer has poison.$ZONE CNAME www.customer.example" \
    has_rr "poison.$ZONE." CNAME www.customer.example.
  expect "poison from $city: answer has www.customer.example A $TRUE_WWW (the true address)" \
    has_rr www.customer.example. A "$TRUE_WWW"
  expect "poison from $city: no 6.6.6.6 anywhere in the reply" lacks 6.6.6.6
  expect "poison from $city: no ns.evil.test anywhere in the reply" lacks ns.evil.test
  expect "poison from $city: AD flag not set" flag_clear ad
  expect "poison from $city: every TTL in the reply <= 300" ttls_at_most 300
done

# ---------------------------------------------------------------- extra
ask "$NJ" "extra.$ZONE" A
expect "extra: NOERROR" is_rcode NOERROR
expect "extra: the answer is extra.$ZONE A 192.0.2.8 only" answer_is "extra.$ZONE. A 192.0.2.8"
expect "extra: no 'evil' anywhere in the reply (authority and additional from other zones dropped)" lacks evil
expect "extra: no 6.6.6.6 anywhere in the reply" lacks 6.6.6.6

# ---------------------------------------------------------------- ad
for v in "+noadflag:client without AD" "+adflag:client sets AD" "+dnssec:client sets DO"; do
  ask "$NJ" "ad.$ZONE" A "${v%%:*}"
  expect "ad (${v#*:}): A 192.0.2.9" answer_a_is 192.0.2.9
  expect "ad (${v#*:}): no AD flag in the reply" flag_clear ad
done

# ---------------------------------------------------------------- ecs
ask "$NJ" "ecs.$ZONE" A
expect "ecs (the server's ECS is not ours): SERVFAIL" is_rcode SERVFAIL
expect "ecs: within 10 s" within_ms 10000
expect "ecs: the SERVFAIL carries an Extended DNS Error" has_ede

# ---------------------------------------------------------------- broken answers
servfail_case "loop (loop CNAME loop2 CNAME loop)" "$NJ" "loop.$ZONE"
servfail_case "c1 (40 CNAME hops, over the limit)" "$NJ" "c1.$ZONE"
servfail_case "ptrloop (owner name a compression pointer to itself)" "$NJ" "ptrloop.$ZONE"
servfail_case "rdlen0 (an A record with RDLENGTH 0)" "$NJ" "rdlen0.$ZONE"
# +ignore: judge partdns' UDP reply itself, dig must not retry over TCP
servfail_case "tc over UDP (TC=1 over UDP and TCP)" "$NJ" "tc.$ZONE" +ignore
servfail_case "tc over TCP" "$NJ" "tc.$ZONE" +tcp
expect "tc over TCP: the TCP reply has no TC flag" flag_clear tc

ask "$NJ" "silent.$ZONE" A
expect "silent (never answers): SERVFAIL" is_rcode SERVFAIL
expect "silent: within 10 s" within_ms 10000
expect "silent: the SERVFAIL carries an Extended DNS Error" has_ede

# ---------------------------------------------------------------- fwd (policy forward)
ask "$NJ" "fwd.$ZONE" A
expect "fwd: NOERROR" is_rcode NOERROR
expect "fwd: answer has fwd.$ZONE CNAME www.customer.example" has_rr "fwd.$ZONE." CNAME www.customer.example.
expect "fwd: answer has www.customer.example A $TRUE_WWW" has_rr www.customer.example. A "$TRUE_WWW"
expect "fwd: no 'victim' anywhere in the reply" lacks victim
expect "fwd: no 6.6.6.6 anywhere in the reply" lacks 6.6.6.6
expect "fwd: no 'evil' anywhere in the reply" lacks evil

# ---------------------------------------------------------------- nothing stuck
for c in "$NJ nanjing" "$SZ suzhou" "$COMMON common"; do
  read -r client city <<<"$c"
  ask "$client" www.customer.example A
  expect "afterwards, www.customer.example from $city: A $TRUE_WWW" answer_a_is "$TRUE_WWW"
  expect "afterwards, www.customer.example from $city: no 6.6.6.6 in the reply" lacks 6.6.6.6
done
ask "$COMMON" customer.example NS
expect "afterwards, customer.example NS from common: ns.customer.example." \
  answer_is "customer.example. NS ns.customer.example."
expect "afterwards, customer.example NS from common: no 'evil' in the reply" lacks evil

if partdns_alive && [ "$PD_PID" = "$pd_pid" ]; then
  ok "partdns still running (pid $pd_pid): it never crashed"
else
  fail "partdns is not running any more (pid $pd_pid)" "$(tail -n 20 "$IT_TMP/partdns.log")"
fi
it_done
