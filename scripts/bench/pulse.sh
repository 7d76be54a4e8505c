#!/usr/bin/env bash
# Issue 33: `herald serve` as a Pulse Relay (server.relays.pulse) beside `herald send`, both into the
# same local nginx HTTP/2 TLS APNs sink (scripts/bench/sink.sh), in the same run (make bench-pulse).
#
#   send   `herald send` as a whole process to SEND_N APNs devices registered beforehand (not timed):
#          pushes/s = SEND_N / wall time, peak RSS from /usr/bin/time.
#   pulse  `herald-bench relay pulse`: CLIENTS phones, each with SITES site keys and REFS activities per
#          site (registered, minted and reported through the app API first, not timed), send signed
#          `update` pushes (X-Pulse-Auth v2 HMAC) to POST /v1/devices/{deviceId}/push: back to back for
#          DURATION s (full rate), then paced at half of `herald send`'s rate for DURATION s.
# `herald serve` (SQLite store, the pulse relay with the guide's limits unchanged: 1 update a second
# per ref, 600 pushes an hour per site and phone; only the hub's per-address rate limit is lifted, as
# every client is on 127.0.0.1) runs through both; its peak RSS is VmHWM after them. The client keeps
# each ref to one update per 1.05 s and spreads its pushes over SITES sites, so the limits are not
# what is measured; any 429 is counted (status_429). The bench client shares the machine's cores:
# the CPU seconds serve and the client used are printed too.
#
#   scripts/bench/pulse.sh                     CLIENTS=100 SITES=4 REFS=16 DURATION=20 SEND_N=10000
#   SMOKE=1 scripts/bench/pulse.sh             seconds, tiny scale: checks the tooling, not the speed
#   HERALD_BIN_DIR=.build/debug …              use these binaries instead of a release build
#   PACED_RATE=500 …                           pace the second part at this rate instead of half of herald send's
#
# Prints one RESULT line per part and the issue's ratios:
#   RESULT bench=pulse impl=full pushes_per_s=… p50_ms=… p99_ms=… status_429=… rss_kb=…
set -euo pipefail
cd "$(dirname "$0")/../.."

CLIENTS=${CLIENTS:-100}
SITES=${SITES:-4}
REFS=${REFS:-16}
DURATION=${DURATION:-20}
SEND_N=${SEND_N:-10000}
if [[ -n ${SMOKE:-} ]]; then CLIENTS=4 SITES=2 REFS=4 DURATION=2 SEND_N=200; fi
if [[ -n ${HERALD_BIN_DIR:-} ]]; then BIN=$HERALD_BIN_DIR; else
    swift build -c release --static-swift-stdlib --product herald >/dev/null
    swift build -c release --product herald-bench >/dev/null
    BIN=.build/release
fi
HERALD=$BIN/herald
BENCH=$BIN/herald-bench

