#!/usr/bin/env python3
"""Open a hapi-v1 envelope independently of Herald with cryptography's AESGCM.

Usage: fcm_open_envelope.py PUSHKEY_BASE64 ENVELOPE_BASE64
The envelope is base64(nonce(12) || ciphertext || tag(16)) under AES-256-GCM with AAD "hapi-push-v1".
Prints the plaintext; exits 1 on failure.
"""
import base64
import sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def main() -> int:
    key = base64.b64decode(sys.argv[1], validate=True)
    blob = base64.b64decode(sys.argv[2], validate=True)
    if len(key) != 32 or len(blob) < 28:
        print("bad key or envelope length", file=sys.stderr)
        return 1
    plaintext = AESGCM(key).decrypt(blob[:12], blob[12:], b"hapi-push-v1")
    sys.stdout.write(plaintext.decode("utf-8"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
