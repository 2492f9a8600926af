#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""One DNS query over UDP or TCP, after a PROXY protocol v2 header built by
hand (dnsmsg.py), good or bad, for test_proxy.sh (Debian's python3 only).

  proxyclient.py -s ADDR -p PORT -b SRC [--tcp] [--header KIND]
                 [--client ADDR] [--wait S] NAME [TYPE]

KIND: none (the bare query), v2 (a valid PROXY header naming --client),
local (the LOCAL command), or one of dnsmsg.BAD_KINDS. Over UDP the header
and the query are one datagram; over TCP the header opens the connection and
the framed query follows in the same write. For "truncated" and "sigonly"
nothing follows, over UDP as over TCP: the part of a header is all the
server gets (a query after it would be read as the rest of the header).

Prints one line: "answer RCODE DATA..." (as dnsmsg.summary), "noanswer"
(UDP: nothing within --wait), "closed MS" (TCP: the server closed the
connection after MS ms, without an answer) or "open" (TCP: neither an
answer nor a close within --wait).
"""

import argparse
import os
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dnsmsg  # noqa: E402


def header(args, sport, dgram):
    if args.header == "none":
        return b""
    if args.header in ("v2", "local"):
        return dnsmsg.proxy_v2(args.client, 40000, args.server, args.port, dgram,
                               command="PROXY" if args.header == "v2" else "LOCAL")
    return dnsmsg.proxy_bad(args.header, args.client, 40000, args.server, args.port, dgram)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-s", "--server", required=True)
    ap.add_argument("-p", "--port", type=int, required=True)
    ap.add_argument("-b", "--bind", required=True)
    ap.add_argument("--tcp", action="store_true")
    ap.add_argument("--header", default="v2", choices=("none", "v2", "local") + dnsmsg.BAD_KINDS)
    ap.add_argument("--client", default="127.0.2.10", help="the client address the header names")
    ap.add_argument("--wait", type=float, default=1.5)
    ap.add_argument("name")
    ap.add_argument("type", nargs="?", default="A")
    args = ap.parse_args()

    q = dnsmsg.query(0x5151, args.name, args.type)
    if not args.tcp:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((args.bind, 0))
        s.settimeout(args.wait)
        hdr = header(args, s.getsockname()[1], True)
        s.sendto(hdr if args.header in ("truncated", "sigonly") else hdr + q, (args.server, args.port))
        try:
            buf, _ = s.recvfrom(65535)
            print("answer %s" % dnsmsg.summary(dnsmsg.parse(buf)))
        except socket.timeout:
            print("noanswer")
        return

    s = socket.create_connection((args.server, args.port), timeout=5,
                                 source_address=(args.bind, 0))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    hdr = header(args, s.getsockname()[1], False)
    data = hdr if args.header in ("truncated", "sigonly") else hdr + dnsmsg.framed(q)
    t0 = time.monotonic()
    try:
        s.sendall(data)
    except OSError:
        print("closed %d" % ((time.monotonic() - t0) * 1000))
        return
    s.settimeout(args.wait)
    buf = b""
    try:
        while True:
            chunk = s.recv(65535)
            if not chunk:
                break
            buf += chunk
            if len(buf) >= 2 and len(buf) >= 2 + int.from_bytes(buf[:2], "big"):
                n = int.from_bytes(buf[:2], "big")
                print("answer %s" % dnsmsg.summary(dnsmsg.parse(buf[2:2 + n])))
                return
    except socket.timeout:
        print("open")
        return
    except OSError:
        pass
    print("closed %d" % ((time.monotonic() - t0) * 1000))


if __name__ == "__main__":
    main()
