#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Deckard conformance run (not a test): CZ.NIC's scripted-upstream resolver
# scenarios against partdns and against Unbound, on the same harness.
#
# Usage (as root: every scenario runs in a network namespace of its own):
#   bench/deckard.sh [DECKARD] [BUILD_DIR]
#     DECKARD    a Deckard checkout, or a bare git directory of one (its HEAD
#                is exported); default $DECKARD_DIR. Nothing is downloaded:
#                the harness is not part of this tree.
#     BUILD_DIR  partdns' build, default build/ (resolver/partdns in it)
#   DECKARD_JOBS   scenarios run at once (pytest-xdist), default 2
#   DECKARD_ONLY   "partdns" or "unbound": run one server only
#   DECKARD_TESTS  a scenario file or directory (default sets/resolver)
#   DECKARD_KEEP   1 keeps the temporary tree (its path is printed)
#   DECKARD_HARDEN_REFERRAL_PATH  yes or no (default no, Unbound's own
#                  default): Deckard's unbound.j2 says yes, and then both
#                  servers also ask for the addresses of every referral's
#                  nameservers (K.ROOT-SERVERS.NET A...), which most scenarios
#                  never define: they fail on "the scenario does not define
#                  all necessary answers" whatever they test (on this harness
#                  Unbound passed 76 of 281 runs so, partdns 71)
#
# Deckard runs each scenario (sets/resolver/*.rpl) with query minimisation
# on and off unless the scenario fixes it: one "run" is one of those. Its
# harness is used from a temporary copy with three changes for this machine:
#   - the kernel has no `dummy` link type: the scenario's addresses sit on a
#     veth pair instead (networking.py);
#   - IPv6 duplicate-address detection is off in each scenario's namespace,
#     else the scenario's IPv6 addresses stay tentative and cannot be bound;
#   - `lief` (used only to refuse binaries linked with jemalloc) is not
#     packaged in Debian 12: a stub that reports no libraries.
# and two for libfaketime 0.9.10. Python 3.11's time.sleep() fails under it
# with EINVAL (libfaketime issue 426), and Deckard sleeps between its tries to
# bind a scenario's server addresses: one refused bind (EADDRNOTAVAIL, a new
# address not usable yet) failed the whole run. A sitecustomize.py in the
# copy (on PYTHONPATH) sleeps with select() instead, which works. And the
# servers run without FAKETIME_SHARED
# (DECKARD_WRAPPER). With it, a process whose libraries read the clock in
# their constructors (partdns links GnuTLS through libcurl) initialises
# libfaketime twice, and the second time takes its start from the shared
# segment (when pytest started) instead of the scenario's timestamp: partdns'
# clock began seconds ahead and a 10 s TIME_PASSES moved it only ~6 s
# (iter_nottl failed on that alone). Unbound is unaffected either way.
# partdns runs with bench/deckard/partdns.j2, which gives libunbound the
# options Deckard's own template/unbound.j2 gives Unbound.
#
# Prints both pass counts and the runs partdns fails that Unbound passes;
# the JUnit files and logs stay in the temporary tree with DECKARD_KEEP=1.
# Each scenario works in a /tmp/tmpdeckard* directory of Deckard's own (kept
# when it fails): removing those while a run goes on fails the scenarios in
# flight with "No such file ... .time".
set -u -o pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DECKARD=${1:-${DECKARD_DIR:-}}
BUILD_DIR=${2:-$SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac
JOBS=${DECKARD_JOBS:-2}
ONLY=${DECKARD_ONLY:-}
TESTS=${DECKARD_TESTS:-sets/resolver}
HRP=${DECKARD_HARDEN_REFERRAL_PATH:-no}
case $HRP in yes | no) ;; *) echo "DECKARD_HARDEN_REFERRAL_PATH: yes or no" >&2; exit 1 ;; esac
PY=/usr/bin/python3

