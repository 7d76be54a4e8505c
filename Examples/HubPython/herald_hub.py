#!/usr/bin/env python3
"""A Python hub talking to `herald serve` with the standard library only (Python 3.9+).

What a hub needs from Herald's HTTP API (docs/http-api.md):

* ``send``: POST /v1/notifications with an idempotent retry. The notification carries an ``id``
  chosen before the first attempt; a retry after a timeout, a dropped connection, a 429 or a 5xx
  resends the same ``id``, so Herald routes it once (the replay is answered with
  ``Herald-Replayed: true``).
* ``wait_for_action``: GET /v1/notifications/{id}/action, the long-poll for an approve/deny.
* ``events``: GET /v1/events as Server-Sent Events, resuming with ``Last-Event-ID`` after a
  disconnect, so no event is missed or seen twice.

Run it as a script:

    export HERALD_URL=http://127.0.0.1:8686 HERALD_TOKEN=hrd_…
    python3 herald_hub.py send '{"title":"Build finished","body":"All green"}'
    python3 herald_hub.py send --wait none '{"id":"…","title":"…"}'
    python3 herald_hub.py wait-action ID --timeout 60
    python3 herald_hub.py events --namespace default [--since 0] [--count 10]
    python3 herald_hub.py report ID action --action approve --device-id pixel   # what an app sends
    python3 herald_hub.py register '{"deviceId":"pixel","platform":"phone","token":"…"}'

Each command prints JSON lines on stdout; errors go to stderr with exit code 1. The token needs
scope ``send`` for ``send``, ``read`` for ``wait-action`` and ``events``, ``events`` for ``report``
and ``devices`` for ``register`` (a missing scope is HTTP 403).
"""

import http.client
import json
import math
import os
import random
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid


class HeraldError(Exception):
    """An answer Herald gave that retrying will not change (4xx other than 408/429)."""

    def __init__(self, status, body):
        self.status = status
        self.body = body
        error = (body or {}).get("error", {}) if isinstance(body, dict) else {}
        self.code = error.get("code")
        self.field = error.get("field")
        super().__init__(f"HTTP {status}: {error.get('message') or body}")


class Herald:
    """A small client for herald serve. ``base_url`` like ``http://127.0.0.1:8686``."""

    def __init__(self, base_url, token, timeout=30.0, attempts=5):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.attempts = attempts

    # -- plumbing ---------------------------------------------------------------------------

    def _request(self, method, path, body=None, timeout=None):
        """One request; returns (status, headers, parsed JSON or None). HTTP errors are answers."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                raw = response.read()
                return response.status, response.headers, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = {"error": {"message": raw[:200].decode(errors="replace")}}
            return error.code, error.headers, parsed

    def _with_retries(self, method, path, body=None, timeout=None):
        """Retries transport errors, 408, 429 (after Retry-After) and 5xx with jittered backoff.

        Only safe for idempotent requests: a notification with a fixed ``id`` is one.
        """
        delay = 0.5
        for attempt in range(1, self.attempts + 1):
            try:
                status, headers, parsed = self._request(method, path, body, timeout)
            except (urllib.error.URLError, ConnectionError, TimeoutError, http.client.HTTPException) as error:
                if attempt == self.attempts:
                    raise
                print(f"herald: {error}; retrying", file=sys.stderr)
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, 10)
                continue
            if status in (408, 429) or status >= 500:
                if attempt == self.attempts:
                    raise HeraldError(status, parsed)
                wait = delay * random.uniform(0.5, 1.0)
                if headers.get("Retry-After", "").isdigit():
                    wait = max(wait, float(headers["Retry-After"]))
                print(f"herald: HTTP {status}; retrying in {wait:.1f}s", file=sys.stderr)
                time.sleep(wait)
                delay = min(delay * 2, 10)
                continue
            return status, headers, parsed
        raise AssertionError("unreachable")

    # -- the API ----------------------------------------------------------------------------

    def send(self, notification, wait=None):
        """Routes a notification once, however often the request has to be retried.

        Returns ``(report, replayed)``: the delivery report (or ``{"id","namespace","planned"}``
        with ``wait="none"``) and whether Herald had it already.
        """
        notification = dict(notification)
        notification.setdefault("id", str(uuid.uuid4()))  # fixed before the first attempt
        path = "/v1/notifications" + ("?wait=none" if wait == "none" else "")
        status, headers, body = self._with_retries("POST", path, notification)
        if status not in (200, 202):
            raise HeraldError(status, body)
        return body, headers.get("Herald-Replayed") == "true"

    def register(self, device):
        """Registers (upserts) a device; returns Herald's answer (device, channels, warnings)."""
        status, _, body = self._with_retries("POST", "/v1/devices", device)
        if status != 200:
            raise HeraldError(status, body)
        return body

    def report(self, notification_id, kind, action=None, device_id=None, data=None):
        """Records a lifecycle event, as an app does (received, tapped, dismissed, action)."""
        event = {"kind": kind}
        if action is not None:
            event["action"] = action
        if device_id is not None:
            event["deviceId"] = device_id
        if data:
            event["data"] = data
        quoted = urllib.parse.quote(notification_id, safe="")
        status, _, body = self._request("POST", f"/v1/notifications/{quoted}/events", event)
        if status != 201:
            raise HeraldError(status, body)
        return body["event"]

    def wait_for_action(self, notification_id, timeout=30):
        """The first ``action`` event of a notification, or None after ``timeout`` seconds."""
        quoted = urllib.parse.quote(notification_id, safe="")
        deadline = time.monotonic() + timeout
        while True:
            # Whole seconds, at most 300 per request (Herald's limit); a longer wait asks again.
            left = min(300, math.ceil(deadline - time.monotonic()))
            status, _, body = self._request(
                "GET", f"/v1/notifications/{quoted}/action?timeout={max(0, left)}", timeout=max(0, left) + 15)
            if status == 200:
                return body["event"]
            if status != 204:
                raise HeraldError(status, body)
            if time.monotonic() >= deadline - 0.5:
                return None

    def events(self, namespace=None, since=None, reconnect=True):
        """Yields ``{"id", "event", "data"}`` from the event stream, forever; ``data`` is the parsed
        JSON (a dict), as in the TypeScript client.

        After a disconnect it reconnects with ``Last-Event-ID`` set to the last id it yielded, so
        every event arrives exactly once, in order. ``since`` starts after that id (0: from the
        oldest stored event); None starts with live events.
        """
        last_id = None if since is None else str(since)
        delay = 0.5
        parsed = urllib.parse.urlsplit(self.base_url)
        query = urllib.parse.urlencode({"namespace": namespace} if namespace else {})
        path = (parsed.path or "") + "/v1/events" + ("?" + query if query else "")
        while True:
            connection_class = (
                http.client.HTTPSConnection if parsed.scheme == "https" else http.client.HTTPConnection)
            connection = connection_class(parsed.hostname, parsed.port, timeout=90)  # > 15 s keepalives
            try:
                headers = {"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"}
                if last_id is not None:
                    headers["Last-Event-ID"] = last_id
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                if response.status != 200:
                    raw = response.read()
                    body = json.loads(raw) if raw else None
                    if response.status < 500 and response.status != 429:
                        raise HeraldError(response.status, body)
                    raise ConnectionError(f"HTTP {response.status}")
                delay = 0.5
                for event in _server_sent_events(response):
                    if event["id"] is not None:
                        last_id = event["id"]
                    yield event
                raise ConnectionError("the stream ended")
            except (OSError, http.client.HTTPException) as error:
                if not reconnect:
                    return
                print(f"herald: event stream: {error}; reconnecting", file=sys.stderr)
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, 10)
            finally:
                connection.close()


