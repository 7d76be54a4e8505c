#!/usr/bin/env bash
# `herald serve` beside its floor (issue 17): accepted sends, registrations and the event stream.
# Figures go into BENCHMARKS.md by hand; run it on a quiet machine (make bench-serve).
#
#   scripts/bench/serve.sh                 full run
#   SMOKE=1 scripts/bench/serve.sh         seconds, tiny scale: checks the tooling, not the speed
#
# Env: DURATION (wrk seconds, default 20), CONNECTIONS (64), SUBSCRIBERS (1000), BURST (1000),
# HERALD_BIN (skip the release build and use this binary), PORT (18686), FLOOR_PORT (18687),
# ONLY=stream (only part 3).
#
# 1. Accepted sends: POST /v1/notifications?wait=none through $CONNECTIONS keep-alive connections
#    (wrk + serve_notify.lua: every request a new notification id, so nothing is a replay), each
#    notification persisted before its 202; then the floor (mhd_floor.c: libmicrohttpd in the same
#    thread mode answering a fixed 202) with the same requests. Then both again at half of Herald's
#    rate, for p50/p99 latency at a load the server keeps up with.
# 2. Registrations: POST /v1/devices (a new device per request) beside the floor.
# 3. Event stream: $SUBSCRIBERS clients on GET /v1/events must each receive every event of a burst
#    of $BURST notifications: missed events, time until the last subscriber has everything, and
#    herald's peak RSS (VmHWM).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
if [ "${SMOKE:-0}" = 1 ]; then
  : "${DURATION:=2}" "${CONNECTIONS:=8}" "${SUBSCRIBERS:=20}" "${BURST:=20}"
fi
DURATION=${DURATION:-20}
CONNECTIONS=${CONNECTIONS:-64}
SUBSCRIBERS=${SUBSCRIBERS:-1000}
BURST=${BURST:-1000}
PORT=${PORT:-18686}
FLOOR_PORT=${FLOOR_PORT:-18687}
THREADS=$(( $(nproc) < CONNECTIONS ? $(nproc) : CONNECTIONS ))

# shellcheck source=scripts/bench/serve_common.sh
. scripts/bench/serve_common.sh
serve_bench_start "/tmp" serve

# Build: the floor, and a release herald.
cc -O2 -o "$work/mhd_floor" scripts/bench/mhd_floor.c $(pkg-config --cflags --libs libmicrohttpd)
serve_bench_herald

# A token (its hash in the config), no rate limit to speak of, a log sink to /dev/null (each
# notification is planned, stored and delivered once; the 202 comes after the store's commit).
serve_bench_token
cat > "$work/herald.yaml" <<YAML
version: 1
store: { path: $work/herald.db }
server:
  listen: 127.0.0.1:$PORT
  max-body: 64KiB
  rate-limit: { per-token: 10000000/s, burst: 1000000 }
  # Every bench client is 127.0.0.1 and uses one token: lift the connection and stream limits.
  max-connections: 4000
  max-connections-per-client: 4000
  max-streams-per-token: 4000
  tokens:
    - { name: bench, sha256: $hash, namespaces: ["bench"], scopes: [send, devices, events, read] }
channels:
  sink: { type: log, path: /dev/null }
routes:
  default:
    - deliver: [sink]
YAML

"$herald" serve -c "$work/herald.yaml" 2>"$work/herald.log" &
herald_pid=$!
pids+=("$herald_pid")
"$work/mhd_floor" "$FLOOR_PORT" 2>"$work/floor.log" &
pids+=($!)
for _ in $(seq 100); do
  grep -q "serving on" "$work/herald.log" 2>/dev/null && grep -q listening "$work/floor.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "serving on" "$work/herald.log" || { cat "$work/herald.log"; exit 1; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%FT%TZ)"
echo "herald: $herald; wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"

# wrk_run LABEL PORT KIND RATE: one wrk run; prints "LABEL RESULT …" and sets $rps.
wrk_run() {
  local label=$1 port=$2 kind=$3 rate=$4 out
  out=$(HERALD_TOKEN=$token BENCH_RUN="$label-$RANDOM$RANDOM" BENCH_KIND=$kind BENCH_RATE=$rate \
    BENCH_CONNECTIONS=$CONNECTIONS wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --timeout 10s \
    -s scripts/bench/serve_notify.lua "http://127.0.0.1:$port" 2>&1)
  local result
  result=$(grep '^RESULT' <<<"$out" || { echo "$out" >&2; echo "RESULT rps=0"; })
  echo "$label $result"
  rps=$(sed -n 's/.* rps=\([0-9]*\).*/\1/p' <<<"$result")
}

# herald's resident memory now and its high-water mark so far (VmRSS, VmHWM), after each part.
memory_note() {
  echo "MEMORY after=$1 $(awk '/^VmRSS|^VmHWM/ { printf "%s=%s ", tolower(substr($1, 1, length($1) - 1)), $2 }' \
    "/proc/$herald_pid/status")kB"
}

if [ "${ONLY:-all}" = all ]; then
echo "## 1. accepted sends: POST /v1/notifications?wait=none"
wrk_run herald-send "$PORT" notification 0; herald_rps=$rps
wrk_run floor-send "$FLOOR_PORT" notification 0; floor_rps=$rps
awk -v h="$herald_rps" -v f="$floor_rps" 'BEGIN { if (f > 0) printf "herald/floor: %.0f%%\n", 100 * h / f }'
half=$(( herald_rps / 2 ))
if [ "$half" -gt 0 ]; then
  echo "## 1b. latency at half of herald's rate ($half/s)"
  wrk_run herald-send-half "$PORT" notification "$half"
  wrk_run floor-send-half "$FLOOR_PORT" notification "$half"
fi
memory_note sends

echo "## 2. registrations: POST /v1/devices"
wrk_run herald-devices "$PORT" device 0; herald_rps=$rps
wrk_run floor-devices "$FLOOR_PORT" device 0; floor_rps=$rps
awk -v h="$herald_rps" -v f="$floor_rps" 'BEGIN { if (f > 0) printf "herald/floor: %.0f%%\n", 100 * h / f }'
memory_note registrations
fi

# The sends above are accepted faster than the log sink's worker delivers them: let it finish, or
# every subscriber below would first receive the backlog's delivery events (tens of thousands each).
for _ in $(seq 600); do
  pending=$(curl -sS -H "Authorization: Bearer $token" "http://127.0.0.1:$PORT/metrics" 2>/dev/null \
    | sed -n 's/^herald_outbox_pending \([0-9]*\).*/\1/p')
  [ "${pending:-1}" = 0 ] && break
  sleep 1
done
echo "outbox drained before the event stream (pending: ${pending:-?})"
memory_note drained

echo "## 3. event stream: $SUBSCRIBERS subscribers x $BURST notifications"
python3 scripts/bench/sse_fanout.py "http://127.0.0.1:$PORT" "$token" "$SUBSCRIBERS" "$BURST" --pid "$herald_pid"
echo "herald log:"; grep -v "serving on" "$work/herald.log" | tail -5 || true
