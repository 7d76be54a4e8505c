#!/usr/bin/env python3
"""Check a Pulse Relay request's X-Pulse-Auth header exactly as the spec says, independently of Herald.

Usage: relay_pulse_check.py PUSHKEY_BASE64URL PATH AUTH_HEADER BODY_BASE64
sig = base64url(HMAC-SHA256(base64url-decode(pushKey),
      "POST\\n" + path + "\\n" + seconds + "\\n" + requestId + "\\n" + hex(SHA-256(body))))
Prints the body's contentState.revision (where the guide puts it); exits 1 when the signature does not match.
"""
import base64
import hashlib
import hmac
import json
import sys


def b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def main() -> int:
    key = b64url(sys.argv[1])
    path, header = sys.argv[2], sys.argv[3]
    body = base64.b64decode(sys.argv[4])
    version, seconds, request_id, sig = header.split(" ")
    if version != "v2" or not seconds.isdigit() or len(key) != 32:
        print("bad header or key", file=sys.stderr)
        return 1
    message = "POST\n" + path + "\n" + seconds + "\n" + request_id + "\n" + hashlib.sha256(body).hexdigest()
    expected = base64.urlsafe_b64encode(hmac.new(key, message.encode(), hashlib.sha256).digest()).rstrip(b"=")
    if not hmac.compare_digest(expected, sig.encode()):
        print("signature mismatch", file=sys.stderr)
        return 1
    print(json.loads(body)["contentState"]["revision"])
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
