#!/usr/bin/env python3
"""A website connected to Pulse Relay through Herald (Python 3.9+, standard library only).

It implements section 二 of the Pulse Relay site integration guide ("网站接入 v1"):

1. ``GET /.well-known/pulse-relay.json``: public, ``application/json``.
2. ``GET {authorize}``: the "allow" page. It keeps the ``#`` fragment (relay, deviceId, sourceId,
   pushKey, deviceName, state) in ``sessionStorage`` across the site's own login, removes it from
   the address bar with ``history.replaceState``, asks to allow, posts to ``connect`` with a
   same-origin ``fetch`` and returns to ``pulserelay://site-connected?state=…&status=ok|denied|error``.
3. ``POST {connect}``: checks ``X-Pulse-Relay: 1``, ``Content-Type: application/json``, the site's
   login and the relay allow-list, then registers the key with Herald (``POST /v1/devices``,
   platform ``pulse``, namespace = the site's user). The push key goes to Herald only: it is never
   logged and never sent to a browser. When Herald cannot be reached (refused, reset, timed out)
   or fails, the answer is 502 with a JSON error, never an empty reply.
4. ``DELETE {connect}``: the same checks, then ``DELETE /v1/devices`` for that user's device;
   repeating it is still 200.

Herald does the rest of the guide (三–五): it signs and sends the Live Activity pushes to the
relay, keeps ``revision`` strictly increasing per ``ref``, honours the rate limits and removes a
key the relay answers 401/403/410 for. The site only sends notifications with a ``liveActivity``
to its user's namespace (``/demo/push`` below shows one).

Run:

    HERALD_URL=http://127.0.0.1:8686 HERALD_TOKEN=hrd_… SITE_USERS=alice:wonderland \
        python3 pulse_site.py --port 8000

The Herald token needs scopes ``devices`` and ``send`` over ``user-*``. The site must be served
over HTTPS in production (the App only talks to https sites; put it behind your TLS front).
"""

import argparse
import base64
import hashlib
import hmac
import html
import http.client
import http.cookies
import json
import os
import re
import secrets
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WELL_KNOWN = "/.well-known/pulse-relay.json"
AUTHORIZE = "/pulse-relay/authorize"
CONNECT = "/api/pulse-relay/connect"
# The relay addresses the guide names: the current one and the legacy workers.dev alias (old Apps
# send it; pushes always go to the current one, which Herald's relay channel does).
DEFAULT_RELAYS = ("https://relay.crsyounen.com", "https://pulse-relay.crsyounen.workers.dev")


