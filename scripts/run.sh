#!/usr/bin/env bash
# Quick start, the main job: set up, build, and start the server with the embedded default model
# (SSD-MobileNetV1) on http://127.0.0.1:7860/ — open it in a browser for the web UI, or POST
# images to /v1/detect. Extra arguments go to `mogserve serve` (e.g. --port 8080, --host 0.0.0.0).
# Ctrl-C stops it after answering the requests already accepted.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
exec "$ROOT/build/mogserve" serve --model-dir "$ROOT/models/ssd_mobilenetv1" "$@"
