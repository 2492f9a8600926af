#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Newcomer's run command: install dependencies, build, and run partdns in the
# foreground on the shipped default config (127.0.0.1@5353), its state under
# ./run/. Ctrl-C stops it. Usage: tools/run.sh [CONFIG] (a given CONFIG is
# used as it is).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh --build   # not the test and benchmark set: tools/test.sh installs that
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build build -j "$(nproc)" --target partdns partdnsctl partdns-gen   # every binary the README uses
CONF=${1:-}
if [ -z "$CONF" ]; then
  # The shipped config with its state in the checkout (./run/), not in
  # /var/lib/partdns and /run/partdns: nothing system-wide, nothing shared
  # with an installed partdns. The store persists between runs.
  RUN=$(pwd)/run
  mkdir -p "$RUN/store"
  CONF=run/partdns.yaml
  sed -e "s|^  store: .*|  store: $RUN/store|" -e "s|^  control: .*|  control: $RUN/control.sock|" \
    -e "s|^  snapshot: .*|  snapshot: $RUN/cache.snap|" conf/partdns.yaml > "$CONF"
  echo "partdns: conf/partdns.yaml with its store, control socket and cache snapshot under $RUN (rm -rf run to start over)"
  echo "partdns: partdnsctl uses it with: export PARTDNS_CONF=$CONF"
fi
build/resolver/partdns -t -c "$CONF"
echo "partdns: serving on the addresses in $CONF; try: dig @127.0.0.1 -p 5353 example.com"
exec build/resolver/partdns -c "$CONF"
