#!/usr/bin/env python3
"""Local push under load (issue 35), for scripts/bench/local.sh: APPS apps, each in a namespace of
its own (lp-N), hold their stream (GET /v1/devices/{deviceId}/stream) to one `herald serve`;
notifications are sent at RATE per second for SECONDS (a waiting POST /v1/notifications each, to
the apps in turn), every app but the last SILENT confirms each push at once (kind received).

Reports the notify-to-confirm latency (from the send's first byte to the confirmation's 201, p50
and p99, confirming apps; and its two halves' p50, split where the app read the push from its
stream: send_to_push, push_to_confirm), the fallback of the silent apps (every one of their notifications must be
`not confirmed` locally and delivered by the cloud sink, within confirm + 1 s of its send: counts
of fallbacks, missed and duplicated), and herald's peak RSS (VmHWM).

    local_push.py URL TOKEN --pid PID [--apps 1000] [--rate 1000] [--seconds 10] [--silent 10]
                  [--confirm 10] [--senders 256] [--confirmers 64]

Standard library only (asyncio). Prints one line starting with RESULT.
"""
import argparse
import asyncio
import json
import time
import urllib.parse

from bench_proc import cpu_seconds, peak_rss_mb


class Connection:
    """One keep-alive HTTP/1.1 connection; requests on it one at a time."""

    def __init__(self, url):
        self.url = urllib.parse.urlsplit(url)
        self.reader = self.writer = None

    async def request(self, method, path, token, body=None):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.url.hostname, self.url.port, limit=1 << 22)
        data = b"" if body is None else json.dumps(body).encode()
        head = (f"{method} {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n")
        self.writer.write(head.encode() + data)
        await self.writer.drain()
        status = int((await self.reader.readline()).split()[1])
        length, chunked = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            low = line.lower()
            if low.startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            elif low.startswith(b"transfer-encoding:") and b"chunked" in low:
                chunked = True
        if not chunked:
            return status, await self.reader.readexactly(length)
        body = b""
        while True:
            size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await self.reader.readline()
                return status, body
            body += (await self.reader.readexactly(size + 2))[:-2]


class App:
    def __init__(self, index, silent):
        self.index = index
        self.namespace = f"lp-{index}"
        self.device = f"app-{index}"
        self.silent = silent
        self.ready = asyncio.Event()
        self.received = 0

    async def run(self, url, stream, confirms):
        u = urllib.parse.urlsplit(url)
        reader, writer = await asyncio.open_connection(u.hostname, u.port, limit=1 << 20)
        writer.write((f"GET {stream['path']} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {stream['secret']}\r\n"
                      "Accept: text/event-stream\r\n\r\n").encode())
        await writer.drain()
        if b" 200 " not in await reader.readline():
            raise RuntimeError(f"stream of {self.device} refused")
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        buffer, event, data = b"", None, None
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                return
            buffer += (await reader.readexactly(size + 2))[:-2]
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line == b"":
                    if event == b"notification" and data is not None:
                        self.received += 1
                        nid = json.loads(data)["id"]
                        received_at.setdefault(nid, time.monotonic())
                        if not self.silent:
                            confirms.put_nowait((nid, self))
                    event, data = None, None
                elif line.startswith(b":"):
                    self.ready.set()
                elif line.startswith(b"event: "):
                    event = line[7:]
                elif line.startswith(b"data: "):
                    data = line[6:]


