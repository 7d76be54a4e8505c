#!/usr/bin/env python3
"""Issue 36: the Pulse site kit's `safe_next` against the usual open-redirect and header-injection
bypass list. Each bad value is given as the kit receives it: already percent-decoded once by
parse_qs, as `?next=` arrives. Prints `ok N M`; exits 1 naming the first value it lets through.

usage: pulse_next_check.py PATH_TO_Examples/PulseSiteKit
"""
import sys
import urllib.parse

sys.path.insert(0, sys.argv[1])
import pulse_site  # noqa: E402

# As a browser would send them in ?next= (then decoded once by parse_qs, as the kit does).
RAW_BAD = [
    "%2F%09%2Fevil.example%2Fphish",  # the issue's: /<TAB>/evil.example/phish
    "%2F%0D%0ASet-Cookie:%20x=1",  # CR LF: a header of its own
    "%0D%0ALocation:%20https://evil.example",
    "//evil.example", "%2F%2Fevil.example", "/%2F/evil.example", "/%252F/evil.example",
    "/%2f%2fevil.example", "/%5Cevil.example", "%2F%5Cevil.example", "/\\evil.example",
    "/%5C%5Cevil.example", "https://evil.example", "http:evil.example", "evil.example",
    "javascript:alert(1)", "", "%00", "/%00", "/%2500", "/%09/evil.example", "/%250D%250Ax:1",
    "/a%0Ab", "\\\\evil.example", "/%E2%80%AE", " /", "/ /evil",
]
GOOD = ["/", "/account", "/demo/push?x=1&y=2", "/a/b/c", "/caf%C3%A9", "/a%2Fb", "/p?q=%2F"]

bad = [urllib.parse.parse_qs("next=" + raw, keep_blank_values=True).get("next", [""])[0] for raw in RAW_BAD]
for value in bad:
    got = pulse_site.safe_next(value)
    # Refused values become "/"; a value kept must be plainly safe (it never is, for this list).
    if got != "/":
        print(f"let through: {value!r} -> {got!r}")
        sys.exit(1)
for value in GOOD:
    if pulse_site.safe_next(value) != value:
        print(f"refused a plain path: {value!r}")
        sys.exit(1)
print(f"ok {len(bad)} {len(GOOD)}")
