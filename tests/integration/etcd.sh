# SPDX-License-Identifier: BSD-3-Clause
# An etcd cluster for the fleet tests, on loopback addresses of the harness's
# NET (members at $NET.71.., client port 2379, peer port 2380). Sourced after
# lib.sh and harness_init; the members are in IT_PIDS, so the harness's
# clean-up stops them. Timers are relaxed for a shared 2-core machine: a
# heartbeat every 250 ms and elections after 2.5 s, so a busy CPU does not
# look like a dead leader.

ETCD_N=0
ETCD_TOKEN=partdns-it-$$

# etcd_addr I: member I's address.
etcd_addr() { echo "$NET.$((70 + $1))"; }

# etcd_endpoints: "A:2379,B:2379,..." for etcdctl.
etcd_endpoints() {
  local i out=""
  for ((i = 1; i <= ETCD_N; i++)); do out+="${out:+,}$(etcd_addr "$i"):2379"; done
  echo "$out"
}

# etcd_yaml_endpoints: the same as a YAML flow list of ADDR@PORT for store.etcd.endpoints.
etcd_yaml_endpoints() {
  local i out=""
  for ((i = 1; i <= ETCD_N; i++)); do out+="${out:+, }\"$(etcd_addr "$i")@2379\""; done
  echo "[ $out ]"
}

# etcd_member_start I: start member I (a new one, or again on its data).
etcd_member_start() {
  local i=$1 a cluster="" k
  a=$(etcd_addr "$i")
  for ((k = 1; k <= ETCD_N; k++)); do cluster+="${cluster:+,}e$k=http://$(etcd_addr "$k"):2380"; done
  etcd --name "e$i" --data-dir "$IT_TMP/etcd$i" \
    --listen-client-urls "http://$a:2379" --advertise-client-urls "http://$a:2379" \
    --listen-peer-urls "http://$a:2380" --initial-advertise-peer-urls "http://$a:2380" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "$ETCD_TOKEN" \
    --heartbeat-interval 250 --election-timeout 2500 --log-level warn \
    >> "$IT_TMP/etcd$i.log" 2>&1 &
  IT_PIDS[etcd$i]=$!
}

# etcd_member_stop I [KILL]: SIGTERM (or SIGKILL with a second argument) and reap.
etcd_member_stop() {
  local pid=${IT_PIDS[etcd$1]}
  [ -n "$pid" ] || return 0
  if [ -n "${2:-}" ]; then kill -KILL "$pid" 2>/dev/null; fi
  it_stop_pid "$pid" 10
  unset "IT_PIDS[etcd$1]"
}

# etcdctl_it ARGS...: etcdctl (API v3) against the cluster.
etcdctl_it() { ETCDCTL_API=3 etcdctl --endpoints "$(etcd_endpoints)" --dial-timeout 2s --command-timeout 5s "$@"; }

# etcd_wait_healthy SECONDS: until the cluster takes a write.
etcd_wait_healthy() {
  local i
  for ((i = 0; i < $1 * 4; i++)); do
    etcdctl_it put /partdns-it-health ok >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  return 1
}

# etcd_cluster_start N: N members, waited for (<= 60 s).
etcd_cluster_start() {
  ETCD_N=$1
  local i
  for ((i = 1; i <= ETCD_N; i++)); do etcd_member_start "$i"; done
  etcd_wait_healthy 60 || die "the etcd cluster did not come up" "$(tail -n 20 "$IT_TMP/etcd1.log")"
}

# etcd_node_conf FILE ENDPOINTS PREFIX NAME [KEY: VALUE...]: a partdns config
# (pd_write_conf, no ::1 listener: it is one address for every node) with
# store.etcd at ENDPOINTS (a YAML flow list), PREFIX and NAME, and each further
# argument as one more line of store.etcd.
etcd_node_conf() {
  local f=$1 endpoints=$2 prefix=$3 name=$4 saved=$IT_HAVE_IPV6 line
  shift 4
  IT_HAVE_IPV6=0
  pd_write_conf "$f"
  IT_HAVE_IPV6=$saved
  {
    printf 'store:\n  etcd:\n    endpoints: %s\n    prefix: %s\n    name: %s\n' "$endpoints" "$prefix" "$name"
    for line in "$@"; do printf '    %s\n' "$line"; done
  } >> "$f"
}

# ctl_as NAME ARGS...: partdnsctl with $IT_TMP/NAME.yaml (output and status as it gives them).
ctl_as() { local f=$1; shift; "$PARTDNSCTL_BIN" -c "$IT_TMP/$f.yaml" "$@" 2>&1; }
