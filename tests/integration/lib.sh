# SPDX-License-Identifier: BSD-3-Clause
# Integration-test harness (sourced): a private DNS hierarchy, an ECS GSLB, unbound and partdns on loopback.
#
# Usage in a test script:
#   . "$(dirname "$0")/lib.sh"
#   harness_init edns_iterate          # skips (exit 77) unless root and knotd/unbound exist
#   harness_start_all                  # root + TLD + customer + GSLB knotd processes
#   pd_write_conf "$IT_TMP/partdns.yaml"
#   pdctl domain add video.customer.example
#   partdns_start "$IT_TMP/partdns.yaml"
#   assert_eq "nanjing gets its node" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
#   it_done                            # prints "N passed, N failed", exits 0/1
#
# Topology (all on loopback, port 53 unless said otherwise; NET is 127.10.0 by
# default, see harness_pick_net):
#   NET.1  knotd  "."                  delegates example. and test. to NET.2
#   NET.2  knotd  example. test.       delegates customer.example. (NET.3),
#                                      cdn.test. (NET.4), dead.example. (NET.99, silent)
#   NET.3  knotd  customer.example.
#   NET.4  knotd  cdn.test. with mod-geoip (subnet mode, ECS on): the GSLB
#   NET.5  unbound, subnetcache, sends ECS to NET.4: reference ECS recursor
#   NET.6  hostile.example. (hostile.c, a lying authority; hostile_start), or
#          a test's own server (corp.internal. in test_forward_zones.sh)
#   NET.53@PORT   partdns under test (PORT = 5301 + N for NET 127.10.N), also ::1@PORT
#
# A signed chain of trust (IT_SIGN_CHAIN=1 before harness_start_all; see
# harness_sign_chain; needs keymgr and Debian's ldnsutils): knotd signs ".",
# example., test., customer.example. and cdn.test. online (one ECDSAP256SHA256
# CSK each, NSEC), each DS in its parent, so a validator whose trust anchor is
# the root's DNSKEY (harness_root_key FILE) gets AD for www.customer.example
# and for the GSLB's per-subnet answers (mod-geoip signs them online).  The
# customer's server also serves, delegated from example.:
#   insecure.example.  unsigned, no DS: an insecure delegation
#   forged.example.    pre-signed, DS; www (tampered RRSIG), nosig (no RRSIG),
#                      wrongkey (RRSIG by an unpublished key) are bogus; ok is fine
#   expired.example.   pre-signed, DS; www's RRSIGs expired, notyet's not yet valid
#   stale.example.     pre-signed, DS; every RRSIG expired, the apex's too
# (zones/*.zone.in say more).  Unset, every zone and config is as before.
#
# What the servers saw -- how and why:
#   * Counting: every knotd loads mod-stats, and knot_query_count NAME reads
#     `knotc stats` (server-operation[query]); live and exact.
#   * Names and ECS subnets: knotd has no query log, so every knotd loads
#     mod-dnstap with a file sink.  Only responses are logged: `kdig -G` prints
#     only responses, and with edns-client-subnet on (all our servers, not only
#     the GSLB) every response to a query that carried ECS echoes that ECS --
#     address and source prefix -- while a query without ECS gets a response
#     without it; so the response log says exactly which subnet each query
#     carried.  libfstrm buffers the dnstap file until knotd exits, so
#     knot_flush NAME stops the server, decodes its file with `kdig -G` into a
#     cumulative text log and starts it again (about 0.1 s; the servers are
#     stateless, and mod-stats counts are carried over); knot_queries NAME
#     prints that log as "QNAME QTYPE ECS" lines.  dnstap.so is Debian's
#     knot-module-dnstap; without it the logs stay empty and IT_HAVE_DNSTAP=0,
#     so a test can say which checks it could not make.
#   tcpdump/tshark are not used: not installed on CI, and the log above says
#   what each server parsed, not just what crossed the wire.
#
# Everything lives in IT_TMP=${TMPDIR:-/tmp}/partdns-it.XXXXXX, removed on
# exit unless PARTDNS_KEEP=1.  Every daemon is a background job of the test
# and is stopped by the EXIT trap.

set -u -o pipefail

IT_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PARTDNS_SRC=${PARTDNS_SRC:-$(cd "$IT_LIB_DIR/../.." && pwd)}
PARTDNS_BIN=${PARTDNS_BIN:-$PARTDNS_SRC/build/resolver/partdns}
PARTDNSCTL_BIN=${PARTDNSCTL_BIN:-$PARTDNS_SRC/build/tools/ctl/partdnsctl}
KNOT_MODULE_DIR=${KNOT_MODULE_DIR:-}

IT_NAME=""
IT_TMP=""
NET=""
IT_PASS=0
IT_FAIL=0
IT_HAVE_DNSTAP=0
IT_HAVE_IPV6=0
declare -A IT_PIDS=()      # name -> pid of every daemon we started
declare -A IT_CONF=()      # knot server name -> config file
declare -A IT_ADDR=()      # knot server name -> its address
declare -A IT_ZONES=()     # knot server name -> its zones
declare -A IT_STATS_BASE=()  # knot server name -> query count of its earlier incarnations
PD_PID=""
PD_CONF=""
PD_ADDR=""
PD_PORT=5301
PD_EXIT_STATUS=""
PD_DIG_TIME=${PD_DIG_TIME:-5}

# ---------------------------------------------------------------- reporting

# log MSG...: a harness message on stderr (ctest shows it on failure).
log() { printf '# %s\n' "$*" >&2; }

# ok DESC: count and print a passed check.
ok() { IT_PASS=$((IT_PASS + 1)); printf 'ok   - %s\n' "$1"; }

# fail DESC [DETAIL...]: count and print a failed check; the test goes on.
fail() {
  IT_FAIL=$((IT_FAIL + 1))
  printf 'FAIL - %s\n' "$1"
  shift
  local line
  for line in "$@"; do printf '%s\n' "$line" | sed 's/^/       /'; done
}

# die MSG: a failure that makes the rest of the test meaningless.
die() {
  fail "$1" "${@:2}"
  it_done
}

# skip MSG: the environment cannot run this test (exit 77 = ctest SKIP).
skip() { printf 'SKIP: %s\n' "$*"; exit 77; }