bmsg() { printf '[deckard] %s\n' "$*" >&2; }
bdie() { printf '[deckard] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || bdie "run as root (each scenario makes a network namespace)"
[ -n "$DECKARD" ] || bdie "no Deckard: give its checkout (or bare git dir) as the first argument or in DECKARD_DIR"
[ -e "$DECKARD" ] || bdie "no such Deckard: $DECKARD"
PARTDNS_BIN=$BUILD_DIR/resolver/partdns
[ "$ONLY" = unbound ] || [ -x "$PARTDNS_BIN" ] || bdie "no $PARTDNS_BIN: build first"

# Debian packages only, installed when missing (Deckard's requirements.txt
# less lief; dumpcap records each scenario's packets; faketime moves the
# clock as the scenarios say).
PKGS="python3-dnspython python3-jinja2 python3-pyroute2 python3-pytest python3-pytest-xdist
      python3-pytest-forked python3-dpkt python3-yaml python3-augeas augeas-lenses faketime
      libfaketime wireshark-common unbound"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=" $p"
done
if [ -n "$missing" ]; then
	bmsg "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing >&2 ||
		bdie "apt-get install failed (run 'apt-get update' first?)"
fi
UNBOUND_BIN=$(command -v unbound || echo /usr/sbin/unbound)

TMP=$(mktemp -d /tmp/deckard-run.XXXXXX)
cleanup() { if [ "${DECKARD_KEEP:-0}" = 1 ]; then bmsg "kept $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT
D=$TMP/deckard
mkdir -p "$D"
if [ ! -f "$DECKARD/deckard.py" ] && git --git-dir="$DECKARD" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	git --git-dir="$DECKARD" archive --format=tar HEAD | tar -x -C "$D" || bdie "cannot export $DECKARD"
	DECKARD_REV=$(git --git-dir="$DECKARD" rev-parse --short HEAD)
else
	cp -a "$DECKARD/." "$D/" || bdie "cannot copy $DECKARD"
	DECKARD_REV=$(git -C "$DECKARD" rev-parse --short HEAD 2>/dev/null || echo unknown)
fi
[ -f "$D/deckard.py" ] && [ -f "$D/networking.py" ] || bdie "$DECKARD is not a Deckard tree"

# The three harness changes, each checked to have applied.
"$PY" - "$D" <<'EOF' || bdie "cannot patch Deckard's harness"
import sys, pathlib
d = pathlib.Path(sys.argv[1])
net = d / "networking.py"
t = net.read_text()
old = '        self._ip.link("add", ifname=self.interface, kind="dummy")\n'
new = ('        # bench/deckard.sh: no dummy links on this kernel, a veth pair instead;\n'
       '        # DAD off, else IPv6 addresses stay tentative and cannot be bound\n'
       '        for conf in ("all", "default"):\n'
       '            with open(f"/proc/sys/net/ipv6/conf/{conf}/accept_dad", "w") as f:\n'
       '                f.write("0")\n'
       '        self._ip.link("add", ifname=self.interface, kind="veth", peer=self.interface + "-p")\n'
       '        peer = self._ip.link_lookup(ifname=self.interface + "-p")[0]\n'
       '        self._ip.link("set", index=peer, state="up")\n')
if old not in t:
    sys.exit("networking.py: the dummy link line was not found")
net.write_text(t.replace(old, new))
(d / "lief.py").write_text(
    "# bench/deckard.sh: a stub; Deckard uses lief only to find libjemalloc among\n"
    "# a binary's libraries (incompatible with faketime). Neither server links it.\n"
    "class _Binary:\n"
    "    libraries = []\n"
    "def parse(path):\n"
    "    return _Binary()\n")
EOF
cat > "$D/sitecustomize.py" <<'SITE'
# bench/deckard.sh: time.sleep() through select(), which libfaketime 0.9.10
# lets through (its clock_nanosleep fails with EINVAL under Python 3.11).
import select
import time


def _sleep(seconds):
    select.select([], [], [], max(0.0, seconds))


time.sleep = _sleep
SITE
sed -e "s|@PARTDNS@|$PARTDNS_BIN|" "$SRC/bench/deckard/partdns.yaml" > "$D/configs/partdns.yaml"
sed -e "s|harden-referral-path: \"yes\"|harden-referral-path: \"$HRP\"|" "$SRC/bench/deckard/partdns.j2" > "$D/template/partdns.j2"
sed -i -e "s|^  binary: unbound$|  binary: $UNBOUND_BIN|" "$D/configs/unbound.yaml"
sed -i -e "s|^\tharden-referral-path: yes$|\tharden-referral-path: $HRP|" "$D/template/unbound.j2"
grep -q "harden-referral-path: \"$HRP\"" "$D/template/partdns.j2" &&
	grep -q "harden-referral-path: $HRP\$" "$D/template/unbound.j2" || bdie "cannot set harden-referral-path in the templates"

# run NAME: every scenario against one server; JUnit report in $TMP/NAME-*.xml.
# As Deckard's run.sh: scenarios marked "monotonic" with the monotonic clock
# faked too, the others without.
run() {
	local name=$1 mark
	for mark in monotonic "not monotonic"; do
		local excl="" tag=mono
		[ "$mark" = monotonic ] || { excl=--exclude-monotonic; tag=nonmono; }
		(cd "$D" && PYTHONPATH=$D DECKARD_WRAPPER="env -u FAKETIME_SHARED" faketime -m $excl "" "$PY" -m pytest -c deckard_pytest.ini -q -p no:cacheprovider \
			--tb=line -n "$JOBS" --forked --config "configs/$name.yaml" --scenarios "$TESTS" \
			-m "$mark" --junitxml="$TMP/$name-$tag.xml" > "$TMP/$name-$tag.log" 2>&1)
		local rc=$?
		# 0 all passed, 1 some failed, 5 none collected: anything else is the harness
		case $rc in 0 | 1 | 5) ;; *) tail -n 30 "$TMP/$name-$tag.log" >&2; bdie "pytest for $name ($tag) ended with $rc" ;; esac
	done
}

