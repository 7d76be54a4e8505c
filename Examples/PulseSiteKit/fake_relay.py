#!/usr/bin/env python3
"""A local stand-in for the Pulse relay, to try the kit on one machine (standard library only).

It answers ``POST /v1/devices/{relayDeviceId}/push`` with 200 ``{"ok":true}`` over HTTPS (Herald
sends to https relays only), checks the ``X-Pulse-Auth: v2 <ts> <nonce> <mac>`` signature with the
device's push key when ``--push-key`` is given, and prints one JSON line per push on stdout:
``{"path": …, "source": …, "signature": "valid"|"invalid"|"unchecked", "body": {…}}``.

    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \\
        -addext subjectAltName=IP:127.0.0.1 -keyout relay.key -out relay.pem
    python3 fake_relay.py --port 8443 --cert relay.pem --key relay.key --push-key="$PUSH_KEY"  # "=": a base64url key may start with "-"

Herald trusts it through ``tls: { ca-file: relay.pem }`` and a pulse channel with
``current-relay: https://127.0.0.1:8443`` (see README.md, "Try it on one machine").
"""

import argparse
import base64
import hashlib
import hmac
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def expected_mac(key, method, path, ts, nonce, body):
    """The guide's v2 signature: HMAC-SHA256(pushKey, "METHOD\\npath\\nts\\nnonce\\nsha256hex(body)")."""
    message = "\n".join([method, path, ts, nonce, hashlib.sha256(body).hexdigest()]).encode()
    return base64.urlsafe_b64encode(hmac.new(key, message, hashlib.sha256).digest()).rstrip(b"=").decode()


class Relay(BaseHTTPRequestHandler):
    push_key = None  # bytes, or None: signatures unchecked

    def log_message(self, format, *args):
        sys.stderr.write("relay: %s\n" % (format % args))

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not (self.path.startswith("/v1/devices/") and self.path.endswith("/push")):
            self.answer(404, {"error": "not found"})
            return
        signature = "unchecked"
        if self.push_key is not None:
            parts = (self.headers.get("X-Pulse-Auth") or "").split(" ")
            good = len(parts) == 4 and parts[0] == "v2" and hmac.compare_digest(
                parts[3], expected_mac(self.push_key, "POST", self.path, parts[1], parts[2], body))
            signature = "valid" if good else "invalid"
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        print(json.dumps({"path": self.path, "source": self.headers.get("X-Pulse-Source"), "signature": signature,
                          "body": parsed}), flush=True)
        if signature == "invalid":
            self.answer(401, {"error": "bad signature"})
        else:
            self.answer(200, {"ok": True})

    def answer(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    parser = argparse.ArgumentParser(description="A local fake Pulse relay (HTTPS).")
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--push-key", help="the device's pushKey (base64url), to check X-Pulse-Auth")
    args = parser.parse_args()
    if args.push_key:
        Relay.push_key = base64.urlsafe_b64decode(args.push_key.rstrip("=") + "=" * (-len(args.push_key.rstrip("=")) % 4))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Relay)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    print(f"relay: listening on https://127.0.0.1:{httpd.server_address[1]}", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
