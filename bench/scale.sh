#!/usr/bin/env bash
# Scale benchmark (issue: a year in production). The same measurements on an empty database and
# on one holding ROWS delivery rows across DAYS daily partitions (loaded with COPY, not through
# the API, then vacuumed as autovacuum would have), in one run, through a release gateway
# delivering to `pigeon simulate` as a user runs it:
#   - sendNotification at 1,000 requests/s offered (1 recipient, 16 connections): p99;
#   - getDeliveryStatus closed loop (16 connections, ids spread over every day kept): p99;
#   - the claim alone (500 due deliveries, 20 rounds): median;
#   - a 100,000-recipient fan-out: pushes/s;
#   - dropping one aged day (deliveries and notifications detached concurrently, dropped);
#   - bytes on disk per delivery (heap + indexes of today's partition over its rows) after the
#     fan-out's send, once SENT and once DELIVERED (acknowledgements as the device API writes
#     them, 1,000 a statement), and the bytes in use once vacuum has freed the old versions.
# usage: bench/scale.sh [ROWS] [DAYS] [SECONDS_PER_POINT]   (default 50000000 60 10)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
rows="${1:-50000000}"
days="${2:-60}"
seconds="${3:-10}"
PORT=55434
HTTP_PORT=18092
SIM_PORT=22199
DB=pigeon_scale
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"
STATE=/tmp/pigeon-scale-sim
FANOUT=100000

gateway="" simulator=""
BENCH_PROCESSES=(gateway simulator)
bench_begin bench "$PORT" "$DB" max_connections=200 shared_buffers=1GB max_wal_size=8GB

bench_build pigeon pigeon-bench

rm -rf "$STATE"
start_simulator "127.0.0.1:$SIM_PORT" "$STATE" /tmp/pigeon-scale-sim.out
simulator=$SIMULATOR_PID
{
    echo "listen = 127.0.0.1:$HTTP_PORT"
    echo "dbUrl = $URL"
    echo "dbPoolSize = 16"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "maxRequestBytes = 268435456"
    echo "retentionDays = $((days + 30))"
    echo "logLevel = warning"
    grep -E '^(apns|fcm|rustore|hms|vapid|webPush|tlsCaFile)' /tmp/pigeon-scale-sim.out
} > /tmp/pigeon-scale.conf

start_gateway() {
    .build/release/pigeon serve --config /tmp/pigeon-scale.conf &
    gateway=$!
    wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 120
}
start_gateway
# 20,000 bench users, half with a device (the ingest's recipients), and the fan-out's users.
sql "CREATE EXTENSION IF NOT EXISTS pg_freespacemap"
sql "INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
     SELECT 'bank', 'bench-user-' || n, 'bench-user-' || n, 'phone', CASE WHEN n % 2 = 0 THEN 'IOS' ELSE 'ANDROID' END, md5(n::text)
     FROM generate_series(0, 9999) AS n;
     INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
     SELECT 'bank', 'fan-' || n, 'fan-' || n, 'phone', CASE WHEN n % 2 = 0 THEN 'IOS' ELSE 'ANDROID' END,
            CASE WHEN n % 2 = 0 THEN md5('fan' || n) ELSE 'fcm-' || n END
     FROM generate_series(1, $FANOUT) AS n;
     ANALYZE devices;"

fanout_request() {
    python3 - "$FANOUT" "$1" <<'PY'
import sys
n, ident = int(sys.argv[1]), sys.argv[2]
recipients = "".join(f"<recipients>fan-{i}</recipients>" for i in range(1, n + 1))
print('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
      'xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/"><soapenv:Body><inb:sendNotification><notification>'
      f'<id>{ident}</id><pushContent><badge>1</badge><text>Hello</text><type>UNIVERSAL</type></pushContent>'
      f'{recipients}<timeout>3600</timeout></notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>')
PY
}

# Bytes on disk (heap, indexes, TOAST) per delivery row of today's partition.
today_bytes_per_row() {
    sql "SELECT round(pg_total_relation_size(c.oid)::numeric / GREATEST(1, (SELECT count(*) FROM deliveries
                 WHERE notification_key >= pigeon_day_key(pigeon_day(now())))))
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'deliveries'::regclass AND c.relname = 'deliveries_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')"
}

