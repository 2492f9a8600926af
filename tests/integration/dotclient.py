#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""DNS over TLS clients for test_dot.sh, well-behaved and not (Debian's
python3 and its ssl module only).

  dotclient.py [-s ADDR] [-p PORT] [-b SRC] [--ca FILE --hostname NAME] MODE ARGS

  pipeline NAME/TYPE...   one connection, every query in one write; prints
                          one line per answer as it comes, then a summary
  alpn [PROTO...]         a handshake offering only PROTO (none: no ALPN);
                          prints "ok ALPN" or "failed REASON"
  nonreader NAME TYPE SECONDS  queries until the socket blocks, never reads;
                          holds the connection SECONDS; prints "sent N"
  trickle COUNT INTERVAL_MS LIMIT_S  COUNT raw TCP connections sending a
                          ClientHello one byte every INTERVAL_MS; prints each
                          connection's life until closed (-1: not within LIMIT_S)
  flood COUNT SECONDS DELAY_MS  COUNT TCP connections that never send, each
                          reopened DELAY_MS after the server closed it, for
                          SECONDS, each from its own address (-b: the first;
                          then .1-.200 of that /24 and the next ones); prints
                          opened/closed counts
  idle LIMIT_S            one query, then wait for the server to close;
                          prints "closed_ms N" (-1: not within LIMIT_S)
  rotate STOPFILE NAME    until STOPFILE exists: one kept connection asking NAME
                          every 50 ms, and a new connection every 50 ms (its
                          certificate's SHA-256); prints the counts
"""

import argparse
import hashlib
import os
import select
import socket
import ssl
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dnsmsg  # noqa: E402


def now_ms():
    return time.monotonic() * 1000.0


def context(args, alpn=("dot",)):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if args.ca:
        ctx.load_verify_locations(args.ca)
        ctx.check_hostname = bool(args.hostname)
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    return ctx


def tcp(args, timeout=5.0):
    s = socket.create_connection((args.server, args.port), timeout=timeout,
                                 source_address=(args.bind, 0) if args.bind else None)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def tls(args, timeout=5.0, alpn=("dot",)):
    raw = tcp(args, timeout)
    try:
        return context(args, alpn).wrap_socket(raw, server_hostname=args.hostname or None)
    except BaseException:
        raw.close()
        raise


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def read_msg(s):
    (n,) = dnsmsg.struct.unpack("!H", recv_exact(s, 2))
    return dnsmsg.parse(recv_exact(s, n))


def ask(s, qid, name, qtype="A"):
    s.sendall(dnsmsg.framed(dnsmsg.query(qid, name, qtype)))
    r = read_msg(s)
    if r["id"] != qid:
        raise ValueError("answer id %d for query %d" % (r["id"], qid))
    return r


# ------------------------------------------------------------------ modes

def m_pipeline(args):
    qs = []
    for i, spec in enumerate(args.rest):
        name, _, qtype = spec.partition("/")
        qs.append((0x4000 + i * 7, name.lower().rstrip(".") + ".", qtype or "A"))
    s = tls(args, timeout=15.0)
    t0 = now_ms()
    s.sendall(b"".join(dnsmsg.framed(dnsmsg.query(q, n, t)) for q, n, t in qs))
    sent = {q: (i, n, t) for i, (q, n, t) in enumerate(qs)}
    got, order, bad = {}, [], 0
    try:
        while len(got) < len(qs):
            r = read_msg(s)
            ms = now_ms() - t0
            want = sent.get(r["id"])
            if want is None or r["id"] in got or (r["qname"], r["qtype"]) != (want[1], want[2]):
                bad += 1
                print("unexpected id=%d %s %s" % (r["id"], r["qname"], r["qtype"]))
                continue
            got[r["id"]] = r
            order.append(want[0])
            print("answer %d %s %s %s %d" % (want[0], want[1], want[2], dnsmsg.summary(r), ms))
    except (OSError, EOFError, ValueError) as e:
        print("error %s" % e)
    print("sent %d" % len(qs))
    print("matched %d" % len(got))
    print("unexpected %d" % bad)
    print("order %s" % ",".join(str(i) for i in order))


def m_alpn(args):
    try:
        s = tls(args, timeout=5.0, alpn=tuple(args.rest))
    except (OSError, ssl.SSLError) as e:
        print("failed %s" % e)
        return
    print("ok %s" % s.selected_alpn_protocol())
    s.close()


def m_nonreader(args):
    name, qtype, seconds = args.rest[0], args.rest[1], float(args.rest[2])
    s = tls(args, timeout=2.0)
    batch = b"".join(dnsmsg.framed(dnsmsg.query(i, name, qtype)) for i in range(100))
    sent = 0
    t_end = time.monotonic() + 20
    # write until the server stops taking queries (it stops reading once its
    # replies to us pile up): then sendall times out
    try:
        while time.monotonic() < t_end:
            s.sendall(batch)
            sent += 100
    except (socket.timeout, ssl.SSLWantWriteError):
        pass
    except OSError as e:
        print("write_error %s" % e)
    print("sent %d" % sent, flush=True)
    time.sleep(seconds)
    s.close()


def client_hello():
    """The bytes of a real TLS ClientHello (ALPN dot), from a memory BIO."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["dot"])
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="dns.example.test")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def closed(s):
    """Did the peer close (EOF or reset)? Reads what is there (a trickler is sent nothing)."""
    try:
        r, _, _ = select.select([s], [], [], 0)
        if not r:
            return False
        return s.recv(4096) == b""
    except OSError:
        return True


