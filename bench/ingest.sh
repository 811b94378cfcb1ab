#!/usr/bin/env bash
# Ingest benchmark (issues: gateway core, one-time codes first). sendNotification with 1 and 100
# recipients at 1, 16 and 64 keep-alive clients (closed loop), then 1,000 requests/s open loop —
# first as a user runs it, the engine delivering every send (half the users have an iPhone or an
# Android phone, pushed over HTTP/2 + TLS to bench/answerer/push-answerer), then with the engine
# idle (no push service configured) as a second table. In the same run the ceiling: pgbench, one
# INSERT per transaction, same client counts, same PostgreSQL (durable: fsync and
# synchronous_commit on). Prints Markdown tables. Stops everything it starts.
# usage: bench/ingest.sh [SECONDS_PER_POINT]   (default 10)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
seconds="${1:-10}"
PORT=55434
HTTP_PORT=18090
SIM_PORT=22197
ANSWERER_PORT=22297
STATE=/tmp/pigeon-ingest-sim
DB=pigeon_bench
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"

gateway="" simulator="" answerer=""
BENCH_PROCESSES=(gateway simulator answerer)
bench_begin bench "$PORT" "$DB" max_connections=200 shared_buffers=512MB

bench_build pigeon pigeon-bench
start_answerer "$ANSWERER_PORT" "$STATE" "127.0.0.1:$SIM_PORT" /tmp/pigeon-ingest-sim.out
answerer=$ANSWERER_PID
answerer_url=$ANSWERER_URL
cat > /tmp/pigeon-bench-idle.conf <<CONF
listen = 127.0.0.1:$HTTP_PORT
dbUrl = $URL
dbPoolSize = 16
httpConnectionLimit = 512
migrationsPath = $PIGEON_ROOT/migrations
logLevel = warning
CONF
{
    cat /tmp/pigeon-bench-idle.conf
    grep -E '^(apnsKeyPath|apnsKeyId|apnsTeamId|apnsTopic|fcmServiceAccountPath|tlsCaFile)' /tmp/pigeon-ingest-sim.out
    echo "apnsEndpoint = $answerer_url"
    echo "fcmEndpoint = $answerer_url"
    echo "fcmTokenEndpoint = $answerer_url/token"
} > /tmp/pigeon-bench-delivering.conf
# serve CONFIG: (re)starts the gateway with CONFIG.
serve() {
    stop_processes "$gateway"
    .build/release/pigeon serve --config "$1" &
    gateway=$!
    wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60
}
serve /tmp/pigeon-bench-delivering.conf
# Half the benchmark's 20,000 users have a device.
psql -q -h 127.0.0.1 -p "$PORT" -U postgres "$DB" -c "
  INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
  SELECT 'bank', 'bench-user-' || n, 'bench-user-' || n, 'phone', CASE WHEN n % 2 = 0 THEN 'IOS' ELSE 'ANDROID' END, md5(n::text)
  FROM generate_series(0, 9999) AS n;
  CREATE TABLE ceiling (id bigserial PRIMARY KEY, payload text NOT NULL);"
echo "INSERT INTO ceiling (payload) VALUES ('Код подтверждения платежа: 4242');" > /tmp/pigeon-ceiling.sql

declare -A ceiling
for clients in 1 16 64; do
    tps=$(pgbench -n -h 127.0.0.1 -p "$PORT" -U postgres -c "$clients" -j 2 -T "$seconds" -f /tmp/pigeon-ceiling.sql "$DB" 2>/dev/null \
          | awk '/^tps/ {print int($3)}' | head -1)
    ceiling[$clients]=$tps
done

open_loop() {
    read -r c r rps p50 p99 errors < <(.build/release/pigeon-bench ingest --port "$HTTP_PORT" --clients 16 \
        --recipients 1 --seconds "$seconds" --rate 1000 --run-id "r$run-fixed-$RANDOM")
    echo "Open loop ($1), 1,000 requests/s offered, 1 recipient, 16 connections: $rps/s served, p50 $p50 ms, p99 $p99 ms, $errors errors."
}
answered() { curl -sS --http2 --cacert "$STATE/ca.pem" "$answerer_url/count" | python3 -c "import json, sys; h = json.load(sys.stdin); print(h['apns'] + h['fcm'])"; }
run=$(date +%s)
# table LABEL TITLE: the closed-loop grid on the running gateway, with the pushes the answerer took.
table() {
    echo
    echo "$2"
    echo
    echo "| recipients | clients | sendNotification/s | p50 ms | p99 ms | errors | pushes answered | pgbench INSERT tps (ceiling) | ratio |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for recipients in 1 100; do
        for clients in 1 16 64; do
            local before; before=$(answered)
            read -r c r rps p50 p99 errors < <(.build/release/pigeon-bench ingest --port "$HTTP_PORT" --clients "$clients" \
                --recipients "$recipients" --seconds "$seconds" --run-id "r$run-$1-$recipients-$clients")
            ratio=$(awk -v a="$rps" -v b="${ceiling[$clients]}" 'BEGIN { printf "%.0f%%", 100 * a / b }')
            echo "| $recipients | $clients | $rps | $p50 | $p99 | $errors | $(( $(answered) - before )) | ${ceiling[$clients]} | $ratio |"
        done
    done
}
echo
open_loop "fresh database, engine delivering"
table delivering "Engine delivering every send (as a user runs it):"
echo
open_loop "engine delivering, after the runs above, autovacuum busy on millions of rows"
serve /tmp/pigeon-bench-idle.conf
table idle "Engine idle (no push service configured):"
echo
open_loop "engine idle"
