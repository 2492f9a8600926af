#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# store.etcd over TLS with client certificates (etcd --client-cert-auth):
# partdnsctl and a node with store.etcd.ca, cert and key work; without a
# client certificate, or trusting another CA, they are refused, saying so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
harness_init fleet_tls
command -v etcd >/dev/null 2>&1 || skip "etcd not installed (tools/deps.sh installs etcd-server)"
command -v openssl >/dev/null 2>&1 || skip "openssl not installed (tools/deps.sh installs it)"
harness_start_all
pd_require_bins

A=$(etcd_addr 1)
P=$IT_TMP/pki
mkdir -p "$P"
# ca CN: a self-signed CA in $P/CN.{crt,key}
ca() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" -keyout "$P/$1.key" -out "$P/$1.crt" \
    >/dev/null 2>&1 || die "openssl: CA $1"
}
# leaf NAME CA [SAN]: a certificate for NAME signed by CA
leaf() {
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$P/$1.key" -out "$P/$1.csr" >/dev/null 2>&1 ||
    die "openssl: request $1"
  local ext="$P/$1.ext"
  echo "extendedKeyUsage = serverAuth, clientAuth" > "$ext"
  [ -z "${3:-}" ] || echo "subjectAltName = $3" >> "$ext"
  openssl x509 -req -in "$P/$1.csr" -CA "$P/$2.crt" -CAkey "$P/$2.key" -CAcreateserial -days 2 \
    -extfile "$ext" -out "$P/$1.crt" >/dev/null 2>&1 || die "openssl: sign $1"
}
ca ca
ca otherca
leaf server ca "IP:$A"
leaf partdns ca
chmod 600 "$P"/*.key

etcd --name e1 --data-dir "$IT_TMP/etcd1" \
  --listen-client-urls "https://$A:2379" --advertise-client-urls "https://$A:2379" \
  --listen-peer-urls "http://$A:2380" --initial-advertise-peer-urls "http://$A:2380" \
  --initial-cluster "e1=http://$A:2380" --initial-cluster-state new \
  --cert-file "$P/server.crt" --key-file "$P/server.key" --trusted-ca-file "$P/ca.crt" --client-cert-auth \
  --log-level warn >> "$IT_TMP/etcd1.log" 2>&1 &
IT_PIDS[etcd1]=$!
tls_etcdctl() {
  ETCDCTL_API=3 etcdctl --endpoints "https://$A:2379" --cacert "$P/ca.crt" --cert "$P/partdns.crt" \
    --key "$P/partdns.key" --dial-timeout 2s "$@"
}
for ((i = 0; i < 240; i++)); do tls_etcdctl put /tls-health ok >/dev/null 2>&1 && break; sleep 0.25; done
[ "$i" -lt 240 ] || die "etcd with TLS did not come up" "$(tail -n 20 "$IT_TMP/etcd1.log")"

# conf FILE CA [CERT KEY]
conf() {
  local f=$1 ca=$2
  shift 2
  etcd_node_conf "$f" "[ \"$A@2379\" ]" /tls/ tlsnode "ca: $ca" ${1:+"cert: $1" "key: $2"}
}
conf "$IT_TMP/good.yaml" "$P/ca.crt" "$P/partdns.crt" "$P/partdns.key"
conf "$IT_TMP/nocert.yaml" "$P/ca.crt"
conf "$IT_TMP/otherca.yaml" "$P/otherca.crt" "$P/partdns.crt" "$P/partdns.key"

out=$(ctl_as good domain add video.customer.example)
assert_contains "with a client certificate: written over TLS" "added video.customer.example." "$out"
out=$(ctl_as nocert domain add nocert.example); st=$?
assert_eq "without a client certificate: refused" 1 "$st"
assert_contains "... saying the shared store failed" "shared store" "$out"
out=$(ctl_as otherca domain add otherca.example); st=$?
assert_eq "trusting another CA: refused (the server is not believed)" 1 "$st"
assert_contains "... saying why" "certificate" "$out"
assert_eq "only the authenticated write is there" "/tls/domains/video.customer.example." \
  "$(tls_etcdctl get --prefix /tls/domains/ --keys-only | grep .)"

partdns_start "$IT_TMP/good.yaml"
if it_poll 20 1 sh -c "'$PARTDNSCTL_BIN' -c '$IT_TMP/good.yaml' status | awk '\$1 == \"edns_domains\" {print \$2}'"; then
  ok "a node mirrors the shared store over TLS"
else
  fail "a node mirrors the shared store over TLS" "$(ctl_as good status)"
fi
assert_eq "and steers with it" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"

it_done