class Site:
    """The site's state: users, sessions and its Herald connection."""

    def __init__(self, name, herald_url, herald_token, users, relays, secure_cookies):
        self.name = name
        self.herald_url = herald_url.rstrip("/")
        self.herald_token = herald_token
        self.users = users  # {username: password}; a real site has its own account system
        self.relays = {r.rstrip("/") for r in relays}
        self.secure_cookies = secure_cookies
        self.sessions = {}  # session id -> username
        self.lock = threading.Lock()

    # -- Herald --------------------------------------------------------------------------------

    def herald(self, method, path, body=None):
        """One call to herald serve; returns (status, parsed JSON or None). Status 0 when Herald
        could not be reached (refused, reset, timed out): the callers answer 502 then."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.herald_url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.herald_token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw) if raw else None
            except ValueError:
                return error.code, None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, http.client.HTTPException) as error:
            # Never the exception's text to the browser (it may name internal addresses).
            reason = getattr(error, "reason", error)
            sys.stderr.write(f"site: Herald unreachable at {self.herald_url}: {type(reason).__name__}\n")
            return 0, None
        except ValueError:  # a 2xx whose body is not JSON
            return 0, None

    @staticmethod
    def namespace(user):
        """Herald's namespace of a site user: one per user, so a user's devices get only their pushes."""
        return "user-" + user

    @staticmethod
    def herald_device_id(relay_device_id):
        """Herald's deviceId (1–128 characters) for the relay's deviceId: the same id when it fits,
        so a phone that connects again replaces its old key (the guide's rule)."""
        if 0 < len(relay_device_id) <= 128:
            return relay_device_id
        return "pulse-" + hashlib.sha256(relay_device_id.encode()).hexdigest()[:40]

    # -- sessions ------------------------------------------------------------------------------

    def login(self, user, password):
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            return None
        sid = secrets.token_urlsafe(32)
        with self.lock:
            self.sessions[sid] = user
        return sid

    def user_of(self, cookie_header):
        if not cookie_header:
            return None
        cookies = http.cookies.SimpleCookie()
        try:
            cookies.load(cookie_header)
        except http.cookies.CookieError:
            return None
        morsel = cookies.get("sid")
        if morsel is None:
            return None
        with self.lock:
            return self.sessions.get(morsel.value)


def page(title, body):
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>body{{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}}
button,input{{font:inherit;padding:.5rem 1rem;margin:.25rem 0}}</style></head>
<body>{body}</body></html>"""


AUTHORIZE_SCRIPT = r"""
(function () {
  const KEY = 'pulse-relay-connect';
  const FIELDS = ['relay', 'deviceId', 'sourceId', 'pushKey', 'deviceName', 'state'];
  // 1. The connection data arrives after '#': never sent to a server, so not in any access log.
  //    Keep it in sessionStorage (it survives the login below) and take it off the address bar.
  if (location.hash.length > 1) {
    const params = new URLSearchParams(location.hash.slice(1));
    const data = {};
    for (const f of FIELDS) data[f] = params.get(f) || '';
    sessionStorage.setItem(KEY, JSON.stringify(data));
    history.replaceState(null, '', location.pathname + location.search);
  }
  const data = JSON.parse(sessionStorage.getItem(KEY) || 'null');
  const status = document.getElementById('status');
  // 2. The result always goes back to this fixed address, never one taken from the parameters.
  function back(result) {
    sessionStorage.removeItem(KEY);
    location.href = 'pulserelay://site-connected?' + new URLSearchParams(Object.assign({ state: data.state }, result));
  }
  if (!data || !data.state) {
    status.textContent = 'Open this page from the Pulse Relay app to connect.';
    return;
  }
  if (!document.body.dataset.user) {
    document.getElementById('login').hidden = false;   // log in, then come back here; the data waits
    return;
  }
  document.getElementById('ask').hidden = false;
  document.getElementById('device').textContent = data.deviceName || 'your iPhone';
  document.getElementById('allow').onclick = async function () {
    status.textContent = 'Connecting…';
    let response;
    try {
      response = await fetch(document.body.dataset.connect, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-Pulse-Relay': '1' },
        body: JSON.stringify({ relay: data.relay, deviceId: data.deviceId, sourceId: data.sourceId,
                               pushKey: data.pushKey, deviceName: data.deviceName }),
      });
    } catch (e) {
      back({ status: 'error', code: '0' });
      return;
    }
    if (response.ok) back({ status: 'ok' });
    else back({ status: 'error', code: String(response.status) });
  };
  document.getElementById('deny').onclick = function () { back({ status: 'denied' }); };
})();
"""


class Handler(BaseHTTPRequestHandler):
    site = None  # set by serve()
    server_version = "PulseSiteKit/1"

    # Access log lines carry the path only: the fragment never reaches a server, and no body is logged.
    def log_message(self, format, *args):
        sys.stderr.write("site: %s %s\n" % (self.address_string(), format % args))

    # -- helpers -------------------------------------------------------------------------------

    def send_json(self, status, value, headers=()):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, v in headers:
            self.send_header(name, v)
        self.end_headers()
        self.wfile.write(body)

    def send_html(self, status, text, headers=()):
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        # Nothing but this page's own script; no framing (clickjacking of the Allow button).
        self.send_header("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; "
                         "style-src 'unsafe-inline'; frame-ancestors 'none'")
        self.send_header("Referrer-Policy", "no-referrer")
        for name, v in headers:
            self.send_header(name, v)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location, headers=()):
        # Header values never carry a line break (http.server writes them as given).
        if any(c in location for c in "\r\n") or any(c in v for _, v in headers for c in "\r\n"):
            location, headers = "/", ()
        self.send_response(303)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        for name, v in headers:
            self.send_header(name, v)
        self.end_headers()

    def body(self, limit=16384):
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > limit:
            return None
        return self.rfile.read(length)

    def user(self):
        return self.site.user_of(self.headers.get("Cookie"))

    # -- routes --------------------------------------------------------------------------------

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == WELL_KNOWN:
            self.send_json(200, {"version": 1, "name": self.site.name, "authorize": AUTHORIZE, "connect": CONNECT,
                                 "open": "/orders/{ref}"})
        elif path == AUTHORIZE:
            self.authorize_page()
        elif path == "/login":
            self.login_page()
        elif path.startswith("/orders/"):
            user = self.user()
            ref = html.escape(urllib.parse.unquote(path[len("/orders/"):]))
            self.send_html(200, page("Order", f"<h1>Order {ref}</h1><p>{html.escape(user or 'not logged in')}</p>"))
        elif path == "/":
            self.send_html(200, page(self.site.name, f"<h1>{html.escape(self.site.name)}</h1>"))
        else:
            self.send_json(404, {"error": "not found"})

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == CONNECT:
            self.connect()
        elif path == "/login":
            self.login()
        elif path == "/demo/push":
            self.demo_push()
        else:
            self.send_json(404, {"error": "not found"})

    def do_DELETE(self):
        if urllib.parse.urlsplit(self.path).path == CONNECT:
            self.disconnect()
        else:
            self.send_json(404, {"error": "not found"})

    # -- the authorize page and the site's own login -----------------------------------------

    def authorize_page(self):
        user = self.user()
        name = html.escape(self.site.name)
        login_url = "/login?" + urllib.parse.urlencode({"next": AUTHORIZE})
        body = f"""
