#!/usr/bin/env bash
# Builds the runtime image with deploy/container/build-image.sh and runs what is in it, inside it
# (buildah run: chroot isolation, the host's network), as the image's own user with the
# configuration mounted read-only: `pigeon --version`, `check-config`, and `serve` against the
# given PostgreSQL until it answers /ready; then SIGTERM, which must end it cleanly.
# Skips (exit 0, saying why) only where buildah cannot run containers: not root, or no buildah.
# usage: deploy/container/test-image.sh DATABASE_URL [BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/common.sh
database_url="$1"
binary="${2:-}"
say() { echo "[image test] $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

if ! command -v buildah >/dev/null || ! command -v mmdebstrap >/dev/null; then
    say "SKIPPED: buildah and mmdebstrap are not installed (apt-get install buildah mmdebstrap)"; exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    say "SKIPPED: buildah's chroot isolation needs root here (rootless needs user namespaces set up)"; exit 0
fi

tag=localhost/pigeon:test
root="${PIGEON_BUILDAH_ROOT:-/var/lib/pigeon-buildah}"
buildah=(buildah --root "$root/storage" --runroot "$root/run" --storage-driver vfs)
state=/tmp/pigeon-image-test
container="" server=""
cleanup() {
    if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    [ -z "$container" ] || "${buildah[@]}" rm "$container" >/dev/null 2>&1 || true
}
trap cleanup EXIT

started=$(date +%s)
PIGEON_BINARY="$binary" PIGEON_BUILDAH_ROOT="$root" deploy/container/build-image.sh "$tag"
built=$(date +%s)
size=$("${buildah[@]}" images --format '{{.Size}}' "$tag")
say "image built in $((built - started)) s, $size"

# What the image says about itself: the Containerfile's entrypoint, command, user and checks.
config=$("${buildah[@]}" inspect --type image "$tag" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["Docker"]["config"], separators=(",", ":")))')
for expected in '"User":"pigeon"' '"Entrypoint":["/usr/local/bin/pigeon"]' '"Cmd":["serve","--config","/etc/pigeon/server.conf"]' \
                '"StopSignal":"SIGTERM"' '"/usr/local/bin/pigeon","health","http://127.0.0.1:8080/health"]' '"org.opencontainers.image.version":"' \
                '"org.opencontainers.image.revision":"'; do
    [[ "$config" == *"$expected"* ]] || fail "the image's configuration lacks $expected: $config"
done

rm -rf "$state"
mkdir -p "$state/etc"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$state/etc/server.conf" <<EOF
listen = 127.0.0.1:$port
dbUrl = $database_url
migrationsPath = /usr/local/share/pigeon/migrations
logLevel = info
EOF
chmod 0644 "$state/etc/server.conf"
container=$("${buildah[@]}" from "$tag")
run() { "${buildah[@]}" run --isolation chroot --network host -v "$state/etc:/etc/pigeon:ro" "$container" -- "$@"; }

[ "$(run /usr/bin/id -u)" = 10001 ] || fail "the image does not run as uid 10001"
version=$(run /usr/local/bin/pigeon --version) || fail "pigeon --version failed in the image"
[[ "$version" == pigeon\ * ]] || fail "pigeon --version said: $version"
say "$version"
run /usr/local/bin/pigeon check-config --config /etc/pigeon/server.conf || fail "check-config failed in the image"
if run /bin/sh -c 'echo x > /etc/pigeon/written' 2>/dev/null; then fail "the mounted configuration is writable"; fi

run /usr/local/bin/pigeon serve --config /etc/pigeon/server.conf > "$state/serve.log" 2>&1 &
server=$!
wait_for_http "http://127.0.0.1:$port/ready" 60 || { cat "$state/serve.log" >&2; fail "serve in the image did not answer /ready"; }
run /usr/local/bin/pigeon health "http://127.0.0.1:$port/health" || fail "pigeon health (the health check) failed in the image"
if run /bin/sh -c 'command -v curl' >/dev/null 2>&1; then fail "curl is in the runtime image"; fi
if run /usr/local/bin/pigeon health "http://127.0.0.1:$port/no-such-path" 2>/dev/null; then fail "pigeon health passed on a 404"; fi
# The gateway itself (not buildah) runs as the image's user.
gateway=$(pgrep -f '^/usr/local/bin/pigeon serve --config /etc/pigeon/server.conf' | head -1)
[ -n "$gateway" ] || fail "no gateway process found"
[ "$(ps -o uid= -p "$gateway" | tr -d ' ')" = 10001 ] || fail "the gateway runs as uid $(ps -o uid= -p "$gateway")"
kill -TERM "$gateway"
status=0
wait "$server" || status=$?
server=""
[ "$status" -eq 0 ] || { cat "$state/serve.log" >&2; fail "serve exited with $status after SIGTERM"; }
grep -q '"listening"\|listening' "$state/serve.log" || fail "serve's log does not say it listened"
say "OK: built in $((built - started)) s, $size; version, check-config, read-only configuration, /ready as uid 10001 and a clean SIGTERM in $(($(date +%s) - built)) s"
