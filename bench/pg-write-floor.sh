#!/usr/bin/env bash
# What PostgreSQL's writes of a push cost at the least (issue 48): a fan-out's per-push writes
# alone, on tables made like a day's partitions from the gateway's own schema (deliveries at
# fillfactor 50 with their primary key, by-user and queue indexes; device_pushes at fillfactor
# 90), in batches of BATCH rows a statement and a transaction, as the engine writes them. Per row: the backend's CPU (its /proc stat) and
# the WAL (pg_stat_wal, read from another session once its counters are flushed).
# Each write is named after its table:
#   queued          the delivery's update as the engine makes it: state, attempts, updated_at,
#                   and next_attempt_at cleared — it leaves the queue index, so it is never HOT;
#   apart           the same update on a table without the queue index, next_attempt_at
#                   untouched — what a queue kept apart from the history would leave;
#   pushes          the device's push row inserted;
#   carrying        the outcome's update with the device's outcome on the delivery row (its
#                   device, masked token, service id, sent_at) and no device row: what a delivery
#                   to a user's one device would cost if its device outcome lived on the delivery;
#   carrying_apart  the same without the queue index: both storage changes together. The
#                   carrying tables are made at fillfactor 35: at 50 the wider new version found
#                   no room on its page for 40% of the rows, so they were not HOT;
#   batched         one row a batch inserted, the batch's outcomes in arrays (positions, states,
#                   device rows, service ids), and nothing written to the deliveries: what fewer
#                   rows a delivery would cost at the least (a batch of BATCH).
# Nothing of the gateway runs: this is the floor the engine's statements add their joins, leases
# and round trips to. Prints a Markdown table. Stops the cluster it starts.
# usage: bench/pg-write-floor.sh [ROWS] [BATCH] [ROUNDS]   (default 100000 100 2)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
rows="${1:-100000}"
batch="${2:-100}"
rounds="${3:-2}"
work=/tmp/pigeon-pg-write-floor
rm -rf "$work" && mkdir -p "$work"

bench_begin floor 55437 pigeon_write_floor
psql_floor() { psql -X -q -t -A -h 127.0.0.1 -p "$BENCH_PORT" -U postgres "$BENCH_DB" "$@"; }

# The tables are made from the gateway's own schema (its migrations applied), so the floor follows
# it: a day's partitions of deliveries and device_pushes, with their fillfactors
# (pigeon_create_days), indexes and checks.
bench_build pigeon
printf 'dbUrl = jdbc:postgresql://127.0.0.1:%s/%s\ndbUsername = postgres\n' "$BENCH_PORT" "$BENCH_DB" > "$work/pigeon.conf"
.build/release/pigeon migrate --config "$work/pigeon.conf" > "$work/migrate.log" 2>&1 || { cat "$work/migrate.log"; exit 1; }

# Each write is named after the table it writes.
writes=(queued apart pushes carrying carrying_apart batched)
cat > "$work/setup.sql" <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS $(IFS=,; echo "${writes[*]}");
CREATE TABLE queued (LIKE deliveries INCLUDING ALL) WITH (fillfactor = 50);
CREATE TABLE pushes (LIKE device_pushes INCLUDING ALL) WITH (fillfactor = 90);
-- The delivery rows with room for one device's outcome.
CREATE TABLE carrying (LIKE queued INCLUDING ALL) WITH (fillfactor = 35);
ALTER TABLE carrying ADD COLUMN device_row_id bigint, ADD COLUMN device_id text, ADD COLUMN platform text,
    ADD COLUMN app_id text, ADD COLUMN token_masked text, ADD COLUMN service_id text, ADD COLUMN sent_at timestamptz;
-- A batch's outcomes in one row, keyed like a claim's lease (the notification, the first position).
CREATE TABLE batched (notification_key bigint NOT NULL, first_position integer NOT NULL, positions integer[] NOT NULL,
    states smallint[] NOT NULL, device_row_ids bigint[] NOT NULL, service_ids text[] NOT NULL, sent_at timestamptz NOT NULL,
    PRIMARY KEY (notification_key, first_position));
-- Both without the queue index: what a queue kept apart from the history would leave.
CREATE TABLE apart (LIKE queued INCLUDING ALL) WITH (fillfactor = 50);
CREATE TABLE carrying_apart (LIKE carrying INCLUDING ALL) WITH (fillfactor = 35);
DO \$\$
DECLARE queue_index text;
BEGIN
    FOR queue_index IN SELECT indexname FROM pg_indexes
                       WHERE tablename IN ('apart', 'carrying_apart') AND indexdef LIKE '%next_attempt_at%' LOOP
        EXECUTE format('DROP INDEX %I', queue_index);
    END LOOP;
