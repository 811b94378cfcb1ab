# Shared by the scripts in scripts/: package installation and a private PostgreSQL cluster.
# Source it; every function is idempotent.

PIGEON_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
APT_PACKAGES=(pkg-config libjemalloc-dev libcrypt-dev libldap-dev libpq-dev libxml2-dev libmicrohttpd-dev libcurl4-openssl-dev libnghttp2-dev libssl-dev
              postgresql-15 postgresql-client-15 nghttp2-client nghttp2-server openssl curl python3-venv)
# Only the tests need these: promtool (alert rules), systemd-analyze (the unit file), Patroni and
# etcd (the high-availability drills), and a
# headless browser with its driver for the console's tests, and OpenLDAP's server and tools (the
# console's directory sign-in against a real slapd).
TEST_APT_PACKAGES=(prometheus systemd chromium chromium-driver mmdebstrap buildah patroni etcd-server etcd-client python3-etcd slapd ldap-utils)

log() { printf '[pigeon] %s\n' "$*" >&2; }

# Installs the Debian packages the build, the tests and the run need, when any is missing.
# install_packages [PACKAGE...]   (default: APT_PACKAGES)
install_packages() {
    local missing=() wanted=("$@")
    [ "${#wanted[@]}" -gt 0 ] || wanted=("${APT_PACKAGES[@]}")
    for package in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    if [ "${#missing[@]}" -eq 0 ]; then return 0; fi
    log "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# close_inherited_descriptors: the servers a script starts must not inherit the caller's
# descriptors beyond 0-2: a test process that waits for the script would otherwise wait on them
# for as long as the servers run.
close_inherited_descriptors() {
    for descriptor in /proc/$$/fd/*; do
        number="${descriptor##*/}"
        if [ "$number" -gt 2 ] 2>/dev/null; then eval "exec $number>&-" 2>/dev/null || true; fi
    done
}

# as_postgres: the command prefix that runs a PostgreSQL binary as the postgres user when this
# script runs as root (initdb refuses root).
as_postgres=()
if [ "$(id -u)" -eq 0 ]; then as_postgres=(runuser -u postgres --); fi

