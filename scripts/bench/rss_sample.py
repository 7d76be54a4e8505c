#!/usr/bin/env python3
"""Runs a command and samples its memory: rss_sample.py OUT CMD...

Reads /proc/PID/status every 5 ms while CMD runs (its stdout goes to OUT) and prints one JSON line:
wall seconds, the peaks of VmHWM, RssAnon (heap, stacks: what the process allocated and touched)
and RssFile (mapped files: the binary, libraries, SQLite's -shm), and, when OUT holds a `herald
send` report, how many deliveries it counts as delivered.
"""
import json
import subprocess
import sys
import time

out_path, cmd = sys.argv[1], sys.argv[2:]
peaks = {"VmHWM": 0, "RssAnon": 0, "RssFile": 0}
start = time.time()
with open(out_path, "w") as out:
    proc = subprocess.Popen(cmd, stdout=out)
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as status:
                for line in status:
                    key, _, value = line.partition(":")
                    if key in peaks:
                        peaks[key] = max(peaks[key], int(value.split()[0]))
        except (OSError, ValueError):
            break
        time.sleep(0.005)
seconds = time.time() - start
delivered = None
try:
    with open(out_path) as f:
        report = json.load(f)
    delivered = sum(1 for d in report.get("deliveries", []) if d.get("outcome") == "delivered")
except (OSError, ValueError, AttributeError):
    pass
print(json.dumps({"exit": proc.returncode, "seconds": round(seconds, 3), "delivered": delivered,
                  "hwm_kb": peaks["VmHWM"], "anon_kb": peaks["RssAnon"], "file_kb": peaks["RssFile"]}))