END
\$\$;
INSERT INTO queued (notification_key, position, user_id, user_folded, state, expires_at, next_attempt_at)
SELECT 1000, g, 'user-' || g, 'user-' || g, 'QUEUED', now() + interval '1 day', now() FROM generate_series(1, $rows) g;
INSERT INTO apart SELECT * FROM queued;
INSERT INTO carrying SELECT * FROM queued;
INSERT INTO carrying_apart SELECT * FROM queued;
VACUUM ANALYZE queued; VACUUM ANALYZE apart; VACUUM ANALYZE carrying; VACUUM ANALYZE carrying_apart;
CHECKPOINT;
SQL

# write_script TABLE: the statements of TABLE's write, between two reads of the backend's CPU.
write_script() {
    local table="$1" start end set
    {
        echo "SELECT pg_backend_pid() AS pid \\gset"
        echo "\\setenv PID :pid"
        echo "\\! cat /proc/\$PID/stat > $work/$table.before"
        for ((start = 1; start <= rows; start += batch)); do
            end=$((start + batch - 1 < rows ? start + batch - 1 : rows))
            if [ "$table" = pushes ]; then
                echo "INSERT INTO pushes (notification_key, position, device_row_id, device_id, platform, app_id, token_masked," \
                     "state, service_id, sent_at, updated_at) SELECT 1000, g, g, 'device-' || g, 'ios', 'default'," \
                     "'a1b2c3d4e5f6…9f8e7d6c', 'SENT', md5(g::text), now(), now() FROM generate_series($start, $end) g;"
                continue
            fi
            if [ "$table" = batched ]; then
                echo "INSERT INTO batched SELECT 1000, $start, array_agg(g ORDER BY g), array_agg(1::smallint ORDER BY g)," \
                     "array_agg(g::bigint ORDER BY g), array_agg(md5(g::text) ORDER BY g), now() FROM generate_series($start, $end) g;"
                continue
            fi
            # The outcome as the engine writes it; where the queue index is kept, it leaves it.
            set="state = 'SENT', attempts = d.attempts + 1, updated_at = now()"
            case "$table" in queued|carrying) set="$set, next_attempt_at = NULL" ;; esac
            case "$table" in carrying*)
                set="$set, device_row_id = v.position, device_id = 'device-' || v.position, platform = 'ios', app_id = 'default'"
                set="$set, token_masked = 'a1b2c3d4e5f6…9f8e7d6c', service_id = md5(v.position::text), sent_at = now()" ;;
            esac
            echo "UPDATE $table d SET $set FROM generate_series($start, $end) AS v(position)" \
                 "WHERE d.notification_key = 1000 AND d.user_folded = 'user-' || v.position AND d.position = v.position;"
        done
        echo "\\! cat /proc/\$PID/stat > $work/$table.after"
    } > "$work/$table.sql"
}
for table in "${writes[@]}"; do write_script "$table"; done

wal() { sleep 1.5; psql_floor -c "SELECT wal_records || ' ' || wal_bytes FROM pg_stat_wal"; }
echo
echo "| round | write | backend CPU µs a row | WAL records a row | WAL bytes a row | HOT updates |"
echo "|---:|---|---:|---:|---:|---:|"
for ((round = 1; round <= rounds; round++)); do
    psql_floor -f "$work/setup.sql" > /dev/null
    for table in "${writes[@]}"; do
        before=$(wal)
        psql_floor -f "$work/$table.sql" > /dev/null
        after=$(wal)
        hot=$(psql_floor -c "SELECT n_tup_hot_upd || ' of ' || n_tup_upd FROM pg_stat_user_tables WHERE relname = '$table'")
        python3 - "$work/$table.before" "$work/$table.after" "$before" "$after" "$rows" "$round" "$table" "$hot" <<'PY'
import os, sys
before, after = (open(path).read().rsplit(")", 1)[1].split() for path in sys.argv[1:3])
ticks = os.sysconf("SC_CLK_TCK")
# utime and stime: fields 14 and 15 of /proc/PID/stat, 12 and 13 after the command's ")".
cpu = (int(after[11]) + int(after[12]) - int(before[11]) - int(before[12])) / ticks
w0, w1 = (list(map(int, value.split())) for value in sys.argv[3:5])
rows = int(sys.argv[5])
label = {"queued": "outcome (leaves the queue index)", "apart": "outcome HOT (queue apart)", "pushes": "device row",
         "carrying": "outcome carrying the device's, no device row", "carrying_apart": "the same, HOT (both changes)",
         "batched": "a batch's outcomes in one row"}[sys.argv[7]]
hot = sys.argv[8] if sys.argv[7] not in ("pushes", "batched") else "—"
print(f"| {sys.argv[6]} | {label} | {cpu * 1e6 / rows:.1f} | {(w1[0] - w0[0]) / rows:.2f} | {(w1[1] - w0[1]) / rows:.0f} | {hot} |")
PY
    done
done
