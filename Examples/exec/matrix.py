#!/usr/bin/env python3
"""A Herald exec channel for Matrix (protocol version 1, docs/exec-channels.md).

Sends each notification as an `m.text` message to the room a device registered, with the
client-server API: PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}.
The txnId is Herald's deliveryId, which stays the same on every retry: the homeserver answers a
repeated transaction with the first event instead of posting the message twice.

Standard library only. Config (under `config:` in herald.yaml):
  homeserver:    https://matrix.example.org    (required)
  access-token:  the bot's access token          (required, secret)
  ca-file:       a PEM CA file to trust          (optional; for a homeserver with a private CA)
  workers:       concurrent requests per batch   (optional, default 8)
Device registration: {"platform": "matrix", "room": "!roomid:example.org"}
"""

import json
import ssl
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PROTOCOL = 1
out_lock = threading.Lock()
settings = {}


def send(obj):
    """Writes one answer line (answers of concurrent batches never interleave)."""
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def log(message):
    print(message, file=sys.stderr, flush=True)


def handshake(req):
    cfg = req.get("config") or {}
    for key in ("homeserver", "access-token"):
        if not cfg.get(key):
            return {"error": {"message": f"config: {key} is required"}}
    settings["homeserver"] = cfg["homeserver"].rstrip("/")
    settings["token"] = cfg["access-token"]
    settings["context"] = ssl.create_default_context(cafile=cfg.get("ca-file") or None)
    settings["pool"] = ThreadPoolExecutor(max_workers=int(cfg.get("workers") or 8))
    return {"result": {
        "protocol": PROTOCOL,
        "platforms": [{"name": "matrix", "secretFields": []}],
        "configKeys": ["homeserver", "access-token", "ca-file", "workers"],
        "secretConfigKeys": ["access-token"],
    }}


def validate(req):
    device = req.get("device") or {}
    fields = {k: v for k, v in device.items() if k not in ("namespace", "deviceId", "platform")}
    room = fields.get("room")
    if not isinstance(room, str) or not room.startswith("!") or ":" not in room:
        return {"error": {"field": "room", "message": "must be a room id like !abc:example.org"}}
    unknown = sorted(set(fields) - {"room"})
    if unknown:
        return {"error": {"field": unknown[0], "message": "unknown field for platform matrix"}}
    return {"result": {"device": device}}


def message_text(n):
    parts = [p for p in (n.get("title"), n.get("body"), n.get("url")) if p]
    return "\n".join(parts) or n.get("type", "notification")


def deliver_one(notification, target):
    did = target["deliveryId"]
    room = ((target.get("device") or {}).get("room")) or ""
    path = "/_matrix/client/v3/rooms/{}/send/m.room.message/{}".format(
        urllib.parse.quote(room, safe=""), urllib.parse.quote(did, safe=""))
    body = json.dumps({"msgtype": "m.text", "body": message_text(notification)}).encode()
    request = urllib.request.Request(
        settings["homeserver"] + path, data=body, method="PUT",
        headers={"Authorization": "Bearer " + settings["token"], "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20, context=settings["context"]) as r:
            answer = json.loads(r.read() or b"{}")
            return {"deliveryId": did, "outcome": "delivered", "status": r.status,
                    "providerMessageId": answer.get("event_id")}
    except urllib.error.HTTPError as e:
        text = e.read(300).decode("utf-8", "replace")
        try:
            err = json.loads(text)
        except ValueError:
            err = {}
        code = err.get("errcode", "")
        reason = f"{e.code} {code} {err.get('error', text)}".strip()
        if e.code == 429 or e.code >= 500:
            after = err.get("retry_after_ms")
            result = {"deliveryId": did, "outcome": "retry", "status": e.code, "reason": reason}
            if isinstance(after, (int, float)):
                result["retryAfter"] = after / 1000
            elif e.headers.get("Retry-After", "").isdigit():
                result["retryAfter"] = int(e.headers["Retry-After"])
            return result
        # The bot was removed from (or never joined) the room: the registration is gone.
        outcome = "dead" if e.code == 403 and code == "M_FORBIDDEN" else "failed"
        return {"deliveryId": did, "outcome": outcome, "status": e.code, "reason": reason}
    except (urllib.error.URLError, OSError) as e:
        return {"deliveryId": did, "outcome": "retry", "reason": f"transport: {e}"}


def deliver(req):
    notification = req.get("notification") or {}
    targets = req.get("targets") or []
    results = list(settings["pool"].map(lambda t: deliver_one(notification, t), targets))
    return {"result": {"results": results}}


def serve(req):
    method = req.get("method")
    try:
        if method == "deliver":
            answer = deliver(req)
        elif method == "validate":
            answer = validate(req)
        else:
            answer = {"error": {"message": f"unknown method {method}"}}
    except Exception as e:  # an answer, never silence: Herald retries the batch
        log(f"{method} failed: {e!r}")
        answer = {"error": {"message": f"{method} failed: {type(e).__name__}"}}
    answer["id"] = req["id"]
    send(answer)


def main():
    batches = ThreadPoolExecutor(max_workers=4)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        method = req.get("method")
        if method == "handshake":
            answer = handshake(req)
            answer["id"] = req["id"]
            send(answer)
        elif method == "shutdown":
            batches.shutdown(wait=True)
            send({"id": req["id"], "result": {}})
            return
        else:
            batches.submit(serve, req)
    batches.shutdown(wait=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
