#!/usr/bin/env bash
# CI's short run of the benchmark scripts (make bench-smoke): each at tiny scale on the debug build,
# so a broken script, a missing tool or a bench binary that fails is caught without a release build.
# The figures mean nothing; the full runs are make bench, bench-fanout, bench-relay, bench-pulse, bench-serve, bench-local and bench-pg.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -c 'import aioapns, pywebpush' 2>/dev/null \
    || python3 -m pip install -q --disable-pip-version-check aioapns pywebpush 2>&1 | grep -v 'Running pip as the' >&2 || true
BIN=.build/debug
run() { # name, command...
    local name=$1 t0=$SECONDS
    shift
    echo "bench-smoke: $name" >&2
    "$@" >"/tmp/herald-bench-smoke-$name.log" 2>&1 || {
        echo "bench-smoke: $name FAILED; its output:" >&2
        tail -40 "/tmp/herald-bench-smoke-$name.log" >&2
        exit 1
    }
    echo "bench-smoke: $name ok ($((SECONDS - t0)) s)" >&2
}
run fanout env SMOKE=1 HERALD_BIN_DIR=$BIN bash scripts/bench/fanout.sh
run relay env SMOKE=1 HERALD_BIN_DIR=$BIN bash scripts/bench/relay.sh
run pulse env SMOKE=1 HERALD_BIN_DIR=$BIN bash scripts/bench/pulse.sh
run serve env SMOKE=1 HERALD_BIN=$BIN/herald bash scripts/bench/serve.sh
run local env SMOKE=1 HERALD_BIN=$BIN/herald bash scripts/bench/local.sh
run pg env BENCH_PG_DELIVERIES=200 BENCH_PG_WORKERS="1 2" BENCH_PG_FANOUT=200 HERALD=$BIN/herald \
    HERALD_BENCH=$BIN/herald-bench bash scripts/bench/pg.sh
