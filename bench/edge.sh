#!/usr/bin/env bash
# Edge benchmark (issue: safe on the internet). A release gateway with both listeners, default
# settings, `pigeon simulate` behind it so the engine delivers while the bank sends:
#   alone:  the bank sends 1-recipient sendNotification at 500 requests/s (open loop, 16
#           connections) on bankListen; then, separately, 1,000 keep-alive device clients (200
#           per address from 127.0.0.60-64) acknowledge on listen as fast as they are answered;
#   loaded: 10,000 idle keep-alive connections on listen (200 per address from 127.0.0.2-51)
#           and 256 slowloris connections from 127.0.0.99 trickling a byte a second into request
#           heads they never finish; under them the bank at 500/s, then the bank and the 1,000
#           acknowledging devices together.
# Printed: the bank's p50/p99 and acks/s per run, acks/s loaded against alone, and the gateway's
# peak thread count and resident memory during the loaded runs.
# usage: bench/edge.sh [SECONDS]   (default 20)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
seconds="${1:-20}"
PORT=55434
HTTP_PORT=18094
BANK_PORT=18095
SIM_PORT=22199
DB=pigeon_edge
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"
STATE=/tmp/pigeon-edge-sim
DEVICES=1000

gateway="" simulator="" holder="" slow="" sampler=""
BENCH_PROCESSES=(gateway simulator holder slow sampler)
bench_begin bench "$PORT" "$DB" max_connections=200 shared_buffers=512MB

bench_build pigeon pigeon-bench

rm -rf "$STATE"
start_simulator "127.0.0.1:$SIM_PORT" "$STATE" /tmp/pigeon-edge-sim.out
simulator=$SIMULATOR_PID
{
    echo "listen = 127.0.0.1:$HTTP_PORT"
    echo "bankListen = 127.0.0.1:$BANK_PORT"
    echo "dbUrl = $URL"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "logLevel = warning"
    grep -E '^(apns|fcm|rustore|hms|vapid|webPush|tlsCaFile)' /tmp/pigeon-edge-sim.out
} > /tmp/pigeon-edge.conf
.build/release/pigeon serve --config /tmp/pigeon-edge.conf &
gateway=$!
wait_for_http "http://127.0.0.1:$BANK_PORT/ready" 60

log "$DEVICES devices with known bearer tokens, one notification addressed to all of them"
run_id="e$(date +%s)"
seq 0 $((DEVICES - 1)) | sed "s/^/token-$run_id-/" > /tmp/pigeon-edge-tokens.txt
sql "INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, auth_token_hash, auth_token_expires_at)
     SELECT 'bank', 'edge-' || n, 'edge-' || n, 'phone', 'IOS', md5('a' || n) || md5('b' || n),
            sha256(convert_to('token-$run_id-' || n, 'UTF8')), now() + interval '1 day'
     FROM generate_series(0, $((DEVICES - 1))) AS n"
recipients=$(seq 0 $((DEVICES - 1)) | sed 's/.*/<recipients>edge-&<\/recipients>/' | tr -d '\n')
curl -fsS -o /dev/null "http://127.0.0.1:$BANK_PORT/pigeon/services/SBIInboundWebService" -H 'Content-Type: text/xml' --data-binary \
  "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><sendNotification><notification><id>edge-ack</id><pushContent><text>Hello</text><type>UNIVERSAL</type></pushContent>$recipients<timeout>3600</timeout></notification></sendNotification></s:Body></s:Envelope>"

bank() {  # bank LABEL: the bank at 500/s for the whole run, in the background
    .build/release/pigeon-bench ingest --port "$BANK_PORT" --clients 16 --recipients 1 --seconds "$seconds" --rate 500 \
        --run-id "$run_id-$1" > "/tmp/pigeon-edge-bank-$1.txt" || { log "the bank's run '$1' failed"; return 1; }
}
acks() {  # acks LABEL: 1,000 acknowledging devices, closed loop
    sleep 3  # the previous run's connections are gone (200 per address of 256 allowed)
    .build/release/pigeon-bench acks --port "$HTTP_PORT" --tokens /tmp/pigeon-edge-tokens.txt --notification edge-ack \
        --seconds "$seconds" --sources 127.0.0.60,127.0.0.61,127.0.0.62,127.0.0.63,127.0.0.64 > "/tmp/pigeon-edge-acks-$1.txt" \
        || { log "the acknowledgements' run '$1' failed"; return 1; }
}

log "a 920 KiB SOAP body whose wrapper carries 110,000 attributes (libxml2 alone took 5.3 s on it)"
python3 -c 'import sys; attrs=" ".join("a%x=\"\"" % i for i in range(110000)); sys.stdout.write("<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><sendNotification %s/></s:Body></s:Envelope>" % attrs)' \
    > /tmp/pigeon-edge-bomb.xml
bomb=$(curl -s -o /tmp/pigeon-edge-bomb.out -w '%{http_code} %{time_total}' -H 'Content-Type: text/xml' \
       --data-binary @/tmp/pigeon-edge-bomb.xml "http://127.0.0.1:$BANK_PORT/pigeon/services/SBIInboundWebService")

