"""GET https://127.0.0.1:PORT/PATH, verifying the server against CAFILE (never unverified).
Prints the status and body; exits 2 on a TLS verification failure."""
import ssl
import sys
import urllib.request

port, path, cafile = sys.argv[1], sys.argv[2], sys.argv[3]
context = ssl.create_default_context(cafile=cafile)
try:
    with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", context=context, timeout=180) as r:
        print(r.status)
        print(r.read().decode())
except urllib.error.URLError as e:
    if isinstance(e.reason, ssl.SSLError):
        print(f"tls: {e.reason}")
        sys.exit(2)
    raise
