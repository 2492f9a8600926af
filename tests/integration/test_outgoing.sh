#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resolver.outgoing and edns.outgoing: each pool sends from its own source
# addresses, as the authorities see them; a source not on the machine stops
# the start, a multicast one is refused with file:line:column.
. "$(dirname "$0")/lib.sh"
harness_init outgoing
[ "$IT_HAVE_DNSTAP" = 1 ] ||
  skip "knot-module-dnstap not installed: the source of each query is read from knotd's dnstap log"
harness_start_all
pd_require_bins

# 127.0.0.0/8 is all on lo: two addresses no other daemon of the harness
# sends from (the kernel's choice towards 127.10.N.x is 127.0.0.1)
SRC_NORMAL=127.0.0.77
SRC_EDNS=127.0.0.78

# pd_conf_outgoing FILE NORMAL-LIST EDNS-LIST: the harness config with
# resolver.outgoing and edns.outgoing set (YAML flow lists).
pd_conf_outgoing() {
  pd_write_conf "$1"
  sed -i -e "/^  root_hints: /a\\  outgoing: $2" -e "/^  policy: /a\\  outgoing: $3" "$1"
}

# knot_sources NAME...: stop the servers and print what each answered, one
# line per query: SERVER QNAME QTYPE ECS SOURCE PROTO.  knotd has no query log of
# its own; its dnstap log (lib.sh loads mod-dnstap, responses only) holds
# each response's destination, which is the query's source address, and
# `kdig -G` prints it as ";; To ADDR@PORT(PROTO)".  libfstrm writes the file
# out when knotd exits, hence the stop (the servers are not needed after).
knot_sources() {
  local n
  for n in "$@"; do kill -TERM "${IT_PIDS[$n]}" 2>/dev/null; done
  for n in "$@"; do
    it_wait_exit "${IT_PIDS[$n]}" 3
    unset "IT_PIDS[$n]"
    [ -s "$IT_TMP/knot-$n/queries.tap" ] || continue
    kdig -G "$IT_TMP/knot-$n/queries.tap" 2>/dev/null | awk -v server="$n" '
      function emit() { if (q != "" && q !~ /^harness-probe\./) print server, q, t, e, s, pr; q = ""; t = ""; e = "-"; s = "?"; pr = "?" }
      /^;; ->>HEADER<<-/      { emit(); inq = 0 }
      /^;; CLIENT-SUBNET:/    { split($3, p, "/"); e = p[1] "/" p[2] }
      /^;; QUESTION SECTION:/ { inq = 1; next }
      inq && /^;; [^ ]/       { q = $2; t = $4; inq = 0 }
      /^;; To /               { split($3, a, "[@()]"); s = a[1]; pr = a[3] }
      END { emit() }'
  done
}

pd_conf_outgoing "$IT_TMP/partdns.yaml" "[ $SRC_NORMAL ]" "[ $SRC_EDNS ]"
pdctl domain add video.customer.example
pdctl domain add big.customer.example
partdns_start "$PD_CONF"

# a normal name (its chain ends in cdn.test, not flagged) and a flagged one,
# both asked by a client of nanjing
assert_eq "static.customer.example (normal pool) resolves" "203.0.113.100" \
  "$(dig_a 127.0.1.10 static.customer.example)"
assert_eq "video.customer.example (flagged, EDNS pool) gets nanjing's node" "203.0.113.1" \
  "$(dig_a 127.0.1.10 video.customer.example)"
# too big for UDP: the EDNS pool asks again over TCP, from the same list
assert_eq "big.customer.example TXT (flagged, over TCP upstream) has its 12 records" "12" \
  "$(pd_dig 127.0.1.10 big.customer.example TXT +tcp +noall +answer | grep -c TXT)"

# a reload cannot move the sources of running pools: it says so
cp "$PD_CONF" "$IT_TMP/partdns.yaml.orig"
sed -i "s/^  outgoing: \[ $SRC_EDNS \]/  outgoing: [ $SRC_EDNS, 127.0.0.79 ]/" "$PD_CONF"
assert_contains "reload names edns.outgoing as a restart key" \
  "note: edns.outgoing changed; it takes effect at the next restart" "$(pdctl reload 2>&1)"
assert_contains "reloading it again still notes it (compared with the running value, not the last file)" \
  "note: edns.outgoing changed" "$(pdctl reload 2>&1)"
