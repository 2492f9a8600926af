# SPDX-License-Identifier: BSD-3-Clause
"""DNS messages and PROXY v2 headers built and read by hand (struct), for
the integration tests' Python clients (dotclient.py, proxyclient.py, dohclient.py).
Debian's python3 alone: no dnspython, so that what is sent is exactly what
the test says."""

import socket
import struct

TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "TXT": 16, "AAAA": 28}
TYPE_NAMES = {v: k for k, v in TYPES.items()}
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def query(qid, name, qtype="A", edns=True):
    """A recursive query (RD) for name/qtype, with an OPT (4096, no options) when edns."""
    hdr = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 1 if edns else 0)
    msg = hdr + encode_name(name) + struct.pack("!HH", TYPES[qtype], 1)
    if edns:
        msg += b"\0" + struct.pack("!HHIH", 41, 4096, 0, 0)
    return msg


def framed(msg):
    """A message as it goes over a stream (RFC 1035 4.2.2: two-byte length first)."""
    return struct.pack("!H", len(msg)) + msg


def _name(buf, off):
    """(name, offset after it) at off, following compression pointers."""
    labels, end, hops = [], None, 0
    while True:
        n = buf[off]
        if n & 0xC0 == 0xC0:
            if end is None:
                end = off + 2
            off = ((n & 0x3F) << 8) | buf[off + 1]
            hops += 1
            if hops > 64:
                raise ValueError("compression loop")
            continue
        off += 1
        if n == 0:
            break
        labels.append(buf[off:off + n].decode("ascii", "replace"))
        off += n
    return ".".join(labels).lower() + ".", (end if end is not None else off)


def parse(buf):
    """{id, rcode, qname, qtype, answers: [(type, data)]}; data is the address
    for A/AAAA, the target for CNAME, the first string for TXT."""
    qid, flags, qd, an, _ns, _ar = struct.unpack("!HHHHHH", buf[:12])
    off = 12
    qname, qtype = "", ""
    for _ in range(qd):
        qname, off = _name(buf, off)
        t, _c = struct.unpack("!HH", buf[off:off + 4])
        qtype = TYPE_NAMES.get(t, str(t))
        off += 4
    answers = []
    for _ in range(an):
        _owner, off = _name(buf, off)
        t, _c, _ttl, rdlen = struct.unpack("!HHIH", buf[off:off + 10])
        off += 10
        rd = buf[off:off + rdlen]
        if t == 1:
            data = socket.inet_ntop(socket.AF_INET, rd)
        elif t == 28:
            data = socket.inet_ntop(socket.AF_INET6, rd)
        elif t == 5:
            data = _name(buf, off)[0]
        elif t == 16:
            data = rd[1:1 + rd[0]].decode("ascii", "replace")
        else:
            data = rd.hex()
        answers.append((TYPE_NAMES.get(t, str(t)), data))
        off += rdlen
    return {"id": qid, "rcode": RCODES.get(flags & 0xF, str(flags & 0xF)), "qname": qname,
            "qtype": qtype, "answers": answers}


def summary(r):
    """RCODE and the A/AAAA/TXT data of an answer, sorted: 'NOERROR 203.0.113.1'."""
    data = sorted(d for t, d in r["answers"] if t in ("A", "AAAA", "TXT"))
    return " ".join([r["rcode"]] + data)


# ------------------------------------------------------------ PROXY protocol v2
# HAProxy's PROXY protocol specification, section 2.2.
PROXY_SIG = b"\r\n\r\n\x00\r\nQUIT\n"


def proxy_v2(src, sport, dst, dport, dgram, command="PROXY", tlvs=b""):
    """A well-formed version 2 header: PROXY (0x21) or LOCAL (0x20), INET or
    INET6 over STREAM (0x.1) or DGRAM (0x.2), the addresses, then tlvs."""
    six = ":" in src
    fam = (0x20 if six else 0x10) | (0x02 if dgram else 0x01)
    af = socket.AF_INET6 if six else socket.AF_INET
    addrs = socket.inet_pton(af, src) + socket.inet_pton(af, dst) + struct.pack("!HH", sport, dport)
    cmd = 0x21 if command == "PROXY" else 0x20
    body = addrs + tlvs
    return PROXY_SIG + bytes([cmd, fam]) + struct.pack("!H", len(body)) + body


def proxy_bad(kind, src, sport, dst, dport, dgram):
    """Headers a balancer never sends. Each starts with the signature (or, for
    v1, is the text version) and is invalid for the reason its name says."""
    good = proxy_v2(src, sport, dst, dport, dgram)
    fam = good[13]
    a4 = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!HH", sport, dport)
    if kind == "truncated":     # the length says 12, 6 bytes of addresses follow
        return good[:16 + 6]
    if kind == "sigonly":       # the signature and nothing else
        return PROXY_SIG
    if kind == "badsig":        # one byte of the signature wrong, the rest well-formed
        return PROXY_SIG[:11] + b"X" + good[12:]
    if kind == "version1":      # binary header, version 1 in the version nibble
        return PROXY_SIG + bytes([0x11, fam]) + good[14:]
    if kind == "badcmd":        # command 0xF
        return PROXY_SIG + bytes([0x2F, fam]) + good[14:]
    if kind == "unix":          # AF_UNIX addresses (216 bytes): refused
        return PROXY_SIG + bytes([0x21, 0x31 if not dgram else 0x32]) + struct.pack("!H", 216) + b"\0" * 216
    if kind == "shortaddr":     # INET with a block shorter than the 12 bytes of addresses
        return PROXY_SIG + bytes([0x21, fam]) + struct.pack("!H", 8) + a4[:8]
    if kind == "toolong":       # 2000 bytes of header: over any sane bound
        return PROXY_SIG + bytes([0x21, fam]) + struct.pack("!H", 2000) + a4 + b"\0" * (2000 - 12)
    if kind == "tlvoverrun":    # a TLV whose length runs past the header
        return PROXY_SIG + bytes([0x21, fam]) + struct.pack("!H", 12 + 3) + a4 + bytes([0x04, 0x00, 0x20])
    if kind == "garbage":       # the signature, then bytes of no meaning
        return PROXY_SIG + bytes(range(0xF0, 0x100)) + bytes(range(0, 0x10))
    if kind == "text":          # version 1 (text): not accepted
        return ("PROXY TCP4 %s %s %d %d\r\n" % (src, dst, sport, dport)).encode()
    raise ValueError("unknown bad header kind " + kind)


BAD_KINDS = ("truncated", "sigonly", "badsig", "version1", "badcmd", "unix", "shortaddr", "toolong",
             "tlvoverrun", "garbage", "text")
