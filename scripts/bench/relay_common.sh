# Shared by scripts/bench/relay.sh and scripts/bench/pulse.sh (sourced, not run): the nginx APNs sink,
# `herald send` to SEND_N devices as the reference, and one `herald serve` with the relays under test.
#
#   relay_bench_binaries      HERALD and BENCH: from HERALD_BIN_DIR, else a release build
#   relay_bench_start NAME    a work dir /tmp/herald-NAME-bench.*, the sink (BASE, CA), an APNs key and
#                             the channel's YAML ($APNS); stops everything on exit
#   relay_bench_send          `herald send` to SEND_N devices (registered at the first call only, not
#                             timed); sets send_rate and prints `RESULT bench=NAME impl=send …`
#                             through the caller's `result`
#   relay_bench_serve RELAYS  `herald serve` with `relays:` RELAYS (YAML lines); sets SERVE_PID and RELAY
#   hwm, cpu                  serve's peak RSS (kB) and CPU seconds so far (utime + stime)

relay_bench_binaries() {
    if [[ -n ${HERALD_BIN_DIR:-} ]]; then BIN=$HERALD_BIN_DIR; else
        swift build -c release --static-swift-stdlib --product herald >/dev/null
        swift build -c release --product herald-bench >/dev/null
        BIN=.build/release
    fi
    HERALD=$BIN/herald
    BENCH=$BIN/herald-bench
}

relay_bench_start() {
    WORK=$(mktemp -d "/tmp/herald-$1-bench.XXXXXX")
    chmod 755 "$WORK"
    SINK_DIR="$WORK/sink"
    SERVE_PID=""
    trap relay_bench_cleanup EXIT
    ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
    read -r PORT CA < <(scripts/bench/sink.sh start "$SINK_DIR" 2>/dev/null)
    BASE="https://127.0.0.1:$PORT"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null
    APNS="apns: { type: apns, key-p8: $WORK/apns.p8, key-id: BENCHKEY01, team-id: BENCHTEAM1, topic: com.example.bench, endpoints: { production: $BASE, sandbox: $BASE } }"
}

relay_bench_cleanup() {
    [[ -n $SERVE_PID ]] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
    scripts/bench/sink.sh stop "$SINK_DIR" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}

relay_bench_config() { # NAME: a config's common head (its store NAME.db, the sink's CA, the apns channel)
    printf 'version: 1\nstore: { path: %s }\ntls: { ca-file: %s }\nlog: { level: warning }\nchannels:\n  %s\n' \
        "$WORK/$1.db" "$CA" "$APNS"
}

relay_bench_send() {
    if [[ ! -f $WORK/devices.jsonl ]]; then # registered once, for every round
        { relay_bench_config send; echo "routes: { default: [ { deliver: [apns] } ] }"; } >"$WORK/send.yaml"
        python3 -c "
import secrets
for i in range($SEND_N): print('{\"deviceId\":\"ios-%d\",\"platform\":\"ios\",\"token\":\"%s\"}' % (i, secrets.token_hex(32)))
" >"$WORK/devices.jsonl"
        "$HERALD" devices register -c "$WORK/send.yaml" --format json <"$WORK/devices.jsonl" >/dev/null
    fi
    local notification t0 t1 delivered
    notification='{"type":"permission-request","title":"Permission Request","body":"Claude Bash: rm -rf build","data":{"sessionId":"5f0c"},"badge":3}'
    t0=$(date +%s.%N)
    /usr/bin/time -o "$WORK/time" -f '%M' "$HERALD" send -c "$WORK/send.yaml" --format json --json "$notification" >"$WORK/report.json"
    t1=$(date +%s.%N)
    delivered=$(grep -o '"outcome":"delivered"' "$WORK/report.json" | wc -l)
    send_rate=$(python3 -c "print(round($SEND_N / ($t1 - $t0)))")
    result "impl=send pushes_per_s=$send_rate delivered=$delivered rss_kb=$(tail -1 "$WORK/time")"
}

relay_bench_serve() {
    {
        relay_bench_config serve
        cat <<YAML
routes: { default: [] }
server:
  listen: 127.0.0.1:0
  max-connections: 4000
  max-connections-per-client: 4000
  tokens:
    - { name: bench, sha256: $(printf %s hrd_unused | sha256sum | cut -d' ' -f1), scopes: [read] }
  relays:
$1
YAML
    } >"$WORK/serve.yaml"
    "$HERALD" serve -c "$WORK/serve.yaml" 2>"$WORK/serve.log" &
    SERVE_PID=$!
    local port=""
    for _ in $(seq 200); do
        port=$(sed -n 's/.*serving on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/serve.log" | head -1)
        [[ -n $port ]] && break
        sleep 0.05
    done
    [[ -n $port ]] || { echo "herald serve did not start: $(cat "$WORK/serve.log")" >&2; exit 1; }
    RELAY="http://127.0.0.1:$port"
}

hwm() { sed -n 's/VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$SERVE_PID/status"; }
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$SERVE_PID/stat"; }
