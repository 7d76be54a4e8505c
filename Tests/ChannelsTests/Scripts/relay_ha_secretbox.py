#!/usr/bin/env python3
"""Decrypt a Home Assistant forwarder body's `encrypted_data` with PyNaCl, independently of Herald.

Reads JSON {"secret": "<64 hex>", "encrypted_data": "<base64>"} on stdin and prints the plaintext
(UTF-8). The key is HA's current scheme: bytes.fromhex(secret); `encrypted_data` is standard base64
of nonce(24) || MAC(16) || ciphertext (PyNaCl's combined format). Exits 1 when it does not decrypt.
"""
import base64
import json
import sys

import nacl.exceptions
import nacl.secret


def main() -> int:
    doc = json.load(sys.stdin)
    box = nacl.secret.SecretBox(bytes.fromhex(doc["secret"]))
    raw = base64.b64decode(doc["encrypted_data"], validate=True)
    try:
        plain = box.decrypt(raw)
    except nacl.exceptions.CryptoError as e:
        print(f"decrypt failed: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(plain.decode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
