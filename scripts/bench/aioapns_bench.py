#!/usr/bin/env python3
"""aioapns fan-out against a local APNs-like sink, for scripts/bench-apns.sh.

usage: aioapns_bench.py HOST PORT CAFILE DEVICES INFLIGHT CONNECTIONS
Prints one JSON line like herald-bench: client, devices, delivered, seconds, rps, peak_rss_kb.
aioapns has no endpoint option, so the protocol class's host and port are overridden; the
ssl_context trusts the sink's CA and offers ALPN h2 (verification stays on).
"""
import asyncio
import json
import resource
import secrets
import ssl
import sys
import time
import uuid

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from aioapns import APNs, NotificationRequest
from aioapns.connection import APNsDevelopmentClientProtocol, APNsProductionClientProtocol


async def main():
    host, port, ca, devices, inflight, conns = sys.argv[1], int(sys.argv[2]), sys.argv[3], *map(int, sys.argv[4:7])
    for cls in (APNsProductionClientProtocol, APNsDevelopmentClientProtocol):
        cls.APNS_SERVER = host
        cls.APNS_PORT = port
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(["h2"])
    key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    client = APNs(key=key, key_id="BENCHKEY01", team_id="BENCHTEAM1", topic="com.example.bench",
                  max_connections=conns, ssl_context=ctx)
    message = {
        "aps": {"alert": {"title": "Permission Request", "body": "Claude Bash: rm -rf build"}, "sound": "default",
                "badge": 3, "thread-id": "permission-5f0c", "category": "permission-request", "mutable-content": 1},
        "sessionId": "5f0c", "sessionName": "claude - hapi", "requestId": "r-17", "url": "/sessions/5f0c",
    }
    tokens = [secrets.token_hex(32) for _ in range(devices)]
    await client.send_notification(NotificationRequest(device_token="00", message=message))  # warm-up
    sem = asyncio.Semaphore(inflight)
    ok = 0

    async def one(token):
        nonlocal ok
        async with sem:
            r = await client.send_notification(NotificationRequest(
                device_token=token, message=message, notification_id=str(uuid.uuid4()),
                time_to_live=3600, collapse_key="permission-5f0c"))
            if r.is_successful:
                ok += 1

    start = time.perf_counter()
    await asyncio.gather(*(one(t) for t in tokens))
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"client": "aioapns", "devices": devices, "delivered": ok, "seconds": round(seconds, 3),
                      "rps": round(devices / seconds), "peak_rss_kb": rss}))


asyncio.run(main())
