#!/usr/bin/env python3
"""A local stand-in for a Matrix homeserver, to try the exec channel example without an account or
the network (standard library only). It takes the client-server API's send call,

    PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}

answers 200 with an event id as a homeserver does (the same event id again for a txnId it has
seen: a retry never posts twice), and prints each new message as one JSON line on stdout.

    python3 fake_matrix.py --port 8090 > received.jsonl &
"""

import argparse
import json
import re
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SEND = re.compile(r"^/_matrix/client/v3/rooms/([^/]+)/send/m\.room\.message/([^/]+)$")


class Homeserver(BaseHTTPRequestHandler):
    events = {}

    def log_message(self, format, *args):
        sys.stderr.write("matrix: %s\n" % (format % args))

    def do_GET(self):
        self.answer(200, {"versions": ["v1.11"]})

    def do_PUT(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        match = SEND.match(urllib.parse.urlsplit(self.path).path)
        if not match:
            self.answer(404, {"errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"})
            return
        if not (self.headers.get("Authorization") or "").startswith("Bearer "):
            self.answer(401, {"errcode": "M_MISSING_TOKEN", "error": "Missing access token"})
            return
        try:
            content = json.loads(raw)
        except ValueError:
            content = None
        if not isinstance(content, dict) or content.get("msgtype") != "m.text":
            self.answer(400, {"errcode": "M_BAD_JSON", "error": "Content not JSON"})
            return
        room, txn = (urllib.parse.unquote(g) for g in match.groups())
        key = (room, txn)
        if key not in Homeserver.events:
            Homeserver.events[key] = "$fake%d" % (len(Homeserver.events) + 1)
            print(json.dumps({"room": room, "txnId": txn, "content": content}), flush=True)
        self.answer(200, {"event_id": Homeserver.events[key]})

    def answer(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    parser = argparse.ArgumentParser(description="A local fake Matrix homeserver.")
    parser.add_argument("--port", type=int, default=8090)
    args = parser.parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Homeserver)
    print(f"matrix: listening on http://127.0.0.1:{httpd.server_address[1]}", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
