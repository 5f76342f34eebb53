#!/usr/bin/env bash
# Configures and builds mogserve (Release) into build/. Extra arguments go to CMake.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${MOGSERVE_BUILD_DIR:-$ROOT/build}"
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
fi
# Two cores and LibTorch headers: more than two jobs only adds memory pressure.
cmake --build "$BUILD_DIR" -j "${MOGSERVE_JOBS:-2}"
