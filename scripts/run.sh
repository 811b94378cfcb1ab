#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine with the Swift toolchain and runs the gateway:
# installs packages, starts a private PostgreSQL (port 55432, data under /tmp/pigeon-pg/dev),
# builds in release mode, starts `pigeon simulate` (local APNs + FCM on 127.0.0.1:2197) and
# `pigeon bank-stub` (a reference bank proxy on 127.0.0.1:8088 whose SMS codes appear in this
# terminal), writes server.conf pointing at both if there is none, and serves on 127.0.0.1:8080.
# Ctrl-C (or SIGTERM) stops the gateway, the simulator, the stub and the database it started.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$PIGEON_ROOT"

PORT="${PIGEON_DEV_PG_PORT:-55432}"
SIMULATOR_STATE="$PIGEON_ROOT/.local/pigeon-simulator"
mkdir -p "$PIGEON_ROOT/.local"
install_packages
pg_start dev "$PORT"
gateway="" simulator="" stub=""
cleanup() {
    stop_processes "$gateway" "$simulator" "$stub"
    pg_stop dev
}
trap cleanup EXIT INT TERM
pg_create_database "$PORT" pigeon

log "building (release)"
swift build -c release --product pigeon

log "starting the push simulator"
start_simulator 127.0.0.1:2197 "$SIMULATOR_STATE" "$PIGEON_ROOT/.local/simulator.out"
simulator=$SIMULATOR_PID

log "starting the reference bank proxy (pigeon bank-stub); its SMS codes and reports show here"
.build/release/pigeon bank-stub --listen 127.0.0.1:8088 --clients bank &
stub=$!
wait_for_http http://127.0.0.1:8088/stub/health 30

STUB_URL=http://127.0.0.1:8088/sbi-outbound/services/SBIOutbound
if [ ! -f server.conf ]; then
    log "writing server.conf (database, simulator, bank stub)"
    # server.conf holds credentials once an operator fills them in: readable by its owner only.
    (umask 077 && : > server.conf)
    {
        sed "s#^dbUrl = .*#dbUrl = postgresql://postgres@127.0.0.1:$PORT/pigeon#" server.conf.example
        echo
        echo "# --- pigeon simulate and pigeon bank-stub (written by scripts/run.sh; replace with real ones) ---"
        grep -E '^(apns|fcm|rustore|hms|vapid|webPush|tlsCaFile)' "$PIGEON_ROOT/.local/simulator.out"
        echo "sbiOutboundWebServiceURL = $STUB_URL"
        echo "# The operator console at http://127.0.0.1:8080/console (this gateway serves everything on loopback)."
        echo "consoleUsername = operator"
        echo "consolePassword = $(openssl rand -hex 12)"
    } > server.conf
elif grep -q 'written by scripts/run.sh' server.conf && ! grep -q '^sbiOutboundWebServiceURL' server.conf; then
    echo "sbiOutboundWebServiceURL = $STUB_URL" >> server.conf
fi

log "starting the gateway"
.build/release/pigeon serve --config server.conf &
gateway=$!
# Ready once /ready answers 200: the database answers and every migration is applied.
if wait_for_http http://127.0.0.1:8080/ready 120; then
    log "ready: SOAP at http://127.0.0.1:8080/pigeon/services/SBIInboundWebService?wsdl, device API at /api/v1/"
    if grep -q '^consoleUsername' server.conf; then
        log "console: http://127.0.0.1:8080/console (user $(sed -n 's/^consoleUsername = //p' server.conf), password: consolePassword in server.conf)"
    fi
    log "Ctrl-C stops the gateway, the simulator, the bank stub and the database"
fi
wait "$gateway"