cp "$IT_TMP/partdns.yaml.orig" "$PD_CONF"
out=$(pdctl reload 2>&1)
assert_eq "changed back to the running value: reload notes nothing" "" "$(printf '%s\n' "$out" | grep 'next restart')"
# keys compared by content, not by count
sed -i 's/"do-ip6": "no"/"do-ip6": "yes"/' "$PD_CONF"
assert_contains "a libunbound option's value changed in place is noted" \
  "note: resolver.* (libunbound) changed" "$(pdctl reload 2>&1)"
cp "$IT_TMP/partdns.yaml.orig" "$PD_CONF"
sed -i 's/^  timeout_ms: 1500$/  timeout_ms: 1500\n  max_inflight: 77/' "$PD_CONF"
assert_contains "edns.max_inflight is noted as restart-only" "note: edns.max_inflight/zone_qps changed" \
  "$(pdctl reload 2>&1)"
cp "$IT_TMP/partdns.yaml.orig" "$PD_CONF"

partdns_stop
assert_eq "partdns exits 0 on SIGTERM" "0" "$PD_EXIT_STATUS"

# the family rule: with only an IPv6 source the EDNS pool sends nothing over
# IPv4, not even to a forward target (our hierarchy is IPv4 only), and says
# why; the normal pool is not affected
if [ "$IT_HAVE_IPV6" = 1 ]; then
  pdctl domain add plain.customer.example --policy forward --forward "$NET.3@53"
  pd_conf_outgoing "$IT_TMP/v6.yaml" "[ $SRC_NORMAL ]" '[ "::1" ]'
  partdns_start "$IT_TMP/v6.yaml"
  c0=$(knot_query_count customer)
  out=$(pd_dig 127.0.1.10 plain.customer.example A)
  assert_contains "edns.outgoing IPv6 only, IPv4 forward target: SERVFAIL" "status: SERVFAIL" "$out"
  assert_contains "... with an EDE that says why" "no server of a family edns.outgoing has" "$out"
  assert_eq "... and the target was never asked (query count)" "$c0" "$(knot_query_count customer)"
  assert_eq "the normal pool still resolves (www.customer.example)" "203.0.113.10" \
    "$(dig_a 127.0.1.10 www.customer.example)"
  partdns_stop
  assert_eq "partdns exits 0 on SIGTERM (IPv6-only EDNS pool)" "0" "$PD_EXIT_STATUS"
  assert_eq "no sanitizer report in the IPv6-only run" "" \
    "$(grep -E '(Address|Leak|UndefinedBehavior|Thread)Sanitizer|runtime error:' "$IT_TMP/partdns.log" | head -n 3)"
else
  log "no ::1 on lo: the IPv6-only edns.outgoing check is not made"
fi

log=$(knot_sources root tld customer gslb)
printf '%s\n' "$log" | sed 's/^/# seen: /' >&2
assert_ne "the authorities logged queries" "" "$log"
# the normal pool (libunbound): every query of the normal name's walk
assert_eq "customer server: static.customer.example came from $SRC_NORMAL only" "$SRC_NORMAL" \
  "$(printf '%s\n' "$log" | awk '$1 == "customer" && $2 == "static.customer.example." {print $5}' | sort -u)"
assert_eq "GSLB: static.cdn.test came from $SRC_NORMAL only, without ECS" "$SRC_NORMAL -" \
  "$(printf '%s\n' "$log" | awk '$1 == "gslb" && $2 == "static.cdn.test." {print $5, $4}' | sort -u)"
# the EDNS pool: its ECS queries (its own sockets) ...
assert_eq "customer server: video.customer.example with nanjing's ECS came from $SRC_EDNS" \
  "$SRC_EDNS 198.51.100.1/32" \
  "$(printf '%s\n' "$log" | awk '$1 == "customer" && $2 == "video.customer.example." && $3 == "A" && $4 != "-" {print $5, $4}' | sort -u)"
assert_eq "GSLB: video.cdn.test with nanjing's ECS came from $SRC_EDNS" "$SRC_EDNS 198.51.100.1/32" \
  "$(printf '%s\n' "$log" | awk '$1 == "gslb" && $2 == "video.cdn.test." && $4 != "-" {print $5, $4}' | sort -u)"
assert_eq "customer server: big.customer.example with ECS over TCP came from $SRC_EDNS" "$SRC_EDNS TCP" \
  "$(printf '%s\n' "$log" | awk '$1 == "customer" && $2 == "big.customer.example." && $4 != "-" && $6 == "TCP" {print $5, $6}' | sort -u)"
assert_eq "every query carrying ECS came from $SRC_EDNS" "" \
  "$(printf '%s\n' "$log" | awk -v s="$SRC_EDNS" '$4 != "-" && $5 != s')"
