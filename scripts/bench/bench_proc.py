"""What the Python bench drivers read about the server under test from /proc (local_push.py,
sse_fanout.py)."""

import os


def cpu_seconds(pid):
    """User plus system CPU seconds of process `pid` so far."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def peak_rss_mb(pid):
    """Peak resident memory (VmHWM) of process `pid`, in MiB."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")