<h1>{name}</h1>
<p id="status"></p>
<div id="login" hidden><p>Log in to {name} to connect Pulse Relay.</p>
  <a id="login-link" href="{html.escape(login_url)}">Log in</a></div>
<div id="ask" hidden>
  <p>Allow Pulse Relay to show progress from {name} on <b id="device"></b>?</p>
  <p>Signed in as <b>{html.escape(user or "")}</b>.</p>
  <button id="allow">Allow</button> <button id="deny">Don't allow</button>
</div>
<script>{AUTHORIZE_SCRIPT}</script>"""
        text = page(f"Connect Pulse Relay – {self.site.name}", body).replace(
            "<body>", f'<body data-user="{html.escape(user or "")}" data-connect="{CONNECT}">', 1)
        self.send_html(200, text)

    def login_page(self, error=""):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        next_path = safe_next(query.get("next", ["/"])[0])
        message = f'<p role="alert">{html.escape(error)}</p>' if error else ""
        self.send_html(200 if not error else 401, page("Log in", f"""
<h1>Log in</h1>{message}
<form method="post" action="/login?{html.escape(urllib.parse.urlencode({"next": next_path}))}">
  <label>User <input name="username" autocomplete="username" required></label><br>
  <label>Password <input name="password" type="password" autocomplete="current-password" required></label><br>
  <button id="submit" type="submit">Log in</button>
