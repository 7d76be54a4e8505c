#!/usr/bin/env python3
"""Checks the shipped nginx front (config/nginx-herald.conf) against the requests libmicrohttpd
0.9.75 cannot answer well itself (issue 30, items 5 and 7): each must get its status from nginx
with a JSON error body, and nothing may reach Herald as a second request.

The shipped file is used as it is, except what cannot run here: TLS (the 443 server listens on a
free 127.0.0.1 port in plain HTTP), the port-80 redirect server (dropped), and the log paths.
Needs nginx and a built herald (HERALD_BIN, default .build/debug/herald). Exit 0 when every case
passes.
"""

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import connections  # noqa: E402

ROOT = connections.ROOT


def front_config(work, front_port, herald_port):
    text = open(os.path.join(ROOT, "config", "nginx-herald.conf")).read()
    # Drop the port-80 redirect server.
    text = re.sub(r"server \{\s*listen 80;.*?\n\}\n", "", text, flags=re.S)
    text = text.replace("listen 443 ssl http2;", f"listen 127.0.0.1:{front_port};")
    text = re.sub(r"\n\s*listen \[::\]:443 ssl http2;", "", text)
    text = re.sub(r"\n\s*ssl_[a-z_]+ [^\n]*;", "", text)
    text = re.sub(r"\n\s*add_header Strict-Transport-Security [^\n]*;", "", text)
    text = text.replace("server 127.0.0.1:8686;", f"server 127.0.0.1:{herald_port};")
    text = text.replace("/var/log/nginx/herald.access.log", f"{work}/access.log")
    return f"""pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
{text}
}}
"""


def exchange(port, data):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(10)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        out += b"<<timeout>>"
    s.close()
    return out


def main():
    connections.raise_fd_limit()
    herald_port = connections.free_port()
    front_port = connections.free_port()
    auth = b"Authorization: Bearer " + connections.TOKEN.encode() + b"\r\n"
    smuggled = b"GET /v1/notifications/x HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"
    cases = [
        (
            "Content-Length with chunked",
            b"POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"0\r\n\r\n"
            + smuggled,
            400,
        ),
        ("two Content-Lengths", b"POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}", 400),
        ("malformed Content-Length", b"POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 12x\r\n\r\n{}", 400),
        ("unknown Transfer-Encoding", b"POST /v1/notifications HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}", 501),
        ("unknown HTTP version", b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", 505),
        # nginx drops the invalid line and passes a well-formed request on.
        ("malformed header line", b"GET /healthz HTTP/1.1\r\nHost: x\r\nNoColonHere\r\nConnection: close\r\n\r\n", 200),
        ("40 KiB header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n", 400),
        ("100 KiB header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n", 400),
        ("20 KiB target", b"GET /healthz?q=" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
        ("2 MiB body", b"POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n", 413),
    ]
    failures = 0
    # Behind nginx every client is 127.0.0.1: Herald's per-client and per-token limits are lifted,
    # as docs/http-api.md#limits says, and nginx's limit_conn counts clients.
    connections.EXTRA = "  max-connections-per-client: 1000\n  max-streams-per-token: 1000\n"
    with tempfile.TemporaryDirectory(prefix="herald-front.") as work:
        herald = connections.start_herald(work, herald_port)
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(front_config(work, front_port, herald_port))
        nginx = subprocess.run(["nginx", "-p", work, "-c", conf, "-g", "daemon off;", "-t"], capture_output=True, text=True)
        if nginx.returncode != 0:
            print(nginx.stderr)
            herald.terminate()
            sys.exit(2)
        front = subprocess.Popen(["nginx", "-p", work, "-c", conf, "-g", "daemon off;"], stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", front_port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            ok = exchange(front_port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            print(f"through the front: GET /healthz -> {ok.split(b' ', 2)[1].decode()}")
            for name, data, want in cases:
                out = exchange(front_port, data)
                head, _, body = out.partition(b"\r\n\r\n")
                status_line = head.split(b"\r\n", 1)[0].decode("latin1")
                parts = status_line.split(" ")
                status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
                try:
                    document = json.loads(body.split(b"HTTP/1.1")[0])
                    code = document["error"]["code"] if "error" in document else document.get("status")
                except (ValueError, KeyError, TypeError, AttributeError):
                    code = None
                responses = out.count(b"HTTP/1.1 ")
                good = code is not None and responses == 1 and (want is None or status == want)
                failures += 0 if good else 1
                print(
                    f"{'ok  ' if good else 'FAIL'} {name}: {status_line or '(nothing)'}; JSON code {code}; "
                    f"{responses} response(s)"
                )
                if not good:
                    print("     " + repr(out[:600]))
            # limit_conn: 70 event streams from one address, 64 allowed.
            streams, statuses = [], {}
            for _ in range(70):
                c = socket.create_connection(("127.0.0.1", front_port), timeout=10)
                c.settimeout(10)
                c.sendall(b"GET /v1/events HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n")
                first = c.recv(4096)
                status = first.split(b" ", 2)[1].decode() if first.count(b" ") >= 2 else "closed"
                if status == "503" and b'"too_many_connections"' not in first:
                    status = "503 without JSON"
                statuses[status] = statuses.get(status, 0) + 1
                streams.append(c)
            good = statuses == {"200": 64, "503": 6}
            failures += 0 if good else 1
            print(f"{'ok  ' if good else 'FAIL'} limit_conn, 70 event streams from one address: {statuses}")
            for c in streams:
                c.close()
            if failures:
                print(open(os.path.join(work, "error.log")).read()[-3000:])
        finally:
            front.terminate()
            front.wait(timeout=10)
            herald.terminate()
            herald.wait(timeout=20)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
