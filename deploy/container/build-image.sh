#!/usr/bin/env bash
# Builds Pigeon's runtime image with no registry: the Containerfile's last stage made from Debian's
# own packages. mmdebstrap makes a minimal Debian 12 root with exactly the runtime packages the
# Containerfile installs (read from it), the `pigeon` user (uid 10001) is created as there, and
# buildah (chroot isolation, vfs storage: no daemon, no privileges beyond root's) adds the release
# binary, the migrations and the example configuration, the same entrypoint, command, health check,
# stop signal and port, and labels with the version and commit.
#
# usage: deploy/container/build-image.sh [TAG]          (default localhost/pigeon:latest)
#   PIGEON_BINARY   a release binary to put in (default: built here, Swift's libraries linked in)
#   PIGEON_BUILDAH_ROOT   buildah's storage (default /var/lib/pigeon-buildah)
#   DEBIAN_MIRROR   (default http://deb.debian.org/debian; security from debian-security)
# Then, e.g.: buildah --root "$PIGEON_BUILDAH_ROOT/storage" --runroot "$PIGEON_BUILDAH_ROOT/run"
#   --storage-driver vfs push localhost/pigeon:latest docker://registry.example/pigeon:0.5.0
# Idempotent: an image with the same tag is replaced.
set -euo pipefail
cd "$(dirname "$0")/../.."
tag="${1:-localhost/pigeon:latest}"
root="${PIGEON_BUILDAH_ROOT:-/var/lib/pigeon-buildah}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work="$(mktemp -d /tmp/pigeon-image.XXXXXX)"
container=""
buildah=(buildah --root "$root/storage" --runroot "$root/run" --storage-driver vfs)
# Docker's image format: OCI's has no field for the health check.
export BUILDAH_FORMAT=docker
cleanup() {
    [ -z "$container" ] || "${buildah[@]}" rm "$container" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
say() { echo "[image] $*" >&2; }

# The runtime packages: the words after --no-install-recommends in the Containerfile's last stage,
# up to the first `&&`: one list for both ways of building.
packages="$(awk '/^FROM debian:12-slim/ { stage = 1 } stage && /--no-install-recommends/ { taking = 1 }
    taking { for (i = 1; i <= NF; i++) { if (seen && $i == "&&") { taking = 0; stage = 0; break }
             if (seen && $i != "\\") printf "%s,", $i; if ($i == "--no-install-recommends") seen = 1 } }' \
    deploy/container/Containerfile)"
packages="${packages%,}"
[ -n "$packages" ] || { say "could not read the runtime packages from deploy/container/Containerfile"; exit 1; }
# useradd as the Containerfile runs it.
user_command="$(sed -n 's/.*&& \(useradd .*pigeon\)$/\1/p' deploy/container/Containerfile)"
[ -n "$user_command" ] || { say "could not read the useradd line from deploy/container/Containerfile"; exit 1; }

binary="${PIGEON_BINARY:-}"
if [ -z "$binary" ]; then
    say "building the release binary (Swift's libraries linked in)"
    swift build -c release --product pigeon --static-swift-stdlib >&2
    binary=.build/release/pigeon
fi
# Every library the binary needs must come from the packages above, not from the toolchain.
if ldd "$binary" | grep -q 'libswift\|libFoundation\|lib_FoundationICU'; then
    say "$binary links Swift's libraries dynamically: build it with --static-swift-stdlib"
    exit 1
fi
version="$("$binary" --version | awk '{ print $2 }')"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

say "Debian 12 root with: $packages"
mmdebstrap --quiet --variant=essential --include="$packages,passwd" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook="chroot \"\$1\" $user_command" \
    --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* "$1"/var/log/*.log' \
    bookworm "$work/rootfs.tar" \
    "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
    "deb ${mirror%/debian}/debian-security bookworm-security main"

say "image $tag (pigeon $version, commit $commit)"
mkdir -p "$work/share/pigeon"
cp -r migrations server.conf.example "$work/share/pigeon/"
"${buildah[@]}" rmi --force "$tag" >/dev/null 2>&1 || true
container="$("${buildah[@]}" from scratch)"
"${buildah[@]}" add "$container" "$work/rootfs.tar" / >/dev/null
"${buildah[@]}" copy --chmod 0755 "$container" "$binary" /usr/local/bin/pigeon >/dev/null
"${buildah[@]}" copy "$container" "$work/share/pigeon" /usr/local/share/pigeon >/dev/null
"${buildah[@]}" config \
    --user pigeon --workingdir /var/lib/pigeon --port 8080 --stop-signal SIGTERM \
    --entrypoint '["/usr/local/bin/pigeon"]' --cmd '["serve", "--config", "/etc/pigeon/server.conf"]' \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --healthcheck "CMD /usr/local/bin/pigeon health http://127.0.0.1:8080/health" \
    --healthcheck-interval 15s --healthcheck-timeout 3s --healthcheck-start-period 30s --healthcheck-retries 3 \
    --label org.opencontainers.image.title=pigeon \
    --label org.opencontainers.image.description="Pigeon push-notification gateway" \
    --label org.opencontainers.image.version="$version" \
    --label org.opencontainers.image.revision="$commit" \
    "$container"
"${buildah[@]}" commit --quiet --format docker --rm "$container" "$tag" >/dev/null
container=""
"${buildah[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$tag" >&2
