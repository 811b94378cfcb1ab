#!/usr/bin/env bash
# Device lifecycle benchmark (issue: device lifecycle and the bank proxy).
# 1. Registrations/s through POST /api/v1/devices/register with `pigeon bank-stub` authorizing
#    every user (each registration: one SOAP call to the bank, one transaction), 16 keep-alive
#    clients. Ceiling in the same run: pgbench running the registration's SQL (a
#    transaction deleting and inserting the device) with as many clients, same database.
# 2. Expiry sweep of 1,000,000 overdue deliveries (100 notifications x 10,000 recipients, all
#    SENT): rows/s from the first step to the last, and the longest single sweep transaction.
#    Ceiling: one UPDATE expiring all of them in a single statement, same data, same database.
# Durable PostgreSQL; gateway, stub, load generator and database share the machine's cores.
# usage: bench/lifecycle.sh [SECONDS]   (default 10)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
seconds="${1:-10}"
PORT=55434
HTTP_PORT=18092
STUB_PORT=18093
DB=pigeon_lifecycle
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"

gateway="" stub=""
BENCH_PROCESSES=(gateway stub)
bench_begin bench "$PORT" "$DB" max_connections=200 shared_buffers=512MB

bench_build pigeon pigeon-bench
.build/release/pigeon bank-stub --listen "127.0.0.1:$STUB_PORT" --authorized '*' > /tmp/pigeon-lifecycle-stub.log 2>&1 &
stub=$!
cat > /tmp/pigeon-lifecycle.conf <<CONF
listen = 127.0.0.1:$HTTP_PORT
dbUrl = $URL
dbPoolSize = 16
httpConnectionLimit = 256
migrationsPath = $PIGEON_ROOT/migrations
sbiOutboundWebServiceURL = http://127.0.0.1:$STUB_PORT/sbi-outbound/services/SBIOutbound
expirySweepIntervalSeconds = 3600
# The load comes from one address and registers new users as fast as it can: the limits that
# protect the bank from that would measure themselves.
registrationsPerAddressPerMinute = 0
registrationsPerUserPerHour = 0
logLevel = warning
CONF
.build/release/pigeon serve --config /tmp/pigeon-lifecycle.conf &
gateway=$!
wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60
wait_for_http "http://127.0.0.1:$STUB_PORT/stub/health" 30

log "registrations"
read -r rate p50 p99 errors < <(.build/release/pigeon-bench register --port "$HTTP_PORT" --clients 16 --seconds "$seconds" --run-id "r$(date +%s)")
cat > /tmp/pigeon-register-ceiling.sql <<'SQL'
\set n random(1, 1000000000)
BEGIN;
DELETE FROM devices WHERE user_id = 'c' || :n AND device_id = 'device' AND platform = 'IOS';
DELETE FROM pending_registrations WHERE user_id = 'c' || :n AND device_id = 'device' AND platform = 'IOS';
INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, state, auth_token_hash, auth_token_expires_at)
VALUES ('bank', 'c' || :n, 'c' || :n, 'device', 'IOS', repeat('ab', 32), 'SUBSCRIBED', decode(md5(:n::text), 'hex'), now() + interval '90 days');
COMMIT;
SQL
ceiling=$(pgbench -n -h 127.0.0.1 -p "$PORT" -U postgres -c 16 -j 2 -T "$seconds" -f /tmp/pigeon-register-ceiling.sql "$DB" 2>/dev/null \
          | awk '/^tps/ {print int($3)}' | head -1)

log "expiry sweep of 1,000,000 deliveries"
stop_processes "$gateway"; gateway=""
load_expired() {
    sql "TRUNCATE deliveries, notifications, outbox;
         INSERT INTO notifications (key, id, recipient_count, timeout_seconds, push_text, push_type, created_at, expires_at)
         SELECT pigeon_notification_key(now()), 'sweep-' || n, 10000, 1, 'Hello', 'UNIVERSAL', now() - interval '2 minutes', now() - interval '1 minute' FROM generate_series(1, 100) AS n;
         INSERT INTO deliveries (notification_key, position, user_id, user_folded, state, expires_at)
         SELECT (SELECT key FROM notifications WHERE id = 'sweep-' || (p / 10000 + 1)), p % 10000, 'user-' || p, 'user-' || p, 'SENT', now() - interval '1 minute'
         FROM generate_series(0, 999999) AS p;"
    sql "VACUUM ANALYZE deliveries"
}
load_expired
started=$(date +%s.%N)
sql "UPDATE deliveries SET state = 'EXPIRED', updated_at = now(), next_attempt_at = NULL WHERE state IN ('QUEUED', 'SENT', 'SENDING_FAILED')" >/dev/null
single=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { print e - s }')
load_expired
sed -i 's/^expirySweepIntervalSeconds = .*/expirySweepIntervalSeconds = 1/' /tmp/pigeon-lifecycle.conf
# No bank proxy for this part: reports stay in the outbox, so only the sweep is measured.
sed -i '/^sbiOutboundWebServiceURL/d' /tmp/pigeon-lifecycle.conf
started=$(date +%s.%N)
.build/release/pigeon serve --config /tmp/pigeon-lifecycle.conf &
gateway=$!
while [ "$(sql "SELECT count(*) FROM notifications WHERE NOT expiry_handled")" != "0" ]; do sleep 0.2; done
finished=$(date +%s.%N)
longest=$(curl -sS "http://127.0.0.1:$HTTP_PORT/metrics" | awk -F' ' '/^pigeon_sweep_longest_step_seconds\{sweep="expiry"\}/ {print $2}')
expired=$(sql "SELECT count(*) FROM deliveries WHERE state = 'EXPIRED'")
reports=$(sql "SELECT count(*) FROM outbox WHERE kind = 'reportNotificationExpired'")

echo
echo "| measure | Pigeon | ceiling (same run) | ratio |"
echo "|---|---:|---:|---:|"
awk -v r="$rate" -v c="$ceiling" -v p50="$p50" -v p99="$p99" -v e="$errors" 'BEGIN {
    printf "| device registrations/s, 16 clients (p50 %s ms, p99 %s ms, %d errors) | %d | %d (pgbench, the same SQL) | %.0f%% |\n", p50, p99, e, r, c, 100 * r / c }'
awk -v n="$expired" -v s="$started" -v f="$finished" -v one="$single" -v l="$longest" -v reports="$reports" 'BEGIN {
    rate = n / (f - s); ceiling = 1000000 / one
    printf "| expiry sweep, deliveries expired/s (%d rows, %d reports, longest transaction %.2f s) | %.0f | %.0f (one UPDATE of all rows, %.1f s in one transaction) | %.0f%% |\n", n, reports, l, rate, ceiling, one, 100 * rate / ceiling }'