# measure LABEL: one row of figures into $results.
declare -A results
measure() {
    local label="$1"
    log "[$label] sendNotification at 1,000 requests/s"
    read -r _ _ send_rate _ send_p99 send_errors < <(.build/release/pigeon-bench ingest --port "$HTTP_PORT" --clients 16 \
        --recipients 1 --seconds "$seconds" --rate 1000 --run-id "$label-$RANDOM")
    log "[$label] getDeliveryStatus"
    # Today's ids and, once loaded, as many spread over the older days.
    sql "SELECT id FROM notifications WHERE key >= pigeon_day_key(pigeon_day(now())) ORDER BY random() LIMIT 10000" > /tmp/pigeon-scale-ids.txt
    [ -z "$old_ids" ] || sql "$old_ids" >> /tmp/pigeon-scale-ids.txt
    read -r status_rate _ status_p99 status_errors < <(.build/release/pigeon-bench status --port "$HTTP_PORT" --clients 16 \
        --ids /tmp/pigeon-scale-ids.txt --seconds "$seconds")

    log "[$label] claim (gateway stopped, 10,000 due deliveries of a probe notification)"
    stop_processes "$gateway"; gateway=""
    sql "INSERT INTO notifications (key, id, recipient_count, timeout_seconds, push_text, push_type, created_at, expires_at)
             VALUES (pigeon_notification_key(now()), 'claim-probe-$label', 10000, 3600, 't', 'UNIVERSAL', now(), now() + interval '1 hour');
         INSERT INTO deliveries (notification_key, position, user_id, user_folded, state, expires_at, next_attempt_at)
             SELECT (SELECT key FROM notifications WHERE id = 'claim-probe-$label'), n, 'probe-' || n, 'probe-' || n, 'QUEUED',
                    now() + interval '1 hour', now() - interval '1 second' FROM generate_series(1, 10000) AS n;"
    read -r claim_median claim_p99 _ < <(.build/release/pigeon-bench claim --db "$URL" --batch 500 --rounds 20)
    sql "UPDATE deliveries SET state = 'INVALID_SUBSCRIPTION', next_attempt_at = NULL
         WHERE notification_key = (SELECT key FROM notifications WHERE id = 'claim-probe-$label')"
    start_gateway

    log "[$label] fan-out of $FANOUT"
    fanout_request "fanout-$label" > /tmp/pigeon-scale-fanout.xml
    local after_send after_sent after_delivered after_vacuum started accepted finished key
    started=$(date +%s.%N)
    curl -sS -o /tmp/pigeon-scale-reply.xml -H 'Content-Type: text/xml; charset=utf-8' --data-binary @/tmp/pigeon-scale-fanout.xml \
        "http://127.0.0.1:$HTTP_PORT/pigeon/services/SBIInboundWebService"
    accepted=$(date +%s.%N)
    grep -q '<status>OK</status>' /tmp/pigeon-scale-reply.xml || { log "send failed: $(head -c 300 /tmp/pigeon-scale-reply.xml)"; exit 1; }
    after_send=$(today_bytes_per_row)
    key=$(sql "SELECT key FROM notifications WHERE id = 'fanout-$label'")
    while [ "$(sql "SELECT count(*) FROM deliveries WHERE notification_key = $key AND state = 'QUEUED'")" != "0" ]; do sleep 0.2; done
    finished=$(date +%s.%N)
    after_sent=$(today_bytes_per_row)
    # Acknowledgements: each changes only the state, as AcknowledgementStore writes it.
    for first in $(seq 1 1000 "$FANOUT"); do
        sql "UPDATE deliveries SET state = 'DELIVERED', updated_at = now(), next_attempt_at = NULL
             WHERE notification_key = $key AND position BETWEEN $first AND $((first + 999)) AND state = 'SENT'" >/dev/null
    done
    after_delivered=$(today_bytes_per_row)
    # What autovacuum makes of it: the old versions' space is free for the day's next sends.
    sql "VACUUM deliveries" >/dev/null
    after_vacuum=$(sql "SELECT round(sum(pg_relation_size(c.oid) - COALESCE((SELECT sum(avail) FROM pg_freespace(c.oid)), 0))::numeric
                        / GREATEST(1, (SELECT count(*) FROM deliveries WHERE notification_key >= pigeon_day_key(pigeon_day(now())))))
                        FROM pg_class c WHERE c.relname = 'deliveries_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')
                           OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = ('deliveries_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD'))::regclass)")

    log "[$label] dropping the oldest day"
    local oldest drop_started drop_finished
    oldest=$(sql "SELECT right(c.relname, 8) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                  WHERE i.inhparent = 'notifications'::regclass ORDER BY 1 LIMIT 1")
    drop_started=$(date +%s.%N)
    sql "ALTER TABLE deliveries DETACH PARTITION deliveries_p$oldest CONCURRENTLY"
    sql "DROP TABLE deliveries_p$oldest"
    sql "ALTER TABLE notifications DETACH PARTITION notifications_p$oldest CONCURRENTLY"
    sql "DROP TABLE notifications_p$oldest"
    drop_finished=$(date +%s.%N)

    results[$label]=$(awk -v sr="$send_rate" -v sp="$send_p99" -v se="$send_errors" -v str="$status_rate" -v stp="$status_p99" \
        -v ste="$status_errors" -v cm="$claim_median" -v cp="$claim_p99" -v n="$FANOUT" -v s="$started" -v a="$accepted" -v f="$finished" \
        -v as="$after_send" -v asent="$after_sent" -v ad="$after_delivered" -v av="$after_vacuum" -v ds="$drop_started" -v df="$drop_finished" \
        'BEGIN { printf "%s %s %s %s %s %s %s %s %.0f %.2f %s %s %s %.3f %s", sr, sp, se, str, stp, ste, cm, cp, n / (f - a), a - s,
                 as, asent, ad, df - ds, av }')
}

