#!/usr/bin/env bash
# make test-loaded: the whole suite with two CPU-bound busy loops beside it (one per core of the
# project's 2-core machines), RUNS times in a row (default 3); stops at the first failing run.
# It proves the suite asserts orders and reasons, not durations a busy machine stretches.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-3}"
swift build --build-tests
busy=()
stop_busy() { for p in "${busy[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; busy=(); }
trap stop_busy EXIT
for i in $(seq 1 "$runs"); do
  stop_busy
  for _ in 1 2; do
    (exec yes >/dev/null) &
    busy+=("$!")
  done
  echo "test-loaded: run $i of $runs, busy loops ${busy[*]}" >&2
  start=$(date +%s)
  if ! swift test --skip-build; then
    echo "test-loaded: run $i of $runs failed" >&2
    exit 1
  fi
  echo "test-loaded: run $i of $runs passed in $(( $(date +%s) - start )) s" >&2
done
stop_busy
echo "test-loaded: $runs of $runs runs passed with two busy loops beside them" >&2
