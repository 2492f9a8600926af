#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Newcomer's run command: install dependencies, build, and run partdns in the
# foreground on the shipped default config (127.0.0.1@5353). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target partdns partdnsctl partdns-gen   # every binary the README uses
CONF=${1:-conf/partdns.yaml}
build/resolver/partdns -t -c "$CONF"
mkdir -p /var/lib/partdns /run/partdns
echo "partdns: serving on the addresses in $CONF; try: dig @127.0.0.1 -p 5353 example.com"
exec build/resolver/partdns -c "$CONF"