servers="partdns unbound"
[ -z "$ONLY" ] || servers=$ONLY
start=$(date +%s)
for s in $servers; do
	bmsg "running $TESTS against $s ($JOBS at once)"
	run "$s"
done
bmsg "done in $(($(date +%s) - start)) s"

"$PY" - "$TMP" "$DECKARD_REV" "$HRP" $servers <<'EOF'
import sys, glob, re, xml.etree.ElementTree as ET
tmp, rev, hrp, servers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def results(name):
    out = {}
    for f in glob.glob(f"{tmp}/{name}-*.xml"):
        for tc in ET.parse(f).getroot().iter("testcase"):
            m = re.search(r"test_passes_qmin_(on|off)\[.*?([^/\]]+)\.rpl", tc.get("name", ""))
            if not m:
                continue
            key = f"{m.group(2)} (qmin {m.group(1)})"
            kids = {c.tag for c in tc}
            if "skipped" in kids:
                continue
            fail = next((c for c in tc if c.tag in ("failure", "error")), None)
            msg = ""
            if fail is not None:  # the last exception pytest printed, e.g. Deckard's ValueError
                text = (fail.text or "") + "\n" + (fail.get("message") or "")
                found = re.findall(r"E   (\w+: .*)", text)
                msg = (found[-1] if found else text.strip().splitlines()[-1])[:200]
            out[key] = (fail is None, msg)
    return out
res = {s: results(s) for s in servers}
print(f"Deckard {rev}, sets/resolver, harden-referral-path {hrp}")
for s in servers:
    r = res[s]
    print(f"{s}: {sum(ok for ok, _ in r.values())} of {len(r)} runs passed")
if len(servers) == 2:
    a, b = res[servers[0]], res[servers[1]]
    worse = sorted(k for k in a if not a[k][0] and k in b and b[k][0])
    better = sorted(k for k in a if a[k][0] and k in b and not b[k][0])
    print(f"\n{servers[0]} fails, {servers[1]} passes ({len(worse)}):")
    for k in worse:
        print(f"  {k}: {a[k][1]}")
    print(f"\n{servers[0]} passes, {servers[1]} fails ({len(better)}):")
    for k in better:
        print(f"  {k}")
EOF
