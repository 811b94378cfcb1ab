#!/usr/bin/env bash
# A soak at a bank's rate (issue 44): a release gateway with default settings on a durable
# PostgreSQL pushing to bench/answerer/push-answerer (C, HTTP/2 + TLS) for MINUTES minutes. Every
# second: a blast of BLAST iPhones (priority 0; different recipients each second) and 20 one-time
# codes (PIN_CODE, priority 10, 60 s timeout, one phone each); a third of the blast's recipients
# acknowledge delivery and then opening through the device API (bearer tokens). Retention and
# partition upkeep run as in production (their own schedules). Every PERIOD minutes it prints a
# row: pushes/s, codes accepted and at the push service p50/p99, the gateway's RSS, PostgreSQL's
# table and index sizes and dead tuples, the outbox's depth, sends refused and errors logged. At
# the end: codes lost, deliveries left QUEUED, and the last period against the first (RSS within
# 10%, code p99 within 1.5×). Not in CI (it runs an hour). Stops everything it starts.
# usage: bench/soak.sh [MINUTES] [BLAST] [PERIOD]   (default 60 2000 10)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
minutes="${1:-60}"
blast="${2:-2000}"
period="${3:-10}"
PORT=55435
HTTP_PORT=18095
SIM_PORT=22197
ANSWERER_PORT=22297
STUB_PORT=18096
DB=pigeon_soak
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"
STATE=/tmp/pigeon-soak-sim
# Recipients of the blasts (each second's blast takes the next BLAST of them, round the pool) and
# phones for the codes (one per code: its push is told apart at the answerer).
pool=$((blast * 30))
payers=$((minutes * 60 * 20 + 1000))

gateway="" simulator="" answerer="" stub=""
BENCH_PROCESSES=(gateway simulator answerer stub)
bench_begin soak "$PORT" "$DB" max_connections=200 shared_buffers=512MB max_wal_size=8GB

bench_build pigeon

start_answerer "$ANSWERER_PORT" "$STATE" "127.0.0.1:$SIM_PORT" /tmp/pigeon-soak-sim.out
answerer=$ANSWERER_PID
# The bank's proxy: the openings acknowledged are reported to it (pushIsOpened) through the outbox.
.build/release/pigeon bank-stub --listen "127.0.0.1:$STUB_PORT" --authorized '*' > /tmp/pigeon-soak-stub.log 2>&1 &
stub=$!
{
    echo "listen = 127.0.0.1:$HTTP_PORT"
    echo "dbUrl = $URL"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "logLevel = warning"
    grep -E '^(apnsKeyPath|apnsKeyId|apnsTeamId|apnsTopic|tlsCaFile)' /tmp/pigeon-soak-sim.out
    echo "apnsEndpoint = $ANSWERER_URL"
    echo "sbiOutboundWebServiceURL = http://127.0.0.1:$STUB_PORT/sbi-outbound/services/SBIOutbound"
} > /tmp/pigeon-soak.conf
.build/release/pigeon serve --config /tmp/pigeon-soak.conf > /tmp/pigeon-soak-gateway.log 2>&1 &
gateway=$!
wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60

# The blast's iPhones (blast-N, bearer token "soak-N" for the device API) and the codes' phones.
sql "$(bench_devices_sql "$pool" "$payers")"
sql "UPDATE devices SET auth_token_hash = sha256(('soak-' || substr(user_id, 7))::bytea), auth_token_expires_at = now() + interval '30 days'
     WHERE user_id LIKE 'blast-%'"

log "soak: $minutes min, a blast of $blast and 20 codes a second, a third acknowledged and opened; a row every $period min"
python3 "$PIGEON_ROOT/bench/soak_driver.py" --port "$HTTP_PORT" --minutes "$minutes" --blast "$blast" --pool "$pool" \
    --period "$period" --gateway-pid "$gateway" --gateway-log /tmp/pigeon-soak-gateway.log \
    --answerer "$ANSWERER_URL" --ca "$STATE/ca.pem" --psql "psql -q -t -A -h 127.0.0.1 -p $PORT -U postgres $DB"
