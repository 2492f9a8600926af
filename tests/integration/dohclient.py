#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A DNS-over-HTTPS client over HTTP/1.1 (Debian's python3: ssl, no h2), for test_doh.sh.

Usage: dohclient.py -s ADDR -p PORT [-b SRC] [--proxy-local] [--xff ADDR] [--path P]
                    [--method GET|POST|PUT] [--ctype T] [--raw-dns B64] [--size N] NAME TYPE
Prints the HTTP status, then for a 200 with a DNS message: "rcode NAME", each A/AAAA
answer as "A addr", and "max-age N" from Cache-Control. --proxy-local sends a
PROXY v2 LOCAL header before the TLS handshake (a balancer's own connection).
"""
import argparse
import base64
import os
import socket
import ssl
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dnsmsg  # noqa: E402  (beside this file)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-s", required=True)
    ap.add_argument("-p", type=int, required=True)
    ap.add_argument("-b", default=None)
    ap.add_argument("--proxy-local", action="store_true")
    ap.add_argument("--xff", default=None)
    ap.add_argument("--path", default="/dns-query")
    ap.add_argument("--method", default="POST")
    ap.add_argument("--ctype", default="application/dns-message")
    ap.add_argument("--raw-dns", default=None, help="the dns= parameter as given (GET)")
    ap.add_argument("--size", type=int, default=0, help="POST a body of this many bytes instead")
    ap.add_argument("name")
    ap.add_argument("type", nargs="?", default="A", choices=sorted(dnsmsg.TYPES))
    a = ap.parse_args()
    msg = dnsmsg.query(0, a.name, a.type, edns=False)  # ID 0: RFC 8484 4.1, for HTTP caches
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(5)
    if a.b:
        sock.bind((a.b, 0))
    sock.connect((a.s, a.p))
    if a.proxy_local:
        sock.sendall(dnsmsg.PROXY_SIG + bytes([0x20, 0x00]) + struct.pack("!H", 0))  # LOCAL, UNSPEC
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    tls = ctx.wrap_socket(sock, server_hostname="dns.example.test")
    headers = "Host: dns.example.test\r\nAccept: application/dns-message\r\n"
    if a.xff:
        headers += "X-Forwarded-For: %s\r\n" % a.xff
    if a.method == "GET":
        b64 = a.raw_dns if a.raw_dns is not None else base64.urlsafe_b64encode(msg).decode().rstrip("=")
        req = "GET %s?dns=%s HTTP/1.1\r\n%s\r\n" % (a.path, b64, headers)
        body = b""
    else:
        body = msg if a.size == 0 else b"\0" * a.size
        req = "%s %s HTTP/1.1\r\n%sContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (
            a.method, a.path, headers, a.ctype, len(body))
    tls.sendall(req.encode() + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = tls.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines or not lines[0].startswith("HTTP/1.1 "):
        print("no HTTP reply")
        return 1
    status = int(lines[0].split()[1])
    print(status)
    hdr = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdr[k.strip().lower()] = v.strip()
    n = int(hdr.get("content-length", "0"))
    while len(rest) < n:
        chunk = tls.recv(65536)
        if not chunk:
            break
        rest += chunk
    if status == 200 and hdr.get("content-type") == "application/dns-message":
        r = dnsmsg.parse(rest[:n])
        print("rcode " + r["rcode"])
        for t, data in r["answers"]:
            if t in ("A", "AAAA"):
                print(t + " " + data)
        cc = hdr.get("cache-control", "")
        if cc.startswith("max-age="):
            print("max-age " + cc[len("max-age="):])
    return 0


if __name__ == "__main__":
    sys.exit(main())
