#!/usr/bin/env bash
# End-to-end throughput of `mogserve detect` on a folder of 200 real photos (20 copies of each of
# the 10 photos in tests/data/photos), against the engine's own throughput at the same batch size.
# Usage: scripts/bench_detect_folder.sh [BATCH_SIZE [DETECT FLAGS...]]   (default 8; needs a build
# in build/). The flags go to `mogserve detect` (e.g. --landmarks model); the engine line then is
# measured once per run as before.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BATCH="${1:-8}"
shift $(( $# > 0 ? 1 : 0 ))
BIN="$ROOT/build/mogserve"
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
for i in $(seq -w 1 20); do
  for f in "$ROOT"/tests/data/photos/*; do cp "$f" "$DIR/${i}_$(basename "$f")"; done
done
echo "photos: $(ls "$DIR" | wc -l) in $DIR ($(du -sh "$DIR" | cut -f1))"
"$BIN" bench engine --batch-sizes "$BATCH" --default-only --min-seconds 5 2>/dev/null | grep "^| channels"
start=$(date +%s.%N)
"$BIN" detect "$DIR" --batch-size "$BATCH" --timing -q -o "$DIR/out.jsonl" "$@"
end=$(date +%s.%N)
python3 - "$DIR/out.jsonl" "$start" "$end" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
secs = float(sys.argv[3]) - float(sys.argv[2])
faces = sum(len(r.get("faces", [])) for r in rows)
mean = lambda k: sum(r["timing"][k] for r in rows) / len(rows)
print(f"detect: {len(rows)} images, {faces} faces in {secs:.2f} s = {len(rows)/secs:.1f} images/s end to end "
      "(process start and model load included)")
print("mean per image: " + ", ".join(f"{k} {mean(k):.1f} ms" for k in
      ("decode_ms", "preprocess_ms", "queue_ms", "inference_ms", "postprocess_ms")) +
      " (inference_ms is per batch)")
PY