WORK=$(mktemp -d /tmp/herald-pulse-bench.XXXXXX)
chmod 755 "$WORK"
SINK_DIR="$WORK/sink"
SERVE_PID=""
cleanup() {
    [[ -n $SERVE_PID ]] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
    scripts/bench/sink.sh stop "$SINK_DIR" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
read -r PORT CA < <(scripts/bench/sink.sh start "$SINK_DIR" 2>/dev/null)
BASE="https://127.0.0.1:$PORT"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null
openssl rand -base64 32 >"$WORK/pulse.key"
chmod 600 "$WORK/pulse.key"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sink: $BASE; clients (phones): $CLIENTS, sites per phone: $SITES, refs per site: $REFS, duration: ${DURATION}s per part, herald send to $SEND_N devices"

APNS="apns: { type: apns, key-p8: $WORK/apns.p8, key-id: BENCHKEY01, team-id: BENCHTEAM1, topic: com.example.bench, endpoints: { production: $BASE, sandbox: $BASE } }"
result() { echo "RESULT bench=pulse $*"; }
field() { sed -n "s/.*\"$1\": *\"\{0,1\}\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

# 1. herald send to SEND_N devices (registered first, not timed).
cat >"$WORK/send.yaml" <<YAML
version: 1
store: { path: $WORK/send.db }
tls: { ca-file: $CA }
log: { level: warning }
channels:
  $APNS
routes: { default: [ { deliver: [apns] } ] }
YAML
python3 -c "
import secrets
for i in range($SEND_N): print('{\"deviceId\":\"ios-%d\",\"platform\":\"ios\",\"token\":\"%s\"}' % (i, secrets.token_hex(32)))
" >"$WORK/devices.jsonl"
"$HERALD" devices register -c "$WORK/send.yaml" --format json <"$WORK/devices.jsonl" >/dev/null
NOTIFICATION='{"type":"permission-request","title":"Permission Request","body":"Claude Bash: rm -rf build","data":{"sessionId":"5f0c"},"badge":3}'
t0=$(date +%s.%N)
/usr/bin/time -o "$WORK/time" -f '%M' "$HERALD" send -c "$WORK/send.yaml" --format json --json "$NOTIFICATION" >"$WORK/report.json"
t1=$(date +%s.%N)
delivered=$(grep -o '"outcome":"delivered"' "$WORK/report.json" | wc -l)
send_rate=$(python3 -c "print(round($SEND_N / ($t1 - $t0)))")
result "impl=send pushes_per_s=$send_rate delivered=$delivered rss_kb=$(tail -1 "$WORK/time")"
paced_rate=${PACED_RATE:-$(python3 -c "print(max(1, round($send_rate / 2)))")}

# 2. herald serve with the pulse relay at the guide's limits.
cat >"$WORK/serve.yaml" <<YAML
version: 1
store: { path: $WORK/serve.db }
tls: { ca-file: $CA }
log: { level: warning }
channels:
  $APNS
routes: { default: [] }
server:
  listen: 127.0.0.1:0
  max-connections: 4000
  max-connections-per-client: 4000
  tokens:
    - { name: bench, sha256: $(printf %s hrd_unused | sha256sum | cut -d' ' -f1), scopes: [read] }
  relays:
    pulse: { channel: apns, key-file: $WORK/pulse.key, rate-limit: 1000000/s, burst: 1000000 }
YAML
"$HERALD" serve -c "$WORK/serve.yaml" 2>"$WORK/serve.log" &
SERVE_PID=$!
SERVE_PORT=""
for _ in $(seq 200); do
    SERVE_PORT=$(sed -n 's/.*serving on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/serve.log" | head -1)
    [[ -n $SERVE_PORT ]] && break
    sleep 0.05
done
[[ -n $SERVE_PORT ]] || { echo "herald serve did not start: $(cat "$WORK/serve.log")" >&2; exit 1; }
RELAY="http://127.0.0.1:$SERVE_PORT"
hwm() { sed -n 's/VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$SERVE_PID/status"; }
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$SERVE_PID/stat"; }

before=$(cpu)
out=$(/usr/bin/time -o "$WORK/btime" -f '%U %S' "$BENCH" relay pulse "$RELAY" "$CLIENTS" "$DURATION" "$paced_rate" "$SITES" "$REFS")
echo "$out"
full=$(sed -n 1p <<<"$out")
paced=$(sed -n 2p <<<"$out")
[[ $(field ok "$full") -gt 0 && $(field ok "$paced") -gt 0 ]] || { echo "no push went through: $(tail -5 "$WORK/serve.log")" >&2; exit 1; }
for line in "$full" "$paced"; do
    mode=$(sed -n 's/.*"mode":"\([a-z]*\)".*/\1/p' <<<"$line")
    result "impl=$mode pushes_per_s=$(field pushes_per_s "$line") requests=$(field requests "$line") ok=$(field ok "$line")" \
        "status_429=$(field status_429 "$line") refused=$(field refused "$line") failed=$(field failed "$line")" \
        "p50_ms=$(field p50_ms "$line") p99_ms=$(field p99_ms "$line") max_ms=$(field max_ms "$line")"
done
result "impl=serve rss_kb=$(hwm) serve_cpu_s=$(python3 -c "print(round($(cpu) - $before, 1))")" \
    "client_cpu_s=$(awk '{ print $1 + $2 }' "$WORK/btime") setup_s=$(field setup_seconds "$full")"
python3 - "$send_rate" "$(field pushes_per_s "$full")" "$paced_rate" "$(field pushes_per_s "$paced")" \
    "$(field p50_ms "$paced")" "$(field p99_ms "$paced")" "$(hwm)" <<'PY'
import sys
send, full, target, paced, p50, p99, hwm = (float(x or 0) for x in sys.argv[1:])
ratio = 100 * full / send if send else 0
print(f"pulse full rate: {full:.0f} pushes/s = {ratio:.0f}% of herald send ({send:.0f}/s); target >= 60%: {'met' if ratio >= 60 else 'MISSED'}")
print(f"pulse paced at {target:.0f}/s ({100 * target / send if send else 0:.0f}% of herald send): {paced:.0f} pushes/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms; target p99 < 20 ms: {'met' if p99 < 20 else 'MISSED'}")
print(f"herald serve peak RSS: {hwm / 1024:.1f} MB")
PY
