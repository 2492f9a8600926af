#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A fleet with one plan (store.etcd): a 3-member etcd cluster and three
# partdns nodes on loopback. A domain flagged through one node is live on
# all three; with one etcd member killed, writes and reads go on; with etcd
# stopped entirely the nodes keep serving (a node restarted meanwhile serves
# from its local copy) and catch up when it returns; two partdnsctl writing
# at once lose nothing; a node whose revision was compacted away copies the
# store again; fleet status lists the nodes, flags drift, and a node killed
# -9 leaves the list when its lease runs out. Generous time bounds: the
# benchmark (bench/fleet.sh) records the real propagation figures.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
harness_init fleet
command -v etcd >/dev/null 2>&1 || skip "etcd not installed (tools/deps.sh installs etcd-server)"
command -v etcdctl >/dev/null 2>&1 || skip "etcdctl not installed (tools/deps.sh installs etcd-client)"
harness_start_all
pd_require_bins
etcd_cluster_start 3

# node_conf I [SERIAL]: node I's config: its own address, store, control socket; the shared store.
node_conf() {
  local i=$1 saved=$PD_ADDR v6=$IT_HAVE_IPV6
  # each node on its own address; ::1 is one address for all: none listens there
  PD_ADDR=$NET.6$i IT_HAVE_IPV6=0
  pd_write_conf "$IT_TMP/n$i.yaml"
  PD_ADDR=$saved IT_HAVE_IPV6=$v6
  mkdir -p "$IT_TMP/store$i"
  sed -i -e "s|store: $IT_TMP/store\$|store: $IT_TMP/store$i|" \
         -e "s|control: $IT_TMP/control.sock|control: $IT_TMP/control$i.sock|" "$IT_TMP/n$i.yaml"
  # the plan in its own file, as a staged plan replaces it
  { echo "serial: ${2:-1}"; sed -n '/^partitions:/,$p' "$IT_TMP/n$i.yaml" | tail -n +2 | sed 's/^  //'; } > "$IT_TMP/plan-n$i.yaml"
  sed -i '/^partitions:/,$d' "$IT_TMP/n$i.yaml"
  cat >> "$IT_TMP/n$i.yaml" <<EOF
partitions:
  include: plan-n$i.yaml
store:
  etcd: { endpoints: $(etcd_yaml_endpoints), prefix: /partdns-it/, name: node$i, lease_ttl: 3, timeout_ms: 1000 }
EOF
}

# node_start I: start node I, wait until it answers (<= 20 s).
node_start() {
  local i=$1 k
  "$PARTDNS_BIN" -c "$IT_TMP/n$i.yaml" >> "$IT_TMP/node$i.log" 2>&1 &
  IT_PIDS[node$i]=$!
  for ((k = 0; k < 400; k++)); do
    dig +time=1 +tries=1 -b 127.0.0.1 @"$NET.6$i" -p "$PD_PORT" localhost. A >/dev/null 2>&1 && return 0
    kill -0 "${IT_PIDS[node$i]}" 2>/dev/null || die "node $i exited during start-up" "$(tail -n 20 "$IT_TMP/node$i.log")"
    sleep 0.05
  done
  die "node $i did not answer within 20 s" "$(tail -n 20 "$IT_TMP/node$i.log")"
}

node_stop() { it_stop_pid "${IT_PIDS[node$1]}" 10; unset "IT_PIDS[node$1]"; }

# ctl I ARGS...: partdnsctl with node I's config (output and status as it gives them).
ctl() { local i=$1; shift; "$PARTDNSCTL_BIN" -c "$IT_TMP/n$i.yaml" "$@" 2>&1; }

# ctl_retry I ARGS...: as ctl, again for up to 15 s while etcd has no leader
# (killing or stopping a member may start an election: seconds with these timers)
ctl_retry() {
  local k out
  for ((k = 0; k < 30; k++)); do
    out=$(ctl "$@") && break
    sleep 0.5
  done
  printf '%s\n' "$out"
}

