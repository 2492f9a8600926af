#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Cache snapshots (cache.snapshot): five cities' flagged names and some normal
# names warmed, partdns stopped (SIGTERM writes the snapshot) and started
# again: the same names from the same cities are answered with no query at
# the GSLB or the customer's server and with aged TTLs. A plan that moved a
# city's mapped address drops that city's answers alone; truncated, corrupt,
# other-version and oversized files start cold with one clear log line, and
# the daemon answers. partdnsctl cache dump/load, status and stats; --takeover
# hands the cache over.
. "$(dirname "$0")/lib.sh"
harness_init cache_snapshot
harness_start_all
pd_require_bins
SNAP=$IT_TMP/cache.snap
pd_write_conf "$IT_TMP/partdns.yaml"
# five cities: the GSLB knows three mapped addresses, the two more get its default node (each its own entry)
sed -i '/^    - { name: wuxi,/a\
    - { name: changzhou, label: Changzhou, mapped: 198.51.100.4, prefixes: [ 127.0.4.0/24 ] }\
    - { name: yangzhou, label: Yangzhou, mapped: 198.51.100.5, prefixes: [ 127.0.5.0/24 ] }' "$PD_CONF"
cat >> "$PD_CONF" <<EOF
cache:
  snapshot: $SNAP
  snapshot_interval: 0
EOF
pdctl domain add video.cdn.test >/dev/null
partdns_start "$PD_CONF"

declare -A NODE=([1]=203.0.113.1 [2]=203.0.113.2 [3]=203.0.113.3 [4]=203.0.113.100 [5]=203.0.113.100)
stat() { "$PARTDNSCTL_BIN" -c "$PD_CONF" stats | awk -v k="$1" '$1 == k {print $2}'; }
status() { "$PARTDNSCTL_BIN" -c "$PD_CONF" status | awk -v k="$1" '$1 == k {print $2}'; }
# upstream: the GSLB's and the customer's server's query counts
upstream() { echo "$(knot_query_count gslb) $(knot_query_count customer)"; }
# ask ALL: every city's flagged names, the normal names; "client name answer ttl" lines
ask_all() {
  local n name out
  for n in 1 2 3 4 5; do
    for name in video.cdn.test video.customer.example; do
      out=$(pd_dig "127.0.$n.10" "$name" A +noall +answer | awk '$4 == "A" {print $5, $2}')
      echo "127.0.$n.10 $name ${out:-none -}"
    done
  done
  for name in www.customer.example plain.customer.example; do
    out=$(pd_dig 127.0.0.1 "$name" A +noall +answer | awk '$4 == "A" {print $5, $2}')
    echo "127.0.0.1 $name ${out:-none -}"
  done
}
answers() { awk '{print $1, $2, $3}' <<<"$1"; }

# ---- warm, stop, start: the same answers from the snapshot, aged, nothing asked upstream
WARM=$(ask_all)
for n in 1 2 3 4 5; do
  assert_eq "city $n warmed with its node" "${NODE[$n]}" "$(awk -v c="127.0.$n.10" '$1 == c && $2 == "video.cdn.test" {print $3}' <<<"$WARM")"
done
assert_eq "normal names warmed" "203.0.113.10 203.0.113.11" \
  "$(awk '$1 == "127.0.0.1" {print $3}' <<<"$WARM" | tr '\n' ' ' | sed 's/ $//')"
sleep 2
partdns_stop 20
assert_eq "partdns stopped on SIGTERM" "0" "$PD_EXIT_STATUS"
assert_match "SIGTERM wrote the snapshot" "cache snapshot \(stop\): [0-9]+ entries, [0-9]+ bytes written to $SNAP" \
  "$(cat "$IT_TMP/partdns.log")"