def m_trickle(args):
    count, interval, limit = int(args.rest[0]), float(args.rest[1]) / 1000.0, float(args.rest[2])
    hello = client_hello()
    conns = []
    for _ in range(count):
        s = tcp(args)
        s.setblocking(False)
        conns.append({"s": s, "t0": now_ms(), "sent": 0, "life": None})
    t_end = time.monotonic() + limit
    next_byte = time.monotonic()
    while time.monotonic() < t_end and any(c["life"] is None for c in conns):
        if time.monotonic() >= next_byte:
            for c in conns:
                if c["life"] is None and c["sent"] < len(hello):
                    try:
                        c["s"].send(hello[c["sent"]:c["sent"] + 1])
                        c["sent"] += 1
                    except OSError:
                        c["life"] = now_ms() - c["t0"]
            next_byte += interval
        for c in conns:
            if c["life"] is None and closed(c["s"]):
                c["life"] = now_ms() - c["t0"]
        time.sleep(0.01)
    lives = [int(c["life"]) if c["life"] is not None else -1 for c in conns]
    for c, life in zip(conns, lives):
        print("conn life_ms %d bytes %d" % (life, c["sent"]))
        c["s"].close()
    done = [x for x in lives if x >= 0]
    print("closed %d of %d" % (len(done), count))
    print("min_life_ms %d" % (min(done) if done else -1))
    print("max_life_ms %d" % (max(lives) if len(done) == count else -1))


