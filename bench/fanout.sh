#!/usr/bin/env bash
# Fan-out benchmark (issue: delivery core). One sendNotification to N users (half iOS, half
# Android, one device each) through a release gateway with default settings, over HTTP/2 + TLS to
# bench/answerer/push-answerer (C, nghttp2 + OpenSSL: answers APNs, FCM and OAuth at once, far
# faster than our Swift simulator), timed from the SOAP answer until no delivery is QUEUED.
# In the same run the ceiling: h2load sending the same APNs request (same headers and payload)
# to the same answerer with as many streams in flight as the gateway allows. Also the gateway's
# memory: peak RSS (the SOAP ingest of N recipients included) and RSS sampled while the engine
# works through the fan-out. Durable PostgreSQL; everything shares the machine's cores.
# `pigeon simulate` only makes the credentials (CA, server certificate, APNs key, FCM account).
# usage: bench/fanout.sh [RECIPIENTS]   (default 100000)
# PIGEON_BENCH_SERVICES=ios: every recipient an iPhone (one service, one app).
# PIGEON_BENCH_THREADS="1 2": one fan-out per pushThreads value in the same run (a new
# notification each, the gateway restarted with that value); default: one, with the default.
# PIGEON_BENCH_SERVICES=all: the recipients spread over APNs, FCM, RuStore, Huawei Push Kit and
# Web Push (a fifth each) and over two apps (the default one and app "business", a half each),
# every service answered by the same C answerer; Web Push messages are encrypted and signed as
# for a browser. Also prints the cost of one Web Push message's encryption on its own.
# PIGEON_BENCH_CONFIDENTIAL=1: every device has a key, and after each fan-out in clear the same
# fan-out again as a confidential notification (CONTRACT §8: sealed to each device's key).
# PIGEON_BENCH_BINARIES=DIR: run the `pigeon` and `pigeon-bench` in DIR instead of building
# this tree's (to alternate two builds in one sitting: copy each build's two binaries aside).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
recipients="${1:-100000}"
services="${PIGEON_BENCH_SERVICES:-two}"
PORT=55434
HTTP_PORT=18091
SIM_PORT=22198
ANSWERER_PORT=22298
DB=pigeon_fanout
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"
STATE=/tmp/pigeon-fanout-sim
# The gateway's default deliveryConcurrency: the ceiling gets as many streams in flight.
CONCURRENCY=256

# max_wal_size as bench/bigsend.sh: storing a million deliveries with the 1 GB default spends
# the acceptance in forced checkpoints, which measures PostgreSQL's settings, not the gateway.
# PIGEON_BENCH_PGSTATS=1: PostgreSQL's time per statement, planning and execution, during the fan-out (pg_stat_statements),
# the WAL it wrote (pg_stat_wal) and its records by kind and relation (pg_walinspect).
pg_stats=()
[ "${PIGEON_BENCH_PGSTATS:-0}" = 1 ] && pg_stats=(shared_preload_libraries=pg_stat_statements pg_stat_statements.track_planning=on)
gateway="" simulator="" answerer=""
BENCH_PROCESSES=(gateway simulator answerer)
bench_begin bench "$PORT" "$DB" max_connections=200 shared_buffers=512MB max_wal_size=8GB "${pg_stats[@]}"

if [ -n "${PIGEON_BENCH_BINARIES:-}" ]; then
    release="$PIGEON_BENCH_BINARIES"
else
    release=.build/release
    bench_build pigeon pigeon-bench
fi

cc -O2 -o /tmp/curl-pusher bench/answerer/curl-pusher.c -lcurl

