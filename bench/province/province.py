#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The province benchmark's data work (bench/province.sh calls it; stdlib only).

  province.py gen DIR TABLE_YAML TABLE_PLAIN --names N1,N2 --v4-nets N --v6-nets N --phases A,B,..
      the client population and every file derived from the partition table:
      partitions.yaml (partdns-gen's table + each city's loopback "public"
      stand-in), clients.tsv, phase-K.q (query files), geo-full.geo and
      geo-mapped.geo (knot mod-geoip, subnet mode), pdns-proxy.lua
      (addProxyMapping), dnsdist-ecs.lua (SetECSAction per city), routes.txt
      (the prefixes to make local), cities.tsv
  province.py tap FILE.txt
      kdig -G's text of a dnstap response log (stdin) -> "QNAME QTYPE ECS SCOPE TO RCODE" lines
  province.py run DIR RUNDIR
      one run's figures (JSON on stdout) from its client answers, the servers'
      logs and the cache snapshots
  province.py report DIR RESULTS_DIR
      the markdown tables (stdout) and the chart's data files
"""
import ipaddress
import json
import os
import random
import re
import sys
from collections import defaultdict

NODE = "203.0.113.%d"          # city i's CDN node (TEST-NET-3), i = 1..13
DEFAULT_NODE = "192.0.2.1"     # the GSLB's answer for an address it cannot place
RESOLVER_SRC = "127.0.0.1/32"  # where the systems' queries come from: the GSLB places it in Nanjing
PUBLIC_STANDIN = "127.%d.0.0/16"  # city i's "public" client range (64 + i - 1): see gen()

PRIVATE = [ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8",
    "fc00::/7", "fe80::/10", "::1/128")]


def die(msg):
    sys.stderr.write("province.py: %s\n" % msg)
    sys.exit(1)


# ---------------------------------------------------------------- gen

def read_table(plain):
    """PREFIX CITY lines -> ordered {city: [networks]}."""
    cities = {}
    with open(plain) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            p, c = line.split()
            cities.setdefault(c, []).append(ipaddress.ip_network(p))
    return cities


def classify4(net):
    if net.subnet_of(ipaddress.ip_network("100.64.0.0/10")):
        return "cgnat"
    if net.is_private:
        return "private"
    return "public"


def pick_addr(rng, net, inside):
    """A host address of network `net` (a /24 or /56) that is inside prefix `inside`."""
    box = net if net.prefixlen >= inside.prefixlen else inside
    if box.version == 4:
        lo = int(box.network_address) + (1 if box.prefixlen <= 24 else 0)
        hi = int(box.broadcast_address) - (1 if box.prefixlen <= 24 else 0)
    else:
        lo = int(box.network_address) + 1
        hi = int(box.broadcast_address)
    return ipaddress.ip_address(rng.randint(lo, max(lo, hi)))


def sub_at(rng, prefix, plen):
    """A random /plen inside prefix (or the /plen holding it when it is longer)."""
    if prefix.prefixlen >= plen:
        return prefix.supernet(new_prefix=plen)
    k = rng.randrange(1 << (plen - prefix.prefixlen))
    base = int(prefix.network_address) + (k << (prefix.max_prefixlen - plen))
    return ipaddress.ip_network((base, plen))


def gen(args):
    d = args.dir
    rng = random.Random(args.seed)
    table = read_table(args.plain)
    cities = list(table)
    if len(cities) != 13:
        die("expected 13 cities in %s, found %d" % (args.plain, len(cities)))
    mapped, mapped6 = {}, {}
    for i, c in enumerate(cities):
        mapped[c] = ipaddress.ip_network("198.51.100.%d/32" % (i + 1))
        mapped6[c] = ipaddress.ip_network("2001:db8:%x::/56" % (i + 1))
        if mapped[c] not in table[c]:
            die("%s's mapped address is not its first prefix" % c)
    # Each city's public prefixes from partdns-gen are real public space, which
    # this machine must not route locally: its public clients come from a
    # loopback stand-in instead, 127.(64+i).0.0/16, added to its partition.
    standin = {c: ipaddress.ip_network(PUBLIC_STANDIN % (64 + i)) for i, c in enumerate(cities)}

    # partitions.yaml: partdns-gen's yaml with the stand-in after each "prefixes:"
    out, city = [], None
    with open(args.yaml) as f:
        for line in f:
            out.append(line)
            m = re.match(r"\s*- name: (\S+)", line)
            if m:
                city = m.group(1)
            if line.strip() == "prefixes:":
                indent = line[:len(line) - len(line.lstrip())] + "  "
                out.append("%s- %s   # bench/province.sh: stand-in for the public prefixes\n" % (indent, standin[city]))
    with open(os.path.join(d, "partitions.yaml"), "w") as f:
        f.writelines(out)

    # client population
    weights = [12, 16, 9, 7, 11, 9, 5, 4, 6, 8, 6, 5, 6]  # rough shares of the 13 cities
    tw = sum(weights)
    cand = {}
    for c in cities:
        cls = defaultdict(list)
        for p in table[c]:
            if p.version == 4:
                if p == mapped[c]:
                    continue
                k = classify4(p)
                if k != "public":     # real public space: not used for clients (see above)
                    cls[k].append(p)
            else:
                if p == mapped6[c]:
                    continue
                if p.subnet_of(ipaddress.ip_network("2001:db8::/32")) or p.subnet_of(ipaddress.ip_network("fd00::/8")):
                    cls["v6"].append(p)
        cls["public"] = [standin[c]]
        cand[c] = cls

    def draw_prefix(ps):
        # by size (bigger prefixes hold more networks), capped so small ones appear too
        ws = [min(1 << max(0, (24 if p.version == 4 else 56) - p.prefixlen), 256) for p in ps]
        return rng.choices(ps, weights=ws)[0]

    nets = []   # (net, city, prefix, klass)
    seen = set()
    mix4 = [("public", 40), ("private", 35), ("cgnat", 25)]
    for want, fam in ((args.v4_nets, 4), (args.v6_nets, 6)):
        n = 0
        tries = 0
        while n < want:
            tries += 1
            if tries > want * 200:
                die("cannot draw %d distinct IPv%d networks" % (want, fam))
            c = rng.choices(cities, weights=weights)[0]
            if fam == 4:
                k = rng.choices([m[0] for m in mix4], weights=[m[1] for m in mix4])[0]
                if not cand[c][k]:
                    continue
                p = draw_prefix(cand[c][k])
                net = sub_at(rng, p, 24)
            else:
                k = "v6"
                p = draw_prefix(cand[c][k])
                net = sub_at(rng, p, 56)
            if net in seen:
                continue
            seen.add(net)
            nets.append((net, c, p, k))
            n += 1
    rng.shuffle(nets)
    clients = []   # (addr, city, net, klass, phase)
    phases = [int(x) for x in args.phases.split(",") if x] + [len(nets)]
    phases = sorted(set(min(x, len(nets)) for x in phases))
    ph = 0
    addrs = set()
    for idx, (net, c, p, k) in enumerate(nets):
        while idx >= phases[ph]:
            ph += 1
        for _ in range(rng.randint(1, 9)):   # 5 a network on average
            a = pick_addr(rng, net, p)
            if a in addrs:
                continue
            addrs.add(a)
            clients.append((a, c, net, k, ph))
    names = args.names.split(",")
    with open(os.path.join(d, "clients.tsv"), "w") as f:
        for a, c, net, k, ph in clients:
            f.write("%s\t%s\t%s\t%s\t%d\n" % (a, c, net, k, ph))
    for ph in range(len(phases)):
        qs = [(str(a), n) for a, c, net, k, p in clients if p == ph for n in names]
        rng.shuffle(qs)
        with open(os.path.join(d, "phase-%d.q" % ph), "w") as f:
            for a, n in qs:
                f.write("%s %s\n" % (a, n))
    with open(os.path.join(d, "phases.tsv"), "w") as f:
        for ph, upto in enumerate(phases):
            v4 = sum(1 for net, *_ in nets[:upto] if net.version == 4)
            f.write("%d\t%d\t%d\t%d\n" % (ph, upto, v4, upto - v4))
    with open(os.path.join(d, "cities.tsv"), "w") as f:
        for i, c in enumerate(cities):
            f.write("%s\t%d\t%s\t%s\t%s\n" % (c, i + 1, mapped[c], mapped6[c], NODE % (i + 1)))

    # every prefix the benchmark makes local (client sources)
    with open(os.path.join(d, "routes.txt"), "w") as f:
        for r in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "2001:db8::/32", "fd00::/8"):
            f.write(r + "\n")

    # the GSLB: every CDN name, per city: the mapped /32 and /56 (both
    # variants), all of the city's prefixes (full); the resolvers' own
    # address sits in Nanjing (a LocalDNS without ECS is placed there)
    cdn = [n for n in args.gslb_names.split(",")]
    # The full variant knows every prefix of every city, at no finer grain than
    # an ECS source prefix can ask (/24, /56): a prefix longer than that is
    # listed as the /24 (/56) holding it.  knotd's mod-geoip looks up the ECS
    # address (the /24's first address), which a longer prefix may not hold:
    # such a /24 would get the default answer with scope /0, which a
    # subnetcache stores for every client (seen in the benchmark's first run).
    # Cities' pools are disjoint above /20, so no /24 belongs to two cities.
    known = {}
    for i, c in enumerate(cities):
        lst = [standin[c]]
        for p in table[c]:
            if p == mapped[c] or p == mapped6[c]:
                continue
            g = 24 if p.version == 4 else 56
            q = p if p.prefixlen <= g else p.supernet(new_prefix=g)
            owner = known.setdefault(q, c)
            if owner != c:
                die("%s is in %s and %s" % (q, owner, c))
            if q not in lst:
                lst.append(q)
        known[c] = lst
    for variant in ("full", "mapped"):
        with open(os.path.join(d, "geo-%s.geo" % variant), "w") as f:
            f.write("# bench/province.sh: GSLB, variant %s\n" % variant)
            for n in cdn:
                f.write("%s:\n" % n)
                f.write("  - net: %s\n    A: %s\n" % (RESOLVER_SRC, NODE % 1))
                for i, c in enumerate(cities):
                    nets_c = [mapped[c], mapped6[c]]
                    if variant == "full":
                        nets_c += known[c]
                    for p in nets_c:
                        f.write("  - net: %s\n    A: %s\n" % (p, NODE % (i + 1)))

    # PowerDNS Recursor: every prefix of a city proxy-mapped to its mapped address
    with open(os.path.join(d, "pdns-proxy.lua"), "w") as f:
        f.write("-- bench/province.sh: each city's prefixes -> its mapped address\n")
        for c in cities:
            for p in [standin[c]] + table[c]:
                if p == mapped[c]:
                    continue
                f.write('addProxyMapping("%s", "%s")\n' % (p, mapped[c].network_address))

    # dnsdist: one netmask group per city, ECS = its mapped /32 (and /56)
    with open(os.path.join(d, "dnsdist-ecs.lua"), "w") as f:
        f.write("-- bench/province.sh: ECS per city\n")
        for i, c in enumerate(cities):
            f.write("local nmg%d = newNMG()\n" % i)
            for p in [standin[c]] + table[c]:
                f.write('nmg%d:addMask("%s")\n' % (i, p))
            # one fixed ECS per city: without a v6 argument dnsdist uses it for IPv6 clients too
            f.write('addAction(NetmaskGroupRule(nmg%d, true), SetECSAction("%s"))\n' % (i, mapped[c]))

    v4n = sum(1 for n in nets if n[0].version == 4)
    v4a = sum(1 for a in clients if a[0].version == 4)
    sys.stdout.write("clients %d (IPv4 %d in %d /24s, IPv6 %d in %d /56s), classes %s, phases %s\n" % (
        len(clients), v4a, v4n, len(clients) - v4a, len(nets) - v4n,
        dict(sorted(defaultdict(int, ((k, sum(1 for x in clients if x[3] == k)) for k in ("public", "private", "cgnat", "v6"))).items())),
        ",".join(map(str, phases))))


# ---------------------------------------------------------------- tap

def tap(_args):
    """kdig -G text (stdin) -> QNAME QTYPE ECS SCOPE TO RCODE."""
    q = None

    def emit():
        if q and q.get("name"):
            sys.stdout.write("%s %s %s %s %s %s\n" % (q["name"], q.get("type", "-"), q.get("ecs", "-"),
                                                      q.get("scope", "-"), q.get("to", "-"), q.get("rcode", "-")))
    inq = False
    for line in sys.stdin:
        if line.startswith(";; ->>HEADER<<-"):
            emit()
            q = {}
            m = re.search(r"status: (\w+)", line)
            q["rcode"] = m.group(1) if m else "-"
            inq = False
        elif q is None:
            continue
        elif line.startswith(";; CLIENT-SUBNET:"):
            parts = line.split()[2].split("/")
            q["ecs"] = parts[0] + "/" + parts[1]
            q["scope"] = parts[2] if len(parts) > 2 else "-"
        elif line.startswith(";; QUESTION SECTION:"):
            inq = True
        elif inq and line.startswith(";; ") and len(line.split()) >= 4:
            f = line.split()
            q["name"], q["type"] = f[1], f[3]
            inq = False
        elif line.startswith(";; To "):
            q["to"] = line.split()[2].split("@")[0]
    emit()


# ---------------------------------------------------------------- run

def load_cities(d):
    cities = []
    with open(os.path.join(d, "cities.tsv")) as f:
        for line in f:
            c, i, m4, m6, node = line.split()
            cities.append({"name": c, "i": int(i), "mapped": m4, "mapped6": m6, "node": node})
    return cities


def load_clients(d):
    cl = {}
    with open(os.path.join(d, "clients.tsv")) as f:
        for line in f:
            a, c, net, k, ph = line.split()
            cl[a] = (c, net, k, int(ph))
    return cl


# systems that cannot dump their ECS cache: entries = distinct <name, type, ECS> answers the GSLB sent
PROXY_ENTRIES = ("ub24", "dd")


def run(args):
    """Figures of one run directory (see province.sh for the layout)."""
    d, rd = args.dir, args.rundir
    cities = load_cities(d)
    node = {c["name"]: c["node"] for c in cities}
    mapped_ecs = set()
    for c in cities:
        mapped_ecs.add(c["mapped"])
        mapped_ecs.add(c["mapped6"])
    clients = load_clients(d)
    meta = json.load(open(os.path.join(rd, "meta.json")))
    nph = meta["phases"]
    names = meta["names"]
    gslb_names = meta["gslb_names"]
    res = {"meta": meta, "phases": []}
    # client answers
    tot = ok = fail = 0
    per_class = defaultdict(lambda: [0, 0])
    rcodes = defaultdict(int)
    cities_asked = set()
    nets_asked = set()
    lat = []
    for ph in range(nph):
        p = os.path.join(rd, "answers-%d.txt" % ph)
        if os.path.exists(p):
            for line in open(p):
                f = line.split()
                if len(f) < 5:
                    continue
                src, qn, rc, addr, ms = f[:5]
                c, net, k, _ = clients[src]
                tot += 1
                rcodes[rc] += 1
                cities_asked.add(c)
                nets_asked.add(net)
                good = addr == node[c]
                ok += good
                per_class[k][0] += good
                per_class[k][1] += 1
                lat.append(float(ms))
        # servers' logs up to this phase
        res["phases"].append({"phase": ph, "answers": tot, "correct": ok, "nets": len(nets_asked)})
    res["answers"] = tot
    res["correct"] = ok
    res["accuracy"] = ok / tot if tot else None
    res["by_class"] = {k: (v[0] / v[1] if v[1] else None, v[1]) for k, v in per_class.items()}
    res["rcodes"] = dict(rcodes)
    res["cities_asked"] = len(cities_asked)
    res["nets_asked"] = len(nets_asked)
    lat.sort()
    res["lat_p50"] = lat[len(lat) // 2] if lat else None
    res["lat_p99"] = lat[int(len(lat) * 0.99)] if lat else None

    # authoritative logs: q-SERVER-PHASE.txt lines QNAME QTYPE ECS SCOPE TO RCODE
    own = set(meta.get("own_addrs", []))
    client_nets = [ipaddress.ip_network(n) for n in set(v[1] for v in clients.values())]

    def is_client_or_private(addr_or_net):
        try:
            n = ipaddress.ip_network(addr_or_net, strict=False)
        except ValueError:
            return False
        if str(n) in mapped_ecs:
            return False
        if n.prefixlen == 0:
            return False
        return any(n.version == p.version and (n.subnet_of(p) or p.subnet_of(n)) for p in PRIVATE) or \
            any(n.version == p.version and (n.subnet_of(p) or p.subnet_of(n)) for p in client_nets)

    gslb_ecs = gslb_noecs = 0
    gslb_ecs_vals = set()
    gslb_fetch = set()
    per_name_ecs = defaultdict(int)
    noecs_q = defaultdict(int)
    leaked = set()
    other_ecs = 0
    other_ecs_vals = set()
    servers_q = defaultdict(int)
    for ph in range(nph):
        for srv in meta["servers"]:
            p = os.path.join(rd, "q-%s-%d.txt" % (srv, ph))
            if not os.path.exists(p):
                continue
            for line in open(p):
                f = line.split()
                if len(f) < 6 or f[0].startswith("harness-probe."):
                    continue
                qn, qt, ecs, scope, to, rc = f[:6]
                servers_q[srv] += 1
                if ecs != "-" and is_client_or_private(ecs):
                    leaked.add(ecs)
                if to not in own and to != "-" and is_client_or_private(to):
                    leaked.add(to)
                if srv == "gslb":
                    if ecs != "-":
                        gslb_ecs += 1
                        gslb_ecs_vals.add(ecs)
                        gslb_fetch.add((qn, qt, ecs))
                        per_name_ecs[qn] += 1
                    else:
                        gslb_noecs += 1
                        noecs_q["%s/%s" % (qn.rstrip("."), qt)] += 1
                elif ecs != "-":
                    other_ecs += 1
                    other_ecs_vals.add(ecs)
        ph_res = res["phases"][ph]
        ph_res.update({"gslb_ecs": gslb_ecs, "gslb_noecs": gslb_noecs, "gslb_fetch": len(gslb_fetch),
                       "distinct_ecs": len(gslb_ecs_vals)})
        snap = os.path.join(rd, "entries-%d.txt" % ph)
        if os.path.exists(snap):
            v = open(snap).read().split()
            ph_res["entries"] = int(v[0]) if v and v[0].isdigit() else None
        if ph_res.get("entries") is None and meta["system"] in PROXY_ENTRIES:
            ph_res["entries"] = len(gslb_fetch)
    res["gslb_ecs"] = gslb_ecs
    res["gslb_noecs"] = gslb_noecs
    res["gslb_noecs_detail"] = dict(noecs_q)
    res["distinct_ecs"] = len(gslb_ecs_vals)
    res["gslb_fetch"] = len(gslb_fetch)
    res["per_name_ecs"] = {n: per_name_ecs.get(n, 0) for n in gslb_names}
    res["leaked"] = len(leaked)
    res["leaked_sample"] = sorted(leaked)[:5]
    res["other_ecs"] = other_ecs
    res["other_ecs_sample"] = sorted(other_ecs_vals)[:5]
    res["servers_q"] = dict(servers_q)
    res["entries"] = res["phases"][-1].get("entries")
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")


# ---------------------------------------------------------------- report

SYS_LABEL = {
    "ub": "Unbound, no ECS",
    "ub24": "Unbound subnetcache, /24 ECS",
    "pdns": "PowerDNS Recursor, addProxyMapping",
    "dd": "dnsdist ECS per city + Unbound subnetcache",
    "pdi": "partdns, policy iterate",
    "pdf": "partdns, policy forward",
}
ENTRIES_HOW = {
    "ub": "A RRsets (dump_cache)",
    "ub24": "proxy: distinct ECS answers fetched",
    "pdns": "ECS-tagged records (dump-cache)",
    "dd": "proxy: distinct ECS answers fetched",
    "pdi": "the cities' entries (metrics)",
    "pdf": "the cities' entries (metrics)",
}


def pct(x):
    return "–" if x is None else "%.1f %%" % (100 * x)


def report(args):
    d, rdir = args.dir, args.results
    runs = []
    for fn in sorted(os.listdir(rdir)):
        if fn.startswith("run-") and fn.endswith(".json"):
            runs.append(json.load(open(os.path.join(rdir, fn))))
    if not runs:
        return
    order = [s for s in SYS_LABEL if any(r["meta"]["system"] == s for r in runs)]
    cities = load_cities(d)
    out = []
    for variant, vlabel in (("full", "GSLB knows the mapped addresses and every client prefix (a perfect geo-IP database)"),
                            ("mapped", "GSLB knows only the mapped addresses")):
        vr = [r for r in runs if r["meta"]["variant"] == variant]
        if not vr:
            continue
        out.append("")
        out.append("**%s** — %s:" % (variant, vlabel))
        out.append("")
        out.append("| system | in flight | accuracy (public / private / CGNAT / IPv6) | GSLB queries with ECS (per name) | without ECS | distinct ECS at the GSLB | client or private addresses at any authority | ECS at other servers | cache entries, CDN names | answers not NOERROR |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for s in order:
            for c in sorted(set(r["meta"]["inflight"] for r in vr)):
                rr = [r for r in vr if r["meta"]["system"] == s and r["meta"]["inflight"] == c]
                if not rr:
                    continue
                r = rr[0]
                bc = r["by_class"]
                cls = " / ".join(pct(bc.get(k, [None])[0]) for k in ("public", "private", "cgnat", "v6"))
                pn = sorted(set(r["per_name_ecs"].values()))
                pns = "–" if not pn else (str(pn[0]) if len(pn) == 1 else "%d–%d" % (pn[0], pn[-1]))
                bad = r["answers"] - r["rcodes"].get("NOERROR", 0)
                ent = r.get("entries")
                out.append("| %s | %d | **%s** (%s) | %d (%s) | %d | %d | %d | %d | %s | %d |" % (
                    SYS_LABEL[s], c, pct(r["accuracy"]), cls, r["gslb_ecs"], pns, r["gslb_noecs"],
                    r["distinct_ecs"], r["leaked"], r["other_ecs"],
                    "–" if ent is None else "%d (%s)" % (ent, ENTRIES_HOW[s]), bad))
    out.append("")
    # what reached the GSLB without ECS (the zone cut and anything else), per system
    out.append("GSLB queries without ECS, by name and type (the same in every run unless shown per run as variant/in flight):")
    out.append("")
    for s in order:
        dets = []
        for r in sorted((r for r in runs if r["meta"]["system"] == s), key=lambda r: (r["meta"]["variant"], r["meta"]["inflight"])):
            d = ", ".join("%s %d" % kv for kv in sorted(r["gslb_noecs_detail"].items())) or "none"
            dets.append(("%s/%d" % (r["meta"]["variant"], r["meta"]["inflight"]), d))
        if len(set(d for _, d in dets)) == 1:
            out.append("- %s: %s" % (SYS_LABEL[s], dets[0][1]))
        else:
            out.append("- %s: %s" % (SYS_LABEL[s], "; ".join("%s: %s" % x for x in dets)))
    out.append("")
    # chart data: full variant, 1 in flight, per system: nets, gslb queries, entries
    for s in order:
        rr = [r for r in runs if r["meta"]["system"] == s and r["meta"]["variant"] == "full" and r["meta"]["inflight"] == 1]
        if not rr:
            continue
        with open(os.path.join(rdir, "chart-%s.dat" % s), "w") as f:
            f.write("# nets gslb_queries gslb_ecs entries   (%s: %.0f %% steered)\n" % (SYS_LABEL[s], 100 * (rr[0]["accuracy"] or 0)))
            for p in rr[0]["phases"]:
                f.write("%d %d %d %s\n" % (p["nets"], p["gslb_ecs"] + p["gslb_noecs"], p["gslb_ecs"],
                                           p.get("entries") if p.get("entries") is not None else "NaN"))
    sys.stdout.write("\n".join(out) + "\n")


def main():
    import argparse
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir")
    g.add_argument("yaml")
    g.add_argument("plain")
    g.add_argument("--names", required=True)
    g.add_argument("--gslb-names", required=True)
    g.add_argument("--v4-nets", type=int, default=2400)
    g.add_argument("--v6-nets", type=int, default=240)
    g.add_argument("--phases", default="30,120,480")
    g.add_argument("--seed", type=int, default=1)
    t = sub.add_parser("tap")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("rundir")
    p = sub.add_parser("report")
    p.add_argument("dir")
    p.add_argument("results")
    a = ap.parse_args()
    {"gen": gen, "tap": tap, "run": run, "report": report}[a.cmd](a)


if __name__ == "__main__":
    main()
