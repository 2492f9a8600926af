#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian package, built, installed and run as installed. Not a ctest: it
# installs into the system (tools/test.sh runs it as root on a CI machine).
#   1. tools/package.sh builds build-pkg/partdns_*.deb from the tree;
#   2. apt-get install ./partdns_*.deb (dpkg -i plus its dependencies);
#      files, conffiles, the user, /var/lib/partdns, the version;
#   3. systemd-analyze verify on the installed unit; the man pages render
#      without warnings;
#   4. in a private network namespace (port 53 on its own loopback): a knotd
#      serving pkgtest.example, www.pkgtest.example flagged with partdnsctl
#      as root (policy forward to that knotd), then the daemon twice: as the
#      unit runs it (its User=, AmbientCapabilities=, directories,
#      NOTIFY_SOCKET, ExecStartPre and ExecStart) and by hand as root (it
#      drops to server.user); each time: READY=1, the process's user, a dig
#      from a client of a partition answered by knotd through partdns,
#      partdnsctl stats and cache lookup over the control socket, SIGTERM;
#   5. apt-get purge: the user, the group, /var/lib/partdns and /etc/partdns
#      are gone.
# Usage: tests/package/test_package.sh [--no-build] [OUTDIR]  (default
# OUTDIR build-pkg). The whole run is bounded (PARTDNS_PKG_TIMEOUT seconds,
# default 900); everything it started is stopped and the package purged on
# any exit.
set -euo pipefail

if [ "${1:-}" = "--inside" ]; then
  inside=1
else
  inside=0
  if [ -z "${PARTDNS_PKG_TIMED:-}" ]; then
    # SIGTERM at the bound reaches this script's EXIT trap (cleanup below)
    exec env PARTDNS_PKG_TIMED=1 timeout --kill-after=20 "${PARTDNS_PKG_TIMEOUT:-900}" "$0" "$@"
  fi
fi

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
NAME=pkgtest.example            # the test zone, served by knotd
ANSWER=192.0.2.53               # its www A record
KNOT_ADDR=127.77.0.2            # knotd, inside the namespace
CLIENT=10.1.0.53                # a client address of a partition of the sample config
CONF=/etc/partdns/partdns.yaml
UNIT=/lib/systemd/system/partdns.service

