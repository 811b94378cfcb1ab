#!/usr/bin/env bash
# A code's expiry reaching the bank (issue 28). A release gateway with default settings on a
# durable PostgreSQL, its bank proxy `pigeon bank-stub`, pushes going to
# bench/answerer/push-answerer (accepted at once; no phone ever acknowledges). CODES one-recipient
# PIN_CODE sends with `timeout` TIMEOUT s (one every INTERVAL ms), first with the engine idle,
# then while a blast of BLAST iPhones is being delivered. Per code, how late its
# reportNotificationExpired reached the bank: the bank stub's receipt time minus (the moment
# the bank's sendNotification call started + TIMEOUT), p50/p99/max — the time a bank's SMS
# fallback loses. The expiry sweep (expirySweepIntervalSeconds, 30 s) is left as it is: the
# deadline watcher is what is measured. Prints a Markdown table. Stops everything it starts.
#
# MODE dead (issue 46, CONTRACT §10): each payer's only iPhone has a dead token (the answerer
# answers 410 Unregistered for tokens starting "dead"), the codes' timeout is TIMEOUT_S (give
# 120), and what is measured is the report's lag after the send itself — how long the bank's SMS
# fallback waits for a code that could reach no phone (before: the whole timeout). A report
# that waited for the timeout is not seen (the wait ends at half of it) and counts as missing.
# usage: bench/expiry.sh [BLAST] [CODES] [TIMEOUT_S] [INTERVAL_MS] [MODE]   (default 200000 100 4 100 timeout)
#        bench/expiry.sh 200000 100 120 100 dead
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
blast="${1:-200000}"
codes="${2:-100}"
timeout="${3:-4}"
interval="${4:-100}"
mode="${5:-timeout}"
case "$mode" in timeout|dead) ;; *) echo "MODE is timeout or dead, not $mode" >&2; exit 2 ;; esac
# What a report's lag is counted from: the send plus the timeout, or (dead) the send itself.
lag_after=$([ "$mode" = dead ] && echo 0 || echo "$timeout")
# How long the wait for every report lasts, in tenths of a second.
wait_tenths=$([ "$mode" = dead ] && echo $((timeout * 5)) || echo 1200)
PORT=55435
HTTP_PORT=18095
STUB_PORT=18096
SIM_PORT=22198
ANSWERER_PORT=22298
DB=pigeon_expiry
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"
STATE=/tmp/pigeon-expiry-sim

gateway="" stub="" answerer=""
BENCH_PROCESSES=(gateway stub answerer)
bench_begin bench-expiry "$PORT" "$DB" max_connections=200 shared_buffers=512MB max_wal_size=8GB

bench_build pigeon

start_answerer "$ANSWERER_PORT" "$STATE" "127.0.0.1:$SIM_PORT" /tmp/pigeon-expiry-sim.out
answerer=$ANSWERER_PID
.build/release/pigeon bank-stub --listen "127.0.0.1:$STUB_PORT" --authorized '*' > /tmp/pigeon-expiry-stub.log 2>&1 &
stub=$!
wait_for_http "http://127.0.0.1:$STUB_PORT/stub/health" 30
{
    echo "listen = 127.0.0.1:$HTTP_PORT"
    echo "dbUrl = $URL"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "maxRequestBytes = 1073741824"
    echo "logLevel = warning"
    echo "sbiOutboundWebServiceURL = http://127.0.0.1:$STUB_PORT/sbi-outbound/services/SBIOutbound"
    echo "${PIGEON_BENCH_CONF:-}"
    grep -E '^(apnsKeyPath|apnsKeyId|apnsTeamId|apnsTopic|tlsCaFile)' /tmp/pigeon-expiry-sim.out
    echo "apnsEndpoint = $ANSWERER_URL"
} > /tmp/pigeon-expiry.conf
.build/release/pigeon serve --config /tmp/pigeon-expiry.conf > /tmp/pigeon-expiry-gateway.log 2>&1 &
gateway=$!
wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60

sql "$(bench_devices_sql "$blast" $((2 * codes)))"
[ "$mode" = dead ] && sql "UPDATE devices SET push_token = 'dead' || substr(push_token, 5) WHERE user_id LIKE 'payer-%'"
write_blast_envelope "$blast" /tmp/pigeon-expiry-blast.xml

# send_codes FIRST COUNT OUTPUT: COUNT codes to payer-FIRST…, one every INTERVAL ms, each line
# "notification_id started_seconds state".
send_codes() {
    python3 - "$HTTP_PORT" "$1" "$2" "$interval" "$timeout" > "$3" <<'PY'
import http.client, sys, time
port, first, count, interval, timeout = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) / 1000, sys.argv[5]
connection = http.client.HTTPConnection("127.0.0.1", port)
body = ('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/"><soapenv:Body><inb:sendNotification><notification>'
        '<id>{id}</id><pushContent><text>Code {code}</text><type>PIN_CODE</type></pushContent>'
        '<recipients>payer-{n}</recipients><timeout>{timeout}</timeout><priority>10</priority>'
        '</notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>')
