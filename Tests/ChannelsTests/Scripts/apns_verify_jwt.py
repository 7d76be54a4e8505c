#!/usr/bin/env python3
"""Verify an APNs provider token with pyjwt (independent of Herald's own JWS code).

Usage: apns_verify_jwt.py PUBLIC_JWK_JSON_FILE TOKEN_FILE...
Prints one JSON line per token: {"header": {...}, "claims": {...}}; exits 1 if any fails.
"""
import json
import sys

import jwt
from jwt.algorithms import ECAlgorithm


def main():
    with open(sys.argv[1]) as f:
        key = ECAlgorithm.from_jwk(f.read())
    for path in sys.argv[2:]:
        with open(path) as f:
            token = f.read().strip()
        header = jwt.get_unverified_header(token)
        # Signature (ES256, raw r||s), iat an integer not in the future.
        claims = jwt.decode(token, key, algorithms=["ES256"], options={"require": ["iss", "iat"]})
        print(json.dumps({"header": header, "claims": claims}, sort_keys=True))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report any failure to the Swift test
        print(f"verification failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
