#!/usr/bin/env bash
# Issue 18 benchmarks: drain throughput on PostgreSQL (1, 2, 4 workers) beside SQLite (1 worker), the
# pgbench floor for the same claim + complete SQL, and persisting a 10,000-device notification.
#
#   scripts/bench/pg.sh                       # full run (BENCH_PG_DELIVERIES=20000 by default)
#   BENCH_PG_DELIVERIES=200 BENCH_PG_WORKERS="1 2" scripts/bench/pg.sh    # smoke check
#
# Prints one JSON line per measurement. A drain line gives Herald's wall-clock rate (`per_s`: N over
# the time from starting the workers to the last one exiting, process start included) and its
# `steady_per_s` (see steady() below); a floor line gives pgbench's own rate (`per_s`: its tps × the
# batch, connection time left out), its wall-clock rate and the same `steady_per_s`. Everything (PostgreSQL data directory, socket, SQLite file,
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

# The steady rate of a drain, read from the event log the same way for Herald and the floor: the
# deliveries recorded after the first record's millisecond, over the time from it to the last
# record. A worker's process start and a pgbench client's connection set-up both fall before the
# first record, so neither side is charged for them (pgbench's own tps also leaves its connection
# time out). Each side stamps its event-log rows with the time of its record: Herald with the
# record's `now`, the floor with the server's clock.
steady() { # $1 = database
    psql_ -d "$1" -At -F ' ' -c "SELECT count(*) FILTER (WHERE created_at > t.first), t.last - t.first
        FROM event_log, (SELECT min(created_at) AS first, max(created_at) AS last FROM event_log) t
        GROUP BY t.first, t.last" | awk '{ printf "%d", ($2 > 0 ? $1 * 1000 / $2 : 0) }'
}

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
    echo "{\"bench\":\"drain\",\"store\":\"postgres\",\"workers\":$1,\"deliveries\":$done_,\"ms\":$ms,\"per_s\":$((done_ * 1000 / (ms > 0 ? ms : 1))),\"steady_per_s\":$(steady "$db")}"
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

# The floor: Herald's own claim and record statements (PostgresStore.claimPendingBatch and .record,
# with the same planner settings, given to pgbench's sessions by PGOPTIONS), run by pgbench in
# prepared mode: the claim returns its ids (\gset), and the record is one pipeline (one round trip, one implicit transaction):
# rows locked in id order, the state update from unnest with the attempts rows taken from its
# RETURNING, the event-log lock and the event-log rows with their JSON built by the server from the
# updated rows.
floor() { # $1 = clients
    local db="floor$1"
    psql_ -d postgres -c "CREATE DATABASE $db"
    config "{ url: \"postgresql://herald@127.0.0.1:$PORT/$db\" }" >"$DIR/$db.yaml"
    HERALD_HOME=$DIR "$HERALD" devices list -c "$DIR/$db.yaml" >/dev/null
    fill_pg "$db"
    cat >"$DIR/floor.sql" <<SQL
\\set stamp random(1, 9000000000000000)
WITH c AS (
  UPDATE deliveries d SET lease_owner = 'b' || :client_id, lease_until = 9999999999999
  FROM (SELECT p.id FROM deliveries p
        WHERE p.state = 'pending' AND (p.lease_owner IS NULL OR p.lease_until < 1)
          AND (p.step = 0 OR NOT EXISTS (
            SELECT 1 FROM deliveries e WHERE e.notification_id = p.notification_id
              AND e.state = 'pending' AND e.step < p.step))
        ORDER BY p.id LIMIT $BATCH FOR UPDATE OF p SKIP LOCKED) c, notifications n
  WHERE d.id = c.id AND n.id = d.notification_id
  RETURNING d.*, n.body AS n_body, n.steps AS n_steps, n.created_at AS n_created_at)
SELECT coalesce(string_agg(id, ','), '') AS ids, max(n_body) AS b FROM c
\\gset
\\startpipeline
SELECT 1 FROM deliveries WHERE id = ANY(string_to_array(:ids, ',')) ORDER BY id FOR UPDATE;
WITH u AS (
  UPDATE deliveries d SET state = 'delivered', attempts = 1, next_attempt_at = NULL, status = NULL, reason = NULL,
    provider_id = d.provider_id, details = d.details, lease_owner = NULL, lease_until = NULL, updated_at = 1
  FROM unnest(string_to_array(:ids, ',')) AS x(id) WHERE d.id = x.id
  RETURNING d.id, d.attempts, d.state, d.status, d.reason)
INSERT INTO attempts(delivery_id, attempt, at, outcome, status, reason)
SELECT u.id, u.attempts, :stamp, u.state, u.status, u.reason FROM u
ON CONFLICT(delivery_id, attempt) DO UPDATE SET at = excluded.at, outcome = excluded.outcome,
  status = excluded.status, reason = excluded.reason;
SELECT pg_advisory_xact_lock(1213352004);
INSERT INTO event_log(sequence, namespace, kind, notification_id, data, created_at)
SELECT nextval('event_log_sequence'), n.namespace, 'delivery', d.notification_id,
  json_strip_nulls(json_build_object('notificationId', d.notification_id, 'channel', d.channel,
    'outcome', d.state, 'attempt', d.attempts, 'deviceId', d.device_id, 'reason', d.reason))::text,
  (extract(epoch FROM clock_timestamp()) * 1000)::bigint
FROM unnest(string_to_array(:ids, ',')) WITH ORDINALITY AS x(id, o)
JOIN deliveries d ON d.id = x.id JOIN notifications n ON n.id = d.notification_id
ORDER BY x.o;
\\endpipeline
SQL
    local tx=$(((N + BATCH * $1 - 1) / (BATCH * $1)))
    local out tps t0 ms
    t0=$(now_ms)
    out=$(PGOPTIONS="-c enable_seqscan=off -c enable_bitmapscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c enable_sort=off -c plan_cache_mode=force_generic_plan" \
        pgbench -n -M prepared -h 127.0.0.1 -p "$PORT" -U herald -c "$1" -j "$1" -t "$tx" -f "$DIR/floor.sql" "$db" 2>&1)
    ms=$(($(now_ms) - t0))
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
    local done_
    done_=$(psql_ -d "$db" -At -c "SELECT count(*) FROM deliveries WHERE state = 'delivered'")
    [[ $done_ == "$N" ]] || { echo "the floor delivered $done_ of $N: $out" >&2; exit 1; }
    echo "{\"bench\":\"floor\",\"store\":\"postgres\",\"clients\":$1,\"batch\":$BATCH,\"delivered\":$done_,\"tps\":${tps:-0},\"per_s\":$(python3 -c "print(int(float('${tps:-0}') * $BATCH))"),\"ms\":$ms,\"wall_per_s\":$((done_ * 1000 / (ms > 0 ? ms : 1))),\"steady_per_s\":$(steady "$db")}"
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