received_at = {}   # notification id -> when its push was read from the app's stream


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("token")
    p.add_argument("--pid", type=int, default=0)
    p.add_argument("--apps", type=int, default=1000)
    p.add_argument("--rate", type=float, default=1000)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--silent", type=int, default=10)
    p.add_argument("--confirm", type=float, default=10)
    p.add_argument("--senders", type=int, default=256)
    p.add_argument("--confirmers", type=int, default=64)
    a = p.parse_args()

    apps = [App(i, i >= a.apps - a.silent) for i in range(a.apps)]
    streams = {}

    async def register(part):
        c = Connection(a.url)
        for app in part:
            status, body = await c.request("POST", "/v1/devices", a.token, {
                "namespace": app.namespace, "deviceId": app.device, "platform": "phone",
                "token": f"bench-{app.device}-0123456789abcdef"})
            if status != 200:
                raise RuntimeError(f"register {app.device}: {status} {body[:200]!r}")
            streams[app.index] = json.loads(body)["stream"]

    await asyncio.gather(*(register(apps[k::16]) for k in range(16)))
    confirms = asyncio.Queue()
    readers = [asyncio.create_task(app.run(a.url, streams[app.index], confirms)) for app in apps]
    await asyncio.wait_for(asyncio.gather(*(app.ready.wait() for app in apps)), timeout=120)

    sent_at, confirmed_at, reports = {}, {}, {}

    async def confirmer():
        c = Connection(a.url)
        while True:
            nid, app = await confirms.get()
            status, _ = await c.request(
                "POST", f"/v1/notifications/{nid}/events?namespace={app.namespace}", a.token,
                {"kind": "received", "deviceId": app.device})
            if status == 201:
                confirmed_at[nid] = time.monotonic()

    confirm_tasks = [asyncio.create_task(confirmer()) for _ in range(a.confirmers)]
    total = int(a.rate * a.seconds)
    pool = asyncio.Queue()
    for _ in range(a.senders):
        pool.put_nowait(Connection(a.url))
    late = 0

    async def send(k, app):
        c = await pool.get()
        nid = f"lp-{k}"
        sent_at[nid] = time.monotonic()
        status, body = await c.request("POST", "/v1/notifications", a.token,
                                       {"id": nid, "namespace": app.namespace, "title": "bench"})
        done = time.monotonic()
        pool.put_nowait(c)
        outcomes = {d["channel"]: (d["outcome"], d.get("reason")) for d in json.loads(body).get("deliveries", [])}
        reports[nid] = (app.silent, outcomes, done - sent_at[nid], status)

    started = time.monotonic()
    herald_cpu, driver_cpu = cpu_seconds(a.pid), time.process_time()
    tasks = []
    for k in range(total):
        due = started + k / a.rate
        wait = due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        elif wait < -0.05:
            late += 1
        tasks.append(asyncio.create_task(send(k, apps[k % a.apps])))
    sending_s = time.monotonic() - started
    await asyncio.gather(*tasks)
    busy = time.monotonic() - started
    herald_cpu, driver_cpu = cpu_seconds(a.pid) - herald_cpu, time.process_time() - driver_cpu
    await asyncio.sleep(0.5)
    for t in confirm_tasks + readers:
        t.cancel()

    latencies = [(confirmed_at[n] - sent_at[n]) * 1000 for n in confirmed_at]
    # The two halves: send to the push read from the stream, and that read to the confirmation's 201.
    to_push = [(received_at[n] - sent_at[n]) * 1000 for n in confirmed_at if n in received_at]
    to_confirm = [(confirmed_at[n] - received_at[n]) * 1000 for n in confirmed_at if n in received_at]
    silent = {n: r for n, r in reports.items() if r[0]}
    fallbacks = sum(1 for r in silent.values()
                    if r[1].get("local") == ("failed", "not confirmed") and r[1].get("cloud", ("",))[0] == "delivered")
    missed = sum(1 for r in silent.values() if r[1].get("cloud", ("",))[0] != "delivered")
    slow_fallbacks = sum(1 for r in silent.values() if r[2] > a.confirm + 1)
    duplicated = sum(1 for r in reports.values()
                     if r[1].get("local", ("",))[0] == "delivered" and r[1].get("cloud", ("",))[0] == "delivered")
    local = sum(1 for r in reports.values() if r[1].get("local", ("",))[0] == "delivered")
    errors = sum(1 for r in reports.values() if r[3] != 200)
    fallback_max = max((r[2] for r in silent.values()), default=float("nan"))
    print(f"RESULT apps={a.apps} silent={a.silent} rate={a.rate:g}/s sent={len(reports)} send_errors={errors} "
          f"sending_s={sending_s:.2f} late_sends={late} stayed_local={local} confirmed={len(latencies)} "
          f"notify_to_confirm_ms_p50={percentile(latencies, 50):.2f} "
          f"notify_to_confirm_ms_p99={percentile(latencies, 99):.2f} "
          f"send_to_push_ms_p50={percentile(to_push, 50):.2f} push_to_confirm_ms_p50={percentile(to_confirm, 50):.2f} "
          f"silent_notifications={len(silent)} fallbacks={fallbacks} missed={missed} duplicated={duplicated} "
          f"fallbacks_over_confirm_plus_1s={slow_fallbacks} slowest_fallback_s={fallback_max:.2f} "
          f"herald_cpu_cores={herald_cpu / busy:.2f} driver_cpu_cores={driver_cpu / busy:.2f} "
          f"herald_peak_rss_mb={peak_rss_mb(a.pid):.1f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
