#!/usr/bin/env python3
"""Connection-exhaustion attacks on a local `herald serve` (issue 30, item 4); RELIABILITY.md's
"Attack: connections" figures come from here.

Starts herald (HERALD_BIN, default .build/debug/herald) on 127.0.0.1 with the shipped limits (or
extra `server:` lines from HERALD_SERVER_EXTRA), then runs each scenario for DURATION seconds:

  slowloris-one     N connections from one address (127.0.0.2) that send a request head a header
                    line every 2 s and never finish it; cut ones reconnect after 0.5 s.
  slowloris-many    the same from 18 addresses (127.0.0.2-19, under 64 each): the total limit.
  streams-one       N `GET /v1/events` with one read token from 127.0.0.2, read and held open;
                    refused or cut ones reconnect after 0.5 s.
  streams-many      the same from 18 addresses.

During each, a probe from 127.0.0.1 asks `GET /healthz` once a second (2 s timeout). Printed per
scenario: the connections herald holds (socket descriptors of the process, sampled at each probe:
median and max), the attack's answers by status, and the probes that got 200.

Bounded: N connections (default 1100), DURATION seconds (default 30), at most 20 * N connection
attempts per scenario; 127.0.0.1/8 only.
"""

import hashlib
import os
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

N = int(os.environ.get("N", "1100"))
DURATION = float(os.environ.get("DURATION", "30"))
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERALD = os.environ.get("HERALD_BIN", os.path.join(ROOT, ".build", "debug", "herald"))
EXTRA = os.environ.get("HERALD_SERVER_EXTRA", "")
SCENARIOS = os.environ.get("SCENARIOS", "slowloris-one,slowloris-many,streams-one,streams-many").split(",")
TOKEN = "hrd_attack-" + os.urandom(8).hex()


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 4 * N + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_herald(work, port):
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    with open(os.path.join(work, "herald.yaml"), "w") as f:
        f.write(
            f"""version: 1
store: {{ path: {work}/herald.db }}
server:
  listen: 127.0.0.1:{port}
  rate-limit: {{ per-token: 100000/s, burst: 100000 }}
  tokens:
    - {{ name: reader, sha256: {digest}, namespaces: ["default"], scopes: [read] }}
{EXTRA}
channels:
  sink: {{ type: log, path: /dev/null }}
routes:
  default:
    - deliver: [sink]
"""
        )
    log = open(os.path.join(work, "herald.log"), "w")
    # herald gets the raised descriptor limit too (inherited).
    p = subprocess.Popen([HERALD, "serve", "-c", os.path.join(work, "herald.yaml")], stderr=log, stdout=log)
    for _ in range(300):
        if "serving on" in open(os.path.join(work, "herald.log")).read():
            return p
        if p.poll() is not None:
            break
        time.sleep(0.1)
    print(open(os.path.join(work, "herald.log")).read(), file=sys.stderr)
    p.kill()
    sys.exit(1)


