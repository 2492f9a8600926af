#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# store.etcd with etcd's authentication on: partdnsctl and a node that name
# the user and its password file work; a wrong password or none is refused
# with a message that says so, and writes nothing; a password file that
# cannot be read is named.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
harness_init fleet_auth
command -v etcd >/dev/null 2>&1 || skip "etcd not installed (tools/deps.sh installs etcd-server)"
command -v etcdctl >/dev/null 2>&1 || skip "etcdctl not installed (tools/deps.sh installs etcd-client)"
harness_start_all
pd_require_bins
etcd_cluster_start 1

# root (etcd's auth needs it) and a partdns user allowed under the prefix only
etcdctl_it user add root:rootpw >/dev/null || die "etcdctl user add root failed"
etcdctl_it user add partdns:s3cret >/dev/null || die "etcdctl user add partdns failed"
etcdctl_it role add partdns >/dev/null
etcdctl_it role grant-permission partdns --prefix=true readwrite /fleet/ >/dev/null
etcdctl_it user grant-role partdns partdns >/dev/null
etcdctl_it auth enable >/dev/null || die "etcdctl auth enable failed"

printf 's3cret\n' > "$IT_TMP/pw"
printf 'wrong\n' > "$IT_TMP/bad"
chmod 600 "$IT_TMP/pw" "$IT_TMP/bad"

# conf FILE [USER PWFILE]
conf() {
  local f=$1
  shift
  etcd_node_conf "$f" "$(etcd_yaml_endpoints)" /fleet/ authnode ${1:+"username: $1" "password_file: $2"}
}
conf "$IT_TMP/good.yaml" partdns "$IT_TMP/pw"
conf "$IT_TMP/wrong.yaml" partdns "$IT_TMP/bad"
conf "$IT_TMP/none.yaml"
conf "$IT_TMP/nofile.yaml" partdns "$IT_TMP/missing"


out=$(ctl_as good domain add video.customer.example)
assert_contains "with the user's password: written" "added video.customer.example." "$out"
out=$(ctl_as wrong domain add wrong.example); st=$?
assert_eq "a wrong password fails" 1 "$st"
assert_contains "... saying it is authentication" "authentication" "$out"
out=$(ctl_as none domain add none.example); st=$?
assert_eq "no credentials fail" 1 "$st"
assert_contains "... saying why" "shared store" "$out"
out=$(ctl_as nofile domain list); st=$?
assert_eq "an unreadable password file fails" 1 "$st"
assert_contains "... naming it" "$IT_TMP/missing" "$out"
assert_eq "only the authenticated write is there" "/fleet/domains/video.customer.example." \
  "$(etcdctl_it --user root:rootpw get --prefix /fleet/domains/ --keys-only | grep .)"

# a node with the credentials mirrors the shared store and registers
partdns_start "$IT_TMP/good.yaml"
if it_poll 20 1 sh -c "'$PARTDNSCTL_BIN' -c '$IT_TMP/good.yaml' status | awk '\$1 == \"edns_domains\" {print \$2}'"; then
  ok "the node mirrors the shared store as partdns"
else
  fail "the node mirrors the shared store" "$(ctl_as good status)"
fi
assert_eq "and steers with it" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
if it_poll 20 0 sh -c "'$PARTDNSCTL_BIN' -c '$IT_TMP/good.yaml' fleet status >/dev/null 2>&1; echo \$?"; then
  ok "its registration is readable: fleet status ok"
else
  fail "fleet status with authentication" "$(ctl_as good fleet status)"
fi

it_done
