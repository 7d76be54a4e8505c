#!/usr/bin/env bash
# Issue 19: end-to-end fan-out, the path users run, beside the channel alone and the Python references,
# all against the same local nginx HTTP/2 TLS sink (scripts/bench/sink.sh), in interleaved rounds.
#
# Per channel (APNs, Web Push) and per N, each round runs:
#   send     `herald send` as a whole process (release binary): config load, store open, plan, persist,
#            provider token, sends, results recorded, report printed. Config: one channel pointing at
#            the sink, SQLite store in a temp dir holding N devices registered beforehand with
#            `herald devices register` (not timed; every round starts from a copy of that store).
#   api      the same notification through `herald serve`: POST /v1/notifications answered with the
#            whole delivery report (streamed), timed from the request to its last byte, on the same
#            store copy; peak RSS is the server's VmHWM after the answer.
#   router   the router's in-process send (`herald-bench router-send CONFIG`), same config and store copy,
#            timed around Router.sendSummarized alone (what `herald send` runs; it also prints where the
#            memory is: SQLite's high-water, RssAnon, RssFile).
#   channel  the channel's deliver() alone (`herald-bench apns …` / `herald-bench webpush send …`).
#   aioapns / pywebpush (16 threads, one session each).
# plus, once, plan + persist of PERSIST deliveries (`herald-bench router-persist`, median of 7), and per
# N one untimed `herald send` sampled for its memory (RESULT bench=memory: peaks of VmHWM, RssAnon,
# RssFile), for APNs also one under heaptrack when it is installed (RESULT bench=heap: the peak of live
# heap allocations and each library's share of it; SQLite's holds its page cache), and the same memory
# sample of a Web Push send to WEBPUSH_MEMORY_N browsers (100,000; not timed, no rounds).
#
#   scripts/bench/fanout.sh                          # APNs 10000 100000, Web Push 2000 10000, ROUNDS=3
#   APNS_N="10000" WEBPUSH_N="10000" ROUNDS=5 scripts/bench/fanout.sh
#   WEBPUSH_MEMORY_N="" …                            # skip the memory-only Web Push send (100,000 by default)
#   SMOKE=1 scripts/bench/fanout.sh                  # tiny N, one round: checks the tooling in seconds
#   LOOPS=2 …                                        # Herald's HTTP event loops (default 2)
#   SEND_WRAP="perf record -g -o /tmp/send.perf" …   # a command put before `herald send` (a profiler)
#
# Prints one `RESULT` line per measurement:
#   RESULT bench=fanout channel=apns n=10000 impl=send round=1 per_s=12345 rss_kb=40000 delivered=10000
# and a summary of medians with the issue's ratios. Peak RSS is /usr/bin/time's %M for whole processes and
# VmHWM for herald-bench. Needs nginx, python3 with aioapns and pywebpush, openssl.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
LOOPS=${LOOPS:-2}
APNS_N=${APNS_N:-"10000 100000"}
WEBPUSH_N=${WEBPUSH_N:-"2000 10000"}
WEBPUSH_MEMORY_N=${WEBPUSH_MEMORY_N:-100000}
PERSIST=${PERSIST:-10000}
THREADS=${THREADS:-16}
if [[ -n ${SMOKE:-} ]]; then
    ROUNDS=1 APNS_N=200 WEBPUSH_N=100 WEBPUSH_MEMORY_N=300 PERSIST=500 THREADS=4
fi

python3 -c 'import aioapns, pywebpush' 2>/dev/null || { echo "pip install aioapns pywebpush first" >&2; exit 1; }
if [[ -n ${HERALD_BIN_DIR:-} ]]; then BIN=$HERALD_BIN_DIR; else
    swift build -c release --static-swift-stdlib --product herald >/dev/null
    swift build -c release --product herald-bench >/dev/null
    BIN=.build/release
fi
HERALD=$BIN/herald
BENCH=$BIN/herald-bench

WORK=$(mktemp -d /tmp/herald-fanout.XXXXXX)
chmod 755 "$WORK" # nginx workers (nobody) read the sink directory inside it
SINK_DIR="$WORK/sink"
trap 'scripts/bench/sink.sh stop "$SINK_DIR" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
read -r PORT CA < <(scripts/bench/sink.sh start "$SINK_DIR" 2>/dev/null)
# Echo the request's apns-id like APNs does (aioapns matches responses by it).
sed -i 's/add_header apns-id "[^"]*"/add_header apns-id $http_apns_id/' "$SINK_DIR/nginx.conf"
nginx -p "$SINK_DIR" -c "$SINK_DIR/nginx.conf" -s reload 2>/dev/null
sleep 1
BASE="https://127.0.0.1:$PORT"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sink: $BASE, rounds: $ROUNDS, Herald event loops: $LOOPS, APNs N: $APNS_N, Web Push N: $WEBPUSH_N"

