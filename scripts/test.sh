#!/usr/bin/env bash
# Runs the whole test suite from a fresh machine: installs packages, starts a private
# PostgreSQL (port 55433, data under /tmp/pigeon-pg/test), runs the Swift tests (unit and
# integration), the sanitizer and fuzzing runs, the third-party-client tests (Python zeep)
# against a running gateway, then the deployment checks (Kubernetes manifests, the container image
# built and run). Stops everything it started.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$PIGEON_ROOT"

PORT="${PIGEON_TEST_PG_PORT:-55433}"
install_packages
install_packages "${TEST_APT_PACKAGES[@]}"
# The Swift suites run in parallel, each with its own gateways and pools: up to ~700 connections at
# once, and past 1,000 when a loaded machine keeps more of them alive together.
pg_start test "$PORT" fsync=off synchronous_commit=off full_page_writes=off max_connections=2000
gateway="" simulator="" stub="" console="" directory=""
cleanup() {
    stop_processes "$console" "$gateway" "$stub" "$simulator" "$directory"
    pg_stop test
}
trap cleanup EXIT
# Every run starts from empty databases: a leftover schema from an older checkout must not
# decide the result.
pg_recreate_database "$PORT" pigeon_test
# connect_timeout: a loaded CI machine once took longer than the gateway's 5 s default to start
# backends while every suite created its databases at once.
export PIGEON_TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:$PORT/pigeon_test?connect_timeout=60"

log "module dependencies: declared = imported"
python3 scripts/check-imports.py
log "building"
swift build --build-tests
# Three tiers (Sources/PigeonTestSupport/TestTier.swift): unit (no PostgreSQL, sockets or
# processes; scripts/test-unit.sh runs it alone), integration (PostgreSQL, listeners, the
# simulator), system (crashes, failover, millions of recipients, streams held for minutes).
# A hung test must fail the run, not eat CI's 90 minutes.
log "unit tier (the tripwire armed: no sockets, no processes)"
run_unit_tier
log "integration tier"
PIGEON_TEST_TIER=integration timeout --signal=TERM --kill-after=30 1200 swift test --skip-build
# The system tier, one group at a time, so the heavy suites do not load the others' timing:
# crowds of hundreds of connections at the bank's listener (in the integration tier's parallel
# run, two cores shared with six hundred tests, a bank call was cut twice in a day); one-time
# codes against blasts held for minutes by a slow simulator and push services changing their
# limits mid fan-out; gateways killed with -9; PostgreSQL restarted and failed over under
# 100,000-recipient fan-outs; a 5,000,000-recipient send (two minutes of both cores).
log "system tier: the bank under a crowd"
timeout --signal=TERM --kill-after=30 600 swift test --skip-build --filter BankCrowdTests
log "system tier: urgent lane and push service limits"
timeout --signal=TERM --kill-after=30 600 swift test --skip-build --filter 'UrgentLaneTests|PushServiceLimitTests'
log "system tier: gateways killed with -9"
timeout --signal=TERM --kill-after=30 900 swift test --skip-build --filter 'DeliveryResilienceTests|ConfidentialErasureCrashTests|WalletPassResilienceTests'
log "system tier: database restart and failover"
timeout --signal=TERM --kill-after=30 900 swift test --skip-build --filter DatabaseFailoverTests
# Patroni on etcd with synchronous replication (scripts/patroni.sh): a switchover and the
# primary killed with -9, each during a 100,000-recipient fan-out and a stream of codes.
log "system tier: Patroni drills"
timeout --signal=TERM --kill-after=30 1200 swift test --skip-build --filter PatroniDrillTests
log "system tier: a send of 5,000,000 recipients"
timeout --signal=TERM --kill-after=30 900 swift test --skip-build --filter BigSendTests

# The C that faces the network (the HTTP shim, the HTTP/2 client and server shims, the XML shim,
# the directory client)
# with AddressSanitizer and UndefinedBehaviorSanitizer (Swift itself with AddressSanitizer), in a
# build directory of its own: the fast suites and the edge suites that drive the shims with
# hostile input. Any report stops the run. The crowds at the bank's listener run after the rest,
# alone, as in the system tier: in parallel with the edge suites under ASan, two cores are held
# up for seconds, and what they assert is that the bank is served beside the crowd.
log "sanitizers: ASan + UBSan build of the shims, fast and edge tests"
swift build --build-tests --sanitize=address -Xcc -fsanitize=undefined -Xcc -fno-sanitize-recover=undefined \
    -Xswiftc -Xclang-linker -Xswiftc -fsanitize=undefined --build-path .build/sanitize
for suites in 'PigeonCoreTests|PigeonDomainTests|PushCoreTests|PigeonDeliveryTests|SOAPCodecTests|RequestSideTests|PigeonWalletTests|PigeonHTTPTests|PigeonConfigurationTests|OutboundHTTPTests|PigeonSimulatorTests|PushTransportTests|EdgeTests|BadInputTests|InboundSOAPTests|TLSTests|DeviceAPITests|WalletPassTests|ConsoleTests|ConsoleDirectoryTests' \
              BankCrowdTests; do
    ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        timeout --signal=TERM --kill-after=30 900 swift test --skip-build --build-path .build/sanitize --filter "$suites"
done

# Every parser of outside bytes in Swift, fuzzed with libFuzzer and AddressSanitizer from its seeds
# and the crashers kept in fuzz/crashers (a crash, timeout or out-of-memory fails the run): a fixed
# seed and number of inputs, so every machine explores the same inputs and CI cannot fail on one
# this machine never tried (fuzz/run.sh SECONDS explores freely).
log "fuzzing: 50,000 seeded inputs per target"
./fuzz/run.sh runs=50000

