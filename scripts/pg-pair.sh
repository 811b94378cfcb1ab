#!/usr/bin/env bash
# A PostgreSQL primary and a streaming standby on loopback, for the restart test (failover is
# drilled on Patroni: scripts/patroni.sh):
#   scripts/pg-pair.sh start NAME PRIMARY_PORT STANDBY_PORT   fresh pair (any old one removed)
#   scripts/pg-pair.sh restart-primary NAME PRIMARY_PORT       the primary stopped (fast) and started
#   scripts/pg-pair.sh stop NAME                               both stopped and removed
# Replication is synchronous (the primary's commit waits for the standby to have the WAL), so a
# commit acknowledged before the primary dies survives the failover. Everything the servers
# print goes to their logs under /tmp/pigeon-pg/NAME-*; this script prints only its own lines.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
close_inherited_descriptors

command="${1:?usage: pg-pair.sh start|restart-primary|stop NAME [PRIMARY_PORT STANDBY_PORT]}"
name="${2:?name}"
primary="/tmp/pigeon-pg/$name-primary"
standby="/tmp/pigeon-pg/$name-standby"

stop_cluster() {
    local base="$1"
    if [ -f "$base/data/PG_VERSION" ] && "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$base/data" status >/dev/null 2>&1; then
        "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$base/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$base"
}

start_cluster() {
    local base="$1" port="$2"
    "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$base/data" -l "$base/postgres.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $base" start </dev/null >/dev/null 2>&1
}

case "$command" in
start)
    primary_port="${3:?primary port}"; standby_port="${4:?standby port}"
    stop_cluster "$standby"; stop_cluster "$primary"
    mkdir -p "$primary" "$standby"; chmod 755 /tmp/pigeon-pg
    [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$primary" "$standby"
    "${as_postgres[@]}" "$PG_BIN/initdb" -D "$primary/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 </dev/null >/dev/null 2>&1
    cat >> "$primary/data/postgresql.conf" <<CONF
wal_level = replica
max_wal_senders = 4
max_connections = 200
synchronous_standby_names = '*'
synchronous_commit = on
fsync = off
full_page_writes = off
CONF
    echo "host replication postgres 127.0.0.1/32 trust" >> "$primary/data/pg_hba.conf"
    start_cluster "$primary" "$primary_port"
    "${as_postgres[@]}" "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres \
        -D "$standby/data" -R -X stream </dev/null >/dev/null 2>&1
    # Promoted, the standby has no standby of its own: its commits must not wait for one (a
    # cluster manager such as Patroni does the same when it promotes).
    echo "synchronous_standby_names = ''" >> "$standby/data/postgresql.conf"
    start_cluster "$standby" "$standby_port"
    # Ready when the primary sees its standby streaming.
    for _ in $(seq 1 300); do
        state=$(psql -XAtq -h 127.0.0.1 -p "$primary_port" -U postgres -c "SELECT state FROM pg_stat_replication" postgres 2>/dev/null || true)
        [ "$state" = "streaming" ] && { echo "pair $name streaming"; exit 0; }
        sleep 0.1
    done
    echo "standby of $name never started streaming" >&2; exit 1
    ;;
restart-primary)
    primary_port="${3:?primary port}"
    "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$primary/data" -m fast -w stop </dev/null >/dev/null 2>&1
    start_cluster "$primary" "$primary_port"
    echo "primary of $name restarted"
    ;;
stop)
    stop_cluster "$standby"; stop_cluster "$primary"
    echo "pair $name stopped"
    ;;
*)
    echo "unknown command $command" >&2; exit 2
    ;;
esac
