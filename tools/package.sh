#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build the Debian package from the working tree: tools/package.sh [OUTDIR]
# (default ./build-pkg). Installs the build dependencies debian/control names
# (as root, apt-get satisfy) when some are missing, copies the tree to a
# temporary directory (tracked and untracked files git does not ignore: no
# build dirs) and runs dpkg-buildpackage -b there, so the checkout stays
# clean; OUTDIR gets partdns_VERSION_ARCH.deb (plus the -dbgsym package,
# .buildinfo and .changes). Then: apt-get install ./build-pkg/partdns_*.deb
set -euo pipefail
OUT=""
[ -z "${1:-}" ] || OUT=$(realpath -m "$1") # a relative OUTDIR: from the caller's directory
cd "$(dirname "$0")/.."
SRC=$(pwd)
OUT=${OUT:-$SRC/build-pkg}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

# One version: the CMake project VERSION (partdns -V prints it); the
# changelog's top entry must say the same.
version=$(sed -n 's/^project(partdns VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dpkg-checkbuilddeps >/dev/null; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends dpkg-dev
fi
changelog=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ -z "$version" ] || [ "${changelog%%-*}" != "$version" ]; then
  echo "package.sh: debian/changelog is at $changelog but CMakeLists.txt says VERSION $version;" \
    "add a changelog entry (dch -v $version)" >&2
  exit 1
fi

# Build dependencies: exactly debian/control's Build-Depends.
if ! dpkg-checkbuilddeps debian/control 2>/dev/null; then
  deps=$(sed -n '/^Build-Depends:/,/^[A-Z]/{/^Build-Depends:/{s/^Build-Depends://;p;d};/^[A-Z]/d;p}' debian/control |
         tr '\n' ' ')
  $SUDO apt-get update -q
  $SUDO apt-get satisfy -y -q --no-install-recommends "$deps"
  dpkg-checkbuilddeps debian/control
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/partdns-pkg.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/partdns-$version
mkdir -p "$tree"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  # -z and --null: any file name; files deleted in the tree but still tracked are skipped
  git -C "$SRC" ls-files -z --cached --others --exclude-standard |
    (cd "$SRC" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh) |
    tar -C "$SRC" --null -T - -cf - | tar -C "$tree" -xf -
else
  tar -C "$SRC" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$tree" -xf -
fi

start=$(date +%s)
(cd "$tree" && dpkg-buildpackage -b -us -uc -j"$(nproc)") > "$work/build.log" 2>&1 || {
  tail -n 60 "$work/build.log" >&2
  echo "package.sh: dpkg-buildpackage failed (last lines above)" >&2
  exit 1
}
mkdir -p "$OUT"
rm -f "$OUT"/partdns_*.deb "$OUT"/partdns-dbgsym_*.deb "$OUT"/partdns_*.buildinfo "$OUT"/partdns_*.changes
cp "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$OUT"/ 2>/dev/null || true
cp "$work/build.log" "$OUT/build.log"
deb=$(ls "$OUT"/partdns_"$version"_*.deb)
echo "package.sh: $deb ($(($(date +%s) - start)) s)"
dpkg-deb -c "$deb" | awk '{print $1, $6}' | grep -v '/$' || true
