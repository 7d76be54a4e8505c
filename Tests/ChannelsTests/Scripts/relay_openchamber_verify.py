#!/usr/bin/env python3
"""Verify openchamber relay signatures independently of Herald (Python cryptography + hashlib).

stdin: {"jwk": {"kty","crv","x","y"}, "items": [{"input": <signed string>, "sig": <base64url raw r||s>}]}
Checks each signature with ECDSA P-256 / SHA-256 over the exact UTF-8 string (raw r||s converted to
DER with encode_dss_signature). Prints the RFC 7638 thumbprint of the JWK; exits 1 on any failure.
"""
import base64
import hashlib
import json
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils


def b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def main() -> int:
    doc = json.load(sys.stdin)
    jwk = doc["jwk"]
    if set(jwk.keys()) != {"kty", "crv", "x", "y"}:
        print(f"unexpected JWK members {sorted(jwk.keys())}", file=sys.stderr)
        return 1
    x = int.from_bytes(b64url(jwk["x"]), "big")
    y = int.from_bytes(b64url(jwk["y"]), "big")
    public = ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
    for item in doc["items"]:
        raw = b64url(item["sig"])
        if len(raw) != 64 or "=" in item["sig"]:
            print("signature is not unpadded base64url of 64 bytes", file=sys.stderr)
            return 1
        der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(der, item["input"].encode("utf-8"), ec.ECDSA(hashes.SHA256()))
    canonical = json.dumps(
        {"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]}, separators=(",", ":"), sort_keys=True)
    print(base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
