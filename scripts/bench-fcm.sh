#!/usr/bin/env bash
# FCM channel benchmark: one notification fanned out to N devices through FCMChannel.deliver, against a
# local nginx HTTP/2 TLS sink answering the FCM send path with 200 {"name":"projects/p/messages/1"} and a
# token endpoint with a fixed access token; beside h2load and the libcurl floor in the same run.
#
#   scripts/bench-fcm.sh                      # N=10000 devices, REPEAT=3 interleaved runs, BATCHES=125
#   N=20000 REPEAT=5 BATCHES=125 scripts/bench-fcm.sh
#
# BATCHES: targets per deliver() call. As the router's executor does, chunks of at most 125 go out four
# at a time, each keeping at most 100 requests in flight: 400 in flight over at most 4 connections.
# The floor (400 in flight, 4 connections, 1 thread) and h2load (-c 4 -m 100) use the same.
# Needs `herald-bench fcm ENDPOINT CAFILE SERVICE_ACCOUNT N BATCH` (FCMBench.run wired into main.swift) and
# scripts/bench/sink.sh (from the HTTP helper's branch `http`; taken from git when not in the tree).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-10000}
REPEAT=${REPEAT:-3}
BATCHES=${BATCHES:-125}

WORK=$(mktemp -d /tmp/herald-fcm-bench.XXXXXX)
chmod 755 "$WORK"  # nginx workers must reach the sink dir inside it
SINK=scripts/bench/sink.sh
if [[ ! -x $SINK ]]; then
    git show http:scripts/bench/sink.sh >"$WORK/sink.sh"
    chmod +x "$WORK/sink.sh"
    SINK="$WORK/sink.sh"
fi

# HERALD_BENCH: a prebuilt herald-bench to measure instead (e.g. a saved baseline); skips the build.
if [[ -n ${HERALD_BENCH:-} ]]; then BENCH=$HERALD_BENCH; else
    swift build -c release --product herald-bench >/dev/null
    BENCH=.build/release/herald-bench
fi
gcc -O2 -o "$WORK/libcurl_floor" ../shared/bench/libcurl_floor.c -lcurl -lpthread

cat >"$WORK/token.conf" <<'CONF'
location = /token { error_page 404 =200 @token; }
location @token { return 200 '{"access_token":"ya29.bench-token","expires_in":3599,"token_type":"Bearer"}'; }
CONF
SINK_DIR="$WORK/sink"
mkdir -p "$SINK_DIR"
trap '"$SINK" stop "$SINK_DIR"; rm -rf "$WORK"' EXIT
read -r PORT CA < <(SINK_EXTRA_LOCATIONS="$WORK/token.conf" "$SINK" start "$SINK_DIR" 2>/dev/null)
ENDPOINT="https://127.0.0.1:$PORT"
URL="$ENDPOINT/v1/projects/p/messages:send"

# A service account with a fresh key whose token_uri is the sink.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$WORK/key.pem" 2>/dev/null
python3 - "$WORK/key.pem" "$ENDPOINT/token" "$WORK/sa.json" <<'PY'
import json, sys
key = open(sys.argv[1]).read()
json.dump({"type": "service_account", "project_id": "p", "private_key_id": "bench", "private_key": key,
           "client_email": "bench@p.iam.gserviceaccount.com", "token_uri": sys.argv[2]}, open(sys.argv[3], "w"))
PY
# A body the size of the channel's messages (~600 bytes) for h2load.
python3 - "$WORK/body.json" <<'PY'
import json, sys
data = {"type": "permission-request", "title": "Permission Request", "body": "Claude Bash: rm -rf build",
        "severity": "warning", "url": "/sessions/5f0c", "sessionId": "5f0c", "sessionName": "claude - hapi",
        "requestId": "r-17", "contractVersion": "1", "heraldDeliveryId": "dlv-123456"}
msg = {"message": {"token": "bench-token-1-" + "x" * 140, "data": data,
                   "android": {"priority": "HIGH", "ttl": "3600s", "collapse_key": "permission-request-5f0c"}}}
open(sys.argv[1], "w").write(json.dumps(msg))
PY

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
echo "libcurl: $(curl-config --version), nginx: $(nginx -v 2>&1 | cut -d/ -f2), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sink: $URL  devices: $N"

RESULTS="$WORK/results"
: >"$RESULTS"
H2=$(h2load -n "$N" -c 4 -m 100 -d "$WORK/body.json" -H 'content-type: application/json' \
    -H 'authorization: Bearer ya29.bench-token' "$URL" 2>&1)
echo "$H2" | grep -E "finished in|requests:" | sed 's/^/h2load: /'
echo "$H2" | sed -n 's/.*finished in [0-9.]*s, \([0-9.]*\) req\/s.*/h2load - \1 0/p' >>"$RESULTS"

for run in $(seq "$REPEAT"); do
    out=$( { /usr/bin/time -f 'rss_kb=%M' "$WORK/libcurl_floor" "$URL" "$CA" "$N" 400 4 1; } 2>&1)
    echo "floor  run=$run $out" | tr '\n' ' '
    echo
    echo "floor - $(echo "$out" | sed -n 's/.*"rps":\([0-9]*\).*/\1/p') $(echo "$out" | sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p')" >>"$RESULTS"
    for batch in $BATCHES; do
        out=$("$BENCH" fcm "$ENDPOINT" "$CA" "$WORK/sa.json" "$N" "$batch")
        echo "herald batch=$batch run=$run $out"
        ok=$(echo "$out" | sed -n 's/.*"delivered":\([0-9]*\).*/\1/p')
        if [[ "$ok" != "$N" ]]; then echo "herald delivered $ok of $N" >&2; fi
        echo "herald $batch $(echo "$out" | sed -n 's/.*"rps":\([0-9]*\).*/\1/p') $(echo "$out" | sed -n 's/.*"peak_rss_kb":\([0-9]*\).*/\1/p')" >>"$RESULTS"
    done
done

python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print("\nsummary (median of runs)")
for r in rows:
    if r[0] == "h2load":
        print(f"  h2load (4 conns, 100 streams each): {float(r[2]):8.0f} req/s")
floor = [float(r[2]) for r in rows if r[0] == "floor" and len(r) > 2 and r[2] != ""]
f = statistics.median(floor) if floor else 0
print(f"  libcurl floor (4 conns, 400 in flight): {f:8.0f} req/s  (runs: {', '.join(f'{x:.0f}' for x in floor)})")
for batch in sorted({r[1] for r in rows if r[0] == "herald"}, key=int, reverse=True):
    sel = [r for r in rows if r[0] == "herald" and r[1] == batch and len(r) > 3]
    rps = statistics.median(float(r[2]) for r in sel)
    rss = statistics.median(float(r[3]) for r in sel) / 1024
    ratio = f"{rps / f * 100:.0f}% of floor" if f else ""
    print(f"  herald fcm batch={batch:>5}: {rps:8.0f} devices/s  peak RSS {rss:5.1f} MB  {ratio}  (runs: "
          + ", ".join(r[2] for r in sel) + ")")
PY
