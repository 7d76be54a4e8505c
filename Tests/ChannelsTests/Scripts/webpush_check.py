#!/usr/bin/env python3
"""Independent check of Herald's Web Push output with http_ece and PyJWT.

Reads one JSON object on stdin:
  {"body": b64url, "privateKey": b64url 32-byte scalar, "auth": b64url,
   "authorization": "vapid t=..., k=...", "audience": "https://..."}
Writes {"plaintext": str, "claims": {...}, "header": {...}, "k": str} or {"error": str}.
"""
import base64
import json
import sys

import http_ece
import jwt
from cryptography.hazmat.primitives.asymmetric import ec


def b64u(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def main():
    req = json.load(sys.stdin)
    try:
        priv = ec.derive_private_key(int.from_bytes(b64u(req["privateKey"]), "big"), ec.SECP256R1())
        plain = http_ece.decrypt(
            b64u(req["body"]), private_key=priv, auth_secret=b64u(req["auth"]), version="aes128gcm")
        auth = req["authorization"]
        if not auth.startswith("vapid "):
            raise ValueError("Authorization scheme is not vapid")
        params = dict(p.strip().split("=", 1) for p in auth[len("vapid "):].split(","))
        pub = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64u(params["k"]))
        claims = jwt.decode(
            params["t"], key=pub, algorithms=["ES256"], audience=req["audience"],
            options={"verify_exp": False, "require": ["aud", "exp", "sub"]})
        header = jwt.get_unverified_header(params["t"])
        json.dump({"plaintext": plain.decode("utf-8"), "claims": claims, "header": header, "k": params["k"]},
                  sys.stdout)
    except Exception as e:  # noqa: BLE001 - report every failure to the Swift test
        json.dump({"error": f"{type(e).__name__}: {e}"}, sys.stdout)


if __name__ == "__main__":
    main()
