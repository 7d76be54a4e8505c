#!/usr/bin/env bash
# Local push under load (issue 35): APPS apps hold their stream to one `herald serve` (release),
# notifications at RATE/s for SECONDS, each app but SILENT confirms at once (local_push.py).
# Figures go into BENCHMARKS.md by hand; run it on a quiet machine.
#
#   scripts/bench/local.sh                 full run (1,000 apps, 1,000 notifications/s, 10 s)
#   SMOKE=1 scripts/bench/local.sh         seconds, tiny scale: checks the tooling, not the speed
#
# Env: APPS (1000), RATE (1000), SECONDS (10), SILENT (10), CONFIRM (10s), HERALD_BIN (skip the
# release build and use this binary), PORT (18688), BENCH_TMP (where the store goes, /tmp).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
if [ "${SMOKE:-0}" = 1 ]; then
  : "${APPS:=20}" "${RATE:=50}" "${SECONDS_:=2}" "${SILENT:=2}" "${CONFIRM:=1}"
fi
APPS=${APPS:-1000}
RATE=${RATE:-1000}
SECONDS_=${SECONDS_:-10}
SILENT=${SILENT:-10}
CONFIRM=${CONFIRM:-10}
PORT=${PORT:-18688}

# shellcheck source=scripts/bench/serve_common.sh
. scripts/bench/serve_common.sh
serve_bench_start "${BENCH_TMP:-/tmp}" local

serve_bench_herald

serve_bench_token
cat > "$work/herald.yaml" <<YAML
version: 1
store: { path: $work/herald.db }
channels:
  local: { type: local, platforms: [phone], confirm: ${CONFIRM}s }
  cloud: { type: log, path: /dev/null }      # the fallback, standing in for FCM
routes:
  default:
    - deliver: [local, cloud]
      mode: first
server:
  listen: 127.0.0.1:$PORT
  max-connections: 4000
  max-connections-per-client: 4000
  rate-limit: { per-token: 1000000/s, burst: 1000000 }
  tokens:
    - { name: bench, sha256: $hash, namespaces: ["lp-*"], scopes: [send, devices, events, read] }
YAML
"$herald" serve -c "$work/herald.yaml" 2> "$work/serve.log" &
pids+=($!)
herald_pid=$!
timeout 30 sh -c "until curl -sf http://127.0.0.1:$PORT/healthz >/dev/null; do sleep 0.1; done"
python3 scripts/bench/local_push.py "http://127.0.0.1:$PORT" "$token" --pid "$herald_pid" \
  --apps "$APPS" --rate "$RATE" --seconds "$SECONDS_" --silent "$SILENT" --confirm "$CONFIRM"
curl -sS "http://127.0.0.1:$PORT/metrics" | grep -E '^herald_local_(deliveries_total|confirm_seconds_(sum|count))'
