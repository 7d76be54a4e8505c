#!/usr/bin/env python3
"""A misbehaving HTTPS/1.1 provider for Herald's fault tests.

    fault_server.py --mode MODE --cert CERT --key KEY --log FILE

Prints the port it listens on (127.0.0.1) as the first line of stdout, then serves until killed.
`/token` always answers an OAuth token (so an FCM channel can authenticate); every other request
is answered by MODE:

    ok              200 {"name": "projects/p/messages/1"}
    hang            reads the request and never answers (until the client goes away)
    reset           sends the status line and part of the body, then resets the connection (RST)
    storm-seconds   503 with `Retry-After: 2`
    storm-date      503 with `Retry-After: <HTTP-date 3 s from now>`
    storm-huge      429 with `Retry-After: 99999999999999999`

Each request's method and path is appended to the log file as one line. With `--mode-file F`,
the mode is re-read from F (when it exists) for every request, so a test can change it live.
"""
import argparse
import email.utils
import json
import signal
import socket
import ssl
import struct
import sys
import threading
import time


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return method, path


def answer(conn, status, reason, body, headers=()):
    head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    conn.sendall(head.encode() + b"\r\n" + body)


def current_mode(mode, mode_file):
    if mode_file:
        try:
            with open(mode_file) as f:
                return f.read().strip() or mode
        except OSError:
            pass
    return mode


def serve(conn, initial_mode, mode_file, log, lock):
    try:
        while True:
            request = read_request(conn)
            if request is None:
                return
            method, path = request
            mode = current_mode(initial_mode, mode_file)
            with lock:
                log.write(f"{method} {path}\n")
                log.flush()
            if path.startswith("/token"):
                token = {"access_token": "ya29.fault", "expires_in": 3600, "token_type": "Bearer"}
                answer(conn, 200, "OK", json.dumps(token).encode())
            elif mode == "ok":
                answer(conn, 200, "OK", b'{"name":"projects/p/messages/1"}')
            elif mode == "hang":
                while conn.recv(65536):
                    pass
                return
            elif mode == "reset":
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"na")
                raw = conn.unwrap() if isinstance(conn, ssl.SSLSocket) else conn
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                raw.close()
                return
            elif mode == "storm-seconds":
                answer(conn, 503, "Service Unavailable", b'{"error":"busy"}', [("retry-after", "2")])
            elif mode == "storm-date":
                when = email.utils.formatdate(time.time() + 3, usegmt=True)
                answer(conn, 503, "Service Unavailable", b'{"error":"busy"}', [("retry-after", when)])
            elif mode == "storm-huge":
                answer(conn, 429, "Too Many Requests", b'{"error":"slow down"}', [("retry-after", "99999999999999999")])
    except (OSError, ssl.SSLError, ValueError):
        return
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    # A child of a test thread may inherit a signal mask that blocks SIGTERM: take it back.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--mode-file", default=None)
    args = parser.parse_args()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["http/1.1"])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)
    log = open(args.log, "a")
    lock = threading.Lock()
    while True:
        raw, _ = listener.accept()
        try:
            conn = context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            continue
        threading.Thread(target=serve, args=(conn, args.mode, args.mode_file, log, lock), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