npass=0
nfail=0
ok() { npass=$((npass + 1)); printf 'ok   - %s\n' "$1"; }
fail() {
  nfail=$((nfail + 1))
  printf 'FAIL - %s\n' "$1"
  [ $# -lt 2 ] || printf '%s\n' "${@:2}" | sed 's/^/       /'
}
# check DESC CMD...: ok when CMD succeeds; its output is shown when it fails
check() {
  local out
  if out=$("${@:2}" 2>&1); then ok "$1"; else fail "$1" "$out"; fi
}
# check_eq DESC EXPECTED ACTUAL
check_eq() {
  if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "expected: $2" "seen:     $3"; fi
}
finish() {
  printf '%d passed, %d failed\n' "$npass" "$nfail"
  [ "$nfail" -eq 0 ]
}

# ------------------------------------------------------ 4. inside the namespace
if [ "$inside" = 1 ]; then
  TMP=$2
  pd_pid=""
  knot_pid=""
  notify_pid=""
  runtime_dirs=()   # the unit's RuntimeDirectory=, made here in systemd's stead
  stop() { # stop PID: SIGTERM, then SIGKILL after 10 s
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || return 0
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  }
  cleanup_inside() {
    local pid
    for pid in "$pd_pid" "$knot_pid" "$notify_pid"; do
      [ -z "$pid" ] || stop "$pid"
    done
    wait 2>/dev/null || true
    ip addr del "$CLIENT/32" dev lo 2>/dev/null || true
    [ ${#runtime_dirs[@]} -eq 0 ] || rm -rf "${runtime_dirs[@]}"
  }
  trap cleanup_inside EXIT
  trap 'exit 143' TERM INT

  ip link set lo up
  ip addr add "$CLIENT/32" dev lo 2>/dev/null || true
  check_eq "$CLIENT is in a partition with a mapped address (sample config)" "yes" \
    "$(partdnsctl partition lookup "$CLIENT" 2>&1 | awk '$1 == "mapped" && $2 != "-" {print "yes"}')"

  # knotd: the authority of pkgtest.example, as tests/integration/lib.sh runs it
  mkdir -p "$TMP/knot/db"
  cat > "$TMP/knot/$NAME.zone" <<EOF
\$ORIGIN $NAME.
\$TTL 300
@    SOA ns.$NAME. hostmaster.$NAME. 1 3600 600 86400 300
@    NS  ns.$NAME.
ns   A   $KNOT_ADDR
www  A   $ANSWER
EOF
  cat > "$TMP/knot/knot.conf" <<EOF
server:
  rundir: $TMP/knot
  listen: $KNOT_ADDR@53
  udp-workers: 1
  tcp-workers: 1
  background-workers: 1
  edns-client-subnet: on
database:
  storage: $TMP/knot/db
control:
  listen: $TMP/knot/knot.sock
log:
  - target: $TMP/knot/knotd.log
    any: info
zone:
  - domain: $NAME
    file: $TMP/knot/$NAME.zone
    storage: $TMP/knot
    zonefile-sync: -1
    journal-content: none
EOF
  ip addr add "$KNOT_ADDR/32" dev lo 2>/dev/null || true # 127/8 routes on lo anyway
  knotd -c "$TMP/knot/knot.conf" > "$TMP/knot/stdout.log" 2>&1 &
  knot_pid=$!
  knot_up=""
  for ((i = 0; i < 100; i++)); do
    if dig +time=1 +tries=1 +norecurse @"$KNOT_ADDR" "www.$NAME" A 2>/dev/null | grep -q "status: NOERROR"; then
      knot_up=1
      break
    fi
    sleep 0.1
  done
  [ -n "$knot_up" ] && ok "knotd serves $NAME on $KNOT_ADDR" ||
    fail "knotd serves $NAME on $KNOT_ADDR" "$(tail -n 5 "$TMP/knot/knotd.log" "$TMP/knot/stdout.log" 2>&1)"

  # The sample config validates (the root's key from dns-root-data), and
  # pkgtest.example is a private zone that no chain of trust reaches (nor,
  # here, any Internet): the operator vouches for it, as with Unbound's
  # domain-insecure, else its flagged answers end in SERVFAIL.
  sed -i 's|^resolver:|resolver:\n  domain_insecure: [ '"$NAME"'. ]|' "$CONF"
  check "resolver.domain_insecure added to $CONF" grep -q "domain_insecure: \[ $NAME. \]" "$CONF"

  # What an operator does first: flag the name, as root, with the default
  # config (/etc/partdns/partdns.yaml) and the store the package made.
  check "partdnsctl domain add www.$NAME --policy forward (as root, installed store)" \
    partdnsctl domain add "www.$NAME" --policy forward --forward "$KNOT_ADDR@53"

  # The daemon, twice: as the unit runs it (as User= from the start, with
  # the unit's AmbientCapabilities, its directories made as systemd makes
  # them, NOTIFY_SOCKET for Type=notify; ExecStartPre, then ExecStart), and
  # as an operator runs it by hand: the same command as root, which binds,
  # then drops to server.user.
  unit_get() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }
  unit_user=$(unit_get User)
  unit_group=$(unit_get Group)
  unit_group=${unit_group:-${unit_user:-root}}
  caps=$(unit_get AmbientCapabilities | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ \+/,/g')
  read -ra pre <<< "$(unit_get ExecStartPre | sed 's/^[-+!@:]*//')"
  read -ra start <<< "$(unit_get ExecStart | sed 's/^[-+!@:]*//')"
  check_eq "the unit starts /usr/sbin/partdns -c $CONF" "/usr/sbin/partdns -c $CONF" "${start[*]}"
  as_unit=()
  if [ -n "$unit_user" ]; then
    as_unit=(setpriv --reuid="$unit_user" --regid="$unit_group" --init-groups)
    [ -z "$caps" ] || as_unit+=(--inh-caps="$caps" --ambient-caps="$caps")
    as_unit+=(--)
  fi
  notify=""
  [ "$(unit_get Type)" != notify ] || notify=$TMP/notify.sock

  # run_daemon HOW: start (HOW = unit or root), wait until ready, check, stop
  run_daemon() {
    local how=$1 runner=() i ready="" got rc=0
    [ "$how" = root ] || runner=("${as_unit[@]}")
    # systemd makes the RuntimeDirectory at start and removes it at stop; so
    # do we, and after a start as root too, where the daemon makes it itself
    # for its control socket
    for d in $(unit_get RuntimeDirectory); do
      [ -e "/run/$d" ] || runtime_dirs+=("/run/$d")
    done
    if [ "$how" = unit ]; then
      for d in $(unit_get RuntimeDirectory); do
        install -d -m "$(unit_get RuntimeDirectoryMode | grep . || echo 0755)" \
          -o "${unit_user:-root}" -g "$unit_group" "/run/$d"
      done
      [ ${#pre[@]} -eq 0 ] || check "$how: ExecStartPre ${pre[*]}" "${runner[@]}" "${pre[@]}"
    fi
    if [ -n "$notify" ]; then
      rm -f "$notify" "$TMP/notify.log"
      socat -u "UNIX-RECV:$notify,unlink-early" "OPEN:$TMP/notify.log,creat,append" 2>/dev/null &
      notify_pid=$!
      for ((i = 0; i < 100; i++)); do [ -S "$notify" ] && break; sleep 0.05; done
      # the daemon may be another user: systemd's socket is writable to it
      chmod 0666 "$notify" 2>/dev/null || true
    fi
    NOTIFY_SOCKET=$notify "${runner[@]}" "${start[@]}" > "$TMP/partdns-$how.log" 2>&1 &
    pd_pid=$!
    # ready: READY=1 on the notify socket (Type=notify), else the control socket answers
    for ((i = 0; i < 200; i++)); do
      kill -0 "$pd_pid" 2>/dev/null || break
      if [ -n "$notify" ]; then
        grep -aq 'READY=1' "$TMP/notify.log" 2>/dev/null && ready=1
      else
        partdnsctl stats >/dev/null 2>&1 && ready=1
      fi
      [ -z "$ready" ] || break
      sleep 0.1
    done
    if [ -n "$ready" ]; then
      ok "$how: partdns ready${notify:+ (READY=1 on NOTIFY_SOCKET)}"
    else
      fail "$how: partdns ready" "$(tail -n 20 "$TMP/partdns-$how.log")"
    fi
    check_eq "$how: partdns runs as the packaged user" "partdns" "$(ps -o user= -p "$pd_pid" | tr -d ' ')"

    # the flagged name through the EDNS pool to knotd, for a client of a city
    got=""
    for ((i = 0; i < 30; i++)); do
      got=$(dig +time=2 +tries=1 +short -b "$CLIENT" @127.0.0.1 "www.$NAME" A 2>/dev/null | tail -n 1)
      [ "$got" != "$ANSWER" ] || break
      sleep 0.2 # the daemon picks up a store change within a second
    done
    check_eq "$how: dig -b $CLIENT @127.0.0.1 www.$NAME: knotd's answer through partdns" "$ANSWER" "$got"
    check "$how: partdnsctl stats over the control socket (as root)" partdnsctl stats
    check "$how: partdnsctl cache lookup www.$NAME --partition $partition (as root)" \
      partdnsctl cache lookup "www.$NAME" --partition "$partition"

    kill -TERM "$pd_pid"
    for ((i = 0; i < 100; i++)); do kill -0 "$pd_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pd_pid" 2>/dev/null; then
      fail "$how: partdns stops on SIGTERM within 10 s"
    else
      wait "$pd_pid" || rc=$?
      pd_pid=""
      check_eq "$how: partdns exits 0 on SIGTERM" 0 "$rc"
    fi
    if [ -n "$notify_pid" ]; then stop "$notify_pid"; notify_pid=""; fi
    # as systemd removes the RuntimeDirectory= when the unit stops
    [ ${#runtime_dirs[@]} -eq 0 ] || rm -rf "${runtime_dirs[@]}"
    runtime_dirs=()
    [ "$nfail" -eq 0 ] || { echo "partdns log ($how):"; tail -n 30 "$TMP/partdns-$how.log"; }
  }
  partition=$(partdnsctl partition lookup "$CLIENT" | awk '$1 == "partition" {print $2}')
  run_daemon unit
  run_daemon root
  echo "$npass $nfail" > "$TMP/inside.counts"
  finish
  exit
fi

# ------------------------------------------------------ 1-3, 5: the system side
[ "$(id -u)" -eq 0 ] || { echo "test_package.sh: run as root (it installs the package)" >&2; exit 1; }
build=1
if [ "${1:-}" = "--no-build" ]; then build=0; shift; fi
OUT=$(realpath -m "${1:-$SRC/build-pkg}")
if dpkg-query -W -f='${Status}' partdns 2>/dev/null | grep -q 'ok installed\|config-files'; then
  echo "test_package.sh: partdns is installed already; apt-get purge partdns first" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# what this test runs besides tools/deps.sh's: systemd-analyze, man
need=()
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v man >/dev/null || need+=(man-db)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q && apt-get install -y -q --no-install-recommends "${need[@]}"
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/partdns-pkgtest.XXXXXX")
chmod 0755 "$TMP" # knotd and socat run as root, but the daemon's user reads nothing here
installed=0
cleanup() {
  local rc=$?
  if [ "$installed" = 1 ]; then
    apt-get purge -y -q partdns >/dev/null 2>&1 || dpkg --purge partdns >/dev/null 2>&1 || true
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

t0=$(date +%s)
if [ "$build" = 1 ]; then
  "$SRC/tools/package.sh" "$OUT"
fi
deb=$(ls "$OUT"/partdns_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { echo "test_package.sh: no partdns_*.deb in $OUT" >&2; exit 1; }
t1=$(date +%s)

# 2. install as an operator would: dpkg -i plus dependencies from the mirror
installed=1
if ! apt-get install -y -q --no-install-recommends "$deb" > "$TMP/apt.log" 2>&1; then
  apt-get update -q >/dev/null 2>&1 || true # stale lists: a dependency not found
  apt-get install -y -q --no-install-recommends "$deb" >> "$TMP/apt.log" 2>&1 ||
    { tail -n 20 "$TMP/apt.log"; fail "apt-get install $deb"; finish; exit 1; }
fi
ok "apt-get install $(basename "$deb")"
for f in /usr/sbin/partdns /usr/sbin/partdnsctl; do
  check "$f installed, executable" test -x "$f"
done
for f in "$CONF" /etc/partdns/partitions.yaml; do
  check "$f is a conffile" grep -qF " $f " <<< "$(dpkg-query -W -f='${Conffiles}\n' partdns)"
done
check "$UNIT installed" test -f "$UNIT"
version=$(dpkg-query -W -f='${Version}' partdns)
check_eq "partdns -V prints the package version" "partdns ${version%%-*}" "$(partdns -V)"
check_eq "partdnsctl -V prints the package version" "partdnsctl ${version%%-*}" "$(partdnsctl -V)"
check "system user partdns" getent passwd partdns
check_eq "its group is partdns" "partdns" "$(id -gn partdns 2>&1)"
check_eq "/var/lib/partdns is partdns:partdns 750" "partdns:partdns 750" \
  "$(stat -c '%U:%G %a' /var/lib/partdns 2>&1)"
check "partdns -t accepts the packaged config" partdns -t -c "$CONF"

# 3. the unit, offline (no systemd as PID 1 here); the man pages
out=$(systemd-analyze verify "$UNIT" 2>&1) && [ -z "$out" ] && ok "systemd-analyze verify $UNIT" ||
  fail "systemd-analyze verify $UNIT: no errors, no warnings" "$out"
# The pages from the .deb (a minimal image may exclude /usr/share/man from
# installs); installed, man finds them by name.
dpkg-deb -x "$deb" "$TMP/deb"
for page in man8/partdns.8 man8/partdnsctl.8 man5/partdns.yaml.5; do
  f=$TMP/deb/usr/share/man/$page.gz
  if [ ! -f "$f" ]; then fail "man page $page in the package"; continue; fi
  out=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
  lines=$(MANWIDTH=80 man -l "$f" 2>/dev/null | wc -l)
  if [ -z "$out" ] && [ "$lines" -gt 10 ]; then ok "man page $page renders without warnings ($lines lines)"; else
    fail "man page $page renders without warnings" "$out" "($lines lines)"
  fi
  name=$(basename "$page"); section=${name##*.}; name=${name%.*}
  if [ -e "/usr/share/man/$page.gz" ]; then
    check_eq "man -w $section $name finds the installed page" "/usr/share/man/$page.gz" "$(man -w "$section" "$name" 2>&1)"
  fi
done

# the alert rules and the dashboard for this version's metrics
for f in prometheus/alerts.yml grafana/partdns.json; do
  check "/usr/share/partdns/$f in the package, as in docs/" cmp "$TMP/deb/usr/share/partdns/$f" "$SRC/docs/$f"
done

# 4. the daemon as installed, in its own network namespace (127.0.0.1@53 of
# its own: nothing else on this machine is in the way, nothing sees it)
had_run_dir=0
[ ! -e /run/partdns ] || had_run_dir=1
if unshare --net true 2>/dev/null; then
  unshare --net -- "$0" --inside "$TMP" || true
  if read -r p f 2>/dev/null < "$TMP/inside.counts"; then
    npass=$((npass + p)) nfail=$((nfail + f))
  else
    fail "the namespace part ran to its end"
  fi
else
  fail "unshare --net (a private network namespace for the daemon's port 53)"
fi
t2=$(date +%s)

# 5. purge: the state and the user go, as do the conffiles
apt-get purge -y -q partdns > "$TMP/purge.log" 2>&1 && ok "apt-get purge partdns" ||
  fail "apt-get purge partdns" "$(tail -n 20 "$TMP/purge.log")"
installed=0
check_eq "no user partdns after purge" "" "$(getent passwd partdns)"
check_eq "no group partdns after purge" "" "$(getent group partdns)"
check "no /var/lib/partdns after purge" test ! -e /var/lib/partdns
check "no /etc/partdns after purge" test ! -e /etc/partdns
[ "$had_run_dir" = 1 ] || check "no /run/partdns left (systemd removes the RuntimeDirectory at stop)" test ! -e /run/partdns
check "no installed partdns process left" bash -c '! pgrep -f "^/usr/sbin/partdns( |$)"'
echo "package build $((t1 - t0)) s, install and run $((t2 - t1)) s"
finish
