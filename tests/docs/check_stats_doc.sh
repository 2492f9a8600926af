#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# partdnsctl(8) says what every line of `partdnsctl stats` counts: each
# counter of COUNTER_LIST (resolver/base/counters.h) under the name stats
# prints it with (resolver/ops/stats.c: its own name, or normal.NAME /
# edns.NAME for the pools' counters), and the other lines stats prints
# (uptime, cache.*, partition.NAME.*, ...), each a definition term
# "`NAME`" of docs/man/partdnsctl.8.md. A counter added to the daemon and
# not to the page fails here, naming it.
# Usage: check_stats_doc.sh SOURCE_DIR
set -euo pipefail
SRC=${1:?usage: check_stats_doc.sh SOURCE_DIR}
H=$SRC/resolver/base/counters.h
S=$SRC/resolver/ops/stats.c
DOC=$SRC/docs/man/partdnsctl.8.md
for f in "$H" "$S" "$DOC"; do
  [ -r "$f" ] || { echo "check_stats_doc: cannot read $f" >&2; exit 2; }
done

counters=$(sed -n '/^#define COUNTER_LIST(X)/,/^$/p' "$H" | grep -o 'X([a-z0-9_]*)' | sed 's/X(\(.*\))/\1/')
[ -n "$counters" ] || { echo "check_stats_doc: no COUNTER_LIST(X) list in $H" >&2; exit 2; }

# The pool items of stats.c: "POOL NAME COUNTER" for each { "NAME", C_COUNTER, ... } row.
pool_items=$(awk '
/^static const struct pool_item normal_items\[\]/ { pool = "normal"; next }
/^static const struct pool_item edns_items\[\]/ { pool = "edns"; next }
pool != "" && /^};/ { pool = ""; next }
pool != "" && /\{ "[a-z_0-9]+", C_[a-z_0-9]+/ {
	s = $0; sub(/.*\{ "/, "", s); name = s; sub(/".*/, "", name)
	c = s; sub(/.*C_/, "", c); sub(/[^a-z_0-9].*/, "", c)
	print pool, name, c
}' "$S")
[ "$(grep -c . <<<"$pool_items")" -ge 10 ] ||
  { echo "check_stats_doc: found only $(grep -c . <<<"$pool_items") pool items in $S; the parse in $0 no longer follows it" >&2; exit 2; }

documented() { grep -qxF -- "\`$1\`" "$DOC"; }

missing=0
n=0
for c in $counters; do
  n=$((n + 1))
  names=$(awk -v c="$c" '$3 == c { print $1 "." $2 }' <<<"$pool_items")
  [ -n "$names" ] || names=$c
  for name in $names; do
    if ! documented "$name"; then
      if [ "$name" = "$c" ]; then
        echo "check_stats_doc: counter '$c' (partdnsctl stats) is not documented in docs/man/partdnsctl.8.md (expected a line \`$c\` under STATS COUNTERS)" >&2
      else
        echo "check_stats_doc: counter '$c', printed by partdnsctl stats as '$name', is not documented in docs/man/partdnsctl.8.md (expected a line \`$name\` under STATS COUNTERS)" >&2
      fi
      missing=$((missing + 1))
    fi
  done
done
[ "$n" -gt 20 ] || { echo "check_stats_doc: only $n counters read from $H" >&2; exit 2; }

# The other lines of the text report: the fixed names stats.c's text writers
# print ("uptime %llu\n", "cache.entries %zu\n", ...), with %s (a partition,
# zone or tier node) written NAME, ZONE or NODE on the page. The counters'
# own lines ("%s", "normal.%s", "edns.%s") are checked above.
extras=$(awk '/^void stats_write_status/ { exit } { print }' "$S" |
  grep -oE '[a-z_.%]+ %(llu|zu|u|d)\\n' | sed 's/ %.*//' | sort -u |
  grep -vxE '%s|normal\.%s|edns\.%s')
[ "$(grep -c . <<<"$extras")" -ge 10 ] ||
  { echo "check_stats_doc: found only $(grep -c . <<<"$extras") other lines in $S; the parse in $0 no longer follows it" >&2; exit 2; }
nextra=0
for e in $extras; do
  nextra=$((nextra + 1))
  re=$(sed -e 's/\./\\./g' -e 's/%s/[A-Z]+/g' <<<"$e")
  if ! grep -qxE -- "\`$re\`" "$DOC"; then
    echo "check_stats_doc: the stats line '$e' is not documented in docs/man/partdnsctl.8.md (expected a line \`$(sed 's/%s/NAME/g' <<<"$e")\` under STATS COUNTERS)" >&2
    missing=$((missing + 1))
  fi
done

echo "check_stats_doc: $n counters of COUNTER_LIST and $nextra other stats lines checked, $missing missing from docs/man/partdnsctl.8.md"
[ "$missing" -eq 0 ]
