#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine with the Swift toolchain and runs the gateway:
# installs packages, starts a private PostgreSQL (port 55432, data under /tmp/pigeon-pg/dev),
# builds in release mode, starts `pigeon simulate` (local APNs + FCM on 127.0.0.1:2197), writes
# server.conf pointing at the simulator if there is none, and serves on 127.0.0.1:8080.
# Ctrl-C (or SIGTERM) stops the gateway, the simulator and the database it started.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$PIGEON_ROOT"

PORT="${PIGEON_DEV_PG_PORT:-55432}"
SIMULATOR_STATE="$PIGEON_ROOT/.local/pigeon-simulator"
mkdir -p "$PIGEON_ROOT/.local"
install_packages
pg_start dev "$PORT"
gateway="" simulator=""
cleanup() {
    [ -z "$gateway" ] || { kill -TERM "$gateway" 2>/dev/null; wait "$gateway" 2>/dev/null || true; }
    [ -z "$simulator" ] || { kill -TERM "$simulator" 2>/dev/null; wait "$simulator" 2>/dev/null || true; }
    pg_stop dev
}
trap cleanup EXIT INT TERM
pg_create_database "$PORT" pigeon

log "building (release)"
swift build -c release --product pigeon

log "starting the push simulator"
.build/release/pigeon simulate --listen 127.0.0.1:2197 --state "$SIMULATOR_STATE" > "$PIGEON_ROOT/.local/simulator.out" 2>&1 &
simulator=$!
for _ in $(seq 1 300); do
    grep -q '^tlsCaFile' "$PIGEON_ROOT/.local/simulator.out" 2>/dev/null && break
    kill -0 "$simulator" 2>/dev/null || { cat "$PIGEON_ROOT/.local/simulator.out" >&2; exit 1; }
    sleep 0.1
done

if [ ! -f server.conf ]; then
    log "writing server.conf (database and simulator)"
    {
        sed "s#^dbUrl = .*#dbUrl = postgresql://postgres@127.0.0.1:$PORT/pigeon#" server.conf.example
        echo
        echo "# --- pigeon simulate (written by scripts/run.sh; replace with real credentials) ---"
        grep -E '^(apns|fcm|tlsCaFile)' "$PIGEON_ROOT/.local/simulator.out"
    } > server.conf
fi

log "serving; SOAP at http://127.0.0.1:8080/pigeon/services/SBIInboundWebService?wsdl"
.build/release/pigeon serve --config server.conf &
gateway=$!
wait "$gateway"
