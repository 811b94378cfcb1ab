#!/usr/bin/env bash
# PostgreSQL high availability as banks run it (CONTRACT §10), on loopback: etcd (Patroni's
# store) and two PostgreSQL 15 nodes under Patroni with synchronous replication
# (synchronous_mode: true). Debian's patroni and etcd-server packages; for the drills of the
# system tier and by hand.
#   scripts/patroni.sh start NAME ETCD_PORT PORT1 PORT2   a fresh cluster (any old one of NAME removed);
#                                                          prints the gateway's dbUrl when both nodes run
#   scripts/patroni.sh leader NAME                         the port of the primary (waits for one)
#   scripts/patroni.sh healthy NAME                        waits for a primary and its synchronous replica
#   scripts/patroni.sh switchover NAME                     a planned switchover to the replica (patronictl)
#   scripts/patroni.sh kill-primary NAME                   kill -9 of the primary's Patroni and PostgreSQL
#   scripts/patroni.sh stop NAME                           everything of NAME stopped and removed
# The REST APIs listen on PORT1+1000 and PORT2+1000, etcd's peers on ETCD_PORT+1. Everything the
# servers print goes to logs under /tmp/pigeon-patroni/NAME; this script prints only its own lines.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
close_inherited_descriptors

command="${1:?usage: patroni.sh start|leader|switchover|kill-primary|stop NAME [ETCD_PORT PORT1 PORT2]}"
name="${2:?name}"
base="/tmp/pigeon-patroni/$name"

ensure_packages() {
    install_packages patroni etcd-server etcd-client python3-etcd >/dev/null
}

# node_config NODE PORT REST_PORT ETCD_PORT: Patroni's configuration of one node.
node_config() {
    local node="$1" port="$2" rest="$3" etcd="$4"
    cat <<YAML
scope: $name
name: $node
restapi:
  listen: 127.0.0.1:$rest
  connect_address: 127.0.0.1:$rest
etcd:
  host: 127.0.0.1:$etcd
  protocol: http
bootstrap:
  dcs:
    # A dead primary's leader key expires after ttl; Patroni checks every loop_wait.
    ttl: 20
    loop_wait: 2
    retry_timeout: 5
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        max_connections: 400
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 8
        max_replication_slots: 8
        fsync: "off"
        full_page_writes: "on"
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
  pg_hba:
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
    - local all all trust
postgresql:
  listen: 127.0.0.1:$port
  connect_address: 127.0.0.1:$port
  data_dir: $base/$node/data
  bin_dir: $PG_BIN
  pgpass: $base/$node/pgpass
  authentication:
    replication:
      username: replicator
      password: replicator
    superuser:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: $base/$node
YAML
}

stop_all() {
    for node in node1 node2; do
        [ -f "$base/$node.yml" ] || continue
        pid=$(patroni_pid "$node")
        [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
    done
    for pidfile in "$base"/*.pid; do
        [ -f "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        kill -9 "$pid" 2>/dev/null || true
    done
    # The PostgreSQL servers Patroni started outlive it when it is killed.
    for data in "$base"/node*/data; do
        [ -f "$data/postmaster.pid" ] || continue
        pid=$(head -1 "$data/postmaster.pid")
        kill -9 "$pid" 2>/dev/null || true
    done
    # Any server of this cluster still running (started by a Patroni in its last moments).
    pkill -9 -f "postgres -D $base/" 2>/dev/null || true
    sleep 0.2
    rm -rf "$base"
}

# rest_of NODE: the REST port of a node, from its configuration.
rest_of() { sed -n 's/^  listen: 127.0.0.1:\([0-9]*\)$/\1/p' "$base/$1.yml" | head -1; }
pg_port_of() { sed -n '/^postgresql:/,$ s/^  listen: 127.0.0.1:\([0-9]*\)$/\1/p' "$base/$1.yml" | head -1; }

# The node whose REST API answers 200 on /primary.
leader_node() {
    for node in node1 node2; do
        [ -f "$base/$node.yml" ] || continue
        if curl -fsS -o /dev/null "http://127.0.0.1:$(rest_of "$node")/primary" 2>/dev/null; then echo "$node"; return 0; fi
    done
    return 1
}

# The pid of a node's Patroni (not of the runuser that started it).
# Nothing (and success) when it is not running: a stop after kill-primary must go on.
patroni_pid() { { pgrep -f "patroni $base/$1.yml" || true; } | while read -r pid; do [ "$(ps -o comm= -p "$pid")" = "runuser" ] || echo "$pid"; done | head -1; }

# Waits until one node is the primary and the other the synchronous standby Patroni names (its
# REST API answers 200 on /sync), streaming.
wait_healthy() {
    for _ in $(seq 1 600); do
        if leader=$(leader_node); then
            other=node2; [ "$leader" = node2 ] && other=node1
            port=$(pg_port_of "$leader")
            sync=$(psql -XAtq -h 127.0.0.1 -p "$port" -U postgres -c "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'" postgres 2>/dev/null || true)
            if [ "$sync" = "1" ] && curl -fsS -o /dev/null "http://127.0.0.1:$(rest_of "$other")/sync" 2>/dev/null; then return 0; fi
        fi
        sleep 0.2
    done
    return 1
}

# True when nothing accepts connections on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A start that fails stops what it started, says why, and exits with STATUS (3: a port taken,
# the caller may try other ports).
give_up() {
    local status="$1"; shift
    echo "$*" >&2
    for log_file in "$base"/*.log; do
        [ -f "$log_file" ] && { echo "--- ${log_file##*/}:"; tail -3 "$log_file"; } >&2
    done
    stop_all
    exit "$status"
}

