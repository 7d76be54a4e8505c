#!/usr/bin/env bash
# Herald's main job on the embedded default: SQLite in a local HERALD_HOME and
# config/herald.example.yaml. Validates the config, registers a device, explains and sends a
# notification (the log sink prints it), then shows the history.
set -euo pipefail
cd "$(dirname "$0")/.."
export HERALD_HOME="${HERALD_HOME:-$PWD/.herald-demo}"
swift build --product herald >/dev/null
herald=".build/debug/herald"
config="config/herald.example.yaml"

echo "== validate"; $herald validate -c "$config"
echo "== explain"; $herald explain -c "$config" --namespace default --type ready --severity warning
echo "== send"
$herald send -c "$config" --json '{"type":"ready","title":"Build finished","body":"All 112 tests passed","severity":"success","data":{"sessionId":"5f0c","sessionName":"claude - herald"}}'
echo "== history"; $herald history -c "$config" --limit 3
echo "(state kept in $HERALD_HOME)"
