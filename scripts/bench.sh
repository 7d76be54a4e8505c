#!/usr/bin/env bash
# Runs every benchmark beside its reference, in one go; figures go into BENCHMARKS.md by hand.
#   scripts/bench.sh            # all
#   scripts/bench.sh router     # one group: crypto | http | router | apns | fcm | webpush
set -euo pipefail
cd "$(dirname "$0")/.."
groups=${1:-"crypto http router apns fcm webpush"}
swift build -c release --product herald-bench >/dev/null
for g in $groups; do
  echo "################ $g"
  case "$g" in
    crypto) scripts/bench-crypto.sh 5 3 ;;
    http) scripts/bench-http.sh ;;
    router)
      echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
      for i in 1 2 3; do .build/release/herald-bench router-fanout 10000; done
      for i in 1 2 3; do .build/release/herald-bench router-drain 10000; done ;;
    apns) scripts/bench-apns.sh ;;
    fcm) scripts/bench-fcm.sh ;;
    webpush) scripts/bench-webpush.sh ;;
  esac
done