start_answerer "$ANSWERER_PORT" "$STATE" "127.0.0.1:$SIM_PORT" /tmp/pigeon-fanout-sim.out
answerer=$ANSWERER_PID
answerer_url=$ANSWERER_URL
{
    echo "listen = 127.0.0.1:$HTTP_PORT"
    echo "dbUrl = $URL"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "maxRequestBytes = 268435456"
    echo "logLevel = warning"
    # Extra server.conf lines to try engine settings, e.g. PIGEON_BENCH_CONF=$'deliveryWorkers = 8'.
    echo "${PIGEON_BENCH_CONF:-}"
    grep -E '^(apnsKeyPath|apnsKeyId|apnsTeamId|apnsTopic|fcmServiceAccountPath|tlsCaFile)' /tmp/pigeon-fanout-sim.out
    echo "apnsEndpoint = $answerer_url"
    echo "fcmEndpoint = $answerer_url"
    echo "fcmTokenEndpoint = $answerer_url/token"
    if [ "$services" = all ]; then
        # Every service of every app at the answerer: RuStore and Huawei under their prefixes,
        # Web Push subscriptions naming it (127.0.0.1 allowed), a second app with the same keys.
        for prefix in "" "app.business."; do
            grep -E '^(rustoreProjectId|rustoreServiceToken|hmsAppId|hmsClientSecret|vapid)' /tmp/pigeon-fanout-sim.out | sed "s/^/$prefix/"
            if [ -n "$prefix" ]; then
                grep -E '^(apnsKeyPath|apnsKeyId|apnsTeamId|fcmServiceAccountPath)' /tmp/pigeon-fanout-sim.out | sed "s/^/$prefix/"
                echo "${prefix}apnsTopic = com.example.business"
                echo "${prefix}apnsEndpoint = $answerer_url"
                echo "${prefix}fcmEndpoint = $answerer_url"
                echo "${prefix}fcmTokenEndpoint = $answerer_url/token"
            fi
            echo "${prefix}rustoreEndpoint = $answerer_url/rustore"
            echo "${prefix}hmsEndpoint = $answerer_url/hms"
            echo "${prefix}hmsTokenEndpoint = $answerer_url/hms/oauth2/v3/token"
            echo "${prefix}webPushAllowedHosts = 127.0.0.1:$ANSWERER_PORT"
        done
    fi
} > /tmp/pigeon-fanout.conf
answered() { curl -sS --http2 --cacert "$STATE/ca.pem" "$answerer_url/count" | python3 -c "import json, sys; h = json.load(sys.stdin); print(sum(h.values()))"; }
for _ in $(seq 1 50); do answered >/dev/null 2>&1 && break; sleep 0.1; done

log "ceiling: h2load, APNs requests straight to the answerer"
key_id=$(awk '$1 == "apnsKeyId" {print $3}' /tmp/pigeon-fanout.conf)
team_id=$(awk '$1 == "apnsTeamId" {print $3}' /tmp/pigeon-fanout.conf)
topic=$(awk '$1 == "apnsTopic" {print $3}' /tmp/pigeon-fanout.conf)
key_path=$(awk '$1 == "apnsKeyPath" {print $3}' /tmp/pigeon-fanout.conf)
token=$("$release"/pigeon-bench apns-token "$key_path" "$key_id" "$team_id")
printf '%s' '{"aps":{"alert":{"body":"Hello"},"badge":1},"notificationId":"fanout","type":"UNIVERSAL"}' > /tmp/pigeon-fanout-payload.json
ceiling_requests=$(( recipients < 200000 ? recipients : 200000 ))
ceiling=$(h2load -n "$ceiling_requests" -c 2 -m $((CONCURRENCY / 2)) -t 1 \
    -H "authorization: bearer $token" -H "apns-topic: $topic" -H "apns-push-type: alert" -H "apns-priority: 10" \
    -H "content-type: application/json" -d /tmp/pigeon-fanout-payload.json \
    "$answerer_url/3/device/0123456789abcdef0123456789abcdef" 2>&1)
