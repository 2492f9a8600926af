#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# edns.tier: two frontends send every flagged miss to the tier node owning
# the client's partition (rendezvous hashing of its name), with the client's
# address as ECS; the GSLB sees one query per city and name for the whole
# fleet, never a client address; a tier node killed hands its partitions to
# the other node within seconds, and the frontends' stats and metrics say so.
. "$(dirname "$0")/lib.sh"
harness_init edns_tier
pd_require_bins
command -v curl >/dev/null 2>&1 || { echo "FAIL - curl not installed (tools/deps.sh installs it)"; exit 1; }

# --- the hierarchy, with a GSLB steering names of our own per city (a*:
# before the kill, b*: fresh names after it)
CITIES="nanjing:127.0.1:203.0.113.1 suzhou:127.0.2:203.0.113.2 wuxi:127.0.3:203.0.113.3"
NAMES_A="a1 a2"
NAMES_B="b1 b2"
NAMES_C="c1"
harness_write_hints
knot_write_conf root "$NET.1" .
knot_write_conf tld "$NET.2" example. test.
knot_write_conf customer "$NET.3" customer.example. oob.example.
knot_write_conf gslb "$NET.4" cdn.test.
for n in $NAMES_A $NAMES_B $NAMES_C; do
  printf '%s.cdn.test:\n' "$n"
  for m in 1 2 3; do printf '  - net: 198.51.100.%s/32\n    A: 203.0.113.%s\n' "$m" "$m"; done
  printf '%-15s A     203.0.113.100\n' "$n" >> "$IT_TMP/knot-gslb/cdn.test.zone"
done >> "$IT_TMP/knot-gslb/gslb.geo"
knot_start root tld customer gslb

# --- four partdns on this harness's network, port 53 each (no ::1: one port there)
IT_HAVE_IPV6=0
TIER1=$NET.61 TIER2=$NET.62 FRONT1=$NET.71 FRONT2=$NET.72
declare -A PD_CONF_OF=()
# pd_conf NAME ADDR: NAME's config (own control socket and store) in $IT_TMP/NAME.
pd_conf() {
  local name=$1 dir=$IT_TMP/$1
  mkdir -p "$dir/store"
  PD_ADDR=$2 PD_PORT=53 pd_write_conf "$dir/partdns.yaml"
  sed -i -e "s|$IT_TMP/control.sock|$dir/control.sock|" -e "s|store: $IT_TMP/store|store: $dir/store|" \
    "$dir/partdns.yaml"
  PD_CONF_OF[$name]=$dir/partdns.yaml
}
# ctl NAME ARGS...: partdnsctl on NAME's config.
ctl() { local n=$1; shift; "$PARTDNSCTL_BIN" -c "${PD_CONF_OF[$n]}" "$@"; }
# pd_launch NAME ADDR: start NAME (stopped by the harness's clean-up), wait until it answers.
pd_launch() {
  "$PARTDNS_BIN" -c "${PD_CONF_OF[$1]}" >> "$IT_TMP/$1/partdns.log" 2>&1 &
  IT_PIDS[pd_$1]=$!
  it_wait_dns 20 -b 127.0.0.1 @"$2" localhost. A ||
    die "partdns $1 did not answer on $2 within 20 s" "$(tail -n 20 "$IT_TMP/$1/partdns.log")"
}
# stat NAME KEY: one line of NAME's partdnsctl stats.
stat() { ctl "$1" stats | awk -v k="$2" '$1 == k {print $2}'; }

# the tier nodes trust the frontends' ECS; the frontends send from their own address
for t in tier1:$TIER1 tier2:$TIER2; do
  PD_TRUSTED_ECS="[ $FRONT1/32, $FRONT2/32 ]" pd_conf "${t%%:*}" "${t#*:}"
done
for f in front1:$FRONT1 front2:$FRONT2; do
  pd_conf "${f%%:*}" "${f#*:}"
  sed -i "s|^  trusted_ecs: .*|&\n  tier: [ \"$TIER1@53\", \"$TIER2@53\" ]\n  outgoing: [ ${f#*:} ]|" \
    "${PD_CONF_OF[${f%%:*}]}"
done
MPORT=$(it_free_port "$FRONT1" 9153 9199)
sed -i "s|^  control: .*|&\n  metrics: \"$FRONT1@$MPORT\"|" "${PD_CONF_OF[front1]}"
assert_contains "front1's config lists the tier" "tier: [ \"$TIER1@53\", \"$TIER2@53\" ]" \
  "$(cat "${PD_CONF_OF[front1]}")"
for n in tier1 tier2 front1 front2; do ctl "$n" domain add cdn.test --subtree >/dev/null; done
pd_launch tier1 "$TIER1"
pd_launch tier2 "$TIER2"
pd_launch front1 "$FRONT1"
pd_launch front2 "$FRONT2"

