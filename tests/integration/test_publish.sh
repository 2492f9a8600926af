#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# server.http publishes the running partition plan for CDNs: /mapping.csv,
# /mapping.json and /geofeed.csv, the same bytes as partdnsctl mapping
# export, with ETag = partitions.serial (304 on If-None-Match) and
# Last-Modified = when the plan went live; a new plan moves both, a reload
# that keeps the plan moves neither. Clients outside server.http_allow are
# refused at accept; other methods and unknown paths get 405 and 404.
. "$(dirname "$0")/lib.sh"
harness_init publish
harness_start_all
pd_require_bins
command -v curl >/dev/null || die "curl is needed"
HPORT=$(it_free_port "$PD_ADDR" 9200 9249)
URL=http://$PD_ADDR:$HPORT
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i '/^partitions:/a\  serial: 2026120301' "$PD_CONF"
sed -i "/^server:/a\\  http: \"$PD_ADDR@$HPORT\"\\n  http_allow: [ 127.0.1.0/24 ]" "$PD_CONF"
partdns_start "$PD_CONF"
assert_contains "the log says where the plan is published" "publishing the partition plan on $PD_ADDR@$HPORT" \
  "$(cat "$IT_TMP/partdns.log")"

# fetch PATH [CURL-ARGS...]: status line, headers and body from an allowed client
fetch() { local p=$1; shift; curl -s -i --max-time 5 --interface 127.0.1.10 "$@" "$URL$p" | tr -d '\r'; }
header() { printf '%s\n' "$1" | sed -n "s/^$2: //Ip" | head -n 1; }
body() { printf '%s\n' "$1" | sed '1,/^$/d'; }
status() { printf '%s\n' "$1" | head -n 1 | awk '{print $2}'; }

r=$(fetch /mapping.csv)
assert_eq "GET /mapping.csv: 200" 200 "$(status "$r")"
assert_eq "... the bytes of partdnsctl mapping export --format csv" "$(pdctl mapping export --format csv)" "$(body "$r")"
assert_eq "... ETag = the plan serial" '"2026120301"' "$(header "$r" ETag)"
assert_eq "... as CSV" "text/csv; charset=utf-8" "$(header "$r" Content-Type)"
lm=$(header "$r" Last-Modified)
assert_match "... with a Last-Modified date" "^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT$" "$lm"
r=$(fetch /mapping.json)
assert_eq "GET /mapping.json: the JSON export" "$(pdctl mapping export --format json)" "$(body "$r")"
assert_eq "... as JSON" "application/json" "$(header "$r" Content-Type)"
r=$(fetch /geofeed.csv)
assert_eq "GET /geofeed.csv: the RFC 8805 export" "$("$PARTDNSCTL_BIN" -c "$PD_CONF" mapping export --format geofeed 2>/dev/null)" "$(body "$r")"

r=$(fetch /mapping.csv -H 'If-None-Match: "2026120301"')
assert_eq "If-None-Match with the serial: 304" 304 "$(status "$r")"
assert_eq "... and no body" "" "$(body "$r")"
r=$(fetch /mapping.csv -H 'If-None-Match: "2026120300", W/"2026120301"')
assert_eq "... also as a weak tag in a list" 304 "$(status "$r")"
r=$(fetch /mapping.csv -H 'If-None-Match: "2026120300"')
assert_eq "an older serial: the table (200)" 200 "$(status "$r")"

assert_eq "an unknown path: 404" 404 "$(status "$(fetch /etc/passwd)")"
assert_contains "... saying what exists" "/mapping.csv, /mapping.json and /geofeed.csv" "$(body "$(fetch /x)")"
assert_eq "POST: 405" 405 "$(status "$(fetch /mapping.csv -X POST -d x=1)")"
out=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 127.0.2.10 "$URL/mapping.csv"); rc=$?
assert_eq "a client outside http_allow gets no reply" "000" "$out"
assert_ne "... the connection fails" 0 "$rc"

# a reload that keeps the plan: same tag, same date
sleep 1.1
sed -i 's/^  timeout_ms: 1500$/  timeout_ms: 1400/' "$PD_CONF"
pdctl reload >/dev/null
r=$(fetch /mapping.csv)
assert_eq "a reload that keeps the plan keeps the ETag" '"2026120301"' "$(header "$r" ETag)"
assert_eq "... and Last-Modified" "$lm" "$(header "$r" Last-Modified)"

# a new plan: new tag, new date, the old tag gets the new table
sed -i 's/^  serial: 2026120301$/  serial: 2026120302/; s/mapped: 198.51.100.2,/mapped: 198.51.100.22,/' "$PD_CONF"
pdctl reload >/dev/null
r=$(fetch /mapping.csv -H 'If-None-Match: "2026120301"')
assert_eq "after a new plan the old tag gets 200" 200 "$(status "$r")"
assert_eq "... the new ETag" '"2026120302"' "$(header "$r" ETag)"
assert_contains "... the new table" "198.51.100.22" "$(body "$r")"
assert_ne "... a new Last-Modified" "$lm" "$(header "$r" Last-Modified)"
partdns_stop
it_done
