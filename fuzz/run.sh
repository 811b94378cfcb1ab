#!/usr/bin/env bash
# Builds the SOAP decoder fuzzer with libFuzzer + AddressSanitizer and runs it for a bounded time.
# usage: fuzz/run.sh [SECONDS]   (default 300). Crashes land in fuzz/artifacts/.
# Leak detection is off: LeakSanitizer reports the once-initialised service description (a
# global) at exit. Per-input leaks are checked by `pigeon-bench decode-rss` instead (RSS stays flat).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
out=.build/fuzz
mkdir -p "$out/CXMLShim" fuzz/corpus fuzz/artifacts
clang=$(dirname "$(readlink -f "$(command -v swiftc)")")/clang
"$clang" -c -O1 -g -fsanitize=address,fuzzer-no-link $(pkg-config --cflags libxml-2.0) \
    -I Sources/CXMLShim/include Sources/CXMLShim/pigeon_xml.c -o "$out/pigeon_xml.o"
printf 'module CXMLShim {\n  header "%s"\n  export *\n}\n' "$PWD/Sources/CXMLShim/include/pigeon_xml.h" > "$out/CXMLShim/module.modulemap"
swiftc -O -g -sanitize=fuzzer,address -parse-as-library -module-name SOAPCodec \
    -Xcc -fmodule-map-file="$out/CXMLShim/module.modulemap" \
    $(find Sources/SOAPCodec -name '*.swift') fuzz/SOAPDecoderFuzzer.swift "$out/pigeon_xml.o" \
    $(pkg-config --libs libxml-2.0) -o "$out/soap-decoder"
# Seed corpus: real requests of every operation and style.
cp -n fuzz/seeds/* fuzz/corpus/ 2>/dev/null || true
ASAN_OPTIONS=detect_leaks=0 "$out/soap-decoder" fuzz/corpus -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -detect_leaks=0 -artifact_prefix=fuzz/artifacts/ -print_final_stats=1