# assert_eq DESC EXPECTED ACTUAL
assert_eq() {
  if [ "$2" == "$3" ]; then ok "$1"; else
    fail "$1" "expected: $(printf '%s' "$2" | tr '\n' ' ')" "seen:     $(printf '%s' "$3" | tr '\n' ' ')"
  fi
}

# assert_ne DESC UNEXPECTED ACTUAL
assert_ne() {
  if [ "$2" != "$3" ]; then ok "$1"; else
    fail "$1" "expected anything but: $(printf '%s' "$2" | tr '\n' ' ')" "seen:     $(printf '%s' "$3" | tr '\n' ' ')"
  fi
}

# assert_contains DESC NEEDLE HAYSTACK (fixed string)
# No pipe into grep -q: under pipefail, grep exiting at the first match can
# kill printf with SIGPIPE and turn a match into a failure (seen in CI).
assert_contains() {
  if [[ "$3" == *"$2"* ]]; then ok "$1"; else
    fail "$1" "expected to contain: $2" "seen:" "$(printf '%s' "$3" | sed 's/^/         /')"
  fi
}

# assert_match DESC REGEX HAYSTACK (extended regex, any line)
assert_match() {
  if grep -qE -- "$2" <<<"$3"; then ok "$1"; else
    fail "$1" "expected to match: $2" "seen:" "$(printf '%s' "$3" | sed 's/^/         /')"
  fi
}

# assert_not_contains DESC NEEDLE HAYSTACK (fixed string)
assert_not_contains() {
  if [[ "$3" != *"$2"* ]]; then ok "$1"; else
    fail "$1" "expected not to contain: $2" "seen:" "$(printf '%s' "$3" | grep -F -- "$2" | sed 's/^/         /')"
  fi
}

# assert_le DESC MAX ACTUAL (integers)
assert_le() {
  if [[ "$3" =~ ^-?[0-9]+$ ]] && [ "$3" -le "$2" ]; then ok "$1"; else
    fail "$1" "expected: <= $2" "seen:     $3"
  fi
}

# assert_lt DESC BOUND ACTUAL (integers): ACTUAL < BOUND
assert_lt() {
  if [[ "$3" =~ ^-?[0-9]+$ ]] && [[ "$2" =~ ^-?[0-9]+$ ]] && [ "$3" -lt "$2" ]; then ok "$1"; else
    fail "$1" "expected: < $2" "seen:     $3"
  fi
}

# it_done: summary line, exit 0 if every check passed.  A test that made no
# check at all fails: it proved nothing.
it_done() {
  trap - ERR
  # every test ends with a clean stop: a sanitizer build reports leaks and
  # errors at exit, and a crash shows as a non-zero status
  if [ -n "$PD_PID" ]; then
    partdns_stop
    assert_eq "partdns exits 0 on SIGTERM at the end of the test" "0" "$PD_EXIT_STATUS"
  fi
  if [ -n "$IT_TMP" ] && [ -s "$IT_TMP/partdns.log" ]; then
    assert_eq "no sanitizer report in partdns' log" "" \
      "$(grep -E '(Address|Leak|UndefinedBehavior|Thread)Sanitizer|runtime error:' "$IT_TMP/partdns.log" | head -n 3)"
  fi
  printf '%s: %d passed, %d failed\n' "${IT_NAME:-it}" "$IT_PASS" "$IT_FAIL"
  if [ "$IT_FAIL" -ne 0 ] || [ "$IT_PASS" -eq 0 ]; then
    [ "$IT_FAIL" -ne 0 ] || echo "no check was made"
    if [ "${PARTDNS_KEEP:-0}" = 1 ]; then echo "logs kept in $IT_TMP"; else echo "(PARTDNS_KEEP=1 keeps the logs and configs)"; fi
    exit 1
  fi
  exit 0
}

# it_dump_logs: the tail of every daemon log, for a failure report
# (partdns' own log at length, the others' last lines).
it_dump_logs() {
  [ -n "$IT_TMP" ] && [ -d "$IT_TMP" ] || return 0
  local f n
  for f in "$IT_TMP"/*.log "$IT_TMP"/*/*.log; do
    [ -s "$f" ] || continue
    case $f in
      */knot-*) # knotd: only what went wrong
        grep -qE 'warning|error|critical' "$f" || continue
        printf '# ---- %s (warnings and errors)\n' "${f#"$IT_TMP"/}"
        grep -E 'warning|error|critical' "$f" | grep -v 'database storage' | tail -n 8 | sed 's/^/#   /' ;;
      *) n=15; [ "${f##*/}" != partdns.log ] || n=80
        printf '# ---- %s (last %d lines)\n' "${f#"$IT_TMP"/}" "$n"
        tail -n "$n" "$f" | sed 's/^/#   /' ;;
    esac
  done
}

# ---------------------------------------------------------------- set-up

