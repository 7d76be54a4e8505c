#!/usr/bin/env python3
"""Runs the steps an example's README shows, as written, so the README cannot drift from the code.

usage: readme_steps.py README.md [--bin DIR] [--print]

The README's fenced blocks whose info string carries the word ``tested`` are the steps:

- a ``sh tested`` block is shell, run by one bash (``set -euo pipefail``), in README order, from the
  repository root (where a reader starts after ``make release``);
- a ``yaml tested file=NAME`` (or any language) block is written to ``NAME`` in the folder the
  steps are in at that point, exactly as shown, before the shell that follows it runs.

Other blocks (production configs, library snippets) are for reading only. The only rewrites, so a
test can run beside anything else on the machine:

- ``$PWD/.build/release`` and ``.build/release/`` (and ``.build/debug``) name ``--bin``, the
  build under test; a ``swift build`` line is skipped with ``--bin`` (the test built it);
- the well-known ports the READMEs use (8686 herald, 8000 site, 8443 relay, 8090 ntfy, 8080 web)
  become free ports.

The steps run in their own session with ``TMPDIR`` set to a fresh folder; at the end every process
they started is killed and the folder removed. Exit status: the steps' own. ``--print`` prints the
script instead of running it.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

PORTS = (8686, 8000, 8443, 8090, 8080)
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*(.*)$")


def blocks(text):
    """(info string, body) of every fenced block."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        body, i = [], i + 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line)
            i += 1
        out.append((info, "\n".join(body) + "\n"))
        i += 1
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def script(readme, bin_dir):
    """The bash script of the README's tested blocks."""
    parts = ["set -euo pipefail"]
    ports = {p: free_port() for p in PORTS} if bin_dir else {}
    found = False
    for info, body in blocks(open(readme, encoding="utf-8").read()):
        words = info.split()
        if "tested" not in words:
            continue
        found = True
        if bin_dir:
            body = body.replace("$PWD/.build/release", bin_dir).replace("$PWD/.build/debug", bin_dir)
            body = re.sub(r"(?<![\w/])\.build/(release|debug)/", bin_dir + "/", body)
            body = "\n".join("true  # built by the test: " + line if re.match(r"\s*swift build\b", line) else line
                             for line in body.split("\n"))
            for old, new in ports.items():
                body = re.sub(rf"(?<![0-9]){old}(?![0-9])", str(new), body)
        target = next((w[len("file="):] for w in words if w.startswith("file=")), None)
        if target:
            marker = "README_STEPS_EOF"
            parts.append(f"cat > {target} <<'{marker}'\n{body}{marker}")
        else:
            parts.append(body)
    if not found:
        sys.exit(f"readme_steps: {readme} has no block marked tested")
    return "\n".join(parts)


def main(argv):
    args = argv[1:]
    show = "--print" in args
    args = [a for a in args if a != "--print"]
    bin_dir = None
    if "--bin" in args:
        i = args.index("--bin")
        bin_dir = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    readme = os.path.abspath(args[0])
    text = script(readme, bin_dir)
    if show:
        print(text)
        return 0
    # The repository root: the nearest folder up with a Package.swift and a .git (an example can be a
    # package of its own, as Examples/CustomHerald is).
    root = os.path.dirname(os.path.abspath(readme))
    while not (os.path.exists(os.path.join(root, "Package.swift")) and os.path.exists(os.path.join(root, ".git"))):
        if os.path.dirname(root) == root:
            sys.exit("readme_steps: no repository root (Package.swift and .git) above " + readme)
        root = os.path.dirname(root)
    scratch = tempfile.mkdtemp(prefix="readme-steps-")
    env = dict(os.environ, TMPDIR=scratch)
    process = subprocess.Popen(["bash", "-c", text], cwd=root, env=env, start_new_session=True)
    try:
        code = process.wait(timeout=float(os.environ.get("README_STEPS_TIMEOUT", "300")))
    except subprocess.TimeoutExpired:
        print("readme_steps: the steps did not finish in time", file=sys.stderr)
        code = 124
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        shutil.rmtree(scratch, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