# ask FRONT-ADDR CLIENT NAME: the A records a client gets through a frontend.
ask() {
  dig +time=5 +tries=1 -b "$2" @"$1" "$3" A +noall +answer 2>&1 | awk '$4 == "A" {print $5}' | sort | tr '\n' ' '
}
# ask_all NAMES [FRONTEND:HOST...]: every city's client asks every name through
# each frontend (default both; a different client of the city each, 127.0.C.HOST);
# every answer is its city's node.
ask_all() {
  local names=$1 f host n row city pfx node
  shift
  [ $# -gt 0 ] || set -- "$FRONT1:10" "$FRONT2:20"
  for f in "$@"; do
    host=${f#*:}
    for n in $names; do
      for row in $CITIES; do
        IFS=: read -r city pfx node <<<"$row"
        assert_eq "$n.cdn.test for a $city client ($pfx.$host) through ${f%:*}" "$node " \
          "$(ask "${f%:*}" "$pfx.$host" "$n.cdn.test")"
      done
    done
  done
}
# ecs_queries NAMES: the GSLB's A queries with ECS for those names since the last mark (dnstap log).
ecs_queries() {
  knot_since gslb "$MARK" | awk -v names=" $1 " '$2 == "A" && $3 != "-" {
    n = $1; sub(/\.cdn\.test\.$/, "", n); if (index(names, " " n " ")) print $1, $3 }'
}
NC=$(wc -w <<<"$CITIES") NA=$(wc -w <<<"$NAMES_A") NB=$(wc -w <<<"$NAMES_B")

# --- N cities x M names through both frontends: N x M GSLB queries in all
[ "$IT_HAVE_DNSTAP" = 0 ] || gslb_flush
MARK=$(knot_mark gslb)
ask_all "$NAMES_A" "$FRONT1:10"
g1=$(gslb_query_count)
ask_all "$NAMES_A" "$FRONT2:20"
assert_eq "front2's misses reached the GSLB no more (the tier had them; without it: $NC x $NA more)" \
  "$g1" "$(gslb_query_count)"
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  gslb_flush
  q=$(ecs_queries "$NAMES_A")
  assert_eq "the GSLB got $NC x $NA ECS queries for both frontends' misses (without the tier: twice that)" \
    "$((NC * NA))" "$(printf '%s\n' "$q" | grep -c .)"
  assert_eq "... one per city and name, each with the city's mapped /32 (no client address left the tier)" \
    "$(for n in $NAMES_A; do for m in 1 2 3; do echo "$n.cdn.test. 198.51.100.$m/32"; done; done | sort)" \
    "$(printf '%s\n' "$q" | sort)"
else
  log "knot-module-dnstap not installed: the GSLB's per-query log checks are skipped"
fi
# each frontend sent each (city, name) once to the tier, and no node was down
for f in front1 front2; do
  assert_eq "$f: $NC x $NA tier queries" "$((NC * NA))" "$(stat "$f" edns.tier_queries)"
  assert_eq "$f: no failover" 0 "$(stat "$f" edns.tier_failovers)"
  assert_eq "$f: $TIER1@53 up" 1 "$(stat "$f" "edns.tier.$TIER1@53.up")"
  assert_eq "$f: $TIER2@53 up" 1 "$(stat "$f" "edns.tier.$TIER2@53.up")"
  assert_eq "$f: resolved nothing itself (no cut lookups)" 0 "$(stat "$f" edns.cut_lookups)"
done
# one owner per city, the same for both frontends: the city's resolutions are all on one tier node
declare -A OWNER=()
for row in $CITIES; do
  IFS=: read -r city pfx node <<<"$row"
  r1=$(stat tier1 "partition.$city.edns") r2=$(stat tier2 "partition.$city.edns")
  if [ "$r1" = "$NA" ] && [ "$r2" = 0 ]; then OWNER[$city]=tier1
  elif [ "$r1" = 0 ] && [ "$r2" = "$NA" ]; then OWNER[$city]=tier2
  fi
  assert_ne "$city: its $NA names resolved on exactly one tier node (tier1 $r1, tier2 $r2)" "" "${OWNER[$city]:-}"
done
log "owners: $(for c in "${!OWNER[@]}"; do printf '%s=%s ' "$c" "${OWNER[$c]}"; done)"

# --- a tier node dies: the one that owns the most cities
n1=0
for c in "${!OWNER[@]}"; do [ "${OWNER[$c]}" != tier1 ] || n1=$((n1 + 1)); done
if [ "$n1" -ge $((NC - n1)) ]; then VICTIM=tier1 VADDR=$TIER1 SURV=tier2 SADDR=$TIER2
else VICTIM=tier2 VADDR=$TIER2 SURV=tier1 SADDR=$TIER1; fi
VPID=${IT_PIDS[pd_$VICTIM]}
for row in $CITIES; do
  IFS=: read -r city pfx node <<<"$row"
  [ "${OWNER[$city]}" != "$VICTIM" ] || { VCITY=$city VPFX=$pfx VNODE=$node; }
done
log "silencing $VICTIM ($VADDR), owner of $(for c in "${!OWNER[@]}"; do [ "${OWNER[$c]}" != "$VICTIM" ] || printf '%s ' "$c"; done)"
# stopped, it is silent as a dead host is (no port unreachable): its queries time out
kill -STOP "$VPID"
# at once, before the probes can tell: one of its cities' fresh names through front1
t0=$(date +%s%N)
got=$(ask "$FRONT1" "$VPFX.10" c1.cdn.test)
ms=$((($(date +%s%N) - t0) / 1000000))
assert_eq "c1.cdn.test for a $VCITY client right after its node went silent" "$VNODE " "$got"
fo=$(stat front1 edns.tier_failovers)
if [ "$ms" -ge 1400 ]; then # edns.timeout_ms is 1500: the owner was asked and timed out
  assert_eq "an answer that waited for the owner's timeout ($ms ms) came from the next node: one failover" 1 "$fo"
else
  assert_eq "a quick answer ($ms ms): the probes had marked $VICTIM down already, no failover" 0 "$fo"
fi
declare -A SURV0=()
for row in $CITIES; do
  IFS=: read -r city pfx node <<<"$row"
  SURV0[$city]=$(stat "$SURV" "partition.$city.edns")
done
# (probes every 250 ms, down after two unanswered: about a second; 10 s is for a loaded box)
for f in front1 front2; do
  it_poll 10 0 stat "$f" "edns.tier.$VADDR@53.up" && ok "$f: $VADDR@53 is down within 10 s" ||
    fail "$f: $VADDR@53 is down within 10 s" "$(ctl "$f" stats | grep '^edns\.tier')"
  assert_ne "$f: ... its downs are counted" 0 "$(stat "$f" "edns.tier.$VADDR@53.downs")"
done

# fresh names of every city still resolve, now all through the surviving node
[ "$IT_HAVE_DNSTAP" = 0 ] || gslb_flush
MARK=$(knot_mark gslb)
ask_all "$NAMES_B"
for row in $CITIES; do
  IFS=: read -r city pfx node <<<"$row"
  assert_eq "$city (owner $VICTIM before): its fresh names resolved on $SURV" "$((SURV0[$city] + NB))" \
    "$(stat "$SURV" "partition.$city.edns")"
done
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  gslb_flush
  assert_eq "the GSLB got $NC x $NB ECS queries for the fresh names (one tier node left)" \
    "$((NC * NB))" "$(ecs_queries "$NAMES_B" | grep -c .)"
fi
for f in front1 front2; do
  log "$f after the kill: $(ctl "$f" stats | grep -E '^edns\.tier' | tr '\n' ' ')"
  assert_eq "$f: the surviving node is up" 1 "$(stat "$f" "edns.tier.$SADDR@53.up")"
done
m=$(curl -s --max-time 2 "http://$FRONT1:$MPORT/metrics")
assert_contains "front1's metrics: $VADDR@53 down" "partdns_tier_node_up{node=\"$VADDR@53\"} 0" "$m"
assert_match "front1's metrics: tier queries counted" "^partdns_tier_queries_total [1-9]" "$m"
assert_contains "front1's metrics: failovers counted" "partdns_tier_failovers_total " "$m"

# --- it comes back (answers probes again), then it is stopped for good (port unreachable)
kill -CONT "$VPID"
for f in front1 front2; do
  it_poll 10 1 stat "$f" "edns.tier.$VADDR@53.up" && ok "$f: $VADDR@53 up again within 10 s" ||
    fail "$f: $VADDR@53 up again within 10 s" "$(ctl "$f" stats | grep '^edns\.tier')"
done
it_stop_pid "$VPID" 5
unset "IT_PIDS[pd_$VICTIM]"
for f in front1 front2; do
  it_poll 10 0 stat "$f" "edns.tier.$VADDR@53.up" && ok "$f: $VADDR@53 down again once stopped" ||
    fail "$f: $VADDR@53 down again once stopped" "$(ctl "$f" stats | grep '^edns\.tier')"
done
for f in front1 front2; do
  kill -0 "${IT_PIDS[pd_$f]}" 2>/dev/null && ok "$f still running" || fail "$f died" "$(tail -n 20 "$IT_TMP/$f/partdns.log")"
done
it_done
