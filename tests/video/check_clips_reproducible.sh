#!/usr/bin/env bash
# Encodes the test clips again (make_clip.sh) and compares them byte for byte with those the
# build made: the clips must be identical on every run (specs/video_streams.md §7).
# Usage: check_clips_reproducible.sh PHOTOS_DIR CLIP_DIR
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
AGAIN="$(mktemp -d)"
trap 'rm -rf "$AGAIN"' EXIT
"$HERE/make_clip.sh" "$1" "$AGAIN"
status=0
for built in "$2"/*; do
  name="$(basename "$built")"
  if cmp -s "$built" "$AGAIN/$name"; then
    echo "identical: $name"
  else
    echo "DIFFERENT: $name ($(sha256sum <"$built" | cut -c1-16) vs $(sha256sum <"$AGAIN/$name" | cut -c1-16))"
    status=1
  fi
done
exit $status
