#!/usr/bin/env bash
# Builds Herald's libFuzzer targets (Fuzz/, a package the main build never compiles) with
# -sanitize=fuzzer,address and runs each for FUZZ_SECONDS (default 60) on its seed corpus.
# The Swift code also gets one `-Xswiftc -sanitize=fuzzer,address`: swift-driver keeps only the LAST
# `-sanitize=` flag, so SwiftPM's `--sanitize=fuzzer --sanitize=address` alone compiles Herald with
# AddressSanitizer and no coverage counters, and libFuzzer then mutates blind (it did until the
# revert check in RELIABILITY.md found it). SwiftPM's own flags stay: `--sanitize=fuzzer` makes it
# link the executables for libFuzzer's `main`, `--sanitize=address` instruments the C targets.
#   scripts/fuzz.sh                 every target
#   scripts/fuzz.sh fuzz-json ...   only these
# Seeds live in Fuzz/corpus/<name>; new inputs found go to Fuzz/.work/<name> (not committed);
# a crash is written to Fuzz/crashes/ and fails the run. Prints the executions per target.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
build=Fuzz/.build
flags=(--package-path Fuzz --build-path "$build" --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address)
swift build "${flags[@]}" 2>&1 \
  | grep -v -e '^\[' -e 'Cannot export local symbol' -e '^Building for' || true
bin="$(swift build "${flags[@]}" --show-bin-path)"
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
  # SWIFT_BACKTRACE=enable=no: a Swift trap goes to libFuzzer's own crash report (the Swift
  # backtracer's memory reads trip AddressSanitizer and bury the real message).
  if SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 "$bin/$t" "$work" "Fuzz/corpus/$name" -max_total_time="$seconds" \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="Fuzz/crashes/$name-" >"$log" 2>&1; then
    result=ok
  else
    result="CRASH (see Fuzz/crashes/ and $log)"
    failed=1
  fi
  # A target whose libraries carry no coverage counters fuzzes blind: refuse to call that a pass.
  counters="$(grep -o '([0-9]* inline 8-bit counters)' "$log" | grep -o '[0-9]*' | paste -sd+ | bc || echo 0)"
  if [ "$result" = ok ] && [ "${counters:-0}" -lt 1000 ]; then
    result="NOT INSTRUMENTED (${counters:-0} coverage counters; see $log)"
    failed=1
  fi
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
  rate="$(( runs / (seconds > 0 ? seconds : 1) ))"
  printf '%-24s %12s %10s %s\n' "$t" "$runs" "$rate" "$result"
  [ "$result" = ok ] && rm -f "$log"
done
exit $failed
