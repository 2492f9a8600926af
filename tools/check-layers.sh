#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The layering rules, checked on the built objects and the sources:
#  - folders: the module table of docs/architecture.md lists every folder of
#    the build from the bottom up, with each of its source files; a file in
#    one folder may call and include only its own folder and the folders
#    listed before it (nm: undefined symbols against the other folders'
#    defined ones; the #include "dir/file.h" lines), and every .c and .h
#    file is in the table;
#  - files: inside each folder no two files call each other both ways and
#    there is no cycle of calls; every function a header declares is defined
#    in the .c file of the same name (no header speaks for another file);
#  - private headers: a header that says "This file is private to DIR/."
#    is included only from DIR/ and tests/.
# Usage: tools/check-layers.sh BUILD_DIR
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?usage: check-layers.sh BUILD_DIR}
DOC=$SRC/docs/architecture.md
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The table: rows "| `folder/` | `library` | files | job |" between the
# "## Modules" heading and the next heading, in order.
awk '/^## Modules/ { on = 1; next } on && /^## / { exit }
     on && /^\| `[a-z_\/]+\/` \|/ {
       split($0, c, "|"); d = c[2]; gsub(/[` ]/, "", d); sub(/\/$/, "", d)
       l = c[3]; gsub(/[` ]/, "", l)
       f = c[4]; gsub(/`/, "", f); gsub(/,/, " ", f)
       print d, l, f }' "$DOC" > "$tmp/table"
[ -s "$tmp/table" ] || { echo "check-layers: no module table in $DOC" >&2; exit 2; }
mapfile -t MODULES < <(awk '{print $1}' "$tmp/table")
declare -A LEVEL
for i in "${!MODULES[@]}"; do LEVEL[${MODULES[$i]}]=$i; done

# every source file of a listed folder is in its row, and every row's file exists
while read -r d lib files; do
  for f in $files; do [ -f "$SRC/$d/$f" ] || { echo "check-layers: $DOC lists $d/$f, which does not exist" >&2; fail=1; }; done
  for p in "$SRC/$d"/*.c "$SRC/$d"/*.h; do
    [ -e "$p" ] || continue
    f=${p##*/}
    case " $files " in *" $f "*) ;; *) echo "check-layers: $d/$f is not in the module table of $DOC" >&2; fail=1 ;; esac
  done
done < "$tmp/table"
# a folder with sources that the table does not list
for p in $(cd "$SRC" && git ls-files '*.c' '*.h' 2>/dev/null | grep -v -E '^(tests|tools|bench|third_party|build[^/]*)/' | xargs -r -n1 dirname | sort -u); do
  [ -n "${LEVEL[$p]+x}" ] || [ "$p" = resolver ] || { echo "check-layers: folder $p/ is not in the module table of $DOC" >&2; fail=1; }
done

# includes: "dir/file.h" of a folder listed later is an upward arrow
while read -r d lib files; do
  for f in $files; do
    { grep -o '^#include "[a-z_/]*\.h"' "$SRC/$d/$f" 2>/dev/null || true; } | sed 's/#include "//; s/"$//' | while read -r inc; do
      id=${inc%/*}
      [ -n "${LEVEL[$id]+x}" ] || continue
      if [ "${LEVEL[$id]}" -gt "${LEVEL[$d]}" ]; then
        echo "check-layers: $d/$f includes $inc, from a folder of a later row" >&2
        echo x >> "$tmp/upward"
      fi
    done
  done
done < "$tmp/table"
[ ! -s "$tmp/upward" ] || fail=1

# the objects of each folder's library: FOLDER.def (symbol file) and per-file lists
while read -r d lib files; do
  objdir=$(find "$BUILD" -type d -name "$lib.dir" -print -quit)
  [ -n "$objdir" ] || { echo "check-layers: no objects of $lib under $BUILD (build first)" >&2; exit 2; }
  m=${d//\//_}
  mkdir -p "$tmp/$m"
  objs=()
  while IFS= read -r o; do
    [ -f "$SRC/$d/$(basename "$o" .c.o).c" ] && objs+=("$o")  # else a stale object of a removed source
  done < <(find "$objdir" -name '*.c.o')
  [ ${#objs[@]} -gt 0 ] || { echo "check-layers: no objects of $lib under $BUILD (build first)" >&2; exit 2; }
  for o in "${objs[@]}"; do f=$(basename "$o" .c.o); : > "$tmp/$m/$f.def"; : > "$tmp/$m/$f.use"; done
  nm -A --defined-only -g "${objs[@]}" |
    awk -v t="$tmp/$m" '$2 ~ /[TDBRC]/ { f = $1; sub(/\.c\.o:.*/, "", f); sub(/.*\//, "", f); print $3 > (t "/" f ".def") }'
  nm -A -u "${objs[@]}" |
    awk -v t="$tmp/$m" '{ f = $1; sub(/\.c\.o:.*/, "", f); sub(/.*\//, "", f); print $NF > (t "/" f ".use") }'
  for f in "$tmp/$m"/*.def "$tmp/$m"/*.use; do sort -u -o "$f" "$f"; done
  cat "$tmp/$m"/*.def | awk -v d="$d" -v l="${LEVEL[$d]}" '{ print $1, l, d }' >> "$tmp/alldefs"
done < "$tmp/table"

# calls between folders: a use of a symbol a later folder defines
while read -r d lib files; do
  m=${d//\//_}
  awk -v d="$d" -v l="${LEVEL[$d]}" '
    FILENAME ~ /alldefs$/ { lvl[$1] = $2; dir[$1] = $3; next }
    { f = FILENAME; sub(/.*\//, "", f); sub(/\.use$/, "", f)
      if (($1 in lvl) && lvl[$1] > l) {
        printf "check-layers: %s/%s.c calls %s of %s/, a folder of a later row\n", d, f, $1, dir[$1] > "/dev/stderr"
        bad = 1
      } }
    END { exit bad }' "$tmp/alldefs" "$tmp/$m"/*.use || fail=1
done < "$tmp/table"

# inside each folder: one-way calls, no cycles, headers for their own file
while read -r d lib files; do
  m=${d//\//_}
  t=$tmp/$m
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
       }' "$t"/*.def "$t"/*.use | sort > "$t/edges"
  while read -r a b; do
    if grep -qx "$b $a" "$t/edges" && [[ "$a" < "$b" ]]; then
      echo "check-layers: $d/$a.c and $d/$b.c call each other" >&2
      fail=1
    fi
  done < "$t/edges"
  if ! tsort "$t/edges" > /dev/null 2> "$t/tsort.err"; then
    echo "check-layers: a cycle of calls in $d/:" >&2
    cat "$t/tsort.err" >&2
    fail=1
  fi
  # headers: each declared function is defined in the .c of the same name
  # (a function declared here and defined nowhere in the folder is not ours to judge)
  for h in "$SRC/$d"/*.h; do
    [ -e "$h" ] || continue
    base=$(basename "$h" .h)
    grep -Eo '^[a-z_][a-z0-9_ \*]*[ \*]([a-z_][a-z0-9_]*)\(' "$h" | grep -v '^static' |
      sed -E "s/.*[ \*]([a-z_][a-z0-9_]*)\(\$/\1 $base/" || true
  done | sort -u > "$t/decl"
  awk -v m="$d" 'FILENAME ~ /\.def$/ { f = FILENAME; sub(/.*\//, "", f); sub(/\.def$/, "", f)
                                    if (!($1 in owner)) owner[$1] = f; next }
       ($1 in owner) && owner[$1] != $2 {
         printf "check-layers: %s/%s.h declares %s, defined in %s/%s.c\n", m, $2, $1, m, owner[$1] > "/dev/stderr"; bad = 1 }
       END { exit bad }' "$t"/*.def "$t/decl" || fail=1
done < "$tmp/table"
# private headers: one that says "This file is private to DIR/." is included
# only from DIR/ and from the tests
# (one grep for the owners, one for every include: a process per header took a minute)
(cd "$SRC" && git grep -I -o -E 'This file is private to [a-z_/]+/\.' -- '*.h' || true) |
  sed -E 's|^([^:]*):This file is private to ([a-z_/]+)/\.$|\1 \2|' > "$tmp/owners"
(cd "$SRC" && git grep -o -E '^#include "[a-z_/]+\.h"' -- '*.c' '*.h' || true) |
  sed -E 's|^([^:]*):#include "([^"]*)"$|\1 \2|' > "$tmp/includes"
awk 'NR == FNR { own[$1] = $2; next }
     ($2 in own) && index($1, own[$2] "/") != 1 && index($1, "tests/") != 1 {
       printf "check-layers: %s includes %s, which is private to %s/\n", $1, $2, own[$2] > "/dev/stderr"; bad = 1 }
     END { exit bad }' "$tmp/owners" "$tmp/includes" || echo x >> "$tmp/private"
[ ! -s "$tmp/private" ] || fail=1
if [ "$fail" = 0 ]; then echo "check-layers: ${MODULES[*]}: one-way, every file in the table"; fi
exit "$fail"
