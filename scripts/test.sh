#!/usr/bin/env bash
# Quick start, the tests: set up, build, and run every test.
#   1. the Release build: every ctest label (unit, model, e2e);
#   2. an AddressSanitizer + UBSan build of the torch-free unit tests (decoders, EXIF, resize,
#      drawing: the code that parses untrusted bytes; and the scheduler).
# Extra arguments go to the first ctest run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
(cd "$ROOT/build" && ctest --output-on-failure -j 2 "$@")

SAN_DIR="$ROOT/build-asan"
cmake -S "$ROOT" -B "$SAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DMOGSERVE_SANITIZE=address,undefined >/dev/null
cmake --build "$SAN_DIR" -j "${MOGSERVE_JOBS:-2}" --target common_tests image_tests scheduler_tests
(cd "$SAN_DIR" && ctest --output-on-failure -j 2 -L unit)