# harness_init NAME: check the environment, make IT_TMP, pick NET, set the trap.
harness_init() {
  IT_NAME=$1
  [ "$(id -u)" -eq 0 ] || skip "needs root: binds port 53 on 127.10.x addresses"
  local b
  for b in knotd knotc unbound; do
    command -v "$b" >/dev/null 2>&1 || skip "$b not installed (tools/deps.sh installs it)"
  done
  for b in dig kdig ss flock; do
    command -v "$b" >/dev/null 2>&1 || { echo "FAIL - $b not installed (tools/deps.sh installs it)"; exit 1; }
  done
  IT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/partdns-it.XXXXXX") || { echo "FAIL - mktemp"; exit 1; }
  trap harness_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  harness_pick_net
  log "$IT_NAME: tmp $IT_TMP, hierarchy on $NET.0/24"
  # Under a sanitizer run, partdnsctl here is a client of the daemon under
  # test: LeakSanitizer's scan at each of its exits was a third of that run's
  # CPU. tests/tools checks partdnsctl itself with leak detection on.
  if [ -n "${ASAN_OPTIONS:-}" ] && [ -x "$PARTDNSCTL_BIN" ]; then
    printf '#!/bin/sh\nASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" exec %q "$@"\n' \
      "$PARTDNSCTL_BIN" >"$IT_TMP/partdnsctl"
    chmod +x "$IT_TMP/partdnsctl"
    PARTDNSCTL_BIN=$IT_TMP/partdnsctl
  fi
  PD_ADDR=$NET.53
  # ::1 on lo (a container may have IPv6 off): partdns also listens there
  if grep -q '^0\{31\}1 .* lo$' /proc/net/if_inet6 2>/dev/null; then IT_HAVE_IPV6=1; fi
  if [ -z "$KNOT_MODULE_DIR" ]; then
    KNOT_MODULE_DIR=$(ls -d /usr/lib/*/knot/modules-* 2>/dev/null | head -n 1)
  fi
  if [ -n "$KNOT_MODULE_DIR" ] && [ -e "$KNOT_MODULE_DIR/dnstap.so" ]; then
    IT_HAVE_DNSTAP=1
  else
    log "knot-module-dnstap not installed: GSLB query log checks are skipped"
  fi
}

# harness_pick_net: NET = the first 127.10.N (N = 0..15) that no other harness
# holds (flock on a file, held until exit) and that nothing listens on, so two
# test runs on one machine (a developer's and CI's) do not collide.
harness_pick_net() {
  local n lockdir=${TMPDIR:-/tmp}
  for n in $(seq 0 15); do
    exec {IT_LOCK_FD}>"$lockdir/partdns-it-net-$n.lock" || continue
    if flock -n "$IT_LOCK_FD"; then
      if ! ss -Hlnu 2>/dev/null | awk '{print $4}' | grep -q "^127\.10\.$n\.[0-9]*:53$" &&
         ! ss -Hlnt 2>/dev/null | awk '{print $4}' | grep -q "^127\.10\.$n\.[0-9]*:53$"; then
        NET=127.10.$n
        PD_PORT=$((5301 + n))   # ::1 is shared by all harnesses: one port each
        return 0
      fi
    fi
    exec {IT_LOCK_FD}>&-
  done
  echo "FAIL - no free 127.10.N.0/24 for the hierarchy (16 busy)"
  exit 1
}

# harness_cleanup: EXIT trap -- stop every daemon, remove IT_TMP.
harness_cleanup() {
  local rc=$?
  trap - EXIT
  # a reader that went away (| head) must not stop the clean-up half-way
  trap '' PIPE
  local name
  [ -z "$PD_PID" ] || it_stop_pid "$PD_PID" 5
  for name in "${!IT_PIDS[@]}"; do
    kill -TERM "${IT_PIDS[$name]}" 2>/dev/null
  done
  for name in "${!IT_PIDS[@]}"; do
    it_wait_exit "${IT_PIDS[$name]}" 3
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then it_dump_logs; fi
  if [ -n "$IT_TMP" ] && [ -d "$IT_TMP" ]; then
    if [ "${PARTDNS_KEEP:-0}" = 1 ]; then
      log "kept $IT_TMP"
    else
      rm -rf "$IT_TMP"
    fi
  fi
  exit "$rc"
}

# it_pid_running PID: PID exists and is not a zombie (a zombie child still
# answers kill -0).  Reads /proc without a fork: tests poll this in loops,
# and a ps per poll was a measurable share of the suite's CPU.
it_pid_running() {
  local st
  { st=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
  st=${st##*) }   # after "PID (COMM) ": COMM may hold spaces and parentheses
  [ "${st%% *}" != Z ]
}

# it_wait_exit PID SECONDS: wait up to SECONDS for PID to exit, SIGKILL it
# after that.  Sets IT_STOP_STATUS to the exit status as `wait` reports it
# (137 = killed).  Must run in the shell that started PID (not in $(...)):
# only that shell can `wait` for it.
it_wait_exit() {
  local pid=$1 limit=$2 i
  for ((i = 0; i < limit * 20; i++)); do
    # a zombie child still answers kill -0; `wait` below reaps it
    it_pid_running "$pid" || break
    sleep 0.05
  done
  if [ "$i" -ge $((limit * 20)) ]; then kill -KILL "$pid" 2>/dev/null; fi
  wait "$pid" 2>/dev/null
  IT_STOP_STATUS=$?
}

# it_stop_pid PID SECONDS: SIGTERM (once: a second SIGTERM makes knotd skip
# its clean-up), then it_wait_exit.
it_stop_pid() {
  kill -TERM "$1" 2>/dev/null
  it_wait_exit "$1" "$2"
}

# it_free_port ADDR FROM TO: the first TCP port in FROM..TO nothing listens
# on at ADDR, on stdout; dies when there is none.
it_free_port() {
  local p
  for p in $(seq "$2" "$3"); do
    if ! ss -Hltn 2>/dev/null | awk '{print $4}' | grep -qx "$1:$p"; then echo "$p"; return 0; fi
  done
  die "no free TCP port in $2..$3 on $1"
}

# it_wait_dns SECONDS DIG-ARGS...: poll until dig gets any answer.
it_wait_dns() {
  local limit=$1 i
  shift
  for ((i = 0; i < limit * 20; i++)); do
    dig +time=1 +tries=1 "$@" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  return 1
}

# it_poll SECONDS EXPECTED CMD...: run CMD every 0.25 s until it prints
# EXPECTED; 1 when it never does within SECONDS.
it_poll() {
  local limit=$1 want=$2 i
  shift 2
  for ((i = 0; i < limit * 4; i++)); do
    [ "$("$@")" = "$want" ] && return 0
    sleep 0.25
  done
  return 1
}

# knot_conf_head DIR ADDR [SERVER-LINE...]: the start every test knotd's
# config shares: one worker of each kind listening on ADDR@53, its state,
# control socket and log (info) under DIR; each SERVER-LINE is added to
# the server section.
knot_conf_head() {
  local dir=$1 addr=$2 line
  shift 2
  printf 'server:\n  rundir: %s\n  listen: %s@53\n  udp-workers: 1\n  tcp-workers: 1\n  background-workers: 1\n' \
    "$dir" "$addr"
  for line in "$@"; do printf '  %s\n' "$line"; done
  printf 'database:\n  storage: %s/db\ncontrol:\n  listen: %s/knot.sock\nlog:\n  - target: %s/knotd.log\n    any: info\n' \
    "$dir" "$dir" "$dir"
}

# it_rpz_primary DIR SECRET [NOTIFY-TARGET]: knotd on $NET.7 as the primary
# of rpz.primary. (the zone file DIR/rpz.primary.zone, written by the
# caller), transfers only with the TSIG key xfr. (hmac-sha256, SECRET); an
# edited zone file's differences go to the journal (zonefile-load:
# difference), which IXFRs are served from; with NOTIFY-TARGET
# (ADDR@PORT), every change is NOTIFYed there from $NET.7.
it_rpz_primary() {
  local dir=$1 secret=$2 notify=${3:-}
  mkdir -p "$dir/db"
  {
    knot_conf_head "$dir" "$NET.7"
    cat <<EOF2
key:
  - id: xfr.
    algorithm: hmac-sha256
    secret: $secret
EOF2
    [ -z "$notify" ] || printf 'remote:\n  - id: notified\n    address: %s\n    via: %s\n' "$notify" "$NET.7"
    cat <<EOF2
acl:
  - id: xfr_acl
    key: xfr.
    action: transfer
template:
  - id: default
    storage: $dir
    file: "%s.zone"
    zonefile-sync: -1
    zonefile-load: difference
    journal-content: changes
zone:
  - domain: rpz.primary.
    acl: xfr_acl
EOF2
    [ -z "$notify" ] || echo '    notify: notified'
  } > "$dir/knot.conf"
  knotd -c "$dir/knot.conf" >> "$dir/stdout.log" 2>&1 &
  IT_PIDS[rpz]=$!
  IT_CONF[rpz]=$dir/knot.conf
  IT_ADDR[rpz]=$NET.7
  IT_ZONES[rpz]=rpz.primary.
  knot_wait rpz
}

# it_subst IN OUT: copy a template, replacing @NET@ and @TMP@.
it_subst() { sed -e "s|@NET@|$NET|g" -e "s|@TMP@|$IT_TMP|g" "$1" > "$2"; }

# knot_write_conf NAME ADDR ZONE...: a knotd config for one server.  Every
# server has ECS on (so its response log shows each query's ECS), mod-stats and
# mod-dnstap; the GSLB (NAME=gslb) also mod-geoip on its zone.  A server named
# in KNOT_ECS_OFF (space separated) has ECS off: it ignores ECS, as an
# authority that cannot steer does.  A zone named in KNOT_SIGN_ZONES (space
# separated, absolute names; harness_start_all sets it for IT_SIGN_CHAIN=1) is
# signed online with policy "it", whose keys harness_sign_chain makes (so only
# with IT_SIGN_CHAIN=1: knotd makes none itself).
knot_write_conf() {
  local name=$1 addr=$2 ecs=on
  shift 2
  case " ${KNOT_ECS_OFF:-} " in *" $name "*) ecs=off ;; esac
  local dir=$IT_TMP/knot-$name z
  mkdir -p "$dir/db"
  for z in "$@"; do
    local file=${z%.}; [ "$z" = . ] && file=root
    it_subst "$IT_LIB_DIR/zones/$file.zone.in" "$dir/$file.zone"
  done
  {
    knot_conf_head "$dir" "$addr" 'identity: ""' 'version: ""' 'nsid: ""' "edns-client-subnet: $ecs"
    if [ -n "${KNOT_SIGN_ZONES:-}" ]; then
      # the zones in KNOT_SIGN_ZONES (IT_SIGN_CHAIN=1): signed online with one
      # CSK each that harness_sign_chain makes before knotd starts (manual: on,
      # so knotd neither makes nor rolls keys); NSEC, knotd's default
      cat <<EOF2
policy:
  - id: it
    algorithm: ecdsap256sha256
    single-type-signing: on
    manual: on
EOF2
    fi
    if [ "$name" = gslb ]; then
      cp "$IT_LIB_DIR/zones/gslb.geo" "$dir/gslb.geo"
      cat <<EOF2
mod-geoip:
  - id: gslb
    config-file: $dir/gslb.geo
    mode: subnet
    ttl: 60
EOF2
    fi
    if [ "$IT_HAVE_DNSTAP" = 1 ]; then
      cat <<EOF2
mod-dnstap:
  - id: tap
    sink: $dir/queries.tap
    identity: ""
    version: ""
    log-queries: off
    log-responses: on
EOF2
    fi
    cat <<EOF2
template:
  - id: default
    storage: $dir
    file: "%s.zone"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
EOF2
    if [ "$IT_HAVE_DNSTAP" = 1 ]; then
      echo "    global-module: [ mod-stats, mod-dnstap/tap ]"
    else
      echo "    global-module: [ mod-stats ]"
    fi
    echo "zone:"
    for z in "$@"; do
      echo "  - domain: \"$z\""
      [ "$name" != gslb ] || echo "    module: mod-geoip/gslb"
      [ "$z" != . ] || echo "    file: root.zone"
      case " ${KNOT_SIGN_ZONES:-} " in
        *" $z "*) # mod-geoip signs its answers too when its zone is signed
          echo "    dnssec-signing: on"
          echo "    dnssec-policy: it" ;;
        *) # IT_SIGN_ROOT=1: knotd signs the root (keys made on load) for DNSSEC tests
          [ "$z" != . ] || [ "${IT_SIGN_ROOT:-0}" != 1 ] || echo "    dnssec-signing: on" ;;
      esac
    done
  } > "$dir/knot.conf"
  IT_CONF[$name]=$dir/knot.conf
  IT_ADDR[$name]=$addr
  IT_ZONES[$name]="$*"
  IT_STATS_BASE[$name]=0
}

# knot_launch NAME: start knotd for a written config (no wait).
knot_launch() {
  local name=$1
  knotd -c "${IT_CONF[$name]}" >> "$IT_TMP/knot-$name/stdout.log" 2>&1 &
  IT_PIDS[$name]=$!
}

# knot_wait NAME: wait until the server answers authoritatively for each of
# its zones (knotd answers REFUSED while a zone is still loading).  The probe
# name "harness-probe.ZONE" is left out of knot_queries.
knot_wait() {
  local name=$1 z i out
  for z in ${IT_ZONES[$name]}; do
    local probe=harness-probe.${z#.}
    for ((i = 0; i < 100; i++)); do
      out=$(dig +time=1 +tries=1 +norecurse @"${IT_ADDR[$name]}" "$probe" TXT 2>/dev/null)
      [[ "$out" == *'status: NXDOMAIN'* ]] && break
      sleep 0.05
    done
    [ "$i" -lt 100 ] ||
      die "knotd $name on ${IT_ADDR[$name]} did not serve $z within 5 s" \
        "$(tail -n 5 "$IT_TMP/knot-$name/knotd.log" "$IT_TMP/knot-$name/stdout.log" 2>/dev/null)"
  done
}

# harness_write_hints: root hints pointing at our root server.
harness_write_hints() {
  cat > "$IT_TMP/root.hints" <<EOF2
.                        3600000  NS  ns.root.
ns.root.                 3600000  A   $NET.1
EOF2
}

# knot_start NAME...: launch the named (written) servers in parallel, then wait.
knot_start() {
  local n
  for n in "$@"; do knot_launch "$n"; done
  for n in "$@"; do knot_wait "$n"; done
}

# harness_start_hierarchy: root, TLD and customer servers.
harness_start_hierarchy() {
  harness_write_hints
  knot_write_conf root "$NET.1" .
  knot_write_conf tld "$NET.2" example. test.
  knot_write_conf customer "$NET.3" customer.example. oob.example.
  knot_start root tld customer
}

# harness_start_gslb: the ECS-aware GSLB for cdn.test.
harness_start_gslb() {
  knot_write_conf gslb "$NET.4" cdn.test.
  knot_start gslb
}

# harness_start_all: hierarchy and GSLB, all in parallel (about 0.2 s).
# IT_SIGN_CHAIN=1: signed, with three more zones (see the top of this file and
# harness_sign_chain; about 0.3 s more: keys, offline signing, knotd signing).
harness_start_all() {
  harness_write_hints
  if [ "${IT_SIGN_CHAIN:-0}" = 1 ]; then
    # a test may leave a zone out (e.g. cdn.test.: its delegation is then insecure)
    KNOT_SIGN_ZONES=${KNOT_SIGN_ZONES:-". example. test. customer.example. cdn.test."}
    knot_write_conf root "$NET.1" .
    knot_write_conf tld "$NET.2" example. test.
    knot_write_conf customer "$NET.3" customer.example. oob.example. \
      insecure.example. forged.example. expired.example. stale.example.
    knot_write_conf gslb "$NET.4" cdn.test.
    harness_sign_chain
    knot_start root tld customer gslb
    return
  fi
  knot_write_conf root "$NET.1" .
  knot_write_conf tld "$NET.2" example. test.
  knot_write_conf customer "$NET.3" customer.example. oob.example.
  knot_write_conf gslb "$NET.4" cdn.test.
  knot_start root tld customer gslb
}

# harness_sign_chain: for IT_SIGN_CHAIN=1, between knot_write_conf and
# knot_start (knotd is not running yet; its zone files are in IT_TMP).
#   * every zone in KNOT_SIGN_ZONES gets a CSK (ECDSAP256SHA256) in its server's
#     KASP database (keymgr generate), and its DS (SHA-256, `keymgr ds`) goes
#     into the parent's zone file; knotd signs at load (RRSIGs valid from 90
#     minutes ago for 14 days).  Keys made before the start are also what lets
#     mod-geoip load them for its online signatures;
#   * zones/example.chain.zone.in goes into example.: the delegations of
#     insecure., forged. and expired.example. (to the customer's server);
#   * forged.example. and expired.example. are signed offline (harness_presign)
#     and their DS added to example.
# Skips the test (77) when keymgr or ldnsutils are missing.
harness_sign_chain() {
  local b z conf
  for b in keymgr ldns-keygen ldns-signzone; do
    command -v "$b" >/dev/null 2>&1 || skip "$b not installed (tools/deps.sh installs it): IT_SIGN_CHAIN needs it"
  done
  local -A server=([.]=root [example.]=tld [test.]=tld [customer.example.]=customer [cdn.test.]=gslb)
  local -A parent=([example.]=root/root.zone [test.]=root/root.zone
                   [customer.example.]=tld/example.zone [cdn.test.]=tld/test.zone)
  it_subst "$IT_LIB_DIR/zones/example.chain.zone.in" "$IT_TMP/example.chain.zone"
  cat "$IT_TMP/example.chain.zone" >> "$IT_TMP/knot-tld/example.zone"
  for z in $KNOT_SIGN_ZONES; do
    [ -n "${server[$z]:-}" ] || die "IT_SIGN_CHAIN: no server for zone $z in KNOT_SIGN_ZONES"
    conf=${IT_CONF[${server[$z]}]}
    keymgr -c "$conf" "$z" generate algorithm=ecdsap256sha256 ksk=yes zsk=yes >/dev/null 2>"$IT_TMP/keymgr.err" ||
      die "keymgr generate $z failed" "$(cat "$IT_TMP/keymgr.err")"
    [ -n "${parent[$z]:-}" ] || continue
    keymgr -c "$conf" "$z" ds 2>"$IT_TMP/keymgr.err" |
      awk '$2 == "DS" && $5 == 2 {print $1, 3600, "IN", "DS", $3, $4, $5, $6}' >> "$IT_TMP/knot-${parent[$z]}"
    grep -q "^$z 3600 IN DS " "$IT_TMP/knot-${parent[$z]}" ||
      die "keymgr ds $z printed no SHA-256 DS" "$(cat "$IT_TMP/keymgr.err")"
  done
  harness_presign forged.example.
  harness_presign expired.example.
  harness_presign stale.example.
}

# harness_presign ZONE: sign the customer server's copy of ZONE (forged. or
# expired.example.) offline with ldns-signzone (a new ECDSAP256SHA256 key with
# the SEP flag, NSEC, the DNSKEY added), break it as zones/ZONE.zone.in says,
# put it back where knotd loads it (dnssec-signing off: served as it is) and
# add ZONE's DS to example.zone.  The keys and the intermediate files stay in
# knot-customer/presign/ (PARTDNS_KEEP=1 keeps them for a look).
harness_presign() {
  local z=$1 file=${1%.} dir=$IT_TMP/knot-customer now k k2
  local keys=$dir/presign
  mkdir -p "$keys"
  now=$(date +%s)
  k=$(cd "$keys" && ldns-keygen -a ECDSAP256SHA256 -k "$z" 2>&1) || die "ldns-keygen $z failed" "$k"
  cat "$keys/$k.ds" >> "$IT_TMP/knot-tld/example.zone"
  # current signatures: valid from an hour ago for 30 days
  ldns-signzone -i $((now - 3600)) -e $((now + 30 * 86400)) -f "$keys/$file.cur" "$dir/$file.zone" "$keys/$k" ||
    die "ldns-signzone $z failed"
  case $z in
    forged.example.)
      # a second key, not added to the zone (-d), signs the zone once more: its
      # RRSIG for wrongkey's A replaces the good one
      k2=$(cd "$keys" && ldns-keygen -a ECDSAP256SHA256 "$z" 2>&1) || die "ldns-keygen $z failed" "$k2"
      ldns-signzone -d -i $((now - 3600)) -e $((now + 30 * 86400)) -f "$keys/$file.other" \
        "$dir/$file.zone" "$keys/$k2" || die "ldns-signzone $z (second key) failed"
      awk -v z="$z" '
        NR == FNR { if ($4 == "RRSIG") other[$1 " " $5] = $0; next }
        $4 == "RRSIG" && $5 == "A" && $1 == "www." z {
          # the signature, not its length, changes: one base64 digit swapped
          c = substr($NF, 10, 1) == "A" ? "B" : "A"
          $NF = substr($NF, 1, 9) c substr($NF, 11) }
        $4 == "RRSIG" && $5 == "A" && $1 == "nosig." z { next }
        $4 == "RRSIG" && $5 == "A" && $1 == "wrongkey." z { $0 = other[$1 " " $5] }
        { print }' "$keys/$file.other" "$keys/$file.cur" > "$keys/$file.signed" ;;
    expired.example.)
      ldns-signzone -i $((now - 30 * 86400)) -e $((now - 10 * 86400)) -f "$keys/$file.past" \
        "$dir/$file.zone" "$keys/$k" || die "ldns-signzone $z (past) failed"
      ldns-signzone -i $((now + 10 * 86400)) -e $((now + 40 * 86400)) -f "$keys/$file.future" \
        "$dir/$file.zone" "$keys/$k" || die "ldns-signzone $z (future) failed"
      # www's RRSIGs (A, NSEC) become the expired ones, notyet's the future
      # ones; the apex's (SOA, NS, DNSKEY, NSEC) stay current, so the zone's
      # servers and keys validate and only those names are bogus
      awk -v z="$z" '
        FILENAME ~ /\.past$/   { if ($4 == "RRSIG") past[$1 " " $5] = $0; next }
        FILENAME ~ /\.future$/ { if ($4 == "RRSIG") future[$1 " " $5] = $0; next }
        $4 == "RRSIG" && $1 == "www." z    { $0 = past[$1 " " $5] }
        $4 == "RRSIG" && $1 == "notyet." z { $0 = future[$1 " " $5] }
        { print }' "$keys/$file.past" "$keys/$file.future" "$keys/$file.cur" > "$keys/$file.signed" ;;
    stale.example.)
      # everything, the apex included, from a window that ended 10 days ago
      ldns-signzone -i $((now - 30 * 86400)) -e $((now - 10 * 86400)) -f "$keys/$file.signed" \
        "$dir/$file.zone" "$keys/$k" || die "ldns-signzone $z (past) failed" ;;
    *) die "harness_presign: no recipe for $z" ;;
  esac
  [ "$(grep -c RRSIG "$keys/$file.signed")" -gt 3 ] || die "harness_presign $z: no signed zone" "$(head -n 5 "$keys/$file.signed")"
  cp "$keys/$file.signed" "$dir/$file.zone"
}

# harness_root_key FILE: the signed root's DNSKEY RRset, as dig prints it,
# into FILE: the trust anchor for partdns (resolver.trust_anchor) and unbound
# (IT_UNBOUND_TA).  Waits for knotd to publish it (IT_SIGN_ROOT makes its keys
# at load); dies when it does not.
harness_root_key() {
  local i
  for ((i = 0; i < 50; i++)); do
    dig +time=1 +tries=1 +norecurse @"$NET.1" . DNSKEY +noall +answer > "$1" 2>/dev/null
    grep -q DNSKEY "$1" && return 0
    sleep 0.1
  done
  die "the signed root published no DNSKEY"
}

# harness_start_unbound: the reference ECS recursor on NET.5@53.  With
# IT_UNBOUND_TA=FILE (e.g. from harness_root_key) it also validates with that
# trust anchor and sends RFC 8914 EDEs (a reference validator for the harness's
# signed chain).
harness_start_unbound() {
  local dir=$IT_TMP/unbound modules="subnetcache iterator"
  mkdir -p "$dir"
  [ -e "$IT_TMP/root.hints" ] || harness_write_hints
  [ -z "${IT_UNBOUND_TA:-}" ] || modules="subnetcache validator iterator"
  {
  cat <<EOF2
server:
  do-daemonize: no
  chroot: ""
  username: ""
  directory: "$dir"
  pidfile: "$dir/unbound.pid"
  logfile: "$dir/unbound.log"
  use-syslog: no
  verbosity: 1
  interface: $NET.5@53
  port: 53
  num-threads: 1
  do-ip6: no
  do-not-query-localhost: no
  local-zone: "test." transparent
  root-hints: "$IT_TMP/root.hints"
  access-control: 127.0.0.0/8 allow
  module-config: "$modules"
  send-client-subnet: $NET.4
  client-subnet-always-forward: yes
  max-client-subnet-ipv4: 32
  qname-minimisation: no
  # test. is a built-in local zone (RFC 6761): resolve it like any other
  local-zone: "test." nodefault
EOF2
  [ -z "${IT_UNBOUND_TA:-}" ] || cat <<EOF2
  # IT_UNBOUND_TA: validate; say why an answer is bogus (EDE, and in the log)
  trust-anchor-file: "$IT_UNBOUND_TA"
  ede: yes
  val-log-level: 2
EOF2
  cat <<EOF2
remote-control:
  control-enable: yes
  control-use-cert: no
  control-interface: "$dir/unbound.ctl"
EOF2
  } > "$dir/unbound.conf"
  unbound -d -c "$dir/unbound.conf" > "$dir/stdout.log" 2>&1 &
  IT_PIDS[unbound]=$!
  # localhost. is a built-in local zone: answers without recursing
  it_wait_dns 5 @"$NET.5" localhost. A ||
    die "unbound on $NET.5 did not answer within 5 s" "$(tail -n 5 "$dir/unbound.log" "$dir/stdout.log" 2>/dev/null)"
}

# hostile_start: the lying authority for hostile.example. (hostile.c; the TLD
# delegates to it) on NET.6@53, a daemon like the others; waits until it
# answers good.hostile.example A.
hostile_start() {
  local bin=${HOSTILE_BIN:-$PARTDNS_SRC/build/tests/integration/hostile} dir=$IT_TMP/hostile i
  [ -x "$bin" ] || die "hostile server not found: $bin (build target hostile, or set HOSTILE_BIN)"
  mkdir -p "$dir"
  "$bin" "$NET.6" 53 hostile.example. > "$dir/hostile.log" 2>&1 &
  IT_PIDS[hostile]=$!
  for ((i = 0; i < 100; i++)); do
    dig +time=1 +tries=1 +norecurse @"$NET.6" good.hostile.example A 2>/dev/null |
      grep -q 'IN[[:space:]]*A[[:space:]]*192\.0\.2\.7$' && return 0
    sleep 0.05
  done
  die "hostile server on $NET.6 did not answer within 5 s" "$(tail -n 5 "$dir/hostile.log" 2>/dev/null)"
}

# ---------------------------------------------------------------- what the servers saw

# knot_raw_count NAME: mod-stats query count of the running incarnation.
knot_raw_count() {
  local n
  n=$(knotc -s "$IT_TMP/knot-$1/knot.sock" stats mod-stats.server-operation 2>/dev/null |
      awk -F' = ' '/server-operation\[query\]/ {print $2}')
  echo "${n:-0}"
}

# knot_query_count NAME: queries the server has answered since it first
# started, its harness probes included (compare two readings).
knot_query_count() { echo $((IT_STATS_BASE[$1] + $(knot_raw_count "$1"))); }

# knot_flush NAME...: make the servers' query logs complete (stops and
# restarts them: see the top of this file).  Call it in the test's own shell,
# never inside $(...), and only when no query is in flight.
knot_flush() {
  [ "$IT_HAVE_DNSTAP" = 1 ] || return 0
  local n dir
  declare -A total=()
  for n in "$@"; do
    total[$n]=$(knot_query_count "$n")
    kill -TERM "${IT_PIDS[$n]}" 2>/dev/null
  done
  for n in "$@"; do
    it_wait_exit "${IT_PIDS[$n]}" 3
    unset "IT_PIDS[$n]"
    dir=$IT_TMP/knot-$n
    touch "$dir/queries.txt"
    if [ -s "$dir/queries.tap" ]; then
      kdig -G "$dir/queries.tap" 2>/dev/null | awk '
        function emit() { if (q != "") print q, t, e; q = ""; t = ""; e = "-" }
        /^;; ->>HEADER<<-/      { emit(); inq = 0 }
        /^;; CLIENT-SUBNET:/    { split($3, p, "/"); e = p[1] "/" p[2] }
        /^;; QUESTION SECTION:/ { inq = 1; next }
        inq && /^;; [^ ]/       { q = $2; t = $4; inq = 0 }
        END { emit() }' >> "$dir/queries.txt"
      rm -f "$dir/queries.tap"
    fi
  done
  knot_start "$@"
  # the new incarnation's readiness probes are not queries of the test's
  for n in "$@"; do
    IT_STATS_BASE[$n]=$((total[$n] - $(knot_raw_count "$n")))
  done
}

# knot_queries NAME: the server's query log up to its last knot_flush, one
# line per query: QNAME QTYPE ECS, ECS being ADDR/SOURCE-PREFIX or "-".
knot_queries() {
  [ -e "$IT_TMP/knot-$1/queries.txt" ] || return 0
  grep -v '^harness-probe\.' "$IT_TMP/knot-$1/queries.txt" || true
}

# knot_mark NAME: the number of lines of knot_queries now; with knot_since
# a test looks only at what came later.
knot_mark() { knot_queries "$1" | wc -l; }

# knot_since NAME MARK: the lines of knot_queries after MARK.
knot_since() { knot_queries "$1" | tail -n +$(($2 + 1)); }

# The GSLB's shorthands.
gslb_query_count() { knot_query_count gslb; }
gslb_flush() { knot_flush gslb; }
gslb_queries() { knot_queries gslb; }

# ---------------------------------------------------------------- partdns

# pd_write_conf FILE: a partdns config for this harness.  Overrides (env):
#   PD_ALLOW        YAML flow list for server.allow   [ 127.0.0.0/8, "::1/128" ]
#   PD_UNMATCHED    partitions.unmatched              common
#   PD_POLICY       edns.policy                       iterate
#   PD_FORWARD      YAML flow list for edns.forward   (unset: key omitted)
#   PD_TRUSTED_ECS  YAML flow list for edns.trusted_ecs  []
#   PD_THREADS      server.threads                    2
pd_write_conf() {
  local f=$1
  # defaults set here: quotes inside ${X:-...} in a here-document are removed
  local allow=${PD_ALLOW:-'[ 127.0.0.0/8, "::1/128" ]'}
  local listen="[ \"$PD_ADDR@$PD_PORT\" ]"
  [ "$IT_HAVE_IPV6" = 0 ] || listen="[ \"$PD_ADDR@$PD_PORT\", \"::1@$PD_PORT\" ]"
  mkdir -p "$IT_TMP/store"
  {
    cat <<EOF
# partdns config written by tests/integration/lib.sh for $IT_NAME
server:
  listen: $listen
  threads: ${PD_THREADS:-2}
  allow: $allow
  control: $IT_TMP/control.sock
  store: $IT_TMP/store
  # the tests start partdns as root and let it stay root (test_privs.sh drops)
  user: ${PD_USER:-root}
resolver:
  root_hints: $IT_TMP/root.hints
  # test. is an RFC 6761 name libunbound serves locally by default; our
  # private hierarchy uses it, so let it through.
  options: { "do-not-query-localhost": "no", "do-ip6": "no", "local-zone": "test. transparent" }
edns:
  policy: ${PD_POLICY:-iterate}
  timeout_ms: 1500
  trusted_ecs: ${PD_TRUSTED_ECS:-[]}
EOF
    [ -z "${PD_FORWARD:-}" ] || echo "  forward: $PD_FORWARD"
    cat <<EOF
partitions:
  unmatched: ${PD_UNMATCHED:-common}
  list:
    - { name: nanjing, label: Nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24, 10.1.0.0/16, 100.64.1.0/24 ] }
    - { name: suzhou,  label: Suzhou,  mapped: 198.51.100.2, prefixes: [ 127.0.2.0/24, 10.2.0.0/16, 100.64.2.0/24 ] }
    - { name: wuxi,    label: Wuxi,    mapped: 198.51.100.3, prefixes: [ 127.0.3.0/24, 10.3.0.0/16, "::1/128" ] }
EOF
  } > "$f"
  PD_CONF=$f
}

# pd_require_bins: partdns and partdnsctl must have been built.
pd_require_bins() {
  [ -x "$PARTDNS_BIN" ] || die "partdns binary not found: $PARTDNS_BIN (build it, or set PARTDNS_BIN)"
  [ -x "$PARTDNSCTL_BIN" ] || die "partdnsctl binary not found: $PARTDNSCTL_BIN (build it, or set PARTDNSCTL_BIN)"
}

# pdctl ARGS...: partdnsctl on the current config; output on stdout, dies on error.
pdctl() {
  local out
  if ! out=$("$PARTDNSCTL_BIN" -c "$PD_CONF" "$@" 2>&1); then
    die "partdnsctl $* failed" "$out"
  fi
  [ -z "$out" ] || printf '%s\n' "$out"
}

# partdns_start CONF: start the daemon, wait until it answers (<= 20 s: an
# ASan build starts slowly).  Dies with its log if it exits or never answers.
partdns_start() {
  pd_require_bins
  PD_CONF=$1
  "$PARTDNS_BIN" -c "$PD_CONF" >> "$IT_TMP/partdns.log" 2>&1 &
  PD_PID=$!
  local i
  for ((i = 0; i < 400; i++)); do
    if ! partdns_alive; then
      wait "$PD_PID"; local st=$?
      PD_PID=""
      die "partdns exited during start-up (status $st)" "$(tail -n 20 "$IT_TMP/partdns.log")"
    fi
    # any answer (even REFUSED) means the listener is up
    dig +time=1 +tries=1 -b 127.0.0.1 @"$PD_ADDR" -p "$PD_PORT" localhost. A >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  die "partdns did not answer on $PD_ADDR@$PD_PORT within 20 s" "$(tail -n 20 "$IT_TMP/partdns.log")"
}

# partdns_stop [SECONDS]: SIGTERM, wait (default 5 s), SIGKILL if needed.
# Sets PD_EXIT_STATUS (137 = had to be killed) and PD_STOP_MS.
partdns_stop() {
  local limit=${1:-5} t0 t1
  [ -n "$PD_PID" ] || return 0
  t0=$(date +%s%N)
  it_stop_pid "$PD_PID" "$limit"
  PD_EXIT_STATUS=$IT_STOP_STATUS
  t1=$(date +%s%N)
  PD_STOP_MS=$(((t1 - t0) / 1000000))
  PD_PID=""
}

# partdns_alive: 0 if the daemon process is still running (not a zombie).
# pd_threads_block_signals PID: "ok" when every thread of PID but the main
# one blocks SIGHUP, SIGINT and SIGTERM (the main thread takes them with
# sigtimedwait, which unblocks them while it waits; one delivered to another
# thread that does not block it ends the process), else the threads that do
# not, with their SigBlk masks.
pd_threads_block_signals() {
  local f m bad=""
  for f in /proc/"$1"/task/*/status; do
    [ "$f" != "/proc/$1/task/$1/status" ] || continue
    m=$(awk '/^SigBlk:/ {print $2}' "$f" 2>/dev/null) || continue
    [ -n "$m" ] || continue
    (( (16#$m & 16#4003) == 16#4003 )) || bad+="$(awk '/^Name:/ {print $2}' "$f")($m) "
  done
  echo "${bad:-ok}"
}

partdns_alive() {
  [ -n "$PD_PID" ] && it_pid_running "$PD_PID"
}

# pd_dig CLIENT ARGS...: dig at partdns from source address CLIENT (an IPv6
# CLIENT, i.e. ::1, asks partdns' ::1 listener).
pd_dig() {
  local client=$1 server=$PD_ADDR
  shift
  case $client in *:*) server=::1 ;; esac
  dig +time="$PD_DIG_TIME" +tries=1 -b "$client" @"$server" -p "$PD_PORT" "$@" 2>&1
}

# dig_a CLIENT NAME [DIG-ARGS...]: the A records of the answer, sorted, one a
# line; "NO-RESPONSE" when dig got nothing.
dig_a() {
  local client=$1 name=$2 out
  shift 2
  if ! out=$(pd_dig "$client" "$name" A +noall +answer "$@"); then
    echo "NO-RESPONSE"
    return 0
  fi
  printf '%s\n' "$out" | awk '$4 == "A" {print $5}' | sort
}

# dig_rcode CLIENT NAME [TYPE [DIG-ARGS...]]: the response's status.
dig_rcode() {
  local client=$1 name=$2 type=${3:-A} out
  shift 2; [ $# -eq 0 ] || shift
  if ! out=$(pd_dig "$client" "$name" "$type" "$@"); then
    echo "NO-RESPONSE"
    return 0
  fi
  printf '%s\n' "$out" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p' | head -n 1
}

# dig_ttl CLIENT NAME TYPE: TTL of the last TYPE record in the answer.
dig_ttl() {
  pd_dig "$1" "$2" "$3" +noall +answer | awk -v t="$3" '$4 == t {ttl = $2} END {print ttl}'
}
