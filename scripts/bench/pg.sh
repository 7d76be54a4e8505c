#!/usr/bin/env bash
# Issue 18 benchmarks: drain throughput on PostgreSQL (1, 2, 4 workers) beside SQLite (1 worker), the
# pgbench floor for the same claim + complete SQL, and persisting a 10,000-device notification.
#
#   scripts/bench/pg.sh                       # full run (BENCH_PG_DELIVERIES=20000 by default)
#   BENCH_PG_DELIVERIES=200 BENCH_PG_WORKERS="1 2" scripts/bench/pg.sh    # smoke check
#
# Prints one JSON line per measurement. Everything (PostgreSQL data directory, socket, SQLite file,
# configs) lives in one temp dir removed at exit. As root, PostgreSQL runs as the `postgres` user.
set -euo pipefail

N=${BENCH_PG_DELIVERIES:-20000}
WORKERS=${BENCH_PG_WORKERS:-"1 2 4"}
FANOUT=${BENCH_PG_FANOUT:-10000} # devices of the persisted notification
BATCH=125 # the executor's chunk: one claim/complete batch
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERALD=${HERALD:-$ROOT/.build/release/herald}
BENCH=${HERALD_BENCH:-$ROOT/.build/release/herald-bench}
[[ -x $HERALD ]] || { echo "build first: swift build -c release" >&2; exit 1; }
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x ${BIN:-}/postgres ]] || { echo "PostgreSQL not installed (make deps)" >&2; exit 1; }

DIR=$(mktemp -d /tmp/herald-bench-pg.XXXXXX)
chmod 755 "$DIR"
RUNAS=()
if [[ $(id -u) == 0 ]]; then RUNAS=(runuser -u postgres --); chown postgres: "$DIR"; fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PGPID=
cleanup() {
    # As root PGPID is runuser, which does not pass signals on: stop the server itself.
    [[ -n $PGPID ]] && { "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" stop -m fast -s || kill -INT "$PGPID"; } 2>/dev/null &&
        wait "$PGPID" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
"${RUNAS[@]}" "$BIN/initdb" -D "$DIR/data" -U herald --auth=trust -E UTF8 --locale=C --no-sync >/dev/null
"${RUNAS[@]}" "$BIN/postgres" -D "$DIR/data" -p "$PORT" -k "$DIR" -c listen_addresses=127.0.0.1 \
    -c max_connections=200 -c shared_buffers=256MB >"$DIR/pg.log" 2>&1 &
PGPID=$!
for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p "$PORT" && break; sleep 0.1; done
psql_() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U herald "$@"; }

config() { # $1 = store block
    cat <<YAML
version: 1
store: $1
channels:
  sink: { type: log, path: /dev/null }
routes:
  default:
    - deliver: [sink]
YAML
}

# N notifications with one pending sink delivery each, written straight into the outbox (what an
# accepting `serve` leaves for the workers).
fill_pg() {
    psql_ -d "$1" <<SQL
INSERT INTO notifications(id, namespace, type, body, steps, created_at)
SELECT 'n' || i, 'default', 'generic', '{"id":"n' || i || '","title":"t"}', '[{"mode":"all"}]', 0
FROM generate_series(1, $N) i;
INSERT INTO deliveries(id, notification_id, step, position, channel, state, updated_at)
SELECT 'd' || i, 'n' || i, 0, 0, 'sink', 'pending', 0 FROM generate_series(1, $N) i;
SQL
}

now_ms() { date +%s%3N; }

drain_pg() { # $1 = workers
    local db="drain$1"
    psql_ -d postgres -c "CREATE DATABASE $db"
    local url="postgresql://herald@127.0.0.1:$PORT/$db"
    config "{ url: \"$url\" }" >"$DIR/$db.yaml"
    HERALD_HOME=$DIR "$HERALD" devices list -c "$DIR/$db.yaml" >/dev/null # creates the schema
    fill_pg "$db"
    local t0 pids=() w
    t0=$(now_ms)
    for w in $(seq "$1"); do
        HERALD_HOME=$DIR "$HERALD" drain --until-empty --timeout 600 -c "$DIR/$db.yaml" >/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
    local ms=$(($(now_ms) - t0))
    local done_
    done_=$(psql_ -d "$db" -At -c "SELECT count(*) FROM deliveries WHERE state = 'delivered'")
    echo "{\"bench\":\"drain\",\"store\":\"postgres\",\"workers\":$1,\"deliveries\":$done_,\"ms\":$ms,\"per_s\":$((done_ * 1000 / (ms > 0 ? ms : 1)))}"
}

