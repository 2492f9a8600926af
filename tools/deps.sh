#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install every Debian package partdns needs to build, test and benchmark.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config                 # toolchain
  libunbound-dev libevent-dev libldns-dev liblmdb-dev libyaml-dev libcmocka-dev   # libraries (libunbound.pc requires libevent)
  libmicrohttpd-dev                                 # server.metrics: the Prometheus endpoint's HTTP
  libsystemd-dev                                    # sd_notify for the Type=notify unit
  clang libclang-rt-14-dev                          # libFuzzer targets
  knot knot-module-geoip knot-module-dnstap knot-dnsutils  # authoritative hierarchy + GSLB (query log) for tests
  unbound                                           # reference ECS recursor
  pdns-recursor dnsdist gnuplot-nox python3         # bench/province.sh: the other ECS set-ups, its chart (SVG), its data work
  ldnsutils                                         # ldns-signzone: pre-signed (broken) zones for DNSSEC tests
  bind9-dnsutils dnsperf iproute2 lmdb-utils procps # dig, benchmarks, ss, pgrep
  libfstrm-dev libprotobuf-c-dev protobuf-c-compiler fstrm-bin  # server.dnstap: fstrm writer, protobuf-c, protoc-c; fstrm_capture in tests
  prometheus curl                                   # promtool check metrics and scrapes in test_metrics.sh
  socat util-linux                                  # a syslog socket for tests, unshare
  libcurl4-openssl-dev libjson-c-dev etcd-server etcd-client openssl  # store.etcd: the client's HTTP and JSON; a test cluster, etcdctl, test certificates
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# Installing knot/unbound/pdns-recursor/dnsdist must not start system daemons on port 53: the tests
# start their own. policy-rc.d 101 = "action forbidden" for invoke-rc.d.
added_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  added_policy=1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
if [ $added_policy -eq 1 ]; then
  $SUDO rm -f /usr/sbin/policy-rc.d
fi