def spread(base, i):
    """The i-th of 200 addresses a /24 from base on: 127.0.5.1 -> 127.0.5.1 .. 127.0.5.200, 127.0.6.1 ..."""
    a, b, c, _ = (int(x) for x in base.split("."))
    return "%d.%d.%d.%d" % (a, b, c + (i // 200) % 8, 1 + i % 200)


def m_flood(args):
    count, seconds, delay = int(args.rest[0]), float(args.rest[1]), float(args.rest[2]) / 1000.0
    t_end = time.monotonic() + seconds
    conns, reopen, opened, closed_n, errors, lives = {}, [], 0, 0, 0, []

    def open_one():
        nonlocal opened, errors
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if args.bind:
                # one address per connection (tcp_max_per_client is not what is tested)
                s.bind((spread(args.bind, opened), 0))
            s.setblocking(False)
            s.connect_ex((args.server, args.port))
        except OSError:
            errors += 1
            s.close()
            return
        conns[s.fileno()] = (s, now_ms())
        opened += 1

    for _ in range(count):
        open_one()
    print("up %d" % len(conns), flush=True)
    while time.monotonic() < t_end:
        r, _, _ = select.select([c[0] for c in conns.values()], [], [], 0.02)
        for s in r:
            if closed(s):
                lives.append(now_ms() - conns[s.fileno()][1])
                del conns[s.fileno()]
                s.close()
                closed_n += 1
                reopen.append(time.monotonic() + delay)
        while reopen and reopen[0] <= time.monotonic() < t_end:
            reopen.pop(0)
            open_one()
    for s, _ in conns.values():
        s.close()
    print("opened %d" % opened)
    print("closed %d" % closed_n)
    print("errors %d" % errors)
    print("min_life_ms %d" % (min(lives) if lives else -1))


def m_idle(args):
    limit = float(args.rest[0])
    s = tls(args, timeout=limit)
    r = ask(s, 0x1234, "www.customer.example")
    print("answer %s" % dnsmsg.summary(r))
    t0 = now_ms()
    try:
        while s.recv(4096):
            pass
        print("closed_ms %d" % (now_ms() - t0))
    except socket.timeout:
        print("closed_ms -1")
    except OSError:
        print("closed_ms %d" % (now_ms() - t0))


def m_rotate(args):
    stop, name = args.rest[0], args.rest[1]
    st = {"kept_sent": 0, "kept_answered": 0, "fresh_conns": 0, "fresh_answered": 0}
    errors, fps, lock = [], [], threading.Lock()

    def kept():
        try:
            s = tls(args, timeout=3.0)
        except (OSError, ssl.SSLError) as e:
            errors.append("kept connect: %s" % e)
            return
        qid = 1
        while not os.path.exists(stop):
            with lock:
                st["kept_sent"] += 1
            try:
                r = ask(s, qid, name)
                if r["rcode"] == "NOERROR" and r["answers"]:
                    with lock:
                        st["kept_answered"] += 1
                else:
                    errors.append("kept: %s" % dnsmsg.summary(r))
            except (OSError, EOFError, ValueError) as e:
                errors.append("kept query %d: %s" % (qid, e))
                return
            qid += 1
            time.sleep(0.05)
        s.close()

    def fresh():
        qid = 1
        while not os.path.exists(stop):
            with lock:
                st["fresh_conns"] += 1
            try:
                s = tls(args, timeout=3.0)
                fp = hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()
                r = ask(s, qid, name)
                s.close()
                if r["rcode"] == "NOERROR" and r["answers"]:
                    with lock:
                        st["fresh_answered"] += 1
                    if not fps or fps[-1][0] != fp:
                        fps.append([fp, 0])
                    fps[-1][1] += 1
                else:
                    errors.append("fresh: %s" % dnsmsg.summary(r))
            except (OSError, EOFError, ValueError, ssl.SSLError) as e:
                errors.append("fresh %d: %s" % (qid, e))
            qid += 1
            time.sleep(0.05)

    th = [threading.Thread(target=kept), threading.Thread(target=fresh)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    for k in ("kept_sent", "kept_answered", "fresh_conns", "fresh_answered"):
        print("%s %d" % (k, st[k]))
    print("errors %d" % len(errors))
    for e in errors[:10]:
        print("error %s" % e)
    # the certificates new connections saw, in order, with how many connections saw each
    print("fps %s" % " ".join("%s:%d" % (fp, n) for fp, n in fps))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-s", "--server", required=True)
    ap.add_argument("-p", "--port", type=int, default=853)
    ap.add_argument("-b", "--bind", default=None)
    ap.add_argument("--ca", default=None)
    ap.add_argument("--hostname", default=None)
    ap.add_argument("mode", choices=["pipeline", "alpn", "nonreader", "trickle", "flood", "idle", "rotate"])
    ap.add_argument("rest", nargs="*")
    args = ap.parse_args()
    globals()["m_" + args.mode](args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
