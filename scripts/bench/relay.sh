#!/usr/bin/env bash
# Issue 32: `herald serve` as a push relay beside `herald send`, both into the same local nginx
# HTTP/2 TLS APNs sink (scripts/bench/sink.sh), in the same run (make bench-relay).
#
#   send         `herald send` as a whole process to SEND_N APNs devices registered beforehand (not
#                timed): pushes/s = SEND_N / wall time, peak RSS from /usr/bin/time.
#   openchamber  `herald-bench relay openchamber`: CLIENTS concurrent callers, each its own server (own
#                key, TOKENS tokens registered first, not timed), sending signed POST /v1/push/send
#                naming all TOKENS tokens, back to back for DURATION s.
#   hapi         `herald-bench relay hapi`: CLIENTS concurrent callers of POST /v1/push, one push each
#                (run first, so the RSS after it is its own).
# `herald serve` (SQLite store, the relays with auth: none on loopback, limits lifted) runs through
# both relay parts; its peak RSS is VmHWM after each. The bench client shares the machine's cores: each
# part also prints the CPU seconds serve and the client used.
#
#   scripts/bench/relay.sh                     CLIENTS=100 TOKENS=100 DURATION=20 SEND_N=10000
#   SMOKE=1 scripts/bench/relay.sh             seconds, tiny scale: checks the tooling, not the speed
#   HERALD_BIN_DIR=.build/debug …              use these binaries instead of a release build
#
# Prints one RESULT line per part and the issue's ratios:
#   RESULT bench=relay impl=openchamber pushes_per_s=… requests=… rss_kb=…
set -euo pipefail
cd "$(dirname "$0")/../.."

CLIENTS=${CLIENTS:-100}
TOKENS=${TOKENS:-100}
DURATION=${DURATION:-20}
SEND_N=${SEND_N:-10000}
if [[ -n ${SMOKE:-} ]]; then CLIENTS=4 TOKENS=10 DURATION=2 SEND_N=200; fi
if [[ -n ${HERALD_BIN_DIR:-} ]]; then BIN=$HERALD_BIN_DIR; else
    swift build -c release --static-swift-stdlib --product herald >/dev/null
    swift build -c release --product herald-bench >/dev/null
    BIN=.build/release
fi
HERALD=$BIN/herald
BENCH=$BIN/herald-bench

WORK=$(mktemp -d /tmp/herald-relay-bench.XXXXXX)
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

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sink: $BASE; clients: $CLIENTS, tokens per openchamber send: $TOKENS, duration: ${DURATION}s, herald send to $SEND_N devices"

APNS="apns: { type: apns, key-p8: $WORK/apns.p8, key-id: BENCHKEY01, team-id: BENCHTEAM1, topic: com.example.bench, endpoints: { production: $BASE, sandbox: $BASE } }"
RESULTS="$WORK/results"
: >"$RESULTS"
result() { echo "RESULT bench=relay $*"; echo "$*" >>"$RESULTS"; }
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

# 2. herald serve with the hapi and openchamber relays.
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
    hapi: { channel: apns, auth: none, rate-limit: 1000000/s, burst: 1000000 }
    openchamber: { channel: apns, auth: none, rate-limit: 1000000/s, burst: 1000000, max-tokens: $TOKENS }
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

# serve's CPU seconds so far (utime + stime) and the bench client's, to show who used the cores.
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$SERVE_PID/stat"; }
part() { # protocol [tokens]: one herald-bench relay run; prints its RESULT; sets $rate
    local before out
    before=$(cpu)
    out=$(/usr/bin/time -o "$WORK/btime" -f '%U %S' "$BENCH" relay "$1" "$RELAY" "$CLIENTS" "$DURATION" ${2:-})
    echo "$out"
    rate=$(field pushes_per_s "$out")
    result "impl=$1 pushes_per_s=$rate requests=$(field requests "$out") ok=$(field ok "$out") rss_kb=$(hwm)" \
        "serve_cpu_s=$(python3 -c "print(round($(cpu) - $before, 1))") client_cpu_s=$(awk '{ print $1 + $2 }' "$WORK/btime")"
}
# hapi first, so its peak RSS is its own; then openchamber (VmHWM is the peak of both).
part hapi
hapi_rate=$rate
part openchamber "$TOKENS"
oc_rate=$rate
python3 - "$send_rate" "$oc_rate" "$hapi_rate" "$(hwm)" <<'PY'
import sys
send, oc, hapi, hwm = (float(x or 0) for x in sys.argv[1:])
for name, rate in (("openchamber", oc), ("hapi", hapi)):
    ratio = 100 * rate / send if send else 0
    print(f"{name}: {rate:.0f} pushes/s = {ratio:.0f}% of herald send ({send:.0f}/s); target >= 70%: {'met' if ratio >= 70 else 'MISSED'}")
print(f"herald serve peak RSS: {hwm / 1024:.1f} MB; target < 64 MB: {'met' if hwm < 64 * 1024 else 'MISSED'}")
PY
