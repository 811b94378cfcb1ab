#!/usr/bin/env bash
# Wallet pass benchmark (issue 10). N passes, each registered on one Wallet (inserted directly, as
# a bank's would have accumulated), one updatePass each through a release gateway with default
# settings: updates accepted/s (the bank's calls, 16 connections), pushes/s (the pass engine
# pushing while the bank sends, timed from the first updatePass until every Wallet is SENT, APNs
# answered by bench/answerer/push-answerer in C), then fetches/s as the Wallets would make them
# (changed serials + the pass, 200) and again with If-Modified-Since (304). In the same run, the
# ceiling: bench/fanout.sh's notification fan-out of N recipients on the same machine and
# PostgreSQL. One setting differs from the defaults: passRequestsPerAddressPerMinute = 0, since
# here every Wallet calls from 127.0.0.1 (phones come from their own addresses).
# usage: bench/passes.sh [PASSES]   (default 100000)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$PIGEON_ROOT"
passes="${1:-100000}"
PORT=55434
HTTP_PORT=18092
SIM_PORT=22199
ANSWERER_PORT=22299
DB=pigeon_passes
URL="postgresql://postgres@127.0.0.1:$PORT/$DB"
STATE=/tmp/pigeon-passes-sim
CLIENTS=16

gateway="" answerer=""
BENCH_PROCESSES=(gateway answerer)
bench_begin bench "$PORT" "$DB" max_connections=200 shared_buffers=512MB max_wal_size=8GB

bench_build pigeon pigeon-bench

start_answerer "$ANSWERER_PORT" "$STATE" "127.0.0.1:$SIM_PORT" /tmp/pigeon-passes-sim.out
answerer=$ANSWERER_PID
answerer_url=$ANSWERER_URL
{
    echo "listen = 127.0.0.1:$HTTP_PORT"
    echo "dbUrl = $URL"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "logLevel = warning"
    echo "passRequestsPerAddressPerMinute = 0"
    grep -E '^(apnsKeyPath|apnsKeyId|apnsTeamId|apnsTopic|tlsCaFile)' /tmp/pigeon-passes-sim.out
    echo "apnsEndpoint = $answerer_url"
} > /tmp/pigeon-passes.conf
answered() { curl -sS --http2 --cacert "$STATE/ca.pem" "$answerer_url/count" | python3 -c "import json, sys; h = json.load(sys.stdin); print(sum(h.values()))"; }
for _ in $(seq 1 50); do answered >/dev/null 2>&1 && break; sleep 0.1; done

# A 2.6 KiB .pkpass: pass.json, an icon, manifest.json and a signature-sized blob.
python3 - > /tmp/pigeon-passes.b64 <<'PY'
import base64, io, json, os, zipfile
buffer = io.BytesIO()
with zipfile.ZipFile(buffer, "w") as archive:
    archive.writestr("pass.json", json.dumps({"formatVersion": 1, "passTypeIdentifier": "pass.com.example.bench", "description": "Card", "storeCard": {"primaryFields": [{"key": "balance", "label": "Balance", "value": "100.00"}]}}))
    archive.writestr("icon.png", os.urandom(1024))
    archive.writestr("manifest.json", "{}")
    archive.writestr("signature", os.urandom(1200))
print(base64.b64encode(buffer.getvalue()).decode())
PY

.build/release/pigeon serve --config /tmp/pigeon-passes.conf &
gateway=$!
wait_for_http "http://127.0.0.1:$HTTP_PORT/ready" 60
log "$passes passes, each on one Wallet"
sql "INSERT INTO passes (pass_type_id, serial_number, auth_token_digest, version, content, modified_at, update_tag)
     SELECT 'pass.com.example.bench', 's-' || n, sha256(convert_to('bench-pass-token-' || n, 'UTF8')), 1,
            decode('$(cat /tmp/pigeon-passes.b64)', 'base64'), date_trunc('second', now()) - interval '1 day', nextval('pass_update_tags')
     FROM generate_series(1, $passes) AS n;
     INSERT INTO pass_devices (device_library_id, push_token) SELECT 'dev-' || n, md5(n::text) || md5(n::text) FROM generate_series(1, $passes) AS n;
     INSERT INTO pass_registrations (pass_type_id, serial_number, device_library_id, version)
     SELECT 'pass.com.example.bench', 's-' || n, 'dev-' || n, 1 FROM generate_series(1, $passes) AS n;
     ANALYZE passes; ANALYZE pass_devices; ANALYZE pass_registrations"

