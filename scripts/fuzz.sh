#!/usr/bin/env bash
# Builds Herald's libFuzzer targets (Fuzz/, a package the main build never compiles) with
# -sanitize=fuzzer,address and runs each for FUZZ_SECONDS (default 60) on its seed corpus.
#   scripts/fuzz.sh                 every target
#   scripts/fuzz.sh fuzz-json ...   only these
# Seeds live in Fuzz/corpus/<name>; new inputs found go to Fuzz/.work/<name> (not committed);
# a crash is written to Fuzz/crashes/ and fails the run. Prints the executions per target.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
build=Fuzz/.build
swift build --package-path Fuzz --build-path "$build" --sanitize=fuzzer --sanitize=address 2>&1 \
  | grep -v -e '^\[' -e 'Cannot export local symbol' -e '^Building for' || true
bin="$(swift build --package-path Fuzz --build-path "$build" --sanitize=fuzzer --sanitize=address --show-bin-path)"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(ls Fuzz/Sources | grep '^fuzz-'))
fi
mkdir -p Fuzz/crashes
failed=0
printf '%-24s %12s %10s %s\n' target executions exec/s result
for t in "${targets[@]}"; do
  name="${t#fuzz-}"
  work="Fuzz/.work/$name"
  mkdir -p "$work"
  log="$(mktemp)"
  # -rss_limit_mb guards against a parser that grows without bound; -timeout against a hang.
  if ASAN_OPTIONS=detect_leaks=0 "$bin/$t" "$work" "Fuzz/corpus/$name" -max_total_time="$seconds" \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="Fuzz/crashes/$name-" >"$log" 2>&1; then
    result=ok
  else
    result="CRASH (see Fuzz/crashes/ and $log)"
    failed=1
  fi
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
  rate="$(( runs / (seconds > 0 ? seconds : 1) ))"
  printf '%-24s %12s %10s %s\n' "$t" "$runs" "$rate" "$result"
  [ "$result" = ok ] && rm -f "$log"
done
exit $failed
