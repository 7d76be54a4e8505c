#!/usr/bin/env bash
# Installs what Herald needs on a fresh Debian machine: the C libraries' -dev packages (apt-get)
# and the Python test helpers (pip). Idempotent: does nothing when everything is present.
set -euo pipefail

apt_packages=(pkg-config libssl-dev libcurl4-openssl-dev libsqlite3-dev libyaml-dev libsodium-dev
  nginx-light nghttp2-client openssl curl nodejs libmicrohttpd-dev libpq-dev postgresql chromium wrk node-typescript)
pip_packages=(h2 pyjwt cryptography http_ece pynacl prometheus_client websocket-client)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

py_missing=()
for p in "${pip_packages[@]}"; do
  mod="$p"; [ "$p" = pyjwt ] && mod=jwt; [ "$p" = pynacl ] && mod=nacl; [ "$p" = websocket-client ] && mod=websocket
  python3 -c "import ${mod}" 2>/dev/null || py_missing+=("$p")
done
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "install-deps: pip install ${py_missing[*]}" >&2
  python3 -m pip install -q --disable-pip-version-check "${py_missing[@]}" 2>&1 | grep -v 'Running pip as the' >&2 || true
fi