log "third-party client tests (zeep) against release builds of the gateway and the simulator"
# With Swift's libraries linked in, as the Containerfile builds it: the same binary serves these
# tests and goes into the container image below (one release link, not two).
swift build -c release --product pigeon --static-swift-stdlib
VENV=/tmp/pigeon-venv
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q zeep==4.3.1 pytest==9.2.0 requests http_ece==1.2.1 PyJWT==2.9.0 cryptography==43.0.3 selenium==4.51.0 \
    openapi-spec-validator==0.9.0 schemathesis==4.32.5 PyYAML
# pigeon-bench encrypts and signs Web Push messages for the independent checks in tests/python.
swift build --product pigeon-bench
pg_recreate_database "$PORT" pigeon_zeep
SIM_STATE=/tmp/pigeon-sim-test
rm -rf "$SIM_STATE"
start_simulator 127.0.0.1:22197 "$SIM_STATE" /tmp/pigeon-sim-test.out
simulator=$SIMULATOR_PID
.build/release/pigeon bank-stub --listen 127.0.0.1:18088 --clients bank > /tmp/pigeon-stub-test.out 2>&1 &
stub=$!
wait_for_http http://127.0.0.1:18088/stub/health 30 || { cat /tmp/pigeon-stub-test.out >&2; exit 1; }
{
    echo "listen = 127.0.0.1:18080"
    echo "sbiOutboundWebServiceURL = http://127.0.0.1:18088/sbi-outbound/services/SBIOutbound"
    echo "dbUrl = postgresql://postgres@127.0.0.1:$PORT/pigeon_zeep"
    echo "migrationsPath = $PIGEON_ROOT/migrations"
    echo "logLevel = debug"
    grep -E '^(apns|fcm|rustore|hms|vapid|webPush|tlsCaFile)' /tmp/pigeon-sim-test.out
} > /tmp/pigeon-zeep.conf
# Its whole log is kept: the confidential notifications' code must appear nowhere in it.
.build/release/pigeon serve --config /tmp/pigeon-zeep.conf > /tmp/pigeon-zeep-gateway.log 2>&1 &
gateway=$!
wait_for_http http://127.0.0.1:18080/ready 60 || { log "gateway did not become ready"; exit 1; }
# A second gateway on the same database with the bank's own listener and the operator console,
# for the browser tests (tests/python/test_console*.py): operators in a users file (vera, a
# viewer) and in a directory (slapd: ada admin, sam support, lee locked), and the single account.
start_directory /tmp/pigeon-directory 18389
directory=$DIRECTORY_PID
echo 'vera:$2b$05$cI/kD5ULD0e920EIT5BDyebKXuKNVD0ZvI.IlGiE2uPXlYZQQV8Zi:viewer' > /tmp/pigeon-operators
sed -e 's/^listen = .*/listen = 127.0.0.1:18082/' /tmp/pigeon-zeep.conf > /tmp/pigeon-console.conf
{
    echo "bankListen = 127.0.0.1:18083"
    echo "consoleUsername = operator"
    echo "consolePassword = console-password-0123"
    echo "consoleUsersFile = /tmp/pigeon-operators"
    echo "consoleLdapUrl = ldap://127.0.0.1:18389"
    echo "consoleLdapUserDn = uid={user},ou=people,dc=bank,dc=example"
    echo "consoleLdapGroups = viewer=cn=pigeon-viewers,ou=groups,dc=bank,dc=example;support=cn=pigeon-support,ou=groups,dc=bank,dc=example;admin=cn=pigeon-admins,ou=groups,dc=bank,dc=example"
} >> /tmp/pigeon-console.conf
.build/release/pigeon serve --config /tmp/pigeon-console.conf > /tmp/pigeon-console-gateway.log 2>&1 &
console=$!
wait_for_http http://127.0.0.1:18083/ready 60 || { log "console gateway did not become ready"; exit 1; }
PIGEON_BENCH_BIN="$PIGEON_ROOT/.build/debug/pigeon-bench" PIGEON_URL=http://127.0.0.1:18080 PIGEON_DATABASE_URL="postgresql://postgres@127.0.0.1:$PORT/pigeon_zeep" \
    PIGEON_CONSOLE_URL=http://127.0.0.1:18083 PIGEON_CONSOLE_PUBLIC_URL=http://127.0.0.1:18082 PIGEON_CONSOLE_PASSWORD=console-password-0123 \
    PIGEON_STUB_URL=http://127.0.0.1:18088 PIGEON_SIMULATOR_URL=https://127.0.0.1:22197 PIGEON_SIMULATOR_CA="$SIM_STATE/ca.pem" \
    timeout 600 "$VENV/bin/python" -m pytest -q tests/python || { tail -n 40 /tmp/pigeon-zeep-gateway.log >&2; exit 1; }
# tests/python/test_confidential.py sends this code confidential only.
if grep -q 731904 /tmp/pigeon-zeep-gateway.log /tmp/pigeon-console-gateway.log; then
    log "the gateway logged a confidential notification's code:"; grep 731904 /tmp/pigeon-zeep-gateway.log /tmp/pigeon-console-gateway.log | head -5 >&2; exit 1
fi

# Deploying as banks do: the Kubernetes manifests validated against current Kubernetes schemas,
# and the container image built from Debian's packages (no registry) and its gateway run inside it.
log "deployment: Kubernetes manifests and the container image"
"$VENV/bin/pip" install -q kubernetes-validate==1.37.0
"$VENV/bin/python" deploy/kubernetes/check.py
stop_processes "$console" "$gateway"
console="" gateway=""
pg_recreate_database "$PORT" pigeon_image
timeout --signal=TERM --kill-after=30 900 deploy/container/test-image.sh "postgresql://postgres@127.0.0.1:$PORT/pigeon_image" .build/release/pigeon
