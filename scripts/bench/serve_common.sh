# Shared by scripts/bench/serve.sh and scripts/bench/local.sh (sourced, not run): a work dir whose
# processes stop and which is removed on exit, a release `herald`, and an API token.
#
#   serve_bench_start DIR NAME  work=DIR/herald-bench-NAME.*; pids=() are sent SIGTERM on exit
#   serve_bench_herald          herald: $HERALD_BIN, else a static release build
#   serve_bench_token           token: a fresh bearer token; hash: its SHA-256 for server.tokens

serve_bench_start() {
  work=$(mktemp -d "$1/herald-bench-$2.XXXXXX")
  pids=()
  trap serve_bench_cleanup EXIT
  ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
}

serve_bench_cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}

serve_bench_herald() {
  if [ -n "${HERALD_BIN:-}" ]; then
    herald=$HERALD_BIN
  else
    swift build -c release --static-swift-stdlib --product herald >/dev/null
    herald=$root/.build/release/herald
  fi
}

serve_bench_token() {
  token="hrd_bench-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  hash=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
}
