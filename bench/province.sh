#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The province benchmark: steering accuracy, upstream load and cache entries
# of partdns against the alternatives, on one simulated province, with a chart.
#
# Usage (as root):
#   bench/province.sh [--quick] [BUILD_DIR]      BUILD_DIR defaults to build/
# The default run takes about 10-15 minutes on 2 cores; --quick (a smaller
# population, one throughput round) about 2-3.  The markdown report goes to
# stdout, progress to stderr, the chart to bench/province.svg
# (BENCH_CHART=FILE elsewhere, BENCH_CHART= none).
#
# Everything runs in a private network namespace (unshare -n; BENCH_NETNS=0
# runs on the host's loopback instead, adding and removing the routes
# below), so nothing can leave the machine and no port of another run
# (the integration tests on 127.10.N.x, ports 5301+) is touched:
#   * lo up; the client ranges made local: `ip route add local PREFIX dev lo`
#     for 10/8, 172.16/12, 192.168/16, 100.64/10, 2001:db8::/32 and fd00::/8
#     (127/8 is local already);
#   * the province: partdns-gen's 13 cities (--seed 1, 400 IPv4 and 60 IPv6
#     prefixes per city: public, private, CGNAT, IPv6).  The generated public
#     prefixes are real public space, which this machine must not route to
#     itself: each city's public clients come from a loopback stand-in,
#     127.(64+i).0.0/16, added to its partition (and to the GSLB's and the
#     other systems' tables alike).  Clients (bench/province/province.py gen):
#     2400 IPv4 /24s and 240 IPv6 /56s drawn from the cities' stand-in,
#     private, CGNAT, documentation and ULA prefixes, 1-9 addresses each
#     (about 11,600 IPv4 and 1,250 IPv6 addresses, 13 cities of unequal size);
#   * an authoritative hierarchy of knotd on 127.30.0.1-4 port 53: the root,
#     example./test., customer.example. (the CDN customers' names
#     BENCH_NAMES, each `nK.customer.example CNAME nK.cdn.test.`, and the
#     normal name www.customer.example) and the GSLB for cdn.test.: knotd's
#     mod-geoip in subnet mode, one node per city (203.0.113.1-13), generated
#     from the same table in two variants:
#       full:   every city's mapped /32, mapped6 /56 and every prefix of it,
#               a prefix longer than /24 (/56) as the /24 (/56) holding it
#               (a CDN with a perfect geo-IP database, at the grain ECS asks);
#       mapped: only the mapped addresses (what no geo-IP database can place,
#               private and CGNAT users, is unknown to it);
#     both place the resolvers' own address (127.0.0.1) in Nanjing, as a CDN
#     places a province LocalDNS without ECS; anything else gets 192.0.2.1.
#     Every knotd has ECS on (the reply echoes a query's ECS) and logs every
#     reply with mod-dnstap; `kdig -G` decodes it (the integration harness's
#     method), so every count below is read from what the servers answered;
#   * the systems under test, on 127.30.1.1 and ::1 port 53, each from a cold
#     cache (1 thread each):
#       ub    Unbound, iterator only, no ECS (the province LocalDNS of today);
#       ub24  Unbound subnetcache, ECS to the GSLB with the client's /24 (/56)
#             (RFC 7871 as deployed; max-ecs-tree-size raised so that it can
#             keep every subnet: its best case);
#       pdns  PowerDNS Recursor with addProxyMapping: every prefix of a city
#             mapped to the city's mapped address, ECS /32 of that to the GSLB;
#       dd    dnsdist, SetECSAction(the city's mapped /32) per city (IPv6
#             clients too), in front of Unbound subnetcache (127.30.1.2, ECS
#             up to /32);
#       pdi   partdns, cdn.test. flagged --subtree, policy iterate;
#       pdf   partdns, the same with policy forward to an Unbound subnetcache
#             (127.30.1.2, ECS up to /32) that asks the GSLB;
#     Unbound and PowerDNS run with qname minimisation off; partdns runs with
#     its defaults (libunbound's: on; BENCH_PD_OPTIONS changes that);
#   * per GSLB variant, per concurrency (1 and BENCH_INFLIGHT=32 queries in
#     flight: bench/province/pclient.c, one socket per query, bound to the
#     client's own address), per system: fresh authorities, the system
#     started, every client asks every name, in random order, in phases of
#     growing numbers of client networks (BENCH_PHASES: the chart's x axis);
#     after each phase the system's cache entries are read and the
#     authorities' logs flushed (knotd restarted: libfstrm writes its file
#     at exit);
#   * then the cache-hit measurement: all systems up at once (127.30.2.x),
#     warmed with a steered name (n1.customer.example), a normal one
#     (www.customer.example, an A) and a normal one of the steered one's
#     shape (alias.customer.example CNAME p1.plain.test.) asked from one
#     client (10.x, Nanjing); in
#     BENCH_ROUNDS rounds, system order rotating, each name at each of
#     BENCH_RATES qps offered (server CPU per answer from
#     /proc/PID/task/*/schedstat, dnsdist's plus its Unbound's) and at
#     saturation (dnsperf -q 100 -c 4: QPS and CPU per answer).
#     Servers on CPU 1, dnsperf on CPU 0; reported as per-round medians
#     (min–max) and medians of per-round ratios (bench/mix.sh's style).
#
# What it reports per system and run (province.py run): steering accuracy
# (answers that are the client's own city's node, also per client class),
# replies of the GSLB to queries with ECS (and per CDN name) and without,
# distinct ECS values the GSLB saw, distinct client or private addresses
# (ECS or source) that reached any authority, ECS at servers other than the
# GSLB, cache entries held for the CDN names (partdns: the cities' entries,
# the gauge partdns_partition_cache_entries of server.metrics, which
# `partdnsctl stats` does not print; Unbound without ECS: the GSLB
# names' A RRsets in dump_cache; PowerDNS: ECS-tagged records of those names
# in dump-cache; Unbound subnetcache, which cannot dump its ECS cache: the
# proxy "distinct <name, ECS> answers the GSLB sent it"), answers that were
# not NOERROR.
#
# Knobs (defaults in brackets; --quick changes the starred ones):
#   BENCH_V4_NETS [2400*]  BENCH_V6_NETS [240*]  BENCH_PHASES ["30,120,480"*]
#   BENCH_NAMES [4: n1..n4]  BENCH_INFLIGHT [32]  BENCH_SYSTEMS ["ub ub24 pdns dd pdi pdf"]
#   BENCH_VARIANTS ["full mapped"]  BENCH_ROUNDS [5*]  BENCH_RATES ["40000"]
#   BENCH_RATE_SECS [2*]  BENCH_SAT_SECS [3*]  BENCH_HIT_SYSTEMS ["ub ub24 pdns dd pdi"]
#   BENCH_CHART [bench/province.svg]  BENCH_NETNS [1]  PARTDNS_KEEP [0: 1 keeps the work dir]
#   BENCH_LABEL ["": text for the report's build line]
#   BENCH_CALLGRIND [1: with valgrind installed, partdns' instructions per
#               steered and normal hit]  BENCH_CG_QUERIES [20000*]
#   BENCH_MAX_OTHER [15: a hit measurement during which other processes used
#               more than this % of a CPU is taken again, up to twice]
#   BENCH_PD_OPTIONS ["": more libunbound options for partdns, e.g. '"qname-minimisation": "no"']

