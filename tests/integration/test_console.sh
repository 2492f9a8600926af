#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The operator's console on server.metrics: /status.json holds every city of
# the config with its mapped address, standby, rates and what its flagged
# names are steered to (checked with python's json module against the
# queries sent); server.metrics_allow answers 403 to a client outside it,
# on every path; the page / is self-contained (its CSP forbids anything
# else). Then headless chromium (selenium, Debian's chromium-driver) loads
# the page: no SEVERE console entry, every city shown, and the city this
# test fails over (partdnsctl partition failover, as test_failover.sh)
# turns red within a generous bound, the city it now shares a node with
# staying as it was. The browser part skips (77) without chromium.
. "$(dirname "$0")/lib.sh"
harness_init console
command -v curl >/dev/null 2>&1 || { echo "FAIL - curl not installed (tools/deps.sh installs it)"; exit 1; }
harness_start_all
pd_require_bins
PY=/usr/bin/python3
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i 's/{ name: nanjing, label: Nanjing,/{ name: nanjing, label: Nanjing, standby: suzhou,/' "$PD_CONF"

MPORT=$(it_free_port "$PD_ADDR" 9300 9349)
MURL=http://$PD_ADDR:$MPORT
# the address this host's own connections to PD_ADDR come from (the browser's, curl's without --interface)
SRC=$(ip -o route get "$PD_ADDR" 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
[ -n "$SRC" ] || SRC=127.0.0.1
# 127.0.9.0/24 is outside: it must get 403
sed -i "s|^  control: .*|&\n  metrics: \"$PD_ADDR@$MPORT\"\n  metrics_allow: [ \"$SRC/32\", 127.0.1.0/24 ]|" "$PD_CONF"
assert_contains "the config has metrics_allow" "metrics_allow: [ \"$SRC/32\", 127.0.1.0/24 ]" "$(cat "$PD_CONF")"
pdctl domain add video.customer.example >/dev/null
partdns_start "$PD_CONF"

# two cities ask: nanjing 3 times (1 resolution, 2 hits), suzhou once; a client in no partition twice
assert_eq "nanjing's node" "203.0.113.1" "$(dig_a 127.0.1.10 video.customer.example)"
dig_a 127.0.1.11 video.customer.example >/dev/null
dig_a 127.0.1.12 video.customer.example >/dev/null
assert_eq "suzhou's node" "203.0.113.2" "$(dig_a 127.0.2.10 video.customer.example)"
dig_a 127.0.9.10 static.customer.example >/dev/null
dig_a 127.0.9.11 static.customer.example >/dev/null

# code PATH [CURL-ARGS...]: the HTTP status (000: no answer in 3 s)
code() { local p=$1; shift; curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$@" "$MURL$p" 2>/dev/null; }
for p in / /status.json /metrics /health; do
  assert_eq "metrics_allow: 127.0.9.1 is outside: $p is 403" 403 "$(code "$p" --interface 127.0.9.1)"
  assert_eq "... 127.0.1.10 is inside: 200" 200 "$(code "$p" --interface 127.0.1.10)"
done
assert_contains "the 403 says why" "not in the allow list" "$(curl -s --max-time 3 --interface 127.0.9.1 "$MURL/")"
assert_eq "an unknown path is still 404 inside" 404 "$(code /nope --interface 127.0.1.10)"

# the page: HTML, a policy that loads nothing from anywhere, and nothing that names another origin
curl -s -D "$IT_TMP/page.hdr" -o "$IT_TMP/page.html" --max-time 3 "$MURL/"
hdr=$(tr -d '\r' < "$IT_TMP/page.hdr")
assert_contains "/ is HTML" "Content-Type: text/html" "$hdr"
assert_contains "/ forbids every other source (CSP)" "Content-Security-Policy: default-src 'none'; connect-src 'self';" "$hdr"
assert_eq "the page names no other origin (the SVG namespace aside)" "" \
  "$(grep -oE '(https?:)?//[a-zA-Z0-9.-]+' "$IT_TMP/page.html" | grep -v '^http://www.w3.org$' | sort -u)"
assert_eq "no src= or stylesheet link in the page" "" "$(grep -oE 'src=|rel="stylesheet"' "$IT_TMP/page.html")"

curl -s -D "$IT_TMP/json.hdr" -o "$IT_TMP/status.json" --max-time 3 "$MURL/status.json"
assert_contains "/status.json is not cached" "Cache-Control: no-store" "$(tr -d '\r' < "$IT_TMP/json.hdr")"
log "$(head -c 3000 "$IT_TMP/status.json")"
# check FILE: key=value lines of what the JSON says (a parse error prints parse=error)
check() {
  "$PY" - "$1" <<'EOF'
import json, math, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError as e:
    print("parse=error", e); sys.exit(0)
print("parse=ok")
c = {x["name"]: x for x in d["cities"]}
print("cities=" + ",".join(sorted(c)))
def num_ok(v, lo=0.0, hi=None):
    return v is None or (isinstance(v, (int, float)) and math.isfinite(v) and v >= lo and (hi is None or v <= hi))
print("numbers_sane=" + str(all(num_ok(x["qps"]) and num_ok(x["hit_ratio"], 0, 1) and all(num_ok(q) for q in x["qps_history"])
                               for x in d["cities"] + [d["common"]])).lower())
ages = d["history"]["ages_s"]
print("history_shape=" + str(ages[-1] == 0 and all(a > b for a, b in zip(ages, ages[1:]))
                             and all(len(x["qps_history"]) == len(ages) - 1 for x in d["cities"])).lower())
for n, x in sorted(c.items()):
    names = {m["name"]: m for m in x["names"]}
    v = names.get("video.customer.example.")
    print(f"{n}.queries={x['queries']} {n}.hits={x['hits']} {n}.mapped={','.join(x['mapped'])} {n}.standby={x['standby']}")
    print(f"{n}.video=" + (",".join(v["nodes"]) + " " + v["ecs"] if v else "-"))
    print(f"{n}.flags=failed_over:{x['failed_over']} elsewhere:{x['steered_elsewhere']} ecs_ignored:{x['ecs_ignored']} alarm:{x['alarm']}")
    if v:
        print(f"{n}.with=" + ",".join(v["with"]))
print("latency=" + d["latency"]["scope"] + " per_city:" + str(d["latency"]["per_city"]))
print("unmatched=" + ",".join(f"{u['network']}:{u['queries']}" for u in d["unmatched"]))
print(f"plan_serial={d['plan']['serial']} store_version_int={isinstance(d['store']['version'], int)} fleet={d['fleet']}")
EOF
}
# val KEY: the value of KEY in the last check's output
val() { printf '%s\n' "$CHK" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
CHK=$(check "$IT_TMP/status.json")
log "$CHK"
assert_eq "/status.json parses" ok "$(val parse)"
assert_eq "every city of the config is in it" "nanjing,suzhou,wuxi" "$(val cities)"
assert_eq "rates are numbers, >= 0, ratios within 0..1" true "$(val numbers_sane)"
assert_eq "the history: ages falling to 0, one rate per interval per city" true "$(val history_shape)"
assert_eq "nanjing's queries, as sent" 3 "$(val nanjing.queries)"
assert_eq "... of which hits" 2 "$(val nanjing.hits)"
assert_eq "suzhou's queries" 1 "$(val suzhou.queries)"
assert_eq "wuxi asked nothing" 0 "$(val wuxi.queries)"
assert_eq "nanjing's mapped address" 198.51.100.1 "$(val nanjing.mapped)"
assert_eq "nanjing is on its own identity" None "$(val nanjing.standby)"
assert_eq "nanjing's flagged name: its node, ECS echoed" "203.0.113.1 echoed" \
  "$(printf '%s\n' "$CHK" | sed -n 's/^nanjing.video=//p')"
assert_eq "suzhou's: its own" "203.0.113.2 echoed" "$(printf '%s\n' "$CHK" | sed -n 's/^suzhou.video=//p')"
assert_eq "wuxi has no flagged answer" "-" "$(val wuxi.video)"
for city in nanjing suzhou wuxi; do
  assert_eq "$city is not red" "failed_over:False elsewhere:False ecs_ignored:False alarm:False" \
    "$(printf '%s\n' "$CHK" | sed -n "s/^$city.flags=//p")"
done
assert_eq "latency is said to be global, not per city" "global per_city:False" \
  "$(printf '%s\n' "$CHK" | sed -n 's/^latency=//p')"
assert_eq "unmatched networks, busiest first" "127.0.9.0/24:2" "$(val unmatched | cut -d, -f1)"
assert_eq "no plan serial in this config" None "$(val plan_serial)"
assert_eq "store version is a number" True "$(val store_version_int)"

# the browser: skip (77) when it is not installed, after the checks above
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || ! "$PY" -c 'import selenium' 2>/dev/null; then
  # the checks above count: a failure among them fails the test, else it is skipped
  [ "$IT_FAIL" -eq 0 ] || die "the checks before the browser failed"
  partdns_stop
  skip "chromium, chromium-driver or python3-selenium missing (tools/deps.sh installs them)"
fi
# what the browser test does meanwhile: fail nanjing over and ask as nanjing until the answer is suzhou's node
cat > "$IT_TMP/failover.sh" <<EOF
"$PARTDNSCTL_BIN" -c "$PD_CONF" partition failover nanjing || exit 1
for i in \$(seq 40); do
  a=\$(dig +short +time=1 +tries=1 -b 127.0.1.10 @"$PD_ADDR" -p "$PD_PORT" video.customer.example A | tail -n 1)
  [ "\$a" = 203.0.113.2 ] && exit 0
  sleep 0.1
done
exit 1
EOF
"$PY" "$IT_LIB_DIR/console_browser.py" --url "$MURL/" --red nanjing --action "$IT_TMP/failover.sh" --timeout 20 \
  > "$IT_TMP/browser.out" 2> "$IT_TMP/browser.err"
st=$?
log "browser: $(cat "$IT_TMP/browser.out") $(tail -n 30 "$IT_TMP/browser.err")"
[ "$st" != 2 ] || skip "chromium did not start: $(tail -n 3 "$IT_TMP/browser.err")"
assert_eq "console_browser.py ran" 0 "$st"
B=$(cat "$IT_TMP/browser.out")
bv() { printf '%s\n' "$B" | sed -n "s/^$1=//p" | head -n 1; }
assert_eq "the page loaded and refreshed from /status.json" 1 "$(bv loaded)"
assert_eq "every city of the config is on the page" "nanjing,suzhou,wuxi" "$(bv cities)"
assert_eq "no city red before the failover" "" "$(bv red_before)"
assert_eq "a QPS line per city in the chart" 3 "$(bv lines)"
assert_contains "the page says latency is not per city" "no per-city figures" "$(bv latency_text)"
assert_eq "the failover and nanjing's new answer happened" 0 "$(bv action_rc)"
assert_ne "nanjing's row turned red within 20 s" "-1.0" "$(bv red_after_s)"
assert_eq "... red by its computed style" "rgb(255, 214, 214)" "$(bv bg)"
assert_eq "... saying why" "failed over, steered to another city’s node" "$(bv state)"
assert_eq "only nanjing is red: suzhou, whose node nanjing now gets, is not" "nanjing" "$(bv red_end)"
assert_eq "nothing loaded from another origin" 0 "$(bv foreign)"
assert_eq "no SEVERE entry in the browser's console" 0 "$(bv severe)"
assert_eq "the console log is really read (a console.error of ours shows)" 1 "$(bv probe_seen)"

curl -s -o "$IT_TMP/status2.json" --max-time 3 "$MURL/status.json"
CHK=$(check "$IT_TMP/status2.json")
log "$CHK"
assert_eq "after the failover: nanjing on standby as suzhou" suzhou "$(val nanjing.standby)"
assert_eq "... its name answered with suzhou's node" "203.0.113.2 echoed" \
  "$(printf '%s\n' "$CHK" | sed -n 's/^nanjing.video=//p')"
assert_eq "... flagged failed over and steered elsewhere" "failed_over:True elsewhere:True ecs_ignored:False alarm:True" \
  "$(printf '%s\n' "$CHK" | sed -n 's/^nanjing.flags=//p')"
assert_eq "... to suzhou's node" suzhou "$(val nanjing.with)"
assert_eq "suzhou is not flagged (nanjing stands in for it)" "failed_over:False elsewhere:False ecs_ignored:False alarm:False" \
  "$(printf '%s\n' "$CHK" | sed -n 's/^suzhou.flags=//p')"
partdns_stop
it_done
