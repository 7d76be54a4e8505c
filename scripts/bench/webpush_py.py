#!/usr/bin/env python3
"""pywebpush side of scripts/bench-webpush.sh.

  webpush_py.py encrypt N PAYLOAD_BYTES          # WebPusher(sub).encode(data) N times
  webpush_py.py send BASE_URL CAFILE N THREADS   # N sends via a thread pool, one requests.Session per thread

Prints one JSON line like the Swift bench.
"""
import base64
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid
from pywebpush import WebPusher


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def subscription(endpoint):
    key = ec.generate_private_key(ec.SECP256R1())
    pub = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"endpoint": endpoint, "keys": {"p256dh": b64u(pub), "auth": b64u(os.urandom(16))}}


PAYLOAD = json.dumps({"id": "bench", "type": "permission-request", "title": "Permission Request",
                      "body": "Claude Bash: rm -rf build", "severity": "warning", "url": "/sessions/5f0c",
                      "tag": "permission-request-5f0c", "data": {"sessionId": "5f0c"}, "deviceId": "d0"},
                     separators=(",", ":"), sort_keys=True).encode()


def encrypt(n, size):
    sub = subscription("https://push.example.net/p/x")
    data = b"a" * size
    start = time.perf_counter()
    total = 0
    for _ in range(n):
        total += len(WebPusher(sub).encode(data)["body"])
    secs = time.perf_counter() - start
    print(json.dumps({"op": "encrypt", "impl": "pywebpush", "n": n, "payload": size, "body": total // n,
                      "seconds": round(secs, 3), "per_second": int(n / secs)}))


def send(base, ca, n, threads):
    subs = [subscription(f"{base}/push/{i}") for i in range(n)]
    vapid = Vapid()
    vapid.generate_keys()
    # Best case for pywebpush: sign the VAPID token once per origin (as Herald caches it) instead of per call.
    headers = vapid.sign({"sub": "mailto:bench@example.com", "aud": base, "exp": int(time.time()) + 43200})
    local = threading.local()

    def session():
        s = getattr(local, "s", None)
        if s is None:
            s = requests.Session()
            s.trust_env = False  # else REQUESTS_CA_BUNDLE overrides verify
            s.verify = ca
            adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=1)
            s.mount("https://", adapter)
            local.s = s
        return s

    def one(sub):
        r = WebPusher(sub, requests_session=session()).send(PAYLOAD, headers=dict(headers), ttl=86400)
        return r.status_code

    with ThreadPoolExecutor(threads) as pool:  # warm-up: one connection per thread
        list(pool.map(one, subs[:threads]))
        start = time.perf_counter()
        codes = list(pool.map(one, subs))
        secs = time.perf_counter() - start
    ok = sum(1 for c in codes if c == 201)
    print(json.dumps({"op": "send", "impl": "pywebpush", "n": n, "delivered": ok, "threads": threads,
                      "seconds": round(secs, 3), "per_second": int(n / secs)}))


if __name__ == "__main__":
    if sys.argv[1] == "encrypt":
        encrypt(int(sys.argv[2]), int(sys.argv[3]))
    else:
        send(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
