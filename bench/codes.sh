#!/usr/bin/env bash
# One-time codes during a blast (issue 21). A release gateway with default settings on a durable
# PostgreSQL pushes to bench/answerer/push-answerer (C, HTTP/2 + TLS), which notes when each
# code's push arrives. First CODES one-recipient PIN_CODE sends (priority 10, one every
# INTERVAL ms) with the engine idle — the floor, measured in the same run — then the same during
# a blast of BLAST iPhones (priority 0) that the engine is delivering. Per code: accepted (the
# bank's call answered) and at the push service (its push arrived at the answerer), both from
# the moment the bank's call started, p50/p99/max. Codes and blast share one service (APNs) and
# one app. Also CODES confidential codes (CONTRACT §8: sealed to each phone's key) with the engine
# idle, against the clear ones. Prints a Markdown table. Stops everything it starts.
# usage: bench/codes.sh [BLAST] [CODES] [INTERVAL_MS]   (default 1000000 100 100)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
blast="${1:-1000000}"
codes="${2:-100}"
interval="${3:-100}"
PORT=55434
HTTP_PORT=18094
SIM_PORT=22199
ANSWERER_PORT=22299
DB=pigeon_codes
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"
STATE=/tmp/pigeon-codes-sim

gateway="" simulator="" answerer=""
BENCH_PROCESSES=(gateway simulator answerer)
bench_begin bench "$PORT" "$DB" max_connections=200 shared_buffers=512MB max_wal_size=8GB

bench_build pigeon

start_answerer "$ANSWERER_PORT" "$STATE" "127.0.0.1:$SIM_PORT" /tmp/pigeon-codes-sim.out
answerer=$ANSWERER_PID
answerer_url=$ANSWERER_URL
{
    echo "listen = 127.0.0.1:$HTTP_PORT"
    echo "dbUrl = $URL"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "maxRequestBytes = 1073741824"
    echo "logLevel = warning"
    echo "${PIGEON_BENCH_CONF:-}"
    grep -E '^(apnsKeyPath|apnsKeyId|apnsTeamId|apnsTopic|tlsCaFile)' /tmp/pigeon-codes-sim.out
    echo "apnsEndpoint = $answerer_url"
} > /tmp/pigeon-codes.conf
.build/release/pigeon serve --config /tmp/pigeon-codes.conf > /tmp/pigeon-codes-gateway.log 2>&1 &
gateway=$!
wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60

# The blast's iPhones and one iPhone per code (tokens starting "c0de": the answerer notes them),
# registered two days ago as a bank's are.
# A third set of payers has keys: their codes are sent confidential (sealed per push, CONTRACT §8).
sql "$(bench_devices_sql "$blast" $((3 * codes)))"
sql "$(bench_device_keys_sql "user_id LIKE 'payer-%' AND substr(user_id, 7)::int > $((2 * codes))")"
write_blast_envelope "$blast" /tmp/pigeon-codes-blast.xml

# send_codes FIRST COUNT OUTPUT [confidential]: COUNT codes to payer-FIRST…, one every INTERVAL
# ms, each line "token started_us answered_us state".
send_codes() {
    python3 - "$HTTP_PORT" "$1" "$2" "$interval" "${4:-clear}" > "$3" <<'PY'
import http.client, sys, time
port, first, count, interval = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) / 1000
flag = "<confidential>true</confidential>" if sys.argv[5] == "confidential" else ""
connection = http.client.HTTPConnection("127.0.0.1", port)
body = ('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/"><soapenv:Body><inb:sendNotification><notification>'
        + flag + '<id>code-{n}-{run}</id><pushContent><text>Code {code}</text><type>PIN_CODE</type></pushContent>'
        '<recipients>payer-{n}</recipients><timeout>60</timeout><priority>10</priority>'
        '</notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>')
run = int(time.time())
next_at = time.time()
for n in range(first, first + count):
    next_at += interval
    started = time.time()
    connection.request("POST", "/pigeon/services/SBIInboundWebService",
                       body.format(n=n, run=run, code=100000 + n).encode(), {"Content-Type": "text/xml; charset=utf-8"})
    reply = connection.getresponse().read().decode()
    answered = time.time()
    state = "QUEUED" if "<value>QUEUED</value>" in reply else "OTHER"
    print(f"c0de{n:060x} {int(started * 1e6)} {int(answered * 1e6)} {state}", flush=True)
    time.sleep(max(0, next_at - time.time()))
PY
}

# wait_for_codes FILE: until the answerer has every code of FILE (up to 120 s).
wait_for_codes() {
    for _ in $(seq 1 1200); do
        curl -sS --http2 --cacert "$STATE/ca.pem" "$answerer_url/codes" > /tmp/pigeon-codes-arrivals.txt
        if python3 - "$1" <<'PY'
import sys
sent = {line.split()[0] for line in open(sys.argv[1])}
arrived = {line.split()[0] for line in open("/tmp/pigeon-codes-arrivals.txt")}
sys.exit(0 if sent <= arrived else 1)
PY
        then return 0; fi
        sleep 0.1
    done
    return 1
}

