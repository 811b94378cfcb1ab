#!/usr/bin/env bash
# The unit tier alone: pure types, the engine on fakes, the request side through the router
# harness — no PostgreSQL, no sockets, no processes (Sources/PigeonTestSupport/TestTier.swift),
# held to it by a tripwire (scripts/tripwire). Prints the tier's share of the tests and its wall
# time, and fails past 60 s. Seconds once built; scripts/test.sh runs every tier.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$PIGEON_ROOT"
install_packages
swift build --build-tests
run_unit_tier