[ -s "$SNAP" ] && ok "the snapshot file is there" || fail "no snapshot file at $SNAP"
[ ! -e "$SNAP.tmp" ] && ok "no temporary file left" || fail "$SNAP.tmp left behind"
sleep 1
U0=$(upstream)
[ "$IT_HAVE_DNSTAP" = 0 ] || { knot_flush gslb; knot_flush customer; }
G0=$(knot_mark gslb)
C0=$(knot_mark customer)
partdns_start "$PD_CONF"
assert_match "the start loaded it, in one line" "cache snapshot \(start\): [0-9]+ entries loaded from $SNAP \(written [0-9]+ s ago\)" \
  "$(cat "$IT_TMP/partdns.log")"
AGAIN=$(ask_all)
assert_eq "the same answers from the same cities after the restart" "$(answers "$WARM")" "$(answers "$AGAIN")"
assert_eq "no query reached the GSLB or the customer's server (knotd stats)" "$U0" "$(upstream)"
if [ "$IT_HAVE_DNSTAP" = 1 ]; then
  knot_flush gslb
  knot_flush customer
  assert_eq "the GSLB's query log has nothing new" "" "$(knot_since gslb "$G0")"
  assert_eq "the customer's query log has nothing new" "" "$(knot_since customer "$C0")"
else
  log "knot-module-dnstap missing: query logs not read (counts checked)"
fi
lower=$(paste <(awk '{print $4}' <<<"$WARM") <(awk '{print $4}' <<<"$AGAIN") | awk '$1 != "-" && $2 < $1 {n++} END {print n + 0}')
total=$(awk '$4 != "-"' <<<"$WARM" | wc -l)
assert_eq "every TTL is lower than before the restart (aged by the time that passed)" "$total" "$lower"
assert_lt "stats: snapshot entries loaded" "$(stat cache.snapshot_loaded)" 9
assert_eq "stats: no file refused" "0" "$(stat cache.snapshot_files_refused)"
assert_contains "/metrics-backed stats name the saved entries too" "cache.snapshot_saved" \
  "$("$PARTDNSCTL_BIN" -c "$PD_CONF" stats)"

# ---- partdnsctl cache dump / load, status
out=$(pdctl cache dump "$IT_TMP/peer.snap")
assert_match "cache dump writes the file" "^[0-9]+ entries, [0-9]+ bytes written to $IT_TMP/peer.snap" "$out"
assert_eq "status: the last snapshot's path" "$SNAP" "$(status cache_snapshot)"
assert_match "status: the last snapshot's time" "^20[0-9-]+T[0-9:]+Z$" "$(status cache_snapshot_last)"
assert_eq "status: its size" "$(wc -c < "$IT_TMP/peer.snap")" "$(status cache_snapshot_bytes)"
assert_contains "cache flush" "entries flushed" "$(pdctl cache flush)"
out=$(pdctl cache load "$IT_TMP/peer.snap")
assert_match "cache load puts the entries back" "^[0-9]+ entries loaded from $IT_TMP/peer.snap" "$out"
U1=$(upstream)
assert_eq "after cache load, nanjing's node from the cache" "203.0.113.1" "$(dig_a 127.0.1.10 video.cdn.test)"
assert_eq "... with no upstream query" "$U1" "$(upstream)"
out=$("$PARTDNSCTL_BIN" -c "$PD_CONF" cache load "$IT_TMP/nothing.snap" 2>&1)
assert_contains "cache load of a missing file says so" "No such file" "$out"

# ---- --takeover: the running daemon writes its cache for the new one
"$PARTDNS_BIN" -c "$PD_CONF" --takeover >> "$IT_TMP/partdns2.log" 2>&1 &
PD2=$!
it_poll 20 yes sh -c "grep -q 'ready:' '$IT_TMP/partdns2.log' && echo yes" || fail "the --takeover daemon did not start" "$(tail -n 20 "$IT_TMP/partdns2.log")"
assert_contains "--takeover: the running daemon wrote its cache" "--takeover: the running daemon wrote its cache" \
  "$(cat "$IT_TMP/partdns2.log")"
assert_match "--takeover: and the new daemon loaded it" "cache snapshot \(takeover\): [0-9]+ entries loaded" \
  "$(cat "$IT_TMP/partdns2.log")"