# pg_start NAME PORT [extra postgres -c settings...]
# Creates (once) and starts a private cluster under /tmp/pigeon-pg/NAME owned by the postgres
# user (initdb refuses root), listening on 127.0.0.1:PORT and a private socket folder.
pg_start() {
    local name="$1" port="$2"; shift 2
    local base="/tmp/pigeon-pg/$name"
    local data="$base/data"
    local options="-c listen_addresses=127.0.0.1 -p $port -k $base"
    for setting in "$@"; do options="$options -c $setting"; done

    mkdir -p "$base"
    chmod 755 /tmp/pigeon-pg
    [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$base"
    if [ ! -f "$data/PG_VERSION" ]; then
        log "creating PostgreSQL cluster in $data"
        "${as_postgres[@]}" "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    fi
    if "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        log "PostgreSQL $name already running"
    else
        log "starting PostgreSQL $name on 127.0.0.1:$port"
        "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$data" -l "$base/postgres.log" -o "$options" -w -t 60 start >/dev/null
    fi
}

# bench_pg_start NAME PORT [settings...]: pg_start for a benchmark, plus the words of
# PIGEON_BENCH_PG_SETTINGS — PostgreSQL settings for an experiment, the same in every benchmark
# (e.g. PIGEON_BENCH_PG_SETTINGS="synchronous_commit=off log_min_duration_statement=4").
bench_pg_start() {
    local experiment=()
    read -r -a experiment <<< "${PIGEON_BENCH_PG_SETTINGS:-}"
    pg_start "$@" "${experiment[@]}"
}

# pg_create_database PORT NAME
pg_create_database() {
    local port="$1" database="$2"
    if ! psql -h 127.0.0.1 -p "$port" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$database'" postgres | grep -q 1; then
        psql -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE \"$database\"" postgres
    fi
}

# pg_recreate_database PORT NAME: drops NAME if it exists (closing its connections) and creates it.
pg_recreate_database() {
    local port="$1" database="$2"
    psql -q -h 127.0.0.1 -p "$port" -U postgres -c "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" postgres
    psql -q -h 127.0.0.1 -p "$port" -U postgres -c "CREATE DATABASE \"$database\"" postgres
}

# pg_stop NAME
pg_stop() {
    local data="/tmp/pigeon-pg/$1/data"
    if [ -f "$data/PG_VERSION" ] && "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        log "stopping PostgreSQL $1"
        "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null
    fi
}

# wait_for_http URL SECONDS
# Stops the background processes whose PIDs are given (empty ones skipped): SIGTERM, then waits.
# start_directory FOLDER PORT: a small bank directory (tests/directory/) in slapd on
# ldap://127.0.0.1:PORT (StartTLS offered with a CA of its own, FOLDER/ca.pem), in the foreground
# of a background job; sets DIRECTORY_PID. Each person's password is <name>-directory-pw.
start_directory() {
    local folder="$1" port="$2" name seed
    rm -rf "$folder" && mkdir -p "$folder/data"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$folder/ca.key" -out "$folder/ca.pem" \
        -days 2 -subj "/CN=Pigeon test directory CA" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$folder/server.ext"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$folder/server.key" -out "$folder/server.csr" \
        -subj /CN=localhost 2>/dev/null
    openssl x509 -req -in "$folder/server.csr" -CA "$folder/ca.pem" -CAkey "$folder/ca.key" -CAcreateserial \
        -out "$folder/server.pem" -days 2 -extfile "$folder/server.ext" 2>/dev/null
    sed "s|@FOLDER@|$folder|g" "$PIGEON_ROOT/tests/directory/slapd.conf.template" > "$folder/slapd.conf"
    seed="$(cat "$PIGEON_ROOT/tests/directory/seed.ldif.template")"
    for name in ada sam vera lee nora; do
        seed="${seed//@PASSWORD:$name@/$(/usr/sbin/slappasswd -s "$name-directory-pw")}"
    done
    printf '%s\n' "$seed" > "$folder/seed.ldif"
    /usr/sbin/slapadd -q -f "$folder/slapd.conf" -l "$folder/seed.ldif"
    /usr/sbin/slapd -d 0 -f "$folder/slapd.conf" -h "ldap://127.0.0.1:$port/" > "$folder/slapd.out" 2>&1 &
    DIRECTORY_PID=$!
    for _ in $(seq 1 300); do
        if /usr/bin/ldapwhoami -x -H "ldap://127.0.0.1:$port" -D "uid=ada,ou=people,dc=bank,dc=example" -w ada-directory-pw >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    log "slapd did not start on port $port"; cat "$folder/slapd.out" >&2
    return 1
}

# The unit tier (no PostgreSQL, sockets or processes; Sources/PigeonTestSupport/TestTier.swift),
# after `swift build --build-tests`: run with the tripwire preloaded (scripts/tripwire: a test that
# opens a network socket or starts a process is refused and named), then its share of the suite's
# tests and its wall time printed; fails on a trip, a failed test, or past 60 s.
run_unit_tier() {
    local tripwire="$PIGEON_ROOT/.build/unit-tier-tripwire.so" trips results started elapsed counts status=0
    clang -shared -fPIC -O2 -Wall -o "$tripwire" "$PIGEON_ROOT/scripts/tripwire/unit-tier-tripwire.c" -ldl
    trips="$(mktemp)" results="$(mktemp -d)"
    started=$(date +%s.%N)
    PIGEON_TEST_TIER=unit PIGEON_TRIPWIRE_LOG="$trips" LD_PRELOAD="$tripwire" SWIFT_BACKTRACE=enable=no \
        timeout --signal=TERM --kill-after=30 300 swift test --skip-build --xunit-output "$results/unit.xml" || status=1
    elapsed=$(awk -v from="$started" -v to="$(date +%s.%N)" 'BEGIN { printf "%.1f", to - from }')
    if [ -s "$trips" ]; then
        log "unit tier: tests touched a socket or a process (see 'unit-tier tripwire' above):"
        sort "$trips" | uniq -c >&2
        status=1
    fi
    # Swift Testing's results (the console's lines are not a reliable count: some tests print
    # only their start there): every test, and those skipped as above the unit tier.
    counts=$(python3 -c '
import sys, xml.etree.ElementTree as tree
cases = list(tree.parse(sys.argv[1]).getroot().iter("testcase"))
skipped = sum(1 for case in cases if case.find("skipped") is not None)
print(len(cases) - skipped, len(cases))' "$results/unit-swift-testing.xml" 2>/dev/null || echo "0 0")
    set -- $counts
    log "unit tier: $1 of $2 tests ($(( 100 * $1 / ($2 > 0 ? $2 : 1) ))%) in $elapsed s (limit 60 s)"
    if awk -v elapsed="$elapsed" 'BEGIN { exit !(elapsed > 60) }'; then
        log "unit tier: slower than 60 s"
        status=1
    fi
    # The tier must hold most of the suite (issue 49): a new test that needs a database, a
    # socket or a process is balanced by tests of its rules that need none.
    if [ "$2" -eq 0 ] || [ $(( 100 * $1 )) -lt $(( 60 * $2 )) ]; then
        log "unit tier: under 60% of the tests ($1 of $2)"
        status=1
    fi
    # A hung unit test fails in a minute: every unit-tier suite carries a time limit.
    python3 "$PIGEON_ROOT/scripts/check-time-limits.py" || status=1
    rm -rf "$trips" "$results"
    return $status
}

stop_processes() {
    local pid
    for pid in "$@"; do
        [ -n "$pid" ] || continue
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

wait_for_http() {
    local url="$1" seconds="$2"
    for _ in $(seq 1 $((seconds * 10))); do
        if curl -fsS -o /dev/null "$url" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

# start_simulator LISTEN STATE_DIR OUTPUT_FILE
# Starts the release `pigeon simulate` in the background, waits until it printed its server.conf
# lines into OUTPUT_FILE, and sets SIMULATOR_PID (the caller stops it). Exits if it dies first.
start_simulator() {
    local listen="$1" state="$2" output="$3"
    "$PIGEON_ROOT/.build/release/pigeon" simulate --listen "$listen" --state "$state" > "$output" 2>&1 &
    SIMULATOR_PID=$!
    for _ in $(seq 1 300); do
        grep -q '^tlsCaFile' "$output" 2>/dev/null && return 0
        kill -0 "$SIMULATOR_PID" 2>/dev/null || { cat "$output" >&2; exit 1; }
        sleep 0.1
    done
    log "pigeon simulate did not start; see $output"
    exit 1
}

# start_answerer PORT STATE_DIR SIMULATOR_LISTEN SIMULATOR_OUTPUT
# For benchmarks: builds bench/answerer/push-answerer, has `pigeon simulate` make the credentials
# (CA, server certificate, APNs key, FCM account: its server.conf lines land in SIMULATOR_OUTPUT)
# and stops it, then starts the answerer on 127.0.0.1:PORT with that certificate. Sets
# ANSWERER_PID (the caller stops it) and ANSWERER_URL.
# The benchmarks' common frame. `bench_begin NAME PORT DB [setting=value…]`: the packages, a
# private PostgreSQL cluster NAME on PORT with those settings, a fresh database DB and `sql` to
# query it; on exit (`bench_end`) every process whose pid is in a variable BENCH_PROCESSES names
# is stopped — read at exit, so a variable set later counts — then the cluster.
BENCH_PROCESSES=()
bench_begin() {
    BENCH_CLUSTER="$1" BENCH_PORT="$2" BENCH_DB="$3"
    shift 3
    install_packages
    bench_pg_start "$BENCH_CLUSTER" "$BENCH_PORT" "$@"
    trap bench_end EXIT
    pg_recreate_database "$BENCH_PORT" "$BENCH_DB"
}

bench_end() {
    local name pids=()
    for name in "${BENCH_PROCESSES[@]}"; do pids+=("${!name:-}"); done
    stop_processes "${pids[@]}"
    pg_stop "$BENCH_CLUSTER"
}

# One statement on the benchmark's database; its rows unaligned, without headers.
sql() { psql -q -t -A -h 127.0.0.1 -p "$BENCH_PORT" -U postgres "$BENCH_DB" -c "$1"; }

# Release builds of the products named (`pigeon`, `pigeon-bench`).
bench_build() {
    local product
    log "building (release)"
    for product in "$@"; do swift build -c release --product "$product" >/dev/null; done
}

start_answerer() {
    local port="$1" state="$2" listen="$3" output="$4"
    cc -O2 -o /tmp/push-answerer "$PIGEON_ROOT/bench/answerer/push-answerer.c" -lnghttp2 -lssl -lcrypto -lpthread
    rm -rf "$state"
    start_simulator "$listen" "$state" "$output"
    stop_processes "$SIMULATOR_PID"
    /tmp/push-answerer "$port" "$state/server.pem" "$state/server.key" > "/tmp/pigeon-answerer-$port.out" 2>&1 &
    ANSWERER_PID=$!
    ANSWERER_URL="https://127.0.0.1:$port"
}

# CPU seconds (user + system) of a process, and of a private cluster's PostgreSQL processes:
# where a benchmark's time goes.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
# push_threads_cpu PID: CPU seconds of the gateway's push threads (named after their service:
# apns-…, fcm1-…, webpush-urgent), which drive libcurl.
push_threads_cpu() {
    local stat
    for stat in /proc/"$1"/task/*/stat; do cat "$stat" 2>/dev/null || true; done |
        awk -v hz="$(getconf CLK_TCK)" '{
            name = $0; sub(/^[^(]*\(/, "", name); sub(/\).*$/, "", name)
            rest = $0; sub(/^.*\) /, "", rest); split(rest, f, " ")
            if (name ~ /^(apns|fcm|rustore|huawei|webpush)[0-9]*-/) s += f[12] + f[13]
        } END {print s / hz}'
}
# postgres_cpu NAME
postgres_cpu() {
    local master; master=$(head -1 "/tmp/pigeon-pg/$1/data/postmaster.pid")
    for pid in "$master" $(pgrep -P "$master"); do cpu_of "$pid" 2>/dev/null || true; done | awk '{s += $1} END {print s + 0}'
}

# bench_devices_sql BLAST PAYERS: the SQL that registers iPhones blast-1…BLAST and payer-1…PAYERS
# (payers' tokens start "c0de": the answerer notes their pushes), two days ago as a bank's are,
# last reached two hours ago (within the week: the reach's update stays HOT).
bench_devices_sql() {
    cat <<SQL
INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, created_at)
SELECT 'bank', 'blast-' || n, 'blast-' || n, 'phone', 'IOS', md5(n::text) || md5((-n)::text), now() - interval '2 days'
FROM generate_series(1, $1) AS n;
INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, created_at)
SELECT 'bank', 'payer-' || n, 'payer-' || n, 'phone', 'IOS', 'c0de' || lpad(to_hex(n), 60, '0'), now() - interval '2 days'
FROM generate_series(1, $2) AS n;
UPDATE device_reach SET reached_at = now() - interval '2 hours', reached = true;
ANALYZE devices; ANALYZE device_reach
SQL
}

# bench_device_keys_sql CONDITION: gives the devices matching CONDITION a key for confidential
# notifications (RFC 8291's example P-256 point: sealing costs the same for every key).
bench_device_keys_sql() {
    cat <<SQL
UPDATE devices SET encryption_key_id = 'bench-key',
    encryption_public_key = decode(translate('BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4', '-_', '+/') || '=', 'base64')
WHERE $1
SQL
}

# write_blast_envelope COUNT FILE: a sendNotification "blast" to blast-1…COUNT, priority 0, a
# day to live, written in pieces (a million recipients is ~40 MiB of SOAP).
write_blast_envelope() {
    python3 - "$1" > "$2" <<'PY'
import sys
n = int(sys.argv[1])
out = sys.stdout
out.write('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
          'xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/"><soapenv:Body><inb:sendNotification><notification>'
          '<id>blast</id><pushContent><text>Our new savings account</text><type>UNIVERSAL</type></pushContent>')
for start in range(1, n + 1, 100000):
    out.write("".join(f"<recipients>blast-{i}</recipients>" for i in range(start, min(n, start + 99999) + 1)))
out.write('<timeout>86400</timeout><priority>0</priority></notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>')
PY
}
