#!/usr/bin/env python3
"""Event-stream fan-out for scripts/bench/serve.sh: SUBSCRIBERS clients on GET /v1/events each
must receive every event of a burst of NOTIFICATIONS notifications (POST …?wait=none over 8
keep-alive connections). Reports missed events (target 0), the time from the first send until the
last subscriber has everything, and the peak RSS (VmHWM) of the herald process.

    sse_fanout.py URL TOKEN SUBSCRIBERS NOTIFICATIONS --pid HERALD_PID [--events-per-notification 2]

Standard library only (asyncio). Prints one line starting with RESULT.
"""
import argparse
import asyncio
import json
import time
import urllib.parse
import uuid

from bench_proc import peak_rss_mb


async def open_connection(url):
    u = urllib.parse.urlsplit(url)
    return await asyncio.open_connection(u.hostname, u.port or 80, limit=1 << 20)


class Subscriber:
    def __init__(self, prefix, expected):
        self.prefix = prefix
        self.expected = expected
        self.seen = set()
        self.ready = asyncio.Event()
        self.complete = asyncio.Event()
        self.completed_at = None

    async def run(self, url, token, namespace):
        reader, writer = await open_connection(url)
        writer.write((f"GET /v1/events?namespace={namespace} HTTP/1.1\r\nHost: bench\r\n"
                      f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n").encode())
        await writer.drain()
        status = await reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(f"event stream answered {status!r}")
        chunked = False
        while True:  # headers
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
                chunked = True
        buffer = b""
        event_id, data = None, []
        while True:
            if chunked:
                size_line = await reader.readline()
                if not size_line:
                    return
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return
                chunk = await reader.readexactly(size + 2)
                buffer += chunk[:-2]
            else:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                line = line.rstrip(b"\r").decode()
                if line == "":
                    if data:
                        payload = json.loads("\n".join(data))
                        if str(payload.get("notificationId", "")).startswith(self.prefix):
                            self.seen.add(event_id)
                            if len(self.seen) >= self.expected and not self.complete.is_set():
                                self.completed_at = time.monotonic()
                                self.complete.set()
                    event_id, data = None, []
                elif line.startswith(":"):
                    self.ready.set()  # the opening ": stream" comment
                elif line.startswith("id:"):
                    event_id = line[3:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))


async def sender(url, token, namespace, ids):
    reader, writer = await open_connection(url)
    for nid in ids:
        body = json.dumps({"id": nid, "namespace": namespace, "type": "bench", "title": "burst"}).encode()
        writer.write((f"POST /v1/notifications?wait=none HTTP/1.1\r\nHost: bench\r\n"
                      f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        await writer.drain()
        status = await reader.readline()
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        if b" 202 " not in status:
            raise RuntimeError(f"send answered {status!r}")
    writer.close()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("token")
    p.add_argument("subscribers", type=int)
    p.add_argument("notifications", type=int)
    p.add_argument("--pid", type=int, default=0)
    p.add_argument("--namespace", default="bench")
    p.add_argument("--events-per-notification", type=int, default=2)  # notification + one delivery
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    prefix = f"sse-{uuid.uuid4().hex[:8]}-"
    expected = a.notifications * a.events_per_notification
    subs = [Subscriber(prefix, expected) for _ in range(a.subscribers)]
    tasks = [asyncio.create_task(s.run(a.url, a.token, a.namespace)) for s in subs]
    await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in subs)), timeout=60)
    ids = [f"{prefix}{i}" for i in range(a.notifications)]
    started = time.monotonic()
    await asyncio.gather(*(sender(a.url, a.token, a.namespace, ids[k::8]) for k in range(8)))
    sent = time.monotonic() - started
    try:
        await asyncio.wait_for(asyncio.gather(*(s.complete.wait() for s in subs)), timeout=a.timeout)
    except asyncio.TimeoutError:
        pass
    missed = sum(max(0, expected - len(s.seen)) for s in subs)
    done = [s.completed_at for s in subs if s.completed_at is not None]
    last = (max(done) - started) if len(done) == len(subs) else float("nan")
    for t in tasks:
        t.cancel()
    print(f"RESULT subscribers={a.subscribers} notifications={a.notifications} events_each={expected} "
          f"missed={missed} incomplete_subscribers={len(subs) - len(done)} burst_send_s={sent:.2f} "
          f"last_subscriber_complete_s={last:.2f} herald_peak_rss_mb={peak_rss_mb(a.pid):.1f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
