#!/usr/bin/env bash
# Quick start, the main job: set up, build, and detect faces in the bundled sample photos.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
mkdir -p "$ROOT/out"
"$ROOT/build/mogserve" detect "$ROOT/tests/data/photos" --model-dir "$ROOT/models/ssd_mobilenetv1" \
  --annotate "$ROOT/out/annotated" "$@"
echo "annotated photos: $ROOT/out/annotated" >&2
