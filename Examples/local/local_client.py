#!/usr/bin/env python3
"""A local-push app for `herald serve` (issue 35), on Python's standard library only.

It registers its device (POST /v1/devices with the app's token), holds the device's stream
(GET /v1/devices/{deviceId}/stream with the stream secret the registration answered), prints each
notification as one JSON line on stdout and confirms it (POST /v1/notifications/{id}/events,
kind received). A dropped stream is opened again after a pause; pushes sent meanwhile went to the
cloud, and a cloud duplicate can be told by its id (`seen` below).

usage: local_client.py [--url URL] [--token TOKEN] --device-id ID [--platform phone]
                       [--push-token T] [--namespace NS] [--count N] [--silent]

URL and TOKEN default to $HERALD_URL and $HERALD_TOKEN (scopes devices and events).
"""

import argparse
import http.client
import json
import os
import sys
import time
import urllib.parse
import urllib.request


def call(url, token, method, path, body=None):
    """One JSON request; returns the parsed answer (raises urllib.error.HTTPError on 4xx/5xx)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as res:
        text = res.read()
        return json.loads(text) if text else None


def events(url, path, secret):
    """Yields (event, data) of the stream until it ends."""
    parts = urllib.parse.urlsplit(url)
    conn_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_type(parts.hostname, parts.port, timeout=60)   # keepalive comments come every 15 s
    conn.request("GET", path, headers={"Authorization": "Bearer " + secret, "Accept": "text/event-stream"})
    res = conn.getresponse()
    if res.status != 200:
        raise RuntimeError(f"stream: HTTP {res.status} {res.read().decode(errors='replace')}")
    event, data = "message", []
    try:
        for raw in res:
            line = raw.decode().rstrip("\r\n")
            if line == "":
                if data:
                    yield event, "\n".join(data)
                event, data = "message", []
            elif line.startswith(":"):
                yield "comment", line[1:].strip()
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
    finally:
        conn.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default=os.environ.get("HERALD_URL", "http://127.0.0.1:8686"))
    p.add_argument("--token", default=os.environ.get("HERALD_TOKEN"))
    p.add_argument("--device-id", required=True)
    p.add_argument("--platform", default="phone")
    p.add_argument("--push-token", help="the device's cloud push token (FCM); default: a placeholder")
    p.add_argument("--namespace", default="default")
    p.add_argument("--count", type=int, default=0, help="exit after this many notifications (0: never)")
    p.add_argument("--silent", action="store_true", help="never confirm (the cloud takes over)")
    a = p.parse_args()
    if not a.token:
        sys.exit("local_client: give --token or set HERALD_TOKEN")

    device = {"namespace": a.namespace, "deviceId": a.device_id, "platform": a.platform,
              "token": a.push_token or f"local-only-{a.device_id}-0000000000"}
    answer = call(a.url, a.token, "POST", "/v1/devices", device)
    stream = answer.get("stream")
    if not stream:
        sys.exit("local_client: no local channel serves this device (the answer has no stream)")
    seen, shown, pause = set(), 0, 1
    while True:
        try:
            for event, data in events(a.url, stream["path"], stream["secret"]):
                if event == "comment" and data == "stream":
                    print(json.dumps({"connected": a.device_id}), file=sys.stderr, flush=True)
                    pause = 1
                if event != "notification":
                    continue
                push = json.loads(data)
                if push["id"] in seen:          # the same notification again: drop it
                    continue
                seen.add(push["id"])
                n = push["notification"]
                print(json.dumps({"id": push["id"], "title": n.get("title"), "body": n.get("body")}), flush=True)
                if not a.silent:
                    query = "" if a.namespace == "default" else "?namespace=" + urllib.parse.quote(a.namespace)
                    call(a.url, a.token, "POST", f"/v1/notifications/{urllib.parse.quote(push['id'])}/events{query}",
                         {"kind": "received", "deviceId": a.device_id})
                shown += 1
                if a.count and shown >= a.count:
                    return
        except (OSError, http.client.HTTPException, RuntimeError) as e:
            print(json.dumps({"disconnected": str(e)}), file=sys.stderr, flush=True)
        time.sleep(pause)
        pause = min(pause * 2, 30)


if __name__ == "__main__":
    main()
