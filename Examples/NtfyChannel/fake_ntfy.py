#!/usr/bin/env python3
"""A local stand-in for an ntfy server, to try the ntfy channel without an account or the network
(standard library only). It accepts ntfy's JSON publish (``POST /`` with ``{"topic", "message",
…}``), answers 200 as ntfy does, and prints each message as one JSON line on stdout.

    python3 fake_ntfy.py --port 8090 > published.jsonl &
"""

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Ntfy(BaseHTTPRequestHandler):
    def log_message(self, format, *args):
        sys.stderr.write("ntfy: %s\n" % (format % args))

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        if not isinstance(message, dict) or not message.get("topic"):
            self.answer(400, {"code": 40001, "error": "invalid request"})
            return
        print(json.dumps(message), flush=True)
        self.answer(200, {"id": "fake%d" % time.monotonic_ns(), "event": "message", "topic": message["topic"]})

    def answer(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    parser = argparse.ArgumentParser(description="A local fake ntfy server.")
    parser.add_argument("--port", type=int, default=8090)
    args = parser.parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Ntfy)
    print(f"ntfy: listening on http://127.0.0.1:{httpd.server_address[1]}", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