ceiling_rate=$(echo "$ceiling" | awk '/^finished in/ {gsub(",", "", $4); print int($4)}')
ceiling_ok=$(echo "$ceiling" | awk '/^status codes:/ {gsub(",", "", $3); print $3}')
# The second ceiling: libcurl alone (C, one thread, the gateway's easy-handle options, no
# database, no Swift) sending the same requests to the same answerer with as many in flight
# over as many connections as the gateway's defaults. The gateway's rate is bounded by it.
log "ceiling: libcurl alone (bench/answerer/curl-pusher.c)"
answerer_cpu_before=$(cpu_of "$answerer")
# PIGEON_BENCH_SYSCALLS=1: system calls and context switches a request of libcurl alone and a
# push of the gateway (perf stat on the process during the run), side by side.
syscall_events="context-switches,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_futex,syscalls:sys_enter_poll,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write,syscalls:sys_enter_read"
if [ "${PIGEON_BENCH_SYSCALLS:-0}" = 1 ]; then
    curl_ceiling=$(perf stat -x, -e "$syscall_events" -o /tmp/pigeon-fanout-curl-syscalls.txt \
        /tmp/curl-pusher "$answerer_url" "$STATE/ca.pem" "$ceiling_requests" "$CONCURRENCY" 2 "$token" "$topic")
else
    curl_ceiling=$(/tmp/curl-pusher "$answerer_url" "$STATE/ca.pem" "$ceiling_requests" "$CONCURRENCY" 2 "$token" "$topic")
fi
curl_rate=$(echo "$curl_ceiling" | awk '{print $4}')
# CPU a request (µs) of libcurl alone and of the answerer answering it, and how busy the cores
# were: the budget the fan-out's own CPU a push is weighed against.
read -r curl_us curl_answerer_us curl_busy < <(echo "$curl_ceiling" | awk -v a="$(cpu_of "$answerer")" -v b="$answerer_cpu_before" -v cores="$(nproc)" \
    '{printf "%.1f %.1f %.0f\n", 1e6 * $5 / $1, 1e6 * (a - b) / $1, 100 * ($5 + a - b) / ($3 * cores)}')

# serve THREADS: (re)starts the gateway, with `pushThreads = THREADS` unless THREADS is "default".
serve() {
    stop_processes "$gateway"
    cp /tmp/pigeon-fanout.conf /tmp/pigeon-fanout-run.conf
    [ "$1" = default ] || echo "pushThreads = $1" >> /tmp/pigeon-fanout-run.conf
    "$release"/pigeon serve --config /tmp/pigeon-fanout-run.conf &
    gateway=$!
    wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60
}
thread_counts="${PIGEON_BENCH_THREADS:-default}"
serve "${thread_counts%% *}"
# Devices registered two days ago and last reached two hours ago, as a bank's are: each one's
# first push of the hour records that it was reached, a HOT update within the week (a device's
# first reach of a new week also moves its entry in the reach's week index: two records more).
if [ "$services" = all ]; then
    # A fifth on each service, a half of each in app "business". One browser key for every Web
    # Push subscription (RFC 8291's example key): each message is still encrypted on its own.
    sql "INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, created_at, app_id)
         SELECT 'bank', 'fan-' || n, 'fan-' || n, 'phone', (ARRAY['IOS', 'ANDROID', 'RUSTORE', 'HUAWEI', 'WEB'])[n % 5 + 1],
                CASE n % 5 WHEN 0 THEN md5(n::text) WHEN 1 THEN 'fcm-' || n WHEN 2 THEN 'rustore-token-' || n
                           WHEN 3 THEN 'huawei-token-' || n
                           ELSE '{\"endpoint\":\"$answerer_url/webpush/' || n || '\",\"keys\":{\"auth\":\"BTBZMqHH6r4Tts7J_aSIgg\",'
                                || '\"p256dh\":\"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4\"}}' END,
                now() - interval '2 days', CASE WHEN n % 2 = 0 THEN '' ELSE 'business' END
         FROM generate_series(1, $recipients) AS n"
elif [ "$services" = ios ]; then
sql "INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, created_at)
     SELECT 'bank', 'fan-' || n, 'fan-' || n, 'phone', 'IOS', md5(n::text), now() - interval '2 days'
     FROM generate_series(1, $recipients) AS n"