drain_sqlite() {
    local db="$DIR/drain.db"
    config "{ path: $db }" >"$DIR/sqlite.yaml"
    HERALD_HOME=$DIR "$HERALD" devices list -c "$DIR/sqlite.yaml" >/dev/null
    sqlite3 "$db" <<SQL
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $N)
INSERT INTO notifications(id, namespace, type, body, steps, created_at)
SELECT 'n' || i, 'default', 'generic', '{"id":"n' || i || '","title":"t"}', '[{"mode":"all"}]', 0 FROM s;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $N)
INSERT INTO deliveries(id, notification_id, step, position, channel, state, updated_at)
SELECT 'd' || i, 'n' || i, 0, 0, 'sink', 'pending', 0 FROM s;
SQL
    local t0
    t0=$(now_ms)
    HERALD_HOME=$DIR "$HERALD" drain --until-empty --timeout 600 -c "$DIR/sqlite.yaml" >/dev/null
    local ms=$(($(now_ms) - t0))
    local done_
    done_=$(sqlite3 "$db" "SELECT count(*) FROM deliveries WHERE state = 'delivered'")
    echo "{\"bench\":\"drain\",\"store\":\"sqlite\",\"workers\":1,\"deliveries\":$done_,\"ms\":$ms,\"per_s\":$((done_ * 1000 / (ms > 0 ? ms : 1)))}"
}

# The floor: the same claim (SKIP LOCKED, a batch of 125, under a lease) and the same batched
# completion (state + attempts row + event-log row under the event-log lock), run by pgbench.
floor() { # $1 = clients
    local db="floor$1"
    psql_ -d postgres -c "CREATE DATABASE $db"
    config "{ url: \"postgresql://herald@127.0.0.1:$PORT/$db\" }" >"$DIR/$db.yaml"
    HERALD_HOME=$DIR "$HERALD" devices list -c "$DIR/$db.yaml" >/dev/null
    fill_pg "$db"
    cat >"$DIR/floor.sql" <<'SQL'
\set stamp random(1, 9000000000000000)
BEGIN;
UPDATE deliveries d SET lease_owner = 'b' || :client_id, lease_until = 9999999999999
FROM (SELECT id FROM deliveries WHERE state = 'pending' AND lease_owner IS NULL
      ORDER BY id LIMIT 125 FOR UPDATE SKIP LOCKED) c WHERE d.id = c.id;
COMMIT;
BEGIN;
SELECT 1 FROM deliveries WHERE lease_owner = 'b' || :client_id ORDER BY id FOR UPDATE;
WITH done AS (
  UPDATE deliveries SET state = 'delivered', attempts = 1, lease_owner = NULL, lease_until = NULL, updated_at = 1
  WHERE lease_owner = 'b' || :client_id AND state = 'pending' RETURNING id)
INSERT INTO attempts(delivery_id, attempt, at, outcome) SELECT id, 1, :stamp, 'delivered' FROM done;
SELECT pg_advisory_xact_lock(1213352004);
INSERT INTO event_log(sequence, namespace, kind, notification_id, data, created_at)
SELECT nextval('event_log_sequence'), 'default', 'delivery', d.notification_id, '{}', 1
FROM attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE a.at = :stamp;
COMMIT;
SQL
    local tx=$(((N + BATCH * $1 - 1) / (BATCH * $1)))
    local out tps
    out=$(pgbench -n -h 127.0.0.1 -p "$PORT" -U herald -c "$1" -j "$1" -t "$tx" -f "$DIR/floor.sql" "$db" 2>&1)
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
    echo "{\"bench\":\"floor\",\"store\":\"postgres\",\"clients\":$1,\"batch\":$BATCH,\"tps\":${tps:-0},\"per_s\":$(python3 -c "print(int(float('${tps:-0}') * $BATCH))")}"
}

drain_sqlite
for w in $WORKERS; do
    drain_pg "$w"
    floor "$w"
done
if [[ -x $BENCH ]]; then
    "$BENCH" router-store "$FANOUT" 3
    "$BENCH" router-store "$FANOUT" 3 "postgresql://herald@127.0.0.1:$PORT/postgres"
fi