# domains I: how many EDNS domains node I runs with.
domains() { ctl "$1" status | awk '$1 == "edns_domains" {print $2}'; }

# every_node_runs SECONDS N WHAT: each node runs N EDNS domains within SECONDS ("node I WHAT").
every_node_runs() {
  local i
  for i in 1 2 3; do
    if it_poll "$1" "$2" domains "$i"; then ok "node $i $3"; else fail "node $i $3" "edns_domains $(domains "$i")"; fi
  done
}

# steered I CLIENT: the A of video.customer.example that node I gives CLIENT.
steered() {
  dig +time=2 +tries=1 -b "$2" @"$NET.6$1" -p "$PD_PORT" video.customer.example A +short 2>/dev/null | sort | head -n 1
}

for i in 1 2 3; do node_conf "$i"; node_start "$i"; done
assert_eq "every thread of a node (the mirror's, registration's and libcurl's too) blocks the signals the daemon waits for" \
  ok "$(pd_threads_block_signals "${IT_PIDS[node1]}")"

# ---- a domain flagged through one node is live on all three
out=$(ctl 1 domain add video.customer.example)
assert_contains "flagged through node 1" "added video.customer.example." "$out"
every_node_runs 10 1 "runs the flagged domain"
assert_eq "node 2 steers nanjing" "203.0.113.1" "$(steered 2 127.0.1.10)"
assert_eq "node 3 steers suzhou" "203.0.113.2" "$(steered 3 127.0.2.10)"
out=$(ctl 1 domain list)
assert_contains "partdnsctl lists the shared store" "video.customer.example." "$out"
out=$(ctl 2 -s "$IT_TMP/store2" domain add x.example)
assert_contains "-s is refused with store.etcd" "never on a local one" "$out"
assert_eq "nothing was written for it" "" "$(etcdctl_it get /partdns-it/domains/x.example. --print-value-only)"

# every node registered, none drifting
if it_poll 15 0 sh -c "'$PARTDNSCTL_BIN' -c '$IT_TMP/n1.yaml' fleet status >/dev/null 2>&1; echo \$?"; then
  ok "fleet status: three nodes, no drift"
else
  fail "fleet status: three nodes, no drift" "$(ctl 1 fleet status)"
fi
out=$(ctl 1 fleet status)
for i in 1 2 3; do assert_match "fleet status lists node $i" "node$i +[0-9]+ +1 .* ok" "$out"; done
assert_eq "fleet status: a node's revision is the shared data's" \
  "$(etcdctl_it get /partdns-it/changed -w json | sed -n 's/.*"mod_revision":\([0-9]*\).*/\1/p')" \
  "$(ctl 1 fleet status --json | sed -n 's/^{"revision":\([0-9]*\),.*/\1/p')"

assert_eq "status names the node and its revision" "fleet_node node2" "$(ctl 2 status | grep '^fleet_node ')"
assert_eq "status: watching" "fleet_connected yes" "$(ctl 2 status | grep '^fleet_connected ')"

# ---- a plan staged and activated through one node runs on every node
sed -e 's/^serial: 1$/serial: 2/' -e 's|prefixes: \[ 127.0.3.0/24,|prefixes: [ 127.0.3.0/24, 127.0.4.0/24,|' "$IT_TMP/plan-n1.yaml" > "$IT_TMP/plan2.yaml"
out=$(ctl 1 plan stage "$IT_TMP/plan2.yaml")
assert_contains "plan 2 staged through node 1" "staged plan 2" "$out"
ctl 1 plan activate >/dev/null
for i in 1 2 3; do
  if it_poll 20 2 sh -c "'$PARTDNSCTL_BIN' -c '$IT_TMP/n$i.yaml' status | awk '\$1 == \"plan_serial\" {print \$2}'"; then
    ok "node $i runs the activated plan 2"
  else
    fail "node $i runs the activated plan 2" "$(ctl "$i" status)"
  fi
