#!/usr/bin/env bash
# Builds pigeon-fuzz (Sources/pigeon-fuzz: every parser of outside bytes in Swift) with libFuzzer's
# coverage and AddressSanitizer, and fuzzes each target for a bounded time from its seeds
# (fuzz/seeds/TARGET) and the crashers found before (fuzz/crashers/TARGET, kept in the repository:
# each is run first, so a regression fails at once). Exits non-zero on the first crash, leak of the
# input's handling aside, timeout (10 s per input) or out-of-memory (2 GiB); the input is written to
# fuzz/artifacts/TARGET/ — move it to fuzz/crashers/TARGET/ once fixed.
# usage: fuzz/run.sh [SECONDS_PER_TARGET | runs=N] [TARGET...]   (default 60 s, every target)
# runs=N: N inputs per target from a fixed seed, the same exploration on every machine (what the
# test command uses, so CI cannot fail on an input this machine never tried); seconds: explore.
# Leak detection is off: LeakSanitizer reports the process-wide descriptions built once at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
budget="${1:-60}"
shift || true
if [[ "$budget" == runs=* ]]; then
    # From the seeds alone (not a corpus grown by earlier runs), as on a clean checkout.
    limits=(-seed=1 "-runs=${budget#runs=}")
    corpora=.build/fuzz/seeded-corpus
    rm -rf "$corpora"
else
    limits=("-max_total_time=$budget")
    corpora=.build/fuzz/corpus
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(soap device-json webpush-subscription pkpass server-conf passkit http-shim https-shim console activity bank-answer)
# -sanitize=fuzzer instruments every Swift module and links libFuzzer; our own main (which calls
# LLVMFuzzerRunDriver) keeps the archive's main out.
swift build --product pigeon-fuzz --build-path .build/fuzz --sanitize=address \
    -Xswiftc -sanitize=fuzzer -Xcc -fsanitize=fuzzer-no-link -Xswiftc -DPIGEON_FUZZ -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld
binary=.build/fuzz/debug/pigeon-fuzz
# Seeded runs repeat exactly only without address-space randomisation (libFuzzer's comparison
# tables are keyed by address) and with Swift's hashing fixed.
fixed=()
if setarch "$(uname -m)" -R true 2>/dev/null; then fixed=(setarch "$(uname -m)" -R); fi
for target in "${targets[@]}"; do
    corpus=$corpora/$target
    mkdir -p "$corpus" "fuzz/artifacts/$target" "fuzz/crashers/$target"
    cp -n "fuzz/seeds/$target"/* "$corpus/" 2>/dev/null || true
    echo "[fuzz] $target (${budget})"
    log=".build/fuzz/$target.log"
    status=0
    SWIFT_BACKTRACE=enable=no SWIFT_DETERMINISTIC_HASHING=1 PIGEON_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0 "${fixed[@]}" "$binary" "$corpus" "fuzz/crashers/$target" \
        "${limits[@]}" -max_len=65536 -print_funcs=0 -timeout=10 -rss_limit_mb=2048 -detect_leaks=0 \
        -artifact_prefix="fuzz/artifacts/$target/" -print_final_stats=1 > "$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        # The sanitizer's report (with its stacks) is what CI must show.
        grep -n -m1 -B2 -A80 "ERROR: \|runtime error\|Fatal error\|deadly signal\|ALARM\|out-of-memory" "$log" >&2 || tail -150 "$log" >&2
        echo "[fuzz] $target FAILED (exit $status); inputs in fuzz/artifacts/$target/, whole log in $log" >&2
        exit 1
    fi
    tail -12 "$log"
done
