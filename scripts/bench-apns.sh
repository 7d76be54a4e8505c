#!/usr/bin/env bash
# APNs fan-out benchmark: one notification to N devices through Herald's APNs channel, against a local
# nginx HTTP/2 TLS sink answering 200 + apns-id on /3/device/, beside h2load (sink ceiling), the libcurl
# floor (../shared/bench/libcurl_floor.c), the same floor corked like Herald's loops ("corked",
# scripts/bench/floor_corked.py) and aioapns, all in the same run, interleaved.
#
#   scripts/bench-apns.sh                 # N=10000 devices, REPEAT=3 runs per client
#   N=20000 REPEAT=5 scripts/bench-apns.sh
#   LOOPS=2 scripts/bench-apns.sh         # Herald with 2 event loops, the floor with 2 threads
#
# Every client keeps 400 requests in flight over at most 4 connections: Herald runs 4 deliver() batches
# of 125 at once, as the router hands them (each with its 100-request bound), aioapns a 400 semaphore with max_connections=4,
# the floor 400 in flight with 4 connections on one thread, h2load -c 4 -m 100. With LOOPS=n Herald
# runs n event loops (the batches spread over them) with 4/n connections each, and the floor n threads
# with 400/n in flight over 4/n connections each, as scripts/bench-http.sh does: both use 4 in all.
# Needs `herald-bench apns BASEURL CAFILE DEVICES BATCH BATCHES_IN_FLIGHT CONNECTIONS LOOPS`
# (APNsBench.run(arguments:) wired into Sources/HeraldBench/main.swift), python3 with aioapns, h2load, nginx.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-10000}
REPEAT=${REPEAT:-3}
INFLIGHT=400
CONNECTIONS=4
LOOPS=${LOOPS:-1}  # Herald event loops; the floor runs as many threads (CONNECTIONS/LOOPS connections each)

SINK=scripts/bench/sink.sh
if [[ ! -x $SINK ]]; then # before the http branch is merged, take the sink from it
    SINK=$(mktemp /tmp/herald-sink-sh.XXXXXX)
    git show http:scripts/bench/sink.sh >"$SINK"
    chmod +x "$SINK"
fi
python3 -c 'import aioapns' 2>/dev/null || { echo "pip install aioapns first" >&2; exit 1; }

# HERALD_BENCH: a prebuilt herald-bench to measure instead (e.g. a saved baseline); skips the build.
# HERALD_BENCH_BASELINE: a second prebuilt herald-bench (e.g. an older commit's) measured in every
# round right after the first, as client "baseline", for an interleaved before/after comparison.
if [[ -n ${HERALD_BENCH:-} ]]; then BENCH=$HERALD_BENCH; else
    swift build -c release --product herald-bench >/dev/null
    BENCH=.build/release/herald-bench
fi
FLOOR_SRC=../shared/bench/libcurl_floor.c
[[ -f $FLOOR_SRC ]] || FLOOR_SRC=/work/shared/bench/libcurl_floor.c
gcc -O2 -o /tmp/libcurl_floor "$FLOOR_SRC" -lcurl -lpthread
# The same floor with Herald's corking (scripts/bench/floor_corked.py), as a second reference.
CORKED=""
if python3 scripts/bench/floor_corked.py "$FLOOR_SRC" /tmp/libcurl_floor_corked.c \
    && gcc -O2 -o /tmp/libcurl_floor_corked /tmp/libcurl_floor_corked.c -lcurl -lpthread; then
    CORKED=/tmp/libcurl_floor_corked
fi

SINK_DIR=$(mktemp -d /tmp/herald-sink.XXXXXX)
trap '"$SINK" stop "$SINK_DIR"' EXIT
read -r PORT CA < <("$SINK" start "$SINK_DIR" 2>/dev/null)
# Echo the request's apns-id like APNs does (aioapns matches responses by it; the stock sink sends a constant).
sed -i 's/add_header apns-id "[^"]*"/add_header apns-id $http_apns_id/' "$SINK_DIR/nginx.conf"
nginx -c "$SINK_DIR/nginx.conf" -s reload 2>/dev/null
sleep 1
BASE="https://127.0.0.1:$PORT"
URL="$BASE/3/device/$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
BODY="$SINK_DIR/apns.json"
printf '%s' '{"aps":{"alert":{"title":"Permission Request","body":"Claude Bash: rm -rf build"},"sound":"default","badge":3,"thread-id":"permission-request-5f0c","category":"permission-request","mutable-content":1},"requestId":"r-17","sessionId":"5f0c","sessionName":"claude - hapi","url":"/sessions/5f0c"}' >"$BODY"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
echo "libcurl: $(curl-config --version), nginx: $(nginx -v 2>&1 | cut -d/ -f2), aioapns: $(python3 -c 'import importlib.metadata as m; print(m.version("aioapns"))'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sink: $BASE/3/device/  devices per run: $N, in flight: $INFLIGHT, connections: $CONNECTIONS, loops/floor threads: $LOOPS"

RESULTS=$(mktemp)
H2=$(h2load -n "$N" -c "$CONNECTIONS" -m 100 -d "$BODY" -H 'apns-push-type: alert' -H 'apns-topic: com.example.bench' \
    -H 'apns-priority: 10' -H 'authorization: bearer x' "$URL" 2>&1)
