#!/usr/bin/env python3
"""The web example's hub: serves index.html and sw.js, and passes the calls a browser makes on to
``herald serve`` (Python 3.9+, standard library only).

    GET  /v1/webpush/vapid-public-key          -> the key to subscribe with ({"publicKey": …})
    POST /v1/devices                           -> registers the browser's subscription (platform web)
    POST /v1/notifications/{id}/events         -> received / tapped / action reports (worker and page)
    GET  /v1/devices/{deviceId}/stream?token=  -> the device's local stream (EventSource), streamed through

The page and the worker call these same-origin paths, so no CORS is needed. The first three go out
with the hub's own token (scopes ``devices`` and ``events``; ``devices`` also reads the VAPID key),
which stays on the server. The stream goes out with the credential the browser presents: the
device's own stream secret (``hls_…``, from the registration's answer), which opens that one
device's stream and nothing else; the hub never adds its token to it. A real site puts these routes
behind its own login and picks the namespace from the session; here it is ``HUB_NAMESPACE``
(default ``default``).

    HERALD_URL=http://127.0.0.1:8686 HERALD_TOKEN=hrd_… python3 hub.py --port 8080

Browsers allow service workers on https origins and on http://localhost only: open
http://localhost:8080/.
"""

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/sw.js": ("sw.js", "text/javascript; charset=utf-8")}
EVENTS = re.compile(r"/v1/notifications/([^/]{1,200})/events")
STREAM = re.compile(r"/v1/devices/([^/]{1,200})/stream")
SECRET = re.compile(r"([?&]token=)[^&\s\"]*")


class Hub(BaseHTTPRequestHandler):
    herald_url = "http://127.0.0.1:8686"
    token = ""
    namespace = "default"

    def log_message(self, format, *args):
        # The stream's URL carries the device's secret (?token=): never logged.
        sys.stderr.write("hub: %s\n" % SECRET.sub(r"\1‹redacted›", format % args))

    def answer(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def herald(self, method, path, body=None):
        """Forwards one call with the hub's token; answers with Herald's status and JSON body."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.herald_url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                self.answer(response.status, response.read() or b"{}")
        except urllib.error.HTTPError as error:
            self.answer(error.code, error.read() or b"{}")
        except (urllib.error.URLError, OSError) as error:
            sys.stderr.write(f"hub: Herald unreachable: {type(getattr(error, 'reason', error)).__name__}\n")
            self.answer(502, {"error": "Herald is unreachable"})

    def stream(self, device, secret):
        """Passes the device's local stream (Server-Sent Events) through, event by event, until either
        side closes it. Herald checks the secret (401 for a wrong one); its keepalive comment every
        15 s shows the hub a browser that left (the write fails) and keeps the read below alive."""
        if not secret:
            self.answer(401, {"error": "give the device's stream secret as ?token="})
            return
        query = urllib.parse.urlencode({"namespace": self.namespace})
        request = urllib.request.Request(f"{self.herald_url}/v1/devices/{device}/stream?{query}")
        request.add_header("Authorization", f"Bearer {secret}")
        request.add_header("Accept", "text/event-stream")
        try:
            upstream = urllib.request.urlopen(request, timeout=60)
        except urllib.error.HTTPError as error:
            self.answer(error.code, error.read() or b"{}")
            return
        except (urllib.error.URLError, OSError) as error:
            sys.stderr.write(f"hub: Herald unreachable: {type(getattr(error, 'reason', error)).__name__}\n")
            self.answer(502, {"error": "Herald is unreachable"})
            return
        with upstream:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()   # HTTP/1.0: the stream ends when the connection closes
            try:
                for line in upstream:   # one SSE line at a time; flushed at each event's blank line
                    self.wfile.write(line)
                    if line in (b"\n", b"\r\n"):
                        self.wfile.flush()
            except OSError:
                pass  # the browser left, or Herald ended the stream

    def json_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > 16384:
            return None
        try:
            value = json.loads(self.rfile.read(length))
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def do_GET(self):
        parts = urllib.parse.urlsplit(self.path)
        path = parts.path
        stream = STREAM.fullmatch(path)
        if path in STATIC:
            name, content_type = STATIC[path]
            with open(os.path.join(HERE, name), "rb") as f:
                self.answer(200, f.read(), content_type)
        elif path == "/v1/webpush/vapid-public-key":
            self.herald("GET", "/v1/webpush/vapid-public-key")
        elif stream:
            secret = urllib.parse.parse_qs(parts.query).get("token", [""])[0]
            self.stream(stream.group(1), secret)
        else:
            self.answer(404, {"error": "not found"})

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        body = self.json_body()
        events = EVENTS.fullmatch(path)
        if path not in ("/v1/devices",) and not events:
            self.answer(404, {"error": "not found"})
        elif body is None:
            self.answer(400, {"error": "the body must be a JSON object"})
        elif path == "/v1/devices":
            if body.get("platform") != "web":
                self.answer(400, {"error": "only platform web registers here"})
                return
            body["namespace"] = self.namespace  # the session's namespace, never the browser's choice
            self.herald("POST", "/v1/devices", body)
        else:
            query = urllib.parse.urlencode({"namespace": self.namespace})
            self.herald("POST", f"/v1/notifications/{events.group(1)}/events?{query}", body)


def main():
    parser = argparse.ArgumentParser(description="The web example's hub in front of herald serve.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    Hub.herald_url = os.environ.get("HERALD_URL", "http://127.0.0.1:8686").rstrip("/")
    Hub.token = os.environ.get("HERALD_TOKEN", "")
    Hub.namespace = os.environ.get("HUB_NAMESPACE", "default")
    if not Hub.token:
        parser.error("set HERALD_TOKEN (a token with scopes devices and events)")
    httpd = ThreadingHTTPServer((args.host, args.port), Hub)
    print(f"hub: listening on http://{args.host}:{httpd.server_address[1]}", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