</form>"""))

    def login(self):
        raw = self.body()
        form = urllib.parse.parse_qs((raw or b"").decode(errors="replace"))
        sid = self.site.login(form.get("username", [""])[0], form.get("password", [""])[0])
        if sid is None:
            self.login_page("Wrong user or password.")
            return
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        cookie = f"sid={sid}; Path=/; HttpOnly; SameSite=Lax" + ("; Secure" if self.site.secure_cookies else "")
        self.redirect(safe_next(query.get("next", ["/"])[0]), headers=[("Set-Cookie", cookie)])

    # -- connect / disconnect ---------------------------------------------------------------------

    def checked_request(self):
        """The checks both connect handlers share (guide 二.3): the header a form cannot send, the
        JSON content type, and the site's own login. Returns (user, body) or None after answering."""
        if self.headers.get("X-Pulse-Relay") != "1":
            self.send_json(403, {"error": "X-Pulse-Relay: 1 is required"})
            return None
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            self.send_json(415, {"error": "Content-Type must be application/json"})
            return None
        user = self.user()
        if user is None:
            self.send_json(401, {"error": "not logged in"})
            return None
        raw = self.body()
        try:
            body = json.loads(raw) if raw is not None else None
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.send_json(400, {"error": "the body must be a JSON object"})
            return None
        return user, body

    def connect(self):
        checked = self.checked_request()
        if checked is None:
            return
        user, body = checked
        fields = {k: body.get(k) for k in ("relay", "deviceId", "sourceId", "pushKey", "deviceName")}
        if not all(isinstance(fields[k], str) and fields[k] for k in ("relay", "deviceId", "sourceId", "pushKey")):
            self.send_json(400, {"error": "relay, deviceId, sourceId and pushKey are required strings"})
            return
        # Only the relay addresses this site knows: the key is never handed to another address.
        if fields["relay"].rstrip("/") not in self.site.relays:
            self.send_json(400, {"error": "unknown relay"})
            return
        if not valid_push_key(fields["pushKey"]):
            self.send_json(400, {"error": "pushKey must be base64url of 32 bytes"})
            return
        device = {
            "namespace": Site.namespace(user),
            "deviceId": Site.herald_device_id(fields["deviceId"]),
            "platform": "pulse",
            "relay": fields["relay"],
            "relayDeviceId": fields["deviceId"],
            "sourceId": fields["sourceId"],
            "pushKey": fields["pushKey"],
            "deviceName": fields["deviceName"] if isinstance(fields["deviceName"], str) else "",
        }
        status, answer = self.site.herald("POST", "/v1/devices", device)
        if status == 200:
            self.send_json(200, {"ok": True})
        elif status == 422:
            field = ((answer or {}).get("error") or {}).get("field")
            self.send_json(400, {"error": f"invalid connection data ({field or 'unknown field'})"})
        else:
            if status:
                sys.stderr.write(f"site: Herald answered {status} to a device registration\n")
            self.send_json(502, {"error": "could not save the connection"})

    def disconnect(self):
        checked = self.checked_request()
        if checked is None:
            return
        user, body = checked
        device_id, source_id = body.get("deviceId"), body.get("sourceId")
        if not isinstance(device_id, str) or not device_id or not isinstance(source_id, str) or not source_id:
            self.send_json(400, {"error": "deviceId and sourceId are required strings"})
            return
        query = urllib.parse.urlencode({"namespace": Site.namespace(user),
                                        "deviceId": Site.herald_device_id(device_id), "platform": "pulse"})
        status, _ = self.site.herald("DELETE", "/v1/devices?" + query)
        if status in (204, 404):  # gone now, or already gone: the same to the caller
            self.send_json(200, {"ok": True})
        else:
            if status:
                sys.stderr.write(f"site: Herald answered {status} to a device removal\n")
            self.send_json(502, {"error": "could not remove the connection"})

    # -- sending ----------------------------------------------------------------------------------

    def demo_push(self):
        """Sends a Live Activity to the logged-in user's phones through Herald (guide 三–四):
        ``{"ref": "order-1024", "event": "start|update|end", "contentState": {...}, "alert": {...}}``."""
        user = self.user()
        if user is None:
            self.send_json(401, {"error": "not logged in"})
            return
        if (self.headers.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
            self.send_json(415, {"error": "Content-Type must be application/json"})
            return
        try:
            activity = json.loads(self.body() or b"null")
        except ValueError:
            activity = None
        if not isinstance(activity, dict):
            self.send_json(400, {"error": "the body must be a JSON object"})
            return
        status, report = self.site.herald("POST", "/v1/notifications",
                                          {"namespace": Site.namespace(user), "type": "live-activity",
                                           "liveActivity": activity})
        self.send_json(200 if status == 200 else 502, {"herald": status, "report": report})


# A plain absolute path with an optional query: RFC 3986 path characters, "/", "?" and "%".
_SAFE_NEXT = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*")


def safe_next(path):
    """A same-origin path to return to after login, else "/".

    Refused: anything but a plain absolute path (`https:`, `//host`), control characters (a tab is
    dropped by browsers, so `/<TAB>/host` is `//host`; CR and LF would start a header of their own),
    backslashes (browsers read `/\\host` as `//host`), and the same again after one or two more
    percent-decodings (`/%2F/host`, `/%252F/host`, `%09`, `%0D%0A`), so no later decoding can
    turn an accepted path into another site or a header.
    """
    if not isinstance(path, str) or len(path) > 2048 or not _SAFE_NEXT.fullmatch(path) or path.startswith("//"):
        return "/"
    decoded = path
    for _ in range(2):
        decoded = urllib.parse.unquote(decoded)
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in decoded) or "\\" in decoded or decoded.startswith("//"):
            return "/"
    return path


def valid_push_key(text):
    """base64url (padding optional) of exactly 32 bytes, as the guide defines pushKey."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{43}=?", text):
        return False
    return len(base64.urlsafe_b64decode(text.rstrip("=") + "=")) == 32


def serve(argv=None):
    parser = argparse.ArgumentParser(description="A Pulse Relay site backed by herald serve.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--name", default=os.environ.get("SITE_NAME", "Example Shop"))
    args = parser.parse_args(argv)
    if not 0 < len(args.name) <= 20:
        parser.error("--name is shown on the Dynamic Island: 1 to 20 characters (guide 二.1)")
    users = dict(pair.split(":", 1) for pair in os.environ.get("SITE_USERS", "").split(",") if ":" in pair)
    relays = [r for r in os.environ.get("PULSE_RELAYS", ",".join(DEFAULT_RELAYS)).split(",") if r]
    token = os.environ.get("HERALD_TOKEN")
    if not token:
        parser.error("set HERALD_TOKEN (a token with scopes devices and send over user-*)")
    site = Site(args.name, os.environ.get("HERALD_URL", "http://127.0.0.1:8686"), token, users, relays,
                secure_cookies=os.environ.get("SITE_INSECURE_COOKIES") != "1")
    Handler.site = site
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"site: listening on http://{args.host}:{httpd.server_address[1]}", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    serve()