run = int(time.time())
next_at = time.time()
for n in range(first, first + count):
    next_at += interval
    started = time.time()
    identifier = f"code-{n}-{run}"
    connection.request("POST", "/pigeon/services/SBIInboundWebService",
                       body.format(id=identifier, n=n, code=100000 + n, timeout=timeout).encode(), {"Content-Type": "text/xml; charset=utf-8"})
    reply = connection.getresponse().read().decode()
    state = "QUEUED" if "<value>QUEUED</value>" in reply else "OTHER"
    print(f"{identifier} {started:.6f} {state}", flush=True)
    time.sleep(max(0, next_at - time.time()))
PY
}

# wait_for_reports FILE: until the bank stub has an expiry report for every code of FILE (up to
# 120 s; in dead mode half the timeout).
wait_for_reports() {
    for _ in $(seq 1 "$wait_tenths"); do
        curl -sS "http://127.0.0.1:$STUB_PORT/stub/reports" > /tmp/pigeon-expiry-reports.txt
        if python3 - "$1" <<'PY'
import json, sys
sent = {line.split()[0] for line in open(sys.argv[1])}
reported = {json.loads(line)["notificationId"] for line in open("/tmp/pigeon-expiry-reports.txt") if line.strip()}
sys.exit(0 if sent <= reported else 1)
PY
        then return 0; fi
        sleep 0.1
    done
    return 1
}

# lateness FILE LABEL: the table row of one phase.
lateness() {
    python3 - "$1" "$2" "$lag_after" <<'PY'
import json, math, sys
received, counts = {}, {}
for line in open("/tmp/pigeon-expiry-reports.txt"):
    if not line.strip(): continue
    report = json.loads(line)
    if report["operation"] != "reportNotificationExpired": continue
    counts[report["notificationId"]] = counts.get(report["notificationId"], 0) + 1
    received.setdefault(report["notificationId"], report["receivedAt"])
late, missing, refused = [], 0, 0
for line in open(sys.argv[1]):
    identifier, started, state = line.split()
    if state != "QUEUED": refused += 1
    if identifier in received: late.append((received[identifier] - float(started) - float(sys.argv[3])) * 1000)
    else: missing += 1
twice = sum(1 for line in open(sys.argv[1]) if counts.get(line.split()[0], 0) > 1)
def stats(values):
    values = sorted(values)
    if not values: return "– | – | – | –"
    # Nearest rank (of 100 samples, p99 is the 99th; the max is printed on its own).
    pick = lambda q: values[max(0, math.ceil(q * len(values)) - 1)]
    return f"{values[0]:.0f} | {pick(0.5):.0f} | {pick(0.99):.0f} | {values[-1]:.0f}"
print(f"| {sys.argv[2]} | {len(late)} | {stats(late)} | {missing + refused} | {twice} |")
PY
}

log "$codes codes (timeout ${timeout} s) with the engine idle"
send_codes 1 "$codes" /tmp/pigeon-expiry-idle.txt
wait_for_reports /tmp/pigeon-expiry-idle.txt || log "some idle codes were never reported"
idle_row=$(lateness /tmp/pigeon-expiry-idle.txt "engine idle")

log "blast of $blast iPhones"
curl -sS -o /tmp/pigeon-expiry-blast-reply.xml --max-time 1800 -H 'Content-Type: text/xml; charset=utf-8' \
    --data-binary @/tmp/pigeon-expiry-blast.xml "http://127.0.0.1:$HTTP_PORT/pigeon/services/SBIInboundWebService"
grep -q '<status>OK</status>' /tmp/pigeon-expiry-blast-reply.xml || { log "blast refused: $(head -c 300 /tmp/pigeon-expiry-blast-reply.xml)"; exit 1; }
sleep 3
queued_before=$(sql "SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE next_attempt_at IS NOT NULL LIMIT 10000000) AS q")
log "$codes codes during the blast ($queued_before deliveries queued)"
send_codes $((codes + 1)) "$codes" /tmp/pigeon-expiry-blast.txt
wait_for_reports /tmp/pigeon-expiry-blast.txt || log "some codes sent during the blast were never reported"
queued_after=$(sql "SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE next_attempt_at IS NOT NULL LIMIT 10000000) AS q")
blast_row=$(lateness /tmp/pigeon-expiry-blast.txt "during a blast of $blast")

echo
if [ "$mode" = dead ]; then
    echo "| codes to a dead token (timeout ${timeout} s) | reported | report after the send: min ms | p50 | p99 | max | not reported within $((timeout / 2)) s or refused | reported twice |"
else
    echo "| codes (timeout ${timeout} s) | reported | report after the timeout: min ms | p50 | p99 | max | not reported or refused | reported twice |"
fi
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
echo "$idle_row"
echo "$blast_row"
echo
echo "The blast still had $queued_after of its deliveries queued after the last code's report (from $queued_before when the codes started)."
