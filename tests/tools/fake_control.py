# SPDX-License-Identifier: BSD-3-Clause
# A stand-in for the daemon's control socket, for testing partdnsctl's client.
# usage: fake_control.py SOCKET LOG MODE   (MODE: normal | hang | garbage | close)
import os
import socket
import sys
import time

path, log, mode = sys.argv[1], sys.argv[2], sys.argv[3]
replies = {
    "stats": b"OK\nqueries 42\npartition nanjing queries 40\n",
    "stats json": b'OK\n{"queries": 42}\n',
    "reload": b"ERR config has errors\n/etc/partdns/partdns.yaml:3:5: error: unknown key\n",
}

srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(8)
open(path + ".ready", "w").close()
srv.settimeout(60)
while True:
    try:
        conn, _ = srv.accept()
    except socket.timeout:
        break
    conn.settimeout(10)
    buf = b""
    while not buf.endswith(b"\n") and len(buf) <= 4096:
        chunk = conn.recv(4096)
        if not chunk:
            break
        buf += chunk
    req = buf.decode(errors="replace").rstrip("\n")
    with open(log, "a") as f:
        f.write(req + "\n")
    if req == "quit":
        conn.close()
        break
    if mode == "hang":
        time.sleep(7)
    elif mode == "garbage":
        conn.sendall(b"HELLO\nwhat\n")
    elif mode == "close":
        pass
    elif req.startswith("cache flush"):
        conn.sendall(b"OK\nflushed 3 entries\n")
    else:
        conn.sendall(replies.get(req, b"ERR unknown request\n"))
    conn.close()
srv.close()
os.unlink(path)
