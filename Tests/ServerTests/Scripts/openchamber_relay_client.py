#!/usr/bin/env python3
"""An openchamber server's side of the signed relay, written from seed 002 (steps 2-4) and the
signing rules Herald's openchamber channel documents (docs/channels/relay.md), with the
`cryptography` package's ECDSA (not Herald's):

  register: POST {relay}/v1/push/register-token {token, platform:"ios", publicKeyJwk, ts, sig}
            sig over "<ts>.<token>.<platform>"
  send:     POST {relay}/v1/push/send {tokens, title, body, badge, env, data:{sessionId},
            publicKeyJwk, ts, sig}, sig over "<ts>.<tokens sorted, joined by ','>.<title>"
  sig = base64url(raw r||s) of ES256; ts = Unix milliseconds; serverId = RFC 7638 thumbprint.

Usage: openchamber_relay_client.py <base-url> <scenario: flow | abuse | two-relays> <hex-token>
       [<hex-token2> for abuse | <second relay's base-url> for two-relays]
Prints one JSON line per request: {"step", "status", "body"}, then {"serverId"}.
"""
import base64
import hashlib
import json
import sys
import time
import urllib.error
import urllib.request

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class Server:
    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        n = self.key.public_key().public_numbers()
        self.jwk = {"kty": "EC", "crv": "P-256", "x": b64url(n.x.to_bytes(32, "big")),
                    "y": b64url(n.y.to_bytes(32, "big"))}
        canonical = json.dumps({k: self.jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"))
        self.server_id = b64url(hashlib.sha256(canonical.encode()).digest())

    def sign(self, text: str) -> str:
        r, s = decode_dss_signature(self.key.sign(text.encode(), ec.ECDSA(hashes.SHA256())))
        return b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    def register(self, token, ts=None):
        ts = ts if ts is not None else int(time.time() * 1000)
        return {"token": token, "platform": "ios", "publicKeyJwk": self.jwk, "ts": ts,
                "sig": self.sign(f"{ts}.{token}.ios")}

    def send(self, tokens, ts=None, title="Agent response is ready"):
        ts = ts if ts is not None else int(time.time() * 1000)
        signed = f"{ts}.{','.join(sorted(tokens))}.{title}"
        return {"tokens": tokens, "title": title, "body": "my session", "badge": 3, "env": "sandbox",
                "data": {"sessionId": "sess-9"}, "publicKeyJwk": self.jwk, "ts": ts, "sig": self.sign(signed)}


def post(base, path, body, step):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    print(json.dumps({"step": step, "status": status, "body": json.loads(text)}))


def main() -> None:
    base, scenario, token = sys.argv[1:4]
    a, b = Server(), Server()
    if scenario == "flow":
        post(base, "/v1/push/register-token", a.register(token), "register")
        post(base, "/v1/push/send", a.send([token]), "send")
    elif scenario == "abuse":
        other = sys.argv[4]
        post(base, "/v1/push/register-token", a.register(token), "register-a")
        post(base, "/v1/push/register-token", b.register(token), "register-b-same-token")
        post(base, "/v1/push/register-token", b.register(other), "register-b-other")
        post(base, "/v1/push/send", b.send([token]), "send-b-to-a-token")
        forged = a.send([token])
        forged["sig"] = b.sign(f"{forged['ts']}.{token}.{forged['title']}")
        post(base, "/v1/push/send", forged, "forged")
        tampered = a.send([token])
        tampered["title"] = "changed after signing"
        post(base, "/v1/push/send", tampered, "tampered")
        post(base, "/v1/push/send", a.send([token], ts=int(time.time() * 1000) - 6 * 60 * 1000), "stale")
        once = a.send([token])
        post(base, "/v1/push/send", once, "first")
        post(base, "/v1/push/send", once, "replayed")
    elif scenario == "two-relays":
        second = sys.argv[4]
        post(base, "/v1/push/register-token", a.register(token), "register-a-on-1")
        post(second, "/v1/push/register-token", b.register(token), "register-b-on-2")
        once = a.send([token])
        post(base, "/v1/push/send", once, "send-on-1")
        post(second, "/v1/push/send", once, "replayed-on-2")
        post(second, "/v1/push/send", a.send([token]), "fresh-on-2")
    print(json.dumps({"serverIdA": a.server_id, "serverIdB": b.server_id}))


main()
