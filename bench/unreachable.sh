#!/usr/bin/env bash
# A code that reaches no phone, heard by the bank at once (issue 46, CONTRACT §10). A release
# gateway with default settings on a durable PostgreSQL, its bank proxy `pigeon bank-stub`,
# pushes going to bench/answerer/push-answerer, which answers APNs 410 Unregistered for tokens
# starting "dead". CODES one-recipient PIN_CODE sends (`timeout` 120 s, one every INTERVAL ms), each
# to a user whose only iPhone's token is dead, first with the engine idle, then while a blast of
# BLAST iPhones (working tokens) is being delivered. Per code, the report lag: the bank stub's
# receipt of its reportNotificationExpired minus the moment the bank's sendNotification call
# started — the time a bank's SMS fallback waits (before: the whole timeout). p50/p99/max.
# Prints a Markdown table. Stops everything it starts.
# usage: bench/unreachable.sh [CODES] [BLAST] [INTERVAL_MS]   (default 100 200000 100)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
codes="${1:-100}"
blast="${2:-200000}"
interval="${3:-100}"
PORT=55435
HTTP_PORT=18095
STUB_PORT=18096
SIM_PORT=22198
ANSWERER_PORT=22298
DB=pigeon_unreachable
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"
STATE=/tmp/pigeon-unreachable-sim

install_packages
bench_pg_start bench-unreachable "$PORT" max_connections=200 shared_buffers=512MB max_wal_size=8GB
gateway="" stub="" answerer=""
cleanup() {
    stop_processes "$gateway" "$stub" "$answerer"
    pg_stop bench-unreachable
}
trap cleanup EXIT
pg_recreate_database "$PORT" "$DB"
sql() { psql -q -t -A -h 127.0.0.1 -p "$PORT" -U postgres "$DB" -c "$1"; }

log "building (release)"
swift build -c release --product pigeon >/dev/null

start_answerer "$ANSWERER_PORT" "$STATE" "127.0.0.1:$SIM_PORT" /tmp/pigeon-unreachable-sim.out
answerer=$ANSWERER_PID
.build/release/pigeon bank-stub --listen "127.0.0.1:$STUB_PORT" --authorized '*' > /tmp/pigeon-unreachable-stub.log 2>&1 &
stub=$!
wait_for_http "http://127.0.0.1:$STUB_PORT/stub/health" 30
{
    echo "listen = 127.0.0.1:$HTTP_PORT"
    echo "dbUrl = $URL"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "maxRequestBytes = 1073741824"
    echo "logLevel = warning"
    echo "sbiOutboundWebServiceURL = http://127.0.0.1:$STUB_PORT/sbi-outbound/services/SBIOutbound"
    grep -E '^(apnsKeyPath|apnsKeyId|apnsTeamId|apnsTopic|tlsCaFile)' /tmp/pigeon-unreachable-sim.out
    echo "apnsEndpoint = $ANSWERER_URL"
} > /tmp/pigeon-unreachable.conf
.build/release/pigeon serve --config /tmp/pigeon-unreachable.conf > /tmp/pigeon-unreachable-gateway.log 2>&1 &
gateway=$!
wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60

# The blast's iPhones (working tokens) and the payers: payer-N's only iPhone has a dead token.
sql "$(bench_devices_sql "$blast" $((2 * codes)))"
sql "UPDATE devices SET push_token = 'dead' || substr(push_token, 5) WHERE user_id LIKE 'payer-%'"
write_blast_envelope "$blast" /tmp/pigeon-unreachable-blast.xml

# send_codes FIRST COUNT OUTPUT: COUNT codes to payer-FIRST…, one every INTERVAL ms, each line
# "notification_id started_seconds state".
send_codes() {
    python3 - "$HTTP_PORT" "$1" "$2" "$interval" > "$3" <<'PY'
import http.client, sys, time
port, first, count, interval = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) / 1000
connection = http.client.HTTPConnection("127.0.0.1", port)
body = ('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/"><soapenv:Body><inb:sendNotification><notification>'
        '<id>{id}</id><pushContent><text>Code {code}</text><type>PIN_CODE</type></pushContent>'
        '<recipients>payer-{n}</recipients><timeout>120</timeout><priority>10</priority>'
        '</notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>')