else
sql "INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, created_at)
     SELECT 'bank', 'fan-' || n, 'fan-' || n, 'phone', CASE WHEN n % 2 = 0 THEN 'IOS' ELSE 'ANDROID' END,
            CASE WHEN n % 2 = 0 THEN md5(n::text) ELSE 'fcm-' || n END, now() - interval '2 days'
     FROM generate_series(1, $recipients) AS n"
fi
confidential="${PIGEON_BENCH_CONFIDENTIAL:-0}"
[ "$confidential" = 1 ] && sql "$(bench_device_keys_sql true)"
# A bank's device table has its statistics; a million rows inserted a moment ago would not yet
# (autovacuum analyses within a minute) and the planner would take it for a small table.
sql "UPDATE device_reach SET reached_at = now() - interval '2 hours', reached = true"
sql "ANALYZE devices; ANALYZE device_reach"
# request ID [confidential]: the fan-out's sendNotification.
request() {
python3 - "$recipients" "$1" "${2:-clear}" > /tmp/pigeon-fanout-request.xml <<'PY'
import sys
n, notification = int(sys.argv[1]), sys.argv[2]
flag = "<confidential>true</confidential>" if sys.argv[3] == "confidential" else ""
recipients = "".join(f"<recipients>fan-{i}</recipients>" for i in range(1, n + 1))
print('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
      'xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/"><soapenv:Body><inb:sendNotification><notification>'
      f'{flag}<id>{notification}</id><pushContent><badge>1</badge><text>Hello</text><type>UNIVERSAL</type></pushContent>'
      f'{recipients}<timeout>3600</timeout></notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>')
PY
}
rss() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$gateway/status"; }
# fan_out THREADS [confidential]: one fan-out with the gateway serving with that pushThreads;
# prints its row.
fan_out() {
local threads="$1" mode="${2:-clear}"
serve "$threads"
fan_outs=$((fan_outs + 1))
local id="fanout-$fan_outs-$threads-$mode"
request "$id" "$mode"
local answered_before; answered_before=$(answered)
log "fan-out of $recipients recipients, pushThreads $threads"
started=$(date +%s.%N)
curl -sS -o /tmp/pigeon-fanout-reply.xml -H 'Content-Type: text/xml; charset=utf-8' --data-binary @/tmp/pigeon-fanout-request.xml \
    "http://127.0.0.1:$HTTP_PORT/pigeon/services/SBIInboundWebService"
accepted=$(date +%s.%N)
grep -q '<status>OK</status>' /tmp/pigeon-fanout-reply.xml || { log "send failed: $(head -c 300 /tmp/pigeon-fanout-reply.xml)"; exit 1; }
rss_after_ingest=$(rss)
rss_min=999999 rss_max=0
gateway_cpu_before=$(cpu_of "$gateway")
push_threads_cpu_before=$(push_threads_cpu "$gateway")
if [ "${PIGEON_BENCH_PGSTATS:-0}" = 1 ]; then
    sql "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
    sql "SELECT pg_stat_statements_reset()" >/dev/null
    sql "SELECT pg_stat_reset_shared('wal')" >/dev/null
    sql "CREATE EXTENSION IF NOT EXISTS pg_walinspect" >/dev/null
    wal_start=$(sql "SELECT pg_current_wal_lsn()")
fi
postgres_cpu_before=$(postgres_cpu bench)
answerer_cpu_before=$(cpu_of "$answerer")
# PIGEON_BENCH_PERF=1: the gateway's profile during the fan-out (perf, 99 Hz or PIGEON_BENCH_PERF_HZ), top symbols printed;
# PIGEON_BENCH_PERF_CALLGRAPH=dwarf: call stacks through libraries built without frame pointers (libcurl, libc).
profiler=""
postgres_profiler=""
counter=""
if [ "${PIGEON_BENCH_SYSCALLS:-0}" = 1 ]; then
    perf stat -x, -e "$syscall_events" -o /tmp/pigeon-fanout-gateway-syscalls.txt -p "$gateway" > /dev/null 2>&1 &
    counter=$!
fi
if [ "${PIGEON_BENCH_PERF:-0}" = 1 ]; then
    perf record -e cpu-clock -F "${PIGEON_BENCH_PERF_HZ:-99}" --call-graph "${PIGEON_BENCH_PERF_CALLGRAPH:-fp}" -o /tmp/pigeon-fanout.perf -p "$gateway" > /dev/null 2>&1 &
    profiler=$!
fi
# PIGEON_BENCH_PERF_POSTGRES=1: PostgreSQL's profile during the fan-out (every process of
# the machine sampled, the postgres processes' samples reported as shares of theirs), top symbols printed.
if [ "${PIGEON_BENCH_PERF_POSTGRES:-0}" = 1 ]; then
    perf record -e cpu-clock -F "${PIGEON_BENCH_PERF_HZ:-99}" -a -o /tmp/pigeon-fanout-postgres.perf > /dev/null 2>&1 &
    postgres_profiler=$!
fi
while :; do
    # Through the queue index (QUEUED rows are all in it): counting the states would scan the table.
    queued=$(sql "SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE next_attempt_at IS NOT NULL LIMIT 1) AS q")
    current=$(rss)
    [ "$current" -lt "$rss_min" ] && rss_min=$current
    [ "$current" -gt "$rss_max" ] && rss_max=$current
    [ "$queued" -eq 0 ] && break
    sleep 0.5
done
# The fan-out ended when its last outcome was written (the polling above notices up to half a
# second later).
finished=$(sql "SELECT extract(epoch FROM max(d.updated_at)) FROM deliveries d JOIN notifications n ON n.key = d.notification_key
                WHERE n.id = '$id'")
gateway_cpu=$(awk -v a="$(cpu_of "$gateway")" -v b="$gateway_cpu_before" 'BEGIN {printf "%.2f", a - b}')
push_threads_cpu_used=$(awk -v a="$(push_threads_cpu "$gateway")" -v b="$push_threads_cpu_before" 'BEGIN {printf "%.2f", a - b}')
postgres_cpu_used=$(awk -v a="$(postgres_cpu bench)" -v b="$postgres_cpu_before" 'BEGIN {printf "%.1f", a - b}')
answerer_cpu=$(awk -v a="$(cpu_of "$answerer")" -v b="$answerer_cpu_before" 'BEGIN {printf "%.2f", a - b}')
if [ -n "$counter" ]; then
    kill -INT "$counter"; wait "$counter" 2>/dev/null || true
    log "system calls a request of libcurl alone / a push of the gateway:"
    awk -F, -v requests="$ceiling_requests" -v pushes="$recipients" '
        FNR == NR && $3 != "" { curl[$3] = $1; next }
        $3 != "" { printf "  %-34s %8.2f %8.2f\n", $3, curl[$3] / requests, $1 / pushes }' \
        /tmp/pigeon-fanout-curl-syscalls.txt /tmp/pigeon-fanout-gateway-syscalls.txt
fi
if [ -n "$postgres_profiler" ]; then
    kill -INT "$postgres_profiler"; wait "$postgres_profiler" 2>/dev/null || true
    perf report -i /tmp/pigeon-fanout-postgres.perf --comms postgres --percentage relative --no-children --sort dso,symbol --stdio 2>/dev/null \
        | awk '/^ +[0-9]/ && n++ < 40' > /tmp/pigeon-fanout-postgres-profile.txt
    log "PostgreSQL's profile (self time, top 40): /tmp/pigeon-fanout-postgres-profile.txt"
    cat /tmp/pigeon-fanout-postgres-profile.txt
fi
if [ -n "$profiler" ]; then
    kill -INT "$profiler"; wait "$profiler" 2>/dev/null || true
    perf report -i /tmp/pigeon-fanout.perf --no-children --sort dso,symbol --stdio 2>/dev/null \
        | awk '/^ +[0-9]/ && n++ < 25' > /tmp/pigeon-fanout-profile.txt
    log "profile (self time, top 25): /tmp/pigeon-fanout-profile.txt"
    cat /tmp/pigeon-fanout-profile.txt
fi
curl -sS "http://127.0.0.1:$HTTP_PORT/metrics" > /tmp/pigeon-fanout-metrics.txt
if [ "${PIGEON_BENCH_PGSTATS:-0}" = 1 ]; then
    sql "SELECT round(total_exec_time::numeric, 0) AS ms, round(total_plan_time::numeric, 0) AS plan_ms, calls, rows,
                round((1000 * total_exec_time / GREATEST(rows, 1))::numeric, 1) AS us_per_row,
                round((1000 * total_plan_time / GREATEST(rows, 1))::numeric, 1) AS plan_us_per_row,
                regexp_replace(left(query, 90), '\s+', ' ', 'g')
         FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12" > /tmp/pigeon-fanout-pgstats.txt
    log "PostgreSQL statements (ms, planning ms, calls, rows, µs per row, planning µs per row, query): /tmp/pigeon-fanout-pgstats.txt"
    cat /tmp/pigeon-fanout-pgstats.txt
    # The WAL the fan-out wrote (every commit of the day waits for its share to be flushed).
    sql "SELECT 'WAL during the fan-out: ' || pg_size_pretty(wal_bytes) || ', ' || round(wal_bytes / $recipients) || ' bytes a delivery, '
                || round(wal_fpi * 100.0 / greatest(wal_records, 1), 1) || '% of records full-page images, '
                || round(wal_records::numeric / $recipients, 1) || ' records a delivery' FROM pg_stat_wal"
    # Which relations and record kinds the WAL records were (pg_walinspect), per delivery.
    # Up to what is flushed: pg_walinspect refuses an end past it ("cannot accept future end LSN").
    wal_end=$(sql "SELECT pg_current_wal_flush_lsn()")
    sql "SELECT round(count(*)::numeric / $recipients, 2) AS per_delivery, count(*) AS records,
                resource_manager || '/' || split_part(record_type, ' ', 1) AS kind,
                COALESCE(regexp_replace(pg_filenode_relation(0, (regexp_match(block_ref, 'rel [0-9]+/[0-9]+/([0-9]+)'))[1]::oid)::text,
                                        '_p[0-9]{8}', '_p*'), '-') AS relation
         FROM pg_get_wal_records_info('$wal_start', '$wal_end')
         GROUP BY kind, relation ORDER BY records DESC LIMIT 20" > /tmp/pigeon-fanout-wal.txt
    log "WAL records by kind and relation (per delivery, records, kind, relation): /tmp/pigeon-fanout-wal.txt"
    cat /tmp/pigeon-fanout-wal.txt
fi
peak=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$gateway/status")
states=$(sql "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) AS n FROM deliveries GROUP BY state ORDER BY state) s")
# Pushes the answerer took during this fan-out.
pushes=$(( $(answered) - answered_before ))

awk -v t="$threads$([ "$mode" = confidential ] && echo ', confidential')" -v n="$recipients" -v s="$started" -v a="$accepted" -v f="$finished" -v c="$ceiling_rate" -v ok="$ceiling_ok" -v lc="$curl_rate" \
    -v states="$states" -v pushes="$pushes" -v gc="$gateway_cpu" -v pc="$postgres_cpu_used" -v peak="$peak" -v ri="$rss_after_ingest" -v rmin="$rss_min" -v rmax="$rss_max" 'BEGIN {
    rate = n / (f - a)
    printf "| %s | %d | %.2f | %.2f | %.0f | %d | %.1f%% | %d | %.0f%% | %d | %d–%d (after ingest %d) |\n", t, n, a - s, f - a, rate, c, 100 * rate / c, lc, 100 * rate / lc, peak, rmin, rmax, ri
    printf "States: %s. Pushes answered: %d. CPU during the fan-out: gateway %s s, PostgreSQL %s s (of %.1f s wall).\n", states, pushes, gc, pc, f - a
}'
# The CPU budget: what a push costs the gateway, PostgreSQL and the answerer against what a
# request costs libcurl alone and the answerer, how busy the cores were, and the most the
# fan-out could reach on these cores, every one of them busy, if the gateway's push cost no more
# than libcurl alone's while PostgreSQL's measured share stays on the same cores.
awk -v p="$pushes" -v gc="$gateway_cpu" -v pc="$postgres_cpu_used" -v ac="$answerer_cpu" -v w="$(awk -v a="$accepted" -v f="$finished" 'BEGIN {print f - a}')" \
    -v cores="$(nproc)" -v lc="$curl_rate" -v cu="$curl_us" -v ca="$curl_answerer_us" -v cb="$curl_busy" 'BEGIN {
    if (p <= 0) exit
    g = 1e6 * gc / p; q = 1e6 * pc / p; a = 1e6 * ac / p; busy = (gc + pc + ac) / (w * cores)
    printf "CPU a push: gateway %.1f µs + PostgreSQL %.1f µs + answerer %.1f µs, cores %.0f%% busy; libcurl alone %.1f µs + answerer %.1f µs a request, cores %.0f%% busy. ", g, q, a, 100 * busy, cu, ca, cb
    printf "With PostgreSQL'"'"'s share on the same cores, every core busy and the gateway'"'"'s push as cheap as libcurl alone, at most %.0f%% of libcurl alone; ", 100 * cores * 1e6 / (cu + ca + q) / lc
    printf "more push threads can add at most ×%.2f (the cores'"'"' idle share).\n", 1 / busy
}'
awk -v p="$pushes" -v gc="$gateway_cpu" -v tc="$push_threads_cpu_used" -v cu="$curl_us" 'BEGIN {
    if (p <= 0) exit
    printf "The gateway'"'"'s CPU a push by thread: push threads (libcurl driven, answers handed over) %.1f µs, against libcurl alone'"'"'s %.1f µs a request; the rest (claims, rows, planning, outcomes) %.1f µs.\n", 1e6 * tc / p, cu, 1e6 * (gc - tc) / p
}'
}
: > /tmp/pigeon-fanout-rows.txt
fan_outs=0   # each fan-out's notification gets its own id, so a pushThreads value may repeat
for threads in $thread_counts; do
    fan_out "$threads" >> /tmp/pigeon-fanout-rows.txt
    [ "$confidential" = 1 ] && fan_out "$threads" confidential >> /tmp/pigeon-fanout-rows.txt
