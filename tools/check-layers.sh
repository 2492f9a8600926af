#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The layering rule, checked on the built objects: inside each module no two
# files call each other both ways (nm: a file's undefined symbols against the
# others' defined ones), and every function a module header declares is
# defined in the .c file of the same name (no header speaks for another file).
# Usage: tools/check-layers.sh BUILD_DIR [module ...]   (default: resolver conf control partition mapping util etcd)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?usage: check-layers.sh BUILD_DIR [module ...]}
shift
MODULES=("$@")
[ ${#MODULES[@]} -gt 0 ] || MODULES=(resolver conf control partition mapping util etcd)
fail=0

for m in "${MODULES[@]}"; do
  objdir=$BUILD/$m/CMakeFiles/partdns_$m.dir
  [ -d "$objdir" ] || { echo "check-layers: no objects for $m under $BUILD (build first)" >&2; exit 2; }
  tmp=$(mktemp -d)
  objs=()
  for o in "$objdir"/*.o; do
    [ -f "$SRC/$m/$(basename "$o" .c.o).c" ] && objs+=("$o")  # else a stale object of a removed source
  done
  [ ${#objs[@]} -gt 0 ] || { echo "check-layers: no objects for $m under $BUILD (build first)" >&2; exit 2; }
  # one nm per module (-A names the object on each line): FILE.def, FILE.use
  for o in "${objs[@]}"; do f=$(basename "$o" .c.o); : > "$tmp/$f.def"; : > "$tmp/$f.use"; done
  nm -A --defined-only -g "${objs[@]}" |
    awk -v t="$tmp" '$2 ~ /[TDBRC]/ { f = $1; sub(/\.c\.o:.*/, "", f); sub(/.*\//, "", f); print $3 > (t "/" f ".def") }'
  nm -A -u "${objs[@]}" |
    awk -v t="$tmp" '{ f = $1; sub(/\.c\.o:.*/, "", f); sub(/.*\//, "", f); print $NF > (t "/" f ".use") }'
  for f in "$tmp"/*.def "$tmp"/*.use; do sort -u -o "$f" "$f"; done
  # edges: A -> B when A uses a symbol B defines (one awk over every list:
  # a comm per pair of files forked n^2 processes and took a minute under load)
  awk 'FNR == 1 { f = FILENAME; sub(/.*\//, "", f); kind = f; sub(/.*\./, "", kind); sub(/\.[a-z]+$/, "", f) }
       kind == "def" { owner[$1] = owner[$1] " " f; next }
       kind == "use" { use[f, $1] = 1; files[f] = 1 }
       END {
         for (k in use) {
           split(k, p, SUBSEP)
           if (!(p[2] in owner)) continue
           n = split(owner[p[2]], o, " ")
           for (i = 1; i <= n; i++) if (o[i] != p[1]) edge[p[1] " " o[i]] = 1
         }
         for (e in edge) print e
       }' "$tmp"/*.def "$tmp"/*.use | sort > "$tmp/edges"
  while read -r a b; do
    if grep -qx "$b $a" "$tmp/edges" && [[ "$a" < "$b" ]]; then
      echo "check-layers: $m/$a.c and $m/$b.c call each other" >&2
      fail=1
    fi
  done < "$tmp/edges"
  if ! tsort "$tmp/edges" > /dev/null 2> "$tmp/tsort.err"; then
    echo "check-layers: a cycle of calls in $m/:" >&2
    cat "$tmp/tsort.err" >&2
    fail=1
  fi
  # headers: each declared function is defined in the .c of the same name
  # (a function declared here and defined nowhere in the module is not ours to judge)
  for h in "$SRC/$m"/*.h; do
    base=$(basename "$h" .h)
    grep -Eo '^[a-z_][a-z0-9_ \*]*[ \*]([a-z_][a-z0-9_]*)\(' "$h" | grep -v '^static' |
      sed -E "s/.*[ \*]([a-z_][a-z0-9_]*)\(\$/\1 $base/" || true
  done | sort -u > "$tmp/decl"
  awk -v m="$m" 'FILENAME ~ /\.def$/ { f = FILENAME; sub(/.*\//, "", f); sub(/\.def$/, "", f)
                                    if (!($1 in owner)) owner[$1] = f; next }
       ($1 in owner) && owner[$1] != $2 {
         printf "check-layers: %s/%s.h declares %s, defined in %s/%s.c\n", m, $2, $1, m, owner[$1] > "/dev/stderr"; bad = 1 }
       END { exit bad }' "$tmp"/*.def "$tmp/decl" || fail=1
  rm -rf "$tmp"
done
if [ "$fail" = 0 ]; then echo "check-layers: ${MODULES[*]}: one-way"; fi
exit "$fail"
