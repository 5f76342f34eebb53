#!/usr/bin/env bash
# Makes the clip `mogserve bench video` loops in the documented figures (specs/video_streams.md
# §8): the tests' 10 s 1280x720 25 fps clip (tests/video/make_clip.sh, built from
# tests/data/photos) re-encoded like a camera's stream: H.264 at 3 Mbit/s, no B-frames, a
# keyframe every 2 s, with temporal noise (noise=alls=6:allf=t) so every frame carries sensor
# grain and the decoder works as hard as on a real camera's picture.
# Usage: scripts/make_bench_clip.sh [OUT.mp4]   (default: build/bench/clip_720p.mp4)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/build/bench/clip_720p.mp4}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$ROOT/tests/video/make_clip.sh" "$ROOT/tests/data/photos" "$TMP" >/dev/null
mkdir -p "$(dirname "$OUT")"
ffmpeg -nostdin -v error -y -i "$TMP/clip.mp4" -vf "noise=alls=6:allf=t" -c:v libx264 \
  -preset veryfast -b:v 3M -maxrate 3M -bufsize 6M -g 50 -bf 0 -pix_fmt yuv420p -an "$OUT"
echo "$OUT"
