#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The alert rules load (promtool check rules docs/prometheus/alerts.yml) and
# pass their unit tests (promtool test rules tests/docs/alerts_test.yml: for
# each rule, series in which it fires and series in which it stays quiet).
# The Grafana dashboard's queries parse too (as recording rules, through
# check_metric_names.py --as-rules, when the Debian python is there).
# Skipped (77) without promtool (tools/deps.sh installs prometheus).
# Usage: check_alert_rules.sh SOURCE_DIR
set -u
SRC=${1:?usage: check_alert_rules.sh SOURCE_DIR}
if ! command -v promtool >/dev/null 2>&1; then
  echo "check_alert_rules: promtool not installed (tools/deps.sh installs prometheus): skipped"
  exit 77
fi
# relative paths, as the test file names its rule file relative to itself
cd "$SRC" || exit 1
fail=0
promtool check rules docs/prometheus/alerts.yml || fail=1
promtool test rules tests/docs/alerts_test.yml || fail=1
if [ -x /usr/bin/python3 ]; then
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' EXIT
  if /usr/bin/python3 tests/docs/check_metric_names.py --as-rules docs/grafana/partdns.json > "$tmp/dashboard.yml"; then
    echo "docs/grafana/partdns.json's queries:"
    promtool check rules "$tmp/dashboard.yml" || fail=1
  else
    fail=1
  fi
else
  echo "check_alert_rules: no /usr/bin/python3: the dashboard's queries not parsed"
fi
# every rule of alerts.yml has a test that fires it and one in which it is quiet
rules=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' docs/prometheus/alerts.yml | sort -u)
[ "$(wc -w <<<"$rules")" -ge 10 ] || { echo "check_alert_rules: only $(wc -w <<<"$rules") rules read from alerts.yml" >&2; fail=1; }
for r in $rules; do
  tests=$(awk -v r="$r" '
    /^ *alertname:/ { a = $2; next }
    /^ *exp_alerts: *\[\] *$/ { if (a == r) q = 1; next }
    /^ *exp_alerts: *$/ { if (a == r) f = 1; next }
    END { print (f ? "fires" : "") " " (q ? "quiet" : "") }' tests/docs/alerts_test.yml)
  [ "$tests" = "fires quiet" ] ||
    { echo "check_alert_rules: $r needs a test in which it fires and one in which it stays quiet (found:$tests)" >&2; fail=1; }
done
exit "$fail"
