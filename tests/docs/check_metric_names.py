#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The alert rules (docs/prometheus/alerts.yml) and the Grafana dashboard
(docs/grafana/partdns.json) name only metrics, labels and label values that
/metrics serves (resolver/ops/metrics.c): a family renamed there, or a typo
here, fails this check instead of leaving an alert that never fires or an
empty panel.

Usage: check_metric_names.py SOURCE_DIR [FILE...]
(FILE: rule files (.yml) and dashboards (.json) to check instead of the two.)
A dashboard must also take its datasource from the ${DS_PROMETHEUS} input on
every panel and query, and have an "instance" variable every query uses.

check_metric_names.py --as-rules DASHBOARD prints the dashboard's queries as
recording rules (Grafana's variables replaced), for promtool check rules.

Standard library only (run by the Debian /usr/bin/python3, no PyYAML): the
expressions of the rule file are read from its `expr:` lines, which must be
a plain one-line value or a `|` block (anything else is an error here).
"""
import json
import re
import sys

# Target labels Prometheus adds to every series, and its own series.
TARGET_LABELS = {"job", "instance"}
PROMETHEUS_SERIES = {"up"}
# PromQL words that are not metric names (functions are recognised by the
# "(" after them; these are the ones that need not have one).
KEYWORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
    "group_right", "offset", "bool", "inf", "nan", "atan2",
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
    "count_values", "bottomk", "topk", "quantile",
}
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


def exported(metrics_c):
    """Families, histogram families, label names and quoted strings of metrics.c."""
    src = open(metrics_c, encoding="utf-8").read()
    # a family's name starts a C string: "partdns_x" (an argument) or "partdns_x{..." (a format)
    families = set(re.findall(r'"(partdns_[a-z0-9_]+)(?=["{ ])', src))
    histograms = set(re.findall(r'"(partdns_[a-z0-9_]+)",\s*"histogram"', src))
    labels = set(re.findall(r'([a-z_][a-z0-9_]*)=\\"', src))
    strings = set(re.findall(r'\\?"([A-Za-z0-9_.+-]+)\\?"', src))
    return families, histograms, labels, strings


def exprs_of_rules(path):
    """(line, expression) of each expr: of a rule file."""
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r'^(\s*)(?:- )?expr:\s*(.*)$', lines[i])
        if not m:
            i += 1
            continue
        indent, rest = len(m.group(1)), m.group(2).strip()
        start = i + 1
        if rest == "|":
            body = []
            i += 1
            while i < len(lines) and (lines[i].strip() == "" or len(lines[i]) - len(lines[i].lstrip()) > indent):
                body.append(lines[i])
                i += 1
            out.append((start, "\n".join(body)))
            continue
        if rest == "" or rest[0] in "|>'\"[{&*!":
            raise SystemExit(f"{path}:{start}: expr: written as '{rest}', which this check does not read "
                             "(use a plain one-line value or a | block)")
        out.append((start, rest))
        i += 1
    return out


def exprs_of_dashboard(path):
    """(where, expression) of each target's expr and each query variable of a Grafana JSON model."""
    out = []

    def walk(node, where):
        if isinstance(node, dict):
            title = node.get("title")
            here = f"{where} / {title}" if isinstance(title, str) and title else where
            if isinstance(node.get("expr"), str):
                out.append((here + " expr", node["expr"]))
            if node.get("type") == "query" and "name" in node:
                q = node.get("query")
                q = q.get("query") if isinstance(q, dict) else q
                if isinstance(q, str) and q:
                    out.append((f"{here} variable {node['name']}", q))
            if isinstance(node.get("legendFormat"), str):
                out.append((here + " legend", "legend:" + node["legendFormat"]))
            for k, v in node.items():
                walk(v, here)
        elif isinstance(node, list):
            for v in node:
                walk(v, where)

    walk(json.load(open(path, encoding="utf-8")), path)
    return out


def dashboard_problems(path):
    """What a dashboard shared for import must have: the ${DS_PROMETHEUS} input on every panel and target,
    the instance variable, and every query filtered by it."""
    d = json.load(open(path, encoding="utf-8"))
    bad = []
    if not any(i.get("name") == "DS_PROMETHEUS" and i.get("pluginId") == "prometheus" for i in d.get("__inputs", [])):
        bad.append(f"{path}: no __inputs entry DS_PROMETHEUS (a prometheus datasource)")
    variables = {v.get("name") for v in d.get("templating", {}).get("list", [])}
    if "instance" not in variables:
        bad.append(f"{path}: no template variable 'instance'")
    panels = []

    def collect(ps):
        for p in ps:
            panels.append(p)
            collect(p.get("panels", []))
    collect(d.get("panels", []))
    ids = [p.get("id") for p in panels]
    if len(ids) != len(set(ids)):
        bad.append(f"{path}: panel ids are not unique")
    ntargets = 0
    for p in panels:
        if p.get("type") == "row":
            continue
        for what, ds in [("panel", p.get("datasource"))] + [("target " + t.get("refId", "?"), t.get("datasource"))
                                                             for t in p.get("targets", [])]:
            if not isinstance(ds, dict) or ds.get("uid") != "${DS_PROMETHEUS}":
                bad.append(f"{path}: {p.get('title')!r} {what}: datasource is not ${{DS_PROMETHEUS}}")
        if not p.get("targets"):
            bad.append(f"{path}: {p.get('title')!r} has no query")
        for t in p.get("targets", []):
            ntargets += 1
            if "$instance" not in t.get("expr", ""):
                bad.append(f"{path}: {p.get('title')!r} target {t.get('refId')}: not filtered by $instance")
    if ntargets < 20:
        bad.append(f"{path}: only {ntargets} queries found")
    return bad


def as_rules(path):
    """The dashboard's expressions as recording rules, Grafana's variables replaced, for promtool check rules."""
    print("groups:\n  - name: dashboard\n    rules:")
    for n, (where, expr) in enumerate(exprs_of_dashboard(path)):
        if expr.startswith("legend:"):
            continue
        m = re.fullmatch(r'\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*', expr, re.S)
        if m:
            expr = m.group(1)
        expr = re.sub(r'\$__(rate_interval|interval|range)\b', "5m", expr)
        expr = re.sub(r'\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?', ".*", expr)
        print(f"      - record: dashboard:expr_{n}\n        # {where}\n        expr: {json.dumps(expr)}")


def names_in(expr):
    """Metric names, label names and (label, op, value) matchers of a PromQL expression."""
    metrics, labels, matchers = [], [], []
    if expr.startswith("legend:"):
        return metrics, re.findall(r'\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}', expr), matchers
    # Grafana's label_values(EXPR, LABEL): the label is no metric
    m = re.fullmatch(r'\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*', expr, re.S)
    if m:
        metrics, labels, matchers = names_in(m.group(1))
        return metrics, labels + [m.group(2)], matchers
    s = expr
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c.isspace() or c in "()+-*/%^=!<>,":
            i += 1
        elif c == "#":  # a comment, to the end of the line
            while i < n and s[i] != "\n":
                i += 1
        elif c == '"' or c == "'" or c == "`":
            j = i + 1
            while j < n and s[j] != c:
                j += 2 if s[j] == "\\" else 1
            i = j + 1
        elif c == "[":  # a range or subquery: durations and Grafana variables
            i = s.index("]", i) + 1
        elif c == "{":
            j = s.index("}", i)
            body = s[i + 1:j]
            pos = 0
            while pos < len(body) and body[pos:].strip():
                m = MATCHER.match(body, pos)
                if not m:
                    raise ValueError(f"cannot read the matchers {{{body}}}")
                matchers.append((m.group(1), m.group(2), m.group(3)))
                pos = m.end()
            i = j + 1
        elif c.isdigit() or c == ".":
            j = i
            while j < n and (s[j].isalnum() or s[j] == "."):
                j += 1
            i = j
        elif c == "$":  # a Grafana variable outside a range
            j = i + 1
            while j < n and (s[j].isalnum() or s[j] in "_{}"):
                j += 1
            i = j
        elif c.isalpha() or c in "_:":
            j = i
            while j < n and (s[j].isalnum() or s[j] in "_:"):
                j += 1
            word = s[i:j]
            k = j
            while k < n and s[k].isspace():
                k += 1
            nxt = s[k] if k < n else ""
            if word in LABEL_LISTS and nxt == "(":
                end = s.index(")", k)
                labels += [w.strip() for w in s[k + 1:end].split(",") if w.strip()]
                i = end + 1
                continue
            if nxt != "(" and word not in KEYWORDS:
                metrics.append(word)
            i = j
        else:
            raise ValueError(f"unexpected {c!r} at {i}")
    return metrics, labels, matchers


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    if sys.argv[1] == "--as-rules":
        as_rules(sys.argv[2])
        return
    src = sys.argv[1]
    files = sys.argv[2:] or [f"{src}/docs/prometheus/alerts.yml", f"{src}/docs/grafana/partdns.json"]
    families, histograms, label_names, strings = exported(f"{src}/resolver/ops/metrics.c")
    # a floor, so a parse of metrics.c that finds nothing cannot pass
    if len(families) < 40 or len(histograms) < 2 or not {"partition", "rcode", "pool"} <= label_names:
        raise SystemExit(f"check_metric_names: read {len(families)} families, {len(histograms)} histograms, "
                         f"labels {sorted(label_names)} from resolver/ops/metrics.c: its parse no longer follows it")
    known = set(families) | PROMETHEUS_SERIES
    for h in histograms:
        known |= {h + "_bucket", h + "_sum", h + "_count"}
    label_names = label_names | TARGET_LABELS | {"le"}

    bad, nexpr, used = [], 0, set()
    for path in files:
        if path.endswith(".json"):
            bad += dashboard_problems(path)
            exprs = exprs_of_dashboard(path)
        else:
            exprs = exprs_of_rules(path)
        if not exprs:
            bad.append(f"{path}: no expression found")
        for where, expr in exprs:
            where = where if isinstance(where, str) else f"{path}:{where}"
            nexpr += not expr.startswith("legend:")
            try:
                metrics, labels, matchers = names_in(expr)
            except ValueError as e:
                bad.append(f"{where}: {e}: {expr!r}")
                continue
            for m in metrics:
                used.add(m)
                if m not in known:
                    bad.append(f"{where}: metric {m} is not served by /metrics (resolver/ops/metrics.c)")
            for lab in labels + [m[0] for m in matchers]:
                if lab not in label_names:
                    bad.append(f"{where}: label {lab} is on no family of resolver/ops/metrics.c")
            for lab, op, val in matchers:
                if op == "=" and lab not in TARGET_LABELS and "$" not in val and val not in strings:
                    bad.append(f"{where}: {lab}=\"{val}\": no such value in resolver/ops/metrics.c")
        # names in the prose too (annotations, panel descriptions): one renamed there is stale advice
        for no, line in enumerate(open(path, encoding="utf-8"), 1):
            for m in re.findall(r'\bpartdns_[a-z0-9_]*[a-z0-9]\b', line):
                if m not in known:
                    bad.append(f"{path}:{no}: {m} is not served by /metrics (resolver/ops/metrics.c)")
    for b in bad:
        print("check_metric_names: " + b, file=sys.stderr)
    print(f"check_metric_names: {nexpr} expressions in {len(files)} file(s), {len(used)} metric names, "
          f"{len(bad)} problem(s)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