old_ids=""
measure empty

log "loading $rows deliveries over $days days with COPY"
stop_processes "$gateway"; gateway=""
per_day=$((rows / days))
per_notification=10
sql "SELECT pigeon_create_days(pigeon_day(now()) - $days - 1, pigeon_day(now()) - 1)" >/dev/null
load_day() {
    local back="$1" day
    day=$(sql "SELECT pigeon_day(now()) - $back")
    python3 - "$day" "$per_day" "$per_notification" <<'PY' | psql -q -h 127.0.0.1 -p "$PORT" -U postgres "$DB" -c "COPY deliveries (notification_key, position, user_id, user_folded, state, priority, attempts, expires_at, updated_at) FROM STDIN"
import sys
day, count, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
base = day << 40
import datetime
stamp = datetime.datetime.fromtimestamp(day * 86400 + 43200, datetime.timezone.utc).isoformat()
states = ["READ"] * 7 + ["DELIVERED"] * 2 + ["SENT"]
out = sys.stdout
lines = []
for n in range(count):
    notification, position = divmod(n, per)
    user = f"u{(n * 7919) % 5000000}"
    lines.append(f"{base + notification + 1}\t{position + 1}\t{user}\t{user}\t{states[n % 10]}\t0\t1\t{stamp}\t{stamp}\n")
    if len(lines) == 10000:
        out.write("".join(lines)); lines = []
out.write("".join(lines))
PY
    python3 - "$day" "$per_day" "$per_notification" <<'PY' | psql -q -h 127.0.0.1 -p "$PORT" -U postgres "$DB" -c "COPY notifications (key, id, recipient_count, timeout_seconds, push_text, push_type, created_at, expires_at, expiry_handled) FROM STDIN"
import sys, datetime
day, count, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
base = day << 40
stamp = datetime.datetime.fromtimestamp(day * 86400 + 43200, datetime.timezone.utc).isoformat()
lines = []
for n in range((count + per - 1) // per):
    lines.append(f"{base + n + 1}\tload-{day}-{n + 1}\t{per}\t300\tКод подтверждения платежа: 4242\tPIN_CODE\t{stamp}\t{stamp}\tt\n")
    if len(lines) == 10000:
        sys.stdout.write("".join(lines)); lines = []
sys.stdout.write("".join(lines))
PY
}
load_started=$(date +%s)
loaders=()
for back in $(seq "$days" -1 1); do
    load_day "$back" &
    loaders+=($!)
    # Two days at a time: one per core.
    if (( ${#loaders[@]} == 2 )); then wait "${loaders[@]}"; loaders=(); fi
done
[ ${#loaders[@]} -eq 0 ] || wait "${loaders[@]}"
old_ids="SELECT 'load-' || (pigeon_day(now()) - 1 - floor(random() * $days)::int) || '-' || (1 + floor(random() * $((per_day / per_notification)))::int)
         FROM generate_series(1, 10000)"
log "loaded in $(( $(date +%s) - load_started )) s; vacuuming"
sql "VACUUM ANALYZE deliveries" >/dev/null
sql "VACUUM ANALYZE notifications" >/dev/null
sql "CHECKPOINT" >/dev/null
loaded=$(sql "SELECT count(*) FROM deliveries")
start_gateway
measure loaded

echo
echo "Database: empty vs $loaded delivery rows over $days days (+ today's). Ratio = loaded / empty."
echo
echo "| measure | empty | loaded | ratio |"
echo "|---|---:|---:|---:|"
read -r -a e <<< "${results[empty]}"
read -r -a l <<< "${results[loaded]}"
row() { awk -v name="$1" -v a="$2" -v b="$3" -v unit="$4" 'BEGIN { printf "| %s | %s %s | %s %s | %.2f |\n", name, a, unit, b, unit, (a > 0 ? b / a : 0) }'; }
row "sendNotification p99 at 1,000 req/s (served ${e[0]}/${l[0]} req/s, errors ${e[2]}/${l[2]})" "${e[1]}" "${l[1]}" ms
row "getDeliveryStatus p99 (${e[3]}/${l[3]} req/s, errors ${e[5]}/${l[5]})" "${e[4]}" "${l[4]}" ms
row "claim of 500, median (p99 ${e[7]}/${l[7]} ms)" "${e[6]}" "${l[6]}" ms
row "100,000 fan-out (SOAP accept ${e[9]}/${l[9]} s)" "${e[8]}" "${l[8]}" pushes/s
row "drop one day" "${e[13]}" "${l[13]}" s
row "bytes per delivery after send" "${e[10]}" "${l[10]}" B
row "bytes per delivery, SENT" "${e[11]}" "${l[11]}" B
row "bytes per delivery, DELIVERED" "${e[12]}" "${l[12]}" B
row "bytes per delivery in use after vacuum (free space excluded)" "${e[14]}" "${l[14]}" B
