#!/usr/bin/env bash
# Issue 32: `herald serve` as a push relay beside `herald send`, both into the same local nginx
# HTTP/2 TLS APNs sink (scripts/bench/sink.sh), in the same run (make bench-relay). ROUNDS interleaved
# rounds of the three parts, so a swing of the shared machine's load hits all three alike; the ratios
# are per round, and their median is the figure.
#
#   send         `herald send` as a whole process to SEND_N APNs devices registered beforehand (not
#                timed): pushes/s = SEND_N / wall time, peak RSS from /usr/bin/time.
#   hapi         wrk (scripts/bench/relay_hapi.lua, one thread): CLIENTS concurrent keep-alive
#                connections posting single pushes to POST /v1/push, a new token each, for DURATION s.
#   openchamber  `herald-bench relay openchamber`: CLIENTS concurrent callers, each its own server (own
#                key, TOKENS tokens registered first, not timed), sending signed POST /v1/push/send
#                naming all TOKENS tokens, back to back for DURATION s.
# `herald serve` (SQLite store, the relays with auth: none on loopback, limits lifted) runs through
# every round; its peak RSS is VmHWM after the first hapi part (its own) and at the end. The bench
# client shares the machine's cores: each part also prints the CPU seconds serve and the client used.
#
#   scripts/bench/relay.sh                     ROUNDS=3 CLIENTS=100 TOKENS=100 DURATION=15 SEND_N=20000
#   SMOKE=1 scripts/bench/relay.sh             seconds, tiny scale: checks the tooling, not the speed
#   HERALD_BIN_DIR=.build/debug …              use these binaries instead of a release build
#
# Prints one RESULT line per part and round, then the issue's ratios (median of the rounds):
#   RESULT bench=relay impl=hapi round=1 pushes_per_s=… requests=… rss_kb=…
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-100}
TOKENS=${TOKENS:-100}
DURATION=${DURATION:-15}
SEND_N=${SEND_N:-20000}
if [[ -n ${SMOKE:-} ]]; then ROUNDS=1 CLIENTS=4 TOKENS=10 DURATION=2 SEND_N=200; fi
# shellcheck source=scripts/bench/relay_common.sh
. scripts/bench/relay_common.sh
relay_bench_binaries
relay_bench_start relay

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sink: $BASE; rounds: $ROUNDS; clients: $CLIENTS, tokens per openchamber send: $TOKENS, duration: ${DURATION}s, herald send to $SEND_N devices"

RESULTS="$WORK/results"
: >"$RESULTS"
result() { echo "RESULT bench=relay $*"; echo "$*" >>"$RESULTS"; }
field() { sed -n "s/.*\"$1\": *\"\{0,1\}\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

# herald serve with the hapi and openchamber relays, up through every round.
relay_bench_serve "    hapi: { channel: apns, auth: none, rate-limit: 1000000/s, burst: 1000000 }
    openchamber: { channel: apns, auth: none, rate-limit: 1000000/s, burst: 1000000, max-tokens: $TOKENS }"
# serve's CPU seconds (cpu) and the bench client's show who used the cores.
finish() { # impl out: prints the part's RESULT line; sets $rate
    echo "$2"
    rate=$(field pushes_per_s "$2")
    result "impl=$1 round=$round pushes_per_s=$rate requests=$(field requests "$2") ok=$(field ok "$2") rss_kb=$(hwm)" \
        "serve_cpu_s=$(python3 -c "print(round($(cpu) - $before, 1))") client_cpu_s=$(awk '{ print $1 + $2 }' "$WORK/btime")"
}
hapi() {
    before=$(cpu)
    finish hapi "$(BENCH_RUN=$(printf %x "$RANDOM$RANDOM") BENCH_CLIENTS=$CLIENTS /usr/bin/time -o "$WORK/btime" -f '%U %S' \
        wrk -t1 -c"$CLIENTS" -d"${DURATION}s" --timeout 10s -s scripts/bench/relay_hapi.lua "$RELAY" 2>&1 |
        grep -E '^\{|unexpected')"
}
openchamber() {
    before=$(cpu)
    finish openchamber "$(/usr/bin/time -o "$WORK/btime" -f '%U %S' "$BENCH" relay openchamber "$RELAY" "$CLIENTS" "$DURATION" "$TOKENS")"
}
: >"$WORK/ratios"
for round in $(seq "$ROUNDS"); do
    echo "== round $round"
    relay_bench_send
    hapi
    hapi_rate=$rate
    [[ $round == 1 ]] && echo "serve peak RSS after the first hapi part: $(hwm) kB"
    openchamber
    echo "$send_rate $hapi_rate $rate" >>"$WORK/ratios"
done
python3 - "$(hwm)" "$WORK/ratios" <<'PY'
import statistics, sys
hwm = float(sys.argv[1] or 0)
rounds = [[float(x or 0) for x in line.split()] for line in open(sys.argv[2]) if line.strip()]
for i, name in ((2, "openchamber"), (1, "hapi")):
    ratios = [100 * r[i] / r[0] if r[0] else 0 for r in rounds]
    med = statistics.median(ratios)
    shown = ", ".join(f"{x:.0f}%" for x in ratios)
    print(f"{name}: {statistics.median(r[i] for r in rounds):.0f} pushes/s (median); of herald send per round: {shown}; "
          f"median {med:.0f}%; target >= 70%: {'met' if med >= 70 else 'MISSED'}")
print(f"herald serve peak RSS: {hwm / 1024:.1f} MB; target < 64 MB: {'met' if hwm < 64 * 1024 else 'MISSED'}")
PY
