#!/usr/bin/env bash
# One sendNotification of RECIPIENTS users (default 5,000,000; one in ten subscribed) through a
# release gateway with default settings except maxRequestBytes, on a durable PostgreSQL: the
# time to accept it, the gateway's peak memory, and the rows and states stored. The proof that
# a send of any size inside maxRequestBytes is stored (in pieces, in one transaction).
# usage: bench/bigsend.sh [RECIPIENTS]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
recipients="${1:-5000000}"
PORT=55435
HTTP_PORT=18093
DB=pigeon_bigsend
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"

gateway=""
BENCH_PROCESSES=(gateway)
bench_begin bigsend "$PORT" "$DB" max_connections=100 shared_buffers=1GB max_wal_size=8GB

bench_build pigeon
cat > /tmp/pigeon-bigsend.conf <<CONF
listen = 127.0.0.1:$HTTP_PORT
dbUrl = $URL
migrationsPath = $PIGEON_ROOT/migrations
maxRequestBytes = 1073741824
logLevel = info
CONF
.build/release/pigeon serve --config /tmp/pigeon-bigsend.conf > /tmp/pigeon-bigsend.log 2>&1 &
gateway=$!
wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60
sql "INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
     SELECT 'bank', 'big-' || n, 'big-' || n, 'phone', 'ANDROID', 'fcm-' || n
     FROM generate_series(1, $recipients, 10) AS n; ANALYZE devices"
python3 - "$recipients" > /tmp/pigeon-bigsend.xml <<'PY'
import sys
n = int(sys.argv[1])
out = sys.stdout
out.write('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
          'xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/"><soapenv:Body><inb:sendNotification><notification>'
          '<id>big</id><pushContent><text>Hello</text><type>UNIVERSAL</type></pushContent>')
for start in range(1, n + 1, 100000):
    out.write("".join(f"<recipients>big-{i}</recipients>" for i in range(start, min(n, start + 99999) + 1)))
out.write('<timeout>86400</timeout></notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>')
PY
log "sending $recipients recipients ($(( $(stat -c %s /tmp/pigeon-bigsend.xml) / 1048576 )) MiB)"
started=$(date +%s.%N)
status=$(curl -sS -o /tmp/pigeon-bigsend-reply.xml -w '%{http_code}' --max-time 1800 -H 'Content-Type: text/xml; charset=utf-8' \
    --data-binary @/tmp/pigeon-bigsend.xml "http://127.0.0.1:$HTTP_PORT/pigeon/services/SBIInboundWebService")
finished=$(date +%s.%N)
peak=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$gateway/status")
ok=$(head -c 2000 /tmp/pigeon-bigsend-reply.xml | grep -c '<status>OK</status>' || true)
entries=$(grep -o '<entry>' /tmp/pigeon-bigsend-reply.xml | wc -l)
stored=$(sql "SELECT count(*) FROM deliveries")
queued=$(sql "SELECT count(*) FROM deliveries WHERE state = 'QUEUED'")
positions=$(sql "SELECT min(position) || '..' || max(position) FROM deliveries")
awk -v n="$recipients" -v s="$started" -v f="$finished" -v h="$status" -v ok="$ok" -v e="$entries" -v st="$stored" \
    -v q="$queued" -v p="$positions" -v peak="$peak" 'BEGIN {
    printf "\n| recipients | HTTP | OK | answer entries | rows stored | QUEUED | positions | accepted in s | peak RSS MiB |\n"
    printf "|---:|---:|---:|---:|---:|---:|---|---:|---:|\n"
    printf "| %d | %s | %s | %d | %d | %d | %s | %.1f | %d |\n", n, h, ok, e, st, q, p, f - s, peak
}'
[ "$ok" = "1" ] && [ "$stored" = "$recipients" ]
