#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Regenerates the malformed-query corpus (*.bin) and README.txt in this folder,
# and the seeds of the `wire` fuzz corpus in ../corpus/wire/ (seed-*; fuzz with both
# folders: fuzz_wire ../corpus/wire . -- this one replays too, as ctest replay_wire_malformed).
#
# Each packet is a client query with exactly one defect; README.txt lists the
# reaction partdns must show (FORMERR / NOTIMP / BADVERS reply, or DROP = no
# reply). test_wire checks every file against README.txt with wire_parse_query;
# the integration test sends them to the live daemon. The .bin files are
# committed: python3 is needed only to change the corpus.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

ID = 0x5A17
RD = 0x0100


def header(flags=RD, qd=1, an=0, ns=0, ar=0, ident=ID):
    return struct.pack(">HHHHHH", ident, flags, qd, an, ns, ar)


def name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


QNAME = name("www.example.com")  # at offset 12
QUESTION = QNAME + struct.pack(">HH", 1, 1)  # A IN
AFTER_Q = 12 + len(QUESTION)


def rr(owner, rtype, rclass, ttl, rdata, rdlen=None):
    if rdlen is None:
        rdlen = len(rdata)
    return owner + struct.pack(">HHIH", rtype, rclass, ttl, rdlen) + rdata


def opt(options=b"", udp=1232, version=0, do=False, ext=0, owner=b"\0", rdlen=None):
    ttl = ext << 24 | version << 16 | (0x8000 if do else 0)
    return rr(owner, 41, udp, ttl, options, rdlen)


def option(code, data, olen=None):
    return struct.pack(">HH", code, len(data) if olen is None else olen) + data


def ecs(family, source, scope, addr):
    return option(8, struct.pack(">HBB", family, source, scope) + addr)


def query(additional=b"", ar=0, **kw):
    return header(ar=ar, **kw) + QUESTION + additional


A_RDATA = bytes([198, 51, 100, 1])