partdns_stop 20
U2=$(upstream)
PD_PID=$PD2
assert_eq "the new daemon answers suzhou from the handed-over cache" "203.0.113.2" "$(dig_a 127.0.2.10 video.cdn.test)"
assert_eq "... with no upstream query" "$U2" "$(upstream)"

# ---- a plan change between: wuxi's mapped address moved, its answers go; the others stay
partdns_stop 20
sed -i 's/mapped: 198.51.100.3,/mapped: 198.51.100.33,/' "$PD_CONF"
U3=$(upstream)
partdns_start "$PD_CONF"
assert_match "the start says which city's entries were dropped and why" \
  "cache snapshot \(start\): [0-9]+ entries loaded .*not loaded: [0-9]+ entries of 1 partition\(s\) whose city changed since .*wuxi" \
  "$(grep 'cache snapshot (start)' "$IT_TMP/partdns.log" | tail -n 1)"
assert_eq "nanjing still answered from the snapshot" "203.0.113.1" "$(dig_a 127.0.1.10 video.cdn.test)"
assert_eq "... with no upstream query" "$U3" "$(upstream)"
assert_eq "wuxi's old node is not served: the GSLB's answer for its new address (its default)" "203.0.113.100" \
  "$(dig_a 127.0.3.10 video.cdn.test)"
read -r g3 _ <<<"$U3"
read -r g4 _ <<<"$(upstream)"
assert_lt "wuxi's name went to the GSLB again" "$g4" "$g3"

# ---- damaged files: one clear line, a cold start, and the daemon answers
partdns_stop 20
cp "$SNAP" "$IT_TMP/good.snap"
# start_with DESC EXPECTED-LOG: start on the damaged $SNAP, then stop without writing over it
start_with() {
  local desc=$1 want=$2
  : > "$IT_TMP/partdns.log"
  partdns_start "$PD_CONF"
  assert_match "$desc: one line says why, starting cold" "cache snapshot \(start\) $SNAP refused, starting cold: $want" \
    "$(grep 'cache snapshot' "$IT_TMP/partdns.log")"
  assert_eq "$desc: one line only" "1" "$(grep -c 'cache snapshot' "$IT_TMP/partdns.log")"
  assert_eq "$desc: stats count the file refused" "1" "$(stat cache.snapshot_files_refused)"
  assert_eq "$desc: nothing loaded" "0" "$(stat cache.snapshot_loaded)"
  assert_eq "$desc: the daemon answers" "203.0.113.10" "$(dig_a 127.0.0.1 www.customer.example)"
  # stopped without writing over the damaged file (snapshot off for the stop)
  sed -i "s|^  snapshot: .*|  snapshot: \"\"|" "$PD_CONF"
  pdctl reload >/dev/null
  partdns_stop 20
  sed -i "s|^  snapshot: .*|  snapshot: $SNAP|" "$PD_CONF"
}
size=$(wc -c < "$IT_TMP/good.snap")
head -c $((size / 2)) "$IT_TMP/good.snap" > "$SNAP"
start_with "truncated" "truncated \(no trailer at byte [0-9]+\)"
cp "$IT_TMP/good.snap" "$SNAP"
printf '\xff' | dd of="$SNAP" bs=1 seek=$((size / 2)) conv=notrunc status=none
start_with "corrupt" "corrupt \(checksum mismatch over [0-9]+ bytes\)"
cp "$IT_TMP/good.snap" "$SNAP"
printf 'X' | dd of="$SNAP" bs=1 seek=42 conv=notrunc status=none
start_with "another version" "written by partdns X"
cp "$IT_TMP/good.snap" "$SNAP"
head -c $((1100 * 1024)) /dev/zero >> "$SNAP"
sed -i 's/^  snapshot_interval: 0$/  snapshot_interval: 0\n  max_bytes: 1M/' "$PD_CONF"
start_with "larger than cache.max_bytes" "[0-9]+ bytes, larger than cache.max_bytes \(1048576\)"
printf 'not a snapshot at all\n' > "$SNAP"
start_with "not a snapshot" "not a partdns cache snapshot"
it_done