case "$command" in
start)
    etcd_port="${3:?etcd port}"; port1="${4:?port of node 1}"; port2="${5:?port of node 2}"
    ensure_packages
    stop_all
    # Every port the cluster takes, the derived ones too: a port another process took between
    # the caller's choice and our bind left etcd down and Patroni waiting for it for ever.
    for port in "$etcd_port" $((etcd_port + 1)) "$port1" "$port2" $((port1 + 1000)) $((port2 + 1000)); do
        port_free "$port" || give_up 3 "port $port is in use; start $name with other ports"
    done
    mkdir -p "$base/etcd" "$base/node1" "$base/node2"
    chmod 755 /tmp/pigeon-patroni "$base"
    [ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$base"
    setsid etcd --name "$name" --data-dir "$base/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
        --initial-cluster "$name=http://127.0.0.1:$((etcd_port + 1))" --enable-v2=true \
        </dev/null >"$base/etcd.log" 2>&1 &
    echo $! > "$base/etcd.pid"
    etcd_up=""
    for _ in $(seq 1 300); do
        if curl -fsS "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1; then etcd_up=yes; break; fi
        kill -0 "$(cat "$base/etcd.pid")" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$etcd_up" ] || give_up 3 "etcd of $name did not start (a port taken?): $(tail -1 "$base/etcd.log")"
    for node in node1 node2; do
        port=$port1; [ "$node" = node2 ] && port=$port2
        node_config "$node" "$port" "$((port + 1000))" "$etcd_port" > "$base/$node.yml"
        [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$base/$node.yml"
        "${as_postgres[@]}" setsid patroni "$base/$node.yml" </dev/null >"$base/$node.log" 2>&1 &
        echo $! > "$base/$node.pid"
        # The first node bootstraps the cluster before the second one clones it.
        if [ "$node" = node1 ]; then
            for _ in $(seq 1 300); do leader_node >/dev/null && break; sleep 0.2; done
        fi
    done
    wait_healthy || give_up 1 "cluster $name did not become healthy"
    echo "postgresql://postgres@127.0.0.1:$port1,127.0.0.1:$port2/postgres?target_session_attrs=read-write"
    ;;
leader)
    # Waits (up to a minute) for a primary: after a kill, until the replica is promoted.
    for _ in $(seq 1 300); do
        if leader=$(leader_node); then pg_port_of "$leader"; exit 0; fi
        sleep 0.2
    done
    echo "cluster $name has no primary" >&2; exit 1
    ;;
switchover)
    leader=$(leader_node)
    candidate=node2; [ "$leader" = node2 ] && candidate=node1
    patronictl -c "$base/$leader.yml" switchover "$name" --leader "$leader" --candidate "$candidate" --force >"$base/switchover.log" 2>&1
    if grep -q "failed" "$base/switchover.log"; then
        echo "switchover of $name failed: $(grep failed "$base/switchover.log")" >&2; exit 1
    fi
    echo "switchover of $name: $leader → $candidate"
    ;;
kill-primary)
    leader=$(leader_node)
    kill -9 "$(patroni_pid "$leader")"
    kill -9 "$(head -1 "$base/$leader/data/postmaster.pid")"
    echo "primary of $name killed ($leader: Patroni and PostgreSQL)"
    ;;
healthy)
    wait_healthy || { echo "cluster $name not healthy" >&2; exit 1; }
    echo "cluster $name: $(leader_node) primary, a synchronous replica streaming"
    ;;
stop)
    stop_all
    echo "cluster $name stopped"
    ;;
*)
    echo "unknown command $command" >&2; exit 2
    ;;
esac