CASES = [
    ("empty", "DROP", "zero bytes", b""),
    ("header-truncated", "DROP", "11 bytes: not even a header", query()[:11]),
    ("qr-set", "DROP", "QR=1: a response, never answered", query(flags=0x8000 | RD)),
    ("qr-set-garbage", "DROP", "QR=1 followed by garbage", header(flags=0x8180) + b"\xff" * 20),
    ("opcode-iquery", "NOTIMP", "opcode 1 (IQUERY)", query(flags=RD | 1 << 11)),
    ("opcode-status", "NOTIMP", "opcode 2 (STATUS)", query(flags=RD | 2 << 11)),
    ("opcode-notify", "REFUSED", "opcode 4 (NOTIFY) for a zone that is no policy zone of ours", query(flags=4 << 11)),
    ("opcode-update", "NOTIMP", "opcode 5 (UPDATE)", query(flags=5 << 11)),
    ("opcode-update-garbage", "NOTIMP", "opcode 5 with garbage after the header (not read)",
     header(flags=5 << 11, qd=7) + b"\xc0\xff\x3f"),
    ("opcode-15", "NOTIMP", "opcode 15 (unassigned)", query(flags=15 << 11)),
    ("qdcount-0", "FORMERR", "QDCOUNT 0", header(qd=0)),
    ("qdcount-2", "FORMERR", "QDCOUNT 2 (two questions present)", header(qd=2) + QUESTION + QUESTION),
    ("header-only", "FORMERR", "QDCOUNT 1 but nothing after the header", header()),
    ("label-64", "FORMERR", "a 64-byte label (length byte 0x40 is a reserved label type)",
     header() + bytes([64]) + b"a" * 64 + b"\0" + struct.pack(">HH", 1, 1)),
    ("name-256", "FORMERR", "QNAME of 256 bytes (labels of 63 bytes)",
     header() + (bytes([63]) + b"a" * 63) * 4 + b"\0" + struct.pack(">HH", 1, 1)),
    ("qname-pointer-self", "FORMERR", "QNAME is a pointer to itself (c00c)",
     header() + b"\xc0\x0c" + struct.pack(">HH", 1, 1)),
    ("qname-pointer-header", "FORMERR", "QNAME points into the header (c002)",
     header() + b"\xc0\x02" + struct.pack(">HH", 1, 1)),
    ("qname-compression-loop", "FORMERR", "QNAME 'www' then a pointer back to its own start",
     header() + b"\x03www\xc0\x0c" + struct.pack(">HH", 1, 1)),
    ("pointer-forward", "FORMERR", "answer owner points forward, past itself",
     query(an=1) + rr(struct.pack(">H", 0xC000 | (AFTER_Q + 2)), 1, 1, 60, A_RDATA)),
    ("pointer-loop-owner", "FORMERR", "additional owner 'a' + pointer to its own first byte",
     query(ar=1) + rr(b"\x01a" + struct.pack(">H", 0xC000 | AFTER_Q), 1, 1, 60, A_RDATA)),
    ("qname-no-root", "FORMERR", "QNAME runs to the end of the packet", header() + b"\x03www\x07example"),
    ("label-past-end", "FORMERR", "QNAME label longer than the rest of the packet", header() + b"\x3fabc"),
    ("question-truncated", "FORMERR", "QCLASS missing", header() + QNAME + b"\x00\x01"),
    ("question-truncated-1", "FORMERR", "QTYPE cut after one byte", header() + QNAME + b"\x00"),
    ("label-type-0x40", "FORMERR", "extended label type 0x40 (RFC 6891 deprecated)",
     header() + b"\x41\x00" + struct.pack(">HH", 1, 1)),
    ("label-type-0x80", "FORMERR", "reserved label type 0x80", header() + b"\x80\x01" + struct.pack(">HH", 1, 1)),
    ("answer-truncated", "FORMERR", "ANCOUNT 1, the record cut in its fixed part",
     query(an=1) + b"\xc0\x0c\x00\x01\x00"),
    ("authority-rdlength-overflow", "FORMERR", "authority RDLENGTH past the end",
     query(ns=1) + rr(b"\xc0\x0c", 1, 1, 60, A_RDATA, rdlen=40)),
    ("arcount-too-high", "FORMERR", "ARCOUNT 2 but only one OPT record present", query(opt(), ar=2)),
    ("opt-twice", "FORMERR", "two OPT records (RFC 6891 §6.1.1)", query(opt() + opt(), ar=2)),
    ("opt-owner-not-root", "FORMERR", "OPT owned by www.example.com (pointer)", query(opt(owner=b"\xc0\x0c"), ar=1)),
    ("opt-rdlength-overflow", "FORMERR", "OPT RDLENGTH 12, 4 bytes present",
     query(opt(option(10, b""), rdlen=12), ar=1)),
    ("opt-option-length-overflow", "FORMERR", "option length 8 inside a 6-byte RDATA",
     query(opt(option(10, b"\x01\x02", olen=8)), ar=1)),
    ("opt-option-header-truncated", "FORMERR", "3 bytes of RDATA: half an option header",
     query(opt(b"\x00\x08\x00"), ar=1)),
    ("opt-in-answer", "FORMERR", "an OPT record in the answer section", query(an=1) + opt()),
    ("ecs-family-3", "FORMERR", "ECS family 3", query(opt(ecs(3, 24, 0, b"\x01\x02\x03")), ar=1)),
    ("ecs-short", "FORMERR", "ECS with 3 bytes of OPTION-DATA", query(opt(option(8, b"\x00\x01\x18")), ar=1)),
    ("ecs-source-33", "FORMERR", "ECS IPv4 source 33", query(opt(ecs(1, 33, 0, b"\x01\x02\x03\x04\x00")), ar=1)),
    ("ecs-source-129", "FORMERR", "ECS IPv6 source 129", query(opt(ecs(2, 129, 0, b"\x20" + b"\x00" * 16)), ar=1)),
    ("ecs-addr-too-long", "FORMERR", "ECS /24 with 4 address bytes",
     query(opt(ecs(1, 24, 0, bytes([198, 51, 100, 0]))), ar=1)),
    ("ecs-hostbits", "FORMERR", "ECS /20 with bits set past the prefix",
     query(opt(ecs(1, 20, 0, bytes([198, 51, 101]))), ar=1)),
    ("ecs-scope-nonzero", "FORMERR", "ECS in a query with SCOPE 24 (RFC 7871 §6: MUST be 0)",
     query(opt(ecs(1, 24, 24, bytes([198, 51, 100]))), ar=1)),
    ("ecs-twice", "FORMERR", "two ECS options in one OPT",
     query(opt(ecs(1, 24, 0, bytes([198, 51, 100])) + ecs(1, 24, 0, bytes([203, 0, 113]))), ar=1)),
    ("edns-version-1", "BADVERS", "EDNS version 1 (reply: OPT, extended rcode 1)", query(opt(version=1), ar=1)),
    ("edns-version-255-bad-options", "BADVERS", "EDNS version 255, options not parsed (a broken ECS)",
     query(opt(option(8, b"\xff"), version=255, do=True), ar=1)),
    ("edns-version-1-trailing", "FORMERR", "EDNS version 1 plus trailing garbage: structure wins",
     query(opt(version=1), ar=1) + b"\x00"),
    ("trailing-garbage", "FORMERR", "4 bytes after the question", query() + b"\xde\xad\xbe\xef"),
    ("trailing-after-opt", "FORMERR", "a byte after the OPT record", query(opt(), ar=1) + b"\x00"),
]


def ptr(off):
    return struct.pack(">H", 0xC000 | off)


def response(flags, question, an=(), ns=(), ar=(), ident=0xBEEF):
    """A response; records are bytes, OPT records count in ar."""
    return header(flags=flags, an=len(an), ns=len(ns), ar=len(ar), ident=ident) + question + \
        b"".join(an) + b"".join(ns) + b"".join(ar)


def soa(owner, ttl, minimum):
    rdata = b"\x03ns1" + ptr(16) + b"\x0ahostmaster" + ptr(16) + struct.pack(">IIIII", 1, 7200, 3600, 1209600, minimum)
    return rr(owner, 6, 1, ttl, rdata)