echo "$H2" | grep -E "finished in|requests:" | sed 's/^/h2load: /'
echo "$H2" | sed -n 's/.*finished in [0-9.]*m\{0,1\}s, \([0-9.]*\) req\/s.*/h2load \1 0/p' >>"$RESULTS"

for run in $(seq "$REPEAT"); do
    out=$( { /usr/bin/time -f 'rss_kb=%M' /tmp/libcurl_floor "$URL" "$CA" "$N" $((INFLIGHT / LOOPS)) \
        $((CONNECTIONS / LOOPS > 0 ? CONNECTIONS / LOOPS : 1)) "$LOOPS"; } 2>&1)
    echo "floor   run=$run $(echo "$out" | tr '\n' ' ')"
    echo "floor $(echo "$out" | sed -n 's/.*"rps":\([0-9]*\).*/\1/p') $(echo "$out" | sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p')" >>"$RESULTS"

    if [[ -n $CORKED ]]; then
        out=$( { /usr/bin/time -f 'rss_kb=%M' "$CORKED" "$URL" "$CA" "$N" $((INFLIGHT / LOOPS)) \
            $((CONNECTIONS / LOOPS > 0 ? CONNECTIONS / LOOPS : 1)) "$LOOPS"; } 2>&1)
        echo "corked  run=$run $(echo "$out" | tr '\n' ' ')"
        echo "corked $(echo "$out" | sed -n 's/.*"rps":\([0-9]*\).*/\1/p') $(echo "$out" | sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p')" >>"$RESULTS"
    fi

    out=$("$BENCH" apns "$BASE" "$CA" "$N" 125 $((INFLIGHT / 100)) $((CONNECTIONS / LOOPS > 0 ? CONNECTIONS / LOOPS : 1)) "$LOOPS")
    echo "herald  run=$run $out"
    echo "herald $(echo "$out" | sed -n 's/.*"rps":\([0-9]*\).*/\1/p') $(echo "$out" | sed -n 's/.*"peak_rss_kb":\([0-9]*\).*/\1/p')" >>"$RESULTS"

    if [[ -n ${HERALD_BENCH_BASELINE:-} ]]; then
        out=$("$HERALD_BENCH_BASELINE" apns "$BASE" "$CA" "$N" 125 $((INFLIGHT / 100)) $((CONNECTIONS / LOOPS > 0 ? CONNECTIONS / LOOPS : 1)) "$LOOPS")
        echo "baseline run=$run $out"
        echo "baseline $(echo "$out" | sed -n 's/.*"rps":\([0-9]*\).*/\1/p') $(echo "$out" | sed -n 's/.*"peak_rss_kb":\([0-9]*\).*/\1/p')" >>"$RESULTS"
    fi

    out=$(python3 scripts/bench/aioapns_bench.py 127.0.0.1 "$PORT" "$CA" "$N" "$INFLIGHT" "$CONNECTIONS")
    echo "aioapns run=$run $out"
    echo "aioapns $(echo "$out" | sed -n 's/.*"rps": \([0-9]*\).*/\1/p') $(echo "$out" | sed -n 's/.*"peak_rss_kb": \([0-9]*\).*/\1/p')" >>"$RESULTS"
done

python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print("\nsummary (median of runs, devices/s)")
for client in ("h2load", "floor", "corked", "herald", "baseline", "aioapns"):
    sel = [r for r in rows if r[0] == client and len(r) > 1 and r[1]]
    if not sel:
        continue
    rps = statistics.median(float(r[1]) for r in sel)
    rss = statistics.median(float(r[2]) for r in sel if len(r) > 2 and r[2]) / 1024 if client != "h2load" else 0
    runs = ", ".join(r[1] for r in sel)
    extra = f"  peak RSS {rss:5.1f} MB" if client != "h2load" else ""
    print(f"  {client:8s} {rps:8.0f}/s{extra}  (runs: {runs})")
med = {c: statistics.median(float(r[1]) for r in rows if r[0] == c and len(r) > 1 and r[1])
       for c in ("floor", "corked", "herald", "baseline", "aioapns") if any(r[0] == c and len(r) > 1 and r[1] for r in rows)}
if "herald" in med:
    for ref, target in (("floor", "target >= 80%"), ("corked", "same corking, for reference")):
        if ref in med:
            print(f"  herald/{ref} = {med['herald'] / med[ref] * 100:.0f}%  ({target})")
    if "aioapns" in med:
        print(f"  herald/aioapns = {med['herald'] / med['aioapns']:.1f}x  (target >= 10x)")
    if "baseline" in med:
        print(f"  herald/baseline = {med['herald'] / med['baseline'] * 100:.0f}%  (same code speed = 100%)")
        for ref in ("floor", "corked", "aioapns"):
            if ref in med:
                print(f"  baseline/{ref} = {med['baseline'] / med[ref]:.2f}  herald/{ref} = {med['herald'] / med[ref]:.2f}")
        pairs = [(float(h[1]), float(b[1])) for h, b in zip([r for r in rows if r[0] == "herald"], [r for r in rows if r[0] == "baseline"]) if h[1] and b[1]]
        print("  per-round herald/baseline: " + ", ".join(f"{h / b * 100:.0f}%" for h, b in pairs))
PY
rm -f "$RESULTS"
