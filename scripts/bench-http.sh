#!/usr/bin/env bash
# HTTP client benchmark: Herald's HTTPClient vs the libcurl floor vs h2load, against one local nginx
# HTTP/2 TLS sink, all in the same run.
#
#   scripts/bench-http.sh            # N=10000 POSTs of 1 KB per run, REPEAT=5 interleaved runs per client
#   N=20000 REPEAT=7 LOOPS="1 2" scripts/bench-http.sh
#
# Each client keeps 100 streams in flight per event loop (thread) over at most 4 connections in total.
# Herald runs twice per round: with its sending tasks on the client's event loops (executor=loop, the
# HTTPClient.taskExecutor() mode) and on the global concurrent executor (executor=global, the default).
# Needs `herald-bench http URL CAFILE N INFLIGHT CONNECTIONS LOOPS [loop|global]` (HTTPBench.run wired into
# main.swift).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-10000}
REPEAT=${REPEAT:-5}
LOOPS=${LOOPS:-"1 2"}
PER_LOOP_INFLIGHT=100
CONNECTIONS=4

swift build -c release --product herald-bench >/dev/null
BENCH=.build/release/herald-bench
gcc -O2 -o /tmp/libcurl_floor ../shared/bench/libcurl_floor.c -lcurl -lpthread

SINK_DIR=$(mktemp -d /tmp/herald-sink.XXXXXX)
trap 'scripts/bench/sink.sh stop "$SINK_DIR"' EXIT
read -r PORT CA < <(scripts/bench/sink.sh start "$SINK_DIR" 2>/dev/null)
URL="https://127.0.0.1:$PORT/3/device/abc"
BODY="$SINK_DIR/body-1k.json"
python3 -c 'import sys; b = bytearray(b"a" * 1024); b[0:17] = b"{\"aps\":{\"alert\":\""; b[1021:] = b"\"}}"; open(sys.argv[1], "wb").write(b)' "$BODY"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
echo "libcurl: $(curl-config --version), nginx: $(nginx -v 2>&1 | cut -d/ -f2), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sink: $URL"

RESULTS=$(mktemp)
H2=$(h2load -n 40000 -c 4 -m 100 -d "$BODY" -H 'content-type: application/json' "$URL" 2>&1)
echo "$H2" | grep -E "finished in|requests:" | sed 's/^/h2load: /'
echo "$H2" | sed -n 's/.*finished in [0-9.]*s, \([0-9.]*\) req\/s.*/h2load 0 \1 0/p' >>"$RESULTS"

for loops in $LOOPS; do
    inflight=$((PER_LOOP_INFLIGHT * loops))
    for run in $(seq "$REPEAT"); do
        out=$( { /usr/bin/time -f 'rss_kb=%M' /tmp/libcurl_floor "$URL" "$CA" "$N" "$PER_LOOP_INFLIGHT" \
            $((CONNECTIONS / loops)) "$loops"; } 2>&1)
        echo "floor  loops=$loops run=$run $out" | tr '\n' ' '
        echo
        rps=$(echo "$out" | sed -n 's/.*"rps":\([0-9]*\).*/\1/p')
        rss=$(echo "$out" | sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p')
        echo "floor $loops $rps $rss" >>"$RESULTS"
        for executor in loop global; do
            out=$("$BENCH" http "$URL" "$CA" "$N" "$inflight" "$CONNECTIONS" "$loops" "$executor")
            echo "herald loops=$loops run=$run $out"
            rps=$(echo "$out" | sed -n 's/.*"rps":\([0-9]*\).*/\1/p')
            rss=$(echo "$out" | sed -n 's/.*"peak_rss_kb":\([0-9]*\).*/\1/p')
            echo "herald-$executor $loops $rps $rss" >>"$RESULTS"
        done
    done
done

python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
h2 = [float(r[2]) for r in rows if r[0] == "h2load"]
print("\nsummary (median of runs)")
if h2:
    print(f"  h2load sink ceiling: {h2[0]:.0f} req/s")
for loops in sorted({r[1] for r in rows if r[0] != "h2load"}):
    med = {}
    for client in ("floor", "herald-loop", "herald-global"):
        sel = [r for r in rows if r[0] == client and r[1] == loops and r[2]]
        rps = statistics.median(float(r[2]) for r in sel)
        rss = statistics.median(float(r[3]) for r in sel) / 1024
        med[client] = rps
        print(f"  loops={loops} {client:13s}: {rps:8.0f} req/s  peak RSS {rss:5.1f} MB  (runs: "
              + ", ".join(r[2] for r in sel) + ")")
    for client in ("herald-loop", "herald-global"):
        print(f"  loops={loops} {client}/floor = {med[client] / med['floor'] * 100:.0f}%  (target >= 80%)")
PY
rm -f "$RESULTS"
