#!/usr/bin/env python3
"""Verify an FCM OAuth assertion (RS256 JWT) independently of Herald, with pyjwt.

Usage: fcm_verify_assertion.py SERVICE_ACCOUNT_JSON < assertion
Prints the verified header and claims as JSON; exits 1 with a message on any failure.
"""
import json
import sys

import jwt
from cryptography.hazmat.primitives import serialization


def main() -> int:
    account = json.load(open(sys.argv[1]))
    token = sys.stdin.read().strip()
    private = serialization.load_pem_private_key(account["private_key"].encode(), password=None)
    public = private.public_key()
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(
        token,
        key=public,
        algorithms=["RS256"],
        audience=account["token_uri"],
        issuer=account["client_email"],
        options={"verify_exp": False, "verify_iat": False, "verify_nbf": False,
                 "require": ["iss", "sub", "aud", "iat", "exp", "scope"]},
    )
    problems = []
    if header.get("alg") != "RS256" or header.get("typ") != "JWT":
        problems.append(f"bad header {header}")
    if "private_key_id" in account and header.get("kid") != account["private_key_id"]:
        problems.append(f"kid {header.get('kid')!r} != private_key_id")
    if claims.get("sub") != account["client_email"]:
        problems.append("sub != client_email")
    if claims.get("scope") != "https://www.googleapis.com/auth/firebase.messaging":
        problems.append(f"scope {claims.get('scope')!r}")
    if not (0 < claims["exp"] - claims["iat"] <= 3600):
        problems.append(f"exp - iat = {claims['exp'] - claims['iat']}")
    if problems:
        print("; ".join(problems), file=sys.stderr)
        return 1
    print(json.dumps({"header": header, "claims": claims}, sort_keys=True))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # any pyjwt failure is a test failure with its message
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
