#!/usr/bin/env python3
"""A hapi hub's side of the push relay, written from hapi's contract (seed 000) only:

  POST {relayUrl}/v1/push
  {"platform":"ios","token":"<hex>","envelope":"<base64>","collapseId":"...","priority":10}
  envelope = base64(nonce(12) || AES-256-GCM ciphertext || tag(16)), AAD "hapi-push-v1",
  plaintext = canonical JSON (sorted keys, no whitespace) of the data payload.

Usage: hapi_relay_client.py <base-url> <hex-token> <base64 pushKey> <collapseId> [mode]
Modes: push (default; a valid push), bad-base64, bad-token, bad-platform, wrong-type, too-large.
Prints one JSON line: {"status", "body", "retryAfter", "plaintext"}.
"""
import base64
import json
import os
import sys
import urllib.error
import urllib.request

from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def envelope(key: bytes, plaintext: bytes) -> str:
    nonce = os.urandom(12)
    return base64.b64encode(nonce + AESGCM(key).encrypt(nonce, plaintext, b"hapi-push-v1")).decode()


def main() -> None:
    base, token, push_key, collapse = sys.argv[1:5]
    mode = sys.argv[5] if len(sys.argv) > 5 else "push"
    key = base64.b64decode(push_key)
    data = {"type": "ready", "sessionId": "s-1", "title": "Build done", "body": "All green",
            "contractVersion": "1"}
    plaintext = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    body = {"platform": "ios", "token": token, "envelope": envelope(key, plaintext),
            "collapseId": collapse, "priority": 10}
    if mode == "bad-base64":
        body["envelope"] = "***not base64***"
    elif mode == "bad-token":
        body["token"] = "not-hex!"
    elif mode == "bad-platform":
        body["platform"] = "android"
    elif mode == "wrong-type":
        body["priority"] = "high"
    elif mode == "too-large":
        body["envelope"] = envelope(key, b"x" * 4000)
    request = urllib.request.Request(base + "/v1/push", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            status, text, retry = r.status, r.read().decode(), r.headers.get("Retry-After")
    except urllib.error.HTTPError as e:
        status, text, retry = e.code, e.read().decode(), e.headers.get("Retry-After")
    print(json.dumps({"status": status, "body": json.loads(text), "retryAfter": retry,
                      "plaintext": plaintext.decode(), "envelope": body["envelope"]}))


main()