def socket_count(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


def probe(port, results, stop, held, pid, baseline):
    while not stop.is_set():
        held.append(socket_count(pid) - baseline)
        ok = False
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.settimeout(2)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            ok = data.startswith(b"HTTP/1.1 200")
            s.close()
        except OSError:
            ok = False
        results.append(ok)
        stop.wait(1.0)


class Attack:
    def __init__(self, port, kind, sources):
        self.port = port
        self.kind = kind
        self.sources = sources
        self.sel = selectors.DefaultSelector()
        self.attempts = 0
        self.statuses = {}
        self.pending = []  # (when, source) reconnects due
        self.conns = {}

    def open(self, source):
        if self.attempts >= 20 * N:
            return
        self.attempts += 1
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((source, 0))
            s.connect_ex(("127.0.0.1", self.port))
        except OSError:
            s.close()
            self.pending.append((time.monotonic() + 0.5, source))
            return
        state = {"source": source, "sent": False, "buf": b"", "next": time.monotonic(), "status": None}
        self.conns[s] = state
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, state)

    def closed(self, s, state):
        if state["status"] is None:
            self.statuses["closed unanswered"] = self.statuses.get("closed unanswered", 0) + 1
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        del self.conns[s]
        self.pending.append((time.monotonic() + 0.5, state["source"]))

    def run(self, seconds):
        for i in range(N):
            self.open(self.sources[i % len(self.sources)])
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            now = time.monotonic()
            due = [p for p in self.pending if p[0] <= now]
            self.pending = [p for p in self.pending if p[0] > now]
            for _, source in due:
                self.open(source)
            for key, events in self.sel.select(timeout=0.2):
                s, state = key.fileobj, key.data
                if events & selectors.EVENT_WRITE and not state["sent"]:
                    try:
                        if self.kind == "slowloris":
                            s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                        else:
                            s.send(
                                b"GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                                + TOKEN.encode()
                                + b"\r\n\r\n"
                            )
                        state["sent"] = True
                        self.sel.modify(s, selectors.EVENT_READ, state)
                    except OSError:
                        self.closed(s, state)
                        continue
                if events & selectors.EVENT_READ:
                    try:
                        data = s.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        self.closed(s, state)
                        continue
                    if state["status"] is None:
                        state["buf"] += data
                        if b"\r\n" in state["buf"]:
                            line = state["buf"].split(b"\r\n", 1)[0].decode("latin1")
                            parts = line.split(" ")
                            state["status"] = parts[1] if len(parts) > 1 else "?"
                            self.statuses[state["status"]] = self.statuses.get(state["status"], 0) + 1
                            state["buf"] = b""
            if self.kind == "slowloris":
                now = time.monotonic()
                for s, state in list(self.conns.items()):
                    if state["sent"] and now >= state["next"]:
                        state["next"] = now + 2
                        try:
                            s.send(b"X-a: b\r\n")
                        except OSError:
                            self.closed(s, state)
        for s in list(self.conns):
            s.close()
        self.sel.close()


def main():
    limit = raise_fd_limit()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="herald-attack.") as work:
        herald = start_herald(work, port)
        try:
            baseline = socket_count(herald.pid)
            print(f"herald {HERALD} on 127.0.0.1:{port}; N={N} for {DURATION:.0f} s per scenario; nofile {limit}")
            if EXTRA:
                print(f"extra server settings: {EXTRA.strip()}")
            for name in SCENARIOS:
                kind = "slowloris" if name.startswith("slowloris") else "streams"
                sources = ["127.0.0.2"] if name.endswith("-one") else [f"127.0.0.{i}" for i in range(2, 20)]
                results, held, stop = [], [], threading.Event()
                attack = Attack(port, kind, sources)
                prober = threading.Thread(
                    target=probe, args=(port, results, stop, held, herald.pid, baseline), daemon=True
                )
                # The probe starts once the attack's first wave is out.
                t = threading.Timer(3.0, prober.start)
                t.start()
                attack.run(DURATION)
                stop.set()
                t.cancel()
                if prober.is_alive():
                    prober.join()
                statuses = ", ".join(f"{k}: {v}" for k, v in sorted(attack.statuses.items()))
                print(
                    f"{name}: herald held median {statistics.median(held) if held else 0:.0f}, "
                    f"max {max(held) if held else 0} connections; attempts {attack.attempts}; "
                    f"answers {statuses or 'none'}; /healthz {sum(results)} of {len(results)} ok"
                )
                # Let the server drop what is left (an event stream notices a gone client at its
                # next keepalive write) before the next scenario; bounded.
                for _ in range(600):
                    if socket_count(herald.pid) <= baseline:
                        break
                    time.sleep(0.1)
        finally:
            herald.terminate()
            try:
                herald.wait(timeout=20)
            except subprocess.TimeoutExpired:
                herald.kill()


if __name__ == "__main__":
    main()