done
echo
echo "| pushThreads | recipients | SOAP accept s | fan-out s | pushes/s | h2load ceiling req/s ($ceiling_ok ok) | ratio | libcurl ceiling req/s | ratio | peak RSS MiB | RSS during fan-out MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
grep '^|' /tmp/pigeon-fanout-rows.txt
echo
grep -v '^|' /tmp/pigeon-fanout-rows.txt || true
if [ "$confidential" = 1 ]; then
    # Each confidential fan-out's rate against the clear one before it (same run, same devices).
    grep '^|' /tmp/pigeon-fanout-rows.txt | awk -F'|' '{ gsub(/ /, "", $6); if ($2 ~ /confidential/) printf "Confidential fan-out (%s): %.0f%% of the same fan-out in clear.\n", $2, 100 * $6 / clear; else clear = $6 }'
fi
if [ "$services" = all ]; then
    curl -sS --http2 --cacert "$STATE/ca.pem" "$answerer_url/count"; echo
    # One Web Push message's encryption on its own (a fresh key and salt, ECDH, HKDF, AES-GCM),
    # against a P-256 key generation plus ECDH alone, the floor of any RFC 8291 implementation.
    read -r per_message key_agreement < <("$release"/pigeon-bench webpush-cost 20000)
    awk -v m="$per_message" -v k="$key_agreement" 'BEGIN { printf "Web Push encryption: %.1f µs per message; P-256 keygen + ECDH alone %.1f µs (%.0f%% of the message).\n", m, k, 100 * k / m }'
fi
