#!/usr/bin/env bash
# Quick start, the tests: set up, build, and run every test (ctest).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
cd "${MOGSERVE_BUILD_DIR:-$ROOT/build}"
ctest --output-on-failure -j 2 "$@"
