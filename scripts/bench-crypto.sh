#!/usr/bin/env bash
# Measures the HeraldCrypto Web Push pipeline against OpenSSL's own P-256 ECDH rate, in one run.
#
# Usage: scripts/bench-crypto.sh [seconds-per-measurement] [rounds]     (defaults: 5 and 3)
#
# Each round runs `openssl speed -seconds N ecdhp256`, then the C EVP floor of the same pipeline
# (scripts/bench/webpush_evp_floor.c: what the OpenSSL 3 EVP API allows a C program, every reusable context
# reused), then the Herald bench, each for N seconds, so all three see the same machine state. With several rounds the best figure of each is used for the ratio (on a shared machine the
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

FLOOR_BIN="$(mktemp /tmp/webpush_evp_floor.XXXXXX)"
trap 'rm -f "${FLOOR_BIN}"' EXIT
gcc -O2 -o "${FLOOR_BIN}" scripts/bench/webpush_evp_floor.c -lcrypto

BEST_OPENSSL=0
BEST_FLOOR=0
BEST_HERALD=0
for round in $(seq 1 "${ROUNDS}"); do
    echo "## Round ${round}/${ROUNDS}"
    echo "### openssl speed -seconds ${SECS} ecdhp256"
    OPENSSL_OUT="$(openssl speed -seconds "${SECS}" ecdhp256 2>/dev/null)"
    echo "${OPENSSL_OUT}" | grep -E 'op/s|nistp256'
    # Result line: " 256 bits ecdh (nistp256)   0.0001s  17000.0"
    OPS="$(echo "${OPENSSL_OUT}" | awk '/ecdh \(nistp256\)/ {v=$NF} END {print v}')"
    echo
    echo "### C EVP floor: webpush_evp_floor ${SECS}"
    FLOOR_OUT="$("${FLOOR_BIN}" "${SECS}")"
    echo "${FLOOR_OUT}"
    FLOOR_RATE="$(echo "${FLOOR_OUT}" | sed -n 's/.*"per_second":\([0-9]*\).*/\1/p')"
    echo
    echo "### herald-bench crypto ${SECS}"
    HERALD_OUT="$("${BIN}" crypto "${SECS}")"
    echo "${HERALD_OUT}"
    # Table row: "| P-256 keygen ... | messages | seconds | messages/s | µs/message |"
    RATE="$(echo "${HERALD_OUT}" | awk -F'|' '/P-256 keygen/ {gsub(/ /, "", $5); print $5}' | tail -n 1)"
    echo
    BEST_OPENSSL="$(awk -v a="${BEST_OPENSSL}" -v b="${OPS:-0}" 'BEGIN { print (b > a) ? b : a }')"
    BEST_FLOOR="$(awk -v a="${BEST_FLOOR}" -v b="${FLOOR_RATE:-0}" 'BEGIN { print (b > a) ? b : a }')"
    BEST_HERALD="$(awk -v a="${BEST_HERALD}" -v b="${RATE:-0}" 'BEGIN { print (b > a) ? b : a }')"
done

echo "load after: $(uptime)"
awk -v h="${BEST_HERALD}" -v o="${BEST_OPENSSL}" -v f="${BEST_FLOOR}" 'BEGIN {
    printf "\n## Summary (best of rounds)\n\n| measurement | rate | of the ECDH bound |\n|---|---:|---:|\n"
    printf "| openssl speed ecdhp256 (ECDH-bound reference) | %.0f ops/s | 100%% |\n", o
    if (o > 0) printf "| C EVP floor of the pipeline | %.0f messages/s | %.1f%% |\n", f, 100 * f / o
    if (o > 0) printf "| Herald Web Push pipeline (target >= 70%%) | %.0f messages/s | %.1f%% |\n", h, 100 * h / o
    if (f > 0) printf "| Herald / C EVP floor | | %.1f%% |\n", 100 * h / f
}'