def seeds():
    """Fuzz seeds for the `wire` target: valid queries and upstream-like responses."""
    ecs_opt = opt(ecs(1, 24, 24, bytes([198, 51, 100])) + option(10, bytes(range(16))))
    a1 = rr(ptr(12), 1, 1, 300, A_RDATA)
    ns1 = rr(ptr(16), 2, 1, 3600, b"\x03ns1" + ptr(16))
    glue = rr(ptr(AFTER_Q + 32 + 12), 1, 1, 3600, bytes([192, 0, 2, 53]))
    out = {
        "q-plain": query(),
        "q-edns-do": query(opt(udp=4096, do=True), ar=1),
        "q-ecs4": query(opt(ecs(1, 24, 0, bytes([198, 51, 100]))), ar=1),
        "q-ecs6": query(opt(ecs(2, 56, 0, bytes([0x20, 1, 0x0D, 0xB8, 0, 1, 0]))), ar=1),
        "q-ecs0-cookie": query(opt(option(10, bytes(8)) + ecs(1, 0, 0, b"")), ar=1),
        "q-0x20": header() + name("wWw.ExAmPlE.cOm") + struct.pack(">HH", 28, 1),
        "q-notify-soa": header(flags=4 << 11 | 0x0400, an=1) + QNAME + struct.pack(">HH", 6, 1) + soa(ptr(12), 3600, 60),
        "r-positive-opt-middle": response(0x81A0, QUESTION, [a1, rr(ptr(12), 1, 1, 100, bytes([198, 51, 100, 2]))],
                                          [ns1], [glue, ecs_opt, rr(b"\x03ns2" + ptr(16), 1, 1, 3600, A_RDATA)]),
        "r-nxdomain-soa": response(0x8183, QUESTION, [], [soa(ptr(16), 3600, 300)], [opt()]),
        "r-nodata-cname": response(0x8180, QNAME + struct.pack(">HH", 28, 1),
                                   [rr(ptr(12), 5, 1, 50, name("cdn.example.net"))], [soa(ptr(16), 600, 120)]),
        "r-cname-chain": response(0x8180, QUESTION,
                                  [rr(ptr(12), 5, 1, 500, b"\x01a" + ptr(16)),
                                   rr(ptr(AFTER_Q + 12), 5, 1, 500, b"\x01b" + ptr(16)),
                                   rr(ptr(AFTER_Q + 16 + 12), 1, 1, 60, A_RDATA)]),
        "r-big": response(0x8180, QUESTION, [rr(ptr(12), 1, 1, 300, bytes([198, 51, 100, i])) for i in range(60)]),
        "r-types": response(0x8180, QNAME + struct.pack(">HH", 255, 1), [
            rr(ptr(12), 15, 1, 60, struct.pack(">H", 10) + b"\x04mail" + ptr(16)),
            rr(ptr(12), 33, 1, 60, struct.pack(">HHH", 1, 2, 53) + name("sip.example.com")),
            rr(ptr(12), 35, 1, 60, struct.pack(">HH", 1, 2) + b"\x01u\x07E2U+sip\x00" + name("x.example.com")),
            rr(ptr(12), 17, 1, 60, name("a.example.com") + name("b.example.com")),
            rr(ptr(12), 16, 1, 60, b"\x05hello"),
            rr(ptr(12), 39, 1, 60, name("example.net")),
            rr(ptr(12), 0xFF00, 1, 60, b"\xc0\xff\xee")]),
        "r-tc": header(flags=0x8380) + QUESTION,
        "r-extended-rcode": response(0x8187, QUESTION, ar=[opt(ext=1)]),
        "r-servfail": response(0x8182, QUESTION),
    }
    return out


def main():
    for f in os.listdir(HERE):
        if f.endswith(".bin"):
            os.remove(os.path.join(HERE, f))
    corpus = os.path.join(HERE, "..", "corpus", "wire")
    os.makedirs(corpus, exist_ok=True)
    for f in os.listdir(corpus):
        if f.startswith("seed-"):
            os.remove(os.path.join(corpus, f))
    for slug, pkt in seeds().items():
        with open(os.path.join(corpus, "seed-" + slug), "wb") as fh:
            fh.write(pkt)
    lines = [
        "# Malformed client queries and the reaction partdns must show (generated by gen.py).",
        "# Columns: file, reaction, what is wrong. Every query uses ID 0x5a17.",
        "#   FORMERR  reply RCODE 1; the question is echoed when it parsed, with an OPT if the",
        "#            query's OPT record was read",
        "#   NOTIMP   reply RCODE 4, header only (QDCOUNT 0), opcode copied",
        "#   BADVERS  reply with an OPT record, extended RCODE 1 (= 16), header RCODE 0",
        "#   REFUSED  reply RCODE 5, the question echoed, opcode copied (a NOTIFY partdns does not take)",
        "#   DROP     no reply at all",
    ]
    for i, (slug, reaction, what, pkt) in enumerate(CASES, 1):
        fname = "%02d-%s.bin" % (i, slug)
        with open(os.path.join(HERE, fname), "wb") as fh:
            fh.write(pkt)
        lines.append("%-36s %-8s %s" % (fname, reaction, what))
    with open(os.path.join(HERE, "README.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