done
assert_eq "node 3 classifies by plan 2 (127.0.4.0/24 is wuxi's)" "203.0.113.3" "$(steered 3 127.0.4.10)"
assert_eq "the shared store holds one active plan, none staged" "/partdns-it/plan/active" \
  "$(etcdctl_it get --prefix /partdns-it/plan/ --keys-only | grep .)"

# ---- a city failed over through one node is failed over on every node
out=$(ctl 2 partition failover nanjing --to suzhou)
assert_contains "failover through node 2" "nanjing" "$out"
for i in 1 3; do
  if it_poll 20 203.0.113.2 steered "$i" 127.0.1.11; then ok "node $i steers nanjing as suzhou"; else fail "node $i steers nanjing as suzhou" "$(steered "$i" 127.0.1.11)"; fi
done
ctl 3 partition failback nanjing >/dev/null
if it_poll 20 203.0.113.1 steered 1 127.0.1.12; then ok "failback through node 3 reaches node 1"; else fail "failback reaches node 1" "$(steered 1 127.0.1.12)"; fi

# ---- one etcd member killed: writes and reads go on, every node follows
etcd_member_stop 1 kill
out=$(ctl_retry 2 domain add static.customer.example)
assert_contains "a write with member 1 dead" "added static.customer.example." "$out"
every_node_runs 20 2 "follows with member 1 dead"
assert_contains "a read with member 1 dead" "static.customer.example." "$(ctl_retry 3 domain list)"

# ---- etcd stopped entirely: nodes keep serving, a restarted node serves from its copy
etcd_member_stop 2
etcd_member_stop 3
out=$(ctl 1 domain add down.example)
assert_contains "a write with etcd down fails, saying why" "shared store" "$out"
node_stop 2
node_start 2
assert_eq "node 2, restarted with etcd down, has the flagged domains" "2" "$(domains 2)"
assert_eq "and steers from them" "203.0.113.1" "$(steered 2 127.0.1.10)"
assert_eq "node 1 serves on" "203.0.113.3" "$(steered 1 127.0.3.10)"
assert_eq "node 2 still runs plan 2 from its copy" "203.0.113.3" "$(steered 2 127.0.4.10)"
assert_eq "status: not watching" "fleet_connected no" "$(ctl 1 status | grep '^fleet_connected ')"

# ---- etcd returns: every node catches up
for i in 1 2 3; do etcd_member_start "$i"; done
etcd_wait_healthy 60 || die "the etcd cluster did not come back" "$(tail -n 20 "$IT_TMP/etcd2.log")"
out=$(ctl_retry 3 domain del static.customer.example)
assert_contains "a write once etcd is back" "deleted static.customer.example." "$out"
every_node_runs 30 1 "caught up after the outage"