log "warming up (discarded): the bank and the devices for 5 s"
.build/release/pigeon-bench ingest --port "$BANK_PORT" --clients 16 --recipients 1 --seconds 5 --rate 500 --run-id "$run_id-warm" > /dev/null
.build/release/pigeon-bench acks --port "$HTTP_PORT" --tokens /tmp/pigeon-edge-tokens.txt --notification edge-ack --seconds 5 \
    --sources 127.0.0.60,127.0.0.61,127.0.0.62,127.0.0.63,127.0.0.64 > /dev/null

log "baseline: the bank at 500/s alone; then $DEVICES acknowledging devices alone"
bank alone
acks alone

log "loaded: 10,000 idle keep-alive connections and 256 slowloris connections on listen"
sources=$(seq 2 51 | sed 's/^/127.0.0./' | paste -sd, -)
.build/release/pigeon-bench hold --port "$HTTP_PORT" --connections 10000 --sources "$sources" --seconds $((seconds * 4)) \
    > /tmp/pigeon-edge-hold.txt 2> /tmp/pigeon-edge-hold.err &
holder=$!
.build/release/pigeon-bench slowloris --port "$HTTP_PORT" --connections 256 --source 127.0.0.99 --seconds $((seconds * 4)) \
    > /tmp/pigeon-edge-slow.txt &
slow=$!
for _ in $(seq 1 600); do grep -q "open" /tmp/pigeon-edge-hold.err 2>/dev/null && break; sleep 0.1; done
grep -q "open" /tmp/pigeon-edge-hold.err || { log "the idle connections did not open"; cat /tmp/pigeon-edge-hold.err >&2; exit 1; }
: > /tmp/pigeon-edge-samples.txt
( while kill -0 "$gateway" 2>/dev/null; do
      awk '/^Threads:/ {t=$2} /^VmRSS:/ {r=$2} END {print t, r}' "/proc/$gateway/status" >> /tmp/pigeon-edge-samples.txt
      sleep 0.5
  done ) &
sampler=$!
connections=$(curl -fsS "http://127.0.0.1:$BANK_PORT/metrics" | awk '/^pigeon_http_connections\{listener="public"\}/ {print $2}')
log "loaded: the bank at 500/s"
bank loaded
log "loaded: the $DEVICES acknowledging devices"
acks loaded
log "loaded: the bank at 500/s and the $DEVICES acknowledging devices together"
bank "loaded-acks" &
bank_job=$!
acks "loaded-bank"
wait "$bank_job"
stop_processes "$sampler"; sampler=""
closures=$(curl -fsS "http://127.0.0.1:$BANK_PORT/metrics" | awk '/^pigeon_http_deadline_closures\{listener="public"\}/ {print $2}')

row() {  # row LABEL BANKFILE ACKSFILE
    local bank_rps="—" bank_p50="—" bank_p99="—" bank_errors="—" ack_rps="—" ack_p99="—" ack_errors="—"
    [ -s "$2" ] && read -r _ _ bank_rps bank_p50 bank_p99 bank_errors < "$2"
    [ -s "$3" ] && read -r ack_rps _ ack_p99 ack_errors < "$3"
    echo "| $1 | $bank_rps | $bank_p50 | $bank_p99 | $bank_errors | $ack_rps | $ack_p99 | $ack_errors |"
}
read -r acks_alone _ < /tmp/pigeon-edge-acks-alone.txt
read -r acks_loaded _ < /tmp/pigeon-edge-acks-loaded.txt
read -r peak_threads peak_rss_kb < <(awk 'BEGIN {t=0; r=0} {if ($1 > t) t=$1; if ($2 > r) r=$2} END {print t, r}' /tmp/pigeon-edge-samples.txt)
echo
echo "| run | bank sendNotification/s (500 offered) | bank p50 ms | bank p99 ms | bank errors | acks/s ($DEVICES clients) | ack p99 ms | ack errors |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
row "bank alone" /tmp/pigeon-edge-bank-alone.txt /dev/null
row "acks alone" /dev/null /tmp/pigeon-edge-acks-alone.txt
row "bank + 10,000 idle + 256 slowloris" /tmp/pigeon-edge-bank-loaded.txt /dev/null
row "acks + 10,000 idle + 256 slowloris" /dev/null /tmp/pigeon-edge-acks-loaded.txt
row "bank + acks + 10,000 idle + 256 slowloris" /tmp/pigeon-edge-bank-loaded-acks.txt /tmp/pigeon-edge-acks-loaded-bank.txt
echo
awk -v a="$acks_loaded" -v b="$acks_alone" 'BEGIN {printf "acks/s with 10,000 idle + 256 slowloris connections / alone: %.0f%%\n", 100 * a / b}'
echo "public connections open when the loaded runs started: ${connections:-?}; connections closed at the request deadline (slow or idle): ${closures:-0}"
echo "attribute bomb ($(stat -c %s /tmp/pigeon-edge-bomb.xml) bytes): HTTP ${bomb% *} in ${bomb#* } s ($(grep -o 'more than [0-9]* attributes' /tmp/pigeon-edge-bomb.out || echo 'no gate message'))"
echo "gateway during the loaded runs: peak threads $peak_threads, peak RSS $((peak_rss_kb / 1024)) MiB (targets: ≤ 64, ≤ 300 MB)"
