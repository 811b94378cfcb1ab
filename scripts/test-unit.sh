#!/usr/bin/env bash
# The unit tier alone: pure types, the engine on fakes, the request side through the router
# harness — no PostgreSQL, no sockets, no processes (Sources/PigeonTestSupport/TestTier.swift).
# Seconds once built; scripts/test.sh runs every tier.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$PIGEON_ROOT"
install_packages
swift build --build-tests
PIGEON_TEST_TIER=unit timeout --signal=TERM --kill-after=30 300 swift test --skip-build
