#!/usr/bin/env python3
"""Re-serialise each JSON document on stdin (one per line, base64) the way JSON.stringify does
with sorted keys, using Python's json module: sort_keys, no whitespace, ensure_ascii=False.

Python and JavaScript agree on string escaping here: \\" \\\\ \\b \\f \\n \\r \\t, other control
characters as lowercase \\u00XX, everything else (/, U+2028, U+2029, DEL, emoji) raw. They differ
in key order only for keys mixing astral characters with U+E000..U+FFFF (Python sorts by code
point, JavaScript by UTF-16 unit), so callers must not rely on this script for such keys.
Prints one base64 line per input line.
"""
import base64
import json
import sys

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    doc = json.loads(base64.b64decode(line).decode("utf-8"))
    out = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    print(base64.b64encode(out.encode("utf-8")).decode("ascii"))
