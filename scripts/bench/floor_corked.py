#!/usr/bin/env python3
"""Writes a corked variant of the shared libcurl floor, for an honest second reference.

usage: floor_corked.py FLOOR_SRC OUT_C

Herald's event loops cork their connections (TCP_CORK) and flush them once per round
(HTTPClientConfiguration.coalescesWrites). The shared floor does not, so beside it the benches also run
the floor with the same corking: a sockopt callback corks every connection socket and, after each
curl_multi_perform round, TCP_NODELAY pushes what they hold. Everything else is the shared source, untouched.
Exits 1 (and writes nothing) if the source no longer has the lines this patches.
"""
import sys

src, out = sys.argv[1], sys.argv[2]
s = open(src).read()
patches = [
    ("#include <time.h>\n",
     "#include <time.h>\n#include <netinet/in.h>\n#include <netinet/tcp.h>\n#include <sys/socket.h>\n"
     "static __thread int corked[64]; static __thread int ncorked;\n"
     "static int cork(void *c, curl_socket_t fd, curlsocktype p) { (void)c; int on = 1;\n"
     "  if (p == CURLSOCKTYPE_IPCXN && ncorked < 64 && setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on) == 0)\n"
     "    corked[ncorked++] = fd;\n  return CURL_SOCKOPT_OK; }\n"
     "static void push(void) { int on = 1;\n"
     "  for (int i = 0; i < ncorked; i++) setsockopt(corked[i], IPPROTO_TCP, TCP_NODELAY, &on, sizeof on); }\n"),
    ("    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);\n",
     "    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);\n    curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, cork);\n"),
    ("    curl_multi_perform(m, &running);\n", "    curl_multi_perform(m, &running);\n    push();\n"),
]
for old, new in patches:
    if s.count(old) != 1:
        sys.exit(f"floor_corked.py: {src} changed; cannot find {old.strip()!r}")
    s = s.replace(old, new)
open(out, "w").write(s)
