#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install the Debian packages partdns needs.
# Usage: tools/deps.sh [--build]
#   --build  only what building and running the daemon need (tools/run.sh);
#   default  that and the test and benchmark set (tools/test.sh): the DNS
#            servers the integration tests start, etcd, fuzzing, dnsperf...
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake pkg-config                 # toolchain
  libunbound-dev libevent-dev libldns-dev liblmdb-dev libyaml-dev   # libraries (libunbound.pc requires libevent)
  libmicrohttpd-dev                                 # server.metrics: the Prometheus endpoint's HTTP
  libsystemd-dev                                    # sd_notify for the Type=notify unit
  libfstrm-dev libprotobuf-c-dev protobuf-c-compiler  # server.dnstap: fstrm writer, protobuf-c, protoc-c
  libcurl4-openssl-dev libjson-c-dev                # store.etcd: the client's HTTP and JSON
  libssl-dev                                        # DNS over TLS: the server side (libssl)
  libnghttp2-dev                                    # DNS over HTTPS: the HTTP/2 session (nghttp2)
  lowdown                                           # the man pages (-DMANPAGES=ON, the package)
  bind9-dnsutils                                    # dig, to ask the running daemon
)
TEST_PACKAGES=(
  libcmocka-dev                                     # unit tests
  clang libclang-rt-14-dev                          # libFuzzer targets
  knot knot-module-geoip knot-module-dnstap knot-dnsutils  # authoritative hierarchy + GSLB (query log) for tests
  unbound                                           # reference ECS recursor
  pdns-recursor dnsdist gnuplot-nox python3         # bench/province.sh: the other ECS set-ups, its chart (SVG), its data work
  ldnsutils                                         # ldns-signzone: pre-signed (broken) zones for DNSSEC tests
  dnsperf iproute2 lmdb-utils procps                # benchmarks, ss, pgrep
  fstrm-bin                                         # fstrm_capture in tests
  prometheus curl                                   # promtool check metrics and scrapes in test_metrics.sh
  socat util-linux                                  # a syslog socket for tests, unshare
  etcd-server etcd-client openssl                   # a test cluster, etcdctl, test certificates
  haproxy                                           # test_proxy.sh: a TCP balancer sending PROXY v2 before DoT
  chromium chromium-driver python3-selenium         # test_console.sh: the server.metrics console in a headless browser
)

PACKAGES=("${BUILD_PACKAGES[@]}")
case "${1:-}" in
  --build) ;;
  "") PACKAGES+=("${TEST_PACKAGES[@]}") ;;
  *) echo "usage: tools/deps.sh [--build]" >&2; exit 2 ;;
esac

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