log "updatePass × $passes from $CLIENTS connections, the engine pushing meanwhile"
started=$(date +%s.%N)
cpu_before=$(cpu_of "$gateway") postgres_before=$(postgres_cpu bench)
# PIGEON_BENCH_PERF=1: the gateway's profile during the updates and pushes (perf, 99 Hz).
profiler=""
if [ "${PIGEON_BENCH_PERF:-0}" = 1 ]; then
    perf record -F 99 -g -o /tmp/pigeon-passes.perf -p "$gateway" > /dev/null 2>&1 &
    profiler=$!
fi
read -r updates update_seconds update_rate update_errors < <(.build/release/pigeon-bench passes update --port "$HTTP_PORT" --clients "$CLIENTS" --count "$passes" --pass /tmp/pigeon-passes.b64)
while [ "$(sql "SELECT count(*) FROM pass_registrations WHERE state = 'SENT'")" -lt "$passes" ]; do
    [ "$(sql "SELECT count(*) FROM pass_registrations WHERE state IN ('SENDING_FAILED', 'EXPIRED')")" -eq 0 ] || { log "pushes failed: $(sql "SELECT state, last_error, count(*) FROM pass_registrations GROUP BY 1, 2")"; exit 1; }
    sleep 0.2
done
pushed=$(date +%s.%N)
if [ -n "$profiler" ]; then
    kill -INT "$profiler"; wait "$profiler" 2>/dev/null || true
    perf report -i /tmp/pigeon-passes.perf --no-children --sort dso,symbol --stdio 2>/dev/null \
        | awk '/^ +[0-9]/ && n++ < 30' > /tmp/pigeon-passes-profile.txt
    log "profile (self time, top 30): /tmp/pigeon-passes-profile.txt"
fi
update_cpu=$(awk -v a="$(cpu_of "$gateway")" -v b="$cpu_before" 'BEGIN {printf "%.1f", a - b}')
update_postgres=$(awk -v a="$(postgres_cpu bench)" -v b="$postgres_before" 'BEGIN {printf "%.1f", a - b}')
push_rate=$(awk -v n="$passes" -v s="$started" -v f="$pushed" 'BEGIN {printf "%.0f", n / (f - s)}')
pushes_answered=$(answered)

log "the Wallets fetch (changed serials, then the pass)"
cpu_before=$(cpu_of "$gateway") postgres_before=$(postgres_cpu bench)
read -r fetches fetch_seconds fetch_rate fetch_errors < <(.build/release/pigeon-bench passes fetch --port "$HTTP_PORT" --clients "$CLIENTS" --count "$passes")
fetch_cpu=$(awk -v a="$(cpu_of "$gateway")" -v b="$cpu_before" 'BEGIN {printf "%.1f", a - b}')
fetch_postgres=$(awk -v a="$(postgres_cpu bench)" -v b="$postgres_before" 'BEGIN {printf "%.1f", a - b}')
fetched=$(sql "SELECT count(*) FROM pass_registrations WHERE state = 'FETCHED'")
log "the Wallets fetch again with If-Modified-Since (304)"
read -r conditional conditional_seconds conditional_rate conditional_errors < <(.build/release/pigeon-bench passes fetch304 --port "$HTTP_PORT" --clients "$CLIENTS" --count "$passes")
stop_processes "$gateway"
gateway=""

log "ceiling: the notification fan-out of $passes recipients (bench/fanout.sh), same machine and PostgreSQL"
fanout=$(bench/fanout.sh "$passes" 2>/dev/null | awk -F'|' '/^\| [0-9]/ {gsub(/ /, "", $5); print $5; exit}')
awk -v n="$passes" -v u="$update_rate" -v ue="$update_errors" -v p="$push_rate" -v pa="$pushes_answered" -v f="$fetch_rate" -v fe="$fetch_errors" \
    -v fetched="$fetched" -v c="$conditional_rate" -v ce="$conditional_errors" -v fan="$fanout" \
    -v uc="$update_cpu" -v up="$update_postgres" -v us="$started" -v uf="$pushed" -v fc="$fetch_cpu" -v fp="$fetch_postgres" -v fs="$fetch_seconds" 'BEGIN {
    printf "\n| passes | updates accepted/s | pushes/s | fetches/s (200) | fetches/s (304) | notification fan-out pushes/s | pushes / fan-out |\n"
    printf "|---:|---:|---:|---:|---:|---:|---:|\n"
    printf "| %d | %d | %d | %d | %d | %d | %.0f%% |\n", n, u, p, f, c, fan, 100 * p / fan
    printf "\nErrors: updates %d, fetches %d, conditional %d. APNs answered %d pushes; %d Wallets FETCHED.\n", ue, fe, ce, pa, fetched
    printf "CPU: updates and pushes: gateway %s s, PostgreSQL %s s of %.1f s wall; fetches: gateway %s s, PostgreSQL %s s of %s s wall.\n", uc, up, uf - us, fc, fp, fs
}'