# latencies FILE LABEL: the table row of one phase.
latencies() {
    python3 - "$1" "$2" <<'PY'
import math, sys
arrivals = {}
for line in open("/tmp/pigeon-codes-arrivals.txt"):
    token, micros = line.split()
    arrivals.setdefault(token, int(micros))
accepted, pushed, missing, refused = [], [], 0, 0
for line in open(sys.argv[1]):
    token, started, answered, state = line.split()
    accepted.append((int(answered) - int(started)) / 1000)
    if state != "QUEUED": refused += 1
    if token in arrivals: pushed.append((arrivals[token] - int(started)) / 1000)
    else: missing += 1
def stats(values):
    values = sorted(values)
    if not values: return "– | – | –"
    # Nearest rank: the smallest value with at least q of the samples at or below it
    # (of 100 samples, p99 is the 99th; the 100th is the max, printed on its own).
    pick = lambda q: values[max(0, math.ceil(q * len(values)) - 1)]
    return f"{pick(0.5):.1f} | {pick(0.99):.1f} | {values[-1]:.1f}"
print(f"| {sys.argv[2]} | {len(accepted)} | {stats(accepted)} | {stats(pushed)} | {len(pushed)} | {missing + refused} |")
PY
}

log "$codes codes with the engine idle"
send_codes 1 "$codes" /tmp/pigeon-codes-idle.txt
wait_for_codes /tmp/pigeon-codes-idle.txt || log "some idle codes never arrived"
idle_row=$(latencies /tmp/pigeon-codes-idle.txt "engine idle")

log "$codes confidential codes with the engine idle (each sealed to its phone's key)"
send_codes $((2 * codes + 1)) "$codes" /tmp/pigeon-codes-confidential.txt confidential
wait_for_codes /tmp/pigeon-codes-confidential.txt || log "some confidential codes never arrived"
confidential_row=$(latencies /tmp/pigeon-codes-confidential.txt "confidential, engine idle")

log "blast of $blast iPhones ($(( $(stat -c %s /tmp/pigeon-codes-blast.xml) / 1048576 )) MiB of SOAP)"
blast_started=$(date +%s.%N)
curl -sS -o /tmp/pigeon-codes-blast-reply.xml --max-time 1800 -H 'Content-Type: text/xml; charset=utf-8' \
    --data-binary @/tmp/pigeon-codes-blast.xml "http://127.0.0.1:$HTTP_PORT/pigeon/services/SBIInboundWebService"
blast_accepted=$(date +%s.%N)
grep -q '<status>OK</status>' /tmp/pigeon-codes-blast-reply.xml || { log "blast refused: $(head -c 300 /tmp/pigeon-codes-blast-reply.xml)"; exit 1; }
answered() { curl -sS --http2 --cacert "$STATE/ca.pem" "$answerer_url/count" | python3 -c "import json, sys; print(json.load(sys.stdin)['apns'])"; }
# Let the fan-out get going (a few seconds of pushes), then send the codes into it.
sleep 3
before=$(answered)
soap_buckets() { curl -sS "http://127.0.0.1:$HTTP_PORT/metrics" | grep '^pigeon_http_request_duration_seconds_bucket{.*route="soap_inbound"' || true; }
soap_buckets > /tmp/pigeon-codes-buckets-before.txt
log "$codes codes during the blast"
codes_started=$(date +%s.%N)
send_codes $((codes + 1)) "$codes" /tmp/pigeon-codes-blast.txt
codes_finished=$(date +%s.%N)
after=$(answered)
soap_buckets > /tmp/pigeon-codes-buckets-after.txt
wait_for_codes /tmp/pigeon-codes-blast.txt || log "some codes sent during the blast never arrived"
blast_row=$(latencies /tmp/pigeon-codes-blast.txt "during a blast of $blast")
queued=$(sql "SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE next_attempt_at IS NOT NULL LIMIT 1000000) AS q")

echo
echo "| codes sent | count | accepted p50 ms | p99 | max | at the push service p50 ms | p99 | max | arrived | lost or refused |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "$idle_row" | sed 's/^| engine idle | /| engine idle | /'
echo "$confidential_row"
echo "$blast_row"
# The confidential codes' p99 at the push service against the clear ones' (same run, engine idle).
awk -F'|' -v clear="$idle_row" -v sealed="$confidential_row" 'BEGIN {
    split(clear, c, "|"); split(sealed, s, "|")
    printf "\nConfidential codes at the push service: p99 %+.1f ms against clear codes (%.1f vs %.1f ms).\n", s[8] - c[8], s[8], c[8]
}'
# The gateway's own time for the codes' calls during the blast (from routing to the answer, its
# /metrics histogram): tells the gateway's share of the accept latency from the HTTP edge's and
# the client's own scheduling.
python3 - <<'PY'
import re
def read(path):
    counts = {}
    for line in open(path):
        match = re.search(r'le="([^"]+)"[^}]*\}\s+([0-9.e+]+)', line)
        if match: counts[match.group(1)] = float(match.group(2))
    return counts
before, after = read("/tmp/pigeon-codes-buckets-before.txt"), read("/tmp/pigeon-codes-buckets-after.txt")
total = after.get("+Inf", 0) - before.get("+Inf", 0)
if total:
    shares = [f"≤ {float(le) * 1000:g} ms {100 * (after[le] - before.get(le, 0)) / total:.0f}%" for le in ("0.005", "0.01", "0.025", "0.05") if le in after]
    print(f"\nThe gateway's own time (routing to answer) for the {int(total)} calls during the blast: " + ", ".join(shares) + ".")
PY
awk -v s="$blast_started" -v a="$blast_accepted" -v cs="$codes_started" -v cf="$codes_finished" -v b="$before" -v f="$after" -v q="$queued" 'BEGIN {
    printf "\nThe blast was accepted in %.1f s; while the codes were sent the engine pushed %d of its pushes (%.0f/s); %d deliveries were still queued after the last code.\n", a - s, f - b, (f - b) / (cf - cs), q
}'
