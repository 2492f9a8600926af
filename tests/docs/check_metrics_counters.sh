#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every counter `partdnsctl stats` shows (resolver/base/counters.h) is also in
# /metrics (resolver/ops/metrics.c), as the operations guide promises: a counter
# added to one and not the other fails here.
# Usage: check_metrics_counters.sh SOURCE_DIR
set -euo pipefail
SRC=${1:?usage: check_metrics_counters.sh SOURCE_DIR}
# Counters /metrics shows in another form, each with where:
#   queries: partdns_queries_total{transport=...} is udp + tcp + dot + doh
EXEMPT=" queries "
counters=$(sed -n '/^#define COUNTER_LIST(X)/,/^$/p' "$SRC/resolver/base/counters.h" | grep -o 'X([a-z0-9_]*)' | sed 's/X(\(.*\))/\1/')
[ -n "$counters" ] || { echo "check_metrics_counters: no COUNTER_LIST(X) list in resolver/base/counters.h" >&2; exit 2; }
missing=0
n=0
for c in $counters; do
  n=$((n + 1))
  [[ "$EXEMPT" == *" $c "* ]] && continue
  if ! grep -q "C_$c\b" "$SRC/resolver/ops/metrics.c"; then
    echo "check_metrics_counters: counter '$c' (partdnsctl stats) is not in /metrics (resolver/ops/metrics.c)" >&2
    missing=$((missing + 1))
  fi
done
[ "$n" -gt 20 ] || { echo "check_metrics_counters: only $n counters read from counters.h" >&2; exit 2; }
echo "check_metrics_counters: $n counters, $missing missing from /metrics"
[ "$missing" -eq 0 ]
