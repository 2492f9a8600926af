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
  for o in "$objdir"/*.o; do
    f=$(basename "$o" .c.o)
    [ -f "$SRC/$m/$f.c" ] || continue  # a stale object of a removed source
    nm --defined-only -g "$o" | awk '$2 ~ /[TDBRC]/ {print $3}' | sort -u > "$tmp/$f.def"
    nm -u "$o" | awk '{print $NF}' | sort -u > "$tmp/$f.use"
  done
  # edges: A -> B when A uses a symbol B defines
  : > "$tmp/edges"
  for a in "$tmp"/*.use; do
    fa=$(basename "$a" .use)
    for b in "$tmp"/*.def; do
      fb=$(basename "$b" .def)
      [ "$fa" = "$fb" ] && continue
      if [ -n "$(comm -12 "$a" "$b" | head -n 1)" ]; then echo "$fa $fb" >> "$tmp/edges"; fi
    done
  done
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
  for h in "$SRC/$m"/*.h; do
    base=$(basename "$h" .h)
    decl=$(grep -Eo '^[a-z_][a-z0-9_ \*]*[ \*]([a-z_][a-z0-9_]*)\(' "$h" | grep -v '^static' |
           sed -E 's/.*[ \*]([a-z_][a-z0-9_]*)\($/\1/' | sort -u || true)
    for fn in $decl; do
      owner=$(grep -lx "$fn" "$tmp"/*.def 2>/dev/null | head -n 1 || true)
      [ -n "$owner" ] || continue  # declared, defined nowhere in this module: not ours to judge
      if [ "$(basename "$owner" .def)" != "$base" ]; then
        echo "check-layers: $m/$base.h declares $fn, defined in $m/$(basename "$owner" .def).c" >&2
        fail=1
      fi
    done
  done
  rm -rf "$tmp"
done
if [ "$fail" = 0 ]; then echo "check-layers: ${MODULES[*]}: one-way"; fi
exit "$fail"
