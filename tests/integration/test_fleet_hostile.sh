#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# store.etcd when the shared store holds what partdns never writes (anyone
# with write access to etcd may put it): one etcd member, one node. Each
# record is left out and named by its key, and nothing else stops:
# - a plan/ key other than next/active (the node used to crash, and at
#   every start after);
# - a key with a NUL byte (replication used to stop for good);
# - fifty values of 1.4 MB under domains/ (a node catching up used to loop
#   on a watch message over its cap, a full copy and domain list failed);
# - an undecodable record over a good one: the node keeps the last good
#   version, after a full copy too, and domain list / export name it on
#   stderr, list the rest, and exit 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
harness_init fleet_hostile
command -v etcd >/dev/null 2>&1 || skip "etcd not installed (tools/deps.sh installs etcd-server)"
command -v etcdctl >/dev/null 2>&1 || skip "etcdctl not installed (tools/deps.sh installs etcd-client)"
command -v curl >/dev/null 2>&1 || skip "curl not installed"
harness_write_hints # no upstream is asked: the node only mirrors
pd_require_bins
etcd_cluster_start 1

P=/hostile/
etcd_node_conf "$IT_TMP/n.yaml" "$(etcd_yaml_endpoints)" "$P" node1 "lease_ttl: 3" "timeout_ms: 1000"
domains() { ctl_as n status | awk '$1 == "edns_domains" {print $2}'; }
log() { cat "$IT_TMP/partdns.log"; }
# runs N WHAT: the node runs N EDNS domains within 20 s, and is alive
runs() {
  if it_poll 20 "$1" domains && partdns_alive; then ok "$2"; else
    fail "$2" "edns_domains $(domains)" "$(grep fleet "$IT_TMP/partdns.log" | tail -n 5)"
  fi
}
# put_raw KEY VALUE: a put through etcd's gateway, KEY and VALUE as printf formats (\0 and all)
put_raw() {
  local k v
  k=$(printf "$1" | base64 -w0)
  v=$(printf "$2" | base64 -w0)
  curl -sf -X POST "http://$(etcd_addr 1):2379/v3/kv/put" -d "{\"key\":\"$k\",\"value\":\"$v\"}" >/dev/null
}

ctl_as n domain add a.example >/dev/null
partdns_start "$IT_TMP/n.yaml"
runs 1 "the node mirrors the shared store"

# ---- a plan key other than next/active
etcdctl_it put "${P}plan/foo" x >/dev/null
etcdctl_it del "${P}plan/foo" >/dev/null
ctl_as n domain add b.example >/dev/null
runs 2 "after a plan/foo key the node is alive and applies the next change"
assert_match "the plan/foo record is named in the log" "record plan/foo at revision [0-9]+ is left out" "$(log)"
etcdctl_it put "${P}plan/foo" x >/dev/null
partdns_stop
assert_eq "the node stops cleanly" 0 "$PD_EXIT_STATUS"
rm -rf "$IT_TMP/store" && mkdir -p "$IT_TMP/store"
partdns_start "$IT_TMP/n.yaml"
runs 2 "a node copying a store that holds plan/foo starts and runs"

# ---- a key with a NUL byte
put_raw "${P}domains/bad\\0key" 'x' || fail "put a key with a NUL through the gateway"
put_raw "${P}domains/bad\\0key2" 'x'
ctl_as n domain add c.example >/dev/null
runs 3 "replication goes on past a key with a NUL byte"
assert_contains "the key is named, escaped" 'domains/bad\x00key at revision' "$(log)"

# ---- an undecodable record over a good one: the last good version stays
etcdctl_it put "${P}domains/a.example." junk >/dev/null
ctl_as n domain add d.example >/dev/null
runs 4 "the node keeps a.example. when its record turns undecodable"
out=$("$PARTDNSCTL_BIN" -c "$IT_TMP/n.yaml" domain list 2>"$IT_TMP/err"); st=$?
assert_eq "domain list exits 1 when it skipped a record" 1 "$st"
assert_match "domain list lists the rest" "^d.example. +exact" "$out"
assert_contains "domain list names the undecodable record on stderr" \
  "record a.example. skipped: does not decode as a domain record" "$(cat "$IT_TMP/err")"
assert_contains "and the key with a NUL, escaped" 'record bad\x00key skipped: the key holds a NUL byte' "$(cat "$IT_TMP/err")"
out=$("$PARTDNSCTL_BIN" -c "$IT_TMP/n.yaml" domain export 2>"$IT_TMP/err"); st=$?
assert_eq "domain export exits 1 when it skipped a record" 1 "$st"
assert_eq "domain export writes every decodable domain" "b.example. c.example. d.example." \
  "$(grep -v '^#' <<<"$out" | awk '{print $1}' | tr '\n' ' ' | sed 's/ $//')"
assert_contains "domain export names the record on stderr" "record a.example. skipped" "$(cat "$IT_TMP/err")"

# ---- fifty values of 1.4 MB under domains/, put while the node is down
partdns_stop
head -c 1400000 /dev/zero | tr '\0' x > "$IT_TMP/junk"
for ((k = 0; k < 50; k++)); do
  etcdctl_it put "${P}domains/junk$k" < "$IT_TMP/junk" >/dev/null || fail "put junk$k"
done
ctl_as n domain add e.example >/dev/null
partdns_start "$IT_TMP/n.yaml"
runs 5 "a node catching up over 70 MB of junk values applies the change after them"
assert_not_contains "no watch message over the cap" "larger than" "$(log)"
assert_match "the junk is named" "record domains/junk[0-9]+ at revision [0-9]+ is left out" "$(log)"
for ((k = 0; k < 70; k++)); do echo "bulk-$k.example"; done > "$IT_TMP/bulk.txt"
out=$(ctl_as n domain import "$IT_TMP/bulk.txt"); st=$?
assert_eq "domain import reads the shared store over the junk" 0 "$st"
out=$("$PARTDNSCTL_BIN" -c "$IT_TMP/n.yaml" domain list 2>"$IT_TMP/err")
assert_eq "domain list lists every decodable domain over the junk" 74 "$(grep -c '\.example\. ' <<<"$out")"
assert_eq "and names each junk record" 50 "$(grep -c 'record junk[0-9]* skipped' "$IT_TMP/err")"
runs 75 "the node applies the import"

# ---- a full copy (the node's revision compacted away) over all of it
partdns_stop
ctl_as n domain add f.example >/dev/null
rev=$(etcdctl_it get "${P}changed" -w json | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')
etcdctl_it compact "$rev" >/dev/null || die "etcdctl compact failed"
partdns_start "$IT_TMP/n.yaml"
runs 76 "a full copy over the junk keeps a.example.'s last good version and takes f.example."
assert_contains "it was a full copy" "compacted away" "$(log)"
partdns_stop
assert_eq "the node stops cleanly" 0 "$PD_EXIT_STATUS"

it_done
