#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine with the Swift toolchain and runs the gateway:
# installs packages, starts a private PostgreSQL (port 55432, data under /tmp/pigeon-pg/dev),
# writes server.conf if there is none, builds in release mode and serves on 127.0.0.1:8080.
# Ctrl-C (or SIGTERM) stops the gateway and the database it started.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$PIGEON_ROOT"

PORT="${PIGEON_DEV_PG_PORT:-55432}"
install_packages
pg_start dev "$PORT"
trap 'pg_stop dev' EXIT
pg_create_database "$PORT" pigeon

if [ ! -f server.conf ]; then
    log "writing server.conf from server.conf.example"
    sed "s#^dbUrl = .*#dbUrl = postgresql://postgres@127.0.0.1:$PORT/pigeon#" server.conf.example > server.conf
fi

log "building (release)"
swift build -c release --product pigeon
log "serving; SOAP at http://127.0.0.1:8080/pigeon/services/SBIInboundWebService?wsdl"
.build/release/pigeon serve --config server.conf &
gateway=$!
trap 'kill -TERM $gateway 2>/dev/null; wait $gateway 2>/dev/null; pg_stop dev' EXIT INT TERM
wait $gateway