def _server_sent_events(response):
    """Parses text/event-stream (the WHATWG rules Herald's stream needs): fields ``id``, ``event``,
    ``data`` (joined with newlines), comments (``:``) skipped, a blank line dispatches."""
    event_id, event_type, data = None, None, []
    buffer = b""
    while True:
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(1)
        if not chunk:
            return
        buffer += chunk
        while True:
            cut = min((i for i in (buffer.find(b"\n"), buffer.find(b"\r")) if i >= 0), default=-1)
            if cut < 0:
                break
            line = buffer[:cut].decode("utf-8", errors="replace")
            skip = 2 if buffer[cut:cut + 2] == b"\r\n" else 1
            buffer = buffer[cut + skip:]
            if line == "":
                if data:  # Herald's data is always JSON: parsed, as the TypeScript client does
                    yield {"id": event_id, "event": event_type or "message", "data": json.loads("\n".join(data))}
                event_type, data = None, []
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "id" and "\0" not in value:
                event_id = value
            elif field == "event":
                event_type = value
            elif field == "data":
                data.append(value)


def main(argv):
    import argparse

    parser = argparse.ArgumentParser(description="A stdlib Python hub for herald serve.")
    parser.add_argument("--url", default=os.environ.get("HERALD_URL", "http://127.0.0.1:8686"))
    parser.add_argument("--token", default=os.environ.get("HERALD_TOKEN"))
    commands = parser.add_subparsers(dest="command", required=True)
    send = commands.add_parser("send", help="send a notification (JSON), retrying idempotently")
    send.add_argument("json")
    send.add_argument("--wait", choices=["none"])
    register = commands.add_parser("register", help="register a device (JSON)")
    register.add_argument("json")
    wait = commands.add_parser("wait-action", help="wait for the first action on a notification")
    wait.add_argument("id")
    wait.add_argument("--timeout", type=int, default=30)
    report = commands.add_parser("report", help="record a lifecycle event, as an app does")
    report.add_argument("id")
    report.add_argument("kind", choices=["received", "tapped", "dismissed", "action"])
    report.add_argument("--action")
    report.add_argument("--device-id")
    events = commands.add_parser("events", help="print the event stream, resuming after disconnects")
    events.add_argument("--namespace")
    events.add_argument("--since", type=int)
    events.add_argument("--count", type=int, help="stop after this many events")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set HERALD_TOKEN")

    herald = Herald(args.url, args.token)
    try:
        if args.command == "send":
            report_, replayed = herald.send(json.loads(args.json), wait=args.wait)
            print(json.dumps({"replayed": replayed, "answer": report_}))
        elif args.command == "register":
            print(json.dumps(herald.register(json.loads(args.json))))
        elif args.command == "wait-action":
            print(json.dumps({"event": herald.wait_for_action(args.id, args.timeout)}))
        elif args.command == "report":
            print(json.dumps({"event": herald.report(args.id, args.kind, args.action, args.device_id)}))
        elif args.command == "events":
            for n, event in enumerate(herald.events(args.namespace, args.since), start=1):
                print(json.dumps(event), flush=True)
                if args.count and n >= args.count:
                    break
    except (HeraldError, OSError, http.client.HTTPException) as error:  # URLError is an OSError
        print(f"herald: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
