#!/usr/bin/env python3
"""Issue 30, item 2: the report leak by race, against a real `herald serve`.

Starts the given herald binary on 127.0.0.1 with two tenants (token A covers nsA, token B covers
nsB), then runs ROUNDS races: A sends id X with ?wait=none while B sends the same id X
synchronously, at the same moment. B must never get nsA's report (200 with "namespace":"nsA");
it gets 409 (the id is A's), or its own report when B's send was stored first.

Also tries the device takeover of item 1: B registers A's FCM token in nsB.

usage: tenant_race.py HERALD_BINARY [ROUNDS]      (prints one line of figures; exit 1 on a leak)
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(base, method, path, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    binary = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    home = tempfile.mkdtemp(prefix="herald-race-")
    port = free_port()
    tokens = {"a": "hrd_tenant-a-race", "b": "hrd_tenant-b-race"}
    sha = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in tokens.items()}
    config = f"""version: 1
store: {{ path: {home}/herald.db }}
log: {{ level: error }}
channels:
  console: {{ type: log, path: {home}/log.jsonl }}
routes:
  default:
    - deliver: [console]
server:
  listen: 127.0.0.1:{port}
  rate-limit: {{ per-token: 100000/s, burst: 100000 }}
  tokens:
    - {{ name: a, sha256: {sha['a']}, namespaces: [nsA], scopes: [send, devices, read] }}
    - {{ name: b, sha256: {sha['b']}, namespaces: [nsB], scopes: [send, devices, read] }}
"""
    path = os.path.join(home, "herald.yaml")
    with open(path, "w") as f:
        f.write(config)
    env = dict(os.environ, HERALD_HOME=home)
    server = subprocess.Popen([binary, "serve", "-c", path], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1).read()
                break
            except Exception:
                time.sleep(0.05)
        leaks = 0
        answers = {}
        for i in range(rounds):
            nid = f"race-{i}"
            out = {}
            go = threading.Barrier(2)

            def a_send():
                go.wait()
                out["a"] = call(base, "POST", "/v1/notifications?wait=none", tokens["a"],
                                {"id": nid, "namespace": "nsA", "title": "A's secret"})

            def b_send():
                go.wait()
                out["b"] = call(base, "POST", "/v1/notifications", tokens["b"],
                                {"id": nid, "namespace": "nsB", "title": "B"})

            ta, tb = threading.Thread(target=a_send), threading.Thread(target=b_send)
            ta.start(); tb.start(); ta.join(); tb.join()
            status, text = out["b"]
            answers[status] = answers.get(status, 0) + 1
            if "nsA" in text or "A's secret" in text:
                leaks += 1
        # Item 1: B registers A's FCM token in its own namespace.
        call(base, "POST", "/v1/devices", tokens["a"],
             {"namespace": "nsA", "deviceId": "victim-phone", "platform": "android", "token": "fcm-token-of-a"})
        takeover, body = call(base, "POST", "/v1/devices", tokens["b"],
                              {"namespace": "nsB", "deviceId": "mine", "platform": "android", "token": "fcm-token-of-a"})
        _, listing = call(base, "GET", "/v1/devices?namespace=nsA", tokens["a"])
        kept = "victim-phone" in listing
        print(f"tenant-race rounds={rounds} leaks={leaks} b_answers={dict(sorted(answers.items()))} "
              f"takeover_status={takeover} victim_kept={kept} answer_names_nsA={'nsA' in body}")
        return 1 if leaks or not kept or "nsA" in body else 0
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