run = int(time.time())
next_at = time.time()
for n in range(first, first + count):
    next_at += interval
    started = time.time()
    identifier = f"dead-{n}-{run}"
    connection.request("POST", "/pigeon/services/SBIInboundWebService",
                       body.format(id=identifier, n=n, code=100000 + n).encode(), {"Content-Type": "text/xml; charset=utf-8"})
    reply = connection.getresponse().read().decode()
    state = "QUEUED" if "<value>QUEUED</value>" in reply else "OTHER"
    print(f"{identifier} {started:.6f} {state}", flush=True)
    time.sleep(max(0, next_at - time.time()))
PY
}

# wait_for_reports FILE: until the bank stub has a report for every code of FILE (up to 60 s,
# half the codes' timeout: a report that waited for the timeout is counted as missing).
wait_for_reports() {
    for _ in $(seq 1 600); do
        curl -sS "http://127.0.0.1:$STUB_PORT/stub/reports" > /tmp/pigeon-unreachable-reports.txt
        if python3 - "$1" <<'PY'
import json, sys
sent = {line.split()[0] for line in open(sys.argv[1])}
reported = {json.loads(line)["notificationId"] for line in open("/tmp/pigeon-unreachable-reports.txt") if line.strip()}
sys.exit(0 if sent <= reported else 1)
PY
        then return 0; fi
        sleep 0.1
    done
    return 1
}

# lag FILE LABEL: the table row of one phase.
lag() {
    python3 - "$1" "$2" <<'PY'
import json, math, sys
received, counts = {}, {}
for line in open("/tmp/pigeon-unreachable-reports.txt"):
    if not line.strip(): continue
    report = json.loads(line)
    if report["operation"] != "reportNotificationExpired": continue
    counts[report["notificationId"]] = counts.get(report["notificationId"], 0) + 1
    received.setdefault(report["notificationId"], report["receivedAt"])
lags, missing, refused = [], 0, 0
for line in open(sys.argv[1]):
    identifier, started, state = line.split()
    if state != "QUEUED": refused += 1
    if identifier in received: lags.append((received[identifier] - float(started)) * 1000)
    else: missing += 1
twice = sum(1 for line in open(sys.argv[1]) if counts.get(line.split()[0], 0) > 1)
def stats(values):
    values = sorted(values)
    if not values: return "– | – | – | –"
    pick = lambda q: values[max(0, math.ceil(q * len(values)) - 1)]
    return f"{values[0]:.0f} | {pick(0.5):.0f} | {pick(0.99):.0f} | {values[-1]:.0f}"
print(f"| {sys.argv[2]} | {len(lags)} | {stats(lags)} | {missing + refused} | {twice} |")
PY
}

log "$codes codes to dead tokens with the engine idle"
send_codes 1 "$codes" /tmp/pigeon-unreachable-idle.txt
wait_for_reports /tmp/pigeon-unreachable-idle.txt || log "some idle codes were not reported within 60 s"
idle_row=$(lag /tmp/pigeon-unreachable-idle.txt "engine idle")

log "blast of $blast iPhones"
curl -sS -o /tmp/pigeon-unreachable-blast-reply.xml --max-time 1800 -H 'Content-Type: text/xml; charset=utf-8' \
    --data-binary @/tmp/pigeon-unreachable-blast.xml "http://127.0.0.1:$HTTP_PORT/pigeon/services/SBIInboundWebService"
grep -q '<status>OK</status>' /tmp/pigeon-unreachable-blast-reply.xml || { log "blast refused: $(head -c 300 /tmp/pigeon-unreachable-blast-reply.xml)"; exit 1; }
sleep 3
queued_before=$(sql "SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE next_attempt_at IS NOT NULL LIMIT 10000000) AS q")
log "$codes codes to dead tokens during the blast ($queued_before deliveries queued)"
send_codes $((codes + 1)) "$codes" /tmp/pigeon-unreachable-blast.txt
wait_for_reports /tmp/pigeon-unreachable-blast.txt || log "some codes sent during the blast were not reported within 60 s"
queued_after=$(sql "SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE next_attempt_at IS NOT NULL LIMIT 10000000) AS q")
blast_row=$(lag /tmp/pigeon-unreachable-blast.txt "during a blast of $blast")
removed=$(sql "SELECT count(*) FROM devices WHERE user_id LIKE 'payer-%' AND push_token LIKE 'dead%'")

echo
echo "| codes to a dead token (timeout 120 s) | reported | report after the send: min ms | p50 | p99 | max | not reported within 60 s or refused | reported twice |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
echo "$idle_row"
echo "$blast_row"
echo
echo "The blast still had $queued_after of its deliveries queued after the last code's report (from $queued_before when the codes started); $removed of the $((2 * codes)) payers' dead-token devices are left (those never sent a code)."