RESULTS="$WORK/results"
: >"$RESULTS"
result() { # channel n impl round per_s rss_kb delivered
    local line="RESULT bench=fanout channel=$1 n=$2 impl=$3 round=$4 per_s=$5 rss_kb=$6 delivered=$7"
    echo "$line"
    echo "$line" >>"$RESULTS"
}
field() { sed -n "s/.*\"$1\": *\"\{0,1\}\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/apns.p8" 2>/dev/null

# setup CHANNEL N: a config and a store with N devices registered; prints the directory.
setup() {
    local channel=$1 n=$2 dir="$WORK/$1-$2"
    mkdir -p "$dir"
    {
        echo "version: 1"
        echo "store: { path: $dir/run.db }"
        echo "tls: { ca-file: $CA }"
        echo "http: { event-loops: $LOOPS }"
        echo "log: { level: warning }"
        echo "channels:"
        if [[ $channel == apns ]]; then
            echo "  apns: { type: apns, key-p8: $WORK/apns.p8, key-id: BENCHKEY01, team-id: BENCHTEAM1, topic: com.example.bench, endpoints: { production: $BASE, sandbox: $BASE } }"
            echo "routes: { default: [ { deliver: [apns] } ] }"
        else
            echo "  webpush: { type: webpush, vapid: { subject: \"mailto:bench@example.com\" }, allow-hosts: [127.0.0.1] }"
            echo "routes: { default: [ { deliver: [webpush] } ] }"
        fi
    } >"$dir/herald.yaml"
    python3 - "$channel" "$n" "$BASE" >"$dir/devices.jsonl" <<'PY'
import base64, json, os, secrets, sys
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
channel, n, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
b64u = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
for i in range(n):
    if channel == "apns":
        d = {"deviceId": f"ios-{i}", "platform": "ios", "token": secrets.token_hex(32)}
    else:
        pub = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        d = {"deviceId": f"web-{i}", "platform": "web",
             "subscription": {"endpoint": f"{base}/push/{i}", "keys": {"p256dh": b64u(pub), "auth": b64u(os.urandom(16))}}}
    print(json.dumps(d, separators=(",", ":")))
PY
    sed "s#$dir/run.db#$dir/base.db#" "$dir/herald.yaml" >"$dir/register.yaml"
    "$HERALD" devices register -c "$dir/register.yaml" --format json <"$dir/devices.jsonl" >/dev/null
    echo "$dir"
}

fresh_store() { rm -f "$1/run.db" "$1/run.db-wal" "$1/run.db-shm"; cp "$1/base.db" "$1/run.db"; }

NOTIFICATION='{"type":"permission-request","title":"Permission Request","body":"Claude Bash: rm -rf build","url":"/sessions/5f0c","data":{"sessionId":"5f0c","sessionName":"claude - hapi","requestId":"r-17"},"badge":3,"ttl":3600}'

run_send() { # channel n dir round
    local channel=$1 n=$2 dir=$3 round=$4 out t0 t1 rss delivered
    fresh_store "$dir"
    t0=$(date +%s.%N)
    /usr/bin/time -o "$dir/time" -f '%M' ${SEND_WRAP:-} "$HERALD" send -c "$dir/herald.yaml" --format json --json "$NOTIFICATION" \
        >"$dir/report.json"
    t1=$(date +%s.%N)
    rss=$(tail -1 "$dir/time")
    delivered=$(grep -o '"outcome":"delivered"' "$dir/report.json" | wc -l)
    result "$channel" "$n" send "$round" "$(python3 -c "print(round($n / ($t1 - $t0)))")" "$rss" "$delivered"
}

# The same send through `herald serve`: POST /v1/notifications (the answer is the whole delivery
# report, streamed), timed from the request to the report's last byte; the server is started on the
# store copy before the clock starts (a server is long-running), and its peak RSS (VmHWM) is read
# after the answer.
API_TOKEN="hrd_fanout-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
run_api() { # channel n dir round
    local channel=$1 n=$2 dir=$3 round=$4 pid port t0 t1 hwm delivered
    fresh_store "$dir"
    {
        cat "$dir/herald.yaml"
        echo "server:"
        echo "  listen: 127.0.0.1:0"
        echo "  tokens:"
        echo "    - { name: bench, sha256: $(printf %s "$API_TOKEN" | sha256sum | cut -d' ' -f1), namespaces: [\"*\"], scopes: [send, read] }"
    } >"$dir/serve.yaml"
    "$HERALD" serve -c "$dir/serve.yaml" 2>"$dir/serve.log" &
    pid=$!
    port=""
    for _ in $(seq 200); do
        port=$(sed -n 's/.*serving on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$dir/serve.log" | head -1)
        [[ -n $port ]] && break
        sleep 0.05
    done
    [[ -n $port ]] || { echo "herald serve did not start: $(cat "$dir/serve.log")" >&2; kill "$pid"; return 1; }
    t0=$(date +%s.%N)
    curl -sS -o "$dir/api.json" -X POST "http://127.0.0.1:$port/v1/notifications" \
        -H "Authorization: Bearer $API_TOKEN" -H 'Content-Type: application/json' -d "$NOTIFICATION"
    t1=$(date +%s.%N)
    hwm=$(sed -n 's/VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid" || true
    delivered=$(grep -o '"outcome":"delivered"' "$dir/api.json" | wc -l)
    result "$channel" "$n" api "$round" "$(python3 -c "print(round($n / ($t1 - $t0)))")" "$hwm" "$delivered"
}

run_router() {
    local channel=$1 n=$2 dir=$3 round=$4 out
    fresh_store "$dir"
    out=$("$BENCH" router-send "$dir/herald.yaml")
    result "$channel" "$n" router "$round" "$(field rps "$out")" "$(field peak_rss_kb "$out")" "$(field delivered "$out")"
}

run_channel() {
    local channel=$1 n=$2 round=$3 out
    if [[ $channel == apns ]]; then
        out=$("$BENCH" apns "$BASE" "$CA" "$n" 125 4 $((4 / LOOPS > 0 ? 4 / LOOPS : 1)) "$LOOPS")
        result apns "$n" channel "$round" "$(field rps "$out")" "$(field peak_rss_kb "$out")" "$(field delivered "$out")"
    else
        out=$(/usr/bin/time -o "$WORK/wtime" -f '%M' "$BENCH" webpush send "$BASE" "$CA" "$n" "$LOOPS")
        result webpush "$n" channel "$round" "$(field per_second "$out")" "$(tail -1 "$WORK/wtime")" \
            "$(field delivered "$out")"
    fi
}

run_python() {
    local channel=$1 n=$2 round=$3 out
    if [[ $channel == apns ]]; then
        out=$(python3 scripts/bench/aioapns_bench.py 127.0.0.1 "$PORT" "$CA" "$n" 400 4)
        result apns "$n" aioapns "$round" "$(field rps "$out")" "$(field peak_rss_kb "$out")" "$(field delivered "$out")"
    else
        out=$(/usr/bin/time -o "$WORK/ptime" -f '%M' python3 scripts/bench/webpush_py.py send "$BASE" "$CA" "$n" "$THREADS")
        result webpush "$n" pywebpush "$round" "$(field per_second "$out")" "$(tail -1 "$WORK/ptime")" \
            "$(field delivered "$out")"
    fi
}

# Where the memory of one `herald send` is, after the timed rounds (not timed): the peaks of its
# resident memory split into anonymous (heap, stacks) and file-backed (binary, libraries, SQLite's
# -shm) pages, sampled every 5 ms; and, under heaptrack when it is installed, the peak of live heap
# allocations with the share of each library (SQLite's includes its page cache, `store.cache`).
run_memory() { # channel n dir [heap]: heap=no skips heaptrack
    local channel=$1 n=$2 dir=$3 heap=${4:-yes} out peak
    fresh_store "$dir"
    out=$(python3 scripts/bench/rss_sample.py "$dir/report.json" \
        "$HERALD" send -c "$dir/herald.yaml" --format json --json "$NOTIFICATION")
    echo "RESULT bench=memory channel=$channel n=$n hwm_kb=$(field hwm_kb "$out") anon_kb=$(field anon_kb "$out") file_kb=$(field file_kb "$out") delivered=$(field delivered "$out")"
    [[ $heap == yes ]] && command -v heaptrack >/dev/null || return 0
    fresh_store "$dir"
    heaptrack -o "$dir/heap" "$HERALD" send -c "$dir/herald.yaml" --format json --json "$NOTIFICATION" \
        >/dev/null 2>&1 || true
    peak=$(heaptrack_print -f "$dir"/heap.*zst --print-peaks 1 --print-allocators 0 --print-temporary 0 \
        --print-leaks 0 -n 6 -s 0 2>/dev/null | python3 -c '
import re, sys
lines = sys.stdin.read().splitlines()
total = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("peak heap memory consumption")), "?")
parts = {}
for i, l in enumerate(lines):
    m = re.match(r"([0-9.]+)([KMG]?) peak memory consumed", l)
    where = next((x.strip() for x in lines[i + 1:i + 4] if x.strip().startswith("in ")), None)
    if m and where:
        lib = where.split("/")[-1].split(".so")[0]
        kb = float(m.group(1)) * {"": 1 / 1024, "K": 1, "M": 1024, "G": 1024 * 1024}[m.group(2)]
        parts[lib] = parts.get(lib, 0) + kb
total = "".join(total.split())
print(f"heap_peak={total} " + " ".join(f"{k}_kb={v:.0f}" for k, v in parts.items()))
')
    echo "RESULT bench=heap channel=$channel n=$n $peak"
    rm -f "$dir"/heap.*
}

for channel in apns webpush; do
    if [[ $channel == apns ]]; then sizes=$APNS_N; else sizes=$WEBPUSH_N; fi
    for n in $sizes; do
        echo "== $channel, $n devices (registering, not timed)"
        dir=$(setup "$channel" "$n")
        for round in $(seq "$ROUNDS"); do
            run_send "$channel" "$n" "$dir" "$round"
            run_api "$channel" "$n" "$dir" "$round"
            run_router "$channel" "$n" "$dir" "$round"
            run_channel "$channel" "$n" "$round"
            run_python "$channel" "$n" "$round"
        done
        if [[ $channel == apns ]]; then run_memory "$channel" "$n" "$dir"; else run_memory "$channel" "$n" "$dir" no; fi
        rm -rf "$dir"
    done
done

# Web Push at a size too large for timed rounds: one untimed send sampled for its memory (its
# subscriptions' keys must not accumulate; issue 19's bound is < 64 MB at 100,000 devices).
for n in $WEBPUSH_MEMORY_N; do
    echo "== webpush, $n devices, memory only (registering, not timed)"
    dir=$(setup webpush "$n")
    run_memory webpush "$n" "$dir" no
    rm -rf "$dir"
done

echo "== plan + persist of $PERSIST deliveries (median of 7)"
out=$("$BENCH" router-persist "$PERSIST" 7)
echo "$out"
line="RESULT bench=persist n=$PERSIST median_ms=$(field median_ms "$out") rss_kb=$(field peak_rss_kb "$out")"
echo "$line"

python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = []
for line in open(sys.argv[1]):
    kv = dict(p.split("=", 1) for p in line.split()[1:])
    rows.append(kv)
print("\nsummary (median of rounds; peak RSS median)")
keys = sorted({(r["channel"], int(r["n"])) for r in rows})
for channel, n in keys:
    med = {}
    for impl in ("send", "api", "router", "channel", "aioapns", "pywebpush"):
        sel = [r for r in rows if r["channel"] == channel and int(r["n"]) == n and r["impl"] == impl and r["per_s"]]
        if not sel:
            continue
        med[impl] = statistics.median(float(r["per_s"]) for r in sel)
        rss = statistics.median(float(r["rss_kb"] or 0) for r in sel) / 1024
        print(f"  {channel:8s} n={n:<7d} {impl:9s} {med[impl]:9.0f}/s  peak RSS {rss:6.1f} MB"
              f"  (runs: {', '.join(r['per_s'] for r in sel)})")
    ref = med.get("aioapns") or med.get("pywebpush")
    for impl in ("send", "api", "router"):
        if impl in med and med.get("channel"):
            line = f"    {impl}/channel = {med[impl] / med['channel'] * 100:.0f}% (target >= 80%)"
            if ref:
                line += f", {impl}/{'aioapns' if channel == 'apns' else 'pywebpush'} = {med[impl] / ref:.1f}x"
                line += f" (target >= {10 if channel == 'apns' else 30}x)"
            print(line)
PY