set -u -o pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0
ARGS=("$@")
if [ "${1:-}" = --quick ]; then QUICK=1; shift; fi
BUILD_DIR=${1:-$SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac

pmsg() { printf '[province] %s\n' "$*" >&2; }
pdie() { printf '[province] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || pdie "run as root: port 53, local routes, a network namespace"

# ------------------------------------------------------------ the namespace
if [ "${BENCH_NETNS:-1}" = 1 ] && [ -z "${PROVINCE_NETNS:-}" ]; then
  command -v unshare >/dev/null || pdie "unshare not found (util-linux); or BENCH_NETNS=0"
  PROVINCE_NETNS=1 exec unshare -n -- bash "$0" "${ARGS[@]}"
fi

if [ "$QUICK" = 1 ]; then
  : "${BENCH_V4_NETS:=300}" "${BENCH_V6_NETS:=30}" "${BENCH_PHASES:=20,80}"
  : "${BENCH_ROUNDS:=1}" "${BENCH_RATE_SECS:=1}" "${BENCH_SAT_SECS:=2}"
fi
V4_NETS=${BENCH_V4_NETS:-2400}
V6_NETS=${BENCH_V6_NETS:-240}
PHASES=${BENCH_PHASES:-30,120,480}
NNAMES=${BENCH_NAMES:-4}
INFLIGHT=${BENCH_INFLIGHT:-32}
read -r -a SYSTEMS <<< "${BENCH_SYSTEMS-ub ub24 pdns dd pdi pdf}"
read -r -a VARIANTS <<< "${BENCH_VARIANTS:-full mapped}"
read -r -a HIT_SYSTEMS <<< "${BENCH_HIT_SYSTEMS-ub ub24 pdns dd pdi}"
ROUNDS=${BENCH_ROUNDS:-5}
read -r -a RATES <<< "${BENCH_RATES:-40000}"
RATE_SECS=${BENCH_RATE_SECS:-2}
SAT_SECS=${BENCH_SAT_SECS:-3}
CHART=${BENCH_CHART-$SRC/bench/province.svg}
MAX_OTHER=${BENCH_MAX_OTHER:-15}
NCPU=$(nproc)

PARTDNS_BIN=$BUILD_DIR/resolver/partdns
PARTDNSCTL_BIN=$BUILD_DIR/tools/ctl/partdnsctl
GEN_BIN=$BUILD_DIR/tools/gen/partdns-gen
for b in "$PARTDNS_BIN" "$PARTDNSCTL_BIN" "$GEN_BIN"; do
  [ -x "$b" ] || pdie "no $b: build first (cmake --build ${BUILD_DIR})"
done
for b in knotd knotc kdig dig unbound unbound-control pdns_recursor rec_control dnsdist dnsperf python3 cc ip taskset curl; do
  command -v "$b" >/dev/null 2>&1 || pdie "$b not installed (tools/deps.sh installs it)"
done
[ -z "$CHART" ] || command -v gnuplot >/dev/null 2>&1 || pdie "gnuplot not installed (tools/deps.sh: gnuplot-nox)"
KNOT_MODULE_DIR=$(ls -d /usr/lib/*/knot/modules-* 2>/dev/null | head -n 1)
[ -e "$KNOT_MODULE_DIR/dnstap.so" ] && [ -e "$KNOT_MODULE_DIR/geoip.so" ] ||
  pdie "knot-module-dnstap and knot-module-geoip are needed (tools/deps.sh)"

. "$SRC/bench/lib.sh"

# what was built, read before the runs (others may edit or commit meanwhile):
# the last commit before the binary was linked, and whether resolver/ files
# changed in the tree are older than the binary (so may be in it)
SRCDIR=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
if [ -n "$SRCDIR" ] && git -C "$SRCDIR" rev-parse --short HEAD >/dev/null 2>&1; then
  BUILT="git $(git -C "$SRCDIR" log -1 --format=%h --before="@$(stat -c %Y "$PARTDNS_BIN")" HEAD)"
  [ "$BUILT" = "git $(git -C "$SRCDIR" rev-parse --short HEAD)" ] || BUILT+=" (the last commit before the build; HEAD is now $(git -C "$SRCDIR" rev-parse --short HEAD))"
  changed=$(git -C "$SRCDIR" status --porcelain -- resolver 2>/dev/null | awk '{print $NF}')
  for f in $changed; do
    if [ "$SRCDIR/$f" -ot "$PARTDNS_BIN" ]; then BUILT+=", resolver/ modified"; break; fi
  done
  [ -z "$changed" ] || [[ "$BUILT" == *modified ]] || BUILT+=" (resolver/ changed in the tree after the build: not in this binary)"
else
  BUILT="source ${SRCDIR:-unknown}"
fi

PY=$SRC/bench/province/province.py

W=$(mktemp -d "${TMPDIR:-/tmp}/partdns-province.XXXXXX") || pdie "mktemp"
declare -A PIDS=()     # tag -> pid of every daemon started
ROUTES=()              # routes added (host mode)

cleanup() {
  local rc=$? t r
  trap - EXIT
  trap '' PIPE
  for t in "${!PIDS[@]}"; do kill -TERM "${PIDS[$t]}" 2>/dev/null; done
  for t in "${!PIDS[@]}"; do stop_wait "${PIDS[$t]}" 5; done
  for r in "${ROUTES[@]}"; do
    case $r in *:*) ip -6 route del local "$r" dev lo 2>/dev/null ;; *) ip route del local "$r" dev lo 2>/dev/null ;; esac
  done
  if [ "${PARTDNS_KEEP:-0}" = 1 ] || [ "$rc" -ne 0 ]; then pmsg "work dir kept: $W"; else rm -rf "$W"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# stop_wait PID SECONDS: wait for PID to exit, SIGKILL after SECONDS.
stop_wait() {
  local pid=$1 i
  for ((i = 0; i < $2 * 20; i++)); do
    { kill -0 "$pid" && [ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ]; } 2>/dev/null || break
    sleep 0.05
  done
  [ "$i" -lt $(($2 * 20)) ] || kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
# stop TAG: SIGTERM the daemon TAG and wait for it.
stop() {
  local p=${PIDS[$1]:-}
  [ -n "$p" ] || return 0
  kill -TERM "$p" 2>/dev/null
  stop_wait "$p" 10
  unset "PIDS[$1]"
}

# ------------------------------------------------------------ loopback set-up
if [ -n "${PROVINCE_NETNS:-}" ]; then
  ip link set lo up || pdie "cannot bring lo up in the namespace"
  pmsg "in a private network namespace"
fi
add_route() {
  case $1 in
    *:*) ip -6 route add local "$1" dev lo ;;
    *)   ip route add local "$1" dev lo ;;
  esac || pdie "ip route add local $1 dev lo failed"
  ROUTES+=("$1")
}
# IPv6 clients bind addresses of a local route (IP_FREEBIND / this sysctl, per namespace)
[ -z "${PROVINCE_NETNS:-}" ] || sysctl -qw net.ipv6.ip_nonlocal_bind=1 2>/dev/null
HAVE6=1
grep -q '^0\{31\}1 .* lo$' /proc/net/if_inet6 2>/dev/null || HAVE6=0

cc -O2 -std=c11 -Wall -o "$W/pclient" "$SRC/bench/province/pclient.c" || pdie "cannot build pclient"

# ------------------------------------------------------------ the province
D=$W/data
mkdir -p "$D"
"$GEN_BIN" --seed 1 --prefixes-per-city 400 --v6-per-city 60 -o "$D/table.yaml" || pdie "partdns-gen failed"
"$GEN_BIN" --seed 1 --prefixes-per-city 400 --v6-per-city 60 --format plain -o "$D/table.plain" || pdie "partdns-gen failed"
NAMES=() GSLB_NAMES=()
for ((i = 1; i <= NNAMES; i++)); do NAMES+=("n$i.customer.example"); GSLB_NAMES+=("n$i.cdn.test"); done
POP=$(python3 "$PY" gen "$D" "$D/table.yaml" "$D/table.plain" --names "$(IFS=,; echo "${NAMES[*]}")" \
      --gslb-names "$(IFS=,; echo "${GSLB_NAMES[*]}")" --v4-nets "$V4_NETS" --v6-nets "$V6_NETS" --phases "$PHASES") ||
  pdie "province.py gen failed"
pmsg "population: $POP"
NPH=$(wc -l < "$D/phases.tsv")
if [ "$HAVE6" = 0 ]; then
  pmsg "no ::1 on lo: IPv6 clients left out"
  for f in "$D"/phase-*.q; do grep -v ':' "$f" > "$f.4"; mv "$f.4" "$f"; done
fi
if [ -z "${PROVINCE_NETNS:-}" ]; then
  # on the host, a client range must not hold an address of a real interface
  # (this machine's own ULA, say): the local route would swallow its traffic
  clash=$(ip -o addr show 2>/dev/null | awk '$2 != "lo" {print $2, $4}' |
    python3 -c 'import ipaddress, sys
routes = [ipaddress.ip_network(l.strip()) for l in open(sys.argv[1]) if l.strip()]
for line in sys.stdin:
    dev, a = line.split()
    ip = ipaddress.ip_interface(a).ip
    for r in routes:
        if ip.version == r.version and ip in r:
            print("%s holds %s (%s)" % (r, ip, dev))' "$D/routes.txt")
  [ -z "$clash" ] || pdie "BENCH_NETNS=0: a client range overlaps this host's own addresses: $clash; run in the namespace (the default)"
fi
while read -r r; do
  case $r in *:*) [ "$HAVE6" = 1 ] || continue ;; esac
  add_route "$r"
done < "$D/routes.txt"

# ------------------------------------------------------------ authorities
ROOT=127.30.0.1 TLD=127.30.0.2 CUST=127.30.0.3 GSLB=127.30.0.4
SERVERS=(root tld cust gslb)
declare -A SADDR=([root]=$ROOT [tld]=$TLD [cust]=$CUST [gslb]=$GSLB)
declare -A SZONES=([root]=. [tld]="example. test." [cust]="customer.example. plain.test." [gslb]=cdn.test.)
cat > "$W/root.hints" <<EOF
.           3600000  NS  ns.root.
ns.root.    3600000  A   $ROOT
EOF
write_zones() {
  local z=$W/zones
  mkdir -p "$z"
  cat > "$z/root.zone" <<EOF
\$TTL 86400
@        SOA  ns.root. hostmaster.root. 1 3600 600 86400 3600
@        NS   ns.root.
ns.root. A    $ROOT
example. NS   ns.nic.example.
test.    NS   ns.nic.test.
ns.nic.example. A $TLD
ns.nic.test.    A $TLD
EOF
  cat > "$z/example.zone" <<EOF
\$ORIGIN example.
\$TTL 86400
@        SOA  ns.nic hostmaster.nic 1 3600 600 86400 3600
@        NS   ns.nic
ns.nic   A    $TLD
customer NS   ns.customer
ns.customer A $CUST
EOF
  cat > "$z/test.zone" <<EOF
\$ORIGIN test.
\$TTL 86400
@        SOA  ns.nic hostmaster.nic 1 3600 600 86400 3600
@        NS   ns.nic
ns.nic   A    $TLD
cdn      NS   ns.cdn
ns.cdn   A    $GSLB
plain    NS   ns.plain
ns.plain A    $CUST
EOF
  cat > "$z/plain.test.zone" <<EOF
\$ORIGIN plain.test.
\$TTL 86400
@        SOA  ns hostmaster 1 3600 600 86400 3600
@        NS   ns
ns       A    $CUST
p1       A    192.0.2.81
EOF
  {
    cat <<EOF
\$ORIGIN customer.example.
\$TTL 86400
@        SOA  ns hostmaster 1 3600 600 86400 3600
@        NS   ns
ns       A    $CUST
www      A    192.0.2.80
; a normal name of the steered names' shape: a CNAME into another zone
alias    CNAME p1.plain.test.
EOF
    for ((i = 1; i <= NNAMES; i++)); do echo "n$i CNAME n$i.cdn.test."; done
  } > "$z/customer.example.zone"
  {
    cat <<EOF
\$ORIGIN cdn.test.
\$TTL 86400
@        SOA  ns hostmaster 1 3600 600 86400 3600
@        NS   ns
ns       A    $GSLB
EOF
    for ((i = 1; i <= NNAMES; i++)); do echo "n$i 3600 A 192.0.2.1"; done
  } > "$z/cdn.test.zone"
}
write_zones

# auth_conf NAME VARIANT: the knotd config of one authority (GSLB: geo file of VARIANT).
auth_conf() {
  local n=$1 v=$2 dir=$W/knot-$1 z
  mkdir -p "$dir/db"
  {
    cat <<EOF
server:
  rundir: $dir
  listen: ${SADDR[$n]}@53
  udp-workers: 1
  tcp-workers: 1
  background-workers: 1
  identity: ""
  version: ""
  nsid: ""
  edns-client-subnet: on
database:
  storage: $dir/db
control:
  listen: $dir/knot.sock
log:
  - target: $dir/knotd.log
    any: warning
mod-dnstap:
  - id: tap
    sink: $dir/queries.tap
    identity: ""
    version: ""
    log-queries: off
    log-responses: on
EOF
    if [ "$n" = gslb ]; then
      cat <<EOF
mod-geoip:
  - id: gslb
    config-file: $D/geo-$v.geo
    mode: subnet
    ttl: 3600
EOF
    fi
    cat <<EOF
template:
  - id: default
    storage: $W/zones
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
    global-module: [ mod-stats, mod-dnstap/tap ]
zone:
EOF
    for z in ${SZONES[$n]}; do
      if [ "$z" = . ]; then printf '  - domain: "."\n    file: root.zone\n' ; else
        printf '  - domain: "%s"\n    file: %s.zone\n' "$z" "${z%.}"; fi
      [ "$n" != gslb ] || echo "    module: mod-geoip/gslb"
    done
  } > "$dir/knot.conf"
}
auth_start() {
  local n z i out
  for n in "$@"; do
    knotd -c "$W/knot-$n/knot.conf" >> "$W/knot-$n/stdout.log" 2>&1 &
    PIDS[knot-$n]=$!
  done
  for n in "$@"; do
    for z in ${SZONES[$n]}; do
      for ((i = 0; i < 200; i++)); do
        out=$(dig +time=1 +tries=1 +norecurse @"${SADDR[$n]}" "harness-probe.${z#.}" TXT 2>/dev/null)
        [[ "$out" == *'status: NXDOMAIN'* ]] && break
        sleep 0.05
      done
      [ "$i" -lt 200 ] || pdie "knotd $n did not serve $z: $(tail -n 5 "$W/knot-$n/knotd.log" "$W/knot-$n/stdout.log")"
    done
  done
}
# auth_flush OUTDIR PHASE [NAME...]: stop the authorities (all, or the NAMEs),
# decode their logs into OUTDIR/q-NAME-PHASE.txt, start them again.
auth_flush() {
  local out=$1 ph=$2 n
  shift 2
  [ $# -gt 0 ] || set -- "${SERVERS[@]}"
  for n in "$@"; do kill -TERM "${PIDS[knot-$n]}" 2>/dev/null; done
  for n in "$@"; do stop_wait "${PIDS[knot-$n]}" 5; unset "PIDS[knot-$n]"; done
  for n in "$@"; do
    if [ -s "$W/knot-$n/queries.tap" ]; then
      kdig -G "$W/knot-$n/queries.tap" 2>/dev/null | python3 "$PY" tap > "$out/q-$n-$ph.txt"
    else
      : > "$out/q-$n-$ph.txt"
    fi
    rm -f "$W/knot-$n/queries.tap"
  done
  auth_start "$@"
}
# auth_reset VARIANT: fresh authorities (logs dropped) with the GSLB of VARIANT.
auth_reset() {
  local n
  for n in "${SERVERS[@]}"; do stop "knot-$n"; rm -f "$W/knot-$n/queries.tap"; auth_conf "$n" "$1"; done
  auth_start "${SERVERS[@]}"
}
# busy_ns: CPU time all CPUs spent busy since boot (/proc/stat), in ns.
busy_ns() {
  awk -v hz="$CLK_TCK" '$1 == "cpu" {printf "%.0f", ($2 + $3 + $4 + $7 + $8 + $9) * 1e9 / hz; exit}' /proc/stat
}
# other_load: processes not of this benchmark using over 10 % of a CPU now ("name 55%, ...")
other_load() {
  top -b -n 1 -w 200 2>/dev/null | awk 'NR > 7 && $9 + 0 > 10 && $12 !~ /^(partdns|unbound|pdns_recursor|pdns_r|dnsdist|dnsperf|knotd|top|rec\/)/ {printf "%s%s %s%%", sep, $12, $9; sep = ", "}'
}
gslb_count() {
  knotc -s "$W/knot-gslb/knot.sock" stats mod-stats.server-operation 2>/dev/null |
    awk -F' = ' '/server-operation\[query\]/ {print $2}'
}

# ------------------------------------------------------------ systems under test
ALLOW4="10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 100.64.0.0/10 127.0.0.0/8"
ALLOW6="2001:db8::/32 fd00::/8 ::1/128"

# ub_conf FILE DIR ADDR V6 KIND: Unbound: KIND none (iterator), ecs24 (subnetcache,
# /24 of the client to the GSLB), ecs32 (subnetcache, the ECS it is given, up to /32)
ub_conf() {
  local f=$1 dir=$2 addr=$3 v6=$4 kind=$5 a
  mkdir -p "$dir"
  {
    cat <<EOF
server:
  do-daemonize: no
  chroot: ""
  username: ""
  directory: "$dir"
  pidfile: "$dir/unbound.pid"
  logfile: "$dir/unbound.log"
  use-syslog: no
  verbosity: 0
  interface: $addr@53
EOF
    [ "$v6" = 0 ] || echo "  interface: ::1@53"
    cat <<EOF
  port: 53
  num-threads: 1
  do-ip6: yes
  prefer-ip4: yes
  do-not-query-localhost: no
  local-zone: "test." nodefault
  root-hints: "$W/root.hints"
  qname-minimisation: no
  so-rcvbuf: 4m
  msg-cache-size: 64m
  rrset-cache-size: 128m
  ratelimit: 0
  ip-ratelimit: 0
EOF
    for a in $ALLOW4 $ALLOW6; do echo "  access-control: $a allow"; done
    case $kind in
      none) echo '  module-config: "iterator"' ;;
      ecs24|ecs32)
        cat <<EOF
  module-config: "subnetcache iterator"
  send-client-subnet: $GSLB
  max-client-subnet-ipv4: $([ "$kind" = ecs24 ] && echo 24 || echo 32)
  max-client-subnet-ipv6: 56
  # its default (100 subnets per name) would evict: room for every one
  max-ecs-tree-size-ipv4: 1000000
  max-ecs-tree-size-ipv6: 1000000
EOF
        ;;
    esac
    cat <<EOF
remote-control:
  control-enable: yes
  control-use-cert: no
  control-interface: "$dir/unbound.ctl"
EOF
  } > "$f"
}
ub_start() { # TAG CONF
  unbound -d -c "$2" >> "${2%/*}/stdout.log" 2>&1 &
  PIDS[$1]=$!
}

pdns_start() { # TAG DIR ADDR V6
  local dir=$2 a allow=""
  mkdir -p "$dir"
  for a in $ALLOW4 $ALLOW6 198.51.100.0/24; do allow+="${allow:+, }$a"; done
  cat > "$dir/recursor.conf" <<EOF
local-address=$3$([ "$4" = 0 ] || echo ", ::1")
local-port=53
allow-from=$allow
hint-file=$W/root.hints
dont-query=
socket-dir=$dir
threads=1
pdns-distributes-queries=no
daemon=no
write-pid=no
disable-syslog=yes
loglevel=3
quiet=yes
dnssec=off
qname-minimization=no
lua-config-file=$D/pdns-proxy.lua
edns-subnet-allow-list=cdn.test
ecs-add-for=0.0.0.0/0, ::/0
ecs-ipv4-bits=32
ecs-ipv4-cache-bits=32
ecs-ipv6-bits=56
ecs-ipv6-cache-bits=56
EOF
  pdns_recursor --config-dir="$dir" >> "$dir/stdout.log" 2>&1 &
  PIDS[$1]=$!
}

dd_start() { # TAG DIR ADDR V6 BACKEND
  local dir=$2
  mkdir -p "$dir"
  cat > "$dir/dnsdist.conf" <<EOF
setLocal("$3:53")
$([ "$4" = 0 ] || echo 'addLocal("[::1]:53")')
setACL({"0.0.0.0/0", "::/0"})
setECSOverride(true)
setECSSourcePrefixV4(32)
setECSSourcePrefixV6(56)
newServer({address="$5:53", useClientSubnet=true, checkName="localhost.", checkType="A", checkInterval=10})
dofile("$D/dnsdist-ecs.lua")
EOF
  dnsdist --supervised --disable-syslog -C "$dir/dnsdist.conf" >> "$dir/stdout.log" 2>&1 &
  PIDS[$1]=$!
}

pd_start() { # TAG DIR ADDR V6 POLICY FWD
  local dir=$2 a allow="" listen
  mkdir -p "$dir/store"
  for a in $ALLOW4 $ALLOW6; do allow+="${allow:+, }\"$a\""; done
  listen="\"$3@53\""
  [ "$4" = 0 ] || listen+=", \"::1@53\""
  cp "$D/partitions.yaml" "$dir/partitions.yaml"
  cat > "$dir/partdns.yaml" <<EOF
server:
  listen: [ $listen ]
  threads: 1
  allow: [ $allow ]
  client_exempt: [ "10.0.0.0/8" ]
  control: $dir/control.sock
  store: $dir/store
  user: root
  # per-partition cache entries are a metrics gauge (partdnsctl stats has none)
  metrics: "$3@9153"
resolver:
  threads: 1
  root_hints: $W/root.hints
  options: { "do-not-query-localhost": "no", "do-ip6": "no", "local-zone": "test. transparent"${BENCH_PD_OPTIONS:+, $BENCH_PD_OPTIONS} }
edns:
  threads: 1
  policy: $5
  timeout_ms: 1500
partitions:
  include: partitions.yaml
EOF
  "$PARTDNS_BIN" -t -c "$dir/partdns.yaml" > "$dir/check.txt" 2>&1 ||
    pdie "partdns -t rejects $dir/partdns.yaml: $(head -n 5 "$dir/check.txt")"
  local fwd=()
  [ "$5" != forward ] || fwd=(--forward "$6@53")
  "$PARTDNSCTL_BIN" -c "$dir/partdns.yaml" domain add cdn.test --subtree --policy "$5" "${fwd[@]}" --create > "$dir/ctl.txt" 2>&1 ||
    pdie "partdnsctl domain add failed: $(cat "$dir/ctl.txt")"
  ${PD_WRAP:-} "$PARTDNS_BIN" -c "$dir/partdns.yaml" >> "$dir/partdns.log" 2>&1 &
  PIDS[$1]=$!
}

# wait_up TAG ADDR: until the server answers (any rcode), or die.
wait_up() {
  local i
  for ((i = 0; i < 400; i++)); do
    dig +time=1 +tries=1 -b 127.0.0.1 @"$2" localhost. A >/dev/null 2>&1 && return 0
    kill -0 "${PIDS[$1]}" 2>/dev/null || pdie "$1 exited during start-up: $(tail -n 5 "${SYS_DIR[$CUR_SYS]}/$1"/*.log 2>/dev/null)"
    sleep 0.05
  done
  pdie "$1 did not answer on $2 within 20 s"
}

# sys_start S ADDR BACKADDR V6 DIR: start system S (and its back end) listening
# on ADDR (and ::1 when V6=1).  Sets SYS_PIDS[S] (the pids whose CPU counts).
declare -A SYS_PIDS=() SYS_DIR=() SYS_ADDR=()
sys_start() {
  local s=$1 a=$2 b=$3 v6=$4 dir=$5
  mkdir -p "$dir"
  SYS_DIR[$s]=$dir
  SYS_ADDR[$s]=$a
  CUR_SYS=$s
  case $s in
    ub)   ub_conf "$dir/ub/unbound.conf" "$dir/ub" "$a" "$v6" none; ub_start ub "$dir/ub/unbound.conf"
          wait_up ub "$a"; SYS_PIDS[$s]=${PIDS[ub]} ;;
    ub24) ub_conf "$dir/ub24/unbound.conf" "$dir/ub24" "$a" "$v6" ecs24; ub_start ub24 "$dir/ub24/unbound.conf"
          wait_up ub24 "$a"; SYS_PIDS[$s]=${PIDS[ub24]} ;;
    pdns) pdns_start pdns "$dir/pdns" "$a" "$v6"; wait_up pdns "$a"; SYS_PIDS[$s]=${PIDS[pdns]} ;;
    dd)   ub_conf "$dir/ddub/unbound.conf" "$dir/ddub" "$b" 0 ecs32; ub_start ddub "$dir/ddub/unbound.conf"
          wait_up ddub "$b"
          dd_start dd "$dir/dd" "$a" "$v6" "$b"; wait_up dd "$a"
          SYS_PIDS[$s]="${PIDS[dd]} ${PIDS[ddub]}" ;;
    pdi)  pd_start pdi "$dir/pdi" "$a" "$v6" iterate; wait_up pdi "$a"; SYS_PIDS[$s]=${PIDS[pdi]} ;;
    pdf)  ub_conf "$dir/pdfub/unbound.conf" "$dir/pdfub" "$b" 0 ecs32; ub_start pdfub "$dir/pdfub/unbound.conf"
          wait_up pdfub "$b"
          pd_start pdf "$dir/pdf" "$a" "$v6" forward "$b"; wait_up pdf "$a"
          SYS_PIDS[$s]=${PIDS[pdf]} ;;
    *) pdie "unknown system $s" ;;
  esac
}
sys_stop() {
  case $1 in
    dd)  stop dd; stop ddub ;;
    pdf) stop pdf; stop pdfub ;;
    *)   stop "$1" ;;
  esac
}

# sys_entries S: cache entries the system holds for the CDN names, or "-"
# (Unbound subnetcache: no dump; province.py uses its proxy instead).
sys_entries() {
  local s=$1 dir=${SYS_DIR[$1]} re
  re="^($(IFS='|'; echo "${GSLB_NAMES[*]//./\\.}"))\\.[[:space:]]"
  case $s in
    ub)   unbound-control -c "$dir/ub/unbound.conf" dump_cache 2>/dev/null |
            awk -v re="$re" '$0 ~ re && $3 == "IN" && $4 == "A" {n++} END {print n + 0}' ;;
    pdns) rm -f "$dir/pdns/dump.txt"
          rec_control --socket-dir="$dir/pdns" --config-dir="$dir/pdns" dump-cache "$dir/pdns/dump.txt" >/dev/null 2>&1
          # record-cache lines of the GSLB names' A records that carry an ECS netmask
          awk -v re="$re" '$0 ~ re && $4 == "IN" && $5 == "A" && / nm=[0-9a-f:.]+\// {n++} END {print n + 0}' "$dir/pdns/dump.txt" 2>/dev/null || echo - ;;
    pdi|pdf) # the entries under the cities' own keys: only flagged names have them
          curl -sf "http://${SYS_ADDR[$s]}:9153/metrics" 2>/dev/null |
            awk '/^partdns_partition_cache_entries[{]/ && !/partition="common"/ {n += $NF} END {print n + 0}' ;;
    *) echo - ;;
  esac
}

# ------------------------------------------------------------ steering runs
RES=$W/results
mkdir -p "$RES"
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$(date +%s)
SYS_A=127.30.1.1 SYS_B=127.30.1.2

for v in "${VARIANTS[@]}"; do
  for c in 1 "$INFLIGHT"; do
    for s in "${SYSTEMS[@]}"; do
      tag=$s-$v-$c
      rd=$W/run-$tag
      mkdir -p "$rd"
      t0=$(date +%s)
      # fresh authorities for a new GSLB variant; else the last run's final
      # flush left them fresh (empty logs)
      [ "${AUTH_VARIANT:-}" = "$v" ] || { auth_reset "$v"; AUTH_VARIANT=$v; }
      sys_start "$s" "$SYS_A" "$SYS_B" "$HAVE6" "$rd/sys"
      for ((ph = 0; ph < NPH; ph++)); do
        "$W/pclient" -s "$SYS_A" -S ::1 -c "$c" -t 2000 -r 3 < "$D/phase-$ph.q" > "$rd/answers-$ph.txt" 2> "$rd/pclient-$ph.err" ||
          pmsg "note: pclient $tag phase $ph: $(tail -n 2 "$rd/pclient-$ph.err")"
        sleep 0.2   # late upstream replies (a coalesced resolution finishing) land in this phase
        sys_entries "$s" > "$rd/entries-$ph.txt"
        # the GSLB after every phase (the chart), the others at the end
        if [ "$ph" -lt $((NPH - 1)) ]; then auth_flush "$rd" "$ph" gslb; else auth_flush "$rd" "$ph"; fi
      done
      own='"127.0.0.1", "'$SYS_A'", "'$SYS_B'"'
      printf '{"system": "%s", "variant": "%s", "inflight": %d, "phases": %d, "names": ["%s"], "gslb_names": ["%s."], "servers": ["root", "tld", "cust", "gslb"], "own_addrs": [%s]}\n' \
        "$s" "$v" "$c" "$NPH" "$(IFS=,; echo "${NAMES[*]}" | sed 's/,/", "/g')" \
        "$(IFS=,; echo "${GSLB_NAMES[*]}" | sed 's/,/.", "/g')" "$own" > "$rd/meta.json"
      case $s in pdi|pdf) "$PARTDNSCTL_BIN" -c "$rd/sys/$s/partdns.yaml" stats > "$rd/stats.txt" 2>&1 ;; esac
      sys_stop "$s"
      python3 "$PY" run "$D" "$rd" > "$RES/run-$tag.json" || pdie "province.py run $tag failed"
      pmsg "$tag ($(( $(date +%s) - t0 )) s): $(python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
print("accuracy %.1f %% of %d, GSLB ECS %d noECS %d distinct ECS %d, leaked %d, ECS elsewhere %d, entries %s, rcodes %s" % (
  100*(r["accuracy"] or 0), r["answers"], r["gslb_ecs"], r["gslb_noecs"], r["distinct_ecs"], r["leaked"], r["other_ecs"], r["entries"], r["rcodes"]))' "$RES/run-$tag.json")"
    done
  done
done
T_STEER=$(( $(date +%s) - T_START ))

# ------------------------------------------------------------ cache hits
declare -A V=()
HIT_SRC=$(awk '$2 == "nanjing" && $1 ~ /^10\./ {print $1; exit}' "$D/clients.tsv")
[ -n "$HIT_SRC" ] || pdie "no Nanjing client in 10/8"
STEER_NAME=${NAMES[0]}
NORMAL_NAME=www.customer.example
printf '%s A\n' "$STEER_NAME" > "$W/steer.q"
printf '%s A\n' "$NORMAL_NAME" > "$W/normal.q"
CHAIN_NAME=alias.customer.example
printf '%s A\n' "$CHAIN_NAME" > "$W/chain.q"
HIT_NAMES=(steer normal chain)
if [ "${#HIT_SYSTEMS[@]}" -gt 0 ] && [ "$ROUNDS" -gt 0 ]; then
  auth_reset full
  AUTH_VARIANT=full
  declare -A HADDR=()
  i=1
  for s in "${HIT_SYSTEMS[@]}"; do
    HADDR[$s]=127.30.2.$i
    sys_start "$s" "127.30.2.$i" "127.30.2.$((i + 10))" 0 "$W/hit"
    i=$((i + 1))
  done
  # warm: both names from the client, three times; then nothing may reach the GSLB
  for s in "${HIT_SYSTEMS[@]}"; do
    for n in "$STEER_NAME" "$NORMAL_NAME" "$CHAIN_NAME"; do
      for k in 1 2 3; do dig +short +time=2 +tries=2 -b "$HIT_SRC" @"${HADDR[$s]}" "$n" A > /dev/null; done
    done
    pmsg "hits: $s on ${HADDR[$s]} answers $STEER_NAME from $HIT_SRC (Nanjing) with $(dig +short -b "$HIT_SRC" @"${HADDR[$s]}" "$STEER_NAME" A | tail -n 1)"
  done
  PIN=0
  if [ "$NCPU" -ge 2 ]; then
    PIN=1
    for s in "${HIT_SYSTEMS[@]}"; do
      for p in ${SYS_PIDS[$s]}; do taskset -a -p -c 1 "$p" >/dev/null || PIN=0; done
    done
  fi
  OTHER0=$(other_load)
  RETRIES=0 CONTENDED=0
  TIMEFORMAT='%3U+%3S'

  g0=$(gslb_count)
  for ((r = 1; r <= ROUNDS; r++)); do
    # rotate the system order from round to round; each name back to back
    n=${#HIT_SYSTEMS[@]}
    order=()
    for ((k = 0; k < n; k++)); do order+=("${HIT_SYSTEMS[$(( (k + r - 1) % n ))]}"); done
    for s in "${order[@]}"; do
      names=("${HIT_NAMES[@]:$(( r % 3 ))}" "${HIT_NAMES[@]:0:$(( r % 3 ))}")
      for kind in "${RATES[@]}" sat; do
        for nm in "${names[@]}"; do
          args=(-s "${HADDR[$s]}" -a "$HIT_SRC" -d "$W/$nm.q" -c 4 -T 1 -t 2 -q 100)
          if [ "$kind" = sat ]; then args+=(-l "$SAT_SECS"); else args+=(-Q "$kind" -l "$RATE_SECS"); fi
          # a measurement during which other work took over MAX_OTHER % of a
          # CPU is taken again (up to twice); the report counts them
          for ((try = 1; try <= 3; try++)); do
            c0=0; for p in ${SYS_PIDS[$s]}; do c0=$((c0 + $(cpu_ns "$p"))); done
            b0=$(busy_ns); t0=$(date +%s%N)
            if [ "$PIN" = 1 ]; then
              { time taskset -c 0 dnsperf "${args[@]}" > "$W/dp.out" 2>&1; } 2> "$W/dp.time"
            else
              { time dnsperf "${args[@]}" > "$W/dp.out" 2>&1; } 2> "$W/dp.time"
            fi
            t1=$(date +%s%N); b1=$(busy_ns)
            c1=0; for p in ${SYS_PIDS[$s]}; do c1=$((c1 + $(cpu_ns "$p"))); done
            out=$(cat "$W/dp.out")
            done_n=$(dp_field "$out" completed); qps=$(dp_field "$out" qps)
            [ -n "$done_n" ] && [ "$done_n" -gt 0 ] || pdie "dnsperf at $s ($nm $kind) answered nothing: $(printf '%s' "$out" | tail -n 3)"
            # other work: the machine's busy time less the server's and dnsperf's
            other=$(awk -v b=$((b1 - b0)) -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v d="$(cat "$W/dp.time")" \
              'BEGIN {split(d, x, "+"); o = b - c - (x[1] + x[2]) * 1e9; if (o < 0) o = 0; printf "%.0f", 100 * o / t}')
            [ "$other" -gt "$MAX_OTHER" ] || break
            [ "$try" = 3 ] && { CONTENDED=$((CONTENDED + 1)); break; }
            RETRIES=$((RETRIES + 1))
            pmsg "round $r $s $nm $kind: other work $other % of a CPU: again"
          done
          us=$(awk -v c=$((c1 - c0)) -v n="$done_n" 'BEGIN {printf "%.3f", c / n / 1000}')
          V[$s|$nm|$kind|qps|$r]=$qps
          V[$s|$nm|$kind|cpu|$r]=$us
          pmsg "round $r $s $nm $kind: answered $done_n, lost $(dp_field "$out" lost), qps $qps, cpu $us us/answer, other work $other % of a CPU, codes $(dp_field "$out" codes)"
        done
      done
    done
  done
  OTHER1=$(other_load)
  g1=$(gslb_count)
  HIT_CHECK="GSLB queries during the hit rounds: $((g1 - g0)); measurements taken again because other work took over $MAX_OTHER % of a CPU: $RETRIES, still so after three tries (kept): $CONTENDED"
  pmsg "$HIT_CHECK"
  for s in "${HIT_SYSTEMS[@]}"; do sys_stop "$s"; done
fi
# ------------------------------------------------------------ instructions per hit
# partdns' hit path under callgrind, instructions counted inside
# query_process only (the whole hit: parse, ACL, classification, cache
# lookups, the reply written; not the socket calls), steered against normal:
# timing on this shared machine cannot resolve a few per cent, counts can.
CG_DONE=0
declare -A CG=()
if [ "${BENCH_CALLGRIND:-1}" = 1 ] && [ "$ROUNDS" -gt 0 ] && command -v valgrind >/dev/null 2>&1 &&
   command -v callgrind_control >/dev/null 2>&1; then
  CG_N=${BENCH_CG_QUERIES:-20000}
  [ "$QUICK" = 0 ] || CG_N=5000
  mkdir -p "$W/cg"
  PD_WRAP="valgrind -q --tool=callgrind --toggle-collect=query_process --callgrind-out-file=$W/cg/cg.out"
  sys_start pdi 127.30.3.1 127.30.3.11 0 "$W/cg"
  PD_WRAP=""
  for n in "$STEER_NAME" "$NORMAL_NAME" "$CHAIN_NAME"; do
    for k in 1 2 3; do dig +short +time=5 +tries=2 -b "$HIT_SRC" @127.30.3.1 "$n" A > /dev/null; done
  done
  cgp=${SYS_PIDS[pdi]}
  for k in 1 2; do
    for nm in "${HIT_NAMES[@]}"; do
      callgrind_control -z "$cgp" > /dev/null 2>&1 || pdie "callgrind_control -z $cgp failed"
      out=$(dnsperf -s 127.30.3.1 -a "$HIT_SRC" -d "$W/$nm.q" -n "$CG_N" -q 20 -c 1 -T 1 -t 5 2>&1)
      callgrind_control -d "$cgp" > /dev/null 2>&1 || pdie "callgrind_control -d $cgp failed"
      f=$(ls -t "$W"/cg/cg.out.* 2>/dev/null | head -n 1)
      [ -n "$f" ] || pdie "callgrind: no dump"
      ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
      mv "$f" "$W/cg/cg-$nm-$k.out"   # kept with PARTDNS_KEEP=1 (callgrind_annotate)
      done_n=$(dp_field "$out" completed)
      [ "$(dp_field "$out" codes)" = "NOERROR $done_n (100.00%)" ] || pdie "callgrind $nm: not all NOERROR: $(dp_field "$out" codes)"
      CG[$nm|$k]=$(awk -v i="$ir" -v n="$done_n" 'BEGIN {printf "%.0f", i / n}')
      pmsg "callgrind: $nm pass $k: $done_n answers, ${CG[$nm|$k]} instructions per answer in query_process"
    done
  done
  CG_DONE=1
  sys_stop pdi
fi

T_TOTAL=$(( $(date +%s) - T_START ))
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
for n in "${SERVERS[@]}"; do stop "knot-$n"; done

# ------------------------------------------------------------ report
vals() { local r; for ((r = 1; r <= ROUNDS; r++)); do printf '%s\n' "${V[$1|$r]:-}"; done; }
cell() { # KEY FORMAT: median (min–max)
  local v; mapfile -t v < <(vals "$1")
  if [ "$ROUNDS" = 1 ]; then fmt "${v[0]}" "$2"; return; fi
  printf '%s (%s–%s)' "$(fmt "$(median "${v[@]}")" "$2")" "$(fmt "$(minimum "${v[@]}")" "$2")" "$(fmt "$(maximum "${v[@]}")" "$2")"
}
ratios() { local r; for ((r = 1; r <= ROUNDS; r++)); do ratio "${V[$1|$r]:-}" "${V[$2|$r]:-}"; echo; done; }
rcell() { # KEY_A KEY_B: median (min–max) of the per-round ratios A / B
  local p; mapfile -t p < <(ratios "$1" "$2")
  if [ "$ROUNDS" = 1 ]; then fmt "${p[0]}" %.2f; return; fi
  printf '%s (%s–%s)' "$(fmt "$(median "${p[@]}")" %.2f)" "$(fmt "$(minimum "${p[@]}")" %.2f)" "$(fmt "$(maximum "${p[@]}")" %.2f)"
}
rmed() { local p; mapfile -t p < <(ratios "$1" "$2"); median "${p[@]}"; }
has_hit() { local s; for s in "${HIT_SYSTEMS[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

python3 "$PY" report "$D" "$RES" > "$W/tables.md" || pdie "province.py report failed"

cat <<EOF

### Run of $DATE

- command: \`bench/province.sh$([ "$QUICK" = 1 ] && echo " --quick") ${1:-build}\`; $T_STEER s of steering runs, $T_TOTAL s in all
- machine: $NCPU CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(uname -r); load average $LOAD0 before, $LOAD1 after
- $("$PARTDNS_BIN" -V 2>/dev/null | head -n 1) ($BUILT${BTYPE:+, $BTYPE}${BENCH_LABEL:+; $BENCH_LABEL}); Unbound $(unbound -V 2>/dev/null | sed -n 's/^Version //p'); PowerDNS Recursor $(pdns_recursor --version 2>&1 | sed -n 's/.*PowerDNS Recursor \([^ ]*\).*/\1/p' | head -n 1); dnsdist $(dnsdist --version 2>/dev/null | awk 'NR == 1 {print $2}'); knotd $(knotd -V 2>/dev/null | awk '{print $NF}'); dnsperf $(dnsperf -h 2>&1 | sed -n 's/^Version //p')
- province: $POP; $NNAMES CDN names (\`nK.customer.example CNAME nK.cdn.test.\`), each asked once by every client, in random order within phases of growing client networks; 1 and $INFLIGHT queries in flight
EOF
cat "$W/tables.md"
if [ "${#HIT_SYSTEMS[@]}" -gt 0 ] && [ "$ROUNDS" -gt 0 ]; then
  cat <<EOF

**Cache hits** — $ROUNDS round$([ "$ROUNDS" = 1 ] || echo s); from one Nanjing client ($HIT_SRC): a steered name ($STEER_NAME, a CNAME into the GSLB zone: partdns answers it from Nanjing's own entry of the spliced chain, found through the chain hint the first hit left), a normal name ($NORMAL_NAME, one A record) and a normal name of the steered one's shape ($CHAIN_NAME, a CNAME into another zone, not flagged); the names back to back, their order and the system order rotating; server CPU per answer (all threads, from schedstat; dnsdist's together with its Unbound's) at $(IFS=/; echo "${RATES[*]}") qps offered for ${RATE_SECS} s and at saturation (\`dnsperf -q 100 -c 4\`, ${SAT_SECS} s); servers on CPU 1, dnsperf on CPU 0$([ "$PIN" = 1 ] || echo " (pinning failed: unpinned)"). Values are medians (min–max) over the rounds, ratios the median (min–max) of the per-round ratios; "÷ Unbound" compares with Unbound without ECS answering the same name in the same round (CPU: lower is better; QPS: higher is better). $HIT_CHECK. Other processes using over 10 % of a CPU at the start / end of the hit rounds: ${OTHER0:-none} / ${OTHER1:-none}.

| system | measure | steered | normal, A | normal, CNAME chain | steered ÷ normal A | steered ÷ normal chain | steered ÷ Unbound | normal A ÷ Unbound |
|---|---|---|---|---|---|---|---|---|
EOF
  for s in "${HIT_SYSTEMS[@]}"; do
    label=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import province; print(province.SYS_LABEL[sys.argv[2]])' "$SRC/bench/province" "$s")
    for kind in "${RATES[@]}" sat; do
      for m in cpu qps; do
        [ "$m" = cpu ] || [ "$kind" = sat ] || continue
        case $m$kind in cpusat) what="CPU µs/answer at saturation" ;; qpssat) what="QPS at saturation" ;; *) what="CPU µs/answer at $kind qps" ;; esac
        f=%.2f; [ "$m" = cpu ] || f=%.0f
        if has_hit ub; then
          us=$(rcell "$s|steer|$kind|$m" "ub|steer|$kind|$m"); un=$(rcell "$s|normal|$kind|$m" "ub|normal|$kind|$m")
        else us=–; un=–; fi
        declare -A cc=()
        for nm in "${HIT_NAMES[@]}"; do
          cc[$nm]=$(cell "$s|$nm|$kind|$m" "$f")
          if [ "$kind" != sat ]; then   # a rate the server could not answer: say so
            mapfile -t q < <(vals "$s|$nm|$kind|qps"); qm=$(median "${q[@]}")
            ! awk -v q="$qm" -v k="$kind" 'BEGIN {exit !(q < 0.95 * k)}' || cc[$nm]+=" (answered $(fmt "$qm" %.0f) qps)"
          fi
        done
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$what" "${cc[steer]}" "${cc[normal]}" "${cc[chain]}" \
          "$(rcell "$s|steer|$kind|$m" "$s|normal|$kind|$m")" "$(rcell "$s|steer|$kind|$m" "$s|chain|$kind|$m")" "$us" "$un"
      done
    done
  done
fi

if [ "$CG_DONE" = 1 ]; then
  cat <<EOF

**Instructions per hit** (partdns, callgrind with \`--toggle-collect=query_process\`: the whole hit path inside the listener — parse, ACL, classification, cache lookups, the reply written — without the socket calls; $CG_N answers per pass from the same Nanjing client, two passes each, interleaved):

| name | pass 1 | pass 2 | steered ÷ this |
|---|---|---|---|
| steered ($STEER_NAME) | ${CG[steer|1]} | ${CG[steer|2]} | |
| normal, A ($NORMAL_NAME) | ${CG[normal|1]} | ${CG[normal|2]} | $(ratio "$(( (CG[steer|1] + CG[steer|2]) / 2 ))" "$(( (CG[normal|1] + CG[normal|2]) / 2 ))") |
| normal, CNAME chain ($CHAIN_NAME) | ${CG[chain|1]} | ${CG[chain|2]} | $(ratio "$(( (CG[steer|1] + CG[steer|2]) / 2 ))" "$(( (CG[chain|1] + CG[chain|2]) / 2 ))") |
EOF
fi

# the issue's aims for partdns, judged on the figures above
python3 - "$RES" "$INFLIGHT" <<'EOF' > "$W/aims.md"
import json, os, sys
rd, infl = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(os.path.join(rd, f))) for f in sorted(os.listdir(rd)) if f.startswith("run-") and f.endswith(".json")]
rows = []
for s in ("pdi", "pdf"):
    rs = [r for r in runs if r["meta"]["system"] == s]
    if not rs:
        continue
    lab = {"pdi": "iterate", "pdf": "forward"}[s]
    acc = ["%s/%d: %.1f %%" % (r["meta"]["variant"], r["meta"]["inflight"], 100 * (r["accuracy"] or 0)) for r in rs]
    rows.append(("partdns %s: 100 %% accuracy, both GSLB variants" % lab, ", ".join(acc), all(r["correct"] == r["answers"] for r in rs)))
    per = ["%s/%d: %s for %d cities" % (r["meta"]["variant"], r["meta"]["inflight"],
           "/".join(str(x) for x in sorted(set(r["per_name_ecs"].values()))), r["cities_asked"]) for r in rs]
    rows.append(("partdns %s: GSLB queries with ECS per name = partitions that asked" % lab, ", ".join(per),
                 all(set(r["per_name_ecs"].values()) == {r["cities_asked"]} for r in rs)))
    ent = ["%s/%d: %s" % (r["meta"]["variant"], r["meta"]["inflight"], r["entries"]) for r in rs]
    rows.append(("partdns %s: cache entries = partitions × names" % lab, ", ".join(ent) + " (want %d)" % (rs[0]["cities_asked"] * len(rs[0]["per_name_ecs"])),
                 all(r["entries"] == r["cities_asked"] * len(r["per_name_ecs"]) for r in rs)))
    ne = ["%s/%d: %d (%s)" % (r["meta"]["variant"], r["meta"]["inflight"], r["gslb_noecs"],
          ", ".join("%s %d" % kv for kv in sorted(r["gslb_noecs_detail"].items()))) for r in rs]
    rows.append(("partdns %s: at most one GSLB query without ECS (its zone cut)" % lab, "; ".join(ne[:1]) + ("; others: " + ", ".join(str(r["gslb_noecs"]) for r in rs[1:]) if len(rs) > 1 else ""),
                 all(r["gslb_noecs"] <= 1 for r in rs)))
    lk = ["%d/%d" % (r["leaked"], r["other_ecs"]) for r in rs]
    rows.append(("partdns %s: zero client/private addresses at any authority, zero ECS off the GSLB" % lab, ", ".join(lk) + " (addresses/ECS elsewhere, per run)",
                 all(r["leaked"] == 0 and r["other_ecs"] == 0 for r in rs)))
print("| aim | measured | met |")
print("|---|---|---|")
for a, m, ok in rows:
    print("| %s | %s | %s |" % (a, m, "yes" if ok else "**no**"))
EOF
{
  echo
  echo "**Aims** (the issue's, for partdns):"
  echo
  cat "$W/aims.md"
  if has_hit pdi; then
    for kind in "${RATES[@]}" sat; do
      x=$(rmed "pdi|steer|$kind|cpu" "pdi|normal|$kind|cpu"); y=$(rmed "pdi|steer|$kind|cpu" "pdi|chain|$kind|cpu")
      printf '| a steered hit at most 5 %% dearer than a normal one: CPU per answer %s, steered ÷ normal A / ÷ normal CNAME chain | %s / %s | %s / %s |\n' \
        "$([ "$kind" = sat ] && echo "at saturation" || echo "at $kind qps")" "$(fmt "$x" %.3f)" "$(fmt "$y" %.3f)" \
        "$(awk -v x="$x" 'BEGIN {print (x != "nan" && x <= 1.05) ? "yes" : "**no**"}')" "$(awk -v x="$y" 'BEGIN {print (x != "nan" && x <= 1.05) ? "yes" : "**no**"}')"
    done
    if [ "$CG_DONE" = 1 ]; then
      x=$(ratio "$(( (CG[steer|1] + CG[steer|2]) / 2 ))" "$(( (CG[normal|1] + CG[normal|2]) / 2 ))")
      y=$(ratio "$(( (CG[steer|1] + CG[steer|2]) / 2 ))" "$(( (CG[chain|1] + CG[chain|2]) / 2 ))")
      printf '| the same in instructions per answer in query_process (callgrind), steered ÷ normal A / ÷ normal CNAME chain | %s / %s | %s / %s |\n' \
        "$x" "$y" "$(awk -v x="$x" 'BEGIN {print (x != "nan" && x <= 1.05) ? "yes" : "**no**"}')" "$(awk -v x="$y" 'BEGIN {print (x != "nan" && x <= 1.05) ? "yes" : "**no**"}')"
    fi
    if has_hit ub; then
      x=$(rmed "pdi|steer|sat|qps" "ub|steer|sat|qps"); y=$(rmed "pdi|normal|sat|qps" "ub|normal|sat|qps")
      printf '| cache-hit throughput at least Unbound'"'"'s in the same run (saturation QPS ÷ Unbound'"'"'s for the same name: steered / normal) | %s / %s | %s |\n' \
        "$(fmt "$x" %.2f)" "$(fmt "$y" %.2f)" "$(awk -v x="$x" -v y="$y" 'BEGIN {print (x != "nan" && x >= 1 && y >= 1) ? "yes" : "**no**"}')"
    fi
  fi
} | tee "$W/aims-all.md"

# ------------------------------------------------------------ chart
if [ -n "$CHART" ]; then
  cat > "$W/chart.gp" <<EOF
set terminal svg size 1000,560 dynamic font "sans,11" background "#ffffff"
set output "$CHART"
set multiplot layout 1,2 title "13 cities, $NNAMES CDN names, GSLB with a perfect geo-IP database, 1 query in flight, cold caches\n(Unbound subnetcache's entries: the distinct answers it fetched; its ECS cache cannot be dumped)" font ",10"
set logscale xy
set grid
set yrange [1:*]
set key below left Left reverse maxrows 3 font ",9" samplen 2
set xlabel "client networks that have asked (IPv4 /24s + IPv6 /56s)"
set ylabel "queries that reached the GSLB (with and without ECS)"
EOF
  plots=() plots2=()
  k=0
  for s in "${SYSTEMS[@]}"; do
    f=$RES/chart-$s.dat
    [ -s "$f" ] || continue
    k=$((k + 1))
    label=$(sed -n '1s/^# [^(]*(\(.*\))$/\1/p' "$f")
    case $s in ub) col='#7f7f7f' ;; ub24) col='#d62728' ;; pdns) col='#ff7f0e' ;; dd) col='#9467bd' ;; pdi) col='#1f77b4' ;; *) col='#2ca02c' ;; esac
    style="with linespoints lw 2 lc rgb '$col' pt $k ps 1.2 dt $k"
    plots+=("'$f' using 1:(\$2 > 0 ? \$2 : 1/0) $style title '$label'")
    plots2+=("'$f' using 1:(\$4 > 0 ? \$4 : 1/0) $style title '$label'")
  done
  {
    printf 'plot %s\n' "$(IFS=,; echo "${plots[*]}")"
    echo 'set ylabel "cache entries for the CDN names"'
    printf 'plot %s\n' "$(IFS=,; echo "${plots2[*]}")"
    echo 'unset multiplot'
  } >> "$W/chart.gp"
  gnuplot "$W/chart.gp" 2> "$W/gnuplot.err" || pmsg "gnuplot failed: $(head -n 5 "$W/gnuplot.err")"
  [ -s "$CHART" ] && pmsg "chart: $CHART"
fi

exit 0