# ... and its zone-cut lookups (its own libunbound context, no ECS): every
# query of the flagged chain, whatever its type
assert_eq "every query for the flagged chain (video.*, zone cuts included) came from $SRC_EDNS" "$SRC_EDNS" \
  "$(printf '%s\n' "$log" | awk '$2 ~ /^video\./ {print $5}' | sort -u)"
assert_contains "the EDNS pool's zone-cut lookups without ECS were among them" "video.cdn.test. SOA - $SRC_EDNS" "$log"
assert_eq "no server saw any other source than the two pools' addresses" "" \
  "$(printf '%s\n' "$log" | awk -v a="$SRC_NORMAL" -v b="$SRC_EDNS" '$5 != a && $5 != b')"
assert_contains "the root saw the normal pool" " $SRC_NORMAL" "$(printf '%s\n' "$log" | awk '$1 == "root"')"
assert_contains "the root saw the EDNS pool (its own zone-cut lookups)" " $SRC_EDNS" \
  "$(printf '%s\n' "$log" | awk '$1 == "root"')"

# a source address not on this machine stops the start, naming key and address
# partdns_start_fail FILE: run the daemon on FILE (10 s at most), print its status and output
partdns_start_fail() {
  local out st
  out=$(timeout 10 "$PARTDNS_BIN" -c "$1" 2>&1)
  st=$?
  printf '%s\n%s\n' "$st" "$out"
}
for key in resolver edns; do
  bad=192.0.2.1
  [ "$key" = edns ] && bad=198.51.100.77
  if ip -o addr 2>/dev/null | grep -qF " $bad/"; then
    log "$bad is on this machine: the missing-address check of $key.outgoing is not made"
    continue
  fi
  if [ "$key" = resolver ]; then
    pd_conf_outgoing "$IT_TMP/bad-$key.yaml" "[ $SRC_NORMAL, $bad ]" "[ $SRC_EDNS ]"
  else
    pd_conf_outgoing "$IT_TMP/bad-$key.yaml" "[ $SRC_NORMAL ]" "[ $SRC_EDNS, $bad ]"
  fi
  res=$(partdns_start_fail "$IT_TMP/bad-$key.yaml")
  st=$(printf '%s\n' "$res" | head -n 1)
  if [ "$st" != 0 ] && [ "$st" != 124 ]; then ok "$key.outgoing $bad: the daemon refuses to start (status $st)"; else
    fail "$key.outgoing $bad: the daemon refuses to start" "status $st (124: it ran)" "$res"; fi
  assert_contains "$key.outgoing $bad: the message names the key and the address" \
    "$key.outgoing: $bad is not an address of this machine" "$res"
done

# a multicast source is refused when the config is read, with file:line:column
pd_conf_outgoing "$IT_TMP/mcast.yaml" "[ $SRC_NORMAL ]" "[ 224.0.0.53 ]"
line=$(grep -n '^  outgoing: \[ 224\.0\.0\.53 \]' "$IT_TMP/mcast.yaml" | cut -d: -f1)
want="$IT_TMP/mcast.yaml:$line:15: error: bad source address: a multicast address cannot be a source (key 'edns.outgoing[0]', value '224.0.0.53')"
assert_contains "partdns -t: a multicast edns.outgoing is an error at file:line:column" "$want" \
  "$("$PARTDNS_BIN" -t -c "$IT_TMP/mcast.yaml" 2>&1)"
res=$(partdns_start_fail "$IT_TMP/mcast.yaml")
assert_ne "the daemon does not start with a multicast source" "0" "$(printf '%s\n' "$res" | head -n 1)"
assert_contains "the daemon says where, too" "$want" "$res"

# the likely slip: libunbound's own outgoing-interface next to resolver.outgoing
pd_conf_outgoing "$IT_TMP/raw.yaml" "[ $SRC_NORMAL ]" "[]"
sed -i 's/"do-ip6": "no",/"do-ip6": "no", "outgoing-interface": "127.0.0.79",/' "$IT_TMP/raw.yaml"
assert_match "a raw outgoing-interface in resolver.options next to resolver.outgoing is refused, with a hint" \
  "raw\.yaml:[0-9]+:[0-9]+: error: a raw outgoing-interface together with resolver\.outgoing: list every source address in resolver\.outgoing .*key 'resolver\.options\.outgoing-interface'" \
  "$("$PARTDNS_BIN" -t -c "$IT_TMP/raw.yaml" 2>&1)"

it_done
