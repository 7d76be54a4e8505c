#!/usr/bin/env bash
# Measures the HeraldCrypto Web Push pipeline against OpenSSL's own P-256 ECDH rate, in one run.
#
# Usage: scripts/bench-crypto.sh [seconds-per-measurement] [rounds]     (defaults: 5 and 3)
#
# Each round runs `openssl speed -seconds N ecdhp256` and then the Herald bench for N seconds, so both see the
# same machine state. With several rounds the best figure of each is used for the ratio (on a shared machine the
# best run is the one least disturbed by other processes). The ECDH-bound reference for messages/s is the openssl
# ecdhp256 ops/s: every Web Push message needs one ECDH, so that rate is the ceiling.
#
# herald-bench must call CryptoBench.run when given the argument `crypto` (see Sources/HeraldBench/CryptoBench.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-5}"
ROUNDS="${2:-3}"

echo "## Machine"
echo "nproc: $(nproc)"
lscpu | grep 'Model name' || true
openssl version
echo "load before: $(uptime)"
echo

echo "## Build: swift build -c release --product herald-bench"
swift build -c release --product herald-bench 2>&1 | tail -n 1
BIN="$(swift build -c release --show-bin-path)/herald-bench"
echo

BEST_OPENSSL=0
BEST_HERALD=0
for round in $(seq 1 "${ROUNDS}"); do
    echo "## Round ${round}/${ROUNDS}"
    echo "### openssl speed -seconds ${SECS} ecdhp256"
    OPENSSL_OUT="$(openssl speed -seconds "${SECS}" ecdhp256 2>/dev/null)"
    echo "${OPENSSL_OUT}" | grep -E 'op/s|nistp256'
    # Result line: " 256 bits ecdh (nistp256)   0.0001s  17000.0"
    OPS="$(echo "${OPENSSL_OUT}" | awk '/ecdh \(nistp256\)/ {v=$NF} END {print v}')"
    echo
    echo "### herald-bench crypto ${SECS}"
    HERALD_OUT="$("${BIN}" crypto "${SECS}")"
    echo "${HERALD_OUT}"
    # Table row: "| P-256 keygen ... | messages | seconds | messages/s | µs/message |"
    RATE="$(echo "${HERALD_OUT}" | awk -F'|' '/P-256 keygen/ {gsub(/ /, "", $5); print $5}' | tail -n 1)"
    echo
    BEST_OPENSSL="$(awk -v a="${BEST_OPENSSL}" -v b="${OPS:-0}" 'BEGIN { print (b > a) ? b : a }')"
    BEST_HERALD="$(awk -v a="${BEST_HERALD}" -v b="${RATE:-0}" 'BEGIN { print (b > a) ? b : a }')"
done

echo "load after: $(uptime)"
awk -v h="${BEST_HERALD}" -v o="${BEST_OPENSSL}" 'BEGIN {
    printf "\n## Summary (best of rounds)\n\n| measurement | rate |\n|---|---:|\n"
    printf "| openssl speed ecdhp256 (ECDH-bound reference) | %.0f ops/s |\n", o
    printf "| Herald Web Push pipeline | %.0f messages/s |\n", h
    if (o > 0) printf "| ratio (target >= 70%%) | %.1f%% |\n", 100 * h / o
}'
