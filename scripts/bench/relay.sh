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
# shellcheck source=scripts/bench/relay_common.sh
. scripts/bench/relay_common.sh
relay_bench_binaries
relay_bench_start relay

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sink: $BASE; clients: $CLIENTS, tokens per openchamber send: $TOKENS, duration: ${DURATION}s, herald send to $SEND_N devices"

RESULTS="$WORK/results"
: >"$RESULTS"
result() { echo "RESULT bench=relay $*"; echo "$*" >>"$RESULTS"; }
field() { sed -n "s/.*\"$1\": *\"\{0,1\}\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

# 1. herald send to SEND_N devices (registered first, not timed).
relay_bench_send

# 2. herald serve with the hapi and openchamber relays.
relay_bench_serve "    hapi: { channel: apns, auth: none, rate-limit: 1000000/s, burst: 1000000 }
    openchamber: { channel: apns, auth: none, rate-limit: 1000000/s, burst: 1000000, max-tokens: $TOKENS }"
# serve's CPU seconds (cpu) and the bench client's show who used the cores.
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
