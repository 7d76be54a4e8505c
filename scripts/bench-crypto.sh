#!/usr/bin/env bash
# Measures the HeraldCrypto Web Push pipeline against OpenSSL's own P-256 ECDH rate, in one run.
# Usage: scripts/bench-crypto.sh [seconds]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN="${1:-5}"

echo "## Machine"
echo "nproc: $(nproc)"
lscpu | grep 'Model name' || true
openssl version
echo

echo "## Build"
swift build -c release --product herald-bench
BIN="$(swift build -c release --show-bin-path)/herald-bench"
echo

echo "## openssl speed -seconds ${SECONDS_PER_RUN} ecdhp256"
OPENSSL_OUT="$(openssl speed -seconds "${SECONDS_PER_RUN}" ecdhp256 2>&1)"
echo "${OPENSSL_OUT}" | tail -n 3
# Last line looks like: " 256 bits ecdh (nistp256)   0.0001s  17000.0"
OPENSSL_OPS="$(echo "${OPENSSL_OUT}" | awk '/ecdh \(nistp256\)/ {v=$NF} END {print v}')"
echo
echo "openssl ecdhp256 ops/s (ECDH-bound reference): ${OPENSSL_OPS}"
echo

echo "## herald-bench (CryptoBench.run(seconds: ${SECONDS_PER_RUN}))"
HERALD_BENCH_CRYPTO_SECONDS="${SECONDS_PER_RUN}" "${BIN}" crypto "${SECONDS_PER_RUN}" | tee /tmp/herald-crypto-bench.$$
HERALD_RATE="$(grep -Eo '\| [0-9]+ \| [0-9.]+ \|$' /tmp/herald-crypto-bench.$$ | awk '{print $2}' | tail -n 1 || true)"
rm -f /tmp/herald-crypto-bench.$$
if [[ -n "${HERALD_RATE}" && -n "${OPENSSL_OPS}" ]]; then
    awk -v h="${HERALD_RATE}" -v o="${OPENSSL_OPS}" \
        'BEGIN { printf "\nHerald pipeline: %.0f msg/s = %.1f%% of openssl ecdhp256 (%.0f ops/s); target >= 70%%\n", h, 100*h/o, o }'
fi