# ---- the member node 1 watches hangs (SIGSTOP: its connections stay open, silent):
# the node notices its watch lags the shared data and watches another member
m=$(ctl 1 status | awk '$1 == "fleet_member" {print $2}')
idx=${m#http://$NET.7}; idx=${idx%%:*}
if [ -n "${IT_PIDS[etcd$idx]:-}" ]; then
  kill -STOP "${IT_PIDS[etcd$idx]}"
  out=$(ctl_retry 2 domain add hung.example)
  assert_contains "a write with a member hung" "added hung.example." "$out"
  if it_poll 40 2 domains 1; then ok "node 1 left the hung member's watch and applied it"; else fail "node 1 left the hung member" "edns_domains $(domains 1)" "$(grep fleet "$IT_TMP/node1.log" | tail -n 5)"; fi
  assert_match "and said why" "lags the shared store" "$(cat "$IT_TMP/node1.log")"
  kill -CONT "${IT_PIDS[etcd$idx]}"
  etcd_wait_healthy 30 || die "etcd did not recover from SIGCONT"
  out=$(ctl_retry 2 domain del hung.example)
  every_node_runs 30 1 "dropped hung.example"
else
  fail "node 1 names the member it watches" "fleet_member '$m'"
fi

# ---- two writers at once lose nothing
writer() {
  local tag=$1 k
  for ((k = 0; k < 25; k++)); do
    "$PARTDNSCTL_BIN" -c "$IT_TMP/n1.yaml" domain add "$tag-$k.example" >/dev/null 2>&1 || echo "fail $tag-$k"
    # both also change the same name: the last writer wins, nothing is torn
    "$PARTDNSCTL_BIN" -c "$IT_TMP/n2.yaml" domain add shared.example $([ $((k % 2)) = 0 ] && echo --subtree) \
      >/dev/null 2>&1 || echo "fail shared $tag-$k"
  done
}
writer wa > "$IT_TMP/wa.out" &
wa=$!
writer wb > "$IT_TMP/wb.out" &
wb=$!
# a bulk import at the same time, overlapping the names the writers add
for ((k = 0; k < 300; k++)); do echo "bulk-$k.example"; done > "$IT_TMP/bulk.txt"
for ((k = 0; k < 10; k++)); do echo "wa-$k.example"; done >> "$IT_TMP/bulk.txt"
ctl 3 domain import "$IT_TMP/bulk.txt" > "$IT_TMP/import.out"
st=$?
it_wait_exit "$wa" 120
it_wait_exit "$wb" 120
assert_eq "the import succeeded beside the writers" "0" "$st"
assert_eq "every write of writer a succeeded" "" "$(cat "$IT_TMP/wa.out")"
assert_eq "every write of writer b succeeded" "" "$(cat "$IT_TMP/wb.out")"
want=$((1 + 25 + 25 + 1 + 300))
assert_eq "the shared store holds every name written" "$want" "$(etcdctl_it get --prefix /partdns-it/domains/ --keys-only | grep -c .)"
every_node_runs 30 "$want" "holds every name written"
out=$(ctl 1 domain list)
assert_match "shared.example decodes (one writer's version)" "shared.example. +(subtree|exact) +iterate" "$out"

# ---- a node whose revision was compacted away copies the store again
node_stop 3
ctl 1 domain add compacted.example >/dev/null
rev=$(etcdctl_it get /partdns-it/changed -w json | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')
etcdctl_it compact "$rev" --physical >/dev/null || die "etcdctl compact failed"
node_start 3
if it_poll 30 $((want + 1)) domains 3; then ok "node 3 copied the store after compaction"; else fail "node 3 copied the store after compaction" "edns_domains $(domains 3)"; fi
assert_match "and said why" "compacted away" "$(cat "$IT_TMP/node3.log")"

# ---- drift: a node on another plan serial; a dead node leaves the list
node_stop 3
node_conf 3 3
node_start 3
if it_poll 15 1 sh -c "'$PARTDNSCTL_BIN' -c '$IT_TMP/n1.yaml' fleet status >/dev/null 2>&1; echo \$?"; then
  ok "fleet status exits 1 on drift"
else
  fail "fleet status exits 1 on drift" "$(ctl 1 fleet status)"
fi
assert_match "it names the node and why" "node3 .*plan serial 3, the fleet's is 2" "$(ctl 1 fleet status)"
kill -KILL "${IT_PIDS[node3]}"
it_wait_exit "${IT_PIDS[node3]}" 5
unset "IT_PIDS[node3]"
if it_poll 20 0 sh -c "'$PARTDNSCTL_BIN' -c '$IT_TMP/n1.yaml' fleet status | grep -c node3"; then
  ok "a node killed -9 leaves the list when its lease runs out"
else
  fail "a node killed -9 leaves the list" "$(ctl 1 fleet status)"
fi
assert_match "the others stay" "node1 .* ok" "$(ctl 1 fleet status)"

# a clean stop (a sanitizer build reports at exit); the lease goes with it
for i in 1 2; do
  node_stop "$i"
  assert_eq "node $i exits 0 on SIGTERM" "0" "$IT_STOP_STATUS"
done
assert_eq "stopped nodes revoked their leases" "" "$(etcdctl_it get --prefix /partdns-it/nodes/ --keys-only)"

it_done
