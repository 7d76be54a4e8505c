#!/usr/bin/env bash
# Web Push benchmark: (a) encryption only, Herald vs pywebpush vs `openssl speed ecdhp256`;
# (b) full sends to N subscriptions at the local nginx HTTP/2 TLS sink (scripts/bench/sink.sh, /push/ → 201),
# Herald's WebPushChannel vs pywebpush (thread pool, one requests.Session per thread).
#
#   scripts/bench-webpush.sh                     # N=10000 sends, ENC=5000 encryptions, REPEAT=3
#   N=10000 ENC=5000 REPEAT=3 THREADS="16 64" LOOPS="1 2" scripts/bench-webpush.sh
#
# Needs `herald-bench webpush …` (WebPushBench.main wired into Sources/HeraldBench/main.swift) and
# `pip install pywebpush`.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-10000}
ENC=${ENC:-5000}
REPEAT=${REPEAT:-3}
THREADS=${THREADS:-"16 64"}
LOOPS=${LOOPS:-"1 2"}

swift build -c release --product herald-bench >/dev/null
BENCH=.build/release/herald-bench
PY=scripts/bench/webpush_py.py

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
echo "openssl: $(openssl version), python: $(python3 --version), pywebpush: $(pip show pywebpush 2>/dev/null | sed -n 's/^Version: //p')"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== (a) encryption only (fresh ephemeral key + salt + ECDH + HKDF + AES-128-GCM per message)"
openssl speed -seconds 3 ecdhp256 2>/dev/null | grep -E "^ *256 bits ecdh|op/s" | sed 's/^/openssl: /'
# The C EVP floor of the same pipeline (scripts/bench/webpush_evp_floor.c), for a 1 KB record.
FLOOR_BIN=$(mktemp /tmp/webpush_evp_floor.XXXXXX)
gcc -O2 -o "$FLOOR_BIN" scripts/bench/webpush_evp_floor.c -lcrypto
echo "evp-floor record=1024 $("$FLOOR_BIN" 3 1024)"
for size in 100 1000; do
    for run in $(seq "$REPEAT"); do
        echo "herald  size=$size run=$run $("$BENCH" webpush encrypt "$ENC" "$size" none)"
        echo "herald  size=$size run=$run $("$BENCH" webpush encrypt "$ENC" "$size" bucket) (bucket padding)"
        echo "pyweb   size=$size run=$run $(python3 "$PY" encrypt "$ENC" "$size")"
    done
done

echo "== (b) full sends to $N subscriptions at nginx (HTTP/2 TLS, 201)"
SINK_DIR=$(mktemp -d /tmp/herald-sink.XXXXXX)
trap 'scripts/bench/sink.sh stop "$SINK_DIR"; rm -f "$FLOOR_BIN"' EXIT
read -r PORT CA < <(scripts/bench/sink.sh start "$SINK_DIR" 2>/dev/null)
BASE="https://127.0.0.1:$PORT"
for run in $(seq "$REPEAT"); do
    for loops in $LOOPS; do
        echo "herald  loops=$loops run=$run $("$BENCH" webpush send "$BASE" "$CA" "$N" "$loops")"
    done
    for threads in $THREADS; do
        echo "pyweb   threads=$threads run=$run $(python3 "$PY" send "$BASE" "$CA" "$N" "$threads")"
    done
done
